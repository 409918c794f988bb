"""Projections: box, box + one equality row (against KKT and a bisection reference), disjoint groups and
general rows (against their optimality conditions), the m-row starts, breakpoints."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qpcore import QP, ProblemError
from qpcore.core.problem import Equality
from qpcore.linalg.projection import (bound_start, breakpoints_box, feasible_start, project_box, project_box_equality,
                               project_groups, project_rows)

Arr = np.ndarray

# a few repeated values make ties: equal breakpoints, lb == ub, flat pieces of φ
# |a| ≥ 0.01 or 0: the bisection reference cannot resolve roots λ ~ 1/|a| for subnormal-scale a
# (test_tiny_coefficient_overflowing_breakpoint covers those)
COEF = st.one_of(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0]),
                 st.builds(lambda m, neg: -m if neg else m, st.floats(0.01, 3.0), st.booleans()))
VAL = st.one_of(st.sampled_from([-1.0, 0.0, 1.0, 2.0]), st.floats(-10.0, 10.0, allow_nan=False))


@st.composite
def instances(draw: st.DrawFn) -> tuple[Arr, Arr, Arr, Arr, float]:
    """(v, lb, ub, a, b) with a feasible b: from an interior point, or an extreme of aᵀx when finite."""
    n = draw(st.integers(1, 8))
    v = np.array(draw(st.lists(VAL, min_size=n, max_size=n)))
    a = np.array(draw(st.lists(COEF, min_size=n, max_size=n)))
    lb = np.array(draw(st.lists(st.one_of(st.just(-np.inf), st.floats(-5.0, 5.0)), min_size=n, max_size=n)))
    width = np.array(draw(st.lists(st.one_of(st.just(np.inf), st.just(0.0), st.floats(0.0, 6.0)),
                                   min_size=n, max_size=n)))
    # lb = −inf takes the width as its upper bound (−inf + inf would be nan)
    ub = np.where(np.isfinite(lb), lb, 0.0) + width
    x0 = np.clip(np.array(draw(st.lists(VAL, min_size=n, max_size=n))), lb, ub)
    b = float(a @ x0)
    lo, hi = _range(a, lb, ub)
    kind = draw(st.sampled_from(["interior", "min", "max"]))
    if kind == "min" and np.isfinite(lo):
        b = lo
    elif kind == "max" and np.isfinite(hi):
        b = hi
    return v, lb, ub, a, b


def _range(a: Arr, lb: Arr, ub: Arr) -> tuple[float, float]:
    pos, neg = a > 0, a < 0
    lo = float((a[pos] * lb[pos]).sum() + (a[neg] * ub[neg]).sum())
    hi = float((a[pos] * ub[pos]).sum() + (a[neg] * lb[neg]).sum())
    return lo, hi


def reference(v: Arr, lb: Arr, ub: Arr, a: Arr, b: float) -> Arr:
    """Independent bisection on λ (200 halvings) for the root of aᵀclip(v + λa) − b."""
    if not np.any(a):
        return np.asarray(np.clip(v, lb, ub), dtype=np.float64)

    def phi(lam: float) -> float:
        return float(a @ np.clip(v + lam * a, lb, ub)) - b

    left, right = -1.0, 1.0
    while phi(left) > 0 and left > -1e300:
        left *= 2.0
    while phi(right) < 0 and right < 1e300:
        right *= 2.0
    for _ in range(200):
        mid = 0.5 * (left + right)
        if phi(mid) < 0:
            left = mid
        else:
            right = mid
    return np.clip(v + 0.5 * (left + right) * a, lb, ub)


def check_kkt(x: Arr, lam: float, v: Arr, lb: Arr, ub: Arr, a: Arr, b: float) -> None:
    scale = max(1.0, abs(b), float(np.abs(a * x).sum()))
    assert np.all(x >= lb - 1e-12) and np.all(x <= ub + 1e-12)
    assert abs(float(a @ x) - b) <= 1e-10 * scale
    assert np.isfinite(lam)
    # x = clip(v + λa): the optimality condition of ½‖x − v‖² with multiplier λ
    np.testing.assert_allclose(x, np.clip(v + lam * a, lb, ub), rtol=0, atol=1e-9 * (1 + np.abs(v) + abs(lam)).max())


@given(instances())
def test_matches_kkt_and_bisection_reference(inst: tuple[Arr, Arr, Arr, Arr, float]) -> None:
    v, lb, ub, a, b = inst
    x, lam = project_box_equality(v, lb, ub, a, b)
    check_kkt(x, lam, v, lb, ub, a, b)
    xr = reference(v, lb, ub, a, b)
    np.testing.assert_allclose(x, xr, rtol=0, atol=1e-8 * max(1.0, float(np.abs(v).max()), float(np.abs(xr).max())))


@given(instances())
def test_idempotent(inst: tuple[Arr, Arr, Arr, Arr, float]) -> None:
    v, lb, ub, a, b = inst
    x, _ = project_box_equality(v, lb, ub, a, b)
    x2, _ = project_box_equality(x, lb, ub, a, b)
    np.testing.assert_allclose(x2, x, rtol=0, atol=1e-9 * max(1.0, float(np.abs(x).max())))


@given(instances(), st.lists(VAL, min_size=8, max_size=8))
def test_nonexpansive(inst: tuple[Arr, Arr, Arr, Arr, float], other: list[float]) -> None:
    v, lb, ub, a, b = inst
    u = np.array(other[: v.size])
    pu, _ = project_box_equality(u, lb, ub, a, b)
    pv, _ = project_box_equality(v, lb, ub, a, b)
    assert np.linalg.norm(pu - pv) <= np.linalg.norm(u - v) * (1 + 1e-12) + 1e-9


def test_zero_a_means_box_projection_and_b_zero() -> None:
    v, lb, ub = np.array([-3.0, 0.5, 4.0]), np.array([-1.0, -1.0, -np.inf]), np.array([1.0, 1.0, 2.0])
    x, lam = project_box_equality(v, lb, ub, np.zeros(3), 0.0)
    np.testing.assert_array_equal(x, [-1.0, 0.5, 2.0])
    assert lam == 0.0
    with pytest.raises(ProblemError, match="infeasible"):
        project_box_equality(v, lb, ub, np.zeros(3), 1e-6)


@pytest.mark.parametrize("b", [3.0 + 1e-6, -3.0 - 1e-6, 100.0])
def test_infeasible_b_raises(b: float) -> None:
    # a = (1, -1, 2, 0) on [0, 1]⁴: aᵀx ranges over [−1, 3]
    a = np.array([1.0, -1.0, 2.0, 0.0])
    if b < 0:
        b = -1.0 - 1e-6
    with pytest.raises(ProblemError, match="infeasible"):
        project_box_equality(np.zeros(4), 0.0, 1.0, a, b)


def test_extreme_b_lands_on_the_bounds_exactly() -> None:
    a = np.array([1.0, -1.0, 2.0, 0.0])
    x, _ = project_box_equality(np.array([0.3, 0.3, 0.3, 5.0]), 0.0, 1.0, a, 3.0)
    np.testing.assert_array_equal(x, [1.0, 0.0, 1.0, 1.0])
    x, _ = project_box_equality(np.array([0.3, 0.3, 0.3, -5.0]), 0.0, 1.0, a, -1.0)
    np.testing.assert_array_equal(x, [0.0, 1.0, 0.0, 0.0])


def test_mixed_signs_and_zeros_svm_shape() -> None:
    # the SVM dual: a = y ∈ {±1}, 0 ≤ x ≤ C, b = 0; plus an a = 0 coordinate
    v = np.array([0.9, -0.4, 1.7, 0.2, -3.0])
    a = np.array([1.0, -1.0, 1.0, -1.0, 0.0])
    x, lam = project_box_equality(v, 0.0, 1.0, a, 0.0)
    check_kkt(x, lam, v, np.zeros(5), np.ones(5), a, 0.0)
    assert x[4] == 0.0
    np.testing.assert_allclose(x, reference(v, np.zeros(5), np.ones(5), a, 0.0), atol=1e-12)


def test_infinite_bounds() -> None:
    # unbounded: the projection onto the hyperplane, v + (b − aᵀv)/‖a‖² a
    v, a = np.array([1.0, 2.0, -1.0]), np.array([1.0, -2.0, 0.5])
    x, lam = project_box_equality(v, -np.inf, np.inf, a, 4.0)
    expect_lam = (4.0 - a @ v) / (a @ a)
    np.testing.assert_allclose(lam, expect_lam, rtol=1e-14)
    np.testing.assert_allclose(x, v + expect_lam * a, rtol=1e-14)
    # one-sided bounds: x ≥ 0, sum x = 1 (the simplex)
    v = np.array([0.5, 1.2, -0.3, 0.1])
    x, lam = project_box_equality(v, 0.0, np.inf, np.ones(4), 1.0)
    check_kkt(x, lam, v, np.zeros(4), np.full(4, np.inf), np.ones(4), 1.0)
    np.testing.assert_allclose(x, [0.15, 0.85, 0.0, 0.0], atol=1e-15)


def test_flat_piece_returns_a_valid_multiplier() -> None:
    # both coordinates pinned (lb == ub) or saturated over a λ interval: φ is flat at the root
    v, a = np.array([0.0, 0.0]), np.array([1.0, 1.0])
    lb, ub = np.array([0.0, 1.0]), np.array([0.0, 1.0])
    x, lam = project_box_equality(v, lb, ub, a, 1.0)
    np.testing.assert_array_equal(x, [0.0, 1.0])
    check_kkt(x, lam, v, lb, ub, a, 1.0)
    # x = (1, 0) for every λ in [1, 2]: φ is flat there, any λ on it will do
    v, lb, ub = np.array([0.0, -2.0]), np.zeros(2), np.ones(2)
    x, lam = project_box_equality(v, lb, ub, a, 1.0)
    np.testing.assert_array_equal(x, [1.0, 0.0])
    check_kkt(x, lam, v, lb, ub, a, 1.0)


def test_tiny_coefficient_overflowing_breakpoint() -> None:
    # (ub − v)/a overflows to inf: that coordinate stays at its bound for every finite λ
    v = np.array([-1e10, 0.3])
    a = np.array([1e-300, 1.0])
    x, lam = project_box_equality(v, np.zeros(2), np.array([1e10, 1.0]), a, 0.5)
    assert x[0] == 0.0
    np.testing.assert_allclose(x[1], 0.5, rtol=1e-15)
    assert np.isfinite(lam)


def test_invalid_box_raises() -> None:
    with pytest.raises(ProblemError):
        project_box_equality(np.zeros(2), np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.ones(2), 0.5)
    with pytest.raises(ProblemError):
        project_box_equality(np.zeros(2), 0.0, 1.0, np.ones(3), 0.5)
    with pytest.raises(ProblemError):
        project_box_equality(np.zeros(2), 0.0, 1.0, np.ones(2), np.nan)


def test_large_n_runs() -> None:
    # vectorized: n = 1e6 is a fraction of a second (not timed here; timing tests are flaky)
    rng = np.random.default_rng(0)
    n = 1_000_000
    v = rng.normal(size=n)
    a = rng.choice([-1.0, 0.0, 1.0, 2.5], size=n)
    lb = np.where(rng.random(n) < 0.1, -np.inf, -0.5)
    ub = np.where(rng.random(n) < 0.1, np.inf, 1.0)
    x, lam = project_box_equality(v, lb, ub, a, 123.0)
    check_kkt(x, lam, v, lb, ub, a, 123.0)


def test_project_box() -> None:
    x = project_box([-5.0, 0.5, 5.0, 7.0], [-1.0, -1.0, -np.inf, 8.0], [1.0, 1.0, np.inf, 9.0])
    np.testing.assert_array_equal(x, [-1.0, 0.5, 5.0, 8.0])
    assert x.dtype == np.float64


@given(st.integers(1, 8).flatmap(lambda n: st.tuples(*(st.tuples(VAL, VAL, VAL, st.booleans(), st.booleans())
                                                         for _ in range(n)))))
def test_breakpoints_box_matches_direct(rows: tuple[tuple[float, float, float, bool, bool], ...]) -> None:
    p, q, d, inf_lo, inf_hi = (np.array(c) for c in zip(*rows))
    lb = np.where(inf_lo, -np.inf, np.minimum(p, q))
    ub = np.where(inf_hi, np.inf, np.maximum(p, q))
    x = np.clip(0.5 * (p + q), lb, ub)
    direct = set()
    for i in range(x.size):
        bound = ub[i] if d[i] > 0 else lb[i]
        if d[i] != 0 and np.isfinite((bound - x[i]) / d[i]) and (bound - x[i]) / d[i] > 0:
            direct.add((bound - x[i]) / d[i])
    t = breakpoints_box(x, d, lb, ub)
    np.testing.assert_array_equal(t, sorted(direct))
    # at each breakpoint the coordinate that hit is at its bound on the projected path
    for ti in t:
        y = project_box(x + ti * d, lb, ub)
        assert np.any(np.isclose(y, lb) & (d < 0) | np.isclose(y, ub) & (d > 0))


def test_bound_steps_ratio_test() -> None:
    from qpcore.linalg.projection import bound_steps

    x = np.array([0.0, 1.0, 0.5, 2.0, 0.2])
    p = np.array([-1.0, 2.0, 0.0, 1.0, -0.1])
    lo = np.array([-1.0, -np.inf, 0.0, 0.0, 0.0])
    hi = np.array([1.0, 3.0, 1.0, 1.5, 1.0])     # x[3] already past hi: a zero step, never negative
    tl, tu = bound_steps(x, p, lo, hi)
    np.testing.assert_allclose(tl, [1.0, np.inf, np.inf, np.inf, 2.0])
    np.testing.assert_allclose(tu, [np.inf, 1.0, np.inf, 0.0, np.inf])


# --- several rows: disjoint groups and general rows --------------------------------------------

@st.composite
def row_instances(draw: st.DrawFn, groups: bool = False) -> tuple[Arr, Arr, Arr, Arr, Arr]:
    """(v, lb, ub, A, b) with 2–5 rows met by a point of the box: general rows (dependent and zero
    rows, zero columns, infinite and fixed bounds) or, with ``groups``, disjoint groups."""
    n = draw(st.integers(2, 14))
    m = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if groups:
        group = rng.integers(-1, m, n)
        A = np.zeros((m, n))
        inside = np.flatnonzero(group >= 0)
        A[group[inside], inside] = rng.choice([-2.0, -1.0, 0.5, 1.0, 3.0], size=inside.size)
    else:
        A = rng.standard_normal((m, n))
        if draw(st.booleans()):
            A[-1] = A[0] - 2.0 * A[1]          # a dependent row
        if draw(st.booleans()):
            A[:, : n // 3] = 0.0                # variables in no row
        if draw(st.booleans()):
            A[1] = 0.0                          # a zero row (b = 0 then)
    lb = np.where(rng.random(n) < 0.2, -np.inf, -rng.random(n) * 2)
    ub = np.where(rng.random(n) < 0.2, np.inf, rng.random(n) * 2)
    fixed = rng.random(n) < 0.15
    lb[fixed] = ub[fixed] = np.where(np.isfinite(lb[fixed]), lb[fixed], 0.0)
    x0 = np.clip(rng.standard_normal(n), lb, ub)
    if draw(st.booleans()):                     # a feasible point on the bounds: b at an edge
        x0 = np.where(np.isfinite(lb), lb, x0)
    v = rng.standard_normal(n) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    return v, lb, ub, A, A @ x0


def _check_rows(x: Arr, lam: Arr, v: Arr, lb: Arr, ub: Arr, A: Arr, b: Arr) -> None:
    # the projection's optimality conditions, which characterize it: x in the box, A x = b, and
    # x = clip(v + Aᵀλ) (the multipliers of the box are x − (v + Aᵀλ), of the right sign by the clip)
    assert np.all(x >= lb) and np.all(x <= ub)
    size = 1.0 + float((np.abs(A) @ np.abs(x)).max(initial=0.0)) + float(np.abs(b).max(initial=0.0))
    assert float(np.abs(A @ x - b).max(initial=0.0)) <= 1e-12 * size
    w = v + A.T @ lam
    scale = 1.0 + float(np.abs(w).max(initial=0.0))
    np.testing.assert_allclose(x, np.clip(w, lb, ub), atol=1e-9 * scale)


@given(row_instances())
def test_project_rows_meets_its_optimality_conditions(inst: tuple[Arr, Arr, Arr, Arr, Arr]) -> None:
    v, lb, ub, A, b = inst
    x, lam = project_rows(v, lb, ub, A, b)
    _check_rows(x, lam, v, lb, ub, A, b)
    # idempotent: a feasible point is its own projection
    np.testing.assert_allclose(project_rows(x, lb, ub, A, b)[0], x, atol=1e-10 * (1 + np.abs(x).max()))


@given(row_instances(groups=True))
def test_project_groups_meets_its_optimality_conditions(inst: tuple[Arr, Arr, Arr, Arr, Arr]) -> None:
    v, lb, ub, A, b = inst
    eq = Equality.of(A)
    assert eq.kind == "groups"
    x, lam = project_groups(v, lb, ub, eq.group, eq.coef, b)
    _check_rows(x, lam, v, lb, ub, A, b)
    # the general method agrees with the group-by-group one (the projection is unique)
    np.testing.assert_allclose(project_rows(v, lb, ub, A, b)[0], x, atol=1e-8 * (1 + np.abs(x).max()))


@given(st.one_of(row_instances(), row_instances(groups=True)))
def test_starts_with_rows_are_feasible(inst: tuple[Arr, Arr, Arr, Arr, Arr]) -> None:
    v, lb, ub, A, b = inst
    qp = QP(np.eye(v.size), np.zeros(v.size), lb, ub, A, b)
    for x in (bound_start(qp), feasible_start(qp, v)[0]):
        _check_rows(x, np.zeros(A.shape[0]), x, lb, ub, A, b)
    x, moved = feasible_start(qp, v)
    np.testing.assert_allclose(x, project_rows(v, lb, ub, A, b)[0], atol=1e-10 * (1 + np.abs(x).max()))
    assert moved == pytest.approx(float(np.abs(x - v).max()))


def test_bound_start_general_rows_is_a_vertex() -> None:
    # finite bounds: a basic solution has at most m variables off their bounds
    rng = np.random.default_rng(7)
    n, m = 30, 3
    A = rng.standard_normal((m, n))
    x0 = rng.random(n)
    qp = QP(np.eye(n), np.zeros(n), 0.0, 1.0, A, A @ x0)
    x = bound_start(qp)
    assert np.count_nonzero((x > 0) & (x < 1)) <= m
    assert float(np.abs(A @ x - qp.b).max()) <= 1e-12 * n


def test_bound_start_groups_group_by_group() -> None:
    # two ±1 groups (the ν-SVC shape): each group's row met by the one-row rule, on the bounds
    A = np.array([[1.0, 1.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0, -1.0, 1.0]])
    qp = QP(np.eye(6), np.zeros(6), 0.0, 1.0, A, np.array([1.5, 0.5]))
    x = bound_start(qp)
    np.testing.assert_allclose(A @ x, [1.5, 0.5])
    assert np.count_nonzero((x > 0) & (x < 1)) <= 2


def test_project_rows_infeasible_raises() -> None:
    A = np.array([[1.0, 1.0], [1.0, -1.0]])
    with pytest.raises(ProblemError, match="no point of the box"):
        project_rows(np.zeros(2), 0.0, 1.0, A, np.array([2.0, 1.0]))


# --- general rows that defeat plain Newton: bad scaling, dependent rows on the face, the fallback --

@st.composite
def lp_like_instances(draw: st.DrawFn) -> tuple[Arr, Arr, Arr, Arr, Arr, bool]:
    """(v, lb, ub, A, b, feasible): slack-form rows [C, −I] with rows scaled over orders of magnitude
    (the Maros–Meszaros shape), b = 0; infeasible when a slack's interval misses C's range."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n, k = draw(st.integers(1, 8)), draw(st.integers(1, 10))
    C = rng.standard_normal((k, n)) * (rng.random((k, n)) < 0.6)
    C *= 10.0 ** rng.uniform(-2, 3, (k, 1))
    lbx = np.where(rng.random(n) < 0.3, -np.inf, -rng.random(n))
    ubx = np.where(rng.random(n) < 0.3, np.inf, rng.random(n) * 3)
    x0 = np.clip(rng.standard_normal(n), lbx, ubx)
    s0 = C @ x0
    # slack intervals around C x0: equalities, one-sided and two-sided rows
    kind = rng.integers(0, 3, k)
    ls = np.where(kind == 0, s0, np.where(kind == 1, s0 - rng.random(k), -np.inf))
    us = np.where(kind == 0, s0, s0 + rng.random(k))
    feasible = draw(st.booleans())
    if not feasible:
        # a row whose interval lies above every value C x takes over the box (when that is finite)
        j = int(rng.integers(k))
        ends = np.where(C[j] > 0, ubx, lbx)
        on = C[j] != 0
        top = float(C[j, on] @ ends[on])
        if np.isfinite(top):
            ls[j], us[j] = top + 1.0 + abs(top), top + 2.0 + 2.0 * abs(top)
        else:
            feasible = True
    A = np.hstack([C, -np.eye(k)])
    lb, ub = np.concatenate([lbx, ls]), np.concatenate([ubx, us])
    v = rng.standard_normal(n + k) * 10.0 ** rng.uniform(-1, 3)
    return v, lb, ub, A, np.zeros(k), feasible


def _lp_feasible(lb: Arr, ub: Arr, A: Arr, b: Arr) -> bool:
    from scipy.optimize import linprog

    res = linprog(np.zeros(lb.size), A_eq=A, b_eq=b, bounds=np.column_stack([lb, ub]), method="highs")
    return bool(res.status == 0)


@given(lp_like_instances())
def test_project_rows_on_lp_like_rows(inst: tuple[Arr, Arr, Arr, Arr, Arr, bool]) -> None:
    # exact whenever the set is not empty; an empty set is refused with the LP's verdict only
    v, lb, ub, A, b, _ = inst
    if _lp_feasible(lb, ub, A, b):
        x, lam = project_rows(v, lb, ub, A, b)
        _check_rows(x, lam, v, lb, ub, A, b)
    else:
        with pytest.raises(ProblemError, match="HiGHS finds the feasibility LP infeasible"):
            project_rows(v, lb, ub, A, b)


@given(st.one_of(lp_like_instances(), row_instances().map(lambda t: (*t, True))))
def test_projection_fallback_is_feasible_whenever_the_lp_says_so(inst: tuple[Arr, Arr, Arr, Arr, Arr, bool]) -> None:
    # no Newton iteration at all (max_iter=0): the LP fallback alone answers, and it answers with a
    # point of the set whenever HiGHS finds the set feasible, never with a false "empty"
    v, lb, ub, A, b, _ = inst
    if _lp_feasible(lb, ub, A, b):
        x, _ = project_rows(v, lb, ub, A, b, max_iter=0)
        assert np.all(x >= lb) and np.all(x <= ub)
        size = 1.0 + float((np.abs(A) @ np.abs(x)).max(initial=0.0)) + float(np.abs(b).max(initial=0.0))
        assert float(np.abs(A @ x - b).max(initial=0.0)) <= 1e-9 * size
    else:
        with pytest.raises(ProblemError, match="infeasible"):
            project_rows(v, lb, ub, A, b, max_iter=0)


def test_a_model_error_is_no_verdict_of_infeasibility() -> None:
    # scipy reports HiGHS's "model error" with status 2, the status of an infeasible LP
    from types import SimpleNamespace

    from qpcore.linalg.projection import _infeasible_verdict

    assert not _infeasible_verdict(SimpleNamespace(status=2, message="(HiGHS Status 2: Model error)"))
    assert _infeasible_verdict(SimpleNamespace(status=2, message="The problem is infeasible. (HiGHS Status 8)"))
    assert not _infeasible_verdict(SimpleNamespace(status=4, message="numerical difficulties; infeasible?"))


def test_zero_row_with_nonzero_b_is_refused() -> None:
    A = np.array([[1.0, 1.0], [0.0, 0.0]])
    with pytest.raises(ProblemError, match="row 1 of A is zero"):
        project_rows(np.zeros(2), 0.0, 1.0, A, np.array([1.0, 0.5]))
    x, lam = project_rows(np.zeros(2), 0.0, 1.0, A, np.array([1.0, 0.0]))
    np.testing.assert_allclose(x, [0.5, 0.5])
    assert lam[1] == 0.0


# --- the Maros–Meszaros problems in slack form: plain dual Newton called 25 of them infeasible ------

MM_FAST = ("DUALC1", "DUALC5", "QADLITTL", "QSHARE2B", "QPCBOEI2", "QBORE3D", "QISRAEL", "QFORPLAN", "QSCAGR7")
MM_SLOW = ("QBANDM", "QCAPRI", "QGROW7", "QPCSTAIR", "QSCFXM1", "QSCORPIO", "QSCTAP1", "QSC205", "QPCBLEND",
           "CVXQP1_S", "CVXQP3_S")


def mm_slack(name: str) -> QP:
    """The Maros–Meszaros problem ``name`` of the shared data, in slack form (box and equality rows)."""
    import scipy.io
    import scipy.sparse as sp

    from qpcore_formulations.data.files import data_dir

    path = data_dir() / "maros_meszaros" / f"{name}.mat"
    if not path.exists():
        pytest.skip(f"{path} not found")
    d = scipy.io.loadmat(str(path))
    P = sp.csr_matrix(d["P"], dtype=np.float64).toarray()
    M = sp.csr_matrix(d["A"], dtype=np.float64).toarray()
    l, u = np.asarray(d["l"], dtype=np.float64).ravel(), np.asarray(d["u"], dtype=np.float64).ravel()
    l[l <= -1e19], u[u >= 1e19] = -np.inf, np.inf           # the files write ±inf as ±1e20
    n = P.shape[0]
    k = M.shape[0] - n                                        # the last n rows are the bounds
    qp = QP(0.5 * (P + P.T), np.asarray(d["q"], dtype=np.float64).ravel(), l[k:], u[k:], C=M[:k], l=l[:k], u=u[:k])
    return qp.slack_form().qp


def _check_mm_projection(name: str) -> None:
    qp = mm_slack(name)
    rng = np.random.default_rng(0)
    for v in (np.zeros(qp.n), rng.standard_normal(qp.n) * 100.0):
        x, lam = project_rows(v, qp.lb, qp.ub, qp.A, qp.b)
        _check_rows(x, lam, v, qp.lb, qp.ub, qp.A, qp.b)


@pytest.mark.data
@pytest.mark.parametrize("name", MM_FAST)
def test_project_rows_maros_meszaros(name: str) -> None:
    _check_mm_projection(name)


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("name", MM_SLOW)
def test_project_rows_maros_meszaros_larger(name: str) -> None:
    _check_mm_projection(name)
