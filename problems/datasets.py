"""Data sets: a fast LIBSVM/SVMlight reader, the shared real data, and Platt's synthetic sets.

The reader parses the whole file in bulk with numpy (a few C-level passes over the text), and
only when that bulk parse or its validation fails does it re-read the file line by line, so
that a malformed line is reported with the file name, its 1-based line number and the token.

The real data sets (``adult``, ``ijcnn1``, ``reuters``) live in the shared data folder, see
:func:`data_dir` and :func:`load_dataset`.  Platt's two artificial data sets from the SMO
paper (Platt 1998, section 4) are made by :func:`platt_sparse_separable` and
:func:`platt_random_labels`.
"""

from __future__ import annotations

import bz2
import gzip
import math
import os
import pathlib
from typing import Any, Final, Literal, NamedTuple, overload

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped, unused-ignore]
from numpy.typing import DTypeLike, NDArray

__all__ = [
    "DATASET_NAMES",
    "DataFormatError",
    "data_dir",
    "dump_svmlight",
    "load_dataset",
    "load_svmlight",
    "platt_hyperplane",
    "platt_random_labels",
    "platt_sparse_separable",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
ZeroBased = bool | Literal["auto"]

#: Names accepted by :func:`load_dataset`.
DATASET_NAMES: Final = ("adult", "ijcnn1", "reuters")

_GZIP_MAGIC: Final = b"\x1f\x8b"
_BZ2_MAGIC: Final = b"BZh"
_INT64_MAX: Final = int(np.iinfo(np.int64).max)
# The bulk parser needs numpy's vectorised string functions (numpy >= 2.2).
_HAVE_NP_STRINGS: Final = hasattr(np, "strings") and hasattr(np.strings, "partition")


class DataFormatError(ValueError):
    """A data file that does not follow the LIBSVM/SVMlight format.

    The message names the file and, for a malformed line, its 1-based line number and the
    offending token.
    """


# --------------------------------------------------------------------------------------------
# Reading the raw text
# --------------------------------------------------------------------------------------------


def _read_text(path: str | os.PathLike[str]) -> str:
    """Whole decompressed text of a plain, gzip or bzip2 file.

    The compression is recognised by the magic bytes first, then by the extension
    (``.gz``/``.bz2``); an extension whose decompressor rejects the content is an error.
    """
    name = os.fspath(path)
    with open(name, "rb") as fh:
        raw = fh.read()
    suffix = pathlib.Path(name).suffix.lower()
    kind = ""
    if raw.startswith(_GZIP_MAGIC) or (suffix == ".gz" and raw):
        kind = "gzip"
    elif raw.startswith(_BZ2_MAGIC) or (suffix == ".bz2" and raw):
        kind = "bzip2"
    if kind:
        try:
            raw = gzip.decompress(raw) if kind == "gzip" else bz2.decompress(raw)
        except (OSError, EOFError, ValueError) as exc:
            raise DataFormatError(f"{name}: not a valid {kind} file ({exc})") from exc
    # Undecodable bytes become U+FFFD: harmless in a comment, an error in a data token.
    return raw.decode("utf-8-sig", errors="replace")


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------


class _Rows(NamedTuple):
    """Parsed rows before column numbering: raw indices as written in the file."""

    labels: FloatArray  # (n,)
    indptr: IntArray  # (n + 1,)
    indices: IntArray  # (nnz,) raw indices as written
    values: FloatArray  # (nnz,)
    line_numbers: IntArray  # (n,) 1-based line of each row


def _valid_qid(token: str) -> bool:
    """Whether ``token`` is ``qid:<integer>``."""
    body = token[4:]
    body = body[1:] if body[:1] in ("+", "-") else body
    return token.startswith("qid:") and body.isascii() and body.isdigit()


def _parse_fast(text: str, zero_based: ZeroBased) -> _Rows | None:
    """Bulk parse; ``None`` if anything is off (the slow parser then finds the bad line)."""
    if not (_HAVE_NP_STRINGS and text.isascii()):
        return None
    lines = text.split("\n")
    if "#" in text:
        lines = [ln.partition("#")[0] for ln in lines]
    heads = [ln.split(None, 1) for ln in lines]
    nonblank = np.fromiter((bool(h) for h in heads), dtype=bool, count=len(heads))
    line_numbers = (np.flatnonzero(nonblank) + 1).astype(np.int64)
    heads = [h for h in heads if h]
    n = len(heads)
    if n == 0:
        return None
    labels = [h[0] for h in heads]
    rests = [h[1] if len(h) == 2 else "" for h in heads]
    if "qid:" in text:
        stripped: list[str] = []
        for rest in rests:
            if rest.startswith("qid:"):
                parts = rest.split(None, 1)
                if not _valid_qid(parts[0]):
                    return None
                rest = parts[1] if len(parts) == 2 else ""
            if "qid:" in rest:
                return None
            stripped.append(rest)
        rests = stripped

    counts = np.fromiter((r.count(":") for r in rests), dtype=np.int64, count=n)
    tokens = " ".join(rests).split()
    nnz = len(tokens)
    if nnz != int(counts.sum()):
        return None
    try:
        y = np.array(labels).astype(np.float64)
        if nnz:
            idx_s, sep, val_s = np.strings.partition(np.array(tokens), ":")
            # Every token has a colon and the colons add up to the tokens: exactly one each.
            if not (np.all(sep == ":") and np.all(np.strings.isdigit(idx_s))):
                return None
            indices = idx_s.astype(np.int64)
            values = val_s.astype(np.float64)
        else:
            indices = np.zeros(0, dtype=np.int64)
            values = np.zeros(0, dtype=np.float64)
    except (ValueError, OverflowError):
        return None
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(values))):
        return None
    if zero_based is False and nnz and int(indices.min()) == 0:
        return None
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    if nnz > 1:
        within_row = np.ones(nnz - 1, dtype=bool)
        starts = indptr[1:-1]
        starts = starts[(starts >= 1) & (starts <= nnz - 1)]
        within_row[starts - 1] = False
        if np.any(np.diff(indices)[within_row] <= 0):
            return None
    return _Rows(y, indptr, indices, values, line_numbers)


def _parse_slow(text: str, name: str, zero_based: ZeroBased) -> _Rows:
    """Line-by-line parse: the reference semantics, raising on the first malformed line."""

    def fail(line_no: int, problem: str, token: str) -> DataFormatError:
        return DataFormatError(f"{name}:{line_no}: {problem}: {token!r}")

    def number(line_no: int, token: str, what: str, text: str | None = None) -> float:
        try:
            value = float(token if text is None else text)
        except ValueError:
            raise fail(line_no, f"{what} is not a number", token) from None
        if not math.isfinite(value):
            raise fail(line_no, f"{what} is not finite", token)
        return value

    labels: list[float] = []
    counts: list[int] = []
    indices: list[int] = []
    values: list[float] = []
    line_numbers: list[int] = []
    for line_no, line in enumerate(text.split("\n"), start=1):
        toks = line.partition("#")[0].split()
        if not toks:
            continue
        if ":" in toks[0]:
            raise fail(line_no, "missing label (the line starts with a feature)", toks[0])
        labels.append(number(line_no, toks[0], "label"))
        start = 1
        if len(toks) > 1 and toks[1].startswith("qid:"):
            if not _valid_qid(toks[1]):
                raise fail(line_no, "qid is not an integer", toks[1])
            start = 2
        prev = -1
        for tok in toks[start:]:
            idx_s, sep, val_s = tok.partition(":")
            if tok.startswith("qid:"):
                raise fail(line_no, "qid must directly follow the label", tok)
            if not sep:
                raise fail(line_no, "feature token is not of the form index:value", tok)
            if not (idx_s.isascii() and idx_s.isdigit()):
                raise fail(line_no, "feature index is not a non-negative integer", tok)
            idx = int(idx_s)
            if idx > _INT64_MAX:
                raise fail(line_no, "feature index is too large", tok)
            if idx == 0 and zero_based is False:
                raise fail(line_no, "feature index < 1 in a one-based file", tok)
            if idx <= prev:
                raise fail(line_no, "feature indices are not strictly increasing", tok)
            if ":" in val_s:
                raise fail(line_no, "feature token has more than one ':'", tok)
            values.append(number(line_no, tok, "feature value", val_s))
            indices.append(idx)
            prev = idx
        counts.append(len(toks) - start)
        line_numbers.append(line_no)
    if not labels:
        raise DataFormatError(f"{name}: no data lines (empty file)")
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(np.asarray(counts, dtype=np.int64), out=indptr[1:])
    return _Rows(
        np.asarray(labels, dtype=np.float64),
        indptr,
        np.asarray(indices, dtype=np.int64),
        np.asarray(values, dtype=np.float64),
        np.asarray(line_numbers, dtype=np.int64),
    )


def _assemble(
    rows: _Rows,
    name: str,
    n_features: int | None,
    zero_based: ZeroBased,
    dtype: DTypeLike,
) -> Any:
    """CSR matrix from parsed rows: column numbering and the ``n_features`` check."""
    n = rows.labels.shape[0]
    nnz = rows.indices.shape[0]
    zb = bool(nnz and int(rows.indices.min()) == 0) if zero_based == "auto" else zero_based
    cols = rows.indices if zb else rows.indices - 1
    width = int(cols.max()) + 1 if nnz else 0
    if n_features is not None:
        if width > n_features:
            pos = int(np.argmax(cols >= n_features))
            row = int(np.searchsorted(rows.indptr, pos, side="right")) - 1
            base = "zero-based" if zb else "one-based"
            raise DataFormatError(
                f"{name}:{int(rows.line_numbers[row])}: feature index "
                f"{int(rows.indices[pos])} ({base}) does not fit n_features={n_features}: "
                f"'{int(rows.indices[pos])}:{float(rows.values[pos])!r}'"
            )
        width = n_features
    big = max(width, nnz) > np.iinfo(np.int32).max
    index_dtype = np.int64 if big else np.int32
    X = sp.csr_matrix(
        (
            rows.values.astype(dtype, copy=False),
            cols.astype(index_dtype, copy=False),
            rows.indptr.astype(index_dtype, copy=False),
        ),
        shape=(n, width),
    )
    # Indices were checked strictly increasing within each row: sorted, no duplicates.
    X.has_sorted_indices = True
    X.has_canonical_format = True
    return X


# --------------------------------------------------------------------------------------------
# Public loaders
# --------------------------------------------------------------------------------------------


@overload
def load_svmlight(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = ...,
    dense: Literal[False] = ...,
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[Any, FloatArray]: ...


@overload
def load_svmlight(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = ...,
    dense: Literal[True],
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[NDArray[Any], FloatArray]: ...


@overload
def load_svmlight(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = ...,
    dense: bool,
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[Any, FloatArray]: ...


def load_svmlight(
    path: str | os.PathLike[str],
    *,
    n_features: int | None = None,
    dense: bool = False,
    dtype: DTypeLike = np.float64,
    zero_based: ZeroBased = "auto",
) -> tuple[Any, FloatArray]:
    """Read a LIBSVM/SVMlight file.

    Each data line is ``label index:value index:value ...``.  An optional ``qid:<int>``
    token right after the label is ignored, ``#`` starts a comment that runs to the end of
    the line, and blank lines are skipped.  Labels and values are any finite decimal numbers
    (``+1``, ``-1.0``, ``9.8E-02``, ...).  Indices are integers, strictly increasing within a
    line (so no duplicates).  A line with a label and no features is an all-zero row.

    Parameters
    ----------
    path : str or os.PathLike
        The file: plain text, gzip or bzip2 (told by the magic bytes, else by a ``.gz`` or
        ``.bz2`` extension).
    n_features : int, optional
        Number of columns; pads the data's own width (largest index).  An index that does
        not fit raises :class:`DataFormatError`.
    dense : bool, default False
        Return X as a dense ndarray instead of a CSR matrix.
    dtype : numpy dtype, default float64
        dtype of X (the labels are always float64).
    zero_based : bool or "auto", default "auto"
        Whether indices start at 0.  ``False``: indices are 1-based and an index < 1 is a
        malformed line.  ``True``: index ``i`` is column ``i``.  ``"auto"`` (as
        scikit-learn's ``load_svmlight_file``): zero-based if the file holds an index 0,
        else one-based.  The shared Adult files are written zero-based (indices 0-122).

    Returns
    -------
    X : scipy.sparse.csr_matrix or ndarray, shape (n_samples, n_features)
        CSR with sorted indices and no duplicates (explicit zeros written in the file are
        kept as stored entries), or a dense array if ``dense=True``.
    y : ndarray of float64, shape (n_samples,)
        The labels as written.

    Raises
    ------
    DataFormatError
        On a malformed line (message: ``file:line: problem: 'token'``), an empty file (no
        data lines), an index beyond ``n_features``, or a corrupt compressed file.
    FileNotFoundError
        If the file does not exist.
    """
    if n_features is not None and n_features < 0:
        raise ValueError(f"n_features must be >= 0, got {n_features}")
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    name = os.fspath(path)
    text = _read_text(name)
    rows = _parse_fast(text, zero_based)
    if rows is None:
        rows = _parse_slow(text, name, zero_based)
    X = _assemble(rows, name, n_features, zero_based, dtype)
    if dense:
        return np.asarray(X.toarray()), rows.labels
    return X, rows.labels


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

# non-zeros formatted per chunk: bounds the writer's temporaries (a few hundred MB at most)
_WRITE_NNZ: Final = 1 << 21
_SPACE: Final = ord(" ")
_COLON: Final = ord(":")
_NEWLINE: Final = ord("\n")
# integral values below this are written as integers ("3", not "3.0"): exact in float64
_INT_EXACT: Final = float(2**53)
# a float64's shortest round-trip text is at most 24 characters ("-2.2250738585072014e-308")
_FLOAT_TEXT: Final = "S24"
_TEXT_WIDTH: Final = 24
# values are formatted once per distinct value when a sample of this size has few of them
_SAMPLE: Final = 4096
# column numbers are formatted once, in a table, up to this many columns
_TABLE_COLUMNS: Final = 1 << 24
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


def _trim(mat: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """Drop the trailing columns that are null in every row (keep at least one)."""
    used = np.flatnonzero((mat != 0).any(axis=0))
    return mat[:, : int(used[-1]) + 1] if used.size else mat[:, :1]


def _byte_matrix(tokens: NDArray[Any]) -> NDArray[np.uint8]:
    """Fixed-width byte strings as an (n, width) uint8 matrix, trimmed to the longest one."""
    return _trim(_bytes_of(tokens))


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


def _format_values(v: FloatArray) -> NDArray[np.uint8]:
    """:func:`_format_numbers`, formatting each distinct value once when there are few of them."""
    if v.size >= _SAMPLE:
        sample = v[:: v.size // _SAMPLE]
        if np.unique(sample).size * 4 <= sample.size:   # counts, binary or quantized data
            distinct, inverse = np.unique(v, return_inverse=True)
            return _format_numbers(distinct)[inverse.ravel()]
    return _format_numbers(v)


def _format_labels(y: FloatArray) -> NDArray[np.uint8]:
    """Labels as text: integral ones as integers with a sign ("+1", "-1"), others as floats."""
    text = _format_numbers(y)
    plus = (y > 0) & (y < _INT_EXACT) & (y == np.trunc(y))
    out = np.zeros((y.shape[0], _TEXT_WIDTH + 1), dtype=np.uint8)
    out[:, 1:] = text
    out[plus, 0] = ord("+")
    return out


def _svmlight_chunk(block: Any, labels: NDArray[np.uint8], table: NDArray[Any] | None,
                    offset: int) -> bytes:
    """The SVMlight text of the rows of a canonical CSR block (no explicit zeros), as bytes.

    Every token is laid out in a fixed-width slot of a byte matrix (label; `` index:value`` per
    non-zero; the newline), null padded; dropping the nulls leaves the text in row order.
    """
    rows = int(block.shape[0])
    nnz = int(block.nnz)
    counts = np.diff(block.indptr).astype(np.intp)
    if table is not None:
        idx = _byte_matrix(table[block.indices])
    else:
        idx = _byte_matrix((block.indices.astype(np.int64) + offset).astype("S21"))
    val = _trim(_format_values(np.asarray(block.data, dtype=np.float64)))
    wi, wv = idx.shape[1], val.shape[1]
    wf = wi + wv + 2
    width = max(wf, labels.shape[1])
    slots = np.zeros((nnz + 2 * rows, width), dtype=np.uint8)
    first = block.indptr[:-1].astype(np.intp) + 2 * np.arange(rows)   # each row's label slot
    slots[first, : labels.shape[1]] = labels
    slots[first + counts + 1, 0] = _NEWLINE
    feat = np.empty((nnz, wf), dtype=np.uint8)
    feat[:, 0] = _SPACE
    feat[:, 1 : 1 + wi] = idx
    feat[:, 1 + wi] = _COLON
    feat[:, 2 + wi :] = val
    slots[np.arange(nnz) + 2 * np.repeat(np.arange(rows), counts) + 1, :wf] = feat
    flat = slots.ravel()
    text: bytes = flat[flat != 0].tobytes()
    return text


def _row_chunks(X: Any, m: int, n: int) -> list[tuple[int, int]]:
    """Row ranges of about ``_WRITE_NNZ`` stored entries each."""
    if sp.issparse(X):
        indptr = np.asarray(X.indptr, dtype=np.int64)
        stops = np.searchsorted(indptr, np.arange(_WRITE_NNZ, int(indptr[-1]), _WRITE_NNZ), side="left")
        cuts = np.unique(np.concatenate(([0], stops, [m])))
    else:
        cuts = np.unique(np.r_[np.arange(0, m, max(1, _WRITE_NNZ // max(1, n))), m])
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def dump_svmlight(
    path: str | os.PathLike[str],
    X: Any,
    y: Any,
    *,
    zero_based: bool = False,
) -> None:
    """Write a data set as a LIBSVM/SVMlight text file (the format :func:`load_svmlight` reads).

    One line per row: ``label index:value index:value ...``, the non-zeros only, indices
    strictly increasing. Indices are 1-based by default (as SVMlight, LIBSVM and libocas's
    ``svmocas`` read them). Integral labels are written as signed integers (``+1``, ``-1``),
    others, like every non-integral value, as their shortest round-trip decimal text (Python's
    ``repr``), so reading the file back gives exactly the same float64 numbers; integral values
    are written as integers (``3``, not ``3.0``). The text is built in bulk with numpy, a chunk
    of about two million non-zeros at a time.

    Parameters
    ----------
    path : str or os.PathLike
        The file; a ``.gz`` or ``.bz2`` name is compressed accordingly. Overwritten if it exists.
    X : array_like or scipy.sparse matrix, shape (n_samples, n_features)
        The data, real and finite. Explicit zeros of a sparse matrix are not written; duplicate
        entries are summed.
    y : array_like, shape (n_samples,)
        The labels, real and finite.
    zero_based : bool, default False
        Write column j as index j (True) or j + 1 (False).

    Raises
    ------
    ValueError
        On a shape mismatch, a non-real dtype, or NaN/inf in X or y (checked before the file is
        opened).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        values = X.data
    else:
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X: expected a 2-D array (rows are examples), got shape {X.shape}")
        values = X
    if not (values.dtype == np.bool_ or np.issubdtype(values.dtype, np.integer)
            or np.issubdtype(values.dtype, np.floating)):
        raise ValueError(f"X: dtype {values.dtype} is not real numeric")
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise ValueError("X: contains NaN or inf; the SVMlight format holds finite numbers only")
    m, n = (int(s) for s in X.shape)
    yv = np.asarray(y)
    if yv.shape != (m,):
        raise ValueError(f"y: shape mismatch, expected ({m},) labels for {m} rows, got {yv.shape}")
    if not (yv.dtype == np.bool_ or np.issubdtype(yv.dtype, np.integer) or np.issubdtype(yv.dtype, np.floating)):
        raise ValueError(f"y: dtype {yv.dtype} is not real numeric")
    labels_f = yv.astype(np.float64)
    if not np.isfinite(labels_f).all():
        raise ValueError("y: contains NaN or inf; labels must be finite numbers")
    offset = 0 if zero_based else 1
    table = np.arange(offset, n + offset).astype("S21") if n <= _TABLE_COLUMNS else None
    labels = _format_labels(labels_f)
    name = os.fspath(path)
    suffix = pathlib.Path(name).suffix.lower()
    opener: Any = gzip.open if suffix == ".gz" else bz2.open if suffix == ".bz2" else open
    with opener(name, "wb") as fh:
        for a, b in _row_chunks(X, m, n):
            block = X[a:b] if sp.issparse(X) else sp.csr_matrix(np.asarray(X[a:b], dtype=np.float64))
            if sp.issparse(X):
                block.sum_duplicates()
                block.eliminate_zeros()
            fh.write(_svmlight_chunk(block, _trim(labels[a:b]), table, offset))


# how many folders above the working directory data_dir() looks for shared/data
_SEARCH_LEVELS: Final = 3


def _repository_root() -> pathlib.Path | None:
    """The checkout holding this package, or None when it runs from an installed copy."""
    root = pathlib.Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "problems" / "datasets.py").is_file():
        return root
    return None


def data_dir() -> pathlib.Path:
    """The shared data folder (the real data sets, see :func:`load_dataset`).

    Searched in this order, the first existing folder wins:

    1. ``$QPCORE_DATA``, if that variable is set and not empty (then it must be a folder);
    2. ``<repository root>/../shared/data`` when running from a checkout (the root is the folder
       holding ``pyproject.toml`` and the ``problems`` package);
    3. ``shared/data`` in the current working directory and in each of its first three
       parents (so ``./shared/data``, ``../shared/data``, ...), which finds the data from an
       installed package too.

    Returns
    -------
    pathlib.Path
        The folder (as given in ``$QPCORE_DATA``, else resolved).

    Raises
    ------
    FileNotFoundError
        If ``$QPCORE_DATA`` is set but not a folder, or no candidate folder exists; the message
        names every place tried and says to set ``QPCORE_DATA``.
    """
    env = os.environ.get("QPCORE_DATA")
    if env:
        path = pathlib.Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"QPCORE_DATA={env!r} is not a folder; point it at the shared data folder"
            )
        return path
    candidates: list[pathlib.Path] = []
    root = _repository_root()
    if root is not None:
        candidates.append((root.parent / "shared" / "data").resolve())
    cwd = pathlib.Path.cwd().resolve()
    for folder in [cwd, *cwd.parents][: _SEARCH_LEVELS + 1]:
        candidates.append(folder / "shared" / "data")
    tried: list[pathlib.Path] = []
    for path in candidates:
        if path in tried:
            continue
        if path.is_dir():
            return path.resolve()
        tried.append(path)
    raise FileNotFoundError(
        "shared data folder not found; tried "
        + ", ".join(str(p) for p in tried)
        + ". Set QPCORE_DATA to the folder holding the data sets "
        "(or put shared/data beside the repository)"
    )


@overload
def load_dataset(
    name: str,
    split: str = ...,
    *,
    n_features: int | None = ...,
    dense: Literal[False] = ...,
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[Any, FloatArray]: ...


@overload
def load_dataset(
    name: str,
    split: str = ...,
    *,
    n_features: int | None = ...,
    dense: Literal[True],
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[NDArray[Any], FloatArray]: ...


@overload
def load_dataset(
    name: str,
    split: str = ...,
    *,
    n_features: int | None = ...,
    dense: bool,
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[Any, FloatArray]: ...


def load_dataset(
    name: str,
    split: str = "trn",
    *,
    n_features: int | None = None,
    dense: bool = False,
    dtype: DTypeLike = np.float64,
    zero_based: ZeroBased = "auto",
) -> tuple[Any, FloatArray]:
    """Load one of the shared real data sets, ``{name}.{split}.bz2`` in :func:`data_dir`.

    Parameters
    ----------
    name : {"adult", "ijcnn1", "reuters"}
        The data set.
    split : str, default "trn"
        ``"trn"`` or, for adult, ``"tst"``.
    n_features, dense, dtype, zero_based
        As in :func:`load_svmlight`; for adult ``n_features`` defaults to 123 so both
        splits have the same width.

    Returns
    -------
    X : scipy.sparse.csr_matrix or ndarray
        The inputs.
    y : ndarray of float64
        The labels (+1/-1).

    Raises
    ------
    ValueError
        If ``name`` is unknown.
    FileNotFoundError
        If the data folder or the file is missing.
    """
    if name not in DATASET_NAMES:
        raise ValueError(f"unknown data set {name!r}; expected one of {DATASET_NAMES}")
    path = data_dir() / f"{name}.{split}.bz2"
    if not path.is_file():
        have = sorted(p.name for p in path.parent.glob(f"{name}.*.bz2"))
        raise FileNotFoundError(f"{path} not found (available for {name!r}: {have})")
    if name == "adult" and n_features is None:
        n_features = 123
    return load_svmlight(
        path, n_features=n_features, dense=dense, dtype=dtype, zero_based=zero_based
    )


# --------------------------------------------------------------------------------------------
# Platt's artificial data sets (SMO paper, 1998, section 4)
# --------------------------------------------------------------------------------------------

_BATCH_ROWS: Final = 8192
_MAX_BATCHES: Final = 10_000


def _check_platt_args(n: int, d: int, density: float) -> None:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density}")


def _binary_batch(rng: np.random.Generator, rows: int, d: int, density: float) -> Any:
    """``rows`` random binary vectors, each bit on with probability ``density``, as CSR."""
    bits = rng.random((rows, d), dtype=np.float32) < density
    return sp.csr_matrix(bits, dtype=np.float64)


def _stack(parts: list[Any], n: int, d: int) -> Any:
    if not parts:
        return sp.csr_matrix((n, d), dtype=np.float64)
    X = sp.vstack(parts, format="csr")[:n]
    X.sort_indices()
    return X


def platt_hyperplane(
    *, seed: int = 0, d: int = 300, density: float = 0.1
) -> tuple[FloatArray, float]:
    """The labelling hyperplane of :func:`platt_sparse_separable` for the same arguments.

    Parameters
    ----------
    seed : int, default 0
        Seed of ``numpy.random.default_rng``; the weights are its first draw.
    d : int, default 300
        Input dimension.
    density : float, default 0.1
        Probability that an input bit is on.

    Returns
    -------
    w : ndarray of float64, shape (d,)
        Weights drawn uniformly in [-1, 1] (Platt's choice).
    b : float
        Threshold ``density * sum(w)``, the mean of ``w @ x`` over the random inputs, so
        that the two classes are balanced in expectation.
    """
    _check_platt_args(0, d, density)
    w = np.random.default_rng(seed).uniform(-1.0, 1.0, size=d)
    return w, float(density * w.sum())


def platt_sparse_separable(
    n: int, *, seed: int = 0, d: int = 300, density: float = 0.1
) -> tuple[Any, FloatArray]:
    """Platt's linearly separable data set (SMO paper, 1998, section 4).

    Inputs are random binary ``d``-vectors with each bit on with probability ``density``
    (Platt: 300 dimensions, 10% of the bits on).  A weight vector ``w`` uniform in
    ``[-1, 1]^d`` labels them: ``y = sign(w @ x - b)``, and a point with
    ``|w @ x - b| < 1`` is discarded, so the set is separable with functional margin at
    least 1 by ``(w, b)``.  Platt used ``b = 0``; here ``b = density * sum(w)`` (the mean
    of ``w @ x``) so the classes come out roughly balanced.  Points are drawn in batches
    until ``n`` are kept; ``(w, b)`` is given by :func:`platt_hyperplane`.

    Parameters
    ----------
    n : int
        Number of points kept.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.
    d : int, default 300
        Input dimension.
    density : float, default 0.1
        Probability that an input bit is on.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64, shape (n, d)
        Binary inputs (sorted indices).
    y : ndarray of float64, shape (n,)
        Labels in {-1, +1}.

    Raises
    ------
    ValueError
        On bad arguments, or if almost no point clears the margin (tiny ``d * density``).
    """
    _check_platt_args(n, d, density)
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1.0, 1.0, size=d)  # first draw: matches platt_hyperplane
    b = density * float(w.sum())
    parts: list[Any] = []
    labels: list[FloatArray] = []
    kept = 0
    for _ in range(_MAX_BATCHES):
        if kept >= n:
            break
        batch = _binary_batch(rng, _BATCH_ROWS, d, density)
        margin = np.asarray(batch @ w, dtype=np.float64) - b
        keep = np.abs(margin) >= 1.0
        parts.append(batch[keep])
        labels.append(np.where(margin[keep] > 0, 1.0, -1.0))
        kept += int(keep.sum())
    else:
        if kept < n:
            raise ValueError(
                f"only {kept} of {_MAX_BATCHES * _BATCH_ROWS} random points cleared the "
                f"margin; increase d or density"
            )
    y = np.concatenate(labels)[:n] if labels else np.zeros(0, dtype=np.float64)
    return _stack(parts, n, d), y


def platt_random_labels(
    n: int, *, seed: int = 0, d: int = 300, density: float = 0.1
) -> tuple[Any, FloatArray]:
    """Platt's noise data set (SMO paper, 1998, section 4): random inputs, random labels.

    Inputs are random binary ``d``-vectors with each bit on with probability ``density``
    (Platt: 300 dimensions, 10% of the bits on); labels are +1 or -1 with probability 1/2
    each, independent of the inputs.

    Parameters
    ----------
    n : int
        Number of points.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.
    d : int, default 300
        Input dimension.
    density : float, default 0.1
        Probability that an input bit is on.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64, shape (n, d)
        Binary inputs (sorted indices).
    y : ndarray of float64, shape (n,)
        Labels in {-1, +1}.
    """
    _check_platt_args(n, d, density)
    rng = np.random.default_rng(seed)
    parts = [
        _binary_batch(rng, min(_BATCH_ROWS, n - start), d, density)
        for start in range(0, n, _BATCH_ROWS)
    ]
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return _stack(parts, n, d), y
