"""Random feasible points of a problem, and problems with some of their variables fixed.

:func:`random_box_point` draws a point of a box, :func:`feasible_point` one of the whole feasible
set (box, equality rows and inequality rows), :func:`meet_row` moves a point onto one equality
row along a direction, and :func:`fix_variables` fixes variables (lb = ub) at such a point, which
keeps the problem feasible and a known optimum optimal. The generators of
:mod:`qpcore.testkit.generators` fix variables with these (their ``fixed`` option), and import them
under their old names there too.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.core.problem import QP, ProblemError
from qpcore.core.validate import as_real
from qpcore.linalg.feasible_points import rows_feasible_point

FloatArray = NDArray[np.float64]
Seed = int | np.random.Generator | None

__all__ = ["Seed", "feasible_point", "fix_variables", "meet_row", "random_box_point"]

def _check_fraction(value: float, name: str) -> float:
    """A fraction in [0, 1] (the generators' probabilities), else one line naming it."""
    x = as_real(value, name, low=0.0)
    if x > 1.0:
        raise ProblemError(f"{name}: expected a number in [0, 1], got {value!r}")
    return x


def _fixed_fraction(fixed: float | bool) -> float:
    """``fixed`` as a fraction: False → 0, True → a quarter, else a number in [0, 1]."""
    if isinstance(fixed, (bool, np.bool_)):
        return 0.25 if fixed else 0.0
    return _check_fraction(fixed, "fixed")


def _box_point(lb: FloatArray, ub: FloatArray, rng: np.random.Generator, p_bound: float) -> FloatArray:
    """A random point of the box: each variable at one of its finite bounds with probability
    ``p_bound``, else inside (uniform between two finite bounds, 0.1 to a few units from a single
    finite one, standard normal when free)."""
    n = lb.shape[0]
    has_lb, has_ub = np.isfinite(lb), np.isfinite(ub)
    with np.errstate(invalid="ignore"):   # np.where evaluates inf − inf on the branches it discards
        inside = np.where(has_lb & has_ub, lb + rng.uniform(0.0, 1.0, n) * (ub - lb),
                          np.where(has_lb, lb + 0.1 + np.abs(rng.standard_normal(n)),
                                   np.where(has_ub, ub - 0.1 - np.abs(rng.standard_normal(n)),
                                            rng.standard_normal(n))))
    at_bound = rng.random(n) < p_bound
    lower = np.where(has_lb & has_ub, rng.random(n) < 0.5, has_lb)
    x = np.where(at_bound & lower & has_lb, lb, np.where(at_bound & ~lower & has_ub, ub, inside))
    out: FloatArray = np.clip(x, lb, ub)
    return out


def random_box_point(lb: ArrayLike, ub: ArrayLike, *, seed: Seed, p_bound: float = 0.3) -> FloatArray:
    """A random point of the box [lb, ub] (bounds may be ±inf).

    Each variable sits at one of its finite bounds with probability ``p_bound``; otherwise it is
    inside: uniform between two finite bounds, 0.1 to a few units from a single finite one,
    standard normal when free.

    Parameters
    ----------
    lb, ub : array_like
        Bounds (same length).
    seed : int or numpy.random.Generator
        Random seed.
    p_bound : float
        Probability that a variable sits at a bound.

    Returns
    -------
    ndarray
    """
    lo = np.atleast_1d(np.asarray(lb, dtype=np.float64))
    hi = np.atleast_1d(np.asarray(ub, dtype=np.float64))
    if lo.shape != hi.shape or lo.ndim != 1 or np.any(lo > hi):
        raise ValueError("lb, ub: need two 1-D arrays of the same length with lb ≤ ub")
    return _box_point(lo, hi, np.random.default_rng(seed), _check_fraction(p_bound, "p_bound"))


def meet_row(x0: FloatArray, a: FloatArray, beta: float, lb: FloatArray, ub: FloatArray,
             direction: FloatArray | None = None) -> FloatArray:
    """The point clip(x0 + λd) with aᵀx = β, d = ``direction`` (default a; any d with d_i a_i ≥ 0).

    λ by bisection (aᵀclip(x0 + λd) is nondecreasing in λ), then interpolation between the
    bracketing points: exact to rounding. Raises ValueError when β is out of reach along d.
    """
    d = a if direction is None else direction

    def at(lam: float) -> FloatArray:
        v: FloatArray = np.clip(x0 + lam * d, lb, ub)
        return v

    def phi(lam: float) -> float:
        return float(a @ at(lam)) - beta

    f0 = phi(0.0)
    if f0 == 0.0:
        return at(0.0)
    far = (-1.0 if f0 > 0 else 1.0) * (1.0 + float(np.abs(x0).max(initial=0.0))) / max(float(np.abs(d).max()), 1e-300)
    for _ in range(200):
        f = phi(far)
        if (f > 0) != (f0 > 0) or f == 0.0:
            break
        v = at(far)
        if abs(f) <= 1e-12 * (1.0 + abs(beta) + float(np.abs(a) @ np.abs(v))):
            # β at the edge of aᵀx's range (a vertex of the row), missed by rounding: the
            # saturated point is as close as floating point gets (QP allows this slack too)
            return v
        far *= 2.0
    else:
        raise ValueError("feasible_point: A x = b is out of the box's reach")
    lo, hi = (far, 0.0) if far < 0 else (0.0, far)
    for _ in range(1100):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if phi(mid) > 0:
            hi = mid
        else:
            lo = mid
    # interpolate between the bracketing points (φ is linear between nearby breakpoints)
    xl, xh = at(lo), at(hi)
    fl, fh = float(a @ xl) - beta, float(a @ xh) - beta
    w = 0.0 if fh == fl else fh / (fh - fl)
    out: FloatArray = np.clip(w * xl + (1.0 - w) * xh, lb, ub)
    return out


def feasible_point(qp: QP, *, seed: Seed, p_bound: float = 0.3) -> FloatArray:
    """A random point of {lb ≤ x ≤ ub, A x = b} (and l ≤ C x ≤ u), exact to rounding.

    A random point of the box (each variable at a finite bound with probability ``p_bound``),
    moved onto the equality: for one row the projection-like path clip(x + λa) (variables that
    reach a bound stay there), for several rows a vertex of the feasible set from scipy's HiGHS
    (with a random objective). With inequality rows: such a vertex with probability ``p_bound``,
    else a random point of the segment between two of them (feasible by convexity).

    Parameters
    ----------
    qp : QP
        The problem (any number of equality rows, inequality rows where :class:`QP` has them).
    seed : int or numpy.random.Generator
        Random seed.
    p_bound : float
        Probability that a variable starts at one of its finite bounds.

    Returns
    -------
    ndarray
        x with lb ≤ x ≤ ub exactly and ‖Ax − b‖ at the rounding level.
    """
    p_bound = _check_fraction(p_bound, "p_bound")
    rng = np.random.default_rng(seed)
    if qp.k:
        return rows_feasible_point(qp, rng, p_bound)
    x = _box_point(qp.lb, qp.ub, rng, p_bound)
    if qp.m == 0:
        return x
    if qp.m == 1:
        return meet_row(x, qp.A[0], float(qp.b[0]), qp.lb, qp.ub)
    import scipy.optimize

    bounds = [(lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None)
              for lo, hi in zip(qp.lb.tolist(), qp.ub.tolist())]
    lp = scipy.optimize.linprog(rng.standard_normal(qp.n) * (np.isfinite(qp.lb) & np.isfinite(qp.ub)),
                                A_eq=qp.A, b_eq=qp.b, bounds=bounds, method="highs")
    if lp.status != 0:
        raise ValueError(f"feasible_point: the LP solver found no feasible point ({lp.message})")
    out: FloatArray = np.clip(np.asarray(lp.x, dtype=np.float64), qp.lb, qp.ub)
    return out


def _fix_at(qp: QP, point: FloatArray, fraction: float, rng: np.random.Generator) -> QP:
    """``qp`` with ``max(1, round(fraction·n))`` random variables (none for 0) fixed at ``point``.

    Where rounding puts b just outside the range of A x over the new box (the sums of the fixed
    values come out an ulp off; likeliest when all are fixed), fixed variables that the equality
    involves are released one at a time until :class:`QP` accepts the problem.
    """
    n = qp.n
    if fraction <= 0.0:
        return qp
    k = min(n, max(1, int(round(fraction * n))))
    idx = [int(i) for i in rng.choice(n, size=k, replace=False)]
    while True:
        lb, ub = qp.lb.copy(), qp.ub.copy()
        lb[idx] = ub[idx] = np.clip(point[idx], qp.lb[idx], qp.ub[idx])
        try:
            if qp.m:
                return QP(qp.Q, qp.c, lb, ub, qp.A, qp.b)
            return QP(qp.Q, qp.c, lb, ub)
        except ProblemError:
            involved = [i for i in idx if qp.A[:, i].any() and qp.lb[i] < qp.ub[i]]
            if not involved:
                raise
            idx.remove(involved[int(rng.integers(len(involved)))])


def fix_variables(qp: QP, fixed: float | bool = True, *, seed: Seed, point: ArrayLike | None = None) -> QP:
    """Fix some variables of ``qp`` (lb = ub) at their values in a feasible point.

    Fixing at a feasible point keeps the problem feasible (the point stays feasible), and keeps
    an optimal point optimal (a fixed variable's multiplier is free). Q, c, A and b are shared.

    Parameters
    ----------
    qp : QP
        The problem.
    fixed : float or bool
        Fraction of the variables to fix: ``max(1, round(fixed·n))`` of them, chosen at random
        (none for 0 or False; True: a quarter; 1: all).
    seed : int or numpy.random.Generator
        Random seed.
    point : array_like, optional
        A feasible point (default: :func:`feasible_point`, at least one row: bisection; several:
        an LP vertex). Its values are clipped to the box.

    Returns
    -------
    QP
    """
    fraction = _fixed_fraction(fixed)
    rng = np.random.default_rng(seed)
    if fraction <= 0.0:
        return qp
    x = feasible_point(qp, seed=rng) if point is None else np.asarray(point, dtype=np.float64)
    if x.shape != (qp.n,):
        raise ValueError(f"point: expected shape ({qp.n},), got {x.shape}")
    return _fix_at(qp, x, fraction, rng)
