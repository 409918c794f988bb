"""``qpcore train``: LIBSVM's ``svm-train`` over every strategy.

``qpcore train DATA [MODEL]`` reads a LIBSVM-format file, trains a kernel C-SVC or ν-SVC
(:func:`qpcore_train.multiclass.train_multiclass` with ``--strategy smo|decomposition|incas|gpcg``),
a one-class SVM, an ε-SVR or a ν-SVR (``--type``, svm-train's ``-s``; :func:`train_function`
over :mod:`qpcore_formulations.svm_family`), or a linear SVM (``--strategy asvm|ocas|ocas-active|bmrm``: the
L2-loss dual of :func:`qpcore_formulations.asvm.asvm_dual` or the hinge risk of
:func:`qpcore_formulations.risk.hinge_svm`, with the regularized constant feature ``--bias`` as LIBLINEAR's
``-B``) over two or more classes, one-vs-one or one-vs-rest, and writes the model file of
:mod:`qpcore_cli.model` (by default DATA's base name + ``.model`` in the current folder, as
svm-train). svm-train's short options (``-s -t -d -g -r -c -n -p -m -e -h -b -wLABEL -v -q``) have
svm-train's meanings and defaults (:mod:`qpcore_cli.libsvm_options`); ``-b 1`` fits Platt's
sigmoids (:func:`qpcore_train.probability.calibrate`), ``-v N`` cross-validates instead of writing a
model (:mod:`qpcore_cli.crossval`). ``qpcore predict DATA MODEL [OUTPUT]`` (:mod:`qpcore_cli.predict`)
reads the model back.

After the solves, the training accuracy is computed as ``--train-accuracy`` says (by default on
up to 20,000 rows, off above). The γ used (given, or svm-train's default 1/n_features) is in the
summary, the JSON report and the model file. ``--time-limit T`` bounds the whole command from its
start (:class:`qpcore_cli.common.Deadline`): each binary problem gets the time left, and the
passes after the solves (calibration, training accuracy) are cut or skipped near the end, as the
summary's ``skipped`` line and the report's ``skipped`` list say.

Exit status (:data:`EXIT_CODES`): 0 when every binary problem converged; for a run that ended
otherwise the code of the worst status (:func:`worst_status`): 3 ``max_iter``, 4 ``time_limit``,
5 ``stalled``, 6 ``unbounded``, 7 ``nonfinite``, 8 ``infeasible``, 9 ``nonconvex``, 10
``stopped``, 11 ``target``, 12 ``primal_infeasible`` (the model file is written in every one of these cases: it holds the
best point found); 2 for bad input or usage (one line on stderr, nothing written); 130 when
interrupted. ``qpcore predict`` exits 0 or 2.

Progress (stderr, only when stderr is a terminal, or always with ``--verbose``; never with
``--quiet``): the binary problem being solved (``pair 3/45: 2 vs 7``), its iteration, the gap the
strategy is judged on against ``--tol`` (the maximal-violating-pair gap, the projected gradient
for ASVM, the relative duality gap for the cutting planes), the best gap so far, and elapsed time.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TextIO, cast

import attrs
import numpy as np

import qpcore
from qpcore_train.multiclass import MulticlassSVM, linear_binary, problems_of, train_multiclass
from qpcore_train.probability import calibrate
from qpcore_formulations.svm import SVMModel
from qpcore_formulations.svm_family import check_nu, epsilon_svr, nu_svr, one_class
from qpcore_strategies.registry import KERNEL_STRATEGIES, LINEAR_STRATEGIES, REGISTRY, accepts, make
from qpcore import __version__
from qpcore.backends.operators import Kernel
from qpcore.core.optimality import lagrangian_bound
from qpcore.core.problem import ProblemError
from qpcore.core.solve import Progress, Strategy
from qpcore.core.state import Result, Status
from qpcore_cli.common import CLIError, Deadline, check_writable, evaluate_rows, positive_float, write_json
from qpcore_cli.libsvm_options import (
    AUTO_ROWS,
    SAMPLE_ROWS,
    TRAIN_MAPPING,
    add_train_arguments,
    default_model_file,
    mapping_text,
    svm_type_arg,
)
from qpcore_cli.model import (
    CLASSIFIER_TYPES,
    FUNCTION_TYPES,
    LinearModel,
    Model,
    class_labels,
    labels_to_strings,
    save_model,
)
from qpcore_cli.registry import entry_options
from qpcore_cli.svm import _drop_first_column, _read_svmlight, _with_width

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from qpcore.backends.operators import KernelName

__all__ = ["EXIT_BAD_INPUT", "EXIT_CODES", "EXIT_EPILOG", "KERNEL_STRATEGIES", "LINEAR_STRATEGIES",
           "GapReporter", "TrainJob", "add_train_arguments", "exit_code", "make_strategy",
           "predict_rows", "problem_names", "read_data", "regression_metrics", "run_train",
           "svm_type_arg", "train_function", "train_linear", "worst_status"]

FloatArray = Any  # NDArray[np.float64], kept loose for the sparse/dense mix

# the strategy names (strategies.KERNEL_STRATEGIES train a qpcore_train.multiclass.MulticlassSVM,
# strategies.LINEAR_STRATEGIES a qpcore_cli.model.LinearModel) are re-exported here

#: Exit status for bad input or usage (one line ``qpcore: error: ...`` on stderr).
EXIT_BAD_INPUT = 2
#: Exit status of ``qpcore train`` for each status a run can end with.
EXIT_CODES: dict[Status, int] = {
    Status.CONVERGED: 0,
    Status.MAX_ITER: 3,
    Status.TIME_LIMIT: 4,
    Status.STALLED: 5,
    Status.UNBOUNDED: 6,
    Status.NONFINITE: 7,
    Status.INFEASIBLE: 8,
    Status.NONCONVEX: 9,
    Status.STOPPED: 10,
    Status.TARGET: 11,
    Status.PRIMAL_INFEASIBLE: 12,
}
# worst last: limits, then a stop without progress, then results that are not solutions
_SEVERITY = (Status.CONVERGED, Status.TARGET, Status.MAX_ITER, Status.TIME_LIMIT, Status.STOPPED, Status.STALLED,
             Status.NONCONVEX, Status.UNBOUNDED, Status.INFEASIBLE, Status.PRIMAL_INFEASIBLE, Status.NONFINITE)

#: The ``--help`` epilog of ``qpcore train``: svm-train's options, the exit codes.
EXIT_EPILOG = mapping_text("svm-train's options (each with svm-train's meaning and default) and their long names:",
                           TRAIN_MAPPING) + """

Changed for svm-train's letters: -v is cross-validation (progress lines: --verbose) and -h is
shrinking (help: --help). --time-limit bounds the whole command, not each problem.

exit status:
  0    every binary problem converged to --tol
  3    max_iter     an iteration limit was reached (--max-iter)
  4    time_limit   a time limit was reached (--time-limit)
  5    stalled      no progress over many iterations
  6    unbounded    the objective is unbounded below
  7    nonfinite    a NaN or inf appeared
  8    infeasible   the point violates the constraints
  9    nonconvex    negative curvature (e.g. a sigmoid kernel)
  10   stopped      stopped by a callback
  11   target       a target objective was reached
  2    bad input or usage (one line on stderr; no model written)
  130  interrupted
With several binary problems the worst status decides (in the order 11, 3, 4, 10, 5, 9, 6, 8, 7).
For 3-11 the model file is written all the same (the best point found). The model file format
is described in docs/model-format.md."""



# --------------------------------------------------------------------------------------------
# Statuses and exit codes
# --------------------------------------------------------------------------------------------


def worst_status(statuses: Sequence[Status]) -> Status:
    """The status that decides the exit code of a run of several binary problems.

    Parameters
    ----------
    statuses : sequence of Status

    Returns
    -------
    Status
        ``CONVERGED`` for an empty sequence or when all converged, else the worst one (limits
        before stops before non-solutions).
    """
    worst = Status.CONVERGED
    for s in statuses:
        if _SEVERITY.index(s) > _SEVERITY.index(worst):
            worst = s
    return worst


def exit_code(status: Status) -> int:
    """The exit status of ``qpcore train`` for a run that ended with ``status`` (:data:`EXIT_CODES`)."""
    return EXIT_CODES[status]


# --------------------------------------------------------------------------------------------
# Strategies and progress
# --------------------------------------------------------------------------------------------


def make_strategy(name: str, options: Mapping[str, Any] | None = None) -> Strategy:
    """The strategy of ``--strategy name`` from the one registry (:mod:`qpcore_strategies.registry`).

    Parameters
    ----------
    name : str
        One of :data:`KERNEL_STRATEGIES` or :data:`LINEAR_STRATEGIES` (or a registry spec,
        ``decomposition:q=128``).
    options : mapping, optional
        Its options (``--rule``, ``--q`` ...); the registry's defaults for the others.

    Returns
    -------
    Strategy

    Raises
    ------
    CLIError
        For an unknown name or option, or a bad value.
    """
    try:
        return make(name, **dict(options or {}))
    except ProblemError as exc:
        raise CLIError(f"--strategy {name}: {exc}") from None


def problem_names(classes: NDArray[Any], pairs: NDArray[np.intp]) -> list[str]:
    """Names of the binary problems for progress lines: ``pair 3/45: 2 vs 7``, ``class 1/3: 0 vs rest``.

    Parameters
    ----------
    classes : ndarray
        The labels.
    pairs : ndarray of shape (n_problems, 2)

    Returns
    -------
    list of str
    """
    text, _ = labels_to_strings(classes)
    n = len(pairs)
    out = []
    for p, (i, j) in enumerate(pairs):
        if j < 0:
            out.append(f"class {p + 1}/{n}: {text[i]} vs rest")
        else:
            out.append(f"pair {p + 1}/{n}: {text[i]} vs {text[j]}")
    return out


def _fmt_gap(value: float) -> str:
    return f"{value:.2e}" if math.isfinite(value) else "-"


class GapReporter:
    """Progress of a sequence of binary problems: the gap against the tolerance, and elapsed time.

    No bar: the gap of a dual method is not monotone, and a bar drawn from it stays empty while
    the gap rises. Each update shows the problem's name, its iteration, the current gap, the best
    gap so far, the tolerance it must reach, the problem's and the run's elapsed time. On a
    terminal (``live``) one line is redrawn in place and a problem that ends without converging
    leaves its line on screen; otherwise every update and every end is its own line.

    Parameters
    ----------
    names : list of str
        One name per binary problem, in the order they are solved.
    tol : float
        The stopping tolerance.
    relative : bool
        The strategy is judged on the relative duality gap (cutting planes), not the KKT measure.
    live : bool
        Redraw one line (a terminal) instead of printing lines.
    stream : file, optional
        stderr by default.
    interval : float
        Seconds between updates.
    """

    def __init__(self, names: list[str], tol: float, *, relative: bool = False, live: bool = True,
                 stream: TextIO | None = None, interval: float = 0.5) -> None:
        self.names = names
        self.tol = tol
        self.relative = relative
        self.live = live
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.index = 0
        self._best = math.inf
        self._t0 = time.perf_counter()
        self._pending = False

    def _name(self) -> str:
        return self.names[self.index] if self.index < len(self.names) else f"problem {self.index + 1}"

    def _gap(self, progress: Progress) -> float:
        if not self.relative:
            return float(progress.gap)
        w = progress.state.primal
        if w is None:
            return math.inf
        lower = lagrangian_bound(progress.qp, w)
        gap = progress.objective - lower
        return gap / abs(lower) if lower != 0 else math.inf

    def _emit(self, line: str, final: bool) -> None:
        if self.live:
            self.stream.write("\r" + line + "\x1b[K" + ("\n" if final else ""))
            self._pending = not final
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def update(self, progress: Progress) -> None:
        """Show a snapshot of the current problem."""
        gap = self._gap(progress)
        if math.isfinite(gap):
            self._best = min(self._best, gap)
        total = time.perf_counter() - self._t0
        self._emit(f"{self._name()}  iter {progress.iteration}  gap {_fmt_gap(gap)} "
                   f"(best {_fmt_gap(self._best)}, tol {self.tol:.0e})  {progress.elapsed:.1f} s "
                   f"(total {total:.1f} s)", final=False)

    def finish(self, result: Result) -> None:
        """Show how the current problem ended and move on to the next."""
        if self.relative and math.isfinite(result.kkt.duality_gap) and result.kkt.lower_bound != 0:
            gap = result.kkt.duality_gap / abs(result.kkt.lower_bound)
        else:
            gap = result.kkt.measure
        line = (f"{self._name()}: {result.status.code}, {result.iterations} iterations, gap {_fmt_gap(gap)} "
                f"(tol {self.tol:.0e}), {float(result.stats['seconds']):.2f} s")
        # on a terminal a converged problem's line is overwritten by the next one
        self._emit(line, final=not self.live or result.status is not Status.CONVERGED)
        self.index += 1
        self._best = math.inf

    def close(self) -> None:
        """Clear a line left pending on the terminal."""
        if self.live and self._pending:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._pending = False


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _reporter(args: argparse.Namespace, names: list[str], tol: float, relative: bool) -> GapReporter | None:
    if args.quiet:
        return None
    live = _isatty(sys.stderr)
    if not live and not args.verbose:
        return None
    return GapReporter(names, tol, relative=relative, live=live)


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def read_data(path: str, role: str, index_base: str, n_features: int | None = None) -> tuple[Any, Any, int]:
    """Read a LIBSVM-format file as CSR data, float64 labels and its feature numbering.

    Parameters
    ----------
    path : str
        Plain, gzip or bzip2 text.
    role : str
        ``"training"`` or ``"data"`` (for messages).
    index_base : {"auto", "0", "1"}
        ``auto``: zero-based if the file uses index 0, else one-based (LIBSVM's numbering).
    n_features : int, optional
        Pad to this width; a feature beyond it is an error.

    Returns
    -------
    X, y, base
        Data (column k is feature k + base), labels, and the base used (0 or 1).

    Raises
    ------
    CLIError
        On a missing, unreadable or malformed file, or a feature beyond ``n_features``.
    """
    if index_base == "auto":
        X, y = _read_svmlight(path, role, zero_based=True)
        base = 0 if bool((X.indices == 0).any()) else 1
        if base == 1:
            X = _drop_first_column(X)
    else:
        base = int(index_base)
        X, y = _read_svmlight(path, role, zero_based=base == 0)
    if n_features is not None:
        if X.shape[1] > n_features:
            raise CLIError(f"{role} file {path!r} has {X.shape[1]} features, more than --n-features {n_features}")
        X = _with_width(X, n_features)
    return X, y, base


def _class_weights(specs: list[str] | None, classes: NDArray[Any]) -> FloatArray:
    """Per-class weights from ``--class-weight LABEL:W`` options (1 for classes not named)."""
    w = np.ones(classes.size)
    numeric = classes.astype(np.float64)
    for spec in specs or []:
        label, sep, weight = spec.rpartition(":")
        if not sep or not label:
            raise CLIError(f"--class-weight {spec!r}: expected LABEL:WEIGHT, e.g. 1:2.5")
        try:
            value = float(label)
        except ValueError:
            raise CLIError(f"--class-weight {spec!r}: label {label!r} is not a number") from None
        hit = np.flatnonzero(numeric == value)
        if hit.size == 0:
            shown = ", ".join(labels_to_strings(classes)[0])
            raise CLIError(f"--class-weight {spec!r}: label {label} is not in the training file (classes: {shown})")
        try:
            w[hit[0]] = positive_float(weight)
        except argparse.ArgumentTypeError as exc:
            raise CLIError(f"--class-weight {spec!r}: weight {exc}") from None
    return w


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


def train_linear(X: Any, y_idx: NDArray[np.intp], classes: NDArray[Any], C_i: FloatArray, strategy_name: str,
                 strategy: Strategy, *, scheme: Literal["ovo", "ovr"], bias: float, tol: float,
                 max_iter: int | None, time_limit: float | None,
                 reporter: GapReporter | None, deadline: Deadline | None = None) -> tuple[LinearModel, list[Result]]:
    """Train one linear SVM per binary problem (as :func:`qpcore_train.multiclass.train_multiclass` does
    for kernels) and collect them into a :class:`qpcore_cli.model.LinearModel`.

    ``asvm`` solves the L2-loss SVM min ½(‖w‖² + v²) + C Σ max(0, 1 − y_i(x_iᵀw + β·v))² through
    the ASVM dual of the data scaled by 1/β with ν = 2·C·β² (as ``qpcore_sklearn.linear`` maps
    LIBLINEAR's ``-s 2 -B β``); it takes one C, so class weights must be 1. The cutting planes
    solve the hinge loss min ½(‖w‖² + v²) + Σ C_i max(0, 1 − y_i(x_iᵀw + β·v))
    (:func:`qpcore_formulations.risk.hinge_svm`, β = 0: no intercept).

    Parameters
    ----------
    X : csr_matrix or ndarray
        Training data.
    y_idx : ndarray of int
        Class index of each row.
    classes : ndarray
        The labels.
    C_i : ndarray
        C times the class weight of each row.
    strategy_name : str
        One of :data:`LINEAR_STRATEGIES`.
    strategy : Strategy
    scheme : {"ovo", "ovr"}
    bias : float
        β ≥ 0, the regularized constant feature (LIBLINEAR's ``-B``).
    tol, max_iter, time_limit :
        For each binary problem.
    reporter : GapReporter or None
    deadline : Deadline, optional
        Caps each problem's time limit by the time left (a bound on the whole sequence).

    Returns
    -------
    (LinearModel, list of Result)

    Raises
    ------
    ProblemError
        When a problem cannot be built.
    """
    s = float(bias)
    pairs = problems_of(int(classes.size), scheme)
    W = np.zeros((len(pairs), X.shape[1]))
    b = np.zeros(len(pairs))
    results: list[Result] = []
    for p, (i, j) in enumerate(pairs):
        rows = np.flatnonzero((y_idx == i) | (y_idx == j)) if j >= 0 else np.arange(y_idx.size)
        Xp = X if rows.size == y_idx.size else X[rows]
        yk = (y_idx[rows] == i).astype(np.int64)         # class i is +1 (the larger value)
        limit = time_limit
        if deadline is not None and deadline.at is not None:
            left = deadline.solve_limit()
            limit = left if limit is None else min(limit, float(left or limit))
        W[p], b[p], res = linear_binary(Xp, yk, C_i[rows], strategy, squared_hinge=strategy_name == "asvm", bias=s,
                                        tol=tol, max_iter=max_iter, time_limit=limit, reporter=reporter)
        results.append(res)
    lin = LinearModel(classes=classes, scheme="ovr" if pairs[0][1] < 0 else "ovo", pairs=pairs.astype(np.intp),
                      W=W, bias=b, intercept_scaling=s)
    return lin, results


# which SVM types each type-specific option applies to (svm-train ignores the others silently;
# here an option that changes nothing is refused, as --bias is for a kernel strategy)
_APPLIES = {"C": ("-c", ("c-svc", "epsilon-svr", "nu-svr")), "nu": ("-n/--nu", ("nu-svc", "one-class", "nu-svr")),
            "epsilon": ("-p/--epsilon", ("epsilon-svr",)),
            "class_weight": ("-wLABEL/--class-weight", ("c-svc",)),
            "multiclass": ("--multiclass", CLASSIFIER_TYPES)}


def _resolve(args: argparse.Namespace) -> tuple[bool, str, list[str]]:
    """Check option combinations; return (linear, scheme, notes for stderr)."""
    svm_type = args.svm_type or "c-svc"
    for dest, (flag, types) in _APPLIES.items():
        if getattr(args, dest) is not None and svm_type not in types:
            raise CLIError(f"{flag} applies to --type {', '.join(types)}, not to --type {svm_type}")
    if args.nu is not None:
        try:
            check_nu(args.nu)
        except ProblemError as exc:
            raise CLIError(str(exc)) from None
    linear = args.strategy in LINEAR_STRATEGIES
    if linear and svm_type != "c-svc":
        raise CLIError(f"--type {svm_type} needs a kernel strategy ({', '.join(KERNEL_STRATEGIES)}); "
                       f"--strategy {args.strategy} trains a linear c-svc")
    if linear:
        given = [f"--{n.replace('_', '-')}" for n in ("kernel", "gamma", "degree", "coef0")
                 if getattr(args, n) is not None]
        if args.kernel == "linear":
            given.remove("--kernel")
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise CLIError(f"{', '.join(given)} {verb} to kernel strategies ({', '.join(KERNEL_STRATEGIES)}), "
                           f"not to --strategy {args.strategy}, a linear model")
        if args.strategy == "asvm" and args.bias == 0:
            raise CLIError("--bias 0 (no intercept) needs a hinge-loss strategy (ocas, ocas-active, bmrm): "
                           "the ASVM dual always has its threshold")
    elif args.bias is not None:
        raise CLIError(f"--bias applies to linear strategies ({', '.join(LINEAR_STRATEGIES)}), "
                       f"not to --strategy {args.strategy}")
    scheme = args.multiclass or ("ovr" if linear else "ovo")
    notes: list[str] = []
    if args.probability and args.folds is None:
        if svm_type not in CLASSIFIER_TYPES or linear:
            raise CLIError(f"-b 1 (probability estimates) needs a kernel classifier (--type c-svc or nu-svc with "
                           f"{', '.join(KERNEL_STRATEGIES)}), not --type {svm_type} with --strategy {args.strategy}")
        if scheme == "ovr":
            raise CLIError("-b 1 (probability estimates) couples one-vs-one problems: drop --multiclass ovr")
    elif args.probability:
        notes.append("-b 1 is not used by -v: the cross-validation labels are the decision values' labels")
    if args.libsvm_shrinking is not None:
        wanted = bool(args.libsvm_shrinking)
        if any(o.name == "shrinking" for o in REGISTRY[args.strategy].options):
            if args.strategy_shrinking is not None and bool(args.strategy_shrinking) != wanted:
                raise CLIError(f"-h {args.libsvm_shrinking} and --{'' if args.strategy_shrinking else 'no-'}shrinking "
                               "disagree")
            args.strategy_shrinking = wanted
        else:
            notes.append(f"-h {args.libsvm_shrinking} ignored: --strategy {args.strategy} has no shrinking option")
    return linear, scheme, notes


def _pct(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{100 * value:.2f} %"


def _kernel_of(args: argparse.Namespace, d: int) -> tuple[Kernel, dict[str, Any]]:
    """The kernel of ``-t/-g/-d/-r`` (svm-train's defaults), with its settings and where γ came from."""
    name = args.kernel or "rbf"
    source = "given"
    if args.gamma is not None and args.gamma > 0:
        gamma = float(args.gamma)
    elif name == "linear":
        gamma = 1.0
    elif d < 1:
        raise CLIError(f"training file {args.data!r} has no features; pass --gamma or --n-features")
    else:
        # svm-train's default, and its meaning of -g 0
        gamma = 1.0 / d
        source = "1/n_features"
    degree = 3 if args.degree is None else int(args.degree)
    coef0 = 0.0 if args.coef0 is None else float(args.coef0)
    kernel = Kernel(cast("KernelName", name), gamma=gamma, degree=degree, coef0=coef0)
    settings = {"kernel": name, "gamma": gamma if name != "linear" else None,
                "gamma_source": source if name != "linear" else None,
                "degree": degree if name == "poly" else None,
                "coef0": coef0 if name in ("poly", "sigmoid") else None}
    return kernel, settings


def regression_metrics(pred: NDArray[Any], target: NDArray[Any]) -> tuple[float, float]:
    """svm-predict's mean squared error and squared correlation coefficient.

    Parameters
    ----------
    pred, target : ndarray
        Predicted and true values (same length, at least one).

    Returns
    -------
    (mse, scc)
        Σ(p − t)²/n and (nΣpt − ΣpΣt)² / ((nΣp² − (Σp)²)(nΣt² − (Σt)²)), svm-predict's formulas;
        a zero denominator gives inf (nan for 0/0), as svm-predict's C division does.
    """
    p = np.asarray(pred, dtype=np.float64)
    t = np.asarray(target, dtype=np.float64)
    total = float(p.size)
    mse = float(np.sum((p - t) ** 2)) / total
    sump, sumt = float(p.sum()), float(t.sum())
    sumpp, sumtt, sumpt = float(p @ p), float(t @ t), float(p @ t)
    num = (total * sumpt - sump * sumt) ** 2
    den = (total * sumpp - sump * sump) * (total * sumtt - sumt * sumt)
    if den == 0.0:
        return mse, math.nan if num == 0.0 else math.inf
    return mse, num / den


def train_function(X: Any, y: NDArray[Any], svm_type: str, kernel: Kernel, strategy: Strategy, strategy_name: str,
                   *, C: float, nu: float, epsilon: float, tol: float, max_iter: int | None,
                   time_limit: float | None, reporter: GapReporter | None,
                   cache_bytes: int = 200 << 20) -> tuple[SVMModel, Result]:
    """Train a one-class SVM or a regression (one decision function) with LIBSVM's formulation.

    The problem comes from :mod:`qpcore_formulations.svm_family` (:func:`~qpcore_formulations.svm_family.one_class`
    over every row, labels ignored; :func:`~qpcore_formulations.svm_family.epsilon_svr`,
    :func:`~qpcore_formulations.svm_family.nu_svr` over the real targets), is solved from LIBSVM's start and
    decoded (rho as the bias).

    Parameters
    ----------
    X : csr_matrix or ndarray
        Training data.
    y : ndarray
        Targets (regressions; ignored for one-class).
    svm_type : {"one-class", "epsilon-svr", "nu-svr"}
    kernel : Kernel
    strategy : Strategy
    strategy_name : str
        For the message when it cannot take the problem.
    C, nu, epsilon : float
        The parameters of the type (unused ones are ignored).
    tol, max_iter, time_limit, reporter :
        Handed to ``qpcore.solve``.
    cache_bytes : int
        Kernel row cache.

    Returns
    -------
    (SVMModel, Result)

    Raises
    ------
    ProblemError
        Input the builder refuses (one row, ν outside (0, 1], ε < 0, non-finite targets).
    CLIError
        A strategy that cannot take the problem (its own reason).
    """
    if svm_type == "one-class":
        prob = one_class(X, nu, kernel, cache_bytes=cache_bytes)
    elif svm_type == "epsilon-svr":
        prob = epsilon_svr(X, y, C, epsilon, kernel, cache_bytes=cache_bytes)
    elif svm_type == "nu-svr":
        prob = nu_svr(X, y, C, nu, kernel, cache_bytes=cache_bytes)
    else:
        raise ProblemError(f"svm_type: {svm_type!r} is not one of {', '.join(FUNCTION_TYPES)}")
    reason = accepts(strategy, prob.qp)
    if reason is not None:
        raise CLIError(f"--strategy {strategy_name} cannot take the {svm_type} dual: {reason}")
    res = qpcore.solve(prob.qp, strategy, x0=prob.x0, tol=tol, max_iter=max_iter, time_limit=time_limit,
                       reporter=reporter)
    return prob.decode(res), res


@attrs.frozen(eq=False)
class TrainJob:
    """What ``qpcore train`` trains, on any subset of the rows (the model, or a cross-validation fold).

    Attributes
    ----------
    svm_type : str
        One of :data:`qpcore_cli.model.SVM_TYPES`.
    strategy_name : str
    strategy : Strategy
    kernel : Kernel or None
        None for a linear strategy.
    classes : ndarray
        The labels of a classifier (empty for a one-class model or a regression).
    weights : ndarray
        Per-class factor on C.
    scheme : {"ovo", "ovr"}
    C, nu, epsilon, bias : float
        The model's parameters (bias: linear strategies).
    tol : float
    max_iter : int or None
    cache_bytes : int
    deadline : Deadline
        The command's; every solve gets the time left.
    """

    svm_type: str
    strategy_name: str
    strategy: Strategy
    kernel: Kernel | None
    classes: NDArray[Any]
    weights: FloatArray
    scheme: Literal["ovo", "ovr"]
    C: float
    nu: float
    epsilon: float
    bias: float
    tol: float
    max_iter: int | None
    cache_bytes: int
    deadline: Deadline

    def class_C(self, y_idx: NDArray[np.intp]) -> FloatArray:
        """Per-row C of a classifier: C times the class weight (ν-SVC: 1, C only selects rows)."""
        if self.svm_type == "nu-svc":
            return np.ones(y_idx.size)
        return self.C * self.weights[y_idx]

    def fit(self, X: Any, y: NDArray[Any], y_idx: NDArray[np.intp],
            reporter: GapReporter | None = None) -> tuple[Model, list[Result]]:
        """Train on the rows given.

        Parameters
        ----------
        X : csr_matrix or ndarray
        y : ndarray
            Targets (regressions).
        y_idx : ndarray of int
            Class indices (classifiers; empty otherwise).
        reporter : GapReporter, optional

        Returns
        -------
        (Model, list of Result)

        Raises
        ------
        ProblemError
            What the problem builders refuse.
        CLIError
            A strategy that cannot take the problem.
        """
        if self.kernel is None:
            return train_linear(X, y_idx, self.classes, self.class_C(y_idx), self.strategy_name, self.strategy,
                                scheme=self.scheme, bias=self.bias, tol=self.tol, max_iter=self.max_iter,
                                time_limit=None, reporter=reporter, deadline=self.deadline)
        if self.svm_type in FUNCTION_TYPES:
            fitted, res = train_function(X, y, self.svm_type, self.kernel, self.strategy, self.strategy_name, C=self.C,
                                         nu=self.nu, epsilon=self.epsilon, tol=self.tol, max_iter=self.max_iter,
                                         time_limit=self.deadline.solve_limit(), reporter=reporter,
                                         cache_bytes=self.cache_bytes)
            return fitted, [res]
        trained = train_multiclass(X, y_idx, self.classes, self.class_C(y_idx), self.kernel, self.strategy,
                                   scheme=self.scheme, tol=self.tol, max_iter=self.max_iter, reporter=reporter,
                                   cache_bytes=self.cache_bytes, nu=self.nu if self.svm_type == "nu-svc" else None,
                                   deadline=self.deadline.at)
        return trained.model, trained.results


def predict_rows(model: Model, X: Any) -> FloatArray:
    """A model's answer per row: the class index (classifiers), the value (regressions), ±1 (one-class).

    Parameters
    ----------
    model : MulticlassSVM, LinearModel or SVMModel
    X : csr_matrix or ndarray

    Returns
    -------
    ndarray
    """
    if isinstance(model, SVMModel):
        f = np.asarray(model.decision_function(X), dtype=np.float64)
        return f if model.kind in ("epsilon-svr", "nu-svr") else np.where(f > 0, 1.0, -1.0)
    return np.asarray(model.predict_index(model.raw(X)))


def _fit_pass(model: Model, X: Any, y: NDArray[Any], y_idx: NDArray[np.intp], svm_type: str, mode: str,
              deadline: Deadline) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The training-accuracy pass of ``--train-accuracy``: (metrics, how it was run, what was skipped)."""
    n = int(X.shape[0])
    used = mode if mode != "auto" else ("on" if n <= AUTO_ROWS else "off")
    info: dict[str, Any] = {"mode": mode, "rows": 0, "of": n, "sample": False, "cut": False}
    if used == "off":
        info["reason"] = (f"--train-accuracy auto: more than {AUTO_ROWS:,} rows" if mode == "auto"
                          else "--train-accuracy off")
        return {}, info, []
    rows = np.arange(n)
    if used == "sample" and n > SAMPLE_ROWS:
        rows = np.sort(np.random.default_rng(0).choice(n, SAMPLE_ROWS, replace=False))
        info.update(sample=True, seed=0)
    Xs = X[rows] if rows.size < n else X
    outs, done = evaluate_rows(lambda Z: predict_rows(model, Z), Xs, deadline)
    info["rows"] = done
    if done == 0:
        info["reason"] = "skipped: time limit"
        return {}, info, ["training accuracy (time limit)"]
    skipped: list[str] = []
    if done < rows.size:
        info["cut"] = True
        skipped.append(f"training accuracy after {done:,} of {rows.size:,} rows (time limit)")
    pred = np.concatenate(outs)
    fit: dict[str, Any] = {}
    if svm_type in ("epsilon-svr", "nu-svr"):
        fit["train_mse"], fit["train_scc"] = regression_metrics(pred, y[rows[:done]])
    elif svm_type == "one-class":
        fit["train_outlier_fraction"] = float(np.mean(pred < 0))
    else:
        fit["train_accuracy"] = float(np.mean(pred == y_idx[rows[:done]]))
    return fit, info, skipped


def _calibrate(job: TrainJob, model: MulticlassSVM, X: Any, y_idx: NDArray[np.intp]
               ) -> tuple[MulticlassSVM, list[str]]:
    """``-b 1``: Platt's sigmoids from 5-fold cross-validation inside every pair (LIBSVM's)."""
    if job.deadline.left() <= 0.0:
        return model, ["probability calibration, -b 1 (time limit; the model has no probabilities)"]
    statuses: list[Status] = []

    def fit_fn(X_sub: Any, y_sub: NDArray[np.intp]) -> MulticlassSVM:
        assert job.kernel is not None
        u, y01 = np.unique(y_sub, return_inverse=True)
        trained = train_multiclass(X_sub, y01.astype(np.intp).ravel(), job.classes[u], job.class_C(y_sub),
                                   job.kernel, job.strategy, tol=job.tol, max_iter=job.max_iter,
                                   cache_bytes=job.cache_bytes, nu=job.nu if job.svm_type == "nu-svc" else None,
                                   deadline=job.deadline.at)
        statuses.extend(r.status for r in trained.results)
        return trained.model

    try:
        prob_a, prob_b = calibrate(X, y_idx, job.classes, fit_fn, folds=5, seed=0)
    except ProblemError as exc:
        raise CLIError(f"-b 1: {exc}") from None
    if Status.TIME_LIMIT in statuses or job.deadline.left() <= 0.0:
        # sigmoids fitted to decision values of models cut short would misstate the probabilities
        return model, ["probability calibration, -b 1 (time limit reached during it; the model has no "
                       "probabilities)"]
    return attrs.evolve(model, prob_a=prob_a, prob_b=prob_b), []


def run_train(args: argparse.Namespace) -> int:
    """``qpcore train``: read, train every binary problem, write the model file, report.

    With ``-v N`` (svm-train's cross-validation) no model is written: LIBSVM's
    ``Cross Validation ...`` lines are printed instead (:func:`qpcore_cli.crossval.run_cross_validation`).
    ``--time-limit`` bounds the whole command from its start (:class:`qpcore_cli.common.Deadline`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``qpcore train`` arguments.

    Returns
    -------
    int
        0 when every problem converged, else the code of the worst status (:data:`EXIT_CODES`).

    Raises
    ------
    CLIError
        On bad input (exit status 2, nothing written).
    """
    from qpcore_cli.crossval import run_cross_validation   # it builds on this module

    t0 = time.perf_counter()
    deadline = Deadline(args.time_limit, start=t0)
    linear, scheme, notes = _resolve(args)
    svm_type = args.svm_type or "c-svc"
    function = svm_type in FUNCTION_TYPES
    C = 1.0 if args.C is None else float(args.C)
    nu = 0.5 if args.nu is None else float(args.nu)
    epsilon = 0.1 if args.epsilon is None else float(args.epsilon)
    cv = args.folds is not None
    if args.model_file is None and not cv:
        args.model_file = default_model_file(args.data)
    if cv and args.model_file is not None:
        notes.append(f"-v {args.folds}: cross-validation only, no model file is written ({args.model_file!r} "
                     "is not used)")
    check_writable(args.json)
    if not cv:
        check_writable(args.model_file, "model file")
    X, y, base = read_data(args.data, "training", args.index_base, args.n_features)
    if X.shape[0] == 0:
        raise CLIError(f"training file {args.data!r} has no examples")
    n, d = (int(v) for v in X.shape)
    classes: NDArray[Any] = np.zeros(0)
    y_idx: NDArray[np.intp] = np.zeros(0, dtype=np.intp)
    pairs: NDArray[np.intp] = np.zeros((0, 2), dtype=np.intp)
    weights = np.ones(0)
    if function:
        names = [svm_type]
    else:
        classes, inverse = np.unique(class_labels(y), return_inverse=True)
        y_idx = inverse.astype(np.intp).ravel()
        if classes.size < 2:
            raise CLIError(f"training file {args.data!r} holds one class only (label "
                           f"{labels_to_strings(classes)[0][0]}); a classifier needs two or more")
        weights = _class_weights(args.class_weight, classes)
        pairs = problems_of(int(classes.size), cast("Literal['ovo', 'ovr']", scheme))
        names = problem_names(classes, pairs)
    options = entry_options(REGISTRY[args.strategy], args)
    strategy = make_strategy(args.strategy, options)
    relative = strategy.criterion == "relative_gap"
    max_iter = args.max_iter
    settings: dict[str, Any] = {"type": svm_type, "strategy": args.strategy, **options}
    if svm_type in ("c-svc", "epsilon-svr", "nu-svr"):
        settings["C"] = C
    if svm_type in ("nu-svc", "one-class", "nu-svr"):
        settings["nu"] = nu
    if svm_type == "epsilon-svr":
        settings["epsilon"] = epsilon
    settings["tol"] = args.tol
    if not function:
        settings.update(scheme=scheme, class_weight={labels_to_strings(classes)[0][k]: float(weights[k])
                                                     for k in range(classes.size) if weights[k] != 1.0})
    kernel: Kernel | None = None
    bias = 1.0
    if linear:
        if args.strategy == "asvm" and not np.all(weights == 1.0):
            raise CLIError("--class-weight needs a hinge-loss strategy (ocas, ocas-active, bmrm): the ASVM "
                           "dual of the squared hinge takes one C for every example")
        bias = 1.0 if args.bias is None else float(args.bias)
        max_iter = 1000 if max_iter is None else max_iter
        settings.update(kind="linear", loss="squared_hinge" if args.strategy == "asvm" else "hinge", bias=bias,
                        max_iter=max_iter, time_limit=args.time_limit)
    else:
        kernel, kernel_settings = _kernel_of(args, d)
        max_iter = max(10_000_000, 100 * n) if max_iter is None else max_iter
        settings.update(kind="kernel", **kernel_settings, cache_mb=args.cache_mb, max_iter=max_iter,
                        time_limit=args.time_limit)
    job = TrainJob(svm_type=svm_type, strategy_name=args.strategy, strategy=strategy, kernel=kernel, classes=classes,
                   weights=weights, scheme=cast("Literal['ovo', 'ovr']", scheme), C=C, nu=nu, epsilon=epsilon,
                   bias=bias, tol=args.tol, max_iter=max_iter, cache_bytes=int(args.cache_mb * (1 << 20)),
                   deadline=deadline)
    if not args.quiet:
        for note in notes:
            print(f"qpcore: note: {note}", file=sys.stderr, flush=True)
    if cv:
        return run_cross_validation(args, job, X, y, y_idx, settings, notes, t0)
    reporter = _reporter(args, names, args.tol, relative)
    t1 = time.perf_counter()
    model: Model
    try:
        model, results = job.fit(X, y, y_idx, reporter)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    finally:
        if reporter is not None:
            reporter.close()
    t2 = time.perf_counter()
    skipped: list[str] = []
    if args.probability and isinstance(model, MulticlassSVM):
        model, cut = _calibrate(job, model, X, y_idx)
        skipped += cut
        settings["probability"] = model.prob_a is not None
    fit, fit_info, cut = _fit_pass(model, X, y, y_idx, svm_type, args.train_accuracy, deadline)
    skipped += cut
    if isinstance(model, SVMModel) and model.r is not None:
        fit["r"] = model.r      # ν-SVR: −r is the tube width ε the solution found
    t3 = time.perf_counter()
    worst = worst_status([r.status for r in results])
    code = exit_code(worst)
    problems = []
    row_pairs = pairs.tolist() if not function else [[-1, -1]]
    for name_p, (i, j), r in zip(names, row_pairs, results):
        entry: dict[str, Any] = {
            "name": name_p.split(": ", 1)[-1], "pair": [int(i), int(j)], "status": r.status.code,
            "iterations": r.iterations, "objective": r.objective, "kkt_measure": r.kkt.measure,
            "seconds": float(r.stats["seconds"])}
        if function:
            del entry["pair"]
        if relative and math.isfinite(r.kkt.duality_gap) and r.kkt.lower_bound != 0:
            entry["relative_gap"] = r.kkt.duality_gap / abs(r.kkt.lower_bound)
        problems.append(entry)
    n_sv = int(model.D.shape[0]) if isinstance(model, MulticlassSVM) else (
        model.n_sv if isinstance(model, SVMModel) else None)
    info = {**settings, "data": os.path.abspath(args.data), "n_train": n, "n_features": d,
            "status": worst.code, "qpcore_formulations": [{k: p[k] for k in ("name", "status", "iterations")} for p in problems],
            **fit, "train_evaluation": fit_info, "skipped": skipped, "seconds": t2 - t1}
    save_model(args.model_file, model, svm_type=svm_type, feature_index_base=base, training=info)
    t4 = time.perf_counter()
    report: dict[str, Any] = {
        "command": "train",
        "data": args.data,
        "model_file": args.model_file,
        "n_train": n,
        "n_features": d,
        "feature_index_base": base,
        "classes": None if function else labels_to_strings(classes)[0],
        "class_counts": None if function else np.bincount(y_idx, minlength=classes.size).tolist(),
        **settings,
        "status": worst.code,
        "status_message": worst.message,
        "converged": worst is Status.CONVERGED,
        "exit_status": code,
        "n_problems": len(problems),
        "qpcore_formulations": problems,
        "iterations": sum(r.iterations for r in results),
        "n_sv": n_sv,
        "train_accuracy": None,
        **fit,
        "train_evaluation": fit_info,
        "skipped": skipped,
        "notes": notes,
        "seconds": t2 - t1,
        "post_seconds": t3 - t2,
        "total_seconds": t4 - t0,
        "qpcore_version": __version__,
    }
    if args.json != "-":
        _print_train_summary(report, names, results)
    if args.json is not None:
        write_json(report, args.json)
    return code


def _kernel_text(r: Mapping[str, Any]) -> str:
    """``rbf kernel, gamma 0.0081 (1/n_features)``: the kernel and the γ actually used."""
    text = f"{r['kernel']} kernel"
    if r.get("gamma") is not None:
        src = r.get("gamma_source")
        text += f", gamma {r['gamma']:.6g}" + (f" ({src})" if src not in (None, "given") else "")
    if r.get("degree") is not None:
        text += f", degree {r['degree']}"
    if r.get("coef0") is not None:
        text += f", coef0 {r['coef0']:g}"
    return text


def _fit_text(r: Mapping[str, Any], value: str) -> str:
    """The training-accuracy value with how it was obtained (sample, cut, skipped, off)."""
    ev = r["train_evaluation"]
    if ev["rows"] == 0:
        return f"- ({ev.get('reason', 'skipped')})"
    if ev["sample"]:
        return f"{value} (seeded sample of {ev['rows']:,} of {ev['of']:,} rows)"
    if ev["cut"]:
        return f"{value} (first {ev['rows']:,} of {ev['of']:,} rows: time limit)"
    return value


def _print_train_summary(r: dict[str, Any], names: list[str], results: list[Result]) -> None:
    what = (_kernel_text(r) if r["kind"] == "kernel"
            else f"linear, {r['loss'].replace('_', ' ')} loss, bias {r['bias']:g}")
    params = ", ".join(f"{k} {r[k]:g}" for k in ("C", "nu", "epsilon") if k in r)
    n_conv = sum(res.status is Status.CONVERGED for res in results)
    classes = r["classes"]
    if classes is None:
        data = f"{r['n_train']} examples, {r['n_features']} features"
        model = f"{r['type']}, {what}, {params}, {r['strategy']}"
    else:
        scheme = {"ovo": "one-vs-one", "ovr": "one-vs-rest"}[r["scheme"]] if len(results) > 1 else "binary"
        data = (f"{r['n_train']} examples, {r['n_features']} features, {len(classes)} classes "
                f"({', '.join(classes[:10])}{' ...' if len(classes) > 10 else ''})")
        model = f"{r['type']}, {what}, {params}, {r['strategy']}, {scheme}"
    lines = [
        ("data", data),
        ("model", model),
        ("qpcore_formulations", f"{len(results)} ({n_conv} converged)"),
        ("status", f"{r['status']} (exit {r['exit_status']})"),
    ]
    bad = [f"{nm.split(': ', 1)[-1]}: {res.status.code}" for nm, res in zip(names, results)
           if res.status is not Status.CONVERGED]
    if bad:
        lines.append(("not converged", "; ".join(bad[:5]) + (f"; ... ({len(bad)} in all)" if len(bad) > 5 else "")))
    if r["n_sv"] is not None:
        lines.append(("support vectors", f"{r['n_sv']} of {r['n_train']}"))
    if r.get("probability") is not None:
        lines.append(("probability", "Platt's sigmoids fitted (-b 1)" if r["probability"] else "none (skipped)"))
    lines += [
        ("iterations", f"{r['iterations']}"),
        ("time", f"{r['seconds']:.3f} s training, {r['total_seconds']:.3f} s in all"),
    ]
    if "train_mse" in r:
        lines += [("train MSE", _fit_text(r, f"{r['train_mse']:g}")), ("train SCC", f"{r['train_scc']:g}")]
    elif r["type"] == "one-class":
        lines.append(("train outliers", _fit_text(r, _pct(r.get("train_outlier_fraction")))))
    elif r["type"] in ("epsilon-svr", "nu-svr"):
        lines.append(("train MSE", _fit_text(r, "-")))
    else:
        lines.append(("train accuracy", _fit_text(r, _pct(r["train_accuracy"]))))
    if r["skipped"]:
        lines.append(("skipped", "; ".join(r["skipped"])))
    lines.append(("model file", r["model_file"]))
    for name, value in lines:
        print(f"{name:<16} {value}")
    sys.stdout.flush()
