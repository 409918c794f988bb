"""KKT certificates computed from the problem alone, never trusted from a strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.vectors import DistributedOperator
from qpcore.core.optimality import (DEFAULT_FEAS_TOL, bound_violation, feasibility_scale, pair_gap, primal_violation,
                               scores, scores_of, single_violation)

if TYPE_CHECKING:
    from qpcore.core.problem import QP

__all__ = ["BOUND_BAND", "KKT", "at_bounds", "band_complementarity", "box_terms", "estimate_multipliers", "kkt",
           "row_scale", "rows_at_bounds"]

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: A variable within ``BOUND_BAND · max(1, |bound|)`` of a finite bound counts as at it, so that the
#: certificate does not jump when a variable is lifted off its bound by rounding (another solver's
#: optimum, an interior point's last iterate, noise). What such a variable contributes instead is
#: its complementarity, ``min(|z_i|, |z_i| · distance)`` for a multiplier of the bound's sign (a
#: wrong sign counts in full), folded into the measure: a point a rounding away from an optimum
#: certifies, one moved off a bound whose multiplier is z by more than tol/|z| does not, and
#: beyond the band the variable is free and its |z_i| counts.
BOUND_BAND = 1e-8


def at_bounds(x: FloatArray, lb: FloatArray, ub: FloatArray,
              scale: tuple[FloatArray, FloatArray] | None = None) -> tuple[BoolArray, BoolArray]:
    """Which variables the certificate counts at their lower and upper bounds.

    Within ``BOUND_BAND · max(1, |bound|)`` of a finite bound, or beyond it (an infeasible point's
    violation is the primal residual's business). A fixed variable (lb = ub) is at both.

    Parameters
    ----------
    x, lb, ub : ndarray
        The point and its bounds.
    scale : (ndarray, ndarray), optional
        Each variable's own magnitude at its lower and upper bound, replacing ``max(1, |bound|)``
        where not NaN: an inequality row's slack s = Cx is measured against the row's own size,
        ``max(|side|, Σ_j |C_kj x_j|, max_j |C_kj| · max(1, ‖x‖∞))``, so that scaling a row does not
        change the verdict.

    Returns
    -------
    (ndarray of bool, ndarray of bool)
    """
    lo_scale, hi_scale = np.maximum(1.0, np.abs(lb)), np.maximum(1.0, np.abs(ub))
    if scale is not None:
        lo_scale = np.where(np.isnan(scale[0]), lo_scale, scale[0])
        hi_scale = np.where(np.isnan(scale[1]), hi_scale, scale[1])
    with np.errstate(invalid="ignore"):
        # an infinite bound is never reached (inf ≤ inf would count every such variable at it)
        at_lo = np.isfinite(lb) & (x - lb <= BOUND_BAND * lo_scale)
        at_hi = np.isfinite(ub) & (ub - x <= BOUND_BAND * hi_scale)
    return at_lo, at_hi


def row_scale(qp: QP, x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The size each inequality row's slack s = Cx is measured against, at its lower and upper side.

    ``max(|side|, Σ_j |C_kj x_j|, max_j |C_kj| · max(1, ‖x‖∞))``: the row's terms, its side, and
    what a unit move of the variables moves it by, so that scaling a row does not change which
    rows :func:`at_bounds` counts active.

    Parameters
    ----------
    qp : QP
        The problem (k inequality rows).
    x : ndarray
        The point.

    Returns
    -------
    (ndarray, ndarray)
        Length k each.
    """
    absC = np.abs(qp.C)
    terms = np.maximum(absC @ np.abs(x), absC.max(axis=1, initial=0.0) * max(1.0, float(np.abs(x).max(initial=0.0))))
    with np.errstate(invalid="ignore"):
        return np.maximum(terms, np.abs(qp.l)), np.maximum(terms, np.abs(qp.u))


def rows_at_bounds(qp: QP, x: FloatArray) -> tuple[BoolArray, BoolArray]:
    """Which inequality rows the certificate counts at their lower and upper sides (:func:`at_bounds`
    of s = Cx at :func:`row_scale`).

    Parameters
    ----------
    qp : QP
        The problem.
    x : ndarray
        The point.

    Returns
    -------
    (ndarray of bool, ndarray of bool)
    """
    return at_bounds(qp.C @ x, qp.l, qp.u, row_scale(qp, x))


def band_complementarity(x: FloatArray, r: FloatArray, lb: FloatArray, ub: FloatArray, at_lo: BoolArray,
                         at_hi: BoolArray, rounding: FloatArray | float = 0.0) -> float:
    """The largest ``min(|r_i|, |r_i| · distance)`` over the variables counted at a bound they are off
    (:func:`at_bounds`), for a reduced gradient of the bound's sign; 0 for an empty vector.

    Parameters
    ----------
    x, r, lb, ub : ndarray
        The point, its reduced gradient g − Aᵀλ (− Cᵀy) and the bounds.
    at_lo, at_hi : ndarray of bool
        :func:`at_bounds` of the point.
    rounding : ndarray or float
        Distances that are rounding and count as 0 (an inequality row's slack Cx is computed with
        an error of a few ulps of its terms, which times a large multiplier is not a violation).

    Returns
    -------
    float
    """
    with np.errstate(invalid="ignore"):
        d_lo = np.where(at_lo, np.maximum(x - lb - rounding, 0.0), 0.0)
        d_hi = np.where(at_hi, np.maximum(ub - x - rounding, 0.0), 0.0)
    zl, zu = np.maximum(r, 0.0), np.maximum(-r, 0.0)
    term = np.maximum(np.minimum(zl, zl * d_lo), np.minimum(zu, zu * d_hi))
    return float(term.max(initial=0.0))


@attrs.frozen
class KKT:
    """A KKT certificate of a point.

    Attributes
    ----------
    primal : float
        Largest violation of the bounds, of A x = b or of l ≤ C x ≤ u (∞-norm, absolute).
    stationarity : float
        ∞-norm of the projected reduced gradient P(g − Aᵀλ − Cᵀy) with the best multipliers (or the
        proposed ones, verified), together with the sign violations of y. A variable within
        :data:`BOUND_BAND` (relative) of a bound counts at it (:func:`at_bounds`) and contributes its
        complementarity instead (:func:`band_complementarity`), so the measure does not jump when
        rounding lifts a variable off its bound.
    complementarity : float
        max_i |z_i| · distance of x_i to the bound that z_i belongs to (finite bounds only).
    gap : float
        For one equality row: the maximal-violating-pair gap m(x) − M(x) (LIBSVM's stopping
        measure; ≤ 0 at an exact optimum; bounds identified by :func:`at_bounds`, and the
        band's complementarity where larger), combined with the projected gradient of variables
        outside the equality (a_i = 0); for several disjoint groups the largest gap over the
        groups (LIBSVM's Solver_NU). For no equality or general rows: equals ``stationarity``.
    measure : float
        The stopping measure that ``tol`` bounds (a property): ``max(gap, 0)`` when the rows are
        disjoint groups (``paired``), else ``stationarity``. A run is ``converged`` when it is
        ≤ tol and the point is feasible (:meth:`ok`); the number to print or compare after a solve.
    multipliers : ndarray
        Equality multipliers λ (length m): for an SVM dual, λ = rho = −bias; one per group for
        disjoint groups.
    z : ndarray
        Reduced gradient g − Aᵀλ − Cᵀy: bound multipliers, ≥ 0 at a lower bound, ≤ 0 at an upper
        one.
    primal_scale : float
        The scale the feasibility tolerance is relative to
        (:func:`qpcore.core.optimality.feasibility_scale`: max(1, ‖x‖∞, ‖b‖∞, max_k Σ|A_ki x_i|)).
    lower_bound : float
        A lower bound on the optimal value, from a primal point the strategy proposed
        (:func:`qpcore.core.optimality.lagrangian_bound`); NaN when there is none. For the hinge-loss
        SVM dual it is −F(w), minus the primal objective at w.
    duality_gap : float
        f(x) − ``lower_bound`` ≥ 0: how far x, and the primal point, are from optimal at most
        (the cutting planes' stopping measure); NaN when there is no bound.
    """

    primal: float
    stationarity: float
    complementarity: float
    gap: float
    multipliers: FloatArray
    z: FloatArray
    primal_scale: float = 1.0
    lower_bound: float = float("nan")
    duality_gap: float = float("nan")
    paired: bool = False
    """Whether the rows are disjoint groups (m ≥ 1), so that :attr:`measure` is the pair gap."""
    y: FloatArray = attrs.field(factory=lambda: np.zeros(0))
    """Multipliers of the inequality rows l ≤ C x ≤ u (length k): ≥ 0 where C x = l, ≤ 0 where
    C x = u, 0 on inactive rows; their sign violations count in ``stationarity``."""

    def __repr__(self) -> str:
        return (f"KKT(primal={self.primal:.3g}, stationarity={self.stationarity:.3g}, "
                f"complementarity={self.complementarity:.3g}, measure={self.measure:.3g}, "
                f"multipliers: {self.multipliers.size} + {self.y.size} rows, z: {self.z.size})")

    def relative_gap(self) -> float:
        """``duality_gap / max(|lower_bound|, tiny)``: libocas's TolRel measure (NaN without a bound)."""
        return float(self.duality_gap / max(abs(self.lower_bound), np.finfo(float).tiny))

    @property
    def measure(self) -> float:
        """The stopping measure compared with ``tol``: the (largest group's) pair gap when the rows are
        disjoint groups, else the stationarity with the best multipliers."""
        return max(self.gap, 0.0) if self.paired else self.stationarity

    def feasible(self, feas_tol: float = DEFAULT_FEAS_TOL) -> bool:
        """Whether ``primal ≤ feas_tol · primal_scale`` (feasible to a relative tolerance)."""
        return self.primal <= feas_tol * self.primal_scale

    def ok(self, tol: float, feas_tol: float = DEFAULT_FEAS_TOL) -> bool:
        """Whether the point is optimal to ``tol`` (absolute, on :attr:`measure`) and feasible to
        ``feas_tol`` relative to :attr:`primal_scale` (see :meth:`feasible`)."""
        return self.measure <= tol and self.feasible(feas_tol)


def _one_row_multiplier(a: FloatArray, x: FloatArray, g: FloatArray, lb: FloatArray, ub: FloatArray,
                        at: tuple[BoolArray, BoolArray]) -> float:
    # the mean of g_i / a_i over free variables of the row (LIBSVM's rho), else the midpoint of
    # the interval stationarity allows: max_up v ≤ −λ ≤ min_low v; bounds identified by at_bounds
    at_lo, at_hi = at
    inside = a != 0
    free = ~at_lo & ~at_hi & inside
    if free.any():
        return float(np.mean(g[free] / a[free]))
    up, low = _direction_masks(a, at_lo, at_hi)
    pu, pl = up & inside, low & inside
    v = np.where(inside, -g / np.where(inside, a, 1.0), 0.0)
    lo = -float(v[pl].min()) if pl.any() else -np.inf
    hi = -float(v[pu].max()) if pu.any() else np.inf
    if np.isfinite(lo) and np.isfinite(hi):
        return 0.5 * (lo + hi)
    return lo if np.isfinite(lo) else (hi if np.isfinite(hi) else 0.0)


def _direction_masks(a: FloatArray, at_lo: BoolArray, at_hi: BoolArray) -> tuple[BoolArray, BoolArray]:
    """``up``/``low`` of :mod:`qpcore.core.optimality` (may move along ±e_i/a_i; single variables: may
    increase/decrease) with the bounds identified by :func:`at_bounds`."""
    inc, dec = ~at_hi, ~at_lo
    up = np.where(a < 0, dec, inc)
    low = np.where(a < 0, inc, dec)
    return up, low


def _best_multipliers_lp(qp: QP, x: FloatArray, g: FloatArray, at: tuple[BoolArray, BoolArray]) -> FloatArray | None:
    """λ minimizing ‖P(g − Aᵀλ)‖∞ exactly: a linear program in (λ, t), m + 1 variables.

    Each free variable bounds |r_i| ≤ t, one at its lower bound r_i ≥ −t, one at its upper bound
    r_i ≤ t (r = g − Aᵀλ); fixed variables bound nothing. None when the solver fails.
    """
    from scipy.optimize import linprog

    A, m = qp.A, qp.m
    at_lo, at_hi = at
    inc, dec = ~at_hi, ~at_lo
    # r_i ≤ t where x_i may decrease (free or at ub): g_i − a_iᵀλ − t ≤ 0
    # −r_i ≤ t where x_i may increase (free or at lb): −g_i + a_iᵀλ − t ≤ 0
    up_rows, lo_rows = np.flatnonzero(dec), np.flatnonzero(inc)
    if up_rows.size + lo_rows.size == 0:
        return np.zeros(m)
    G = np.vstack([np.hstack([-A[:, up_rows].T, -np.ones((up_rows.size, 1))]),
                   np.hstack([A[:, lo_rows].T, -np.ones((lo_rows.size, 1))])])
    h = np.concatenate([-g[up_rows], g[lo_rows]])
    cost = np.zeros(m + 1)
    cost[-1] = 1.0
    # tight tolerances: a borderline point of a badly scaled problem is judged on the exact optimum
    res = linprog(cost, A_ub=G, b_ub=h, bounds=[(None, None)] * m + [(0, None)], method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:
        return None
    return np.asarray(res.x[:m], dtype=np.float64)


def estimate_multipliers(qp: QP, x: FloatArray, g: FloatArray,
                         at: tuple[BoolArray, BoolArray] | None = None) -> FloatArray:
    """Equality multipliers λ from the gradient.

    One row, or disjoint groups, row by row: the mean of g_i/a_i over the free variables
    (LIBSVM's rho), else the midpoint of the interval stationarity allows. General rows: least
    squares on the free variables; when that leaves a projected reduced gradient above rounding
    (too few free variables to fix λ, or a degenerate point), the exact minimizer of
    ‖P(g − Aᵀλ)‖∞ by a small linear program.

    Parameters
    ----------
    qp : QP
        The problem.
    x, g : ndarray
        The point and its gradient.
    at : (ndarray of bool, ndarray of bool), optional
        The bounds identified (:func:`at_bounds`); computed when omitted.

    Returns
    -------
    ndarray
        λ, length m.
    """
    m = qp.m
    if m == 0:
        return np.zeros(0)
    if at is None:
        at = at_bounds(x, qp.lb, qp.ub)
    eq = qp.equality
    if eq.kind == "groups":
        lam = np.zeros(m)
        for k in range(m):
            idx = eq.members(k)
            if idx.size:
                lam[k] = _one_row_multiplier(eq.coef[idx], x[idx], g[idx], qp.lb[idx], qp.ub[idx],
                                             (at[0][idx], at[1][idx]))
        return lam
    at_lo, at_hi = at
    free = ~at_lo & ~at_hi
    Af = qp.A[:, free]
    lam = np.zeros(m)
    if Af.shape[1]:
        lam = np.asarray(np.linalg.lstsq(Af.T, g[free], rcond=None)[0], dtype=np.float64)
    r = g - qp.A.T @ lam
    stat = _stationarity(x, r, at_lo, at_hi)
    scale = max(1.0, float(np.abs(g).max(initial=0.0)))
    if stat > 1e-12 * scale:
        better = _best_multipliers_lp(qp, x, g, at)
        if better is not None:
            r2 = g - qp.A.T @ better
            if _stationarity(x, r2, at_lo, at_hi) < stat:
                lam = better
    return lam


def _stationarity(x: FloatArray, r: FloatArray, at_lo: BoolArray, at_hi: BoolArray) -> float:
    """‖P(r)‖∞ over the tangent cone of the bounds that :func:`at_bounds` identified."""
    pg = np.where(at_lo, np.minimum(r, 0.0), r)
    pg = np.where(at_hi, np.where(at_lo, 0.0, np.maximum(r, 0.0)), pg)
    return float(np.abs(pg).max(initial=0.0))


def box_terms(x: FloatArray, r: FloatArray, lb: FloatArray, ub: FloatArray,
              at: tuple[BoolArray, BoolArray] | None = None,
              rounding: FloatArray | float = 0.0) -> tuple[float, float, float, float]:
    """The certificate's per-element terms over a box, for a reduced gradient r = g − Aᵀλ.

    Parameters
    ----------
    x, r, lb, ub : ndarray
        The point, its reduced gradient and the bounds.
    at : (ndarray of bool, ndarray of bool), optional
        The bounds identified (:func:`at_bounds`), when the caller has them.
    rounding : ndarray or float
        Distances that count as 0 in :func:`band_complementarity`.

    Returns
    -------
    (violation, stationarity, complementarity, xmax)
        The bound violation, the stationarity (‖P(r)‖∞, the projected gradient with the bounds
        identified by :func:`at_bounds`, or :func:`band_complementarity` where larger),
        max_i |z_i|·(distance of x_i to the bound z_i belongs to) and ‖x‖∞; all 0 for empty
        vectors. :func:`kkt` and a
        distributed operator's ``kkt_terms`` (per chunk, then the max) both use it.
    """
    at_lo, at_hi = at_bounds(x, lb, ub) if at is None else at
    stationarity = max(_stationarity(x, r, at_lo, at_hi), band_complementarity(x, r, lb, ub, at_lo, at_hi, rounding))
    zl, zu = np.maximum(r, 0.0), np.maximum(-r, 0.0)
    # a multiplier on an infinite bound is a stationarity violation, already counted there
    dl = np.where(np.isfinite(lb), x - lb, 0.0)
    du = np.where(np.isfinite(ub), ub - x, 0.0)
    comp = float(np.maximum(zl * np.abs(dl), zu * np.abs(du)).max(initial=0.0))
    return bound_violation(x, lb, ub), stationarity, comp, float(np.abs(x).max(initial=0.0))


def kkt(qp: QP, x: FloatArray, g: FloatArray | None = None,
        multipliers: tuple[FloatArray, FloatArray | None] | None = None) -> KKT:
    """The KKT certificate of ``x`` for ``qp``.

    Parameters
    ----------
    qp : QP
        The problem.
    x : ndarray
        The point.
    g : ndarray, optional
        Its gradient Qx + c; computed from the problem (one matvec) when omitted, which is
        what an honest certificate does.
    multipliers : (ndarray, ndarray or None), optional
        Proposed multipliers (λ for A x = b, y for l ≤ C x ≤ u; e.g. a strategy's own). They are
        verified, not trusted: the stationarity is measured with them (any multipliers bound the
        best one from above), and the search for the best multipliers is skipped. Without a
        proposal the certificate finds them itself (:func:`estimate_multipliers`).

    Returns
    -------
    KKT
        In the user's terms: with inequality rows, ``primal`` includes their violation,
        ``multipliers`` are λ, ``y`` the rows' multipliers and ``z`` the bound multipliers of x.
    """
    if isinstance(qp.Q, DistributedOperator):
        # rows held elsewhere (no equality rows): the same terms (box_terms), computed where they are
        if g is None:
            g = qp.gradient(x)
        primal, stat, comp, xmax = qp.Q.kkt_terms(qp, x, g)
        return KKT(primal=primal, stationarity=stat, complementarity=comp, gap=stat, multipliers=np.zeros(0), z=g,
                   primal_scale=max(1.0, xmax))
    x = np.asarray(x, dtype=np.float64)
    if g is None:
        g = qp.gradient(x)
    if qp.k:
        # the slack form at s = Cx: its rows C x − s = 0 hold exactly, the slacks' bounds are the
        # rows' bounds, and the slacks' reduced gradients are y
        form = qp.slack_form()
        proposal = None
        if multipliers is not None:
            lam0, y0 = multipliers
            proposal = (np.concatenate([np.asarray(lam0, dtype=np.float64).reshape(-1),
                                        np.zeros(qp.k) if y0 is None else np.asarray(y0, dtype=np.float64)]), None)
        keep = np.full(qp.n, np.nan)
        lo, hi = row_scale(qp, x)
        scale = (np.concatenate([keep, lo]), np.concatenate([keep, hi]))
        cert = _kkt(form.qp, form.lift(x), np.concatenate([g, np.zeros(qp.k)]), proposal, scale)
        lam, y = form.split(cert.multipliers)
        # the user's rows are not an SVM's groups: the measure is the stationarity
        return attrs.evolve(cert, multipliers=lam, y=y, z=cert.z[:qp.n], gap=cert.stationarity, paired=False)
    return _kkt(qp, x, g, multipliers, None)


def _kkt(qp: QP, x: FloatArray, g: FloatArray, multipliers: tuple[FloatArray, FloatArray | None] | None,
         scale: tuple[FloatArray, FloatArray] | None) -> KKT:
    """:func:`kkt` of a problem without inequality rows, the bounds identified at ``scale``."""
    primal = primal_violation(qp, x)
    at = at_bounds(x, qp.lb, qp.ub, scale)
    # a row's slack carries the rounding of its terms (ulps of the row's size)
    rounding: FloatArray | float = 0.0
    if scale is not None:
        size = np.fmax(np.nan_to_num(scale[0], nan=0.0, posinf=0.0), np.nan_to_num(scale[1], nan=0.0, posinf=0.0))
        rounding = 8.0 * np.finfo(np.float64).eps * size
    if multipliers is not None and qp.m:
        lam = np.asarray(multipliers[0], dtype=np.float64).reshape(-1)
        if lam.shape != (qp.m,) or not np.isfinite(lam).all():
            lam = estimate_multipliers(qp, x, g, at)
    else:
        lam = estimate_multipliers(qp, x, g, at)
    r = g - qp.A.T @ lam if qp.m else g.copy()
    _, stationarity, comp, _ = box_terms(x, r, qp.lb, qp.ub, at, rounding)
    paired = qp.equality.kind == "groups"
    if paired:
        # the pair gap (LIBSVM's measure) over the bounds at_bounds identifies, so a variable lifted
        # off its bound by rounding does not count as free; its complementarity counts instead
        at_lo, at_hi = at
        up, low = _direction_masks(qp.equality.coef, at_lo, at_hi)
        s = attrs.evolve(scores_of(qp, x, g), up=up, low=low)
        gap = pair_gap(s)              # may be negative: the optimum's slack
        if s.single is not None:
            gap = max(gap, single_violation(s))
        if not np.isfinite(gap):
            gap = 0.0
        lifted = band_complementarity(x, r, qp.lb, qp.ub, at_lo, at_hi, rounding)
        if lifted > 0.0:
            gap = max(gap, lifted)
    else:
        gap = stationarity
    return KKT(primal=primal, stationarity=stationarity, complementarity=comp, gap=float(gap),
               multipliers=lam, z=r, primal_scale=feasibility_scale(qp, x), paired=paired)
