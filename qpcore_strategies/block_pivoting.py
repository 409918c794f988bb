"""Block principal pivoting over any face solver: a reusable block active-set finish.

A convex QP's optimality conditions pair each constraint with its multiplier: a variable's bounds
or a row's two sides (a *pair*) is either inactive (the multiplier 0, the value free inside
[lo, hi]) or active at one side (the value pinned, the multiplier of that side's sign). A
:class:`Face` solves the equality-constrained problem a given assignment of the pairs describes;
:func:`block_principal_pivoting` looks for the assignment whose solution violates nothing, and
:func:`guess_active` gives it a start from an approximate point and its multipliers. Nothing here
knows the problem: the general QP's face (:mod:`qpcore_strategies.qp_face`, used by the exact
finish :mod:`qpcore_strategies.polish`) is one face; a kernel operator's, with a factor kept
across block moves, can be another.

**Guess** (:func:`guess_active`, OSQP's polish rule): a side is active when its multiplier (of
the right sign) exceeds its distance, or when the distance is within ``active_tol`` (relative);
pinned pairs (lo = hi) always are.

**Block principal pivoting.** Each round solves the face and checks every pair at once: the
inactive sides (a free variable outside its box, an inactive row outside [l, u]) and the sign of
the active sides' multipliers. When some are violated, block principal pivoting (Júdice and
Pires 1994; Portugal, Júdice and Vicente 1994; Kim and Park 2011) moves them all at once: a
violated inactive side becomes active, an active side whose multiplier has the wrong sign
becomes inactive. With general rows one side missing from the guess can send the face's
solution through many others, and exchanging all of those multiplies the violators round after
round (measured on random problems of 25 variables and 15 rows: from one side flipped, plain
block exchanges reach the optimum within 40 rounds on 40 to 75% of them; from a third flipped,
on 0 to 40%). So the loop can keep a feasible point (``base``: the input at first) and read the
segment from it to the face's solution, issue 35's **ratio step toward the block solution**:
when the segment leaves the feasible set before ``ratio`` (0.9) of its length, the point moves
to where it leaves, only the sides met there become active (several when met together), and the
wrong-signed sides are released as a block. Otherwise the round is the plain block exchange.
(The same 300 problems, from one side to a third flipped: all reach the optimum, in 2 to 8
rounds on average.) **Safeguard** (Kim and Park's counter): after ``backup`` rounds in which the
number of violators has not fallen below its smallest value so far, single moves until it does:
the textbook primal active-set step (activate the sides met first, release nothing; at a
feasible face solution release the wrong-signed side of largest index), or, without a feasible
point, Murty's single principal pivot on the violator of largest index. ``max_rounds`` caps the
rounds, each one face solved.

**The guarantee relied on.** Murty's single-pivot rule (Murty 1974), and with it the safeguarded
block method (Júdice and Pires 1994), terminates finitely on a linear complementarity problem
with a P-matrix: a strictly convex QP with bounds only (``block_principal_pivoting`` without a
feasible point; tested from random starts). With a feasible point, the safeguard's single moves
are the primal active-set method, which terminates on a strictly convex problem whose steps are
not degenerate (Nocedal and Wright, §16.5: the objective falls at every step, so no working set
repeats). On a degenerate or singular problem (a merely semidefinite Q, rows active with a zero
multiplier, dependent rows, more active rows than free variables) neither argument holds and
single moves can cycle in principle; there the face solver must still return a well-defined
point for every face (the general QP's: a solution of the face when it has one, the proximal
point nearest the start when the face is singular), the cap on rounds ends the loop, and the
caller's acceptance test keeps its input whenever the finish did not improve it: **termination
is unconditional, improvement is checked, never assumed.**
"""

from __future__ import annotations

import math

import time
from typing import Callable, Generic, Protocol, TypeVar

import attrs
import numpy as np
from numpy.typing import NDArray

__all__ = ["BPPOutcome", "Face", "FaceSolution", "block_principal_pivoting", "guess_active"]

FloatArray = NDArray[np.float64]
Int8Array = NDArray[np.int8]
BoolArray = NDArray[np.bool_]
IndexArray = NDArray[np.intp]


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
    diverged : bool
        Stopped because the violators grew beyond ``max_growth`` (see
        :func:`block_principal_pivoting`).
    """

    solution: S
    state: Int8Array
    rounds: int
    converged: bool
    violators: tuple[int, ...]
    single_pivots: int
    score: float
    ratio_steps: int = 0
    diverged: bool = False


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
                             deadline: float = float("inf"), max_growth: float = math.inf) -> BPPOutcome[S]:
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
    max_growth : float
        Stop (not converged, ``diverged``) once a round counts more than ``max_growth`` times the
        first round's violators (and 16 more): the exchanges are running away from a far guess,
        where every further face costs a factorization and rarely comes back (ε-SVR from a pair
        gap of 0.1: 100, 312, 1,807, then about 2,530 violators for 17 rounds).

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
    diverged = False
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
        if idx.size > max_growth * counts[0] + 16:
            diverged = True
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
                      single_pivots=singles, score=best[0], ratio_steps=ratio_steps, diverged=diverged)


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
    weight : float
        The factor the multipliers are read with against the distances (1: as given; the exact
        finish's second guess puts both on the problem's scale).

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
