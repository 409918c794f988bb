"""The chunked backend's primitives (qpcore.backends.chunked, qpcore_formulations.chunked) against numpy, on 2 worker processes.

Every quantity a chunked pass reduces is compared with the same quantity computed in process on
the gathered data: vector arithmetic and reductions, the operator's products, the certificate
and the Lagrangian bound; and bad input raises a clear ``ProblemError`` at build time.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from qpcore.backends.chunked import (ChunkedLowRankQ, ChunkedVector, PerChunk, RowSpace, all_finite, connect, max_abs_diff,
                            same_point)
from qpcore.core.certificate import kkt
from qpcore.core.optimality import lagrangian_bound
from qpcore.core.problem import ProblemError

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _sizes(draw: Any, m: int) -> tuple[int, ...]:
    cuts = sorted(draw(st.lists(st.integers(0, m), min_size=0, max_size=11)))
    bounds = [0, *cuts, m]
    return tuple(b - a for a, b in zip(bounds[:-1], bounds[1:]))


@st.composite
def chunked_pair(draw: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    m = draw(st.integers(1, 60))
    floats = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    a = np.array(draw(st.lists(floats, min_size=m, max_size=m)))
    b = np.array(draw(st.lists(floats, min_size=m, max_size=m)))
    return a, b, _sizes(draw, m)


def _vector(client: Any, values: np.ndarray, sizes: tuple[int, ...]) -> ChunkedVector:
    space = RowSpace(client, sizes)
    parts = np.split(values, np.cumsum(sizes)[:-1])
    return ChunkedVector(space, client.scatter(parts, hash=False))


def _on(space: RowSpace, values: np.ndarray) -> ChunkedVector:
    parts = np.split(values, np.cumsum(space.sizes)[:-1])
    return ChunkedVector(space, space.client.scatter(parts, hash=False))


@given(chunked_pair())
def test_vector_arithmetic_and_reductions_match_numpy(dask_client: Any, case: Any) -> None:
    a, b, sizes = case
    x = _vector(dask_client, a, sizes)
    y = _on(x.space, b)
    np.testing.assert_allclose((x + y).to_numpy(), a + b, rtol=0, atol=0)
    np.testing.assert_allclose((2.5 * x - y).to_numpy(), 2.5 * a - b, rtol=1e-15, atol=1e-12)
    np.testing.assert_allclose((-x * y).to_numpy(), -a * b)
    np.testing.assert_allclose((1.0 - x).to_numpy(), 1.0 - a)
    assert x @ y == pytest.approx(float(a @ b), rel=1e-12, abs=1e-9)
    assert x.sum() == pytest.approx(float(a.sum()), rel=1e-12, abs=1e-9)
    assert x.max_abs() == float(np.abs(a).max())
    assert x.min() == float(a.min())
    assert max_abs_diff(x, y) == float(np.abs(a - b).max())
    assert all_finite(x)
    assert same_point(x, x.copy()) and not same_point(x, y)


def test_constant_vectors_need_no_chunks(dask_client: Any) -> None:
    space = RowSpace(dask_client, (3, 0, 4))
    c = space.full(-1.0)
    assert c.parts is None and c.sum() == -7.0 and c.max_abs() == 1.0
    x = _on(space, np.arange(7.0))
    np.testing.assert_array_equal((x + c).to_numpy(), np.arange(7.0) - 1.0)
    assert (c * 2.0).parts is None and (c * 2.0).const == -2.0
    assert c @ space.full(3.0) == -21.0
    np.testing.assert_array_equal(c.materialize().to_numpy(), -np.ones(7))
    inf = space.full(np.inf)
    assert not inf.all_finite()


def test_many_chunks_reduce_through_the_tree(dask_client: Any) -> None:
    sizes = tuple([5] * 37 + [0, 3])       # > 8 chunks: combine tasks on the workers, then the client
    values = np.linspace(-3.0, 7.0, sum(sizes))
    x = _vector(dask_client, values, sizes)
    assert x.sum() == pytest.approx(values.sum(), rel=1e-13)
    assert x.max_abs() == 7.0
    gathered = x.space.counters["bytes_gathered"]
    assert gathered < 8 * 8 * 8      # at most 8 small partials came back, never the vector


def test_numpy_conversion_is_refused(dask_client: Any) -> None:
    x = _vector(dask_client, np.ones(4), (2, 2))
    with pytest.raises(TypeError, match="to_numpy"):
        np.asarray(x)
    with pytest.raises(TypeError):
        x + np.ones(4)


def test_no_client_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import distributed

    def none() -> Any:
        raise ValueError("No global client found")

    monkeypatch.setattr(distributed, "get_client", none)
    with pytest.raises(ProblemError, match="never starts a cluster"):
        connect(None)
    with pytest.raises(ProblemError, match="client"):
        connect(3)


# --------------------------------------------------------------------------------------------- the operator
def _data(m: int = 90, n: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) * np.array([1.0, 10.0, 0.1, 1.0])[:n]
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(m) > 0, 4, -2)
    return X, y


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("sizes", [(30, 30, 30), (1, 0, 60, 29), (90,)])
def test_operator_products_match_in_process(dask_client: Any, kind: str, sizes: tuple[int, ...]) -> None:
    from qpcore_formulations.asvm import asvm_dual
    from qpcore_formulations.risk import hinge_svm

    X, y = _data()
    Xd = da.from_array(X, chunks=(sizes, (X.shape[1],)))
    if kind == "sparse":
        Xd = Xd.map_blocks(sp.csr_matrix, dtype=float, meta=sp.csr_matrix((0, 0)))
    for chunked, local in ((asvm_dual(Xd, y, 3.0), asvm_dual(X, y, 3.0)),
                           (hinge_svm(Xd, y, C=0.5), hinge_svm(X, y, C=0.5))):
        Q, Qn = chunked.qp.Q, local.qp.Q
        assert isinstance(Q, ChunkedLowRankQ) and Q.sparse == (kind == "sparse")
        u = np.abs(np.sin(np.arange(90.0)))
        uc = _on(Q.space, u)
        np.testing.assert_allclose(Q.rmatvec_lowrank(uc), Qn.rmatvec_lowrank(u), rtol=1e-12, atol=1e-10)
        z = np.linspace(-1, 1, Q.k)
        np.testing.assert_allclose(Q.matvec_lowrank(z).to_numpy(), Qn.matvec_lowrank(z), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(Q.matvec(uc).to_numpy(), Qn.matvec(u), rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(Q.diag().to_numpy(), Qn.diag(), rtol=1e-12)
        # the certificate and the objective, from the problem alone, chunk by chunk
        k1, k2 = kkt(chunked.qp, uc), kkt(local.qp, u)
        for field in ("primal", "stationarity", "complementarity", "gap", "primal_scale"):
            assert getattr(k1, field) == pytest.approx(getattr(k2, field), rel=1e-12, abs=1e-12), field
        w = np.linspace(0.3, -0.2, Q.k)
        assert lagrangian_bound(chunked.qp, w) == pytest.approx(lagrangian_bound(local.qp, w), rel=1e-12)
        g = chunked.qp.gradient(uc)
        assert uc @ (g + chunked.qp.c) == pytest.approx(float(u @ (local.qp.gradient(u) + local.qp.c)), rel=1e-12)
    assert chunked.primal_objective(w) == pytest.approx(local.primal_objective(w), rel=1e-12)
    np.testing.assert_array_equal(chunked.classes, local.classes)


def test_labels_and_data_are_checked_before_any_work(dask_client: Any) -> None:
    from qpcore_formulations.asvm import asvm_dual
    from qpcore_formulations.risk import hinge_svm

    X, y = _data()
    Xd = da.from_array(X, chunks=((40, 50), (4,)))
    bad = X.copy()
    bad[77, 2] = np.nan
    with pytest.raises(ProblemError, match="NaN or inf"):
        asvm_dual(da.from_array(bad, chunks=((40, 50), (4,))), y)
    with pytest.raises(ProblemError, match="two distinct values, got 1"):
        hinge_svm(Xd, np.ones(90))
    with pytest.raises(ProblemError, match="two distinct values, got 3"):
        asvm_dual(Xd, np.arange(90) % 3)
    with pytest.raises(ProblemError, match="shape mismatch"):
        asvm_dual(Xd, y[:-1])
    with pytest.raises(ProblemError, match="NaN or inf"):
        asvm_dual(Xd, np.where(np.arange(90) == 5, np.nan, y))
    with pytest.raises(ProblemError, match="C: must be finite and > 0"):
        hinge_svm(Xd, y, C=0.0)
    with pytest.raises(ProblemError, match="nu"):
        asvm_dual(Xd, y, nu=-1.0)


def test_column_chunks_are_merged_and_labels_may_be_dask(dask_client: Any) -> None:
    from qpcore_formulations.asvm import asvm_dual

    X, y = _data()
    Xd = da.from_array(X, chunks=((45, 45), (2, 2)))
    yd = da.from_array(y, chunks=30)            # chunked differently from X: aligned by the builder
    P, Pn = asvm_dual(Xd, yd), asvm_dual(X, y)
    u = np.ones(90)
    np.testing.assert_allclose(P.qp.Q.rmatvec_lowrank(P.qp.Q.space.full(1.0)), Pn.qp.Q.rmatvec_lowrank(u),
                               rtol=1e-12)


def test_per_chunk_arguments_and_picks(dask_client: Any) -> None:
    space = RowSpace(dask_client, (2, 3))
    parts = PerChunk(dask_client.scatter([np.arange(2.0), np.arange(3.0)]))

    def kernel(a: np.ndarray) -> tuple[np.ndarray, tuple[float]]:
        return a * 10.0, (float(a.sum()),)

    pairs, (total,) = space.map_reduce(kernel, parts, ops=("sum",))
    assert total == 4.0
    kept = ChunkedVector(space, pairs, pick=0)
    np.testing.assert_array_equal(kept.to_numpy(), [0.0, 10.0, 0.0, 10.0, 20.0])
    assert kept.sum() == 40.0
    np.testing.assert_array_equal(kept.to_dask().compute(), [0.0, 10.0, 0.0, 10.0, 20.0])
