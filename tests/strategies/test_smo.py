"""SMO: KKT property tests on generated problems, dense references, LIBSVM cross-checks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore.core.rules import RuleView
from qpcore_formulations.data.files import load_dataset
from qpcore_formulations.svm import csvc, fixed_threshold_svm
from qpcore.testkit.reference import assert_kkt, dense_reference
from qpcore.testkit.testing import svm_duals
from qpcore_strategies.smo import SMO, MaximalViolatingPair, PlattHeuristic, SecondOrderRule, SMOWork, make_rule

RULES = ["wss2", "mvp", "platt"]


def _solve(qp: qpcore.QP, rule: str, tol: float = 1e-6, **kw: object) -> qpcore.Result:
    # a generous budget: on rank-deficient Q with many free variables SMO zigzags in the near-null
    # space and needs ~1e5 steps even at n = 15 (a nightly example took 105,408); converging runs
    # stop long before it, so it costs nothing in the ci profile
    return qpcore.solve(qp, SMO(rule=rule, **kw), tol=tol, max_iter=1_000_000)  # type: ignore[arg-type]


# SMO is a coordinate method converging linearly at a rate that degrades with the condition of
# the free block: planted problems with large free sets at cond 1e6 take over 1e5 steps. The
# generated problems stop at 1e4 (1e3 for the first-order MVP rule) to keep the suite in budget.
@given(qp=svm_duals(max_n=24, max_cond=1e4, max_C=1e2))
def test_wss2_kkt_and_dense_reference(qp: qpcore.QP) -> None:
    _check_against_reference(qp, "wss2")


# the maximal violating pair is a first-order rule: its step count grows with the condition number
@given(qp=svm_duals(max_n=24, max_cond=1e3, max_C=1e2))
def test_mvp_kkt_and_dense_reference(qp: qpcore.QP) -> None:
    _check_against_reference(qp, "mvp")


# Platt's heuristics take example-by-example passes and small steps: near-separable problems with
# large C take them hundreds of thousands of steps (wss2 needs 1.3e5 on one such 15-variable
# problem), so they are checked on the ranges where SMO is used in practice.
@given(qp=svm_duals(max_n=16, max_cond=1e3, max_C=10.0, degenerate=False))
def test_platt_kkt_and_dense_reference(qp: qpcore.QP) -> None:
    _check_against_reference(qp, "platt")


def _check_against_reference(qp: qpcore.QP, rule: str) -> None:
    # the gap is in units of the gradient: relative to the problem's scale (planted problems
    # have |c| in the hundreds, where 1e-6 absolute would be 1e-9 relative)
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    res = _solve(qp, rule, tol)
    assert_kkt(qp, res, tol)
    _, f_ref = dense_reference(qp)
    # KKT to tol bounds the objective gap by about tol·Σ|x|; 1e-6 relative (+ tiny absolute)
    assert res.objective <= f_ref + 1e-6 * max(1.0, abs(f_ref)), (res.objective, f_ref)


# Platt's rule on the fixed-threshold SVM is checked on real data below; on generated
# ill-conditioned boxes its example-by-example passes are too slow for the suite.
@pytest.mark.parametrize("rule", ["wss2", "mvp"])
@given(qp=svm_duals(max_n=20, degenerate=False, max_cond=1e3, max_C=1e2))
def test_fixed_threshold_kkt(rule: str, qp: qpcore.QP) -> None:
    free = qpcore.QP(qp.Q, qp.c, qp.lb, qp.ub)  # same box, no equality: Platt §2.6
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    res = _solve(free, rule, tol)
    assert_kkt(free, res, tol)
    _, f_ref = dense_reference(free)
    assert res.objective <= f_ref + 1e-6 * max(1.0, abs(f_ref))


@given(qp=svm_duals(max_n=24, max_cond=1e4, max_C=1e2), shrink_every=st.integers(2, 20))
def test_shrinking_reaches_same_optimum(qp: qpcore.QP, shrink_every: int) -> None:
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    a = _solve(qp, "wss2", tol, shrinking=True, shrink_every=shrink_every)
    b = _solve(qp, "wss2", tol, shrinking=False)
    assert_kkt(qp, a, tol)
    assert_kkt(qp, b, tol)
    assert abs(a.objective - b.objective) <= 1e-6 * max(1.0, abs(b.objective))


def test_nonpsd_kernel_eta_nonpositive() -> None:
    # sigmoid kernels are not PSD: eta ≤ 0 happens and must be handled (Platt eq. 19, tau guard)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    y = np.where(rng.random(60) < 0.5, -1, 1)
    y[:2] = [-1, 1]
    prob = csvc(X, y, 1.0, qpcore.Kernel("sigmoid", gamma=2.0, coef0=1.0), dtype=np.float64)
    for rule in RULES:
        res = _solve(prob.qp, rule, 1e-4)
        x = res.x
        assert np.all(x >= 0) and np.all(x <= 1.0) and abs(prob.y @ x) < 1e-9
        # negative curvature was met: a KKT point of a non-convex QP is never reported converged
        assert res.status in (qpcore.Status.NONCONVEX, qpcore.Status.STALLED)
        assert res.state.nonconvex
        assert res.objective < 0  # descended from α = 0


def test_eta_zero_duplicates() -> None:
    # two identical points with opposite labels: eta = 0 for that pair
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    y = np.array([1, -1, 1, -1])
    prob = csvc(X, y, 2.0, qpcore.Kernel("linear"), dtype=np.float64)
    for rule in RULES:
        res = _solve(prob.qp, rule, 1e-8)
        assert_kkt(prob.qp, res, 1e-8)
        _, f_ref = dense_reference(prob.qp)
        assert res.objective == pytest.approx(f_ref, rel=1e-8, abs=1e-10)


def test_weight_update_matches_kernel_rows() -> None:
    rng = np.random.default_rng(0)
    X = sp.random(200, 30, density=0.2, random_state=1, format="csr")
    y = np.where(rng.random(200) < 0.5, -1.0, 1.0)
    prob = csvc(X, y, 0.5, qpcore.Kernel("linear"), dtype=np.float64)
    a = qpcore.solve(prob.qp, SMO(weight_update=True), tol=1e-6, keep_state="all")
    b = qpcore.solve(prob.qp, SMO(weight_update=False), tol=1e-6)
    assert a.stats["rows_computed"] < b.stats["rows_computed"]
    assert_kkt(prob.qp, a, 1e-6)
    assert a.objective == pytest.approx(b.objective, rel=1e-8)
    w = a.state.work(SMOWork).w
    assert np.allclose(w, np.asarray(X.T @ (a.x * prob.y)).ravel(), atol=1e-10)


@pytest.mark.data
def test_limits_return_best_point_with_honest_status() -> None:
    X, y = load_dataset("adult")
    prob = csvc(X[:1500], y[:1500], 1.0, qpcore.Kernel("rbf", gamma=0.05))
    full = qpcore.solve(prob.qp, SMO(), tol=1e-3)
    part = qpcore.solve(prob.qp, SMO(), tol=1e-3, max_iter=50)
    assert part.status is qpcore.Status.MAX_ITER and part.iterations == 50
    fresh = qpcore.kkt(prob.qp, part.x)
    assert part.kkt.gap == pytest.approx(fresh.gap) and fresh.gap > 1e-3
    assert full.objective < part.objective < 0
    t = qpcore.solve(prob.qp, SMO(), tol=1e-9, time_limit=0.05)
    assert t.status is qpcore.Status.TIME_LIMIT and t.kkt.gap > 1e-9
    # warm start from the stopped run finishes at the same optimum
    warm = qpcore.solve(prob.qp, SMO(), part, tol=1e-3)
    assert warm.converged and warm.objective == pytest.approx(full.objective, rel=1e-5)


def test_bad_inputs() -> None:
    with pytest.raises(qpcore.ProblemError, match="finite bounds"):
        qpcore.solve(qpcore.QP(np.eye(2), -np.ones(2), 0.0, np.inf), SMO())
    with pytest.raises(qpcore.ProblemError, match="±1"):
        qpcore.solve(qpcore.QP(np.eye(2), -np.ones(2), 0.0, 1.0, np.array([1.0, 2.0]), 0.0), SMO())
    with pytest.raises(qpcore.ProblemError, match="rule"):
        SMO(rule="nope")
    with pytest.raises(qpcore.ProblemError, match="x0.*equality row 0"):
        qpcore.solve(qpcore.QP(np.eye(2), -np.ones(2), 0.0, 1.0, np.array([1.0, -1.0]), 0.0), SMO(),
                     x0=np.array([1.0, 0.0]), x0_policy="raise")
    with pytest.raises(qpcore.ProblemError, match="C"):
        csvc(np.eye(3), [1, -1, 1], C=0.0)
    with pytest.raises(qpcore.ProblemError, match="two distinct"):
        csvc(np.eye(3), [1, 2, 3])
    with pytest.raises(qpcore.ProblemError, match="NaN"):
        csvc(np.array([[np.nan, 1.0], [0.0, 1.0]]), [1, -1])


def test_user_rule_plugs_in() -> None:
    class FirstViolators:
        """A deliberately naive rule: the first up/low violating pair in index order."""

        kind = "pair"

        def select(self, view: RuleView, tol: float) -> np.ndarray | None:
            s = view.scores()
            up, low = np.flatnonzero(s.up), np.flatnonzero(s.low)
            i = up[np.argmax(s.v[up])]
            viol = low[s.v[low] < s.v[i] - tol]
            return None if viol.size == 0 else np.array([i, viol[0]])

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1, -1)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.5), dtype=np.float64)
    res = qpcore.solve(prob.qp, SMO(rule=FirstViolators(), shrinking=False), tol=1e-5)
    assert_kkt(prob.qp, res, 1e-5)
    ref = qpcore.solve(prob.qp, SMO(), tol=1e-8)
    assert res.objective == pytest.approx(ref.objective, rel=1e-5)
    assert isinstance(make_rule("mvp"), MaximalViolatingPair)
    assert isinstance(make_rule("wss2"), SecondOrderRule) and isinstance(make_rule("platt"), PlattHeuristic)


# ---------------------------------------------------------------------------------------------
# Against LIBSVM (scikit-learn's SVC) on real data
# ---------------------------------------------------------------------------------------------

def _libsvm(X: sp.csr_matrix, y: np.ndarray, kernel: str, gamma: float, C: float, tol: float):  # type: ignore[no-untyped-def]
    from sklearn.svm import SVC

    Xs = sp.csr_matrix(X, dtype=np.float64)
    Xs.indices = Xs.indices.astype(np.int32)
    Xs.indptr = Xs.indptr.astype(np.int32)
    return SVC(C=C, kernel=kernel, gamma=gamma, tol=tol, cache_size=500).fit(Xs, y)


def _alpha_of(m, n: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    a = np.zeros(n)
    dc = m.dual_coef_
    a[m.support_] = np.abs(dc.toarray().ravel() if sp.issparse(dc) else np.ravel(dc))
    return a


@pytest.mark.data
@pytest.mark.parametrize("kernel,gamma,C", [("rbf", 0.05, 1.0), ("linear", 0.0, 0.05)])
def test_adult_subset_against_libsvm(kernel: str, gamma: float, C: float) -> None:
    X, y = load_dataset("adult")
    Xt, yt = load_dataset("adult", "tst")
    X, y = X[:3000], y[:3000]
    k = qpcore.Kernel(kernel, gamma=gamma) if kernel == "rbf" else qpcore.Kernel("linear")
    prob = csvc(X, y, C, k)
    res = qpcore.solve(prob.qp, SMO(), tol=1e-5)
    assert res.converged and res.kkt.gap <= 1e-5
    m = _libsvm(X, y, kernel, gamma if kernel == "rbf" else "scale", C, 1e-5)
    f_lib = prob.qp.objective(_alpha_of(m, X.shape[0]))
    assert res.objective == pytest.approx(f_lib, rel=1e-6)
    assert res.objective <= f_lib + 1e-6 * abs(f_lib)
    model = prob.decode(res)
    ours = model.predict(Xt)
    theirs = m.predict(sp.csr_matrix(Xt, dtype=np.float64))
    assert np.mean(ours == theirs) >= 0.999
    assert -model.bias == pytest.approx(-float(m.intercept_[0]), abs=1e-2)


@pytest.mark.data
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_ijcnn1_subset_against_libsvm(kernel: str) -> None:
    X, y = load_dataset("ijcnn1")
    rng = np.random.default_rng(0)
    idx = rng.choice(X.shape[0], 3000, replace=False)
    X, y = X[idx], y[idx]
    k = qpcore.Kernel("rbf", gamma=1.0) if kernel == "rbf" else qpcore.Kernel("linear")
    prob = csvc(X, y, 1.0, k)
    res = qpcore.solve(prob.qp, SMO(), tol=1e-5)
    assert res.converged
    m = _libsvm(X, y, kernel, 1.0 if kernel == "rbf" else "scale", 1.0, 1e-5)
    f_lib = prob.qp.objective(_alpha_of(m, X.shape[0]))
    assert res.objective == pytest.approx(f_lib, rel=1e-6)
    Xr = X[:2000]
    assert np.mean(prob.decode(res).predict(Xr) == m.predict(sp.csr_matrix(Xr, dtype=np.float64))) >= 0.999


@pytest.mark.data
def test_fixed_threshold_svm_builds_without_equality() -> None:
    X, y = load_dataset("adult")
    prob = fixed_threshold_svm(X[:800], y[:800], 1.0, qpcore.Kernel("rbf", gamma=0.05))
    assert prob.qp.m == 0
    for rule in RULES:
        res = qpcore.solve(prob.qp, SMO(rule=rule), tol=1e-4)
        assert_kkt(prob.qp, res, 1e-4)
    assert prob.decode(res).bias == 0.0
