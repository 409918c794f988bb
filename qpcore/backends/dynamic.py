"""A kernel operator over data that grows and shrinks: the Q of an incremental SVM.

:class:`DynamicKernelQ` holds points in a capacity-doubling buffer under *stable slot ids*: a
point keeps its slot until it is removed, and a removed point's slot goes on a free list that the
next append reuses (smallest first). Q_ij = s_i s_j K(x_i, x_j) is defined over the slot range
``0 .. n_slots - 1``; a free slot has s = 0, so its row and column of Q are zero and a vector over
slots needs no compaction.

The row cache is what makes it "growing": a cached row stays valid as points are appended. When
k points arrive, each cached row gets only its k new entries (one |cache| × k kernel block), so a
row is never recomputed because the data grew, and an append costs O((|cache| + 1) · k · d), not
O(n²). A removal zeroes the slot's column in the cached rows (O(|cache|)).

Data are stored dense (a CSR block is densified on append: one row of d floats per point, which
suits the moderate d of the incremental SVM's use; very wide sparse data would want a CSR store).
Kernels are :class:`qpcore.backends.operators.Kernel` (linear, RBF, polynomial, sigmoid; not precomputed).

For certification, :meth:`DynamicKernelQ.snapshot` returns a static
:class:`qpcore.backends.operators.KernelQ` over the alive points (in slot order) and those slots; that is
the operator of the ``qpcore.QP`` whose certificate :func:`qpcore.kkt` computes from scratch.
"""

from __future__ import annotations

import heapq
from typing import Any, ClassVar

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.capabilities import Capability, OperatorStats
from qpcore.backends.operators import Kernel, KernelQ
from qpcore.core.problem import ProblemError
from qpcore.backends.rowcache import RowCache

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["DynamicKernelQ", "DynamicStats"]


@attrs.define(slots=True)
class DynamicStats(OperatorStats):
    """Counters of a :class:`DynamicKernelQ`.

    Attributes
    ----------
    rows_computed, cache_hits, cache_misses : int
        As for every operator: full rows computed afresh, row requests served from / missing the
        cache.
    entries_extended : int
        Kernel entries computed to extend cached rows with the columns of appended points.
    points_appended, points_removed : int
        Data changes.
    """

    entries_extended: int = 0
    points_appended: int = 0
    points_removed: int = 0


def _as_points(X: Any, d: int | None) -> FloatArray:
    """Validate a block of points (one per row, dense or sparse) as a dense float64 array."""
    if sp.issparse(X):
        arr = np.asarray(sp.csr_matrix(X, dtype=np.float64).toarray())
    else:
        arr = np.asarray(X)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise ProblemError(f"X: dtype {arr.dtype} is not real numeric")
        if arr.ndim == 1:
            arr = arr[None, :]
        arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 2:
        raise ProblemError(f"X: expected a 2-D array (rows are points), got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        if arr.shape[1] < d and sp.issparse(X):       # a sparse block may lack the last features
            arr = np.hstack([arr, np.zeros((arr.shape[0], d - arr.shape[1]))])
        else:
            raise ProblemError(f"X: has {arr.shape[1]} features, the operator holds {d}")
    if not np.isfinite(arr).all():
        raise ProblemError("X: contains NaN or inf; all entries must be finite")
    return np.ascontiguousarray(arr)


class DynamicKernelQ:
    """Q_ij = s_i s_j K(x_i, x_j) over points that are appended and removed, with a growing row cache.

    A ``QOperator`` over the slot range (``shape == (n_slots, n_slots)``); free slots have zero
    rows and columns.

    Parameters
    ----------
    kernel : Kernel
        The kernel (not ``"precomputed"``).
    n_features : int, optional
        Dimension of the points; fixed by the first append when omitted.
    capacity : int
        Initial number of slots (doubles when full).
    cache_bytes : int
        Byte budget of the row cache (a :class:`qpcore.backends.rowcache.RowCache`, as KernelQ's); rows
        are float64 over the capacity, so the number of cached rows is
        ``cache_bytes // (8 · capacity)`` (at least 1 when positive), and halves when the capacity
        doubles (least recently used rows go first).

    Attributes
    ----------
    stats : DynamicStats
        Counters (rows computed, cache hits and misses, entries computed to extend cached rows).
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.ROW_CACHE, Capability.BLOCK,
                                                                 Capability.CROSS})
    row_dtype: ClassVar[np.dtype[Any]] = np.dtype(np.float64)

    def __init__(self, kernel: Kernel, n_features: int | None = None, *, capacity: int = 64,
                 cache_bytes: int = 128 << 20) -> None:
        if kernel.name == "precomputed":
            raise ProblemError("kernel: a precomputed kernel cannot grow; use a kernel on points")
        if cache_bytes < 0:
            raise ProblemError("cache_bytes: must be ≥ 0")
        self.kernel = kernel
        self._d = None if n_features is None else int(n_features)
        cap = max(4, int(capacity))
        self._X: FloatArray = np.zeros((cap, self._d or 0))
        self._s: FloatArray = np.zeros(cap)
        self._sq: FloatArray = np.zeros(cap)
        self._alive: BoolArray = np.zeros(cap, dtype=bool)
        self._hw = 0                        # slots 0 .. _hw-1 have been used (the column range)
        self._free: list[int] = []          # heap of free slots below _hw
        self.cache_bytes = int(cache_bytes)
        self.stats = DynamicStats()
        # rows over the whole capacity (zero beyond the used slots, so appended columns of
        # cached rows are written in place); copies lent, since appends and removals rewrite
        # columns of cached rows
        self._rows = RowCache(self.cache_bytes, cap, np.float64, cap, self.stats, lend_views=False, zeroed=True)
        #: appends of at most this many points also compute and cache the new points' rows
        self.row_append_max = 8

    # -- sizes and views ------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(n_slots, n_slots)."""
        return (self._hw, self._hw)

    @property
    def row_eps(self) -> float:
        """Relative error bound of the entries (units of max Q_ii), over the points held now.

        float64's eps, except for RBF: the exponent −γ(‖x‖² + ‖y‖² − 2x·y) loses about
        eps·4γ·max‖x‖² to cancellation, so points far from the origin carry that much more (as
        :class:`qpcore.backends.operators.KernelQ` declares for its single-precision blocks).
        """
        eps = float(np.finfo(np.float64).eps)
        if self.kernel.name != "rbf":
            return eps
        return eps * (1.0 + 4.0 * self.kernel.gamma * float(self._sq[:self._hw].max(initial=0.0)))

    @property
    def psd(self) -> bool | None:
        """Whether Q is known PSD (from the kernel; None: unknown)."""
        return self.kernel.psd

    @property
    def n_slots(self) -> int:
        """Slots used so far (alive or free): the range of columns."""
        return self._hw

    @property
    def n_alive(self) -> int:
        """Number of points held."""
        return self._hw - len(self._free)

    @property
    def capacity(self) -> int:
        """Allocated slots; arrays a caller keeps over slots must have at least this length."""
        return int(self._s.shape[0])

    @property
    def n_features(self) -> int | None:
        """Dimension of the points (None before the first append)."""
        return self._d

    @property
    def alive(self) -> BoolArray:
        """Mask over ``0 .. n_slots - 1`` of the slots holding a point (a read-only view)."""
        v = self._alive[:self._hw].view()
        v.flags.writeable = False
        return v

    @property
    def labels(self) -> FloatArray:
        """The scale s over ``0 .. n_slots - 1`` (0 at free slots; a read-only view)."""
        v = self._s[:self._hw].view()
        v.flags.writeable = False
        return v

    @property
    def s_buffer(self) -> FloatArray:
        """The scale s over the whole capacity (the live buffer; replaced when the capacity grows)."""
        return self._s

    @property
    def points(self) -> FloatArray:
        """The stored points over ``0 .. n_slots - 1`` (rows of free slots are stale; read-only)."""
        v = self._X[:self._hw].view()
        v.flags.writeable = False
        return v

    def slots(self) -> IndexArray:
        """The alive slots, ascending."""
        return np.flatnonzero(self._alive[:self._hw]).astype(np.intp)

    def cached(self, i: int) -> bool:
        """Whether row i is in the cache."""
        return int(i) in self._rows

    # -- growth ---------------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        cap = self.capacity
        while cap < need:
            cap *= 2
        d = self._X.shape[1]
        X = np.zeros((cap, d))
        X[:self._hw] = self._X[:self._hw]
        self._X = X
        s, sq = np.zeros(cap), np.zeros(cap)
        s[:self._hw], sq[:self._hw] = self._s[:self._hw], self._sq[:self._hw]
        self._s, self._sq = s, sq
        alive = np.zeros(cap, dtype=bool)
        alive[:self._hw] = self._alive[:self._hw]
        self._alive = alive
        # never more rows than points: a larger slab is never used, and mapping it is not free
        self._rows.resize(cap, cap)

    # -- data changes ---------------------------------------------------------------------------
    def append(self, X_new: Any, s_new: ArrayLike | None = None) -> IndexArray:
        """Add points; return their slots (free slots are reused, smallest first).

        Cached rows are extended with the new columns (one kernel block, cached rows × new
        points); nothing already computed is recomputed.

        Parameters
        ----------
        X_new : array_like or sparse matrix
            Points, one per row (a 1-D array is one point).
        s_new : array_like, optional
            Their scales (labels ±1 for an SVM); ones when omitted.

        Returns
        -------
        ndarray of intp
            The slots, in the order of the rows of ``X_new``.
        """
        P = _as_points(X_new, self._d)
        k = P.shape[0]
        s = np.ones(k) if s_new is None else np.asarray(s_new, dtype=np.float64).ravel()
        if s.shape != (k,):
            raise ProblemError(f"s_new: shape mismatch, expected ({k},), got {s.shape}")
        if not np.isfinite(s).all():
            raise ProblemError("s_new: contains NaN or inf")
        if self._d is None:
            self._d = int(P.shape[1])
            self._X = np.zeros((self.capacity, self._d))
        if k == 0:
            return np.zeros(0, dtype=np.intp)
        reuse = [heapq.heappop(self._free) for _ in range(min(k, len(self._free)))]
        fresh = k - len(reuse)
        if self._hw + fresh > self.capacity:
            self._grow(self._hw + fresh)
        slots = np.array(reuse + list(range(self._hw, self._hw + fresh)), dtype=np.intp)
        self._hw += fresh
        self._X[slots] = P
        self._s[slots] = s
        self._sq[slots] = np.einsum("ij,ij->i", P, P)
        self._alive[slots] = True
        self.stats.points_appended += k
        if len(self._rows):
            # extend every cached row by the new columns (K is symmetric: Q[cached, new] is
            # Q[new, cached]). A few new points: their full rows are one GEMV each over the
            # contiguous store, cheaper than gathering the cached points, and are cached too (a
            # learner asks for them next). Many: one |cache| × k block, nothing else cached.
            cs, pos = self._rows.entries()
            slab = self._rows.slab
            if k <= self.row_append_max:
                new_rows = self.compute(slots)
                slab[pos[:, None], slots[None, :]] = new_rows[:, cs].T
                self.stats.entries_extended += int(cs.size * k)
                for slot, r in zip(slots.tolist(), new_rows):
                    self._rows.put(slot, r)
            else:
                blk = self._kernel(cs, slots)
                blk *= self._s[cs][:, None]
                blk *= s
                slab[pos[:, None], slots[None, :]] = blk
                self.stats.entries_extended += int(blk.size)
        return slots

    def remove(self, slot: int) -> None:
        """Remove the point in ``slot`` (its row and column of Q become zero; the slot is freed)."""
        i = int(slot)
        if not (0 <= i < self._hw) or not self._alive[i]:
            raise ProblemError(f"slot {i}: no point there")
        self._alive[i] = False
        self._s[i] = 0.0
        self._X[i] = 0.0
        self._sq[i] = 0.0
        self._rows.discard(i)
        if len(self._rows):
            self._rows.slab[:, i] = 0.0
        heapq.heappush(self._free, i)
        self.stats.points_removed += 1

    # -- kernel values ---------------------------------------------------------------------------
    def _kernel(self, rows: IndexArray, cols: IndexArray | None = None) -> FloatArray:
        """Unscaled K between stored points ``rows`` and ``cols`` (all slots when None)."""
        Xc = self._X[:self._hw] if cols is None else self._X[cols]
        sqc = self._sq[:self._hw] if cols is None else self._sq[cols]
        dot: FloatArray = self._X[rows] @ Xc.T
        return self.kernel.apply(dot, self._sq[rows], sqc)

    def kernel_with(self, P: Any, slots: ArrayLike | None = None) -> FloatArray:
        """Unscaled K(p, x_j) of outside points P (rows) against stored ``slots`` (all when None)."""
        Pd = _as_points(P, self._d)
        cols = np.arange(self._hw, dtype=np.intp) if slots is None else np.asarray(slots, dtype=np.intp)
        dot: FloatArray = Pd @ self._X[cols].T
        return self.kernel.apply(dot, np.einsum("ij,ij->i", Pd, Pd), self._sq[cols])

    def compute(self, idx: ArrayLike) -> FloatArray:
        """Rows Q[idx, :] afresh (no cache), one BLAS product for the block."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        self.stats.rows_computed += int(i.size)
        out = self._kernel(i)
        out *= self._s[:self._hw]
        out *= self._s[i][:, None]
        return out

    def row(self, i: int) -> FloatArray:
        """Q[i, :] over the slots, from the cache when present (a read-only copy).

        A copy, not a view of the cache: a caller holding more rows than the cache keeps would
        otherwise see an evicted slot refilled with another row (found by the thorough profile).
        """
        i = int(i)
        v = self._rows.get(i, self._hw)
        if v is not None:
            return v
        r: FloatArray = self.compute([i])[0]
        self._rows.put(i, r)
        r.flags.writeable = False
        return r

    def rows(self, idx: ArrayLike) -> FloatArray:
        """Q[idx, :]: cached rows gathered, the missing ones computed in one block and cached."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        out = np.empty((i.size, self._hw))
        miss = []
        rc = self._rows
        for k, slot in enumerate(i.tolist()):
            if slot in rc:
                out[k] = rc.take(slot)[:self._hw]
            else:
                miss.append(k)
        self.stats.cache_hits += int(i.size) - len(miss)
        self.stats.cache_misses += len(miss)
        if miss:
            m = np.asarray(miss, dtype=np.intp)
            uniq, inv = np.unique(i[m], return_inverse=True)
            blk = self.compute(uniq)
            out[m] = blk[inv]
            for slot, r in zip(uniq.tolist(), blk):
                rc.put(slot, r)
        return out

    def diag(self) -> FloatArray:
        """Q_ii = s_i² K(x_i, x_i) over the slots."""
        s2 = self._s[:self._hw] ** 2
        if self.kernel.name == "rbf":
            return s2
        d = self.kernel.apply(self._sq[:self._hw, None].copy(), None, None).ravel()
        out: FloatArray = d * s2
        return out

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> FloatArray:
        """The block Q[idx][:, cols] (all slots when ``cols`` is None), computed, not cached."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        j = np.arange(self._hw, dtype=np.intp) if cols is None else np.atleast_1d(np.asarray(cols, dtype=np.intp))
        out = self._kernel(i, j)
        out *= self._s[j]
        out *= self._s[i][:, None]
        return out

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx]."""
        return self.cross(idx, idx)

    def matvec(self, x: FloatArray, block: int = 1024) -> FloatArray:
        """Q x over the slots: cached rows of the nonzeros of x, the rest computed in blocks."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self._hw,):
            raise ProblemError(f"x: shape mismatch, expected ({self._hw},), got {x.shape}")
        nz = np.flatnonzero(x)
        out = np.zeros(self._hw)
        if len(self._rows) and nz.size:
            pos = self._rows.positions(nz)
            hit = pos >= 0
            if hit.any():
                out += x[nz[hit]] @ self._rows.slab[pos[hit], :self._hw]
            nz = nz[~hit]
        sx = self._s[:self._hw] * x
        acc = np.zeros(self._hw)
        for start in range(0, nz.size, block):
            b = nz[start:start + block]
            self.stats.rows_computed += int(b.size)
            acc += sx[b] @ self._kernel(b)
        out += self._s[:self._hw] * acc
        return out

    # -- certification ----------------------------------------------------------------------------
    def snapshot(self, *, cache_bytes: int = 64 << 20) -> tuple[KernelQ, IndexArray]:
        """A static :class:`KernelQ` (float64 rows) over the alive points and their slots.

        Variable k of the snapshot is the point in slot ``slots[k]`` (ascending slots).
        """
        slots = self.slots()
        Q = KernelQ(self._X[slots].copy(), self.kernel, scale=self._s[slots].copy(), cache_bytes=cache_bytes,
                    dtype=np.float64)
        return Q, slots
