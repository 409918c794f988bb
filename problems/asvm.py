"""The ASVM / L2-loss linear SVM (Mangasarian & Musicant): data in, nonnegativity QP out, model out.

Primal, with the squared slack and the threshold γ in the regularizer:

    min ν/2‖ξ‖² + ½(‖w‖² + γ²)  s.t.  D(Aw − eγ) + ξ ≥ e,

whose dual is the nonnegativity QP

    min ½uᵀ(I/ν + HHᵀ)u − eᵀu,  u ≥ 0,  H = D[A, −e],

with w = AᵀDu, γ = −eᵀDu and ξ = u/ν. It is LIBLINEAR's L2-loss SVM (``-s 1 -B 1``) with
C = ν/2 and bias b = −γ: the same problem, the same optimum.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.chunked import ChunkedLowRankQ, ChunkedVector
from qpcore.lowrank import DiagPlusLowRankQ
from qpcore.problem import QP, ProblemError
from qpcore.state import Result
from problems.chunked import chunked_data, is_dask_array, loss_sum
from problems.svm import two_class_labels

FloatArray = NDArray[np.float64]

__all__ = ["ASVMProblem", "LinearSVMModel", "asvm_dual"]


@attrs.frozen
class LinearSVMModel:
    """A linear classifier sign(xᵀw − γ).

    Attributes
    ----------
    w : ndarray
        Weights, shape (n,).
    gamma : float
        The threshold γ (the bias is b = −γ).
    classes : ndarray
        The two original labels ``[negative, positive]``.
    """

    w: FloatArray
    gamma: float
    classes: NDArray[Any]

    def decision_function(self, X: Any) -> FloatArray:
        """xᵀw − γ for each row of X (dense or sparse, n columns)."""
        if X.shape[1] != self.w.size:
            raise ProblemError(f"X: shape mismatch, expected {self.w.size} columns, got {X.shape[1]}")
        return np.asarray(X @ self.w, dtype=np.float64).ravel() - self.gamma

    def predict(self, X: Any) -> NDArray[Any]:
        """The original labels (the positive class where the decision function is > 0)."""
        out: NDArray[Any] = np.where(self.decision_function(X) > 0, self.classes[1], self.classes[0])
        return out


@attrs.frozen(eq=False)
class ASVMProblem:
    """The ASVM dual of a data set, with its decoder.

    Attributes
    ----------
    qp : QP
        min ½uᵀQu − eᵀu, u ≥ 0, with Q a :class:`qpcore.lowrank.DiagPlusLowRankQ` (d = 1/ν).
    A : ndarray or scipy.sparse.csr_matrix
        The data as the operator holds it (dense or CSR float64).
    y : ndarray
        Labels as ±1.
    nu : float
        ν.
    classes : ndarray
        The two original labels.
    """

    qp: QP
    A: Any
    y: FloatArray
    nu: float
    classes: NDArray[Any]

    def primal(self, u: FloatArray) -> tuple[FloatArray, float]:
        """(w, γ) = (AᵀDu, −eᵀDu) from a dual point (one pass over the data)."""
        Q: DiagPlusLowRankQ = self.qp.Q  # type: ignore[assignment]
        p = Q.rmatvec_lowrank(u if isinstance(u, ChunkedVector) else np.asarray(u, dtype=np.float64))
        return p[:-1].copy(), float(p[-1])

    def decode(self, result: Result | FloatArray) -> LinearSVMModel:
        """The classifier of a result (or of a dual point)."""
        u: Any = result.x if isinstance(result, Result) else result
        if not isinstance(u, ChunkedVector):
            u = np.asarray(u, dtype=np.float64)
        w, gamma = self.primal(u)
        return LinearSVMModel(w=w, gamma=gamma, classes=self.classes)

    def primal_objective(self, w: FloatArray, gamma: float) -> float:
        """ν/2 Σ max(0, 1 − y_i(a_iᵀw − γ))² + ½(‖w‖² + γ²): the primal at any (w, γ)."""
        if isinstance(self.A, ChunkedLowRankQ):
            z = np.concatenate((np.asarray(w, dtype=np.float64), [gamma]))
            return float(0.5 * self.nu * loss_sum(self.A, z, power=2) + 0.5 * (w @ w + gamma * gamma))
        margin = self.y * (np.asarray(self.A @ w, dtype=np.float64).ravel() - gamma)
        xi = np.maximum(0.0, 1.0 - margin)
        return float(0.5 * self.nu * xi @ xi + 0.5 * (w @ w + gamma * gamma))


def asvm_dual(A: Any, y: ArrayLike, nu: float = 2.0, *, dense: bool | None = None, client: Any = None) -> ASVMProblem:
    """Build the ASVM dual min ½uᵀ(I/ν + HHᵀ)u − eᵀu, u ≥ 0, H = D[A, −e], without copying A.

    Parameters
    ----------
    A : array_like or scipy.sparse matrix
        The m×n data, finite and real. A C-contiguous float64 array is used in place.
    y : array_like
        Labels, exactly two distinct values (the larger one is +1).
    nu : float
        ν > 0, the weight of the squared slacks (LIBLINEAR's C = ν/2).
    dense : bool, optional
        Hold sparse data as a dense array (faster BLAS passes). Default: when the dense copy is
        at most 256 MB and the density at least 2%.
    client : distributed.Client or str, optional
        For a dask array A (row chunks on a cluster): the cluster's client or scheduler address
        (the default client when omitted). The data stay on the workers, the dual variable lives
        with them (:mod:`problems.chunked`), and ASVM runs its passes there.

    Returns
    -------
    ASVMProblem

    Raises
    ------
    ProblemError
        On NaN/inf, a shape mismatch, labels that are not two classes, or ν ≤ 0.
    """
    if not (isinstance(nu, (int, float, np.floating, np.integer)) and np.isfinite(nu) and nu > 0):
        raise ProblemError(f"nu: must be finite and > 0, got {nu!r}")
    if is_dask_array(A):
        data = chunked_data(A, y, d=1.0 / float(nu), bias=-1.0, client=client)
        space = data.Q.space
        qp = QP.trusted(data.Q, space.full(-1.0), space.full(0.0), space.full(np.inf),  # type: ignore[arg-type]
                        np.zeros((0, space.m)), np.zeros(0))
        return ASVMProblem(qp=qp, A=data.Q, y=data.y, nu=float(nu), classes=data.classes)  # type: ignore[arg-type]
    if sp.issparse(A):
        m, n = A.shape
        density = A.nnz / max(1, m * n)
        if dense is None:
            dense = m * n * 8 <= (256 << 20) and density >= 0.02
        if dense:
            if not np.isfinite(A.data).all():
                raise ProblemError("A: contains NaN or inf; all entries must be finite")
            A = A.toarray()
    elif not (isinstance(A, np.ndarray) and A.ndim == 2):
        A = np.asarray(A)
        if A.ndim != 2:
            raise ProblemError(f"A: expected a 2-D array (m, n), got shape {A.shape}")
    m = int(A.shape[0])
    if m == 0:
        raise ProblemError("A: no rows")
    ypm, classes = two_class_labels(y, m)
    Q = DiagPlusLowRankQ(1.0 / float(nu), A, row_scale=ypm, bias=-1.0)
    qp = QP(Q=Q, c=-np.ones(m), lb=np.zeros(m), ub=np.full(m, np.inf))
    return ASVMProblem(qp=qp, A=Q.F, y=ypm, nu=float(nu), classes=classes)
