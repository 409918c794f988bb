"""``qpcore solve svm`` (a C-SVC from LIBSVM-format files) and ``qpcore demo``.

``--time-limit`` bounds the whole ``qpcore solve svm`` command from its start
(:class:`qpcore_cli.common.Deadline`): the solve gets the time left, and the accuracy passes after
it (``--train-accuracy``, the test file) are cut or skipped at the deadline, as the report's
``skipped`` says. The γ used (given, or LIBSVM's default 1/n_features) is in the summary and the
report.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from importlib.resources import as_file, files
from typing import TYPE_CHECKING, Any, TextIO, cast

import numpy as np

from qpcore_formulations.data.svmlight import load_svmlight
from qpcore_formulations.svm import csvc
from qpcore import __version__
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.core.solve import Reporter, Strategy
from qpcore_cli.common import (
    AUTO_ROWS,
    SAMPLE_ROWS,
    CLIError,
    Deadline,
    check_writable,
    evaluate_rows,
    evaluation_rows,
    finish,
    finite_float,
    make_reporter,
    nonnegative_float,
    positive_float,
    positive_int,
    print_lines,
    result_fields,
    solve_accepted,
)
from qpcore_cli.data import load_train_test
from qpcore_cli.registry import STRATEGIES, ProblemKind
from qpcore_strategies.registry import REGISTRY, make

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from qpcore.backends.operators import KernelName

__all__ = ["DEMO_FEATURES", "DEMO_FILES", "SVM_PROBLEM", "SVMSettings", "add_svm_arguments",
           "load_train_test", "print_summary", "run_demo", "run_svm", "train_svm"]


# --------------------------------------------------------------------------------------------
# Training and reporting an SVM
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SVMSettings:
    """What a C-SVC run needs besides the data."""

    C: float
    kernel: str
    gamma: float
    degree: int
    coef0: float
    tol: float
    cache_mb: float
    max_iter: int | None
    time_limit: float | None
    strategy_name: str
    strategy: Strategy
    strategy_settings: dict[str, Any]
    #: ``--train-accuracy``: auto (on up to 20,000 rows), on, off, sample (5,000 seeded rows).
    train_accuracy: str = "on"
    #: Where γ came from: ``given`` or ``1/n_features`` (LIBSVM's default).
    gamma_source: str = "given"


def _accuracy(model: Any, X: Any, y: NDArray[np.float64], deadline: Deadline, what: str, mode: str = "on"
              ) -> tuple[float | None, dict[str, Any], list[str]]:
    """Accuracy of ``model`` on (X, y) in chunks while the deadline allows: (value, how, skipped)."""
    n = int(y.size)
    rows, info = evaluation_rows(n, mode, off_reason="off")
    if rows is None:
        return None, info, []
    outs, done = evaluate_rows(lambda Z: np.asarray(model.predict(Z)), X[rows] if rows.size < n else X, deadline)
    info["rows"] = done
    if n == 0:
        return float("nan"), info, []
    if done == 0:
        info["reason"] = "skipped: time limit"
        return None, info, [f"{what} (time limit)"]
    skipped = [] if done == rows.size else [f"{what} after {done:,} of {rows.size:,} rows (time limit)"]
    info["cut"] = bool(skipped)
    return float(np.mean(np.concatenate(outs) == y[rows[:done]])), info, skipped


def train_svm(X: Any, y: NDArray[np.float64], X_test: Any, y_test: NDArray[np.float64] | None,
              s: SVMSettings, reporter: Reporter | None, deadline: Deadline | None = None) -> dict[str, Any]:
    """Build the C-SVC dual, solve it, decode the model and evaluate it.

    Parameters
    ----------
    X, y : matrix, ndarray
        Training data and labels (two classes).
    X_test, y_test : matrix, ndarray or None
        Held-out data (same width), or None.
    s : SVMSettings
        Model and solver settings.
    reporter : Reporter or None
        Progress display.
    deadline : Deadline, optional
        The command's time budget (default: ``s.time_limit`` from now): the solve gets the time
        left, and the accuracy passes after it are cut or skipped at the deadline (the report's
        ``skipped`` says what).

    Returns
    -------
    dict
        The report (see ``qpcore solve svm --help``), JSON-ready.

    Raises
    ------
    CLIError
        When the data or settings do not make a valid problem.
    """
    t0 = time.perf_counter()
    if deadline is None:
        deadline = Deadline(s.time_limit, start=t0)
    try:
        kernel = Kernel(cast("KernelName", s.kernel), gamma=s.gamma, degree=s.degree, coef0=s.coef0)
        problem = csvc(X, y, C=s.C, kernel=kernel, cache_bytes=int(s.cache_mb * (1 << 20)))
        entry = REGISTRY.get(s.strategy_name)
        hint = (f" (the linear SVM it solves: qpcore train --strategy {entry.name} --kernel linear)"
                if entry is not None and entry.family == "linear" else "")
        t1 = time.perf_counter()
        result = solve_accepted(problem.qp, s.strategy, strategy_name=s.strategy_name, what="the C-SVC dual",
                                tol=s.tol, max_iter=s.max_iter, time_limit=deadline.solve_limit(), reporter=reporter,
                                hint=hint)
        t2 = time.perf_counter()
        model = problem.decode(result)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    t3 = time.perf_counter()
    qp = problem.qp
    train_acc, train_info, skipped = _accuracy(model, X, y, deadline, "training accuracy", s.train_accuracy)
    test_acc: float | None = None
    if y_test is not None:
        test_acc, _, cut = _accuracy(model, X_test, y_test, deadline, "test accuracy")
        skipped += cut
    t4 = time.perf_counter()
    report: dict[str, Any] = {
        "problem": "svm",
        "formulation": "C-SVC dual: min 1/2 a'Qa - e'a, 0 <= a <= C, y'a = 0",
        "n_train": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "n_test": None if y_test is None else int(y_test.shape[0]),
        "strategy": s.strategy_name,
        **s.strategy_settings,
        # what a delegating strategy (auto) ran, and why
        "strategy_used": result.stats.get("strategy", s.strategy_name),
        "strategy_choice": [list(c) for c in result.stats.get("strategy_choice", [])],
        "C": s.C,
        "kernel": s.kernel,
        # only the parameters the kernel uses (the others are null)
        "gamma": s.gamma if s.kernel in ("rbf", "poly", "sigmoid") else None,
        "gamma_source": s.gamma_source if s.kernel in ("rbf", "poly", "sigmoid") else None,
        "degree": s.degree if s.kernel == "poly" else None,
        "coef0": s.coef0 if s.kernel in ("poly", "sigmoid") else None,
        "tol": s.tol,
        "cache_mb": s.cache_mb,
        "max_iter": s.max_iter,
        "time_limit": s.time_limit,
        **result_fields(result, "gap"),
        "build_seconds": t1 - t0,
        "decode_seconds": t3 - t2,
        "evaluation_seconds": t4 - t3,
        "total_seconds": t4 - t0,
        "rows_computed": int(result.stats["rows_computed"]),
        "cache_hits": int(result.stats["cache_hits"]),
        "n_sv": int(model.n_sv),
        "n_bsv": int(np.count_nonzero((result.x >= qp.ub) & (result.x > 0))),
        "bias": float(model.bias),
        "train_accuracy": train_acc,
        "train_evaluation": train_info,
        "test_accuracy": test_acc,
        "skipped": skipped,
        "stats": result.stats,
        "qpcore_version": __version__,
    }
    return report


def _fmt_pct(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{100 * value:.2f} %"


def print_summary(report: dict[str, Any], out: TextIO | None = None) -> None:
    """Print a report as aligned ``name  value`` lines (plain ASCII).

    Parameters
    ----------
    report : dict
        As returned by :func:`train_svm`.
    out : file, optional
        stdout by default.
    """
    r = report
    lines = [
        ("status", f"{r['status']} ({r['status_message']})"),
        ("objective", f"{r['objective']:.10e}   (dual: 1/2 a'Qa - e'a)"),
        ("KKT gap", f"{r['gap']:.3e}   (maximal violating pair; tol {r['tol']:g})"),
        ("iterations", f"{r['iterations']}"),
        *[("strategy", f"{name} from iteration {it}: {why}") for it, name, why in r.get("strategy_choice", [])],
        ("time", f"{r['seconds']:.3f} s solve, {r['total_seconds']:.3f} s with building and decoding"),
        ("kernel rows", f"{r['rows_computed']} computed, {r['cache_hits']} cache hits"),
        ("support vectors", f"{r['n_sv']} of {r['n_train']} ({r['n_bsv']} at C)"),
        ("bias", f"{r['bias']:.6f}"),
    ]
    if r.get("gamma") is not None:
        src = r.get("gamma_source")
        lines.insert(0, ("kernel", f"{r['kernel']}, gamma {r['gamma']:.6g}"
                                   + (f" ({src})" if src not in (None, "given") else "")))
    ev = r.get("train_evaluation") or {"rows": 1, "sample": False, "cut": False}
    train = _fmt_pct(r["train_accuracy"])
    if ev["rows"] == 0:
        train = f"- ({ev.get('reason', 'skipped')})"
    elif ev["sample"]:
        train += f"   (seeded sample of {ev['rows']:,} of {ev['of']:,} rows)"
    elif ev["cut"]:
        train += f"   (first {ev['rows']:,} of {ev['of']:,} rows: time limit)"
    lines.append(("train accuracy", train))
    if r.get("n_test") is not None:
        lines.append(("test accuracy", f"{_fmt_pct(r['test_accuracy'])}   ({r['n_test']} held-out rows)"))
    if r.get("skipped"):
        lines.append(("skipped", "; ".join(r["skipped"])))
    print_lines(lines, out)


# --------------------------------------------------------------------------------------------
# qpcore demo
# --------------------------------------------------------------------------------------------

#: The bundled demo: RBF C-SVC on a 3,000-row subset of Adult, as in Platt's and LIBSVM's tables.
DEMO_FILES = ("adult_demo.trn.bz2", "adult_demo.tst.bz2")
#: The demo files' width (Adult's 123 binary features, numbered from 1).
DEMO_FEATURES = 123


def run_demo(args: argparse.Namespace) -> int:
    """``qpcore demo``: train an RBF C-SVC on the bundled Adult subset and evaluate it.

    The data are qpcore/data/adult_demo.{trn,tst}.bz2 (package data of ``qpcore``, so the demo
    works from an installed package): 3,000 training and 2,000 test rows drawn with
    ``numpy.random.default_rng(0)`` from the shared Adult files, written one-based;
    qpcore/data/README.md holds the script that made them (run once from the repository root,
    with ../shared/data beside it).

    Parameters
    ----------
    args : argparse.Namespace
        ``json`` and ``quiet``.

    Returns
    -------
    int
        Exit status 0.
    """
    folder = files("qpcore") / "data"
    with as_file(folder / DEMO_FILES[0]) as trn, as_file(folder / DEMO_FILES[1]) as tst:
        X, y = load_svmlight(trn, n_features=DEMO_FEATURES, zero_based=False)
        X_test, y_test = load_svmlight(tst, n_features=DEMO_FEATURES, zero_based=False)
    settings = SVMSettings(C=1.0, kernel="rbf", gamma=0.05, degree=3, coef0=0.0, tol=1e-3, cache_mb=200.0,
                           max_iter=None, time_limit=None, strategy_name="auto", strategy=make("auto"),
                           strategy_settings={})
    check_writable(args.json)
    quiet_stdout = args.json == "-"
    if not quiet_stdout:
        print(f"qpcore demo: RBF C-SVC (gamma=0.05, C=1) on {X.shape[0]} rows of UCI Adult "
              f"({X.shape[1]} binary features), strategy auto (SMO with LIBSVM's second-order working set while "
              "the free set is small), tol 1e-3",
              flush=True)
    report = train_svm(X, y, X_test, y_test, settings, make_reporter(args.quiet, settings.tol, "auto"))
    report["data"] = f"bundled:{DEMO_FILES[0]}"
    report["test"] = f"bundled:{DEMO_FILES[1]}"
    return finish(report, args, print_summary)


# --------------------------------------------------------------------------------------------
# qpcore solve svm
# --------------------------------------------------------------------------------------------


def add_svm_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``qpcore solve svm``'s data and model arguments to its parser.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The ``svm`` sub-command's parser.
    """
    data = p.add_argument_group("data")
    data.add_argument("--data", required=True, metavar="PATH",
                      help="training file, LIBSVM/SVMlight format (plain, .gz or .bz2); labels: two classes")
    data.add_argument("--test", metavar="PATH", help="held-out file in the same format (reports test accuracy)")
    data.add_argument("--n-features", type=positive_int, metavar="N",
                      help="number of features (default: the largest feature number in the training file)")
    data.add_argument("--index-base", choices=("auto", "0", "1"), default="auto",
                      help="feature numbering: auto (default: zero-based if the training file uses index 0, "
                           "the test file read the same way), 0, or 1")
    model = p.add_argument_group("model (C-SVC)")
    model.add_argument("-C", type=positive_float, default=1.0, help="box constraint C > 0 (default 1)")
    model.add_argument("--kernel", choices=("rbf", "linear", "poly", "sigmoid"), default="rbf",
                       help="kernel (default rbf)")
    model.add_argument("--gamma", type=positive_float, metavar="G",
                       help="rbf/poly/sigmoid gamma (default 1/n_features, as LIBSVM)")
    model.add_argument("--degree", type=positive_int, default=3, metavar="D", help="poly degree (default 3)")
    model.add_argument("--coef0", type=finite_float, default=0.0, metavar="R", help="poly/sigmoid coef0 (default 0)")
    model.add_argument("--cache-mb", type=nonnegative_float, default=200.0, metavar="M",
                       help="kernel row cache budget in MiB (default 200)")
    p.add_argument("--train-accuracy", choices=("auto", "on", "off", "sample"), default="auto",
                   help=f"the pass over the training data after the solve: auto (default: on up to {AUTO_ROWS:,} "
                        f"rows, off above), on, off, or sample (a seeded sample of {SAMPLE_ROWS:,} rows); "
                        "under --time-limit it and the test accuracy are cut at the deadline")


def run_svm(args: argparse.Namespace) -> int:
    """``qpcore solve svm``: read, build the C-SVC dual, solve, report.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``qpcore solve svm`` arguments.

    Returns
    -------
    int
        Exit status 0 (a result was produced; its status is in the report).

    Raises
    ------
    CLIError
        On bad input (reported by :func:`qpcore_cli.main` as one line, status 2).
    """
    deadline = Deadline(args.time_limit)
    spec = STRATEGIES[args.strategy]
    check_writable(args.json)
    X, y, X_test, y_test, train_width = load_train_test(args.data, args.test, args.n_features, args.index_base)
    source = "given"
    if args.gamma is not None:
        gamma = args.gamma
    elif args.kernel == "linear":
        gamma = 1.0
    elif train_width < 1:
        raise CLIError(f"training file {args.data!r} has no features; pass --gamma or --n-features")
    else:
        gamma = 1.0 / train_width
        source = "1/n_features"
    try:
        strategy = spec.factory(args)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    settings = SVMSettings(C=args.C, kernel=args.kernel, gamma=gamma, degree=args.degree, coef0=args.coef0,
                           tol=args.tol, cache_mb=args.cache_mb, max_iter=args.max_iter,
                           time_limit=args.time_limit, strategy_name=args.strategy, strategy=strategy,
                           strategy_settings=spec.describe(args) if spec.describe is not None else {},
                           train_accuracy=args.train_accuracy, gamma_source=source)
    rule = settings.strategy_settings.get("rule")
    label = args.strategy if rule is None else f"{args.strategy} ({rule})"
    report = train_svm(X, y, X_test, y_test, settings, make_reporter(args.quiet, args.tol, label), deadline)
    report["data"] = args.data
    report["test"] = args.test
    # from the command's start, reading included: what --time-limit bounds
    report["command_seconds"] = time.perf_counter() - deadline.start
    return finish(report, args, print_summary)


#: ``qpcore solve svm``: the C-SVC dual from a LIBSVM-format file, strategy auto by default.
SVM_PROBLEM = ProblemKind(
    help="C-SVC dual (two classes) from a LIBSVM-format file", add_arguments=add_svm_arguments,
    run=run_svm, default_strategy="auto")
