"""The doubled kernel operator of support vector regression: 2l variables over l kernel rows.

ε-SVR and ν-SVR (LIBSVM's formulations) have the variables [α; α*], 2l of them, and the matrix

    Q = [[K, −K], [−K, K]],   Q_ij = s_i s_j K(x_{i mod l}, x_{j mod l}),  s = [e; −e].

Every row of Q is a kernel row of one point with a sign on each half, so
:class:`DoubledKernelQ` keeps one unscaled :class:`qpcore.backends.operators.KernelQ` over the l points
and serves each doubled row as a signed copy of that point's l-long kernel row, from the base's
row cache (LIBSVM's SVR_Q): the cache holds each point's row once, never a doubled row, and its
budget buys as many points as the classifier's would.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.capabilities import Capability, OperatorStats
from qpcore.backends.operators import Kernel, KernelQ

__all__ = ["DoubledKernelQ"]

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

#: How many built doubled rows are kept: SMO asks for row i while selecting and again, with row
#: j, while stepping (LIBSVM keeps two buffers for the same reason).
_KEPT_ROWS = 2


class DoubledKernelQ:
    """Q = ssᵀ ∘ [[K, K], [K, K]] over 2l variables, rows served from one cache of l-long kernel rows.

    Variable i stands for point i mod l with sign s_i = +1 for i < l and −1 for i ≥ l, so
    Q_ij = s_i s_j K(x_{i mod l}, x_{j mod l}): the Hessian of the ε-SVR and ν-SVR duals over
    [α; α*]. The kernel rows come from an unscaled :class:`~qpcore.backends.operators.KernelQ` over X
    (:attr:`base`), whose row cache keeps each point's row once; a doubled row is a signed copy
    of it, built when asked and never cached (the last two built are kept for SMO's repeated
    requests). Counters (:attr:`stats`), the budget, the row dtype and precision are the base's.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix
        Data, one point per row (l points, at least one); for ``kernel.name == "precomputed"``
        the l×l Gram matrix.
    kernel : Kernel
        The kernel.
    cache_bytes : int
        Byte budget of the base's row cache of l-long kernel rows.
    dtype : numpy dtype
        Storage type of cached rows, float64 or float32 (twice the points in the same budget).
    compute_dtype : numpy dtype
        Passed to the base: float32 computes blocks of RBF rows in single precision (with
        ``dtype=float32`` only); ``row_eps`` says how exact the entries are.
    dense_threshold : float
        Passed to the base: a sparse X denser than this fraction is densified once for BLAS.

    Raises
    ------
    ProblemError
        When X is not usable data (see :class:`~qpcore.backends.operators.KernelQ`), has no points, the
        kernel is not a :class:`~qpcore.backends.operators.Kernel`, or a dtype is not float32/float64.

    Examples
    --------
    >>> import numpy as np
    >>> from qpcore.backends.doubled import DoubledKernelQ
    >>> from qpcore.backends.operators import Kernel
    >>> Q = DoubledKernelQ(np.array([[1.0], [2.0]]), Kernel("linear"))
    >>> Q.shape
    (4, 4)
    >>> Q.row(3)
    array([-2., -4.,  2.,  4.])
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({
        Capability.ROW_CACHE, Capability.PREFETCH, Capability.BLOCK, Capability.CROSS, Capability.BUDGET,
        Capability.MIRRORED})

    def __init__(self, X: Any, kernel: Kernel, *, cache_bytes: int = 200 << 20, dtype: Any = np.float64,
                 compute_dtype: Any = np.float64, dense_threshold: float = 0.05) -> None:
        from qpcore.core.validate import ProblemError

        if not isinstance(kernel, Kernel):
            raise ProblemError(f"kernel: expected a qpcore.backends.operators.Kernel, got {type(kernel).__name__}")
        for name, value in (("dtype", dtype), ("compute_dtype", compute_dtype)):
            try:
                dt = np.dtype(value)
            except TypeError:
                raise ProblemError(f"{name}: {value!r} is not a numpy dtype; use float64 or float32") from None
            if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
                raise ProblemError(f"{name}: {dt} is not supported; use float64 or float32")
        base = KernelQ(X, kernel, cache_bytes=cache_bytes, dtype=dtype, compute_dtype=compute_dtype,
                       dense_threshold=dense_threshold)
        if base.shape[0] == 0:
            raise ProblemError("X: no points; the doubled operator needs at least one")
        self.base = base
        self._l = base.shape[0]
        self.stats: OperatorStats = base.stats
        self._kept: list[tuple[int, NDArray[Any]]] = []

    @property
    def kernel(self) -> Kernel:
        """The kernel (the base's)."""
        return self.base.kernel

    @property
    def n_points(self) -> int:
        """Number of points l (half the variables)."""
        return self._l

    @property
    def shape(self) -> tuple[int, int]:
        """(2l, 2l)."""
        return (2 * self._l, 2 * self._l)

    @property
    def row_dtype(self) -> np.dtype[Any]:
        """The base's row dtype (a sign flip changes no entry's type)."""
        return self.base.row_dtype

    @property
    def row_eps(self) -> float:
        """The base's bound: a sign flip is exact."""
        return float(self.base.row_eps)

    @property
    def psd(self) -> bool | None:
        """Q = S [[K, K], [K, K]] S with S = diag(s) is PSD exactly when K is: the base's answer."""
        return self.base.psd

    @property
    def cache_bytes(self) -> int:
        """The base's row-cache budget (the only cache: doubled rows are never cached)."""
        return self.base.cache_bytes

    @property
    def footprint(self) -> int:
        """Bytes of the base's own arrays plus the two kept doubled rows, its row cache aside."""
        return int(self.base.footprint) + sum(int(r.nbytes) for _, r in self._kept)

    @property
    def max_rows(self) -> int:
        """Points whose kernel rows the base's cache holds at most."""
        return self.base.max_rows

    def _point(self, i: int) -> int:
        return i - self._l if i >= self._l else i

    def _split(self, idx: ArrayLike) -> tuple[IndexArray, IndexArray, IndexArray, NDArray[np.bool_]]:
        """(indices, distinct points, each index's position among them, which indices are α*)."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        neg = i >= self._l
        pts = np.where(neg, i - self._l, i)
        uniq, inv = np.unique(pts, return_inverse=True)
        return i, uniq.astype(np.intp), inv.astype(np.intp).ravel(), neg

    def diag(self) -> FloatArray:
        """[K_ii; K_ii]: s_i² = 1."""
        d = self.base.diag()
        return np.concatenate([d, d])

    def matvec(self, x: FloatArray) -> FloatArray:
        """Q x = [v; −v] with v = K (x[:l] − x[l:]): one product with the kernel matrix."""
        from qpcore.core.validate import ProblemError

        xa = np.asarray(x, dtype=np.float64)
        if xa.shape != (2 * self._l,):
            raise ProblemError(f"x: expected shape ({2 * self._l},), got {xa.shape}")
        v = self.base.matvec(xa[:self._l] - xa[self._l:])
        out = np.empty(2 * self._l)
        out[:self._l] = v
        np.negative(v, out=out[self._l:])
        return out

    def row(self, i: int) -> NDArray[Any]:
        """Q[i, :] (read-only): a signed copy of point i mod l's kernel row, from the base's cache.

        The copy is one pass over 2l entries into a fresh array (a row handed out is never
        overwritten later); the last two built are kept and handed out again.
        """
        i = int(i)
        kept = self._kept
        for pos, (k, r) in enumerate(kept):
            if k == i:
                if pos != len(kept) - 1:
                    kept.append(kept.pop(pos))
                self.stats.cache_hits += 1
                return r
        p = self._point(i)
        krow = self.base.row(p)
        out = np.empty(2 * self._l, dtype=krow.dtype)
        lo, hi = out[:self._l], out[self._l:]
        if i < self._l:
            lo[...] = krow
            np.negative(krow, out=hi)
        else:
            np.negative(krow, out=lo)
            hi[...] = krow
        out.flags.writeable = False
        kept.append((i, out))
        if len(kept) > _KEPT_ROWS:
            kept.pop(0)
        return out

    def _signed(self, K: NDArray[Any], inv: IndexArray, neg: NDArray[np.bool_]) -> NDArray[Any]:
        """Rows [s_i K[p_i]; −s_i K[p_i]] for the kernel rows K of the distinct points."""
        n = self._l
        out = np.empty((inv.size, 2 * n), dtype=K.dtype)
        lo, hi = out[:, :n], out[:, n:]
        np.take(K, inv, axis=0, out=lo, mode="clip")   # inv is in range: clip only skips the buffering
        if neg.any():
            lo[neg] = -lo[neg]
        np.negative(lo, out=hi)
        return out

    def rows(self, idx: ArrayLike) -> NDArray[Any]:
        """Q[idx, :]: the distinct points' kernel rows from the base (cached rows gathered, the
        missing ones computed in one block and cached), each turned into its signed doubled row."""
        _, uniq, inv, neg = self._split(idx)
        return self._signed(self.base.rows(uniq), inv, neg)

    def cached(self, i: int) -> bool:
        """Whether row i is at hand: one of the kept doubled rows, or point i mod l's kernel row cached."""
        i = int(i)
        return any(k == i for k, _ in self._kept) or self.base.cached(self._point(i))

    def prefetch(self, idx: ArrayLike) -> int:
        """Compute the uncached kernel rows of the points of ``idx`` in one block; the number computed."""
        _, uniq, _, _ = self._split(idx)
        return self.base.prefetch(uniq)

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx], from the kernel on the distinct points only."""
        _, uniq, inv, neg = self._split(idx)
        Kb = self.base.block(uniq)
        out: FloatArray = np.array(Kb[np.ix_(inv, inv)], dtype=np.float64)
        s = np.where(neg, -1.0, 1.0)
        out *= s
        out *= s[:, None]
        return out

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> NDArray[Any]:
        """Q[idx][:, cols] in the row dtype (all 2l columns when ``cols`` is None), nothing cached:
        the base's cross block over the distinct points, signed and expanded."""
        _, uniq, inv, neg = self._split(idx)
        if cols is None:
            return self._signed(np.asarray(self.base.cross(uniq, None)), inv, neg)
        _, cuniq, cinv, cneg = self._split(cols)
        Kc = np.asarray(self.base.cross(uniq, cuniq))
        out = Kc[np.ix_(inv, cinv)]
        si = np.where(neg, -1.0, 1.0).astype(out.dtype)
        sj = np.where(cneg, -1.0, 1.0).astype(out.dtype)
        out *= sj
        out *= si[:, None]
        return out
