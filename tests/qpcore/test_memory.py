"""qpcore.linalg.memory: large buffers in 4 KB pages are ordinary zero-filled, writable arrays."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from qpcore.backends.capabilities import OperatorStats
from qpcore.backends.rowcache import RowCache
from qpcore.linalg.memory import SMALL_PAGES_FROM, small_pages_zeros


@pytest.mark.parametrize("shape", [7, (3, 5), (SMALL_PAGES_FROM // 8 + 3,), (1030, 1031)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.intp])
def test_zero_filled_writable_contiguous(shape: int | tuple[int, ...], dtype: type) -> None:
    a = small_pages_zeros(shape, dtype)
    dims = (shape,) if isinstance(shape, int) else shape
    assert a.shape == dims and a.dtype == np.dtype(dtype)
    assert a.flags.c_contiguous and a.flags.writeable
    assert not a.any()
    a.reshape(-1)[-1] = 3
    a.reshape(-1)[0] = 2
    assert a.reshape(-1)[-1] == 3 and a.sum() == 5


def test_large_buffer_is_mapped_not_numpy_owned() -> None:
    a = small_pages_zeros((SMALL_PAGES_FROM // 4 + 1,), np.float32)
    small = small_pages_zeros(16, np.float32)
    assert isinstance(a.base, (mmap.mmap, memoryview)) or a.base is not None
    assert small.base is None          # below the threshold: plain np.zeros


def test_row_cache_slab_in_small_pages_keeps_rows() -> None:
    width = 4096
    rc = RowCache(budget=(SMALL_PAGES_FROM // (width * 4) + 8) * width * 4, width=width, dtype=np.float32,
                  limit=10_000, stats=OperatorStats())
    rng = np.random.default_rng(0)
    rows = {i: rng.standard_normal(width).astype(np.float32) for i in range(rc.slots + 5)}
    for i, r in rows.items():
        rc.put(i, r)
    assert rc.slab.nbytes >= SMALL_PAGES_FROM
    for i in range(5, rc.slots + 5):          # the first five were evicted (least recently used)
        got = rc.get(i)
        assert got is not None and np.array_equal(got, rows[i])
    assert all(rc.get(i) is None for i in range(5))
