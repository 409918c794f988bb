"""qpcore.testkit.testing's general QPs and the certificate on them.

- the strategies (general_qps, general_problems) draw valid problems, and warm_starts is what it
  says on problems with inequality rows (feasible, or off a row while in the box and on A x = b);
- (a) qpcore.kkt certifies the planted optimum at 1e-9, and is continuous: a point within 1e-12
  of the optimum certifies at 1e-9 (issue 33's bar), while a point moved by δ well past the
  tolerance (a distance the problem's curvature turns into a measure above it) does not, moved
  along a feasible segment or in a random direction;
- (b) optima from Clarabel (1e-10) and from OSQP polished (eps 1e-10) certify at 1e-9 where they
  are accurate optima: Clarabel on strictly complementary problems (an interior-point method's point
  is off the optimum by about the square root of its tolerance on degenerate ones, and the
  certificate says so), OSQP where its own multipliers witness KKT to 1e-10;
- the runnable example of docs/testing.md runs.

The certificate treats one row (and disjoint groups) on its own path (the pair gap, LIBSVM's rho);
the continuity tests run on those problems apart, marked xfail while a probe shows that path still
jumps (see ``GROUPS_JUMP``).
"""

from __future__ import annotations

import pathlib
import re
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, event, given, note
from hypothesis import strategies as st

import qpcore
from qpcore import QP
from qpcore.testkit.generators import planted_qp
from qpcore.linalg.feasible_points import inequality_rows, lp_point
from qpcore.testkit.generators_general import GeneralQP, planted_general_qp
from qpcore.testkit.reference import clarabel_reference
from qpcore.testkit.testing import general_problems, general_qps, warm_starts

FloatArray = np.ndarray
ROOT = pathlib.Path(__file__).resolve().parents[2]
TOL = 1e-9


def grad_scale(p: GeneralQP, x: FloatArray) -> float:
    """max(1, ‖c‖∞, ‖|Q||x|‖∞): the size of the gradient's terms (1 to 10 on unscaled problems)."""
    return max(1.0, float(np.abs(p.c).max()), float((np.abs(p.Q) @ np.abs(x)).max()))


def row_kind(qp: QP) -> str:
    """The kind of rows the certificate sees: its slack form's where the QP has inequality rows."""
    if inequality_rows(qp)[0].shape[0]:
        return str(qp.slack_form().qp.equality.kind)
    return str(qp.equality.kind)


def certifies(p: GeneralQP, qp: QP, x: FloatArray, tol: float) -> bool:
    return bool(qpcore.kkt(qp, p.in_form(x)).ok(tol))


def _groups_jump() -> str | None:
    """Why the certificate jumps on one-row problems, or None once it is continuous there: an SVM-
    form planted optimum with a variable lifted 1e-13 off its bound, and a QP whose one row is an
    active inequality row, moved 1e-14."""
    qp, xs = planted_qp(10, seed=1, svm_form=True, ub=1.0, p_bound=0.6)
    x = xs.copy()
    x[int(np.flatnonzero(xs == 0)[0])] = 1e-13
    one_row = qpcore.kkt(qp, x).measure
    Q, C = np.eye(2), np.array([[0.04, 0.0]])
    x_star = np.array([1.0, 0.5])
    row = QP(Q, -x_star + C[0] * -0.25, np.array([-2.0, -np.inf]), np.full(2, 2.0), C=C, l=np.array([-1.0]),
             u=np.array([0.04]))
    ineq = qpcore.kkt(row, x_star - np.array([1e-14, 0.0])).measure
    if one_row <= TOL and ineq <= TOL:
        return None
    return (f"qpcore.kkt jumps on one-row problems: an SVM-form optimum with a variable 1e-13 off its bound "
            f"measures {one_row:.2g}, a one-inequality-row optimum moved 1e-14 measures {ineq:.2g} (the one-row "
            "multiplier and the pair gap test 'x < ub' exactly, not within kkt.BOUND_BAND)")


GROUPS_JUMP = _groups_jump()


# --- the strategies ------------------------------------------------------------------------------

@given(general_qps(max_n=10))
def test_general_qps_are_valid_qps(qp: QP) -> None:
    assert isinstance(qp, QP)
    C, l, u = inequality_rows(qp)
    event(f"rows: m={min(qp.m, 2)}+ k={min(C.shape[0], 3)}+")
    x = qpcore.testkit.generators.feasible_point(qp, seed=0)
    assert qpcore.kkt(qp, x).feasible()


@given(general_problems(max_n=6, max_m=3, max_k=3), st.data())
def test_warm_starts_on_general_problems(p: GeneralQP, data: st.DataObject) -> None:
    qp = p.qp()
    C, l, u = inequality_rows(qp)
    xf = data.draw(warm_starts(qp, feasible=True), label="feasible")
    assert np.all((qp.lb <= xf) & (xf <= qp.ub))
    assert qpcore.kkt(qp, xf).feasible(1e-9)
    try:
        xi = data.draw(warm_starts(qp, feasible=False), label="infeasible")
        assert not qpcore.kkt(qp, xi).feasible(1e-10)
    except ValueError as e:      # no finite bound, no row: nothing to violate
        assert "no constraint to violate" in str(e)
        assert qp.m == 0 and not C.shape[0] and not (np.isfinite(qp.lb) | np.isfinite(qp.ub)).any()
    if C.shape[0]:
        try:
            x0 = data.draw(warm_starts(qp, violate="inequality"), label="off a row")
        except ValueError as e:
            assert "cannot be violated" in str(e)
            event("no row can be violated in the box and on A x = b")
            return
        event("off an inequality row")
        assert np.all((qp.lb <= x0) & (x0 <= qp.ub))
        eq_scale = 1.0 + float(np.abs(qp.b).max(initial=0.0)) + float((np.abs(qp.A) @ np.abs(x0)).max(initial=0.0))
        assert float(np.abs(qp.A @ x0 - qp.b).max(initial=0.0)) <= 1e-10 * eq_scale
        Cx = C @ x0
        ends = np.concatenate([l[np.isfinite(l)], u[np.isfinite(u)]])
        rows_scale = 1.0 + float(np.abs(ends).max(initial=0.0)) + float((np.abs(C) @ np.abs(x0)).max())
        assert float(np.maximum(l - Cx, Cx - u).max()) > 1e-8 * rows_scale


def test_warm_starts_inequality_kind_needs_rows() -> None:
    from hypothesis import find

    p = planted_general_qp(6, 1, 0, seed=0)
    with pytest.raises(ValueError, match="cannot be violated"):
        find(warm_starts(p.qp(), violate="inequality"), lambda x: True)
    with pytest.raises(ValueError, match="violate"):
        find(warm_starts(p.qp(), violate="rows"), lambda x: True)  # type: ignore[arg-type]


# --- (a) the certificate on the known optimum, and continuous ------------------------------------

@given(general_problems(planted=True))
def test_known_optimum_certifies(p: GeneralQP) -> None:
    assert p.optimum is not None
    x = p.optimum.x
    cert = qpcore.kkt(p.qp(), p.in_form(x))
    # seen over 1,000 draws (scales over up to 6 decades included): 1e-14 of the gradient's scale
    assert cert.ok(TOL * grad_scale(p, x)), cert
    assert cert.ok(TOL * grad_scale(p, x), feas_tol=1e-13)


def _near(p: GeneralQP, rng: np.random.Generator, delta: float) -> FloatArray:
    """The optimum moved by ``delta`` (∞-norm) in a random direction (feasible or not)."""
    assert p.optimum is not None
    d = rng.standard_normal(p.n)
    return p.optimum.x + delta * d / float(np.abs(d).max())


def _check_near_optimum_certifies(p: GeneralQP, seed: int) -> None:
    qp = p.qp()
    rng = np.random.default_rng(seed)
    for _ in range(3):
        x = _near(p, rng, 1e-12)
        cert = qpcore.kkt(qp, p.in_form(x))
        note(f"moved 1e-12: {cert}")
        assert cert.ok(TOL), cert


@given(general_problems(planted=True, max_decades=0), st.integers(0, 2**32 - 1))
def test_points_within_1e_12_of_the_optimum_certify(p: GeneralQP, seed: int) -> None:
    # issue 33: "a point within 1e-12 of an optimum certifies at tol 1e-9, whoever computed it"
    # (on unscaled problems: gradients of a few units, so 1e-9 is absolute here)
    assume(row_kind(p.qp()) != "groups")
    _check_near_optimum_certifies(p, seed)


def one_row(**options: Any) -> st.SearchStrategy[GeneralQP]:
    """Problems with exactly one row, an equality row or an inequality row: the certificate's
    one-row (pair-gap) path."""
    return st.one_of(general_problems(min_m=1, max_m=1, max_k=0, crowded=False, **options),
                     general_problems(max_m=0, min_k=1, max_k=1, crowded=False, **options))


@pytest.mark.xfail(GROUPS_JUMP is not None, reason=GROUPS_JUMP or "", strict=False)
@given(one_row(planted=True, max_decades=0), st.integers(0, 2**32 - 1))
def test_points_within_1e_12_of_the_optimum_certify_one_row(p: GeneralQP, seed: int) -> None:
    assert row_kind(p.qp()) == "groups"
    _check_near_optimum_certifies(p, seed)


def _far_enough(p: GeneralQP) -> float:
    """A distance at which no correct certificate may accept a point: for a feasible x at distance δ
    from the unique optimum of a μ-strongly convex problem, any multipliers leave a measure
    ε ≥ μ δ / K with K = √n + Σ_j ‖C_j‖₂ (convexity: μδ² ≤ gᵀ(x − x*) ≤ ε (‖x − x*‖₁ + Σ_j |C_j (x − x*)|));
    100 times the tolerance's worth of it."""
    mu = float(np.linalg.eigvalsh(p.Q)[0])
    K = float(np.sqrt(p.n)) + float(np.linalg.norm(p.C, axis=1).sum())
    return 100.0 * TOL * K / mu


@given(general_problems(planted=True, max_decades=0, max_cond=1e2, rank_deficient=False, degenerate=False),
       st.integers(0, 2**32 - 1))
def test_points_moved_past_the_tolerance_do_not_certify(p: GeneralQP, seed: int) -> None:
    # strictly complementary optima only: at a degenerate one (an active constraint with a zero
    # multiplier) the KKT residual does not bound the distance to x*, and a point moved along such a
    # constraint, within the bound band, is an ε-KKT point (ε = its complementarity) by definition
    assert p.optimum is not None
    qp = p.qp()
    x_star = p.optimum.x
    delta = _far_enough(p)
    note(f"delta = {delta:.3g}")
    rng = np.random.default_rng(seed)
    # in a random direction (almost surely off some active constraint: infeasible)
    d = rng.standard_normal(p.n)
    x = x_star + delta * d / np.linalg.norm(d)
    assert not certifies(p, qp, x, TOL), qpcore.kkt(qp, p.in_form(x))
    # along a feasible segment: towards a vertex of the feasible set (an LP with a random cost)
    finite = np.isfinite(p.lb) & np.isfinite(p.ub)
    v = lp_point(p.lb, p.ub, p.A, p.b, p.C, p.l, p.u, rng.standard_normal(p.n) * finite)
    if v is None or np.linalg.norm(v - x_star) <= delta:
        event("no feasible point that far: random direction only")
        return
    event("feasible segment too")
    x = x_star + delta * (v - x_star) / np.linalg.norm(v - x_star)
    assert p.violation(x) <= 1e-9 * p.violation_scale(x)
    assert not certifies(p, qp, x, TOL), qpcore.kkt(qp, p.in_form(x))


def _scaled_row_problem(scale: float) -> QP:
    """min ½‖x‖² − x₁ s.t. (0.01·scale) x₁ ≤ 0.005·scale, x₁ + x₂ ≤ 10: x* = (0.5, 0), the first row active."""
    return QP(np.eye(2), np.array([-1.0, 0.0]), C=np.array([[0.01 * scale, 0.0], [1.0, 1.0]]),
              l=np.full(2, -np.inf), u=np.array([0.005 * scale, 10.0]))


def test_a_rows_scale_does_not_decide_the_verdict() -> None:
    # the same problem, its active row scaled by 1 or 100: a point 1e-12 off the optimum certifies
    # in both, a point 5e-8 off it (50,000 times past the tolerance's worth) in neither
    for scale in (100.0, 1.0):
        qp = _scaled_row_problem(scale)
        assert qpcore.kkt(qp, np.array([0.5 - 1e-12, 0.0])).ok(TOL)
        assert not qpcore.kkt(qp, np.array([0.5 - 5e-8, 0.0])).ok(TOL), scale


# --- (b) other solvers' optima certify ------------------------------------------------------------

def accurate(**options: Any) -> st.SearchStrategy[GeneralQP]:
    """Problems where the solvers' points are accurate: planted, Q positive definite with condition
    number ≤ 1e4, scales over ≤ 2 decades."""
    return general_problems(planted=True, max_cond=1e4, rank_deficient=False, max_decades=2, **options)


def _clarabel_case(p: GeneralQP) -> None:
    ref = clarabel_reference(p, check=False)
    if ref.status != "Solved" or ref.tol != 1e-10:
        event("clarabel not solved at 1e-10: skipped")
        return
    x = ref.x
    cert = qpcore.kkt(p.qp(), p.in_form(x))
    note(f"Clarabel: {cert}; objective off by {ref.objective - p.objective(p.optimum.x):.3g}")  # type: ignore[union-attr]
    # Clarabel stops on its own relative measures at 1e-10, its x a distance μ/z off each active
    # bound, whose complementarity z·(μ/z) the measure counts (kkt.band_complementarity): seen up to
    # 3.2e-9 of the gradient's scale, so the check is at 10·TOL. One row's measure is the pair gap
    # max_up v − min_low v in the units of v = −g/a, which spans both sides of the multiplier's
    # interval: up to twice the stationarity over the smallest |a_i|
    qp = p.qp()
    a = np.abs(qp.A[qp.A != 0]) if cert.paired else np.ones(1)
    assert cert.ok(10 * TOL * grad_scale(p, x) * (2.0 / min(1.0, float(a.min())) if cert.paired else 1.0)), cert


@given(accurate(degenerate=False))
def test_clarabel_optima_certify(p: GeneralQP) -> None:
    # strictly complementary optima (every active constraint's planted multiplier nonzero): an
    # interior-point method converges in x as in its residuals
    assume(row_kind(p.qp()) != "groups")
    _clarabel_case(p)


@pytest.mark.xfail(GROUPS_JUMP is not None, reason=GROUPS_JUMP or "", strict=False)
@given(one_row(planted=True, max_cond=1e4, rank_deficient=False, max_decades=2, degenerate=False))
def test_clarabel_optima_certify_one_row(p: GeneralQP) -> None:
    _clarabel_case(p)


def _osqp(p: GeneralQP) -> Any:
    osqp = pytest.importorskip("osqp")
    import scipy.sparse as sp

    M = sp.csc_matrix(np.vstack([p.A, p.C, np.eye(p.n)]))
    lo = np.concatenate([p.b, p.l, p.lb])
    hi = np.concatenate([p.b, p.u, p.ub])
    solver = osqp.OSQP()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.setup(sp.csc_matrix(np.triu(p.Q)), p.c, M, lo, hi, eps_abs=1e-10, eps_rel=1e-10, max_iter=100_000,
                     polishing=True, polish_refine_iter=10, eps_prim_inf=1e-14, eps_dual_inf=1e-14, verbose=False)
        return solver.solve(raise_error=False), M, lo, hi


def _osqp_case(p: GeneralQP) -> None:
    res, M, lo, hi = _osqp(p)
    if res.info.status != "solved" or res.info.status_polish != 1:
        event("osqp: not polished: skipped")
        return
    x, w = np.asarray(res.x, dtype=np.float64), np.asarray(res.y, dtype=np.float64)
    # OSQP's own witness, recomputed: its multipliers w (Px + q + Mᵀw = 0, w ≥ 0 on upper sides,
    # ≤ 0 on lower ones, 0 off them) make x a KKT point to 1e-10 of the scales
    gs = grad_scale(p, x)
    Mx = M @ x
    # a multiplier on an infinite side is a failed witness (infinite product)
    gap_hi = np.where(np.isfinite(hi), np.abs(hi - Mx), np.where(w > 0, np.inf, 0.0))
    gap_lo = np.where(np.isfinite(lo), np.abs(Mx - lo), np.where(w < 0, np.inf, 0.0))
    comp = np.where(w > 0, w * gap_hi, np.where(w < 0, -w * gap_lo, 0.0))
    witness = (p.violation(x) <= 1e-10 * p.violation_scale(x)
               and float(np.abs(p.Q @ x + p.c + M.T @ w).max()) <= 1e-10 * gs
               and float(comp.max(initial=0.0)) <= 1e-10 * gs)
    if not witness:
        event("osqp: polished, but its multipliers do not witness KKT to 1e-10: skipped")
        return
    event("osqp: polished and witnessed")
    cert = qpcore.kkt(p.qp(), p.in_form(x))
    note(f"OSQP: {cert}")
    assert cert.ok(TOL * gs), cert


@given(accurate())
def test_osqp_polished_optima_certify(p: GeneralQP) -> None:
    assume(row_kind(p.qp()) != "groups")
    _osqp_case(p)


@pytest.mark.xfail(GROUPS_JUMP is not None, reason=GROUPS_JUMP or "", strict=False)
@given(one_row(planted=True, max_cond=1e4, rank_deficient=False, max_decades=2))
def test_osqp_polished_optima_certify_one_row(p: GeneralQP) -> None:
    _osqp_case(p)


# --- docs/testing.md ----------------------------------------------------------------------------

def test_docs_general_qp_example_runs() -> None:
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    section = text.split("## General QPs", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "docs/testing.md: the general-QP section has no ```python block"
    ns: dict[str, Any] = {"__name__": "docs_testing_general"}
    for block in blocks:
        exec(compile(block, "docs/testing.md (General QPs)", "exec"), ns)  # noqa: S102


# --- assert_kkt with inequality rows --------------------------------------------------------------

def _claimed(qp: QP, x: FloatArray) -> qpcore.Result:
    """A converged Result at x whose own certificate claims perfection (assert_kkt ignores it)."""
    cert = qpcore.kkt(qp, x, g=np.zeros(qp.n))
    state = qpcore.State(x=x, g=np.zeros(qp.n), status=qpcore.bound_status(x, qp.lb, qp.ub))
    return qpcore.Result(x=x, multipliers=cert.multipliers, z=cert.z, status=qpcore.Status.CONVERGED, objective=0.0,
                         kkt=cert, iterations=0, stats={}, state=state)


def test_assert_kkt_with_inequality_rows() -> None:
    from qpcore.testkit.reference import assert_kkt

    p = planted_general_qp(6, 1, 3, seed=1, p_active=1.0)
    qp = p.qp()
    assert p.optimum is not None
    assert_kkt(qp, _claimed(qp, p.optimum.x), 1e-9)
    assert inequality_rows(qp)[0].shape[0] == 3
    # off an active row by 1e-7: the row is named, and the measure with the rows' multipliers
    x = p.optimum.x + 1e-7
    with pytest.raises(AssertionError, match=r"worst: row j=\d+ of C x: .* outside \["):
        assert_kkt(qp, _claimed(qp, x), 1e-8)
    with pytest.raises(AssertionError, match=r"projected-gradient norm\) .*worst variable i="):
        assert_kkt(qp, _claimed(qp, x), 1e-8)
