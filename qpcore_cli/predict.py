"""``qpcore predict``: svm-predict over a model file written by ``qpcore train``.

``qpcore predict DATA MODEL [OUTPUT]`` reads the model file (:mod:`qpcore_cli.model`) and DATA
(with the model's feature numbering), and writes one predicted label per line (a regression: its
value), with the accuracy (a regression: svm-predict's mean squared error and squared
correlation coefficient) on stdout, or on stderr when the predictions go to stdout. svm-predict's
``-b 1`` writes its probability lines instead: a first line ``labels A B ...``, then per row the
most probable class and each class's probability (a model trained with ``qpcore train -b 1``);
``--decision`` writes every binary problem's decision value. Exit status 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import scipy.sparse as sp

from qpcore_train.multiclass import MulticlassSVM
from qpcore_formulations.svm import SVMModel
from qpcore import __version__
from qpcore.core.problem import ProblemError
from qpcore_cli.common import CLIError, check_writable, write_json
from qpcore_cli.libsvm_options import PREDICT_MAPPING, add_predict_arguments, mapping_text
from qpcore_cli.model import ModelFile, class_labels, labels_to_strings, load_model_file
from qpcore_cli.data import read_data, with_width
from qpcore_cli.job import regression_metrics
from qpcore_formulations.formulation import Predicts, formulation

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["PREDICT_EPILOG", "add_predict_arguments", "run_predict"]

FloatArray = Any  # NDArray[np.float64]

#: The ``--help`` epilog of ``qpcore predict``: svm-predict's options, the exit codes.
PREDICT_EPILOG = mapping_text("svm-predict's options and their long names:", PREDICT_MAPPING) + """

exit status: 0 predictions written; 2 bad input or usage (a missing or invalid file, a model
file of an unknown version, labels in DATA that the model never saw), one line on stderr.

DATA is read with the model's feature numbering. Missing trailing features are zeros; features
beyond the model's are zeros in the model (as svm-predict treats them: they add to an RBF
distance, and to nothing else), with a warning on stderr."""


def _format_column(values: NDArray[Any], classes: NDArray[Any]) -> list[str]:
    text = labels_to_strings(classes)[0]
    return [text[k] for k in values.tolist()]


def _label_index(y: NDArray[Any], classes: NDArray[Any]) -> NDArray[np.intp]:
    """The class index of each label of DATA, −1 for a label the model never saw."""
    out = np.full(y.shape[0], -1, dtype=np.intp)
    if classes.dtype.kind in "iuf":
        cls = classes.astype(np.float64)
        order = np.argsort(cls)
        pos = np.clip(np.searchsorted(cls[order], y), 0, cls.size - 1)
        hit = cls[order][pos] == y
        out[hit] = order[pos[hit]]
        return out
    uniq, inv = np.unique(y, return_inverse=True)
    if uniq.size == 0:
        return out
    index = {s: k for k, s in enumerate(labels_to_strings(classes)[0])}
    idx = np.array([index.get(s, -1) for s in labels_to_strings(class_labels(uniq))[0]], dtype=np.intp)
    out = idx[inv.ravel()]
    return out


def _predict_function(args: argparse.Namespace, loaded: ModelFile, model: SVMModel, X: Any, y: NDArray[Any],
                      warning: str | None, t0: float) -> int:
    """``qpcore predict`` for a one-class model or a regression (one decision function)."""
    svm_type = loaded.type
    if warning is not None:
        print(f"qpcore: warning: {warning}", file=sys.stderr)
    try:
        f = model.decision_function(X)
    except (ProblemError, ValueError) as exc:
        raise CLIError(f"cannot predict {args.data!r}: {exc}") from None
    n = int(X.shape[0])
    regression = formulation(svm_type).predicts is Predicts.VALUE
    if regression:
        labels = [f"{v:.17g}" for v in f.tolist()]
    else:
        pred = np.where(f > 0, 1, -1)
        labels = [str(v) for v in pred.tolist()]
    if args.decision:
        body = [f"{lab} {v:.17g}" for lab, v in zip(labels, f.tolist())]
        lines = ["# " + ("value" if regression else "label") + " decision", *body]
    else:
        lines = labels
    _write_predictions(args.output, lines)
    target = np.asarray(y, dtype=np.float64)
    correct: int | None = None
    accuracy: float | None = None
    mse: float | None = None
    scc: float | None = None
    note = None
    if not args.unlabeled and n:
        if regression:
            mse, scc = regression_metrics(f, target)
        elif np.isin(target, (-1.0, 1.0)).all():
            correct = int(np.sum(pred == target))
            accuracy = correct / n
        else:
            note = (f"{args.data!r} has labels other than +1/-1: no accuracy for a one-class model (pass "
                    "--unlabeled to silence this)")
    report: dict[str, Any] = {
        "command": "predict", "data": args.data, "model_file": args.model_file, "output": args.output,
        "type": svm_type, "kind": loaded.header.get("kind"), "classes": None if regression else ["-1", "1"], "n": n,
        "n_features": int(X.shape[1]), "model_features": int(model.sv.shape[1]), "correct": correct,
        "accuracy": accuracy, "mean_squared_error": mse, "squared_correlation": scc, "warning": warning,
        "seconds": time.perf_counter() - t0, "qpcore_version": __version__,
    }
    if not args.quiet and args.json != "-":
        stream = sys.stdout if args.output is not None else sys.stderr
        if mse is not None:
            # svm-predict's two lines, its %g
            print(f"Mean squared error = {mse:g} (regression)", file=stream)
            print(f"Squared correlation coefficient = {scc:g} (regression)", file=stream, flush=True)
        elif accuracy is not None:
            # svm-predict's %g
            print(f"Accuracy = {100 * accuracy:g}% ({correct}/{n})", file=stream, flush=True)
        elif note is not None:
            print(f"qpcore: note: {note}", file=sys.stderr, flush=True)
    if args.json is not None:
        write_json(report, args.json)
    return 0


def _probabilities(model: MulticlassSVM, X: Any) -> FloatArray:
    """Class probabilities of a model trained with ``-b 1`` (columns in the order of its classes)."""
    return np.asarray(model.predict_proba(X), dtype=np.float64)


def _write_predictions(output: str | None, lines: list[str]) -> None:
    """One line per row to OUTPUT, or to stdout."""
    out_text = "\n".join(lines) + ("\n" if lines else "")
    if output is None:
        sys.stdout.write(out_text)
        sys.stdout.flush()
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(out_text)
    except OSError as exc:
        raise CLIError(f"cannot write {output!r}: {exc.strerror or exc}") from None


def run_predict(args: argparse.Namespace) -> int:
    """``qpcore predict``: read a model file and data, write predictions, report accuracy.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``qpcore predict`` arguments.

    Returns
    -------
    int
        0 (bad input raises).

    Raises
    ------
    CLIError
        On bad input (exit status 2): a missing or invalid file, a model file of an unknown
        version, labels the model never saw (unless ``--allow-unseen-labels`` or ``--unlabeled``).
    """
    t0 = time.perf_counter()
    check_writable(args.json)
    if args.output is None and args.json == "-":
        raise CLIError("--json - and the predictions would both go to stdout: give an OUTPUT file or --json FILE")
    if args.output is not None:
        if os.path.isdir(args.output):
            raise CLIError(f"output {args.output!r} is a directory")
        parent = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(parent):
            raise CLIError(f"output {args.output!r}: folder {parent!r} does not exist")
    if args.probability and args.decision:
        raise CLIError("-b 1 and --decision both choose the columns: give one of them")
    loaded = load_model_file(args.model_file)
    model = loaded.model
    if args.probability and not (isinstance(model, MulticlassSVM) and model.prob_a is not None):
        raise CLIError(f"model {args.model_file!r} does not support probability estimates: train it with "
                       "'qpcore train -b 1' (a c-svc or nu-svc with a kernel strategy)")
    X, y, _ = read_data(args.data, "data", str(loaded.feature_index_base))
    d = int(model.sv.shape[1]) if isinstance(model, SVMModel) else model.n_features
    warning = None
    if X.shape[1] < d:
        X = with_width(X, d)
    elif X.shape[1] > d:
        extra = sp.csr_matrix(X)[:, d:]
        if extra.count_nonzero():
            first = int(d + loaded.feature_index_base)
            warning = (f"{args.data!r} has features beyond the model's {d} (numbers {first} to "
                       f"{X.shape[1] - 1 + loaded.feature_index_base}); the model treats them as zeros")
            if isinstance(model, MulticlassSVM):
                model = attrs.evolve(model, sv=with_width(model.sv, int(X.shape[1])))
            elif isinstance(model, SVMModel):
                wide = int(X.shape[1])
                w = None if model.w is None else np.pad(model.w, (0, wide - d))
                model = attrs.evolve(model, sv=with_width(model.sv, wide), w=w)
            else:
                X = sp.csr_matrix(X)[:, :d]
        else:
            X = sp.csr_matrix(X)[:, :d]
    if isinstance(model, SVMModel):
        return _predict_function(args, loaded, model, X, y, warning, t0)
    classes = model.classes
    truth = None if args.unlabeled else _label_index(np.asarray(y, dtype=np.float64), classes)
    unseen: list[str] = []
    n_unseen = 0
    if truth is not None and (truth < 0).any():
        bad = np.unique(np.asarray(y)[truth < 0])
        unseen = labels_to_strings(class_labels(bad))[0]
        n_unseen = int((truth < 0).sum())
        if not args.allow_unseen_labels:
            shown = ", ".join(unseen[:10]) + (" ..." if len(unseen) > 10 else "")
            raise CLIError(f"{args.data!r} has label(s) {shown} ({n_unseen} rows) that the model never saw "
                           f"(its classes: {', '.join(labels_to_strings(classes)[0])}); pass --unlabeled if the "
                           "labels are placeholders, or --allow-unseen-labels to count those rows as errors")
    if warning is not None:
        print(f"qpcore: warning: {warning}", file=sys.stderr)
    try:
        raw = model.raw(X)
        proba = _probabilities(model, X) if args.probability and isinstance(model, MulticlassSVM) else None
    except (ProblemError, ValueError) as exc:
        raise CLIError(f"cannot predict {args.data!r}: {exc}") from None
    # under -b 1 the label is the most probable class, as svm-predict's
    pred = model.predict_index(raw) if proba is None else np.argmax(proba, axis=1).astype(np.intp)
    labels = _format_column(pred, classes)
    if proba is not None:
        lines = ["labels " + " ".join(labels_to_strings(classes)[0]),
                 *(f"{lab} " + " ".join(f"{v:g}" for v in row) for lab, row in zip(labels, proba.tolist()))]
    elif args.decision:
        text = labels_to_strings(classes)[0]
        cols = [f"{text[i]}/{'rest' if j < 0 else text[j]}" for i, j in model.pairs]
        body = [f"{lab} " + " ".join(f"{v:.17g}" for v in row) for lab, row in zip(labels, raw.tolist())]
        lines = ["# label " + " ".join(cols), *body]
    else:
        lines = labels
    _write_predictions(args.output, lines)
    n = int(X.shape[0])
    correct = None if truth is None else int(np.sum(pred == truth))
    accuracy = None if correct is None or n == 0 else correct / n
    report: dict[str, Any] = {
        "command": "predict", "data": args.data, "model_file": args.model_file, "output": args.output,
        "type": loaded.type, "kind": loaded.header.get("kind"), "classes": labels_to_strings(classes)[0], "n": n,
        "n_features": int(X.shape[1]), "model_features": d, "correct": correct, "accuracy": accuracy,
        "unseen_labels": unseen, "n_unseen": n_unseen, "warning": warning, "probability": proba is not None,
        "seconds": time.perf_counter() - t0, "qpcore_version": __version__,
    }
    if not args.quiet and args.json != "-" and accuracy is not None:
        # stdout holds the predictions when no OUTPUT is given: the summary goes to stderr then
        stream = sys.stdout if args.output is not None else sys.stderr
        extra_note = f", {n_unseen} with unseen labels" if n_unseen else ""
        print(f"Accuracy = {100 * accuracy:g}% ({correct}/{n}){extra_note}", file=stream, flush=True)
    if args.json is not None:
        write_json(report, args.json)
    return 0

