"""A dense primal active-set method for small QPs: box bounds and any equality rows.

With m ≥ 2 rows (general, or disjoint groups) the work goes to the engine of
:mod:`qpcore_strategies.active_set_rows`, whose face solves go through a factor updated one variable at
a time; what follows describes the path for at most one row.

The direct method among the strategies: each step solves the equality-constrained QP on the
free variables exactly (one dense KKT system, least squares when Q_FF is singular), then walks
toward its minimizer until a bound blocks, or, at a face minimizer, releases the bound whose
multiplier has the wrong sign. It materializes Q (O(n²) memory, O(|F|³) per step), so it is meant
for decomposition's subproblems and other small problems, where it ends at an exact vertex of
the active set rather than at a tolerance.

Fixed variables (``lb_i = ub_i``) stay in the working set for good: they are never released.
Variables with a zero coefficient in the equality row (``a_i = 0``) are released on the sign of
their own gradient and move alone. One step is one dense solve of the face (O(|F|³)); the run's
time limit is checked between steps (a step is not interrupted).

**Non-convexity.** Q is checked for positive semidefiniteness once, on the dense matrix the
method forms anyway (skipped when a ``DenseQ`` was already checked on construction). A Q with a
negative eigenvalue beyond rounding sets ``state.nonconvex``, so ``qpcore.solve`` reports a
stationary point as ``nonconvex``, never ``converged``; the method then also tests each face
for negative curvature and follows such a direction to a blocking bound (``unbounded`` when
none blocks), so it ends at a point that is a minimizer of its face.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import principal_block
from qpcore.backends.operators import negative_curvature
from qpcore.core.optimality import Scores, maximal_violating_pair, measure, scores_of
from qpcore.core.problem import QP
from qpcore.linalg.projection import bound_steps
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy
from qpcore_strategies.active_set_rows import RowsWork, rows_init, rows_multipliers, rows_step

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["DenseActiveSet"]


@attrs.define(slots=True, eq=False)
class _Work(Work):
    Q: FloatArray
    a: FloatArray | None
    tol: float
    steps_left: int
    zero_steps: int = 0
    nonconvex: bool = False       # Q has a negative eigenvalue beyond rounding
    released: IndexArray = attrs.field(factory=lambda: np.zeros(0, dtype=np.intp))  # by the last step

    def release(self) -> None:
        """No ``resume``: a finished run does not keep the dense Q."""
        return None


def _bound_hits(qp: QP, x: FloatArray, p: FloatArray) -> tuple[FloatArray, int]:
    """Step lengths t_i ≥ 0 at which x + t p reaches each variable's bound (inf where p_i = 0),
    and the index of the first."""
    t = np.minimum(*bound_steps(x, p, qp.lb, qp.ub))
    return t, int(np.argmin(t))


def _negative_eigen(Q: FloatArray) -> bool:
    """Whether the symmetric Q has an eigenvalue below −1e-8 of its largest magnitude."""
    return negative_curvature(Q) is not None


def _face_negative_direction(Q: FloatArray, a: FloatArray | None, F: IndexArray) -> FloatArray | None:
    """A direction on the face F (a_Fᵀp = 0) of negative curvature beyond rounding, or None.

    The eigenvector of the smallest eigenvalue of P Q_FF P, P the projector onto the null space
    of a_F (a_F's own direction gets a large positive eigenvalue, so it never qualifies).
    """
    if F.size == 0:
        return None
    H = Q[np.ix_(F, F)]
    scale = float(np.abs(H).max(initial=0.0))
    if scale == 0.0:
        return None
    if a is not None:
        aF = a[F]
        nrm = float(aF @ aF)
        if nrm > 0:
            u = aF / np.sqrt(nrm)
            P = np.eye(F.size) - np.outer(u, u)
            H = P @ H @ P + 2.0 * F.size * scale * np.outer(u, u)
    w, V = np.linalg.eigh(0.5 * (H + H.T))
    if not w[0] < -1e-8 * max(abs(float(w[-1])), scale):
        return None
    p: FloatArray = V[:, 0]
    return p


@attrs.frozen
class DenseActiveSet(Strategy):
    """Primal active-set method on a dense Q (box bounds, any equality rows).

    Parameters
    ----------
    max_n : int
        Largest problem accepted (Q is formed densely).
    stall_limit : int
        With several rows: steps in a row that do not move x before Bland's least-index rule
        takes over, to break a degenerate cycle (:mod:`qpcore_strategies.active_set_rows`); a negative
        value switches the rule and its backstop off (to study cycling).
    """

    max_n: int = 4000
    stall_limit: int = 50

    def accepts(self, qp: QP) -> str | None:
        """None for any problem of at most ``max_n`` variables (box, one row, disjoint groups,
        general rows); else a reason naming the strategy that takes larger problems."""
        if qp.n > self.max_n:
            return (f"Q: n = {qp.n} exceeds max_n = {self.max_n} of the dense active-set method (Q is formed "
                    "densely); raise max_n, or use GPCG (matrix-free) or Decomposition")
        return None

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Form Q densely, check it once for negative curvature, and start from x0 made feasible
        (or from the projection of 0; with several rows from a basic feasible point).

        Parameters
        ----------
        qp : QP
            Box bounds and any equality rows, n ≤ ``max_n``.
        x0 : ndarray, optional
            A start (``qpcore.solve`` hands over a feasible one).
        tol : float
            The tolerance on the measure (a face minimizer is accepted at half of it).

        Returns
        -------
        State

        Raises
        ------
        ProblemError
            For n > max_n.
        """
        self.check(qp)
        Q = np.array(principal_block(qp.Q, np.arange(qp.n)), dtype=np.float64)
        Q = 0.5 * (Q + Q.T)
        # a DenseQ checked on construction is PSD; any other operator is checked here, once
        nonconvex = qp.Q.psd is not True and _negative_eigen(Q)
        if qp.m > 1:
            # several rows (general or disjoint groups): the engine with an updated factor
            return rows_init(qp, Q, x0, tol, nonconvex, stall_limit=self.stall_limit)
        x = np.zeros(qp.n) if x0 is None else np.asarray(x0, dtype=np.float64).copy()
        x = np.clip(x, qp.lb, qp.ub)
        a = None
        if qp.m:
            a = qp.A[0]
            b = float(qp.b[0])
            if abs(float(a @ x) - b) > 1e-12 * (1.0 + abs(b) + float(np.abs(a * x).sum())):
                from qpcore.linalg.projection import project_box_equality

                x = project_box_equality(x, qp.lb, qp.ub, a, b)[0]
        g = Q @ x + qp.c
        state = State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub),
                      work=_Work(Q=Q, a=a, tol=tol, steps_left=10 * qp.n + 100, nonconvex=nonconvex))
        state.nonconvex = nonconvex
        state.counters.update(face_solves=0, releases=0, blocks=0, null_moves=0, pair_steps=0, negative_curvature=0)
        return state

    def multipliers(self, qp: QP, state: State) -> tuple[FloatArray, FloatArray] | None:
        """With several rows, the exact multipliers of the face the run ended on (λ = −μ of the
        face system, unique: the engine keeps A_F of full row rank); the certificate verifies them.
        None otherwise (the certificate finds its own).

        Parameters
        ----------
        qp : QP
            The problem the strategy ran on.
        state : State
            The run's final state.

        Returns
        -------
        (ndarray, ndarray) or None
            λ, and an empty y: the problem it ran on has no inequality rows.
        """
        rows = state.work_or_none(RowsWork)
        if rows is None:
            return None
        lam = rows_multipliers(qp, state, rows)
        return None if lam is None else (lam, np.zeros(0))

    def step(self, qp: QP, state: State) -> None:
        """Solve on the current face; move to its minimizer, to a blocking bound, or release a bound.

        One dense solve of the face (O(|F|³)), not interrupted by the deadline.

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            Mutated in place.
        """
        rows = state.work_or_none(RowsWork)
        if rows is not None:
            rows_step(qp, state, rows)
            return
        work = state.work(_Work)
        work.steps_left -= 1
        if work.steps_left < 0:
            state.stop = Status.STALLED     # a degenerate cycle: return the best point honestly
            return
        x, g, Q = state.x, state.g, work.Q
        just_released, work.released = work.released, np.zeros(0, dtype=np.intp)
        F = np.flatnonzero(state.status == 0)
        if work.nonconvex and _negative_curvature_step(qp, state, work, F):
            return
        # an optimal start is caught before the first face solve; later steps reach the optimality
        # test through a face minimizer (a step that blocks is rarely optimal, and a face solve at
        # an optimal point finds no step and goes there): one measure less per step
        if state.iteration == 0 and _measure(qp, x, g) <= 0.5 * work.tol:
            state.g = g = Q @ x + qp.c           # confirm with a fresh gradient (O(n²))
            if _measure(qp, x, g) <= 0.5 * work.tol:
                state.done = True
                return
        state.counters["face_solves"] += 1
        p_F, consistent = _face_step(Q, g, work.a, F)
        if work.a is not None and F.size:
            # the solve keeps a_Fᵀp = 0 only to rounding, and a long step (a null move can be
            # long) would amplify that into a broken equality: project it out exactly
            aF = work.a[F]
            nrm = float(aF @ aF)
            if nrm > 0:
                p_F = p_F - (float(aF @ p_F) / nrm) * aF
        # a step whose model decrease is at rounding level is no step (near-singular faces
        # otherwise creep forever, and a face whose only free direction the equality forbids
        # would repeat a zero step): its face counts as minimized
        slope = float(g[F] @ p_F) if F.size else 0.0
        QF = Q[F]                                   # the face's rows (contiguous; Q is symmetric)
        QFp = p_F @ QF if F.size else np.zeros(qp.n)
        curv = float(QFp[F] @ p_F) if F.size else 0.0
        gain = -(slope + 0.5 * curv)
        size = float(np.abs(g).max(initial=0.0)) * float(np.abs(x).max(initial=0.0)) + abs(float(x @ (g + qp.c))) + 1.0
        if F.size and p_F.any() and ((not consistent and slope < 0.0) or (consistent and gain > 1e-15 * size)):
            p = np.zeros(qp.n)
            p[F] = p_F
            # the longest feasible step along p, capped at 1 when the face has a minimizer
            t, k = _bound_hits(qp, x, p)
            if consistent:
                alpha = min(1.0, float(t[k]))       # the face's minimizer, or the first bound
            else:
                # a descent ray of zero curvature to rounding: to the first bound, unless the
                # curvature the solve could not see makes the objective turn up before it
                alpha = min(float(t[k]), -slope / curv if curv > 0 else np.inf)
            blocked = alpha >= float(t[k])
            if alpha <= 0.0:
                # degenerate: a variable on its bound blocks at once, and joins the working set as
                # usual (a free variable can sit on its bound: released earlier, or reached at
                # the same step as the variable that blocked it; left free, it would block every
                # later step of the face). But singular faces can point a just-released variable
                # straight back out, and release/block then cycles: a variable released by the
                # previous step that blocks at once, or too many zero steps in a row, get a step
                # along the maximal violating pair instead (which always descends)
                work.zero_steps += 1
                if k in just_released or work.zero_steps > qp.n:
                    work.zero_steps = 0
                    state.counters["pair_steps"] += 1
                    _pair_step(qp, state, Q)
                    return
            else:
                work.zero_steps = 0
            if not np.isfinite(alpha):
                state.stop = Status.UNBOUNDED   # a descent ray of zero curvature meets no bound
                return
            if not consistent:
                state.counters["null_moves"] += 1

            x[F] += alpha * p_F
            g += alpha * QFp
            if blocked and (alpha < 1.0 or not consistent):
                # exactly on the blocking bound, which joins the working set; the status is kept
                # as a working set, not recomputed from x: a released variable still sitting on
                # its bound must stay free, or release and block would cycle
                x[k] = qp.lb[k] if p[k] < 0 else qp.ub[k]
                state.status[k] = -1 if p[k] < 0 else 1
                state.counters["blocks"] += 1
            np.clip(x, qp.lb, qp.ub, out=x)
            return
        # a face minimizer: optimal if the certificate says so, else release a wrong-signed bound
        state.g = g = Q @ x + qp.c                   # fresh: the updates above accumulate rounding
        if _measure(qp, x, g) <= 0.5 * work.tol:
            state.done = True
            return
        release = _to_release(qp, x, g, state.status, F)
        if release.size == 0:
            # no bound multiplier has the wrong sign at the face's λ, yet the point is not optimal
            # (a face minimized only to rounding, or released variables still on their bounds):
            # the pair step descends whenever the gap is positive
            state.counters["pair_steps"] += 1
            _pair_step(qp, state, Q)
            return
        state.status[release] = 0
        state.counters["releases"] += int(release.size)
        work.released = release


def _measure(qp: QP, x: FloatArray, g: FloatArray) -> float:
    """The stopping measure at (x, g) (:func:`qpcore.core.optimality.measure`), what the certificate reports."""
    return measure(scores_of(qp, x, g))


def _single_violation(s: Scores) -> FloatArray:
    """Per-variable violation of the single variables (a_i = 0, or no equality): |P(g)_i|, else 0."""
    su, sl = s.single_masks()
    out: FloatArray = np.maximum(np.where(su, s.v, 0.0), np.where(sl, -s.v, 0.0))
    return out


def _negative_curvature_step(qp: QP, state: State, work: _Work, F: IndexArray) -> bool:
    """On a non-convex Q: if the face F has a direction of negative curvature, follow it (the
    descending sign) to the first blocking bound, which joins the working set; True if taken."""
    p_F = _face_negative_direction(work.Q, work.a, F)
    if p_F is None:
        return False
    state.nonconvex = True
    state.counters["negative_curvature"] += 1
    x, g = state.x, state.g
    if float(g[F] @ p_F) > 0.0:
        p_F = -p_F
    p = np.zeros(qp.n)
    p[F] = p_F
    t, k = _bound_hits(qp, x, p)
    alpha = float(t[k])
    if not np.isfinite(alpha):
        state.stop = Status.UNBOUNDED       # negative curvature along a ray that meets no bound
        return True
    x[F] += alpha * p_F
    state.g += alpha * (work.Q[:, F] @ p_F)
    x[k] = qp.lb[k] if p[k] < 0 else qp.ub[k]
    state.status[k] = -1 if p[k] < 0 else 1
    state.counters["blocks"] += 1
    np.clip(x, qp.lb, qp.ub, out=x)
    return True


def _pair_step(qp: QP, state: State, Q: FloatArray) -> None:
    """An exact line search along the maximal violating pair, or along the most violating single
    variable (a_i = 0, or a box), whichever descends faster per unit step."""
    x, g = state.x, state.g
    s = scores_of(qp, x, g)
    p = np.zeros(qp.n)
    single = _single_violation(s)
    gap = 0.0
    ij = maximal_violating_pair(s) if s.paired else None
    if ij is not None and ij[0] != ij[1]:
        i, j = ij
        gap = float(s.v[i] - s.v[j])
    if gap > 0 and ij is not None and gap * min(abs(float(qp.A[0][i])), abs(float(qp.A[0][j]))) >= float(single.max(initial=0.0)):
        a = qp.A[0]
        p[i], p[j] = 1.0 / a[i], -1.0 / a[j]      # aᵀp = 0; gᵀp = v_j − v_i < 0
        idx = np.array([i, j])
    elif single.max(initial=0.0) > 0:
        i = int(np.argmax(single))
        p[i] = 1.0 if s.v[i] > 0 else -1.0        # v = −g: increase where g < 0
        idx = np.array([i])
    else:
        state.stop = Status.STALLED
        return
    slope = float(g[idx] @ p[idx])
    if not slope < 0:
        state.stop = Status.STALLED
        return
    curv = float(p[idx] @ (Q[np.ix_(idx, idx)] @ p[idx]))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(p[idx] < 0, (qp.lb[idx] - x[idx]) / p[idx], (qp.ub[idx] - x[idx]) / p[idx])
    alpha = min(float(t.min()), -slope / curv if curv > 0 else np.inf)
    if not np.isfinite(alpha):
        state.stop = Status.UNBOUNDED
        return
    x[idx] = np.clip(x[idx] + alpha * p[idx], qp.lb[idx], qp.ub[idx])
    g += Q[:, idx] @ (alpha * p[idx])
    state.status[idx] = bound_status(x[idx], qp.lb[idx], qp.ub[idx])


def _face_step(Q: FloatArray, g: FloatArray, a: FloatArray | None, F: NDArray[np.intp]) -> tuple[FloatArray, bool]:
    """The step p_F to the minimizer of the face (a_Fᵀp = 0), and whether one exists.

    When Q_FF (with the equality row) is singular and −g_F has a part outside its range, the face
    has no minimizer: the returned p is that part, a descent direction of zero curvature.
    """
    if F.size == 0:
        return np.zeros(0), True
    QFF = Q[np.ix_(F, F)]
    if a is not None:
        aF = a[F]
        K = np.zeros((F.size + 1, F.size + 1))
        K[:-1, :-1], K[:-1, -1], K[-1, :-1] = QFF, aF, aF
        rhs = np.concatenate([-g[F], [0.0]])
    else:
        K, rhs = QFF, -g[F]
    try:
        sol = np.linalg.solve(K, rhs)
        ok = bool(np.isfinite(sol).all())
    except np.linalg.LinAlgError:
        ok = False
    scale = float(np.abs(K).max(initial=0.0)) * (1.0 + float(np.abs(rhs).max(initial=0.0)))
    if ok and float(np.abs(K @ sol - rhs).max(initial=0.0)) <= 1e-10 * max(scale, 1e-300):
        return sol[: F.size], True
    # K is symmetric: split rhs over its eigenvectors. The part on the numerical null space is
    # a direction of zero curvature (K r = 0: Q_FF r_F = −a_F r_λ, a_Fᵀr_F = 0) along which the
    # face descends (−g_Fᵀr_F = ‖r‖²); the rest gives the pseudo-inverse solution
    w, V = np.linalg.eigh(K)
    keep = np.abs(w) > 1e-10 * float(np.abs(w).max(initial=0.0))
    coef = V.T @ rhs
    sol = V[:, keep] @ (coef[keep] / w[keep])
    r = V[:, ~keep] @ coef[~keep]
    if float(np.abs(r).max(initial=0.0)) <= 1e-9 * max(scale, 1e-300):
        return sol[: F.size], True
    return r[: F.size], False


def _to_release(qp: QP, x: FloatArray, g: FloatArray, status: NDArray[np.int8], F: IndexArray) -> IndexArray:
    """Working-set variables to free at a face minimizer: the most wrong-signed bound multiplier
    at the face's λ (the maximal violating pair when no free variable of the equality pins λ).

    Only variables in the working set (status ±1) are candidates: a variable released earlier
    that still sits on its bound is already free. Fixed variables (lb = ub) are never released.
    """
    movable = qp.lb < qp.ub
    at_l = (status == -1) & movable
    at_u = (status == 1) & movable
    if qp.m == 0:
        wrong = np.where(at_l, np.maximum(-g, 0.0), 0.0) + np.where(at_u, np.maximum(g, 0.0), 0.0)
        return np.flatnonzero(wrong == wrong.max())[:1] if wrong.max(initial=0.0) > 0 else np.zeros(0, np.intp)
    a = qp.A[0]
    Fa = F[a[F] != 0]
    if F.size < 2 or Fa.size == 0:
        # λ is not pinned by free variables of the equality: a single release cannot move
        # along it, so release the maximal violating pair together
        s = scores_of(qp, x, g)
        cand: list[int] = []
        ij = maximal_violating_pair(s) if s.paired else None
        if ij is not None and s.v[ij[0]] > s.v[ij[1]]:
            cand = [k for k in ij if at_l[k] or at_u[k]]
        # variables outside the equality (a_i = 0) are released on their own gradient's sign
        out = (a == 0) & ((at_l & (g < 0)) | (at_u & (g > 0)))
        if out.any():
            cand.append(int(np.flatnonzero(out)[np.argmax(np.abs(g[out]))]))
        return np.array(sorted(set(cand)), dtype=np.intp)
    lam = float(a[Fa] @ g[Fa]) / float(a[Fa] @ a[Fa])   # g_F = λ a_F at the face's minimizer
    z = g - lam * a                              # bound multipliers at the face's λ
    scale = np.where(a != 0, np.abs(a), 1.0)
    wrong = (np.where(at_l, np.maximum(-z, 0.0), 0.0) + np.where(at_u, np.maximum(z, 0.0), 0.0)) / scale
    if wrong.max(initial=0.0) <= 0:
        return np.zeros(0, dtype=np.intp)
    return np.array([int(np.argmax(wrong))], dtype=np.intp)
