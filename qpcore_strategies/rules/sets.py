"""The built-in set rules: decomposition's working sets of any size ≥ 2.

- :class:`SteepestFeasible`: SVMlight's rule (Joachims 1999), the q/2 largest and q/2 smallest
  ``v = −g/a`` within each group, reusing part of the previous set (ThunderSVM), decomposition's
  default;
- :class:`Chunking`: Vapnik's chunking, every current support vector plus the M worst violators;
- :class:`OsunaSwap`: Osuna's original scheme, one variable swapped out and one in per round.

Each reads only the :class:`qpcore.core.rules.RuleView` (the protocol: :mod:`qpcore.core.rules`)
and returns None when the stopping measure of the variables it sees is within tol.
:func:`violators` (SVMlight's q/2-top/q/2-bottom selection) and :func:`group_ends` are reusable in
a rule of one's own. Their names are in :mod:`qpcore_strategies.rules.names`.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.core.optimality import Scores, maximal_violating_pair
from qpcore.core.rules import RuleView

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["Chunking", "OsunaSwap", "SteepestFeasible", "group_ends", "violators"]


def _top_k(scores: FloatArray, mask: BoolArray, k: int, exclude: BoolArray) -> IndexArray:
    """The k largest ``scores`` among ``mask & ~exclude`` (vectorized partial sort), best first."""
    cand = np.flatnonzero(mask & ~exclude)
    if cand.size == 0 or k <= 0:
        return np.zeros(0, dtype=np.intp)
    s = scores[cand]
    if cand.size > k:
        part = np.argpartition(-s, k - 1)[:k]
        cand, s = cand[part], s[part]
    return cand[np.argsort(-s, kind="stable")]


def group_ends(v: FloatArray, up: BoolArray, low: BoolArray, group: IndexArray) -> tuple[FloatArray, FloatArray]:
    """Per variable, ``max v`` over ``up`` and ``min v`` over ``low`` within its own group.

    −inf / +inf where the group has no such variable, and for variables in no group (−1).
    """
    k_n = int(group.max(initial=-1)) + 1
    hi, lo = np.full(k_n + 1, -np.inf), np.full(k_n + 1, np.inf)   # the last entry stands for −1
    for k in range(k_n):
        inside = group == k
        hi[k] = np.max(v, where=up & inside, initial=-np.inf)
        lo[k] = np.min(v, where=low & inside, initial=np.inf)
    return hi[group], lo[group]


def violators(s: Scores, k: int, exclude: BoolArray) -> IndexArray:
    """Up to k variables by SVMlight's rule: k/2 largest v among ``up``, k/2 smallest among ``low``.

    Variables outside the equality (single ones; all of them without an equality) compete by
    their violation ``|P(g)_i|``: the violating ones, most violating first, take up to half the
    set (all of it without an equality). A side that runs short is refilled from the other.
    With several disjoint groups, v is compared within a group only: an ``up`` variable ranks by
    ``v_i − min_{low ∩ k} v`` and a ``low`` one by ``max_{up ∩ k} v − v_j`` (k its group), how
    far each violates against its own group's best partner, so the group with the largest gap
    brings both ends of its maximal violating pair.
    """
    n_single = 0
    picked: list[IndexArray] = []
    ex = exclude.copy()
    pu, pl = s.pair_masks()
    if s.group is None:
        key_up, key_low = s.v, -s.v
    else:
        m_up, m_low = group_ends(s.v, pu, pl, s.group)
        key_up, key_low = s.v - m_low, m_up - s.v
    if s.single is not None:
        su, sl = s.single_masks()
        viol = np.maximum(np.where(su, s.v, 0.0), np.where(sl, -s.v, 0.0))
        cap = k if not s.paired else k // 2
        if s.paired and not float(viol.max(initial=0.0)) > float(np.max(key_up, where=pu, initial=-np.inf)):
            # a pair violates more than any single (its gap is the largest up key): keep two
            # places, so that both its ends get in (whichever of them a reused set holds already)
            cap = min(cap, max(0, k - 2))
        singles = _top_k(viol, viol > 0, cap, ex)
        ex[singles] = True
        picked.append(singles)
        n_single = singles.size
    if s.paired:
        rest = k - n_single
        hi = _top_k(key_up, pu, rest // 2 + rest % 2, ex)
        ex[hi] = True
        lo = _top_k(key_low, pl, rest // 2, ex)
        ex[lo] = True
        picked += [hi, lo]
        short = rest - hi.size - lo.size
        if short > 0:   # one side ran short: take more from the other
            more = _top_k(key_up, pu, short, ex)
            ex[more] = True
            more2 = _top_k(key_low, pl, short - more.size, ex)
            picked += [more, more2]
    return np.concatenate(picked).astype(np.intp) if picked else np.zeros(0, dtype=np.intp)


def _moves_alone(s: Scores, i: int) -> bool:
    """Whether variable i can move by itself: it is outside the equality (a single variable)."""
    return s.single is not None and bool(s.single[i])


@attrs.frozen
class SteepestFeasible:
    """SVMlight's rule: the q/2 largest and q/2 smallest ``v = −g/a`` among feasible directions.

    Parameters
    ----------
    q : int
        Working-set size (even, ≥ 2).
    reuse : float
        Fraction of the previous working set kept (free variables first, then the most violating)
        so that their cached kernel rows are used again (ThunderSVM); 0 disables.
    random_every : int
        Every this many rounds the new part of the set is drawn at random among the variables
        that can move, which breaks numerical cycles; 0 disables.
    """

    kind: ClassVar[Literal["set"]] = "set"
    q: int = 64
    reuse: float = 0.5
    random_every: int = 0

    def __attrs_post_init__(self) -> None:
        if self.q < 2 or self.q % 2:
            raise ValueError(f"q: the working-set size must be even and ≥ 2, got {self.q}")
        if not 0.0 <= self.reuse < 1.0:
            raise ValueError(f"reuse: a fraction in [0, 1), got {self.reuse}")

    def select(self, view: RuleView, tol: float) -> IndexArray | None:
        """The next working set, or None when the measure (the pair gap) is ≤ tol."""
        s = view.scores()
        if view.gap(s) <= tol:
            return None
        n = view.n
        q = min(self.q, n)
        keep = np.zeros(0, dtype=np.intp)
        prev = view.previous
        if self.reuse > 0 and prev.size:
            x, lb, ub = view.x, view.lb, view.ub
            free = (x[prev] > lb[prev]) & (x[prev] < ub[prev])
            # free variables first (they are the ones that keep moving), then by violation
            order = np.lexsort((-np.abs(s.v[prev]), ~free))
            # at least two new places, so the maximal violating pair always gets in
            keep = prev[order[: min(int(self.reuse * q), q - 2)]]
        exclude = np.zeros(n, dtype=bool)
        exclude[keep] = True
        k = q - keep.size
        if self.random_every and view.iteration % self.random_every == self.random_every - 1:
            movable = np.flatnonzero((s.up | s.low) & ~exclude)
            new = view.rng.choice(movable, size=min(k, movable.size), replace=False) if movable.size else movable
        else:
            new = violators(s, k, exclude)
        B = np.unique(np.concatenate([keep, new]).astype(np.intp))
        return B if B.size >= 2 or (B.size == 1 and _moves_alone(s, int(B[0]))) else None


@attrs.frozen
class Chunking:
    """Vapnik's chunking: all current support vectors (x ≠ 0) plus the M worst violators.

    Parameters
    ----------
    M : int
        Violators added per round.
    max_size : int
        Cap on the chunk (the subproblem is dense: q² memory).
    """

    kind: ClassVar[Literal["set"]] = "set"
    M: int = 64
    max_size: int = 4000

    def select(self, view: RuleView, tol: float) -> IndexArray | None:
        """The chunk, or None when optimal to tol."""
        s = view.scores()
        if view.gap(s) <= tol:
            return None
        sv = np.flatnonzero((view.x != 0) & (s.up | s.low))
        exclude = np.zeros(view.n, dtype=bool)
        exclude[sv] = True
        new = violators(s, self.M, exclude)
        if sv.size + new.size > self.max_size:
            # too many support vectors for one dense chunk: keep the most violating of them
            sv = sv[np.argsort(-s.violation()[sv], kind="stable")[: max(0, self.max_size - new.size)]]
        B = np.unique(np.concatenate([sv, new]).astype(np.intp))
        return B if B.size >= 2 or (B.size == 1 and _moves_alone(s, int(B[0]))) else None


@attrs.frozen
class OsunaSwap:
    """Osuna's original scheme: a fixed-size set that swaps one variable out and one in per round.

    Out goes the member with the smallest violation (preferring one at a bound); in comes the worst
    violator outside the set. For teaching and comparison: it needs many rounds.

    Parameters
    ----------
    q : int
        Working-set size.
    """

    kind: ClassVar[Literal["set"]] = "set"
    q: int = 16

    def select(self, view: RuleView, tol: float) -> IndexArray | None:
        """The previous set with one swap (the first round: the q worst violators)."""
        s = view.scores()
        if view.gap(s) <= tol:
            return None
        n = view.n
        prev = view.previous
        if prev.size < min(self.q, n):
            return violators(s, min(self.q, n), np.zeros(n, dtype=bool))
        inside = np.zeros(n, dtype=bool)
        inside[prev] = True
        # the violation of i: how far v_i lies beyond the interval that optimality allows
        score = s.violation()
        outside = np.flatnonzero(~inside & (s.up | s.low))
        if outside.size == 0:
            return prev
        # the maximal violating pair must end up inside (scores tie between a pair's two ends and
        # many free variables, so an argmax over scores alone can cycle without ever taking it)
        mvp = maximal_violating_pair(s)
        pair = mvp if mvp is not None else (int(np.argmax(score)),) * 2
        missing = [i for i in pair if not inside[i]]
        enter = missing[0] if missing else int(outside[np.argmax(score[outside])])
        x, lb, ub = view.x, view.lb, view.ub
        at_bound = (x[prev] <= lb[prev]) | (x[prev] >= ub[prev])
        order = prev[np.lexsort((score[prev], ~at_bound))]
        leave = int(next(i for i in order if i not in pair))
        B = prev.copy()
        B[B == leave] = enter
        return np.sort(B)
