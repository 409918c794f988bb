"""Shortest round-trip decimal text of float64 values, in bulk, as byte matrices.

The SVMlight writer (:func:`qpcore_formulations.data.svmlight.dump_svmlight`) formats millions of values per
chunk; Python's ``repr`` one value at a time, or numpy's ``astype("S24")``, would dominate its
time. Here the text of a whole array is built with vectorized numpy: 16 significant digits where
they read back as the same float64 (checked in x87 extended precision), else 17, laid out as
``repr`` lays it out. The result is an (n, width) uint8 matrix, one null-padded token per row,
that the writer interleaves with indices and separators before dropping the nulls.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

__all__ = ["byte_matrix", "format_labels", "format_values", "trim"]

FloatArray = NDArray[np.float64]

# integral values below this are written as integers ("3", not "3.0"): exact in float64
_INT_EXACT: Final = float(2**53)
# a float64's shortest round-trip text is at most 24 characters ("-2.2250738585072014e-308")
_FLOAT_TEXT: Final = "S24"
_TEXT_WIDTH: Final = 24
# values are formatted once per distinct value when a sample of this size has few of them
_SAMPLE: Final = 4096
# the bulk float formatter needs an x87 extended long double (64-bit mantissa) for its checks
_EXTENDED: Final = np.finfo(np.longdouble).nmant >= 63
# 10**k for k in [-_POW_RANGE, _POW_RANGE], correctly rounded to long double (strtold)
_POW_RANGE: Final = 350
_ZERO: Final = ord("0")
# a candidate decimal is accepted within this share of the gap to the next float (the check's own
# error is below 0.002 of that gap, so the decimal is strictly nearer than half-way); 17 correctly
# rounded digits are always within 0.451 of it (5.0e-17 relative, the gap is ≥ 1.11e-16)
_ULP_SHARE: Final = 0.497


def _pow10_table() -> NDArray[Any]:
    return np.array([f"1e{k}" for k in range(-_POW_RANGE, _POW_RANGE + 1)]).astype(np.longdouble)


def _digit_table() -> NDArray[np.uint8]:
    """The four ASCII digits of 0000 ... 9999, a 10000×4 byte matrix."""
    k = np.arange(10_000)[:, None] // np.array([1000, 100, 10, 1])
    table: NDArray[np.uint8] = (_ZERO + k % 10).astype(np.uint8)
    return table


def _layout_table() -> NDArray[np.intp]:
    """The source columns of the text of d.ddd × 10^E, by layout: E = -4 ... 15 (rows 0-19), else 20.

    The source row of a value is: sign, its 17 digits (columns 1-17), ".", "0", the exponent
    text (five columns) and a null (column 25). Like Python's repr, 1e-4 ≤ |v| < 1e16 is written
    positionally (``0.000123``, ``12.5``), others in scientific notation (``1.5e-07``).
    """
    null = 25
    layout = np.full((21, _TEXT_WIDTH), null, dtype=np.intp)
    for e in range(-4, 17):
        if e < 0:
            cols = [0, 19, 18] + [19] * (-e - 1) + list(range(1, 18))
        elif e < 16:
            cols = [0] + list(range(1, e + 2)) + [18] + list(range(e + 2, 18))
        else:
            cols = [0, 1, 18] + list(range(2, 18)) + [20, 21, 22, 23, 24]
        layout[e + 4, : len(cols)] = cols
    return layout


def _exponent_table() -> NDArray[np.uint8]:
    """The exponent text of scientific notation ("e-05", "e+308", null padded) for E in [-324, 308]."""
    words = np.array([f"e{e:+03d}".encode() for e in range(-324, 309)], dtype="S5")
    return _bytes_of(words).copy()


def _bytes_of(tokens: NDArray[Any]) -> NDArray[np.uint8]:
    """Fixed-width byte strings as an (n, width) uint8 matrix (null padded)."""
    width = tokens.dtype.itemsize
    out: NDArray[np.uint8] = np.ascontiguousarray(tokens).view(np.uint8).reshape(tokens.shape[0], width)
    return out


_POW10: Final = _pow10_table() if _EXTENDED else np.zeros(0)
_DIGITS4: Final = _digit_table()
_LAYOUT: Final = _layout_table()
_EXP_TEXT: Final = _exponent_table()
_DIGITS4_T: Final = np.ascontiguousarray(_DIGITS4.T)
_EXP_TEXT_T: Final = np.ascontiguousarray(_EXP_TEXT.T)


def trim(mat: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """Drop the trailing columns that are null in every row (keep at least one).

    Parameters
    ----------
    mat : ndarray of uint8, shape (n, width)
        Null-padded text, one row per token.

    Returns
    -------
    ndarray of uint8, shape (n, w)
        A view of the first w ≤ width columns, w the length of the longest token (≥ 1).
    """
    used = np.flatnonzero((mat != 0).any(axis=0))
    return mat[:, : int(used[-1]) + 1] if used.size else mat[:, :1]


def byte_matrix(tokens: NDArray[Any]) -> NDArray[np.uint8]:
    """Fixed-width byte strings as an (n, width) uint8 matrix, trimmed to the longest one.

    Parameters
    ----------
    tokens : ndarray of bytes (dtype ``S<k>``), shape (n,)
        The strings.

    Returns
    -------
    ndarray of uint8, shape (n, w)
        Their bytes, null padded, w the length of the longest (≥ 1).
    """
    return trim(_bytes_of(tokens))


def _mantissa(a: NDArray[Any], e10: NDArray[np.int64], p: int) -> tuple[NDArray[Any], NDArray[np.int64]]:
    """rint(a·10^(p−1−E)) with E adjusted so that it has exactly p digits (a > 0, long double)."""
    for _ in range(3):
        m = np.rint(a * _POW10[(p - 1 - e10) + _POW_RANGE])
        up = m >= 10.0 ** p
        down = m < 10.0 ** (p - 1)
        if not (up.any() or down.any()):
            break
        e10 = e10 + up - down
    return m, e10


def _format_floats(v: FloatArray) -> NDArray[np.uint8]:
    """Round-trip decimal text of nonzero finite floats, an (n, 24) null-padded byte matrix.

    With an extended long double: 16 significant digits where they read back as the same
    float64, else 17 (which always do), trailing zeros dropped, laid out as Python's repr does
    (positional for 1e-4 ≤ |v| < 1e16, else ``d.ddde±XX``); the text equals repr's for about
    99% of random floats and is never longer than it by more than a digit. Each candidate is
    checked in long double to lie within ``_ULP_SHARE`` of the gap to the neighbouring floats
    (the check's own error is ~2e-19 relative, under 0.002 of that gap), so any correctly
    rounding reader maps it back to the same float64. Anything that fails the check (none is
    known to) is written by numpy's repr, as is everything on a platform without an extended
    long double. The checks are vectorized: about twice as fast as ``astype("S24")``.
    """
    n = v.shape[0]
    if not _EXTENDED or n == 0:
        out = np.zeros((n, _TEXT_WIDTH), dtype=np.uint8)
        text = _bytes_of(v.astype(_FLOAT_TEXT))
        out[:, : text.shape[1]] = text
        return out
    a64 = np.abs(v)
    a = a64.astype(np.longdouble)
    with np.errstate(over="ignore"):   # the spacing above the largest float is inf
        gap = np.minimum(np.spacing(a64), a64 - np.nextafter(a64, 0.0)).astype(np.longdouble)
    e10 = np.floor(np.log10(a64)).astype(np.int64)
    m, e10 = _mantissa(a, e10, 16)
    ok = np.abs(m * _POW10[(e10 - 15) + _POW_RANGE] - a) <= _ULP_SHARE * gap
    m17 = np.where(ok, m * 10, 0).astype(np.longdouble)
    redo = np.flatnonzero(~ok)
    if redo.size:
        m2, e2 = _mantissa(a[redo], e10[redo], 17)
        ok2 = np.abs(m2 * _POW10[(e2 - 16) + _POW_RANGE] - a[redo]) <= _ULP_SHARE * gap[redo]
        m17[redo], e10[redo] = m2, e2
        ok[redo] = ok2
    digits_int = m17.astype(np.int64)
    # the source text, one row per column of characters (contiguous rows: cheap to permute)
    src = np.zeros((26, n), dtype=np.uint8)
    src[0] = np.where(v < 0, ord("-"), 0)
    lead, rest = np.divmod(digits_int, 10**16)
    src[1] = _ZERO + lead.astype(np.uint8)
    for g, scale in enumerate((10**12, 10**8, 10**4, 1)):
        src[2 + 4 * g : 6 + 4 * g] = np.take(_DIGITS4_T, (rest // scale) % 10_000, axis=1)
    last = np.zeros(n, dtype=np.int64)   # the last nonzero digit after the first
    for j in range(1, 17):
        last[src[1 + j] != _ZERO] = j
    e10 = np.clip(e10, -324, 308)
    integer_digits = np.where((e10 >= 0) & (e10 < 16), e10, 0)   # digits before the point − 1
    keep = np.maximum(last, integer_digits)
    for j in range(1, 17):
        src[1 + j] *= j <= keep
    src[18] = np.where((last > integer_digits) | ((e10 < 0) & (e10 >= -4)), ord("."), 0)
    src[19] = _ZERO
    src[20:25] = _EXP_TEXT_T[:, e10 + 324]
    key = np.where((e10 >= -4) & (e10 < 16), e10 + 4, 20)
    kinds = np.unique(key)
    if kinds.size == 1:
        out = np.ascontiguousarray(src[_LAYOUT[kinds[0]]].T)
    else:                          # each layout on its own values: work in proportion to n
        out = np.empty((n, _TEXT_WIDTH), dtype=np.uint8)
        for k in kinds:
            rows = np.flatnonzero(key == k)
            out[rows] = np.take(src, rows, axis=1)[_LAYOUT[k]].T
    bad = np.flatnonzero(~ok)
    if bad.size:
        out[bad] = 0
        text = _bytes_of(v[bad].astype(_FLOAT_TEXT))
        out[bad, : text.shape[1]] = text
    return out


def _format_numbers(v: FloatArray) -> NDArray[np.uint8]:
    """Round-trip text of each value, an (n, 24) byte matrix; integral values as integers."""
    out = np.zeros((v.shape[0], _TEXT_WIDTH), dtype=np.uint8)
    integral = (np.abs(v) < _INT_EXACT) & (v == np.trunc(v))
    if integral.any():
        text = _bytes_of(v[integral].astype(np.int64).astype("S20"))
        out[integral, :20] = text
    if not integral.all():
        out[~integral] = _format_floats(v[~integral])
    return out


def format_values(v: FloatArray) -> NDArray[np.uint8]:
    """Shortest round-trip text of finite floats in bulk; integral values as integers.

    Nonzero non-integral values get the text of :func:`_format_floats` (Python's ``repr`` for
    about 99 % of them, never more than a digit longer, and always read back as the same
    float64); integral values below 2**53 are written as integers (``3``, not ``3.0``). When a
    sample of the values holds few distinct ones (counts, binary or quantized data), each
    distinct value is formatted once.

    Parameters
    ----------
    v : ndarray of float64, shape (n,)
        Finite values.

    Returns
    -------
    ndarray of uint8, shape (n, 24)
        The text of each value, null padded (:func:`trim` drops the unused columns).
    """
    if v.size >= _SAMPLE:
        sample = v[:: v.size // _SAMPLE]
        if np.unique(sample).size * 4 <= sample.size:   # counts, binary or quantized data
            distinct, inverse = np.unique(v, return_inverse=True)
            return _format_numbers(distinct)[inverse.ravel()]
    return _format_numbers(v)


def format_labels(y: FloatArray) -> NDArray[np.uint8]:
    """Labels as text: integral ones as integers with a sign (``+1``, ``-1``), others as floats.

    Parameters
    ----------
    y : ndarray of float64, shape (n,)
        Finite labels.

    Returns
    -------
    ndarray of uint8, shape (n, 25)
        The text of each label, null padded (a leading null where there is no ``+``).
    """
    text = _format_numbers(y)
    plus = (y > 0) & (y < _INT_EXACT) & (y == np.trunc(y))
    out = np.zeros((y.shape[0], _TEXT_WIDTH + 1), dtype=np.uint8)
    out[:, 1:] = text
    out[plus, 0] = ord("+")
    return out
