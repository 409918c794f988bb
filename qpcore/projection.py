"""Projections onto the feasible set, building blocks for GPCG and for the shared warm start.

The feasible sets are the box ``lb ≤ x ≤ ub``, the box with one equality row ``aᵀx = b`` (the
SVM-dual shape), with disjoint groups of rows (each variable in at most one row: the projection
separates into one-row projections, :func:`project_groups`) and with general rows
(:func:`project_rows`, an exact dual Newton method whose line search is the one-row projection).
Everything is vectorized over n: Python loops run over rows or groups only.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.optimality import DEFAULT_FEAS_TOL, feasibility_scale
from qpcore.problem import QP, FloatArray, ProblemError, as_float_vector

BoolArray = NDArray[np.bool_]

__all__ = ["bound_start", "bound_steps", "breakpoints_box", "feasible_start", "project", "project_box",
           "project_box_equality", "project_groups", "project_rows"]


def project_box(x: ArrayLike, lb: ArrayLike, ub: ArrayLike) -> FloatArray:
    """Euclidean projection of ``x`` onto the box ``lb ≤ x ≤ ub``.

    Parameters
    ----------
    x : array_like
        The point, length n.
    lb, ub : array_like or float
        Bounds, broadcastable to ``x``; may be ±inf.

    Returns
    -------
    ndarray
        ``clip(x, lb, ub)`` as a new float64 array.
    """
    return np.clip(np.asarray(x, dtype=np.float64), lb, ub)


def _bounds(lb: ArrayLike, ub: ArrayLike, n: int) -> tuple[FloatArray, FloatArray]:
    lo = as_float_vector(lb, "lb", n, allow_inf=True)
    hi = as_float_vector(ub, "ub", n, allow_inf=True)
    if np.any(lo == np.inf) or np.any(hi == -np.inf) or np.any(lo > hi):
        raise ProblemError("lb/ub: need lb ≤ ub with lb < +inf and ub > -inf; the box is empty")
    return lo, hi


def project_box_equality(v: ArrayLike, lb: ArrayLike, ub: ArrayLike, a: ArrayLike,
                         b: float) -> tuple[FloatArray, float]:
    """Euclidean projection of ``v`` onto ``{x : lb ≤ x ≤ ub, aᵀx = b}``.

    The projection is ``x(λ) = clip(v + λa, lb, ub)`` where λ is a root of the monotone
    nondecreasing, piecewise-linear ``φ(λ) = aᵀx(λ) − b``. The root is bracketed between two
    adjacent breakpoints by a median (``np.partition``) bisection that discards settled
    coordinates as it goes (O(n) expected), and the linear piece is then solved exactly in
    x-space. Vectorized: no Python loop over n.

    Parameters
    ----------
    v : array_like
        The point to project, length n (finite).
    lb, ub : array_like or float
        Bounds (may be ±inf where the equality stays feasible).
    a : array_like
        The equality row, length n (finite; zeros and any signs allowed).
    b : float
        Right-hand side.

    Returns
    -------
    x : ndarray
        The projection: in the box exactly, ``aᵀx = b`` to rounding.
    lam : float
        The multiplier λ with ``x = clip(v + λa, lb, ub)``. On a flat piece of φ (several valid
        λ) one of them; 0.0 when ``a == 0``.

    Raises
    ------
    ProblemError
        On invalid data, or when ``b`` lies outside ``[min aᵀx, max aᵀx]`` over the box (for
        ``a == 0`` that means ``b ≠ 0``), with a relative slack of 1e-12.
    """
    vv = as_float_vector(v, "v")
    n = vv.shape[0]
    av = as_float_vector(a, "a", n)
    lo, hi = _bounds(lb, ub, n)
    bf = float(b)
    if not np.isfinite(bf):
        raise ProblemError(f"b: must be finite, got {bf}")

    pos, neg = av > 0, av < 0
    # bl/bu: the bound a coordinate sits at when λ → −inf / +inf (sides swap where a < 0)
    bl = np.where(neg, hi, lo)
    bu = np.where(neg, lo, hi)
    with np.errstate(invalid="ignore"):
        # 0·inf is nan here; the a == 0 terms are dropped anyway
        terms_lo, terms_hi = av * bl, av * bu
    min_ax = float(terms_lo[pos | neg].sum())
    max_ax = float(terms_hi[pos | neg].sum())
    scale = max(1.0, abs(bf), *(abs(s) for s in (min_ax, max_ax) if np.isfinite(s)))
    slack = 1e-12 * scale
    if not (min_ax - slack <= bf <= max_ax + slack):
        raise ProblemError(f"aᵀx = b is infeasible for the bounds: aᵀx ranges over [{min_ax}, {max_ax}] "
                           f"but b = {bf}; change b or widen the bounds")

    # work with a/max|a| (same set, λ rescaled on return): a tiny a would square to a subnormal
    # slope and lose all precision in λ
    amax = float(np.abs(av).max()) if n else 0.0
    if amax > 0.0:
        av, bf = av / amax, bf / amax
        with np.errstate(invalid="ignore"):
            terms_lo, terms_hi = av * bl, av * bu
    else:
        amax = 1.0

    # breakpoints of coordinate i: it is at bl for λ ≤ t_lo, at bu for λ ≥ t_hi, free between
    nz = pos | neg
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t_lo = np.where(nz, (bl - vv) / np.where(nz, av, 1.0), -np.inf)
        t_hi = np.where(nz, (bu - vv) / np.where(nz, av, 1.0), np.inf)
    # a tiny |a| can overflow a breakpoint to ±inf on its finite side: that coordinate never leaves
    # its bound at any finite λ, so it is pinned there like a zero-a coordinate
    pin_lo = nz & (t_lo == np.inf)
    pin_hi = nz & (t_hi == -np.inf)
    act = nz & ~pin_lo & ~pin_hi
    x = np.clip(vv, lo, hi)
    x[pin_lo] = bl[pin_lo]
    x[pin_hi] = bu[pin_hi]
    if not act.any():
        return x, 0.0
    r = bf - float(terms_lo[pin_lo].sum() + terms_hi[pin_hi].sum())  # b less the pinned part
    ai, vi, bli, bui, tl, th = av[act], vv[act], bl[act], bu[act], t_lo[act], t_hi[act]
    left, right = _bracket(tl, th, ai * ai, r - float(ai @ vi))
    lam, at_lo, at_hi = _solve_piece(left, right, ai, vi, bli, bui, tl, th, r)
    xa = np.clip(vi + lam * ai, lo[act], hi[act])
    xa[at_lo] = bli[at_lo]
    xa[at_hi] = bui[at_hi]
    x[act] = xa
    return x, lam / amax


def _bracket(t_lo: FloatArray, t_hi: FloatArray, w: FloatArray, r: float) -> tuple[float, float]:
    """Adjacent breakpoints ``left < right`` bracketing the root of ``g(λ) = r``.

    ``g(λ) = Σ w_i clip(λ, t_lo_i, t_hi_i)`` is φ shifted by ``aᵀv − b``; ``g(left) ≤ r < g(right)``
    and no breakpoint lies strictly between (either end may be infinite). Bisection on the median
    breakpoint (``np.partition``); coordinates whose state is settled on the current bracket are
    folded into a constant and a slope, so the work shrinks geometrically: O(n) expected. Only
    the bracket is taken from here; the root itself is solved in x-space by ``_solve_piece``.
    """
    left, right = -np.inf, np.inf
    const = slope = 0.0
    while True:  # about log2(2n) rounds, each vectorized
        up = t_hi <= left  # at the upper-side bound on the whole bracket
        dn = t_lo >= right  # at the lower-side bound
        fr = (t_lo <= left) & (t_hi >= right)  # free on the whole bracket
        # w·t_i = a_i(bound_i − v_i) stays moderate even for far-apart breakpoints
        const += float(w[up] @ t_hi[up] + w[dn] @ t_lo[dn])
        slope += float(w[fr].sum())
        keep = ~(up | dn | fr)
        t_lo, t_hi, w = t_lo[keep], t_hi[keep], w[keep]
        cand = np.concatenate([t_lo[(t_lo > left) & (t_lo < right)], t_hi[(t_hi > left) & (t_hi < right)]])
        if cand.size == 0:
            return left, right
        k = cand.size // 2
        m = float(np.partition(cand, k)[k])
        if const + m * slope + float(w @ np.clip(m, t_lo, t_hi)) <= r:
            left = m
        else:
            right = m


def _solve_piece(left: float, right: float, a: FloatArray, v: FloatArray, bl: FloatArray, bu: FloatArray,
                 t_lo: FloatArray, t_hi: FloatArray, r: float) -> tuple[float, BoolArray, BoolArray]:
    # On the piece [left, right] the active set is fixed, so aᵀx(λ) = r is linear in λ and solved
    # exactly (to the rounding of one dot product). Rounding in the bracket can be off by a piece:
    # step to the neighbour when the solution falls outside (a few steps at most, never a loop over n).
    at_lo = at_hi = np.zeros(a.shape, dtype=bool)
    lam = 0.0
    for _ in range(4):
        # breakpoints never lie strictly inside the piece, so these sets and the free rest
        # partition the coordinates exactly
        at_lo = t_lo >= right
        at_hi = t_hi <= left
        free = ~at_lo & ~at_hi
        wf = float(a[free] @ a[free])
        fixed = float(a[at_lo] @ bl[at_lo] + a[at_hi] @ bu[at_hi])
        if wf == 0.0:
            # a flat piece at height r (the bracket guarantees it): any λ on it is a root
            return (left if np.isfinite(left) else right), at_lo, at_hi
        lam = (r - fixed - float(a[free] @ v[free])) / wf
        if lam < left:
            left, right = _next_breakpoint(t_lo, t_hi, left, below=True), left
        elif lam > right:
            left, right = right, _next_breakpoint(t_lo, t_hi, right, below=False)
        else:
            break
    return float(min(max(lam, left), right)), at_lo, at_hi


def _next_breakpoint(t_lo: FloatArray, t_hi: FloatArray, t: float, *, below: bool) -> float:
    # the nearest breakpoint strictly below / above t (±inf when none)
    if below:
        c = np.concatenate([t_lo[t_lo < t], t_hi[t_hi < t]])
        return float(c.max()) if c.size else -np.inf
    c = np.concatenate([t_lo[t_lo > t], t_hi[t_hi > t]])
    return float(c.min()) if c.size else np.inf


def project_groups(v: ArrayLike, lb: ArrayLike, ub: ArrayLike, group: NDArray[np.intp], coef: ArrayLike,
                   b: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Euclidean projection of ``v`` onto the box with disjoint equality groups.

    Each variable is in at most one row (``group[i]`` is its row, −1 for none, ``coef[i]`` its
    coefficient: :attr:`qpcore.problem.Equality.group` and ``coef``), so the projection separates:
    one :func:`project_box_equality` per group (exact, vectorized over its members), the variables
    in no row clipped to the box.

    Parameters
    ----------
    v : array_like
        The point, length n.
    lb, ub : array_like or float
        Bounds (may be ±inf where each group stays feasible).
    group : ndarray of intp
        The row of each variable, −1 for none.
    coef : array_like
        Each variable's coefficient in its row (ignored where ``group`` is −1).
    b : array_like
        Right-hand sides, one per group (length m).

    Returns
    -------
    x : ndarray
        The projection.
    lam : ndarray
        One multiplier per group: ``x = clip(v + lam[group]·coef)`` on each group's members.

    Raises
    ------
    ProblemError
        When a group's row is infeasible for the bounds (see :func:`project_box_equality`).
    """
    vv = as_float_vector(v, "v")
    n = vv.shape[0]
    lo, hi = _bounds(lb, ub, n)
    a = as_float_vector(coef, "coef", n)
    bb = np.atleast_1d(np.asarray(b, dtype=np.float64))
    grp = np.asarray(group, dtype=np.intp)
    if grp.shape != (n,):
        raise ProblemError(f"group: shape mismatch, expected ({n},), got {grp.shape}")
    x = np.clip(vv, lo, hi)
    lam = np.zeros(bb.size)
    # a Python loop over the groups only (m is small); each projection is vectorized over members
    order = np.argsort(grp, kind="stable")
    starts = np.searchsorted(grp[order], np.arange(bb.size + 1))
    for k in range(bb.size):
        idx = order[starts[k]:starts[k + 1]]
        if idx.size == 0:
            if bb[k] != 0.0:
                raise ProblemError(f"b: row {k} has no variable but b[{k}] = {bb[k]}")
            continue
        x[idx], lam[k] = project_box_equality(vv[idx], lo[idx], hi[idx], a[idx], float(bb[k]))
    return x, lam


def project_rows(v: ArrayLike, lb: ArrayLike, ub: ArrayLike, A: ArrayLike, b: ArrayLike, *,
                 max_iter: int = 500) -> tuple[FloatArray, FloatArray]:
    """Euclidean projection of ``v`` onto ``{x : lb ≤ x ≤ ub, A x = b}`` for general rows.

    The method is an exact **dual Newton method** on λ ∈ R^m. The projection is
    ``x(λ) = clip(v + Aᵀλ, lb, ub)`` at a maximizer of the concave, piecewise-quadratic dual
    D(λ) = min over the box of ½‖x − v‖² − λᵀ(A x − b), whose gradient is ``b − A x(λ)`` and
    whose generalized Hessian is −A_F A_Fᵀ, F the coordinates strictly inside their bounds. Each iteration takes
    the (semismooth) Newton direction d from ``A_F A_Fᵀ d = b − A x`` (least squares, so
    dependent rows and rows that vanish on F are no obstacle; the gradient itself when that
    is no ascent direction), then an **exact** line search along d: maximizing D(λ + t d) over
    t is the one-row projection of ``v + Aᵀλ`` onto ``{(Aᵀd)ᵀx = dᵀb}``
    (:func:`project_box_equality`, exact and O(n)). The iterates ascend D monotonically and,
    once F settles, the Newton step is exact, so the method ends after finitely many
    iterations in exact arithmetic; it stops when ‖A x − b‖∞ reaches rounding level
    (1e-14 of the size of A x's terms) or stops improving.

    Parameters
    ----------
    v : array_like
        The point, length n (finite).
    lb, ub : array_like or float
        Bounds (may be ±inf).
    A : array_like
        The rows, shape (m, n) (any signs, dependent rows allowed as long as A x = b is
        consistent with the bounds).
    b : array_like
        Right-hand side, length m.
    max_iter : int
        Cap on the Newton iterations.

    Returns
    -------
    x : ndarray
        The projection: in the box exactly, A x = b to rounding (when the set is not empty).
    lam : ndarray
        The dual point λ with ``x = clip(v + Aᵀλ, lb, ub)``.

    Raises
    ------
    ProblemError
        On invalid data, or when the iterations end with ‖A x − b‖∞ above 1e-9 of the size of
        A x's terms (an empty feasible set, as a rule).
    """
    vv = as_float_vector(v, "v")
    n = vv.shape[0]
    lo, hi = _bounds(lb, ub, n)
    Am = np.atleast_2d(np.asarray(A, dtype=np.float64))
    if Am.shape[1] != n or not np.isfinite(Am).all():
        raise ProblemError(f"A: expected a finite (m, {n}) array, got shape {Am.shape}")
    bb = np.atleast_1d(np.asarray(b, dtype=np.float64))
    if bb.shape != (Am.shape[0],) or not np.isfinite(bb).all():
        raise ProblemError(f"b: expected {Am.shape[0]} finite values")
    m = Am.shape[0]
    lam = np.zeros(m)
    w = vv.copy()                                   # v + Aᵀλ
    x = np.clip(w, lo, hi)
    absA = np.abs(Am)

    def size(y: FloatArray) -> float:
        return max(1.0, float(np.abs(bb).max(initial=0.0)), float((absA @ np.abs(y)).max(initial=0.0)))

    best = np.inf
    stale = 0
    for _ in range(max_iter):
        r = bb - Am @ x
        res = float(np.abs(r).max(initial=0.0))
        if res <= 1e-14 * size(x):
            break
        # the dual ascends monotonically, the residual's norm need not: stop only when it has not
        # halved in many iterations (rounding level)
        if res < 0.5 * best:
            best, stale = res, 0
        else:
            stale += 1
            if stale > 50:
                break
        F = (w > lo) & (w < hi)
        AF = Am[:, F]
        d = np.linalg.lstsq(AF @ AF.T, r, rcond=1e-13)[0] if F.any() else r.copy()
        if not float(r @ d) > 1e-12 * float(np.linalg.norm(r)) * float(np.linalg.norm(d)):
            d = r.copy()                            # no Newton ascent: the gradient ascends
        ad = Am.T @ d
        try:
            xt, t = project_box_equality(w, lo, hi, ad, float(d @ bb))
        except ProblemError:
            break                                   # the line's root lies within rounding of its end
        if not np.isfinite(t) or t == 0.0:
            if t == 0.0 and not np.array_equal(xt, x):
                x = xt
                continue
            break
        w = w + t * ad
        lam += t * d
        x = np.clip(w, lo, hi)
        if float(np.abs(bb - Am @ xt).max(initial=0.0)) < float(np.abs(bb - Am @ x).max(initial=0.0)):
            x = xt                                  # the line search's exact piece solve
    if float(np.abs(bb - Am @ x).max(initial=0.0)) > 1e-9 * size(x):
        raise ProblemError("A x = b: no point of the box meets the rows (the dual Newton projection "
                           f"ended at a residual of {float(np.abs(bb - Am @ x).max()):.3g})")
    return x, lam


def project(qp: QP, v: ArrayLike) -> FloatArray:
    """Euclidean projection of ``v`` onto the feasible set of ``qp``, by its equality structure.

    No rows: clip to the box. Disjoint groups (``qp.equality.kind == "groups"``, one row
    included): :func:`project_groups`. General rows: :func:`project_rows`.

    Parameters
    ----------
    qp : QP
        The problem.
    v : array_like
        The point, length n.

    Returns
    -------
    ndarray
    """
    eq = qp.equality
    if eq.kind == "none":
        return np.clip(as_float_vector(v, "v", qp.n), qp.lb, qp.ub)
    if qp.m == 1:
        return project_box_equality(v, qp.lb, qp.ub, qp.A[0], float(qp.b[0]))[0]
    if eq.kind == "groups":
        return project_groups(v, qp.lb, qp.ub, eq.group, eq.coef, qp.b)[0]
    return project_rows(v, qp.lb, qp.ub, qp.A, qp.b)[0]


def bound_steps(x: FloatArray, p: FloatArray, lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Step lengths t ≥ 0 at which x + t p meets lo and hi, coordinate by coordinate.

    The ratio test of active-set methods (INCAS, the dense active set, the incremental SVM):
    ``tl[i]`` where p_i < 0 heads for lo_i, ``tu[i]`` where p_i > 0 heads for hi_i, inf elsewhere
    (also for an infinite bound). A start already past its bound gives 0, never a negative step.

    Parameters
    ----------
    x, p, lo, hi : ndarray
        Point, direction and bounds, all of one length.

    Returns
    -------
    (tl, tu)
    """
    tl = np.full(x.shape, np.inf)
    tu = np.full(x.shape, np.inf)
    with np.errstate(over="ignore"):      # a subnormal p_i: no limit, inf is right
        np.divide(lo - x, p, out=tl, where=p < 0)
        np.divide(hi - x, p, out=tu, where=p > 0)
    np.maximum(tl, 0.0, out=tl)
    np.maximum(tu, 0.0, out=tu)
    return tl, tu


def breakpoints_box(x: ArrayLike, d: ArrayLike, lb: ArrayLike, ub: ArrayLike) -> FloatArray:
    """Breakpoints of the projected path ``t ↦ P[x + t d]`` onto the box.

    Coordinate i moves with ``x + t d`` until it hits a bound at ``t_i = (ub_i − x_i)/d_i``
    (``d_i > 0``) or ``(lb_i − x_i)/d_i`` (``d_i < 0``) and stays there; coordinates with
    ``d_i = 0`` or an infinite bound in the direction of travel never hit one.

    Parameters
    ----------
    x : array_like
        The start point, length n (normally in the box).
    d : array_like
        The direction, length n.
    lb, ub : array_like or float
        Bounds (may be ±inf).

    Returns
    -------
    ndarray
        The distinct finite breakpoints ``t > 0``, sorted ascending (possibly empty).
    """
    xv = as_float_vector(x, "x")
    n = xv.shape[0]
    dv = as_float_vector(d, "d", n)
    lo, hi = _bounds(lb, ub, n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # the bound the coordinate runs into; d = 0 gives (bound − x)/0 = ±inf or nan, dropped below
        t = (np.where(dv > 0, hi, lo) - xv) / dv
    t = t[(dv != 0) & np.isfinite(t) & (t > 0)]
    return np.unique(t)


def feasible_start(qp: QP, x0: FloatArray, policy: str = "project", feas_tol: float = DEFAULT_FEAS_TOL
                   ) -> tuple[FloatArray, float]:
    """The shared treatment of a warm start: every strategy receives a feasible x0.

    Parameters
    ----------
    qp : QP
        The problem.
    x0 : ndarray
        The warm start (finite, length n).
    policy : {"project", "raise"}
        ``"project"``: replace an infeasible x0 by its Euclidean projection onto
        ``{lb ≤ x ≤ ub, A x = b}`` (:func:`project`: one row or disjoint groups exactly, group by
        group; general rows by the dual Newton method of :func:`project_rows`).
        ``"raise"``: raise a ``ProblemError`` naming the violated constraint.
    feas_tol : float
        Violations up to ``feas_tol · feasibility_scale`` count as feasible: such an x0 is
        only clipped into the box.

    Returns
    -------
    x : ndarray
        A feasible start (a new array).
    moved : float
        ‖x − x0‖∞ (0 when x0 was feasible).

    Raises
    ------
    ProblemError
        Under ``"raise"`` for an infeasible x0.
    """
    if policy not in ("project", "raise"):
        raise ProblemError(f"x0_policy: {policy!r} is not one of 'project', 'raise'")
    x0 = np.asarray(x0, dtype=np.float64)
    tol = feas_tol * feasibility_scale(qp, x0)
    below, above = qp.lb - x0, x0 - qp.ub
    worst_bound = float(np.maximum(np.maximum(below, above), 0.0).max(initial=0.0))
    res = np.abs(qp.A @ x0 - qp.b) if qp.m else np.zeros(0)
    worst_eq = float(res.max(initial=0.0))
    if worst_bound <= tol and worst_eq <= tol:
        x = np.clip(x0, qp.lb, qp.ub)
        return x, float(np.abs(x - x0).max(initial=0.0))
    if policy == "raise":
        if worst_bound > tol:
            i = int(np.argmax(np.maximum(below, above)))
            what = (f"bound {'lb' if below[i] > 0 else 'ub'} at index {i}: x0[{i}] = {x0[i]:.6g} outside "
                    f"[{qp.lb[i]:.6g}, {qp.ub[i]:.6g}] by {worst_bound:.3g}")
        else:
            k = int(np.argmax(res))
            what = f"equality row {k}: A[{k}]·x0 − b[{k}] = {float(qp.A[k] @ x0 - qp.b[k]):.6g}"
        raise ProblemError(f"x0: infeasible warm start, violates the {what}; pass a feasible x0 or "
                           "x0_policy='project'")
    x = project(qp, x0)
    return x, float(np.abs(x - x0).max(initial=0.0))


def _bound_start_row(x: FloatArray, lb: FloatArray, ub: FloatArray, a: FloatArray, b: float) -> FloatArray:
    """One row of :func:`bound_start`: from x in the box, variables in index order move to the
    bound that reduces the residual of aᵀx = b, the last one part of the way."""
    r = float(b - a @ x)
    if r == 0.0:
        return x
    sgn = np.sign(a) * np.sign(r)
    room = np.where(sgn > 0, ub - x, np.where(sgn < 0, x - lb, 0.0)) * np.abs(a)
    cum = np.cumsum(room)
    k = int(np.searchsorted(cum, abs(r)))
    take = room.copy()
    take[k + 1:] = 0.0
    if k < take.size:
        take[k] = abs(r) - (cum[k - 1] if k > 0 else 0.0)
    nz = a != 0
    step = np.zeros(x.size)
    step[nz] = sgn[nz] * take[nz] / np.abs(a[nz])
    full = np.arange(x.size) < k
    out: FloatArray = np.where(full & (sgn > 0), ub, np.where(full & (sgn < 0), lb, x + step))
    return np.clip(out, lb, ub)


def _vertex_start(qp: QP) -> FloatArray:
    """A feasible point of general rows with most variables on a bound: a basic solution of the
    feasibility LP (HiGHS dual simplex), its basic variables re-solved exactly (the simplex meets
    A x = b only to its own tolerance), or, if that leaves the box, its exact projection."""
    from scipy.optimize import linprog

    lb, ub, A, b = qp.lb, qp.ub, qp.A, qp.b
    # linprog takes ±inf bounds as they are: one (n, 2) array, no per-variable tuples
    res = linprog(np.zeros(qp.n), A_eq=A, b_eq=b, bounds=np.column_stack([lb, ub]), method="highs-ds")
    if res.x is None:
        raise ProblemError("A x = b is infeasible for the bounds (no feasible point found by the LP)")
    x = np.clip(np.asarray(res.x, dtype=np.float64), lb, ub)
    scale = np.maximum(1.0, np.abs(x))
    at = (np.abs(x - lb) <= 1e-9 * scale) | (np.abs(x - ub) <= 1e-9 * scale)
    x = np.where(np.abs(x - lb) <= 1e-9 * scale, lb, np.where(np.abs(x - ub) <= 1e-9 * scale, ub, x))
    basic = np.flatnonzero(~at)
    if basic.size:
        # the smallest correction of the basic variables that meets the rows exactly
        x_try = x.copy()
        x_try[basic] += np.linalg.lstsq(A[:, basic], b - A @ x, rcond=None)[0]
        size = max(1.0, float(np.abs(b).max(initial=0.0)), float((np.abs(A) @ np.abs(x_try)).max(initial=0.0)))
        if (np.all(x_try >= lb) and np.all(x_try <= ub)
                and float(np.abs(A @ x_try - b).max(initial=0.0)) <= 1e-13 * size):
            return x_try
    return project_rows(x, lb, ub, A, b)[0]


def bound_start(qp: QP) -> FloatArray:
    """A feasible start with most variables on a bound (dual basic feasible, for SVMs).

    0 clipped to the box; then, for one equality row aᵀx = b, variables in index order move to
    the bound that reduces the residual, the last one part of the way (the start of SMO and
    INCAS; α = 0 for an SVM dual, where the residual is 0 already). Variables moved all the way
    land exactly on their bound. Disjoint groups: the same, group by group. General rows: a
    basic solution of the feasibility LP (scipy's HiGHS dual simplex, at most m variables off
    their bounds when the bounds are finite), made exact (:func:`_vertex_start`).

    Parameters
    ----------
    qp : QP
        Finite bounds wherever the residual needs room.

    Returns
    -------
    ndarray
    """
    x = np.clip(np.zeros(qp.n), qp.lb, qp.ub)
    eq = qp.equality
    if eq.kind == "none":
        return x
    if qp.m == 1:
        return _bound_start_row(x, qp.lb, qp.ub, qp.A[0], float(qp.b[0]))
    if eq.kind == "groups":
        for k in range(qp.m):
            idx = eq.members(k)
            x[idx] = _bound_start_row(x[idx], qp.lb[idx], qp.ub[idx], eq.coef[idx], float(qp.b[k]))
        return x
    if float(np.abs(qp.A @ x - qp.b).max()) <= 1e-14 * max(1.0, float(np.abs(qp.b).max())):
        return x
    return _vertex_start(qp)
