"""Very large zero-filled buffers in ordinary 4 KB pages (decomposition's row buffer).

numpy asks the kernel for transparent huge pages on every array of 4 MB or more. Where the
kernel compacts memory to find a huge page on the fault (``/sys/kernel/mm/transparent_hugepage/
defrag`` = ``madvise``, the common default), the first touch of a buffer of a gigabyte is erratic
(several times slower when no huge pages are at hand) and 4 KB pages are the steady choice. For
tens of megabytes numpy's pages are faster on the median, with rare slow outliers, so the kernel
row caches keep ``np.zeros``: ``python -m benchmarks.page_faults`` and docs/BENCHMARKS.md.
"""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["SMALL_PAGES_FROM", "small_pages_zeros"]

#: Buffers of at least this many bytes are mapped in 4 KB pages (smaller ones: numpy's own pages).
SMALL_PAGES_FROM = 64 << 20


def small_pages_zeros(shape: int | tuple[int, ...], dtype: Any) -> NDArray[Any]:
    """A writable, zero-filled, C-contiguous array, mapped in 4 KB pages when it is very large.

    Below :data:`SMALL_PAGES_FROM` bytes (or where ``mmap`` lacks ``MAP_PRIVATE``) it is
    ``np.zeros``. The pages are mapped as they are first touched, so untouched parts cost nothing.

    Parameters
    ----------
    shape : int or tuple of int
        The array's shape.
    dtype : numpy dtype
        Its type.

    Returns
    -------
    ndarray
    """
    dt = np.dtype(dtype)
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    count = int(np.prod(dims, dtype=np.int64))
    nbytes = count * dt.itemsize
    if nbytes < SMALL_PAGES_FROM or not hasattr(mmap, "MAP_PRIVATE"):
        return np.zeros(dims, dtype=dt)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        buf.madvise(mmap.MADV_NOHUGEPAGE)
    out: NDArray[Any] = np.frombuffer(buf, dtype=dt, count=count).reshape(dims)
    return out
