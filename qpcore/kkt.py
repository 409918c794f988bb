"""KKT certificates computed from the problem alone, never trusted from a strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.vectors import DistributedOperator
from qpcore.optimality import (DEFAULT_FEAS_TOL, bound_violation, feasibility_scale, pair_gap, primal_violation,
                               scores, scores_of, single_violation)

if TYPE_CHECKING:
    from qpcore.problem import QP

__all__ = ["BOUND_BAND", "KKT", "at_bounds", "box_terms", "estimate_multipliers", "kkt"]

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

#: A variable within ``BOUND_BAND · max(1, |bound|)`` of a finite bound counts as at it in the
#: stationarity measure, so that the certificate does not jump when a variable is lifted off its
#: bound by rounding (another solver's optimum, noise): the measure is the same for x and for the
#: point with those variables moved onto their bounds, and the distance they moved is reported as
#: complementarity, never hidden. The same relative size as the feasibility tolerance.
BOUND_BAND = DEFAULT_FEAS_TOL


def at_bounds(x: FloatArray, lb: FloatArray, ub: FloatArray) -> tuple[BoolArray, BoolArray]:
    """Which variables the certificate counts at their lower and upper bounds.

    Within ``BOUND_BAND · max(1, |bound|)`` of a finite bound, or beyond it (an infeasible point's
    violation is the primal residual's business). A fixed variable (lb = ub) is at both.

    Parameters
    ----------
    x, lb, ub : ndarray
        The point and its bounds.

    Returns
    -------
    (ndarray of bool, ndarray of bool)
    """
    with np.errstate(invalid="ignore"):
        # an infinite bound is never reached (inf ≤ inf would count every such variable at it)
        at_lo = np.isfinite(lb) & (x - lb <= BOUND_BAND * np.maximum(1.0, np.abs(lb)))
        at_hi = np.isfinite(ub) & (ub - x <= BOUND_BAND * np.maximum(1.0, np.abs(ub)))
    return at_lo, at_hi


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
        :data:`BOUND_BAND` (relative) of a bound counts at it (:func:`at_bounds`), so the measure is
        continuous under rounding-size moves off a bound.
    complementarity : float
        max_i |z_i| · distance of x_i to the bound that z_i belongs to (finite bounds only).
    gap : float
        For one equality row: the maximal-violating-pair gap m(x) − M(x) (LIBSVM's stopping
        measure; ≤ 0 at an exact optimum), combined with the projected gradient of variables
        outside the equality (a_i = 0); for several disjoint groups the largest gap over the
        groups (LIBSVM's Solver_NU). For no equality or general rows: equals ``stationarity``.
    multipliers : ndarray
        Equality multipliers λ (length m): for an SVM dual, λ = rho = −bias; one per group for
        disjoint groups.
    z : ndarray
        Reduced gradient g − Aᵀλ − Cᵀy: bound multipliers, ≥ 0 at a lower bound, ≤ 0 at an upper
        one.
    primal_scale : float
        The scale the feasibility tolerance is relative to
        (:func:`qpcore.optimality.feasibility_scale`: max(1, ‖x‖∞, ‖b‖∞, max_k Σ|A_ki x_i|)).
    lower_bound : float
        A lower bound on the optimal value, from a primal point the strategy proposed
        (:func:`qpcore.optimality.lagrangian_bound`); NaN when there is none. For the hinge-loss
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


def _one_row_multiplier(a: FloatArray, x: FloatArray, g: FloatArray, lb: FloatArray, ub: FloatArray) -> float:
    # the mean of g_i / a_i over free variables of the row (LIBSVM's rho), else the midpoint of
    # the interval stationarity allows: max_up v ≤ −λ ≤ min_low v
    free = (x < ub) & (x > lb) & (a != 0)
    if free.any():
        return float(np.mean(g[free] / a[free]))
    s = scores(x, g, lb, ub, a)
    pu, pl = s.pair_masks()
    lo = -float(s.v[pl].min()) if pl.any() else -np.inf
    hi = -float(s.v[pu].max()) if pu.any() else np.inf
    if np.isfinite(lo) and np.isfinite(hi):
        return 0.5 * (lo + hi)
    return lo if np.isfinite(lo) else (hi if np.isfinite(hi) else 0.0)


def _best_multipliers_lp(qp: QP, x: FloatArray, g: FloatArray) -> FloatArray | None:
    """λ minimizing ‖P(g − Aᵀλ)‖∞ exactly: a linear program in (λ, t), m + 1 variables.

    Each free variable bounds |r_i| ≤ t, one at its lower bound r_i ≥ −t, one at its upper bound
    r_i ≤ t (r = g − Aᵀλ); fixed variables bound nothing. None when the solver fails.
    """
    from scipy.optimize import linprog

    A, m = qp.A, qp.m
    at_lo, at_hi = at_bounds(x, qp.lb, qp.ub)
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
    res = linprog(cost, A_ub=G, b_ub=h, bounds=[(None, None)] * m + [(0, None)], method="highs")
    if res.status != 0:
        return None
    return np.asarray(res.x[:m], dtype=np.float64)


def estimate_multipliers(qp: QP, x: FloatArray, g: FloatArray) -> FloatArray:
    """Equality multipliers λ from the gradient.

    One row, or disjoint groups, row by row: the mean of g_i/a_i over the free variables
    (LIBSVM's rho), else the midpoint of the interval stationarity allows. General rows: least
    squares on the free variables; when that leaves a projected reduced gradient above rounding
    (too few free variables to fix λ, or a degenerate point), the exact minimizer of
    ‖P(g − Aᵀλ)‖∞ by a small linear program.
    """
    m = qp.m
    if m == 0:
        return np.zeros(0)
    eq = qp.equality
    if eq.kind == "groups":
        lam = np.zeros(m)
        for k in range(m):
            idx = eq.members(k)
            if idx.size:
                lam[k] = _one_row_multiplier(eq.coef[idx], x[idx], g[idx], qp.lb[idx], qp.ub[idx])
        return lam
    at_lo, at_hi = at_bounds(x, qp.lb, qp.ub)
    free = ~at_lo & ~at_hi
    Af = qp.A[:, free]
    lam = np.zeros(m)
    if Af.shape[1]:
        lam = np.asarray(np.linalg.lstsq(Af.T, g[free], rcond=None)[0], dtype=np.float64)
    r = g - qp.A.T @ lam
    stat = _stationarity(x, r, at_lo, at_hi)
    scale = max(1.0, float(np.abs(g).max(initial=0.0)))
    if stat > 1e-12 * scale:
        better = _best_multipliers_lp(qp, x, g)
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


def box_terms(x: FloatArray, r: FloatArray, lb: FloatArray, ub: FloatArray) -> tuple[float, float, float, float]:
    """The certificate's per-element terms over a box, for a reduced gradient r = g − Aᵀλ.

    Returns
    -------
    (violation, stationarity, complementarity, xmax)
        The bound violation, ‖P(r)‖∞ (the projected gradient, bounds identified by
        :func:`at_bounds`), max_i |z_i|·(distance of x_i to the bound z_i belongs to) and ‖x‖∞;
        all 0 for empty vectors. :func:`kkt` and a
        distributed operator's ``kkt_terms`` (per chunk, then the max) both use it.
    """
    at_lo, at_hi = at_bounds(x, lb, ub)
    stationarity = _stationarity(x, r, at_lo, at_hi)
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
        cert = kkt(form.qp, form.lift(x), np.concatenate([g, np.zeros(qp.k)]), proposal)
        lam, y = form.split(cert.multipliers)
        # the user's rows are not an SVM's groups: the measure is the stationarity
        return attrs.evolve(cert, multipliers=lam, y=y, z=cert.z[:qp.n], gap=cert.stationarity, paired=False)
    primal = primal_violation(qp, x)
    if multipliers is not None and qp.m:
        lam = np.asarray(multipliers[0], dtype=np.float64).reshape(-1)
        if lam.shape != (qp.m,) or not np.isfinite(lam).all():
            lam = estimate_multipliers(qp, x, g)
    else:
        lam = estimate_multipliers(qp, x, g)
    r = g - qp.A.T @ lam if qp.m else g.copy()
    _, stationarity, comp, _ = box_terms(x, r, qp.lb, qp.ub)
    paired = qp.equality.kind == "groups"
    if paired:
        s = scores_of(qp, x, g)
        gap = pair_gap(s)              # may be negative: the optimum's slack
        if s.single is not None:
            gap = max(gap, single_violation(s))
        if not np.isfinite(gap):
            gap = 0.0
    else:
        gap = stationarity
    return KKT(primal=primal, stationarity=stationarity, complementarity=comp, gap=float(gap),
               multipliers=lam, z=r, primal_scale=feasibility_scale(qp, x), paired=paired)
