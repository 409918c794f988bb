"""A kernel SVM classifier for scikit-learn over any of qpcore's SVM strategies.

:class:`KernelSVC` takes LIBSVM's parameters and exposes ``sklearn.svm.SVC``'s fitted attributes
in LIBSVM's layout, so code written for SVC (grid searches, pipelines, ``dual_coef_`` readers)
runs unchanged; what it adds is the choice of strategy and qpcore's ``Result`` with its
certificate (``result_``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from qpcore_train.multiclass import MulticlassSVM, Trained, train_multiclass
from qpcore_train.probability import calibrate_rows, proba_from_raw
from qpcore_strategies.registry import KERNEL_STRATEGIES, make, parse_spec
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.core.solve import Strategy
from qpcore.core.state import Status
from qpcore_sklearn._params import gamma_value, positive

__all__ = ["KernelSVC", "make_strategy"]

FloatArray = NDArray[np.float64]

#: Strategy names accepted by ``KernelSVC(strategy=...)`` (the registry's kernel strategies).
STRATEGY_NAMES = KERNEL_STRATEGIES


def make_strategy(strategy: str | Strategy) -> Strategy:
    """The strategy for a name of :data:`STRATEGY_NAMES`, or the object itself.

    Names are read by the one registry (:mod:`qpcore_strategies.registry`), as ``qpcore train`` reads
    them, options included: ``"decomposition:q=512"``.

    Parameters
    ----------
    strategy : str or Strategy
        ``"auto"`` (SMO, then INCAS once pair steps crawl), ``"smo"`` (LIBSVM's second-order rule,
        shrinking), ``"decomposition"`` (working sets of
        q variables, SVMlight's rule), ``"incas"`` (Scheinberg's active set), ``"gpcg"``
        (Moré–Toraldo), ``"active-set"`` (dense, small problems), a spec with options
        (``"decomposition:q=512,rule=mvp"``), or a strategy object (e.g. ``SMO(rule="platt")``,
        ``Decomposition(rule=SteepestFeasible(q=512))``).

    Returns
    -------
    Strategy

    Raises
    ------
    ValueError
        For an unknown name or option, a linear strategy, or an object that is not a strategy.
    """
    if isinstance(strategy, str):
        try:
            entry, _ = parse_spec(strategy)
            if entry.family != "kernel":
                raise ProblemError(f"{entry.name} solves a linear SVM (LinearSVMClassifier), not the kernel C-SVC dual")
            return make(strategy)
        except ProblemError as exc:
            raise ValueError(f"strategy: {exc}; use one of {', '.join(STRATEGY_NAMES)} or a strategy object") from None
    if not isinstance(strategy, Strategy):
        raise ValueError(f"strategy: {strategy!r} is neither a name nor a qpcore Strategy")
    return strategy


def _ovr_from_ovo(dec: FloatArray, n_classes: int) -> FloatArray:
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


def _check_proba(est: Any) -> bool:
    # predict_proba exists only with probability=True, as on SVC (hasattr tells callers so)
    if not est.probability:
        raise AttributeError("predict_proba is not available when probability=False")
    return True


class KernelSVC(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Kernel SVM classifier (C-SVC) solved by any qpcore strategy.

    The dual of each binary problem, min ½αᵀ(yyᵀ∘K)α − eᵀα, 0 ≤ α ≤ C_i, yᵀα = 0, is built by
    :func:`qpcore_formulations.svm.csvc` and solved by ``qpcore.solve`` with the chosen strategy to the
    maximal-violating-pair gap ``tol`` (LIBSVM's stopping rule). More than two classes are
    handled one-vs-one as LIBSVM does (or one-vs-rest).

    Parameters
    ----------
    C : float
        Box bound of the dual, > 0.
    kernel : {"rbf", "linear", "poly", "sigmoid", "precomputed"}
        With ``"precomputed"``, ``fit`` takes the n×n Gram matrix and ``predict`` the
        n_test×n_train block K(test, train).
    degree : int
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float
        Kernel coefficient: ``"scale"`` is 1 / (n_features · X.var()), ``"auto"`` 1 / n_features.
    coef0 : float
        Independent term of the polynomial and sigmoid kernels.
    tol : float
        Stopping tolerance on the maximal-violating-pair gap (LIBSVM's ``-e``).
    cache_size : float
        Kernel row cache, in MB.
    class_weight : dict or "balanced", optional
        C of class c is ``C * class_weight[c]``; ``"balanced"`` weighs classes inversely to their
        frequency.
    strategy : str or Strategy
        ``"auto"`` (default: SMO, switching to INCAS once pair steps crawl over a large free set;
        :class:`qpcore_strategies.auto.Auto`), ``"smo"``, ``"decomposition"``, ``"incas"``, ``"gpcg"``,
        ``"active-set"``, a spec with options or a
        strategy object (see :func:`make_strategy`).
    multiclass : {"ovo", "ovr"}
        One-vs-one (LIBSVM's, default) or one-vs-rest binary problems for more than two classes.
    decision_function_shape : {"ovr", "ovo"}
        Shape of ``decision_function`` with one-vs-one: (n, n_classes) as SVC's default, or the
        raw (n, n_classes·(n_classes−1)/2) pairs.
    max_iter : int
        Iteration limit of each binary problem; −1 (default) is LIBSVM's own cap,
        max(10⁷, 100·n). A problem stopped by a limit keeps its best point, and fitting warns
        (``ConvergenceWarning``).
    time_limit : float, optional
        Seconds per binary problem.
    warm_start : bool
        Start each binary problem from the previous fit's solution when the classes and the
        number of samples are unchanged (e.g. along a path of C).
    progress : qpcore.core.solve.Reporter, optional
        Receives the progress of each run (gap against the tolerance, elapsed time).
    probability : bool
        Calibrate class probabilities as LIBSVM's ``-b 1`` does (``predict_proba``): Platt's
        sigmoid per one-vs-one pair fitted to decision values of an internal 5-fold
        cross-validation on that pair's rows, pairs coupled for more classes
        (:mod:`qpcore_train.probability`). The folds' models are trained with the same strategy and
        settings; fitting costs about five times more. Not with ``multiclass="ovr"`` over more
        than two classes.
    random_state : int, RandomState or None
        Seeds the calibration's fold permutations (as SVC's): an int gives the same
        probabilities on every fit.
    predict_from_proba : bool
        Beyond LIBSVM: with ``probability=True``, ``predict`` is the argmax of
        ``predict_proba``, so the two never disagree (LIBSVM's vote and the coupled
        probabilities may, near the boundaries). The probabilities estimate frequencies: with
        ``class_weight`` the predictions then no longer carry the weights' costs.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    support_ : ndarray
        Indices of the support vectors, grouped by class (LIBSVM's order).
    support_vectors_ : ndarray or sparse matrix
        The support vectors (empty for a precomputed kernel, as in SVC).
    n_support_ : ndarray of shape (n_classes,)
        Support vectors per class.
    dual_coef_ : ndarray of shape (n_classes − 1, n_SV)
        α_i y_i in LIBSVM's one-vs-one layout (with ``multiclass="ovr"``: (n_classes, n_SV),
        one row per class-against-rest problem).
    intercept_ : ndarray
        The bias of each binary problem.
    coef_ : ndarray
        Primal weights, linear kernel only.
    n_iter_ : ndarray of int
        Iterations of each binary problem.
    result_ : Result or list of Result
        qpcore's result of each binary problem (a single Result for two classes), with status,
        objective and KKT certificate.
    status_ : list of str
        Status of each binary problem (``"converged"``, ``"max_iter"``, ...).
    probA_, probB_ : ndarray of shape (n_pairs,)
        The sigmoid of each one-vs-one pair, P(first class) = 1/(1 + exp(A·f + B)) on its
        decision value f positive for the pair's first class (SVC's ``probA_``/``probB_``);
        empty without ``probability``.
    n_features_in_ : int
    """

    model_: MulticlassSVM      # the trained model (set by fit)

    def __init__(self, C: float = 1.0, kernel: str = "rbf", degree: int = 3, gamma: str | float = "scale",
                 coef0: float = 0.0, tol: float = 1e-3, cache_size: float = 200, class_weight: Any = None,
                 strategy: str | Strategy = "auto", multiclass: str = "ovo", decision_function_shape: str = "ovr",
                 max_iter: int = -1, time_limit: float | None = None, warm_start: bool = False,
                 progress: Any = None, probability: bool = False, random_state: Any = None,
                 predict_from_proba: bool = False) -> None:
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.strategy = strategy
        self.multiclass = multiclass
        self.decision_function_shape = decision_function_shape
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.warm_start = warm_start
        self.progress = progress
        self.probability = probability
        self.random_state = random_state
        self.predict_from_proba = predict_from_proba

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # -- fitting ----------------------------------------------------------------------------------

    def _check_params(self) -> None:
        positive("C", self.C)
        if self.kernel not in ("rbf", "linear", "poly", "sigmoid", "precomputed"):
            raise ValueError(f"kernel must be rbf, linear, poly, sigmoid or precomputed, got {self.kernel!r}")
        positive("tol", self.tol)
        if self.multiclass not in ("ovo", "ovr"):
            raise ValueError(f"multiclass must be 'ovo' or 'ovr', got {self.multiclass!r}")
        if self.decision_function_shape not in ("ovo", "ovr"):
            raise ValueError(f"decision_function_shape must be 'ovo' or 'ovr', got {self.decision_function_shape!r}")
        if not (isinstance(self.max_iter, (int, np.integer)) and (self.max_iter == -1 or self.max_iter > 0)):
            raise ValueError(f"max_iter must be a positive integer or -1, got {self.max_iter!r}")
        positive("cache_size", self.cache_size, unit=" (MB)")
        self._check_proba_params()

    def _check_proba_params(self) -> None:
        if self.predict_from_proba and not self.probability:
            raise ValueError("predict_from_proba=True needs probability=True")

    def _gamma_value(self, X: Any) -> float:
        return gamma_value(self.gamma, str(self.kernel), X)

    def _class_weights(self, y_idx: NDArray[np.intp], n_classes: int) -> FloatArray:
        w = np.ones(n_classes)
        cw = self.class_weight
        if cw is None:
            return w
        if isinstance(cw, str):
            if cw != "balanced":
                raise ValueError(f"class_weight must be a dict, 'balanced' or None, got {cw!r}")
            counts = np.bincount(y_idx, minlength=n_classes)
            return np.asarray(y_idx.size / (n_classes * np.maximum(counts, 1)), dtype=np.float64)
        for label, weight in dict(cw).items():
            hit = np.flatnonzero(self.classes_ == label)
            if hit.size == 0:
                raise ValueError(f"class_weight: label {label!r} is not among the classes {self.classes_.tolist()}")
            w[hit[0]] = float(weight)
        return w

    def _validated(self, X: Any, y: Any, sample_weight: Any) -> tuple[Any, NDArray[np.intp], FloatArray]:
        """Checked data, class indices (setting ``classes_``, at least two) and sample weights (≥ 0)."""
        sparse_ok = self.kernel != "precomputed"
        X, y = validate_data(self, X, y, accept_sparse="csr" if sparse_ok else False, dtype=np.float64,
                             order="C")
        check_classification_targets(y)
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(f"X: a precomputed kernel must be square (n_samples × n_samples), got {X.shape}")
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if (sw < 0).any():
            raise ValueError("sample_weight: negative weights are not allowed")
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        k = self.classes_.size
        if k < 2:
            raise ValueError(f"y: the training data must hold at least two classes, got {k} class: "
                             f"{self.classes_.tolist()}")
        return X, y_idx.astype(np.intp), np.asarray(sw, dtype=np.float64)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> KernelSVC:
        """Fit the classifier.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : array-like of shape (n_samples,)
            Labels: two or more distinct values of any type.
        sample_weight : array-like of shape (n_samples,), optional
            Per-sample factor on C (LIBSVM's instance weights); samples of weight 0 are left out.

        Returns
        -------
        KernelSVC
            self.

        Raises
        ------
        ValueError
            NaN/inf, shape mismatch, fewer than two classes, C ≤ 0, a non-square precomputed
            kernel, an unknown strategy: before any solve starts.
        """
        self._check_params()
        strategy = make_strategy(self.strategy)
        X, y_idx, sw = self._validated(X, y, sample_weight)
        k = self.classes_.size
        C_i = float(self.C) * self._class_weights(y_idx, k)[y_idx] * sw
        keep = C_i > 0
        if np.unique(y_idx[keep]).size < 2:
            raise ValueError("sample_weight: the samples of nonzero weight hold fewer than two classes")
        gamma = self._gamma_value(X)
        kernel = Kernel(self.kernel, gamma=gamma, degree=int(self.degree), coef0=float(self.coef0))  # type: ignore[arg-type]

        prev = getattr(self, "_alphas", None) if self.warm_start else None
        cap = max(10_000_000, 100 * X.shape[0]) if self.max_iter == -1 else int(self.max_iter)
        try:
            # LIBSVM's own cap when no limit is given: a problem that rounding keeps from ever
            # meeting tol (a polynomial kernel on unscaled data) ends with a warning, not a hang
            trained = train_multiclass(X, y_idx.astype(np.intp), self.classes_, C_i, kernel, strategy,
                                       scheme="ovr" if self.multiclass == "ovr" else "ovo", tol=float(self.tol),
                                       max_iter=cap, time_limit=self.time_limit, reporter=self.progress,
                                       cache_bytes=int(float(self.cache_size) * (1 << 20)), x0=prev)
        except ProblemError as exc:
            raise ValueError(str(exc)) from exc
        self._adopt(trained, X)
        solve_kw: dict[str, Any] = {"tol": float(self.tol), "max_iter": cap, "time_limit": self.time_limit,
                                    "cache_bytes": int(float(self.cache_size) * (1 << 20))}

        def fit_pair(Xs: Any, y01: NDArray[np.intp], classes: NDArray[Any], w: FloatArray) -> Trained:
            return train_multiclass(Xs, y01, classes, w, kernel, strategy, **solve_kw)

        self._calibrate(X, y_idx, C_i, fit_pair)
        return self

    def _calibrate(self, X: Any, y_idx: NDArray[np.intp], weight: FloatArray,
                   fit_pair: Callable[[Any, NDArray[np.intp], NDArray[Any], FloatArray], Trained]) -> None:
        """``probA_``/``probB_`` and the model's sigmoids (with ``probability``; else empty).

        ``fit_pair(X_sub, y01, classes, weight_sub)`` trains one fold's two-class model with the
        fit's settings (class 0 positive); rows of weight 0 take no part, as in the fit.
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
            trained = fit_pair(X[tr][:, tr] if pre else X[tr], y01, self.classes_[[i, j]], weight[tr])
            bad.extend(r.status.code for r in trained.results if r.status is not Status.CONVERGED)
            out: FloatArray = trained.model.raw(X[te][:, tr] if pre else X[te])[:, 0]
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

    def _adopt(self, trained: Trained, X: Any) -> None:
        """The fitted attributes of a training run (shared with ``KernelNuSVC``); warns when a
        problem did not converge."""
        results = trained.results
        self.model_ = trained.model
        self._alphas = trained.alphas
        self.result_ = results[0] if len(results) == 1 else results
        self.status_ = [r.status.code for r in results]
        self.n_iter_ = np.array([r.iterations for r in results], dtype=np.int32)
        bad = [f"{self._pair_name(pr)}: {r.status.code}" for pr, r in zip(trained.model.pairs, results)
               if r.status is not Status.CONVERGED]
        if bad:
            warnings.warn(f"{type(self).__name__}: not every problem converged (" + "; ".join(bad) + "); each "
                          "keeps its best point: raise max_iter / time_limit or loosen tol", ConvergenceWarning,
                          stacklevel=3)
        self._layout(X)

    def _pair_name(self, pair: NDArray[np.intp]) -> str:
        i, j = int(pair[0]), int(pair[1])
        return f"{self.classes_[i]} vs {'rest' if j < 0 else self.classes_[j]}"

    def _layout(self, X: Any) -> None:
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
            for p, (i, j) in enumerate(m.pairs):
                at_i, at_j = m.support_class == i, m.support_class == j
                dual[j - 1, at_i] = m.D[at_i, p]
                dual[i, at_j] = m.D[at_j, p]
        else:
            dual = m.D.T.copy()
        if k == 2:
            dual = -dual                # SVC's binary convention: positive means classes_[1]
        self.dual_coef_ = dual
        self.intercept_ = -m.bias if k == 2 else m.bias.copy()
        if self.kernel == "linear":
            W = np.asarray((m.sv.T @ m.D).T, dtype=np.float64)
            self._coef = -W if k == 2 else W

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
        check_is_fitted(self)
        sparse_ok = self.kernel != "precomputed"
        X = validate_data(self, X, accept_sparse="csr" if sparse_ok else False, dtype=np.float64, order="C",
                          reset=False)
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
        return _ovr_from_ovo(raw, k)

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
