"""Projections onto the feasible set, building blocks for GPCG and for the shared warm start.

The feasible sets are the box ``lb ≤ x ≤ ub``, the box with one equality row ``aᵀx = b`` (the
SVM-dual shape), with disjoint groups of rows (each variable in at most one row: the projection
separates into one-row projections, :func:`project_groups`) and with general rows
(:func:`project_rows`, an exact dual Newton method whose line search is the one-row projection,
made robust by a proximal term where the rows cannot be met on the current face, with the LP
(HiGHS) as the fallback and the only judge of infeasibility).
Everything is vectorized over n: Python loops run over rows or groups only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.core.optimality import DEFAULT_FEAS_TOL, feasibility_scale
from qpcore.core.problem import QP, FloatArray, ProblemError, as_float_vector

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
    coefficient: :attr:`qpcore.core.problem.Equality.group` and ``coef``), so the projection separates:
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


def _direction(H: FloatArray, r: FloatArray, singular: bool = True) -> FloatArray | None:
    """H d = r for a symmetric positive semidefinite H: Cholesky when H is positive definite, else
    (or None when not ``singular``) least squares by a complete orthogonal factorization (LAPACK's
    gelsy: QR with column pivoting, which has no iteration to fail, unlike the SVD of gelsd on a
    graded matrix)."""
    import scipy.linalg

    try:
        cf = scipy.linalg.cho_factor(H, lower=True, check_finite=False)
        # dependent rows make H singular, yet rounding can leave it a factor with a pivot of
        # sqrt(eps) relative size, whose solve throws λ far along the rows' null space (x stays
        # right, w = v + Aᵀλ loses digits): such a factor counts as singular
        piv = np.abs(np.diagonal(cf[0]))
        if float(piv.min(initial=np.inf)) ** 2 > 1e-12 * float(np.diagonal(H).max(initial=0.0)):
            d: FloatArray = scipy.linalg.cho_solve(cf, r, check_finite=False)
            if np.isfinite(d).all():
                return d
    except (np.linalg.LinAlgError, ValueError):
        pass
    if not singular:
        return None
    try:
        out: FloatArray = scipy.linalg.lstsq(H, r, cond=1e-13, lapack_driver="gelsy", check_finite=False)[0]
        return out
    except (np.linalg.LinAlgError, ValueError):
        return r.copy()             # the gradient: an ascent direction whatever H is


class _DualNewton:
    """The dual Newton method of :func:`project_rows` on rows of unit norm (its state: λ, w = v + Aᵀλ,
    the best x so far and the Newton iterations spent)."""

    def __init__(self, v: FloatArray, lo: FloatArray, hi: FloatArray, A: FloatArray, b: FloatArray) -> None:
        self.v, self.lo, self.hi, self.A, self.b = v, lo, hi, A, b
        self.absA = np.abs(A)
        # sparse rows (the slack form of a sparse C: [C, −I]) form A_F A_Fᵀ as a sparse product
        self.cols: Any = None
        if A.size and np.count_nonzero(A) < 0.1 * A.size:
            import scipy.sparse

            self.cols = scipy.sparse.csc_matrix(A)
        self.lam = np.zeros(A.shape[0])
        self.w = v.copy()
        self.x = np.clip(v, lo, hi)
        self.iters = 0

    def residual(self, x: FloatArray) -> float:
        return float(np.abs(self.b - self.A @ x).max(initial=0.0))

    def size(self, x: FloatArray) -> float:
        """The size of A x's terms, the scale of the rounding in A x − b."""
        return max(1.0, float(np.abs(self.b).max(initial=0.0)), float((self.absA @ np.abs(x)).max(initial=0.0)))

    def exact(self) -> bool:
        return self.residual(self.x) <= 1e-14 * self.size(self.x)

    def _gram(self) -> FloatArray:
        # the generalized Hessian −A_F A_Fᵀ of the dual, F the coordinates strictly inside the box
        F = (self.w > self.lo) & (self.w < self.hi)
        if self.cols is not None:
            SF = self.cols[:, np.flatnonzero(F)]
            gram: FloatArray = (SF @ SF.T).toarray()
            return gram
        AF = self.A[:, F]
        out: FloatArray = AF @ AF.T
        return out

    def _move(self, t: float, d: FloatArray, ad: FloatArray) -> None:
        self.w = self.w + t * ad
        self.lam = self.lam + t * d
        self.x = np.clip(self.w, self.lo, self.hi)

    def newton(self, budget: int, singular: bool = True) -> bool:
        """Plain semismooth Newton steps with the exact line search (at most ``budget``); True once
        exact. Not ``singular``: stop at a singular A_F A_Fᵀ (rows dependent on F, where the step
        may miss the direction the dual grows along; the proximal steps take over)."""
        A, b = self.A, self.b
        for _ in range(budget):
            if self.exact():
                return True
            r = b - A @ self.x
            d = _direction(self._gram(), r, singular)
            if d is None:
                return False
            self.iters += 1
            if not float(r @ d) > 1e-12 * float(np.linalg.norm(r)) * float(np.linalg.norm(d)):
                d = r.copy()                        # no Newton ascent: the gradient ascends
            ad = A.T @ d
            try:
                xt, t = project_box_equality(self.w, self.lo, self.hi, ad, float(d @ b))
            except ProblemError:
                return False                        # the line's root lies within rounding of its end
            if not np.isfinite(t) or t == 0.0:
                if t == 0.0 and not np.array_equal(xt, self.x) and self.residual(xt) < self.residual(self.x):
                    self.x = xt
                    continue
                return False
            self._move(t, d, ad)
            if self.residual(xt) < self.residual(self.x):
                self.x = xt                         # the line search's exact piece solve
        return self.exact()

    def proximal(self, sigma: float, budget: int) -> None:
        """One step of the proximal point method on the dual: λ ← argmax D(λ) − ‖λ − λ_k‖²/(2σ),
        by Newton steps on that strongly concave function (at most ``budget``)."""
        A, b, lo, hi = self.A, self.b, self.lo, self.hi
        center = self.lam.copy()
        r0 = float(np.linalg.norm(b - A @ self.x))
        lo1, hi1 = np.append(lo, -np.inf), np.append(hi, np.inf)
        root_s = float(np.sqrt(sigma))
        for _ in range(budget):
            grad = b - A @ self.x - (self.lam - center) / sigma
            if float(np.linalg.norm(grad)) <= max(1e-2 * r0, 1e-15 * self.size(self.x)):
                return
            H = self._gram()
            H.flat[:: H.shape[0] + 1] += 1.0 / sigma
            d = _direction(H, grad)
            assert d is not None
            self.iters += 1
            nd = float(np.linalg.norm(d))
            if not nd > 0.0:
                return
            ad = A.T @ d
            # the exact line search along d: the root of (Aᵀd)ᵀ clip(w + t Aᵀd) + (dᵀ(λ − λ_k) + t‖d‖²)/σ
            # = dᵀb, a one-row projection with one more, unbounded, coordinate for the proximal term
            a1 = np.append(ad, nd / root_s)
            w1 = np.append(self.w, float(d @ (self.lam - center)) / (nd * root_s))
            _, t = project_box_equality(w1, lo1, hi1, a1, float(d @ b))
            if not (np.isfinite(t) and t > 0.0):
                return
            self._move(t, d, ad)


def project_rows(v: ArrayLike, lb: ArrayLike, ub: ArrayLike, A: ArrayLike, b: ArrayLike, *,
                 max_iter: int = 2000) -> tuple[FloatArray, FloatArray]:
    """Euclidean projection of ``v`` onto ``{x : lb ≤ x ≤ ub, A x = b}`` for general rows.

    The method is an exact **dual Newton method** on λ ∈ R^m. The projection is
    ``x(λ) = clip(v + Aᵀλ, lb, ub)`` at a maximizer of the concave, piecewise-quadratic dual
    D(λ) = min over the box of ½‖x − v‖² − λᵀ(A x − b), whose gradient is ``b − A x(λ)`` and
    whose generalized Hessian is −A_F A_Fᵀ, F the coordinates strictly inside their bounds.

    1. **Newton.** Each iteration solves ``A_F A_Fᵀ d = b − A x`` (Cholesky) and takes an
       **exact** line search along d: maximizing
       D(λ + t d) over t is the one-row projection of ``v + Aᵀλ`` onto ``{(Aᵀd)ᵀx = dᵀb}``
       (:func:`project_box_equality`, exact and O(n)). Once F settles the step is exact. The rows
       are scaled to unit norm first: the least-squares step and the gradient step depend on
       the rows' scaling, and rows of the slack form ``[C, −I]`` differ by orders of magnitude.
    2. **Proximal Newton**, when a few Newton steps have not finished or A_F A_Fᵀ is singular (the
       rows dependent on F). Where the rows cannot be
       met on the current F (``b − A x`` not in the range of A_F A_Fᵀ: an LP-like polytope far
       from v) the dual grows linearly along directions the Newton step ignores, and plain
       Newton crawls from kink to kink. The proximal point method on the dual (the augmented
       Lagrangian method on the projection) maximizes ``D(λ) − ‖λ − λ_k‖²/(2σ)`` instead: a
       strongly concave function whose Newton system ``(A_F A_Fᵀ + I/σ) d = ∇`` always has a
       solution, with the same exact line search (one more, unbounded, coordinate carries the
       proximal term). σ grows tenfold per outer step; once the rows are met to 1e-9, plain
       Newton steps (least squares where A_F A_Fᵀ is singular) finish the projection exactly.
    3. **LP fallback.** If the iterations still end off the rows (beyond 1e-9 of the size of
       A x's terms), the feasibility LP decides (scipy's HiGHS): when HiGHS finds no point, a
       ``ProblemError`` says so; otherwise the point of the set nearest v in the 1-norm (an LP)
       is returned, made exact on the rows where it can be. That point is feasible but not the
       Euclidean projection (λ is then zero). A feasible set is never called empty on the
       iterations' word alone.

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
        Cap on the Newton iterations (both kinds together).

    Returns
    -------
    x : ndarray
        The projection: in the box exactly, A x = b to rounding (when the set is not empty).
    lam : ndarray
        The dual point λ with ``x = clip(v + Aᵀλ, lb, ub)`` (zeros after the LP fallback).

    Raises
    ------
    ProblemError
        On invalid data, for a zero row with a nonzero right-hand side, or when HiGHS finds the
        set empty.
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
    norms = np.sqrt(np.einsum("ij,ij->i", Am, Am))
    zero = norms == 0.0
    if np.any(zero & (bb != 0.0)):
        k = int(np.flatnonzero(zero & (bb != 0.0))[0])
        raise ProblemError(f"A x = b: row {k} of A is zero but b[{k}] = {bb[k]:.6g}; no point meets it")
    keep = ~zero
    scale = norms[keep]
    solver = _DualNewton(vv, lo, hi, Am[keep] / scale[:, None], bb[keep] / scale)
    done = solver.newton(min(20, max_iter), singular=False)
    sigma, best, flat = 1.0, np.inf, 0
    while not done and solver.iters < max_iter:
        solver.proximal(sigma, min(50, max_iter - solver.iters))
        res = solver.residual(solver.x)
        if res <= 1e-9 * solver.size(solver.x):
            done = solver.newton(min(20, max(0, max_iter - solver.iters)))
        # σ at its cap and the residual no longer halving: the rows cannot be met (or rounding rules)
        flat = flat + 1 if sigma >= 1e12 and not res < 0.5 * best else 0
        best = min(best, res)
        if flat >= 10:
            break
        sigma = min(10.0 * sigma, 1e12)
    # a coordinate within the rounding of w = v + Aᵀλ of its bound is at the bound: left a few ulps
    # of |w|'s terms inside, it would count as free and block a ray at a step of 1e-14
    slop = 8.0 * float(np.finfo(np.float64).eps) * (np.abs(vv) + solver.absA.T @ np.abs(solver.lam))
    x = np.where(np.abs(solver.x - lo) <= slop, lo, np.where(np.abs(solver.x - hi) <= slop, hi, solver.x))
    lam = np.zeros(Am.shape[0])
    lam[keep] = solver.lam / scale
    size = max(1.0, float(np.abs(bb).max(initial=0.0)), float((np.abs(Am) @ np.abs(x)).max(initial=0.0)))
    if float(np.abs(bb - Am @ x).max(initial=0.0)) <= 1e-9 * size:
        return x, lam
    return _nearest_feasible(vv, lo, hi, Am, bb), np.zeros(Am.shape[0])


def _infeasible_verdict(res: Any) -> bool:
    """Whether scipy's HiGHS result says the LP is infeasible (status 2 also carries HiGHS's "model
    error", which is no verdict on the set)."""
    return bool(res.status == 2 and "infeasible" in str(res.message).lower())


def _nearest_feasible(v: FloatArray, lo: FloatArray, hi: FloatArray, A: FloatArray, b: FloatArray) -> FloatArray:
    """The point of {lo ≤ x ≤ hi, A x = b} nearest v in the 1-norm (an LP, scipy's HiGHS), made exact
    on the rows where its free variables allow; raises a ``ProblemError`` with HiGHS's verdict
    when the set is empty."""
    from scipy.optimize import linprog

    n, m = v.size, A.shape[0]
    # in the 1-norm the point nearest v is the one nearest v clipped to the box (each coordinate's
    # distance beyond its bound is a constant): the LP sees moderate numbers
    c = np.clip(v, lo, hi)
    # variables [x; t] with |x − c| ≤ t: minimize Σt (sparse: 2n rows of two entries each)
    import scipy.sparse

    eye = scipy.sparse.identity(n, format="csr")
    G = scipy.sparse.bmat([[eye, -eye], [-eye, -eye]], format="csr")
    h = np.concatenate([c, -c])
    bounds = np.vstack([np.column_stack([lo, hi]), np.column_stack([np.zeros(n), np.full(n, np.inf)])])
    Aeq = scipy.sparse.hstack([scipy.sparse.csr_matrix(A), scipy.sparse.csr_matrix((m, n))], format="csr")
    res = linprog(np.concatenate([np.zeros(n), np.ones(n)]), A_ub=G, b_ub=h, A_eq=Aeq, b_eq=b, bounds=bounds,
                  method="highs")
    if res.x is None:
        # HiGHS did not settle the 1-norm LP: the feasibility LP alone decides
        res = linprog(np.zeros(n), A_eq=A, b_eq=b, bounds=np.column_stack([lo, hi]), method="highs")
        if _infeasible_verdict(res):
            raise ProblemError("A x = b: no point of the box meets the rows (HiGHS finds the feasibility LP "
                               f"infeasible: {res.message})")
        if res.x is None:
            raise ProblemError(f"A x = b: the projection failed and HiGHS could not decide feasibility "
                               f"({res.message}); the rows may be badly scaled")
    return _exact_on_rows(np.asarray(res.x[:n], dtype=np.float64), lo, hi, A, b)


def _exact_on_rows(x: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray) -> FloatArray:
    """An LP point (rows met to the simplex's tolerance) in the box exactly, its variables off their
    bounds re-solved so that A x = b to rounding (the smallest such correction); the clipped point
    itself when the correction would leave the box."""
    x = np.clip(x, lb, ub)
    scale = np.maximum(1.0, np.abs(x))
    at_lb = np.abs(x - lb) <= 1e-9 * scale
    at_ub = np.abs(x - ub) <= 1e-9 * scale
    x = np.where(at_lb, lb, np.where(at_ub, ub, x))
    basic = np.flatnonzero(~(at_lb | at_ub))
    if basic.size:
        import scipy.linalg

        x_try = x.copy()
        try:
            x_try[basic] += scipy.linalg.lstsq(A[:, basic], b - A @ x, lapack_driver="gelsy", check_finite=False)[0]
        except (np.linalg.LinAlgError, ValueError):
            return x
        if np.all(x_try >= lb) and np.all(x_try <= ub):
            return x_try
    return x


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
    if _infeasible_verdict(res):
        raise ProblemError(f"A x = b is infeasible for the bounds (HiGHS finds the feasibility LP infeasible: {res.message})")
    if res.x is None:
        raise ProblemError(f"A x = b: HiGHS found no feasible point ({res.message}); the rows may be badly scaled")
    x = _exact_on_rows(np.asarray(res.x, dtype=np.float64), lb, ub, A, b)
    size = max(1.0, float(np.abs(b).max(initial=0.0)), float((np.abs(A) @ np.abs(x)).max(initial=0.0)))
    if float(np.abs(A @ x - b).max(initial=0.0)) <= 1e-13 * size:
        return x
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
