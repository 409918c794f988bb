"""What ``qpcore solve`` can build and run: the problem-kind and strategy registries.

``qpcore solve`` is extensible in two directions:

- by problem kind: :data:`PROBLEMS` maps a name (``svm``) to a :class:`ProblemKind`, which adds
  its arguments to its own sub-command and runs it;
- by strategy: :data:`STRATEGIES` maps a name (``smo``) to a :class:`StrategySpec`, a factory
  from the parsed arguments to a configured :class:`qpcore.Strategy`, for the problem kinds it
  serves; :func:`register_strategy` adds one, and it then joins ``--strategy``.

The built-in entries are registered by :mod:`qpcore_cli.main`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qpcore.solve import Strategy

__all__ = ["PROBLEMS", "STRATEGIES", "ProblemKind", "StrategySpec", "register_problem", "register_strategy"]


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
    """

    factory: Callable[[argparse.Namespace], Strategy]
    help: str
    problems: frozenset[str]
    add_arguments: Callable[[argparse._ArgumentGroup], None] | None = None
    describe: Callable[[argparse.Namespace], dict[str, Any]] | None = None


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
