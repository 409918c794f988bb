"""One base for the kernel SVM estimators: parameters, validation, training, decision values.

Every kernel SVM estimator of this package is a thin adapter over the training layer. It checks
its parameters and data, turns them into a kernel, a strategy, the formulation's parameters
and per-row weights, trains through :func:`qpcore_train.fit.fit_formulation` (one problem per
pair of classes through the multiclass layer, or one over all rows) and reads the model into
scikit-learn's fitted attributes. An estimator is its formulation (a name of
:data:`qpcore_formulations.formulation.FORMULATIONS`: its parameters are the formulation's) and
what that formulation predicts, which picks the base:

- :class:`LabelSVM` (``ClassifierMixin``) for ``Predicts.LABEL``: SVC's fitted attributes in
  LIBSVM's layout, one-vs-one or one-vs-rest, warm starts, Platt's probabilities;
- :class:`NoveltySVM` (``OutlierMixin``) for ``Predicts.NOVELTY``: +1 inside, −1 outside,
  ``score_samples`` and ``offset_``;
- :class:`ValueSVM` (``RegressorMixin``) for ``Predicts.VALUE``: the decision value predicts.

:class:`~qpcore_sklearn.svm.KernelSVC` and the estimators of :mod:`qpcore_sklearn.svm_family` are
these bases with LIBSVM's formulations and scikit-learn's parameter lists;
:class:`~qpcore_sklearn.formulation.FormulationSVM` is any registered formulation.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, OutlierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.core.solve import Reporter, Strategy
from qpcore.core.state import Result, Status
from qpcore_formulations.formulation import Formulation, formulation as formulation_of
from qpcore_formulations.svm import SVMModel
from qpcore_sklearn._params import check_kernel, check_max_iter, gamma_value, libsvm_cap, make_strategy, positive
from qpcore_train.fit import Fitted, fit_formulation
from qpcore_train.multiclass import MulticlassSVM
from qpcore_train.pipeline import MaxIter
from qpcore_train.probability import calibrate_rows, proba_from_raw

__all__ = ["LabelSVM", "NoveltySVM", "SVMEstimator", "ValueSVM", "class_factors", "ovr_from_ovo"]

FloatArray = NDArray[np.float64]


def ovr_from_ovo(dec: FloatArray, n_classes: int) -> FloatArray:
    """One-vs-one decision values (n, k(k−1)/2) → (n, k): votes plus a confidence below ⅓.

    The confidence term sums each class's decision values over its pairs and maps it into
    (−⅓, ⅓), so it breaks ties between equal votes without ever overturning a vote (the
    transformation of LIBSVM's one-vs-one into SVC's ``decision_function_shape="ovr"``).
    """
    n = dec.shape[0]
    votes = np.zeros((n, n_classes))
    conf = np.zeros((n, n_classes))
    k = 0
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            d = dec[:, k]
            votes[:, i] += d > 0
            votes[:, j] += d <= 0
            conf[:, i] += d
            conf[:, j] -= d
            k += 1
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))


def class_factors(class_weight: Any, classes: NDArray[Any], y_idx: NDArray[np.intp]) -> FloatArray:
    """The factor of each class from a ``class_weight`` parameter (ones for None).

    Parameters
    ----------
    class_weight : dict, "balanced" or None
        Label → factor (labels not named keep 1), or ``"balanced"``: n / (k · n_c) from the
        counts of ``y_idx``.
    classes : ndarray
        The sorted labels.
    y_idx : ndarray of int
        The class index of each training row ("balanced" counts them).

    Returns
    -------
    ndarray of shape (n_classes,)

    Raises
    ------
    ValueError
        Another value, or a label that is not among ``classes``.
    """
    k = int(classes.size)
    w = np.ones(k)
    if class_weight is None:
        return w
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be a dict, 'balanced' or None, got {class_weight!r}")
        counts = np.bincount(y_idx, minlength=k)
        return np.asarray(y_idx.size / (k * np.maximum(counts, 1)), dtype=np.float64)
    for label, weight in dict(class_weight).items():
        hit = np.flatnonzero(classes == label)
        if hit.size == 0:
            raise ValueError(f"class_weight: label {label!r} is not among the classes {classes.tolist()}")
        w[hit[0]] = float(weight)
    return w


class SVMEstimator(BaseEstimator):  # type: ignore[misc]
    """What every kernel SVM estimator shares: its formulation, the settings of the solve, the
    checks of both, and training through :func:`qpcore_train.fit.fit_formulation`.

    A subclass names its formulation (``_formulation``: a registered name or a Formulation) and
    takes, besides the formulation's parameters (read as attributes of the same names), the
    settings ``kernel``, ``degree``, ``gamma``, ``coef0``, ``tol``, ``cache_size``,
    ``strategy``, ``max_iter``, ``time_limit`` and ``progress`` (optionally ``warm_start``).
    """

    #: The formulation (a registered name or the object itself).
    _formulation: ClassVar[str | Formulation] = "c-svc"
    #: Parameters held to scikit-learn's message and strictness first ("C must be a finite
    #: number > 0", a number rather than a string), before the formulation's own check.
    _positive: ClassVar[tuple[str, ...]] = ()
    kernel: str
    degree: int
    gamma: str | float
    coef0: float
    tol: float
    cache_size: float
    strategy: str | Strategy
    max_iter: int
    time_limit: float | None
    progress: Any

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # -- parameters -------------------------------------------------------------------------------

    def _form(self) -> Formulation:
        """The formulation this estimator trains."""
        try:
            return formulation_of(self._formulation)
        except ProblemError as exc:
            raise ValueError(str(exc)) from None

    def _params(self) -> dict[str, float]:
        """The formulation's parameters from the attributes of their names, checked by its checkers."""
        form = self._form()
        try:
            return form.params({name: getattr(self, name, None) for name in form.parameter_names})
        except ProblemError as exc:
            raise ValueError(str(exc)) from None

    def _check_params(self) -> None:
        """The formulation's parameters, then the settings of the solve (before any work)."""
        for name in self._positive:
            positive(name, getattr(self, name))
        self._params()
        check_kernel(self.kernel)
        positive("tol", self.tol)
        check_max_iter(self.max_iter)
        positive("cache_size", self.cache_size, unit=" (MB)")

    def _kernel(self, X: Any) -> Kernel:
        gamma = gamma_value(self.gamma, str(self.kernel), X)
        name: Any = self.kernel         # checked against KERNELS (the Literal Kernel takes)
        return Kernel(name, gamma=gamma, degree=int(self.degree), coef0=float(self.coef0))

    def _max_iter(self) -> MaxIter:
        """Each problem's iteration limit: LIBSVM's cap of its variables for −1."""
        return libsvm_cap if self.max_iter == -1 else int(self.max_iter)

    def _warm(self) -> list[FloatArray] | None:
        """The previous fit's solutions, with ``warm_start``."""
        return getattr(self, "_alphas", None) if getattr(self, "warm_start", False) else None

    # -- data -------------------------------------------------------------------------------------

    def _accept_sparse(self) -> str | bool:
        return False if self.kernel == "precomputed" else "csr"

    def _check_square(self, X: Any) -> None:
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(f"X: a precomputed kernel must be square (n_samples × n_samples), got {X.shape}")

    def _points(self, X: Any) -> Any:
        """Points to predict for, checked against the training data (fitted estimators only)."""
        check_is_fitted(self)
        return validate_data(self, X, accept_sparse=self._accept_sparse(), dtype=np.float64, order="C", reset=False)

    # -- training ---------------------------------------------------------------------------------

    def _fit_formulation(self, X: Any, y: ArrayLike | None, kernel: Kernel, strategy: Strategy,
                         params: dict[str, float], *, sample_weight: FloatArray, class_weight: FloatArray | None = None,
                         classes: NDArray[Any] | None = None, x0: list[FloatArray] | None = None,
                         reporter: Reporter | None = None) -> Fitted:
        """:func:`~qpcore_train.fit.fit_formulation` with this estimator's settings (ProblemError
        passes through)."""
        return fit_formulation(self._form(), X, y, kernel, strategy, params=params, sample_weight=sample_weight,
                               class_weight=class_weight, classes=classes,
                               scheme="ovr" if getattr(self, "multiclass", "ovo") == "ovr" else "ovo",
                               tol=float(self.tol), max_iter=self._max_iter(), time_limit=self.time_limit,
                               reporter=reporter, cache_bytes=int(float(self.cache_size) * (1 << 20)), x0=x0)


# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------

def _checked_already(X: Any, y: Any) -> bool:
    """Whether ``validate_data(X, y, dtype=np.float64, order="C")`` would pass X and y through
    as they are: a finite C-ordered float64 matrix with rows and columns (no feature names) and
    one integer or boolean label per row. Anything else takes sklearn's validation, with its
    errors, conversions and configuration; this one is the common case of a small fit, where
    that validation costs a noticeable part of the fit."""
    return (type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2 and X.flags.c_contiguous
            and X.shape[0] >= 1 and X.shape[1] >= 1 and type(y) is np.ndarray and y.ndim == 1
            and y.dtype.kind in "iub" and y.shape[0] == X.shape[0] and bool(np.isfinite(X).all()))


def _check_proba(est: Any) -> bool:
    # predict_proba exists only with probability=True, as on SVC (hasattr tells callers so)
    if not est.probability:
        raise AttributeError("predict_proba is not available when probability=False")
    return True


class LabelSVM(ClassifierMixin, SVMEstimator):  # type: ignore[misc]
    """A classifier over a label formulation: one binary problem per pair of classes (or per class
    against the rest), SVC's fitted attributes in LIBSVM's layout, Platt's probabilities.

    Its settings beyond :class:`SVMEstimator`'s: ``class_weight``, ``multiclass``,
    ``decision_function_shape``, ``warm_start``, ``probability``, ``random_state``,
    ``predict_from_proba`` (see :class:`~qpcore_sklearn.svm.KernelSVC`). Three hooks let an
    estimator keep its own conventions: :meth:`_class_factors`, :meth:`_row_weights` and
    :meth:`_fold_params`.
    """

    model_: MulticlassSVM      # the trained model (set by fit)
    class_weight: Any
    multiclass: str
    decision_function_shape: str
    warm_start: bool
    probability: bool
    random_state: Any
    predict_from_proba: bool

    def _check_params(self) -> None:
        super()._check_params()
        if self.multiclass not in ("ovo", "ovr"):
            raise ValueError(f"multiclass must be 'ovo' or 'ovr', got {self.multiclass!r}")
        if self.decision_function_shape not in ("ovo", "ovr"):
            raise ValueError(f"decision_function_shape must be 'ovo' or 'ovr', got {self.decision_function_shape!r}")
        if self.predict_from_proba and not self.probability:
            raise ValueError("predict_from_proba=True needs probability=True")

    def _validated(self, X: Any, y: Any, sample_weight: Any) -> tuple[Any, Any, NDArray[np.intp], FloatArray]:
        """Checked data, labels, class indices (setting ``classes_``, at least two) and sample
        weights (≥ 0)."""
        if _checked_already(X, y):
            # what validate_data would return them as, unchanged: it would only record the width
            self.n_features_in_ = int(X.shape[1])
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
        else:
            X, y = validate_data(self, X, y, accept_sparse=self._accept_sparse(), dtype=np.float64, order="C")
        # y is now 1-D and finite: integer or boolean labels are always binary or multiclass
        # targets, so only other kinds need sklearn's check (which validates y three times more)
        if np.asarray(y).dtype.kind not in "iub":
            check_classification_targets(y)
        self._check_square(X)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if (sw < 0).any():
            raise ValueError("sample_weight: negative weights are not allowed")
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        k = self.classes_.size
        if k < 2:
            raise ValueError(f"y: the training data must hold at least two classes, got {k} class: "
                             f"{self.classes_.tolist()}")
        return X, y, y_idx.astype(np.intp).ravel(), np.asarray(sw, dtype=np.float64)

    # -- hooks ------------------------------------------------------------------------------------

    def _class_factors(self, y_idx: NDArray[np.intp]) -> FloatArray | None:
        """The factor of each class handed to the formulation (None: no class weights); a
        formulation without class weights refuses factors other than 1."""
        return None if self.class_weight is None else class_factors(self.class_weight, self.classes_, y_idx)

    def _row_weights(self, sw: FloatArray, n_classes: int) -> FloatArray:
        """The per-row weights handed to the formulation from the sample weights."""
        return sw

    def _fold_params(self, params: dict[str, float], y01: NDArray[np.intp], weight: FloatArray) -> dict[str, float]:
        """The parameters of a calibration fold's two-class problem (class 0 positive)."""
        return params

    # -- fitting ----------------------------------------------------------------------------------

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
        """Fit the classifier.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : array-like of shape (n_samples,)
            Labels: two or more distinct values of any type.
        sample_weight : array-like of shape (n_samples,), optional
            Per-sample weights (LIBSVM's instance weights); samples of weight 0 are left out.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad data or labels, fewer than two classes, parameters the formulation refuses, a
            non-square precomputed kernel, an unknown strategy: before any solve starts.
        """
        self._check_params()
        params = self._params()
        strategy = make_strategy(self.strategy)
        X, y, y_idx, sw = self._validated(X, y, sample_weight)
        k = int(self.classes_.size)
        cw = self._class_factors(y_idx)
        # the rows' factors as given (class times sample weight): the calibration's folds weigh by them
        factor = sw if cw is None else cw[y_idx] * sw
        if np.count_nonzero(np.bincount(y_idx[factor > 0], minlength=k)) < 2:
            raise ValueError("sample_weight: the samples of nonzero weight hold fewer than two classes")
        kernel = self._kernel(X)
        try:
            fitted = self._fit_formulation(X, y, kernel, strategy, params, sample_weight=self._row_weights(sw, k),
                                           class_weight=cw, classes=self.classes_, x0=self._warm(),
                                           reporter=self.progress)
        except ProblemError as exc:
            raise ValueError(str(exc)) from exc
        self._adopt(fitted, X)
        self._calibrate(X, y_idx, factor, kernel, strategy, params)
        return self

    def _adopt(self, fitted: Fitted, X: Any) -> None:
        """The fitted attributes of a training run; warns when a problem did not converge."""
        results = fitted.results
        model = fitted.model
        assert isinstance(model, MulticlassSVM)
        self.model_ = model
        self._alphas = fitted.alphas
        self.result_ = results[0] if len(results) == 1 else results
        self.status_ = [r.status.code for r in results]
        self.n_iter_ = np.array([r.iterations for r in results], dtype=np.int32)
        self.fit_status_ = int(any(r.status is not Status.CONVERGED for r in results))
        self.shape_fit_ = X.shape
        bad = [f"{self._pair_name(pr)}: {r.status.code}" for pr, r in zip(model.pairs, results)
               if r.status is not Status.CONVERGED]
        if bad:
            warnings.warn(f"{type(self).__name__}: not every problem converged (" + "; ".join(bad) + "); each "
                          "keeps its best point: raise max_iter / time_limit or loosen tol", ConvergenceWarning,
                          stacklevel=3)
        self._layout()

    def _pair_name(self, pair: NDArray[np.intp]) -> str:
        i, j = int(pair[0]), int(pair[1])
        return f"{self.classes_[i]} vs {'rest' if j < 0 else self.classes_[j]}"

    def _layout(self) -> None:
        """SVC's attributes from the trained model (LIBSVM's layout)."""
        m = self.model_
        k = m.n_classes
        self.support_ = m.support.astype(np.int32)
        self.n_support_ = np.bincount(m.support_class, minlength=k).astype(np.int32)
        self.support_vectors_ = np.empty((0, 0)) if m.sv is None else m.sv
        if m.scheme == "ovo":
            # the coefficient of a vector of class c in problem (i, j) sits in row j − 1 when
            # c = i and in row i when c = j
            dual = np.zeros((k - 1, m.support.size))
            # every (vector, problem) of the vector's class at once: each lands in its own cell
            for side, row in ((0, m.pairs[:, 1] - 1), (1, m.pairs[:, 0])):
                sv, pb = np.nonzero(m.support_class[:, None] == m.pairs[None, :, side])
                dual[row[pb], sv] = m.D[sv, pb]
        else:
            dual = m.D.T.copy()
        if k == 2:
            dual = -dual                # SVC's binary convention: positive means classes_[1]
        self.dual_coef_ = dual
        self.intercept_ = -m.bias if k == 2 else m.bias.copy()
        if self.kernel == "linear":
            W = np.asarray((m.sv.T @ m.D).T, dtype=np.float64)
            self._coef = -W if k == 2 else W

    def _calibrate(self, X: Any, y_idx: NDArray[np.intp], weight: FloatArray, kernel: Kernel, strategy: Strategy,
                   params: dict[str, float]) -> None:
        """``probA_``/``probB_`` and the model's sigmoids (with ``probability``; else empty).

        Each fold trains a two-class model (class 0 positive) with the fit's settings on its
        rows' ``weight`` (class times sample weight); rows of weight 0 take no part, as in the fit.
        """
        if not self.probability:
            self.probA_ = np.empty(0)
            self.probB_ = np.empty(0)
            return
        m = self.model_
        if m.scheme == "ovr":
            raise ValueError("probability=True takes multiclass='ovo' (LIBSVM's pairwise coupling) for more "
                             "than two classes")
        rows = np.flatnonzero(weight > 0)
        pre = self.kernel == "precomputed"
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        bad: list[str] = []

        def decide(i: int, j: int, train: NDArray[np.intp], test: NDArray[np.intp]) -> FloatArray:
            tr, te = rows[train], rows[test]
            y01 = (y_idx[tr] != i).astype(np.intp)
            w = weight[tr]
            fitted = self._fit_formulation(X[tr][:, tr] if pre else X[tr], y01, kernel, strategy,
                                           self._fold_params(params, y01, w), sample_weight=self._row_weights(w, 2),
                                           classes=np.arange(2))
            bad.extend(r.status.code for r in fitted.results if r.status is not Status.CONVERGED)
            model = fitted.model
            assert isinstance(model, MulticlassSVM)
            out: FloatArray = model.raw(X[te][:, tr] if pre else X[te])[:, 0]
            return out

        try:
            a, b = calibrate_rows(y_idx[rows], m.pairs, decide, folds=5, seed=seed)
        except ProblemError as exc:
            raise ValueError(f"probability calibration: {exc}") from exc
        if bad:
            warnings.warn(f"{type(self).__name__}: {len(bad)} of the probability calibration's fold problems did "
                          f"not converge ({', '.join(sorted(set(bad)))}); each keeps its best point",
                          ConvergenceWarning, stacklevel=3)
        self.model_ = attrs.evolve(m, prob_a=a, prob_b=b)
        self.probA_ = a
        self.probB_ = b

    @property
    def coef_(self) -> FloatArray:
        """Primal weights of each binary problem (linear kernel only), SVC's shape and signs."""
        check_is_fitted(self)
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        return self._coef

    # -- prediction -------------------------------------------------------------------------------

    def _raw(self, X: Any) -> FloatArray:
        """Decision values of every binary problem, (n, problems), positive for its first class."""
        X = self._points(X)         # first: it checks that the estimator is fitted
        return self.model_.raw(X)

    def decision_function(self, X: Any) -> FloatArray:
        """Decision values, in SVC's shapes.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Points (for ``kernel="precomputed"``: K(X, training points), n_samples × n_train).

        Returns
        -------
        ndarray
            (n_samples,) for two classes (positive: ``classes_[1]``); with one-vs-one and
            ``decision_function_shape="ovr"`` (n_samples, n_classes) votes plus confidences,
            with ``"ovo"`` the (n_samples, n_pairs) raw values; with one-vs-rest (n_samples,
            n_classes).
        """
        raw = self._raw(X)
        k = self.classes_.size
        if k == 2:
            return -raw[:, 0]
        if self.model_.scheme == "ovr" or self.decision_function_shape == "ovo":
            return raw
        return ovr_from_ovo(raw, k)

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted labels: the sign for two classes, LIBSVM's one-vs-one vote (ties to the
        class listed first) or the largest one-vs-rest value for more.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            As for :meth:`decision_function`.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        if self.predict_from_proba and self.probability:
            proba = self.predict_proba(X)       # first: it checks that the estimator is fitted
            best: NDArray[Any] = self.classes_[np.argmax(proba, axis=1)]
            return best
        raw = self._raw(X)
        out: NDArray[Any] = self.classes_[self.model_.predict_index(raw)]
        return out

    @available_if(_check_proba)  # type: ignore[untyped-decorator]
    def predict_proba(self, X: Any) -> FloatArray:
        """Class probabilities as LIBSVM's ``svm-predict -b 1``.

        Each pair's decision value through its sigmoid (``probA_``, ``probB_``), kept in
        [1e−7, 1 − 1e−7]; for more than two classes the pairwise probabilities coupled by Wu, Lin
        and Weng's second method (:func:`qpcore_train.probability.couple`). Available with
        ``probability=True``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            As for :meth:`decision_function`.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; rows sum to 1.

        Raises
        ------
        NotFittedError
            When fitted with ``probability=False``.
        """
        raw = self._raw(X)
        m = self.model_
        if m.prob_a is None or m.prob_b is None:
            raise NotFittedError("predict_proba is not available when fitted with probability=False")
        return proba_from_raw(raw, m.prob_a, m.prob_b, m.pairs, m.n_classes)

    @available_if(_check_proba)  # type: ignore[untyped-decorator]
    def predict_log_proba(self, X: Any) -> FloatArray:
        """Logarithms of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            As for :meth:`decision_function`.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        out: FloatArray = np.log(self.predict_proba(X))
        return out


# --------------------------------------------------------------------------------------------
# One problem over all rows: novelty and value
# --------------------------------------------------------------------------------------------

class _OneProblemSVM(SVMEstimator):
    """What the novelty and value estimators share: one problem over the rows of positive
    weight, LIBSVM's fitted attributes of it, its decision values."""

    model_: SVMModel

    def _targets(self, X: Any, y: Any) -> tuple[Any, FloatArray | None]:
        """The checked points and targets (None: the formulation takes none)."""
        raise NotImplementedError

    def _fit(self, X: Any, y: Any, sample_weight: Any) -> None:
        self._check_params()
        params = self._params()
        strategy = make_strategy(self.strategy)
        X, targets = self._targets(X, y)
        self._check_square(X)
        if X.shape[0] < 2:
            raise ValueError(f"X: {type(self).__name__} needs at least two training rows, got n_samples = "
                             f"{X.shape[0]}")
        sw = np.asarray(_check_sample_weight(sample_weight, X, dtype=np.float64), dtype=np.float64)
        if (sw < 0).any():
            raise ValueError("sample_weight: negative weights are not allowed")
        kept = int(np.count_nonzero(sw > 0))
        if kept < 2:
            raise ValueError(f"sample_weight: training needs at least 2 samples of positive weight, got n_samples = "
                             f"{kept}")
        kernel = self._kernel(X)
        try:
            fitted = self._fit_formulation(X, targets, kernel, strategy, params, sample_weight=sw, x0=self._warm(),
                                           reporter=self.progress)
        except ProblemError as exc:
            raise ValueError(str(exc)) from exc
        m = fitted.model
        assert isinstance(m, SVMModel)
        res = fitted.results[0]
        if res.status is not Status.CONVERGED:
            warnings.warn(f"{type(self).__name__}: the solve ended {res.status.code}; the model keeps its best point: "
                          "raise max_iter / time_limit or loosen tol", ConvergenceWarning, stacklevel=3)
        # the training points themselves (a precomputed kernel: their Gram rows over every
        # training column), as the caller gave them
        self.model_ = attrs.evolve(m, sv=X[m.support])
        self._alphas = fitted.alphas
        self._adopt(res, X)

    def _adopt(self, res: Result, X: Any) -> None:
        m = self.model_
        self.result_ = res
        self.status_ = [res.status.code]
        self.n_iter_ = int(res.iterations)
        self.fit_status_ = int(res.status is not Status.CONVERGED)
        self.shape_fit_ = X.shape
        self.support_ = m.support.astype(np.int32)
        self.support_vectors_ = np.empty((0, 0)) if self.kernel == "precomputed" else m.sv
        self.n_support_ = np.array([m.support.size], dtype=np.int32)
        self.dual_coef_ = np.asarray(m.dual_coef, dtype=np.float64)[None, :]
        self.intercept_ = np.array([m.bias])

    @property
    def coef_(self) -> FloatArray:
        """Primal weights (linear kernel only), shape (1, n_features), as scikit-learn's."""
        check_is_fitted(self)
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        w = self.model_.w
        assert w is not None
        return np.asarray(w, dtype=np.float64)[None, :]

    def _decision(self, X: Any) -> FloatArray:
        X = self._points(X)         # first: it checks that the estimator is fitted
        return self.model_.decision_function(X)


class NoveltySVM(OutlierMixin, _OneProblemSVM):  # type: ignore[misc]
    """A novelty detector over a novelty formulation (one-class SVM, SVDD): one problem over the
    rows, +1 inside and −1 outside; ``offset_`` and ``score_samples`` as ``OneClassSVM``'s."""

    def _targets(self, X: Any, y: Any) -> tuple[Any, FloatArray | None]:
        return validate_data(self, X, accept_sparse=self._accept_sparse(), dtype=np.float64, order="C"), None

    def fit(self, X: Any, y: Any = None, sample_weight: Any = None) -> Any:
        """Fit the novelty detector.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional
            Per-sample weights as the formulation takes them (LIBSVM's instance weights); weight 0
            leaves a sample out.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad data, fewer than two rows, parameters the formulation refuses, an unknown
            strategy: before any solve.
        """
        self._fit(X, None, sample_weight)
        self.offset_ = -float(self.intercept_[0])
        return self

    def decision_function(self, X: Any) -> FloatArray:
        """Signed distance to the boundary, positive for inliers (one-class: Σ α_i K(x_i, x) − rho).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Points (precomputed kernel: K(X, training points)).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._decision(X)

    def score_samples(self, X: Any) -> FloatArray:
        """The raw score: ``decision_function(X) + offset_`` (one-class: Σ α_i K(x_i, x)).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        out: FloatArray = self._decision(X) + self.offset_
        return out

    def predict(self, X: Any) -> NDArray[np.int64]:
        """+1 for inliers (decision > 0), −1 for outliers, as LIBSVM.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of int of shape (n_samples,)
        """
        return np.where(self._decision(X) > 0, 1, -1).astype(np.int64)


class ValueSVM(RegressorMixin, _OneProblemSVM):  # type: ignore[misc]
    """A regression over a value formulation (ε-SVR, ν-SVR): one problem over the rows, the
    decision value predicts."""

    def _targets(self, X: Any, y: Any) -> tuple[Any, FloatArray | None]:
        X, yv = validate_data(self, X, y, accept_sparse=self._accept_sparse(), dtype=np.float64, order="C",
                              y_numeric=True)
        return X, np.asarray(yv, dtype=np.float64)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> Any:
        """Fit the regression.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : array-like of shape (n_samples,)
            Real, finite targets.
        sample_weight : array-like of shape (n_samples,), optional
            Per-sample weights as the formulation takes them (a factor on C, or LIBSVM's instance
            weights); weight 0 leaves a sample out.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Bad data, non-finite targets, fewer than two rows, parameters the formulation
            refuses, an unknown strategy: before any solve.
        """
        self._fit(X, y, sample_weight)
        return self

    def predict(self, X: Any) -> FloatArray:
        """Predicted values: the decision value (ε-SVR: Σ (α_i − α*_i) K(x_i, x) − rho).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Points (precomputed kernel: K(X, training points)).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._decision(X)
