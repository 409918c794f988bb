"""The regularized hinge risk (the L1-loss linear SVM) and its dual: data in, QP out, certificate out.

The primal, with the bias as an extra constant feature β that is regularized (LIBLINEAR's ``-B β``,
libocas's ``-b``):

    min_w F(w) = ½‖w‖² + Σ_i C_i max(0, 1 − y_i (x_iᵀ w[:d] + β·w[d])),

with w of length d + 1 (length d when β = 0: no bias). Write h_i = y_i [x_i, β] (the rows of H); its
dual is the fixed-threshold SVM dual

    min ½αᵀ(HHᵀ)α − eᵀα,  0 ≤ α ≤ C    (no equality row),

with w(α) = Hᵀα and D(α) = eᵀα − ½‖Hᵀα‖² ≤ F(w) for every w and every α in the box (weak duality).
Q = HHᵀ is a :class:`qpcore.backends.lowrank.DiagPlusLowRankQ` over the data itself, never formed. Any
strategy of qpcore may solve that QP; a cutting-plane strategy (``qpcore_strategies.cutting_plane``) works
on the primal and hands back both a dual-feasible α and its best primal point w, and
:meth:`HingeProblem.certificate` checks the pair from the data alone.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.chunked import ChunkedLowRankQ, ChunkedVector
from qpcore.backends.gram import as_float_matrix
from qpcore.core.certificate import KKT, kkt
from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import Result
from qpcore_formulations.asvm import LinearSVMModel
from qpcore_formulations.chunked import chunked_data, is_dask_array, loss_sum
from qpcore_formulations.svm import check_C, two_class_labels

FloatArray = NDArray[np.float64]

__all__ = ["HingeCertificate", "HingeProblem", "hinge_svm"]

# sparse data is held dense when the dense copy is at most this big and reads fewer bytes per pass:
# a cutting plane only streams the data (X w, Xᵀr), so CSR's 12 bytes per non-zero against the
# dense 8 per entry decide it (adult, 11% dense, ran 3× slower dense; ijcnn1, 59%, 1.6×)
_DENSE_BYTES = 256 << 20
_DENSE_DENSITY = 2.0 / 3.0


@attrs.frozen
class HingeCertificate:
    """A duality-gap certificate of a primal point w and a dual point α, computed from the data.

    Attributes
    ----------
    primal : float
        F(w), the regularized hinge risk at w.
    dual : float
        D(α) = Σα_i − ½‖Hᵀα‖²: a lower bound on min F when α is in the box 0 ≤ α ≤ C.
    gap : float
        F(w) − D(α) ≥ F(w) − min F (when α is feasible).
    rel_gap : float
        gap / |F(w)| (libocas's TolRel measure).
    kkt : KKT
        ``qpcore.kkt`` of α for the dual QP (its ``primal`` field is α's bound violation).
    """

    primal: float
    dual: float
    gap: float
    rel_gap: float
    kkt: KKT

    @property
    def feasible(self) -> bool:
        """Whether α is in the box (to qpcore's feasibility tolerance), so that ``dual`` is a bound."""
        return self.kkt.feasible()


@attrs.frozen(eq=False)
class HingeProblem:
    """The hinge-loss linear SVM of a data set: its dual QP, primal and dual objectives, certificate.

    Attributes
    ----------
    qp : QP
        min ½αᵀQα − eᵀα, 0 ≤ α ≤ C, no equality; Q = HHᵀ a :class:`qpcore.backends.lowrank.DiagPlusLowRankQ`
        (zero diagonal), h_i = y_i [x_i, bias].
    X : ndarray or scipy.sparse.csr_matrix
        The data as the operator holds it (dense C-contiguous float64, the caller's array when it
        was one; or CSR float64).
    y : ndarray
        Labels as ±1.
    C : ndarray
        The per-example weights C_i ≥ 0 (an example with C_i = 0 has no loss; its α_i is pinned to 0).
    bias : float
        β ≥ 0, the value of the constant feature (0: no bias term).
    classes : ndarray
        The two original labels ``[negative, positive]``.
    n_features : int
        d, the number of columns of X.
    dim : int
        The length of w: d + 1 with a bias, d without.
    """

    qp: QP
    X: Any
    y: FloatArray
    C: FloatArray
    bias: float
    classes: NDArray[Any]
    n_features: int
    dim: int

    # ------------------------------------------------------------------ passes over the data
    def _w(self, w: ArrayLike) -> FloatArray:
        arr = np.asarray(w, dtype=np.float64)
        if arr.shape != (self.dim,):
            raise ProblemError(f"w: shape mismatch, expected ({self.dim},), got {arr.shape}")
        return arr

    def margins(self, w: ArrayLike) -> FloatArray:
        """y_i (x_iᵀ w[:d] + β·w[d]) for every example: one pass over the data.

        Parameters
        ----------
        w : array_like
            A primal point, length :attr:`dim`.

        Returns
        -------
        ndarray
            The m margins.
        """
        w = self._w(w)
        if isinstance(self.X, ChunkedLowRankQ):
            return self.X.matvec_lowrank(w)  # type: ignore[return-value]
        d = self.n_features
        out = np.asarray(self.X @ w[:d], dtype=np.float64).ravel()
        if self.dim > d:
            out += self.bias * float(w[d])
        out *= self.y
        return out

    def primal_objective(self, w: ArrayLike) -> float:
        """F(w) = ½‖w‖² + Σ_i C_i max(0, 1 − y_i(x_iᵀw[:d] + β·w[d])): one pass over the data.

        Parameters
        ----------
        w : array_like
            A primal point, length :attr:`dim`.

        Returns
        -------
        float
        """
        w = self._w(w)
        if isinstance(self.X, ChunkedLowRankQ):
            return float(0.5 * (w @ w) + loss_sum(self.X, w, self.C))  # type: ignore[arg-type]
        loss = np.maximum(0.0, 1.0 - self.margins(w))
        return float(0.5 * (w @ w) + self.C @ loss)

    def primal_of(self, alpha: ArrayLike) -> FloatArray:
        """w(α) = Hᵀα = Σ_i α_i y_i [x_i, β]: the primal point of a dual point (one pass).

        Parameters
        ----------
        alpha : array_like
            A dual point, length m.

        Returns
        -------
        ndarray
            Length :attr:`dim`.
        """
        a: Any = alpha if isinstance(alpha, ChunkedVector) else np.asarray(alpha, dtype=np.float64)
        if a.shape != (self.qp.n,):
            raise ProblemError(f"alpha: shape mismatch, expected ({self.qp.n},), got {a.shape}")
        Q: DiagPlusLowRankQ = self.qp.Q  # type: ignore[assignment]
        out: FloatArray = Q.rmatvec_lowrank(a)
        return out

    def dual_objective(self, alpha: ArrayLike) -> float:
        """D(α) = Σα_i − ½‖Hᵀα‖² (= −``qp.objective(α)``): one pass over the data.

        Parameters
        ----------
        alpha : array_like
            A dual point, length m (a lower bound on min F only when 0 ≤ α ≤ C).

        Returns
        -------
        float
        """
        a: Any = alpha if isinstance(alpha, ChunkedVector) else np.asarray(alpha, dtype=np.float64)
        v = self.primal_of(a)
        return float(a.sum() - 0.5 * (v @ v))

    # ------------------------------------------------------------------ results
    def weights(self, result: Result) -> FloatArray:
        """The primal point of a result: ``result.state.primal`` when the strategy kept one, else Hᵀx.

        Parameters
        ----------
        result : Result
            A solve of :attr:`qp`.

        Returns
        -------
        ndarray
            w, length :attr:`dim` (a copy).
        """
        primal = result.state.primal
        if primal is not None:
            return self._w(primal).copy()
        return self.primal_of(result.x)

    def certify(self, w: ArrayLike, alpha: ArrayLike) -> HingeCertificate:
        """The duality-gap certificate of the pair (w, α), from X, y, C alone.

        Parameters
        ----------
        w : array_like
            A primal point, length :attr:`dim`.
        alpha : array_like
            A dual point, length m.

        Returns
        -------
        HingeCertificate
            F(w) from one pass over the data (its own margins), D(α) from one pass (Hᵀα), and
            ``qpcore.kkt`` of α with the gradient H(Hᵀα) − e from one more pass.
        """
        a: Any = alpha if isinstance(alpha, ChunkedVector) else np.asarray(alpha, dtype=np.float64)
        F = self.primal_objective(w)
        v = self.primal_of(a)
        D = float(a.sum() - 0.5 * (v @ v))
        Q: DiagPlusLowRankQ = self.qp.Q  # type: ignore[assignment]
        g = Q.matvec_lowrank(v) + self.qp.c   # Qα + c with Q = HHᵀ (zero diagonal)
        gap = F - D
        return HingeCertificate(primal=F, dual=D, gap=gap, rel_gap=gap / abs(F) if F != 0 else np.inf,
                                kkt=kkt(self.qp, a, g))

    def certificate(self, result: Result) -> HingeCertificate:
        """The certificate of a result: :meth:`certify` of ``(weights(result), result.x)``.

        Parameters
        ----------
        result : Result
            A solve of :attr:`qp` (by any strategy).

        Returns
        -------
        HingeCertificate
        """
        return self.certify(self.weights(result), result.x)

    def decode(self, result: Result) -> LinearSVMModel:
        """The classifier sign(xᵀw[:d] + β·w[d]) of a result, as a ``LinearSVMModel``.

        Parameters
        ----------
        result : Result
            A solve of :attr:`qp`.

        Returns
        -------
        LinearSVMModel
            ``w = w[:d]`` and ``gamma = −β·w[d]`` (0 without a bias).
        """
        w = self.weights(result)
        d = self.n_features
        gamma = -self.bias * float(w[d]) if self.dim > d else 0.0
        return LinearSVMModel(w=w[:d].copy(), gamma=gamma, classes=self.classes)


def _data(X: Any, dense: bool | None) -> Any:
    """Validated data: dense C-contiguous float64 (the caller's array when it is one) or CSR."""
    if sp.issparse(X):
        m, n = (int(s) for s in X.shape)
        if dense is None:
            dense = m * n * 8 <= _DENSE_BYTES and X.nnz >= _DENSE_DENSITY * max(1, m * n)
        X = as_float_matrix(X, "X")
        return np.ascontiguousarray(X.toarray()) if dense else X
    return as_float_matrix(X, "X")


def _check_weights(C: Any, m: int) -> FloatArray:
    """The box C as m values (a copy: a caller's later edit must not change the problem).

    A scalar must be > 0; per-example values may be 0 (a zero sample or class weight) but not all.
    """
    if not np.ndim(C):
        return check_C(C, m).copy()
    arr = np.array(C, dtype=np.float64)
    if arr.shape != (m,):
        raise ProblemError(f"C: shape mismatch, expected a scalar or ({m},), got {arr.shape}")
    if not np.isfinite(arr).all() or (arr < 0).any() or not (arr > 0).any():
        raise ProblemError(f"C: per-example values must be finite, ≥ 0 and not all 0, got {C!r}")
    return arr


def hinge_svm(X: Any, y: ArrayLike, C: float | ArrayLike = 1.0, *, bias: float = 1.0,
              dense: bool | None = None, client: Any = None) -> HingeProblem:
    """Build the hinge-loss linear SVM min ½‖w‖² + Σ C_i max(0, 1 − y_i(x_iᵀw[:d] + β·w[d])).

    Parameters
    ----------
    X : array_like or scipy.sparse matrix
        The m×d data, finite and real. A C-contiguous float64 array is used in place (not copied);
        sparse data becomes CSR float64.
    y : array_like
        Labels, exactly two distinct values (the larger one is +1).
    C : float or array_like
        The loss weight: a scalar > 0, or one per example, each ≥ 0 (class and sample weights
        times C; 0 drops the example's loss: its box is [0, 0]), finite and not all 0.
    bias : float
        β ≥ 0, the constant feature appended to every example (its weight is regularized, as
        LIBLINEAR's ``-B`` and libocas's ``-b`` do); 0 means no bias term.
    dense : bool, optional
        Hold sparse data as a dense array. Default: when the dense copy is at most 256 MB and the
        density at least 2/3 (then a dense pass reads fewer bytes than a CSR one).
    client : distributed.Client or str, optional
        For a dask array X (row chunks on a cluster): the cluster's client or scheduler address
        (the default client when omitted). The data stay on the workers (:mod:`qpcore_formulations.chunked`)
        and the cutting planes run their passes there; C must then be a scalar.

    Returns
    -------
    HingeProblem

    Raises
    ------
    ProblemError
        Before any work, on NaN/inf in X, a shape mismatch, labels that are not two classes,
        C not finite, a scalar C ≤ 0, a per-example C_i < 0 or all 0 (or of the wrong length), or
        a bias < 0 or not finite.
    """
    if not isinstance(bias, (int, float, np.integer, np.floating)) or isinstance(bias, bool):
        raise ProblemError(f"bias: must be a real number ≥ 0, got {bias!r}")
    if not (np.isfinite(bias) and bias >= 0):
        raise ProblemError(f"bias: must be finite and ≥ 0, got {bias!r}")
    if is_dask_array(X):
        if np.ndim(C):
            raise ProblemError("C: give one value for chunked data (per-example weights are not supported there)")
        Cs = check_C(C, 1)[0]
        beta = float(bias)
        data = chunked_data(X, y, d=0.0, bias=beta if beta > 0 else None, client=client)
        space = data.Q.space
        Cc: Any = space.full(Cs)
        qp = QP.trusted(data.Q, space.full(-1.0), space.full(0.0), Cc,  # type: ignore[arg-type]
                        np.zeros((0, space.m)), np.zeros(0))
        return HingeProblem(qp=qp, X=data.Q, y=data.y, C=Cc, bias=beta,  # type: ignore[arg-type]
                            classes=data.classes, n_features=data.n_features, dim=data.n_features + (beta > 0))
    X = _data(X, dense)
    m, d = (int(s) for s in X.shape)
    if m == 0:
        raise ProblemError("X: no rows")
    ypm, classes = two_class_labels(y, m)
    Cv = _check_weights(C, m)
    beta = float(bias)
    Q = DiagPlusLowRankQ(0.0, X, row_scale=ypm, bias=beta if beta > 0 else None)
    # c = −1, lb = 0 and ub = C (checked above: finite, ≥ 0) are valid by construction: QP's own
    # checks of three m-vectors are skipped; check_feasible as QP() sets it (no rows to check)
    qp = QP.trusted(Q, -np.ones(m), np.zeros(m), Cv, np.zeros((0, m)), np.zeros(0))
    object.__setattr__(qp, "check_feasible", True)
    return HingeProblem(qp=qp, X=Q.F, y=ypm, C=Cv, bias=beta, classes=classes, n_features=d,
                        dim=d + (beta > 0))
