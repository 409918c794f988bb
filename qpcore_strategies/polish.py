"""An exact active-set finish ("polish") for convex QPs, by block principal pivoting.

    minimize ½xᵀQx + cᵀx   subject to   lb ≤ x ≤ ub,   A x = b,   l ≤ C x ≤ u

An interior point method, an ADMM code or any loose solver ends near the optimum with every
constraint a little off its bound; what it has nearly found is *which* constraints are active.
The finish takes that guess and does linear algebra:

1. **Guess the active set** from the point and its multipliers, as OSQP's polish does: a bound or
   a side of a row is active when its multiplier (of the right sign) exceeds its distance, or when
   the distance is within ``active_tol`` (relative); fixed variables (lb = ub) and equality rows
   (A x = b, and rows with l = u) always are. That rule compares a distance with a multiplier,
   which depends on the units: when the first guess does not end clean, a second one puts both
   on the problem's scale (‖x‖∞ against ‖Qx + c‖∞, ‖c‖∞). Without multipliers, least squares on
   the face of the sides within 1e-3 (relative) give them.
2. **Solve the face exactly**: with the free variables F and the active rows E (the equality rows
   and the active rows of C), one factorization of the KKT matrix
   ``[[Q_FF + ρI, E_Fᵀ], [E_F, −δI]]`` (symmetrically equilibrated first), refined iteratively
   against the unregularized matrix and warm-started at the current point and multipliers. Each
   refinement step is then a proximal step of the face problem, so a singular but consistent face
   (duplicated rows, a rank-deficient Q_FF, a degenerate vertex) converges to the solution nearest
   the start, and an unbounded face moves far along its descent direction, into the constraints
   that the next step activates. The refinement ends only when the residual stops falling in
   absolute terms, block by block (the active rows in their units, stationarity in the
   gradient's), or when every row is at the rounding of its own terms: a normwise test over the
   whole vector is dominated by multipliers of 1e7 and calls a warm start solved whose rows are
   still off by 1e-10 (an interior point's own residual), which those multipliers turn into a
   duality gap of 1e-7. Fixed variables and active bounds are set exactly; the multipliers of
   the bounds are the reduced gradient at the final point. Dense LAPACK for small or dense
   systems, scipy's sparse LU (SuperLU) otherwise.
3. **Check** the face point with one product: the inactive sides (a free variable outside its
   box, an inactive row outside [l, u]) and the sign of the active sides' multipliers. When some
   are violated, **block principal pivoting** (Júdice and Pires 1994; Portugal, Júdice and
   Vicente 1994; Kim and Park 2011) moves them all at once: a violated inactive side becomes
   active, an active side whose multiplier has the wrong sign becomes inactive.
   With general rows one side missing from the guess can send the face's solution through many
   others, and exchanging all of those multiplies the violators round after round (measured on
   random problems of 25 variables and 15 rows: from one side flipped, plain block exchanges
   reach the optimum within 40 rounds on 40 to 75% of them; from a third flipped, on 0 to 40%).
   So the finish keeps a feasible point (the input at first) and
   reads the segment from it to the face's solution, issue 35's **ratio step toward the block
   solution**: when the segment leaves the feasible set before ``ratio`` (0.9) of its length,
   the point moves to where it leaves, only the sides met there become active (several when
   met together), and the wrong-signed sides are released as a block. Otherwise the round is
   the plain block exchange. (The same 300 problems, from one side to a third flipped: all
   reach the optimum, in 2 to 8 rounds on average.)
   **Safeguard** (Kim and Park's counter): after ``backup`` rounds in which the number of
   violators has not fallen below its smallest value so far, single moves until it does: the
   textbook primal active-set step (activate the sides met first, release nothing; at a
   feasible face solution release the wrong-signed side of largest index), or, without a
   feasible point, Murty's single principal pivot on the violator of largest index.
   ``max_rounds`` caps the rounds of each guess, each one factorization.
4. **Accept** the best face point met (by the residuals below) only when its residuals are
   smaller than the input's, or when it is the optimum's active set (no violators left) and its
   residuals are at the input's rounding level (``ROUNDING_LEVEL``, relative, or within 10× of
   the input's): an exact face has exact complementarity, which an interior point's relative
   measure does not show but its absolute duality gap does. Otherwise the input comes back
   unchanged, flagged ``accepted=False``. The finish never makes a point worse beyond rounding.
   A multiplier of the wrong sign within the violators' tolerance is returned as 0 (it shows in
   the dual residual; read by its sign it would be the other side's, that side times it in the
   gap). The multipliers the face leaves free, those of active rows whose variables are all at
   bounds, are settled by a small LP where they weigh in the gap: such a row's residual is the
   data's rounding (a right-hand side of 1e-15), and times a multiplier of 1e6 taken from the
   warm start it was a duality gap of 1e-9 (QBORE3D).

**The guarantee relied on.** Murty's single-pivot rule (Murty 1974), and with it the safeguarded
block method (Júdice and Pires 1994), terminates finitely on a linear complementarity problem
with a P-matrix: a strictly convex QP with bounds only (``block_principal_pivoting`` without a
feasible point; tested from random starts). With a feasible point, the safeguard's single moves
are the primal active-set method, which terminates on a strictly convex problem whose steps are
not degenerate (Nocedal and Wright, §16.5: the objective falls at every step, so no working set
repeats). On a degenerate or singular problem (a merely semidefinite Q, rows active with a zero
multiplier, dependent rows, more active rows than free variables) neither argument holds and
single moves can cycle in principle; there the regularized, refined face solve still returns a
well-defined point for every face (a solution of the face when it has one, the proximal point
nearest the start when the face is singular), the cap on rounds ends the loop, and the
acceptance test keeps the input whenever the finish did not improve it: **termination is
unconditional, improvement is checked, never assumed.** In practice a guess from a point optimal
to 1e-6 is right or a few constraints off, and one to a few factorizations end it. The finish
does not help when the free set is too large to factor, or when the guess is far from the
optimum's active set (sets that keep changing, e.g. QFORPLAN from PIQP at 1e-6 needs 17 rounds:
give it a tighter point, or more rounds).

**Residuals** (:func:`residuals`), in the user's terms and the sign convention of
:func:`qpcore.kkt` (stationarity Qx + c − Aᵀλ − Cᵀy − z = 0; z ≥ 0 at a lower bound, ≤ 0 at an
upper one; y ≥ 0 where C x = l, ≤ 0 where C x = u), as qpbenchmark defines them: the primal
residual (largest violation of the box, of A x = b and of l ≤ C x ≤ u), the dual residual
‖Qx + c − Aᵀλ − Cᵀy − z‖∞ with the multipliers projected on their sign cones (a multiplier of an
infinite bound is 0), and the duality gap |xᵀQx + cᵀx − bᵀλ − Σ bounds·multipliers|. Each is
also given relative to the size of its terms; :meth:`Residuals.measure` is the largest relative
one, which the acceptance test compares.

The block loop (:func:`block_principal_pivoting`) is written over any :class:`Face`, a solver
of the equality-constrained problem on a given set, so that the same loop serves operators whose
faces are solved another way (a kernel SVM dual with a factor kept across block moves).
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable, ClassVar, Generic, Literal, Protocol, TypeVar

import attrs
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike, NDArray

from qpcore.core.problem import QP, ProblemError
from qpcore.backends.sparse import matrix_of
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy
from qpcore.linalg.threads import blas_threads

__all__ = ["ROUNDING_LEVEL", "BPPOutcome", "Face", "FaceSolution", "Polish", "PolishFinish", "PolishResult", "Residuals",
           "block_principal_pivoting", "guess_active", "polish", "polish_arrays", "residuals"]

#: Relative residuals at or below which an exact face of the optimum's active set is accepted even
#: when the input's are smaller still (both are rounding there; the face's complementarity is exact).
ROUNDING_LEVEL = 1e-12


FloatArray = NDArray[np.float64]
Int8Array = NDArray[np.int8]
BoolArray = NDArray[np.bool_]
IndexArray = NDArray[np.intp]
Matrix = Any            # an ndarray or a scipy.sparse matrix
Multipliers = tuple[Any, ...]

_EPS = float(np.finfo(np.float64).eps)
#: without multipliers, sides within this relative distance are the face of the least-squares estimate
_NEAR = 1e-3
#: problems with n·(n + m + k) up to this many entries are held dense
_DENSIFY = 1 << 18


# --------------------------------------------------------------------------------------------------
# residuals in the user's terms


@attrs.frozen
class Residuals:
    """Residuals of a point and its multipliers (qpbenchmark's three measures).

    Attributes
    ----------
    primal : float
        Largest violation of lb ≤ x ≤ ub, A x = b and l ≤ C x ≤ u (absolute).
    dual : float
        ‖Qx + c − Aᵀλ − Cᵀy − z‖∞ with the multipliers projected on their sign cones.
    gap : float
        |xᵀQx + cᵀx − bᵀλ − (lᵀy⁺ + uᵀy⁻) − (lbᵀz⁺ + ubᵀz⁻)| with the projected multipliers.
    primal_scale, dual_scale, gap_scale : float
        max(1, the ∞-norms of the terms of each residual): ‖x‖, ‖Ax‖, ‖b‖, ‖Cx‖; ‖Qx‖, ‖c‖,
        ‖Aᵀλ‖, ‖Cᵀy‖, ‖z‖; |xᵀQx|, |cᵀx|, |bᵀλ| and the bound terms.
    """

    primal: float
    dual: float
    gap: float
    primal_scale: float = 1.0
    dual_scale: float = 1.0
    gap_scale: float = 1.0

    @property
    def relative(self) -> tuple[float, float, float]:
        """(primal, dual, gap), each divided by its scale."""
        return (self.primal / self.primal_scale, self.dual / self.dual_scale, self.gap / self.gap_scale)

    @property
    def measure(self) -> float:
        """The largest relative residual (inf when any is not finite): what the finish compares."""
        m = max(self.relative)
        return float(m) if np.isfinite(m) else float("inf")

    def __str__(self) -> str:
        p, d, g = self.relative
        return f"primal {self.primal:.2e} ({p:.1e} rel), dual {self.dual:.2e} ({d:.1e}), gap {self.gap:.2e} ({g:.1e})"


def _cone(v: FloatArray, lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(v⁺ where lo is finite, v⁻ where hi is finite): a multiplier projected on its sign cone."""
    pos = np.where(np.isfinite(lo), np.maximum(v, 0.0), 0.0)
    neg = np.where(np.isfinite(hi), np.minimum(v, 0.0), 0.0)
    return pos, neg


def _bound_term(pos: FloatArray, neg: FloatArray, lo: FloatArray, hi: FloatArray) -> float:
    """loᵀpos + hiᵀneg, with 0·inf = 0 (a projected multiplier vanishes on an infinite bound)."""
    a = float(np.dot(np.where(pos != 0, lo, 0.0), pos))
    b = float(np.dot(np.where(neg != 0, hi, 0.0), neg))
    return a + b


def _norm(v: FloatArray) -> float:
    return float(np.abs(v).max(initial=0.0))


def residuals(Q: Matrix, c: FloatArray, lb: FloatArray, ub: FloatArray, A: Matrix, b: FloatArray, C: Matrix,
              l: FloatArray, u: FloatArray, x: FloatArray, lam: FloatArray, y: FloatArray,
              z: FloatArray) -> Residuals:
    """The residuals of ``x`` with multipliers ``(lam, y, z)`` (see :class:`Residuals`).

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        The Hessian (n × n).
    c, lb, ub : ndarray
        Linear term and bounds (±inf allowed).
    A, b : matrix, ndarray
        Equality rows (m × n) and right-hand side.
    C, l, u : matrix, ndarray
        Inequality rows (k × n) and their bounds (±inf allowed).
    x, lam, y, z : ndarray
        The point, the multipliers of A x = b, of l ≤ C x ≤ u and of the box.

    Returns
    -------
    Residuals
    """
    Qx = np.asarray(Q @ x, dtype=np.float64)
    Ax = np.asarray(A @ x, dtype=np.float64)
    Cx = np.asarray(C @ x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        primal = max(_norm(np.maximum(np.maximum(lb - x, x - ub), 0.0)), _norm(Ax - b),
                     _norm(np.maximum(np.maximum(l - Cx, Cx - u), 0.0)))
    zp, zn = _cone(z, lb, ub)
    yp, yn = _cone(y, l, u)
    ATl = np.asarray(A.T @ lam, dtype=np.float64)
    CTy = np.asarray(C.T @ (yp + yn), dtype=np.float64)
    zz = zp + zn
    dual = _norm(Qx + c - ATl - CTy - zz)
    xQx, cx, bl = float(x @ Qx), float(c @ x), float(b @ lam)
    rows, box = _bound_term(yp, yn, l, u), _bound_term(zp, zn, lb, ub)
    gap = abs(xQx + cx - bl - rows - box)
    return Residuals(primal=primal, dual=dual, gap=gap,
                     primal_scale=max(1.0, _norm(x), _norm(Ax), _norm(b), _norm(Cx)),
                     dual_scale=max(1.0, _norm(Qx), _norm(c), _norm(ATl), _norm(CTy), _norm(zz)),
                     gap_scale=max(1.0, abs(xQx), abs(cx), abs(bl), abs(rows), abs(box)))


# --------------------------------------------------------------------------------------------------
# block principal pivoting over any face solver


class FaceSolution(Protocol):
    """What :func:`block_principal_pivoting` reads of a face's solution, per complementarity pair
    (a variable's bounds or a row's two sides): the constrained ``value`` (x_i or C_i x) and the
    multiplier ``mult`` (≥ 0 at the lower side, ≤ 0 at the upper one)."""

    @property
    def value(self) -> FloatArray: ...

    @property
    def mult(self) -> FloatArray: ...


S = TypeVar("S", bound=FaceSolution)
S_co = TypeVar("S_co", bound=FaceSolution, covariant=True)


class Face(Protocol[S_co]):
    """A solver of the equality-constrained problem on a face.

    ``solve(state)`` returns the solution with every pair in ``state`` fixed as it says: −1 at
    its lower side, +1 at its upper side (the value pinned, the multiplier free), 0 inactive (the
    multiplier 0, the value free).
    """

    def solve(self, state: Int8Array) -> S_co: ...


@attrs.frozen(eq=False)
class BPPOutcome(Generic[S]):
    """The result of :func:`block_principal_pivoting`.

    Attributes
    ----------
    solution : FaceSolution
        The best face solution met (by ``score``; the last one without a score).
    state : ndarray of int8
        Its active set.
    rounds : int
        Faces solved.
    converged : bool
        Whether the best solution has no violator (an exact KKT point up to ``tol``).
    violators : tuple of int
        The number of violators after each round.
    single_pivots : int
        Rounds that moved one violator only (Murty's rule, the safeguard).
    score : float
        The best solution's score (NaN without a score function).
    ratio_steps : int
        Rounds that took the primal ratio step (a far face).
    """

    solution: S
    state: Int8Array
    rounds: int
    converged: bool
    violators: tuple[int, ...]
    single_pivots: int
    score: float
    ratio_steps: int = 0


def _violations(state: Int8Array, value: FloatArray, mult: FloatArray, lo: FloatArray, hi: FloatArray,
                pinned: BoolArray, tol_value: FloatArray | float, tol_mult: float) -> tuple[IndexArray, Int8Array]:
    """The violating pairs and the state each moves to."""
    with np.errstate(invalid="ignore"):
        below = (state == 0) & (value < lo - tol_value)
        above = (state == 0) & (value > hi + tol_value)
        release = ~pinned & (((state == -1) & (mult < -tol_mult)) | ((state == 1) & (mult > tol_mult)))
    target = np.zeros(state.shape, dtype=np.int8)
    target[below] = -1
    target[above] = 1
    return np.flatnonzero(below | above | release), target


def block_principal_pivoting(face: Face[S], state: Int8Array, lo: FloatArray, hi: FloatArray,
                             pinned: BoolArray, *, max_rounds: int = 10, backup: int = 3,
                             tol_value: FloatArray | float = 0.0, tol_mult: float = 0.0,
                             score: Callable[[S], float] | None = None,
                             base: FloatArray | None = None, ratio: float = 0.9, band: float = 0.0,
                             deadline: float = float("inf")) -> BPPOutcome[S]:
    """Block principal pivoting with Kim and Park's safeguard (Murty's single pivot).

    Each round solves the face that ``state`` describes, finds the pairs whose inactive side is
    violated (value outside [lo, hi] beyond ``tol_value``) or whose active side has a multiplier
    of the wrong sign (beyond ``tol_mult``), and moves them all. With a feasible ``base`` point,
    a face whose solution lies far beyond the constraints (the segment from ``base`` leaves the
    feasible set before ``ratio`` of its length) gets the ratio step instead: ``base`` moves to
    where the segment leaves, only the sides met there (within ``band`` of the rest of the
    segment) become active, and the wrong-signed sides are released. After ``backup`` rounds
    without a new smallest number of violators, single moves until the number falls below that
    smallest value again: with ``base``, the primal active-set step (the sides met first, no
    release; at a feasible face solution, the release of the largest index), without it Murty's
    pivot of the violator of largest index. See the module for what guarantees termination.

    Parameters
    ----------
    face : Face
        The face solver.
    state : ndarray of int8
        The starting active set, one entry per pair (−1 lower side, 0 inactive, +1 upper side).
        Not modified.
    lo, hi : ndarray
        The pairs' sides (±inf allowed: an infinite side is never activated).
    pinned : ndarray of bool
        Pairs that never move (fixed variables, equality rows).
    max_rounds : int
        The most faces solved.
    backup : int
        Rounds of full exchanges allowed without progress before single pivots (Kim and Park's
        p̄ = 3).
    tol_value, tol_mult : float or ndarray
        What counts as a violation.
    score : callable, optional
        Smaller is better; the outcome keeps the best-scoring solution (else the last).
    base : ndarray, optional
        The pairs' values at a feasible point (clipped into [lo, hi]); None: block exchanges only.
    ratio : float
        The fraction of the segment below which a round takes the ratio step (see above).
    band : float
        Sides met within ``band · (1 − α_min)`` beyond the first are activated with it.
    deadline : float
        A ``time.perf_counter()`` value after which no further face is solved.

    Returns
    -------
    BPPOutcome
    """
    state = np.array(state, dtype=np.int8, copy=True)
    best_count, p = np.iinfo(np.int64).max, backup
    counts: list[int] = []
    singles = ratio_steps = 0
    if base is not None:
        base = np.clip(np.asarray(base, dtype=np.float64), lo, hi)
    best: tuple[float, S, Int8Array, bool] | None = None
    rounds = 0
    while rounds < max_rounds:
        sol = face.solve(state)
        rounds += 1
        idx, target = _violations(state, sol.value, sol.mult, lo, hi, pinned, tol_value, tol_mult)
        counts.append(int(idx.size))
        s = score(sol) if score is not None else float("nan")
        clean = idx.size == 0
        if best is None or score is None or s < best[0] or (clean and not best[3] and not s > best[0]):
            best = (s, sol, state.copy(), clean)
        if clean or time.perf_counter() >= deadline:
            break
        # Kim and Park's counter: a new smallest number of violators earns ``backup`` more rounds
        # of block moves; without one, single moves until it falls below that number again
        if idx.size < best_count:
            best_count, p = int(idx.size), backup
            blocks = True
        elif p > 0:
            p -= 1
            blocks = True
        else:
            blocks = False
        primal = idx[state[idx] == 0]
        release = idx[state[idx] != 0]
        if base is not None and primal.size:
            # the segment from the feasible base point to the face's solution: where it leaves
            # the feasible set first, and how far along
            v, b0 = sol.value[primal], base[primal]
            side = np.where(target[primal] < 0, lo[primal], hi[primal])
            with np.errstate(divide="ignore", invalid="ignore"):
                alpha = np.clip((side - b0) / (v - b0), 0.0, 1.0)
            alpha = np.where(np.isfinite(alpha), alpha, 0.0)
            a_min = float(alpha.min())
            base = base + a_min * (sol.value - base)
            if a_min < ratio or not blocks:
                # a far face (a wrong guess runs away along a ray), or the safeguard: the primal
                # active-set step, activating the sides met first (several when met together);
                # a block round also releases the wrong-signed sides, a single one releases none
                first = primal[alpha <= a_min + band * (1.0 - a_min)]
                move = np.concatenate([first, release]) if blocks else first
                state[move] = target[move]
                ratio_steps += 1
                if not blocks:
                    singles += 1
                continue
        elif base is not None:
            base = np.clip(sol.value, lo, hi)
        if blocks:
            move = idx
        else:
            # Murty: the largest index only (with a base point, no primal violator is left: the
            # textbook primal active-set method's single release)
            move = idx[-1:]
            singles += 1
        state[move] = target[move]
    assert best is not None
    return BPPOutcome(solution=best[1], state=best[2], rounds=rounds, converged=best[3], violators=tuple(counts),
                      single_pivots=singles, score=best[0], ratio_steps=ratio_steps)


# --------------------------------------------------------------------------------------------------
# the general QP's face


@attrs.frozen(eq=False)
class _Data:
    """The problem as arrays (Q, A, C dense or CSR)."""

    Q: Matrix
    c: FloatArray
    lb: FloatArray
    ub: FloatArray
    A: Matrix
    b: FloatArray
    C: Matrix
    l: FloatArray
    u: FloatArray

    @property
    def n(self) -> int:
        return int(self.c.shape[0])

    @property
    def m(self) -> int:
        return int(self.b.shape[0])

    @property
    def k(self) -> int:
        return int(self.l.shape[0])

    @property
    def sparse(self) -> bool:
        return bool(sp.issparse(self.Q) or sp.issparse(self.A) or sp.issparse(self.C))

    def residuals(self, x: FloatArray, lam: FloatArray, y: FloatArray, z: FloatArray) -> Residuals:
        return residuals(self.Q, self.c, self.lb, self.ub, self.A, self.b, self.C, self.l, self.u, x, lam, y, z)

    def gradient(self, x: FloatArray) -> FloatArray:
        return np.asarray(self.Q @ x, dtype=np.float64) + self.c

    def reduced(self, g: FloatArray, lam: FloatArray, y: FloatArray) -> FloatArray:
        """g − Aᵀλ − Cᵀy: the bound multipliers that stationarity asks for."""
        return g - np.asarray(self.A.T @ lam, dtype=np.float64) - np.asarray(self.C.T @ y, dtype=np.float64)


@attrs.frozen(eq=False)
class _Point:
    """A face solution of the general QP (a :class:`FaceSolution`)."""

    x: FloatArray
    lam: FloatArray
    y: FloatArray
    z: FloatArray
    value: FloatArray
    mult: FloatArray
    refine_residual: float
    state: Int8Array | None = None


def _rows(M: Matrix, idx: IndexArray) -> Matrix:
    return M[idx]


def _cols(M: Matrix, idx: IndexArray) -> Matrix:
    return M[:, idx]


def _equilibrate(K: Matrix, iterations: int = 20) -> FloatArray:
    """Symmetric Ruiz scaling d (D K D has rows of largest entry ≈ 1); 1 on zero rows."""
    N = K.shape[0]
    d = np.ones(N)
    absK = abs(K) if sp.issparse(K) else np.abs(K)
    for _ in range(iterations):
        if sp.issparse(absK):
            scaled = sp.diags(d) @ absK @ sp.diags(d)
            rmax = np.asarray(scaled.max(axis=1).toarray()).ravel()
        else:
            rmax = (absK * d[:, None] * d[None, :]).max(axis=1, initial=0.0)
        rmax = np.where(rmax > 0, rmax, 1.0)
        d = d / np.sqrt(rmax)
        if np.abs(1.0 - rmax).max(initial=0.0) < 0.05:
            break
    return d


class _QPFace:
    """The face solver of the general QP: one factorization per face, refined (see the module)."""

    def __init__(self, data: _Data, x: FloatArray, lam: FloatArray, y: FloatArray, *, reg: float,
                 max_refine: int, method: Literal["auto", "dense", "sparse"], dense_max: int) -> None:
        self.data = data
        self.x, self.lam, self.y = x.copy(), lam.copy(), y.copy()
        self.reg, self.max_refine, self.method, self.dense_max = reg, max_refine, method, dense_max
        self.factorizations = 0
        self.refinements = 0
        self.sparse_factors = 0

    def _kkt(self, F: IndexArray, N: IndexArray, W: IndexArray, xN: FloatArray,
             tW: FloatArray) -> tuple[Matrix, FloatArray, FloatArray]:
        """The unregularized KKT matrix of the face, its right-hand side, and the size of the
        right-hand side's terms (|c_F| + |Q_FN||x_N|, |b| + |E_N||x_N|: the rounding it carries)."""
        d = self.data
        sparse = d.sparse
        QF = _rows(d.Q, F)
        QFF, QFN = _cols(QF, F), _cols(QF, N)
        EF_parts = [_cols(d.A, F), _cols(_rows(d.C, W), F)]
        EN_parts = [_cols(d.A, N), _cols(_rows(d.C, W), N)]
        if sparse:
            EF = sp.vstack([sp.csr_matrix(M) for M in EF_parts], format="csr")
            EN = sp.vstack([sp.csr_matrix(M) for M in EN_parts], format="csr")
            QFF, QFN = sp.csr_matrix(QFF), sp.csr_matrix(QFN)
            K: Matrix = sp.bmat([[QFF, EF.T], [EF, None]], format="csc")
        else:
            EF, EN = np.vstack(EF_parts), np.vstack(EN_parts)
            nE = EF.shape[0]
            K = np.block([[QFF, EF.T], [EF, np.zeros((nE, nE))]])
        r1 = -d.c[F] - np.asarray(QFN @ xN, dtype=np.float64)
        bE = np.concatenate([d.b, tW])
        r2 = bE - np.asarray(EN @ xN, dtype=np.float64)
        axN = np.abs(xN)
        t1 = np.abs(d.c[F]) + np.asarray(abs(QFN) @ axN, dtype=np.float64)
        t2 = np.abs(bE) + np.asarray(abs(EN) @ axN, dtype=np.float64)
        return K, np.concatenate([r1, r2]), np.concatenate([t1, t2])

    def solve(self, state: Int8Array) -> _Point:
        d = self.data
        n, m = d.n, d.m
        vs, rs = state[:n], state[n:]
        F = np.flatnonzero(vs == 0)
        N = np.flatnonzero(vs != 0)
        W = np.flatnonzero(rs != 0)
        xN = np.where(vs[N] < 0, d.lb[N], d.ub[N])
        tW = np.where(rs[W] < 0, d.l[W], d.u[W])
        K, rhs, rhs_terms = self._kkt(F, N, W, xN, tW)
        nF = F.size
        N_all = K.shape[0]
        # warm start: the current point and multipliers (the unknowns are x_F and w = −(λ, y_W))
        sol = np.concatenate([self.x[F], -self.lam, -self.y[W]])
        if N_all:
            sol, res = self._solve_kkt(K, rhs, sol, nF, rhs_terms)
        else:
            res = 0.0
        x = np.empty(n)
        x[N] = xN
        x[F] = sol[:nF]
        lam = -sol[nF:nF + m]
        y = np.zeros(d.k)
        y[W] = -sol[nF + m:]
        g = d.gradient(x)
        z = d.reduced(g, lam, y)
        z[F] = 0.0
        self.x, self.lam, self.y = x, lam, y
        Cx = np.asarray(d.C @ x, dtype=np.float64)
        return _Point(x=x, lam=lam, y=y, z=z, value=np.concatenate([x, Cx]), mult=np.concatenate([z, y]),
                      refine_residual=res, state=np.array(state, dtype=np.int8, copy=True))

    def _solve_kkt(self, K: Matrix, rhs: FloatArray, sol: FloatArray, nF: int,
                   rhs_terms: FloatArray | None = None) -> tuple[FloatArray, float]:
        """Solve K sol = rhs by a regularized factor of D K D and iterative refinement from ``sol``.

        Two phases of refinement against the unregularized matrix. The first is the proximal
        iteration of the module (any progress of the normwise residual continues it): it carries a
        singular face to its solution nearest the start and an unbounded one far along its ray.
        Its measure mixes the face's rows with its multipliers, whose entries can be 1e7 times
        larger, so it calls a warm start solved whose constraint rows are still off by 1e-10 (the
        interior point's own residual). The second phase refines until the residual stops
        decreasing in absolute terms, block by block (the active constraints' rows, in their
        units, and stationarity on the free variables, in the gradient's): a step is taken while
        it halves one block's ∞-norm without raising the other's beyond its rounding level
        (ε times the size of its terms, |K||sol| + the terms of ``rhs``), LAPACK's ``xGERFS``
        rule per block.

        ``rhs_terms`` (default |rhs|) is the size of the terms ``rhs`` was computed from
        (|c_F| + |Q_FN||x_N|, |b_E| + |E_N||x_N|): a right-hand side that cancelled to a rounding
        error carries that error.

        Returns the solution and its residual relative to the rounding level: the larger of the
        two blocks' ∞-norms, each divided by ε times the ∞-norm of its terms (≲ 1 at rounding).
        """
        N_all = K.shape[0]
        use_sparse = self.method == "sparse" or (
            self.method == "auto" and N_all > self.dense_max
            and (K.nnz if sp.issparse(K) else np.count_nonzero(K)) <= 0.1 * N_all * N_all)
        if use_sparse and not sp.issparse(K):
            K = sp.csc_matrix(K)
        elif not use_sparse and sp.issparse(K):
            K = K.toarray()
        dscale = _equilibrate(K)
        signs = np.concatenate([np.ones(nF), -np.ones(N_all - nF)])
        if use_sparse:
            Ks = (sp.diags(dscale) @ K @ sp.diags(dscale)).tocsc()
        else:
            Ks = K * dscale[:, None] * dscale[None, :]
        solve_reg = self._factor(Ks, signs, use_sparse)
        self.factorizations += 1
        rhs_s = dscale * rhs
        us = sol / dscale
        # relative to the sizes met, the start's included (a solution near 0 with a zero
        # right-hand side is met to rounding, not to a ratio of vanishing numbers)
        bscale = _norm(rhs_s) + _norm(us)

        def resid(v: FloatArray) -> tuple[FloatArray, float]:
            r = rhs_s - np.asarray(Ks @ v, dtype=np.float64)
            return r, _norm(r) / max(bscale + _norm(v), np.finfo(float).tiny)

        r, rel = resid(us)
        steps = 0
        while steps < self.max_refine and rel > 4 * _EPS:
            trial = us + solve_reg(r)
            steps += 1
            r_new, rel_new = resid(trial)
            if not rel_new < rel:
                # no progress at all: rounding's level, or an inconsistent face (an unbounded or
                # infeasible one), whose further steps would only drift along its null space
                break
            us, r, rel = trial, r_new, rel_new

        # the second phase, in the unscaled system's absolute terms
        absK = abs(K) if use_sparse else np.abs(K)
        abs_rhs = np.abs(rhs) if rhs_terms is None else np.maximum(rhs_terms, np.abs(rhs))

        def blocks(r_s: FloatArray, v: FloatArray) -> tuple[float, float, float, float, float]:
            ra = np.abs(r_s / dscale)
            terms = np.asarray(absK @ np.abs(v * dscale), dtype=np.float64) + abs_rhs
            # every row at the rounding of its own terms: nothing left to refine (a row whose
            # terms are all 0 has r = 0 exactly)
            omega = _norm(ra / np.maximum(terms, np.finfo(float).tiny))
            return (_norm(ra[nF:]), _norm(ra[:nF]), _EPS * _norm(terms[nF:]), _EPS * _norm(terms[:nF]), omega)

        a_p, a_d, f_p, f_d, omega = blocks(r, us)
        # residuals below ε² times the system's size count as zero (a component converging
        # geometrically to 0 would otherwise halve its residual until the cap)
        negligible = _EPS * max(1.0, f_p, f_d)
        while steps < self.max_refine and omega > 2 * _EPS and max(a_p, a_d) > negligible:
            trial = us + solve_reg(r)
            steps += 1
            r_new, rel_new = resid(trial)
            b_p, b_d, g_p, g_d, omega_new = blocks(r_new, trial)
            # against the smallest residuals so far: noise at the rounding level does not halve
            # them round after round
            if not (b_p <= max(a_p, g_p) and b_d <= max(a_d, g_d)
                    and ((negligible < a_p and b_p <= 0.5 * a_p) or (negligible < a_d and b_d <= 0.5 * a_d))):
                break
            us, r, rel, f_p, f_d, omega = trial, r_new, rel_new, g_p, g_d, omega_new
            a_p, a_d = min(a_p, b_p), min(a_d, b_d)
        self.refinements += steps
        tiny = np.finfo(float).tiny
        return us * dscale, max(a_p / max(f_p, tiny), a_d / max(f_d, tiny))

    def _factor(self, Ks: Matrix, signs: FloatArray, use_sparse: bool) -> Callable[[FloatArray], FloatArray]:
        """The solve with the regularized matrix Ks + reg·diag(signs); a zero pivot (a Q_FF that
        is not semidefinite) is met by a regularization 1e3 times larger once, then refused."""
        for reg in (self.reg, 1e3 * self.reg):
            if use_sparse:
                try:
                    lu = spla.splu((Ks + sp.diags(reg * signs)).tocsc())
                except RuntimeError:
                    continue
                if not np.isfinite(lu.U.diagonal()).all():
                    continue
                self.sparse_factors += 1
                return lambda r: np.asarray(lu.solve(r), dtype=np.float64)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sla.LinAlgWarning)
                fac = sla.lu_factor(Ks + np.diag(reg * signs), check_finite=False)
            pivots = np.abs(np.diag(fac[0]))
            if np.isfinite(pivots).all() and pivots.min(initial=1.0) > 0:
                return lambda r: np.asarray(sla.lu_solve(fac, r, check_finite=False), dtype=np.float64)
        raise np.linalg.LinAlgError("the face's KKT matrix is singular even regularized (Q not semidefinite?)")


# --------------------------------------------------------------------------------------------------
# the guess, the estimate, the driver


def guess_active(value: FloatArray, mult: FloatArray, lo: FloatArray, hi: FloatArray, pinned: BoolArray,
                 active_tol: float, weight: float = 1.0) -> Int8Array:
    """The active set guessed from a point: −1 / +1 where a side is active, 0 elsewhere.

    A side is active when the multiplier's part of its sign exceeds the distance to it (OSQP's
    polish), or when the distance is within ``active_tol · max(1, |side|)``; a pinned pair
    (lo = hi) is always at its lower side. Infinite sides are never active.

    Parameters
    ----------
    value, mult : ndarray
        Per pair, the constrained value and its multiplier (≥ 0 at the lower side).
    lo, hi : ndarray
        The sides.
    pinned : ndarray of bool
        Pairs with lo = hi.
    active_tol : float
        Relative distance within which a side counts as active whatever the multiplier.

    Returns
    -------
    ndarray of int8
    """
    mult = weight * mult
    with np.errstate(invalid="ignore"):
        dl, du = value - lo, hi - value
        near_l = np.isfinite(lo) & ((dl < np.maximum(mult, 0.0)) | (dl <= active_tol * np.maximum(1.0, np.abs(lo))))
        near_u = np.isfinite(hi) & ((du < np.maximum(-mult, 0.0)) | (du <= active_tol * np.maximum(1.0, np.abs(hi))))
    state = np.zeros(value.shape, dtype=np.int8)
    state[near_l] = -1
    state[near_u & ~near_l] = 1
    # both sides near (a narrow box): the side the multiplier points to, else the nearer one
    both = near_l & near_u
    if both.any():
        pick_u = np.where(mult[both] != 0, mult[both] < 0, du[both] < dl[both])
        state[np.flatnonzero(both)[pick_u]] = 1
    state[pinned] = -1
    return state


def _estimate(d: _Data, x: FloatArray, state: Int8Array) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Least-squares multipliers of x on the guessed face: (λ, y_W) minimizing
    ‖(g − Aᵀλ − C_Wᵀy_W)_F‖, and z the reduced gradient on the fixed variables."""
    n = d.n
    g = d.gradient(x)
    F = np.flatnonzero(state[:n] == 0)
    W = np.flatnonzero(state[n:] != 0)
    y = np.zeros(d.k)
    lam = np.zeros(d.m)
    nE = d.m + W.size
    if nE and F.size:
        EF_parts = [_cols(d.A, F), _cols(_rows(d.C, W), F)]
        if d.sparse:
            EFT = sp.vstack([sp.csr_matrix(M) for M in EF_parts], format="csr").T.tocsr()
            mu = np.asarray(spla.lsqr(EFT, g[F], atol=1e-14, btol=1e-14, iter_lim=10 * (nE + F.size))[0])
        else:
            EFT = np.vstack(EF_parts).T
            mu = np.asarray(np.linalg.lstsq(EFT, g[F], rcond=None)[0], dtype=np.float64)
        lam = mu[:d.m].copy()
        y[W] = mu[d.m:]
    z = d.reduced(g, lam, y)
    z[F] = 0.0
    return lam, y, z


#: the most entries of the dense LP that settles the face's free multipliers
_SETTLE_MAX = 1 << 20


def _settle_free_multipliers(d: _Data, x: FloatArray, p: _Point, state: Int8Array, floor: float) -> _Point | None:
    """The multipliers the face leaves free, chosen to take the least part in the duality gap.

    An active row whose variables are all fixed at bounds (none free in the face) does not enter
    the face's stationarity: its multiplier is any value that keeps the bound multipliers of its
    variables of the right sign, and the face solve keeps the warm start's. Its residual, though,
    is the data's rounding (a right-hand side of 1e-15 where the bounds give 0: QBORE3D), and
    times the multiplier (1e6 on a degenerate vertex) it is the duality gap of an otherwise exact
    point: with exact stationarity, moving those multipliers by δ moves the gap by exactly rᵀδ.
    A small LP (HiGHS) minimizes |Σ rᵢ μᵢ| over them with the bound multipliers' signs kept; the
    step toward its solution stops short of the first sign change (the LP's tolerances are not
    the signs'). Tried only when that sum exceeds ``floor``; None when there is no gain.
    """
    n, m = d.n, d.m
    vs, rs = state[:n], state[n:]
    free = vs == 0
    W = np.flatnonzero(rs != 0)
    if d.sparse:
        M: Matrix = sp.vstack([sp.csr_matrix(d.A), sp.csr_matrix(_rows(d.C, W))], format="csr")
    else:
        M = np.vstack([d.A, _rows(d.C, W)])
    if M.shape[0] == 0:
        return None
    side = np.concatenate([d.b, np.where(rs[W] < 0, d.l[W], d.u[W])])
    mu0 = np.concatenate([p.lam, p.y[W]])
    absM = abs(M) if d.sparse else np.abs(M)
    R = np.flatnonzero(np.asarray(absM @ free.astype(np.float64), dtype=np.float64).ravel() == 0)
    if R.size == 0:
        return None
    rR = np.asarray(_rows(M, R) @ x, dtype=np.float64) - side[R]
    if not abs(float(rR @ mu0[R])) > floor:
        return None
    used = np.asarray(_rows(absM, R).sum(axis=0), dtype=np.float64).ravel() > 0
    J = np.flatnonzero(used & (d.lb != d.ub))       # their variables (all fixed by the face), not pinned
    if R.size * (J.size + 1) > _SETTLE_MAX:
        return None
    MRJ = _cols(_rows(M, R), J)
    MRJ = np.asarray(MRJ.toarray() if sp.issparse(MRJ) else MRJ, dtype=np.float64)
    sj = np.where(vs[J] < 0, 1.0, -1.0)             # z ≥ 0 at a lower bound, ≤ 0 at an upper one
    zJ = p.z[J]
    iy = np.flatnonzero(R >= m)                      # inequality rows among R, their own sign
    wy = W[R[iy] - m]
    sy = np.where(rs[wy] < 0, 1.0, -1.0)
    signed_y = d.l[wy] != d.u[wy]
    iy, sy = iy[signed_y], sy[signed_y]
    if (sj * zJ < 0).any() or (sy * mu0[R[iy]] < 0).any():
        return None                                  # not a sign-feasible start: leave it
    # unknowns (δ/S, t), each scaled to 1: min t with |rᵀ(μ₀ + δ)| ≤ t, s_j (z_j − (M_RJᵀδ)_j) ≥ 0,
    # s_i (y_i + δ_i) ≥ 0
    nR = R.size
    scale_r, S = _norm(rR), max(1.0, _norm(mu0[R]), _norm(zJ))
    rr = rR / scale_r
    c0 = float(rr @ mu0[R]) / S
    Y = np.zeros((iy.size, nR))
    Y[np.arange(iy.size), iy] = -sy
    A_ub = np.vstack([np.concatenate([rr, [-1.0]]), np.concatenate([-rr, [-1.0]]),
                      np.hstack([sj[:, None] * MRJ.T, np.zeros((J.size, 1))]),
                      np.hstack([Y, np.zeros((iy.size, 1))])])
    b_ub = np.concatenate([[-c0, c0], sj * zJ / S, sy * mu0[R[iy]] / S])
    cost = np.zeros(nR + 1)
    cost[-1] = 1.0
    from scipy.optimize import linprog
    try:
        lp = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=[(None, None)] * nR + [(0, None)], method="highs")
    except (ValueError, MemoryError):
        return None
    if lp.status != 0 or lp.x is None:
        return None
    delta = np.asarray(lp.x[:nR], dtype=np.float64) * S
    dz = -(MRJ.T @ delta)
    dy = delta[iy]
    with np.errstate(divide="ignore", invalid="ignore"):
        limits = np.concatenate([np.where(sj * dz < 0, -zJ / dz, np.inf), np.where(sy * dy < 0, -mu0[R[iy]] / dy, np.inf)])
    alpha = 0.99 * min(1.0, float(limits.min(initial=np.inf)))
    if not (alpha > 0 and abs(rR @ (mu0[R] + alpha * delta)) < abs(rR @ mu0[R])):
        return None
    mu = mu0.copy()
    mu[R] += alpha * delta
    lam = mu[:m]
    y = p.y.copy()
    y[W] = mu[m:]
    z = d.reduced(d.gradient(x), lam, y)
    z[free] = 0.0
    return attrs.evolve(p, lam=lam, y=y, z=z, mult=np.concatenate([z, y]))


@attrs.frozen(eq=False)
class PolishResult:
    """The outcome of :func:`polish`.

    Attributes
    ----------
    x : ndarray
        The polished point, or the input point when ``accepted`` is False.
    lam, y, z : ndarray
        Its multipliers: of A x = b, of l ≤ C x ≤ u, of the box (the input's, or estimated, when
        not accepted), in :func:`qpcore.kkt`'s sign convention.
    rounds : int
        Faces solved (factorizations of the KKT matrix).
    accepted : bool
        Whether the polished point replaced the input (its residuals were smaller).
    residuals : Residuals
        The returned point's residuals.
    start : Residuals
        The input's residuals (with its multipliers, or estimated ones).
    converged : bool
        Whether block pivoting ended on a face without violators.
    violators : tuple of int
        The number of violators after each round.
    single_pivots : int
        Rounds of the safeguard's single pivots.
    ratio_steps : int
        Rounds that took the primal ratio step (a face solution far beyond the constraints).
    refinements : int
        Iterative refinement steps over all rounds.
    seconds : float
        Time spent.
    message : str
        What happened, in a few words.
    """

    x: FloatArray
    lam: FloatArray
    y: FloatArray
    z: FloatArray
    rounds: int
    accepted: bool
    residuals: Residuals
    start: Residuals
    converged: bool = False
    violators: tuple[int, ...] = ()
    single_pivots: int = 0
    ratio_steps: int = 0
    refinements: int = 0
    seconds: float = 0.0
    message: str = ""

    @property
    def multipliers(self) -> tuple[FloatArray, FloatArray]:
        """(λ, y): what a strategy proposes to the certificate (``Strategy.multipliers``)."""
        return (self.lam, self.y)


def _vector(v: ArrayLike | None, size: int, name: str, fill: float = 0.0) -> FloatArray:
    if v is None:
        return np.full(size, fill)
    out = np.asarray(v, dtype=np.float64).reshape(-1)
    if out.shape != (size,):
        raise ProblemError(f"{name}: expected length {size}, got {out.shape[0]}")
    return out


def _matrix(M: Matrix, n: int, name: str) -> Matrix:
    if M is None:
        return np.zeros((0, n))
    if sp.issparse(M):
        out = sp.csr_matrix(M, dtype=np.float64)
    else:
        out = np.asarray(M, dtype=np.float64)
        if out.ndim == 1:
            out = out[None, :] if out.size else np.zeros((0, n))
    if out.shape[1] != n:
        raise ProblemError(f"{name}: expected {n} columns, got shape {out.shape}")
    return out


def polish_arrays(Q: Matrix, c: ArrayLike, lb: ArrayLike | None, ub: ArrayLike | None, A: Matrix | None,
                  b: ArrayLike | None, C: Matrix | None, l: ArrayLike | None, u: ArrayLike | None, x: ArrayLike,
                  multipliers: Multipliers | None = None, *, max_rounds: int = 10, tol: float = 1e-12,
                  active_tol: float = 1e-9, reg: float = 1e-9, max_refine: int = 30, backup: int = 3,
                  ratio: float = 0.9, band: float = 0.0, method: Literal["auto", "dense", "sparse"] = "auto",
                  dense_max: int = 300, time_limit: float | None = None, threads: int | None = None) -> PolishResult:
    """:func:`polish` over arrays: min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, A x = b, l ≤ C x ≤ u.

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        The symmetric positive semidefinite Hessian (n × n).
    c : array_like
        Linear term.
    lb, ub : array_like, optional
        Bounds (±inf allowed; None: unbounded).
    A, b : matrix, array_like, optional
        Equality rows (None: none).
    C, l, u : matrix, array_like, optional
        Inequality rows and their bounds (None: none; l, u default to ∓inf).
    x : array_like
        The approximate optimum.
    multipliers : tuple, optional
        ``(λ, y)`` or ``(λ, y, z)``, in :func:`qpcore.kkt`'s sign convention (any entry may be
        None). Missing bound multipliers are the reduced gradient Qx + c − Aᵀλ − Cᵀy; without
        any, least-squares estimates on the guessed face.
    max_rounds, tol, active_tol, reg, max_refine, backup, ratio, band, method, dense_max, time_limit, threads
        See :func:`polish`.

    Returns
    -------
    PolishResult
    """
    with blas_threads(threads):
        return _polish(Q, c, lb, ub, A, b, C, l, u, x, multipliers, max_rounds=max_rounds, tol=tol,
                       active_tol=active_tol, reg=reg, max_refine=max_refine, backup=backup, ratio=ratio, band=band,
                       method=method, dense_max=dense_max, time_limit=time_limit)


def _polish(Q: Matrix, c: ArrayLike, lb: ArrayLike | None, ub: ArrayLike | None, A: Matrix | None,
            b: ArrayLike | None, C: Matrix | None, l: ArrayLike | None, u: ArrayLike | None, x: ArrayLike,
            multipliers: Multipliers | None, *, max_rounds: int, tol: float, active_tol: float, reg: float,
            max_refine: int, backup: int, ratio: float, band: float, method: Literal["auto", "dense", "sparse"],
            dense_max: int, time_limit: float | None) -> PolishResult:
    t0 = time.perf_counter()
    c = np.asarray(c, dtype=np.float64).reshape(-1)
    n = c.shape[0]
    Qm: Matrix = sp.csr_matrix(Q, dtype=np.float64) if sp.issparse(Q) else np.asarray(Q, dtype=np.float64)
    if Qm.shape != (n, n):
        raise ProblemError(f"Q: expected shape ({n}, {n}), got {Qm.shape}")
    Am, Cm = _matrix(A, n, "A"), _matrix(C, n, "C")
    m, k = Am.shape[0], Cm.shape[0]
    if n * (n + m + k) <= _DENSIFY:
        # small enough that scipy.sparse's per-call costs outweigh the products it saves
        Qm, Am, Cm = (M.toarray() if sp.issparse(M) else M for M in (Qm, Am, Cm))
    d = _Data(Q=Qm, c=c, lb=_vector(lb, n, "lb", -np.inf), ub=_vector(ub, n, "ub", np.inf), A=Am,
              b=_vector(b, m, "b"), C=Cm, l=_vector(l, k, "l", -np.inf), u=_vector(u, k, "u", np.inf))
    x0 = _vector(x, n, "x")
    if not np.isfinite(x0).all():
        raise ProblemError("x: contains NaN or inf")
    lo = np.concatenate([d.lb, d.l])
    hi = np.concatenate([d.ub, d.u])
    pinned = lo == hi
    Cx0 = np.asarray(Cm @ x0, dtype=np.float64)
    value0 = np.concatenate([x0, Cx0])

    given = multipliers is not None and any(v is not None for v in multipliers)
    if given:
        assert multipliers is not None
        parts = list(multipliers) + [None] * (3 - len(multipliers))
        lam0 = _vector(parts[0], m, "multipliers: λ")
        y0 = _vector(parts[1], k, "multipliers: y")
        z0 = (d.reduced(d.gradient(x0), lam0, y0) if parts[2] is None else _vector(parts[2], n, "multipliers: z"))
        if not (np.isfinite(lam0).all() and np.isfinite(y0).all() and np.isfinite(z0).all()):
            given = False
    g0 = d.gradient(x0)
    if given:
        mult0 = np.concatenate([z0, y0])
    else:
        # no multipliers: least squares on the face of the sides within a loose distance, whose
        # signs and sizes then make the guess as given ones would
        near = guess_active(value0, np.zeros(n + k), lo, hi, pinned, max(active_tol, _NEAR))
        lam0, y0, z0 = _estimate(d, x0, near)
        mult0 = np.concatenate([z0, y0])
    state0 = guess_active(value0, mult0, lo, hi, pinned, active_tol)
    start = d.residuals(x0, lam0, y0, z0)
    guesses = [state0]
    # OSQP's rule compares a distance with a multiplier, which depends on the units; the second
    # guess, tried when the first does not end clean, puts both on the scale of the problem
    # (‖x‖∞ against ‖g‖∞, ‖c‖∞)
    gscale = max(_norm(g0), _norm(c))
    if gscale > 0 and _norm(x0) > 0:
        second = guess_active(value0, mult0, lo, hi, pinned, active_tol, weight=_norm(x0) / gscale)
        if (second != state0).any():
            guesses.append(second)

    def signed(p: _Point) -> tuple[FloatArray, FloatArray]:
        """(z, y) kept only on the side the face holds: a multiplier of the wrong sign (within the
        tolerance of a violator) is 0, showing in the dual residual; the sign cone alone would
        read it as the other side's and add that bound times it to the duality gap."""
        if p.state is None:
            return p.z, p.y
        st = p.state
        keep = np.where(pinned, 1.0, np.where(st < 0, 1.0, np.where(st > 0, -1.0, 0.0)))
        v = np.concatenate([p.z, p.y])
        v = np.where(pinned, v, np.where(keep * v > 0, v, 0.0))
        return v[:n], v[n:]

    def final(p: _Point) -> tuple[FloatArray, Residuals]:
        xc = np.clip(p.x, d.lb, d.ub)
        zs, ys = signed(p)
        return xc, d.residuals(xc, p.lam, ys, zs)

    def score(p: _Point) -> float:
        return final(p)[1].measure

    tp = tol * np.maximum(1.0, np.maximum(np.where(np.isfinite(lo), np.abs(lo), 0.0),
                                          np.where(np.isfinite(hi), np.abs(hi), 0.0)))
    td = tol * max(1.0, _norm(c), _norm(g0 - c))
    deadline = t0 + time_limit if time_limit is not None else float("inf")
    best: BPPOutcome[_Point] | None = None
    rounds = singles = ratios = refinements = 0
    counts: tuple[int, ...] = ()
    failure = ""
    for guess in guesses:
        face = _QPFace(d, x0, lam0, y0, reg=reg, max_refine=max_refine, method=method, dense_max=dense_max)
        try:
            out = block_principal_pivoting(face, guess, lo, hi, pinned, max_rounds=max_rounds, backup=backup,
                                           tol_value=tp, tol_mult=td, score=score, deadline=deadline,
                                           base=value0 if ratio > 0 else None, ratio=ratio, band=band)
        except (np.linalg.LinAlgError, RuntimeError, ValueError, MemoryError) as e:
            # a singular factor SuperLU refuses, or a face too large: this guess gives nothing
            failure = f"; the face solve failed ({type(e).__name__}: {e})"
            rounds += face.factorizations
            refinements += face.refinements
            continue
        rounds += out.rounds
        singles += out.single_pivots
        ratios += out.ratio_steps
        refinements += face.refinements
        counts += out.violators
        if best is None or out.score < best.score or (out.converged and not best.converged):
            best = out
        if out.converged or time.perf_counter() >= deadline:
            break
    seconds = time.perf_counter() - t0
    if best is None:
        return PolishResult(x=x0, lam=lam0, y=y0, z=z0, rounds=rounds, accepted=False, residuals=start, start=start,
                            refinements=refinements, seconds=seconds, message="not polished" + failure)
    xp, res = final(best.solution)
    common = dict(rounds=rounds, converged=best.converged, violators=counts, single_pivots=singles,
                  ratio_steps=ratios, refinements=refinements, seconds=seconds)
    if res.measure < start.measure or (best.converged and res.measure <= max(10.0 * start.measure, ROUNDING_LEVEL)):
        p = best.solution
        settled = _settle_free_multipliers(d, xp, p, best.state, 4 * _EPS * res.gap_scale)
        if settled is not None:
            res_s = final(settled)[1]
            if res_s.gap < res.gap and res_s.dual <= max(res.dual, _EPS * res.dual_scale):
                p, res = settled, res_s
        zs, ys = signed(p)
        zp, zn = _cone(zs, d.lb, d.ub)
        yp, yn = _cone(ys, d.l, d.u)
        how = "the optimum's active set" if best.converged else "the best face met, with violators left"
        return PolishResult(x=xp, lam=p.lam, y=yp + yn, z=zp + zn, accepted=True, residuals=res, start=start,
                            message=f"polished in {rounds} round(s): {how}", **common)  # type: ignore[arg-type]
    return PolishResult(x=x0, lam=lam0, y=y0, z=z0, accepted=False, residuals=start, start=start,
                        message=f"not polished: the best face ({res.measure:.2e}) is no better than the input "
                                f"({start.measure:.2e})", **common)  # type: ignore[arg-type]


def polish(qp: QP, x: ArrayLike, multipliers: Multipliers | None = None, *, max_rounds: int = 10,
           tol: float = 1e-12, active_tol: float = 1e-9, reg: float = 1e-9, max_refine: int = 30,
           backup: int = 3, ratio: float = 0.9, band: float = 0.0,
           method: Literal["auto", "dense", "sparse"] = "auto", dense_max: int = 300,
           time_limit: float | None = None, threads: int | None = None) -> PolishResult:
    """Polish an approximate optimum of ``qp`` by an exact active-set finish (see the module).

    Parameters
    ----------
    qp : QP
        The problem (box, equality rows A x = b, inequality rows l ≤ C x ≤ u). Its Hessian is
        read as a matrix (:func:`qpcore.backends.sparse.matrix_of`: sparse stays sparse).
    x : array_like
        The approximate optimum (from an interior point method or any solver).
    multipliers : tuple, optional
        ``(λ, y)`` or ``(λ, y, z)`` in :func:`qpcore.kkt`'s sign convention (stationarity
        Qx + c − Aᵀλ − Cᵀy − z = 0, z ≥ 0 at a lower bound, y ≥ 0 where C x = l). Without them the
        active set is guessed from the distances alone, with least-squares multipliers.
    max_rounds : int
        The most faces solved, each one factorization (default 10).
    tol : float
        Relative size below which a bound or row violation, or a multiplier of the wrong sign,
        does not count as a violator (default 1e-12).
    active_tol : float
        Relative distance within which a side is guessed active whatever its multiplier.
    reg : float
        The regularization ρ = δ of the equilibrated KKT matrix (the refinement removes it).
    max_refine : int
        The most iterative refinement steps per face.
    backup : int
        Full block exchanges allowed without a new smallest number of violators before single
        pivots (Kim and Park's p̄).
    ratio : float
        A round whose segment from the current feasible point to the face's solution leaves the
        feasible set before this fraction of its length takes the primal ratio step instead of a
        block exchange (default 0.9; 0 never).
    band : float
        In a ratio step, sides met within ``band`` of the rest of the segment after the first
        are activated with it (default 0: only those met together).
    method : {"auto", "dense", "sparse"}
        The factorization: dense LAPACK LU, scipy's SuperLU, or by size and density ("auto":
        sparse above ``dense_max`` unknowns when at most 10% of the KKT matrix is nonzero).
    dense_max : int
        See ``method``.
    time_limit : float, optional
        Seconds after which no further face is solved.
    threads : int, optional
        BLAS threads (:func:`qpcore.linalg.threads.blas_threads`: None decides from the free cores;
        inside ``qpcore.solve`` the run's decision stands).

    Returns
    -------
    PolishResult
        ``accepted`` says whether the polished point replaced the input: it does only when its
        largest relative residual (:attr:`Residuals.measure`) is smaller than the input's.

    Examples
    --------
    >>> import numpy as np
    >>> from qpcore import QP
    >>> from qpcore_strategies.polish import polish
    >>> qp = QP(np.eye(2), [-1.0, -1.0], lb=0.0, ub=0.6, C=[[1.0, 1.0]], l=-np.inf, u=1.0)
    >>> res = polish(qp, [0.4999, 0.5001])
    >>> res.accepted, np.allclose(res.x, [0.5, 0.5])
    (True, True)
    """
    k = qp.k
    return polish_arrays(matrix_of(qp.Q), qp.c, qp.lb, qp.ub, qp.A, qp.b, qp.C if k else None,
                         qp.l if k else None, qp.u if k else None, x, multipliers, max_rounds=max_rounds, tol=tol,
                         active_tol=active_tol, reg=reg, max_refine=max_refine, backup=backup, ratio=ratio,
                         band=band, method=method, dense_max=dense_max, time_limit=time_limit, threads=threads)


# --------------------------------------------------------------------------------------------------
# as a stage of other strategies


@attrs.frozen
class PolishFinish:
    """The finish as a stage another strategy runs (its ``finish=`` option): frozen settings of
    :func:`polish`, applied to a run's state.

    Attributes
    ----------
    max_rounds, tol, active_tol, reg, max_refine, backup, ratio, band
        See :func:`polish`.
    """

    max_rounds: int = 10
    tol: float = 1e-12
    active_tol: float = 1e-9
    reg: float = 1e-9
    max_refine: int = 30
    backup: int = 3
    ratio: float = 0.9
    band: float = 0.0

    def run(self, qp: QP, x: ArrayLike, multipliers: Multipliers | None = None,
            time_limit: float | None = None) -> PolishResult:
        """:func:`polish` with these settings."""
        return polish(qp, x, multipliers, max_rounds=self.max_rounds, tol=self.tol, active_tol=self.active_tol,
                      reg=self.reg, max_refine=self.max_refine, backup=self.backup, ratio=self.ratio, band=self.band,
                      time_limit=time_limit)

    def apply(self, qp: QP, state: State, multipliers: Multipliers | None = None) -> PolishResult:
        """Polish ``state.x`` in place (x, g, status and ``exact``) when the finish is accepted.

        Parameters
        ----------
        qp : QP
            The problem the state belongs to.
        state : State
            A run's state; left as it is when the polished point is not accepted.
        multipliers : tuple, optional
            The strategy's multipliers at ``state.x`` (see :func:`polish`).

        Returns
        -------
        PolishResult
            Also counted in ``state.counters`` (``polish_rounds``, ``polish_accepted``).
        """
        left = state.time_left()
        res = self.run(qp, state.x, multipliers, time_limit=left if np.isfinite(left) else None)
        state.counters["polish_rounds"] = state.counters.get("polish_rounds", 0) + res.rounds
        state.counters["polish_accepted"] = state.counters.get("polish_accepted", 0) + int(res.accepted)
        if res.accepted:
            state.x = res.x
            state.g = qp.gradient(res.x)
            state.status = bound_status(res.x, qp.lb, qp.ub)
            state.exact = (state.x, state.g)
        return res


@attrs.define(slots=True, eq=False)
class _StageWork(Work):
    """The stage's own state: its tolerance and the finish's result (for ``multipliers``)."""

    tol: float
    result: PolishResult | None = None


@attrs.frozen
class Polish(Strategy):
    """The finish alone, as a strategy: polish the start point (``qpcore.solve(qp, Polish(), x0=...)``).

    One step runs :func:`polish` on ``x0`` (multipliers estimated); the run is done when the
    polished point's residuals are within ``tol``, else it stops as stalled. Its multipliers go
    to the certificate as a proposal.

    Attributes
    ----------
    finish_settings : PolishFinish
        The settings (the keyword ``finish`` when built).
    """

    finish_settings: PolishFinish = attrs.field(factory=PolishFinish, alias="finish")
    takes_inequalities: ClassVar[bool] = True

    def init(self, qp: QP, x0: NDArray[np.float64] | None, tol: float) -> State:
        """The state at ``x0`` (or the box's point nearest 0)."""
        self.check(qp)
        x = np.clip(np.zeros(qp.n), qp.lb, qp.ub) if x0 is None else np.array(x0, dtype=np.float64)
        g = qp.gradient(x)
        return State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub), work=_StageWork(tol=tol))

    def step(self, qp: QP, state: State) -> None:
        """Run the finish once; done when its residuals meet tol."""
        work = state.work(_StageWork)
        res = self.finish_settings.apply(qp, state)
        work.result = res
        state.iteration += 1
        if res.residuals.measure <= work.tol:
            state.done = True
        else:
            state.stop = Status.STALLED

    def multipliers(self, qp: QP, state: State) -> tuple[FloatArray, FloatArray] | None:
        """The polished point's (λ, y), when the finish was accepted."""
        work = state.work_or_none(_StageWork)
        if work is None or work.result is None or not work.result.accepted:
            return None
        return work.result.multipliers

    def report(self, state: State) -> dict[str, Any]:
        """The finish's rounds and message."""
        work = state.work_or_none(_StageWork)
        if work is None or work.result is None:
            return {}
        r = work.result
        return {"polish": r.message, "polish_residual": r.residuals.measure, "polish_start": r.start.measure}
