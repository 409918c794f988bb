"""DynamicKernelQ: rows equal a fresh KernelQ after appends and removals; cached rows are extended,
never recomputed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qpcore.backends.dynamic import DynamicKernelQ
from qpcore.backends.operators import Kernel, KernelQ
from qpcore.core.problem import QP, ProblemError

KERNELS = [Kernel("rbf", gamma=0.4), Kernel("linear"), Kernel("poly", gamma=0.5, degree=2, coef0=1.0)]


def _fresh(op: DynamicKernelQ) -> tuple[np.ndarray, np.ndarray]:
    sl = op.slots()
    K = KernelQ(np.array(op.points[sl]), op.kernel, scale=np.array(op.labels[sl]), dtype=np.float64)
    return K.compute(np.arange(sl.size)), sl


@given(seed=st.integers(0, 2**32 - 1), kernel=st.sampled_from(KERNELS),
       ops=st.lists(st.tuples(st.booleans(), st.integers(1, 9)), min_size=1, max_size=12))
def test_rows_match_fresh_operator(seed: int, kernel: Kernel, ops: list[tuple[bool, int]]) -> None:
    rng = np.random.default_rng(seed)
    op = DynamicKernelQ(kernel, capacity=4, cache_bytes=1 << 16)
    op.append(rng.standard_normal((3, 3)), rng.choice([-1.0, 1.0], 3))
    for add, k in ops:
        if add or op.n_alive <= 1:
            op.append(rng.standard_normal((k, 3)), rng.choice([-1.0, 1.0], k))
        else:
            op.remove(int(rng.choice(op.slots())))
        # touch some rows so that the cache holds rows across later changes
        op.row(int(rng.choice(op.slots())))
    Qf, sl = _fresh(op)
    np.testing.assert_allclose(op.rows(sl)[:, sl], Qf, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.stack([op.row(int(i)) for i in sl])[:, sl], Qf, rtol=1e-12, atol=1e-12)
    dead = np.flatnonzero(~op.alive)
    assert np.all(op.rows(sl)[:, dead] == 0.0)
    np.testing.assert_allclose(op.diag()[sl], np.diag(Qf), rtol=1e-12)
    x = np.where(op.alive, rng.standard_normal(op.n_slots), 0.0)
    np.testing.assert_allclose(op.matvec(x)[sl], Qf @ x[sl], rtol=1e-10, atol=1e-10)
    Qs, sl2 = op.snapshot()
    np.testing.assert_array_equal(sl, sl2)
    np.testing.assert_allclose(Qs.compute(np.arange(sl.size)), Qf, rtol=1e-12, atol=1e-12)
    QP(Qs, -np.ones(sl.size))   # a valid qpcore operator


def test_cached_rows_are_extended_not_recomputed() -> None:
    rng = np.random.default_rng(0)
    op = DynamicKernelQ(Kernel("rbf", gamma=0.3), capacity=4)
    slots = op.append(rng.standard_normal((6, 4)), np.ones(6))
    for i in slots[:3]:
        op.row(int(i))
    computed = op.stats.rows_computed
    extended = op.stats.entries_extended
    op.remove(int(slots[4]))
    new = op.append(rng.standard_normal((20, 4)), rng.choice([-1.0, 1.0], 20))   # a block: grows capacity
    assert op.stats.rows_computed == computed          # the cached rows were not recomputed
    assert op.stats.entries_extended == extended + 3 * 20
    assert int(slots[4]) in new.tolist()                # the freed slot is reused
    hits = op.stats.cache_hits
    for i in slots[:3]:
        op.row(int(i))
    assert op.stats.cache_hits == hits + 3 and op.stats.rows_computed == computed
    one = op.append(rng.standard_normal((1, 4)), [1.0])   # one point: its row is computed and cached
    assert op.stats.rows_computed == computed + 1 and op.cached(int(one[0]))
    Qf, sl = _fresh(op)
    pos = {int(s): k for k, s in enumerate(sl)}
    for i in slots[:3]:
        np.testing.assert_allclose(op.row(int(i))[sl], Qf[pos[int(i)]], rtol=1e-12, atol=1e-14)
    assert op.stats.rows_computed == computed + 1


def test_sparse_points_and_errors() -> None:
    import scipy.sparse as sp

    rng = np.random.default_rng(1)
    D = rng.standard_normal((5, 3))
    op = DynamicKernelQ(Kernel("rbf", gamma=0.2))
    op.append(sp.csr_matrix(D), np.ones(5))
    op2 = DynamicKernelQ(Kernel("rbf", gamma=0.2))
    op2.append(D, np.ones(5))
    np.testing.assert_allclose(op.rows(op.slots()), op2.rows(op2.slots()))
    with pytest.raises(ProblemError):
        op.append(np.zeros((1, 4)))
    with pytest.raises(ProblemError):
        op.remove(99)
    with pytest.raises(ProblemError):
        DynamicKernelQ(Kernel("precomputed"))
