"""qpcore.linalg.memory: very large buffers in 4 KB pages are ordinary zero-filled, writable arrays."""

from __future__ import annotations

import mmap

import numpy as np
import pytest

from qpcore.linalg.memory import SMALL_PAGES_FROM, small_pages_zeros


@pytest.mark.parametrize("shape", [7, (3, 5), (SMALL_PAGES_FROM // 8 + 3,), (4100, 2049)])
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

