"""Decomposition and chunking: KKT property tests per rule and per inner strategy, a user-written
rule, stalling, bad input, and agreement with LIBSVM on Adult and ijcnn1 subsets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

import qpcore
from qpcore_formulations.data.files import load_dataset
from qpcore_formulations.svm import csvc
from qpcore.testkit.reference import assert_kkt, dense_reference
from qpcore.testkit.testing import svm_duals
from qpcore_strategies.active_set import DenseActiveSet
from qpcore.core.rules import RuleView
from qpcore_strategies.decomposition import Chunking, Decomposition, OsunaSwap, SteepestFeasible
from qpcore_strategies.gradient_projection import GPCG
from qpcore_strategies.smo import SMO

RULES = {
    "steepest q=4": SteepestFeasible(q=4, reuse=0.0),
    "steepest q=8 reuse": SteepestFeasible(q=8, reuse=0.5),
    "steepest q=8 random": SteepestFeasible(q=8, reuse=0.5, random_every=3),
    "chunking": Chunking(M=4),
    "osuna": OsunaSwap(q=6),
}
INNER = {"smo": SMO(shrinking=False), "gpcg": GPCG(), "dense": DenseActiveSet()}


def _check(qp: qpcore.QP, strategy: Decomposition, max_iter: int = 50_000) -> None:
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    res = qpcore.solve(qp, strategy, tol=tol, max_iter=max_iter)
    assert_kkt(qp, res, tol)
    _, f_ref = dense_reference(qp)
    assert res.objective <= f_ref + 1e-6 * max(1.0, abs(f_ref)), (res.objective, f_ref)


# the same generated range as SMO's property tests (SMO is the default inner solver)
@pytest.mark.parametrize("rule", list(RULES), ids=list(RULES))
@given(qp=svm_duals(max_n=24, max_cond=1e4, max_C=1e2))
def test_rules_kkt_and_reference(rule: str, qp: qpcore.QP) -> None:
    _check(qp, Decomposition(rule=RULES[rule]))


@pytest.mark.parametrize("inner", list(INNER), ids=list(INNER))
@given(qp=svm_duals(max_n=24, max_cond=1e4, max_C=1e2))
def test_inner_strategies_kkt_and_reference(inner: str, qp: qpcore.QP) -> None:
    _check(qp, Decomposition(rule=SteepestFeasible(q=6), inner=INNER[inner]))


class LargestGradientPairs:
    """A user's rule, written here: the q variables with the largest |v − median| that can move."""

    kind = "set"

    def __init__(self, q: int) -> None:
        self.q = q

    def select(self, view: RuleView, tol: float) -> np.ndarray | None:
        s = view.scores()
        v, up, down = s.v, s.up, s.low
        if not up.any() or not down.any() or v[up].max() - v[down].min() <= tol:
            return None
        i, j = np.flatnonzero(up)[np.argmax(v[up])], np.flatnonzero(down)[np.argmin(v[down])]
        movable = np.flatnonzero(up | down)
        score = np.abs(v[movable] - np.median(v[movable]))
        rest = movable[np.argsort(-score)][: self.q]
        return np.unique(np.concatenate([[i, j], rest]))


@given(qp=svm_duals(max_n=24, max_cond=1e4, max_C=1e2))
def test_user_rule_plugs_in(qp: qpcore.QP) -> None:
    # a deliberately naive rule converges slowly on rank-deficient duals: a larger round budget
    _check(qp, Decomposition(rule=LargestGradientPairs(4)), max_iter=500_000)


def test_box_only_problem() -> None:
    rng = np.random.default_rng(1)
    M = rng.normal(size=(40, 30))
    qp = qpcore.QP(M.T @ M / 30, rng.normal(size=30), 0.0, 1.0)
    res = qpcore.solve(qp, Decomposition(rule=SteepestFeasible(q=6)), tol=1e-8, max_iter=20_000)
    assert_kkt(qp, res, 1e-8)
    assert res.objective == pytest.approx(dense_reference(qp)[1], rel=1e-8, abs=1e-10)


def test_bad_input() -> None:
    qp = qpcore.QP(np.eye(3), np.zeros(3), 0.0, np.inf)
    with pytest.raises(qpcore.ProblemError, match="finite bounds"):
        qpcore.solve(qp, Decomposition())
    with pytest.raises(ValueError, match="even"):
        SteepestFeasible(q=5)


@pytest.mark.data
def test_stalling_ends_with_status() -> None:
    class Useless:
        """Always the same two variables that cannot move: the gap never changes."""

        kind = "set"

        def select(self, view: RuleView, tol: float) -> np.ndarray:
            return np.array([0, 1])

    X, y = load_dataset("adult")
    prob = csvc(X[:200], y[:200], 1.0, qpcore.Kernel("rbf", gamma=0.05))
    res = qpcore.solve(prob.qp, Decomposition(rule=Useless(), stall_rounds=20), tol=1e-3, max_iter=1000)
    assert res.status is qpcore.Status.STALLED and res.iterations <= 25
    assert res.kkt.gap > 1e-3


@pytest.mark.data
def test_limits_are_honest() -> None:
    X, y = load_dataset("adult")
    prob = csvc(X[:1000], y[:1000], 1.0, qpcore.Kernel("rbf", gamma=0.05))
    res = qpcore.solve(prob.qp, Decomposition(), tol=1e-3, max_iter=3)
    assert res.status is qpcore.Status.MAX_ITER
    assert res.kkt.gap == pytest.approx(qpcore.kkt(prob.qp, res.x).gap) and res.kkt.gap > 1e-3


def _libsvm_objective(prob: object, X: object, y: np.ndarray, gamma: float, C: float, tol: float) -> float:
    svm = pytest.importorskip("sklearn.svm")
    import scipy.sparse as sp

    Xs = sp.csr_matrix(X)
    Xs.indices = Xs.indices.astype(np.int32)
    Xs.indptr = Xs.indptr.astype(np.int32)
    m = svm.SVC(C=C, kernel="rbf", gamma=gamma, tol=tol, cache_size=200).fit(Xs, y)
    alpha = np.zeros(Xs.shape[0])
    coef = m.dual_coef_.toarray() if sp.issparse(m.dual_coef_) else m.dual_coef_
    alpha[m.support_] = np.abs(np.asarray(coef)[0])
    return float(prob.qp.objective(alpha))  # type: ignore[attr-defined]


@pytest.mark.data
@pytest.mark.parametrize("data, n, gamma", [("adult", 3000, 0.05), ("ijcnn1", 4000, 1.0)])
@pytest.mark.parametrize("q, compute", [(16, np.float64), (256, np.float64), (256, np.float32)])
def test_agrees_with_libsvm(data: str, n: int, gamma: float, q: int, compute: type) -> None:
    X, y = load_dataset(data)
    rng = np.random.default_rng(0)
    idx = np.sort(rng.choice(X.shape[0], size=n, replace=False))
    X, y = X[idx], y[idx]
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=gamma), compute_dtype=compute)
    res = qpcore.solve(prob.qp, Decomposition(rule=SteepestFeasible(q=q)), tol=1e-5)
    assert res.converged and res.kkt.gap <= 1e-5
    f_lib = _libsvm_objective(prob, X, y, gamma, 1.0, 1e-5)
    assert res.objective <= f_lib + 1e-6 * abs(f_lib)
    assert res.objective == pytest.approx(f_lib, rel=1e-6)


def _adult(n: int, seed: int = 0) -> tuple[object, np.ndarray]:
    X, y = load_dataset("adult")
    idx = np.sort(np.random.default_rng(seed).choice(X.shape[0], size=n, replace=False))
    return X[idx], y[idx]


@pytest.mark.data
@pytest.mark.parametrize("rule", [SteepestFeasible(q=64), Chunking(M=64), OsunaSwap(q=16)],
                         ids=["steepest", "chunking", "osuna"])
def test_shrinking_gives_the_same_optimum(rule: object) -> None:
    X, y = _adult(1500)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.05), compute_dtype=np.float32)
    on = qpcore.solve(prob.qp, Decomposition(rule=rule, shrinking=True), tol=1e-4)  # type: ignore[arg-type]
    prob2 = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.05), compute_dtype=np.float32)
    off = qpcore.solve(prob2.qp, Decomposition(rule=rule, shrinking=False), tol=1e-4)  # type: ignore[arg-type]
    assert on.converged and off.converged
    if not isinstance(rule, OsunaSwap):   # one-in/one-out rounds rarely pass the shrink ratio
        assert on.stats["shrink_events"] >= 1 and on.stats["unshrinks"] >= 1
        assert on.stats["active_min"] < 0.7 * prob.qp.n
    assert off.stats["shrink_events"] == 0
    # the certificate reused from the strategy's last exact gradient is the fresh one, up to
    # float64 rounding: that gradient is an earlier full product plus Q (x − x₀) over the
    # variables moved since (the gap is a difference of O(1) entries: ~1e-15 per product)
    fresh = qpcore.kkt(prob.qp, on.x)
    assert on.kkt.gap == pytest.approx(fresh.gap, rel=1e-9, abs=1e-13) and fresh.gap <= 1e-4
    assert on.objective == pytest.approx(off.objective, rel=1e-6)


@pytest.mark.data
def test_user_rule_converges_with_shrinking() -> None:
    # the rule reads only its view, which hides shrunk variables: shrinking stays on and the
    # full-set recheck before convergence finds anything the shrunk view missed
    X, y = _adult(1500, seed=1)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.05))
    res = qpcore.solve(prob.qp, Decomposition(rule=LargestGradientPairs(32)), tol=1e-4, max_iter=20_000)
    assert res.converged and qpcore.kkt(prob.qp, res.x).gap <= 1e-4
    assert res.stats["shrink_events"] > 0
    ref = qpcore.solve(prob.qp, SMO(), tol=1e-6)
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)


@pytest.mark.data
def test_row_buffer_reuse_is_counted() -> None:
    X, y = _adult(1000)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.05))
    res = qpcore.solve(prob.qp, Decomposition(rule=SteepestFeasible(q=32, reuse=0.5)), tol=1e-3)
    st = res.stats
    assert st["rows_reused"] > 0 and st["rows_fetched"] > 0
    # every round's rows come from the buffer or are fetched, nothing else
    assert st["rows_reused"] + st["rows_fetched"] == st["working_set_total"]


@pytest.mark.data
@pytest.mark.parametrize("rule", [Chunking(M=32), OsunaSwap(q=8)], ids=["chunking", "osuna"])
def test_chunking_and_osuna_agree_with_libsvm(rule: object) -> None:
    X, y = _adult(800, seed=2)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.05))
    res = qpcore.solve(prob.qp, Decomposition(rule=rule), tol=1e-5, max_iter=200_000)  # type: ignore[arg-type]
    assert res.converged
    f_lib = _libsvm_objective(prob, X, y, 0.05, 1.0, 1e-5)
    assert res.objective == pytest.approx(f_lib, rel=1e-6)


# --- the row buffer: slots written in place, compaction at shrinks, sums over slot runs ---------

from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from qpcore.backends.capabilities import cross_block  # noqa: E402
from qpcore_strategies import decomposition as dmod  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 70), dtype=st.sampled_from([np.float32, np.float64]),
       contiguous=st.booleans())
def test_row_sum_matches_a_float64_sum(seed: int, k: int, dtype: type, contiguous: bool) -> None:
    rng = np.random.default_rng(seed)
    cap, n = 90, 37
    W = rng.normal(size=(cap, n)).astype(dtype)
    if contiguous:   # one run (views, groups of 16) plus a few strays (gathered)
        s0 = int(rng.integers(0, cap - k + 1))
        slots = np.arange(s0, s0 + k)
        slots[rng.random(k) < 0.1] = -1
        free = np.setdiff1d(np.arange(cap), slots)
        slots[slots < 0] = rng.choice(free, size=int(np.count_nonzero(slots < 0)), replace=False)
    else:
        slots = rng.choice(cap, size=k, replace=False)
    w = rng.normal(size=k)
    got = dmod._row_sum(W, slots.astype(np.intp), w)
    want = w @ W[slots].astype(np.float64)
    # float32 rows: groups of 16 summed in float32 (the bound the strategy tracks as noise)
    bound = 17 * np.finfo(np.float32).eps * float(np.abs(w).sum()) * float(np.abs(W).max()) if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=0, atol=bound)
    assert [(a, b) for a, b in dmod._runs(np.array([2, 3, 4, 7, 9, 10]))] == [(0, 3), (3, 4), (4, 6)]


@pytest.mark.data
@pytest.mark.parametrize("cache_mb", [1, 3])
def test_buffered_rows_stay_exact_through_eviction_and_shrinking(cache_mb: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # a buffer of a few hundred rows: slots are evicted and reused every round and the columns
    # compacted at every shrink; each round, the rows the strategy reads must be Q[B, active]
    X, y = _adult(2000)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.05), cache_bytes=cache_mb << 20,
                dtype=np.float32, compute_dtype=np.float32)
    fetch = Decomposition._fetch
    worst = [0.0, 0]

    def checked(self: Decomposition, qp: qpcore.QP, work: object, B: np.ndarray, counters: dict[str, int]) -> np.ndarray:
        slots = fetch(self, qp, work, B, counters)   # type: ignore[arg-type]
        ref = cross_block(qp.Q, B, work.active)       # type: ignore[attr-defined]
        worst[0] = max(worst[0], float(np.abs(work.W[slots] - ref).max()))  # type: ignore[attr-defined]
        worst[1] += 1
        return slots

    monkeypatch.setattr(Decomposition, "_fetch", checked)
    res = qpcore.solve(prob.qp, Decomposition(rule=SteepestFeasible(q=64)), tol=1e-3)
    assert res.converged and worst[1] > 10 and worst[0] <= 1e-6
    assert res.stats["shrink_events"] >= 1 and res.stats["rows_reused"] > 0
    # the strategy's exact gradient (an earlier full product plus Q(x − x₀)) is a fresh one
    g = prob.qp.gradient(res.x)
    np.testing.assert_allclose(res.state.exact[1], g, rtol=0, atol=1e-11 * max(1.0, float(np.abs(g).max())))

