"""ASVM over row chunks on a Dask cluster (qpcore_strategies.asvm over qpcore.backends.chunked) against the in-process ASVM.

The user changes only where the data are: ``asvm_dual(dask_X, y, nu)`` instead of numpy ``X``.
Each run here is checked against the in-process ASVM on the same numpy data (objective to 1e-9
relative, same status), over dense and sparse chunks, uneven and empty chunks, a chunk of one
class, the safeguards, limits, warm starts, progress and the model; a property test draws
small, badly scaled data with duplicated rows and random chunkings. All on the session's
2-process LocalCluster (``dask_client``).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

import qpcore
from qpcore_formulations.asvm import asvm_dual
from qpcore.backends.chunked import ChunkedVector, ClusterError
from qpcore.testkit.reference import gradient_scale
from qpcore_strategies.asvm import ASVM

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SAFEGUARDS = ("face_solves", "decrease_fails", "face_optimal", "face_moves", "projection_steps")


def _data(m: int, n: int, seed: int, shift: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((m, n)) + shift * y[:, None]
    return X, y


def _dask(X: Any, sizes: tuple[int, ...], sparse: bool = False) -> Any:
    Xd = da.from_array(X, chunks=(sizes, (X.shape[1],)))
    if sparse:
        Xd = Xd.map_blocks(sp.csr_matrix, dtype=float, meta=sp.csr_matrix((0, 0)))
    return Xd


def _both(X: np.ndarray, y: np.ndarray, sizes: tuple[int, ...], nu: float, tol: float, *, sparse: bool = False,
          **kw: Any) -> tuple[qpcore.Result, qpcore.Result, qpcore.QP]:
    """The chunked run, the in-process run of the same problem, and the in-process problem."""
    P = asvm_dual(_dask(X, sizes, sparse), y, nu)
    Q: Any = P.qp.Q
    assert Q.sparse == sparse and Q.space.sizes == sizes
    chunked = qpcore.solve(P.qp, ASVM(), tol=tol, **kw)
    qp = asvm_dual(sp.csr_matrix(X) if sparse else X, y, nu, dense=not sparse).qp
    return chunked, qpcore.solve(qp, ASVM(), tol=tol, **kw), qp


def _agree(res: qpcore.Result, ref: qpcore.Result, tol: float, qp: qpcore.QP) -> None:
    assert isinstance(res.x, ChunkedVector) and isinstance(res.kkt.z, ChunkedVector)
    assert res.status is ref.status
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    # one algorithm for both backends: the same path (up to the order of summation, which these
    # well-separated problems do not feel), step by step and safeguard by safeguard
    assert res.iterations == ref.iterations
    assert {k: res.stats[k] for k in SAFEGUARDS} == {k: ref.stats[k] for k in SAFEGUARDS}
    assert np.isfinite(res.kkt.measure)
    if ref.converged:
        assert res.kkt.measure <= tol
    x = res.x.to_numpy()
    assert x.min() >= 0.0
    # the objective and the certificate solve reports are the problem's own at the returned point
    assert res.objective == pytest.approx(qp.objective(x), rel=1e-10)
    assert res.kkt.measure == pytest.approx(qpcore.kkt(qp, x).measure, rel=1e-6, abs=1e-3 * tol)


# --- agreement with the in-process ASVM ------------------------------------------------------------

@pytest.mark.parametrize("sizes,sparse", [
    ((100, 100, 100, 100), False),     # even dense chunks
    ((100, 100, 100, 100), True),      # sparse (CSR) chunks
    ((7, 250, 31, 112), False),        # uneven
    ((150, 0, 250), False),            # an empty chunk
])
def test_agrees_with_in_process(dask_client: Any, sizes: tuple[int, ...], sparse: bool) -> None:
    X, y = _data(sum(sizes), 6, seed=len(sizes) + int(sparse))
    if sparse:
        X[np.random.default_rng(1).random(X.shape) < 0.5] = 0.0
    res, ref, qp = _both(X, y, sizes, nu=3.0, tol=1e-9, sparse=sparse)
    assert ref.converged
    _agree(res, ref, 1e-9, qp)


def test_a_chunk_of_one_class(dask_client: Any) -> None:
    X, y = _data(300, 5, seed=3)
    order = np.argsort(-y, kind="stable")      # the positives first: the first chunk holds only +1
    X, y = X[order], y[order]
    assert (y[:100] == 1).all()
    res, ref, qp = _both(X, y, (100, 120, 80), nu=10.0, tol=1e-9)
    assert ref.converged
    _agree(res, ref, 1e-9, qp)


@pytest.mark.parametrize("sizes,sparse", [((100, 100, 100, 100), False), ((7, 250, 0, 143), True)])
def test_weighted_agrees_with_in_process(dask_client: Any, sizes: tuple[int, ...], sparse: bool) -> None:
    # per-example weights over four decades: the chunks hold the diagonal d_i = 1/(ν s_i) (the
    # operator's d is a ChunkedVector); the same algorithm, the same path as in process
    X, y = _data(sum(sizes), 5, seed=9)
    if sparse:
        X[np.random.default_rng(2).random(X.shape) < 0.5] = 0.0
    s = 10.0 ** np.random.default_rng(4).uniform(-2, 2, y.size)
    P = asvm_dual(_dask(X, sizes, sparse), y, 3.0, sample_weight=s)
    d: Any = P.qp.Q.d  # type: ignore[attr-defined]
    assert isinstance(d, ChunkedVector)
    np.testing.assert_allclose(d.to_numpy(), 1.0 / (3.0 * s), rtol=1e-15)
    res = qpcore.solve(P.qp, ASVM(), tol=1e-9)
    Pi = asvm_dual(sp.csr_matrix(X) if sparse else X, y, 3.0, sample_weight=s, dense=not sparse)
    ref = qpcore.solve(Pi.qp, ASVM(), tol=1e-9)
    assert ref.converged
    _agree(res, ref, 1e-9, Pi.qp)
    # the weighted primal over the chunks is the in-process one, and equals the dual optimum
    w, g = P.primal(res.x)
    assert P.primal_objective(w, g) == pytest.approx(Pi.primal_objective(w, g), rel=1e-12)
    assert P.primal_objective(w, g) == pytest.approx(-res.objective, rel=1e-7)


def test_weighted_chunked_refuses_zero_weights(dask_client: Any) -> None:
    X, y = _data(40, 3, seed=1)
    s = np.ones(40)
    s[3] = 0.0
    with pytest.raises(qpcore.ProblemError, match="weights of 0 are not supported for chunked data"):
        asvm_dual(_dask(X, (20, 20)), y, 1.0, sample_weight=s)
    with pytest.raises(qpcore.ProblemError, match="sample_weight: shape mismatch"):
        asvm_dual(_dask(X, (20, 20)), y, 1.0, sample_weight=np.ones(39))


def _scatter(space: Any, values: np.ndarray) -> ChunkedVector:
    """A numpy vector put on the cluster in the partition's chunks."""
    parts = np.split(values, np.cumsum(space.sizes)[:-1])
    return ChunkedVector(space, space.client.scatter(parts, hash=False))


def test_safeguards_agree(dask_client: Any) -> None:
    # a warm start with most of the support at 0 and the rest far off: the face solves stop
    # decreasing f (2a), the face moves (4a) and the projected searches (2b)/(4b) take over
    X, y = _data(120, 4, seed=3, shift=0.5)
    rng = np.random.default_rng(3)
    x0 = rng.exponential(size=120) * 1e3 * (rng.random(120) < 0.3)
    P = asvm_dual(_dask(X, (40, 40, 40)), y, 10.0)
    res = qpcore.solve(P.qp, ASVM(), _scatter(P.qp.Q.space, x0), tol=1e-9)  # type: ignore[attr-defined]
    qp = asvm_dual(X, y, 10.0).qp
    ref = qpcore.solve(qp, ASVM(), x0, tol=1e-9)
    _agree(res, ref, 1e-9, qp)
    assert all(res.stats[k] > 0 for k in SAFEGUARDS), res.stats


def test_below_the_rounding_floor_ends_honestly(dask_client: Any) -> None:
    # ν = 1e4 puts the rounding floor of g far above 1e-14: never a claim of convergence
    X, y = _data(200, 4, seed=8, shift=0.3)
    res = qpcore.solve(asvm_dual(_dask(X, (90, 110)), y, 1e4).qp, ASVM(), tol=1e-14, max_iter=300)
    assert res.status in (qpcore.Status.STALLED, qpcore.Status.MAX_ITER)
    assert res.kkt.measure > 1e-14
    assert res.stats["refinements"] >= 1


def test_model_decodes_like_in_process(dask_client: Any) -> None:
    X, y = _data(400, 4, seed=5)
    labels = np.where(y > 0, "spam", "ham")
    P = asvm_dual(_dask(X, (130, 140, 130)), labels, nu=5.0)
    res = qpcore.solve(P.qp, ASVM(), tol=1e-9)
    assert isinstance(res.x, ChunkedVector) and isinstance(res.state.x, ChunkedVector)
    Pi = asvm_dual(X, labels, nu=5.0)
    ref = qpcore.solve(Pi.qp, ASVM(), tol=1e-9)
    model, model_ref = P.decode(res), Pi.decode(ref)
    np.testing.assert_allclose(model.w, model_ref.w, rtol=1e-7, atol=1e-9)
    assert model.gamma == pytest.approx(model_ref.gamma, rel=1e-7, abs=1e-9)
    assert (model.predict(X) == model_ref.predict(X)).all()
    np.testing.assert_allclose(res.x.to_numpy(), ref.x, rtol=1e-6, atol=1e-8)
    # strong duality at the optimum, the primal evaluated chunk by chunk
    assert P.primal_objective(model.w, model.gamma) == pytest.approx(-res.objective, rel=1e-9)


# --- limits, warm starts, progress, a lost cluster -------------------------------------------------

def test_max_iter_is_honest(dask_client: Any) -> None:
    X, y = _data(3000, 10, seed=2, shift=0.2)
    res = qpcore.solve(asvm_dual(_dask(X, (1000, 1000, 1000)), y, 2.0).qp, ASVM(), tol=1e-12, max_iter=2)
    assert res.status is qpcore.Status.MAX_ITER and not res.converged
    assert res.iterations == 2
    assert np.isfinite(res.kkt.measure) and res.kkt.measure > 1e-12
    assert np.isfinite(res.objective)
    assert res.x.to_numpy().min() >= 0.0  # type: ignore[attr-defined]
    # the reported objective and certificate are the problem's own at the returned point
    ref_qp = asvm_dual(X, y, 2.0).qp
    x = res.x.to_numpy()  # type: ignore[attr-defined]
    assert res.objective == pytest.approx(ref_qp.objective(x), rel=1e-10)
    assert res.kkt.measure == pytest.approx(qpcore.kkt(ref_qp, x).measure, rel=1e-8, abs=1e-12)


def test_time_limit_and_callback(dask_client: Any) -> None:
    X, y = _data(3000, 10, seed=4, shift=0.2)
    P = asvm_dual(_dask(X, (1500, 1500)), y, 2.0)
    res = qpcore.solve(P.qp, ASVM(), tol=1e-12, time_limit=1e-3)
    assert res.status is qpcore.Status.TIME_LIMIT and res.kkt.measure > 1e-12
    seen: list[tuple[int, float, float]] = []

    def stop_at_two(progress: qpcore.Progress) -> bool:
        seen.append((progress.iteration, progress.objective, progress.gap))
        return progress.iteration >= 2

    out = io.StringIO()
    res = qpcore.solve(P.qp, ASVM(), tol=1e-12, callback=stop_at_two, reporter=qpcore.PrintReporter(0.0, out))
    assert res.status is qpcore.Status.STOPPED and res.iterations == 2
    assert [s[0] for s in seen] == [1, 2]
    assert all(np.isfinite(s[1]) and np.isfinite(s[2]) for s in seen)
    assert seen[-1][1] == pytest.approx(res.objective, rel=1e-9)
    assert "iter" in out.getvalue() and "stopped" in out.getvalue()


def test_warm_start_from_a_chunked_point(dask_client: Any) -> None:
    X, y = _data(600, 5, seed=6)
    P = asvm_dual(_dask(X, (200, 200, 200)), y, 4.0)
    first = qpcore.solve(P.qp, ASVM(), tol=1e-3)
    again = qpcore.solve(P.qp, ASVM(), first, tol=1e-9)
    ref = qpcore.solve(asvm_dual(X, y, 4.0).qp, ASVM(), tol=1e-9)
    assert again.converged and again.objective == pytest.approx(ref.objective, rel=1e-9)
    # a start off the feasible set is clipped to u ≥ 0 chunk by chunk
    shifted = first.x - 0.5
    assert shifted.min() < 0
    res = qpcore.solve(P.qp, ASVM(), shifted, tol=1e-9)
    assert res.converged and res.objective == pytest.approx(ref.objective, rel=1e-9)
    with pytest.raises(qpcore.ProblemError, match="ChunkedVector"):
        ASVM().init(P.qp, np.ones(600), 1e-6)


def test_cluster_loss_keeps_the_primal(dask_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    X, y = _data(500, 5, seed=7)
    P = asvm_dual(_dask(X, (250, 250)), y, 2.0)
    space = P.qp.Q.space  # type: ignore[attr-defined]
    real = space.gather
    calls = [0]

    def flaky(futures: list[Any]) -> list[Any]:
        calls[0] += 1
        if calls[0] == 6:           # a few passes in: after the first step's accept
            raise ClusterError("simulated loss")
        out: list[Any] = real(futures)
        return out

    monkeypatch.setattr(space, "gather", flaky)
    with pytest.raises(ClusterError) as info:
        qpcore.solve(P.qp, ASVM(), tol=1e-12)
    assert info.value.primal is not None and info.value.primal.shape == (6,)
    assert np.isfinite(info.value.primal).all()
    assert info.value.iteration is not None


# --- a property test ------------------------------------------------------------------------------

@st.composite
def chunked_problems(draw: Any) -> tuple[np.ndarray, np.ndarray, tuple[int, ...], float]:
    m = draw(st.integers(4, 40))
    n = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    y[:2] = (1.0, -1.0)                                     # two classes
    X = rng.standard_normal((m, n)) + 0.5 * y[:, None]
    X *= 10.0 ** rng.uniform(-2.0, 2.0, n)                  # badly scaled columns
    for _ in range(draw(st.integers(0, m // 3))):           # duplicated rows, some with the other label
        a, b = rng.choice(m, 2, replace=False)
        X[b] = X[a]
        if rng.random() < 0.3:
            y[b] = -y[a]
    cuts = sorted(draw(st.lists(st.integers(0, m), max_size=5)))
    bounds = [0, *cuts, m]
    sizes = tuple(b - a for a, b in zip(bounds[:-1], bounds[1:]))
    nu = draw(st.sampled_from([0.1, 1.0, 10.0]))
    return X, y, sizes, nu


# the cluster's own threads (scheduler, comms) may draw from `random` while hypothesis draws an
# example, which it reports as if the strategy had; the strategy itself uses numpy's seeded Generator
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@given(case=chunked_problems())
def test_property_certificate_and_objective(dask_client: Any, case: Any) -> None:
    X, y, sizes, nu = case
    Pi = asvm_dual(X, y, nu)
    ref = qpcore.solve(Pi.qp, ASVM(), tol=1e-9)
    # a tolerance above the rounding floor of g for these scales (as the in-process tests scale it)
    tol = 1e-9 * gradient_scale(Pi.qp, ref.x)
    ref = qpcore.solve(Pi.qp, ASVM(), tol=tol)
    res = qpcore.solve(asvm_dual(_dask(X, sizes), y, nu).qp, ASVM(), tol=tol)
    assert res.status is ref.status
    if res.converged:
        assert res.kkt.measure <= tol and res.kkt.feasible()
    else:   # only as an honest status with its certificate above tol
        assert res.status is qpcore.Status.STALLED and res.kkt.measure > tol
    x = res.x.to_numpy()  # type: ignore[attr-defined]
    assert x.min() >= 0.0
    # both certified to tol: f(x) − f* ≤ tol·‖x − x*‖₁, so they differ by at most about that
    slack = tol * float(np.abs(x - ref.x).sum()) + 1e-9 * max(1.0, abs(ref.objective))
    assert abs(res.objective - ref.objective) <= slack
