"""ASVM: Mangasarian & Musicant's active-set algorithm for min ½uᵀQu + cᵀu, u ≥ 0, Q = D + HHᵀ.

Mangasarian & Musicant, "Active set support vector machine classification", NIPS 13 (2000),
Algorithm 3.1. Each ``step`` is one iteration i:

(1) B = {j : u_j > 0}.
(2) ũ_B = −Q_BB⁻¹c_B through Sherman–Morrison–Woodbury (a k×k Cholesky, k = columns of H) and
    u⁺ = (ũ_B)₊, u⁺_N = 0. Stop when 0 ≤ u⁺ ⊥ Qu⁺ + c ≥ 0 to tol.
(2a) If f(u⁺) ≥ f(u): go to (4a).
(2b) If u⁺ is optimal on the face u_N = 0: accept it and go to (4b).
(3)  Accept u⁺.
(4a) Move from u toward the face minimum ũ, u + λ(ũ − u), with λ ≤ 1 the largest step keeping
     u ≥ 0 (the ratio test; q decreases all along it). If λ = 1 the face minimum is reached: (4b).
(4b) One gradient-projection step with the Moré–Toraldo projected search along −∇f
     (``strategies.gradient_projection.projected_search``).

With (2a), (2b), (4a) and (4b) the iteration is a Moré–Toraldo method, whose finite termination
result applies; each safeguard is counted in the run's stats (``decrease_fails`` for (2a),
``face_optimal`` for (2b), ``face_moves`` for (4a), ``projection_steps`` for (4b)).

Cost per iteration: one pass over the data for H z, a second only when (2) clips, and the k×k
Gram matrix H_Bᵀ D_B⁻¹ H_B kept by rank updates over the rows that enter or leave B (or rebuilt,
whichever touches fewer rows): O(|changed|·k² + m·k), never O(m²).

Limits: one step is a few passes over the data, so ``max_iter`` bounds the work; on the run's
deadline a step skips its projection step (4b), and the projected search itself stops taking
products once the deadline has passed. The problem class has no fixed variables (ub = inf) and
no negative curvature (d > 0 and HHᵀ ⪰ 0 make Q positive definite), so neither needs handling.

Data on a Dask cluster: when Q is a :class:`qpcore.chunked.ChunkedLowRankQ` (``asvm_dual`` of a
dask array) the same iteration runs with u and g chunk by chunk on the workers and only the k×k
system on the client (:mod:`strategies.asvm_chunked`); ``init`` and ``step`` hand over to it.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.chunked import ChunkedLowRankQ
from qpcore.lowrank import DiagPlusLowRankQ, SMWFactor
from qpcore.optimality import projected_gradient
from qpcore.problem import QP, ProblemError
from qpcore.state import State, Status, bound_status
from strategies.asvm_chunked import ChunkedASVMWork, init_chunked, step_chunked
from strategies.gradient_projection import projected_search

FloatArray = NDArray[np.float64]

__all__ = ["ASVM", "ASVMWork"]


def _measure(qp: QP, x: FloatArray, g: FloatArray, buf: FloatArray) -> float:
    """∞-norm of the projected gradient (what ``qpcore.kkt`` reports for a problem without
    equalities), through the buffer ``buf`` (no allocation of an m-vector per call)."""
    pg = projected_gradient(x, g, qp.lb, qp.ub, out=buf)
    np.abs(pg, out=pg)
    return float(pg.max(initial=0.0))


def _gradient(qp: QP, u: FloatArray, p: FloatArray) -> FloatArray:
    """∇f = d∘u + H p + c for p = Hᵀu: one pass over the data."""
    Q: DiagPlusLowRankQ = qp.Q  # type: ignore[assignment]
    g = Q.matvec_lowrank(p)
    g += Q.d * u
    g += qp.c
    return g


@attrs.define(slots=True, eq=False)
class ASVMWork:
    """ASVM's slot in ``State.extra``.

    Attributes
    ----------
    factor : SMWFactor
        The SMW factor of Q_BB for B = {u > 0}, with r = −c as its fixed right-hand side.
    p : ndarray
        Hᵀu (k-vector): the primal (w, γ) of the ASVM dual, kept with u.
    f : float
        The objective at u.
    tol : float
        The requested tolerance.
    flat : int
        Iterations in a row without a decrease.
    buf : ndarray
        Scratch m-vector for the projected gradient.
    """

    factor: SMWFactor
    p: FloatArray
    f: float
    tol: float
    flat: int = 0
    buf: FloatArray = attrs.field(factory=lambda: np.empty(0))


@attrs.frozen
class ASVM:
    """Algorithm 3.1 of Mangasarian & Musicant with the Moré–Toraldo safeguards.

    For a nonnegativity QP (lb = 0, ub = inf, no equality rows) whose Q is a
    :class:`qpcore.lowrank.DiagPlusLowRankQ` with d > 0: the ASVM / L2-loss SVM dual built by
    :func:`problems.asvm.asvm_dual`, or any diagonal-plus-low-rank QP.

    Parameters
    ----------
    max_rank : int
        Largest k (columns of H) accepted: the k×k system costs k² memory and k³ per factorization.
    segments : int
        Breakpoints per round of the projected search in (4b).
    stall : int
        Iterations in a row without a decrease after which the run ends as ``stalled`` (after an
        exact gradient refresh has failed to restart progress).
    """

    max_rank: int = 20000
    segments: int = 64
    stall: int = 5

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Check the problem's shape and start from u⁰ = (Q⁻¹(−c))₊, or from x0 clipped to u ≥ 0.

        Parameters
        ----------
        qp : QP
            A nonnegativity QP with a ``DiagPlusLowRankQ`` (d > 0) and no equality rows, or a
            ``ChunkedLowRankQ`` (data on a Dask cluster, :mod:`strategies.asvm_chunked`).
        x0 : ndarray or ChunkedVector, optional
            A start (a ``ChunkedVector`` for chunked data); the face solve's clipped minimizer when None.
        tol : float
            The tolerance on the projected-gradient norm.

        Returns
        -------
        State

        Raises
        ------
        ProblemError
            For another operator, equality rows, bounds other than u ≥ 0, d ≤ 0 or k > max_rank.
        """
        Q = qp.Q
        if isinstance(Q, ChunkedLowRankQ):
            return init_chunked(self, qp, x0, tol)     # rows on a Dask cluster: u lives with them
        if not isinstance(Q, DiagPlusLowRankQ):
            raise ProblemError("ASVM: Q must be a DiagPlusLowRankQ (diag(d) + HHᵀ); "
                               f"got {type(Q).__name__}")
        if qp.m:
            raise ProblemError("ASVM: equality constraints are not supported (the ASVM dual has none)")
        if (qp.lb != 0).any() or np.isfinite(qp.ub).any():
            raise ProblemError("ASVM: the feasible set must be u ≥ 0 (lb = 0, ub = inf)")
        if (Q.d <= 0).any():
            raise ProblemError("ASVM: the diagonal d must be > 0 (SMW inverts D_B)")
        if Q.k > self.max_rank:
            raise ProblemError(f"ASVM: H has k = {Q.k} columns, above max_rank = {self.max_rank}; "
                               "the k×k system would not fit (use SMO or decomposition)")
        r = -qp.c
        counters = {"face_solves": 0, "decrease_fails": 0, "face_optimal": 0, "face_moves": 0,
                    "projection_steps": 0, "exact_checks": 0, "refined_solves": 0, "refinements": 0}
        if x0 is None:
            factor = Q.factor(None, rhs=r)
            ut, z = factor.solve_fixed()
            u = np.maximum(ut, 0.0)
            neg = np.flatnonzero(ut < 0)
            p = z - Q.rmatvec_rows(neg, ut[neg]) if neg.size else z
            factor.update(np.empty(0, dtype=np.intp), np.flatnonzero(u == 0))
            counters["face_solves"] = 1
        else:
            u = np.maximum(x0, 0.0)
            factor = Q.factor(np.flatnonzero(u > 0), rhs=r)
            p = Q.rmatvec_lowrank(u)
        g = _gradient(qp, u, p)
        f = float(0.5 * u @ (g + qp.c))
        state = State(x=u, g=g, status=bound_status(u, qp.lb, qp.ub), counters=counters,
                      extra=ASVMWork(factor=factor, p=p, f=f, tol=tol, buf=np.empty(qp.n)))
        self._check(qp, state)
        return state

    def converged(self, qp: QP, state: State, tol: float) -> bool:
        """Whether ``step`` has confirmed the tolerance at an exact gradient (``state.done``).

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            The run's state.
        tol : float
            The tolerance (the one given to ``init`` is what ``step`` checks).

        Returns
        -------
        bool
        """
        return state.done

    # ------------------------------------------------------------------ pieces
    @staticmethod
    def _accept(qp: QP, state: State, u: FloatArray, p: FloatArray, g: FloatArray, f: float) -> None:
        work: ASVMWork = state.extra
        old = work.factor.mask
        now = u > 0
        work.factor.update(np.flatnonzero(now & ~old), np.flatnonzero(old & ~now))
        # progress is a decrease above rounding: near the optimum f can oscillate by an ulp
        # between two faces, and that must count as flat for the stall test to see it
        tiny = 8.0 * np.finfo(np.float64).eps * max(1.0, abs(work.f))
        work.flat = 0 if f < work.f - tiny else work.flat + 1
        state.x, state.g, work.p, work.f = u, g, p, f
        state.status = bound_status(u, qp.lb, qp.ub)

    @staticmethod
    def _exact(qp: QP, state: State) -> float:
        """Recompute p = Hᵀu, g and f from u afresh (two passes); returns the KKT measure."""
        work: ASVMWork = state.extra
        Q: DiagPlusLowRankQ = qp.Q  # type: ignore[assignment]
        work.p = Q.rmatvec_lowrank(state.x)
        g = _gradient(qp, state.x, work.p)
        state.g = g
        state.exact = (state.x, g)
        work.f = float(0.5 * state.x @ (g + qp.c))
        return _measure(qp, state.x, g, work.buf)

    def _check(self, qp: QP, state: State) -> bool:
        """When the running gradient meets tol, confirm with an exact one before claiming it."""
        work: ASVMWork = state.extra
        if _measure(qp, state.x, state.g, work.buf) > work.tol:
            return False
        state.counters["exact_checks"] += 1
        if self._exact(qp, state) <= work.tol:
            state.done = True
            return True
        return False

    @staticmethod
    def _face_measure(qp: QP, u: FloatArray, g: FloatArray, B: NDArray[np.bool_], buf: FloatArray) -> float:
        """The largest |projected gradient| over the face's variables B (0 when B is empty)."""
        pg = projected_gradient(u, g, qp.lb, qp.ub, out=buf)
        np.abs(pg, out=pg)
        return float(np.max(pg, where=B, initial=0.0))

    def _gradient_projection(self, qp: QP, state: State) -> None:
        """(4b): the projected search along −∇f from u."""
        work: ASVMWork = state.extra
        Q: DiagPlusLowRankQ = qp.Q  # type: ignore[assignment]
        state.counters["projection_steps"] += 1
        u, g = state.x, state.g
        res = projected_search(qp, u, g, -g, segments=self.segments, deadline=state.deadline)
        if not res.decrease > 0.0 or res.Qs is None:
            work.flat += 1
            return
        if not np.isfinite(res.decrease):
            state.stop = Status.UNBOUNDED   # cannot happen with d > 0; kept for honesty
            return
        un = np.maximum(res.x, 0.0)
        dx = np.flatnonzero(un != u)
        p = work.p + Q.rmatvec_rows(dx, un[dx] - u[dx])
        self._accept(qp, state, un, p, g + res.Qs, work.f - res.decrease)

    def _face_move(self, qp: QP, state: State, ut: FloatArray, z: FloatArray) -> bool:
        """(4a): u + λ(ũ − u), the ratio test on B; True when the face minimum was reached (λ = 1)."""
        work: ASVMWork = state.extra
        Q: DiagPlusLowRankQ = qp.Q  # type: ignore[assignment]
        state.counters["face_moves"] += 1
        u = state.x
        B = work.factor.mask
        dirn = ut - u
        dirn[~B] = 0.0
        drop = np.flatnonzero(B & (ut < 0))
        lam = 1.0
        hit = np.empty(0, dtype=np.intp)
        if drop.size:
            ratios = u[drop] / (u[drop] - ut[drop])
            lam = float(min(1.0, ratios.min()))
            hit = drop[ratios <= lam]
        un = u + lam * dirn
        un[hit] = 0.0   # the blocking variables land exactly on their bound
        np.maximum(un, 0.0, out=un)
        p = (1.0 - lam) * work.p + lam * z
        if hit.size:
            p = p - Q.rmatvec_rows(hit, u[hit] + lam * dirn[hit])
        g = _gradient(qp, un, p)
        f = float(0.5 * un @ (g + qp.c))
        self._accept(qp, state, un, p, g, f)
        return lam >= 1.0

    # ------------------------------------------------------------------ the iteration
    def step(self, qp: QP, state: State) -> None:
        """One iteration of Algorithm 3.1 (steps 1–4b): a few passes over the data.

        On the run's deadline the step skips its projection step (4b) and returns with u, Hᵀu,
        g and f accepted together.

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            Mutated in place.
        """
        if isinstance(state.extra, ChunkedASVMWork):
            step_chunked(self, qp, state)
            return
        work: ASVMWork = state.extra
        Q: DiagPlusLowRankQ = qp.Q  # type: ignore[assignment]
        if work.flat >= self.stall:
            # rounding-level progress only: refresh everything exactly, and give up honestly
            # when that has not restarted progress either
            if state.counters["refinements"] >= 3:
                state.stop = Status.STALLED
                return
            state.counters["refinements"] += 1
            work.flat = 0
            if self._exact(qp, state) <= work.tol:
                state.done = True
            return
        u = state.x
        B = work.factor.mask.copy()   # the face of this iteration (the factor's mask moves on accept)
        # (2) the face solve on B through SMW (one pass for H z)
        ut, z = work.factor.solve_fixed()
        state.counters["face_solves"] += 1
        neg = np.flatnonzero(B & (ut < 0))
        un = np.maximum(ut, 0.0)
        p = z - Q.rmatvec_rows(neg, ut[neg]) if neg.size else z
        g = _gradient(qp, un, p)    # p = z when nothing was clipped: still one pass
        f = float(0.5 * un @ (g + qp.c))
        if not f < work.f:
            # (2a) no decrease: move toward the face minimum instead, then (4b) if it was reached
            state.counters["decrease_fails"] += 1
            # the face minimum from the fixed right-hand side is exact only to cond(Q_BB)·eps of
            # its own size, which near the optimum is the whole remaining step: take it instead as
            # a correction from the exact gradient (one step of iterative refinement)
            self._exact(qp, state)
            state.counters["refined_solves"] += 1
            delta, zdelta = work.factor.solve_full(-state.g)
            ut, z = state.x + delta, work.p + zdelta
            if self._face_move(qp, state, ut, z) and not self._check(qp, state) and not state.out_of_time():
                self._gradient_projection(qp, state)
            self._check(qp, state)
            return
        self._accept(qp, state, un, p, g, f)
        if self._check(qp, state) or state.out_of_time():
            return      # on the deadline: u, p, g and f were just accepted together
        Bn = work.factor.mask
        if not neg.size or not Bn.any() or self._face_measure(qp, un, g, B, work.buf) <= work.tol:
            # (2b) optimal on the face u_N = 0: leave the face by a projected-gradient step
            state.counters["face_optimal"] += 1
            self._gradient_projection(qp, state)
            self._check(qp, state)
