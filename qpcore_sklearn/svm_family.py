"""scikit-learn estimators for the rest of LIBSVM's family: ν-SVC, one-class SVM, ε-SVR and ν-SVR.

:class:`KernelNuSVC`, :class:`KernelOneClassSVM`, :class:`KernelSVR` and :class:`KernelNuSVR`
take the parameters of ``sklearn.svm.NuSVC``, ``OneClassSVM``, ``SVR`` and ``NuSVR`` and expose
their fitted attributes, so code written for those runs unchanged; what they add, as
:class:`~qpcore_sklearn.svm.KernelSVC` does, is the choice of strategy and qpcore's ``Result``
with its certificate (``result_``). Each is its formulation of
:data:`qpcore_formulations.formulation.FORMULATIONS` (``nu-svc``, ``one-class``, ``epsilon-svr``,
``nu-svr``: the duals of :mod:`qpcore_formulations.svm_family`, solved from LIBSVM's start) over
the shared bases of :mod:`qpcore_sklearn.svm_base`, trained by
:func:`qpcore_train.fit.fit_formulation`; sample weights are LIBSVM's instance weights as
scikit-learn applies them (each point's box times its weight, each ν sum over the weights).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from qpcore.core.solve import Strategy
from qpcore_sklearn.svm import KernelSVC
from qpcore_sklearn.svm_base import NoveltySVM, ValueSVM, class_factors

__all__ = ["KernelNuSVC", "KernelNuSVR", "KernelOneClassSVM", "KernelSVR"]

FloatArray = NDArray[np.float64]


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

    _formulation = "nu-svc"
    _positive: ClassVar[tuple[str, ...]] = ()

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

    def _class_factors(self, y_idx: NDArray[np.intp]) -> FloatArray | None:
        class_factors(self.class_weight, self.classes_, y_idx)     # checked as NuSVC checks it
        return None         # ν-SVC has no C for a class weight to scale (NuSVC ignores it too)

    def _row_weights(self, sw: FloatArray, n_classes: int) -> FloatArray:
        keep = sw > 0
        kept = sw[keep]
        if kept.size and not np.all(kept == kept[0]):
            if n_classes > 2:
                raise ValueError("sample_weight: weights other than 0 and one common value are taken for two "
                                 "classes only (the weighted ν-SVC of more classes is not checked against LIBSVM's "
                                 "yet)")
            return sw
        # one common weight scales α and r alike: LIBSVM's model (divided by r) is the same, and
        # the unscaled problem keeps tol's meaning
        return keep.astype(np.float64)

    def _fold_params(self, params: dict[str, float], y01: NDArray[np.intp], weight: FloatArray) -> dict[str, float]:
        # a fold's class balance may not take ν (LIBSVM trains it regardless): the largest ν it takes
        pos = float(weight[y01 == 0].sum())
        neg = float(weight[y01 == 1].sum())
        nu = min(params["nu"], 2.0 * min(pos, neg) / (pos + neg) * (1.0 - 1e-12))   # rounding stays feasible
        return {**params, "nu": nu}

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
        out: KernelNuSVC = super().fit(X, y, sample_weight)
        return out


class KernelOneClassSVM(NoveltySVM):
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

    _formulation = "one-class"

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
        out: KernelOneClassSVM = super().fit(X, y, sample_weight)
        return out


class KernelSVR(ValueSVM):
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

    _formulation = "epsilon-svr"
    _positive = ("C",)

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
        out: KernelSVR = super().fit(X, y, sample_weight)
        return out


class KernelNuSVR(ValueSVM):
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

    _formulation = "nu-svr"
    _positive = ("C",)

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
        out: KernelNuSVR = super().fit(X, y, sample_weight)
        return out
