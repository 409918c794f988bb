"""The ``qpcore`` command line: the application layer on top of qpcore, strategies and problems.

``qpcore demo``, ``qpcore train`` / ``qpcore predict`` and ``qpcore solve <problem> ...`` (also
``python -m qpcore_cli``). This package
is the one place that imports from all three packages; ``qpcore`` itself imports none of it.

Modules
-------
main
    The parser, the dispatch and the built-in registrations.
registry
    :data:`PROBLEMS` and :data:`STRATEGIES`, and how to add to them.
common
    Errors, argument types, progress reporters, one solve and its report, the JSON report.
data
    Reading LIBSVM-format files.
svm
    ``qpcore solve svm`` and ``qpcore demo``.
qp
    ``qpcore solve qp`` and ``qpcore solve nnls``.
train
    ``qpcore train`` (LIBSVM's svm-train habits, every registered formulation and strategy, many
    classes, exit statuses by how the run ended), with ``job`` (what it trains), ``progress``
    (its display), ``crossval`` (``-v``) and ``libsvm_options``; ``predict``: ``qpcore predict``.
model
    The model file: a versioned, documented ``.npz`` without pickles (docs/model-format.md).
"""

from qpcore_cli.common import CLIError, RichReporter, make_reporter
from qpcore_cli.main import build_parser, main
from qpcore_cli.registry import PROBLEMS, STRATEGIES, ProblemKind, StrategySpec, register_problem, register_strategy

__all__ = ["PROBLEMS", "STRATEGIES", "CLIError", "ProblemKind", "RichReporter", "StrategySpec", "build_parser",
           "main", "make_reporter", "register_problem", "register_strategy"]
