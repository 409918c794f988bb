"""``qpcore train``: LIBSVM's ``svm-train`` over every strategy and every registered formulation.

``qpcore train DATA [MODEL]`` reads a LIBSVM-format file and trains the formulation of ``--type``
(svm-train's ``-s``: LIBSVM's five, by name or number, and every other formulation of the
registry, :mod:`qpcore_formulations.formulation`, such as ``svdd`` and the L2-loss ``l2-svc``) with a
kernel strategy through the training layer (:func:`qpcore_train.fit.fit_formulation`: a label
formulation over two or more classes, one-vs-one or one-vs-rest; a novelty or value formulation
over every row), or a linear C-SVC (``--strategy asvm|ocas|ocas-active|bmrm``,
:func:`qpcore_cli.job.train_linear`), and writes the model file of :mod:`qpcore_cli.model` (by
default DATA's base name + ``.model`` in the current folder, as svm-train). Each formulation's
parameters are its options (``-c``, ``-n``, ``-p``, ``--NAME``), refused for a type that does not
take them. svm-train's short options (``-s -t -d -g -r -c -n -p -m -e -h -b -wLABEL -v -q``) have
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
``--quiet``) is :class:`qpcore_cli.progress.GapReporter`'s.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs
import numpy as np

from qpcore import __version__
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.core.state import Result, Status
from qpcore_cli.common import (
    CLIError,
    Deadline,
    check_writable,
    evaluate_rows,
    evaluation_rows,
    positive_float,
    print_lines,
    write_json,
)
from qpcore_cli.crossval import run_cross_validation
from qpcore_cli.data import read_data
from qpcore_cli.job import (
    EXIT_CODES,
    TrainJob,
    exit_code,
    fit_metrics,
    make_strategy,
    predict_rows,
    regression_metrics,
    train_linear,
    worst_status,
)
from qpcore_cli.libsvm_options import (
    TRAIN_MAPPING,
    add_train_arguments,
    default_model_file,
    mapping_text,
    svm_type_arg,
)
from qpcore_cli.model import Model, class_labels, labels_to_strings, save_model
from qpcore_cli.progress import GapReporter, gap_reporter, problem_names
from qpcore_cli.registry import entry_options
from qpcore_formulations.builtin import C_SVC
from qpcore_formulations.formulation import FORMULATIONS, Formulation, Predicts, formulation
from qpcore_formulations.svm import SVMModel
from qpcore_strategies.registry import KERNEL_STRATEGIES, LINEAR_STRATEGIES, REGISTRY
from qpcore_train.multiclass import MulticlassSVM, problems_of
from qpcore_train.probability import calibrate

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from qpcore.backends.operators import KernelName

# the statuses, the job and the progress display live in qpcore_cli.job and qpcore_cli.progress;
# their names stay importable from here
__all__ = ["EXIT_BAD_INPUT", "EXIT_CODES", "EXIT_EPILOG", "KERNEL_STRATEGIES", "LINEAR_STRATEGIES",
           "GapReporter", "TrainJob", "add_train_arguments", "exit_code", "make_strategy",
           "predict_rows", "problem_names", "read_data", "regression_metrics", "run_train",
           "svm_type_arg", "train_linear", "worst_status"]

FloatArray = Any  # NDArray[np.float64], kept loose for the sparse/dense mix

#: Exit status for bad input or usage (one line ``qpcore: error: ...`` on stderr).
EXIT_BAD_INPUT = 2

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
# Options
# --------------------------------------------------------------------------------------------


def _names(pick: Any) -> list[str]:
    """The registered formulations ``pick(f)`` is true of, in the registry's order."""
    return [f.name for f in FORMULATIONS.values() if pick(f)]


def _parameter_flags() -> dict[str, tuple[str, list[str]]]:
    """Each parameter name of the registry: its option's name in messages and the formulations
    that take it (svm-train ignores an option the type does not use; here it is refused, as
    --bias is for a kernel strategy)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for f in FORMULATIONS.values():
        for p in f.parameters:
            out.setdefault(p.name, (p.flag or f"--{p.name}", []))[1].append(f.name)
    return out


@attrs.frozen
class _Resolved:
    form: Formulation
    params: dict[str, float]
    linear: bool
    scheme: Literal["ovo", "ovr"]
    notes: list[str]


def _resolve(args: argparse.Namespace) -> _Resolved:
    """Check option combinations and the formulation's parameters."""
    form = formulation(args.svm_type or C_SVC.name)
    for name, (flag, types) in _parameter_flags().items():
        if getattr(args, name, None) is not None and name not in form.parameter_names:
            raise CLIError(f"{flag} applies to --type {', '.join(types)}, not to --type {form.name}")
    label = form.predicts is Predicts.LABEL
    for given, flag, types in ((args.class_weight, "-wLABEL/--class-weight", _names(lambda f: f.class_weights)),
                               (args.multiclass, "--multiclass", _names(lambda f: f.predicts is Predicts.LABEL))):
        if given is not None and form.name not in types:
            raise CLIError(f"{flag} applies to --type {', '.join(types)}, not to --type {form.name}")
    try:
        params = form.params({name: getattr(args, name, None) for name in form.parameter_names})
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    linear = args.strategy in LINEAR_STRATEGIES
    if linear and not form.linear:
        raise CLIError(f"--type {form.name} needs a kernel strategy ({', '.join(KERNEL_STRATEGIES)}); "
                       f"--strategy {args.strategy} trains a linear {' or '.join(_names(lambda f: f.linear))}")
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
        if not label or linear:
            raise CLIError(f"-b 1 (probability estimates) needs a kernel classifier (--type "
                           f"{' or '.join(_names(lambda f: f.predicts is Predicts.LABEL))} with "
                           f"{', '.join(KERNEL_STRATEGIES)}), not --type {form.name} with --strategy {args.strategy}")
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
    return _Resolved(form, params, linear, cast("Literal['ovo', 'ovr']", scheme), notes)


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


# --------------------------------------------------------------------------------------------
# Training and the passes after it
# --------------------------------------------------------------------------------------------


def _fit_pass(model: Model, X: Any, y: NDArray[Any], y_idx: NDArray[np.intp], form: Formulation, mode: str,
              deadline: Deadline) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The training-accuracy pass of ``--train-accuracy``: (metrics, how it was run, what was skipped)."""
    n = int(X.shape[0])
    rows, info = evaluation_rows(n, mode)
    if rows is None:
        return {}, info, []
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
    truth = {Predicts.LABEL: y_idx, Predicts.VALUE: y}.get(form.predicts)
    fit: dict[str, Any] = fit_metrics(form, np.concatenate(outs), None if truth is None else truth[rows[:done]])
    return fit, info, skipped


def _calibrate(job: TrainJob, model: MulticlassSVM, X: Any, y_idx: NDArray[np.intp]
               ) -> tuple[MulticlassSVM, list[str]]:
    """``-b 1``: Platt's sigmoids from 5-fold cross-validation inside every pair (LIBSVM's)."""
    if job.deadline.left() <= 0.0:
        return model, ["probability calibration, -b 1 (time limit; the model has no probabilities)"]
    statuses: list[Status] = []

    def fit_fn(X_sub: Any, y_sub: NDArray[np.intp]) -> MulticlassSVM:
        # the fold's classes only (a pair's two), numbered among themselves
        trained, results = job.fit_classes(X_sub, np.zeros(0), y_sub, job.classes[np.unique(y_sub)])
        statuses.extend(r.status for r in results)
        assert isinstance(trained, MulticlassSVM)
        return trained

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
    t0 = time.perf_counter()
    deadline = Deadline(args.time_limit, start=t0)
    how = _resolve(args)
    form, notes = how.form, how.notes
    function = form.predicts is not Predicts.LABEL
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
        names = [form.name]
    else:
        classes, inverse = np.unique(class_labels(y), return_inverse=True)
        y_idx = inverse.astype(np.intp).ravel()
        if classes.size < 2:
            raise CLIError(f"training file {args.data!r} holds one class only (label "
                           f"{labels_to_strings(classes)[0][0]}); a classifier needs two or more")
        weights = _class_weights(args.class_weight, classes)
        pairs = problems_of(int(classes.size), how.scheme)
        names = problem_names(classes, pairs)
    options = entry_options(REGISTRY[args.strategy], args)
    strategy = make_strategy(args.strategy, options)
    relative = strategy.criterion == "relative_gap"
    max_iter = args.max_iter
    settings: dict[str, Any] = {"type": form.name, "strategy": args.strategy, **options, **how.params,
                                "tol": args.tol}
    if not function:
        settings.update(scheme=how.scheme, class_weight={labels_to_strings(classes)[0][k]: float(weights[k])
                                                         for k in range(classes.size) if weights[k] != 1.0})
    kernel: Kernel | None = None
    bias = 1.0
    if how.linear:
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
    job = TrainJob(formulation=form, params=how.params, strategy_name=args.strategy, strategy=strategy,
                   kernel=kernel, classes=classes, weights=weights, scheme=how.scheme, bias=bias, tol=args.tol,
                   max_iter=max_iter, cache_bytes=int(args.cache_mb * (1 << 20)), deadline=deadline)
    if not args.quiet:
        for note in notes:
            print(f"qpcore: note: {note}", file=sys.stderr, flush=True)
    if cv:
        return run_cross_validation(args, job, X, y, y_idx, settings, notes, t0)
    reporter = gap_reporter(args, names, args.tol, relative)
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
    fit, fit_info, cut = _fit_pass(model, X, y, y_idx, form, args.train_accuracy, deadline)
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
            "status": worst.code, "problems": [{k: p[k] for k in ("name", "status", "iterations")} for p in problems],
            **fit, "train_evaluation": fit_info, "skipped": skipped, "seconds": t2 - t1}
    save_model(args.model_file, model, svm_type=form.name, feature_index_base=base, training=info)
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
        "problems": problems,
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
        _print_train_summary(report, names, results, form)
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


def _print_train_summary(r: dict[str, Any], names: list[str], results: list[Result], form: Formulation) -> None:
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
        ("problems", f"{len(results)} ({n_conv} converged)"),
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
    elif form.predicts is Predicts.NOVELTY:
        lines.append(("train outliers", _fit_text(r, _pct(r.get("train_outlier_fraction")))))
    elif form.predicts is Predicts.VALUE:
        lines.append(("train MSE", _fit_text(r, "-")))
    else:
        lines.append(("train accuracy", _fit_text(r, _pct(r["train_accuracy"]))))
    if r["skipped"]:
        lines.append(("skipped", "; ".join(r["skipped"])))
    lines.append(("model file", r["model_file"]))
    print_lines(lines)
