"""A kernel SVM classifier for scikit-learn over any of qpcore's SVM strategies.

:class:`KernelSVC` takes LIBSVM's parameters and exposes ``sklearn.svm.SVC``'s fitted attributes
in LIBSVM's layout, so code written for SVC (grid searches, pipelines, ``dual_coef_`` readers)
runs unchanged; what it adds is the choice of strategy and qpcore's ``Result`` with its
certificate (``result_``). It is the C-SVC formulation (``c-svc`` of
:data:`qpcore_formulations.formulation.FORMULATIONS`) over the shared classifier base
(:class:`qpcore_sklearn.svm_base.LabelSVM`), trained by :func:`qpcore_train.fit.fit_formulation`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from qpcore.core.solve import Strategy
from qpcore_sklearn._params import STRATEGY_NAMES, make_strategy
from qpcore_sklearn.svm_base import LabelSVM

__all__ = ["STRATEGY_NAMES", "KernelSVC", "make_strategy"]


class KernelSVC(LabelSVM):
    """Kernel SVM classifier (C-SVC) solved by any qpcore strategy.

    The dual of each binary problem, min ½αᵀ(yyᵀ∘K)α − eᵀα, 0 ≤ α ≤ C_i, yᵀα = 0 (the ``c-svc``
    formulation, :func:`qpcore_formulations.svm.csvc`), is solved by the training layer
    (:func:`qpcore_train.fit.fit_formulation`) with the chosen strategy to the
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
    fit_status_ : int
        0 when every problem converged, 1 otherwise (as LIBSVM's).
    shape_fit_ : tuple
        Shape of the training data.
    probA_, probB_ : ndarray of shape (n_pairs,)
        The sigmoid of each one-vs-one pair, P(first class) = 1/(1 + exp(A·f + B)) on its
        decision value f positive for the pair's first class (SVC's ``probA_``/``probB_``);
        empty without ``probability``.
    n_features_in_ : int
    """

    _formulation = "c-svc"
    _positive: ClassVar[tuple[str, ...]] = ("C",)

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
        out: KernelSVC = super().fit(X, y, sample_weight)
        return out
