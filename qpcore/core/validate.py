"""The input checks every layer shares: the error a bad problem raises, vector validation, the
numeric options' checks and the words a message uses for each of the problem's fields.

The bottom of qpcore's imports: the operators and the problem both validate with it, so neither
needs the other for that.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

__all__ = ["FIELDS", "InfeasibleProblem", "ProblemError", "as_float_vector", "as_integer", "as_real", "field"]

#: What each field of :class:`qpcore.QP` is, so that a refusal names it in words a reader knows
#: ("the equality rows A: ..."), the field's own name kept for the code that set it.
FIELDS: dict[str, str] = {
    "Q": "the Hessian Q",
    "c": "the linear term c",
    "lb": "the lower bounds lb",
    "ub": "the upper bounds ub",
    "A": "the equality rows A",
    "b": "the equality right-hand side b",
    "C": "the inequality rows C",
    "l": "the inequality rows' lower sides l",
    "u": "the inequality rows' upper sides u",
    "X": "the data X",
}


def field(name: str) -> str:
    """The subject of an error message about ``name``: its words from :data:`FIELDS`, else ``name``.

    Parameters
    ----------
    name : str
        A field of :class:`qpcore.QP` (``"A"``), or any other argument's name.

    Returns
    -------
    str
        E.g. ``"the equality rows A"``.
    """
    return FIELDS.get(name, name)


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


def _shown(value: object) -> str:
    """``value`` as an error message quotes it: short, on one line, a numpy scalar as its number."""
    if isinstance(value, np.ndarray):
        if value.ndim:
            return f"an array of shape {value.shape}"
        value = value.item()
    elif isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _real(value: object) -> float | None:
    """``value`` as a float when it is a real number (a numpy scalar or a 0-d array too; not a bool,
    a string or a sequence), else None."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def as_real(value: object, name: str, *, low: float | None = None, strict: bool = False,
            allow_inf: bool = False) -> float:
    """Check a numeric option and return it as a float.

    Parameters
    ----------
    value : object
        The option as given.
    name : str
        Its name, the subject of the error message (``"tol"``).
    low : float, optional
        The smallest value allowed (none when omitted).
    strict : bool
        ``value`` must exceed ``low`` (``tol > 0``) rather than reach it.
    allow_inf : bool
        Whether +inf (and −inf without ``low``) is allowed; NaN never is.

    Returns
    -------
    float

    Raises
    ------
    ProblemError
        One line saying what the option needs, e.g. ``tol: expected a positive finite number,
        got 'foo'``.
    """
    x = _real(value)
    ok = x is not None and not np.isnan(x) and (allow_inf or np.isfinite(x))
    if ok and low is not None:
        assert x is not None
        ok = x > low if strict else x >= low
    if not ok:
        finite = "" if allow_inf else "finite "
        if low == 0.0 and strict:
            what = f"a positive {finite}number"
        elif low is None:
            what = f"a {finite}number"
        else:
            what = f"a {finite}number {'>' if strict else '≥'} {low:g}"
        raise ProblemError(f"{name}: expected {what}, got {_shown(value)}")
    assert x is not None
    return x


def as_integer(value: object, name: str, *, low: int | None = None, or_none: bool = False) -> int:
    """Check an integer option (an int, or a float with an integer value such as ``1e5``) and
    return it as an int.

    Parameters
    ----------
    value : object
        The option as given.
    name : str
        Its name, the subject of the error message (``"max_iter"``).
    low : int, optional
        The smallest value allowed (none when omitted).
    or_none : bool
        Only for the message: the option also takes None (checked by the caller), and says so.

    Returns
    -------
    int

    Raises
    ------
    ProblemError
        One line saying what the option needs, e.g. ``max_iter: expected an integer ≥ 0, got -1``.
    """
    x = _real(value)
    ok = x is not None and np.isfinite(x) and x == int(x) and (low is None or x >= low)
    if not ok:
        what = "an integer" + ("" if low is None else f" ≥ {low}") + (" or None" if or_none else "")
        raise ProblemError(f"{name}: expected {what}, got {_shown(value)}")
    assert x is not None
    return int(x)
