"""A block active-set finish for box + equality-row QPs over any Q operator (the SVM duals).

    minimize ½xᵀQx + cᵀx   subject to   lb ≤ x ≤ ub,   A x = b

Once an inexpensive run (SMO to a loose gap, or any warm start) has nearly identified which
variables sit at each bound, the rest is linear algebra (issue 35, part 1):

1. **Guess** the active set from the point and its bound multipliers z = g − Aᵀλ (λ from
   :func:`qpcore.core.certificate.estimate_multipliers`), by OSQP's polish rule
   (:func:`qpcore_strategies.block_pivoting.guess_active`).
2. **Solve the face** (:class:`BoxEqualityFace`): with the bound variables N fixed at their
   bounds, the free set F and the equality rows (every row: ν-SVC's and ν-SVR's two groups, the
   one row of C-SVC and of the abstract form, none for the fixed-threshold form) give one KKT
   system ``[[Q_FF, A_Fᵀ], [A_F, 0]]``, one factorization (or an update of the kept one). Q is
   read only through ``Q.rows(D)`` (and its float64 block Q_FF when rows are stored rounded):
   the rows of the free set and of the variables whose value changed since the start (the
   gradient is updated from the start's, g = g₀ + Q_D·(x − x₀)_D; with rounded rows it is the
   operator's exact product, which also refines the face's solution), so a kernel operator serves
   them from its cache and a dense one (``DenseQ``) by slicing; the doubled operator of ε-SVR
   (:class:`qpcore.backends.doubled.DoubledKernelQ`) gives its 2l rows from l kernel rows. Its
   pairs (α_i, α*_i) are never both free on a face (it declares
   :attr:`~qpcore.backends.capabilities.Capability.MIRRORED`): both free, the face is singular
   along e_i + e_(i+l) and descends along its negative, so the member nearer its bound is held at
   0, where that ray step ends.
3. **Check every variable with one product** and move the violators in blocks
   (:func:`qpcore_strategies.block_pivoting.block_principal_pivoting`: Júdice and Pires's block
   principal pivoting; after ``backup`` rounds without a new smallest number of violators, Kim
   and Park's counter falls back to Murty's single pivot). Plain block exchanges are the default
   (``ratio=0``): the ratio step toward the block solution from the feasible start (``ratio``
   > 0), which general rows need, activates only the bounds met first, one or two per round on
   an SVM dual (ν-SVC on 2,000 rows of adult, RBF γ = 0.025, from SMO at gap 1e-2: 20 rounds
   and no end with ``ratio=0.9``, 5 rounds to the optimum with block exchanges; ε-SVR there:
   19 rounds against 4).
4. **Certify**: the face point is accepted only when :func:`qpcore.kkt` certifies it at the
   run's tol (with the face's gradient); otherwise the caller keeps its own point and goes on
   (SMO resumes from where it was) and ``Result.stats`` says why.

**The guarantee relied on.** Termination is unconditional: ``max_rounds`` caps the faces solved
(each one factorization), a free set above ``max_free`` is never factored, a face asked for
a third time (a loop the safeguard did not break) ends the pivoting at once, and so does a round
with more than ``max_growth`` times the first round's violators (exchanges running away from a
far guess, where each further face costs a factorization and rarely comes back). Correctness does
not rest on the pivoting converging: a result is taken only when the certificate accepts it, so
the worst case is a wasted finish and the inner strategy's own convergence (SMO's) stands. Where
the pivoting converges by theory: the safeguard's single moves from a feasible point are the
primal active-set method, finite on a strictly convex problem without degenerate steps (Nocedal
and Wright §16.5); without rows, Murty's rule is finite on a P-matrix LCP (a positive definite
Q). An SVM dual with duplicate points has a singular Q_FF (and a singular face when both copies
are free): the face is then solved in the least-squares sense (minimum norm), which is still a
minimizer of a consistent face; an inconsistent one shows as violators or a failed certificate.

**What is seen** (random SVM duals of 25 points, :func:`qpcore.testkit.generators.random_svm_dual`,
RBF and linear, C from 1e-2 to 1e2, duplicates; ``max_rounds=30``): from SMO's point at a gap of
1e-2, 60 of 60 certified at 1e-9, mostly in one to three faces; from a vertex of the box (the
bound start) or the feasible point nearest the box's middle, 24 of 60 each certify; most of the
rest loop (caught at a face's third visit), a few end on the cap or on a face the certificate
refuses (the block and single moves alternate; with an equality row the problem is not
a P-matrix LCP, so Murty's rule carries no finiteness proof there). Those return to SMO. On
2,000 rows of adult (RBF γ = 0.025), at tol 1e-6, ``SMO(finish=BlockFinish())`` ends certified,
at SMO's objective, after (SMO alone in brackets): C-SVC, C = 100: 12,900 steps and 2 faces
(58,249); ν-SVC, ν = 0.3: 1,800 steps and 5 faces (about 12,300); ε-SVR, C = 10: 33,300 steps
and 2 faces (53,006); ν-SVR: 31,000 steps and 1 face (43,986). Steps, not time: each face costs
a factorization of the free set (380 to 600 variables there) and, for float32 rows, two or
three exact products.

**When it does not help.** A free set too large to factor (``max_free``: the finish declines and
says so; the factor is O(|F|³) and the rows O(|F|·n)), or a start whose sets keep changing (far
from the optimum: many rounds, each a factorization, often ending on the cap and a return to
SMO). A start whose gap is already at tol gains nothing. With one equality row or none the
factor of the free set is kept across faces (``keep_factor``: removals, then the entering block
by ``BorderedCholesky.add_block``; a fresh factor when more than half the free set changed);
ν's two rows take a fresh LU per face.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any, Callable

import attrs
import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray

from qpcore.backends.capabilities import Capability, QOperator, principal_block
from qpcore.core.certificate import estimate_multipliers, kkt
from qpcore.core.problem import QP
from qpcore.core.state import State, bound_status
from qpcore.linalg.factor import BorderedCholesky
from qpcore_strategies.block_pivoting import BPPOutcome, block_principal_pivoting, guess_active

__all__ = ["BlockFinish", "BlockFinishResult", "BoxEqualityFace", "FacePoint", "block_finish"]

FloatArray = NDArray[np.float64]
Int8Array = NDArray[np.int8]
IndexArray = NDArray[np.intp]


class FreeSetTooLarge(Exception):
    """The face's free set exceeds ``max_free``: the finish declines."""


class Cycle(Exception):
    """The pivoting asked for the same face a third time: the sets keep changing in a loop."""

#: visits of one face after which the pivoting counts as cycling
_CYCLE_VISITS = 3


@attrs.frozen(eq=False)
class FacePoint:
    """A face solution (a :class:`qpcore_strategies.block_pivoting.FaceSolution`).

    Attributes
    ----------
    x : ndarray
        The face's point (the free part may lie outside the box: a violator).
    g : ndarray
        Its gradient Qx + c (from the start's, updated by the rows that changed).
    lam : ndarray
        The equality multipliers λ (stationarity g − Aᵀλ − z = 0).
    z : ndarray
        The bound multipliers (0 on the free set).
    row_residual : float
        max |A x − b| (a row without free variable may be unmet by its bound variables).
    """

    x: FloatArray
    g: FloatArray
    lam: FloatArray
    z: FloatArray
    row_residual: float

    @property
    def value(self) -> FloatArray:
        """The pairs' values: the variables."""
        return self.x

    @property
    def mult(self) -> FloatArray:
        """The pairs' multipliers: z."""
        return self.z


class BoxEqualityFace:
    """The face solver of a box + equality-rows QP whose Q is any :class:`QOperator`.

    Parameters
    ----------
    Q : QOperator
        Read through ``rows`` (free set and changed variables); when its rows are stored
        rounded (``row_eps`` above float64's), also ``principal_block`` (Q_FF in float64) and
        ``matvec`` (the exact gradient, one or two refinements per face).
    c, lb, ub : ndarray
        Linear term and the (finite) box.
    A, b : ndarray
        The equality rows (m × n, m may be 0).
    x0, g0 : ndarray
        A feasible start and its gradient (the gradient of every face point is g0 + Q(x − x0)).
    max_free : int
        The largest free set factored (above it: :class:`FreeSetTooLarge`).
    keep_factor : bool
        With at most one equality row, keep a :class:`qpcore.linalg.factor.BorderedCholesky` of
        the free set across faces (leaving variables removed, entering ones appended as one
        block with ``add_block``) instead of a fresh LU per face. A solve it does not meet to
        rounding, or a block it refuses (a singular face), goes to the LU / least-squares path.
    """

    def __init__(self, Q: QOperator, c: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
                 x0: FloatArray, g0: FloatArray, max_free: int, keep_factor: bool = True) -> None:
        self.Q, self.c, self.lb, self.ub, self.A, self.b = Q, c, lb, ub, A, b
        self.x0, self.g0, self.max_free = x0, g0, max_free
        self.factorizations = 0
        self.least_squares = 0
        self.largest_free = 0
        self.matvecs = 0
        # rows rounded beyond float64 (a float32 kernel cache): the face is refined, and its
        # gradient taken, with the operator's exact products (``matvec``, one per refinement)
        self.exact = float(Q.row_eps) > 1e-14
        self.refine = 2
        self.keep_factor = keep_factor and A.shape[0] <= 1
        self.fac: BorderedCholesky | None = None
        self.updates = 0          # faces solved by updating the kept factor
        self.visits: dict[bytes, int] = {}
        self.mirrored = 0         # pairs of a mirrored operator set back to one free member
        # a mirrored operator's pairs (i, i + l) whose columns of A cancel and whose linear terms
        # sum to ≥ 0: with both free the face is singular along e_i + e_(i+l) and descends
        # along −(e_i + e_(i+l)) until one of them meets its lower bound, so the face of a
        # solution has at most one of them free (ε-SVR's α_i α*_i = 0)
        self.pairs: IndexArray | None = None
        n = c.size
        if Capability.MIRRORED in Q.capabilities and n % 2 == 0:
            l = n // 2
            ok = (c[:l] + c[l:] >= 0) & (lb[:l] == lb[l:])
            if A.shape[0]:
                ok &= (np.abs(A[:, :l] + A[:, l:]) == 0).all(axis=0)
            if ok.any():
                self.pairs = np.flatnonzero(ok)

    def _one_free_per_pair(self, state: Int8Array) -> Int8Array:
        """``state`` with, in each mirrored pair guessed both free, the member nearer its lower
        bound (at the start) set there: the end of the ray step along the face's null direction."""
        P = self.pairs
        if P is None:
            return state
        l = self.c.size // 2
        both = P[(state[P] == 0) & (state[P + l] == 0)]
        if both.size == 0:
            return state
        state = state.copy()
        second = self.x0[both + l] - self.lb[both + l] <= self.x0[both] - self.lb[both]
        state[np.where(second, both + l, both)] = -1
        self.mirrored += int(both.size)
        return state

    def _kept(self, F: IndexArray, rows_F: FloatArray, QFF: FloatArray, K: FloatArray,
              rhs: FloatArray) -> tuple[Callable[[FloatArray], FloatArray], FloatArray] | None:
        """The face through the kept factor, updated to F; None when it cannot serve (then the
        caller factors afresh)."""
        A = self.A
        nF = F.size
        fac = self.fac
        members = fac.members if fac is not None else np.zeros(0, dtype=np.intp)
        inside = np.isin(members, F)
        if fac is None or int(np.count_nonzero(~inside)) + nF - int(np.count_nonzero(inside)) > nF // 2:
            # a fresh factor when more than half the free set changed (updates cost more then)
            fac = BorderedCholesky(a=A[0] if A.shape[0] else None)
            members = np.zeros(0, dtype=np.intp)
        else:
            for i in members[~inside]:
                fac.remove(int(i))
            members = fac.members
        self.fac = None
        pos_F = {int(v): k for k, v in enumerate(F)}
        enter = np.array([v for v in F if v not in set(members.tolist())], dtype=np.intp)
        if enter.size:
            e_local = np.array([pos_F[int(v)] for v in enter], dtype=np.intp)
            m_local = np.array([pos_F[int(v)] for v in members], dtype=np.intp)
            cols = QFF[np.ix_(m_local, e_local)]
            if not fac.add_block(enter, cols, QFF[np.ix_(e_local, e_local)]):
                return None
        order = np.array([pos_F[int(v)] for v in fac.members], dtype=np.intp)   # factor → F positions
        bordered = fac.bordered()

        def by_factor(r: FloatArray) -> FloatArray:
            xs, mu = fac.solve_kkt(r[:nF][order], float(r[nF]) if r.size > nF else 0.0)
            out = np.empty(r.size)
            out[order] = xs
            if r.size > nF:
                out[nF:] = mu if bordered else 0.0
            return out

        sol = by_factor(rhs)
        sol = sol + by_factor(rhs - K @ sol)
        scale = float(np.abs(K).max(initial=0.0)) + 1e-300
        err = float(np.abs(rhs - K @ sol).max(initial=0.0))
        if not (np.isfinite(sol).all() and err <= 1e-11 * (scale * float(np.abs(sol).max(initial=0.0))
                                                          + float(np.abs(rhs).max(initial=0.0)) + 1e-300)):
            return None
        if rhs.size > nF and not bordered:
            return None       # the row is live but a_S = 0 in the factor: not this face
        self.fac = fac
        self.updates += 1
        return by_factor, sol

    def solve(self, state: Int8Array) -> FacePoint:
        """The minimizer of the face ``state`` describes (−1 at lb, +1 at ub, 0 free)."""
        lb, ub, A, b, x0 = self.lb, self.ub, self.A, self.b, self.x0
        n, m = x0.size, A.shape[0]
        key = np.asarray(state, dtype=np.int8).tobytes()
        self.visits[key] = self.visits.get(key, 0) + 1
        if self.visits[key] >= _CYCLE_VISITS:
            # the same face a third time (Kim and Park's counter has had its chance between the
            # visits): a loop, which only the cap would end; hand back now
            raise Cycle(f"face {len(self.visits)} asked for a third time after {sum(self.visits.values()) - 1} faces")
        state = self._one_free_per_pair(state)
        F = np.flatnonzero(state == 0)
        self.largest_free = max(self.largest_free, int(F.size))
        if F.size > self.max_free:
            raise FreeSetTooLarge(f"{F.size} free variables > max_free={self.max_free}")
        x = np.where(state < 0, lb, np.where(state > 0, ub, x0))
        bound = state != 0
        moved = np.flatnonzero(bound & (x != x0))
        D = np.concatenate([F, moved])
        rows = np.asarray(self.Q.rows(D), dtype=np.float64).reshape(D.size, n) if D.size else np.zeros((0, n))
        nF = F.size
        lam = np.zeros(m)
        AF = A[:, F]
        live = np.flatnonzero(np.abs(AF).sum(axis=1) > 0) if m else np.zeros(0, dtype=np.intp)
        if nF:
            RF = rows[:nF]
            xb = np.where(bound, x, 0.0)
            r1 = -self.c[F] - RF @ xb
            E = AF[live]
            r2 = b[live] - A[live] @ xb
            k = live.size
            # Q_FF in float64 from the operator (a kernel's block from its points), whatever the rows' dtype
            QFF = principal_block(self.Q, F) if self.exact else RF[:, F]
            K = np.block([[QFF, E.T], [E, np.zeros((k, k))]])
            rhs = np.concatenate([r1, r2])
            kept = self._kept(F, RF, QFF, K, rhs) if self.keep_factor else None
            solver, sol = kept if kept is not None else self._factor(K, rhs)
            x[F] = sol[:nF]
            lam[live] = -sol[nF:]
        if self.exact:
            # rows stored rounded (float32) made the right-hand side inexact: refine against the
            # operator's exact products (one matvec each; the last one is the face's gradient)
            for it in range(self.refine + 1):
                g = np.asarray(self.Q.matvec(x), dtype=np.float64) + self.c
                self.matvecs += 1
                if not nF or it == self.refine:
                    break
                r = np.concatenate([-(g[F] - E.T @ lam[live]), b[live] - E @ x[F] - A[live] @ xb])
                size = float(np.abs(g[F]).max(initial=0.0)) + float(np.abs(E.T @ lam[live]).max(initial=0.0))
                if float(np.abs(r).max(initial=0.0)) <= 64 * np.finfo(np.float64).eps * max(1.0, size):
                    break
                d = solver(r)
                x[F] += d[:nF]
                lam[live] -= d[nF:]
        else:
            g = self.g0 + rows.T @ (x - x0)[D] if D.size else self.g0.copy()
        z = g - A.T @ lam if m else g.copy()
        # the rows without a free variable: λ_k in the interval the signs of their bound
        # multipliers allow (its middle; with an empty interval, the value of least worst violation)
        for k in np.setdiff1d(np.arange(m), live):
            members = np.flatnonzero(A[k] != 0)
            if members.size == 0:
                continue
            a = A[k, members]
            h = z[members] + a * lam[k]
            s = np.where(state[members] < 0, 1.0, -1.0)     # s·(h − aλ) ≥ 0
            coef = s * a                                     # s·h − coef·λ ≥ 0
            with np.errstate(divide="ignore", invalid="ignore"):
                lim = s * h / coef
            upper = lim[coef > 0]
            lower = lim[coef < 0]
            hi = float(upper.min()) if upper.size else math.inf
            lo = float(lower.max()) if lower.size else -math.inf
            lam_k = (0.5 * (lo + hi) if math.isfinite(lo) and math.isfinite(hi)
                     else lo if math.isfinite(lo) else hi if math.isfinite(hi) else 0.0)
            z[members] = h - a * lam_k
            lam[k] = lam_k
        z[F] = 0.0
        res = float(np.abs(A @ x - b).max(initial=0.0)) if m else 0.0
        return FacePoint(x=x, g=g, lam=lam, z=z, row_residual=res)

    def _factor(self, K: FloatArray, rhs: FloatArray) -> tuple[Callable[[FloatArray], FloatArray], FloatArray]:
        """One LU factorization (a solve and one refinement step checked against ``rhs``); a
        singular or ill-conditioned face (more free points than the kernel's rank, duplicate
        points) by least squares, whose minimum-norm solution still meets a consistent face."""
        self.factorizations += 1
        scale = float(np.abs(K).max(initial=0.0)) + 1e-300

        def accurate(v: FloatArray) -> bool:
            r = rhs - K @ v
            return bool(np.isfinite(v).all()) and float(np.abs(r).max(initial=0.0)) <= 1e-11 * (
                scale * float(np.abs(v).max(initial=0.0)) + float(np.abs(rhs).max(initial=0.0)) + 1e-300)

        with warnings.catch_warnings():
            warnings.simplefilter("error", sla.LinAlgWarning)
            try:
                lu = sla.lu_factor(K, check_finite=False)

                def by_lu(r: FloatArray) -> FloatArray:
                    v = np.asarray(sla.lu_solve(lu, r, check_finite=False), dtype=np.float64)
                    return v + np.asarray(sla.lu_solve(lu, r - K @ v, check_finite=False), dtype=np.float64)

                sol = by_lu(rhs)
                if accurate(sol):
                    return by_lu, sol
            except (np.linalg.LinAlgError, sla.LinAlgWarning, ValueError):
                pass
        self.least_squares += 1

        def by_lstsq(r: FloatArray) -> FloatArray:
            return np.asarray(sla.lstsq(K, r, check_finite=False)[0], dtype=np.float64)

        return by_lstsq, by_lstsq(rhs)


@attrs.frozen(eq=False)
class BlockFinishResult:
    """The outcome of :func:`block_finish`.

    Attributes
    ----------
    certified : bool
        Whether the face point was certified at tol (then ``x``, ``g``, ``lam`` are it).
    x, g, lam : ndarray or None
        The certified point, its gradient and equality multipliers (None unless certified).
    rounds : int
        Faces solved (factorizations).
    block_moves : int
        Rounds that moved several violators at once.
    single_pivots : int
        Rounds of the safeguard's single moves.
    ratio_steps : int
        Rounds that took the ratio step toward the face's solution.
    violators : tuple of int
        The number of violators after each round.
    free : int
        The largest free set met.
    least_squares : int
        Faces solved by least squares (singular: duplicate points free together).
    factor_updates : int
        Faces solved through the kept factor (one row or none: ``keep_factor``).
    mirrored : int
        Mirrored pairs (:attr:`~qpcore.backends.capabilities.Capability.MIRRORED`) guessed both
        free, one of which a face held at its lower bound.
    measure : float
        The certificate's measure of the face point (NaN when none was checked).
    fallback : str
        Empty when certified, else why the caller keeps its own point.
    """

    certified: bool
    x: FloatArray | None
    g: FloatArray | None
    lam: FloatArray | None
    rounds: int = 0
    block_moves: int = 0
    single_pivots: int = 0
    ratio_steps: int = 0
    violators: tuple[int, ...] = ()
    free: int = 0
    least_squares: int = 0
    factor_updates: int = 0
    mirrored: int = 0
    measure: float = math.nan
    fallback: str = ""

    @property
    def message(self) -> str:
        """What happened, in a few words."""
        if self.certified:
            return (f"certified by the block finish in {self.rounds} round(s) ({self.block_moves} block move(s), "
                    f"{self.single_pivots} single pivot(s), free set {self.free})")
        return f"block finish fell back: {self.fallback}"


def _keep_rows_met(state: Int8Array, x0: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
                   pinned: NDArray[np.bool_]) -> None:
    """Make the guessed face meet every equality row: a row whose members are all guessed at a
    bound, and which those bounds do not meet, gets its members back where the (feasible) start
    has them (at its bound, or free). OSQP's rule reads a large multiplier as "at that bound"
    even for a variable at the other one (a start at a vertex), and such a face has no point."""
    for k in range(A.shape[0]):
        members = np.flatnonzero(A[k] != 0)
        if members.size == 0 or (state[members] == 0).any():
            continue
        xb = np.where(state[members] < 0, lb[members], ub[members])
        terms = float(np.abs(A[k, members] * xb).sum()) + abs(float(b[k]))
        if abs(float(A[k, members] @ xb) - float(b[k])) <= 1e-12 * max(1.0, terms):
            continue
        xm = x0[members]
        back = np.where(xm <= lb[members], -1, np.where(xm >= ub[members], 1, 0)).astype(np.int8)
        back[pinned[members]] = -1
        state[members] = back


def block_finish(qp: QP, x: FloatArray, g: FloatArray, tol: float, *, max_free: int = 3000, max_rounds: int = 20,
                 backup: int = 3, ratio: float = 0.0, active_tol: float = 1e-9,
                 keep_factor: bool = True, deadline: float = float("inf"),
                 max_growth: float = 4.0) -> BlockFinishResult:
    """Finish a box + equality-rows QP from a feasible point by block principal pivoting.

    Parameters
    ----------
    qp : QP
        The problem (finite box, equality rows; no inequality rows).
    x, g : ndarray
        A feasible point (A x = b, in the box) and its gradient.
    tol : float
        The certificate's tolerance the face point must meet (:meth:`qpcore.KKT.ok`).
    max_free : int
        The largest free set factored; above it the finish declines.
    max_rounds : int
        The most faces solved.
    backup : int
        Kim and Park's p̄: block rounds without a new smallest number of violators before single
        moves.
    ratio : float
        See :func:`qpcore_strategies.block_pivoting.block_principal_pivoting` (0, the default:
        plain block exchanges; > 0: the ratio step from ``x``, see the module).
    active_tol : float
        Relative distance within which a bound is guessed active whatever its multiplier.
    keep_factor : bool
        See :class:`BoxEqualityFace`.
    deadline : float
        A ``time.perf_counter()`` value: no face is solved after it (the run's time limit).
    max_growth : float
        The pivoting stops, and the finish hands back, once a round counts more than this many
        times the first round's violators (and 16 more): a guess too far for block exchanges.

    Returns
    -------
    BlockFinishResult
        Certified, or the reason to keep the caller's point (``fallback``).
    """
    lb, ub, A, b = qp.lb, qp.ub, qp.A, qp.b
    x0 = np.clip(np.asarray(x, dtype=np.float64), lb, ub)
    g0 = np.asarray(g, dtype=np.float64)
    lam0 = estimate_multipliers(qp, x0, g0) if qp.m else np.zeros(0)
    z0 = g0 - A.T @ lam0 if qp.m else g0
    pinned = lb == ub
    state = guess_active(x0, z0, lb, ub, pinned, active_tol)
    _keep_rows_met(state, x0, lb, ub, A, b, pinned)
    nfree = int(np.count_nonzero(state == 0))
    if nfree > max_free:
        return BlockFinishResult(certified=False, x=None, g=None, lam=None, free=nfree,
                                 fallback=f"the guessed free set ({nfree}) exceeds max_free={max_free}")
    face = BoxEqualityFace(qp.Q, qp.c, lb, ub, A, b, x0, g0, max_free, keep_factor=keep_factor)
    span = np.maximum(1.0, np.maximum(np.abs(lb), np.abs(ub)))
    tol_value = 1e-12 * span
    # sign violations of z within a tenth of tol do not stop the certificate
    tol_mult = 0.1 * tol

    try:
        out: BPPOutcome[FacePoint] = block_principal_pivoting(
            face, state, lb, ub, pinned, max_rounds=max_rounds, backup=backup, tol_value=tol_value,
            tol_mult=tol_mult, base=x0 if ratio > 0 else None, ratio=ratio, deadline=deadline, max_growth=max_growth)
    except FreeSetTooLarge as e:
        return BlockFinishResult(certified=False, x=None, g=None, lam=None, rounds=face.factorizations + face.updates,
                                 free=face.largest_free, least_squares=face.least_squares,
                                 fallback=f"a face's free set is too large to factor ({e})")
    except Cycle as e:
        return BlockFinishResult(certified=False, x=None, g=None, lam=None, rounds=sum(face.visits.values()) - 1,
                                 free=face.largest_free, least_squares=face.least_squares,
                                 factor_updates=face.updates, fallback=f"the pivoting cycles ({e})")
    except (np.linalg.LinAlgError, ValueError, MemoryError) as e:
        return BlockFinishResult(certified=False, x=None, g=None, lam=None, rounds=face.factorizations + face.updates,
                                 free=face.largest_free, least_squares=face.least_squares,
                                 fallback=f"the face solve failed ({type(e).__name__}: {e})")
    singles = out.single_pivots
    # rounds that moved several violators: those with more than one, less the safeguard's single moves
    blocks = max(0, min(sum(1 for c in out.violators[:-1] if c > 1), out.rounds - 1 - singles))
    common: dict[str, Any] = dict(rounds=out.rounds, block_moves=blocks, single_pivots=singles,
                                  ratio_steps=out.ratio_steps, violators=out.violators, free=face.largest_free,
                                  least_squares=face.least_squares, factor_updates=face.updates,
                                  mirrored=face.mirrored)
    p = out.solution
    if out.diverged:
        return BlockFinishResult(certified=False, x=None, g=None, lam=None, fallback=(
            f"the violators grew beyond max_growth={max_growth:g} times the first round's: the sets keep changing "
            f"(violators per round: {list(out.violators)})"), **common)
    if not out.converged:
        limit = "the time limit" if time.perf_counter() >= deadline else f"max_rounds={max_rounds}"
        return BlockFinishResult(certified=False, x=None, g=None, lam=None, fallback=(
            f"no violator-free face within {limit} (violators per round: {list(out.violators)})"), **common)
    xf = np.clip(p.x, lb, ub)
    gf = p.g + (qp.Q.rows(np.flatnonzero(xf != p.x)).T @ (xf - p.x)[xf != p.x] if (xf != p.x).any() else 0.0)
    cert = kkt(qp, xf, gf, multipliers=(p.lam, None)) if qp.m else kkt(qp, xf, gf)
    if not cert.ok(tol) and qp.m:
        own = kkt(qp, xf, gf)
        if own.measure < cert.measure:
            cert = own
    score_ = cert.measure
    if not cert.ok(tol):
        return BlockFinishResult(certified=False, x=None, g=None, lam=None, measure=score_,
                                 fallback=f"the face point is not certified at tol {tol:g} "
                                          f"(measure {score_:.2e}, feasible: {cert.feasible()})", **common)
    return BlockFinishResult(certified=True, x=xf, g=np.asarray(gf, dtype=np.float64), lam=cert.multipliers,
                             measure=score_, **common)


@attrs.frozen
class BlockFinish:
    """The block finish as a stage of another strategy (``SMO(finish=BlockFinish())``).

    The strategy runs until its stopping measure (the units of tol; for an SVM dual, the
    maximal-violating-pair gap) is at most ``max(start_gap, tol)``, then hands its point to
    :func:`block_finish`; a certified face point ends the run, otherwise the strategy goes on
    from its own point, and tries again at a hundredfold smaller gap (``tries`` in all).

    Attributes
    ----------
    start_gap : float
        The measure at which the finish is tried first (default 1e-2).
    tries : int
        The most attempts in a run (default 2).
    max_free, max_rounds, backup, ratio, active_tol, keep_factor, max_growth
        See :func:`block_finish`.
    """

    start_gap: float = 1e-2
    tries: int = 2
    max_free: int = 3000
    max_rounds: int = 20
    backup: int = 3
    ratio: float = 0.0
    active_tol: float = 1e-9
    keep_factor: bool = True
    max_growth: float = 4.0

    def run(self, qp: QP, x: FloatArray, g: FloatArray, tol: float,
            deadline: float = float("inf")) -> BlockFinishResult:
        """:func:`block_finish` with these settings."""
        return block_finish(qp, x, g, tol, max_free=self.max_free, max_rounds=self.max_rounds, backup=self.backup,
                            ratio=self.ratio, active_tol=self.active_tol, keep_factor=self.keep_factor,
                            deadline=deadline, max_growth=self.max_growth)

    def apply(self, qp: QP, state: State, tol: float) -> BlockFinishResult:
        """Run the finish on ``state`` and, when certified, move the state to its point.

        Counted in ``state.counters``: ``block_finish_tries``, ``block_finish_rounds``,
        ``block_finish_moves``, ``block_finish_pivots`` (single), ``block_finish_ratio_steps``,
        ``block_finish_factor_updates``, ``block_finish_fallbacks``.
        """
        res = self.run(qp, state.x, state.g, tol, deadline=state.deadline)
        cnt = state.counters
        for key, v in (("block_finish_tries", 1), ("block_finish_rounds", res.rounds),
                       ("block_finish_moves", res.block_moves), ("block_finish_pivots", res.single_pivots),
                       ("block_finish_ratio_steps", res.ratio_steps),
                       ("block_finish_factor_updates", res.factor_updates),
                       ("block_finish_fallbacks", 0 if res.certified else 1)):
            cnt[key] = cnt.get(key, 0) + v
        if res.certified:
            assert res.x is not None and res.g is not None
            state.x[:] = res.x
            state.g[:] = res.g
            state.status = bound_status(state.x, qp.lb, qp.ub)
            state.exact = None      # the certificate takes its own product at the new point
        return res
