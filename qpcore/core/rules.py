"""The working-set protocol: a rule picks the variables a strategy updates next.

Two kinds of rule, checked when a strategy is built (:func:`rule_kind`):

- a **pair rule** (``kind = "pair"``) returns two indices, a violating pair (or one index when
  the problem has no equality row: the fixed-threshold SVM); SMO takes these;
- a **set rule** (``kind = "set"``) returns any number ≥ 2 of indices; decomposition takes these,
  and also pair rules (a pair is a working set of size 2).

A rule sees the problem only through a :class:`RuleView`, a read-only view that the strategy
hands it, already restricted to the variables the strategy has not shrunk: ``x``, ``g``, the
bounds, the equality row, the violation scores and up/low masks of
:mod:`qpcore.core.optimality`, Q's diagonal and rows (over the visible columns), and ``index``, the
map from the view's positions to the problem's variables. Indices a rule returns are positions
in the view, so a rule that reads only the view is correct with shrinking on. A rule that
returns None says "optimal to tol on what I see"; the strategy then re-checks the full set.

Per-run state (an RNG, a history) lives in ``view.memo`` (a dict that lives for one run) and
``view.rng`` (seeded per run); the rule object itself stays frozen configuration.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import prefetch_rows, row_cached
from qpcore.core.optimality import Scores, measure, scores
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import State

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

RuleKind = Literal["pair", "set"]

__all__ = ["PairRule", "RuleKind", "RuleView", "SetRule", "WorkingSetRule", "check_rule", "rule_kind"]


def _ro(a: NDArray[Any]) -> NDArray[Any]:
    """A read-only view (no copy) of ``a``."""
    v = a.view()
    v.flags.writeable = False
    return v


class RuleView:
    """What a working-set rule may look at: a read-only view over the unshrunk variables.

    Built by the strategy once per run and pointed at the current active set with
    :meth:`restrict`; every accessor reads the strategy's current point, so a rule always sees the
    latest x and g. Arrays are read-only (writing raises) and indexed by view position
    ``0 … n − 1``; ``index[k]`` is the problem variable at position k.

    Attributes
    ----------
    qp : QP
        The problem (for its size and operator; rules should prefer the accessors below).
    memo : dict
        Per-run rule state (a history, counters); empty at the start of each run.
    rng : numpy.random.Generator
        Per-run random generator, seeded from the strategy's ``seed``.
    iteration : int
        Steps (SMO) or rounds (decomposition) taken so far.
    previous : ndarray of intp
        The last working set, as view positions (empty at the start; variables that were shrunk
        since are dropped).
    """

    __slots__ = ("qp", "_state", "_index", "_a", "_group", "_unit", "_up", "_low", "_diag", "memo", "rng", "previous_global",
                 "iteration")

    def __init__(self, qp: QP, state: State, *, seed: int = 0, up: BoolArray | None = None,
                 low: BoolArray | None = None, diag: FloatArray | None = None) -> None:
        self.qp = qp
        self._state = state
        self._index: IndexArray | None = None
        eq = qp.equality
        # rules see each variable's own coefficient and, with several disjoint groups, its group;
        # general rows have no pair structure a rule could use
        a = eq.coef if eq.kind == "groups" else None
        self._a = a
        self._group = eq.group_ids
        self._unit = a is not None and eq.unit and not bool((eq.group < 0).any())
        # masks the strategy keeps up to date itself (SMO): read instead of recomputed
        self._up, self._low = up, low
        self._diag = np.asarray(qp.Q.diag(), dtype=np.float64) if diag is None else diag
        self.memo: dict[str, Any] = {}
        self.rng = np.random.default_rng(seed)
        self.previous_global: IndexArray = np.zeros(0, dtype=np.intp)
        self.iteration = 0

    # -- set by the strategy ------------------------------------------------------------------
    def restrict(self, active: IndexArray | None) -> None:
        """Show only the problem variables ``active`` (sorted; None: all)."""
        self._index = None if active is None or active.size == self.qp.n else active

    def to_global(self, local: NDArray[np.integer[Any]]) -> IndexArray:
        """Problem indices of view positions."""
        loc: IndexArray = np.asarray(local, dtype=np.intp)
        if loc.size and (loc.min() < 0 or loc.max() >= self.n):
            raise IndexError(f"a rule returned positions {loc.tolist()}, outside the view (n = {self.n})")
        if self._index is None:
            return loc
        out: IndexArray = self._index[loc]
        return out

    def _take(self, arr: NDArray[Any]) -> NDArray[Any]:
        if self._index is None:
            return _ro(arr)
        out = arr[self._index]      # a gathered copy, read-only too: writing it would change nothing
        out.flags.writeable = False
        return out

    # -- what a rule reads --------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of visible variables."""
        return self.qp.n if self._index is None else int(self._index.size)

    @property
    def index(self) -> IndexArray:
        """Problem index of each view position."""
        return np.arange(self.qp.n, dtype=np.intp) if self._index is None else _ro(self._index)

    @property
    def shrunk(self) -> bool:
        """Whether some variables are hidden by shrinking."""
        return self._index is not None

    @property
    def x(self) -> FloatArray:
        """The current point."""
        return self._take(self._state.x)

    @property
    def g(self) -> FloatArray:
        """The gradient Qx + c as the strategy keeps it."""
        return self._take(self._state.g)

    @property
    def lb(self) -> FloatArray:
        """Lower bounds."""
        return self._take(self.qp.lb)

    @property
    def ub(self) -> FloatArray:
        """Upper bounds."""
        return self._take(self.qp.ub)

    @property
    def a(self) -> FloatArray | None:
        """The equality row (the labels y for an SVM dual), or None without an equality."""
        return None if self._a is None else self._take(self._a)

    @property
    def group(self) -> IndexArray | None:
        """Each variable's group (its row of A, −1 for a variable in no row) when the equality
        rows are several disjoint groups; None for one group or none. A pair must be drawn
        within one group."""
        return None if self._group is None else self._take(self._group)

    @property
    def diag(self) -> FloatArray:
        """Q's diagonal."""
        return self._take(self._diag)

    def scores(self) -> Scores:
        """Violation scores ``v`` and the ``up``/``low`` masks (:mod:`qpcore.core.optimality`)."""
        g = self._take(self._state.g)
        if self._up is not None and self._low is not None and self._unit:
            a = self._take(self._a) if self._a is not None else None
            v = np.multiply(a, g) if a is not None else np.array(g)
            np.negative(v, out=v)
            return Scores(v=v, up=self._take(self._up), low=self._take(self._low), single=None, group=self.group)
        a = None if self._a is None else self._take(self._a)
        return scores(self._take(self._state.x), g, self._take(self.qp.lb), self._take(self.qp.ub), a,
                      group=self.group, unit=self._unit)

    def gap(self, s: Scores | None = None) -> float:
        """The stopping measure on the visible variables (:func:`qpcore.core.optimality.measure`)."""
        return measure(self.scores() if s is None else s)

    def row(self, k: int) -> NDArray[Any]:
        """Row ``Q[index[k], index]`` (read-only; from the operator's cache when it has one)."""
        r = self.qp.Q.row(int(k) if self._index is None else int(self._index[k]))
        return _ro(r if self._index is None else r[self._index])

    def rows(self, ks: NDArray[np.integer[Any]]) -> NDArray[Any]:
        """Rows ``Q[index[ks], index]`` as one block."""
        ks = np.asarray(ks, dtype=np.intp)
        R = self.qp.Q.rows(ks if self._index is None else self._index[ks])
        return _ro(R if self._index is None else R[:, self._index])

    def cached(self, k: int) -> bool:
        """Whether row k is in the operator's cache (always True for an operator without one)."""
        return row_cached(self.qp.Q, int(k) if self._index is None else int(self._index[k]))

    def prefetch(self, ks: NDArray[np.integer[Any]]) -> None:
        """A hint: compute rows ``ks`` in one block now, if the operator can (no effect otherwise)."""
        ks = np.asarray(ks, dtype=np.intp)
        prefetch_rows(self.qp.Q, ks if self._index is None else self._index[ks])

    @property
    def previous(self) -> IndexArray:
        """The last working set as view positions (shrunk members dropped)."""
        prev = self.previous_global
        if self._index is None or prev.size == 0:
            return prev
        pos = np.searchsorted(self._index, prev)
        pos = np.minimum(pos, self._index.size - 1)
        out: IndexArray = pos[self._index[pos] == prev]
        return out


@runtime_checkable
class WorkingSetRule(Protocol):
    """Any working-set rule: ``kind`` and ``select(view, tol)``."""

    kind: str

    def select(self, view: RuleView, tol: float) -> NDArray[np.intp] | None:
        """View positions of the next working set, or None if optimal to ``tol`` on the view."""
        ...


@runtime_checkable
class PairRule(Protocol):
    """A rule for SMO: ``kind = "pair"``; ``select`` returns two positions (one without an equality)."""

    kind: Literal["pair"]

    def select(self, view: RuleView, tol: float) -> NDArray[np.intp] | None:
        """A violating pair (or single variable), or None if optimal to ``tol``."""
        ...


@runtime_checkable
class SetRule(Protocol):
    """A rule for decomposition: ``kind = "set"``; ``select`` returns ≥ 2 positions."""

    kind: Literal["set"]

    def select(self, view: RuleView, tol: float) -> NDArray[np.intp] | None:
        """A working set, or None if optimal to ``tol``."""
        ...


def rule_kind(rule: object) -> RuleKind:
    """The kind a rule declares, or a ``ProblemError`` saying what is missing."""
    if not isinstance(rule, WorkingSetRule) or not callable(rule.select):
        raise ProblemError(f"rule: {type(rule).__name__} must declare kind = 'pair' (SMO) or kind = 'set' "
                           "(decomposition) and have a select(view, tol) method")
    kind = rule.kind
    if kind not in ("pair", "set"):
        raise ProblemError(f"rule: {type(rule).__name__} must declare kind = 'pair' (SMO) or kind = 'set' "
                           f"(decomposition), got {kind!r}")
    return "pair" if kind == "pair" else "set"


def check_rule(rule: object, accepted: tuple[RuleKind, ...], strategy: str) -> None:
    """Raise a ``ProblemError`` when ``rule``'s kind is not one that ``strategy`` accepts."""
    kind = rule_kind(rule)
    if kind not in accepted:
        hint = ("SMO moves two variables per step; use a pair rule (e.g. 'wss2', 'mvp', 'platt'), or pass "
                "this set rule to Decomposition" if strategy == "SMO"
                else f"{strategy} takes {' or '.join(accepted)} rules")
        raise ProblemError(f"rule: {type(rule).__name__} is a {kind} rule; {hint}")
