"""Concrete operators: a dense matrix (:class:`DenseQ`, and the PSD check it runs) and a kernel
matrix (:class:`KernelQ`).

The contract they implement (:class:`qpcore.backends.capabilities.QOperator`, the declared
:class:`qpcore.backends.capabilities.Capability` set, the helpers that read it) is in
:mod:`qpcore.backends.capabilities`; the row cache KernelQ keeps its rows in is
:class:`qpcore.backends.rowcache.RowCache`; the kernel functions it evaluates (:class:`Kernel`) are in
:mod:`qpcore.backends.kernels`, and import from here too.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.capabilities import Capability, OperatorStats
# the kernel functions moved to their own module; imported here under their old names too
from qpcore.backends.kernels import Kernel as Kernel
from qpcore.backends.kernels import KernelName as KernelName
from qpcore.backends.kernels import dot_block
from qpcore.backends.kernels import squared_norms as squared_norms
from qpcore.backends.rowcache import RowCache
from qpcore.core.validate import ProblemError, as_float_vector, as_real, field
from qpcore.linalg.threads import blas_threads

FloatArray = NDArray[np.float64]

# Kernel, KernelName and squared_norms are re-exported (the ``as`` imports above), documented where they live
__all__ = ["PSD_CHECK_MAX_N", "PSD_TOL", "DenseQ", "KernelQ", "negative_curvature", "not_psd_message", "psd_tolerance"]
IndexArray = NDArray[np.intp]


#: Largest dense Q whose positive semidefiniteness is checked on construction (a Cholesky
#: factorization, O(n³/3)); larger ones are left to the strategies' curvature tests.
PSD_CHECK_MAX_N = 4000

#: The default tolerance of the PSD check, relative to the largest eigenvalue: Q is accepted when
#: its smallest eigenvalue is at least ``−PSD_TOL · λ_max``. Data rounded to d significant digits
#: move the eigenvalues of an n×n matrix by up to about n·10^−d·max|Q_ij| (Weyl's inequality):
#: the Maros–Meszaros problem VALUES, a convex problem whose P is given to six decimals, has
#: eigenvalues down to −1.3e-5 of its largest 10.8 (a ratio of 1.2e-6). 1e-5 accepts such
#: rounding and refuses a matrix that is clearly indefinite; a caller who knows the data better
#: passes ``psd_tol`` to :class:`DenseQ` (to :class:`qpcore.QP` through a ``DenseQ``).
PSD_TOL = 1e-5


def _largest_eigen_below(M: FloatArray, steps: int = 8) -> float:
    """A lower bound on max(λ_max(M), 0): the largest of 0, the diagonal and a few power-iteration
    Rayleigh quotients (xᵀMx/xᵀx ≤ λ_max for every x), O(n²) per step."""
    n = M.shape[0]
    best = float(np.diagonal(M).max(initial=0.0))
    x: FloatArray = np.random.default_rng(0).standard_normal((n,))
    for _ in range(steps):
        y: FloatArray = M @ x
        best = max(best, float(x @ y) / float(x @ x))
        ny = float(np.linalg.norm(y))
        if not ny > 0.0 or not np.isfinite(ny):
            break
        x = y / ny
    return best


def negative_curvature(M: FloatArray, tol: float = PSD_TOL) -> tuple[float, float] | None:
    """None when the symmetric M is positive semidefinite within ``tol``, else its (smallest,
    largest) eigenvalues.

    M counts as PSD when its smallest eigenvalue is at least ``−tol · λ_max`` (never tighter than
    the rounding of an eigenvalue computation, n·eps·λ_max). The check is cheap where it
    succeeds: a Cholesky factorization of ``M + δI`` with δ = tol times a lower bound on λ_max
    (:func:`_largest_eigen_below`) exists only when λ_min ≥ −δ ≥ −tol·λ_max, so it accepts
    without an eigenvalue; only when it fails are the eigenvalues computed, and they decide.

    Parameters
    ----------
    M : ndarray
        A symmetric matrix.
    tol : float
        The tolerance relative to the largest eigenvalue (default :data:`PSD_TOL`).

    Returns
    -------
    tuple of float or None
    """
    n = M.shape[0]
    scale = float(np.abs(M).max(initial=0.0))
    if n == 0 or scale == 0.0:
        return None
    from scipy.linalg import lapack

    floor = 4.0 * n * float(np.finfo(np.float64).eps)
    rel = max(float(tol), floor)

    def shifted_cholesky(top: float) -> bool:
        # LAPACK's potrf on a shifted copy, in place (the transpose of a C-ordered copy is the same
        # symmetric matrix in Fortran order): about half the time of np.linalg.cholesky, which
        # adds an n×n identity, copies and cleans the other triangle
        shifted = np.array(M, dtype=np.float64, order="C")
        shifted.flat[:: n + 1] += rel * top
        _, info = lapack.dpotrf(shifted.T, lower=1, overwrite_a=1, clean=0)
        return bool(info == 0)

    # the diagonal bounds λ_max from below and costs nothing: a PSD matrix passes with it; the power
    # iterations' sharper bound only for a matrix within the tolerance that the first shift misses
    diagonal = float(np.diagonal(M).max(initial=0.0))
    if diagonal > 0.0 and shifted_cholesky(diagonal):
        return None
    top = _largest_eigen_below(M)
    if top > diagonal and shifted_cholesky(top):
        return None
    w = np.linalg.eigvalsh(M)
    lo, hi = float(w[0]), float(w[-1])
    return (lo, hi) if lo < -rel * max(hi, 0.0) else None


def psd_tolerance(Q: object) -> float:
    """The relative tolerance Q's PSD check used (``psd_tol`` of a :class:`DenseQ`), else
    :data:`PSD_TOL`: what a strategy's curvature test allows before it calls Q nonconvex."""
    return float(getattr(Q, "psd_tol", PSD_TOL))


def not_psd_message(lo: float, hi: float, tol: float) -> str:
    """The error for a matrix that is not PSD: how far it is (smallest and largest eigenvalue, their
    ratio, the tolerance) and, when it is near PSD, how to accept it."""
    far = f"ratio {lo / hi:.3g}" if hi > 0.0 else "no positive eigenvalue"
    msg = (f"{field('Q')}: not positive semidefinite (smallest eigenvalue {lo:.6g}, largest {hi:.6g}, {far}; the "
           f"tolerance accepts down to −{tol:g} × the largest); the problem is not convex, and a stationary "
           "point need not be a minimizer")
    if hi > 0.0 and -lo / hi < 1e-2:
        msg += (f". If Q is PSD up to the rounding of its data, DenseQ(Q, psd_tol=...) with a tolerance "
                f"above {-lo / hi:.2g} accepts it")
    return msg


def _asymmetry(M: FloatArray, rows: int = 128) -> float:
    """max |M − Mᵀ|, a block of rows at a time (half the time of one n×n temporary)."""
    worst = 0.0
    for k in range(0, M.shape[0], rows):
        d = M[k:k + rows] - M[:, k:k + rows].T
        np.abs(d, out=d)
        worst = max(worst, float(d.max(initial=0.0)))
    return worst


def _check_psd(M: FloatArray, tol: float = PSD_TOL) -> bool | None:
    """True when M is PSD within ``tol`` (:func:`negative_curvature`), None when too large to check;
    raises a ``ProblemError`` saying how far from PSD it is when it is not."""
    if M.shape[0] > PSD_CHECK_MAX_N:
        return None
    with blas_threads():       # a factorization of Q: BLAS threads sized to the free cores, as in solve
        bad = negative_curvature(M, tol)
    if bad is not None:
        raise ProblemError(not_psd_message(bad[0], bad[1], tol))
    return True


class DenseQ:
    """Q held as a dense symmetric numpy matrix.

    Parameters
    ----------
    M : array_like
        Square, finite, symmetric (to 1e-10 relative) real matrix.
    psd_tol : float
        The PSD check's tolerance relative to the largest eigenvalue (default :data:`PSD_TOL`,
        1e-5): M is refused when its smallest eigenvalue is below ``−psd_tol · λ_max``, with an
        error that says how far it is. Raise it for data given to few digits; lower it to refuse
        smaller negative eigenvalues (never below rounding). Matrices beyond
        :data:`PSD_CHECK_MAX_N` are not checked.
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.BLOCK, Capability.CROSS})

    def __init__(self, M: ArrayLike, psd_tol: float = PSD_TOL) -> None:
        psd_tol = as_real(psd_tol, "psd_tol", low=0.0)
        Q = field("Q")
        try:
            arr = np.asarray(M)
        except (ValueError, TypeError) as e:
            raise ProblemError(f"{Q}: not a regular numeric matrix ({e})") from None
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise ProblemError(f"{Q}: dtype {arr.dtype} is not real numeric; pass a float matrix")
        if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
            raise ProblemError(f"{Q}: not square, shape {arr.shape}; Q must be n×n")
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        if not np.isfinite(arr).all():
            raise ProblemError(f"{Q}: contains NaN or inf; all entries must be finite")
        scale = max(1.0, float(np.abs(arr).max(initial=0.0)))
        if arr.size and _asymmetry(arr) > 1e-10 * scale:
            raise ProblemError(f"{Q}: not symmetric; pass (Q + Q.T) / 2, which defines the same objective")
        self.psd_tol = psd_tol
        self.psd: bool | None = _check_psd(arr, self.psd_tol)
        self.M = arr
        self.M.flags.writeable = False
        self.stats = OperatorStats()

    @classmethod
    def trusted(cls, M: FloatArray) -> DenseQ:
        """Wrap a matrix the caller built symmetric, finite, float64 and C-contiguous, unchecked.

        For inner loops (decomposition's subproblems) where the O(q²) checks would be paid
        every round on a matrix that is symmetric by construction.
        """
        obj = cls.__new__(cls)
        obj.M = M
        obj.psd = None
        obj.psd_tol = PSD_TOL
        obj.stats = OperatorStats()
        return obj

    @property
    def shape(self) -> tuple[int, int]:
        """(n, n)."""
        return (int(self.M.shape[0]), int(self.M.shape[1]))

    @property
    def row_dtype(self) -> np.dtype[Any]:
        """float64: rows are views of the matrix."""
        return np.dtype(np.float64)

    @property
    def row_eps(self) -> float:
        """float64's eps: the entries are the matrix's own."""
        return float(np.finfo(np.float64).eps)

    def diag(self) -> FloatArray:
        """The diagonal of Q."""
        return np.diag(self.M).copy()

    def matvec(self, x: FloatArray) -> FloatArray:
        """Q x."""
        return self.M @ x

    def rows(self, idx: ArrayLike) -> FloatArray:
        """Q[idx, :]."""
        i = np.asarray(idx, dtype=np.intp)
        self.stats.cache_hits += int(i.size)
        out: FloatArray = self.M[i]
        return out

    def row(self, i: int) -> FloatArray:
        """Q[i, :] (a view)."""
        self.stats.cache_hits += 1
        out: FloatArray = self.M[i]
        return out

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx]."""
        i = np.asarray(idx, dtype=np.intp)
        out: FloatArray = self.M[np.ix_(i, i)]
        return out

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> FloatArray:
        """The block Q[idx][:, cols] (all columns when ``cols`` is None)."""
        i = np.asarray(idx, dtype=np.intp)
        self.stats.cache_hits += int(i.size)
        if cols is None:
            rows: FloatArray = self.M[i]
            return rows
        out: FloatArray = self.M[np.ix_(i, np.asarray(cols, dtype=np.intp))]
        return out



class KernelQ:
    """Q_ij = s_i s_j K(x_i, x_j) over dense or CSR data, rows computed in BLAS blocks and cached.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix
        Data, one point per row; for ``kernel.name == "precomputed"`` the n×n Gram matrix.
    kernel : Kernel
        The kernel.
    scale : array_like, optional
        The vector s (the labels y for an SVM dual); ones when omitted.
    cache_bytes : int
        Byte budget of the LRU row cache (at least one row is always kept).
    dtype : numpy dtype
        Storage type of cached rows: float64 (default) or float32 to fit twice the rows.
    dense_threshold : float
        A sparse X denser than this fraction (and small enough) is densified once so that
        row blocks go through BLAS GEMM.
    compute_dtype : numpy dtype
        float32 computes blocks of cached RBF rows (the GEMM, the exp, the scaling) in single
        precision, about twice as fast; only with ``dtype=float32``, and only for blocks
        (single rows and ``matvec`` stay float64). The entries' error bound is ``row_eps``.
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({
        Capability.ROW_CACHE, Capability.PREFETCH, Capability.BLOCK, Capability.CROSS, Capability.CROSS_INTO,
        Capability.BUDGET})

    def __init__(self, X: Any, kernel: Kernel, scale: ArrayLike | None = None, *, cache_bytes: int = 200 << 20,
                 dtype: Any = np.float64, dense_threshold: float = 0.05, compute_dtype: Any = np.float64) -> None:
        data = field("X")
        cache_bytes = int(as_real(cache_bytes, "cache_bytes", low=0.0))
        dense_threshold = as_real(dense_threshold, "dense_threshold", low=0.0, allow_inf=True)
        self._Xs: Any = None  # CSR copy: a few rows are cheaper as sparse matvecs than as GEMV
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64)
            if not np.isfinite(X.data).all():
                raise ProblemError(f"{data}: contains NaN or inf; all entries must be finite")
            density = X.nnz / max(1, X.shape[0] * X.shape[1])
            if density >= dense_threshold and X.shape[0] * X.shape[1] * 8 <= 2 << 30:
                self._Xs = X
                X = X.toarray()
        else:
            X = np.asarray(X)
            if X.dtype == object or not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)):
                raise ProblemError(f"{data}: dtype {X.dtype} is not real numeric")
            X = np.ascontiguousarray(X, dtype=np.float64)
            if X.ndim != 2:
                raise ProblemError(f"{data}: expected a 2-D array, got shape {X.shape}")
            if not np.isfinite(X).all():
                raise ProblemError(f"{data}: contains NaN or inf; all entries must be finite")
        if sp.issparse(X):
            self._Xs = X
        n = int(X.shape[0])
        if kernel.name == "precomputed":
            if X.shape[0] != X.shape[1]:
                raise ProblemError(f"{data}: a precomputed kernel must be square n×n, got {X.shape}")
            Xd = X.toarray() if sp.issparse(X) else X
            if float(np.abs(Xd - Xd.T).max(initial=0.0)) > 1e-10 * max(1.0, float(np.abs(Xd).max(initial=0.0))):
                raise ProblemError(f"{data}: a precomputed kernel must be symmetric; pass (K + K.T) / 2")
        s = np.ones(n) if scale is None else as_float_vector(scale, "scale", n)
        self.X = X
        self.kernel = kernel
        self.s = s
        self.dtype: np.dtype[Any] = np.dtype(dtype)
        self._n = n
        self.cache_bytes = int(cache_bytes)
        self.stats = OperatorStats()
        self._rows = RowCache(self.cache_bytes, n, self.dtype, n, self.stats)
        self._sq = squared_norms(X) if kernel.name == "rbf" else None
        self._aug: tuple[FloatArray, FloatArray] | None = None
        if kernel.name == "rbf" and not sp.issparse(X):
            # one GEMM gives the exponent: [√(2γ)x_i, −γ‖x_i‖², 1]·[√(2γ)x_j, 1, −γ‖x_j‖²]
            # = −γ‖x_i − x_j‖², saving three passes over every block of rows
            assert self._sq is not None
            r2g, g = np.sqrt(2.0 * kernel.gamma), kernel.gamma
            one = np.ones((n, 1))
            self._aug = (np.hstack([r2g * X, -g * self._sq[:, None], one]),
                         np.hstack([r2g * X, one, -g * self._sq[:, None]]))
        self._aug_s: Any = None
        if kernel.name == "rbf" and self._Xs is not None:
            # the same augmentation for single rows by sparse matvec
            assert self._sq is not None
            r2g, g = np.sqrt(2.0 * kernel.gamma), kernel.gamma
            self._aug_s = sp.csr_matrix(sp.hstack([r2g * self._Xs, np.ones((n, 1)), -g * self._sq[:, None]],
                                                  format="csr"))
        self._s_signed = (s, -s)
        self._unit_scale = bool(np.all(np.abs(s) == 1.0))
        # single-precision blocks: the exponent 2γx·y − γ‖x‖² − γ‖y‖² loses about
        # eps32·4γ·max‖x‖² to cancellation (measured: 1.7 eps32 on Adult, 11.5 on ijcnn1)
        self._aug32: tuple[NDArray[np.float32], NDArray[np.float32]] | None = None
        self.row_eps = float(np.finfo(self.dtype).eps) if self.dtype.kind == "f" else 0.0
        if np.dtype(compute_dtype) == np.float32 and self.dtype == np.float32 and self._aug is not None:
            assert self._sq is not None
            # the column factor is kept only transposed (k × n, C order): SGEMM against it runs
            # about 30% faster than against the transposed view of the n × k array
            self._aug32T = np.ascontiguousarray(self._aug[1].T, dtype=np.float32)
            self._aug32 = (self._aug[0].astype(np.float32), self._aug32T)
            self._s32 = s.astype(np.float32)
            self.row_eps = float(np.finfo(np.float32).eps) * (1.0 + 4.0 * kernel.gamma * float(self._sq.max(initial=0.0)))
        # integer data (counts, one-hot and binary features) with |x_i·x_j| < 2²⁴: every
        # inner product is an integer that a float32 GEMM forms exactly, at half the cost of a
        # float64 one, so exact float64 kernel values (matvec) come from a float32 product
        self._X32: NDArray[np.float32] | None = None
        self._uniq: tuple[IndexArray, IndexArray] | None = None
        if kernel.name == "rbf" and not sp.issparse(X) and X.size:
            absmax = float(np.abs(X).max(initial=0.0))
            l1max = float(np.abs(X).sum(axis=1).max(initial=0.0))
            if absmax * l1max < 2.0 ** 24 and bool(np.all(X == np.round(X))):
                self._X32 = X.astype(np.float32)
        # one row: a dense GEMV (BLAS, threaded) beats a sparse matvec unless X is quite sparse
        nnz_row = (self._Xs.nnz / max(1, n)) if self._Xs is not None else float(X.shape[1])
        self._one_dense = self._aug is not None and X.shape[1] + 2 <= 4 * (nnz_row + 2)
        self.gemm_min_rows = 32
        self._cols_key: tuple[IndexArray, NDArray[np.float32], NDArray[np.float32]] | None = None

    @property
    def footprint(self) -> int:
        """Bytes held by the operator's own arrays (the data, its augmented and float32 copies,
        norms and scales), the kernel-row cache aside: a strategy with its own row buffer
        charges them to the same ``cache_bytes`` budget, so the whole run stays within it."""
        parts: list[Any] = [self.X, self._Xs, self._aug_s, self._sq, self.s, self._X32, self._uniq,
                            self._aug, self._aug32]
        total = 0
        for p in parts:
            for a in (p if isinstance(p, tuple) else (p,)):
                if a is None:
                    continue
                if sp.issparse(a):
                    total += int(a.data.nbytes + a.indices.nbytes + a.indptr.nbytes)
                else:
                    total += int(np.asarray(a).nbytes)
        return total

    @property
    def psd(self) -> bool | None:
        """Whether Q = diag(s) K diag(s) is known PSD (from the kernel; None: unknown)."""
        return self.kernel.psd

    @property
    def row_dtype(self) -> np.dtype[Any]:
        """The storage type of rows (``dtype``)."""
        return self.dtype

    @property
    def max_rows(self) -> int:
        """Rows the cache holds at most (the budget over one row's bytes, at most n)."""
        return self._rows.slots

    @property
    def shape(self) -> tuple[int, int]:
        """(n, n)."""
        return (self._n, self._n)

    def prefetch(self, idx: ArrayLike) -> int:
        """Compute the uncached rows among ``idx`` in one BLAS block and cache them.

        Returns the number of rows computed. A GEMM over many rows costs far less per row than
        one row at a time, so a strategy that can guess its next rows asks for them together.
        """
        want = [int(k) for k in np.atleast_1d(np.asarray(idx, dtype=np.intp)) if int(k) not in self._rows]
        want = list(dict.fromkeys(want))[: self.max_rows]
        if not want:
            return 0
        blk = self.compute(want).astype(self.dtype, copy=False)
        for k, r in zip(want, blk):
            self._rows.put(k, r)
        return len(want)

    def diag(self) -> FloatArray:
        """Q_ii = s_i² K(x_i, x_i), vectorized."""
        k = self.kernel
        if k.name == "precomputed":
            d = np.asarray(self.X.diagonal() if sp.issparse(self.X) else np.diag(self.X), dtype=np.float64).copy()
        elif k.name == "rbf":
            d = np.ones(self._n)
        else:
            sq = squared_norms(self.X)
            d = k.apply(sq[:, None].copy(), None, None).ravel()
        return d * self.s * self.s

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx], from the kernel on those points only."""
        i = np.asarray(idx, dtype=np.intp)
        if self.kernel.name == "precomputed":
            blk = self.X[i][:, i]
            out: FloatArray = np.array(blk.toarray() if sp.issparse(blk) else blk, dtype=np.float64)
        else:
            Xi = self.X[i]
            out = self.kernel.block(Xi, Xi)
        out *= self.s[i]
        out *= self.s[i][:, None]
        return out

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> NDArray[Any]:
        """Q[idx][:, cols] in the row dtype: cached rows gathered, the rest computed and not cached.

        Shrinking decomposition asks for its working set's rows over the active columns; the
        computed part costs |idx|·|cols| kernel entries, in float32 where ``compute_dtype`` says so.
        ``cols=None`` means all columns.
        """
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        j = None if cols is None else np.atleast_1d(np.asarray(cols, dtype=np.intp))
        c = self._rows
        hit = np.fromiter((int(k) in c for k in i), dtype=bool, count=i.size)
        nh = int(np.count_nonzero(hit))
        self.stats.cache_hits += nh
        self.stats.cache_misses += int(i.size) - nh
        if nh == 0:
            return self._cross_compute(i, j)
        out = np.empty((i.size, self._n if j is None else j.size), dtype=self.dtype)
        for pos in np.flatnonzero(hit):
            r = c.peek(int(i[pos]))
            out[pos] = r if j is None else r[j]
        miss = np.flatnonzero(~hit)
        if miss.size:
            out[miss] = self._cross_compute(i[miss], j)
        return out

    def cross_into(self, i: IndexArray, j: IndexArray | None, out: NDArray[Any]) -> bool:
        """Compute Q[i][:, j] straight into ``out`` when that path exists (float32 RBF blocks into
        a C-contiguous float32 array); False, with ``out`` untouched, otherwise."""
        if (self._aug32 is None or i.size < 2 or out.dtype != np.float32 or not out.flags.c_contiguous
                or out.shape != (i.size, self._n if j is None else j.size)):
            return False
        self.stats.rows_computed += int(i.size)
        self.stats.cache_misses += int(i.size)
        if j is None:
            self._compute32_cols(i, self._aug32T, self._s32, out=out)
            return True
        key = self._cols_key
        if key is None or key[0] is not j and not np.array_equal(key[0], j):
            self._cols_key = key = (j, self._aug32T[:, j], self._s32[j])
        self._compute32_cols(i, key[1], key[2], out=out)
        return True

    def _cross_compute(self, i: IndexArray, j: IndexArray | None) -> NDArray[Any]:
        """Q[i][:, j] computed afresh: float32 SGEMM for RBF blocks when configured, else float64."""
        if j is None:
            if self._aug32 is not None and i.size > 1:
                self.stats.rows_computed += int(i.size)
                return self._compute32_cols(i, self._aug32T, self._s32)
            return self.compute(i).astype(self.dtype, copy=False)
        self.stats.rows_computed += int(i.size)
        if self._aug32 is not None and i.size > 1:
            key = self._cols_key
            if key is None or key[0] is not j and not np.array_equal(key[0], j):
                # the active columns change only at shrink events: keep their gathered factor
                self._cols_key = key = (j, self._aug32T[:, j], self._s32[j])
            return self._compute32_cols(i, key[1], key[2])
        if self.kernel.name == "precomputed":
            blk = self.X[i][:, j]
            out = np.array(blk.toarray() if sp.issparse(blk) else blk, dtype=np.float64)
        elif self._aug is not None:
            out = self._aug[0][i] @ self._aug[1][j].T
            np.minimum(out, 0.0, out=out)
            np.exp(out, out=out)
        else:
            out = dot_block(self.X[i], self.X[j])
            sq = self._sq
            out = self.kernel.apply(out, None if sq is None else sq[i], None if sq is None else sq[j])
        out *= self.s[j]
        out *= self.s[i][:, None]
        return out.astype(self.dtype, copy=False)

    def _compute32_cols(self, i: IndexArray, aug_cols: NDArray[np.float32], s_cols: NDArray[np.float32],
                        out: NDArray[np.float32] | None = None) -> NDArray[np.float32]:
        assert self._aug32 is not None
        out32: NDArray[np.float32] = np.matmul(self._aug32[0][i], aug_cols, out=out)
        # no clamp at 0 here: an exponent rounded above 0 gives exp ≤ 1 + a few eps32, inside
        # the entries' error bound row_eps, and the pass would cost as much as the exp
        np.exp(out32, out=out32)
        si = self._s32[i]
        if self._unit_scale and out32.shape[1] >= 2048:
            # s = ±1 (labels) and long rows: each row is scaled by +s_cols or −s_cols in one pass,
            # not two (short rows keep the two whole-block passes: no per-row call overhead)
            neg = -s_cols
            for k in range(out32.shape[0]):
                np.multiply(out32[k], s_cols if si[k] > 0 else neg, out=out32[k])
        else:
            out32 *= s_cols
            out32 *= si[:, None]
        return out32

    def _compute32(self, i: IndexArray) -> NDArray[np.float32]:
        """Rows Q[i, :] computed in single precision (one SGEMM, exp, scaling)."""
        assert self._aug32 is not None
        self.stats.rows_computed += int(i.size)
        return self._compute32_cols(i, self._aug32T, self._s32)

    def compute(self, idx: ArrayLike) -> FloatArray:
        """Compute the block Q[idx, :] afresh (no cache), one BLAS product for the whole block."""
        i = np.asarray(idx, dtype=np.intp)
        if i.size == 1 and self.kernel.name != "precomputed":
            return self._compute_one(int(i[0]))
        self.stats.rows_computed += int(i.size)
        out = self._kernel_block(i)
        out *= self.s
        out *= self.s[i][:, None]
        return out

    def _kernel_block(self, i: IndexArray) -> FloatArray:
        """Unscaled kernel values K[i, :] as a dense float64 block."""
        if self.kernel.name == "precomputed":
            blk = self.X[i]
            return np.array(blk.toarray() if sp.issparse(blk) else blk, dtype=np.float64)
        if self._aug is not None and (self._Xs is None or i.size >= self.gemm_min_rows):
            out = self._aug[0][i] @ self._aug[1].T
            np.minimum(out, 0.0, out=out)  # rounding can make ‖u−v‖² slightly negative
            np.exp(out, out=out)
            return out
        if self._Xs is not None and i.size < self.gemm_min_rows:
            out = dot_block(self._Xs[i], self._Xs)
        else:
            out = dot_block(self.X[i], self.X)
        sq = self._sq
        return self.kernel.apply(out, None if sq is None else sq[i], sq)

    def _row_vector(self, k: int, aug: bool) -> FloatArray:
        """Point k as a dense vector (augmented for the RBF exponent when ``aug``)."""
        Xs = self._Xs
        if Xs is not None:
            d = Xs.shape[1]
            v = np.zeros(d + 2 if aug else d)
            a, b = Xs.indptr[k], Xs.indptr[k + 1]
            v[Xs.indices[a:b]] = Xs.data[a:b]
        else:
            v = np.array(self.X[k], dtype=np.float64)
            d = v.size
            if aug:
                v = np.concatenate([v, [0.0, 0.0]])
        if aug:
            assert self._sq is not None
            v[:d] *= np.sqrt(2.0 * self.kernel.gamma)
            v[d], v[d + 1] = -self.kernel.gamma * self._sq[k], 1.0
        return v

    def _compute_one(self, k: int) -> FloatArray:
        """One row by one matrix-vector product: dense GEMV or sparse matvec, whichever streams less."""
        self.stats.rows_computed += 1
        if self._aug is not None or self._aug_s is not None:
            if self._aug is not None and (self._one_dense or self._aug_s is None):
                out = self._aug[1] @ self._aug[0][k]
            else:
                out = np.asarray(self._aug_s @ self._row_vector(k, True), dtype=np.float64)
            np.minimum(out, 0.0, out=out)  # rounding can make ‖u−v‖² slightly negative
            np.exp(out, out=out)
        else:
            A = self._Xs if self._Xs is not None else self.X
            out = np.asarray(A @ self._row_vector(k, False), dtype=np.float64)
            sq = self._sq
            self.kernel.apply(out[None, :], None if sq is None else sq[k:k + 1], sq)
        np.multiply(out, self._s_signed[0 if self.s[k] > 0 else 1] if abs(self.s[k]) == 1.0 else self.s * self.s[k],
                    out=out)
        row: FloatArray = out.reshape(1, -1)
        return row

    def row(self, i: int) -> NDArray[Any]:
        """Q[i, :], from the cache when present (read-only)."""
        v = self._rows.get(i)
        if v is not None:
            return v
        r: NDArray[Any] = self.compute([i])[0].astype(self.dtype, copy=False)
        self._rows.put(i, r)
        r.flags.writeable = False
        return r

    def cached(self, i: int) -> bool:
        """Whether row i is in the cache."""
        return i in self._rows

    def rows(self, idx: ArrayLike) -> NDArray[Any]:
        """Q[idx, :]: cached rows gathered, the missing ones computed in one block and cached."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        c = self._rows
        miss = [int(k) for k in i if int(k) not in c]
        nm = len(set(miss))
        self.stats.cache_misses += nm
        self.stats.cache_hits += int(i.size) - nm
        fresh: dict[int, NDArray[Any]] = {}
        if miss:
            uniq = list(dict.fromkeys(miss))
            if self._aug32 is not None and len(uniq) > 1:
                blk = self._compute32(np.asarray(uniq, dtype=np.intp))
            else:
                blk = self.compute(uniq).astype(self.dtype, copy=False)
            if len(uniq) == i.size:   # all computed now, in order: the block is the answer
                for k, r in zip(uniq, blk):
                    c.put(k, r)
                out_all: NDArray[Any] = blk
                return out_all
            for k, r in zip(uniq, blk):
                fresh[k] = r
        out = np.empty((i.size, self._n), dtype=self.dtype)
        for pos, k in enumerate(i):
            kk = int(k)
            r = fresh.get(kk)
            out[pos] = c.take(kk) if r is None else r
        # cache the fresh rows after gathering, so a small budget cannot evict what we just used
        for k, r in fresh.items():
            c.put(k, r)
        return out

    def matvec(self, x: FloatArray, block_bytes: int = 2 << 20) -> FloatArray:
        """Q x over the nonzeros of x: cached float64 rows (exact kernel values) plus the rest
        computed in blocks; float32 cached rows are never used here.

        Q x = s ∘ (K (s ∘ x)), so the blocks are kernel values without the scaling passes. Blocks
        are at most ``block_bytes``: small enough to stay in the CPU cache through the exponent,
        the exp and the product, and to be recycled by the allocator instead of page-faulted
        afresh (a 1024-row block of a 50,000-point set was 400 MB).
        """
        x = np.asarray(x, dtype=np.float64)
        nz = np.flatnonzero(x)
        n = self._n
        out = np.zeros(n)
        if self.dtype == np.float64 and len(self._rows):
            pos = self._rows.positions(nz)
            hit = pos >= 0
            cached, slots = nz[hit], pos[hit]
            slab = self._rows.slab
            step = max(1, block_bytes // (8 * n))
            for start in range(0, cached.size, step):  # one GEMV per block of cached rows
                part = slice(start, start + step)
                out += x[cached[part]] @ slab[slots[part]]
            nz = nz[~hit]
        if nz.size == 0:
            return out
        sx = self.s * x
        self.stats.rows_computed += int(nz.size)
        fast = self._Xs is None or nz.size >= self.gemm_min_rows
        if fast and (self._X32 is not None or self._aug is not None):
            # K(s∘x) over distinct points only: K[i, :] depends on x_i alone, and duplicate
            # points among the nonzeros add their weights (Adult: a quarter of its rows repeat)
            first, inverse = self._distinct()
            w_all = np.asarray(np.bincount(inverse[nz], weights=sx[nz], minlength=first.size), dtype=np.float64)
            nzu = np.flatnonzero(w_all)
            acc = self._kernel_times(first, first[nzu], w_all[nzu], block_bytes)[inverse]
        else:
            acc = np.zeros(n)
            step = max(1, block_bytes // (8 * n))
            for start in range(0, nz.size, step):
                b = nz[start:start + step]
                acc += sx[b] @ self._kernel_block(b)  # K symmetric: K v = Σ_b v_b K[b, :]
        out += self.s * acc
        return out

    def _distinct(self) -> tuple[IndexArray, IndexArray]:
        """(first, inverse): one index per distinct point, and each point's distinct number
        (computed once; no duplicates means first = arange(n))."""
        if self._uniq is None:
            # only called on the dense paths (_aug and _X32 exist for dense X alone)
            X = np.ascontiguousarray(self.X)
            keys = X.view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel() if X.shape[1] else np.zeros(self._n)
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            if first.size > 0.95 * self._n:   # too few repeats to pay for the gathers
                first, inverse = np.arange(self._n), np.arange(self._n)
            self._uniq = (first.astype(np.intp), inverse.astype(np.intp).ravel())
        return self._uniq

    def _kernel_times(self, rows: IndexArray, cols: IndexArray, w: FloatArray, block_bytes: int) -> FloatArray:
        """K[rows][:, cols] @ w in float64, in column chunks small enough for the CPU cache."""
        acc = np.empty(rows.size)
        if self._X32 is not None and self._sq is not None:
            # integer data: exact inner products from a float32 GEMM, then the exponent
            # −γ(‖x_i‖² + ‖x_j‖² − 2 x_i·x_j) in float64 (an exact integer times γ)
            X32, gam = self._X32, self.kernel.gamma
            XT, sq_c, sq_r = np.ascontiguousarray(X32[cols].T), self._sq[cols], self._sq[rows]
            Xr = X32[rows]
            step = max(16, block_bytes // (12 * max(1, cols.size)))
            for start in range(0, rows.size, step):
                D = Xr[start:start + step] @ XT
                E = np.multiply(D, 2.0, dtype=np.float64)
                E -= sq_c
                E -= sq_r[start:start + step, None]
                np.minimum(E, 0.0, out=E)   # rounding can make ‖u−v‖² slightly negative
                E *= gam
                np.exp(E, out=E)
                acc[start:start + step] = E @ w
            return acc
        assert self._aug is not None
        # one GEMM gives the exponents of a chunk, then exp and a GEMV
        AT, Ar = np.ascontiguousarray(self._aug[0][cols].T), self._aug[1][rows]
        step = max(16, block_bytes // (8 * max(1, cols.size)))
        for start in range(0, rows.size, step):
            E = Ar[start:start + step] @ AT
            np.minimum(E, 0.0, out=E)
            np.exp(E, out=E)
            acc[start:start + step] = E @ w
        return acc
