"""The interior point method's linear algebra: the quasi-definite KKT matrix, factored.

The slacks of the rows and the bound multipliers are eliminated analytically: the barrier terms
of s = C x enter as CᵀWC with W = 1/(Σ_s⁻¹ + δ), so each iteration of
:class:`qpcore_strategies.ipm_core.IPMCore` factors the quasi-definite matrix
[[Q + Σ_x + CᵀWC + ρI, Aᵀ], [A, −δI]] (ρ, δ small primal and dual regularizations: it is then
factorizable even for rank-deficient A or free variables in a singular Q). The matrix is scaled
to a unit diagonal where its diagonal is large (the barrier terms span twenty decades near the
end) before it is factored.

- :class:`DenseKKT`: LAPACK's Bunch–Kaufman ``dsytrf``.
- :class:`SparseKKT`: the pattern is built once, with a fill-reducing order (SuperLU's COLAMD at
  the first factorization) applied to it once, and each iteration writes the values into it (one
  ``bincount``) and has SuperLU factor in that order, with threshold pivoting that keeps the
  diagonal nearly always.
- :func:`choose_kkt`: ``auto`` picks dense for small or dense KKT matrices (from nonzero counts of
  the patterns, CᵀC's estimated from its row pairs before it is formed); the engine falls back to
  dense when the first sparse factor fills beyond 30% of the matrix's entries.

Each solve is refined by the engine on the *unregularized* Newton system, so the regularization
does not perturb the steps.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.linalg import lapack
from scipy.sparse.linalg import splu

from qpcore_strategies.ipm_presolve import _dense_if_small, _is_sparse, _nnz

__all__ = ["DenseKKT", "SparseKKT", "choose_kkt"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


# --------------------------------------------------------------------------------------------
# The quasi-definite KKT matrix [[H + CᵀWC, Aᵀ], [A, −δI]]
# --------------------------------------------------------------------------------------------

class DenseKKT:
    """Dense: LAPACK's Bunch–Kaufman factorization of the lower triangle.

    Parameters
    ----------
    Q, A, C : matrix
        The scaled, presolved data (C's rows enter as CᵀWC).
    """

    kind = "dense"

    def __init__(self, Q: Any, A: Any, C: Any) -> None:
        n, m = Q.shape[0], A.shape[0]
        self.n, self.N = n, n + m
        Qd = Q.toarray() if _is_sparse(Q) else np.asarray(Q)
        Ad = A.toarray() if _is_sparse(A) else np.asarray(A)
        # a sparse C stays sparse: CᵀWC then costs Σ_k nnz(C_k)², not k·n²
        self.C = _dense_if_small(sp.csr_matrix(C)) if _is_sparse(C) else np.asarray(C)
        base = np.zeros((self.N, self.N), order="F")
        base[:n, :n] = Qd
        base[n:, :n] = Ad
        self.base = base
        self.diag = np.arange(self.N) * (self.N + 1)
        self.lwork = int(lapack.dsytrf_lwork(self.N, lower=1)[0]) if self.N else 1
        self.ldu: FloatArray = np.zeros((0, 0))
        self.ipiv: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.sc: FloatArray = np.ones(self.N)

    def factor(self, dx: FloatArray, wc: FloatArray, delta: float) -> bool:
        """Factor the matrix at primal terms ``dx`` (Σ_x + ρ), row weights ``wc`` (W) and dual
        regularization ``delta``; False on a zero pivot."""
        if self.N == 0:
            return True
        K = self.base.copy(order="F")
        n = self.n
        if self.C.shape[0]:
            if _is_sparse(self.C):
                K[:n, :n] += (self.C.T @ sp.diags(wc) @ self.C).toarray()
            else:
                K[:n, :n] += (self.C.T * wc) @ self.C
        flat = K.reshape(-1, order="F")
        flat[self.diag[:n]] += dx
        flat[self.diag[n:]] = -delta
        # symmetric diagonal scaling to unit diagonal where it is large: the barrier terms span
        # many decades, and Bunch–Kaufman's pivot choices are not scale invariant
        d = np.abs(flat[self.diag])
        sc = 1.0 / np.sqrt(np.maximum(d, 1.0))
        K *= sc[:, None]
        K *= sc[None, :]
        ldu, ipiv, info = lapack.dsytrf(K, lower=1, lwork=self.lwork, overwrite_a=1)
        if info != 0:
            return False
        self.ldu, self.ipiv, self.sc = ldu, ipiv, sc
        return True

    def solve(self, r: FloatArray) -> FloatArray:
        """The solution of the last factored system for the right-hand side ``r``."""
        if self.N == 0:
            return r.copy()
        x, info = lapack.dsytrs(self.ldu, self.ipiv, r * self.sc, lower=1)
        return np.asarray(x * self.sc, dtype=np.float64)

#: SuperLU's threshold for taking the diagonal pivot. A quasi-definite matrix factors with
#: diagonal pivots in any order in exact arithmetic, but with Σ spanning 1e-12..1e12 and small
#: regularizations the static order loses all accuracy (errors of 1e4 measured on QSC205); a
#: weak threshold keeps the diagonal nearly always and the fill the same.
_PIVOT = 0.01


class SparseKKT:
    """Sparse: the pattern of [[Q + CᵀC + I, Aᵀ], [A, I]] built once, symmetrically permuted
    by a fill-reducing order (SuperLU's COLAMD, computed at the first factorization), its
    values written each iteration by one ``bincount``; SuperLU then factors in that order with
    threshold pivoting that prefers the diagonal (:data:`_PIVOT`).

    Parameters
    ----------
    Q, A, C : matrix
        The scaled, presolved data (C's rows enter as CᵀWC).
    """

    kind = "sparse"

    def __init__(self, Q: Any, A: Any, C: Any) -> None:
        n, m = Q.shape[0], A.shape[0]
        self.n, self.N = n, n + m
        N = self.N
        Qc = sp.coo_matrix(Q)
        Ac = sp.coo_matrix(A)
        Ccsr = sp.csr_matrix(C)
        # entries: Q, A below and above the diagonal, the whole diagonal, and CᵀC's pairs
        rows_l = [Qc.row, n + Ac.row, Ac.col, np.arange(N)]
        cols_l = [Qc.col, Ac.col, n + Ac.row, np.arange(N)]
        vals_l = [Qc.data, Ac.data, Ac.data, np.zeros(N)]
        # CᵀWC: each row k of C contributes C_ki C_kj W_k at (i, j) for every pair of its columns
        counts = np.diff(Ccsr.indptr)
        pair_rows, pair_i, pair_j, pair_v = [], [], [], []
        for k in np.flatnonzero(counts):
            lo, hi = Ccsr.indptr[k], Ccsr.indptr[k + 1]
            idx, v = Ccsr.indices[lo:hi], Ccsr.data[lo:hi]
            ii, jj = np.meshgrid(idx, idx, indexing="ij")
            pair_i.append(ii.ravel())
            pair_j.append(jj.ravel())
            pair_v.append(np.outer(v, v).ravel())
            pair_rows.append(np.full(idx.size * idx.size, k))
        self.pair_row = np.concatenate(pair_rows) if pair_rows else np.zeros(0, dtype=np.intp)
        self.pair_v = np.concatenate(pair_v) if pair_v else np.zeros(0)
        pi = np.concatenate(pair_i) if pair_i else np.zeros(0, dtype=np.intp)
        pj = np.concatenate(pair_j) if pair_j else np.zeros(0, dtype=np.intp)
        r_all = np.concatenate([*rows_l, pi]).astype(np.int64)
        c_all = np.concatenate([*cols_l, pj]).astype(np.int64)
        key = c_all * N + r_all
        uniq, inv = np.unique(key, return_inverse=True)
        self.nnz = int(uniq.size)
        ent_r, ent_c = (uniq % N).astype(np.int32), (uniq // N).astype(np.int32)
        n_base = sum(v.size for v in vals_l)
        self.base: FloatArray = np.bincount(inv[:n_base], weights=np.concatenate(vals_l), minlength=self.nnz).astype(
            np.float64)
        self.pair_entry = inv[n_base:]
        self.diag_entry = inv[n_base - N:n_base]
        self.ent_r, self.ent_c = ent_r, ent_c
        self.order: IntArray | None = None
        self.perm_data: IntArray = np.zeros(0, dtype=np.intp)
        self.indices: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.indptr: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.lu: Any = None
        self.sc: FloatArray = np.ones(N)

    def _values(self, dx: FloatArray, wc: FloatArray, delta: float) -> FloatArray:
        vals = self.base.copy()
        if self.pair_v.size:
            vals += np.bincount(self.pair_entry, weights=self.pair_v * wc[self.pair_row], minlength=self.nnz)
        vals[self.diag_entry[:self.n]] += dx
        vals[self.diag_entry[self.n:]] = -delta
        return vals

    def _set_order(self, order: IntArray) -> None:
        """Fix the symmetric order: entry (i, j) goes to (pos[i], pos[j]) of a csc matrix."""
        N = self.N
        pos = np.empty(N, dtype=np.int64)
        pos[order] = np.arange(N)
        pr, pc = pos[self.ent_r], pos[self.ent_c]
        perm = np.lexsort((pr, pc))
        self.perm_data = perm
        self.indices = pr[perm].astype(np.int32)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(pc, minlength=N))]).astype(np.int32)
        self.order = order

    def factor(self, dx: FloatArray, wc: FloatArray, delta: float) -> bool:
        """Factor the matrix at primal terms ``dx`` (Σ_x + ρ), row weights ``wc`` (W) and dual
        regularization ``delta``; False on a zero pivot."""
        vals = self._values(dx, wc, delta)
        # the same symmetric scaling to a unit diagonal as the dense factor's
        sc = 1.0 / np.sqrt(np.maximum(np.abs(vals[self.diag_entry]), 1.0))
        vals *= sc[self.ent_r] * sc[self.ent_c]
        self.sc = sc
        try:
            if self.order is None:
                K = sp.csc_matrix((vals, (self.ent_r, self.ent_c)), shape=(self.N, self.N))
                lu = splu(K, permc_spec="COLAMD", diag_pivot_thresh=_PIVOT, options={"SymmetricMode": True})
                self._set_order(np.argsort(lu.perm_c).astype(np.intp))
            K = sp.csc_matrix((vals[self.perm_data], self.indices, self.indptr), shape=(self.N, self.N))
            self.lu = splu(K, permc_spec="NATURAL", diag_pivot_thresh=_PIVOT, options={"SymmetricMode": True})
        except RuntimeError:       # exactly singular pivot
            return False
        return True

    def fill(self) -> int:
        """Entries of the last factor's L and U."""
        return int(self.lu.nnz) if self.lu is not None else 0

    def solve(self, r: FloatArray) -> FloatArray:
        """The solution of the last factored system for the right-hand side ``r``."""
        assert self.order is not None
        out = np.empty_like(r)
        out[self.order] = self.lu.solve((r * self.sc)[self.order])
        return out * self.sc


def _pattern(M: Any) -> Any:
    """The nonzero pattern of M as a csr matrix of ones."""
    P = sp.csr_matrix(M, dtype=np.float64, copy=True)
    P.eliminate_zeros()
    P.data[:] = 1.0
    return P


def _kkt_nnz(Q: Any, A: Any, C: Any) -> int:
    """Nonzeros of [[Q + CᵀC + I, Aᵀ], [A, I]], from the patterns (no values)."""
    n, m = Q.shape[0], A.shape[0]
    H = _pattern(Q) + sp.identity(n, format="csr")
    if C.shape[0]:
        Cp = _pattern(C)
        H = H + Cp.T @ Cp
    return int(H.nnz + 2 * _pattern(A).nnz + m)


#: The dense factorization below this size (SuperLU's per-call overhead dominates there) and
#: above this density of the KKT matrix (dense BLAS then beats sparse elimination), never above
#: ``_DENSE_MAX_N`` (memory); a sparse factor that fills beyond ``_DENSE_FILL`` of the dense
#: matrix's entries (random sparsity does) is replaced by the dense one after its first use.
_DENSE_N, _DENSE_DENSITY, _DENSE_MAX_N, _DENSE_FILL = 300, 0.05, 8000, 0.3


def _row_pairs(C: Any) -> float:
    """Σ_k nnz(C_k)²: the entries CᵀC's rows contribute, an upper bound on its nonzeros."""
    if C.shape[0] == 0:
        return 0.0
    counts = np.diff(sp.csr_matrix(C).indptr) if _is_sparse(C) else np.count_nonzero(C, axis=1)
    return float(np.sum(np.asarray(counts, dtype=np.float64) ** 2))


def choose_kkt(Q: Any, A: Any, C: Any, how: str) -> DenseKKT | SparseKKT:
    """The factorization of [[Q + CᵀWC, Aᵀ], [A, −δI]] for the scaled data.

    Parameters
    ----------
    Q, A, C : matrix
        The scaled, presolved data.
    how : {"auto", "dense", "sparse"}
        The setting; ``auto`` by size and density.

    Returns
    -------
    DenseKKT or SparseKKT
    """
    N = Q.shape[0] + A.shape[0]
    if how == "dense":
        return DenseKKT(Q, A, C)
    if how == "auto" and N <= _DENSE_MAX_N:
        budget = _DENSE_DENSITY * N * N
        if N <= _DENSE_N or _nnz(Q) + 2 * _nnz(A) > budget:
            return DenseKKT(Q, A, C)
        # CᵀC's pattern is formed only where its row pairs are few; many pairs (dense rows) fill
        if _row_pairs(C) > 20 * budget or _kkt_nnz(Q, A, C) > budget:
            return DenseKKT(Q, A, C)
    return SparseKKT(sp.csr_matrix(Q), sp.csr_matrix(A), sp.csr_matrix(C))
