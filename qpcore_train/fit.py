"""Training any registered formulation: the one entry of the command line and the estimators.

:func:`fit_formulation` takes a formulation (by name or object,
:mod:`qpcore_formulations.formulation`), the data, its parameters, a kernel and a strategy, and
trains it the way its ``predicts`` says: a label formulation through the multiclass layer
(:func:`qpcore_train.multiclass.train_multiclass`: one binary problem per pair of classes, a
:class:`~qpcore_train.multiclass.MulticlassSVM`), a novelty or value formulation as one problem
over the rows of positive weight (:func:`qpcore_train.pipeline.fit_problem`, an
:class:`~qpcore_formulations.svm.SVMModel` whose support indexes the rows given). Every problem
goes through the one pipeline, build → accept → solve → decode.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.core.solve import Reporter, Strategy
from qpcore.core.state import Result
from qpcore_formulations.formulation import Formulation, Predicts, formulation as formulation_of
from qpcore_formulations.svm import SVMModel
from qpcore_train.multiclass import MulticlassSVM, train_multiclass
from qpcore_train.pipeline import MaxIter, fit_problem

__all__ = ["Fitted", "fit_formulation"]

FloatArray = NDArray[np.float64]


@attrs.frozen(eq=False)
class Fitted:
    """What :func:`fit_formulation` returns.

    Attributes
    ----------
    model : MulticlassSVM or SVMModel
        A classifier (label formulations) or one decision function (novelty, value); either
        indexes the rows given (``support``).
    results : list of Result
        The run of each problem (one per pair of classes, or one).
    alphas : list of ndarray
        Each problem's solution over its own variables, for warm starts (``x0``).
    rows : list of ndarray
        The rows each problem was built over.
    formulation : Formulation
    params : dict
        The parameters used (the given ones checked, the defaults for the others).
    """

    model: MulticlassSVM | SVMModel
    results: list[Result]
    alphas: list[FloatArray]
    rows: list[NDArray[np.intp]]
    formulation: Formulation
    params: dict[str, float]


def _row_weights(sample_weight: ArrayLike | None, n: int) -> FloatArray:
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any():
        raise ProblemError(f"sample_weight: expected ({n},) finite values ≥ 0, got shape {w.shape}")
    return w


def _class_indices(y: Any, classes: ArrayLike | None) -> tuple[NDArray[Any], NDArray[np.intp]]:
    """(classes, index of each label): ``classes`` sorted as given (np.unique of y by default)."""
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise ProblemError(f"y: expected one label per row, got shape {labels.shape}")
    if classes is None:
        found, inverse = np.unique(labels, return_inverse=True)
        return found, inverse.astype(np.intp).ravel()
    cls = np.asarray(classes)
    pos = np.clip(np.searchsorted(cls, labels), 0, max(cls.size - 1, 0))
    if cls.size == 0 or not np.array_equal(cls[pos], labels):
        raise ProblemError("y: a label is not among the classes given")
    return cls, pos.astype(np.intp)


def fit_formulation(formulation: Formulation | str, X: Any, y: ArrayLike | None, kernel: Kernel, strategy: Strategy,
                    *, params: Mapping[str, Any] | None = None, sample_weight: ArrayLike | None = None,
                    class_weight: ArrayLike | None = None, classes: ArrayLike | None = None,
                    scheme: Literal["ovo", "ovr"] = "ovo", tol: float = 1e-3, max_iter: MaxIter = None,
                    time_limit: float | None = None, deadline: float | None = None,
                    reporter: Reporter | None = None, cache_bytes: int = 200 << 20,
                    x0: list[FloatArray] | None = None, batched: bool | None = None) -> Fitted:
    """Train a formulation on data: every pair of classes of a label formulation, else one problem.

    Parameters
    ----------
    formulation : Formulation or str
        A registered name (``"c-svc"``, ``"l2-svc"``, ...) or a Formulation.
    X : ndarray or csr_matrix
        Training points (precomputed kernel: the n×n Gram matrix).
    y : array_like or None
        Labels (label formulations: any values, sorted into ``classes``), real targets (value
        formulations), ignored for novelty formulations (None allowed).
    kernel : Kernel
    strategy : Strategy
    params : mapping, optional
        The formulation's parameters (``{"C": 10.0}``); defaults for those not given, None counts
        as not given.
    sample_weight : array_like, optional
        One factor ≥ 0 per row (rows of weight 0 are left out): C-type formulations multiply
        their box by it, ν-type ones take it as LIBSVM's instance weight.
    class_weight : array_like, optional
        One factor per class of ``classes`` (label formulations with ``class_weights``): it
        multiplies each row's weight.
    classes : array_like, optional
        The sorted label values (label formulations; default: those of y). A fold that lacks a
        class keeps the class numbering of the whole data this way.
    scheme : {"ovo", "ovr"}
        One-vs-one or one-vs-rest for more than two classes.
    tol, time_limit, reporter :
        Handed to ``qpcore.solve`` for each problem.
    max_iter : int, callable or None
        Each problem's iteration limit, or a function of its number of variables giving it
        (:data:`qpcore_train.pipeline.MaxIter`: LIBSVM's cap ``lambda n: max(10**7, 100 * n)``
        counts a regression's 2l variables).
    deadline : float, optional
        A ``time.perf_counter()`` instant bounding the whole sequence of problems (each gets the
        time left).
    cache_bytes : int
        Kernel row cache of each problem.
    x0 : list of ndarray, optional
        Warm starts, one per problem (``Fitted.alphas`` of an earlier fit); one that does not fit
        is ignored.
    batched : bool, optional
        The multiclass layer's batched path (:func:`qpcore_train.multiclass.train_multiclass`) and a
        mirrored dual's stack (:func:`qpcore_train.pipeline.fit_problem`); False: neither.

    Returns
    -------
    Fitted

    Raises
    ------
    ProblemError
        An unknown formulation, parameters or data it refuses, class weights it does not take;
        :class:`qpcore_train.pipeline.Refused` when the strategy cannot take its problem.
    """
    form = formulation_of(formulation)
    values = form.params(params)
    n = int(X.shape[0])
    if n == 0:
        raise ProblemError(f"X: no training rows (an empty data set); the {form.name} formulation needs some")
    weight = _row_weights(sample_weight, n)
    if form.predicts is Predicts.LABEL:
        if y is None:
            raise ProblemError(f"y: the {form.name} formulation needs labels")
        cls, y_idx = _class_indices(y, classes)
        if y_idx.size != n:
            raise ProblemError(f"y: shape mismatch, expected ({n},) labels for {n} rows, got ({y_idx.size},)")
        if class_weight is not None:
            cw = np.asarray(class_weight, dtype=np.float64)
            if cw.shape != (cls.size,) or not np.isfinite(cw).all() or (cw < 0).any():
                raise ProblemError(f"class_weight: expected ({cls.size},) finite values ≥ 0, one per class")
            if not form.class_weights and not np.all(cw == 1.0):
                raise ProblemError(f"class_weight: the {form.name} formulation takes no class weights")
            # a row's factor: its class's weight times its own (exact when either is 1)
            weight = cw[y_idx] if sample_weight is None else cw[y_idx] * weight
        trained = train_multiclass(X, y_idx, cls, weight, kernel, strategy, scheme=scheme, tol=tol, max_iter=max_iter,
                                   time_limit=time_limit, reporter=reporter, cache_bytes=cache_bytes, x0=x0,
                                   deadline=deadline, batched=batched, formulation=form, params=values)
        return Fitted(model=trained.model, results=trained.results, alphas=trained.alphas, rows=trained.rows,
                      formulation=form, params=values)
    if class_weight is not None and not np.all(np.asarray(class_weight) == 1.0):
        raise ProblemError(f"class_weight: the {form.name} formulation has no classes to weigh")
    rows = np.flatnonzero(weight > 0).astype(np.intp)
    if rows.size == 0:
        raise ProblemError("sample_weight: every weight is 0")
    every = rows.size == n
    Xp = X if every else (X[rows][:, rows] if kernel.name == "precomputed" else X[rows])
    targets = None
    if form.predicts is Predicts.VALUE:
        if y is None:
            raise ProblemError(f"y: the {form.name} formulation needs targets")
        targets = np.asarray(y)
        if targets.shape != (n,):
            raise ProblemError(f"y: shape mismatch, expected ({n},) targets for {n} rows, got {targets.shape}")
        targets = targets if every else targets[rows]
    limit = time_limit
    if deadline is not None:
        left = max(deadline - time.perf_counter(), 1e-6)
        limit = left if limit is None else min(limit, left)
    start = x0[0] if x0 else None
    m, res = fit_problem(form, Xp, targets, weight if every else weight[rows], kernel, values, strategy,
                         cache_bytes=cache_bytes, x0=start, tol=tol, max_iter=max_iter, time_limit=limit,
                         reporter=reporter, batched=batched)
    if not every:
        # the model in the caller's indexing: support over all rows (a precomputed kernel's
        # support vectors are their Gram rows over every training point)
        support = rows[m.support]
        m = attrs.evolve(m, support=support, sv=X[support])
    return Fitted(model=m, results=[res], alphas=[np.asarray(res.x, dtype=np.float64)], rows=[rows],
                  formulation=form, params=values)
