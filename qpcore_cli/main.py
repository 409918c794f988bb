"""The ``qpcore`` command line: ``qpcore demo``, ``qpcore solve <problem> ...``, ``train`` and ``predict``.

This module builds the parser from the registries (:mod:`qpcore_cli.registry`), registers the
built-in problem kinds and strategies, and dispatches.  ``qpcore solve`` is extensible in two
directions: :func:`~qpcore_cli.registry.register_problem` adds a problem kind (its own
sub-command) and :func:`~qpcore_cli.registry.register_strategy` adds a strategy (it then joins
``--strategy`` for the kinds it serves).

Usage errors and bad input files exit with status 2 and one line ``qpcore: error: ...`` on
stderr, never a traceback.  Progress goes to stderr (a live display with ``rich`` when it is
installed and stderr is a terminal, else plain lines; ``--quiet`` silences it), results to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from qpcore import __version__
from qpcore_cli.libsvm_options import libsvm_argv
from qpcore_cli.common import PROG, CLIError, Parser, nonnegative_int, positive_float
from qpcore_cli.qp import NNLS_PROBLEM, QP_PROBLEM
from qpcore_cli.registry import PROBLEMS, STRATEGIES, add_entry_options, register_problem, register_strategy, spec_of_entry
from qpcore_cli.svm import SVM_PROBLEM, run_demo
from qpcore_formulations.formulation import FORMULATIONS
from qpcore_strategies.registry import REGISTRY
from qpcore_cli.predict import PREDICT_EPILOG, add_predict_arguments, run_predict
from qpcore_cli.train import EXIT_EPILOG, add_train_arguments, run_train

__all__ = ["build_parser", "main"]

# the built-in entries, in the order --help lists them: every strategy of the one registry is
# offered for every problem kind, and one that cannot take the problem built says why (exit 2)
register_problem("svm", SVM_PROBLEM)
register_problem("qp", QP_PROBLEM)
register_problem("nnls", NNLS_PROBLEM)
for _name, _entry in REGISTRY.items():
    register_strategy(_name, spec_of_entry(_entry, ("svm", "qp", "nnls")))


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="OUT",
                   help="write the report as one JSON object to OUT ('-': stdout, instead of the summary)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")


def build_parser() -> argparse.ArgumentParser:
    """The full ``qpcore`` argument parser, built from ``PROBLEMS`` and ``STRATEGIES``.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = Parser(prog=PROG, description="Convex QPs with pluggable strategies: SVM duals, box QPs, NNLS.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser("demo", help="train an RBF SVM on a bundled Adult subset (a few seconds)",
                          description="Train an RBF C-SVC (gamma=0.05, C=1, tol 1e-3) with SMO on 3,000 rows "
                                      "of UCI Adult bundled with qpcore; report the solve and held-out accuracy.")
    _add_output_arguments(demo)
    demo.set_defaults(func=run_demo)

    # add_help=False: -h is svm-train's shrinking switch (add_train_arguments adds --help)
    train = sub.add_parser("train", add_help=False,
                           help="train an SVM from a LIBSVM-format file and write a model file (svm-train)",
                           description="Train a registered formulation (--type: LIBSVM's five, c-svc, nu-svc, "
                                       "one-class, epsilon-svr, nu-svr, svm-train's -s 0..4, and "
                                       f"{', '.join(f.name for f in FORMULATIONS.values() if f.libsvm_type is None)}) "
                                       "with a kernel strategy (smo, decomposition, incas, gpcg, active-set), or a "
                                       "linear C-SVC (asvm, ocas, ocas-active, bmrm), from a LIBSVM-format file; "
                                       "write the model file (docs/model-format.md). svm-train's short options work "
                                       "as in svm-train (table below; docs/getting-started.md).",
                           epilog=EXIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_train_arguments(train)
    _add_output_arguments(train)
    train.set_defaults(func=run_train)

    predict = sub.add_parser("predict", help="predict labels of a LIBSVM-format file with a model file (svm-predict)",
                             description="Read a model file written by 'qpcore train', write one predicted label "
                                         "(a regression: value) per line, report accuracy (a regression: "
                                         "svm-predict's mean squared error and squared correlation).",
                             epilog=PREDICT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_predict_arguments(predict)
    _add_output_arguments(predict)
    predict.set_defaults(func=run_predict)

    solve = sub.add_parser("solve", help="solve a problem read from files",
                           description="Build a QP from data, solve it with a strategy, report the "
                                       "solution's certificate and (for models) accuracy.")
    kinds = solve.add_subparsers(dest="problem", metavar="PROBLEM", required=True)
    for name, kind in PROBLEMS.items():
        served = [s for s, spec in STRATEGIES.items() if name in spec.problems]
        p = kinds.add_parser(name, help=kind.help, description=kind.help)
        kind.add_arguments(p)
        solver = p.add_argument_group("solver")
        solver.add_argument("--strategy", choices=served, default=kind.default_strategy,
                            help="; ".join(f"{s}: {STRATEGIES[s].help}" for s in served))
        solver.add_argument("--tol", type=positive_float, default=kind.default_tol, metavar="T",
                            help=f"stopping tolerance on the KKT measure (default {kind.default_tol:g})")
        solver.add_argument("--max-iter", type=nonnegative_int, metavar="K", help="iteration limit")
        solver.add_argument("--time-limit", type=positive_float, metavar="S",
                            help="time limit of the whole command in seconds, from its start: the solve gets "
                                 "the time left (svm: the accuracy passes after it are cut at the limit, as "
                                 "the report's 'skipped' says)")
        entries = [e for e in (STRATEGIES[s].entry for s in served) if e is not None]
        if entries:
            add_entry_options(p.add_argument_group("strategy options (each strategy's own default when not given)"),
                              entries)
        for s in served:
            add = STRATEGIES[s].add_arguments
            if add is not None:
                add(p.add_argument_group(f"{s} options"))
        _add_output_arguments(p)
        p.set_defaults(func=kind.run)
    return parser


def _one_line(message: str) -> str:
    return " ".join(message.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (``sys.argv[1:]`` when omitted).

    Returns
    -------
    int
        Exit status: 2 on a usage error or a bad input file (one line ``qpcore: error: ...`` on
        stderr), 130 when interrupted. Otherwise ``demo`` and ``solve`` exit 0 when a result was
        produced (its status is in the report); ``train`` exits 0 when every binary problem
        converged, else the code of the worst status (3 max_iter, 4 time_limit, 5 stalled,
        6 unbounded, ...: :data:`qpcore_cli.train.EXIT_CODES`); ``predict`` exits 0.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(libsvm_argv(sys.argv[1:] if argv is None else argv))
        status: int = args.func(args)
        return status
    except CLIError as exc:
        print(f"{PROG}: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader (e.g. `| head`) went away: not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0
