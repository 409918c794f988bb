"""The ``qpcore`` command line: ``qpcore demo`` and ``qpcore solve <problem> ...``.

``qpcore solve`` is extensible in two directions:

- by problem kind: :data:`PROBLEMS` maps a name (``svm``) to a :class:`ProblemKind`, which adds
  its arguments to its own sub-command and runs it;
- by strategy: :data:`STRATEGIES` maps a name (``smo``) to a :class:`StrategySpec`, a factory
  from the parsed arguments to a configured :class:`qpcore.Strategy`, for the problem kinds it
  serves; :func:`register_strategy` adds one, and it then joins ``--strategy``.

Usage errors and bad input files exit with status 2 and one line ``qpcore: error: ...`` on
stderr, never a traceback.  Progress goes to stderr (a live display with ``rich`` when it is
installed and stderr is a terminal, else plain lines; ``--quiet`` silences it), results to stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, cast

import numpy as np

from qpcore.problem import ProblemError
from qpcore.solve import PrintReporter, Progress, Reporter, Strategy
from qpcore.state import Result, Status

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from qpcore.operators import KernelName

PROG = "qpcore"

__all__ = ["PROBLEMS", "STRATEGIES", "CLIError", "ProblemKind", "RichReporter", "StrategySpec", "main",
           "make_reporter", "register_problem", "register_strategy"]


class CLIError(Exception):
    """A usage or input error: reported as one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors become :class:`CLIError` (one line, no usage dump)."""

    def error(self, message: str) -> NoReturn:
        """Raise instead of printing the usage and exiting."""
        raise CLIError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------------------------
# Registries
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Argument types (each bad value is one clear line)
# --------------------------------------------------------------------------------------------


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _nonnegative_float(text: str) -> float:
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def _nonnegative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


# --------------------------------------------------------------------------------------------
# Progress display
# --------------------------------------------------------------------------------------------


class RichReporter:
    """A live progress display on a terminal, with ``rich``.

    Shows a bar from the first KKT gap seen down to ``tol`` (log scale), the iteration, the
    objective and the gap; on ``finish`` the final status line stays on screen.

    Parameters
    ----------
    tol : float
        The stopping tolerance (the bar's end).
    stream : file, optional
        Where to draw (stderr by default).
    label : str
        Shown before the bar (the strategy).
    interval : float
        Seconds between updates.
    """

    def __init__(self, tol: float, stream: TextIO | None = None, label: str = "solving",
                 interval: float = 0.2) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        self.interval = interval
        self.tol = tol
        self._console: Any = Console(file=stream if stream is not None else sys.stderr)
        self._progress: Any = RichProgress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
            TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=self._console)
        self._task: Any = self._progress.add_task(label, total=1.0, info="starting", start=True)
        self._gap0: float | None = None
        self._started = False

    def _fraction(self, gap: float) -> float:
        g0 = self._gap0
        if g0 is None or not math.isfinite(gap) or gap <= self.tol or g0 <= self.tol:
            return 1.0 if gap <= self.tol else 0.0
        if gap >= g0:
            return 0.0
        return min(1.0, max(0.0, math.log(g0 / gap) / math.log(g0 / self.tol)))

    def update(self, progress: Progress) -> None:
        """Redraw with a new snapshot."""
        if not self._started:
            self._progress.start()
            self._started = True
        gap = progress.gap
        if self._gap0 is None and math.isfinite(gap) and gap > 0:
            self._gap0 = gap
        info = f"iter {progress.iteration:>8d}  obj {progress.objective: .8e}  gap {gap:.2e}"
        self._progress.update(self._task, completed=self._fraction(gap), info=info)

    def finish(self, result: Result) -> None:
        """Close the display and print the final status line."""
        info = (f"iter {result.iterations:>8d}  obj {result.objective: .8e}  "
                f"gap {result.kkt.measure:.2e}")
        done = 1.0 if result.status is Status.CONVERGED else self._fraction(result.kkt.measure)
        self._progress.update(self._task, completed=done, info=info)
        if self._started:
            self._progress.stop()
        self._console.print(f"{result.status.code}: {result.status.message}")


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def make_reporter(quiet: bool, tol: float, label: str = "solving", stream: TextIO | None = None
                  ) -> Reporter | None:
    """The progress reporter for a run.

    Parameters
    ----------
    quiet : bool
        No progress at all.
    tol : float
        The stopping tolerance (for the live display's bar).
    label : str
        Name shown in the live display.
    stream : file, optional
        Where progress goes (stderr by default).

    Returns
    -------
    Reporter or None
        ``None`` when quiet; a :class:`RichReporter` when ``rich`` is importable and the stream
        is a terminal; else a :class:`qpcore.PrintReporter` (a plain line every 0.5 s).
    """
    if quiet:
        return None
    out = stream if stream is not None else sys.stderr
    if _isatty(out):
        try:
            return RichReporter(tol, out, label)
        except ImportError:
            pass
    return PrintReporter(interval=0.5, stream=out)


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


def _smo_factory(args: argparse.Namespace) -> Strategy:
    from strategies.smo import SMO

    strategy: Strategy = SMO(rule=args.rule, shrinking=not args.no_shrinking)
    return strategy


def _smo_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--rule", choices=("wss2", "mvp", "platt"), default="wss2",
                       help="working-set rule: LIBSVM's second order (wss2, default), maximal "
                            "violating pair (mvp), Platt's heuristics (platt)")
    group.add_argument("--no-shrinking", action="store_true", help="do not shrink the active set")


def _smo_describe(args: argparse.Namespace) -> dict[str, Any]:
    return {"rule": args.rule, "shrinking": not args.no_shrinking}


register_strategy("smo", StrategySpec(
    factory=_smo_factory, help="sequential minimal optimization (Platt; LIBSVM's WSS2 by default)",
    problems=frozenset({"svm"}), add_arguments=_smo_arguments, describe=_smo_describe))


# --------------------------------------------------------------------------------------------
# Reading data
# --------------------------------------------------------------------------------------------


def _read_svmlight(path: str, role: str, zero_based: bool) -> tuple[Any, NDArray[np.float64]]:
    """Read a LIBSVM file, turning every failure into a one-line :class:`CLIError`."""
    from problems.datasets import DataFormatError, load_svmlight

    if os.path.isdir(path):
        raise CLIError(f"{role} file {path!r} is a directory")
    if not os.path.exists(path):
        raise CLIError(f"{role} file {path!r} not found")
    try:
        return load_svmlight(path, zero_based=zero_based)
    except DataFormatError as exc:
        raise CLIError(f"{role} file: {exc}") from None
    except OSError as exc:
        raise CLIError(f"cannot read {role} file {path!r}: {exc.strerror or exc}") from None
    except (ValueError, EOFError, MemoryError) as exc:
        raise CLIError(f"cannot read {role} file {path!r}: {exc}") from None


def _with_width(X: Any, width: int) -> Any:
    """X padded with empty columns to ``width`` (CSR or dense)."""
    import scipy.sparse as sp

    if X.shape[1] == width:
        return X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
    return np.pad(np.asarray(X), ((0, 0), (0, width - X.shape[1])))


def _drop_first_column(X: Any) -> Any:
    """The CSR ``X`` without its (empty) column 0: one-based indices read as zero-based."""
    import scipy.sparse as sp

    X = sp.csr_matrix(X)
    return sp.csr_matrix((X.data, X.indices - 1, X.indptr), shape=(X.shape[0], max(0, X.shape[1] - 1)))


def load_train_test(data: str, test: str | None, n_features: int | None, index_base: str
                    ) -> tuple[Any, NDArray[np.float64], Any, NDArray[np.float64] | None, int]:
    """Read the training (and test) file with one numbering and one width.

    Parameters
    ----------
    data, test : str
        Paths (plain, gzip or bzip2); ``test`` may be None.
    n_features : int, optional
        Width; an index beyond it is an error.
    index_base : {"auto", "0", "1"}
        Feature numbering. ``auto``: zero-based if the *training* file uses index 0, else one-based,
        and the test file is read the same way (so the two can never be numbered differently).

    Returns
    -------
    X, y, X_test, y_test, train_width
        Training and test data of equal width, and the training file's own width (its
        largest feature number, or ``n_features``), the LIBSVM base of the default gamma.
    """
    if index_base == "auto":
        X, y = _read_svmlight(data, "training", zero_based=True)
        zero_based = bool((X.indices == 0).any())
        if not zero_based:
            X = _drop_first_column(X)
    else:
        zero_based = index_base == "0"
        X, y = _read_svmlight(data, "training", zero_based=zero_based)
    X_test = y_test = None
    if test is not None:
        if index_base == "auto" and not zero_based:
            X_test, y_test = _read_svmlight(test, "test", zero_based=True)
            if (X_test.indices == 0).any():
                raise CLIError(f"test file {test!r} uses feature index 0 but the training file {data!r} does not; "
                               "pass --index-base 0 or 1")
            X_test = _drop_first_column(X_test)
        else:
            X_test, y_test = _read_svmlight(test, "test", zero_based=zero_based)
    train_width = int(X.shape[1]) if n_features is None else n_features
    width = train_width
    for M, path in ((X, data), (X_test, test)):
        if M is not None and M.shape[1] > width:
            if n_features is not None:
                raise CLIError(f"{path!r} has {M.shape[1]} features, more than --n-features {n_features}")
            width = int(M.shape[1])
    X = _with_width(X, width)
    if X_test is not None:
        X_test = _with_width(X_test, width)
    return X, y, X_test, y_test, train_width


def _check_writable(path: str | None) -> None:
    """Fail before the solve, not after it, when the JSON report cannot be written."""
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise CLIError(f"--json {path!r} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CLIError(f"--json {path!r}: folder {parent!r} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CLIError(f"--json {path!r}: not writable")


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


def _accuracy(model: Any, X: Any, y: NDArray[np.float64]) -> float:
    return float(np.mean(np.asarray(model.predict(X)) == y)) if y.size else float("nan")


def train_svm(X: Any, y: NDArray[np.float64], X_test: Any, y_test: NDArray[np.float64] | None,
              s: SVMSettings, reporter: Reporter | None) -> dict[str, Any]:
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

    Returns
    -------
    dict
        The report (see ``qpcore solve svm --help``), JSON-ready.
    """
    from problems.svm import csvc

    from qpcore import __version__
    from qpcore.operators import Kernel

    t0 = time.perf_counter()
    try:
        kernel = Kernel(cast("KernelName", s.kernel), gamma=s.gamma, degree=s.degree, coef0=s.coef0)
        problem = csvc(X, y, C=s.C, kernel=kernel, cache_bytes=int(s.cache_mb * (1 << 20)))
        t1 = time.perf_counter()
        from qpcore.solve import solve

        result = solve(problem.qp, s.strategy, tol=s.tol, max_iter=s.max_iter, time_limit=s.time_limit,
                       reporter=reporter)
        t2 = time.perf_counter()
        model = problem.decode(result)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    t3 = time.perf_counter()
    qp = problem.qp
    report: dict[str, Any] = {
        "problem": "svm",
        "formulation": "C-SVC dual: min 1/2 a'Qa - e'a, 0 <= a <= C, y'a = 0",
        "n_train": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "n_test": None if y_test is None else int(y_test.shape[0]),
        "strategy": s.strategy_name,
        **s.strategy_settings,
        "C": s.C,
        "kernel": s.kernel,
        # only the parameters the kernel uses (the others are null)
        "gamma": s.gamma if s.kernel in ("rbf", "poly", "sigmoid") else None,
        "degree": s.degree if s.kernel == "poly" else None,
        "coef0": s.coef0 if s.kernel in ("poly", "sigmoid") else None,
        "tol": s.tol,
        "cache_mb": s.cache_mb,
        "max_iter": s.max_iter,
        "time_limit": s.time_limit,
        "status": result.status.code,
        "status_message": result.status.message,
        "converged": result.status is Status.CONVERGED,
        "objective": result.objective,
        "gap": result.kkt.gap,
        "kkt_measure": result.kkt.measure,
        "primal_infeasibility": result.kkt.primal,
        "iterations": result.iterations,
        "seconds": float(result.stats["seconds"]),
        "build_seconds": t1 - t0,
        "decode_seconds": t3 - t2,
        "total_seconds": t3 - t0,
        "rows_computed": int(result.stats["rows_computed"]),
        "cache_hits": int(result.stats["cache_hits"]),
        "n_sv": int(model.n_sv),
        "n_bsv": int(np.count_nonzero((result.x >= qp.ub) & (result.x > 0))),
        "bias": float(model.bias),
        "train_accuracy": _accuracy(model, X, y),
        "test_accuracy": None if y_test is None else _accuracy(model, X_test, y_test),
        "stats": result.stats,
        "qpcore_version": __version__,
    }
    return report


def _jsonable(value: Any) -> Any:
    """Plain JSON: numpy scalars to Python, NaN/inf to null (strict JSON has neither)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)


def write_json(report: dict[str, Any], path: str) -> None:
    """Write ``report`` as one JSON object to ``path`` (``-``: stdout)."""
    text = json.dumps(_jsonable(report), indent=2, allow_nan=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise CLIError(f"cannot write --json {path!r}: {exc.strerror or exc}") from None


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
        ("time", f"{r['seconds']:.3f} s solve, {r['total_seconds']:.3f} s with building and decoding"),
        ("kernel rows", f"{r['rows_computed']} computed, {r['cache_hits']} cache hits"),
        ("support vectors", f"{r['n_sv']} of {r['n_train']} ({r['n_bsv']} at C)"),
        ("bias", f"{r['bias']:.6f}"),
        ("train accuracy", _fmt_pct(r["train_accuracy"])),
    ]
    if r.get("n_test") is not None:
        lines.append(("test accuracy", f"{_fmt_pct(r['test_accuracy'])}   ({r['n_test']} held-out rows)"))
    stream = out if out is not None else sys.stdout
    for name, value in lines:
        print(f"{name:<16} {value}", file=stream)
    stream.flush()


# --------------------------------------------------------------------------------------------
# Sub-commands
# --------------------------------------------------------------------------------------------

#: The bundled demo: RBF C-SVC on a 3,000-row subset of Adult, as in Platt's and LIBSVM's tables.
DEMO_FILES = ("adult_demo.trn.bz2", "adult_demo.tst.bz2")
DEMO_FEATURES = 123


def run_demo(args: argparse.Namespace) -> int:
    """``qpcore demo``: train an RBF C-SVC on the bundled Adult subset and evaluate it.

    The data are qpcore/data/adult_demo.{trn,tst}.bz2: 3,000 training and 2,000 test rows
    drawn with ``numpy.random.default_rng(0)`` from the shared Adult files, written one-based;
    qpcore/data/README.md holds the script that made them (run once from the repository root,
    with ../shared/data beside it).
    """
    from importlib.resources import as_file, files

    from problems.datasets import load_svmlight

    folder = files("qpcore") / "data"
    with as_file(folder / DEMO_FILES[0]) as trn, as_file(folder / DEMO_FILES[1]) as tst:
        X, y = load_svmlight(trn, n_features=DEMO_FEATURES, zero_based=False)
        X_test, y_test = load_svmlight(tst, n_features=DEMO_FEATURES, zero_based=False)
    settings = SVMSettings(C=1.0, kernel="rbf", gamma=0.05, degree=3, coef0=0.0, tol=1e-3, cache_mb=200.0,
                           max_iter=None, time_limit=None, strategy_name="smo",
                           strategy=_smo_factory(argparse.Namespace(rule="wss2", no_shrinking=False)),
                           strategy_settings={"rule": "wss2", "shrinking": True})
    _check_writable(args.json)
    quiet_stdout = args.json == "-"
    if not quiet_stdout:
        print(f"qpcore demo: RBF C-SVC (gamma=0.05, C=1) on {X.shape[0]} rows of UCI Adult "
              f"({X.shape[1]} binary features), SMO with LIBSVM's second-order working set, tol 1e-3",
              flush=True)
    report = train_svm(X, y, X_test, y_test, settings, make_reporter(args.quiet, settings.tol, "SMO (wss2)"))
    report["data"] = f"bundled:{DEMO_FILES[0]}"
    report["test"] = f"bundled:{DEMO_FILES[1]}"
    if not quiet_stdout:
        print_summary(report)
    if args.json is not None:
        write_json(report, args.json)
    return 0


def _add_svm_arguments(p: argparse.ArgumentParser) -> None:
    data = p.add_argument_group("data")
    data.add_argument("--data", required=True, metavar="PATH",
                      help="training file, LIBSVM/SVMlight format (plain, .gz or .bz2); labels: two classes")
    data.add_argument("--test", metavar="PATH", help="held-out file in the same format (reports test accuracy)")
    data.add_argument("--n-features", type=_positive_int, metavar="N",
                      help="number of features (default: the largest feature number in the training file)")
    data.add_argument("--index-base", choices=("auto", "0", "1"), default="auto",
                      help="feature numbering: auto (default: zero-based if the training file uses index 0, "
                           "the test file read the same way), 0, or 1")
    model = p.add_argument_group("model (C-SVC)")
    model.add_argument("-C", type=_positive_float, default=1.0, help="box constraint C > 0 (default 1)")
    model.add_argument("--kernel", choices=("rbf", "linear", "poly", "sigmoid"), default="rbf",
                       help="kernel (default rbf)")
    model.add_argument("--gamma", type=_positive_float, metavar="G",
                       help="rbf/poly/sigmoid gamma (default 1/n_features, as LIBSVM)")
    model.add_argument("--degree", type=_positive_int, default=3, metavar="D", help="poly degree (default 3)")
    model.add_argument("--coef0", type=_float, default=0.0, metavar="R", help="poly/sigmoid coef0 (default 0)")
    model.add_argument("--cache-mb", type=_nonnegative_float, default=200.0, metavar="M",
                       help="kernel row cache budget in MiB (default 200)")


def run_svm(args: argparse.Namespace) -> int:
    """``qpcore solve svm``: read, build the C-SVC dual, solve, report."""
    spec = STRATEGIES[args.strategy]
    _check_writable(args.json)
    X, y, X_test, y_test, train_width = load_train_test(args.data, args.test, args.n_features, args.index_base)
    if args.gamma is not None:
        gamma = args.gamma
    elif args.kernel == "linear":
        gamma = 1.0
    elif train_width < 1:
        raise CLIError(f"training file {args.data!r} has no features; pass --gamma or --n-features")
    else:
        gamma = 1.0 / train_width
    try:
        strategy = spec.factory(args)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    settings = SVMSettings(C=args.C, kernel=args.kernel, gamma=gamma, degree=args.degree, coef0=args.coef0,
                           tol=args.tol, cache_mb=args.cache_mb, max_iter=args.max_iter,
                           time_limit=args.time_limit, strategy_name=args.strategy, strategy=strategy,
                           strategy_settings=spec.describe(args) if spec.describe is not None else {})
    label = args.strategy if "rule" not in settings.strategy_settings else f"{args.strategy} ({args.rule})"
    report = train_svm(X, y, X_test, y_test, settings, make_reporter(args.quiet, args.tol, label))
    report["data"] = args.data
    report["test"] = args.test
    if args.json != "-":
        print_summary(report)
    if args.json is not None:
        write_json(report, args.json)
    return 0


register_problem("svm", ProblemKind(
    help="C-SVC dual (two classes) from a LIBSVM-format file", add_arguments=_add_svm_arguments,
    run=run_svm, default_strategy="smo"))


# --------------------------------------------------------------------------------------------
# Generic QPs and NNLS from .npz files
# --------------------------------------------------------------------------------------------


def _gpcg_factory(args: argparse.Namespace) -> Strategy:
    from strategies.gradient_projection import GPCG

    strategy: Strategy = GPCG()
    return strategy


register_strategy("gpcg", StrategySpec(
    factory=_gpcg_factory, help="Moré–Toraldo gradient projection + conjugate gradients (box, ≤ 1 equality)",
    problems=frozenset({"qp", "nnls", "svm"})))


def read_npz(path: str, required: Sequence[str], optional: Sequence[str] = ()) -> dict[str, NDArray[Any]]:
    """Read named arrays from a ``.npz`` file (no pickles), with one clear error per problem.

    Parameters
    ----------
    path : str
        The file.
    required, optional : sequence of str
        Array names that must / may be present.

    Returns
    -------
    dict
        Name → array for every required name and every optional one present.
    """
    try:
        with np.load(path, allow_pickle=False) as f:
            names = set(f.files)
            missing = [k for k in required if k not in names]
            if missing:
                raise CLIError(f"--npz {path!r}: missing array(s) {', '.join(missing)} "
                               f"(found: {', '.join(sorted(names)) or 'none'})")
            return {k: np.asarray(f[k]) for k in (*required, *optional) if k in names}
    except CLIError:
        raise
    except FileNotFoundError:
        raise CLIError(f"--npz {path!r}: no such file") from None
    except (OSError, ValueError) as exc:
        raise CLIError(f"--npz {path!r}: not a readable .npz of plain arrays ({exc})") from None


def _add_npz_arguments(names: str) -> Callable[[argparse.ArgumentParser], None]:
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("--npz", required=True, metavar="FILE", help=f"numpy .npz file with arrays {names}")
    return add


def _add_nnls_arguments(p: argparse.ArgumentParser) -> None:
    _add_npz_arguments("A (m×n), d (m)")(p)
    p.add_argument("--backend", choices=("auto", "dense", "gram"), default="auto",
                   help="Q = AᵀA formed (dense) or applied as Aᵀ(Av) (gram); auto picks by shape")


def solve_report(qp: Any, strategy: Strategy, args: argparse.Namespace, label: str) -> tuple[Result, dict[str, Any]]:
    """Solve ``qp`` with the CLI's limits and reporter; the report fields every kind shares."""
    from qpcore import __version__
    from qpcore.solve import solve

    result = solve(qp, strategy, tol=args.tol, max_iter=args.max_iter, time_limit=args.time_limit,
                   reporter=make_reporter(args.quiet, args.tol, label))
    report: dict[str, Any] = {
        "strategy": args.strategy,
        "n": int(qp.n),
        "m_equality": int(qp.m),
        "tol": args.tol,
        "max_iter": args.max_iter,
        "time_limit": args.time_limit,
        "status": result.status.code,
        "status_message": result.status.message,
        "converged": result.status is Status.CONVERGED,
        "objective": result.objective,
        "kkt_measure": result.kkt.measure,
        "stationarity": result.kkt.stationarity,
        "primal_infeasibility": result.kkt.primal,
        "iterations": result.iterations,
        "seconds": float(result.stats["seconds"]),
        "stats": result.stats,
        "qpcore_version": __version__,
    }
    return result, report


def _print_generic(report: dict[str, Any], extra: Sequence[tuple[str, str]] = ()) -> None:
    r = report
    lines = [
        ("status", f"{r['status']} ({r['status_message']})"),
        ("objective", f"{r['objective']:.12e}"),
        ("KKT measure", f"{r['kkt_measure']:.3e}   (tol {r['tol']:g}; primal infeasibility {r['primal_infeasibility']:.1e})"),
        ("iterations", f"{r['iterations']}"),
        ("time", f"{r['seconds']:.3f} s solve, {r['total_seconds']:.3f} s with reading and building"),
        *extra,
    ]
    for name, value in lines:
        print(f"{name:<16} {value}")
    sys.stdout.flush()


def _finish(report: dict[str, Any], args: argparse.Namespace, extra: Sequence[tuple[str, str]] = ()) -> int:
    if args.json != "-":
        _print_generic(report, extra)
    if args.json is not None:
        write_json(report, args.json)
    return 0


def _solution_field(x: NDArray[np.float64]) -> list[float] | None:
    # the point goes into the JSON report when it is small enough to read
    return [float(v) for v in x] if x.size <= 10_000 else None


def run_qp(args: argparse.Namespace) -> int:
    """``qpcore solve qp``: min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, Ax = b from an .npz file."""
    from qpcore.problem import QP

    t0 = time.perf_counter()
    _check_writable(args.json)
    arrays = read_npz(args.npz, ("Q", "c"), ("lb", "ub", "A", "b"))
    if ("A" in arrays) != ("b" in arrays):
        raise CLIError(f"--npz {args.npz!r}: A and b go together; the file has only "
                       f"{'A' if 'A' in arrays else 'b'}")
    try:
        n = int(np.asarray(arrays["c"]).size)
        qp = QP(arrays["Q"], arrays["c"], arrays.get("lb", np.full(n, -np.inf)), arrays.get("ub", np.full(n, np.inf)),
                arrays.get("A"), arrays.get("b"))
        strategy = STRATEGIES[args.strategy].factory(args)
        result, report = solve_report(qp, strategy, args, args.strategy)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    report.update(problem="qp", data=args.npz, total_seconds=time.perf_counter() - t0, x=_solution_field(result.x))
    return _finish(report, args)


def run_nnls(args: argparse.Namespace) -> int:
    """``qpcore solve nnls``: min ‖Ax − d‖², x ≥ 0 from an .npz file."""
    from problems.least_squares import nnls

    t0 = time.perf_counter()
    _check_writable(args.json)
    arrays = read_npz(args.npz, ("A", "d"))
    try:
        problem = nnls(arrays["A"], arrays["d"], backend=args.backend)
        strategy = STRATEGIES[args.strategy].factory(args)
        result, report = solve_report(problem.qp, strategy, args, args.strategy)
        x, rnorm = problem.decode(result)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    report.update(problem="nnls", data=args.npz, backend=type(problem.qp.Q).__name__,
                  residual_norm=rnorm, n_positive=int(np.count_nonzero(x > 0)),
                  total_seconds=time.perf_counter() - t0, x=_solution_field(x))
    return _finish(report, args, [("residual norm", f"{rnorm:.12e}   (‖Ax − d‖₂)"),
                                  ("positive", f"{report['n_positive']} of {x.size} coefficients")])


register_problem("qp", ProblemKind(
    help="convex QP min 1/2 x'Qx + c'x, lb <= x <= ub, Ax = b from an .npz file (arrays Q, c, "
         "lb, ub; optional A, b; missing bounds are infinite)",
    add_arguments=_add_npz_arguments("Q (n×n), c (n), lb, ub (n, may hold ±inf); optional A (m×n), b (m)"),
    run=run_qp, default_strategy="gpcg", default_tol=1e-8))

register_problem("nnls", ProblemKind(
    help="nonnegative least squares min ||Ax - d||, x >= 0 from an .npz file (arrays A, d)",
    add_arguments=_add_nnls_arguments, run=run_nnls, default_strategy="gpcg", default_tol=1e-8))


# --------------------------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------------------------


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", metavar="OUT",
                   help="write the report as one JSON object to OUT ('-': stdout, instead of the summary)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display")


def build_parser() -> argparse.ArgumentParser:
    """The full ``qpcore`` argument parser, built from :data:`PROBLEMS` and :data:`STRATEGIES`.

    Returns
    -------
    argparse.ArgumentParser
    """
    from qpcore import __version__

    parser = _Parser(prog=PROG, description="Convex QPs with pluggable strategies: SVM duals, box QPs, NNLS.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser("demo", help="train an RBF SVM on a bundled Adult subset (a few seconds)",
                          description="Train an RBF C-SVC (gamma=0.05, C=1, tol 1e-3) with SMO on 3,000 rows "
                                      "of UCI Adult bundled with qpcore; report the solve and held-out accuracy.")
    _add_output_arguments(demo)
    demo.set_defaults(func=run_demo)

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
        solver.add_argument("--tol", type=_positive_float, default=kind.default_tol, metavar="T",
                            help=f"stopping tolerance on the KKT measure (default {kind.default_tol:g})")
        solver.add_argument("--max-iter", type=_nonnegative_int, metavar="K", help="iteration limit")
        solver.add_argument("--time-limit", type=_positive_float, metavar="S", help="time limit in seconds")
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
        Exit status: 0 when a result was produced (its status is in the report), 2 on a usage
        error or a bad input file (one line ``qpcore: error: ...`` on stderr), 130 when
        interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
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
