"""The dense active-set method for several equality rows: an updated factor of the face's KKT matrix.

:class:`strategies.active_set.DenseActiveSet` hands a problem with m ≥ 2 rows (general rows or
disjoint groups) to this engine. It is the same primal active-set method: each step minimizes on
the face (the free set F, the others held at their bounds) subject to ``A_F p = 0``, walks toward
that minimizer until a bound blocks, or releases a bound whose multiplier has the wrong sign.

**The factor.** The face's KKT matrix [[Q_FF, A_Fᵀ], [A_F, 0]] is solved through an upper
Cholesky factor R of M = Q_FF + τ A_FᵀA_F (the augmented-Lagrangian shift of
:class:`qpcore.factor.BorderedCholesky`, with m rows): A_F p = 0 is imposed, so the shift changes
no solution, and M is positive definite exactly when the face has a unique minimizer, whatever the
rank of Q_FF. With U = R⁻ᵀA_Fᵀ (kept with R), a face solve is z = R⁻ᵀr, μ the least-squares
solution of U μ ≈ z (dependent rows, and rows that vanish on F, are no obstacle: the system is
consistent and μ is its minimum-norm solution), p = R⁻¹(z − Uμ); O(|F|² + |F|m²). R follows F:
a variable enters by one triangular solve (O(|F|²)), leaves by Givens rotations of the trailing
block (``scipy.linalg.qr_delete``, O(|F|²)). Nothing is refactorized, except after the rare
direction step below, which may change F wholesale.

**Degeneracy.** A variable whose column makes M singular (Q v = 0 and A v = 0 on F plus it:
duplicated variables, a singular Q that the rows do not make regular, a variable in no row with
Q_jj = 0) is not added; along its null direction v the objective is linear, so x moves along the
descending sign of v to the first bound (the blocking variable leaves F), or, when no bound
blocks, the problem is ``unbounded``; when the slope is 0 the variable is *held* (it stays free at
its value: its multiplier is then 0 at every face minimizer, since gᵀv = cᵀv = 0), and retried
whenever F loses a variable. Rows dependent on the movable variables are dropped once at the
start. When the face's multipliers are not unique (A_F without full row rank: few free variables,
rows whose variables all sit on bounds), or a release is undone at once (a zero step), a
**direction step** replaces the release: the steepest feasible descent direction of the
linearization, min gᵀd subject to A d = 0, the sign constraints of the variables on bounds and
|d| ≤ 1 (a small LP, scipy's HiGHS), followed by the exact line search along d. Its value is
−min_λ Σ|P(g − Aᵀλ)|, so when it finds no descent the point is optimal to within it, and the run
ends for the certificate to judge.

**Non-convexity.** On a Q with negative curvature (checked once by the caller) every step first
tests the face for a direction of negative curvature in the null space of A_F (an eigenvector of
the reduced Hessian) and follows it to a bound (``unbounded`` when none blocks); ``qpcore.solve``
then reports ``nonconvex``, never ``converged``.
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray

from qpcore.factor import cholesky_delete
from qpcore.kkt import kkt
from qpcore.projection import bound_start, bound_steps, feasible_start
from qpcore.problem import QP
from qpcore.state import State, Status, Work, bound_status

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["RowsFactor", "RowsWork", "rows_init", "rows_step"]


class RowsFactor:
    """Upper Cholesky factor of M = Q_FF + τ A_FᵀA_F for a free set F that changes one variable at a time.

    Parameters
    ----------
    Q : ndarray
        The dense symmetric Q (n×n).
    A : ndarray
        The rows (m×n).
    tau : float
        The shift τ > 0.
    singular_tol : float
        A new pivot ρ² ≤ singular_tol · M_jj means the variable depends on F (``add`` refuses it).
    """

    def __init__(self, Q: FloatArray, A: FloatArray, tau: float, singular_tol: float = 1e-11) -> None:
        self.Q, self.A, self.tau, self.singular_tol = Q, A, float(tau), float(singular_tol)
        self.n, self.m = Q.shape[0], A.shape[0]
        cap = 16
        self._R: FloatArray = np.zeros((cap, cap))
        self._U: FloatArray = np.zeros((cap, self.m))     # Rᵀ U = A_Fᵀ
        self._idx: IndexArray = np.zeros(cap, dtype=np.intp)
        self._k = 0
        self.inside: BoolArray = np.zeros(self.n, dtype=bool)
        self.counters = {"adds": 0, "removes": 0, "dependences": 0}

    @property
    def size(self) -> int:
        """|F|."""
        return self._k

    @property
    def members(self) -> IndexArray:
        """F in factor order (a view: copy before mutating the factor)."""
        return self._idx[:self._k]

    def _grow(self) -> None:
        cap = 2 * self._R.shape[0]
        R = np.zeros((cap, cap))
        R[:self._k, :self._k] = self._R[:self._k, :self._k]
        U = np.zeros((cap, self.m))
        U[:self._k] = self._U[:self._k]
        idx = np.zeros(cap, dtype=np.intp)
        idx[:self._k] = self._idx[:self._k]
        self._R, self._U, self._idx = R, U, idx

    def _tri(self, v: FloatArray, trans: bool) -> FloatArray:
        k = self._k
        out: FloatArray = sla.solve_triangular(self._R[:k, :k], v, trans=1 if trans else 0, lower=False,
                                               check_finite=False)
        return out

    def add(self, j: int) -> FloatArray | None:
        """Append variable j in O(|F|²) (one triangular solve, and the new row of U).

        Parameters
        ----------
        j : int
            A variable not in F.

        Returns
        -------
        ndarray or None
            None once added; when j makes M singular, F is left unchanged and the null direction
            v over ``members`` followed by j is returned (v[-1] = 1; Q v ≈ 0 and A v ≈ 0 there).
        """
        k = self._k
        F = self._idx[:k]
        Aj = self.A[:, j]
        h = self.Q[j, F] + self.tau * (Aj @ self.A[:, F])
        mjj = float(self.Q[j, j] + self.tau * float(Aj @ Aj))
        r = self._tri(h, True) if k else h
        rho2 = mjj - float(r @ r)
        if not rho2 > self.singular_tol * max(mjj, 0.0) or mjj <= 0.0:
            self.counters["dependences"] += 1
            v = np.empty(k + 1)
            v[:k] = -self._tri(r, False) if k else r
            v[k] = 1.0
            return v
        if k + 1 > self._R.shape[0]:
            self._grow()
        rho = float(np.sqrt(rho2))
        self._R[:k, k] = r
        self._R[k, :k] = 0.0
        self._R[k, k] = rho
        self._U[k] = (Aj - r @ self._U[:k]) / rho
        self._idx[k] = j
        self._k = k + 1
        self.inside[j] = True
        self.counters["adds"] += 1
        return None

    def remove(self, j: int) -> None:
        """Delete variable j from F in O(|F|²) (Givens rotations of the trailing block; U again
        by m triangular solves).

        Parameters
        ----------
        j : int
            A member of F.
        """
        k = self._k
        p = int(np.flatnonzero(self._idx[:k] == j)[0])
        cholesky_delete(self._R, p, k)
        if p < k - 1:
            self._idx[p:k - 1] = self._idx[p + 1:k]
        self._k = k - 1
        self.inside[j] = False
        self.counters["removes"] += 1
        if self._k:
            self._U[:self._k] = self._tri(np.ascontiguousarray(self.A[:, self._idx[:self._k]].T), True)

    def solve(self, r: FloatArray) -> tuple[FloatArray, FloatArray, int]:
        """Minimize ½pᵀQ_FF p − rᵀp subject to A_F p = 0, in O(|F|² + |F|m²).

        Parameters
        ----------
        r : ndarray
            The right-hand side over F, in factor order.

        Returns
        -------
        p : ndarray
            The minimizer (over F, factor order).
        mu : ndarray
            Multipliers with Q_FF p + A_Fᵀμ = r (of minimum norm when A_F lacks full row rank).
        rank : int
            The numerical rank of A_F (m: the multipliers are unique).
        """
        k = self._k
        if k == 0:
            return np.zeros(0), np.zeros(self.m), 0
        z = self._tri(r, True)
        U = self._U[:k]
        mu, _, rank, _ = np.linalg.lstsq(U, z, rcond=1e-10)
        p = self._tri(z - U @ mu, False)
        return p, np.asarray(mu, dtype=np.float64), int(rank)


@attrs.define(slots=True, eq=False)
class RowsWork(Work):
    """The engine's slot in the state: the dense Q, the independent rows, the factor and the held set."""

    Q: FloatArray
    A: FloatArray                     # the rows independent on the movable variables
    tol: float
    steps_left: int
    fac: RowsFactor
    movable: BoolArray
    nonconvex: bool = False
    held: BoolArray = attrs.field(factory=lambda: np.zeros(0, dtype=bool))
    zero_steps: int = 0
    released: int = -1                # the variable the last step released (-1: none)

    def release(self) -> None:
        """No ``resume``: a finished run keeps neither the dense Q nor the factor."""
        return None


def _independent_rows(A: FloatArray, movable: BoolArray) -> FloatArray:
    """The rows of A independent on the movable variables (QR with column pivoting of A_movableᵀ);
    the others are combinations of them there, met whenever they are (the fixed part is constant)."""
    Am = A[:, movable]
    if Am.shape[1] == 0:
        return A[:0]
    _, R, piv = sla.qr(Am.T, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    rank = int(np.count_nonzero(d > 1e-12 * max(float(d.max(initial=0.0)), 1e-300)))
    out: FloatArray = A[np.sort(piv[:rank])]
    return out


def rows_init(qp: QP, Q: FloatArray, x0: FloatArray | None, tol: float, nonconvex: bool) -> State:
    """The engine's initial state: a feasible start (x0 projected if it is not feasible, else a
    basic feasible point, :func:`qpcore.projection.bound_start`), the bound status as working set
    and an empty factor (the free variables enter it in the first step).

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

    Returns
    -------
    State
    """
    x = bound_start(qp) if x0 is None else feasible_start(qp, np.asarray(x0, dtype=np.float64))[0]
    movable = qp.lb < qp.ub
    A = _independent_rows(qp.A, movable)
    colsq = (A * A).sum(axis=0)
    qscale = float(np.abs(np.diag(Q)).max(initial=0.0))
    tau = (qscale if qscale > 0 else 1.0) / max(float(colsq.max(initial=0.0)), 1e-300)
    if nonconvex:
        tau *= 1e4                        # M must be positive on A's null space's complement
    fac = RowsFactor(Q, A, tau)
    g = Q @ x + qp.c
    status = bound_status(x, qp.lb, qp.ub)
    status[~movable] = -1                 # fixed variables are never free
    work = RowsWork(Q=Q, A=A, tol=tol, steps_left=10 * qp.n + 100, fac=fac, movable=movable,
                    nonconvex=nonconvex, held=np.zeros(qp.n, dtype=bool))
    state = State(x=x, g=g, status=status, work=work)
    state.nonconvex = nonconvex
    state.counters.update(face_solves=0, releases=0, blocks=0, null_moves=0, held=0, direction_steps=0,
                          negative_curvature=0, factor_updates=0, refactors=0)
    return state


def _null_project(AS: FloatArray, v: FloatArray) -> FloatArray:
    """v minus its component outside the null space of A_S (a solve keeps A_S v = 0 only to
    rounding, which a long step would amplify into a broken equality)."""
    if AS.size == 0 or not v.any():
        return v
    res = AS @ v
    if not res.any():
        return v
    out: FloatArray = v - np.linalg.lstsq(AS, res, rcond=1e-12)[0]
    return out


def _block(qp: QP, state: State, work: RowsWork, j: int, upward: bool) -> None:
    """Variable j reached its bound (upper when ``upward``): exactly onto it, into the working set."""
    state.x[j] = qp.ub[j] if upward else qp.lb[j]
    state.status[j] = 1 if upward else -1
    state.counters["blocks"] += 1
    if work.fac.inside[j]:
        work.fac.remove(j)
        state.counters["factor_updates"] += 1
        work.held[:] = False              # F lost a variable: the held ones may now enter
    work.held[j] = False


def _move(qp: QP, state: State, work: RowsWork, S: IndexArray, d: FloatArray, curvature_cap: bool) -> bool:
    """Move x along d (over S) to the first bound, or to the minimizer along d when
    ``curvature_cap`` and the curvature is positive; True if x moved or a bound joined the
    working set (a zero step counts in ``work.zero_steps``), and ``unbounded`` set when the
    objective falls forever along d."""
    x, g, Q = state.x, state.g, work.Q
    slope = float(g[S] @ d)
    if slope > 0.0:
        d, slope = -d, -slope
    Qd = d @ Q[S]
    curv = float(Qd[S] @ d)
    tl, tu = bound_steps(x[S], d, qp.lb[S], qp.ub[S])
    t = np.minimum(tl, tu)
    k = int(np.argmin(t))
    tk = float(t[k])
    alpha = tk
    if curvature_cap and curv > 0.0:
        alpha = min(tk, -slope / curv)
    if not np.isfinite(alpha):
        state.stop = Status.UNBOUNDED     # a descent ray of zero (or negative) curvature meets no bound
        return False
    if alpha <= 0.0 and tk > 0.0:
        return False
    work.zero_steps = work.zero_steps + 1 if alpha <= 0.0 else 0
    x[S] += alpha * d
    g += alpha * Qd
    if alpha >= tk:
        _block(qp, state, work, int(S[k]), bool(d[k] > 0))
    np.clip(x, qp.lb, qp.ub, out=x)
    return True


def _sync(qp: QP, state: State, work: RowsWork) -> bool:
    """Bring the free variables into the factor; a dependent one gives a move along its null
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
        v = _null_project(work.A[:, S], v)
        g = state.g
        slope = float(g[S] @ v)
        # g = Qx + c is known to rounding of its terms, and v to the factor's accuracy: a slope
        # below that is a flat line, not a descent (a long ray along it would wreck x)
        noise = 1e-10 * float((np.abs(qp.c[S]) + np.abs(work.Q[S]) @ np.abs(state.x)) @ np.abs(v))
        if abs(slope) <= noise or not v.any():
            work.held[j] = True           # free along a flat line: its multiplier is 0 at every face minimizer
            state.counters["held"] += 1
            continue
        state.counters["null_moves"] += 1
        if _move(qp, state, work, S, v, curvature_cap=True) or state.stop is not None:
            if work.zero_steps > qp.n:
                _direction_step(qp, state, work)   # zero steps in a row: a degenerate cycle
            return True
        work.held[j] = True
    return False


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
    p = _null_project(work.A[:, S], Z @ V[:, 0])
    _move(qp, state, work, S, p, curvature_cap=False)
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
    line search along it; when there is none (to within half the tolerance) the run ends and the
    certificate judges the point."""
    from scipy.optimize import linprog

    x, g = state.x, state.g
    state.counters["direction_steps"] += 1
    lo = np.where(work.movable & (x > qp.lb), -1.0, 0.0)
    hi = np.where(work.movable & (x < qp.ub), 1.0, 0.0)
    A = work.A
    res = linprog(g, A_eq=A if A.shape[0] else None, b_eq=np.zeros(A.shape[0]) if A.shape[0] else None,
                  bounds=np.column_stack([lo, hi]), method="highs")
    if res.status == 0 and res.x is not None and not -float(res.fun) > 0.5 * work.tol:
        state.done = True                  # no descent beyond tol/2 (−value bounds the measure)
        return
    if res.status != 0 or res.x is None:
        _end(qp, state, work)              # the LP failed: judge the point, never assume it
        return
    d = np.asarray(res.x, dtype=np.float64)
    # the LP meets A d = 0 and the signs to its own tolerance: exactly on the allowed support
    d = np.clip(d, lo, hi)
    S = np.flatnonzero(d != 0)
    for _ in range(3):
        dS = _null_project(A[:, S], d[S])
        dS = np.clip(dS, lo[S], hi[S])
        d[:] = 0.0
        d[S] = dS
        if not A.shape[0] or float(np.abs(A[:, S] @ dS).max(initial=0.0)) <= 1e-14 * float(np.abs(dS).max(initial=1.0)):
            break
    S = np.flatnonzero(d != 0)
    if S.size == 0 or not float(g[S] @ d[S]) < 0.0:
        _end(qp, state, work)              # descent lost to the exact-support clipping
        return
    moved = _move(qp, state, work, S, d[S], curvature_cap=True)
    if state.stop is not None or not moved:
        if not moved and state.stop is None:
            _end(qp, state, work)
        return
    # the working set follows x: a new factor (F may have changed wholesale)
    state.status = bound_status(x, qp.lb, qp.ub)
    state.status[~work.movable] = -1
    work.fac = RowsFactor(work.Q, work.A, work.fac.tau, work.fac.singular_tol)
    state.counters["refactors"] += 1
    work.held[:] = False
    work.zero_steps = 0


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
        state.stop = Status.STALLED        # a degenerate cycle: return the best point honestly
        return
    just_released, work.released = work.released, -1
    if work.nonconvex and _negative_curvature_step(qp, state, work):
        return
    if _sync(qp, state, work):
        return
    x, g, Q, fac = state.x, state.g, work.Q, work.fac
    F = fac.members.copy()
    mu = np.zeros(work.A.shape[0])
    rank = 0
    if F.size:
        state.counters["face_solves"] += 1
        p, mu, rank = fac.solve(-g[F])
        p = _null_project(work.A[:, F], p)
        slope = float(g[F] @ p)
        QFp = p @ Q[F]
        curv = float(QFp[F] @ p)
        gain = -(slope + 0.5 * curv)
        size = float(np.abs(g).max(initial=0.0)) * float(np.abs(x).max(initial=0.0)) + abs(float(x @ (g + qp.c))) + 1.0
        if p.any() and gain > 1e-15 * size:
            tl, tu = bound_steps(x[F], p, qp.lb[F], qp.ub[F])
            t = np.minimum(tl, tu)
            k = int(np.argmin(t))
            alpha = min(1.0, float(t[k]))
            if alpha <= 0.0:
                # degenerate: a free variable on its bound points out at once and joins the
                # working set; a release undone at once, or many zero steps in a row, get a
                # direction step instead (which always descends)
                work.zero_steps += 1
                if int(F[k]) == just_released or work.zero_steps > qp.n:
                    work.zero_steps = 0
                    _direction_step(qp, state, work)
                    return
            else:
                work.zero_steps = 0
            x[F] += alpha * p
            g += alpha * QFp
            if float(t[k]) <= 1.0:
                _block(qp, state, work, int(F[k]), bool(p[k] > 0))
            np.clip(x, qp.lb, qp.ub, out=x)
            return
    # a face minimizer: optimal if the certificate says so, else release a wrong-signed bound
    state.g = g = Q @ x + qp.c             # fresh: the updates above accumulate rounding
    if kkt(qp, x, g).measure <= 0.5 * work.tol:
        state.done = True
        return
    if rank < work.A.shape[0]:
        # the face does not pin the multipliers: the descent direction of the LP, not a guess of λ
        _direction_step(qp, state, work)
        return
    z = g + work.A.T @ mu                  # bound multipliers at the face's λ = −μ
    st = state.status
    wrong = (np.where((st == -1) & work.movable, np.maximum(-z, 0.0), 0.0)
             + np.where((st == 1) & work.movable, np.maximum(z, 0.0), 0.0))
    if not wrong.max(initial=0.0) > 0.0:
        _direction_step(qp, state, work)
        return
    j = int(np.argmax(wrong))
    st[j] = 0
    work.released = j
    state.counters["releases"] += 1
