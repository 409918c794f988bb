"""Hypothesis strategies that draw QPs and start points, to property-test a strategy.

A researcher's test of a new strategy reads::

    from hypothesis import given
    from qpcore.testkit.reference import assert_kkt, dense_reference
    from qpcore.testkit.testing import qps

    @given(qps())
    def test_my_strategy(qp):
        result = qpcore.solve(qp, MyStrategy(), tol=1e-6)
        assert_kkt(qp, result, 1e-6)
        assert result.objective <= dense_reference(qp)[1] + 1e-6 * (1 + abs(result.objective))

This module draws the problems; :mod:`qpcore.testkit.reference` holds what they are checked against (the
KKT assertion and an independent reference solve), and needs no hypothesis.

The strategies draw small problems (n from 2 to 40) of every shape qpcore handles: box QPs
(including one side infinite), SVM duals (a box and the equality yᵀx = 0) and nonnegative QPs,
well- and ill-conditioned (condition number up to 1e8), rank-deficient, with duplicate rows, tiny
and huge C, and degenerate (variables at a bound whose gradient vanishes there). Seeds and
parameters are drawn through hypothesis, so a failing example shrinks to a small, well-conditioned
one where it can. The problems come from :mod:`qpcore.testkit.generators` (numpy and scipy only: this
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
from typing import Literal

import numpy as np
import scipy.linalg
from hypothesis import strategies as st
from numpy.typing import NDArray

from qpcore.testkit.generators import (feasible_point, fix_variables, planted_qp, random_box_point, random_box_qp,
                               random_degenerate_qp, random_lowrank_qp, random_nonneg_qp, random_one_sided_qp,
                               random_svm_dual)
from qpcore.linalg.feasible_points import inequality_rows, lp_point
from qpcore.testkit.generators_general import Form, GeneralQP, planted_general_qp
from qpcore.core.problem import QP

FloatArray = NDArray[np.float64]

__all__ = ["box_equality_qps", "box_qps", "general_problems", "general_qps", "lowrank_qps", "nonneg_qps", "planted_qps",
           "qps", "svm_duals",
           "warm_starts"]

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
        Also draw boxes with one side infinite (:func:`qpcore.testkit.generators.random_one_sided_qp`).
    degenerate : bool
        Also draw problems with zero multipliers at active bounds
        (:func:`qpcore.testkit.generators.random_degenerate_qp`).
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

    Mostly true C-SVC duals (c = −1, Q = yyᵀ ∘ K from random points, :func:`qpcore.testkit.generators.random_svm_dual`);
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
    """Nonnegativity QPs with Q = diag(d) + HHᵀ (a :class:`qpcore.backends.lowrank.DiagPlusLowRankQ`).

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
# general QPs: several equality rows, inequality rows l ≤ C x ≤ u

@st.composite
def general_problems(draw: st.DrawFn, *, min_n: int = 2, max_n: int = 16, min_m: int = 0, max_m: int = 4,
                     min_k: int = 0, max_k: int = 8,
                     max_cond: float = 1e8, rank_deficient: bool = True, degenerate: bool = True,
                     duplicates: bool = True, crowded: bool = True, fixed: bool = True, free: bool = True,
                     max_decades: int = 6, planted: bool | None = None) -> GeneralQP:
    """General convex QPs as :class:`qpcore.testkit.generators_general.GeneralQP`: the arrays, the feasible
    point they were drawn around and, when planted, the known optimum with its multipliers.

    Drawn by :func:`qpcore.testkit.generators_general.planted_general_qp`: 0 to ``max_m`` overlapping
    equality rows and 0 to ``max_k`` two-sided inequality rows (one-sided, free and l = u rows
    among them), feasible by construction. Each option below adds a feature to what is drawn; a
    failing example shrinks towards a small, well-scaled, non-degenerate problem.

    Parameters
    ----------
    min_n, max_n : int
        Range of the number of variables (≥ 1).
    min_m, max_m : int
        Range of the number of equality rows (at most n: more would pin the point).
    min_k, max_k : int
        Range of the number of inequality rows (``crowded`` adds rows beyond ``max_k``).
    max_cond : float
        Largest condition number of Q (before scaling).
    rank_deficient : bool
        Also draw singular Q (rank 1 to n − 1).
    degenerate : bool
        Also draw zero multipliers on active bounds and rows (probability 0.5 or 1).
    duplicates : bool
        Also draw duplicated (±1 copies) and dependent rows of A and of C.
    crowded : bool
        Also draw optima with more active constraints than variables.
    fixed, free : bool
        Also draw fixed variables (lb = ub) and free ones (no finite bound).
    max_decades : int
        Row and column scales spread over up to this many decades each (0: unscaled).
    planted : bool, optional
        True: always a known optimum; False: c at random (Q then positive definite); None: either.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of GeneralQP
    """
    _check_range(1.0, max_cond, "cond", 1.0)
    if not (0 <= min_m <= max_m and 0 <= min_k <= max_k):
        raise ValueError(f"rows: need 0 ≤ min_m ≤ max_m and 0 ≤ min_k ≤ max_k, got m in [{min_m}, {max_m}], "
                         f"k in [{min_k}, {max_k}]")
    n = draw(_sizes(max(min_n, min_m), max_n, 1))
    m = draw(st.integers(min_m, min(max_m, n)))
    k = draw(st.integers(min_k, max_k))
    seed = draw(_SEEDS)
    cond = draw(_log_uniform(1.0, max_cond))
    rank = _rank(draw, n, rank_deficient)
    plant = draw(st.booleans()) if planted is None and rank is None else (True if planted is None else planted)
    if not plant and rank is not None:
        raise ValueError("general_problems: planted=False needs rank_deficient=False (a random c on a singular Q "
                         "may leave the problem unbounded)")
    deg = draw(st.sampled_from([0.0, 0.5, 1.0])) if degenerate else 0.0
    dup_m = dep_m = dup_k = dep_k = 0
    if duplicates and m >= 2:
        dup_m = draw(st.integers(0, m - 1))
        dep_m = draw(st.integers(0, m - 1 - dup_m))
    if duplicates and k >= 2:
        dup_k = draw(st.integers(0, k - 1))
        dep_k = draw(st.integers(0, k - 1 - dup_k))
    crowd = draw(st.booleans()) if crowded else False
    fix = draw(st.sampled_from([0.0, 0.1, 0.3])) if fixed else 0.0
    fre = draw(st.sampled_from([0.0, 0.1, 0.3])) if free else 0.0
    p_bound = min(draw(st.sampled_from([0.3, 0.0, 0.6])), 1.0 - fix - fre)
    p_active = draw(st.sampled_from([0.5, 0.0, 1.0]))
    infinite = draw(st.sampled_from([0.2, 0.0, 0.5]))
    equalities = draw(st.sampled_from([0.1, 0.0, 0.3]))
    decades = list(range(max(0, int(max_decades)) + 1))
    row_dec = draw(st.sampled_from(decades))
    col_dec = draw(st.sampled_from(decades))
    return planted_general_qp(n, m, k, seed=seed, cond=cond, rank=rank, p_bound=p_bound, p_active=p_active,
                              degenerate=deg, free=fre, fixed=fix, infinite=infinite, equalities=equalities,
                              duplicate_rows=dup_m, dependent_rows=dep_m, duplicate_ineq=dup_k,
                              dependent_ineq=dep_k, crowded=crowd, row_decades=float(row_dec),
                              col_decades=float(col_dec), planted=plant)


def general_qps(*, form: Form = "auto", min_n: int = 2, max_n: int = 16, min_m: int = 0, max_m: int = 4,
                min_k: int = 0, max_k: int = 8,
                max_cond: float = 1e8, rank_deficient: bool = True, degenerate: bool = True, duplicates: bool = True,
                crowded: bool = True, fixed: bool = True, free: bool = True,
                max_decades: int = 6) -> st.SearchStrategy[QP]:
    """General convex QPs as :class:`qpcore.QP`: :func:`general_problems` built by
    :meth:`~qpcore.testkit.generators_general.GeneralQP.qp` (inequality rows as ``C``, ``l``, ``u`` where
    :class:`qpcore.QP` takes them, else in slack form; ``form`` chooses).

    The options are those of :func:`general_problems` (every feature on by default). Draw
    :func:`general_problems` instead when the test needs the known optimum.

    Returns
    -------
    hypothesis.strategies.SearchStrategy of QP
    """
    return general_problems(min_n=min_n, max_n=max_n, min_m=min_m, max_m=max_m, min_k=min_k, max_k=max_k,
                            max_cond=max_cond,
                            rank_deficient=rank_deficient, degenerate=degenerate, duplicates=duplicates,
                            crowded=crowded, fixed=fixed, free=free, max_decades=max_decades).map(
        lambda p: p.qp(form))


# ---------------------------------------------------------------------------------------------
# warm starts

WarmStartKind = Literal["bounds", "equality", "inequality", "both"]


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


def _rows_scale(C: FloatArray, l: FloatArray, u: FloatArray, x: FloatArray) -> float:
    """The size of C x's terms and of the rows' finite bounds: violations of l ≤ C x ≤ u are judged
    relative to it."""
    ends = np.concatenate([l[np.isfinite(l)], u[np.isfinite(u)]])
    return 1.0 + float(np.abs(ends).max(initial=0.0)) + float((np.abs(C) @ np.abs(x)).max(initial=0.0))


def _row_reach(qp: QP, C: FloatArray, j: int, upper: bool, x: FloatArray) -> FloatArray | None:
    """A point of {box, A x = b} that makes row j of C x largest (``upper``) or smallest, from an LP;
    infinite bounds are replaced by x ± 1e3·(1 + |x|) so that the LP is bounded."""
    reach = 1e3 * (1.0 + np.abs(x))
    lb = np.where(np.isfinite(qp.lb), qp.lb, x - reach)
    ub = np.where(np.isfinite(qp.ub), qp.ub, x + reach)
    none = np.zeros((0, qp.n))
    return lp_point(lb, ub, qp.A, qp.b, none, np.zeros(0), np.zeros(0), -C[j] if upper else C[j])


def _row_sides(C: FloatArray, l: FloatArray, u: FloatArray) -> list[tuple[int, bool]]:
    """Every finite side (row, upper?) of l ≤ C x ≤ u."""
    return [(j, True) for j in np.flatnonzero(np.isfinite(u)).tolist()] + \
        [(j, False) for j in np.flatnonzero(np.isfinite(l)).tolist()]


def _past_side(C: FloatArray, l: FloatArray, u: FloatArray, j: int, upper: bool, v: FloatArray) -> float:
    """How far row j of C v is past the side (positive: violated)."""
    cv = float(C[j] @ v)
    return cv - float(u[j]) if upper else float(l[j]) - cv


def _rows_violable(qp: QP, x: FloatArray) -> bool:
    """Whether a point of {box, A x = b} violates l ≤ C x ≤ u (an LP per side until one does)."""
    C, l, u = inequality_rows(qp)
    floor = 2e-8 * _rows_scale(C, l, u, x)
    for j, upper in _row_sides(C, l, u):
        v = _row_reach(qp, C, j, upper, x)
        if v is not None and _past_side(C, l, u, j, upper, v) > floor:
            return True
    return False


def _off_rows(qp: QP, x: FloatArray, rng: np.random.Generator) -> FloatArray:
    """A point of the box with A x = b (to rounding) that violates a row of l ≤ C x ≤ u by more than
    1e-8 of the size of C x's terms: on the segment from the feasible ``x`` to the LP point that
    pushes a random side of a random row farthest, some 1e-4 to all of the way past that side."""
    C, l, u = inequality_rows(qp)
    sides = _row_sides(C, l, u)
    floor = 1e-8 * _rows_scale(C, l, u, x)
    for i in rng.permutation(len(sides)).tolist():
        j, upper = sides[i]
        v = _row_reach(qp, C, j, upper, x)
        if v is None:
            continue
        past = _past_side(C, l, u, j, upper, v)
        if past <= 2.0 * floor:
            continue
        before = _past_side(C, l, u, j, upper, x)          # ≤ 0: x is feasible
        want = max(float(10.0 ** rng.uniform(-4.0, 0.0)) * past, 2.0 * floor)
        t = min(1.0, (want - before) / (past - before))
        out: FloatArray = np.clip(x + t * (v - x), qp.lb, qp.ub)
        return out
    raise ValueError("warm_starts: no point of the box and A x = b violates l ≤ C x ≤ u")


@st.composite
def warm_starts(draw: st.DrawFn, qp: QP, feasible: bool | None = None, *,
                violate: WarmStartKind | None = None) -> FloatArray:
    """Start points x0 for ``qp``: feasible, outside the bounds, off the equality, or both; off the
    inequality rows.

    The kinds (drawn evenly; a failing example shrinks towards a feasible start):

    - feasible: lb ≤ x0 ≤ ub exactly, A x0 = b and l ≤ C x0 ≤ u to rounding
      (:func:`qpcore.testkit.generators.feasible_point`: sometimes a vertex, sometimes inside);
    - ``"bounds"``: some variables (a tenth, half or all of those with a finite bound; at least
      one) past a finite bound by 1e-6 to 10 times the box width (a unit for a half-open box or a
      fixed variable), A x0 = b restored to rounding by the other variables that the equality
      involves (least squares; they may leave the box too);
    - ``"equality"``: inside the box, A x0 ≠ b (by more than 1e-8 relative to the size of A x's
      terms): part of the way (1e-4 to all of it) from a feasible point to a random point of the
      box;
    - ``"both"``: off the equality, then past the bounds;
    - ``"inequality"`` (a :class:`qpcore.QP` with inequality rows ``C``, ``l``, ``u``): inside the
      box with A x0 = b to rounding, a row of l ≤ C x0 ≤ u violated by more than 1e-8 relative to
      the size of C x0's terms (some 1e-4 to all of the way from a feasible point to the LP point
      of the box and the equality that pushes a random side of a random row farthest). The
      other kinds may violate the rows too. (In slack form the rows are equality rows and their
      bounds are the slacks' bounds: the kinds above cover them.)

    Infeasible kinds that ``qp`` cannot have are not drawn (no equality: none off it; a box that
    the equality cannot move in; rows that no point of the box and the equality violates).

    Parameters
    ----------
    qp : QP
        The problem (at most one equality row for feasible starts is fastest; several, or
        inequality rows, use an LP).
    feasible : bool, optional
        Only feasible starts (True), only infeasible ones (False), or any (None).
    violate : {"bounds", "equality", "inequality", "both"}, optional
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
    if inequality_rows(qp)[0].shape[0] and (violate == "inequality" or (violate is None and feasible is not True)):
        # LPs: only when an infeasible start may be of this kind
        possible["inequality"] = _rows_violable(qp, feasible_point(qp, seed=0, p_bound=1.0))
    if violate is not None:
        if violate not in ("bounds", "equality", "inequality", "both"):
            raise ValueError(f"violate: choose 'bounds', 'equality', 'inequality' or 'both', got {violate!r}")
        if feasible:
            raise ValueError("warm_starts: violate= asks for infeasible starts, but feasible=True")
        if not possible.get(violate, False):
            raise ValueError(f"warm_starts: this problem cannot be violated in the way {violate!r}")
        kinds: list[str] = [violate]
    else:
        kinds = ["feasible"] if feasible is not False else []
        if feasible is not True:
            kinds += [k for k in ("bounds", "equality", "both", "inequality") if possible.get(k, False)]
        if not kinds:
            raise ValueError("warm_starts: feasible=False, but the problem has no constraint to violate")
    kind = draw(st.sampled_from(kinds))
    rng = np.random.default_rng(draw(_SEEDS))
    x = feasible_point(qp, seed=rng, p_bound=float(rng.choice([0.0, 0.3, 1.0])))
    if kind == "inequality":
        x = _off_rows(qp, x, rng)
    if kind in ("equality", "both"):
        x = _off_equality(qp, x, rng)
    if kind in ("bounds", "both"):
        x = _outside_bounds(qp, x, rng, keep_equality=kind == "bounds")
    return x
