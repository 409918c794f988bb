"""Q held as a scipy.sparse matrix, and Q padded with zero rows and columns (the slack form's Hessian).

A general QP's Hessian is often sparse (the Maros–Meszaros problems: a few nonzeros a row), and
a strategy that factors the KKT system (the interior point method) keeps it sparse; strategies
that read rows get them densified one block at a time.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.capabilities import Capability, OperatorStats, QOperator, cross_block, principal_block
from qpcore.core.validate import ProblemError

FloatArray = NDArray[np.float64]

__all__ = ["PaddedQ", "SparseQ", "matrix_of"]


class SparseQ:
    """Q as a symmetric scipy.sparse matrix (kept in CSR).

    Parameters
    ----------
    M : scipy.sparse matrix or array
        Square, finite, symmetric (to 1e-10 relative). Checked positive semidefinite like
        :class:`qpcore.DenseQ` (densified for the check) up to ``PSD_CHECK_MAX_N`` rows.
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.BLOCK, Capability.CROSS})

    def __init__(self, M: Any) -> None:
        import scipy.sparse as sp

        from qpcore.backends.operators import PSD_CHECK_MAX_N, _check_psd

        try:
            csr = sp.csr_matrix(M, dtype=np.float64)
        except (ValueError, TypeError) as e:
            raise ProblemError(f"Q: not a regular numeric matrix ({e})") from None
        if csr.ndim != 2 or csr.shape[0] != csr.shape[1]:
            raise ProblemError(f"Q: not square, shape {csr.shape}; Q must be n×n")
        csr.sum_duplicates()
        csr.eliminate_zeros()
        if not np.isfinite(csr.data).all():
            raise ProblemError("Q: contains NaN or inf; all entries must be finite")
        scale = max(1.0, float(np.abs(csr.data).max(initial=0.0)))
        asym = abs(csr - csr.T)
        if asym.nnz and float(asym.max()) > 1e-10 * scale:
            raise ProblemError("Q: not symmetric; pass (Q + Q.T) / 2, which defines the same objective")
        self.M = csr
        self.psd: bool | None = _check_psd(csr.toarray()) if csr.shape[0] <= PSD_CHECK_MAX_N else None
        self.stats = OperatorStats()

    @property
    def shape(self) -> tuple[int, int]:
        """(n, n)."""
        return (int(self.M.shape[0]), int(self.M.shape[1]))

    @property
    def row_dtype(self) -> np.dtype[Any]:
        """float64."""
        return np.dtype(np.float64)

    @property
    def row_eps(self) -> float:
        """float64's eps: the entries are the matrix's own."""
        return float(np.finfo(np.float64).eps)

    def diag(self) -> FloatArray:
        """The diagonal of Q."""
        return np.asarray(self.M.diagonal(), dtype=np.float64)

    def matvec(self, x: FloatArray) -> FloatArray:
        """Q x."""
        return np.asarray(self.M @ x, dtype=np.float64)

    def rows(self, idx: ArrayLike) -> FloatArray:
        """Q[idx, :], dense."""
        i = np.asarray(idx, dtype=np.intp)
        self.stats.cache_hits += int(i.size)
        return np.asarray(self.M[i].toarray(), dtype=np.float64)

    def row(self, i: int) -> FloatArray:
        """Q[i, :], dense."""
        out: FloatArray = self.rows(np.array([i]))[0]
        return out

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx], dense."""
        i = np.asarray(idx, dtype=np.intp)
        return np.asarray(self.M[i][:, i].toarray(), dtype=np.float64)

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> FloatArray:
        """The block Q[idx][:, cols] (all columns when ``cols`` is None), dense."""
        i = np.asarray(idx, dtype=np.intp)
        self.stats.cache_hits += int(i.size)
        sub = self.M[i]
        if cols is not None:
            sub = sub[:, np.asarray(cols, dtype=np.intp)]
        return np.asarray(sub.toarray(), dtype=np.float64)


class PaddedQ:
    """``[[Q, 0], [0, 0]]``: an n×n operator followed by ``extra`` variables with no curvature.

    The Hessian of the slack form (:meth:`qpcore.QP.slack_form`): the slacks s = Cx enter the
    objective with zero rows and columns. Rows and blocks are the base's, zero-padded.
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.BLOCK, Capability.CROSS})

    def __init__(self, base: QOperator, extra: int) -> None:
        self.base, self.extra = base, int(extra)
        self.n0 = int(base.shape[0])
        self.stats: OperatorStats = base.stats       # the base's counters

    @property
    def shape(self) -> tuple[int, int]:
        """(n + extra, n + extra)."""
        n = self.n0 + self.extra
        return (n, n)

    @property
    def row_dtype(self) -> np.dtype[Any]:
        """The base's row dtype."""
        return self.base.row_dtype

    @property
    def row_eps(self) -> float:
        """The base's row precision."""
        return self.base.row_eps

    @property
    def psd(self) -> bool | None:
        """The base's: zero rows and columns change no eigenvalue's sign."""
        return self.base.psd

    def diag(self) -> FloatArray:
        """The diagonal, zeros on the padding."""
        return np.concatenate([self.base.diag(), np.zeros(self.extra)])

    def matvec(self, x: FloatArray) -> FloatArray:
        """Q x."""
        return np.concatenate([self.base.matvec(x[:self.n0]), np.zeros(self.extra)])

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> FloatArray:
        """The block Q[idx][:, cols] (all columns when ``cols`` is None)."""
        i = np.asarray(idx, dtype=np.intp)
        j = np.arange(self.shape[0]) if cols is None else np.asarray(cols, dtype=np.intp)
        out = np.zeros((i.size, j.size))
        ri, rj = i < self.n0, j < self.n0
        if ri.any() and rj.any():
            out[np.ix_(ri, rj)] = cross_block(self.base, i[ri], j[rj])
        return out

    def rows(self, idx: ArrayLike) -> FloatArray:
        """Q[idx, :]."""
        return self.cross(idx)

    def row(self, i: int) -> FloatArray:
        """Q[i, :]."""
        out: FloatArray = self.cross(np.array([i]))[0]
        return out

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx]."""
        i = np.asarray(idx, dtype=np.intp)
        out = np.zeros((i.size, i.size))
        inside = i < self.n0
        if inside.any():
            out[np.ix_(inside, inside)] = principal_block(self.base, i[inside])
        return out


def matrix_of(Q: QOperator) -> Any:
    """Q as a matrix for methods that factor it: the scipy.sparse matrix of a :class:`SparseQ`, the
    array of a ``DenseQ``, else the dense principal block over all variables.

    Parameters
    ----------
    Q : QOperator
        The operator.

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix
    """
    from qpcore.backends.operators import DenseQ

    if isinstance(Q, SparseQ):
        return Q.M
    if isinstance(Q, DenseQ):
        return Q.M
    if isinstance(Q, PaddedQ):
        import scipy.sparse as sp

        base = matrix_of(Q.base)
        if sp.issparse(base):
            return sp.block_diag([base, sp.csr_matrix((Q.extra, Q.extra))], format="csr")
        out = np.zeros(Q.shape)
        out[:Q.n0, :Q.n0] = base
        return out
    return principal_block(Q, np.arange(Q.shape[0]))
