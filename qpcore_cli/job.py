"""What ``qpcore train`` trains, on any rows: the job, its statuses and what its model answers.

:class:`TrainJob` holds the command's formulation (:mod:`qpcore_formulations.formulation`), its
parameters, the kernel and strategy and the limits, and trains them on the rows given (the
model, or a cross-validation fold): a kernel formulation through the training layer
(:func:`qpcore_train.fit.fit_formulation`), the linear C-SVC of the linear strategies through
:func:`train_linear`. :func:`worst_status` and :func:`exit_code` turn the runs' statuses into the
command's exit status; :func:`predict_rows` and :func:`fit_metrics` are what a model answers and
how that is scored (accuracy, outlier fraction, or svm-predict's :func:`regression_metrics`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.core.solve import Reporter, Strategy
from qpcore.core.state import Result, Status
from qpcore_cli.common import CLIError, Deadline
from qpcore_cli.model import LinearModel, Model
from qpcore_formulations.formulation import Formulation, Predicts, formulation
from qpcore_formulations.svm import SVMModel
from qpcore_strategies.registry import make
from qpcore_train.fit import fit_formulation
from qpcore_train.multiclass import linear_binary, problems_of
from qpcore_train.pipeline import Refused

__all__ = ["EXIT_CODES", "TrainJob", "exit_code", "fit_metrics", "make_strategy", "predict_rows",
           "regression_metrics", "refused", "train_linear", "worst_status"]

FloatArray = Any  # NDArray[np.float64], kept loose for the sparse/dense mix

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


def train_linear(X: Any, y_idx: NDArray[np.intp], classes: NDArray[Any], C_i: FloatArray, strategy_name: str,
                 strategy: Strategy, *, scheme: Literal["ovo", "ovr"], bias: float, tol: float,
                 max_iter: int | None, time_limit: float | None,
                 reporter: Reporter | None, deadline: Deadline | None = None) -> tuple[LinearModel, list[Result]]:
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
    reporter : Reporter or None
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




def refused(exc: Refused, strategy_name: str) -> CLIError:
    """The command line's line for a strategy that cannot take a formulation's problem."""
    return CLIError(f"--strategy {strategy_name} cannot take the {exc.formulation} dual: {exc.reason}")


@attrs.frozen(eq=False)
class TrainJob:
    """What ``qpcore train`` trains, on any subset of the rows (the model, or a cross-validation fold).

    Attributes
    ----------
    formulation : Formulation
        The ``--type`` (:mod:`qpcore_formulations.formulation`).
    params : dict
        Its parameters (``-c``, ``-n``, ``-p``, ...), checked.
    strategy_name : str
    strategy : Strategy
    kernel : Kernel or None
        None for a linear strategy (the formulation's linear model, C-SVC's).
    classes : ndarray
        The labels of a classifier (empty for a novelty or value formulation).
    weights : ndarray
        Per-class factor on the loss (``-wLABEL``).
    scheme : {"ovo", "ovr"}
    bias : float
        The constant feature of a linear strategy.
    tol : float
    max_iter : int or None
    cache_bytes : int
    deadline : Deadline
        The command's; every solve gets the time left.
    """

    formulation: Formulation
    params: dict[str, float]
    strategy_name: str
    strategy: Strategy
    kernel: Kernel | None
    classes: NDArray[Any]
    weights: FloatArray
    scheme: Literal["ovo", "ovr"]
    bias: float
    tol: float
    max_iter: int | None
    cache_bytes: int
    deadline: Deadline

    @property
    def svm_type(self) -> str:
        """The formulation's name (the model file's ``type``)."""
        return self.formulation.name

    @property
    def classifier(self) -> bool:
        """Whether the formulation predicts labels (a classifier over two or more classes)."""
        return self.formulation.predicts is Predicts.LABEL

    def fit(self, X: Any, y: NDArray[Any], y_idx: NDArray[np.intp],
            reporter: Reporter | None = None) -> tuple[Model, list[Result]]:
        """Train on the rows given.

        Parameters
        ----------
        X : csr_matrix or ndarray
        y : ndarray
            Targets (value formulations).
        y_idx : ndarray of int
            Class indices into :attr:`classes` (classifiers; empty otherwise).
        reporter : Reporter, optional

        Returns
        -------
        (Model, list of Result)

        Raises
        ------
        ProblemError
            What the formulation's builder refuses.
        CLIError
            A strategy that cannot take the problem.
        """
        if self.kernel is None:
            # the linear strategies train the formulation's linear model: C-SVC's, box C times the class weight
            C_i = self.params["C"] * self.weights[y_idx]
            return train_linear(X, y_idx, self.classes, C_i, self.strategy_name, self.strategy, scheme=self.scheme,
                                bias=self.bias, tol=self.tol, max_iter=self.max_iter, time_limit=None,
                                reporter=reporter, deadline=self.deadline)
        return self.fit_classes(X, y, y_idx, self.classes, reporter)

    def fit_classes(self, X: Any, y: NDArray[Any], y_idx: NDArray[np.intp], classes: NDArray[Any],
                    reporter: Reporter | None = None) -> tuple[Model, list[Result]]:
        """Train the kernel formulation with ``classes`` (a subset of :attr:`classes` for a
        calibration fold; y_idx indexes :attr:`classes`).

        Returns
        -------
        (Model, list of Result)
        """
        assert self.kernel is not None
        labels = self.classes[y_idx] if self.classifier else y
        weights = self.weights[np.searchsorted(self.classes, classes)] if self.classifier else None
        try:
            fitted = fit_formulation(self.formulation, X, labels, self.kernel, self.strategy, params=self.params,
                                     class_weight=weights, classes=classes if self.classifier else None,
                                     scheme=self.scheme, tol=self.tol, max_iter=self.max_iter,
                                     deadline=self.deadline.at, reporter=reporter, cache_bytes=self.cache_bytes)
        except Refused as exc:
            raise refused(exc, self.strategy_name) from None
        return fitted.model, fitted.results


def predict_rows(model: Model, X: Any) -> FloatArray:
    """A model's answer per row: the class index (classifiers), the value (regressions), ±1 (novelty).

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
        return f if formulation(model.kind).predicts is Predicts.VALUE else np.where(f > 0, 1.0, -1.0)
    return np.asarray(model.predict_index(model.raw(X)))


def fit_metrics(form: Formulation, pred: NDArray[Any], truth: NDArray[Any] | None) -> dict[str, float]:
    """How well :func:`predict_rows`' answers fit: ``train_accuracy`` (label formulations: class
    indices), ``train_outlier_fraction`` (novelty: the share of −1), ``train_mse`` and
    ``train_scc`` (value: :func:`regression_metrics` against the targets).

    Returns
    -------
    dict
    """
    if form.predicts is Predicts.VALUE:
        assert truth is not None
        mse, scc = regression_metrics(pred, truth)
        return {"train_mse": mse, "train_scc": scc}
    if form.predicts is Predicts.NOVELTY:
        return {"train_outlier_fraction": float(np.mean(pred < 0))}
    assert truth is not None
    return {"train_accuracy": float(np.mean(pred == truth))}
