"""qpcore_strategies.interior_point: the Mehrotra predictor–corrector IPM over arrays and as a strategy.

Cross-checked against Clarabel (random general QPs, dense and sparse) and PIQP (Maros–Meszaros
problems from the shared data); infeasible and unbounded problems end with a proved verdict;
qpcore's own certificate judges every point the strategy returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given

import qpcore
from qpcore.testkit.generators_general import GeneralQP, planted_general_qp
from qpcore.backends.sparse import SparseQ
from qpcore.core.state import Status
from qpcore.testkit.testing import general_problems
from qpcore_strategies import InteriorPoint, by_name
from qpcore_strategies.interior_point import IPMCore, IPMSettings, ipm_solve

FEATURES: dict[str, dict[str, Any]] = {
    "box": dict(m=0, k=0, p_bound=0.6, infinite=0.0, free=0.0),
    "equalities": dict(m=4, k=0),
    "two_sided_rows": dict(m=1, k=12, p_active=0.5, infinite=0.0, equalities=0.0),
    "row_equalities": dict(m=0, k=10, equalities=0.5),
    "fixed_and_free": dict(m=2, k=6, fixed=0.3, free=0.3, p_bound=0.3),
    "rank_deficient_A": dict(m=6, k=4, duplicate_rows=2, dependent_rows=2),
    "dependent_rows_of_C": dict(m=1, k=10, duplicate_ineq=3, dependent_ineq=2),
    "singular_Q": dict(m=2, k=8, rank=5),
    "ill_conditioned": dict(m=2, k=8, cond=1e8),
    "crowded": dict(m=2, k=4, crowded=True),
    "degenerate": dict(m=2, k=8, degenerate=0.5),
    "badly_scaled": dict(m=3, k=8, row_decades=6.0, col_decades=6.0),
}


def _solve(g: GeneralQP, sparse: bool, **options: Any) -> Any:
    Q: Any = sp.csr_matrix(g.Q) if sparse else g.Q
    A: Any = sp.csr_matrix(g.A) if sparse else g.A
    C: Any = sp.csr_matrix(g.C) if sparse else g.C
    options.setdefault("tol", 1e-8)
    return ipm_solve(Q, g.c, g.lb, g.ub, A, g.b, C, g.l, g.u, **options)


@pytest.mark.anchor
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_random_problems_agree_with_clarabel(feature: str, sparse: bool) -> None:
    from qpcore.testkit.reference import clarabel_reference

    kw = dict(FEATURES[feature])
    n, m, k = 24, kw.pop("m"), kw.pop("k")
    for seed in range(3):
        g = planted_general_qp(n, m, k, seed=1000 * seed + len(feature), **kw)
        out = _solve(g, sparse, linear_solver="sparse" if sparse else "dense")
        assert out.status == "converged", (feature, seed, out.info["reason"])
        assert g.violation(out.x) <= 1e-9 * g.violation_scale(out.x)
        ref = clarabel_reference(g)
        assert g.optimum is not None
        f_opt = g.objective(g.optimum.x)
        scale = max(1.0, abs(f_opt))
        assert abs(out.objective - f_opt) <= 1e-7 * scale, (feature, seed)
        assert abs(out.objective - ref.objective) <= 1e-6 * scale
        if "rank" not in kw:
            # Q positive definite: the minimizer is unique
            xs = max(1.0, float(np.abs(ref.x).max()))
            assert float(np.abs(out.x - ref.x).max()) <= 1e-4 * xs, (feature, seed)


def test_dense_and_sparse_factorizations_agree() -> None:
    g = planted_general_qp(40, 5, 30, seed=7, fixed=0.1, free=0.1, duplicate_rows=1)
    a = _solve(g, False, linear_solver="dense")
    b = _solve(g, True, linear_solver="sparse")
    assert a.info["linear_solver"] == "dense" and b.info["linear_solver"] == "sparse"
    assert a.status == b.status == "converged"
    assert abs(a.objective - b.objective) <= 1e-9 * max(1.0, abs(a.objective))


def test_through_solve_the_certificate_accepts_the_point_and_multipliers() -> None:
    g = planted_general_qp(30, 3, 20, seed=3, fixed=0.1, free=0.1, equalities=0.2)
    qp = g.qp("rows")
    assert qp.k == 20
    res = qpcore.solve(qp, InteriorPoint(), tol=1e-8)
    assert res.status is Status.CONVERGED, res.stats.get("ipm_reason")
    assert res.kkt.ok(1e-8)
    assert res.stats["ipm_outcome"] == "converged"
    # the multipliers alone certify the point (qpcore.kkt verifies a proposal, never trusts it)
    cert = qpcore.kkt(qp, res.x, multipliers=(res.kkt.multipliers, res.kkt.y))
    assert cert.measure <= 1e-8 and cert.feasible()
    assert g.optimum is not None
    assert abs(res.objective - g.objective(g.optimum.x)) <= 1e-7 * max(1.0, abs(res.objective))


def test_multipliers_follow_the_sign_convention() -> None:
    # min ½‖x‖² − 3x₁ s.t. x₁ + x₂ ≤ 1 (active: y ≤ 0) and x₂ ≥ 0.5 (active: z ≥ 0)
    Q = np.eye(2)
    c = np.array([-3.0, 0.0])
    out = ipm_solve(Q, c, lb=np.array([-np.inf, 0.5]), C=np.array([[1.0, 1.0]]), l=np.array([-np.inf]),
                    u=np.array([1.0]), tol=1e-10)
    assert out.status == "converged"
    np.testing.assert_allclose(out.x, [0.5, 0.5], atol=1e-8)
    # stationarity: x + c − Cᵀy − z = 0 → y = −2.5 (upper side), z₂ = 0.5 − y = 3
    np.testing.assert_allclose(out.y, [-2.5], atol=1e-7)
    np.testing.assert_allclose(out.z, [0.0, 3.0], atol=1e-7)


def test_edge_shapes() -> None:
    # unconstrained: one Newton step
    Q = np.array([[2.0, 1.0], [1.0, 2.0]])
    out = ipm_solve(Q, np.array([1.0, -1.0]))
    assert out.status == "converged"
    np.testing.assert_allclose(out.x, np.linalg.solve(Q, [-1.0, 1.0]), atol=1e-10)
    # every variable fixed
    out = ipm_solve(np.eye(3), np.ones(3), lb=np.arange(3.0), ub=np.arange(3.0))
    assert out.status == "converged" and np.array_equal(out.x, np.arange(3.0))
    # an LP (Q = 0) with a free variable and a two-sided row
    out = ipm_solve(np.zeros((2, 2)), np.array([1.0, -1.0]), lb=np.array([0.0, -np.inf]),
                    C=np.array([[1.0, 1.0], [0.0, 1.0]]), l=np.array([1.0, -5.0]), u=np.array([3.0, 2.0]), tol=1e-9)
    assert out.status == "converged"
    np.testing.assert_allclose(out.x, [0.0, 2.0], atol=1e-7)
    assert abs(out.objective + 2.0) <= 1e-8
    # a row of C with no finite end and an equality row of C, both with fixed variables
    out = ipm_solve(np.eye(3), -np.ones(3), lb=np.array([0.0, 1.0, -np.inf]), ub=np.array([2.0, 1.0, np.inf]),
                    C=np.array([[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]]), l=np.array([-np.inf, 0.0]),
                    u=np.array([np.inf, 0.0]), tol=1e-10)
    assert out.status == "converged"
    np.testing.assert_allclose(out.x, [1.0, 1.0, 1.0], atol=1e-8)


# --- honest verdicts --------------------------------------------------------------------------

INFEASIBLE: dict[str, dict[str, Any]] = {
    # two rows of C contradict: x₁ + x₂ ≥ 2 and x₁ + x₂ ≤ 1
    "rows": dict(Q=np.eye(2), c=np.zeros(2), lb=np.zeros(2), ub=np.full(2, 5.0), C=np.ones((2, 2)),
                 l=np.array([2.0, -np.inf]), u=np.array([np.inf, 1.0])),
    # an equality out of the box's reach
    "equality_and_box": dict(Q=np.eye(3), c=np.ones(3), lb=np.zeros(3), ub=np.ones(3), A=np.ones((1, 3)),
                             b=np.array([4.0])),
    # contradictory equalities over free variables (no box to absorb a Farkas residual)
    "free_equalities": dict(Q=np.eye(2), c=np.ones(2), A=np.array([[1.0, 1.0], [2.0, 2.0]]), b=np.array([1.0, 3.0])),
    # fixed variables make a row empty and violated (found before any iteration)
    "empty_row": dict(Q=np.eye(2), c=np.zeros(2), lb=np.array([1.0, 2.0]), ub=np.array([1.0, 2.0]),
                      A=np.array([[1.0, 1.0]]), b=np.array([0.0])),
}


@pytest.mark.parametrize("name", sorted(INFEASIBLE))
def test_infeasible_problems_are_proved_infeasible(name: str) -> None:
    out = ipm_solve(**INFEASIBLE[name])
    assert out.status == "primal_infeasible"
    reason = out.info["reason"]
    assert "Farkas" in reason or "HiGHS" in reason or "presolve" in reason
    if "Farkas" in reason:
        # the certificate itself: Aᵀλ + Cᵀy + z = 0 and a positive support value
        kw = INFEASIBLE[name]
        n = kw["c"].size
        lam, y, z = out.info["farkas_lam"], out.info["farkas_y"], out.info["farkas_z"]
        A = kw.get("A", np.zeros((0, n)))
        C = kw.get("C", np.zeros((0, n)))
        assert np.abs(A.T @ lam + C.T @ y + z).max() <= 1e-12


UNBOUNDED: dict[str, dict[str, Any]] = {
    # an LP ray: min −x₁ − x₂ over x ≥ 0, x₁ = x₂
    "lp": dict(Q=np.zeros((2, 2)), c=np.array([-1.0, -1.0]), lb=np.zeros(2), A=np.array([[1.0, -1.0]]),
               b=np.zeros(1)),
    # a singular Q with c along its null space, a one-sided row
    "qp": dict(Q=np.diag([1.0, 0.0, 0.0]), c=np.array([0.0, -1.0, 0.5]), lb=np.array([-np.inf, 0.0, 0.0]),
               C=np.array([[0.0, 1.0, -1.0]]), l=np.array([-np.inf]), u=np.array([3.0])),
}


@pytest.mark.parametrize("name", sorted(UNBOUNDED))
def test_unbounded_problems_are_proved_unbounded(name: str) -> None:
    out = ipm_solve(**UNBOUNDED[name])
    assert out.status == "unbounded"
    kw = UNBOUNDED[name]
    d = out.info["ray"]
    assert kw["c"] @ d < 0 and np.abs(kw["Q"] @ d).max() <= 1e-9


def test_bounded_with_a_recession_direction_is_not_called_unbounded() -> None:
    # a ray exists (x₁ = x₂ → ∞) but the objective grows along it: a minimizer exists
    out = ipm_solve(np.zeros((2, 2)), np.array([1.0, 1.0]), lb=np.zeros(2), A=np.array([[1.0, -1.0]]),
                    b=np.zeros(1), tol=1e-9)
    assert out.status == "converged"
    np.testing.assert_allclose(out.x, [0.0, 0.0], atol=1e-8)


def test_strategy_statuses_for_infeasible_and_unbounded() -> None:
    kw = UNBOUNDED["qp"]
    qp = qpcore.QP(kw["Q"], kw["c"], kw["lb"], C=kw["C"], l=kw["l"], u=kw["u"])
    res = qpcore.solve(qp, by_name("ipm"), tol=1e-8)
    assert res.status is Status.UNBOUNDED and "recession direction" in res.stats["ipm_reason"]
    kw = INFEASIBLE["rows"]
    qp = qpcore.QP(kw["Q"], kw["c"], kw["lb"], kw["ub"], C=kw["C"], l=kw["l"], u=kw["u"], check_feasible=False)
    res = qpcore.solve(qp, by_name("interior-point"), tol=1e-8)
    assert res.status is Status.PRIMAL_INFEASIBLE and res.stats["ipm_outcome"] == "primal_infeasible"


@given(general_problems(max_n=14, max_m=3, max_k=8))
def test_no_false_claims_and_certified_when_converged(g: GeneralQP) -> None:
    """Every drawn problem is feasible and bounded: the IPM may stall on the hardest (degenerate,
    six decades of scaling), never claim infeasibility or unboundedness; a converged point is
    certified by qpcore's own measure."""
    qp = g.qp("rows")
    res = qpcore.solve(qp, InteriorPoint(), tol=1e-7)
    assert res.status in (Status.CONVERGED, Status.STALLED), (res.status, res.stats.get("ipm_reason"))
    if res.status is Status.CONVERGED:
        assert res.kkt.ok(1e-7)
        if g.optimum is not None:
            f = g.objective(g.optimum.x)
            assert abs(res.objective - f) <= 1e-6 * max(1.0, abs(f))


def test_core_steps_one_iteration_at_a_time() -> None:
    g = planted_general_qp(20, 2, 10, seed=11)
    core = IPMCore(g.Q, g.c, g.lb, g.ub, g.A, g.b, g.C, g.l, g.u, settings=IPMSettings(tol=1e-8))
    seen = []
    while core.outcome == "running":
        core.iterate()
        seen.append(core.iterations)
        assert core.iterations < 60
    assert seen == list(range(1, len(seen) + 1)) and core.outcome == "converged"
    lam, y = core.multipliers()
    assert lam.shape == (2,) and y.shape == (10,)


def test_registry_and_accepts() -> None:
    s = by_name("ipm:linear_solver=sparse,reg=1e-8")
    assert isinstance(s, InteriorPoint) and s.linear_solver == "sparse" and s.reg == 1e-8
    assert InteriorPoint.takes_inequalities
    X = np.random.default_rng(0).normal(size=(30, 2))
    big = qpcore.QP(qpcore.KernelQ(X, qpcore.Kernel("rbf", gamma=1.0)), -np.ones(30), np.zeros(30), np.ones(30))
    assert InteriorPoint().accepts(big) is None
    reason = InteriorPoint(max_dense_n=10).accepts(big)
    assert reason is not None and "GPCG" in reason


def test_sparse_q_operator_and_a_kernel_operator() -> None:
    g = planted_general_qp(25, 2, 8, seed=5)
    qp = qpcore.QP(SparseQ(sp.csr_matrix(g.Q)), g.c, g.lb, g.ub, g.A, g.b, C=g.C, l=g.l, u=g.u)
    res = qpcore.solve(qp, InteriorPoint(), tol=1e-8)
    assert res.status is Status.CONVERGED and res.kkt.ok(1e-8)
    # an SVM dual through a kernel operator (its matrix formed from rows)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    yl = np.where(X[:, 0] > 0, 1.0, -1.0)
    svm = qpcore.QP(qpcore.KernelQ(X, qpcore.Kernel("rbf", gamma=0.5), scale=yl), -np.ones(40), np.zeros(40),
                    np.ones(40), yl, np.zeros(1))
    res = qpcore.solve(svm, InteriorPoint(), tol=1e-6)
    assert res.status is Status.CONVERGED and res.kkt.ok(1e-6)


# --- the Maros–Meszaros problems of the shared data ------------------------------------------

MM_SMALL = ("HS21", "HS35", "HS51", "QPTEST", "GENHS28", "DUALC1", "LOTSCHD", "QADLITTL")


def _mm(name: str) -> dict[str, Any]:
    import scipy.io

    from qpcore_formulations.data.files import data_dir

    path = data_dir() / "maros_meszaros" / f"{name}.mat"
    if not path.exists():
        pytest.skip(f"{path} not found")
    d = scipy.io.loadmat(str(path))
    P = sp.csr_matrix(d["P"], dtype=np.float64)
    A = sp.csr_matrix(d["A"], dtype=np.float64)
    l, u = np.asarray(d["l"], dtype=np.float64).ravel(), np.asarray(d["u"], dtype=np.float64).ravel()
    l[l <= -1e19], u[u >= 1e19] = -np.inf, np.inf
    n = P.shape[0]
    k = A.shape[0] - n          # the last n rows are the identity: the bounds
    eq = l[:k] == u[:k]
    return dict(P=P, q=np.asarray(d["q"], dtype=np.float64).ravel(), lb=l[k:], ub=u[k:], A=A[:k][eq], b=l[:k][eq],
                C=A[:k][~eq], l=l[:k][~eq], u=u[:k][~eq])


@pytest.mark.data
@pytest.mark.anchor
@pytest.mark.parametrize("name", MM_SMALL)
def test_maros_meszaros_against_piqp(name: str) -> None:
    piqp = pytest.importorskip("piqp")
    d = _mm(name)
    out = ipm_solve(d["P"], d["q"], d["lb"], d["ub"], d["A"], d["b"], d["C"], d["l"], d["u"], tol=1e-7)
    assert out.status == "converged", out.info["reason"]
    assert out.iterations <= 50
    solver = piqp.SparseSolver()
    solver.settings.verbose = False
    solver.settings.eps_abs, solver.settings.eps_rel = 1e-9, 0.0
    solver.setup(sp.csc_matrix(d["P"]), d["q"], sp.csc_matrix(d["A"]), d["b"], sp.csc_matrix(d["C"]), d["l"], d["u"],
                 d["lb"], d["ub"])
    assert "Solved" in str(solver.solve()) or "SOLVED" in str(solver.solve())
    ref = float(solver.result.info.primal_obj)
    assert abs(out.objective - ref) <= 1e-7 * max(1.0, abs(ref))


@pytest.mark.data
def test_maros_meszaros_through_the_strategy() -> None:
    d = _mm("QSHARE2B")
    qp = qpcore.QP(SparseQ(d["P"]), d["q"], d["lb"], d["ub"], d["A"].toarray(), d["b"], C=d["C"].toarray(), l=d["l"],
                   u=d["u"])
    res = qpcore.solve(qp, InteriorPoint(), tol=1e-7)
    assert res.status is Status.CONVERGED and res.kkt.ok(1e-7)
    assert res.iterations <= 50
