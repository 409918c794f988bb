"""The search primitives of gradient projection: products under a deadline, the projected search, the
CG run on a face and the face factor of the Newton steps.

:class:`qpcore_strategies.gradient_projection.GPCG` is built from these pieces; they know nothing of its
cycles and phases:

- :func:`projected_search` along the projected path ``P[x + αd]`` onto the feasible set: exact
  over the breakpoints of a box (a piecewise quadratic, segment by segment, one product per
  round), or, with equality rows (one row; disjoint groups, whose projection separates into
  one-row projections; general rows, projected by the exact dual Newton method of
  :func:`qpcore.linalg.projection.project_rows`), the exact minimum of the ray up to its first
  breakpoint and safeguarded backtracking beyond (:class:`SearchResult`);
- ``_product``: Q v checking the run's deadline, in slices for a kernel operator;
- ``_CGRun``: a conjugate-gradient run on one face, restricted to the null space of the rows
  there, resumable across steps;
- ``_FaceFactor``: a Cholesky factor of a face block Q_FF kept while the face drifts, the nearby
  faces solved through a Schur complement of the difference.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from qpcore.linalg.blas import gemm, gemv
from qpcore.backends.capabilities import QOperator, cross_block, principal_block
from qpcore.backends.operators import DenseQ, KernelQ
from qpcore.core.optimality import feasibility_scale
from qpcore.core.problem import QP
from qpcore.linalg.projection import project_box_equality, project_groups, project_rows

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

__all__ = ["SearchResult", "projected_search"]

#: nonzeros per slice of a time-sliced product with a KernelQ (one kernel row each)
_SLICE = 1024


class _Deadline(Exception):
    """The run's deadline passed inside a product (caught where the state is consistent)."""


def _product(qp: QP, v: FloatArray, deadline: float = np.inf) -> FloatArray:
    """Q v, checking the deadline first and, for a KernelQ, between slices of ``_SLICE`` rows.

    Raises ``_Deadline`` when the deadline has passed; nothing is mutated before that.
    """
    Q = qp.Q
    if isinstance(Q, DenseQ):
        if deadline != np.inf and time.perf_counter() >= deadline:
            raise _Deadline
        # Q v = Σ_i v_i Q[i, :] over the support of v: gathering |supp| rows and reading them beats
        # reading all of Q below about n/4 (directions on a small face)
        nz = np.flatnonzero(v)
        if 4 * nz.size < v.size:
            sub: FloatArray = gemv(Q.M[nz], v[nz], trans=True)
            return sub
        return gemv(Q.M, v)
    if deadline == np.inf:
        return Q.matvec(v)
    if time.perf_counter() >= deadline:
        raise _Deadline
    if not isinstance(Q, KernelQ):
        return Q.matvec(v)
    nz = np.flatnonzero(v)
    if nz.size <= _SLICE:
        return Q.matvec(v)
    out = np.zeros(v.size)
    part = np.zeros(v.size)
    for k in range(0, nz.size, _SLICE):
        if k and time.perf_counter() >= deadline:
            raise _Deadline
        idx = nz[k:k + _SLICE]
        part[idx] = v[idx]
        out += Q.matvec(part)
        part[idx] = 0.0
    return out


def _columns(qp: QP, idx: NDArray[np.intp], w: FloatArray) -> FloatArray | None:
    """Q[:, idx] w from the rows of a dense Q (symmetric: rows are columns), or None when Q is not
    dense or idx is so large that a full product costs about as much."""
    if not isinstance(qp.Q, DenseQ) or 4 * idx.size > qp.n:
        return None
    out: FloatArray = gemv(qp.Q.M[idx], w, trans=True)
    return out


@attrs.frozen
class SearchResult:
    """The outcome of a projected search.

    Attributes
    ----------
    x : ndarray
        The accepted point (``x`` itself when no step was accepted).
    alpha : float
        The accepted step length (0 when none; ``inf`` for an unbounded ray).
    decrease : float
        q(x) − q(x_new) ≥ 0 (``inf`` when the quadratic is unbounded below along the path).
    Qs : ndarray or None
        Q (x_new − x), so the caller updates its gradient without another product.
    """

    x: FloatArray
    alpha: float
    decrease: float
    Qs: FloatArray | None


def _no_move(x: FloatArray) -> SearchResult:
    return SearchResult(x, 0.0, 0.0, None)


def _prefix(v: FloatArray) -> FloatArray:
    """[0, v₁, v₁+v₂, …]: sums over the first k clipped coordinates, k = 0..K."""
    return np.concatenate(([0.0], np.cumsum(v)))


def _prefix2(M: FloatArray) -> FloatArray:
    """[0, Σ_{j,l≤1} M_jl, Σ_{j,l≤2} M_jl, …] via a 2-D prefix sum."""
    return np.concatenate(([0.0], np.diagonal(M.cumsum(0).cumsum(1))))


def _hit_times(qp: QP, x: FloatArray, d: FloatArray) -> FloatArray:
    """t_i at which x_i + t d_i reaches the bound it moves toward (inf: never; may be ≤ 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = (np.where(d > 0, qp.ub, qp.lb) - x) / d
    t[(d == 0) | ~np.isfinite(t)] = np.inf
    return t


def _minus_columns(qp: QP, Qd: FloatArray, idx: NDArray[np.intp], w: FloatArray) -> FloatArray | None:
    """Qd − Q[:, idx] w when that is cheap (dense Q, few columns), else None."""
    part = _columns(qp, idx, w)
    return None if part is None else Qd - part


def _box_path_round(qp: QP, x: FloatArray, g: FloatArray, d: FloatArray, segments: int,
                    Qd: FloatArray | None, deadline: float
                    ) -> tuple[FloatArray, float, bool, bool, FloatArray | None]:
    """Exact minimizer of q along P[x + αd] over the first ``segments`` breakpoints.

    On the k-th segment, with the first k breakpoint coordinates clipped, the path is
    s(α) = α d⁽ᵏ⁾ + e⁽ᵏ⁾ and q's slope is A_k + α c_k. Both come from Qd and the principal block
    of Q on the clipped coordinates by prefix sums, so a round costs one product and a k×k block.
    Returns (d with blocked coordinates removed, α*, found inside the round, unbounded ray, Q d).
    """
    t = _hit_times(qp, x, d)
    blocked = t <= 0.0
    if blocked.any():                      # at a bound and pointing out (or fixed): never moves
        bi = np.flatnonzero(blocked)
        # on a dense Q the blocked columns alone update Qd (a round then costs no full product)
        Qd = None if Qd is None else _minus_columns(qp, Qd, bi, d[bi])
        d = np.where(blocked, 0.0, d)
        t[blocked] = np.inf
    if not d.any():
        return d, 0.0, True, False, None
    if Qd is None:
        Qd = _product(qp, d, deadline)
    gd, dQd = float(g @ d), float(d @ Qd)
    if not gd < 0.0:
        return d, 0.0, True, False, Qd
    finite = np.flatnonzero(np.isfinite(t))
    if finite.size > segments + 1:
        finite = finite[np.argpartition(t[finite], segments)[: segments + 1]]
    finite = finite[np.argsort(t[finite], kind="stable")]
    idx, t_next = finite[:segments], (float(t[finite[segments]]) if finite.size > segments else np.inf)
    tk, dk = t[idx], d[idx]
    u = tk * dk                            # the clipped coordinates' displacement, exactly bound − x
    B = principal_block(qp.Q, idx)
    Qdk = Qd[idx]
    c = dQd - 2.0 * _prefix(dk * Qdk) + _prefix2(B * np.outer(dk, dk))
    A = gd - _prefix(g[idx] * dk) + _prefix(u * Qdk) - _prefix2(B * np.outer(dk, u))
    start = np.concatenate(([0.0], tk))
    end = np.concatenate((tk, [t_next]))
    with np.errstate(divide="ignore", invalid="ignore"):
        amin = np.where(c > 0, -A / np.where(c > 0, c, 1.0), np.inf)
    at_start = A + start * c >= 0.0
    if not np.isfinite(t_next) and np.count_nonzero(d) == idx.size:
        at_start[-1] = True                 # every moving coordinate is clipped: the path ends there
    hit = np.flatnonzero(at_start | (np.isfinite(amin) & (amin <= end)))
    if hit.size:
        k = int(hit[0])
        return d, float(start[k]) if at_start[k] else max(float(amin[k]), float(start[k])), True, False, Qd
    if not np.isfinite(t_next):
        return d, np.inf, False, True, Qd   # descent with nonpositive curvature and no bound ahead
    return d, t_next, False, False, Qd


def _box_point(qp: QP, x: FloatArray, d: FloatArray, alpha: float) -> FloatArray:
    """P[x + αd] with coordinates whose breakpoint is ≤ α set exactly to their bound."""
    xn = np.clip(x + alpha * d, qp.lb, qp.ub)
    hit = _hit_times(qp, x, d) <= alpha
    xn[hit] = np.where(d > 0, qp.ub, qp.lb)[hit]
    return xn


def _box_search(qp: QP, x: FloatArray, g: FloatArray, d: FloatArray, segments: int,
                rounds: int, Qd: FloatArray | None, deadline: float) -> SearchResult:
    x0, total, alpha_total = x, 0.0, 0.0
    Qs_total = None
    try:
        for _ in range(rounds):
            d, alpha, found, unbounded, Qd = _box_path_round(qp, x, g, d, segments, Qd, deadline)
            if unbounded:
                return SearchResult(x0, np.inf, np.inf, None)
            if alpha <= 0.0:
                break
            xn = _box_point(qp, x, d, alpha)
            s = xn - x
            # s = αd except on the coordinates clipped to their bound: on a dense Q those columns
            # give Qs from Qd, so a search costs one full product whatever its rounds
            # ((x + αd) − x differs from αd by rounding everywhere: only larger gaps are clips)
            e = s - alpha * d
            ei = np.flatnonzero(np.abs(e) > 16.0 * np.finfo(np.float64).eps * (np.abs(x) + np.abs(xn)))
            part = None if Qd is None else _columns(qp, ei, e[ei])
            Qs = alpha * Qd + part if Qd is not None and part is not None else _product(qp, s, deadline)
            dq = float(g @ s) + 0.5 * float(s @ Qs)
            if not dq < 0.0:                  # rounding on a flat path: keep what we have
                break
            total -= dq
            alpha_total += alpha
            Qs_total = Qs if Qs_total is None else Qs_total + Qs
            x, g = xn, g + Qs
            if found:
                break
    except _Deadline:
        pass                                  # the rounds taken so far are each a decrease
    if Qs_total is None:
        return _no_move(x0)
    return SearchResult(x, alpha_total, total, Qs_total)


def _snap(qp: QP, x: FloatArray, rel: float = 8.0 * np.finfo(np.float64).eps) -> FloatArray:
    """Put coordinates within ``rel`` (relative) of a finite bound onto it (in place; returns x).

    Rounding (in x + αd, or in the projection's multiplier) leaves coordinates a few ulps off their
    bound; one would count as free and block the face, and the certificate's violating pair, for a
    move of 1e-16.
    """
    with np.errstate(invalid="ignore"):
        near_lb = np.isfinite(qp.lb) & (np.abs(x - qp.lb) <= rel * np.maximum(1.0, np.abs(qp.lb)))
        near_ub = np.isfinite(qp.ub) & (np.abs(x - qp.ub) <= rel * np.maximum(1.0, np.abs(qp.ub)))
    x[near_lb] = qp.lb[near_lb]
    x[near_ub] = qp.ub[near_ub]
    return x


def _eq_point(qp: QP, v: FloatArray) -> FloatArray:
    """P_Ω[v], snapped: one row, disjoint groups (one one-row projection per group), or general
    rows (the dual Newton projection, :func:`qpcore.linalg.projection.project_rows`)."""
    if qp.m == 1:
        return _snap(qp, project_box_equality(v, qp.lb, qp.ub, qp.A[0], float(qp.b[0]))[0])
    eq = qp.equality
    if eq.kind == "general":
        return _snap(qp, project_rows(v, qp.lb, qp.ub, qp.A, qp.b)[0])
    return _snap(qp, project_groups(v, qp.lb, qp.ub, eq.group, eq.coef, qp.b)[0])


def _rows_met(qp: QP, x: FloatArray, rel: float) -> bool:
    """Whether A x = b holds to ``rel`` of the certificate's feasibility scale
    (:func:`qpcore.core.optimality.feasibility_scale`: the largest sum of a row's term magnitudes, ‖x‖∞,
    ‖b‖∞, 1). Not row by row: a row whose terms all vanish at x (its variables at a bound of 0)
    meets its own tiny scale only to the rounding of the large rows, and would refuse every point."""
    return float(np.abs(qp.A @ x - qp.b).max(initial=0.0)) <= rel * feasibility_scale(qp, x)


def _groups(qp: QP) -> tuple[NDArray[np.intp], FloatArray, int]:
    """(each variable's group, m for a variable in no row; its coefficient; m) of a problem whose
    rows are disjoint groups (one row included): sums per row are then ``bincount``s."""
    eq = qp.equality
    return np.where(eq.group >= 0, eq.group, qp.m), eq.coef, qp.m


def _row_sums(bins: NDArray[np.intp], m: int, w: FloatArray) -> FloatArray:
    """Σ_{i in row k} w_i for each row k (the disjoint groups' Aᵀ-free products)."""
    out = np.bincount(bins, weights=w, minlength=m + 1)[:m]
    return np.asarray(out, dtype=np.float64)


def _lstsq(M: FloatArray, r: FloatArray, rcond: float | None = None) -> FloatArray:
    """The minimum-norm least-squares solution of M y = r by a complete orthogonal factorization
    (LAPACK's gelsy, QR with column pivoting): unlike the SVD of numpy's gelsd it has no iteration
    that can fail to converge (it did on a face of QPCBOEI2, rows scaled from 1 to 1e3). gelss's
    SVD if even that fails; zeros (no correction) as the last resort."""
    for driver in ("gelsy", "gelss"):
        try:
            out: FloatArray = scipy.linalg.lstsq(M, r, cond=rcond, lapack_driver=driver, check_finite=False)[0]
        except (np.linalg.LinAlgError, ValueError):
            continue
        if np.isfinite(out).all():
            return out
    return np.zeros((M.shape[1],) + r.shape[1:])


def _row_basis(A: FloatArray, idx: NDArray[np.intp]) -> FloatArray | None:
    """An orthonormal basis (k × n, zero off ``idx``) of the span of A's rows restricted to ``idx``;
    None when they all vanish there.

    QR with column pivoting of A[:, idx]ᵀ: its |R_jj| do not increase, so the first k columns of
    its Q span the rows (rank revealing). Without pivoting a dependent row leaves a column of Q
    in a direction made of rounding, which is not supported on ``idx``, and dropping it loses
    the span of the rows after it: a projection built on such a basis is no projection (CG on
    CVXQP1_S's slack form met pᵀP(Qp) < 0 for a PSD Q and called it nonconvex).
    """
    rows = A[:, idx]
    if not rows.any():
        return None
    Qr, Rr, _ = scipy.linalg.qr(rows.T, mode="economic", pivoting=True, check_finite=False)
    d = np.abs(np.diagonal(Rr))
    k = int(np.count_nonzero(d > 1e-12 * float(d.max(initial=0.0))))
    if k == 0:
        return None
    out = np.zeros((k, A.shape[1]))
    out[:, idx] = Qr[:, :k].T
    return out


def _null_project(qp: QP, d: FloatArray, free: BoolArray | None = None) -> FloatArray:
    """d (zero off ``free``) projected onto the null space of the rows there. Disjoint groups: each
    group's row removed in closed form (restricted to any set they stay orthogonal: their supports
    are disjoint); general rows: by least squares. A new array."""
    if qp.equality.kind == "general":
        on = np.flatnonzero(free) if free is not None else np.arange(qp.n)
        out = np.zeros(qp.n)
        dS = d[on]
        AS = qp.A[:, on]
        res = AS @ dS
        out[on] = dS - _lstsq(AS, res, 1e-12) if res.any() else dS
        return out
    bins, a, m = _groups(qp)
    w: FloatArray = np.where(free, d, 0.0) if free is not None else d.copy()
    af: FloatArray = np.where(free, a, 0.0) if free is not None else a
    nrm = _row_sums(bins, m, af * af)
    corr = np.divide(_row_sums(bins, m, af * w), nrm, out=np.zeros(m), where=nrm > 0)
    w -= np.append(corr, 0.0)[bins] * af
    return w


def _equality_search(qp: QP, x: FloatArray, g: FloatArray, d: FloatArray, alpha: float, mu: float,
                     max_backtracks: int, deadline: float) -> SearchResult:
    """Projected search along P_Ω[x + αd], Ω = {box, A x = b} (one row, disjoint groups or general
    rows: "aᵀx = b" below stands for every row).

    When d keeps aᵀx fixed and x + αd stays in the box for small α (a CG step on the face, a
    pair direction), the path is the ray x + αd up to its first breakpoint: its minimum there is
    exact; past the breakpoint only the projected trial step P_Ω[x + αd] is compared (one
    projection, not a backtracking sequence: the face step is what CG computed, and the next
    cycle's gradient projection handles the rest). Other directions, and a ray blocked at once by
    a bound: safeguarded backtracking from α with the test q(x(α)) ≤ q(x) + μ gᵀ(x(α) − x).
    """
    A, b = qp.A, qp.b
    absA = np.abs(A)
    best: SearchResult | None = None
    ad = A @ d
    ray = bool(np.all(np.abs(ad) <= 1e-8 * (absA @ np.abs(d))))
    try:
        if ray:
            if ad.any():
                # a face step off the null space by rounding only: put it back there exactly, on its support
                d = _null_project(qp, d, d != 0)
            t = _hit_times(qp, x, d)
            t0 = float(t.min(initial=np.inf))
            # a ray that a bound blocks at once (a coordinate at its bound pointing out, e.g. −g
            # happening to lie in the null space of a) bends at α = 0: only backtracking sees that
            ray = t0 > 0.0
        if ray:
            lb, ub = qp.lb, qp.ub
            Qd = _product(qp, d, deadline)
            gd, dQd = float(g @ d), float(d @ Qd)
            if not gd < 0.0:
                return _no_move(x)
            a_ray = -gd / dQd if dQd > 0 else np.inf
            if not np.isfinite(min(a_ray, t0)):
                return SearchResult(x, np.inf, np.inf, None)
            a0 = min(a_ray, t0)
            xs = x + a0 * d
            hit = t <= a0
            xs[hit] = np.where(d > 0, ub, lb)[hit]
            xs = np.clip(xs, lb, ub)
            s = xs - x
            Qs = _product(qp, s, deadline)
            dq = float(g @ s) + 0.5 * float(s @ Qs)
            if dq < 0.0:
                best = SearchResult(xs, a0, -dq, Qs)
            if a_ray <= t0 or alpha <= t0:    # the ray's minimum, or the trial step, lies before any bound
                return best if best is not None else _no_move(x)
            max_backtracks = 1
        xscale = max(1.0, float(np.abs(x).max(initial=0.0)))
        tiny = 4.0 * np.finfo(np.float64).eps * xscale
        dmax = float(np.abs(d).max())
        # a Cauchy step over a nearly flat direction (the zero curvature of slack variables) can be
        # astronomically long: the projection of such a trial point costs hundreds of Newton steps,
        # loses the rows to cancellation, and lands where that of a point 1e3 times the box's
        # extent away lands. Start at most that far
        ends = np.concatenate([qp.lb[np.isfinite(qp.lb)], qp.ub[np.isfinite(qp.ub)]])
        span = max(xscale, float(np.abs(ends).max(initial=0.0)))
        alpha = min(alpha, 1e3 * span / dmax)
        for _ in range(max_backtracks):
            if alpha * dmax <= tiny:
                break
            if deadline != np.inf and time.perf_counter() >= deadline:
                raise _Deadline               # a projection of general rows can take a while
            v = x + alpha * d
            if not np.isfinite(v).all():      # a huge trial step: shrink it, the path is what matters
                alpha *= 1e-3
                continue
            xa = _eq_point(qp, v)
            # a trial point far outside the box loses aᵀx = b to cancellation (|v| ≫ |x|): reject it
            if not _rows_met(qp, xa, 1e-10):
                alpha *= 0.1
                continue
            s = xa - x
            gs = float(g @ s)
            if not gs < 0.0:
                alpha *= 0.5
                continue
            Qs = _product(qp, s, deadline)
            sQs = float(s @ Qs)
            dq = gs + 0.5 * sQs
            if dq <= mu * gs:
                if best is None or -dq > best.decrease:
                    best = SearchResult(xa, alpha, -dq, Qs)
                break
            theta = -gs / sQs if sQs > 0 else 0.5  # the minimizer along s, safeguarded
            alpha *= min(0.5, max(0.1, theta))
    except _Deadline:
        pass                                  # the best accepted trial so far (if any) stands
    return best if best is not None else _no_move(x)


def projected_search(qp: QP, x: FloatArray, g: FloatArray, d: FloatArray, alpha: float = 1.0, *,
                     mu: float = 0.01, max_backtracks: int = 60, segments: int = 64,
                     rounds: int = 8, Qd: FloatArray | None = None, deadline: float = np.inf) -> SearchResult:
    """Search along the projected path P[x + αd] onto the feasible set of ``qp``.

    Box constraints: the first local minimizer of the piecewise quadratic along the path (the
    path objective need not be unimodal), found exactly segment by segment (``segments``
    breakpoints per round, one product with Q and one principal block per round, at most
    ``rounds`` rounds; each round's point is a decrease). With equality rows (one row, disjoint
    groups projected group by group, general rows by the dual Newton projection): the ray up to
    the first breakpoint is minimized exactly when d keeps aᵀx fixed, and otherwise safeguarded
    backtracking from ``alpha`` with the Moré–Toraldo sufficient-decrease test
    ``q(x(α)) ≤ q(x) + μ gᵀ(x(α) − x)``.

    Parameters
    ----------
    qp : QP
        The problem: box constraints, with or without equality rows (one, disjoint groups or general).
    x : ndarray
        A feasible point.
    g : ndarray
        The gradient Qx + c at ``x``.
    d : ndarray
        The search direction.
    alpha : float
        The first trial step of the backtracking (equality case).
    mu : float
        Sufficient-decrease constant, 0 < mu < 1/2.
    max_backtracks : int
        Cap on the trial steps of the backtracking.
    segments, rounds : int
        Breakpoints examined per round and rounds (box case).
    Qd : ndarray, optional
        Q d when the caller has it (box case: saves the first round's product).
    deadline : float
        A ``time.perf_counter()`` value (``State.deadline``): once it has passed, the search
        takes no further product and returns the best point accepted so far (x itself if none).

    Returns
    -------
    SearchResult
        The accepted point, its step, the decrease and Q(x_new − x); ``decrease == inf`` marks a
        path along which the quadratic is unbounded below.
    """
    if not d.any():
        return _no_move(x)
    if qp.m == 0:
        return _box_search(qp, x, g, d, max(1, segments), max(1, rounds), Qd, deadline)
    return _equality_search(qp, x, g, d, alpha, mu, max_backtracks, deadline)


@attrs.define(slots=True, eq=False)
class _CGRun:
    """A CG phase in progress on one face, resumed across steps (x does not move while it runs)."""

    x: FloatArray                 # the point whose face this is (the state's x when the run began)
    free: BoolArray               # the face's free variables
    af: FloatArray | None         # the rows on the free set, orthonormal (k × n; None: no row touches it)
    unit: FloatArray | None       # |a_i| (1 where a_i = 0): residuals in the units of the measure
    d: FloatArray                 # the CG step so far
    r: FloatArray                 # the face residual −P_F(g + Q d)
    p: FloatArray                 # the CG direction
    rr: float                     # r·r
    limit: int                    # iterations allowed (dim(face) + 1, capped by max_cg)
    best: float = 0.0             # the largest decrease of one iteration
    iters: int = 0

    def proj(self, v: FloatArray) -> FloatArray:
        """v onto the face: zero off the free set, and orthogonal to a there."""
        w: FloatArray = v * self.free
        if self.af is not None:
            w -= self.af.T @ (self.af @ w)
        return w


class _FaceFactor:
    """Solves with principal blocks Q_FF of a dense Q while the face F drifts from a base B.

    A Cholesky factor of Q_BB is kept; a face that differs from B by a few variables (added A,
    removed D) is solved exactly through the bordered system over B ∪ A with y_D = 0, whose
    Schur complement is (|A| + |D|)-square:
    S = [[Q_AA, 0], [0, 0]] − Vᵀ Q_BB⁻¹ V with V = [Q_BA, E_D]. The cost is one blocked solve with
    the factor for V's columns (2|B|²(|A| + |D|) flops) instead of |F|³/3 for a new factor; one step
    of iterative refinement against Q_FF itself repairs what the Schur complement loses on an
    ill-conditioned face.
    """

    def __init__(self, Q: QOperator, F: NDArray[np.intp]) -> None:
        self.Q = Q
        self.n = int(Q.shape[0])
        self.base = F
        self.pos = np.full(self.n, -1, dtype=np.intp)
        self.pos[F] = np.arange(F.size)
        # the block is symmetric, so its transpose is the Fortran-ordered array LAPACK factors in place
        B = self.block(F, F)
        self.cf = scipy.linalg.cho_factor(B.T, lower=True, overwrite_a=True, check_finite=False)
        self.key: tuple[bytes, bytes] | None = None
        self.schur: tuple[NDArray[np.intp], NDArray[np.intp], FloatArray, FloatArray, Any] | None = None

    def block(self, rows: NDArray[np.intp], cols: NDArray[np.intp]) -> FloatArray:
        """Q[rows][:, cols], a new array (on a dense Q rows then columns by take: half the time of
        an open-mesh index)."""
        if isinstance(self.Q, DenseQ):
            out: FloatArray = self.Q.M.take(rows, axis=0).take(cols, axis=1)
            return out
        return np.array(cross_block(self.Q, rows, cols), dtype=np.float64)

    def solve(self, F: NDArray[np.intp], r: FloatArray, fresh: bool = False) -> FloatArray | None:
        """Q_FF⁻¹ r, or None when a new factor of Q_FF would be cheaper than the Schur complement
        (2|B|²(|A| + |D|) flops against |F|³/3), or the complement is singular: the caller factors
        afresh. ``fresh``: F is the base (no check)."""
        pos = self.pos
        inB = pos[F] >= 0
        if fresh or (inB.all() and F.size == self.base.size):
            out: FloatArray = scipy.linalg.cho_solve(self.cf, r, check_finite=False)
            return out
        y = self._schur_solve(F, inB, r)
        if y is None:
            return None
        full = np.zeros(self.n)
        full[F] = y
        res = r - (gemv(self.Q.M, full) if isinstance(self.Q, DenseQ) else self.Q.matvec(full))[F]
        if float(np.abs(res).max()) > 1e-12 * float(np.abs(r).max()):
            dy = self._schur_solve(F, inB, res)
            if dy is not None:
                y = y + dy
        return y

    def _schur_solve(self, F: NDArray[np.intp], inB: BoolArray, r: FloatArray) -> FloatArray | None:
        pos, base = self.pos, self.base
        added = F[~inB]
        mask = np.zeros(self.n, dtype=bool)
        mask[F] = True
        removed = base[~mask[base]]
        na, nd = added.size, removed.size
        if 6.0 * float(base.size) ** 2 * (na + nd) > float(F.size) ** 3:
            return None
        key = (added.tobytes(), removed.tobytes())
        if self.key != key or self.schur is None:
            k = base.size
            V = np.zeros((k, na + nd))
            V[:, :na] = self.block(added, base).T
            V[pos[removed], na + np.arange(nd)] = 1.0
            W = scipy.linalg.cho_solve(self.cf, V, check_finite=False)
            S = -gemm(V, W, trans_a=True)
            S[:na, :na] += self.block(added, added)
            try:
                lu = scipy.linalg.lu_factor(S, check_finite=False)
            except (ValueError, np.linalg.LinAlgError):
                return None
            if not np.all(np.isfinite(lu[0])) or np.any(np.diag(lu[0]) == 0.0):
                return None
            self.key, self.schur = key, (added, removed, V, W, lu)
        _, _, V, W, lu = self.schur
        rB = np.zeros(base.size)
        rB[pos[F[inB]]] = r[inB]
        t = scipy.linalg.cho_solve(self.cf, rB, check_finite=False)
        rhs = np.concatenate([r[~inB], np.zeros(nd)]) - gemv(V, t, trans=True)
        z = scipy.linalg.lu_solve(lu, rhs, check_finite=False)
        yB = t - gemv(W, z)
        y = np.empty(F.size)
        y[inB] = yB[pos[F[inB]]]
        y[~inB] = z[:na]
        return y
