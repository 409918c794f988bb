"""``qpcore train -v N``: svm-train's cross-validation.

The rows are split into N folds (LIBSVM's: each class dealt evenly over the folds for the
classifiers, :func:`qpcore_train.model_selection.stratified_folds`; a seeded permutation cut into N
runs for one-class and the regressions), each fold is predicted by a model trained on the others,
and svm-train's lines are printed: ``Cross Validation Accuracy = 85.1234%`` (classifiers and
one-class, whose ±1 answers are compared with the labels), or ``Cross Validation Mean squared
error = ...`` and ``Cross Validation Squared correlation coefficient = ...`` (regressions). No
model file is written.

A kernel formulation whose binary problem is C-SVC's dual (``standard_dual``, C-SVC's) goes to
:func:`qpcore_train.model_selection.cross_validation`, which computes the kernel once for all
folds; the other formulations (and those under ``--time-limit``, which that engine does not
take) are trained fold by fold here with the command's settings (:class:`qpcore_cli.job.TrainJob`). Under ``--time-limit`` the folds not started before the
deadline are skipped: the result covers the folds done, and says so.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from qpcore_train.model_selection import cross_validation, stratified_folds
from qpcore import __version__
from qpcore.core.problem import ProblemError
from qpcore.core.state import Status
from qpcore_cli.common import CLIError, write_json
from qpcore_cli.job import TrainJob, exit_code, predict_rows, regression_metrics, worst_status
from qpcore_formulations.formulation import Formulation, Predicts, formulation

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["cv_folds", "cv_lines", "run_cross_validation"]


def cv_folds(n: int, folds: int, y_idx: NDArray[np.intp] | None, seed: int = 0
             ) -> list[tuple[NDArray[np.intp], NDArray[np.intp]]]:
    """svm-train's folds: stratified for classifiers, a seeded permutation cut in runs otherwise.

    Parameters
    ----------
    n : int
        Number of rows.
    folds : int
        Number of folds, ≥ 2 (more than ``n``: one row per fold, leave-one-out, as svm-train).
    y_idx : ndarray of int or None
        Class indices (stratify), or None.
    seed : int
        Seed of the shuffle.

    Returns
    -------
    list of (train, test)
        Ascending index arrays; the test sets partition the rows.
    """
    if y_idx is not None:
        return stratified_folds(y_idx, folds, seed)
    k = min(int(folds), n)
    perm = np.random.default_rng(seed).permutation(n)
    out = []
    for f in range(k):
        test = np.sort(perm[f * n // k:(f + 1) * n // k]).astype(np.intp)
        mask = np.ones(n, dtype=bool)
        mask[test] = False
        out.append((np.flatnonzero(mask).astype(np.intp), test))
    return out


def cv_lines(svm_type: Formulation | str, pred: NDArray[Any], truth: NDArray[Any]
             ) -> tuple[list[str], dict[str, float]]:
    """svm-train's result lines (its ``%g``) and the same numbers for the report.

    Parameters
    ----------
    svm_type : Formulation or str
        The formulation (or its name): a value formulation gets the regression's lines.
    pred, truth : ndarray
        Predicted and true class indices (classifiers), ±1 and labels (one-class), or values
        (regressions), over the rows cross-validated.

    Returns
    -------
    (list of str, dict)
    """
    if formulation(svm_type).predicts is Predicts.VALUE:
        mse, scc = regression_metrics(pred, truth)
        return ([f"Cross Validation Mean squared error = {mse:g}",
                 f"Cross Validation Squared correlation coefficient = {scc:g}"],
                {"mean_squared_error": mse, "squared_correlation": scc})
    correct = int(np.count_nonzero(pred == truth))
    acc = correct / pred.size if pred.size else float("nan")
    # svm-train's 100.0 * total_correct / l, printed with %g
    return [f"Cross Validation Accuracy = {100.0 * correct / max(pred.size, 1):g}%"], {"accuracy": acc}


def run_cross_validation(args: argparse.Namespace, job: TrainJob, X: Any, y: NDArray[Any], y_idx: NDArray[np.intp],
                         settings: dict[str, Any], notes: list[str], t0: float) -> int:
    """``qpcore train -v N``: cross-validate, print svm-train's lines, write no model.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``qpcore train`` arguments (``folds``, ``json``, ``verbose``, ``quiet``).
    job : TrainJob
        What to train on each fold.
    X, y, y_idx :
        The training rows, their targets and (classifiers) class indices.
    settings : dict
        The command's settings, for the report.
    notes : list of str
        Notes already printed, for the report.
    t0 : float
        The command's start (``time.perf_counter()``).

    Returns
    -------
    int
        0 when every solve converged (always 0 through the engine, which reports no statuses);
        else the code of the worst status (4 ``time_limit`` when folds were skipped).

    Raises
    ------
    CLIError
        What the problem builders refuse on a fold.
    """
    n = int(X.shape[0])
    classifier = job.classifier
    engine = job.formulation.standard_dual and job.kernel is not None and job.deadline.at is None
    fold_list = cv_folds(n, args.folds, y_idx if classifier else None)
    truth = y_idx if classifier else np.asarray(y, dtype=np.float64)
    pred = np.zeros(n, dtype=np.intp if classifier else np.float64)
    done = np.zeros(n, dtype=bool)
    statuses: list[Status] = []
    skipped: list[str] = []
    try:
        if engine:
            assert job.kernel is not None
            pred[:] = cross_validation(X, y_idx, job.classes, kernel=job.kernel, C=job.params["C"], folds=args.folds, seed=0,
                                       strategy=job.strategy, tol=job.tol, cache_bytes=job.cache_bytes,
                                       class_weight=job.weights, scheme=job.scheme, max_iter=job.max_iter)[0]
            done[:] = True
        else:
            for f, (train, test) in enumerate(fold_list):
                if job.deadline.left() <= 0.0:
                    skipped.append(f"folds {f + 1} to {len(fold_list)} of {len(fold_list)} (time limit)")
                    break
                t = time.perf_counter()
                model, results = job.fit(X[train], y[train], y_idx[train] if classifier else y_idx)
                pred[test] = predict_rows(model, X[test])
                done[test] = True
                statuses += [r.status for r in results]
                if args.verbose and not args.quiet:
                    print(f"fold {f + 1}/{len(fold_list)}: {test.size} rows, {len(results)} problem(s), "
                          f"{worst_status([r.status for r in results]).code}, {time.perf_counter() - t:.2f} s",
                          file=sys.stderr, flush=True)
    except ProblemError as exc:
        raise CLIError(f"-v {args.folds}: {exc}") from None
    worst = worst_status(statuses + ([Status.TIME_LIMIT] if skipped else []))
    lines, metrics = cv_lines(job.formulation, pred[done], truth[done])
    report: dict[str, Any] = {
        "command": "train", "data": args.data, "model_file": None, "n_train": n, "n_features": int(X.shape[1]),
        **settings,
        "cross_validation": {"folds": len(fold_list), "rows": int(done.sum()), "seed": 0,
                             "engine": "qpcore_train.model_selection.cross_validation" if engine else "fold by fold",
                             **metrics},
        "status": worst.code, "exit_status": exit_code(worst), "skipped": skipped, "notes": notes,
        "total_seconds": time.perf_counter() - t0, "qpcore_version": __version__,
    }
    if args.json != "-":
        for line in lines:
            print(line)
        if skipped:
            print(f"skipped          {'; '.join(skipped)}: the numbers above cover {int(done.sum()):,} of {n:,} rows")
        sys.stdout.flush()
    if args.json is not None:
        write_json(report, args.json)
    return exit_code(worst)
