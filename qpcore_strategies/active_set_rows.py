"""The dense active-set method for several equality rows: a factor of the face updated per pivot.

:class:`qpcore_strategies.active_set.DenseActiveSet` hands a problem with m ≥ 2 rows (general rows or
disjoint groups) to this engine. It is the same primal active-set method: each step minimizes on
the face (the free set F, the others held at their bounds) subject to ``A_F p = 0``, walks toward
that minimizer until a bound blocks, or releases a bound whose multiplier has the wrong sign.

**The factor** (:class:`qpcore_strategies.active_set_factor.RowsFactor`, re-exported here). The
face's KKT matrix [[Q_FF, A_Fᵀ], [A_F, 0]] is solved by the range-space method on
M = Q_FF + τ A_FᵀA_F: an upper Cholesky factor R of M and the inverse of the Schur complement
S = A_F M⁻¹ A_Fᵀ, both updated per variable that enters or leaves F (nothing is refactorized per
pivot); its multipliers are exact (S is nonsingular: see the working set below). A fresh
factorization is taken every ``refactor_every`` updates (the downdates accumulate rounding), and
whenever a solve's residual shows the factor has drifted.

**The working set keeps A_F of full row rank.** The rows are first reduced to those independent
on the movable variables and scaled to unit size. The start completes the free set with variables
at their bounds (free, on their bound) until A_F has full row rank; after that a bound that
blocks a face step never breaks it (the step p has A p = 0 and p_i ≠ 0, so e_i is independent of
the working set), a release only adds a column, and the pivot below exchanges one column for
another with the same span. So S is nonsingular, the face's multipliers are unique, and the
release rule never guesses. A loss of rank by rounding is repaired by the same completion.

**Pivots on faces without a minimizer.** A free variable j whose column makes M singular
(Q v = 0 and A v = 0 on F plus j: the face is a linear ray, the simplex method's entering column)
is not added; x moves along the descending sign of v to the first bound (the ratio test), and the
blocking variable leaves F as j enters it (an exchange: S⁻¹ is updated before it is downdated,
so it never passes a singular matrix); no blocking bound means ``unbounded``. Along a flat such
line (gᵀv = 0 to rounding) x moves to the nearest bound at no cost, so F stays a face the factor
holds; only a flat line with no bound at all leaves j *held* (free, outside the factor: its
multiplier is 0).

**Degeneracy: Bland's rule after a stall.** At a degenerate vertex (free variables on their bounds)
steps of length zero can follow one another, and the largest-violation release rule may cycle
through working sets without moving (the QISRAEL tail did this for thousands of steps). The
engine counts consecutive steps that do not move x; past ``stall_limit`` it switches to Bland's
least-index rule for both choices (the variable released: the smallest index with a wrong-signed
multiplier; the bound that blocks: the smallest index among the tied ratios) until x moves again.
For Q = 0 on the face (the vertices of the LP-like problems where the stalls occur) these steps
are the simplex method's pivots, and Bland's rule makes them finite (no working set repeats).
For a general Q no such theorem is claimed, so a backstop bounds every stall: should it outlast
``stall_limit + n`` steps under Bland's rule, a **direction step** follows: the steepest feasible
descent direction of the linearization, min gᵀd subject to A d = 0, the sign constraints of the
variables on bounds and |d| ≤ 1 (a small LP, scipy's HiGHS), and the exact line search along it.
Its value is −min_λ Σ|P(g − Aᵀλ)|, so it either descends strictly (x moves: the stall ends) or
shows the point optimal to within it; the variables it lifts off their bounds enter the factor
by updates. Bland's rule was chosen over EXPAND (Gill, Murray, Saunders and Wright 1989) because
EXPAND lets variables violate their bounds by a growing tolerance and must then restore exact
feasibility, which would break the exact vertices this method ends at; and EXPAND itself can
cycle (Hall and McKinnon 1998).

**The end.** At a face minimizer the gradient is recomputed and the face's own multipliers
(λ = −μ, exact: from the nonsingular face system) are verified by :func:`qpcore.core.certificate.kkt`, the
certificate ``qpcore.solve`` computes at the end; ``multipliers`` hands them to it.

**Non-convexity.** On a Q with negative curvature (checked once by the caller) every step first
tests the face for a direction of negative curvature in the null space of A_F (an eigenvector of
the reduced Hessian) and follows it to a bound (``unbounded`` when none blocks); ``qpcore.solve``
then reports ``nonconvex``, never ``converged``.
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.core.certificate import kkt
from qpcore.core.problem import QP
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.linalg.projection import bound_start, bound_steps, feasible_start
from qpcore_strategies.active_set_factor import RowsFactor

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["RowsFactor", "RowsWork", "rows_init", "rows_multipliers", "rows_step"]


@attrs.define(slots=True, eq=False)
class RowsWork(Work):
    """The engine's slot in the state: the dense Q, the scaled independent rows, the factor and the
    anti-cycling state."""

    Q: FloatArray
    Qs: sp.csr_matrix | None          # Q as CSR when sparse: products over the face cost O(nnz)
    A: FloatArray                     # the rows independent on the movable variables, scaled
    b: FloatArray
    rows: IndexArray                  # their indices in qp.A
    row_scale: FloatArray             # A = diag(row_scale) qp.A[rows]
    tol: float
    steps_left: int
    fac: RowsFactor
    movable: BoolArray
    nonconvex: bool = False
    held: BoolArray = attrs.field(factory=lambda: np.zeros(0, dtype=bool))
    stall: int = 0                    # consecutive steps that did not move x
    stall_limit: int = 50
    refactor_every: int = 100
    lam: FloatArray | None = None     # the multipliers of the last face minimizer that certified
    polish: int = 0                   # consecutive face steps taken below the objective's rounding

    @property
    def bland(self) -> bool:
        """Whether the stall is long enough for Bland's least-index rule (never with a negative
        ``stall_limit``: the rule switched off, for experiments)."""
        return 0 <= self.stall_limit < self.stall

    def release(self) -> None:
        """No ``resume``: a finished run keeps neither the dense Q nor the factor."""
        return None


def _independent_rows(A: FloatArray, movable: BoolArray) -> IndexArray:
    """Indices of rows of A independent on the movable variables (QR with column pivoting of
    A_movableᵀ); the others are combinations of them there, met whenever they are (the fixed part
    is constant)."""
    Am = A[:, movable]
    if Am.shape[1] == 0 or Am.shape[0] == 0:
        return np.zeros(0, dtype=np.intp)
    scale = np.abs(Am).max(axis=1)
    Am = Am / np.where(scale > 0, scale, 1.0)[:, None]
    _, R, piv = sla.qr(Am.T, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    rank = int(np.count_nonzero(d > 1e-12 * max(float(d.max(initial=0.0)), 1e-300)))
    return np.sort(piv[:rank]).astype(np.intp)


def _sparse_or_none(Q: FloatArray) -> sp.csr_matrix | None:
    nnz = int(np.count_nonzero(Q))
    return sp.csr_matrix(Q) if nnz < 0.2 * Q.size else None


def rows_init(qp: QP, Q: FloatArray, x0: FloatArray | None, tol: float, nonconvex: bool,
              stall_limit: int = 50, refactor_every: int = 100) -> State:
    """The engine's initial state: a feasible start (x0 projected if it is not feasible, else a
    basic feasible point, :func:`qpcore.linalg.projection.bound_start`), the bound status as working set,
    completed so that A_F has full row rank, and the factor of that free set.

    Parameters
    ----------
    qp : QP
        A problem with m ≥ 2 rows.
    Q : ndarray
        Q formed densely (symmetric).
    x0 : ndarray, optional
        A start.
    tol : float
        The tolerance on the certificate's measure.
    nonconvex : bool
        Whether Q has negative curvature.
    stall_limit : int
        Steps without a move before Bland's rule takes over.
    refactor_every : int
        Factor updates between fresh factorizations.

    Returns
    -------
    State
    """
    x = bound_start(qp) if x0 is None else feasible_start(qp, np.asarray(x0, dtype=np.float64))[0]
    movable = qp.lb < qp.ub
    rows = _independent_rows(qp.A, movable)
    A = qp.A[rows]
    scale = np.abs(A[:, movable]).max(axis=1) if rows.size else np.zeros(0)
    row_scale = 1.0 / np.where(scale > 0, scale, 1.0)
    A = A * row_scale[:, None]
    b = qp.b[rows] * row_scale
    colsq = (A * A).sum(axis=0)
    qscale = float(np.abs(np.diag(Q)).max(initial=0.0))
    tau = (qscale if qscale > 0 else 1.0) / max(float(colsq.max(initial=0.0)), 1e-300)
    if nonconvex:
        tau *= 1e4                        # M must be positive on A's null space's complement
    Qs = _sparse_or_none(Q)
    fac = RowsFactor(Q, A, tau, Qs=Qs)
    g = Q @ x + qp.c
    status = bound_status(x, qp.lb, qp.ub)
    status[~movable] = -1                 # fixed variables are never free
    work = RowsWork(Q=Q, Qs=Qs, A=A, b=b, rows=rows, row_scale=row_scale, tol=tol,
                    steps_left=50 * qp.n + 1000, fac=fac, movable=movable, nonconvex=nonconvex,
                    held=np.zeros(qp.n, dtype=bool), stall_limit=stall_limit, refactor_every=refactor_every)
    state = State(x=x, g=g, status=status, work=work)
    state.nonconvex = nonconvex
    state.counters.update(face_solves=0, releases=0, blocks=0, null_moves=0, flat_moves=0, held=0,
                          direction_steps=0, negative_curvature=0, factor_updates=0, refactors=0,
                          bland_steps=0, rank_repairs=0)
    # the free variables whose columns are independent enter first; the working set is then
    # completed to full row rank; the other free variables enter through the step's sync
    free = np.flatnonzero(status == 0)
    if free.size and A.shape[0]:
        _, R, piv = sla.qr(A[:, free], mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        rank = int(np.count_nonzero(d > 1e-10 * max(float(d.max(initial=0.0)), 1e-300)))
        first = free[piv[:rank]]
    else:
        first = free
    for j in first.tolist():
        if fac.add(j) is None:
            state.counters["factor_updates"] += 1
    _complete_rank(qp, state, work)
    return state


def _complete_rank(qp: QP, state: State, work: RowsWork) -> bool:
    """Bring A_F to full row rank by freeing variables on their bounds (they stay on them until a
    step moves them), and rebuild S⁻¹; False when the movable columns cannot do it."""
    fac = work.fac
    if fac.build_schur():
        return True
    m = work.A.shape[0]
    F = fac.members
    AF = work.A[:, F]
    if F.size:
        Qm, Rm, _ = sla.qr(AF, mode="full", pivoting=True)
        d = np.abs(np.diag(Rm)) if Rm.size else np.zeros(0)
        r = int(np.count_nonzero(d > 1e-10 * max(float(d.max(initial=0.0)), 1e-300)))
        W = Qm[:, r:]
    else:
        W = np.eye(m)
    cand = np.flatnonzero(work.movable & ~fac.inside & ~work.held)
    if cand.size == 0 or W.shape[1] == 0:
        return fac.build_schur()
    Ac = work.A[:, cand]
    # directions count, not magnitudes: unit columns; and the singleton columns (a slack's −e_r)
    # first, the simplex codes' slack basis: a diagonal block is the best-conditioned start
    norms = np.sqrt((Ac * Ac).sum(axis=0))
    weight = np.where(np.count_nonzero(Ac, axis=0) == 1, 10.0, 1.0) / np.where(norms > 0, norms, 1.0)
    Wc = (W.T @ Ac) * weight
    _, Rc, piv = sla.qr(Wc, mode="economic", pivoting=True)
    dc = np.abs(np.diag(Rc))
    need = int(np.count_nonzero(dc > 1e-10 * max(float(dc.max(initial=0.0)), 1e-300)))
    state.counters["rank_repairs"] += 1
    for j in cand[piv[:need]].tolist():
        if fac.add(j) is None:
            state.counters["factor_updates"] += 1
            state.status[j] = 0            # free, on its bound
    return fac.build_schur()


def _face_solve(work: RowsWork, r1: FloatArray,
                r2: FloatArray | None = None) -> tuple[FloatArray, FloatArray, FloatArray, bool]:
    """:meth:`RowsFactor.refined_solve`, with a fresh factorization requested for the next step
    when the updated factor needed more than two refinements."""
    p, mu, Qp, steps, ok = work.fac.refined_solve(r1, r2)
    if steps > 2 and work.fac.updates:
        work.fac.updates = work.refactor_every   # the updates have drifted: a fresh factor next step
    return p, mu, Qp, ok


def _refactor(qp: QP, state: State, work: RowsWork) -> None:
    """A fresh factor of the current face (members found dependent stay free, for the sync) and
    a fresh gradient."""
    for j in work.fac.refactor().tolist():
        state.status[j] = 0
    state.counters["refactors"] += 1
    state.g = qp.gradient(state.x)


def _ratio(x: FloatArray, d: FloatArray, lb: FloatArray, ub: FloatArray, idx: IndexArray,
           bland: bool) -> tuple[float, int]:
    """Harris's two-pass ratio test along d: the step before a bound blocks and the position (in d)
    of the blocking variable (−1, inf when none blocks).

    The first pass finds the longest step α_max that keeps every variable within δ_i =
    1e-12·max(1, |bound|) of its bound; the second picks, among the variables whose exact ratio
    is at most α_max, the largest |d_i| (the stablest pivot; a component of d at rounding level
    never blocks a degenerate variable), or under Bland's rule the smallest index. The step is
    that variable's exact ratio, so no other variable passes its bound by more than δ_i.
    """
    ad = np.abs(d)
    dmax = float(ad.max(initial=0.0))
    if dmax == 0.0:
        return np.inf, -1
    tl, tu = bound_steps(x, d, lb, ub)
    t = np.minimum(tl, tu)
    heading = np.isfinite(t)
    if not heading.any():
        return np.inf, -1
    bound = np.where(d < 0, lb, ub)
    with np.errstate(invalid="ignore", divide="ignore"):
        relaxed = np.where(heading, t + 1e-12 * np.maximum(1.0, np.abs(bound)) / np.where(ad > 0, ad, 1.0), np.inf)
    amax = float(relaxed.min())
    cand = np.flatnonzero(t <= amax)
    if bland:
        k = int(cand[np.argmin(idx[cand])])
    else:
        k = _largest_pivot(cand, ad, idx)
    return float(t[k]), k


def _largest_pivot(cand: IndexArray, ad: FloatArray, idx: IndexArray) -> int:
    """Among the tied ratios (positions ``cand``), the largest |d_i|: the stablest pivot."""
    return int(cand[np.argmax(ad[cand])])


def _product(work: RowsWork, S: IndexArray, d: FloatArray) -> FloatArray:
    """Q[:, S] d over all n (O(nnz) when Q is sparse)."""
    if work.Qs is not None:
        full = np.zeros(work.Q.shape[0])
        full[S] = d
        out: FloatArray = work.Qs @ full
        return out
    out = d @ work.Q[S]
    return out


def _move(qp: QP, state: State, work: RowsWork, S: IndexArray, d: FloatArray, cap: bool,
          entering: int = -1) -> bool:
    """Move x along the descent direction d (over S) to the first bound, or, when ``cap``, to the
    minimizer along d if that comes first. The blocking variable joins the working set (and leaves
    the factor, exchanged for ``entering`` when given). Sets ``unbounded`` when the objective falls
    forever along d. Returns whether x moved."""
    x, g = state.x, state.g
    d = _significant(d, 1e-12)
    slope = float(g[S] @ d)
    Qd = _product(work, S, d)
    curv = float(Qd[S] @ d)
    t, k = _ratio(x[S], d, qp.lb[S], qp.ub[S], S, work.bland)
    alpha = t
    dmax = float(np.abs(d).max(initial=0.0))
    if cap and curv > 1e-12 * abs(slope) * dmax and -slope / curv < t:
        alpha, k = -slope / curv, -1
    if not np.isfinite(alpha):
        state.stop = Status.UNBOUNDED     # a descent ray of zero (or negative) curvature meets no bound
        return False
    moved = _progress(state, -(alpha * slope + 0.5 * alpha * alpha * curv))
    if alpha > 0.0:
        x[S] += alpha * d
        g += alpha * Qd
    _after_move(state, work, moved)
    if k >= 0:
        i = int(S[k])
        _block(qp, state, work, i, bool(d[k] > 0), entering)
    np.clip(x, qp.lb, qp.ub, out=x)
    return moved


def _progress(state: State, decrease: float) -> bool:
    """Whether a step's decrease of the objective is above its rounding (the size of the terms
    of f at x): a step that moves x by a rounding-level amount, or along a flat line, makes none."""
    x, g = state.x, state.g
    size = float(np.abs(g).max(initial=0.0)) * float(np.abs(x).max(initial=0.0)) + 1.0
    return decrease > 1e-14 * size


def _after_move(state: State, work: RowsWork, moved: bool) -> None:
    """The stall count: reset by a step that moved x, else one more step without a move."""
    if moved:
        work.stall = 0
    else:
        work.stall += 1
    if work.bland:
        state.counters["bland_steps"] += 1


def _block(qp: QP, state: State, work: RowsWork, i: int, upward: bool, entering: int = -1) -> None:
    """Variable i reached its bound (upper when ``upward``): exactly onto it, into the working set,
    out of the factor (exchanged for ``entering`` when that is another variable)."""
    state.x[i] = qp.ub[i] if upward else qp.lb[i]
    state.status[i] = 1 if upward else -1
    state.counters["blocks"] += 1
    work.held[i] = False
    fac = work.fac
    if fac.inside[i]:
        if entering >= 0 and entering != i and not fac.inside[entering]:
            fac.exchange(i, entering)
            state.counters["factor_updates"] += 2
        else:
            fac.remove(i)
            state.counters["factor_updates"] += 1


def _clean(work: RowsWork, S: IndexArray, v: FloatArray) -> FloatArray:
    """v (over S = members + one) corrected so that A_S v = 0 to rounding: the least-M-norm
    correction over the members, through the factor (a long ray would amplify the residual into a
    broken equality)."""
    fac = work.fac
    if not fac.full_rank or not work.A.shape[0] or fac.size == 0:
        return v
    res = work.A[:, S] @ v
    if not res.any():
        return v
    dp = fac.refined_solve(np.zeros(fac.size), -res)[0]
    out = v.copy()
    out[:-1] += dp
    return out


def _sync(qp: QP, state: State, work: RowsWork) -> bool:
    """Bring the free variables into the factor; a dependent one gives a pivot along its null
    direction (True: the step is taken) or is held."""
    fac = work.fac
    pending = np.flatnonzero((state.status == 0) & ~fac.inside & ~work.held)
    for j in pending.tolist():
        if state.out_of_time():            # O(|F|²) each: a whole face can take long
            return True
        v = fac.add(j)
        if v is None:
            state.counters["factor_updates"] += 1
            continue
        S = np.append(fac.members, j)
        v = _clean(work, S, v)
        g = state.g
        slope = float(g[S] @ v)
        # g = Qx + c is known to rounding of its terms, and v to the factor's accuracy: a slope
        # below that is a flat line, not a descent (a long ray along it would wreck x)
        noise = 1e-10 * float((np.abs(qp.c[S]) + np.abs(work.Q[S]) @ np.abs(state.x)) @ np.abs(v))
        if abs(slope) <= noise or not v.any():
            if _flat_pivot(qp, state, work, S, v, j, slope):
                return True
            work.held[j] = True            # a flat line without bounds: its multiplier is 0
            state.counters["held"] += 1
            continue
        state.counters["null_moves"] += 1
        _move(qp, state, work, S, v if slope < 0 else -v, cap=True, entering=j)
        return True
    return False


def _significant(d: FloatArray, rel: float) -> FloatArray:
    """d with the components below ``rel`` of its largest set to zero: what a solve leaves there is
    rounding, which must neither block a step nor move a variable along a long ray."""
    dmax = float(np.abs(d).max(initial=0.0))
    out: FloatArray = np.where(np.abs(d) > rel * dmax, d, 0.0)
    return out


def _flat_pivot(qp: QP, state: State, work: RowsWork, S: IndexArray, v: FloatArray, j: int,
                slope: float) -> bool:
    """Along a null direction whose slope is at rounding level, move to the first bound on the side
    where the slope is not positive (so the objective cannot rise by more than the slope's own
    rounding, however long the move); False when no bound is within reach there."""
    x = state.x
    v = _significant(v, 1e-9)
    d = -v if slope > 0.0 else v
    t, k = _ratio(x[S], d, qp.lb[S], qp.ub[S], S, work.bland)
    if not t * float(np.abs(v).max(initial=0.0)) <= 1e3 * (1.0 + float(np.abs(x[S]).max(initial=0.0))):
        return False                       # no bound within reach: a far move would only add rounding
    Qd = _product(work, S, d)
    rise = t * float(state.g[S] @ d) + 0.5 * t * t * float(Qd[S] @ d)
    if _progress(state, -rise) or _progress(state, rise):
        return False                       # not flat over that distance (a curvature below the test's reach)
    state.counters["flat_moves"] += 1
    if t > 0.0:
        x[S] += t * d
        state.g += t * Qd
    # x moves, the objective does not: for the stall count (and Bland's rule) this is no progress,
    # or flat pivots could cycle unseen
    _after_move(state, work, False)
    _block(qp, state, work, int(S[k]), bool(d[k] > 0), j)
    np.clip(x, qp.lb, qp.ub, out=x)
    return True


def _negative_curvature_step(qp: QP, state: State, work: RowsWork) -> bool:
    """On a non-convex Q: follow a direction of negative curvature of the face (in the null space
    of its rows) to the first bound; True if one was found."""
    S = np.flatnonzero(state.status == 0)
    if S.size == 0:
        return False
    H = work.Q[np.ix_(S, S)]
    scale = float(np.abs(H).max(initial=0.0))
    if scale == 0.0:
        return False
    Z = sla.null_space(work.A[:, S]) if work.A.shape[0] else np.eye(S.size)
    if Z.shape[1] == 0:
        return False
    w, V = np.linalg.eigh(Z.T @ H @ Z)
    if not w[0] < -1e-8 * max(abs(float(w[-1])), scale):
        return False
    state.counters["negative_curvature"] += 1
    p = Z @ V[:, 0]
    if float(state.g[S] @ p) > 0.0:
        p = -p
    _move(qp, state, work, S, p, cap=False)
    return True


def _end(qp: QP, state: State, work: RowsWork) -> None:
    """No descent step is left: done when the certificate's measure meets tol, else stalled (a
    nested run, which takes ``done`` as it is, must not hear converged for an unchecked point)."""
    state.g = qp.gradient(state.x)
    if kkt(qp, state.x, state.g).measure <= work.tol:
        state.done = True
    else:
        state.stop = Status.STALLED


def _direction_step(qp: QP, state: State, work: RowsWork) -> None:
    """The steepest feasible descent direction of the linearization (a small LP), then the exact
    line search along it; the variables it lifts off their bounds become free (the factor takes
    them by updates). When there is no descent (to within half the tolerance) the run ends and the
    certificate judges the point."""
    from scipy.optimize import linprog

    x, g = state.x, state.g
    state.counters["direction_steps"] += 1
    work.stall = 0
    lo = np.where(work.movable & (x > qp.lb), -1.0, 0.0)
    hi = np.where(work.movable & (x < qp.ub), 1.0, 0.0)
    A = work.A
    res = linprog(g, A_eq=A if A.shape[0] else None, b_eq=np.zeros(A.shape[0]) if A.shape[0] else None,
                  bounds=np.column_stack([lo, hi]), method="highs")
    if res.status == 0 and res.x is not None and not -float(res.fun) > 0.5 * work.tol:
        _end(qp, state, work)              # no descent beyond tol/2: the certificate judges
        return
    if res.status != 0 or res.x is None:
        _end(qp, state, work)              # the LP failed: judge the point, never assume it
        return
    d = np.clip(np.asarray(res.x, dtype=np.float64), lo, hi)
    S = np.flatnonzero(d != 0)
    # the LP meets A d = 0 to its own tolerance: exactly, on the support, by least squares
    for _ in range(3):
        dS = d[S]
        if A.shape[0]:
            dS = dS - np.linalg.lstsq(A[:, S], A[:, S] @ dS, rcond=1e-12)[0]
        d[:] = 0.0
        d[S] = np.clip(dS, lo[S], hi[S])
        if not A.shape[0] or float(np.abs(A[:, S] @ d[S]).max(initial=0.0)) <= 1e-14 * float(np.abs(d[S]).max(initial=1.0)):
            break
    S = np.flatnonzero(d != 0)
    if S.size == 0 or not float(g[S] @ d[S]) < 0.0:
        _end(qp, state, work)              # descent lost to the exact-support clipping
        return
    lifted = S[state.status[S] != 0]
    moved = _move(qp, state, work, S, d[S], cap=True)
    if state.stop is not None:
        return
    if not moved:
        _end(qp, state, work)
        return
    # the variables the step lifted off their bounds are free now (the sync adds them)
    off = lifted[(state.x[lifted] > qp.lb[lifted]) & (state.x[lifted] < qp.ub[lifted])]
    state.status[off] = 0
    work.held[:] = False


def _release_choice(qp: QP, state: State, work: RowsWork, z: FloatArray) -> int:
    """The variable to release at a face minimizer: the most wrong-signed bound multiplier, or
    under Bland's rule the smallest index with one; −1 when none is wrong beyond tol/2."""
    st = state.status
    wrong = (np.where((st == -1) & work.movable, np.maximum(-z, 0.0), 0.0)
             + np.where((st == 1) & work.movable, np.maximum(z, 0.0), 0.0))
    cand = np.flatnonzero(wrong > 0.5 * work.tol)
    if cand.size == 0:
        return -1
    if work.bland:
        return int(cand[0])
    return _largest_violation(wrong, cand)


def _largest_violation(wrong: FloatArray, cand: IndexArray) -> int:
    """Dantzig's rule: the candidate whose multiplier is most wrong-signed."""
    return int(cand[np.argmax(wrong[cand])])


def _multipliers(qp: QP, work: RowsWork, mu: FloatArray) -> FloatArray:
    """λ over qp's rows from the face's μ over the scaled independent rows (λ = −μ; rows left out
    as dependent get 0)."""
    lam = np.zeros(qp.m)
    lam[work.rows] = -mu * work.row_scale
    return lam


def rows_step(qp: QP, state: State, work: RowsWork) -> None:
    """One step of the engine: enter the free variables into the factor, then move to the face's
    minimizer or to a blocking bound, or at a face minimizer release a bound (see the module
    docstring).

    Parameters
    ----------
    qp : QP
        The problem.
    state : State
        Mutated in place.
    work : RowsWork
        The engine's work state.
    """
    work.steps_left -= 1
    if work.steps_left < 0:
        state.stop = Status.STALLED        # the step budget: return the best point honestly
        return
    fac = work.fac
    if work.nonconvex and _negative_curvature_step(qp, state, work):
        return
    if fac.updates >= work.refactor_every:
        _refactor(qp, state, work)
    if not fac.full_rank and not _complete_rank(qp, state, work):
        _direction_step(qp, state, work)   # no basis from the movable columns: the LP decides
        return
    if _sync(qp, state, work):
        return
    if 0 <= work.stall_limit and work.stall > work.stall_limit + qp.n:
        _direction_step(qp, state, work)   # the backstop: a stall Bland's rule did not end
        return
    x, g, Q = state.x, state.g, work.Q
    F = fac.members.copy()
    if F.size > work.A.shape[0]:
        # (at a vertex, F.size = m, the face is a point: no step, only the multipliers below)
        state.counters["face_solves"] += 1
        p, mu, QFp, ok = _face_solve(work, -g[F])
        if not ok and fac.updates:
            _refactor(qp, state, work)     # the updated factor no longer solves: a fresh one
            return
        slope = float(g[F] @ p)
        # the model's decrease −(gᵀp + ½pᵀQp) is ½pᵀQp at the face's minimizer (gᵀp = −pᵀQp − μᵀA_F p
        # and A_F p = 0); measured by the curvature alone it is not fooled by the rounding left in
        # A_F p, which gᵀp would turn into a gain wherever g is large on a pinned variable
        gain = 0.5 * float(QFp[F] @ p)
        size = float(np.abs(g).max(initial=0.0)) * float(np.abs(x).max(initial=0.0)) + abs(float(x @ (g + qp.c))) + 1.0
        if p.any() and slope < 0.0 and gain > 1e-15 * size:
            work.polish = 0
            _face_step(qp, state, work, F, p, QFp)
            return
    # a face minimizer: the face's own multipliers, at a fresh gradient, judged by the certificate
    state.g = g = Q @ x + qp.c             # fresh: the updates above accumulate rounding
    mu = np.zeros(work.A.shape[0])
    p = QFp = np.zeros(0)
    if F.size:
        p, mu, QFp, ok = _face_solve(work, -g[F])
        if not ok and fac.updates:
            _refactor(qp, state, work)
            return
    if F.size and work.A.shape[0]:
        # the rows drift by the rounding of many steps (and of the clipping after Harris's ratio
        # test): the least correction over F that restores them, before the point is judged
        res = work.b - work.A @ x
        if float(np.abs(res).max()) > 1e-14 * (1.0 + float(np.abs(work.A).max()) * float(np.abs(x).max())):
            dx, _, _, _ = _face_solve(work, np.zeros(F.size), res)
            # within the bounds (a clipped correction would break the rows it restores)
            x[F] += min(1.0, _ratio(x[F], dx, qp.lb[F], qp.ub[F], F, False)[0]) * dx
            np.clip(x, qp.lb, qp.ub, out=x)
            state.g = g = Q @ x + qp.c
            p, mu, QFp, _ = _face_solve(work, -g[F])
    lam = _multipliers(qp, work, mu)
    cert = kkt(qp, x, g, (lam, None))
    if cert.measure <= 0.5 * work.tol:
        if cert.feasible():
            work.lam = lam
            state.done = True
            return
        # stationary but off the rows beyond what the correction above could restore: a fresh
        # factor corrects again; with a fresh one already, the certificate judges the point
        if fac.updates:
            _refactor(qp, state, work)
        else:
            _end(qp, state, work)
        return
    if work.held.any():
        work.held[:] = False               # x moved since they were held: their lines may tilt now
        if _sync(qp, state, work):
            return
    z = g + work.A.T @ mu                  # bound multipliers at the face's λ = −μ
    j = _release_choice(qp, state, work, z)
    if j < 0:
        # no wrong-signed multiplier, yet the certificate is not met: the face's own residual
        # g_F + A_Fᵀμ = −(Q p)_F is one the certificate sees though the step's gain is below the
        # objective's rounding (a large f, a stiff Q): a few polishing face steps; else the
        # factor has drifted (a fresh one, once); else the LP's steepest descent decides
        if F.size > work.A.shape[0] and work.polish < 3 and p.any():
            work.polish += 1
            _face_step(qp, state, work, F, p, QFp)
            return
        if fac.updates:
            _refactor(qp, state, work)
            return
        _direction_step(qp, state, work)
        return
    state.status[j] = 0
    state.counters["releases"] += 1
    if work.bland:
        state.counters["bland_steps"] += 1


def _face_step(qp: QP, state: State, work: RowsWork, F: IndexArray, p: FloatArray, QFp: FloatArray) -> None:
    """Move along the face step p (over F) to the face's minimizer or to the first blocking bound,
    which joins the working set."""
    x, g, fac = state.x, state.g, work.fac
    t, k = _ratio(x[F], p, qp.lb[F], qp.ub[F], F, work.bland)
    for _ in range(10):
        if k < 0 or t > 1.0 or abs(float(p[k])) > 1e-8 * float(np.abs(p).max()) or not fac.critical(int(F[k])):
            break
        # a variable whose column A_F needs for its rank has p_k = 0 on the face: what the solve
        # left there is rounding, and blocking on it would break the working set
        QFp = QFp - p[k] * work.Q[:, int(F[k])]
        p = p.copy()
        p[k] = 0.0
        t, k = _ratio(x[F], p, qp.lb[F], qp.ub[F], F, work.bland)
    alpha = min(1.0, t)
    moved = _progress(state, -(alpha * float(g[F] @ p) + 0.5 * alpha * alpha * float(QFp[F] @ p)))
    x[F] += alpha * p
    g += alpha * QFp
    _after_move(state, work, moved)
    if k >= 0 and t <= 1.0:
        _block(qp, state, work, int(F[k]), bool(p[k] > 0))
    np.clip(x, qp.lb, qp.ub, out=x)


def rows_multipliers(qp: QP, state: State, work: RowsWork) -> FloatArray | None:
    """The multipliers λ of the face minimizer the run ended at (None if it ended elsewhere).

    Parameters
    ----------
    qp : QP
        The problem.
    state : State
        The final state.
    work : RowsWork
        The engine's work state.

    Returns
    -------
    ndarray or None
    """
    if work.lam is None or not state.done:
        return None
    return work.lam
