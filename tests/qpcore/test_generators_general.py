"""qpcore.testkit.generators_general and the references for general QPs: the generators make what they promise
(feasible, PSD, the planted optimum satisfies the KKT conditions with the signs and the structure asked
for, and is optimal per Clarabel), clarabel_reference reports multipliers in qpcore's convention, and
dense_reference is cross-checked on several equality rows and on inequality rows."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import event, given

import qpcore
from qpcore.testkit.generators import feasible_point
from qpcore.linalg.feasible_points import inequality_rows
from qpcore.testkit.generators_general import Form, GeneralQP, Optimum, planted_general_qp
from qpcore.testkit.reference import clarabel_reference, dense_reference
from qpcore.testkit.testing import general_problems

pytest.importorskip("clarabel")

FloatArray = np.ndarray


def objective_size(p: GeneralQP, x: FloatArray) -> float:
    """1 + ½|x|ᵀ|Q||x| + |c|ᵀ|x|: what rounding in the objective is relative to."""
    return 1.0 + 0.5 * float(np.abs(x) @ (np.abs(p.Q) @ np.abs(x))) + float(np.abs(p.c) @ np.abs(x))


def stationarity_terms(p: GeneralQP, o: Optimum) -> float:
    """The size of the terms of Qx + c − Aᵀλ − Cᵀy − z."""
    return max(1.0, float((np.abs(p.Q) @ np.abs(o.x)).max()), float(np.abs(p.c).max()),
               float((np.abs(p.A.T) @ np.abs(o.lam)).max(initial=0.0)),
               float((np.abs(p.C.T) @ np.abs(o.y)).max(initial=0.0)), float(np.abs(o.z).max()))


def check_planted_kkt(p: GeneralQP) -> None:
    """The planted optimum satisfies the KKT conditions in qpcore's sign convention, with exact
    complementarity (multipliers vanish off the active constraints)."""
    o = p.optimum
    assert o is not None
    x = o.x
    assert p.violation(x) <= 1e-14 * p.violation_scale(x)
    stat = p.Q @ x + p.c - p.A.T @ o.lam - p.C.T @ o.y - o.z
    assert float(np.abs(stat).max()) <= 1e-13 * stationarity_terms(p, o)
    at_l, at_u = x == p.lb, x == p.ub
    assert np.all(o.z[~at_l & ~at_u] == 0.0)                     # off the bounds: no multiplier
    assert np.all(o.z[at_l & ~at_u] >= 0.0) and np.all(o.z[at_u & ~at_l] <= 0.0)
    Cx = p.C @ x
    on_l, on_u = Cx == p.l, Cx == p.u
    assert np.all(o.y[~on_l & ~on_u] == 0.0)
    assert np.all(o.y[on_l & ~on_u] >= 0.0) and np.all(o.y[on_u & ~on_l] <= 0.0)


# --- what the generator promises ---------------------------------------------------------------

@given(general_problems())
def test_generated_problems_are_feasible_psd_and_valid(p: GeneralQP) -> None:
    event(f"m={min(p.m, 2)}+, k={min(p.k, 3)}+")
    assert p.Q.shape == (p.n, p.n) and p.A.shape == (p.m, p.n) and p.C.shape == (p.k, p.n)
    np.testing.assert_array_equal(p.Q, p.Q.T)
    w = np.linalg.eigvalsh(p.Q)
    assert w[0] >= -1e-12 * max(1.0, float(w[-1]))
    assert np.all(p.lb <= p.ub) and np.all(p.l <= p.u)
    # feasible by construction: the point meets every bound and row (to rounding)
    assert p.violation(p.point) <= 1e-14 * p.violation_scale(p.point)
    # the features are counted from the arrays
    x = p.point
    active_bounds = int(np.sum((x == p.lb) | (x == p.ub)))
    Cx = p.C @ x
    active_rows = int(np.sum((Cx == p.l) | (Cx == p.u)))
    assert p.features["active_bounds"] == active_bounds
    assert p.features["active_rows"] == active_rows
    assert p.features["active"] == p.m + active_bounds + active_rows
    assert p.features["fixed"] == int(np.sum(p.lb == p.ub))
    assert p.features["free"] == int(np.sum(np.isinf(p.lb) & np.isinf(p.ub)))
    assert p.features["equality_rows"] == int(np.sum(p.l == p.u))
    if p.optimum is not None:
        check_planted_kkt(p)
        np.testing.assert_array_equal(p.optimum.x, p.point)
    # both forms are valid qpcore.QPs holding the point
    forms: tuple[Form, ...] = ("auto", "slack")
    for form in forms:
        qp = p.qp(form)
        cert = qpcore.kkt(qp, p.in_form(x, form))
        assert cert.feasible(1e-12)


@given(general_problems(planted=True))
def test_planted_optimum_is_optimal_per_clarabel(p: GeneralQP) -> None:
    o = p.optimum
    assert o is not None
    f_star = p.objective(o.x)
    ref = clarabel_reference(p, check=False)
    event(f"clarabel: {ref.status} at tol {ref.tol:g}")
    if ref.status not in ("Solved", "AlmostSolved"):
        return   # nothing to compare (a few in a thousand, badly scaled); the others must agree
    s = objective_size(p, o.x)
    # no point does better than x* (what a wrong plant would show): by convexity and the multipliers'
    # signs, f(x) ≥ f* − (‖λ‖₁ + ‖y‖₁ + ‖z‖₁)·(x's largest violation), up to f's rounding
    weight = float(np.abs(o.lam).sum() + np.abs(o.y).sum() + np.abs(o.z).sum())
    assert ref.objective >= f_star - weight * ref.primal_residual - 1e-12 * s, (ref.objective, f_star)
    # and Clarabel finds it, to its accuracy: seen over 3,000 draws, "Solved" 1e-7·s at worst (badly
    # scaled, ill-conditioned draws: flat directions), most below 1e-11·s; "AlmostSolved" (its
    # reduced tolerances, 1 draw in 300) 5e-7·s
    allowed = 1e-6 if ref.status == "Solved" else 1e-4
    assert abs(ref.objective - f_star) <= allowed * s, (ref.objective, f_star, (ref.objective - f_star) / s)
    assert ref.primal_residual <= allowed * p.violation_scale(ref.x)


@given(general_problems(planted=False, rank_deficient=False))
def test_random_c_problems_are_feasible_and_bounded(p: GeneralQP) -> None:
    assert p.optimum is None
    assert p.violation(p.point) <= 1e-14 * p.violation_scale(p.point)
    ref = clarabel_reference(p, check=False)
    event(f"clarabel: {ref.status}")
    assert ref.status not in ("PrimalInfeasible", "DualInfeasible", "AlmostPrimalInfeasible",
                              "AlmostDualInfeasible")
    if ref.status in ("Solved", "AlmostSolved"):
        # the drawn point is feasible, so the optimum is no worse
        assert ref.objective <= p.objective(p.point) + 1e-7 * objective_size(p, p.point)


@pytest.mark.parametrize("seed", range(6))
def test_crowded_optimum_has_more_active_constraints_than_variables(seed: int) -> None:
    p = planted_general_qp(8, 2, 2, seed=seed, crowded=True, degenerate=0.5)
    x = p.point
    Cx = p.C @ x
    active = p.m + int(np.sum((x == p.lb) | (x == p.ub))) + int(np.sum((Cx == p.l) | (Cx == p.u)))
    assert active > p.n and p.features["active"] == active
    check_planted_kkt(p)


def test_duplicated_and_dependent_rows() -> None:
    for seed in range(6):
        p = planted_general_qp(10, 5, 6, seed=seed, duplicate_rows=2, dependent_rows=1, duplicate_ineq=2,
                               dependent_ineq=1)
        assert np.linalg.matrix_rank(p.A) <= 5 - 3      # 2 copies and 1 combination of 2 base rows
        assert np.linalg.matrix_rank(p.C) <= 6 - 3
        # unscaled copies are exact: ±1 times another row (and b follows)
        for M in (p.A, p.C):
            pairs = sum(1 for i in range(M.shape[0]) for j in range(i) if np.array_equal(M[i], M[j])
                        or np.array_equal(M[i], -M[j]))
            assert pairs >= 2
        check_planted_kkt(p)
        # a copy keeps its source's active side (flipped with the sign): both rows active together
        Cx = p.C @ p.point
        for i in range(p.k):
            for j in range(i):
                if np.array_equal(p.C[i], p.C[j]) or np.array_equal(p.C[i], -p.C[j]):
                    on_i = Cx[i] == p.l[i] or Cx[i] == p.u[i]
                    on_j = Cx[j] == p.l[j] or Cx[j] == p.u[j]
                    assert on_i == on_j


def test_degenerate_means_zero_multipliers_on_active_constraints() -> None:
    for seed in range(6):
        p = planted_general_qp(12, 2, 6, seed=seed, degenerate=1.0, p_bound=0.5, p_active=1.0, fixed=0.0)
        o = p.optimum
        assert o is not None
        x = o.x
        at = (x == p.lb) | (x == p.ub)
        Cx = p.C @ x
        on = (Cx == p.l) | (Cx == p.u)
        assert at.any() or on.any()
        assert np.all(o.z[at] == 0.0) and np.all(o.y[on & (p.l < p.u)] == 0.0)
        assert p.features["degenerate"] == int(at.sum()) + int(on.sum())
        check_planted_kkt(p)


@pytest.mark.parametrize("decades", [0.0, 3.0, 8.0])
def test_scaling_spreads_rows_and_columns(decades: float) -> None:
    plain = planted_general_qp(40, 4, 8, seed=3)
    p = planted_general_qp(40, 4, 8, seed=3, row_decades=decades, col_decades=decades)
    # the problem in x' = x / D: the same optimum up to the scales, drawn from the same stream
    D = plain.optimum.x / p.optimum.x  # type: ignore[union-attr]
    span = float(np.log10(D.max() / D.min()))
    assert span <= decades + 1e-9
    if decades:
        assert span >= 0.5 * decades          # 40 uniform draws fill most of the span
    np.testing.assert_allclose(p.Q, D[:, None] * plain.Q * D[None, :], rtol=1e-12, atol=0)
    rows = np.abs(p.A).max(axis=1) / np.abs(plain.A).max(axis=1)
    assert float(np.log10(rows.max() / rows.min())) <= 2 * decades + 1e-9
    check_planted_kkt(p)


def test_fixed_and_free_variables_and_row_kinds() -> None:
    p = planted_general_qp(60, 2, 40, seed=1, fixed=0.2, free=0.2, equalities=0.3, infinite=0.5)
    assert p.features["fixed"] > 0 and p.features["free"] > 0
    assert p.features["equality_rows"] > 0 and p.features["free_rows"] > 0
    one_sided = np.isfinite(p.l) != np.isfinite(p.u)
    assert one_sided.any()
    check_planted_kkt(p)


def test_generator_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="independent"):
        planted_general_qp(5, 2, 0, seed=0, duplicate_rows=1, dependent_rows=1)
    with pytest.raises(ValueError, match="free \\+ fixed"):
        planted_general_qp(5, seed=0, free=0.5, fixed=0.5, p_bound=0.5)
    with pytest.raises(ValueError, match="planted=False"):
        planted_general_qp(5, seed=0, rank=2, planted=False)
    with pytest.raises(ValueError, match="row_decades"):
        planted_general_qp(5, seed=0, row_decades=-1.0)
    with pytest.raises(ValueError, match="form"):
        planted_general_qp(5, seed=0).qp("dense")  # type: ignore[arg-type]


def test_forms_of_the_qp() -> None:
    p = planted_general_qp(7, 2, 3, seed=4)
    slack = p.qp("slack")
    assert slack.n == p.n + p.k and slack.m == p.m + p.k
    assert inequality_rows(slack)[0].shape[0] == 0
    z = p.in_form(p.point, "slack")
    np.testing.assert_array_equal(z[p.n:], p.C @ p.point)
    auto = p.qp()
    C, l, u = inequality_rows(auto)
    np.testing.assert_array_equal(C, p.C)
    np.testing.assert_array_equal(l, p.l)
    assert auto.n == p.n
    np.testing.assert_array_equal(p.in_form(p.point), p.point)
    # the same objective in both forms
    assert slack.objective(z) == pytest.approx(auto.objective(p.in_form(p.point)), rel=1e-14)


def test_feasible_point_meets_inequality_rows() -> None:
    for seed in range(8):
        p = planted_general_qp(10, 2, 6, seed=seed, p_active=0.7)
        qp = p.qp()
        for p_bound in (0.0, 1.0):
            x = feasible_point(qp, seed=seed, p_bound=p_bound)
            assert p.violation(x) <= 1e-9 * p.violation_scale(x)


# --- clarabel_reference ------------------------------------------------------------------------

@given(general_problems(planted=True, degenerate=False, duplicates=False, crowded=False, max_decades=0,
                        max_cond=1e4, rank_deficient=False, max_m=3, max_k=5))
def test_clarabel_multipliers_in_our_sign_convention(p: GeneralQP) -> None:
    # planted multipliers with every active constraint's nonzero, Q definite (a unique optimum);
    # where the active constraints' gradients are independent (LICQ) the multipliers are unique,
    # and Clarabel's, mapped to our convention, must be the planted ones
    o = p.optimum
    assert o is not None
    x = o.x
    Cx = p.C @ x
    bounds = np.eye(p.n)[(x == p.lb) | (x == p.ub)]
    active = np.vstack([p.A, p.C[(Cx == p.l) | (Cx == p.u)], bounds])
    if np.linalg.matrix_rank(active) < active.shape[0]:
        event("multipliers not unique (dependent active constraints): skipped")
        return
    ref = clarabel_reference(p)
    scale = 1.0 + max(float(np.abs(o.lam).max(initial=0.0)), float(np.abs(o.y).max(initial=0.0)),
                      float(np.abs(o.z).max()))
    # a ratio test for the conditioning of the active constraints would be tighter; random rows of
    # this size keep Clarabel's multipliers within 1e-5 of the planted ones (seen: 1e-8)
    np.testing.assert_allclose(ref.multipliers, o.lam, atol=1e-5 * scale, rtol=0)
    np.testing.assert_allclose(ref.y, o.y, atol=1e-5 * scale, rtol=0)
    np.testing.assert_allclose(ref.z, o.z, atol=1e-5 * scale, rtol=0)
    assert ref.dual_residual <= 1e-8 * scale * (1.0 + float(np.abs(p.c).max()))


def test_clarabel_reference_on_a_slack_form_qp_and_a_qp() -> None:
    p = planted_general_qp(8, 2, 4, seed=2, p_active=1.0)
    o = p.optimum
    assert o is not None
    slack = clarabel_reference(p.qp("slack"))
    # in slack form the rows' multipliers are the slacks' bound multipliers
    np.testing.assert_allclose(slack.z[p.n:], o.y, atol=1e-7)
    np.testing.assert_allclose(slack.multipliers[p.m:], o.y, atol=1e-7)
    np.testing.assert_allclose(slack.x[:p.n], o.x, atol=1e-6)
    native = clarabel_reference(p.qp())
    np.testing.assert_allclose(native.y, o.y, atol=1e-7)


def test_clarabel_reference_reports_infeasibility() -> None:
    # rows that contradict each other: x1 + x2 = 1 and x1 + x2 ≥ 2 (no qpcore.QP would accept it)
    p = GeneralQP(Q=np.eye(2), c=np.zeros(2), lb=np.full(2, -np.inf), ub=np.full(2, np.inf),
                  A=np.array([[1.0, 1.0]]), b=np.array([1.0]), C=np.array([[1.0, 1.0]]), l=np.array([2.0]),
                  u=np.array([np.inf]), point=np.zeros(2))
    with pytest.raises(RuntimeError, match="Infeasible"):
        clarabel_reference(p)
    assert "Infeasible" in clarabel_reference(p, check=False).status


def test_reference_does_not_import_clarabel() -> None:
    code = ("import sys, qpcore, qpcore.testkit.reference, qpcore.testkit.generators_general; "
            "sys.exit('clarabel imported' if 'clarabel' in sys.modules else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- dense_reference on several rows, cross-checked ----------------------------------------------

@given(general_problems(max_n=12, max_decades=2, max_cond=1e6))
def test_dense_reference_cross_checks_several_rows(p: GeneralQP) -> None:
    # dense_reference solves the slack form (rows as equality rows over [x; s]); it must find the
    # planted optimum, agree with Clarabel, and its point must be feasible. Its domain: condition
    # number ≤ 1e6 and scales over ≤ 2 decades (Q's condition number up to 1e10 after scaling);
    # beyond (1e13), flat directions leave its objective up to 1e-9·s above the optimum
    event(f"rows: m={min(p.m, 2)}+, k={min(p.k, 3)}+")
    qp = p.qp()
    x, f = dense_reference(qp)
    assert f == pytest.approx(p.objective(x), rel=1e-12, abs=1e-12)
    s = objective_size(p, x)
    assert p.violation(x) <= 1e-10 * p.violation_scale(x)
    if p.optimum is not None:
        f_star = p.objective(p.optimum.x)
        # seen over 3,000 draws: 2e-12·s
        assert abs(f - f_star) <= 1e-10 * s, (f, f_star, (f - f_star) / s)
    ref = clarabel_reference(p, check=False)
    if ref.status == "Solved":
        event("clarabel solved: compared")
        # seen: 6e-11·s (Clarabel's accuracy)
        assert abs(f - ref.objective) <= 1e-8 * s, (f, ref.objective)
