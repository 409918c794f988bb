"""The optimality primitives: one home for the quantities the certificate and every strategy use.

One sign convention and one vocabulary, LIBSVM's:

- With one equality row ``a`` (``aᵀx = b``; the SVM dual has ``a = y``), each variable with
  ``a_i ≠ 0`` has the **violation score** ``v_i = −g_i / a_i`` (LIBSVM's ``−y_i ∇_i f``).
  ``up_i`` says x may move along ``+e_i / a_i`` (x_i toward ub when a_i > 0, toward lb when
  a_i < 0; LIBSVM's I_up), ``low_i`` along ``−e_i / a_i`` (I_low). Moving along
  ``e_i/a_i − e_j/a_j`` keeps ``aᵀx`` and changes f at the rate ``v_j − v_i``: (i, j) is a
  violating pair when ``i ∈ up``, ``j ∈ low`` and ``v_i > v_j``. The **pair gap** is
  ``max_{up} v − min_{low} v`` (≤ 0 at an exact optimum).
- A variable outside the equality (``a_i = 0``, or every variable when there is no equality)
  is **single**: it can move alone. Its score is ``v_i = −g_i``, ``up_i`` = may increase
  (x_i < ub_i), ``low_i`` = may decrease (x_i > lb_i); it violates when ``up_i and v_i > 0`` or
  ``low_i and v_i < 0``, by ``|P(g)_i|``, the projected gradient.
- A fixed variable (``lb_i = ub_i``) is in neither mask and never violates.

- With several rows that split the variables into **disjoint groups** (each variable in at most
  one row: ``qp.equality.kind == "groups"``; ν-SVC has two), ``a_i`` is the variable's own
  coefficient and all of the above holds group by group: a pair moves two variables of one
  group, the pair gap is the largest over groups of ``max_{up ∩ k} v − min_{low ∩ k} v``
  (LIBSVM's Solver_NU), and ``Scores.group`` tells each variable's group.

The **measure** (what ``tol`` is compared with) is the pair gap combined with the largest single
violation (their maximum); with no equality it is ``‖P(g)‖∞``. General rows (a variable in
several rows) have no pair structure; :func:`qpcore.kkt` measures them by the projected reduced
gradient with the best multipliers. ``qpcore.kkt`` reports it, the
strategies stop on it, and working-set rules score with the same arrays.

Every function takes plain arrays, so a strategy restricts any of them to an active set by
passing ``x[idx], g[idx], lb[idx], ub[idx], a[idx]``; :func:`scores` accepts output buffers for
hot paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import Capability
from qpcore.backends.vectors import DistributedOperator

if TYPE_CHECKING:
    from qpcore.core.problem import QP

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IndexArray = NDArray[np.intp]

__all__ = ["Scores", "direction_masks", "group_gaps", "lagrangian_bound", "feasibility_scale", "maximal_violating_pair", "measure", "pair_gap",
           "primal_violation", "projected_gradient", "scores", "scores_of", "single_violation",
           "DEFAULT_FEAS_TOL"]

#: Default feasibility tolerance, relative to :func:`feasibility_scale`: a point is feasible
#: when :func:`primal_violation` ≤ ``DEFAULT_FEAS_TOL · feasibility_scale``.
DEFAULT_FEAS_TOL = 1e-9


@attrs.frozen(eq=False)
class Scores:
    """Violation scores and direction masks of a point (see the module docstring).

    Attributes
    ----------
    v : ndarray
        ``−g/a`` for variables in the equality, ``−g`` for single ones.
    up, low : ndarray of bool
        May move along ``+e_i/a_i`` / ``−e_i/a_i`` (single variables: may increase / decrease).
    single : ndarray of bool or None
        Variables outside the equality (a_i = 0); None when there is an equality row and every
        a_i ≠ 0 (the SVM dual), all True when there is no equality.
    group : ndarray of intp or None
        Each variable's group (its row of A; −1 for single variables) when the rows are several
        disjoint groups; None for one group (or none). Pairs form within a group only.
    """

    v: FloatArray
    up: BoolArray
    low: BoolArray
    single: BoolArray | None
    group: IndexArray | None = None

    @property
    def n_groups(self) -> int:
        """Number of groups pairs form in (1 without ``group``)."""
        return 1 if self.group is None else int(self.group.max(initial=-1)) + 1

    def in_group(self, k: int) -> BoolArray:
        """Mask of group k's variables (every paired variable when there is one group)."""
        if self.group is None:
            return np.ones(self.v.shape, dtype=bool) if self.single is None else ~self.single
        out: BoolArray = self.group == k
        return out

    @property
    def paired(self) -> bool:
        """Whether an equality row couples variables into pairs."""
        return self.single is None or not bool(self.single.all())

    def pair_masks(self) -> tuple[BoolArray, BoolArray]:
        """``up`` and ``low`` restricted to the variables in the equality."""
        if self.single is None:
            return self.up, self.low
        inside = ~self.single
        return self.up & inside, self.low & inside

    def single_masks(self) -> tuple[BoolArray, BoolArray]:
        """``up`` and ``low`` restricted to the single variables."""
        if self.single is None:
            z = np.zeros(self.v.shape, dtype=bool)
            return z, z
        return self.up & self.single, self.low & self.single

    def violation(self) -> FloatArray:
        """Per-variable violation against the current pair interval, ≥ 0 (0: not violating).

        Pair variables: ``v_i − min_low v`` for i ∈ up, ``max_up v − v_i`` for i ∈ low (the larger
        when both); single variables: ``|P(g)_i|``. The measure is at most the largest entry.
        """
        out = np.zeros(self.v.shape)
        pu0, pl0 = self.pair_masks()
        for k in range(self.n_groups):
            inside = self.in_group(k) if self.group is not None else None
            pu, pl = (pu0, pl0) if inside is None else (pu0 & inside, pl0 & inside)
            if pu.any() and pl.any():
                m_up, m_low = float(self.v[pu].max()), float(self.v[pl].min())
                out = np.maximum(out, np.maximum(np.where(pu, self.v - m_low, 0.0), np.where(pl, m_up - self.v, 0.0)))
        su, sl = self.single_masks()
        out = np.maximum(out, np.where(su, np.maximum(self.v, 0.0), 0.0))
        out = np.maximum(out, np.where(sl, np.maximum(-self.v, 0.0), 0.0))
        return np.maximum(out, 0.0)


def direction_masks(x: FloatArray, lb: FloatArray, ub: FloatArray, a: FloatArray | None = None
                    ) -> tuple[BoolArray, BoolArray]:
    """``up`` and ``low`` (see the module docstring); with ``a`` None, may increase / may decrease.

    Parameters
    ----------
    x, lb, ub : ndarray
        The point and its bounds.
    a : ndarray, optional
        The equality row (restricted like x).

    Returns
    -------
    up, low : ndarray of bool
    """
    inc, dec = x < ub, x > lb
    if a is None:
        return inc, dec
    neg = a < 0
    return np.where(neg, dec, inc), np.where(neg, inc, dec)


def scores(x: FloatArray, g: FloatArray, lb: FloatArray, ub: FloatArray, a: FloatArray | None = None, *,
           group: IndexArray | None = None, unit: bool = False, out: FloatArray | None = None) -> Scores:
    """The :class:`Scores` of a point.

    Parameters
    ----------
    x, g, lb, ub : ndarray
        Point, gradient and bounds (any subset of the variables, consistently).
    a : ndarray, optional
        The equality row (None: no equality, every variable single); with several disjoint
        groups, each variable's own coefficient (``qp.equality.coef``).
    group : ndarray of intp, optional
        Each variable's group (``qp.equality.group``) when there are several; None for one.
    unit : bool
        Promise that every ``a_i`` is ±1 (the SVM dual): ``v = −a·g`` by one multiply.
    out : ndarray, optional
        Buffer for ``v``.

    Returns
    -------
    Scores
    """
    if a is None:
        v = np.negative(g, out=out)
        inc, dec = x < ub, x > lb
        return Scores(v=v, up=inc, low=dec, single=np.ones(x.shape, dtype=bool))
    if unit:
        v = np.multiply(a, g, out=out)
        np.negative(v, out=v)
        up, low = direction_masks(x, lb, ub, a)
        return Scores(v=v, up=up, low=low, single=None, group=group)
    nz = a != 0
    if out is None:
        out = np.empty(g.shape)
    np.negative(g, out=out)
    np.divide(out, a, out=out, where=nz)
    up, low = direction_masks(x, lb, ub, a)
    single = None if nz.all() else ~nz
    if single is not None:
        # single variables keep −g and the plain increase / decrease masks
        up = np.where(single, x < ub, up)
        low = np.where(single, x > lb, low)
    return Scores(v=out, up=up, low=low, single=single, group=group)


def scores_of(qp: QP, x: FloatArray, g: FloatArray) -> Scores:
    """:func:`scores` for ``qp``: per group for disjoint groups (one row included).

    With general rows there is no pair structure; every variable is scored as single (the
    certificate then uses the projected reduced gradient instead).
    """
    eq = qp.equality
    if eq.kind != "groups":
        return scores(x, g, qp.lb, qp.ub, None)
    return scores(x, g, qp.lb, qp.ub, eq.coef, group=eq.group_ids)


def group_gaps(s: Scores) -> FloatArray:
    """Per group, ``max_{up ∩ k} v − min_{low ∩ k} v`` (−inf where either side is empty)."""
    pu, pl = s.pair_masks()
    out = np.full(s.n_groups, -np.inf)
    for k in range(s.n_groups):
        if s.group is None:
            u, lo = pu, pl
        else:
            inside = s.group == k
            u, lo = pu & inside, pl & inside
        if u.any() and lo.any():
            out[k] = float(s.v[u].max() - s.v[lo].min())
    return out


def pair_gap(s: Scores) -> float:
    """The largest over groups of ``max_{up} v − min_{low} v`` (one group: the classic MVP gap);
    −inf when no group has both sides."""
    if s.group is None:
        pu, pl = s.pair_masks()
        if not pu.any() or not pl.any():
            return -np.inf
        return float(s.v[pu].max() - s.v[pl].min())
    return float(group_gaps(s).max(initial=-np.inf))


def single_violation(s: Scores) -> float:
    """The largest ``|P(g)_i|`` over single variables (0 when there are none)."""
    su, sl = s.single_masks()
    hi = float(np.max(s.v, where=su, initial=0.0))
    lo = float(np.max(-s.v, where=sl, initial=0.0))
    return max(hi, lo, 0.0)


def measure(s: Scores) -> float:
    """The stopping measure: max(pair gap, largest single violation), never below 0."""
    gap = pair_gap(s) if s.paired else -np.inf
    return max(gap, single_violation(s), 0.0)


def maximal_violating_pair(s: Scores) -> tuple[int, int] | None:
    """``(argmax_{up} v, argmin_{low} v)`` over the variables in the equality (Keerthi et al.
    2001), or None when either side is empty. With several groups: the pair of the group with the
    largest gap (both ends in that group)."""
    pu, pl = s.pair_masks()
    if s.group is not None:
        gaps = group_gaps(s)
        k = int(gaps.argmax())
        if not np.isfinite(gaps[k]):
            return None
        inside = s.group == k
        pu, pl = pu & inside, pl & inside
    if not pu.any() or not pl.any():
        return None
    i = int(np.argmax(np.where(pu, s.v, -np.inf)))
    j = int(np.argmin(np.where(pl, s.v, np.inf)))
    return i, j


def projected_gradient(x: FloatArray, g: FloatArray, lb: FloatArray, ub: FloatArray,
                       out: FloatArray | None = None) -> FloatArray:
    """The projection of ``g`` onto the tangent cone of the box at x (sign of g kept).

    ``g_i`` where x_i is strictly inside, ``min(g_i, 0)`` at a lower bound, ``max(g_i, 0)`` at an
    upper bound, 0 for a fixed variable (lb_i = ub_i); ``−P(g)`` is the steepest feasible
    descent direction of the box.

    Parameters
    ----------
    x, g, lb, ub : ndarray
        Point, gradient (or reduced gradient ``g − Aᵀλ``) and bounds.
    out : ndarray, optional
        Buffer for the result.

    Returns
    -------
    ndarray
    """
    inc, dec = x < ub, x > lb
    if out is None:
        pg = g.copy()
    else:
        np.copyto(out, g)
        pg = out
    np.minimum(pg, 0.0, out=pg, where=inc & ~dec)
    np.maximum(pg, 0.0, out=pg, where=dec & ~inc)
    pg[~inc & ~dec] = 0.0
    return pg


def bound_violation(x: FloatArray, lb: FloatArray, ub: FloatArray) -> float:
    """The largest violation of lb ≤ x ≤ ub (∞-norm, absolute; 0 for an empty vector)."""
    return float(np.maximum(np.maximum(lb - x, x - ub), 0.0).max(initial=0.0))


def primal_violation(qp: QP, x: FloatArray) -> float:
    """The largest violation of the bounds, of ``A x = b`` or of ``l ≤ C x ≤ u`` (∞-norm, absolute)."""
    viol = bound_violation(x, qp.lb, qp.ub)
    if qp.m:
        viol = max(viol, float(np.abs(qp.A @ x - qp.b).max()))
    if qp.k:
        viol = max(viol, bound_violation(qp.C @ x, qp.l, qp.u))
    return viol


def feasibility_scale(qp: QP, x: FloatArray) -> float:
    """The scale that :data:`DEFAULT_FEAS_TOL` is relative to.

    ``max(1, ‖x‖∞, ‖b‖∞, max_k Σ_i |A_ki x_i|)``, and the same terms of the inequality rows
    (their finite bounds and ``max_k Σ_i |C_ki x_i|``): rounding in ``A x`` grows with the sum of
    the magnitudes of its terms, not with the result.
    """
    scale = max(1.0, float(np.abs(x).max(initial=0.0)))
    if qp.m:
        scale = max(scale, float(np.abs(qp.b).max()), float((np.abs(qp.A) @ np.abs(x)).max()))
    if qp.k:
        ends = np.concatenate([qp.l[np.isfinite(qp.l)], qp.u[np.isfinite(qp.u)]])
        scale = max(scale, float(np.abs(ends).max(initial=0.0)), float((np.abs(qp.C) @ np.abs(x)).max()))
    return scale


def lagrangian_bound(qp: QP, w: FloatArray) -> float:
    """A lower bound on the optimal value from a point of the primal, for Q = diag(d) + HHᵀ.

    For such a Q (an operator with ``matvec_lowrank``: :class:`qpcore.backends.lowrank.DiagPlusLowRankQ`),
    ½xᵀHHᵀx ≥ wᵀHᵀx − ½‖w‖² for every w, so over the box (no equality rows)

        min f ≥ −½‖w‖² + Σ_i min_{lb_i ≤ t ≤ ub_i} (½ d_i t² + r_i t),   r = H w + c,

    a bound that is tight at w = Hᵀx*. For the fixed-threshold SVM dual (d = 0, c = −e,
    0 ≤ x ≤ C) it is −F(w), minus the regularized hinge risk: f(x) minus this bound is the
    duality gap F(w) − D(x) of a cutting-plane method. One pass over the data.

    Parameters
    ----------
    qp : QP
        A problem without equality rows whose operator declares ``Capability.LOWRANK``
        (``matvec_lowrank`` and ``d``).
    w : ndarray
        A primal point (length k, the number of columns of H).

    Returns
    -------
    float
        The bound (−inf when an infinite bound makes a term unbounded below).

    Raises
    ------
    ValueError
        When the problem has equality rows or its operator is not diagonal plus low rank.
    """
    Q = qp.Q
    if qp.m or Capability.LOWRANK not in Q.capabilities:
        raise ValueError("lagrangian_bound needs Q = diag(d) + HHᵀ (an operator declaring LOWRANK) and no "
                         "equality rows")
    if isinstance(Q, DistributedOperator):     # rows held elsewhere: the same terms, computed there
        return Q.lagrangian_bound(qp, w)
    low: Any = Q                  # declared LOWRANK above: it has matvec_lowrank and d
    w = np.asarray(w, dtype=np.float64)
    r = np.asarray(low.matvec_lowrank(w), dtype=np.float64) + qp.c
    return float(-0.5 * (w @ w) + separable_minimum(r, np.asarray(low.d, dtype=np.float64), qp.lb, qp.ub))


def separable_minimum(r: FloatArray, d: FloatArray | float, lb: FloatArray, ub: FloatArray) -> float:
    """Σ_i min_{lb_i ≤ t ≤ ub_i} (½ d_i t² + r_i t): the separable part of :func:`lagrangian_bound`.

    Returns −inf when an infinite bound makes a term unbounded below.
    """
    d = np.asarray(d, dtype=np.float64)
    # the separable minimizer of ½d t² + r t over [lb, ub]: the clipped stationary point where d > 0,
    # else the bound that r points to (an infinite one makes the bound −inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(d > 0, np.clip(-r / np.where(d > 0, d, 1.0), lb, ub), np.where(r > 0, lb, ub))
    t = np.where((d == 0) & (r == 0), 0.0, t)
    if not np.isfinite(t).all():
        return -np.inf
    return float((0.5 * d * t * t + r * t).sum())
