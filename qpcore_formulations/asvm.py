"""The ASVM / L2-loss linear SVM (Mangasarian & Musicant): data in, nonnegativity QP out, model out.

Primal, with the squared slack and the threshold γ in the regularizer:

    min ν/2‖ξ‖² + ½(‖w‖² + γ²)  s.t.  D(Aw − eγ) + ξ ≥ e,

whose dual is the nonnegativity QP

    min ½uᵀ(I/ν + HHᵀ)u − eᵀu,  u ≥ 0,  H = D[A, −e],

with w = AᵀDu, γ = −eᵀDu and ξ = u/ν. It is LIBLINEAR's L2-loss SVM (``-s 1 -B 1``) with
C = ν/2 and bias b = −γ: the same problem, the same optimum.

Per-example weights s_i ≥ 0 (``sample_weight``) weight the squared slacks: the primal
min ν/2 Σ s_i ξ_i² + ½(‖w‖² + γ²) has, from the Lagrangian's stationarity in ξ (ν s_i ξ_i = u_i),
the dual

    min ½uᵀ(diag(1/(ν s)) + HHᵀ)u − eᵀu,  u ≥ 0,

with ξ_i = u_i/(ν s_i): the scalar 1/ν becomes the diagonal d_i = 1/(ν s_i), LIBLINEAR's
D_ii = 1/(2C_i) with C_i = ν s_i / 2. An example with s_i = 0 has no loss and d_i = ∞, which forces
u_i = 0: its row is left out of the dual (``ASVMProblem.rows``), not put in as a huge d_i.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.chunked import ChunkedLowRankQ, ChunkedVector
from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import Result
from qpcore_formulations.chunked import chunked_data, is_dask_array, loss_sum
from qpcore_formulations.svm import two_class_labels

FloatArray = NDArray[np.float64]

__all__ = ["ASVMProblem", "LinearSVMModel", "asvm_dual", "check_weight"]


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
        min ½uᵀQu − eᵀu, u ≥ 0, with Q a :class:`qpcore.backends.lowrank.DiagPlusLowRankQ` (d = 1/ν).
    A : ndarray or scipy.sparse.csr_matrix
        The data as the operator holds it (dense or CSR float64).
    y : ndarray
        Labels as ±1.
    nu : float
        ν.
    classes : ndarray
        The two original labels.
    weight : ndarray, ChunkedVector or None
        The weights s_i > 0 of the examples in the dual (d_i = 1/(ν s_i)); None: all 1 (d = 1/ν).
    rows : ndarray or None
        The indices of the examples the dual holds (those of positive weight), in order; None: all.
        ``A``, ``y``, ``weight`` and the dual variable are over these rows.
    """

    qp: QP
    A: Any
    y: FloatArray
    nu: float
    classes: NDArray[Any]
    weight: Any = None
    rows: NDArray[np.intp] | None = None

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
        """ν/2 Σ s_i max(0, 1 − y_i(a_iᵀw − γ))² + ½(‖w‖² + γ²): the primal at any (w, γ).

        Examples of weight 0 (left out of the dual) add nothing, so the sum over the dual's rows is
        the sum over all examples.
        """
        if isinstance(self.A, ChunkedLowRankQ):
            z = np.concatenate((np.asarray(w, dtype=np.float64), [gamma]))
            weight = 1.0 if self.weight is None else self.weight
            return float(0.5 * self.nu * loss_sum(self.A, z, weight, power=2) + 0.5 * (w @ w + gamma * gamma))
        margin = self.y * (np.asarray(self.A @ w, dtype=np.float64).ravel() - gamma)
        xi = np.maximum(0.0, 1.0 - margin)
        sq = xi * xi if self.weight is None else self.weight * xi * xi
        return float(0.5 * self.nu * sq.sum() + 0.5 * (w @ w + gamma * gamma))


def check_weight(sample_weight: ArrayLike, m: int) -> FloatArray:
    """Validated per-example weights: shape (m,), finite, ≥ 0 and not all 0 (a float64 copy).

    Parameters
    ----------
    sample_weight : array_like
        The m weights.
    m : int
        The number of examples.

    Returns
    -------
    ndarray

    Raises
    ------
    ProblemError
        On a shape mismatch, NaN/inf, a negative weight, or all weights 0.
    """
    try:
        wt = np.array(sample_weight, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ProblemError(f"sample_weight: must be real numbers, got {sample_weight!r}") from e
    if wt.shape != (m,):
        raise ProblemError(f"sample_weight: shape mismatch, expected ({m},), got {wt.shape}")
    if not np.isfinite(wt).all():
        raise ProblemError("sample_weight: contains NaN or inf; weights must be finite and ≥ 0")
    if (wt < 0).any():
        raise ProblemError(f"sample_weight: has negative entries (min {wt.min()!r}); weights must be ≥ 0")
    if not (wt > 0).any():
        raise ProblemError("sample_weight: all weights are zero; at least one example must have a positive weight")
    return wt


def asvm_dual(A: Any, y: ArrayLike, nu: float = 2.0, *, sample_weight: ArrayLike | None = None,
              dense: bool | None = None, client: Any = None) -> ASVMProblem:
    """Build the ASVM dual min ½uᵀ(D + HHᵀ)u − eᵀu, u ≥ 0, H = D_y[A, −e], without copying A.

    D = I/ν, or diag(1/(ν s_i)) with per-example weights s (the module docstring derives it).

    Parameters
    ----------
    A : array_like or scipy.sparse matrix
        The m×n data, finite and real. A C-contiguous float64 array is used in place (unless some
        weights are 0: then the rows of positive weight are copied).
    y : array_like
        Labels, exactly two distinct values (the larger one is +1).
    nu : float
        ν > 0, the weight of the squared slacks (LIBLINEAR's C = ν/2).
    sample_weight : array_like, optional
        s_i ≥ 0 per example, finite, not all 0: the slack of example i is weighted ν s_i
        (LIBLINEAR's C_i = ν s_i / 2). Examples of weight 0 are left out of the dual (their u_i
        is 0 at every feasible optimum); :attr:`ASVMProblem.rows` lists the ones kept. For
        chunked data the weights (a numpy array) go to the chunks as the operator's diagonal
        d_i = 1/(ν s_i), and must be > 0.
    dense : bool, optional
        Hold sparse data as a dense array (faster BLAS passes). Default: when the dense copy is
        at most 256 MB and the density at least 2%.
    client : distributed.Client or str, optional
        For a dask array A (row chunks on a cluster): the cluster's client or scheduler address
        (the default client when omitted). The data stay on the workers, the dual variable lives
        with them (:mod:`qpcore_formulations.chunked`), and ASVM runs its passes there.

    Returns
    -------
    ASVMProblem

    Raises
    ------
    ProblemError
        Before any work: on NaN/inf, a shape mismatch, labels that are not two classes, ν ≤ 0,
        weights that are negative, NaN/inf, all 0, so small that 1/(ν s_i) overflows, or 0 for
        chunked data.
    """
    if not (isinstance(nu, (int, float, np.floating, np.integer)) and np.isfinite(nu) and nu > 0):
        raise ProblemError(f"nu: must be finite and > 0, got {nu!r}")
    if is_dask_array(A):
        scale = None
        if sample_weight is not None:
            if any(np.isnan(c) for c in A.chunks[0]):
                A = A.compute_chunk_sizes()
            scale = check_weight(sample_weight, int(A.shape[0]))
            if not (scale > 0).all():
                raise ProblemError("sample_weight: weights of 0 are not supported for chunked data "
                                   "(leave those rows out of the dask array)")
            if not np.isfinite(1.0 / (float(nu) * scale.min())):
                raise ProblemError(f"sample_weight: a weight is so small that 1/(nu·weight) overflows "
                                   f"(smallest positive weight {scale.min()!r})")
        data = chunked_data(A, y, d=1.0 / float(nu), bias=-1.0, client=client, scale=scale)
        space = data.Q.space
        qp = QP.trusted(data.Q, space.full(-1.0), space.full(0.0), space.full(np.inf),  # type: ignore[arg-type]
                        np.zeros((0, space.m)), np.zeros(0))
        # the weights as chunks, for the primal objective: s_i = (1/ν)/d_i
        cw: Any = None if scale is None else (1.0 / float(nu)) / data.Q.d
        return ASVMProblem(qp=qp, A=data.Q, y=data.y, nu=float(nu), classes=data.classes,  # type: ignore[arg-type]
                           weight=cw)
    if not (sp.issparse(A) or (isinstance(A, np.ndarray) and A.ndim == 2)):
        A = np.asarray(A)
        if A.ndim != 2:
            raise ProblemError(f"A: expected a 2-D array (m, n), got shape {A.shape}")
    m = int(A.shape[0])
    if m == 0:
        raise ProblemError("A: no rows")
    weight = None if sample_weight is None else check_weight(sample_weight, m)
    ypm, classes = two_class_labels(y, m)
    rows: NDArray[np.intp] | None = None
    d: float | FloatArray = 1.0 / float(nu)
    if weight is not None:
        if not (weight > 0).all():
            # d_i = ∞ forces u_i = 0: the row leaves the dual instead of entering with a huge d_i
            rows = np.flatnonzero(weight > 0)
            A, ypm, weight = A[rows], ypm[rows], weight[rows]
        with np.errstate(over="ignore", divide="ignore"):
            d = 1.0 / (float(nu) * weight)
        if not np.isfinite(d).all():
            raise ProblemError(f"sample_weight: a weight is so small that 1/(nu·weight) overflows "
                               f"(smallest positive weight {weight.min()!r})")
    if sp.issparse(A):
        density = A.nnz / max(1, A.shape[0] * A.shape[1])
        if dense is None:
            dense = A.shape[0] * A.shape[1] * 8 <= (256 << 20) and density >= 0.02
        if dense:
            if not np.isfinite(A.data).all():
                raise ProblemError("A: contains NaN or inf; all entries must be finite")
            A = A.toarray()
    Q = DiagPlusLowRankQ(d, A, row_scale=ypm, bias=-1.0)
    mq = int(Q.shape[0])
    qp = QP(Q=Q, c=-np.ones(mq), lb=np.zeros(mq), ub=np.full(mq, np.inf))
    return ASVMProblem(qp=qp, A=Q.F, y=ypm, nu=float(nu), classes=classes, weight=weight, rows=rows)
