"""A kernel SVM classifier for scikit-learn over any of qpcore's SVM strategies.

:class:`KernelSVC` takes LIBSVM's parameters and exposes ``sklearn.svm.SVC``'s fitted attributes
in LIBSVM's layout, so code written for SVC (grid searches, pipelines, ``dual_coef_`` readers)
runs unchanged; what it adds is the choice of strategy and qpcore's ``Result`` with its
certificate (``result_``).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

import qpcore
from problems.svm import csvc
from qpcore.operators import Kernel
from qpcore.solve import Strategy
from qpcore.state import Result, Status

__all__ = ["KernelSVC", "make_strategy"]

FloatArray = NDArray[np.float64]

#: Strategy names accepted by ``KernelSVC(strategy=...)``.
STRATEGY_NAMES = ("smo", "decomposition", "incas", "gpcg")


def make_strategy(strategy: str | Strategy) -> Strategy:
    """The strategy for a name of :data:`STRATEGY_NAMES` (default settings), or the object itself.

    Parameters
    ----------
    strategy : str or Strategy
        ``"smo"`` (LIBSVM's second-order rule, shrinking), ``"decomposition"`` (working sets of
        q variables, SVMlight's rule), ``"incas"`` (Scheinberg's active set), ``"gpcg"``
        (Moré–Toraldo), or any object with the strategy protocol (e.g.
        ``SMO(rule="platt")``, ``Decomposition(q=512)``).

    Returns
    -------
    Strategy

    Raises
    ------
    ValueError
        For an unknown name or an object that is not a strategy.
    """
    if isinstance(strategy, str):
        if strategy == "smo":
            from strategies.smo import SMO

            return SMO()
        if strategy == "decomposition":
            from strategies.decomposition import Decomposition

            return Decomposition()
        if strategy == "incas":
            from strategies.incas import INCAS

            return INCAS()
        if strategy == "gpcg":
            from strategies.gradient_projection import GPCG

            return GPCG()
        raise ValueError(f"strategy: unknown name {strategy!r}; use one of {', '.join(STRATEGY_NAMES)} "
                         "or a strategy object")
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


class KernelSVC(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Kernel SVM classifier (C-SVC) solved by any qpcore strategy.

    The dual of each binary problem, min ½αᵀ(yyᵀ∘K)α − eᵀα, 0 ≤ α ≤ C_i, yᵀα = 0, is built by
    :func:`problems.svm.csvc` and solved by ``qpcore.solve`` with the chosen strategy to the
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
        ``"smo"``, ``"decomposition"``, ``"incas"``, ``"gpcg"`` or a strategy object (see
        :func:`make_strategy`).
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
    progress : qpcore.solve.Reporter, optional
        Receives the progress of each run (gap against the tolerance, elapsed time).

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
    n_features_in_ : int
    """

    def __init__(self, C: float = 1.0, kernel: str = "rbf", degree: int = 3, gamma: str | float = "scale",
                 coef0: float = 0.0, tol: float = 1e-3, cache_size: float = 200, class_weight: Any = None,
                 strategy: str | Strategy = "smo", multiclass: str = "ovo", decision_function_shape: str = "ovr",
                 max_iter: int = -1, time_limit: float | None = None, warm_start: bool = False,
                 progress: Any = None) -> None:
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

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    # -- fitting ----------------------------------------------------------------------------------

    def _check_params(self) -> None:
        if not (isinstance(self.C, (int, float, np.number)) and np.isfinite(self.C) and float(self.C) > 0):
            raise ValueError(f"C must be a finite number > 0, got {self.C!r}")
        if self.kernel not in ("rbf", "linear", "poly", "sigmoid", "precomputed"):
            raise ValueError(f"kernel must be rbf, linear, poly, sigmoid or precomputed, got {self.kernel!r}")
        if not (isinstance(self.tol, (int, float, np.number)) and float(self.tol) > 0):
            raise ValueError(f"tol must be > 0, got {self.tol!r}")
        if self.multiclass not in ("ovo", "ovr"):
            raise ValueError(f"multiclass must be 'ovo' or 'ovr', got {self.multiclass!r}")
        if self.decision_function_shape not in ("ovo", "ovr"):
            raise ValueError(f"decision_function_shape must be 'ovo' or 'ovr', got {self.decision_function_shape!r}")
        if not (isinstance(self.max_iter, (int, np.integer)) and (self.max_iter == -1 or self.max_iter > 0)):
            raise ValueError(f"max_iter must be a positive integer or -1, got {self.max_iter!r}")
        if not (isinstance(self.cache_size, (int, float, np.number)) and float(self.cache_size) > 0):
            raise ValueError(f"cache_size must be > 0 (MB), got {self.cache_size!r}")

    def _gamma_value(self, X: Any) -> float:
        if self.kernel in ("linear", "precomputed"):
            return 1.0
        if isinstance(self.gamma, str):
            if self.gamma == "auto":
                return 1.0 / float(X.shape[1])
            if self.gamma == "scale":
                var = float((X.multiply(X)).mean() - X.mean() ** 2) if sp.issparse(X) else float(X.var())
                return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
            raise ValueError(f"gamma must be 'scale', 'auto' or a float > 0, got {self.gamma!r}")
        g = float(self.gamma)
        if not (np.isfinite(g) and g > 0):
            raise ValueError(f"gamma must be 'scale', 'auto' or a float > 0, got {self.gamma!r}")
        return g

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
        C_i = float(self.C) * self._class_weights(y_idx, k)[y_idx] * sw
        keep = C_i > 0
        if np.unique(y_idx[keep]).size < 2:
            raise ValueError("sample_weight: the samples of nonzero weight hold fewer than two classes")
        gamma = self._gamma_value(X)
        kernel = Kernel(self.kernel, gamma=gamma, degree=int(self.degree), coef0=float(self.coef0))  # type: ignore[arg-type]
        self._gamma = gamma
        self._kernel_obj = kernel

        pairs: list[tuple[int, int]]
        if k == 2 or self.multiclass == "ovo":
            pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        else:
            pairs = [(i, -1) for i in range(k)]     # class i against the rest
        prev = getattr(self, "_alphas", None) if self.warm_start else None
        if prev is not None and len(prev) != len(pairs):
            prev = None
        models: list[tuple[NDArray[np.intp], FloatArray, float]] = []
        results: list[Result] = []
        alphas: list[FloatArray] = []
        for p, (i, j) in enumerate(pairs):
            rows = np.flatnonzero(keep & ((y_idx == i) | (y_idx == j) if j >= 0 else keep))
            labels = np.where(y_idx[rows] == i, 1.0, -1.0)
            if np.unique(labels).size < 2:
                raise ValueError(f"y: class {self.classes_[i]} has no samples of nonzero weight")
            Xp = X[rows][:, rows] if self.kernel == "precomputed" else X[rows]
            prob = csvc(Xp, labels, C_i[rows], kernel, cache_bytes=int(float(self.cache_size) * (1 << 20)))
            x0 = prev[p] if prev is not None and prev[p].size == rows.size else None
            # LIBSVM's own cap when no limit is given: a problem that rounding keeps from ever
            # meeting tol (a polynomial kernel on unscaled data) ends with a warning, not a hang
            cap = max(10_000_000, 100 * rows.size) if self.max_iter == -1 else int(self.max_iter)
            res = qpcore.solve(prob.qp, strategy, x0=x0, tol=float(self.tol), max_iter=cap,
                               time_limit=self.time_limit, reporter=self.progress)
            model = prob.decode(res)
            models.append((rows[model.support], np.asarray(model.dual_coef, dtype=np.float64), float(model.bias)))
            results.append(res)
            alphas.append(np.asarray(res.x, dtype=np.float64))
        self._alphas = alphas
        self.result_ = results[0] if len(results) == 1 else results
        self.status_ = [r.status.code for r in results]
        self.n_iter_ = np.array([r.iterations for r in results], dtype=np.int32)
        bad = [f"{self._pair_name(pr)}: {r.status.code}" for pr, r in zip(pairs, results) if r.status is not Status.CONVERGED]
        if bad:
            warnings.warn("KernelSVC: not every problem converged (" + "; ".join(bad) + "); each keeps its best "
                          "point: raise max_iter / time_limit or loosen tol", ConvergenceWarning, stacklevel=2)
        self._layout(X, y_idx, pairs, models)
        self._pairs = pairs
        return self

    def _pair_name(self, pair: tuple[int, int]) -> str:
        i, j = pair
        return f"{self.classes_[i]} vs {'rest' if j < 0 else self.classes_[j]}"

    def _layout(self, X: Any, y_idx: NDArray[np.intp], pairs: list[tuple[int, int]],
                models: list[tuple[NDArray[np.intp], FloatArray, float]]) -> None:
        """SVC's attributes from the binary models: support vectors grouped by class, and a
        coefficient matrix D (n_SV × problems) with which every decision value is one product."""
        k = self.classes_.size
        used = np.unique(np.concatenate([m[0] for m in models]))
        order = np.lexsort((used, y_idx[used]))       # by class, then by index (LIBSVM's order)
        support = used[order]
        pos = np.full(X.shape[0], -1, dtype=np.intp)
        pos[support] = np.arange(support.size)
        D = np.zeros((support.size, len(pairs)))
        for p, (idx, coef, _) in enumerate(models):
            D[pos[idx], p] = coef
        self.support_ = support.astype(np.int32)
        self.n_support_ = np.bincount(y_idx[support], minlength=k).astype(np.int32)
        self._D = D
        self._bias = np.array([m[2] for m in models])
        self._sv = X[support]
        self.support_vectors_ = np.empty((0, 0)) if self.kernel == "precomputed" else self._sv
        if pairs[0][1] >= 0:
            # LIBSVM's layout: the coefficient of a vector of class c in problem (i, j) sits in
            # row j − 1 when c = i and in row i when c = j
            dual = np.zeros((k - 1, support.size))
            for p, (i, j) in enumerate(pairs):
                cls = y_idx[support]
                at_i, at_j = cls == i, cls == j
                dual[j - 1, at_i] = D[at_i, p]
                dual[i, at_j] = D[at_j, p]
        else:
            dual = D.T.copy()
        if k == 2:
            # SVC's binary convention: positive decision values mean classes_[1]
            dual = -dual
        self.dual_coef_ = dual
        self.intercept_ = -self._bias if k == 2 else self._bias.copy()
        if self.kernel == "linear":
            W = np.asarray((self._sv.T @ D).T, dtype=np.float64)
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
        if self.kernel == "precomputed":
            K = X[:, self.support_]
        else:
            K = np.empty((X.shape[0], self._sv.shape[0]))
            for s in range(0, X.shape[0], 2048):
                K[s:s + 2048] = self._kernel_obj.block(X[s:s + 2048], self._sv)
        out: FloatArray = K @ self._D + self._bias
        return out

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
        if self._pairs[0][1] < 0 or self.decision_function_shape == "ovo":
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
        raw = self._raw(X)
        k = self.classes_.size
        if k == 2:
            out: NDArray[Any] = self.classes_[np.where(raw[:, 0] > 0, 0, 1)]
            return out
        if self._pairs[0][1] < 0:
            return np.asarray(self.classes_[np.argmax(raw, axis=1)])
        votes = np.zeros((raw.shape[0], k), dtype=np.int64)
        for p, (i, j) in enumerate(self._pairs):
            win = raw[:, p] > 0
            votes[:, i] += win
            votes[:, j] += ~win
        return np.asarray(self.classes_[np.argmax(votes, axis=1)])
