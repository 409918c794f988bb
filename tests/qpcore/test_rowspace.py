"""qpcore.backends.rowspace's in-process backend and qpcore.backends.vectors' seam (the chunked backend's own tests
are in test_chunked.py): a kernel runs once on the whole arrays, a distributed vector answers the
loop's questions itself."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore.backends.rowspace import LocalRows
from qpcore.backends.vectors import DistributedVector, all_finite, is_distributed, max_abs_diff, same_point


def _kernel(block: DiagPlusLowRankQ, u: np.ndarray, scale: float) -> tuple[np.ndarray, tuple[np.ndarray, float]]:
    kept = scale * u
    return kept, (block.rmatvec_lowrank(kept), float(kept.sum()))


def test_local_rows_run_a_kernel_once_on_the_whole_data() -> None:
    rng = np.random.default_rng(0)
    Q = DiagPlusLowRankQ(1.0, rng.normal(size=(7, 3)))
    rows = Q.row_space()
    assert isinstance(rows, LocalRows) and rows.m == 7 and rows.sizes() == 7
    u = rng.normal(size=7)
    outs, (hu, total) = rows.map_reduce(_kernel, rows.blocks, u, 2.0, ops=("sum", "sum"), name="t")
    np.testing.assert_allclose(hu, Q.rmatvec_lowrank(2.0 * u))
    assert total == pytest.approx(2.0 * u.sum())
    kept = rows.vector(outs, 0)
    assert kept is outs[0][0]               # no copy
    assert rows.kept(outs, 0) is kept and rows.kept(outs) is outs[0]
    (s,) = rows.reduce(lambda v: (float(v.sum()),), u, ops=("sum",), name="t")
    assert s == pytest.approx(u.sum())
    assert rows.counters["reductions"] == 2
    np.testing.assert_array_equal(rows.full(3.0), np.full(7, 3.0))
    assert rows.scalar_or_vector(u) is u
    np.testing.assert_array_equal(rows.adopt([1, 2, 3, 4, 5, 6, 7]), np.arange(1.0, 8.0))


class _Remote(DistributedVector):
    """A vector 'elsewhere': it answers for itself and counts the questions."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.asked: list[str] = []

    def all_finite(self) -> bool:
        self.asked.append("finite")
        return bool(np.isfinite(self.values).all())

    def same_point(self, other: DistributedVector) -> bool:
        self.asked.append("same")
        return isinstance(other, _Remote) and other.values is self.values

    def max_abs_diff(self, other: DistributedVector) -> float:
        self.asked.append("diff")
        assert isinstance(other, _Remote)
        return float(np.abs(self.values - other.values).max())


def test_the_seam_asks_a_distributed_vector() -> None:
    a, b = _Remote(np.array([1.0, 2.0])), _Remote(np.array([1.0, 5.0]))
    assert is_distributed(a) and not is_distributed(np.zeros(2))
    assert all_finite(a) and not all_finite(_Remote(np.array([np.nan])))
    assert same_point(a, a) and not same_point(a, b)
    assert max_abs_diff(a, b) == 3.0
    assert a.asked == ["finite", "same", "same", "diff"]
    # a numpy array is never the same point as a distributed vector
    assert not same_point(a, np.array([1.0, 2.0])) and not same_point(np.array([1.0, 2.0]), a)


@pytest.mark.parametrize("x,y,finite,same,diff", [
    (np.array([1.0, 2.0]), np.array([1.0, 2.0]), True, True, 0.0),
    (np.array([1.0, np.inf]), np.array([1.0, 2.0]), False, False, np.inf),
    (np.zeros(0), np.zeros(0), True, True, 0.0),
])
def test_the_seam_on_numpy(x: Any, y: Any, finite: bool, same: bool, diff: float) -> None:
    assert all_finite(x) is finite
    assert same_point(x, y) is same
    assert max_abs_diff(x, y) == diff
