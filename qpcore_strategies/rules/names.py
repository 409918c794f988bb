"""The one table of working-set rule names: ``name → (kind, factory)``.

SMO (``SMO(rule="mvp")``), decomposition (``Decomposition(rule="chunking")``) and the strategy
registry (``smo:rule=platt``, ``decomposition:rule=osuna,q=32``, the command line's ``--rule``)
all read :data:`RULES`, so a name means the same rule with the same defaults everywhere.

A pair rule (``kind = "pair"``) is taken by SMO and by decomposition (as a working set of size
2); a set rule (``kind = "set"``) by decomposition only. The protocol itself (``kind`` and
``select(view, tol)``) is :mod:`qpcore.core.rules`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from qpcore.core.problem import ProblemError
from qpcore.core.rules import RuleKind, rule_kind
from qpcore_strategies.rules.pair import MaximalViolatingPair, PlattHeuristic, SecondOrderRule
from qpcore_strategies.rules.sets import Chunking, OsunaSwap, SteepestFeasible

__all__ = ["PAIR_RULES", "RULES", "SET_RULES", "RuleEntry", "make_rule", "rule_help"]


@attrs.frozen
class RuleEntry:
    """A built-in rule in the table.

    Attributes
    ----------
    name : str
        Its name (``wss2``, ``svmlight``, ...).
    kind : {"pair", "set"}
        The kind the rule declares (``factory().kind``).
    label : str
        A few words for help texts ("LIBSVM's second order").
    factory : callable
        Keyword options → the rule (the class itself: no options gives its defaults).
    size : str, optional
        The keyword a working-set size sets (``q``, ``M``); None for the pair rules.
    """

    name: str
    kind: RuleKind
    label: str
    factory: Callable[..., Any]
    size: str | None = None

    def make(self, size: int | None = None) -> Any:
        """The rule with its defaults, and ``size`` as its working-set size when it has one."""
        if size is None or self.size is None:
            return self.factory()
        return self.factory(**{self.size: size})


#: Name → entry: the pair rules first (SMO's default first), then the set rules (decomposition's first).
RULES: dict[str, RuleEntry] = {e.name: e for e in (
    RuleEntry("wss2", "pair", "LIBSVM's second order", SecondOrderRule),
    RuleEntry("mvp", "pair", "maximal violating pair", MaximalViolatingPair),
    RuleEntry("platt", "pair", "Platt's heuristics", PlattHeuristic),
    RuleEntry("svmlight", "set", "SVMlight's q/2 top and bottom", SteepestFeasible, size="q"),
    RuleEntry("chunking", "set", "Vapnik's chunking", Chunking, size="M"),
    RuleEntry("osuna", "set", "Osuna's swap", OsunaSwap, size="q"),
)}

#: Names of the pair rules (SMO's, also decomposition's).
PAIR_RULES = tuple(n for n, e in RULES.items() if e.kind == "pair")
#: Names of the set rules (decomposition's).
SET_RULES = tuple(n for n, e in RULES.items() if e.kind == "set")


def rule_help(kind: RuleKind) -> str:
    """The rules of one kind for a help text: ``"LIBSVM's second order (wss2), ..."``."""
    return ", ".join(f"{e.label} ({e.name})" for e in RULES.values() if e.kind == kind)


def make_rule(rule: Any, accepted: tuple[RuleKind, ...] = ("pair",), size: int | None = None) -> Any:
    """A rule from its name in :data:`RULES`, or the rule object itself (checked for a ``kind``).

    Parameters
    ----------
    rule : str or rule object
        A name, or any object with ``kind`` and ``select(view, tol)``.
    accepted : tuple of {"pair", "set"}
        The kinds the caller takes; they come first in the error for an unknown name (whether a
        named rule's kind is accepted is the strategy's check, :func:`qpcore.core.rules.check_rule`).
    size : int, optional
        Working-set size for a named set rule (``q``, or ``M`` for chunking).

    Returns
    -------
    rule object

    Raises
    ------
    ProblemError
        For an unknown name, or an object without a kind.
    """
    if isinstance(rule, str):
        entry = RULES.get(rule)
        if entry is None:
            kinds = accepted + tuple(k for k in ("pair", "set") if k not in accepted)
            names = " or ".join(f"{', '.join(n for n, e in RULES.items() if e.kind == k)} ({k} rules)" for k in kinds)
            raise ProblemError(f"rule: unknown working-set rule {rule!r}; use one of {names}")
        return entry.make(size)
    rule_kind(rule)
    return rule
