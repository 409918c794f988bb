"""A grid search with ``GridSearchCV``'s interface that shares its work across the grid.

:class:`SVMGridSearchCV` cross-validates a :class:`~qpcore_sklearn.svm.KernelSVC` over a grid of
C and kernel parameters on :func:`qpcore_train.model_selection.grid_cv`: each kernel's matrix is
computed once for every fold and every C, and the solves along increasing C within a fold are
warm-started. For an estimator or a parameter the engine cannot share work for, it runs
scikit-learn's ``GridSearchCV`` cell by cell and says so (``shared_``, ``fallback_reason_``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.metrics import check_scoring
from sklearn.model_selection import GridSearchCV, ParameterGrid, check_cv
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, check_X_y

from qpcore_train.model_selection import KERNEL_BYTES, grid_cv
from qpcore_train.multiclass import decide, problems_of
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore_sklearn._params import gamma_value
from qpcore_sklearn._params import make_strategy
from qpcore_sklearn.svm import KernelSVC
from qpcore_sklearn.svm_base import class_factors, ovr_from_ovo

__all__ = ["SHARED_PARAMS", "SVMGridSearchCV"]

FloatArray = NDArray[np.float64]

#: KernelSVC parameters the shared engine handles; a grid over any other falls back.
SHARED_PARAMS = frozenset({"C", "kernel", "gamma", "degree", "coef0", "tol", "class_weight", "strategy",
                           "multiclass", "decision_function_shape", "max_iter", "time_limit", "cache_size"})
_KERNEL_PARAMS = ("kernel", "gamma", "degree", "coef0")


class _HeldOut(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """The fitted model of one (cell, fold) as a scorer sees it: held-out decision values and
    predictions computed by the engine, returned for the fold's test points."""

    def __init__(self, classes: NDArray[Any], raw: FloatArray, scheme: str, shape: str) -> None:
        self.classes = classes
        self.raw = raw
        self.scheme = scheme
        self.shape = shape

    @property
    def classes_(self) -> NDArray[Any]:
        return self.classes

    def _check(self, X: Any) -> None:
        if X.shape[0] != self.raw.shape[0]:
            raise ValueError("held-out values exist only for the fold's own test points")

    def decision_function(self, X: Any) -> FloatArray:
        self._check(X)
        k = int(self.classes.size)
        if k == 2:
            return -self.raw[:, 0]
        if self.scheme == "ovr" or self.shape == "ovo":
            return self.raw
        return ovr_from_ovo(self.raw, k)

    def predict(self, X: Any) -> NDArray[Any]:
        self._check(X)
        k = int(self.classes.size)
        pairs = problems_of(k, "ovr" if self.scheme == "ovr" else "ovo")
        out: NDArray[Any] = self.classes[decide(self.raw, "ovr" if self.scheme == "ovr" else "ovo", pairs, k)]
        return out


def _same(a: Any, b: Any) -> bool:
    """Whether two parameter values are the same setting (identity, else equality)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _masked_params(candidates: list[dict[str, Any]]) -> dict[str, np.ma.MaskedArray[Any, Any]]:
    """``param_<name>`` columns as GridSearchCV builds them: masked where a candidate lacks it."""
    names = sorted({k for c in candidates for k in c})
    out: dict[str, np.ma.MaskedArray[Any, Any]] = {}
    for name in names:
        col: np.ma.MaskedArray[Any, Any] = np.ma.MaskedArray(np.empty(len(candidates), dtype=object),
                                                             mask=True)
        for i, c in enumerate(candidates):
            if name in c:
                col[i] = c[name]
        out[f"param_{name}"] = col
    return out


def _rank(scores: FloatArray) -> NDArray[np.int32]:
    """1 for the best mean score (ties share the lowest rank); NaN scores ranked last."""
    if np.isnan(scores).all():
        return np.ones(scores.size, dtype=np.int32)
    worst = np.nanmin(scores) - 1.0
    return np.asarray(rankdata(-np.where(np.isnan(scores), worst, scores), method="min"), dtype=np.int32)


class SVMGridSearchCV(MetaEstimatorMixin, BaseEstimator):  # type: ignore[misc]
    """Exhaustive search over a grid of SVM parameters that computes each kernel once.

    The interface of ``sklearn.model_selection.GridSearchCV`` (single metric). With a
    :class:`~qpcore_sklearn.svm.KernelSVC` and a grid over :data:`SHARED_PARAMS`, each kernel's
    matrix over the whole training data is computed once and serves every fold and every C, and
    the C values of a fold are solved in increasing order, each from the previous solution
    (:func:`qpcore_train.model_selection.grid_cv`). The folds and the scores are GridSearchCV's, so
    the two compare cell by cell. Any other estimator or parameter is searched by
    ``GridSearchCV`` itself (``shared_`` is then False and ``fallback_reason_`` says why), as is
    an estimator with a setting outside :data:`SHARED_PARAMS` away from its default
    (``probability=True``, ``warm_start=True``, ...).

    Parameters
    ----------
    estimator : estimator object
        The classifier, typically ``KernelSVC()``; its parameters not in the grid are kept.
    param_grid : dict or list of dict
        Parameter names → lists of values, as GridSearchCV takes them.
    scoring : str, callable or None
        A scikit-learn scorer name or ``scorer(estimator, X, y)``; None is accuracy. Scorers on
        predictions or decision values work on the shared path; one that needs
        ``predict_proba`` makes the search fall back.
    cv : int, cross-validation generator or iterable
        Folds: an int is ``StratifiedKFold(cv)`` without shuffling, as for GridSearchCV.
    refit : bool or callable
        Refit the estimator with the best parameters on all the data (``best_estimator_``); a
        callable takes ``cv_results_`` and returns ``best_index_``.
    kernel_bytes : int
        Memory for one kernel matrix (single precision); above it the folds share a row cache of
        this size instead.
    stack_bytes : int, optional
        Memory for the lockstep stack of the folds' own kernel blocks (about 3.2× the kernel
        matrix for 5 folds of two classes); above it the stack gathers its rows from the kernel
        matrix (slower rounds, no more memory). Default: ``kernel_bytes``.
    error_score : "raise" or float
        GridSearchCV's, on the fallback path; the shared path raises.
    verbose : int
        Passed to GridSearchCV on the fallback path.

    Attributes
    ----------
    cv_results_ : dict of ndarray
        GridSearchCV's keys: ``mean_fit_time``, ``std_fit_time``, ``mean_score_time``,
        ``std_score_time``, ``param_<name>``, ``params``, ``split<k>_test_score``,
        ``mean_test_score``, ``std_test_score``, ``rank_test_score``. A shared cell's fit time is
        its solve time plus its share of the kernel matrix's.
    best_index_ : int
    best_params_ : dict
    best_score_ : float
    best_estimator_ : estimator
        Only with ``refit``.
    refit_time_ : float
    scorer_ : callable
    n_splits_ : int
    multimetric_ : bool
        Always False (one metric).
    shared_ : bool
        Whether the shared engine ran (False: cell-by-cell GridSearchCV).
    fallback_reason_ : str or None
        Why the search fell back, None when it did not.
    kernel_dense_ : bool
        Whether every kernel was held as a dense matrix (shared path).
    converged_ : bool
        Whether every binary problem of every cell converged (shared path; True on the other).
    lockstep_ : bool
        Whether every group of cells solved its folds' problems in lockstep
        (:func:`qpcore_train.lockstep_path.lockstep_path`; shared path, with a strategy that
        declares LIBSVM's SMO as its lockstep method and a dense kernel matrix).
    lockstep_note_ : str
        How the shared engine solved the problems, and why not in lockstep when it did not.
    """

    def __init__(self, estimator: Any, param_grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Sequence[Any]]],
                 *, scoring: str | Callable[..., float] | None = None, cv: Any = 5,
                 refit: bool | Callable[[dict[str, Any]], int] = True, kernel_bytes: int = KERNEL_BYTES,
                 stack_bytes: int | None = None, error_score: Any = np.nan, verbose: int = 0) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.cv = cv
        self.refit = refit
        self.kernel_bytes = kernel_bytes
        self.stack_bytes = stack_bytes
        self.error_score = error_score
        self.verbose = verbose

    # -- the search -------------------------------------------------------------------------------

    def _why_not_shared(self, candidates: list[dict[str, Any]], fit_params: dict[str, Any]) -> str | None:
        """None when the shared engine takes this search, else the reason it cannot."""
        if type(self.estimator) is not KernelSVC:
            return f"{type(self.estimator).__name__} is not KernelSVC"
        other = sorted({k for c in candidates for k in c} - SHARED_PARAMS)
        if other:
            return f"the grid varies {', '.join(other)}, which the shared engine does not handle"
        extra = sorted(set(fit_params) - {"sample_weight"})
        if extra:
            return f"fit parameters {', '.join(extra)}"
        # a setting outside the engine's (probabilities, warm starts, progress, ...) is honoured
        # only by the estimator's own fit: the shared path takes it only at its default
        base = self.estimator.get_params(deep=False)
        default = KernelSVC().get_params(deep=False)
        changed = sorted(k for k, v in base.items()
                         if k not in SHARED_PARAMS and k != "random_state" and not _same(v, default.get(k)))
        if changed:
            return f"the estimator sets {', '.join(f'{k}={base[k]!r}' for k in changed)}"
        return None

    def fit(self, X: Any, y: Any, **fit_params: Any) -> SVMGridSearchCV:
        """Run the search and, with ``refit``, fit the best estimator on all the data.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (the n×n Gram matrix for ``kernel="precomputed"``).
        y : array-like of shape (n_samples,)
            Labels.
        **fit_params
            ``sample_weight`` (per-sample factor on C) on the shared path; anything the
            estimator's ``fit`` takes on the fallback path.

        Returns
        -------
        SVMGridSearchCV
            self.

        Raises
        ------
        ValueError
            Bad data or parameters, a multi-metric ``scoring``, a fold lacking a class.
        """
        if isinstance(self.scoring, (list, tuple, set, dict)):
            raise ValueError("scoring: one metric only (a name, a callable or None)")
        candidates = [dict(c) for c in ParameterGrid(self.param_grid)]
        if not candidates:
            raise ValueError("param_grid: no candidate parameters")
        self.scorer_ = check_scoring(self.estimator, scoring=self.scoring)
        self.multimetric_ = False
        reason = self._why_not_shared(candidates, fit_params)
        results: dict[str, Any] | None = None
        if reason is None:
            results, why = self._shared(X, y, candidates, fit_params)
            reason = why
        self.shared_ = results is not None
        self.fallback_reason_ = reason
        if results is None:
            results = self._fallback(X, y, fit_params)
            self.kernel_dense_ = False
            self.converged_ = True
            self.lockstep_, self.lockstep_note_ = False, "cell-by-cell GridSearchCV"
        self.cv_results_ = results
        if callable(self.refit):
            self.best_index_ = int(self.refit(results))
        else:
            self.best_index_ = int(np.argmin(results["rank_test_score"]))
        self.best_params_ = dict(results["params"][self.best_index_])
        self.best_score_ = float(results["mean_test_score"][self.best_index_])
        if self.refit:
            t0 = time.perf_counter()
            self.best_estimator_ = clone(self.estimator).set_params(**self.best_params_).fit(X, y, **fit_params)
            self.refit_time_ = time.perf_counter() - t0
        return self

    def _folds(self, X: Any, y: Any) -> list[tuple[NDArray[np.intp], NDArray[np.intp]]]:
        splitter = check_cv(self.cv, y, classifier=True)
        folds = [(np.asarray(tr, dtype=np.intp), np.asarray(te, dtype=np.intp)) for tr, te in splitter.split(X, y)]
        self.n_splits_ = len(folds)
        return folds

    def _fallback(self, X: Any, y: Any, fit_params: dict[str, Any]) -> dict[str, Any]:
        """GridSearchCV itself on the same folds, cell by cell."""
        folds = self._folds(X, y)
        gs = GridSearchCV(self.estimator, self.param_grid, scoring=self.scoring, cv=folds, refit=False,
                          error_score=self.error_score, verbose=self.verbose)
        gs.fit(X, y, **fit_params)
        out: dict[str, Any] = dict(gs.cv_results_)
        return out

    def _shared(self, X: Any, y: Any, candidates: list[dict[str, Any]],
                fit_params: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
        """The search on the shared engine: cv_results_, or None and the reason to fall back."""
        base: KernelSVC = self.estimator
        precomputed = any(c.get("kernel", base.kernel) == "precomputed" for c in candidates)
        X, y = check_X_y(X, y, accept_sparse=False if precomputed else "csr", dtype=np.float64, order="C")
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        y_idx = y_idx.astype(np.intp)
        if classes.size < 2:
            raise ValueError(f"y: the training data must hold at least two classes, got {classes.size}")
        sw = _check_sample_weight(fit_params.get("sample_weight"), X, dtype=np.float64)
        if (sw < 0).any():
            raise ValueError("sample_weight: negative weights are not allowed")
        folds = self._folds(X, y)
        nf, n = len(folds), int(X.shape[0])
        settings = [clone(base).set_params(**c) for c in candidates]
        for est in settings:
            est._check_params()
        # cells that differ only in C share one engine run: the same kernel, solver and weights
        groups: list[tuple[dict[str, Any], list[int]]] = []
        for i in range(len(candidates)):
            rest = {k: v for k, v in settings[i].get_params(deep=False).items() if k != "C"}
            for key, members in groups:
                if key == rest:
                    members.append(i)
                    break
            else:
                groups.append((rest, [i]))
        split = np.full((len(candidates), nf), np.nan)
        fit_t = np.zeros((len(candidates), nf))
        score_t = np.zeros((len(candidates), nf))
        dense, converged, lockstep, notes = True, True, True, []
        for _, members in groups:
            est = settings[members[0]]
            kernels = [Kernel(est.kernel, gamma=gamma_value(est.gamma, est.kernel, X[tr]), degree=int(est.degree),
                              coef0=float(est.coef0)) for tr, _ in folds]
            weight = np.stack([self._weights(est, y_idx, classes, tr) * sw for tr, _ in folds])
            Cs = [float(settings[i].C) for i in members]
            cap = max(10_000_000, 100 * n) if est.max_iter == -1 else int(est.max_iter)
            try:
                cv = grid_cv(X, y_idx, int(classes.size), folds, [kernels], Cs, strategy=make_strategy(est.strategy),
                             tol=float(est.tol), weight=weight, scheme="ovr" if est.multiclass == "ovr" else "ovo",
                             max_iter=cap, time_limit=est.time_limit, kernel_bytes=int(self.kernel_bytes),
                             stack_bytes=None if self.stack_bytes is None else int(self.stack_bytes))
            except ProblemError as exc:
                raise ValueError(str(exc)) from exc
            dense = dense and cv.dense_kernel
            lockstep = lockstep and cv.lockstep
            if cv.lockstep_note not in notes:
                notes.append(cv.lockstep_note)
            converged = converged and bool(cv.converged.all())
            for q, i in enumerate(members):
                for f, (_, te) in enumerate(folds):
                    t0 = time.perf_counter()
                    held = _HeldOut(classes, cv.raw[0][q][f], cv.scheme, str(est.decision_function_shape))
                    try:
                        split[i, f] = float(self.scorer_(held, X[te], y[te]))
                    except AttributeError as exc:
                        return None, f"the scorer needs what held-out decision values cannot give ({exc})"
                    score_t[i, f] = time.perf_counter() - t0 + cv.score_seconds[0, q, f]
                    fit_t[i, f] = cv.fit_seconds[0, q, f]
        self.kernel_dense_ = dense
        self.converged_ = converged
        self.lockstep_, self.lockstep_note_ = lockstep, "; ".join(notes)
        out: dict[str, Any] = {
            "mean_fit_time": fit_t.mean(axis=1), "std_fit_time": fit_t.std(axis=1),
            "mean_score_time": score_t.mean(axis=1), "std_score_time": score_t.std(axis=1),
        }
        out.update(_masked_params(candidates))
        out["params"] = candidates
        for f in range(nf):
            out[f"split{f}_test_score"] = split[:, f]
        out["mean_test_score"] = split.mean(axis=1)
        out["std_test_score"] = split.std(axis=1)
        out["rank_test_score"] = _rank(out["mean_test_score"])
        return out, None

    @staticmethod
    def _weights(est: KernelSVC, y_idx: NDArray[np.intp], classes: NDArray[Any],
                 train: NDArray[np.intp]) -> FloatArray:
        """Per-point class factor on C as the estimator fitted on ``train`` computes it
        ("balanced" counts that fold's training points)."""
        w = class_factors(est.class_weight, classes, y_idx[train])
        out: FloatArray = np.asarray(w, dtype=np.float64)[y_idx]
        return out

    # -- the refitted estimator ------------------------------------------------------------------

    def _best(self) -> Any:
        check_is_fitted(self, "cv_results_")
        if not self.refit:
            raise AttributeError("refit=False: there is no best_estimator_ to predict with; refit=True keeps one")
        return self.best_estimator_

    @property
    def classes_(self) -> NDArray[Any]:
        """The classes of ``best_estimator_``."""
        out: NDArray[Any] = self._best().classes_
        return out

    def predict(self, X: Any) -> NDArray[Any]:
        """Labels predicted by ``best_estimator_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        out: NDArray[Any] = self._best().predict(X)
        return out

    def decision_function(self, X: Any) -> FloatArray:
        """Decision values of ``best_estimator_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray
        """
        out: FloatArray = self._best().decision_function(X)
        return out

    def score(self, X: Any, y: Any) -> float:
        """``scorer_`` of ``best_estimator_`` on (X, y) (accuracy by default).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        float
        """
        return float(self.scorer_(self._best(), X, y))
