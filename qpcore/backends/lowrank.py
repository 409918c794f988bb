"""Q = diag(d) + H Hᵀ, never formed, and the pieces of Sherman–Morrison–Woodbury solves of its blocks.

The ASVM dual (Mangasarian & Musicant) has Q = I/ν + HHᵀ with H = D[A, −e]: m rows, k = n + 1
columns, m ≫ k. A product with Q costs two passes over H, and any principal block B is solved
through the k×k system

    (D_B + H_B H_Bᵀ)⁻¹ = D_B⁻¹ − D_B⁻¹ H_B (I + H_Bᵀ D_B⁻¹ H_B)⁻¹ H_Bᵀ D_B⁻¹,

so nothing of size m×m (or |B|×|B|) ever exists. ``I + H_Bᵀ D_B⁻¹ H_B`` is at least the identity,
which is why its Cholesky factor is well posed even for singular H (duplicate or constant columns).
H is stored implicitly as ``diag(s)·[F, β·e]``: the data F (dense or CSR), an optional row scale s
(the labels) and an optional constant column β (the bias), so the ASVM builder never copies the data.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.gram import as_float_matrix
from qpcore.backends.capabilities import Capability, OperatorStats
from qpcore.core.problem import ProblemError
from qpcore.backends.rowspace import LocalRows

try:        # scipy offers no public product over a subset of CSR rows; its kernels take any row pointer
    from scipy.sparse._sparsetools import csc_matvec as _csc_matvec
    from scipy.sparse._sparsetools import csr_matvec as _csr_matvec
except ImportError:     # pragma: no cover - a scipy without them: the rows are gathered (F[idx])
    _csc_matvec = _csr_matvec = None

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["DiagPlusLowRankQ", "SmallFactor", "factor_identity_plus"]

_BLOCK_BYTES = 8 << 20   # row blocks of at most 8 MB keep temporaries small next to the data



def _interleaved(indptr: Any, idx: NDArray[np.intp]) -> Any:
    """A row pointer that walks the rows ``idx`` of a CSR matrix in place: rows idx[n−1], …, idx[0] at
    the even positions, each followed by an empty one (a later row's end lies at or after an earlier
    row's start, so the odd spans run backwards and are empty)."""
    r = idx[::-1]
    ap = np.empty(2 * r.size + 1, dtype=indptr.dtype)
    ap[0:-1:2] = indptr[r]
    ap[1::2] = indptr[r + 1]
    ap[-1] = 0
    return ap


def _in_place(F: Any) -> bool:
    """Whether F's rows can be multiplied in place (CSR with matching index types, scipy's kernels)."""
    return (_csr_matvec is not None and sp.issparse(F) and F.format == "csr"
            and F.indices.dtype == F.indptr.dtype)


class DiagPlusLowRankQ:
    """Q = diag(d) + H Hᵀ with H = diag(s)·[F, β·e], an m×m operator that stores only d, F, s, β.

    Parameters
    ----------
    d : float or array_like
        The diagonal, a scalar or shape (m,); finite and ≥ 0 (> 0 where a block is factored).
    F : ndarray or scipy.sparse matrix
        The m×p data part of H, finite and real. A C-contiguous float64 array is used as is.
    row_scale : array_like, optional
        s, shape (m,): H's rows are scaled by it (the ±1 labels of an SVM). Default: ones.
    bias : float, optional
        β: when given, H gets a last column β·e (the ASVM's −e), so k = p + 1.

    Raises
    ------
    ProblemError
        On NaN/inf, negative d, or shapes that do not agree.
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({
        Capability.LOWRANK, Capability.SUBSET, Capability.BLOCK, Capability.CROSS})
    row_dtype: ClassVar[np.dtype[Any]] = np.dtype(np.float64)
    row_eps: ClassVar[float] = float(np.finfo(np.float64).eps)

    def __init__(self, d: float | ArrayLike, F: Any, *, row_scale: ArrayLike | None = None,
                 bias: float | None = None) -> None:
        if isinstance(F, np.ndarray) and F.dtype == np.float64 and F.ndim == 2 and F.flags.c_contiguous:
            if not np.isfinite(F).all():
                raise ProblemError("H: contains NaN or inf; all entries must be finite")
            self.F: Any = F
        else:
            self.F = as_float_matrix(F, "H")
        self._sparse = sp.issparse(self.F)
        m, p = (int(s) for s in self.F.shape)
        self._m, self._p = m, p
        d_arr = np.asarray(d, dtype=np.float64)
        if d_arr.ndim == 0:
            d_arr = np.full(m, float(d_arr))
        if d_arr.shape != (m,):
            raise ProblemError(f"d: shape mismatch, expected a scalar or ({m},), got {d_arr.shape}")
        if not np.isfinite(d_arr).all():
            raise ProblemError("d: contains NaN or inf; the diagonal must be finite")
        if (d_arr < 0).any():
            raise ProblemError("d: has negative entries; diag(d) + HHᵀ must be positive semidefinite")
        self.d: FloatArray = d_arr
        if row_scale is None:
            self.s: FloatArray | None = None
        else:
            s = np.asarray(row_scale, dtype=np.float64)
            if s.shape != (m,):
                raise ProblemError(f"row_scale: shape mismatch, expected ({m},), got {s.shape}")
            if not np.isfinite(s).all():
                raise ProblemError("row_scale: contains NaN or inf")
            self.s = s
        if bias is not None and not np.isfinite(bias):
            raise ProblemError(f"bias: must be finite, got {bias}")
        self.bias: float | None = None if bias is None else float(bias)
        self.k = p + (self.bias is not None)
        self.stats = OperatorStats()
        self._block_rows = max(256, _BLOCK_BYTES // (8 * max(1, self.k)))

    def row_space(self) -> LocalRows:
        """The rows as one block, for methods written over :class:`qpcore.backends.rowspace.Rows`."""
        return LocalRows(self)

    # ------------------------------------------------------------------ QOperator
    @property
    def psd(self) -> bool | None:
        """True when every d_i ≥ 0 (then diag(d) + HHᵀ is PSD); None otherwise (not known)."""
        return True if bool((self.d >= 0).all()) else None

    @property
    def shape(self) -> tuple[int, int]:
        """(m, m)."""
        return (self._m, self._m)

    def diag(self) -> FloatArray:
        """Q_ii = d_i + s_i² (‖F_i‖² + β²)."""
        if self._sparse:
            F = self.F
            sq = np.asarray(F.multiply(F).sum(axis=1)).ravel()
        else:
            sq = np.einsum("ij,ij->i", self.F, self.F)
        if self.bias is not None:
            sq = sq + self.bias ** 2
        if self.s is not None:
            sq = sq * self.s ** 2
        out: FloatArray = self.d + sq
        return out

    def rmatvec_lowrank(self, u: FloatArray) -> FloatArray:
        """Hᵀu, a k-vector (one pass over F)."""
        v = u if self.s is None else u * self.s
        if _in_place(self.F):
            # CSR F read as the CSC matrix Fᵀ by scipy's kernel: no Fᵀ object and no dispatch
            # per call (a cutting-plane iteration makes two or three such products)
            head = np.zeros(self._p)
            _csc_matvec(self._p, self._m, self.F.indptr, self.F.indices, self.F.data,
                        np.ascontiguousarray(v, dtype=np.float64), head)
        else:
            head = np.asarray(self.F.T @ v if self._sparse else v @ self.F, dtype=np.float64)
        if self.bias is None:
            return head
        return np.concatenate((head, [self.bias * float(v.sum())]))

    def matvec_lowrank(self, z: FloatArray) -> FloatArray:
        """H z, an m-vector (one pass over F)."""
        z = np.asarray(z, dtype=np.float64)
        if _in_place(self.F):
            out = np.zeros(self._m)
            _csr_matvec(self._m, self._p, self.F.indptr, self.F.indices, self.F.data,
                        np.ascontiguousarray(z[:self._p]), out)
        else:
            out = np.asarray(self.F @ z[:self._p], dtype=np.float64)
        if self.bias is not None:
            out += self.bias * z[self._p]
        if self.s is not None:
            out *= self.s
        return out

    def matvec(self, x: FloatArray) -> FloatArray:
        """Q x = d∘x + H(Hᵀx): two passes over F, no m×m matrix."""
        x = np.asarray(x, dtype=np.float64)
        out = self.matvec_lowrank(self.rmatvec_lowrank(x))
        out += self.d * x
        return out

    def subset(self, idx: ArrayLike) -> DiagPlusLowRankQ:
        """The operator of the rows ``idx`` alone: diag(d_idx) + H_idx H_idxᵀ, its data copied once.

        For methods that pass over a small active part of the data many times (the active-set
        cutting plane): products with the copy touch only those rows.
        """
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        F = self.F[i]
        if not self._sparse:
            F = np.ascontiguousarray(F)
        out = DiagPlusLowRankQ.__new__(DiagPlusLowRankQ)
        out.F, out._sparse = F, self._sparse
        out._m, out._p = int(i.size), self._p
        out.d = self.d[i]
        out.s = None if self.s is None else self.s[i]
        out.bias, out.k = self.bias, self.k
        out.stats = OperatorStats()
        out._block_rows = self._block_rows
        return out

    def matvec_rows(self, idx: ArrayLike, w: ArrayLike) -> FloatArray:
        """H[idx] w (an |idx|-vector): one pass over those rows, read in place for CSR data (no copy),
        else gathered at most 8 MB at a time.

        Costs |idx|·k: for methods that pass over a changing small part of the data (the active-set
        cutting plane's active rows).
        """
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        wv = np.ascontiguousarray(w, dtype=np.float64)
        if _in_place(self.F):
            y = np.zeros(2 * i.size)
            _csr_matvec(2 * i.size, self._p, _interleaved(self.F.indptr, i), self.F.indices, self.F.data,
                        wv[:self._p], y)
            out: FloatArray = y[-2::-2].copy()
            if self.bias is not None:
                out += self.bias * wv[self._p]
        else:
            out = np.empty(i.size)
            for a in range(0, i.size, self._block_rows):
                out[a:a + self._block_rows] = self.lowrank_rows(i[a:a + self._block_rows]) @ wv
            return out
        if self.s is not None:
            out *= self.s[i]
        return out

    def rmatvec_rows(self, idx: ArrayLike, v: ArrayLike) -> FloatArray:
        """H[idx]ᵀ v = Σ_j v_j h_idx_j (k-vector): the rows read in place for CSR data (as the columns
        of a CSC Hᵀ, no copy), else gathered at most 8 MB at a time.

        Costs |idx|·k, so a few changed rows are cheap; many rows never materialize at once.
        """
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        vals = np.atleast_1d(np.asarray(v, dtype=np.float64))
        if _in_place(self.F):
            if self.s is not None:
                vals = vals * self.s[i]
            x = np.zeros(2 * i.size)
            x[-2::-2] = vals
            out = np.zeros(self.k)
            _csc_matvec(self._p, 2 * i.size, _interleaved(self.F.indptr, i), self.F.indices, self.F.data, x,
                        out[:self._p])
            if self.bias is not None:
                out[self._p] = self.bias * float(vals.sum())
            return out
        out = np.zeros(self.k)
        for a in range(0, i.size, self._block_rows):
            out += vals[a:a + self._block_rows] @ self.lowrank_rows(i[a:a + self._block_rows])
        return out

    def lowrank_rows(self, idx: ArrayLike) -> FloatArray:
        """The rows H[idx, :] as a dense |idx|×k array."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        out = np.empty((i.size, self.k))
        Fi = self.F[i]
        out[:, :self._p] = Fi.toarray() if self._sparse else Fi
        if self.bias is not None:
            out[:, self._p] = self.bias
        if self.s is not None:
            out *= self.s[i, None]
        return out

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> FloatArray:
        """The block Q[idx][:, cols] (all columns when ``cols`` is None): |idx|·|cols|·k work."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        j = np.arange(self._m) if cols is None else np.atleast_1d(np.asarray(cols, dtype=np.intp))
        self.stats.rows_computed += int(i.size)
        Hi = self.lowrank_rows(i)
        out = np.empty((i.size, j.size))
        step = max(1, self._block_rows)
        for a in range(0, j.size, step):
            jb = j[a:a + step]
            out[:, a:a + jb.size] = Hi @ self.lowrank_rows(jb).T
        # the diagonal part lands wherever a row index meets the same column index
        hit = np.nonzero(i[:, None] == j[None, :])
        out[hit] += self.d[i[hit[0]]]
        return out

    def rows(self, idx: ArrayLike) -> FloatArray:
        """Q[idx, :] on demand (|idx|·m·k work; nothing is cached)."""
        return self.cross(idx)

    def row(self, i: int) -> FloatArray:
        """Q[i, :]."""
        out: FloatArray = self.cross([i])[0]
        return out

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx] = diag(d_idx) + H_idx H_idxᵀ."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        Hi = self.lowrank_rows(i)
        out: FloatArray = Hi @ Hi.T
        hit = np.nonzero(i[:, None] == i[None, :])   # the diagonal, and repeated indices
        out[hit] += self.d[i[hit[0]]]
        return out

    # ------------------------------------------------------------------ SMW pieces
    def weighted_gram(self, idx: IndexArray | None, weight: FloatArray,
                      rhs: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """G = Σ_i w_i h_i h_iᵀ and t = Σ_i w_i r_i h_i over the rows idx (all rows when None).

        Accumulated over row blocks of at most 8 MB, so the extra memory is bounded whatever m
        is; each block is one symmetric rank-b update (BLAS syrk through ``Y.T @ Y``).

        Parameters
        ----------
        idx : ndarray of int or None
            The rows.
        weight : ndarray
            w, full length m, ≥ 0.
        rhs : ndarray, optional
            r, full length m; t is zeros when omitted.

        Returns
        -------
        (G, t)
            The k×k matrix and the k-vector.
        """
        k, p = self.k, self._p
        G = np.zeros((k, k))
        t = np.zeros(k)
        total = self._m if idx is None else int(idx.size)
        step = self._block_rows
        buf: FloatArray | None = None
        for a in range(0, total, step):
            b = min(total, a + step)
            rows: Any = slice(a, b) if idx is None else idx[a:b]
            sw = np.sqrt(weight[rows])
            coef = sw if self.s is None else sw * np.abs(self.s[rows])
            rr = None
            if rhs is not None:
                rr = rhs[rows] * sw if self.s is None else rhs[rows] * sw * np.sign(self.s[rows])
            if self._sparse:
                Fs = sp.diags(coef) @ self.F[rows]
                G[:p, :p] += (Fs.T @ Fs).toarray()
                if self.bias is not None:
                    bc = self.bias * coef
                    col = np.asarray(Fs.T @ bc).ravel()
                    G[:p, p] += col
                    G[p, :p] += col
                    G[p, p] += float(bc @ bc)
                if rr is not None:
                    t[:p] += np.asarray(Fs.T @ rr).ravel()
                    if self.bias is not None:
                        t[p] += float(self.bias * coef @ rr)
                continue
            if buf is None:
                # one buffer for every block of this call: a fresh one per block page-faults
                # where the allocator returns memory eagerly (Dask workers trim at 64 KB)
                buf = np.empty((min(step, total), k))
            Y = buf[:b - a]
            np.multiply(self.F[rows], coef[:, None], out=Y[:, :p])
            if self.bias is not None:
                Y[:, p] = self.bias * coef
            G += Y.T @ Y
            if rr is not None:
                t += rr @ Y
        return G, t


class SmallFactor:
    """A factorization of the k×k SMW matrix M = I + G (G ⪰ 0): its Cholesky factor, or a symmetric
    eigendecomposition with the eigenvalues floored at 1 (the bound M ⪰ I holds exactly, so the
    floor only removes rounding). Built by :func:`factor_identity_plus`.

    Attributes
    ----------
    chol : tuple or None
        ``scipy.linalg.cho_factor``'s (lower factor, True), or None for the fallback.
    eig : tuple of ndarray or None
        (floored eigenvalues, eigenvectors) of the fallback, or None.
    """

    __slots__ = ("chol", "eig")

    def __init__(self, chol: Any = None, eig: tuple[FloatArray, FloatArray] | None = None) -> None:
        self.chol = chol
        self.eig = eig

    def solve(self, t: FloatArray) -> FloatArray:
        """M⁻¹ t."""
        if self.eig is not None:
            lam, V = self.eig
            out: FloatArray = V @ ((V.T @ t) / lam)
            return out
        return np.asarray(sla.cho_solve(self.chol, t, check_finite=False), dtype=np.float64)


def factor_identity_plus(G: FloatArray, *, fallback: bool = True) -> SmallFactor | None:
    """Factor M = I + G for a Gram matrix G ⪰ 0: Cholesky, else (when ``fallback``) the floored
    eigendecomposition, else None.

    The one home of the SMW system's factorization (ASVM, ``qpcore_strategies.asvm``, in process and on
    a cluster, keeps G = H_Bᵀ D_B⁻¹ H_B from :meth:`DiagPlusLowRankQ.weighted_gram` by rank
    updates and factors I + G here). A caller whose G came from rank updates passes
    ``fallback=False`` first, so that a failure (rounding in an extremely ill-conditioned H) is
    answered by rebuilding G from the rows, and only a rebuilt G that still fails falls back.

    Parameters
    ----------
    G : ndarray
        k×k, symmetric positive semidefinite up to rounding.
    fallback : bool
        Whether to fall back to the eigendecomposition when the Cholesky factorization fails or
        is not finite.

    Returns
    -------
    SmallFactor or None
        None only when the Cholesky factorization failed and ``fallback`` is False.
    """
    M = G + np.eye(G.shape[0])
    try:
        chol = sla.cho_factor(M, lower=True, check_finite=False)
        if np.isfinite(chol[0]).all():
            return SmallFactor(chol=chol)
    except np.linalg.LinAlgError:
        pass
    if not fallback:
        return None
    lam, V = np.linalg.eigh(M)
    return SmallFactor(eig=(np.maximum(lam, 1.0), V))
