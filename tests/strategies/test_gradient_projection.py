"""GPCG: KKT property tests on generated problems, dense references, and cross-checks against
OSQP, scipy's nnls / lsq_linear, and SMO; the exact projected search; unboundedness; limits."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import lsq_linear
from scipy.optimize import nnls as scipy_nnls

import qpcore
from qpcore_formulations.data.files import load_dataset
from qpcore_formulations.least_squares import bounded_least_squares, nnls
from qpcore_formulations.svm import csvc
from qpcore.backends.gram import GramQ
from qpcore.backends.operators import Kernel, KernelQ
from qpcore.testkit.reference import check_against_reference
from qpcore.testkit.testing import box_equality_qps, box_qps, nonneg_qps, planted_qps, svm_duals
from qpcore.core.optimality import projected_gradient
from qpcore_strategies.gradient_projection import GPCG, projected_search
from qpcore_strategies.smo import SMO


def _check(qp: qpcore.QP, rel: float = 1e-8) -> qpcore.Result:
    return check_against_reference(qp, GPCG(), rel)


# --- property tests: every shape qpcore.testkit.testing draws, condition up to 1e8 ------------------------

@given(qp=box_qps())
def test_box_kkt_and_reference(qp: qpcore.QP) -> None:
    _check(qp)


@given(qp=nonneg_qps())
def test_nonneg_kkt_and_reference(qp: qpcore.QP) -> None:
    _check(qp)


@given(qp=box_equality_qps())
def test_box_equality_kkt_and_reference(qp: qpcore.QP) -> None:
    _check(qp)


@given(qp=svm_duals())
def test_svm_dual_kkt_and_reference(qp: qpcore.QP) -> None:
    _check(qp)


@given(pair=planted_qps())
def test_planted_optimum_reached(pair: tuple[qpcore.QP, np.ndarray]) -> None:
    qp, x_star = pair
    res = _check(qp)
    f_star = qp.objective(x_star)
    # convexity: f(x) − f* ≤ Σ|z_i||x_i − x*_i|, each |z_i| bounded by the certificate (a step
    # may stop as soon as the measure meets tol, e.g. at a Cauchy point on an ill-conditioned Q)
    gap = max(res.kkt.gap, 0.0) if qp.m else res.kkt.stationarity
    weights = np.where(qp.A[0] != 0, np.abs(qp.A[0]) * gap, gap) if qp.m else np.full(qp.n, gap)
    slack = 1e-7 * abs(f_star) + 1e-9
    assert f_star - slack <= res.objective <= f_star + float(weights @ np.abs(res.x - x_star)) + slack


# --- the projected search ----------------------------------------------------------------------

@given(qp=box_qps(max_n=12), seed=st.integers(0, 2**32 - 1), segments=st.sampled_from([1, 2, 64]))
def test_box_search_finds_the_first_path_minimum(qp: qpcore.QP, seed: int, segments: int) -> None:
    """Nothing on the projected path before the accepted step is better, and it is a local minimum."""
    rng = np.random.default_rng(seed)
    x = np.clip(rng.uniform(-1, 1, qp.n) * np.minimum(1.0, np.where(np.isfinite(qp.ub), qp.ub, 1.0)), qp.lb, qp.ub)
    g = qp.gradient(x)
    d = -projected_gradient(x, g, qp.lb, qp.ub)
    res = projected_search(qp, x, g, d, segments=segments, rounds=1_000)
    if res.decrease == np.inf:
        pytest.skip("unbounded direction")
    f0 = qp.objective(x)
    tol = 1e-9 * max(1.0, abs(f0))
    assert res.decrease >= 0.0
    assert np.all(res.x >= qp.lb) and np.all(res.x <= qp.ub)
    assert f0 - qp.objective(res.x) == pytest.approx(res.decrease, rel=1e-6, abs=tol)
    if res.Qs is None:
        assert not np.any(g @ d < 0 and res.decrease > 0)
        return
    np.testing.assert_allclose(res.Qs, qp.Q.matvec(res.x - x), atol=1e-9 * max(1.0, float(np.abs(res.Qs).max())))
    np.testing.assert_allclose(res.x, np.clip(x + res.alpha * d, qp.lb, qp.ub), atol=1e-9)

    def f(a: float) -> float:
        return float(qp.objective(np.clip(x + a * d, qp.lb, qp.ub)))

    with np.errstate(divide="ignore", invalid="ignore"):
        t = (np.where(d > 0, qp.ub, qp.lb) - x) / d
    t = t[(d != 0) & np.isfinite(t) & (0 < t) & (t <= res.alpha)]
    before = np.concatenate([t, np.linspace(0, res.alpha, 1001)])
    f_star = f0 - res.decrease
    assert min(f(a) for a in before) >= f_star - tol
    step = 1e-4 * max(res.alpha, 1e-6)
    assert f(res.alpha + step) >= f_star - tol


@given(qp=box_equality_qps(max_n=12), seed=st.integers(0, 2**32 - 1))
def test_equality_search_stays_feasible_and_descends(qp: qpcore.QP, seed: int) -> None:
    from qpcore.linalg.projection import project_box_equality

    rng = np.random.default_rng(seed)
    x = project_box_equality(rng.normal(size=qp.n), qp.lb, qp.ub, qp.A[0], float(qp.b[0]))[0]
    g = qp.gradient(x)
    res = projected_search(qp, x, g, -g, 1.0)
    assert res.decrease >= 0.0
    assert qpcore.kkt(qp, res.x).primal <= 1e-9 * max(1.0, float(np.abs(qp.A[0]).sum() * np.abs(res.x).max()))
    assert qp.objective(res.x) <= qp.objective(x) + 1e-12 * max(1.0, abs(qp.objective(x)))


# --- cross-checks against independent solvers --------------------------------------------------

def _osqp(qp: qpcore.QP, Q: np.ndarray) -> float:
    osqp = pytest.importorskip("osqp")
    n = qp.n
    A = sp.identity(n, format="csc")
    lo, hi = qp.lb, qp.ub
    if qp.m:
        A = sp.vstack([A, sp.csc_matrix(qp.A)], format="csc")
        lo, hi = np.concatenate([lo, qp.b]), np.concatenate([hi, qp.b])
    solver = osqp.OSQP()
    solver.setup(P=sp.csc_matrix(np.triu(Q)), q=qp.c, A=A, l=lo, u=hi, eps_abs=1e-10, eps_rel=1e-10,
                 max_iter=200_000, polishing=True, verbose=False)
    sol = solver.solve()
    return float(qp.objective(np.clip(sol.x, qp.lb, qp.ub)))


@pytest.mark.parametrize("equality", [False, True])
def test_against_osqp(equality: bool) -> None:
    rng = np.random.default_rng(0)
    n = 300
    M = rng.normal(size=(450, n))
    Q = M.T @ M / n + 1e-3 * np.eye(n)
    c = rng.normal(size=n)
    A, b = (np.ones((1, n)), np.array([1.0])) if equality else (None, None)
    qp = qpcore.QP(Q, c, -0.1, 0.1, A, b)
    res = qpcore.solve(qp, GPCG(), tol=1e-10)
    assert res.converged
    f_osqp = _osqp(qp, Q)
    # OSQP's point is clipped to the box but may miss the equality by its tolerance
    assert res.objective <= f_osqp + 1e-8 * abs(f_osqp)
    assert res.objective == pytest.approx(f_osqp, rel=1e-7)


@pytest.mark.parametrize("m, n, backend", [(400, 120, "dense"), (400, 120, "gram"), (60, 150, "auto")])
def test_nnls_against_scipy(m: int, n: int, backend: str) -> None:
    rng = np.random.default_rng(m + n)
    A, d = rng.normal(size=(m, n)), rng.normal(size=m)
    p = nnls(A, d, backend=backend)  # type: ignore[arg-type]
    res = qpcore.solve(p.qp, GPCG(), tol=1e-10 * max(1.0, float(np.abs(p.qp.c).max())), max_iter=10_000)
    assert res.converged
    x, rnorm = p.decode(res)
    x_ref, r_ref = scipy_nnls(A, d, maxiter=50 * n)
    # compare the objective ½‖r‖² (a zero residual is only reached to the tolerance's square root)
    assert rnorm**2 <= r_ref**2 * (1 + 1e-9) + 1e-12 * float(d @ d)
    if m >= n:  # full column rank: the minimizer is unique
        np.testing.assert_allclose(x, x_ref, atol=1e-7 * max(1.0, float(np.abs(x_ref).max())))


def test_sparse_nnls_against_scipy() -> None:
    rng = np.random.default_rng(3)
    A = sp.random(500, 200, density=0.05, random_state=rng, format="csr") + sp.eye(500, 200)
    d = rng.normal(size=500)
    p = nnls(A, d)
    assert isinstance(p.qp.Q, GramQ)
    res = qpcore.solve(p.qp, GPCG(), tol=1e-10 * max(1.0, float(np.abs(p.qp.c).max())))
    assert res.converged
    _, r_ref = scipy_nnls(A.toarray(), d, maxiter=10_000)
    assert p.decode(res)[1] <= r_ref * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("lb, ub", [(-0.2, 0.3), (-np.inf, 0.1), (0.0, np.inf)])
def test_bounded_least_squares_against_lsq_linear(lb: float, ub: float) -> None:
    rng = np.random.default_rng(11)
    A, d = rng.normal(size=(300, 80)), rng.normal(size=300)
    p = bounded_least_squares(A, d, lb, ub)
    res = qpcore.solve(p.qp, GPCG(), tol=1e-10 * max(1.0, float(np.abs(p.qp.c).max())))
    assert res.converged
    x, rnorm = p.decode(res)
    ref = lsq_linear(A, d, bounds=(lb, ub), method="bvls", tol=1e-14, lsmr_tol=None)
    r_ref = float(np.linalg.norm(A @ ref.x - d))
    assert rnorm <= r_ref * (1 + 1e-9) + 1e-12
    np.testing.assert_allclose(x, ref.x, atol=1e-7)


# the linear kernel's dual is rank-deficient (123 features): CG on its faces is slow at large C,
# so it is checked at Platt's C = 0.05 on fewer points
@pytest.mark.data
@pytest.mark.parametrize("kernel, n, C", [(Kernel("rbf", gamma=0.05), 800, 1.0), (Kernel("linear"), 400, 0.05)])
def test_svm_dual_agrees_with_smo(kernel: Kernel, n: int, C: float) -> None:
    X, y = load_dataset("adult")
    X, y = X[:n], y[:n]
    prob = csvc(X, y, C=C, kernel=kernel, dtype=np.float64)
    smo = qpcore.solve(prob.qp, SMO(), tol=1e-7, max_iter=200_000)
    gp = qpcore.solve(prob.qp, GPCG(), tol=1e-7, max_iter=20_000)
    assert smo.converged and gp.converged
    assert isinstance(prob.qp.Q, KernelQ)
    assert gp.objective == pytest.approx(smo.objective, rel=1e-7)
    m1, m2 = prob.decode(smo), prob.decode(gp)
    assert abs(m1.bias - m2.bias) <= 1e-4 * max(1.0, abs(m1.bias))


# --- unboundedness, bad input, limits ----------------------------------------------------------

def test_unbounded_is_reported() -> None:
    Q = np.diag([1.0, 0.0])
    qp = qpcore.QP(Q, np.array([0.0, -1.0]), np.array([-1.0, 0.0]), np.array([1.0, np.inf]))
    res = qpcore.solve(qp, GPCG(), tol=1e-8, max_iter=100)
    assert res.status is qpcore.Status.UNBOUNDED


def test_unbounded_along_the_equality_is_reported() -> None:
    # x0 − x1 = 0 with x ≥ 0 and c = (−1, −1), Q singular along (1, 1): unbounded along the face
    Q = np.array([[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    qp = qpcore.QP(Q, np.array([-1.0, -1.0, 0.0]), 0.0, np.inf, np.array([[1.0, -1.0, 0.0]]), 0.0)
    res = qpcore.solve(qp, GPCG(), tol=1e-8, max_iter=100)
    assert res.status is qpcore.Status.UNBOUNDED


def test_psd_singular_bounded_converges() -> None:
    # a zero-curvature direction that is bounded: the boundary move, not a failure
    Q = np.zeros((3, 3))
    Q[0, 0] = 1.0
    qp = qpcore.QP(Q, np.array([-1.0, -2.0, 3.0]), -1.0, 1.0)
    res = qpcore.solve(qp, GPCG(), tol=1e-12)
    assert res.converged
    np.testing.assert_allclose(res.x, [1.0, 1.0, -1.0])
    assert res.stats["boundary_moves"] + res.stats["gp_steps"] >= 1


def test_two_identical_general_rows() -> None:
    # dependent rows: the projection and the face's basis drop the copy
    qp = qpcore.QP(np.eye(3), np.zeros(3), 0.0, 1.0, np.ones((2, 3)), np.ones(2))
    res = qpcore.solve(qp, GPCG(), tol=1e-10)
    assert res.status is qpcore.Status.CONVERGED
    np.testing.assert_allclose(res.x, [1 / 3, 1 / 3, 1 / 3], atol=1e-10)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(4, 16), m=st.integers(2, 3),
       kind=st.sampled_from(["groups", "general"]))
def test_rows_search_keeps_every_row_and_descends(seed: int, n: int, m: int, kind: str) -> None:
    # several rows: the search projects group by group, or by the dual Newton method for general
    # rows; every accepted point meets every row
    from qpcore.testkit.generators import planted_rows_qp
    from qpcore.linalg.projection import project

    qp, _ = planted_rows_qp(max(n, m + 2), m, seed=seed, kind=kind, infinite=0.0)  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    x = project(qp, rng.normal(size=qp.n))
    g = qp.gradient(x)
    for d in (-g, -projected_gradient(x, g, qp.lb, qp.ub)):
        res = projected_search(qp, x, g, d, 1.0)
        assert res.decrease >= 0.0
        assert qpcore.kkt(qp, res.x).feasible()
        assert qp.objective(res.x) <= qp.objective(x) + 1e-12 * max(1.0, abs(qp.objective(x)))


def test_iteration_limit_is_honest() -> None:
    rng = np.random.default_rng(5)
    M = rng.normal(size=(200, 150))
    qp = qpcore.QP(M.T @ M * 1e-6 + np.diag(np.logspace(-6, 2, 150)), rng.normal(size=150), -1.0, 1.0)
    res = qpcore.solve(qp, GPCG(max_cg=2), tol=1e-12, max_iter=2)
    assert res.status is qpcore.Status.MAX_ITER
    assert res.kkt.measure > 1e-12 and res.kkt.primal == 0.0
    assert res.objective < qp.objective(np.zeros(150))


def test_counters_are_reported() -> None:
    qp = qpcore.QP(np.diag([1.0, 2.0, 3.0]), np.array([-5.0, 1.0, -1.0]), 0.0, 1.0)
    res = qpcore.solve(qp, GPCG(), tol=1e-12)
    assert res.converged
    for key in ("gp_steps", "cg_steps", "cg_searches", "boundary_moves"):
        assert key in res.stats
    np.testing.assert_allclose(res.x, [1.0, 0.0, 1.0 / 3.0])


# --- general rows: the face basis, curvature within the PSD tolerance, the Maros–Meszaros set -------

def test_face_basis_spans_the_rows_on_the_face() -> None:
    # dependent rows and rows that vanish on the face: the basis is orthonormal, zero off the face,
    # and spans exactly the rows restricted to it (an unpivoted QR lost that span)
    from qpcore_strategies.projected_search import _row_basis

    rng = np.random.default_rng(3)
    n = 12
    A = rng.standard_normal((5, n))
    A[2] = A[0] - 3.0 * A[1]                 # dependent
    A[3, :6] = 0.0                          # vanishes on the face below
    A[4] = 1e3 * A[0]                       # dependent and scaled
    idx = np.arange(6)
    B = _row_basis(A, idx)
    assert B is not None and B.shape[0] == 2
    np.testing.assert_allclose(B @ B.T, np.eye(2), atol=1e-12)
    assert not B[:, 6:].any()
    rows = A[:, idx]
    P = np.eye(6) - B[:, idx].T @ B[:, idx]
    np.testing.assert_allclose(rows @ P, 0.0, atol=1e-9 * np.abs(rows).max())
    assert _row_basis(A, np.array([], dtype=np.intp)) is None


def test_curvature_within_the_psd_tolerance_is_not_nonconvex() -> None:
    # a Q accepted by the PSD check (smallest eigenvalue −1e-7 of the largest: the rounding of its
    # data) is convex for GPCG too: converged, never "nonconvex"
    rng = np.random.default_rng(4)
    n = 30
    U = np.linalg.qr(rng.standard_normal((n, n)))[0]
    w = np.concatenate([[-1e-7 * 10.0], rng.uniform(0.5, 10.0, n - 1)])
    Q = (U * w) @ U.T
    A = rng.standard_normal((3, n))
    x0 = rng.uniform(-1.0, 1.0, n)
    qp = qpcore.QP(0.5 * (Q + Q.T), rng.standard_normal(n), np.full(n, -1.0), np.full(n, 1.0), A, A @ x0)
    res = qpcore.solve(qp, GPCG(), tol=1e-8)
    assert res.status is qpcore.Status.CONVERGED
    assert res.stats["negative_curvature"] == 0


MM_CERTIFY = ("CVXQP1_S", "DUALC1", "DUALC5", "VALUES", "PRIMALC1", "LOTSCHD", "HS21", "QPTEST")
# QADLITTL (about 15 s) and QSCORPIO (about 6 s) certify too; left out to keep the suite within its time
MM_CERTIFY_SLOW = ("QSCTAP1", "QPCBLEND", "QSC205", "PRIMAL2", "CVXQP3_S", "GENHS28")
MM_HONEST = ("QPCBOEI2", "QISRAEL")


def _mm(name: str) -> tuple[qpcore.QP, dict[str, np.ndarray]]:
    """The Maros–Meszaros problem ``name`` as a QP with inequality rows (GPCG sees its slack form) and
    the arrays in qpsolvers' terms."""
    import scipy.io

    from qpcore_formulations.data.files import data_dir

    path = data_dir() / "maros_meszaros" / f"{name}.mat"
    if not path.exists():
        pytest.skip(f"{path} not found")
    d = scipy.io.loadmat(str(path))
    P = sp.csr_matrix(d["P"], dtype=np.float64).toarray()
    P = 0.5 * (P + P.T)
    M = sp.csr_matrix(d["A"], dtype=np.float64).toarray()
    l, u = np.asarray(d["l"], dtype=np.float64).ravel(), np.asarray(d["u"], dtype=np.float64).ravel()
    l[l <= -1e19], u[u >= 1e19] = -np.inf, np.inf           # the files write ±inf as ±1e20
    n = P.shape[0]
    k = M.shape[0] - n                                        # the last n rows are the bounds
    q = np.asarray(d["q"], dtype=np.float64).ravel()
    qp = qpcore.QP(P, q, l[k:], u[k:], C=M[:k], l=l[:k], u=u[:k])
    return qp, dict(P=P, q=q, C=M[:k], l=l[:k], u=u[:k], lb=l[k:], ub=u[k:])


def _reference_objective(d: dict[str, np.ndarray]) -> float:
    """½xᵀPx + qᵀx at PIQP's optimum (Clarabel's without PIQP), through qpsolvers, to 1e-9."""
    qpsolvers = pytest.importorskip("qpsolvers")
    solver = "piqp" if "piqp" in qpsolvers.available_solvers else "clarabel"
    if solver not in qpsolvers.available_solvers:
        pytest.skip("neither PIQP nor Clarabel is installed")
    C, l, u = d["C"], d["l"], d["u"]
    eq = l == u
    up, lo = ~eq & np.isfinite(u), ~eq & np.isfinite(l)
    G = np.vstack([C[up], -C[lo]])
    h = np.concatenate([u[up], -l[lo]])
    kw = dict(eps_abs=1e-10, eps_rel=1e-10) if solver == "piqp" else dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10,
                                                                          tol_feas=1e-10)
    x = qpsolvers.solve_qp(sp.csc_matrix(d["P"]), d["q"], sp.csc_matrix(G) if G.size else None, h if G.size else None,
                           sp.csc_matrix(C[eq]) if eq.any() else None, l[eq] if eq.any() else None,
                           d["lb"], d["ub"], solver=solver, **kw)
    assert x is not None, f"{solver} found no solution"
    return float(0.5 * x @ d["P"] @ x + d["q"] @ x)


def _certifies(name: str) -> None:
    qp, d = _mm(name)
    res = qpcore.solve(qp, GPCG(), tol=1e-6)
    assert res.status is qpcore.Status.CONVERGED, (res.status, res.kkt.measure)
    assert res.kkt.ok(1e-6)
    assert res.stats["negative_curvature"] == 0
    ref = _reference_objective(d)
    assert abs(res.objective - ref) <= 1e-6 * max(1.0, abs(ref))


@pytest.mark.data
@pytest.mark.anchor
@pytest.mark.parametrize("name", MM_CERTIFY)
def test_maros_meszaros_certified(name: str) -> None:
    # slack form: the start and every projection used to call DUALC1, DUALC5 infeasible, and CVXQP1_S
    # (convex) nonconvex
    _certifies(name)


@pytest.mark.data
@pytest.mark.anchor
@pytest.mark.slow
@pytest.mark.parametrize("name", MM_CERTIFY_SLOW)
def test_maros_meszaros_certified_larger(name: str) -> None:
    _certifies(name)


@pytest.mark.data
@pytest.mark.parametrize("name", MM_HONEST)
def test_maros_meszaros_ends_honestly(name: str) -> None:
    # problems GPCG does not finish in a few seconds end on the time limit with a feasible point;
    # never an infeasibility, nonconvexity or unboundedness claim, never an exception (QPCBOEI2
    # ended in "SVD did not converge", the others in "no point of the box meets the rows")
    qp, _ = _mm(name)
    res = qpcore.solve(qp, GPCG(), tol=1e-6, time_limit=2.0)
    assert res.status in (qpcore.Status.CONVERGED, qpcore.Status.TIME_LIMIT, qpcore.Status.STALLED)
    assert res.kkt.feasible(1e-9)
