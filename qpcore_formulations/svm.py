"""The C-SVC dual and the fixed-threshold SVM: data in, QP out, result in, model out."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.capabilities import Operator, OperatorStats
from qpcore.backends.operators import Kernel, KernelQ
from qpcore.backends.shifted import shift_diagonal
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import Result

__all__ = ["SVMModel", "SubsetKernelQ", "SVMProblem", "check_C", "check_X", "csvc", "fixed_threshold_svm", "l2_svc",
           "two_class_labels"]

FloatArray = NDArray[np.float64]


def two_class_labels(y: ArrayLike, n: int) -> tuple[FloatArray, NDArray[Any]]:
    """Map any two distinct label values to −1/+1 (the larger value is +1, as scikit-learn does).

    Returns
    -------
    (y_pm, classes)
        The ±1 labels and the two original values ``[negative, positive]``.

    Raises
    ------
    ProblemError
        When y has the wrong length, NaN/inf, or not exactly two distinct values.
    """
    arr = np.asarray(y)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ProblemError(f"y: shape mismatch, expected ({n},) labels for {n} rows, got {arr.shape}")
    if np.issubdtype(arr.dtype, np.number) and not np.isfinite(arr.astype(np.float64)).all():
        raise ProblemError("y: contains NaN or inf; labels must be two distinct finite values")
    classes = np.unique(arr)
    if classes.size != 2:
        shown = ", ".join(map(str, classes[:5])) + (" ..." if classes.size > 5 else "")
        raise ProblemError(f"y: labels must take exactly two distinct values, got {classes.size}: [{shown}]")
    return np.where(arr == classes[1], 1.0, -1.0), classes


def check_C(C: Any, n: int) -> FloatArray:
    arr = np.asarray(C, dtype=np.float64) if np.ndim(C) else np.full(n, float(C))
    if arr.shape != (n,):
        raise ProblemError(f"C: shape mismatch, expected a scalar or ({n},), got {arr.shape}")
    if not np.isfinite(arr).all() or (arr <= 0).any():
        raise ProblemError(f"C: must be finite and > 0, got {C!r}")
    return arr


def check_X(X: Any) -> Any:
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not np.isfinite(X.data).all():
            raise ProblemError("X: contains NaN or inf; all entries must be finite")
        return X
    arr = np.asarray(X)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ProblemError(f"X: dtype {arr.dtype} is not real numeric")
    if arr.ndim != 2:
        raise ProblemError(f"X: expected a 2-D array (rows are points), got shape {arr.shape}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.isfinite(arr).all():
        raise ProblemError("X: contains NaN or inf; all entries must be finite")
    return arr


def _predicts_value(kind: str) -> bool:
    """Whether the registered formulation ``kind`` predicts a value (a regression); a ProblemError
    naming the formulations for any other name. The registry builds on this module: it is looked
    up when a model asks, not imported with the module."""
    from qpcore_formulations.formulation import Predicts, formulation

    return formulation(kind).predicts is Predicts.VALUE


def _registered(instance: Any, attribute: Any, kind: str) -> None:
    _predicts_value(kind)


@attrs.frozen(eq=False)
class SVMModel:
    """A decoded SVM: f(x) = Σ_i coef_i K(sv_i, x) + bias (+ ``self_coef``·K(x, x)).

    What f means depends on ``kind``, the formulation it was trained as
    (:func:`qpcore_formulations.formulation.formulation`, its ``predicts``): a classifier's label is
    ``classes[f(x) > 0]``; a novelty detector (one-class, SVDD) says +1 (inlier) where f(x) > 0 and
    −1 elsewhere, LIBSVM's sign; a regression predicts f(x) itself.

    Attributes
    ----------
    support : ndarray
        Indices of the support vectors in the training data.
    sv : ndarray or csr_matrix
        The support vectors.
    dual_coef : ndarray
        α_i y_i of each support vector.
    bias : float
        b = −rho (LIBSVM's sign convention: decision = Σ α_i y_i K − rho).
    kernel : Kernel
        The kernel.
    classes : ndarray
        Original label values [negative, positive].
    w : ndarray or None
        Primal weight vector Σ α_i y_i x_i for the linear kernel, else None.
    kind : str
        The name of a registered formulation (:data:`qpcore_formulations.formulation.FORMULATIONS`).
    r : float or None
        ν-SVC's r (LIBSVM's ``si.r``): the decision was divided by it, so the margin is ±1 and
        the model is the C-SVC's at C = 1/r. None for the other kinds.
    self_coef : float
        The weight of K(x, x) in f (−½ for SVDD, whose score is R² − ‖φ(x) − a‖² halved; 0 else).
    """

    support: NDArray[np.intp]
    sv: Any
    dual_coef: FloatArray
    bias: float
    kernel: Kernel
    classes: NDArray[Any]
    w: FloatArray | None
    kind: str = attrs.field(default="c-svc", validator=_registered)
    r: float | None = None
    self_coef: float = 0.0

    @property
    def rho(self) -> float:
        """LIBSVM's rho: f(x) = Σ coef_i K(sv_i, x) − rho."""
        return -self.bias

    @property
    def n_sv(self) -> int:
        """Number of support vectors."""
        return int(self.support.size)

    def decision_function(self, X: Any, block: int = 4096) -> FloatArray:
        """Decision values f(x) for the rows of X (kernel blocks of ``block`` rows); for a
        precomputed kernel X is the block K(points, training points)."""
        X = check_X(X)
        d = self.sv.shape[1]
        if X.shape[1] != d:
            if sp.issparse(X) and X.shape[1] < d:   # a test split may lack the last features
                X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], d))
            elif self.kernel.name == "precomputed":
                raise ProblemError(f"X: a precomputed kernel block needs one column per training point ({d}), "
                                   f"got {X.shape[1]}")
            else:
                raise ProblemError(f"X: has {X.shape[1]} features, the model was trained on {d}")
        if self.kernel.name == "precomputed":
            if self.self_coef:
                raise ProblemError("a precomputed kernel block has no K(x, x): SVDD needs the kernel itself")
            # X is K(points, training points); its columns at the support vectors are the kernel
            K = X[:, self.support]
            return np.asarray(K @ self.dual_coef, dtype=np.float64).ravel() + self.bias
        if self.w is not None and not self.self_coef:
            return np.asarray(X @ self.w, dtype=np.float64).ravel() + self.bias
        out = np.empty(X.shape[0])
        for s in range(0, X.shape[0], block):
            out[s:s + block] = self.kernel.block(X[s:s + block], self.sv) @ self.dual_coef
        if self.self_coef:
            out += self.self_coef * self.kernel.self_values(X)
        return out + self.bias

    def predict(self, X: Any) -> NDArray[Any]:
        """Labels (classifiers, in the original values), ±1 (novelty detectors: +1 inside) or
        values (regressions)."""
        f = self.decision_function(X)
        if _predicts_value(self.kind):
            return f
        out: NDArray[Any] = np.where(f > 0, self.classes[1], self.classes[0])
        return out


@attrs.frozen(eq=False)
class SVMProblem:
    """A C-SVC dual (or fixed-threshold SVM) built from data, with its decoder.

    Attributes
    ----------
    qp : QP
        min ½αᵀQα − eᵀα, 0 ≤ α ≤ C, yᵀα = 0 (no equality for the fixed-threshold SVM),
        Q = yyᵀ∘K as a ``KernelQ``.
    X, y : data and ±1 labels
    classes : the original label values [negative, positive]
    kernel : Kernel
    fixed_threshold : bool
    kind : str
        The formulation the decoded model is of (``c-svc``; ``l2-svc`` for :func:`l2_svc`).
    """

    qp: QP
    X: Any
    y: FloatArray
    classes: NDArray[Any]
    kernel: Kernel
    fixed_threshold: bool = False
    kind: str = "c-svc"

    @property
    def x0(self) -> None:
        """The start: None, the strategy's own (α = 0, feasible for every box)."""
        return None

    def decode(self, result: Result, sv_tol: float = 0.0) -> SVMModel:
        """The model of a solved dual: support vectors α > sv_tol, bias = −rho from the multiplier."""
        alpha = np.asarray(result.x, dtype=np.float64)
        support = np.flatnonzero(alpha > sv_tol)
        coef = alpha[support] * self.y[support]
        bias = 0.0 if self.fixed_threshold else -float(result.multipliers[0])
        sv = self.X[support]
        w = None
        if self.kernel.name == "linear":
            w = np.asarray(sv.T @ coef, dtype=np.float64).ravel()
        return SVMModel(support=support, sv=sv, dual_coef=coef, bias=bias, kernel=self.kernel,
                        classes=self.classes, w=w, kind=self.kind)


def _training_rows(X: Any, what: str) -> Any:
    """Checked data with at least one row: an empty X is said to be one, before the labels are read."""
    X = check_X(X)
    if X.shape[0] == 0:
        raise ProblemError(f"X: no training rows (an empty data set); {what} needs samples of two classes")
    return X


def csvc(X: Any, y: ArrayLike, C: float | ArrayLike = 1.0, kernel: Kernel | None = None, *,
         cache_bytes: int = 200 << 20, dtype: Any = np.float32, fixed_threshold: bool = False,
         compute_dtype: Any = np.float64) -> SVMProblem:
    """Build the C-SVC dual min ½αᵀ(yyᵀ∘K)α − eᵀα, 0 ≤ α ≤ C, yᵀα = 0.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix
        Training points, one per row (for a precomputed kernel: the n×n Gram matrix).
    y : array_like
        Labels: any two distinct values.
    C : float or array_like
        Box bound, > 0 (per-sample when an array).
    kernel : Kernel, optional
        Default RBF with gamma = 1 / n_features (LIBSVM's default).
    cache_bytes : int
        Kernel row cache budget.
    dtype : numpy dtype
        Storage of cached kernel rows: float32 (default, as LIBSVM stores them: twice the rows
        per byte; certificates are still computed in float64) or float64.
    fixed_threshold : bool
        Drop the equality yᵀα = 0: the SVM with b = 0 (Platt §2.6).
    compute_dtype : numpy dtype
        float32 computes blocks of RBF rows in single precision (with ``dtype=float32``):
        about twice as fast for block strategies (decomposition); see ``KernelQ``.

    Returns
    -------
    SVMProblem

    Raises
    ------
    ProblemError
        Bad data (NaN/inf, shapes, no rows), labels that are not two classes, C ≤ 0.
    """
    X = _training_rows(X, "the C-SVC")
    n = int(X.shape[0])
    ypm, classes = two_class_labels(y, n)
    Cv = check_C(C, n)
    if kernel is None:
        kernel = Kernel("rbf", gamma=1.0 / max(1, X.shape[1]))
    Q = KernelQ(X, kernel, scale=ypm, cache_bytes=cache_bytes, dtype=dtype, compute_dtype=compute_dtype)
    A = None if fixed_threshold else ypm[None, :]
    qp = QP(Q, -np.ones(n), np.zeros(n), Cv, A, None if fixed_threshold else np.zeros(1))
    return SVMProblem(qp=qp, X=Q.X if kernel.name != "precomputed" else X, y=ypm, classes=classes, kernel=kernel,
                      fixed_threshold=fixed_threshold)


class SubsetKernelQ(Operator):
    """Q = yyᵀ∘K over some rows of a data set, each product evaluated afresh in float64.

    For certifying points solved elsewhere (:func:`qpcore_train.multiclass.train_multiclass` solves
    its small problems together): nothing is built or cached, and :meth:`matvec` only evaluates
    the kernel columns of the nonzero entries of x (an SVM dual's support vectors).

    Parameters
    ----------
    X : ndarray or csr_matrix
        The whole data set (float64, checked).
    rows : ndarray of int
        The rows of this problem.
    y : ndarray
        ±1 label of each of those rows.
    kernel : Kernel
        Any kernel but ``precomputed``.
    """

    __slots__ = ("X", "idx", "y", "kernel", "stats")

    def __init__(self, X: Any, rows: NDArray[np.intp], y: FloatArray, kernel: Kernel) -> None:
        self.X, self.idx, self.y, self.kernel = X, rows, y, kernel
        self.stats = OperatorStats()

    @property
    def shape(self) -> tuple[int, int]:
        """(n, n) for the n rows."""
        return (int(self.idx.size), int(self.idx.size))

    @property
    def psd(self) -> bool | None:
        """The kernel's (True for linear, RBF, polynomial with coef0 ≥ 0)."""
        return self.kernel.psd

    def diag(self) -> FloatArray:
        """K(x_i, x_i) (y_i² = 1)."""
        return self.kernel.self_values(self.X[self.idx])

    def matvec(self, x: FloatArray) -> FloatArray:
        """Q x, from the kernel columns of the nonzero entries of x."""
        nz = np.flatnonzero(x)
        if not nz.size:
            return np.zeros(self.idx.size)
        self.stats.rows_computed += int(nz.size)
        K = self.kernel.block(self.X[self.idx], self.X[self.idx[nz]])
        out: FloatArray = self.y * (K @ (self.y[nz] * x[nz]))
        return out

    def rows(self, idx: Any) -> FloatArray:
        """Q[idx, :]."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        self.stats.rows_computed += int(i.size)
        K = self.kernel.block(self.X[self.idx[i]], self.X[self.idx])
        out: FloatArray = (self.y[i][:, None] * self.y[None, :]) * K
        return out

    def row(self, i: int) -> FloatArray:
        """Q[i, :]."""
        out: FloatArray = self.rows([i])[0]
        return out


def fixed_threshold_svm(X: Any, y: ArrayLike, C: float | ArrayLike = 1.0, kernel: Kernel | None = None,
                        **kw: Any) -> SVMProblem:
    """The SVM with threshold fixed at 0 (no equality constraint), Platt §2.6; see ``csvc``."""
    return csvc(X, y, C, kernel, fixed_threshold=True, **kw)


def l2_svc(X: Any, y: ArrayLike, C: float | ArrayLike = 1.0, kernel: Kernel | None = None, *,
           cache_bytes: int = 200 << 20, dtype: Any = np.float32, compute_dtype: Any = np.float64) -> SVMProblem:
    """The L2-loss (squared hinge) kernel SVM's dual.

    The primal min ½‖w‖² + Σ C_i ξ_i², y_i(wᵀφ(x_i) + b) ≥ 1 − ξ_i (LIBLINEAR's L2-loss SVM
    with a kernel and a free intercept) has the dual

        min ½αᵀ(yyᵀ∘K + D)α − eᵀα,  α ≥ 0,  yᵀα = 0,  D = diag(1/(2C_i)):

    C-SVC's with the diagonal D added (:func:`qpcore.backends.shifted.shift_diagonal` over the
    C-SVC's ``KernelQ``) and no upper bound. The model is C-SVC's: f(x) = Σ α_i y_i K(x_i, x) + b
    with b from the equality's multiplier, and ξ_i = α_i/(2C_i).

    The box the QP carries, α_i ≤ u_i = 2√(C_i Σ_j C_j), is never active at the optimum: the
    primal optimum is at most its value at w = 0, b = 0 (Σ C_j), so C_i ξ_i² ≤ Σ C_j and
    α_i = 2C_i ξ_i ≤ u_i; the QP has the unbounded dual's solution, and the strategies that need
    finite bounds (SMO, decomposition, INCAS) take it.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix
        Training points (for a precomputed kernel: the n×n Gram matrix).
    y : array_like
        Labels: any two distinct values.
    C : float or array_like
        The loss weight, > 0 (per sample when an array).
    kernel : Kernel, optional
        Default RBF with gamma = 1 / n_features.
    cache_bytes, dtype, compute_dtype :
        The ``KernelQ``'s, as :func:`csvc` takes them.

    Returns
    -------
    SVMProblem
        Of kind ``l2-svc``.

    Raises
    ------
    ProblemError
        Bad data (NaN/inf, shapes, no rows), labels that are not two classes, C ≤ 0.
    """
    X = _training_rows(X, "the L2-loss SVM")
    n = int(X.shape[0])
    ypm, classes = two_class_labels(y, n)
    Cv = check_C(C, n)
    if kernel is None:
        kernel = Kernel("rbf", gamma=1.0 / max(1, X.shape[1]))
    K = KernelQ(X, kernel, scale=ypm, cache_bytes=cache_bytes, dtype=dtype, compute_dtype=compute_dtype)
    Q = shift_diagonal(K, 0.5 / Cv)
    ub = 2.0 * np.sqrt(Cv * float(Cv.sum()))
    qp = QP(Q, -np.ones(n), np.zeros(n), ub, ypm[None, :], np.zeros(1))
    return SVMProblem(qp=qp, X=K.X if kernel.name != "precomputed" else X, y=ypm, classes=classes, kernel=kernel,
                      kind="l2-svc")
