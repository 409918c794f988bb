"""Tools to property-test a strategy: hypothesis strategies for QPs, a KKT assertion, a reference solve.

A researcher's test of a new strategy reads::

    from hypothesis import given
    from qpcore.testing import assert_kkt, dense_reference, qps

    @given(qps())
    def test_my_strategy(qp):
        result = qpcore.solve(qp, MyStrategy(), tol=1e-6)
        assert_kkt(qp, result, 1e-6)
        assert result.objective <= dense_reference(qp)[1] + 1e-6 * (1 + abs(result.objective))

The strategies draw small problems (n from 2 to 40) of every shape qpcore handles: box QPs
(including one side infinite), SVM duals (a box and the equality yᵀx = 0) and nonnegative QPs,
well- and ill-conditioned (condition number up to 1e8), rank-deficient, with duplicate rows, tiny
and huge C, and degenerate (variables at a bound whose gradient vanishes there). Seeds and
parameters are drawn through hypothesis, so a failing example shrinks to a small, well-conditioned
one where it can. The problems come from :mod:`qpcore.generators` (numpy and scipy only: this
module imports nothing from ``problems`` or ``strategies``).

Two harder features are drawn by default (pass False to leave them out): ``fixed=`` (variables
with lb = ub, fixed at a feasible point's value) on every QP strategy but :func:`lowrank_qps`, and
``zero_coefficients=`` (a_i = 0 in the equality row) on :func:`box_equality_qps` and :func:`qps`.
:func:`warm_starts` draws start points for a problem: feasible, outside the bounds, off the
equality, or both.

This module needs ``hypothesis`` (a test dependency); ``import qpcore`` does not import it.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np
import scipy.linalg
from hypothesis import strategies as st
from numpy.typing import NDArray

from qpcore.generators import (feasible_point, meet_row, fix_variables, planted_qp, random_box_point, random_box_qp,
                               random_degenerate_qp, random_lowrank_qp, random_nonneg_qp, random_one_sided_qp,
                               random_svm_dual)
from qpcore.kkt import kkt
from qpcore.optimality import maximal_violating_pair, projected_gradient, scores_of, single_violation
from qpcore.problem import QP
from qpcore.state import Result, Status

FloatArray = NDArray[np.float64]

__all__ = ["assert_kkt", "box_equality_qps", "box_qps", "check_against_reference", "dense_reference", "gradient_scale",
           "lowrank_qps", "nonneg_qps", "planted_qps", "qps", "svm_duals", "warm_starts"]

_SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def _check_range(lo: float, hi: float, name: str, minimum: float) -> None:
    if not (minimum <= lo <= hi and math.isfinite(hi)):
        raise ValueError(f"{name}: need {minimum} ≤ min ≤ max < inf, got [{lo}, {hi}]")


def _log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    """The two ends first (shrinking goes to ``lo``), then anything in between on a log scale."""
    ends = st.sampled_from(sorted({float(lo), float(hi)}))
    if lo == hi:
        return ends
    return st.one_of(ends, st.floats(math.log10(lo), math.log10(hi)).map(lambda e: float(10.0 ** e)))


def _sizes(min_n: int, max_n: int, floor: int) -> st.SearchStrategy[int]:
    if not (floor <= min_n <= max_n):
        raise ValueError(f"n: need {floor} ≤ min_n ≤ max_n, got [{min_n}, {max_n}]")
    return st.integers(min_value=min_n, max_value=max_n)


def _rank(draw: st.DrawFn, n: int, rank_deficient: bool) -> int | None:
    # rank ≥ 1 keeps it a QP (Q = 0 is an LP); a deficient rank leaves flat directions
    if rank_deficient and n >= 2 and draw(st.booleans()):
        return draw(st.integers(min_value=1, max_value=n - 1))
    return None


# fractions drawn when an option is True; the first is what a failing example shrinks to
_FIXED_FRACTIONS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)
_ZERO_FRACTIONS = (0.0, 0.2, 0.5, 1.0)


def _option_fraction(draw: st.DrawFn, value: float | bool, name: str, choices: tuple[float, ...]) -> float:
    """An option that is off (False, 0: nothing drawn, so the draws are those without it), drawn
    from ``choices`` (True), or a fixed fraction."""
    if isinstance(value, (bool, np.bool_)):
        return draw(st.sampled_from(choices)) if value else 0.0
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: must be a bool or a fraction in [0, 1], got {value!r}")
    return value


@st.composite
def box_qps(draw: st.DrawFn, *, min_n: int = 2, max_n: int = 40, min_cond: float = 1.0, max_cond: float = 1e8,
            rank_deficient: bool = True, one_sided: bool = True, degenerate: bool = True,
            min_width: float = 1e-3, max_width: float = 1e3, fixed: float | bool = True) -> QP:
    """Box-constrained QPs ``min ½xᵀQx + cᵀx, lb ≤ x ≤ ub`` (no equality).

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of variables.
    min_cond, max_cond : float
        Range of the condition number of Q (log-uniform, the ends drawn often).
    rank_deficient : bool
        Also draw singular Q (rank between 1 and n − 1).
    one_sided : bool
        Also draw boxes with one side infinite (:func:`qpcore.generators.random_one_sided_qp`).
    degenerate : bool
        Also draw problems with zero multipliers at active bounds
        (:func:`qpcore.generators.random_degenerate_qp`).
    min_width, max_width : float
        Range of the box size: the box is [0, w] or [−w, w].
    fixed : float or bool
        Fixed variables (lb = ub, at a value inside the original box; at the planted optimum where
        there is one): on by default; True draws the fraction of fixed variables from {0, 0.1, 0.2,
        0.3, 0.5, 1} (shrinking to 0); a number is that fraction (``max(1, round(fixed·n))``
        variables).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of QP
    """
    _check_range(min_cond, max_cond, "cond", 1.0)
    _check_range(min_width, max_width, "width", np.nextafter(0.0, 1.0))
    n = draw(_sizes(min_n, max_n, 1))
    fix = _option_fraction(draw, fixed, "fixed", _FIXED_FRACTIONS)
    seed = draw(_SEEDS)
    cond = draw(_log_uniform(min_cond, max_cond))
    rank = _rank(draw, n, rank_deficient)
    shapes = ["box"] + ["one_sided"] * one_sided + ["degenerate"] * degenerate
    shape = draw(st.sampled_from(shapes))
    if shape == "one_sided":
        sides: list[Literal["mixed", "lower", "upper"]] = ["mixed", "lower", "upper"]
        side = draw(st.sampled_from(sides))
        return random_one_sided_qp(n, seed=seed, cond=cond, rank=rank, side=side,
                                   degenerate=draw(st.sampled_from([0.0, 0.5])) if degenerate else 0.0, fixed=fix)
    if shape == "degenerate":
        return random_degenerate_qp(n, seed=seed, cond=cond, rank=rank, degenerate=draw(st.sampled_from([0.5, 1.0])),
                                    fixed=fix)
    w = draw(_log_uniform(min_width, max_width))
    lb = 0.0 if draw(st.booleans()) else -w
    return random_box_qp(n, seed=seed, cond=cond, rank=rank, lb=lb, ub=w, fixed=fix)


@st.composite
def box_equality_qps(draw: st.DrawFn, *, min_n: int = 2, max_n: int = 40, max_cond: float = 1e8,
                     fixed: float | bool = True, zero_coefficients: float | bool = True) -> QP:
    """Box QPs with **one** general equality row ``aᵀx = b`` (mixed signs, scales; zeros on request).

    The box and Q come from :func:`box_qps` (finite, one-sided and degenerate boxes; any
    condition number up to ``max_cond``). The row has entries of magnitude 1e-2 to 1e2 with
    random signs, and ``b = aᵀx̂`` for a random point x̂ of the box, so the problem is feasible,
    sometimes with x̂ at a vertex (b at the edge of its range).

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of variables (≥ 2).
    max_cond : float
        Largest condition number of Q.
    fixed : float or bool
        Fixed variables (lb = ub, at a value inside the original box: at x̂, so the equality stays
        feasible): on by default; True draws the fraction of fixed variables from {0, 0.1, 0.2,
        0.3, 0.5, 1} (shrinking to 0); a number is that fraction (``max(1, round(fixed·n))``
        variables).
    zero_coefficients : float or bool
        Zero coefficients a_i = 0 (variables outside the equality): on by default; True draws
        their fraction from {0, 0.2, 0.5, 1} (shrinking to 0); a number is that fraction
        (``max(1, round(fraction·n))`` zeros). At least one a_i stays nonzero.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of QP
    """
    base = draw(box_qps(min_n=max(2, min_n), max_n=max_n, max_cond=max_cond))
    fix = _option_fraction(draw, fixed, "fixed", _FIXED_FRACTIONS)
    zeros = _option_fraction(draw, zero_coefficients, "zero_coefficients", _ZERO_FRACTIONS)
    rng = np.random.default_rng(draw(_SEEDS))
    n = base.n
    a = rng.choice([-1.0, 1.0], size=n) * 10.0 ** rng.uniform(-2, 2, size=n)
    if zeros > 0.0:
        a[rng.choice(n, size=min(n - 1, max(1, round(zeros * n))), replace=False)] = 0.0
    # a point of the box: uniform where both sides are finite, a unit away from a finite side
    lo, hi = base.lb, base.ub
    u = rng.random(n)
    with np.errstate(invalid="ignore"):   # np.where evaluates inf − inf on the branches it discards
        xh = np.where(np.isfinite(lo) & np.isfinite(hi), lo + u * (hi - lo),
                      np.where(np.isfinite(lo), lo + u, np.where(np.isfinite(hi), hi - u, u - 0.5)))
    if draw(st.booleans()):   # b at the edge: a vertex where both sides are finite
        vert = np.where(a > 0, lo, hi)
        xh = np.where(np.isfinite(vert), vert, xh)
    qp = QP(base.Q, base.c, lo, hi, a[None, :], np.array([float(a @ xh)]))
    # fixed at x̂'s values: x̂ stays feasible (nothing drawn when off)
    return fix_variables(qp, fix, seed=rng, point=xh) if fix > 0.0 else qp


@st.composite
def svm_duals(draw: st.DrawFn, *, min_n: int = 2, max_n: int = 40, min_C: float = 1e-3, max_C: float = 1e3,
              max_cond: float = 1e8, duplicates: bool = True, kernels: tuple[Literal["rbf", "linear"], ...] = ("rbf", "linear"),
              degenerate: bool = True, fixed: float | bool = True) -> QP:
    """SVM-shaped QPs: ``0 ≤ x ≤ C`` and one equality ``yᵀx = 0`` with ±1 labels (both present).

    Mostly true C-SVC duals (c = −1, Q = yyᵀ ∘ K from random points, :func:`qpcore.generators.random_svm_dual`);
    with ``degenerate``, also problems of the same constraint form with a planted degenerate
    optimum and a general c.

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of points (≥ 2).
    min_C, max_C : float
        Range of C (log-uniform, the ends drawn often).
    max_cond : float
        Largest condition number of the kernel matrix (RBF γ set to hit it, or default γ).
    duplicates : bool
        Also draw data with duplicated points (identical rows of Q).
    kernels : tuple of str
        Kernels to draw from ("rbf", "linear"; linear K has rank ≤ 5).
    degenerate : bool
        Also draw planted degenerate problems in SVM form.
    fixed : float or bool
        Fixed variables (lb = ub, at a value inside the original box [0, C], at a point with yᵀx = 0
        (the planted optimum where there is one), so the equality stays feasible; the labels stay
        ±1): on by default; True draws the fraction of fixed variables from {0, 0.1, 0.2, 0.3, 0.5,
        1} (shrinking to 0); a number is that fraction (``max(1, round(fixed·n))`` variables).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of QP
    """
    _check_range(min_C, max_C, "C", np.nextafter(0.0, 1.0))
    _check_range(1.0, max_cond, "cond", 1.0)
    bad = [k for k in kernels if k not in ("rbf", "linear")]
    if bad or not kernels:
        raise ValueError(f"kernels: choose from 'rbf', 'linear', got {kernels!r}")
    n = draw(_sizes(min_n, max_n, 2))
    fix = _option_fraction(draw, fixed, "fixed", _FIXED_FRACTIONS)
    seed = draw(_SEEDS)
    C = draw(_log_uniform(min_C, max_C))
    if degenerate and draw(st.integers(0, 3)) == 3:
        return random_degenerate_qp(n, seed=seed, cond=draw(_log_uniform(1.0, max_cond)),
                                    rank=_rank(draw, n, True), degenerate=0.5, svm_form=True, C=C, fixed=fix)
    kernel = draw(st.sampled_from(kernels))
    cond = draw(st.none() | _log_uniform(1.0, max_cond))
    dup = draw(st.integers(0, n - 2)) if duplicates and draw(st.booleans()) else 0
    return random_svm_dual(n, seed=seed, C=C, cond=cond, duplicates=dup, kernel=kernel,
                           d=draw(st.integers(1, 8)), fixed=fix)


@st.composite
def nonneg_qps(draw: st.DrawFn, *, min_n: int = 2, max_n: int = 40, min_cond: float = 1.0, max_cond: float = 1e8,
               rank_deficient: bool = True, degenerate: bool = True, fixed: float | bool = True) -> QP:
    """Nonnegative QPs ``min ½xᵀQx + cᵀx, x ≥ 0`` (lb = 0, ub = inf), NNLS-shaped, optimum planted.

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of variables.
    min_cond, max_cond : float
        Range of the condition number of Q.
    rank_deficient : bool
        Also draw singular Q.
    degenerate : bool
        Also draw zero gradients at variables that sit at 0.
    fixed : float or bool
        Fixed variables (lb = ub, at a value inside the original box [0, inf), at the planted
        optimum): on by default; True draws the fraction of fixed variables from {0, 0.1, 0.2, 0.3,
        0.5, 1} (shrinking to 0); a number is that fraction (``max(1, round(fixed·n))`` variables).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of QP
    """
    _check_range(min_cond, max_cond, "cond", 1.0)
    n = draw(_sizes(min_n, max_n, 1))
    fix = _option_fraction(draw, fixed, "fixed", _FIXED_FRACTIONS)
    seed = draw(_SEEDS)
    cond = draw(_log_uniform(min_cond, max_cond))
    rank = _rank(draw, n, rank_deficient)
    deg = draw(st.sampled_from([0.0, 0.5, 1.0])) if degenerate else 0.0
    return random_nonneg_qp(n, seed=seed, cond=cond, rank=rank, degenerate=deg, fixed=fix)


@st.composite
def lowrank_qps(draw: st.DrawFn, *, min_m: int = 2, max_m: int = 60, max_k: int = 8, svm_form: bool | None = None,
                singular: bool = True) -> QP:
    """Nonnegativity QPs with Q = diag(d) + HHᵀ (a :class:`qpcore.lowrank.DiagPlusLowRankQ`).

    The ASVM dual of two overlapping classes or a general one (varied d, random c); ν from 1e-3 to
    1e4 (large ν: Q close to the singular HHᵀ); dense or sparse data; with ``singular``, duplicate
    and contradicting rows, duplicate and constant columns, and column scales spread over up to
    six decades.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of QP
    """
    m = draw(_sizes(min_m, max_m, 2))
    k = draw(st.integers(1, max_k))
    form = draw(st.booleans()) if svm_form is None else svm_form
    bad = singular and draw(st.booleans())
    return random_lowrank_qp(
        m, k, seed=draw(_SEEDS), nu=draw(_log_uniform(1e-3, 1e4)), svm_form=form,
        duplicate_rows=draw(st.integers(0, m // 2)) if bad else 0,
        duplicate_cols=draw(st.integers(0, 2)) if bad else 0,
        constant_col=draw(st.booleans()) if bad else False,
        col_spread=draw(st.sampled_from([0.0, 1.0, 3.0])) if bad else 0.0,
        sparse=draw(st.booleans()))


@st.composite
def planted_qps(draw: st.DrawFn, *, min_n: int = 2, max_n: int = 40, max_cond: float = 1e8,
                svm_form: bool | None = None, fixed: float | bool = True) -> tuple[QP, FloatArray]:
    """Pairs ``(qp, x_star)`` with a known optimal point (box [−1, 1], one-sided, or SVM form).

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of variables (≥ 2).
    max_cond : float
        Largest condition number of Q.
    svm_form : bool, optional
        Force (True) or exclude (False) the SVM equality; drawn when None.
    fixed : float or bool
        Fixed variables (lb = ub, at a value inside the original box, at x*, which stays optimal):
        on by default; True draws the fraction of fixed variables from {0, 0.1, 0.2, 0.3, 0.5, 1}
        (shrinking to 0); a number is that fraction (``max(1, round(fixed·n))`` variables).

    Returns
    -------
    hypothesis.strategies.SearchStrategy of (QP, ndarray)
    """
    _check_range(1.0, max_cond, "cond", 1.0)
    n = draw(_sizes(min_n, max_n, 2))
    fix = _option_fraction(draw, fixed, "fixed", _FIXED_FRACTIONS)
    seed = draw(_SEEDS)
    cond = draw(_log_uniform(1.0, max_cond))
    rank = _rank(draw, n, True)
    deg = draw(st.sampled_from([0.0, 0.5]))
    svm = draw(st.booleans()) if svm_form is None else svm_form
    if svm:
        return planted_qp(n, seed=seed, cond=cond, rank=rank, ub=draw(_log_uniform(1e-3, 1e3)), degenerate=deg,
                          svm_form=True, fixed=fix)
    lb, ub = draw(st.sampled_from([(-1.0, 1.0), (0.0, np.inf), (-np.inf, 1.0)]))
    return planted_qp(n, seed=seed, cond=cond, rank=rank, lb=lb, ub=ub, degenerate=deg, fixed=fix)


def qps(*, min_n: int = 2, max_n: int = 40, max_cond: float = 1e8, fixed: float | bool = True,
        zero_coefficients: float | bool = True) -> st.SearchStrategy[QP]:
    """Any of :func:`box_qps`, :func:`box_equality_qps`, :func:`svm_duals`, :func:`nonneg_qps`
    (all their shape options on; ``fixed`` and ``zero_coefficients`` as given).

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of variables (≥ 2).
    max_cond : float
        Largest condition number of Q.
    fixed : float or bool
        Fixed variables (lb = ub), passed to all four (see :func:`box_qps`); on by default.
    zero_coefficients : float or bool
        Zero equality coefficients, passed to :func:`box_equality_qps` (the SVM duals keep their
        ±1 labels); on by default.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of QP
    """
    return st.one_of(box_qps(min_n=min_n, max_n=max_n, max_cond=max_cond, fixed=fixed),
                     box_equality_qps(min_n=min_n, max_n=max_n, max_cond=max_cond, fixed=fixed,
                                      zero_coefficients=zero_coefficients),
                     svm_duals(min_n=min_n, max_n=max_n, max_cond=max_cond, fixed=fixed),
                     nonneg_qps(min_n=min_n, max_n=max_n, max_cond=max_cond, fixed=fixed))


# ---------------------------------------------------------------------------------------------
# warm starts

WarmStartKind = Literal["bounds", "equality", "both"]


def _equality_scale(qp: QP, x: FloatArray) -> float:
    """The size of A x's terms: residuals of A x − b are judged relative to it."""
    return 1.0 + float(np.abs(qp.b).max(initial=0.0)) + float((np.abs(qp.A) @ np.abs(x)).max(initial=0.0))


def _violations(qp: QP) -> tuple[bool, bool]:
    """Whether a start can violate the bounds (some bound finite) and the equality from inside the
    box (a variable that the equality involves can move)."""
    bounds = bool((np.isfinite(qp.lb) | np.isfinite(qp.ub)).any())
    equality = bool(qp.m and ((qp.A != 0).any(axis=0) & (qp.lb < qp.ub)).any())
    return bounds, equality


def _off_equality(qp: QP, x: FloatArray, rng: np.random.Generator) -> FloatArray:
    """A point of the box with A x ≠ b: part of the way from the feasible ``x`` to a random point of
    the box (some 1e-4 to all of it), else one movable variable to its farthest bound."""
    lb, ub = qp.lb, qp.ub
    floor = 1e-8 * _equality_scale(qp, x)
    for _ in range(10):
        d = random_box_point(lb, ub, seed=rng, p_bound=0.3) - x
        for t in (float(10.0 ** rng.uniform(-4.0, 0.0)), 1.0):
            v: FloatArray = np.clip(x + t * d, lb, ub)
            if float(np.abs(qp.A @ v - qp.b).max()) > floor:
                return v
    # the random points keep missing (a tiny box): move the variable that changes A x most
    width = np.where(np.isfinite(lb) & np.isfinite(ub), ub - lb, np.inf)
    reach = np.abs(qp.A).max(axis=0) * np.minimum(width, 1.0 + np.abs(x))
    i = int(np.argmax(reach))
    v = x.copy()
    up = (ub[i] - x[i]) >= (x[i] - lb[i])
    v[i] = (ub[i] if np.isfinite(ub[i]) else x[i] + 1.0) if up else (lb[i] if np.isfinite(lb[i]) else x[i] - 1.0)
    return v


def _outside_bounds(qp: QP, x: FloatArray, rng: np.random.Generator, keep_equality: bool) -> FloatArray:
    """``x`` with some variables pushed past a finite bound by 1e-6 to 10 times the box width (a
    unit where the box is a point or half-open); with ``keep_equality``, the variables not pushed
    then restore A x = b (a least-squares correction, which may take them out of the box too)."""
    lb, ub = qp.lb, qp.ub
    has_lb, has_ub = np.isfinite(lb), np.isfinite(ub)
    cand = np.flatnonzero(has_lb | has_ub)
    involved = (qp.A != 0).any(axis=0)
    pushed = cand[rng.random(cand.size) < float(rng.choice([0.1, 0.5, 1.0]))]
    if pushed.size == 0:
        pushed = cand[[int(rng.integers(cand.size))]]
    if keep_equality and qp.m and involved.any() and involved[pushed].sum() == involved.sum() and pushed.size > 1:
        # leave a variable that the equality involves free to restore it
        pushed = np.setdiff1d(pushed, [rng.choice(pushed[involved[pushed]])])
    with np.errstate(invalid="ignore"):
        width = np.where(has_lb & has_ub & (ub > lb), ub - lb, 1.0)
    below = np.where(has_lb & has_ub, rng.random(x.size) < 0.5, has_lb)[pushed]
    amount = width[pushed] * 10.0 ** rng.uniform(-6.0, 1.0, pushed.size)
    out = x.copy()
    residual_before = qp.A @ x - qp.b
    for _ in range(3):
        out[pushed] = np.where(below, lb[pushed] - amount, ub[pushed] + amount)
        r = qp.A @ out - qp.b
        # "both": the push must not happen to cancel the equality's violation
        if keep_equality or not qp.m or not np.any(residual_before) \
                or float(np.abs(r).max()) > 1e-8 * _equality_scale(qp, out):
            break
        amount = 0.5 * amount
    if keep_equality and qp.m:
        rest = np.setdiff1d(np.flatnonzero(involved), pushed)
        if rest.size:
            r = qp.A @ out - qp.b
            out[rest] -= scipy.linalg.lstsq(qp.A[:, rest], r)[0]
    return out


@st.composite
def warm_starts(draw: st.DrawFn, qp: QP, feasible: bool | None = None, *,
                violate: WarmStartKind | None = None) -> FloatArray:
    """Start points x0 for ``qp``: feasible, outside the bounds, off the equality, or both.

    The kinds (drawn evenly; a failing example shrinks towards a feasible start):

    - feasible: lb ≤ x0 ≤ ub exactly and A x0 = b to rounding
      (:func:`qpcore.generators.feasible_point`: sometimes a vertex, sometimes inside);
    - ``"bounds"``: some variables (a tenth, half or all of those with a finite bound; at least
      one) past a finite bound by 1e-6 to 10 times the box width (a unit for a half-open box or a
      fixed variable), A x0 = b restored to rounding by the other variables that the equality
      involves (least squares; they may leave the box too);
    - ``"equality"``: inside the box, A x0 ≠ b (by more than 1e-8 relative to the size of A x's
      terms): part of the way (1e-4 to all of it) from a feasible point to a random point of the
      box;
    - ``"both"``: off the equality, then past the bounds.

    Infeasible kinds that ``qp`` cannot have are not drawn (no equality: none off it; a box that
    the equality cannot move in).

    Parameters
    ----------
    qp : QP
        The problem (at most one equality row for feasible starts is fastest; several use an LP).
    feasible : bool, optional
        Only feasible starts (True), only infeasible ones (False), or any (None).
    violate : {"bounds", "equality", "both"}, optional
        Only this kind of infeasible start.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of ndarray
        Finite float64 vectors of length n.

    Raises
    ------
    ValueError
        When the requested kind is impossible for ``qp`` (e.g. ``feasible=False`` for an
        unconstrained problem, ``violate="equality"`` without an equality).
    """
    can_bounds, can_equality = _violations(qp)
    possible = {"bounds": can_bounds, "equality": can_equality, "both": can_bounds and can_equality}
    if violate is not None:
        if violate not in possible:
            raise ValueError(f"violate: choose 'bounds', 'equality' or 'both', got {violate!r}")
        if feasible:
            raise ValueError("warm_starts: violate= asks for infeasible starts, but feasible=True")
        if not possible[violate]:
            raise ValueError(f"warm_starts: this problem cannot be violated in the way {violate!r}")
        kinds: list[str] = [violate]
    else:
        kinds = ["feasible"] if feasible is not False else []
        if feasible is not True:
            kinds += [k for k in ("bounds", "equality", "both") if possible[k]]
        if not kinds:
            raise ValueError("warm_starts: feasible=False, but the problem has no constraint to violate")
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(draw(_SEEDS))
    x = feasible_point(qp, seed=rng, p_bound=float(rng.choice([0.0, 0.3, 1.0])))
    if kind in ("equality", "both"):
        x = _off_equality(qp, x, rng)
    if kind in ("bounds", "both"):
        x = _outside_bounds(qp, x, rng, keep_equality=kind == "bounds")
    return x


# ---------------------------------------------------------------------------------------------
# the KKT assertion


def _worst(qp: QP, x: FloatArray, g: FloatArray, lam: FloatArray) -> str:
    """Name the variables behind the KKT measure, for the failure message (qpcore.optimality's terms)."""
    if qp.m == 1:
        sc = scores_of(qp, x, g)
        pair = maximal_violating_pair(sc)
        parts = []
        if pair is not None:
            i, j = pair
            parts.append(f"maximal violating pair i={i} (x={x[i]:.6g}, v=−g/a={sc.v[i]:.6g}), "
                         f"j={j} (x={x[j]:.6g}, v={sc.v[j]:.6g})")
        if sc.single is not None and single_violation(sc) > 0:
            pg = projected_gradient(x, g, qp.lb, qp.ub)
            k = int(np.argmax(np.where(sc.single, np.abs(pg), -1.0)))
            parts.append(f"variable outside the equality i={k}: projected gradient {pg[k]:.3e}")
        return "; ".join(parts) if parts else "no violating pair"
    r = g - qp.A.T @ lam if qp.m else g
    pg = projected_gradient(x, r, qp.lb, qp.ub)
    if pg.size == 0:
        return "no variables"
    i = int(np.argmax(np.abs(pg)))
    return (f"worst variable i={i}: x={x[i]:.6g} in [{qp.lb[i]:.6g}, {qp.ub[i]:.6g}], "
            f"projected gradient {pg[i]:.3e}")


def assert_kkt(qp: QP, result: Result, tol: float, *, primal_tol: float = 1e-9) -> None:
    """Assert that ``result`` converged and its point is optimal for ``qp`` to ``tol``.

    The certificate is recomputed with ``qpcore.kkt(qp, result.x)`` (a fresh gradient from the
    problem); ``result.kkt`` and the strategy's own gradient are never trusted.

    Parameters
    ----------
    qp : QP
        The problem that was solved.
    result : Result
        What ``qpcore.solve`` returned.
    tol : float
        Bound on the KKT measure (the maximal-violating-pair gap with one equality row, else the
        projected-gradient norm), allowing a relative slack of 1e-6 for rounding.
    primal_tol : float
        Bound on the primal infeasibility (bounds and ``A x = b``), relative to
        :func:`qpcore.optimality.feasibility_scale` (as ``KKT.feasible`` and ``qpcore.solve``).

    Raises
    ------
    AssertionError
        Naming each condition that failed and by how much.
    """
    x = np.asarray(result.x, dtype=np.float64)
    problems: list[str] = []
    if result.status is not Status.CONVERGED:
        problems.append(f"status is {result.status.code!r} ({result.status.message}), expected 'converged'")
    if x.shape != (qp.n,):
        raise AssertionError(f"result.x has shape {x.shape}, the problem has n = {qp.n}")
    if not np.isfinite(x).all():
        bad = int(np.flatnonzero(~np.isfinite(x))[0])
        raise AssertionError("; ".join(problems + [f"result.x is not finite (x[{bad}] = {x[bad]})"]))
    g = qp.gradient(x)
    cert = kkt(qp, x, g)
    what = "maximal-violating-pair gap" if cert.multipliers.size == 1 else "projected-gradient norm"
    if not cert.measure <= tol * (1 + 1e-6):
        problems.append(f"KKT measure ({what}) {cert.measure:.3e} > tol {tol:.3e} "
                        f"(×{cert.measure / tol:.3g}); {_worst(qp, x, g, cert.multipliers)}")
    scale = cert.primal_scale          # the certificate's own scale, as solve() judges feasibility
    if not cert.feasible(primal_tol):
        viol = np.maximum(np.maximum(qp.lb - x, x - qp.ub), 0.0)
        i = int(np.argmax(viol)) if viol.size else -1
        where = (f"bound at i={i}: x={x[i]:.6g} outside [{qp.lb[i]:.6g}, {qp.ub[i]:.6g}]"
                 if i >= 0 and viol[i] >= cert.primal else "A x = b")
        problems.append(f"primal infeasibility {cert.primal:.3e} > {primal_tol:.1e}·{scale:.3g} (worst: {where})")
    if problems:
        reported = getattr(result, "kkt", None)
        if reported is not None and reported.measure != cert.measure:
            problems.append(f"(the result reported KKT measure {reported.measure:.3e})")
        raise AssertionError("KKT check failed: " + "; ".join(problems)
                             + f" [stationarity {cert.stationarity:.3e}, complementarity {cert.complementarity:.3e}]")


# ---------------------------------------------------------------------------------------------
# the reference solve


def _dense(qp: QP) -> FloatArray:
    M: Any = getattr(qp.Q, "M", None)
    if M is None:
        M = qp.Q.rows(np.arange(qp.n))
    out = np.array(M, dtype=np.float64)
    sym: FloatArray = 0.5 * (out + out.T)
    return sym


def _ipm(Q: FloatArray, c: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
         eps: float, max_iter: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
                                              float]:
    """Mehrotra predictor–corrector on min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, Ax = b (no fixed variables).

    Slacks s_l = x − lb and s_u = ub − x are variables of their own (met in the limit), so they
    never round to zero the way x − lb does near a bound. Every step keeps the products s_i z_i
    above γ times their mean (a wide neighbourhood of the central path); where the corrected step
    is short or fails to reduce the complementarity (Mehrotra's method can cycle there, e.g. on
    SVM duals with a large C), a plain Newton step towards the central path (σ ≥ 0.5) replaces
    it. Stops at ``eps``, at a rounding floor, or after a long stall. Returns the best iterate
    (x, s_l, s_u, z_l, z_u, y) and its merit: the largest of the scaled primal, dual and gap residuals.
    """
    n, m = c.size, b.size
    hl, hu = np.isfinite(lb), np.isfinite(ub)
    nb = max(int(hl.sum() + hu.sum()), 1)
    lbf, ubf = np.where(hl, lb, 0.0), np.where(hu, ub, 0.0)
    x = np.where(hl & hu, 0.5 * (lbf + ubf), np.where(hl, lbf + 1.0, np.where(hu, ubf - 1.0, 0.0)))
    # absent bounds carry s = 1, z = 0 throughout, so their terms vanish; s ≥ 1 keeps a tiny box
    # (C = 1e-3) from starting next to its boundary
    sl = np.where(hl, np.maximum(x - lbf, 1.0), 1.0)
    su = np.where(hu, np.maximum(ubf - x, 1.0), 1.0)
    zl, zu, y = hl.astype(np.float64), hu.astype(np.float64), np.zeros(m)
    reg = 1e-13 * max(1.0, float(np.abs(Q).max(initial=0.0)))
    K0 = np.zeros((n + m, n + m))
    K0[:n, :n] = Q
    K0[:n, n:] = A.T
    K0[n:, :n] = A
    bscale = 1.0 + max(float(np.abs(b).max(initial=0.0)), float(np.abs(lbf).max(initial=0.0)),
                       float(np.abs(ubf).max(initial=0.0)))
    best = (x, sl, su, zl, zu, y, np.inf)
    # the neighbourhood's γ: 1e-3, or less where the starting point is less centered than that
    p0 = np.concatenate([(sl * zl)[hl], (su * zu)[hu]])
    gamma = min(1e-3, 0.5 * float(p0.min(initial=1.0)) / max(float(p0.mean()) if p0.size else 1.0, 1e-300))
    stale = 0
    for _ in range(max_iter):
        Qx = Q @ x
        rd = Qx + c - A.T @ y - zl + zu
        rp = A @ x - b
        rl = np.where(hl, x - lbf - sl, 0.0)
        ru = np.where(hu, ubf - x - su, 0.0)
        comp = float((sl * zl)[hl].sum() + (su * zu)[hu].sum())
        obj = float(0.5 * x @ Qx + c @ x)
        xmax = float(np.abs(x).max(initial=0.0))
        merit = max(max(float(np.abs(rp).max(initial=0.0)), float(np.abs(rl).max(initial=0.0)),
                        float(np.abs(ru).max(initial=0.0))) / (bscale + float(np.abs(A).max(initial=0.0)) * xmax + xmax),
                    float(np.abs(rd).max(initial=0.0)) / (1.0 + float(np.abs(c).max(initial=0.0))
                                                          + float(np.abs(Qx).max(initial=0.0))),
                    comp / (1.0 + abs(obj)))
        # count the steps that gain < 10 %: near the end rounding puts a floor under the
        # residuals; earlier, a long run of them is a stall (left to the active-set method)
        stale = stale + 1 if merit >= 0.9 * best[6] else 0
        if merit < best[6]:
            best = (x, sl, su, zl, zu, y, merit)
        if merit <= eps or stale >= (5 if best[6] < 1e-8 else 25):
            break
        mu = comp / nb
        K = K0.copy()
        K[np.diag_indices(n)] += zl / sl + zu / su
        Kd = K.copy()
        K[np.diag_indices(n)] += reg
        K[n:, n:] -= reg * np.eye(m)
        with warnings.catch_warnings():
            # an exactly singular pivot shows up as inf/NaN in the direction, handled below
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            lu = scipy.linalg.lu_factor(K, check_finite=False)

        def direction(rcl: FloatArray, rcu: FloatArray) -> tuple[FloatArray, ...]:
            # eliminate ds and dz: Z ds + S dz = −rc with ds_l = dx + r_l, ds_u = −dx + r_u
            rcl = rcl + zl * rl
            rcu = rcu + zu * ru
            rhs = np.concatenate([-rd - rcl / sl + rcu / su, -rp])
            sol = scipy.linalg.lu_solve(lu, rhs, check_finite=False)
            for _ in range(2):  # refine against the unregularized system
                sol += scipy.linalg.lu_solve(lu, rhs - Kd @ sol, check_finite=False)
            dx = sol[:n]
            dzl = np.where(hl, (-rcl - zl * dx) / sl, 0.0)
            dzu = np.where(hu, (-rcu + zu * dx) / su, 0.0)
            dsl = np.where(hl, dx + rl, 0.0)
            dsu = np.where(hu, -dx + ru, 0.0)
            return dx, -sol[n:], dsl, dsu, dzl, dzu

        def max_step(*pairs: tuple[FloatArray, FloatArray]) -> float:
            a = 1.0
            for v, dv in pairs:
                neg = dv < 0
                if neg.any():
                    with np.errstate(over="ignore"):  # a subnormal dv: no limit on the step, inf is right
                        a = min(a, float((v[neg] / -dv[neg]).min()))
            return a

        def step_length(st: tuple[FloatArray, ...], mu: float, decrease: bool = False) -> tuple[float, float]:
            """Largest step (back-tracking from 0.995 of the way to the boundary) that keeps every
            product s_i z_i ≥ γ·mean (the wide neighbourhood of the central path)."""
            _, _, dsl, dsu, dzl, dzu = st
            a = min(1.0, 0.995 * max_step((sl, dsl), (su, dsu), (zl, dzl), (zu, dzu)))
            for _ in range(80):
                prod = np.concatenate([((sl + a * dsl) * (zl + a * dzl))[hl], ((su + a * dsu) * (zu + a * dzu))[hu]])
                m_new = float(prod.sum()) / nb
                if prod.min(initial=np.inf) >= gamma * m_new and (not decrease or m_new <= (1.0 - 0.01 * a) * mu):
                    return a, m_new
                a *= 0.8
            return 0.0, mu

        # predictor (affine scaling), then Mehrotra's centering and second-order correction
        dx, dy, dsl, dsu, dzl, dzu = direction(sl * zl * hl, su * zu * hu)
        a = max_step((sl, dsl), (su, dsu), (zl, dzl), (zu, dzu))
        mu_aff = float(((sl + a * dsl) * (zl + a * dzl))[hl].sum() + ((su + a * dsu) * (zu + a * dzu))[hu].sum()) / nb
        sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0
        rcl = np.where(hl, sl * zl + dsl * dzl - sigma * mu, 0.0)
        rcu = np.where(hu, su * zu + dsu * dzu - sigma * mu, 0.0)
        step = direction(rcl, rcu)
        a, mu_new = step_length(step, mu)
        if a < 0.1 or mu_new > (1.0 - 0.01 * a) * mu:
            # the second-order term can spoil a short step (Mehrotra's method then cycles):
            # a plain centered Newton step, kept in the neighbourhood, makes progress
            sig = max(sigma, 0.5)
            step = direction(np.where(hl, sl * zl - sig * mu, 0.0), np.where(hu, su * zu - sig * mu, 0.0))
            a, mu_new = step_length(step, mu, True)
        dx, dy, dsl, dsu, dzl, dzu = step
        if not a > 1e-14 or not np.isfinite(dx).all():
            break
        x, y = x + a * dx, y + a * dy
        sl = np.where(hl, sl + a * dsl, 1.0)
        su = np.where(hu, su + a * dsu, 1.0)
        zl = np.where(hl, zl + a * dzl, 0.0)
        zu = np.where(hu, zu + a * dzu, 0.0)
    return best


def _feasible(x0: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
              keep: NDArray[np.bool_]) -> FloatArray:
    """A point of the box that meets A x = b, near ``x0`` (a start for the active-set method).

    One row: the projection clip(x0 + λa), moving only the variables not in ``keep`` where they
    can meet the row (all of them otherwise), with λ found by bisection (a·x is nondecreasing in
    λ). Several rows: a vertex from the LP solver (scipy's HiGHS). Where none is found, clip(x0).
    """
    x = np.clip(x0, lb, ub)
    m = b.size
    if m == 0:
        return x
    if m > 1:
        import scipy.optimize

        bounds = [(lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)
                  for lo, hi in zip(lb.tolist(), ub.tolist())]
        lp = scipy.optimize.linprog(np.zeros(x.size), A_eq=A, b_eq=b, bounds=bounds, method="highs")
        return np.clip(np.asarray(lp.x, dtype=np.float64), lb, ub) if lp.status == 0 else x
    a, beta = A[0], float(b[0])
    moved = np.where(keep, 0.0, a)
    rest = float(a[keep] @ x[keep])
    with np.errstate(invalid="ignore"):  # 0·inf for a variable that does not move
        top = rest + float(np.where(moved > 0, moved * ub, np.where(moved < 0, moved * lb, 0.0)).sum())
        bottom = rest + float(np.where(moved > 0, moved * lb, np.where(moved < 0, moved * ub, 0.0)).sum())
    if not bottom < beta < top:
        moved = a

    try:
        return meet_row(x, a, beta, lb, ub, direction=moved)
    except ValueError:
        return x  # A x = b is out of the box's reach


def _to_release(g: FloatArray, A: FloatArray, F: NDArray[np.bool_], wl: NDArray[np.bool_], wu: NDArray[np.bool_],
                y: FloatArray, tol: float) -> list[int]:
    """The bounds to drop from the working set at a minimizer of its face (none: the point is optimal).

    The bound multipliers are z = g − Aᵀλ, with λ from the free variables (g_F = A_Fᵀλ) when
    they determine it; a bound whose multiplier has the wrong sign by more than ``tol`` is
    released, the worst first. When λ is not determined (one row that no free variable involves:
    a degenerate vertex), no single bound can be released without breaking A x = b, and the
    maximal violating pair is released together (it moves both off their bounds). With several
    rows and A_F short of rank, λ is the least-squares one or ``y``, whichever fits better.
    """
    m = A.shape[0]
    W = wl | wu
    sign = np.where(wl, 1.0, -1.0)  # z must be ≥ 0 on wl, ≤ 0 on wu
    if m == 1 and not np.any(A[0, F] != 0):
        a = A[0]
        alone = W & (a == 0)
        bad0 = np.where(alone, np.maximum(-sign * g, 0.0), 0.0)
        # a_i ≠ 0 limits λ: from above (s > 0, violation |a_i|(λ − t_i)⁺) or below
        S = W & (a != 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(S, g / a, 0.0)
        s = sign * np.sign(a)
        up, lo = S & (s > 0), S & (s < 0)
        w = np.abs(a)
        pair: list[int] = []
        worst_pair = 0.0
        if up.any() and lo.any():
            i = int(np.flatnonzero(up)[np.argmin(t[up])])
            j = int(np.flatnonzero(lo)[np.argmax(t[lo])])
            if t[j] > t[i]:
                # at the balancing λ, both violate by w_i w_j (t_j − t_i) / (w_i + w_j)
                worst_pair = float(w[i] * w[j] * (t[j] - t[i]) / (w[i] + w[j]))
                pair = [i, j]
        k = int(np.argmax(bad0)) if bad0.size else 0
        if bad0.size and bad0[k] > max(tol, worst_pair):
            return [k]
        return pair if worst_pair > tol else []
    if m == 0:
        z = g
    else:
        AF = A[:, F]
        lam: FloatArray = scipy.linalg.lstsq(AF.T, g[F])[0] if F.any() else np.zeros(m)
        z = g - A.T @ lam
        if (not F.any() or np.linalg.matrix_rank(AF) < m) and y.size == m:
            zy = g - A.T @ y
            if np.minimum(sign * zy, 0.0)[W].min(initial=0.0) > np.minimum(sign * z, 0.0)[W].min(initial=0.0):
                z = zy
    bad = np.where(W, np.maximum(-sign * z, 0.0), 0.0)
    k = int(np.argmax(bad)) if bad.size else 0
    return [k] if bad.size and bad[k] > tol else []


def _active_set(Q: FloatArray, c: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
                x0: FloatArray, at_l: NDArray[np.bool_], at_u: NDArray[np.bool_], y: FloatArray,
                max_iter: int) -> tuple[FloatArray, bool]:
    """A primal active-set method; returns the last point and whether it is a KKT point.

    The working set starts as ``at_l``/``at_u`` (read off the interior-point pairs (slack,
    multiplier), or anything), from a feasible point near ``x0``. Each iteration solves the
    equality-constrained QP on the free variables (an eigendecomposition of its KKT system, so a
    singular Q is fine) and steps towards its solution until a bound blocks (added to the
    working set). When the face has no minimizer, the part of −g in the null space of its KKT
    system is a direction of zero curvature and descent, followed instead to the first bound
    (none: the problem is unbounded). At the minimizer of a face, the bounds with wrong-signed
    multipliers are released (:func:`_to_release`); none: the point is optimal. It lands
    exactly on the active bounds, which a KKT measure without tolerance on "at a bound" needs.
    """
    n, m = x0.size, b.size
    hl, hu = np.isfinite(lb), np.isfinite(ub)
    wl, wu = at_l & hl, at_u & hu & ~at_l
    x = _feasible(np.where(wl, lb, np.where(wu, ub, x0)), lb, ub, A, b, wl | wu)
    wl &= x == lb
    wu &= x == ub
    scale = 1.0 + float(np.abs(x).max(initial=0.0))
    gscale = 1.0 + float(np.abs(c).max(initial=0.0)) + float(np.abs(Q).max(initial=0.0)) * scale
    amax = float(np.abs(A).max(initial=0.0))
    stationary = refine = False
    for _ in range(max_iter):
        F = ~(wl | wu)
        g = Q @ x + c
        if stationary:
            release = _to_release(g, A, F, wl, wu, y, 1e-10 * gscale)
            if not release:
                return x, True
            wl[release] = wu[release] = False
            stationary = refine = False
            continue
        nf = int(F.sum())
        QF, AF = Q[np.ix_(F, F)], A[:, F]
        # balance the blocks so that the rank decision sees the spectrum of Q_FF itself
        qn, an = float(np.abs(QF).max(initial=0.0)), float(np.abs(AF).max(initial=0.0))
        sa = qn / an if qn > 0 and an > 0 else 1.0
        K = np.block([[QF, sa * AF.T], [sa * AF, np.zeros((m, m))]])
        rhs = np.concatenate([-g[F], sa * (b - A @ x)])
        # eigendecomposition of the (symmetric) KKT matrix: the Newton step from its range; the
        # part of the right-hand side in its null space (exact, unlike the residual that the
        # rounding of a huge Newton step leaves) tells a face without a minimizer
        sol, null = np.zeros(rhs.size), np.zeros(rhs.size)
        if rhs.size:
            ev, V = scipy.linalg.eigh(K, check_finite=False)
            small = np.abs(ev) <= 1e-12 * float(np.abs(ev).max(initial=0.0))
            proj = V.T @ rhs
            sol = V[:, ~small] @ (proj[~small] / ev[~small])
            null = V[:, small] @ proj[small]
        p = np.zeros(n)
        ray = float(np.abs(null[:nf]).max(initial=0.0)) > 1e-12 * gscale
        if not ray and float(np.abs(null[nf:]).max(initial=0.0)) > 1e-10 * sa * (1.0 + amax * scale):
            return x, False  # the face cannot meet A x = b
        pF = null[:nf] if ray else sol[:nf]  # a ray: descend along the null-space part of −g to a bound
        if m and nf:
            # A_F p = r (= 0 along a ray) again, to the rounding of p rather than of the multipliers
            pF = pF + scipy.linalg.lstsq(AF, (0.0 if ray else rhs[nf:] / sa) - AF @ pF)[0]
        p[F] = pF
        if not ray:
            if float(np.abs(p).max(initial=0.0)) <= 1e-13 * scale:
                # already at the minimizer of the face up to rounding (the step still corrects
                # what rounding left of A x = b)
                x = np.clip(x + p, lb, ub)
                stationary, refine = True, False
                continue
        # longest step in [0, 1] (unlimited along a ray) that stays in the box
        with np.errstate(divide="ignore", invalid="ignore"):
            tl = np.where(F & hl & (p < 0), (lb - x) / p, np.inf)
            tu = np.where(F & hu & (p > 0), (ub - x) / p, np.inf)
        t = np.minimum(tl, tu)
        k = int(np.argmin(t))
        if not ray and t[k] >= 1.0:
            # at the minimizer of the face after one more solve there, which refines the step
            # (what rounding left of A x = b and of g_F ≈ A_Fᵀλ)
            x = x + p
            stationary = refine
            refine = not refine
        elif not np.isfinite(t[k]):
            return x, False  # unbounded below
        else:
            refine = False
            x = x + max(float(t[k]), 0.0) * p
            if tl[k] <= tu[k]:
                wl[k] = True
            else:
                wu[k] = True
        x = np.clip(np.where(wl, lb, np.where(wu, ub, x)), lb, ub)
    return x, False


def gradient_scale(qp: QP, x_ref: FloatArray) -> float:
    """The size of the gradient's terms at ``x_ref``, in the KKT measure's units.

    g = Qx + c is known only to rounding times max(|c|, diag Q·|x|); the gap with an equality
    row is in g/a units, so it is divided by the smallest nonzero |a|. Tests scale their
    tolerance by it, so optima far from 0 (one-sided bounds) get a larger one.
    """
    s = max(1.0, float(np.abs(qp.c).max(initial=0.0)),
            float(qp.Q.diag().max(initial=0.0)) * max(1.0, float(np.abs(x_ref).max(initial=0.0))))
    if qp.m:
        a = np.abs(qp.A[0])
        s /= max(1e-300, float(a[a > 0].min(initial=np.inf)) if (a > 0).any() else 1.0)
    return s


def check_against_reference(qp: QP, strategy: Any, rel: float = 1e-8, max_iter: int = 20_000) -> Result:
    """Solve ``qp`` with ``strategy`` at tol = rel·:func:`gradient_scale` and assert the KKT
    certificate and the objective against :func:`dense_reference`.

    The objective bound is convexity's: f(x) − f* ≤ Σ z_i (x_i − x*_i) with z = g − λa; the
    certificate bounds each |z_i| by |a_i|·gap (by the gap itself where a_i = 0, by the
    stationarity for a box), plus the rounding of f (4·n·eps·(½|x*|ᵀ|Q||x*| + |c|ᵀ|x*|)).
    Returns the result for further checks.
    """
    from qpcore.solve import solve

    x_ref, f_ref = dense_reference(qp)
    tol = rel * gradient_scale(qp, x_ref)
    res = solve(qp, strategy, tol=tol, max_iter=max_iter)
    assert_kkt(qp, res, tol)
    if qp.m:
        gap = max(res.kkt.gap, 0.0)
        weights = np.where(qp.A[0] != 0, np.abs(qp.A[0]) * gap, gap)
    else:
        weights = np.full(qp.n, res.kkt.stationarity)
    # plus the rounding of f itself, evaluated two ways (dense here, through the operator there):
    # ~n·eps times the size of its terms, which for ill-conditioned Q and large x dwarfs 1e-8·|f|
    Qd = _dense(qp)
    terms = 0.5 * float(np.abs(x_ref) @ (np.abs(Qd) @ np.abs(x_ref))) + float(np.abs(qp.c) @ np.abs(x_ref))
    allowed = (float(weights @ np.abs(res.x - x_ref)) + 1e-8 * max(1.0, abs(f_ref))
               + 4.0 * qp.n * float(np.finfo(np.float64).eps) * terms)
    assert res.objective <= f_ref + allowed, (res.objective, f_ref, allowed)
    return res


def dense_reference(qp: QP, *, eps: float = 1e-13, max_iter: int = 200) -> tuple[FloatArray, float]:
    """An independent high-precision solve of a small problem, to compare strategies against.

    A primal–dual interior-point method (Mehrotra predictor–corrector, dense LU of the KKT system
    with iterative refinement; a step that the second-order correction spoils is replaced by a
    plain centered one, and every step keeps the iterate in a wide neighbourhood of the central
    path) followed by a primal active-set method: its working set starts from the bounds that
    the interior-point pairs (slack, multiplier) mark active, and it solves the
    equality-constrained QP on the free variables exactly, landing on the active bounds. The
    polished point is kept only if it is feasible and no worse. Should the interior-point method
    stall, the active-set method, run to the end from its best iterate, gives the answer when it
    certifies it (a minimizer of its face whose bound multipliers have the right signs). It
    shares nothing with qpcore's strategies or with ``qpcore.kkt``. Fixed variables (lb = ub) are
    eliminated first. The point is unique only when the optimum is (a singular Q or duplicate rows
    admit many); the objective is.

    Where it is trusted: the problems of this module, checked against OSQP (eps_abs = eps_rel =
    1e-10, polished) by ``tests/qpcore/test_reference.py`` (40 problems per CI run, 1,000 fresh
    ones per nightly run): box QPs (finite, one-sided, degenerate), one general equality row
    (with zero coefficients), SVM duals (RBF and linear, duplicate points, C from 1e-3 to 1e3),
    nonnegative, planted and low-rank (``DiagPlusLowRankQ``, ν up to 1e4) problems, with fixed
    variables; n ≤ 60, condition number of Q ≤ 1e8, singular Q included. There its point is in
    the box exactly, meets A x = b to 1e-12 of the size of A x's terms, and has KKT measure
    ≤ 1e-11·:func:`gradient_scale` (seen over 12,000 draws: 2e-14); its objective is never above
    that of OSQP's point (projected onto the feasible set) by more than 1e-11·s, with
    s = 1 + ½|x|ᵀ|Q||x| + |c|ᵀ|x| the size of the objective's terms (seen: 4e-14·s), and where
    OSQP reports "solved" with recomputed residuals below 1e-9 (about 99 % of the draws; the rest
    are ill-conditioned or hit OSQP's iteration limit) the two agree to 1e-8·s (seen: 1e-10·s,
    OSQP's own accuracy). Being feasible, it is never below the optimum either. It matches
    planted optima to 1e-9 relative. Untested outside that domain: n in the hundreds (dense,
    O(n³) per iteration), condition numbers beyond 1e8, several equality rows (supported, not
    cross-checked), badly scaled data.

    Parameters
    ----------
    qp : QP
        A small problem (Q is materialized densely: O(n²) memory, O(n³) per iteration).
    eps : float
        Target for the scaled primal, dual and gap residuals.
    max_iter : int
        Iteration limit of the interior-point method.

    Returns
    -------
    (ndarray, float)
        An optimal point and the optimal objective ½xᵀQx + cᵀx (the latter accurate whatever
        the point's multiplicity).

    Raises
    ------
    RuntimeError
        If the interior-point method does not reach 1e-8 and the active-set method finds no
        optimal point either (an unbounded or badly scaled problem).
    """
    Q, c, lb, ub, A, b = _dense(qp), qp.c, qp.lb, qp.ub, qp.A, qp.b
    fixed = lb == ub
    free = ~fixed
    x = np.where(fixed, lb, 0.0)
    xfix = np.where(fixed, lb, 0.0)
    Qf = Q[np.ix_(free, free)]
    cf = c[free] + Q[np.ix_(free, fixed)] @ lb[fixed]
    Af, bf = A[:, free], b - A @ xfix
    if free.any():
        lbf, ubf = lb[free], ub[free]
        xf, sl, su, zl, zu, y, merit = _ipm(Qf, cf, lbf, ubf, Af, bf, eps, max_iter)
        xf = np.clip(xf, lbf, ubf)  # the slacks are met only in the limit
        at_l = np.isfinite(lbf) & (sl < zl)
        at_u = np.isfinite(ubf) & ~at_l & (su < zu)
        nf = int(free.sum())
        xp, converged = _active_set(Qf, cf, lbf, ubf, Af, bf, xf, at_l, at_u, y, 10 * nf + 50)

        def objective(v: FloatArray) -> float:
            return float(0.5 * v @ (Qf @ v) + cf @ v)

        ok_eq = (float(np.abs(Af @ xp - bf).max(initial=0.0))
                 <= 1e-12 * (1.0 + float(np.abs(bf).max(initial=0.0)) + float(np.abs(xp).max(initial=0.0))))
        if merit <= 1e-8:
            # the polished point must be as good as the interior-point one (which certifies the
            # value), up to the rounding of f itself: ~n·eps times the size of its terms, which
            # with an ill-conditioned Q and a large x (terms ~1e13, f ~1e5) dwarfs 1e-11·|f| and
            # would otherwise let noise reject a certified optimum for a non-stationary point
            fx = objective(xf)
            terms = 0.5 * float(np.abs(xp) @ (np.abs(Qf) @ np.abs(xp))) + float(np.abs(cf) @ np.abs(xp))
            slack = 1e-11 * (1.0 + abs(fx)) + (4.0 * nf * np.finfo(np.float64).eps * terms if converged else 0.0)
            x[free] = xp if ok_eq and objective(xp) <= fx + slack else xf
        elif converged and ok_eq:
            # the interior-point method stalled; the active-set method, run to the end from its
            # best iterate, certifies its own point (stationary, multipliers of the right sign)
            x[free] = xp
        else:
            raise RuntimeError(f"dense_reference: the interior-point method stopped at scaled residual {merit:.2e} "
                               "and the active-set method found no optimal point; the problem may be unbounded "
                               "or badly scaled")
    return x, float(0.5 * x @ (Q @ x) + c @ x)
