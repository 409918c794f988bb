"""Disjoint equality groups (the SVM family's structure: ν-SVC and ν-SVR have two): SMO with each
rule, with and without shrinking, and decomposition, on generated problems with 2–3 groups of ±1
coefficients (degenerate, duplicated and fixed variables, infeasible warm starts, ill-conditioned
Q), certified and against the dense reference; ν-SVC and ν-SVR duals against scikit-learn's NuSVC
and NuSVR; and one clear error from each strategy that cannot take a problem's rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore.testkit.generators import psd_matrix
from qpcore.testkit.reference import assert_kkt, dense_reference
from qpcore.testkit.testing import warm_starts
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.decomposition import Chunking, Decomposition, OsunaSwap, SteepestFeasible
from qpcore_strategies.incas import INCAS
from qpcore_strategies.smo import SMO


@st.composite
def group_qps(draw: st.DrawFn, *, min_n: int = 4, max_n: int = 16, max_cond: float = 1e3,
              unit: bool = True, singles: bool = False) -> qpcore.QP:
    """Box QPs with 2 or 3 disjoint equality rows (each variable in exactly one).

    Q is an SVM-shaped ``ssᵀ ∘ K`` (RBF K, s the coefficients) or a random PSD matrix up to
    ``max_cond`` (sometimes rank-deficient); some variables duplicate another (identical rows of
    Q, same group and coefficient); some are fixed (lb = ub); b is met by a random point of the
    box, sometimes a vertex (every variable at a bound: a degenerate optimum is likely). With
    ``singles``, some variables are in no row (they move alone).
    """
    n = draw(st.integers(min_n, max_n))
    k_n = draw(st.sampled_from([2, 3]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    group = rng.permutation(np.arange(n) % k_n)          # at least one member each (n ≥ k_n)
    if unit:
        coef = rng.choice([-1.0, 1.0], size=n)
    else:
        coef = rng.choice([-1.0, 1.0], size=n) * 10.0 ** rng.uniform(-1, 1, size=n)
    if draw(st.booleans()):
        X = rng.normal(size=(n, 3))
        D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
        Q = np.outer(coef, coef) * np.exp(-10.0 ** rng.uniform(-1, 0.5) * D2)
        c = -np.ones(n) if draw(st.booleans()) else np.zeros(n)
    else:
        cond = float(10.0 ** rng.uniform(0, np.log10(max_cond)))
        rank = int(rng.integers(1, n)) if draw(st.booleans()) else None
        Q = psd_matrix(n, seed=rng, cond=cond, rank=rank)
        c = rng.normal(size=n) * 10.0 ** rng.uniform(-1, 1)
    lb = np.where(rng.random(n) < 0.5, 0.0, -rng.uniform(0.1, 2.0, size=n))
    ub = lb + 10.0 ** rng.uniform(-1, 1, size=n)
    dup = draw(st.integers(0, n // 3))
    for _ in range(dup):            # variable i becomes a copy of j (its group stays: none empties)
        i, j = (int(t) for t in rng.choice(n, size=2, replace=False))
        Q[i, :], Q[:, i] = Q[j, :], Q[:, j]
        Q[i, i] = Q[j, j]
        coef[i], c[i], lb[i], ub[i] = coef[j], c[j], lb[j], ub[j]
    vertex = draw(st.booleans())
    xh = np.where(rng.random(n) < 0.5, lb, ub) if vertex else lb + rng.random(n) * (ub - lb)
    fixed = rng.random(n) < draw(st.sampled_from([0.0, 0.0, 0.2]))
    lb, ub = np.where(fixed, xh, lb), np.where(fixed, xh, ub)
    A = np.zeros((k_n, n))
    A[group, np.arange(n)] = coef
    if singles and n > k_n:       # out of every row, keeping each row's first member
        first = {int(k): int(np.flatnonzero(group == k)[0]) for k in range(k_n)}
        out = [i for i in range(n) if i not in first.values() and rng.random() < 0.3]
        A[:, out] = 0.0
    return qpcore.QP(0.5 * (Q + Q.T), c, lb, ub, A, A @ xh)


def _tol(qp: qpcore.QP) -> float:
    scale = max(1.0, float(np.abs(qp.c).max()), float(qp.Q.diag().max()) * float(np.abs(np.r_[qp.lb, qp.ub]).max()))
    return 1e-7 * scale


def _check(qp: qpcore.QP, strategy: Any, x0: np.ndarray | None = None, max_iter: int = 200_000) -> qpcore.Result:
    assert qp.equality.kind == "groups" and qp.m >= 2
    tol = _tol(qp)
    res = qpcore.solve(qp, strategy, x0=x0, tol=tol, max_iter=max_iter)
    assert_kkt(qp, res, tol)
    x_ref, f_ref = dense_reference(qp)
    # convexity: f(x) − f* ≤ Σ_i |z_i| |x_i − x*_i| with |z_i| ≤ |a_i|·gap; plus rounding of f
    terms = 0.5 * float(np.abs(x_ref) @ (np.abs(qp.Q.matvec(np.eye(qp.n))) @ np.abs(x_ref)))
    allowed = tol * float(np.abs(res.x - x_ref).sum()) + 1e-9 * max(1.0, abs(f_ref), terms)
    assert res.objective <= f_ref + allowed, (res.objective, f_ref, allowed)
    return res


SMO_CASES = {f"{rule}{'' if shrink else ' no-shrink'}": SMO(rule=rule, shrinking=shrink, shrink_every=3)
             for rule in ("wss2", "mvp", "platt") for shrink in (True, False)}
DECOMPOSITION_CASES = {
    "steepest q=4": Decomposition(rule=SteepestFeasible(q=4, reuse=0.0), shrink_every=2),
    "steepest q=6 reuse": Decomposition(rule=SteepestFeasible(q=6, reuse=0.5)),
    "chunking": Decomposition(rule=Chunking(M=4)),
    "osuna": Decomposition(rule=OsunaSwap(q=6)),
    "wss2 pairs": Decomposition(rule="wss2"),
}


# the second-order rule and decomposition's subproblems take ill-conditioned Q; the first-order
# rules' step counts grow with the condition number, so they are checked up to 1e3
@pytest.mark.parametrize("name", list(SMO_CASES))
@given(data=st.data())
def test_smo_solves_disjoint_groups(name: str, data: st.DataObject) -> None:
    qp = data.draw(group_qps(max_cond=1e5 if name.startswith("wss2") else 1e3))
    x0 = data.draw(st.none() | warm_starts(qp))
    _check(qp, SMO_CASES[name], x0)


@pytest.mark.parametrize("name", list(DECOMPOSITION_CASES))
@given(qp=group_qps(max_cond=1e5), data=st.data())
def test_decomposition_solves_disjoint_groups(name: str, qp: qpcore.QP, data: st.DataObject) -> None:
    x0 = data.draw(st.none() | warm_starts(qp))
    _check(qp, DECOMPOSITION_CASES[name], x0, max_iter=50_000)


@given(qp=group_qps(unit=False, singles=True))
def test_decomposition_takes_groups_with_any_coefficients(qp: qpcore.QP) -> None:
    _check(qp, Decomposition(rule=SteepestFeasible(q=4), inner=DenseActiveSet()), max_iter=50_000)


@given(qp=group_qps(max_n=10))
def test_smo_pairs_stay_within_their_group(qp: qpcore.QP) -> None:
    """Every step keeps every row's A x = b: a pair never crosses groups."""
    seen: list[float] = []

    def watch(progress: qpcore.Progress) -> None:
        x = progress.state.x
        seen.append(float(np.abs(qp.A @ x - qp.b).max()))

    qpcore.solve(qp, SMO(), tol=_tol(qp), max_iter=20_000, callback=watch)
    assert max(seen, default=0.0) <= 1e-9 * (1.0 + float(np.abs(qp.b).max()) + float(np.abs(qp.ub).max()))


# ---------------------------------------------------------------------------------------------
# ν-SVC against scikit-learn (LIBSVM's Solver_NU)
# ---------------------------------------------------------------------------------------------


def _nu_svc(X: np.ndarray, y: np.ndarray, nu: float, gamma: float) -> qpcore.QP:
    """The ν-SVC dual in LIBSVM's scaled form, divided by l: min ½αᵀ(yyᵀ∘K)α, 0 ≤ α ≤ 1/l,
    Σ_{y=+1} α = ν/2, Σ_{y=−1} α = ν/2 (yᵀα = 0 and eᵀα = ν split by label)."""
    l = y.size
    D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    Q = np.outer(y, y) * np.exp(-gamma * D2)
    A = np.vstack([(y > 0).astype(float), (y < 0).astype(float)])
    return qpcore.QP(Q, np.zeros(l), np.zeros(l), np.full(l, 1.0 / l), A, np.array([nu / 2, nu / 2]))


def _decision(qp: qpcore.QP, alpha: np.ndarray, y: np.ndarray, K: np.ndarray) -> np.ndarray:
    """LIBSVM's decision values from α: r1, r2 the groups' multipliers (means of g over free α),
    ρ = (r1 − r2)/2, r = (r1 + r2)/2, f = (Σ α_i y_i K(x_i, ·) − ρ)/r."""
    g = qp.gradient(alpha)
    free = (alpha > 1e-12 / y.size) & (alpha < (1 - 1e-9) / y.size)
    r1, r2 = (float(g[free & s].mean()) for s in (y > 0, y < 0))
    rho, r = 0.5 * (r1 - r2), 0.5 * (r1 + r2)
    out: np.ndarray = (K @ (alpha * y) - rho) / r
    return out


@pytest.mark.parametrize("strategy", [SMO(), SMO(rule="mvp", shrinking=False), Decomposition(rule=SteepestFeasible(q=8))],
                         ids=["smo wss2", "smo mvp", "decomposition"])
def test_nu_svc_matches_sklearn(strategy: Any) -> None:
    from sklearn.svm import NuSVC

    rng = np.random.default_rng(3)
    l, nu, gamma = 80, 0.35, 0.5
    X = rng.normal(size=(l, 2))
    y = np.where(X[:, 0] + 0.6 * rng.normal(size=l) > 0, 1.0, -1.0)
    qp = _nu_svc(X, y, nu, gamma)
    res = qpcore.solve(qp, strategy, tol=1e-8 / l, max_iter=200_000)
    assert_kkt(qp, res, 1e-8 / l)
    model = NuSVC(nu=nu, kernel="rbf", gamma=gamma, tol=1e-12, shrinking=False).fit(X, y)
    # sklearn's dual_coef_ is y·α/r in LIBSVM's scale: rescaled so each class sums to ν/2
    ref = np.zeros(l)
    ref[model.support_] = np.abs(model.dual_coef_[0])
    for side in (y > 0, y < 0):
        ref[side] *= (nu / 2) / ref[side].sum()
    assert res.objective == pytest.approx(qp.objective(ref), rel=1e-6)
    K = qp.Q.matvec(np.eye(l)) * np.outer(y, y)
    ours = _decision(qp, res.x, y, K)
    theirs = model.decision_function(X) * (1.0 if model.classes_[1] > 0 else -1.0)
    np.testing.assert_allclose(ours, theirs, atol=1e-5 * max(1.0, float(np.abs(theirs).max())))
    assert np.array_equal(np.sign(ours), np.sign(theirs))


@pytest.mark.parametrize("strategy", [SMO(), Decomposition(rule=SteepestFeasible(q=8))], ids=["smo", "decomposition"])
def test_nu_svr_matches_sklearn(strategy: Any) -> None:
    """ν-SVR's dual (LIBSVM's Solver_NU): α and α* in two groups, Σα = Σα* = Cνl/2, 0 ≤ α, α* ≤ C,
    Q = [[K, −K], [−K, K]], c = [−y; y]; the objective and K(α − α*) depend on α − α* only."""
    from sklearn.svm import NuSVR

    rng = np.random.default_rng(5)
    l, nu, C, gamma = 50, 0.4, 2.0, 0.7
    X = rng.normal(size=(l, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=l)
    K = np.exp(-gamma * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    A = np.zeros((2, 2 * l))
    A[0, :l], A[1, l:] = 1.0, 1.0
    qp = qpcore.QP(np.block([[K, -K], [-K, K]]), np.r_[-y, y], np.zeros(2 * l), np.full(2 * l, C), A,
                   np.full(2, C * nu * l / 2))
    res = qpcore.solve(qp, strategy, tol=1e-9, max_iter=200_000)
    assert_kkt(qp, res, 1e-9)
    model = NuSVR(nu=nu, C=C, gamma=gamma, tol=1e-12, shrinking=False).fit(X, y)
    ref = np.zeros(l)
    ref[model.support_] = model.dual_coef_[0]
    beta = res.x[:l] - res.x[l:]
    assert res.objective == pytest.approx(0.5 * ref @ K @ ref - y @ ref, rel=1e-7)
    np.testing.assert_allclose(K @ beta, model.predict(X) - model.intercept_, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# what each strategy refuses, in one clear error naming the one that can
# ---------------------------------------------------------------------------------------------


def _rows(A: list[list[float]], b: list[float] | None = None) -> qpcore.QP:
    A_ = np.array(A)
    n = A_.shape[1]
    return qpcore.QP(np.eye(n), -np.ones(n), np.zeros(n), np.ones(n), A_,
                     np.zeros(A_.shape[0]) if b is None else np.array(b))


GENERAL = [[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, -1.0, 1.0]]           # a variable in two rows
NON_UNIT = [[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, -1.0]]
SINGLE = [[1.0, -1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]             # variable 3 in no row


def test_smo_refuses_with_the_strategy_that_can() -> None:
    with pytest.raises(qpcore.ProblemError, match="general equality rows.*DenseActiveSet"):
        qpcore.solve(_rows(GENERAL), SMO())
    with pytest.raises(qpcore.ProblemError, match="±1.*Decomposition"):
        qpcore.solve(_rows(NON_UNIT, [1.0, 0.0]), SMO())
    with pytest.raises(qpcore.ProblemError, match="variable 3 in no equality row.*Decomposition"):
        qpcore.solve(_rows(SINGLE, [0.0, 0.5]), SMO())


def test_decomposition_refuses_general_rows_and_takes_the_rest() -> None:
    with pytest.raises(qpcore.ProblemError, match="general equality rows.*DenseActiveSet"):
        qpcore.solve(_rows(GENERAL), Decomposition())
    for A, b in ((NON_UNIT, [1.0, 0.0]), (SINGLE, [0.0, 0.5])):
        qp = _rows(A, b)
        res = qpcore.solve(qp, Decomposition(rule=SteepestFeasible(q=4), inner=DenseActiveSet()), tol=1e-9)
        assert_kkt(qp, res, 1e-9)
        assert res.objective == pytest.approx(dense_reference(qp)[1], abs=1e-9)


@pytest.mark.parametrize("A, b, hint", [(GENERAL, None, "DenseActiveSet"), ([[1.0, -1.0, 0.0, 0.0], [0.0, 0.0, 1.0, -1.0]],
                                                                            None, "SMO or Decomposition")])
def test_incas_keeps_one_row(A: list[list[float]], b: list[float] | None, hint: str) -> None:
    with pytest.raises(qpcore.ProblemError, match=f"one equality row.*{hint}"):
        qpcore.solve(_rows(A, b), INCAS())
