"""The row cache of the kernel operators: rows of Q under a byte budget, least recently used evicted."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import OperatorStats

__all__ = ["RowCache"]

IndexArray = NDArray[np.intp]


class RowCache:
    """Rows of Q kept under a byte budget in one preallocated slab, least recently used evicted.

    The one row cache of the kernel operators (:class:`qpcore.backends.operators.KernelQ`, :class:`qpcore.backends.dynamic.DynamicKernelQ`):
    a map row id → slab slot in LRU order over a ``slots × width`` array. Storing a row is a copy
    into one allocation (a fresh allocation per row page-faults at several times the cost); the
    slab is allocated on the first store, zero-filled by ``calloc``, whose pages are mapped as rows
    arrive. Not ``np.empty``: numpy advises huge pages for its large uninitialized arrays, and
    where the kernel then compacts memory on each fault (``defrag=madvise``) the first store of a
    row cost 6–17 times the copy.

    Parameters
    ----------
    budget : int
        Byte budget; the cache holds ``min(limit, budget // (width · itemsize))`` rows, at least
        one when the budget is positive, none when it is 0.
    width : int
        Entries per stored row (a row shorter than ``width`` is stored zero-padded).
    dtype : numpy dtype
        Storage type.
    limit : int
        Most rows worth keeping (the number of rows of Q: more slots would never be used).
    stats : OperatorStats
        The operator's counters; :meth:`get` counts its hits and misses there.
    lend_views : bool
        Whether :meth:`get` returns read-only views of the slab (valid until the row is evicted)
        rather than copies. Views are never lent by a cache of fewer than 4 rows, where the next
        store would overwrite them at once.
    zeroed : bool
        The slab's entries beyond each row's stored part must stay defined (a caller that writes
        columns of cached rows, as the growing operator does); the slab is zero-filled either way.
    """

    __slots__ = ("budget", "width", "dtype", "slots", "stats", "lend_views", "zeroed", "_map", "_slab", "_free",
                 "_where")

    def __init__(self, budget: int, width: int, dtype: Any, limit: int, stats: OperatorStats, *,
                 lend_views: bool = True, zeroed: bool = False) -> None:
        self.budget = int(budget)
        self.dtype: np.dtype[Any] = np.dtype(dtype)
        self.stats = stats
        self.lend_views = lend_views
        self.zeroed = zeroed
        self._map: OrderedDict[int, int] = OrderedDict()
        self._slab: NDArray[Any] | None = None
        self._free: list[int] = []
        self.width = 0
        self.slots = 0
        # row id → slab slot (−1: not cached), beside the LRU map, so that a block of ids is
        # looked up in one gather rather than one dict access each
        self._where: IndexArray = np.full(max(0, int(limit)), -1, dtype=np.intp)
        self._shape(int(width), int(limit))

    def _shape(self, width: int, limit: int) -> None:
        row_bytes = max(1, width * self.dtype.itemsize)
        self.width = width
        self.slots = min(limit, max(1, self.budget // row_bytes)) if self.budget > 0 else 0

    def __len__(self) -> int:
        return len(self._map)

    def __contains__(self, i: object) -> bool:
        return i in self._map

    def _storage(self) -> NDArray[Any]:
        if self._slab is None:
            self._slab = np.zeros((self.slots, self.width), dtype=self.dtype)
            self._free = list(range(self.slots - 1, -1, -1))
        return self._slab

    def get(self, i: int, n: int | None = None) -> NDArray[Any] | None:
        """Row i's first ``n`` entries (all when None), read-only, refreshed as most recently used;
        None when it is not cached. Counts a cache hit or miss."""
        pos = self._map.get(i)
        if pos is None:
            self.stats.cache_misses += 1
            return None
        self._map.move_to_end(i)
        self.stats.cache_hits += 1
        assert self._slab is not None
        v: NDArray[Any] = self._slab[pos] if n is None else self._slab[pos, :n]
        v = v.view() if self.lend_views and self.slots >= 4 else v.copy()
        v.flags.writeable = False
        return v

    def take(self, i: int) -> NDArray[Any]:
        """Cached row i as a slab view, refreshed as most recently used, nothing counted (for a
        caller that copies it at once)."""
        self._map.move_to_end(i)
        return self.peek(i)

    def peek(self, i: int) -> NDArray[Any]:
        """Cached row i as a slab view, LRU order unchanged, nothing counted."""
        assert self._slab is not None
        v: NDArray[Any] = self._slab[self._map[i]]
        return v

    def put(self, i: int, r: NDArray[Any]) -> None:
        """Store row i (refresh it when already cached); evicts the least recently used row."""
        if self.slots == 0:
            return
        c = self._map
        if i in c:
            c.move_to_end(i)
            return
        slab = self._storage()
        if self._free:
            pos = self._free.pop()
        else:
            old, pos = c.popitem(last=False)
            self._where[old] = -1
        k = r.shape[0]
        slab[pos, :k] = r
        if k < self.width:
            slab[pos, k:] = 0
        c[i] = pos
        self._where[i] = pos

    def discard(self, i: int) -> None:
        """Forget row i (if cached)."""
        pos = self._map.pop(i, None)
        if pos is not None:
            self._free.append(pos)
            self._where[i] = -1

    def positions(self, ids: IndexArray) -> IndexArray:
        """The slab slot of each id (−1 where not cached), LRU order unchanged."""
        out: IndexArray = self._where[np.asarray(ids, dtype=np.intp)]
        return out

    def entries(self) -> tuple[IndexArray, IndexArray]:
        """(ids, slots) of the cached rows, by ascending id."""
        ids = np.flatnonzero(self._where >= 0).astype(np.intp)
        return ids, self._where[ids]

    @property
    def slab(self) -> NDArray[Any]:
        """The storage, ``slots × width`` (rows at :meth:`positions`; for column updates in place)."""
        return self._storage()

    def resize(self, width: int, limit: int) -> None:
        """New row width (and so fewer or more slots), keeping the most recently used rows and
        their first min(old, new width) entries."""
        old_slab, old = self._slab, list(self._map.items())
        self._shape(int(width), int(limit))
        keep = old[len(old) - self.slots:] if self.slots else []
        self._slab = None
        self._map = OrderedDict()
        self._where = np.full(max(0, int(limit)), -1, dtype=np.intp)
        if not keep or old_slab is None:
            return
        slab = self._storage()
        w = min(old_slab.shape[1], self.width)
        slab[:len(keep), :w] = old_slab[np.fromiter((pos for _, pos in keep), dtype=np.intp, count=len(keep)), :w]
        if w < self.width and not self.zeroed:
            slab[:len(keep), w:] = 0
        self._map = OrderedDict((i, k) for k, (i, _) in enumerate(keep))
        self._where[np.fromiter((i for i, _ in keep), dtype=np.intp, count=len(keep))] = np.arange(len(keep))
        self._free = list(range(self.slots - 1, len(keep) - 1, -1))
