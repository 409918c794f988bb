"""What ``qpcore solve`` can build and run: the problem-kind and strategy registries.

``qpcore solve`` is extensible in two directions:

- by problem kind: :data:`PROBLEMS` maps a name (``svm``) to a :class:`ProblemKind`, which adds
  its arguments to its own sub-command and runs it;
- by strategy: :data:`STRATEGIES` maps a name (``smo``) to a :class:`StrategySpec`, a factory
  from the parsed arguments to a configured :class:`qpcore.Strategy`, for the problem kinds it
  serves; :func:`register_strategy` adds one, and it then joins ``--strategy``.

The built-in strategies are the entries of :data:`qpcore_strategies.registry.REGISTRY`, the one table of
names, options and factories that ``qpcore train``, the estimators and the benchmarks also read
(:func:`spec_of_entry`); their options become flags shared by the strategies that have them
(``--rule`` for ``smo`` and ``decomposition``), each defaulting to the strategy's own default.
The built-in entries are registered by :mod:`qpcore_cli.main`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from qpcore.core.problem import ProblemError
from qpcore.core.solve import Strategy
from qpcore_cli.common import CLIError
from qpcore_strategies.registry import REGISTRY, Entry, Option

__all__ = ["PROBLEMS", "STRATEGIES", "ProblemKind", "StrategySpec", "add_entry_options", "entry_options",
           "register_problem", "register_strategy", "spec_of_entry"]


@dataclass(frozen=True)
class StrategySpec:
    """A strategy that ``qpcore solve --strategy NAME`` can run.

    Attributes
    ----------
    factory : callable
        Parsed arguments → a configured strategy.
    help : str
        One line for ``--help``.
    problems : frozenset of str
        The problem kinds (keys of :data:`PROBLEMS`) it serves.
    add_arguments : callable, optional
        Adds the strategy's own options (to an argument group of each problem it serves).
    describe : callable, optional
        Parsed arguments → the strategy's settings, recorded in the JSON report.
    entry : qpcore_strategies.registry.Entry, optional
        The registry entry it was made from (:func:`spec_of_entry`): its options are offered as
        flags shared with the other entries that have them.
    """

    factory: Callable[[argparse.Namespace], Strategy]
    help: str
    problems: frozenset[str]
    add_arguments: Callable[[argparse._ArgumentGroup], None] | None = None
    describe: Callable[[argparse.Namespace], dict[str, Any]] | None = None
    entry: Entry | None = None


@dataclass(frozen=True)
class ProblemKind:
    """A problem kind that ``qpcore solve NAME`` builds, solves and reports.

    Attributes
    ----------
    help : str
        One line for ``--help``.
    add_arguments : callable
        Adds the kind's own arguments (data, model parameters) to its sub-command.
    run : callable
        Parsed arguments → exit status.
    default_strategy : str
        The ``--strategy`` default.
    default_tol : float
        The ``--tol`` default.
    """

    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    default_strategy: str
    default_tol: float = 1e-3


#: Strategy name → spec; ``--strategy`` offers the ones that serve the chosen problem kind.
STRATEGIES: dict[str, StrategySpec] = {}
#: Problem kind name → how to read, build, solve and report it (``qpcore solve NAME``).
PROBLEMS: dict[str, ProblemKind] = {}


def register_strategy(name: str, spec: StrategySpec) -> None:
    """Make ``spec`` available as ``--strategy name``.

    Parameters
    ----------
    name : str
        The option value.
    spec : StrategySpec
        Factory and metadata.
    """
    STRATEGIES[name] = spec


def register_problem(name: str, kind: ProblemKind) -> None:
    """Make ``kind`` available as ``qpcore solve name``.

    Parameters
    ----------
    name : str
        The sub-command.
    kind : ProblemKind
        Arguments and runner.
    """
    PROBLEMS[name] = kind


# --------------------------------------------------------------------------------------------
# Strategies from the one registry
# --------------------------------------------------------------------------------------------


def _dest(option: Option) -> str:
    return f"strategy_{option.name}"


def add_entry_options(group: argparse._ArgumentGroup, entries: Iterable[Entry]) -> None:
    """One flag per option name of ``entries`` (``--rule``, ``--q``, ``--shrinking/--no-shrinking``).

    A flag is shared by the entries that have the option; its default is None, read as each
    strategy's own default, and its value is checked by the strategy chosen
    (:func:`entry_options`).

    Parameters
    ----------
    group : argparse argument group
        Where the flags go.
    entries : iterable of Entry
        The strategies offered.
    """
    users: dict[str, list[tuple[Entry, Option]]] = {}
    for e in entries:
        for o in e.options:
            users.setdefault(o.name, []).append((e, o))
    for name, pairs in users.items():
        flag = "--" + name.replace("_", "-")
        text = "; ".join(f"{e.name}: {o.help} (default {o.default})" for e, o in pairs)
        first = pairs[0][1]
        if first.type is bool:
            group.add_argument(flag, dest=_dest(first), action=argparse.BooleanOptionalAction, default=None, help=text)
            continue
        choices: list[str] | None = []
        for _, o in pairs:
            if o.choices is None or choices is None:
                choices = None
            else:
                choices += [c for c in o.choices if c not in choices]
        metavar = "{" + ",".join(choices) + "}" if choices else name.upper()
        group.add_argument(flag, dest=_dest(first), default=None, metavar=metavar, help=text)


def entry_options(entry: Entry, args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``entry`` given on the command line (the others keep their defaults).

    Parameters
    ----------
    entry : Entry
        The chosen strategy.
    args : argparse.Namespace
        Parsed arguments with the flags of :func:`add_entry_options`.

    Returns
    -------
    dict
        Option name → value, converted to the option's type.

    Raises
    ------
    CLIError
        When a flag of another strategy was given, one that ``entry`` does not take, or a value
        does not convert.
    """
    stray = _others_given(entry, args)
    if stray:
        raise CLIError(f"{', '.join(stray)}: not an option of --strategy {entry.name} "
                       f"(its options: {', '.join('--' + o.name.replace('_', '-') for o in entry.options) or 'none'})")
    out: dict[str, Any] = {}
    for o in entry.options:
        value = vars(args).get(_dest(o))
        if value is not None:
            try:
                out[o.name] = o.convert(value)
            except ProblemError as exc:
                raise CLIError(f"--strategy {entry.name}: {exc}") from None
    return out


def _others_given(entry: Entry, args: argparse.Namespace) -> list[str]:
    """Flags of other strategies given on the command line, which ``entry`` does not take."""
    mine = {o.name for o in entry.options}
    names = {o.name for e in REGISTRY.values() for o in e.options}
    return ["--" + n.replace("_", "-") for n in sorted(names - mine) if vars(args).get(f"strategy_{n}") is not None]


def _build(entry: Entry, args: argparse.Namespace) -> Strategy:
    try:
        return entry.make(entry_options(entry, args))
    except ProblemError as exc:
        raise CLIError(f"--strategy {entry.name}: {exc}") from None


def _describe(entry: Entry, args: argparse.Namespace) -> dict[str, Any]:
    try:
        return entry.settings(entry_options(entry, args))
    except ProblemError as exc:
        raise CLIError(f"--strategy {entry.name}: {exc}") from None


def spec_of_entry(entry: Entry, problems: Iterable[str]) -> StrategySpec:
    """The ``--strategy`` spec of a registry entry, for the problem kinds ``problems``.

    Parameters
    ----------
    entry : Entry
        From :data:`qpcore_strategies.registry.REGISTRY`.
    problems : iterable of str
        The problem kinds it is offered for.

    Returns
    -------
    StrategySpec
    """
    return StrategySpec(factory=lambda args: _build(entry, args), help=entry.description,
                        problems=frozenset(problems), describe=lambda args: _describe(entry, args), entry=entry)
