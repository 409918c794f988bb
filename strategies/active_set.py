"""A dense primal active-set method for small QPs: box bounds and at most one equality row.

The direct method among the strategies: each step solves the equality-constrained QP on the
free variables exactly (one dense KKT system, least squares when Q_FF is singular), then walks
toward its minimizer until a bound blocks, or, at a face minimizer, releases the bound whose
multiplier has the wrong sign. It materializes Q (O(n²) memory, O(|F|³) per step), so it is meant
for decomposition's subproblems and other small problems, where it ends at an exact vertex of
the active set rather than at a tolerance.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.kkt import kkt
from qpcore.operators import principal_block
from qpcore.problem import QP, ProblemError
from qpcore.state import State, Status, bound_status

FloatArray = NDArray[np.float64]

__all__ = ["DenseActiveSet"]


@attrs.define(slots=True, eq=False)
class _Work:
    Q: FloatArray
    a: FloatArray | None
    tol: float
    steps_left: int
    zero_steps: int = 0


@attrs.frozen
class DenseActiveSet:
    """Primal active-set method on a dense Q (box bounds, at most one equality row).

    Parameters
    ----------
    max_n : int
        Largest problem accepted (Q is formed densely).
    """

    max_n: int = 4000

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Form Q densely and start from x0 made feasible (or from the projection of 0)."""
        if qp.m > 1:
            raise ProblemError(f"A: the dense active-set method handles at most one equality row, got {qp.m}")
        if qp.n > self.max_n:
            raise ProblemError(f"Q: n = {qp.n} exceeds max_n = {self.max_n} of the dense active-set method")
        Q = np.array(principal_block(qp.Q, np.arange(qp.n)), dtype=np.float64)
        Q = 0.5 * (Q + Q.T)
        x = np.zeros(qp.n) if x0 is None else np.asarray(x0, dtype=np.float64).copy()
        x = np.clip(x, qp.lb, qp.ub)
        a = None
        if qp.m:
            a = qp.A[0]
            b = float(qp.b[0])
            if abs(float(a @ x) - b) > 1e-12 * (1.0 + abs(b) + float(np.abs(a * x).sum())):
                from qpcore.projection import project_box_equality

                x = project_box_equality(x, qp.lb, qp.ub, a, b)[0]
        g = Q @ x + qp.c
        state = State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub),
                      extra=_Work(Q=Q, a=a, tol=tol, steps_left=10 * qp.n + 100))
        state.counters.update(face_solves=0, releases=0, blocks=0, null_moves=0, pair_steps=0)
        return state

    def converged(self, qp: QP, state: State, tol: float) -> bool:
        """True once a face minimizer passed the KKT test."""
        return state.done

    def step(self, qp: QP, state: State) -> None:
        """Solve on the current face; move to its minimizer, to a blocking bound, or release a bound."""
        work = state.extra
        assert isinstance(work, _Work)
        work.steps_left -= 1
        if work.steps_left < 0:
            state.stop = Status.STALLED     # a degenerate cycle: return the best point honestly
            return
        x, g, Q = state.x, state.g, work.Q
        cert = kkt(qp, x, g)
        if cert.measure <= 0.5 * work.tol:
            state.g = g = Q @ x + qp.c           # confirm with a fresh gradient (O(n²))
            if kkt(qp, x, g).measure <= 0.5 * work.tol:
                state.done = True
                return
        F = np.flatnonzero(state.status == 0)
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
        gain = -(float(g[F] @ p_F) + 0.5 * float(p_F @ (Q[np.ix_(F, F)] @ p_F))) if F.size else 0.0
        size = float(np.abs(g).max(initial=0.0)) * float(np.abs(x).max(initial=0.0)) + abs(float(x @ (g + qp.c))) + 1.0
        if F.size and p_F.any() and (not consistent or gain > 1e-15 * size):
            p = np.zeros(qp.n)
            p[F] = p_F
            # the longest feasible step along p, capped at 1 when the face has a minimizer
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(p < 0, (qp.lb - x) / p, np.where(p > 0, (qp.ub - x) / p, np.inf))
            t = np.maximum(t, 0.0)
            k = int(np.argmin(t))
            alpha = float(t[k]) if not consistent else min(1.0, float(t[k]))
            if alpha <= 0.0:
                # degenerate: a variable on its bound blocks at once. It joins the working set as
                # usual, but singular faces can point a just-released variable straight back
                # out, and release/block then cycles: after too many zero steps in a row, a step
                # along the maximal violating pair (which always descends) breaks the cycle
                work.zero_steps += 1
                if work.zero_steps > qp.n:
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
            g += alpha * (Q[:, F] @ p_F)
            if alpha < 1.0 or not consistent:
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
        cert = kkt(qp, x, g)
        if cert.measure <= 0.5 * work.tol:
            state.done = True
            return
        release = _to_release(qp, x, g, cert.multipliers, F.size)
        if release.size == 0:
            # no bound multiplier has the wrong sign at the face's λ, yet the point is not optimal
            # (a face minimized only to rounding, or released variables still on their bounds):
            # the pair step descends whenever the gap is positive
            state.counters["pair_steps"] += 1
            _pair_step(qp, state, Q)
            return
        state.status[release] = 0
        state.counters["releases"] += int(release.size)


def _pair_step(qp: QP, state: State, Q: FloatArray) -> None:
    """An exact line search along the maximal violating pair (the worst coordinate for a box)."""
    from strategies.decomposition import violations

    x, g = state.x, state.g
    v, up, down = violations(qp, x, g)
    p = np.zeros(qp.n)
    # variables outside the equality (a_i = 0, or no equality) move alone, along −g_i
    alone = np.ones(qp.n, dtype=bool) if qp.m == 0 else qp.A[0] == 0
    can_inc, can_dec = x < qp.ub, x > qp.lb
    single = np.where(alone, np.maximum(np.where(can_inc, -g, 0.0), np.where(can_dec, g, 0.0)), 0.0)
    pair_gap = 0.0
    if qp.m and up.any() and down.any():
        i = int(np.flatnonzero(up)[np.argmax(v[up])])
        j = int(np.flatnonzero(down)[np.argmin(v[down])])
        if i != j:
            pair_gap = float(v[i] - v[j])
    if pair_gap > 0 and pair_gap >= float(single.max(initial=0.0)) / max(1e-300, float(np.abs(qp.A[0][[i, j]]).min())):
        a = qp.A[0]
        p[i], p[j] = 1.0 / a[i], -1.0 / a[j]      # aᵀp = 0; gᵀp = v_j − v_i < 0
        idx = np.array([i, j])
    elif single.max(initial=0.0) > 0:
        i = int(np.argmax(single))
        p[i] = 1.0 if (can_inc[i] and g[i] < 0) else -1.0
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
    sol = np.linalg.lstsq(K, rhs, rcond=None)[0]
    r = rhs - K @ sol   # the part of rhs outside range(K) = null(K) for symmetric K
    if float(np.abs(r).max(initial=0.0)) <= 1e-9 * max(scale, 1e-300):
        return sol[: F.size], True
    return r[: F.size], False


def _to_release(qp: QP, x: FloatArray, g: FloatArray, lam: FloatArray, n_free: int) -> NDArray[np.intp]:
    """Bound variables to free: the most wrong-signed multiplier (the maximal violating pair
    when an equality row leaves fewer than two free variables to move along it)."""
    at_l, at_u = x <= qp.lb, x >= qp.ub
    if qp.m == 0:
        wrong = np.where(at_l, np.maximum(-g, 0.0), 0.0) + np.where(at_u & ~at_l, np.maximum(g, 0.0), 0.0)
        return np.flatnonzero(wrong == wrong.max())[:1] if wrong.max(initial=0.0) > 0 else np.zeros(0, np.intp)
    from strategies.decomposition import violations

    v, up, down = violations(qp, x, g)
    bound = at_l | at_u
    a = qp.A[0]
    if n_free < 2:
        cand: list[int] = []
        if (up & bound).any() or (down & bound).any():
            i = int(np.flatnonzero(up)[np.argmax(v[up])]) if up.any() else -1
            j = int(np.flatnonzero(down)[np.argmin(v[down])]) if down.any() else -1
            cand = [k for k in (i, j) if k >= 0 and bound[k]]
        # variables outside the equality (a_i = 0) are released on their own gradient's sign
        out = (a == 0) & ((at_l & (g < 0)) | (at_u & ~at_l & (g > 0)))
        if out.any():
            cand.append(int(np.flatnonzero(out)[np.argmax(np.abs(g[out]))]))
        return np.array(sorted(set(cand)), dtype=np.intp)
    z = g - float(lam[0]) * a                    # bound multipliers at the face's λ
    scale = np.where(a != 0, np.abs(a), 1.0)
    wrong = (np.where(at_l, np.maximum(-z, 0.0), 0.0) + np.where(at_u & ~at_l, np.maximum(z, 0.0), 0.0)) / scale
    if wrong.max(initial=0.0) <= 0:
        return np.zeros(0, dtype=np.intp)
    return np.array([int(np.argmax(wrong))], dtype=np.intp)
