"""scikit-learn estimators for the rest of LIBSVM's family: ν-SVC, one-class SVM, ε-SVR and ν-SVR.

:class:`KernelNuSVC`, :class:`KernelOneClassSVM`, :class:`KernelSVR` and :class:`KernelNuSVR`
take the parameters of ``sklearn.svm.NuSVC``, ``OneClassSVM``, ``SVR`` and ``NuSVR`` and expose
their fitted attributes, so code written for those runs unchanged; what they add, as
:class:`~qpcore_sklearn.svm.KernelSVC` does, is the choice of strategy and qpcore's ``Result``
with its certificate (``result_``). The duals are those of :mod:`qpcore_formulations.svm_family` (LIBSVM's
formulations), solved from LIBSVM's start; sample weights are LIBSVM's instance weights as
scikit-learn applies them (each point's box times its weight, each ν sum over the weights).
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import attrs
import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, OutlierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

import qpcore
from qpcore_train.multiclass import MulticlassSVM, Trained, problems_of, train_multiclass
from qpcore_formulations.svm import SVMModel
from qpcore_formulations.svm_family import FamilyProblem, check_nu, epsilon_svr, nu_svc, nu_svr, one_class
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.core.solve import Strategy
from qpcore.core.state import Result, Status
from qpcore_sklearn._params import gamma_value, positive
from qpcore_sklearn.svm import KernelSVC, make_strategy

__all__ = ["KernelNuSVC", "KernelNuSVR", "KernelOneClassSVM", "KernelSVR"]

FloatArray = NDArray[np.float64]

_KERNELS = ("rbf", "linear", "poly", "sigmoid", "precomputed")


def _check_common(est: Any) -> None:
    """The parameters every estimator of the family shares (kernel, tol, max_iter, cache_size)."""
    if est.kernel not in _KERNELS:
        raise ValueError(f"kernel must be rbf, linear, poly, sigmoid or precomputed, got {est.kernel!r}")
    positive("tol", est.tol)
    if not (isinstance(est.max_iter, (int, np.integer)) and (est.max_iter == -1 or est.max_iter > 0)):
        raise ValueError(f"max_iter must be a positive integer or -1, got {est.max_iter!r}")
    positive("cache_size", est.cache_size, unit=" (MB)")


def _nu(nu: Any) -> float:
    try:
        return check_nu(nu)
    except ProblemError as exc:
        raise ValueError(str(exc)) from None


def _cap(max_iter: int, n_variables: int) -> int:
    """The iteration limit: LIBSVM's own cap max(10⁷, 100·variables) for −1, so that a problem
    rounding keeps from meeting tol ends with a warning, not a hang."""
    return max(10_000_000, 100 * n_variables) if max_iter == -1 else int(max_iter)


def _kept(sw: FloatArray, n_min: int = 2) -> NDArray[np.intp]:
    """The rows of positive weight (zero-weight rows are left out, as LIBSVM's fork does)."""
    rows = np.flatnonzero(sw > 0)
    if rows.size < n_min:
        raise ValueError(f"sample_weight: training needs at least {n_min} samples of positive weight, "
                         f"got n_samples = {rows.size}")
    return rows


def _uniform(w: FloatArray) -> bool:
    return bool(np.all(w == w[0]))


def _converged_or_warn(name: str, result: Result) -> None:
    if result.status is not Status.CONVERGED:
        warnings.warn(f"{name}: the solve ended {result.status.code}; the model keeps its best point: raise "
                      "max_iter / time_limit or loosen tol", ConvergenceWarning, stacklevel=4)


class KernelNuSVC(KernelSVC):
    """ν-support vector classifier (LIBSVM's ν-SVC, ``sklearn.svm.NuSVC``) solved by any qpcore strategy.

    Each binary problem is the dual min ½αᵀ(yyᵀ∘K)α, 0 ≤ α ≤ 1, Σ_{y=+1} α = Σ_{y=−1} α = νl/2
    (:func:`qpcore_formulations.svm_family.nu_svc`: two disjoint groups, LIBSVM's Solver_NU), solved from
    LIBSVM's start to the tolerance; its model is LIBSVM's (coefficients and rho divided by r).
    More than two classes are one-vs-one as LIBSVM does (or one-vs-rest), with KernelSVC's
    layout of the fitted attributes.

    Parameters
    ----------
    nu : float
        In (0, 1]: an upper bound on the fraction of margin errors and a lower bound on that of
        support vectors; at most 2·min(n_i, n_j)/(n_i + n_j) for every pair of classes (else
        LIBSVM's "specified nu is infeasible").
    kernel : {"rbf", "linear", "poly", "sigmoid", "precomputed"}
        As in :class:`~qpcore_sklearn.svm.KernelSVC`.
    degree : int
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float
        Kernel coefficient (see :class:`~qpcore_sklearn.svm.KernelSVC`).
    coef0 : float
        Independent term of the polynomial and sigmoid kernels.
    shrinking : bool
        Accepted as NuSVC takes it; shrinking is the strategy's own option
        (``"smo:shrinking=false"``).
    tol : float
        Stopping tolerance on the maximal-violating-pair gap.
    cache_size : float
        Kernel row cache, in MB.
    class_weight : dict or "balanced", optional
        Accepted and checked as NuSVC takes it, and like NuSVC without effect: LIBSVM's ν-SVC has
        no C for the weight to scale.
    strategy : str or Strategy
        ``"auto"`` (default), ``"smo"``, ``"decomposition"``, ``"active-set"``, ``"gpcg"``, a spec with options or a
        strategy object (see :func:`~qpcore_sklearn.svm.make_strategy`); a strategy must take
        two equality groups (INCAS takes one row and refuses).
    multiclass : {"ovo", "ovr"}
        One-vs-one (LIBSVM's, default) or one-vs-rest for more than two classes.
    decision_function_shape : {"ovr", "ovo"}
        As in :class:`~qpcore_sklearn.svm.KernelSVC`.
    max_iter : int
        Iteration limit of each binary problem; −1 is LIBSVM's cap, max(10⁷, 100·n).
    time_limit : float, optional
        Seconds per binary problem.
    warm_start : bool
        Start each binary problem from the previous fit's solution when it still fits.
    progress : qpcore.core.solve.Reporter, optional
        Receives the progress of each run.
    probability, random_state, predict_from_proba :
        Class probabilities as LIBSVM's ``-b 1`` (see :class:`~qpcore_sklearn.svm.KernelSVC`);
        a calibration fold whose class balance cannot take ν trains with the largest ν it takes.

    Attributes
    ----------
    classes_, support_, support_vectors_, n_support_, dual_coef_, intercept_, coef_, probA_, probB_ :
        NuSVC's, in LIBSVM's layout (see :class:`~qpcore_sklearn.svm.KernelSVC`).
    fit_status_ : int
        0 when every problem converged, 1 otherwise (as LIBSVM's).
    shape_fit_ : tuple
        Shape of the training data.
    n_iter_ : ndarray of int
        Iterations of each binary problem.
    result_ : Result or list of Result
        qpcore's result of each binary problem, with its KKT certificate.
    status_ : list of str
    n_features_in_ : int

    Notes
    -----
    Per-sample weights other than 0 and one common value are taken for two classes (each box is
    w_i, each sum ν·Σw/2, as scikit-learn's LIBSVM does); for more classes they are refused.
    """

    def __init__(self, nu: float = 0.5, kernel: str = "rbf", degree: int = 3, gamma: str | float = "scale",
                 coef0: float = 0.0, shrinking: bool = True, tol: float = 1e-3, cache_size: float = 200,
                 class_weight: Any = None, strategy: str | Strategy = "auto", multiclass: str = "ovo",
                 decision_function_shape: str = "ovr", max_iter: int = -1, time_limit: float | None = None,
                 warm_start: bool = False, progress: Any = None, probability: bool = False,
                 random_state: Any = None, predict_from_proba: bool = False) -> None:
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
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

    def _check_params(self) -> None:
        self._check_proba_params()
        _nu(self.nu)
        _check_common(self)
        if self.multiclass not in ("ovo", "ovr"):
            raise ValueError(f"multiclass must be 'ovo' or 'ovr', got {self.multiclass!r}")
        if self.decision_function_shape not in ("ovo", "ovr"):
            raise ValueError(f"decision_function_shape must be 'ovo' or 'ovr', got {self.decision_function_shape!r}")

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> KernelNuSVC:
        """Fit the classifier.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : array-like of shape (n_samples,)
            Labels: two or more distinct values.
        sample_weight : array-like of shape (n_samples,), optional
            LIBSVM's instance weights; samples of weight 0 are left out.

        Returns
        -------
        KernelNuSVC
            self.

        Raises
        ------
        ValueError
            Bad data or labels, ν outside (0, 1], an infeasible ν for the class balance, an
            unknown strategy (before any solve starts). A pair whose margin is 0 at the solution
            (r = 0: the classes' reduced hulls meet) keeps its coefficients unscaled.
        """
        self._check_params()
        nu = float(self.nu)
        strategy = make_strategy(self.strategy)
        X, y_idx, sw = self._validated(X, y, sample_weight)
        k = self.classes_.size
        self._class_weights(y_idx, k)       # checked as NuSVC checks it; ν-SVC has no C to weigh
        keep = sw > 0
        gamma = self._gamma_value(X)
        kernel = Kernel(self.kernel, gamma=gamma, degree=int(self.degree), coef0=float(self.coef0))  # type: ignore[arg-type]
        prev = getattr(self, "_alphas", None) if self.warm_start else None
        solve_kw: dict[str, Any] = {"tol": float(self.tol), "max_iter": _cap(self.max_iter, X.shape[0]),
                                    "time_limit": self.time_limit, "reporter": self.progress}
        cache_bytes = int(float(self.cache_size) * (1 << 20))
        try:
            if keep.any() and not _uniform(sw[keep]):
                if k > 2:
                    raise ValueError("sample_weight: weights other than 0 and one common value are taken for two "
                                     "classes only (LIBSVM's weighted ν-SVC per pair is not built yet)")
                trained = self._fit_weighted(X, y_idx, sw, nu, kernel, strategy, solve_kw, cache_bytes, prev)
            else:
                # one common weight scales α and r alike: LIBSVM's model (divided by r) is the same
                trained = train_multiclass(X, y_idx, self.classes_, keep.astype(np.float64), kernel, strategy,
                                           scheme="ovr" if self.multiclass == "ovr" else "ovo",
                                           cache_bytes=cache_bytes, x0=prev, nu=nu, **solve_kw)
        except ProblemError as exc:
            raise ValueError(str(exc)) from exc
        self._adopt(trained, X)
        self.fit_status_ = int(any(r.status is not Status.CONVERGED for r in trained.results))
        self.shape_fit_ = X.shape

        def fit_pair(Xs: Any, y01: NDArray[np.intp], classes: NDArray[Any], w: FloatArray) -> Trained:
            # a fold's class balance may not take ν (LIBSVM trains it regardless): the largest ν it takes
            pos = float(w[y01 == 0].sum())
            neg = float(w[y01 == 1].sum())
            nu_fold = min(nu, 2.0 * min(pos, neg) / (pos + neg) * (1.0 - 1e-12))   # rounding stays feasible
            if _uniform(w):
                return train_multiclass(Xs, y01, classes, np.ones(w.size), kernel, strategy,
                                        cache_bytes=cache_bytes, nu=nu_fold, **solve_kw)
            return self._fit_weighted(Xs, y01, w, nu_fold, kernel, strategy, solve_kw, cache_bytes, None,
                                      classes=classes)

        self._calibrate(X, y_idx, sw, fit_pair)
        return self

    def _fit_weighted(self, X: Any, y_idx: NDArray[np.intp], sw: FloatArray, nu: float, kernel: Kernel,
                      strategy: Strategy, solve_kw: dict[str, Any], cache_bytes: int,
                      prev: list[FloatArray] | None, classes: NDArray[Any] | None = None) -> Trained:
        """Two classes with per-sample weights: one weighted ν-SVC, in train_multiclass's layout
        (class 0 positive, support vectors by class then index); ``classes`` default ``classes_``."""
        rows = _kept(sw)
        labels = np.where(y_idx[rows] == 0, 1.0, -1.0)
        if np.unique(labels).size < 2:
            raise ValueError("sample_weight: the samples of nonzero weight hold fewer than two classes")
        Xp = X[rows][:, rows] if kernel.name == "precomputed" else X[rows]
        prob = nu_svc(Xp, labels, nu, kernel, weight=sw[rows], cache_bytes=cache_bytes)
        start = prev[0] if prev is not None and len(prev) == 1 and prev[0].size == rows.size else prob.x0
        res = qpcore.solve(prob.qp, strategy, x0=start, **solve_kw)
        m = prob.decode(res)
        support = rows[m.support]
        order = np.lexsort((support, y_idx[support]))
        support = support[order]
        model = MulticlassSVM(classes=self.classes_ if classes is None else classes, kernel=kernel, scheme="ovo", pairs=problems_of(2, "ovo"),
                              support=support, support_class=y_idx[support],
                              sv=None if kernel.name == "precomputed" else X[support],
                              D=np.asarray(m.dual_coef, dtype=np.float64)[order][:, None], bias=np.array([m.bias]))
        return Trained(model=model, results=[res], alphas=[np.asarray(res.x, dtype=np.float64)], rows=[rows])


class _KernelFamily(BaseEstimator):  # type: ignore[misc]
    """What the single-problem estimators share: fit through a builder of
    :mod:`qpcore_formulations.svm_family`, LIBSVM's fitted attributes, decision values."""

    _regression: ClassVar[bool] = False
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

    def _check_params(self) -> None:
        _check_common(self)

    def _problem(self, X: Any, y: FloatArray | None, w: FloatArray, kernel: Kernel,
                 cache_bytes: int) -> FamilyProblem:
        """The builder's problem over the kept rows, with their weights."""
        raise NotImplementedError

    def _fit(self, X: Any, y: Any, sample_weight: Any) -> None:
        self._check_params()
        strategy = make_strategy(self.strategy)
        sparse_ok = self.kernel != "precomputed"
        accept = "csr" if sparse_ok else False
        if self._regression:
            X, yv = validate_data(self, X, y, accept_sparse=accept, dtype=np.float64, order="C", y_numeric=True)
            yv = np.asarray(yv, dtype=np.float64)
        else:
            X = validate_data(self, X, accept_sparse=accept, dtype=np.float64, order="C")
            yv = None
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(f"X: a precomputed kernel must be square (n_samples × n_samples), got {X.shape}")
        if X.shape[0] < 2:
            raise ValueError(f"X: {type(self).__name__} needs at least two training rows, got n_samples = "
                             f"{X.shape[0]}")
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64)
        if (sw < 0).any():
            raise ValueError("sample_weight: negative weights are not allowed")
        rows = _kept(sw)
        gamma = gamma_value(self.gamma, str(self.kernel), X)
        kernel = Kernel(self.kernel, gamma=gamma, degree=int(self.degree), coef0=float(self.coef0))  # type: ignore[arg-type]
        Xp = X[rows][:, rows] if kernel.name == "precomputed" else X[rows]
        try:
            prob = self._problem(Xp, None if yv is None else yv[rows], sw[rows], kernel,
                                 int(float(self.cache_size) * (1 << 20)))
            qp = prob.qp
            res = qpcore.solve(qp, strategy, x0=prob.x0, tol=float(self.tol), max_iter=_cap(self.max_iter, qp.c.size),
                               time_limit=self.time_limit, reporter=self.progress)
            m = prob.decode(res)
        except ProblemError as exc:
            raise ValueError(str(exc)) from exc
        _converged_or_warn(type(self).__name__, res)
        # the model in the caller's indexing: support over all rows, a precomputed block over all
        # training columns
        support = rows[m.support]
        self.model_ = attrs.evolve(m, support=support, sv=X[support])
        self.result_ = res
        self.status_ = [res.status.code]
        self.n_iter_ = int(res.iterations)
        self.fit_status_ = int(res.status is not Status.CONVERGED)
        self.shape_fit_ = X.shape
        self.support_ = support.astype(np.int32)
        self.support_vectors_ = np.empty((0, 0)) if kernel.name == "precomputed" else self.model_.sv
        self.n_support_ = np.array([support.size], dtype=np.int32)
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
        check_is_fitted(self)
        sparse_ok = self.kernel != "precomputed"
        X = validate_data(self, X, accept_sparse="csr" if sparse_ok else False, dtype=np.float64, order="C",
                          reset=False)
        model: SVMModel = self.model_
        return model.decision_function(X)


class KernelOneClassSVM(OutlierMixin, _KernelFamily):  # type: ignore[misc]
    """Schölkopf's one-class SVM (LIBSVM's, ``sklearn.svm.OneClassSVM``) solved by any qpcore strategy.

    The dual min ½αᵀKα, 0 ≤ α ≤ 1, eᵀα = νl (:func:`qpcore_formulations.svm_family.one_class`) is solved
    from LIBSVM's start to the tolerance; the decision is Σ α_i K(x_i, x) − rho, positive for
    inliers.

    Parameters
    ----------
    kernel, degree, gamma, coef0 :
        As in :class:`~qpcore_sklearn.svm.KernelSVC`.
    tol : float
        Stopping tolerance on the maximal-violating-pair gap.
    nu : float
        In (0, 1]: an upper bound on the fraction of training errors (outliers) and a lower bound
        on that of support vectors.
    shrinking : bool
        Accepted as OneClassSVM takes it; shrinking is the strategy's option (``"smo:shrinking=false"``).
    cache_size : float
        Kernel row cache, in MB.
    max_iter : int
        Iteration limit; −1 is LIBSVM's cap, max(10⁷, 100·n). A run stopped by a limit keeps its
        best point and fitting warns (``ConvergenceWarning``).
    strategy : str or Strategy
        ``"auto"`` (default), ``"smo"``, ``"decomposition"``, ``"incas"``, ``"gpcg"``, ``"active-set"``, a spec with
        options or a strategy object.
    time_limit : float, optional
        Seconds for the solve.
    progress : qpcore.core.solve.Reporter, optional
        Receives the progress of the run.

    Attributes
    ----------
    support_ : ndarray of int
    support_vectors_ : ndarray or sparse matrix
        Empty for a precomputed kernel.
    n_support_ : ndarray of shape (1,)
    dual_coef_ : ndarray of shape (1, n_SV)
        α of each support vector.
    intercept_ : ndarray of shape (1,)
        −rho.
    offset_ : float
        rho: ``decision_function = score_samples − offset_``.
    coef_ : ndarray of shape (1, n_features)
        Linear kernel only.
    fit_status_ : int
        0 when the run converged, 1 otherwise.
    shape_fit_ : tuple
    n_iter_ : int
    result_ : Result
        qpcore's result with its KKT certificate.
    status_ : list of str
    n_features_in_ : int
    """

    def __init__(self, kernel: str = "rbf", degree: int = 3, gamma: str | float = "scale", coef0: float = 0.0,
                 tol: float = 1e-3, nu: float = 0.5, shrinking: bool = True, cache_size: float = 200,
                 max_iter: int = -1, strategy: str | Strategy = "auto", time_limit: float | None = None,
                 progress: Any = None) -> None:
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.nu = nu
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.max_iter = max_iter
        self.strategy = strategy
        self.time_limit = time_limit
        self.progress = progress

    def _check_params(self) -> None:
        _nu(self.nu)
        _check_common(self)

    def _problem(self, X: Any, y: FloatArray | None, w: FloatArray, kernel: Kernel,
                 cache_bytes: int) -> FamilyProblem:
        return one_class(X, float(self.nu), kernel, weight=None if _uniform(w) and w[0] == 1.0 else w,
                         cache_bytes=cache_bytes)

    def fit(self, X: Any, y: Any = None, sample_weight: Any = None) -> KernelOneClassSVM:
        """Fit the novelty detector.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : ignored
        sample_weight : array-like of shape (n_samples,), optional
            LIBSVM's instance weights (point i's box is w_i, the sum ν·Σw); weight 0 leaves a
            sample out.

        Returns
        -------
        KernelOneClassSVM
            self.

        Raises
        ------
        ValueError
            Bad data, fewer than two rows, ν outside (0, 1], an unknown strategy: before any solve.
        """
        self._fit(X, None, sample_weight)
        self.offset_ = -float(self.intercept_[0])
        return self

    def decision_function(self, X: Any) -> FloatArray:
        """Signed distance to the boundary: Σ α_i K(x_i, x) − rho, positive for inliers.

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
        """The raw score Σ α_i K(x_i, x): ``decision_function(X) + offset_``.

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


class _KernelRegressor(RegressorMixin, _KernelFamily):  # type: ignore[misc]
    """What ε-SVR and ν-SVR share: real targets, and a prediction that is the decision value."""

    _regression: ClassVar[bool] = True

    def predict(self, X: Any) -> FloatArray:
        """Predicted values Σ (α_i − α*_i) K(x_i, x) − rho.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Points (precomputed kernel: K(X, training points)).

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._decision(X)


class KernelSVR(_KernelRegressor):
    """ε-support vector regression (LIBSVM's ε-SVR, ``sklearn.svm.SVR``) solved by any qpcore strategy.

    The dual over [α; α*] (:func:`qpcore_formulations.svm_family.epsilon_svr`: 2l variables served from l
    cached kernel rows by :class:`qpcore.backends.doubled.DoubledKernelQ`), min ½xᵀQx + (ε − y)ᵀα +
    (ε + y)ᵀα*, 0 ≤ x ≤ C, Σα = Σα*; the prediction is Σ (α_i − α*_i) K(x_i, x) − rho.

    Parameters
    ----------
    kernel, degree, gamma, coef0 :
        As in :class:`~qpcore_sklearn.svm.KernelSVC`.
    tol : float
        Stopping tolerance on the maximal-violating-pair gap.
    C : float
        Box bound of the dual, > 0.
    epsilon : float
        Half-width of the insensitive tube, ≥ 0.
    shrinking : bool
        Accepted as SVR takes it; shrinking is the strategy's option (``"smo:shrinking=false"``).
    cache_size : float
        Kernel row cache, in MB.
    max_iter : int
        Iteration limit; −1 is LIBSVM's cap, max(10⁷, 100·2l).
    strategy : str or Strategy
        ``"auto"`` (default), ``"smo"``, ``"decomposition"``, ``"incas"``, ``"gpcg"``, ``"active-set"``, a spec with
        options or a strategy object.
    time_limit : float, optional
        Seconds for the solve.
    progress : qpcore.core.solve.Reporter, optional
        Receives the progress of the run.

    Attributes
    ----------
    support_, support_vectors_, n_support_ :
        As in :class:`KernelOneClassSVM`.
    dual_coef_ : ndarray of shape (1, n_SV)
        α_i − α*_i of each support vector.
    intercept_ : ndarray of shape (1,)
        −rho.
    coef_ : ndarray of shape (1, n_features)
        Linear kernel only.
    fit_status_, shape_fit_, n_iter_, result_, status_, n_features_in_ :
        As in :class:`KernelOneClassSVM`.
    """

    def __init__(self, kernel: str = "rbf", degree: int = 3, gamma: str | float = "scale", coef0: float = 0.0,
                 tol: float = 1e-3, C: float = 1.0, epsilon: float = 0.1, shrinking: bool = True,
                 cache_size: float = 200, max_iter: int = -1, strategy: str | Strategy = "auto",
                 time_limit: float | None = None, progress: Any = None) -> None:
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.C = C
        self.epsilon = epsilon
        self.shrinking = shrinking
        self.cache_size = cache_size
        self.max_iter = max_iter
        self.strategy = strategy
        self.time_limit = time_limit
        self.progress = progress

    def _check_params(self) -> None:
        positive("C", self.C)
        _check_common(self)

    def _problem(self, X: Any, y: FloatArray | None, w: FloatArray, kernel: Kernel,
                 cache_bytes: int) -> FamilyProblem:
        assert y is not None
        C = float(self.C) if _uniform(w) and w[0] == 1.0 else float(self.C) * w
        return epsilon_svr(X, y, C, self.epsilon, kernel, cache_bytes=cache_bytes)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> KernelSVR:
        """Fit the regression.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : array-like of shape (n_samples,)
            Real, finite targets.
        sample_weight : array-like of shape (n_samples,), optional
            Per-sample factor on C; weight 0 leaves a sample out.

        Returns
        -------
        KernelSVR
            self.

        Raises
        ------
        ValueError
            Bad data, non-finite targets, fewer than two rows, C ≤ 0, ε < 0, an unknown
            strategy: before any solve.
        """
        self._fit(X, y, sample_weight)
        return self


class KernelNuSVR(_KernelRegressor):
    """ν-support vector regression (LIBSVM's ν-SVR, ``sklearn.svm.NuSVR``) solved by any qpcore strategy.

    The ε-SVR's doubled dual with c = [−y; y] and two groups, Σα = Σα* = Cνl/2
    (:func:`qpcore_formulations.svm_family.nu_svr`); the tube's width comes out of the solution. INCAS
    takes one equality row and refuses it; SMO (LIBSVM's Solver_NU), decomposition and the
    general strategies solve it.

    Parameters
    ----------
    nu : float
        In (0, 1]: an upper bound on the fraction of training errors and a lower bound on that
        of support vectors.
    C : float
        Box bound of the dual, > 0.
    kernel, degree, gamma, coef0 :
        As in :class:`~qpcore_sklearn.svm.KernelSVC`.
    shrinking : bool
        Accepted as NuSVR takes it; shrinking is the strategy's option (``"smo:shrinking=false"``).
    tol : float
        Stopping tolerance on the maximal-violating-pair gap.
    cache_size : float
        Kernel row cache, in MB.
    max_iter : int
        Iteration limit; −1 is LIBSVM's cap, max(10⁷, 100·2l).
    strategy : str or Strategy
        A name, spec with options or strategy object that takes two equality groups.
    time_limit : float, optional
        Seconds for the solve.
    progress : qpcore.core.solve.Reporter, optional
        Receives the progress of the run.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_, coef_ :
        As in :class:`KernelSVR`.
    fit_status_, shape_fit_, n_iter_, result_, status_, n_features_in_ :
        As in :class:`KernelOneClassSVM`.
    """

    def __init__(self, nu: float = 0.5, C: float = 1.0, kernel: str = "rbf", degree: int = 3,
                 gamma: str | float = "scale", coef0: float = 0.0, shrinking: bool = True, tol: float = 1e-3,
                 cache_size: float = 200, max_iter: int = -1, strategy: str | Strategy = "auto",
                 time_limit: float | None = None, progress: Any = None) -> None:
        self.nu = nu
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.max_iter = max_iter
        self.strategy = strategy
        self.time_limit = time_limit
        self.progress = progress

    def _check_params(self) -> None:
        _nu(self.nu)
        positive("C", self.C)
        _check_common(self)

    def _problem(self, X: Any, y: FloatArray | None, w: FloatArray, kernel: Kernel,
                 cache_bytes: int) -> FamilyProblem:
        assert y is not None
        return nu_svr(X, y, float(self.C), float(self.nu), kernel, weight=None if _uniform(w) and w[0] == 1.0 else w,
                      cache_bytes=cache_bytes)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> KernelNuSVR:
        """Fit the regression.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : array-like of shape (n_samples,)
            Real, finite targets.
        sample_weight : array-like of shape (n_samples,), optional
            LIBSVM's instance weights (point i's box is C·w_i, each sum Cν·Σw/2); weight 0 leaves
            a sample out.

        Returns
        -------
        KernelNuSVR
            self.

        Raises
        ------
        ValueError
            Bad data, non-finite targets, fewer than two rows, C ≤ 0, ν outside (0, 1], an
            unknown strategy: before any solve.
        """
        self._fit(X, y, sample_weight)
        return self
