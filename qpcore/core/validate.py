"""The input checks every layer shares: the error a bad problem raises, and vector validation.

The bottom of qpcore's imports: the operators and the problem both validate with it, so neither
needs the other for that.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

__all__ = ["InfeasibleProblem", "ProblemError", "as_float_vector"]


class ProblemError(ValueError):
    """Raised when a problem's data is invalid, before any work starts."""


class InfeasibleProblem(ProblemError):
    """Raised when the constraints are proved to have no common point, before any work starts: a
    bound or a row whose two sides cross, a row whose range over the box misses its sides, or the
    verdict of the feasibility LP (HiGHS). The message says which proof."""


def as_float_vector(value: ArrayLike, name: str, n: int | None = None, *, allow_inf: bool = False) -> FloatArray:
    """Convert ``value`` to a 1-D float64 array, validating dtype, shape and finiteness.

    Parameters
    ----------
    value : array_like
        The input.
    name : str
        Field name used in error messages.
    n : int, optional
        Required length.
    allow_inf : bool
        Whether ±inf entries are allowed (bounds); NaN never is.

    Returns
    -------
    ndarray
        A float64 copy-free view where possible.

    Raises
    ------
    ProblemError
        On a non-numeric dtype, wrong shape, NaN or disallowed infinity.
    """
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise ProblemError(f"{name}: not a regular numeric array ({e})") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
                                   or arr.dtype == np.bool_):
        raise ProblemError(f"{name}: dtype {arr.dtype} is not real numeric; pass a float array")
    if arr.ndim == 0 and n is not None:
        arr = np.full(n, float(arr))
    if arr.ndim != 1:
        raise ProblemError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ProblemError(f"{name}: shape mismatch, expected length {n}, got {arr.shape[0]}")
    out = np.ascontiguousarray(arr, dtype=np.float64)
    if np.isnan(out).any():
        raise ProblemError(f"{name}: contains NaN at index {int(np.flatnonzero(np.isnan(out))[0])}; remove or impute it")
    if not allow_inf and not np.isfinite(out).all():
        raise ProblemError(f"{name}: contains inf at index {int(np.flatnonzero(~np.isfinite(out))[0])}; "
                           "all entries must be finite")
    return out
