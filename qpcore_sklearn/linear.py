"""A linear SVM classifier for scikit-learn: squared hinge through ASVM, hinge through cutting planes.

:class:`LinearSVMClassifier` is a thin layer over the library: the problems are built by
:func:`qpcore_formulations.asvm.asvm_dual` (the L2-loss SVM dual) and :func:`qpcore_formulations.risk.hinge_svm` (the
regularized hinge risk), solved by ``qpcore.solve`` with :class:`qpcore_strategies.asvm.ASVM` or one of
the cutting-plane strategies of :mod:`qpcore_strategies.cutting_plane` (``OCAS``, ``ActiveSetOCAS``,
``BMRM``), and decoded by the problems' own ``decode``. Parameter names follow LIBLINEAR /
:class:`sklearn.svm.LinearSVC` where the meaning is the same.

The two formulations, with s = ``intercept_scaling`` (the constant feature appended to every
example; its weight v is regularized, as LIBLINEAR does) and the intercept b = s·v:

- ``loss="squared_hinge"``: min ½(‖w‖² + v²) + Σ C_i max(0, 1 − y_i(x_iᵀw + s·v))². The ASVM
  primal of :mod:`qpcore_formulations.asvm` is min ν/2 Σ s_i ξ_i² + ½(‖w̄‖² + γ²) over the data with the
  constant feature 1. Scaling the data by 1/s and substituting w̄ = s·w, γ = −s·v turns one into
  the other with ν s_i = 2·C_i·s² (the module's "C = ν/2" at s = 1): the same problem, the same
  optimum, so coef = w̄/s and intercept = −γ. The dual's diagonal is d_i = 1/(2 C_i s²).
- ``loss="hinge"``: min ½(‖w‖² + v²) + Σ C_i max(0, 1 − y_i(x_iᵀw + s·v)): exactly
  ``hinge_svm(X, y, C_i, bias=s)`` (``bias=0`` without an intercept).

In both, C_i = C · sample_weight_i · class_weight[y_i], as LIBLINEAR weights them: with two
classes every example by its own class; one-vs-rest, problem k weights its positives (class k) by
class_weight[k] and the rest by 1. An example with C_i = 0 drops out (no loss, dual variable 0).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from qpcore_formulations.asvm import check_weight
from qpcore_train.multiclass import linear_binary
from qpcore.core.solve import PrintReporter
from qpcore.core.state import Result, Status
from qpcore_strategies.registry import LINEAR_STRATEGIES, make

FloatArray = NDArray[np.float64]

__all__ = ["LinearSVMClassifier"]

_LOSSES = ("squared_hinge", "hinge")
# the registry's linear strategies: ASVM solves the squared hinge's dual, the cutting planes the hinge's
_SOLVERS = ("auto", *LINEAR_STRATEGIES)
_SOLVER_LOSS = {name: "squared_hinge" if name == "asvm" else "hinge" for name in LINEAR_STRATEGIES}


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


class LinearSVMClassifier(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """Linear support vector classifier over qpcore: ASVM for the squared hinge, cutting planes for the hinge.

    Both losses regularize the intercept as LIBLINEAR does (the constant feature
    ``intercept_scaling`` is appended to every example and its weight enters ½‖w‖²), so for the
    same ``C``, ``loss`` and ``intercept_scaling`` the optimum is the one of
    :class:`sklearn.svm.LinearSVC`.

    Parameters
    ----------
    C : float, default=1.0
        Weight of the loss; > 0 and finite. For ``loss="squared_hinge"`` the ASVM dual is built with
        ν = 2·C·intercept_scaling² (see the module docstring).
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
        ``"squared_hinge"``: the L2-loss SVM, solved by ASVM (:mod:`qpcore_strategies.asvm`).
        ``"hinge"``: the L1-loss SVM, solved by a cutting-plane method.
    solver : {"auto", "asvm", "ocas", "ocas-active", "bmrm"}, default="auto"
        ``"auto"`` picks ``"asvm"`` for the squared hinge and ``"ocas"`` for the hinge.
        ``"ocas-active"`` is the active-set OCAS of Xiao and Zhou, ``"bmrm"`` plain cutting planes.
        A solver that does not fit the loss raises ``ValueError`` at fit.
    tol : float, default=1e-4
        Stopping tolerance: the projected-gradient norm of the dual for ASVM, the relative duality
        gap (F(w) − D(α)) / F(w) (libocas's TolRel) for the cutting planes.
    fit_intercept : bool, default=True
        Fit an intercept (through the regularized constant feature ``intercept_scaling``). The ASVM
        dual of :func:`qpcore_formulations.asvm.asvm_dual` always has its threshold, so
        ``fit_intercept=False`` needs ``loss="hinge"``.
    intercept_scaling : float, default=1.0
        The value s > 0 of the constant feature; its weight v is regularized and the intercept is
        s·v. A larger s weakens the regularization of the intercept.
    max_iter : int, default=1000
        Iteration limit of each binary problem (``qpcore.solve``'s ``max_iter``).
    time_limit : float, optional
        Limit in seconds for the whole fit (all one-vs-rest problems together).
    multi_class : {"ovr"}, default="ovr"
        More than two classes are handled one-vs-rest: one binary problem per class.
    class_weight : dict or "balanced", optional
        Multiply C by ``class_weight[label]`` (finite, ≥ 0; labels not in the dict: 1) for the
        examples of that class; ``"balanced"``: n_samples / (n_classes · count of the class), the
        counts weighted by ``sample_weight`` when given, as
        :func:`sklearn.utils.class_weight.compute_class_weight`. As in LinearSVC: with two classes
        every example by its own class; one-vs-rest, problem k weights class k by
        ``class_weight[k]`` and the rest by 1. Both losses.
    warm_start : bool, default=False
        Start from the previous fit's dual point when the number of examples, the classes and the
        loss are the same (else from scratch).
    verbose : int, default=0
        > 0: print the solver's progress lines and each binary problem's status (to stderr).

    Attributes
    ----------
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights (one row for two classes, one row per class for more).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts (0 without ``fit_intercept``).
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    n_features_in_ : int
        Number of features seen at fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when X had string column names.
    n_iter_ : int
        The largest iteration count over the binary problems.
    result_ : qpcore.Result or list of qpcore.Result
        The solver's result (a list, one per class, for one-vs-rest).
    status_ : str
        ``"converged"``, or the status code of the first binary problem that did not converge
        (``"max_iter"``, ``"time_limit"``, ``"stalled"``, ...).

    See Also
    --------
    sklearn.svm.LinearSVC : LIBLINEAR's linear SVM, the same problems.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> X, y = make_classification(n_samples=200, random_state=0)
    >>> clf = LinearSVMClassifier(C=0.5).fit(X, y)
    >>> clf.status_
    'converged'
    """

    def __init__(self, C: float = 1.0, loss: str = "squared_hinge", solver: str = "auto", tol: float = 1e-4,
                 fit_intercept: bool = True, intercept_scaling: float = 1.0, max_iter: int = 1000,
                 time_limit: float | None = None, multi_class: str = "ovr",
                 class_weight: dict[Any, float] | str | None = None, warm_start: bool = False,
                 verbose: int = 0) -> None:
        self.C = C
        self.loss = loss
        self.solver = solver
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_iter = max_iter
        self.time_limit = time_limit
        self.multi_class = multi_class
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.verbose = verbose

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags: sparse input (CSR) is accepted."""
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> str:
        """Validate the parameters (before any work); return the solver to use."""
        if not (_is_real(self.C) and np.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C: must be a finite number > 0, got {self.C!r}")
        if self.loss not in _LOSSES:
            raise ValueError(f"loss: must be one of {_LOSSES}, got {self.loss!r}")
        if self.solver not in _SOLVERS:
            raise ValueError(f"solver: must be one of {_SOLVERS}, got {self.solver!r}")
        solver = str(self.solver)
        if solver == "auto":
            solver = "asvm" if self.loss == "squared_hinge" else "ocas"
        if _SOLVER_LOSS[solver] != self.loss:
            raise ValueError(f"solver={solver!r} solves loss={_SOLVER_LOSS[solver]!r}, not loss={self.loss!r}: "
                             "use 'asvm' for the squared hinge and 'ocas', 'ocas-active' or 'bmrm' for the hinge")
        if not (_is_real(self.tol) and np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol: must be a finite number > 0, got {self.tol!r}")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept: must be True or False, got {self.fit_intercept!r}")
        if self.fit_intercept and not (_is_real(self.intercept_scaling) and np.isfinite(self.intercept_scaling)
                                       and self.intercept_scaling > 0):
            raise ValueError(f"intercept_scaling: must be a finite number > 0, got {self.intercept_scaling!r}")
        if not self.fit_intercept and self.loss == "squared_hinge":
            raise ValueError("fit_intercept=False is not available with loss='squared_hinge': the ASVM dual "
                             "(qpcore_formulations.asvm.asvm_dual) always has its threshold; use loss='hinge'")
        if not (isinstance(self.max_iter, (int, np.integer)) and not isinstance(self.max_iter, bool)
                and self.max_iter >= 1):
            raise ValueError(f"max_iter: must be an integer ≥ 1, got {self.max_iter!r}")
        if self.time_limit is not None and not (_is_real(self.time_limit) and self.time_limit > 0):
            raise ValueError(f"time_limit: must be None or a number > 0, got {self.time_limit!r}")
        if self.multi_class != "ovr":
            raise ValueError(f"multi_class: only 'ovr' (one-vs-rest) is available, got {self.multi_class!r}")
        if self.class_weight is not None and not (isinstance(self.class_weight, dict)
                                                  or self.class_weight == "balanced"):
            raise ValueError(f"class_weight: must be None, a dict or 'balanced', got {self.class_weight!r}")
        return solver

    def _strategy(self, solver: str) -> Any:
        return make(solver)

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None) -> LinearSVMClassifier:
        """Fit the model (one binary problem, or one per class one-vs-rest).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data, finite.
        y : array-like of shape (n_samples,)
            Class labels (any values, at least two distinct ones).
        sample_weight : array-like of shape (n_samples,), optional
            Per-example weights, finite and ≥ 0, multiplying C (and ``class_weight``): example i
            has C_i = C · sample_weight[i] · class_weight[y_i]. An example of weight 0 drops out
            of the problem; integer weights are the same problem as repeated examples.

        Returns
        -------
        self : LinearSVMClassifier
            The fitted estimator.

        Raises
        ------
        ValueError
            Before any work, on invalid parameters, NaN/inf in X, fewer than two classes, or
            sample weights that are negative, NaN/inf, all zero, of the wrong shape, or positive
            for one class only.

        Warns
        -----
        ConvergenceWarning
            When a binary problem stops at ``max_iter``, ``time_limit`` or without progress; the
            model then holds the best point found.
        """
        solver = self._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, order="C")
        check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"y: a classifier needs samples of at least two classes; got one class only: "
                             f"{classes[0]!r}")
        weight = self._example_weights(classes, y_idx, sample_weight)
        s = float(self.intercept_scaling) if self.fit_intercept else 0.0
        n_problems = 1 if classes.size == 2 else int(classes.size)
        previous = self._previous(classes, solver, n_problems)
        t_end = None if self.time_limit is None else time.perf_counter() + float(self.time_limit)
        strategy = self._strategy(solver)
        coef = np.zeros((n_problems, X.shape[1]))
        intercept = np.zeros(n_problems)
        results: list[Result] = []
        for k in range(n_problems):
            # binary: class 1 positive; one-vs-rest: class k against the rest (labels 0/1, 1 is +1)
            yk = (y_idx == (1 if n_problems == 1 else k)).astype(np.int64)
            limit = None if t_end is None else max(t_end - time.perf_counter(), 1e-9)
            C_i = self._problem_C(weight, y_idx, k, n_problems)
            # the squared hinge is ASVM's dual of the data scaled by 1/s, ν_i = 2C_i s² (module docstring)
            coef[k], intercept[k], res = linear_binary(
                X, yk, C_i, strategy, squared_hinge=solver == "asvm", bias=s,
                tol=float(self.tol), max_iter=int(self.max_iter), time_limit=limit,
                reporter=PrintReporter() if self.verbose > 0 else None,
                x0=None if previous is None else previous[k].x)
            results.append(res)
            if self.verbose > 0:
                name = classes[1] if n_problems == 1 else classes[k]
                print(f"LinearSVMClassifier[{solver}] class {name!r}: {res.status.code}, "
                      f"{res.iterations} iterations", flush=True)
        self.classes_ = classes
        self.coef_ = coef
        self.intercept_ = intercept
        self.n_iter_ = max(r.iterations for r in results)
        self.result_: Result | list[Result] = results[0] if n_problems == 1 else results
        bad = [r for r in results if r.status is not Status.CONVERGED]
        self.status_ = bad[0].status.code if bad else Status.CONVERGED.code
        self._fit_solver_ = solver
        if bad:
            r = bad[0]
            warnings.warn(f"LinearSVMClassifier ({solver}): {len(bad)} of {n_problems} binary problem(s) did not "
                          f"converge to tol={self.tol}: {r.status.code} ({r.status.message}). Increase max_iter "
                          "or time_limit, or scale the data.", ConvergenceWarning, stacklevel=2)
        return self

    def _example_weights(self, classes: NDArray[Any], y_idx: NDArray[np.intp],
                         sample_weight: ArrayLike | None) -> tuple[FloatArray | None, FloatArray | None]:
        """(sample weights, class weights per class), each None when not given; validated before any work."""
        sw: FloatArray | None = None
        if sample_weight is not None:
            sw = check_weight(sample_weight, int(y_idx.shape[0]))
            present = np.unique(y_idx[sw > 0])
            if present.size < 2:
                raise ValueError(f"sample_weight: the examples of positive weight are all of one class "
                                 f"({classes[present[0]]!r}); a classifier needs two classes")
        cw: FloatArray | None = None
        if self.class_weight is not None:
            # "balanced" counts the examples by their sample weights, as LinearSVC does
            cw = np.asarray(compute_class_weight(self.class_weight, classes=classes, y=classes[y_idx],
                                                 sample_weight=sw), dtype=np.float64)
            if not (np.isfinite(cw).all() and (cw >= 0).all()):
                raise ValueError(f"class_weight: the weights must be finite and ≥ 0, got {self.class_weight!r}")
        return sw, cw

    def _problem_C(self, weight: tuple[FloatArray | None, FloatArray | None], y_idx: NDArray[np.intp], k: int,
                   n_problems: int) -> float | FloatArray:
        """C_i of binary problem k: C · sample_weight_i · class weight, as LIBLINEAR (module docstring)."""
        sw, cw = weight
        C = float(self.C)
        if sw is None and cw is None:
            return C
        out = np.full(y_idx.shape[0], C) if sw is None else C * sw
        if cw is not None:
            # two classes: each example by its own class; one-vs-rest: class k by its weight, the rest by 1
            out = out * (cw[y_idx] if n_problems == 1 else np.where(y_idx == k, cw[k], 1.0))
        if not (out > 0).any():
            raise ValueError(f"class_weight: problem {k} has no example of positive weight")
        return out

    def _previous(self, classes: NDArray[Any], solver: str, n_problems: int) -> list[Result] | None:
        """The previous fit's results, when a warm start applies to this fit (``linear_binary``
        ignores a start whose length is not its dual's)."""
        if not self.warm_start or not hasattr(self, "result_"):
            return None
        prev = self.result_ if isinstance(self.result_, list) else [self.result_]
        same = (getattr(self, "_fit_solver_", None) is not None
                and _SOLVER_LOSS[self._fit_solver_] == _SOLVER_LOSS[solver]
                and np.array_equal(self.classes_, classes) and len(prev) == n_problems)
        return prev if same else None

    # ------------------------------------------------------------------ predict
    def decision_function(self, X: Any) -> FloatArray:
        """Signed distances to the hyperplanes, X @ coef_.T + intercept_.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, > 0 means ``classes_[1]``; for more, one column per class.
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        scores = np.asarray(X @ self.coef_.T, dtype=np.float64) + self.intercept_
        out: FloatArray = scores.ravel() if scores.shape[1] == 1 else scores
        return out

    def predict(self, X: Any) -> NDArray[Any]:
        """Class labels of the samples.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``classes_[1]`` where the decision function is > 0 (two classes), else the class with
            the largest decision value (one-vs-rest).
        """
        scores = self.decision_function(X)
        idx = (scores > 0).astype(np.intp) if scores.ndim == 1 else scores.argmax(axis=1)
        out: NDArray[Any] = self.classes_[idx]
        return out

