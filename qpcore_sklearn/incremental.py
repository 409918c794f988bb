"""An exact incremental kernel SVM classifier for scikit-learn (Cauwenberghs–Poggio).

:class:`IncrementalSVC` keeps the binary C-SVC dual *solved* while points come and go, through
:class:`qpcore_incremental.incremental.IncrementalSVM`: ``partial_fit`` adds points by the adiabatic
increment, ``unlearn`` removes them by the decrement, and after either the model is the batch
optimum over the points it holds (not an approximation that a later pass would correct).
The same decrement gives the exact leave-one-out decision value of every training point without a
refit (:meth:`IncrementalSVC.leave_one_out`, :meth:`IncrementalSVC.loo_score`).

Fitted attributes follow ``sklearn.svm.SVC`` (binary layout): ``support_``, ``support_vectors_``,
``n_support_``, ``dual_coef_``, ``intercept_``; indices refer to the *current* training set, the
points held in the order they arrived (a point's index drops by one for every earlier point that
is unlearned, as with ``numpy.delete``). The scaffolding it shares with the other incremental
estimators is :class:`qpcore_sklearn.incremental_base.IncrementalEstimator`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Self

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from qpcore_incremental.incremental import IncrementalSVM
from qpcore_incremental.incremental_path import RESERVE
from qpcore_sklearn._params import positive
from qpcore_sklearn.incremental_base import (
    VALIDATE_X,
    FloatArray,
    IncrementalEstimator,
    IndexArray,
    Labels,
    as_dense,
    cache_bytes,
    check_kernel_params,
    make_kernel,
)

__all__ = ["IncrementalSVC", "LeaveOneOut"]


class _CPModel(IncrementalSVM):
    """The incremental SVM plus the leave-one-out decrement carried all the way to α_c = 0."""

    def loo_decision(self) -> FloatArray:
        """f₋c(x_c) for every point, in the order of :attr:`ids` (ascending slots).

        As :meth:`IncrementalSVM.leave_one_out`, but without its early stop at a certain error:
        every margin and error vector is decremented to α_c = 0, where f₋c(x_c) = y_c (g_c + 1),
        and the solved state is restored from the snapshot after each. A reserve point (α = 0)
        does not move the solution, so its value is the model's own.
        """
        sl = self._op.slots()
        y = self._op.s_buffer
        dec = y[sl] * (self._g[sl] + 1.0)
        work = np.flatnonzero(self._status[sl] != RESERVE)
        if work.size == 0:
            return dec
        dec[work] = y[sl[work]] * (self._decrement_values(sl[work]) + 1.0)
        return dec


@attrs.frozen
class LeaveOneOut:
    """Exact leave-one-out results of a binary incremental classifier (:class:`IncrementalSVC`,
    :class:`~qpcore_sklearn.incremental_family.IncrementalNuSVC`), in training-set order.

    Attributes
    ----------
    decision : ndarray of shape (n_samples,)
        f₋ᵢ(xᵢ): the decision value at training point i of the model trained on all the other
        points (positive: ``classes_[1]``). Where removing i leaves no margin vector the bias of
        that model is not unique (any value in an interval is optimal) and this is one optimal choice.
    predictions : ndarray of shape (n_samples,)
        The leave-one-out labels, from ``classes_``.
    correct : ndarray of bool, shape (n_samples,)
        Whether each point's leave-one-out label equals its own.
    seconds : float
        Wall time of the computation.
    """

    decision: FloatArray
    predictions: NDArray[Any]
    correct: NDArray[np.bool_]
    seconds: float

    @property
    def score(self) -> float:
        """The leave-one-out accuracy (the mean of :attr:`correct`)."""
        return float(self.correct.mean()) if self.correct.size else 0.0

    @property
    def errors(self) -> int:
        """The number of leave-one-out errors."""
        return int(self.correct.size - self.correct.sum())


class _BinaryIncremental(ClassifierMixin, IncrementalEstimator):  # type: ignore[misc]
    """What the binary incremental classifiers share: the classes, ``fit``/``partial_fit`` over an
    :class:`~qpcore_incremental.incremental.IncrementalSVM` (the rest of the scaffolding is
    :class:`~qpcore_sklearn.incremental_base.IncrementalEstimator`'s), SVC's fitted attributes,
    prediction and the leave-one-out result. Subclasses give the parameters (``_check_params``) and
    the model (``_new_model``)."""

    _model: IncrementalSVM
    _loo: LeaveOneOut | None

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _new_model(self, X: Any) -> IncrementalSVM:
        raise NotImplementedError

    def _encode(self, y: NDArray[Any]) -> FloatArray:
        """±1 labels (+1 for ``classes_[1]``); a label outside ``classes_`` is an error."""
        known = np.isin(y, self.classes_)
        if not known.all():
            bad = np.unique(y[~known])
            raise ValueError(f"y: labels {bad.tolist()} are not among the classes {self.classes_.tolist()} "
                             "(declared on the first partial_fit, or seen by fit)")
        return np.where(y == self.classes_[1], 1.0, -1.0)

    # -- fitting ----------------------------------------------------------------------------------

    def _build(self, X: Any, labels: Labels, *, strict: bool) -> None:
        """A fresh model on (X, ±1 labels): batch-solved and polished, or learned point by point."""
        (ypm,) = labels
        model = self._new_model(X)
        X = as_dense(X)
        if self.fit_method == "batch":
            model.fit(X, ypm, batch_tol=float(self.tol))
        else:
            model.learn_many(X, ypm)
        self._use(model)

    def _fit_data(self, X: Any, y: Any) -> tuple[Any, Labels]:
        X, y = validate_data(self, X, y, **VALIDATE_X)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        k = self.classes_.size
        if k < 2:
            raise ValueError(f"y: the training data must hold 2 classes, got {k} class: {self.classes_.tolist()}")
        if k > 2:
            raise ValueError(f"Only binary classification is supported. The type of the target is "
                             f"{type_of_target(y)} ({k} classes: {self.classes_.tolist()}).")
        return X, (self._encode(y),)

    def _partial_data(self, X: Any, y: Any, classes: ArrayLike | None, first: bool) -> tuple[Any, Labels]:
        if first and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit "
                             "(the two labels, e.g. classes=np.unique(y_all))")
        X, y = validate_data(self, X, y, reset=first, **VALIDATE_X)
        check_classification_targets(y)
        if classes is not None:
            cls = np.unique(np.asarray(classes))
            if first:
                if cls.size != 2:
                    raise ValueError(f"Only binary classification is supported: classes must hold exactly 2 "
                                     f"labels, got {cls.size}: {cls.tolist()}")
            elif not np.array_equal(cls, self.classes_):
                raise ValueError(f"classes={cls.tolist()} is not the same as on the first call to partial_fit "
                                 f"({self.classes_.tolist()})")
        if first:
            known = np.isin(y, cls)
            if not known.all():
                raise ValueError(f"y: labels {np.unique(y[~known]).tolist()} are not among classes={cls.tolist()}")
            self.classes_ = cls
        return X, (self._encode(y),)

    def fit(self, X: Any, y: Any) -> Self:
        """Fit the classifier from scratch (the exact optimum of its dual on X, y).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (sparse input is stored dense by the model).
        y : array-like of shape (n_samples,)
            Labels: exactly two distinct values of any type.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            NaN/inf, a shape mismatch, fewer or more than two classes, invalid parameters.
        """
        return self._fit(X, y)

    def partial_fit(self, X: Any, y: Any, classes: ArrayLike | None = None) -> Self:
        """Add the points of (X, y) to the training set, exactly.

        After the call the model is the batch optimum over every point seen (minus those
        unlearned), whatever the batches were. The first call fixes the classes, the number of
        features and the kernel (``gamma="scale"`` is computed from this first batch); on a fitted
        model (after :meth:`fit` or an earlier call) the points are added to it.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            New points.
        y : array-like of shape (n_samples,)
            Their labels, each one of the two classes.
        classes : array-like of shape (2,), optional
            The two labels; required on the first call (as in scikit-learn's ``partial_fit``),
            and if given later it must equal ``classes_``. A batch may hold one class only.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            NaN/inf, a feature count different from the first call's, ``classes`` missing on the
            first call, not two classes, different from ``classes_``, or a label not among them.
        """
        return self._partial_fit(X, y, classes)

    def _read_model(self, order: IndexArray) -> tuple[IndexArray, FloatArray]:
        """SVC's fitted attributes: support vectors by class, then by index (LIBSVM's order)."""
        m = self._model
        alpha, ypm = m.alpha[order], m.y[order]
        sv = np.flatnonzero(alpha > 0)
        sv = sv[np.lexsort((sv, ypm[sv] > 0))]
        self.n_support_ = np.array([int((ypm[sv] < 0).sum()), int((ypm[sv] > 0).sum())], dtype=np.int32)
        self.intercept_ = np.array([m.bias])
        return sv, alpha[sv] * ypm[sv]

    # -- prediction -------------------------------------------------------------------------------

    def decision_function(self, X: Any) -> FloatArray:
        """Decision values f(x) = Σ αᵢyᵢK(xᵢ, x) + b.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Positive values mean ``classes_[1]``.
        """
        X = self._check_X(X)
        out = np.full(X.shape[0], float(self.intercept_[0]))
        for rows, K in self._kernel_blocks(X):
            out[rows] += K @ self.dual_coef_[0]
        return out

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted labels: ``classes_[1]`` where the decision value is positive.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        dec = self.decision_function(X)
        out: NDArray[Any] = self.classes_[(dec > 0).astype(np.intp)]
        return out

    # -- leave-one-out ----------------------------------------------------------------------------

    def _loo_from(self, values: Callable[[], FloatArray], *, nan_wrong: bool) -> LeaveOneOut:
        """The leave-one-out result from the model's values f₋ᵢ(xᵢ) (model order), kept until the
        next change; ``nan_wrong``: a NaN value (no model without the point) is not correct."""
        if self._loo is None:
            t0 = time.perf_counter()
            m = self._model
            order = np.argsort(m.ids, kind="stable")
            dec = values()[order]
            ypm = m.y[order]
            pred = self.classes_[(dec > 0).astype(np.intp)]
            correct = (dec > 0) == (ypm > 0)
            if nan_wrong:
                correct = ~np.isnan(dec) & correct
            self._loo = LeaveOneOut(decision=dec, predictions=pred, correct=correct,
                                    seconds=time.perf_counter() - t0)
        return self._loo


class IncrementalSVC(_BinaryIncremental):
    """Binary kernel SVM classifier kept exactly solved under additions and removals.

    The C-SVC dual min ½αᵀ(yyᵀ∘K)α − eᵀα, 0 ≤ α ≤ C, yᵀα = 0 is maintained by the
    Cauwenberghs–Poggio incremental/decremental algorithm (NIPS 2000): each new point's α is raised
    adiabatically, keeping every other point's KKT conditions, until the point satisfies its own;
    a removed point's α is lowered to 0 the same way. Every state reached is the batch optimum
    over the points held, so ``partial_fit`` in any batches, or ``fit`` followed by ``unlearn``,
    gives what a batch solve of the final training set gives (up to rounding).

    Parameters
    ----------
    C : float
        Box bound of the dual, > 0.
    kernel : {"rbf", "linear", "poly", "sigmoid"}
        The kernel (a precomputed Gram matrix cannot grow, so it is not offered).
    degree : int
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float
        Kernel coefficient: ``"scale"`` is 1 / (n_features · X.var()), ``"auto"`` 1 / n_features.
        The kernel must not change while points are added, so ``"scale"`` is computed **once**:
        from the X given to :meth:`fit`, or from the *first batch* given to :meth:`partial_fit`,
        and kept for every later batch (a first batch of a single point, whose variance is 0,
        gives 1.0). For batches from one distribution this is close to the full data's value; if
        the first batch is unrepresentative, pass a float.
    coef0 : float
        Independent term of the polynomial and sigmoid kernels.
    tol : float
        Stopping tolerance (maximal-violating-pair gap) of the batch solve with which :meth:`fit`
        and the first :meth:`partial_fit` start. That solution is then *polished* into the exact
        incremental state (its free set factored, α and the bias re-solved, any point on the
        wrong side repaired by an exact decrement and increment), so ``tol`` only trades solver
        time against repairs: the fitted model is exact either way.
    fit_method : {"batch", "incremental"}
        How :meth:`fit` (and the first :meth:`partial_fit`) builds the model: a batch solve
        polished into an exact state (faster beyond a few hundred points), or one adiabatic
        increment per point.
    cache_size : float
        Kernel row cache, in MB.
    refresh_every : int
        Every this many single-point updates the model refactors its margin block and recomputes
        the margin function from scratch (drift control); ≤ 0 never.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; positive decision values mean ``classes_[1]``.
    support_ : ndarray of int32
        Indices (into the current training set) of the support vectors, grouped by class, as in
        SVC.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The support vectors.
    n_support_ : ndarray of shape (2,)
        Support vectors per class.
    dual_coef_ : ndarray of shape (1, n_SV)
        αᵢyᵢ with yᵢ = +1 for ``classes_[1]`` (SVC's binary convention).
    intercept_ : ndarray of shape (1,)
        The bias b of f(x) = Σ αᵢyᵢK(xᵢ, x) + b.
    shape_fit_ : tuple of int
        (n_samples, n_features) of the current training set.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When X had feature names.

    Notes
    -----
    Cost: adding or removing a point is O(n·|M|) plus O(|M|²) per path segment (M the margin
    vectors), with a few segments per point typically; :meth:`leave_one_out` is one decrement
    per support vector from the same solved state, through an inverse of the margin set's KKT
    matrix made once (a segment then costs O(n), a point joining M O(n·|M|) the first time it
    does), each followed by a restore from a snapshot (no drift accumulates).
    """

    _model: _CPModel

    def __init__(self, C: float = 1.0, kernel: str = "rbf", degree: int = 3, gamma: str | float = "scale",
                 coef0: float = 0.0, tol: float = 1e-3, fit_method: str = "batch", cache_size: float = 200,
                 refresh_every: int = 500) -> None:
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.fit_method = fit_method
        self.cache_size = cache_size
        self.refresh_every = refresh_every

    # -- parameters -------------------------------------------------------------------------------

    def _check_params(self) -> None:
        positive("C", self.C)
        check_kernel_params(self)

    def _new_model(self, X: Any) -> _CPModel:
        return _CPModel(make_kernel(self, X), float(self.C), classes=np.array([-1.0, 1.0]),
                        refresh_every=int(self.refresh_every), cache_bytes=cache_bytes(self))

    # -- leave-one-out ----------------------------------------------------------------------------

    def leave_one_out(self) -> LeaveOneOut:
        """Exact leave-one-out decision values and labels of every training point.

        For each support vector c, α_c is decremented adiabatically to 0 (Cauwenberghs–Poggio),
        which is the optimum without c, and f₋c(x_c) is read off; the solved state is then
        restored from a snapshot. Points with α = 0 need no work (removing them changes nothing).
        No model is refitted, and the estimator is left exactly as it was.

        Returns
        -------
        LeaveOneOut
            In the order of the current training set.
        """
        check_is_fitted(self)
        return self._loo_from(self._model.loo_decision, nan_wrong=False)

    def loo_score(self) -> float:
        """The exact leave-one-out accuracy.

        Uses the decrement with Cauwenberghs–Poggio's early stop (a support vector whose margin
        value falls below −1 on the way down is a certain error), so it does less work than
        :meth:`leave_one_out` unless that result is already at hand.

        Returns
        -------
        float
        """
        check_is_fitted(self)
        if self._loo is not None:
            return self._loo.score
        res = self._model.leave_one_out()
        return 1.0 - res.errors / res.n if res.n else 0.0
