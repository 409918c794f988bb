"""The LIBSVM/SVMlight text format: a fast reader and writer.

:func:`load_svmlight` parses the whole file in bulk with numpy (a few C-level passes over the
text), and only when that bulk parse or its validation fails does it re-read the file line by
line, so that a malformed line is reported with the file name, its 1-based line number and the
token. :func:`dump_svmlight` writes a data set back, a chunk of rows at a time, with the values'
text built in bulk by :mod:`qpcore_formulations.data.float_text`, so that reading the file back gives exactly the
same float64 numbers.
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

from qpcore_formulations.data.float_text import byte_matrix, format_labels, format_values, trim

__all__ = ["DataFormatError", "ZeroBased", "dump_svmlight", "load_svmlight"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: How indices are numbered: from 0 (True), from 1 (False), or told from the file ("auto").
ZeroBased = bool | Literal["auto"]

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


# non-zeros formatted per chunk: bounds the writer's temporaries (a few hundred MB at most)
_WRITE_NNZ: Final = 1 << 21
_SPACE: Final = ord(" ")
_COLON: Final = ord(":")
_NEWLINE: Final = ord("\n")
# column numbers are formatted once, in a table, up to this many columns
_TABLE_COLUMNS: Final = 1 << 24


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
        idx = byte_matrix(table[block.indices])
    else:
        idx = byte_matrix((block.indices.astype(np.int64) + offset).astype("S21"))
    val = trim(format_values(np.asarray(block.data, dtype=np.float64)))
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
    labels = format_labels(labels_f)
    name = os.fspath(path)
    suffix = pathlib.Path(name).suffix.lower()
    opener: Any = gzip.open if suffix == ".gz" else bz2.open if suffix == ".bz2" else open
    with opener(name, "wb") as fh:
        for a, b in _row_chunks(X, m, n):
            block = X[a:b] if sp.issparse(X) else sp.csr_matrix(np.asarray(X[a:b], dtype=np.float64))
            if sp.issparse(X):
                block.sum_duplicates()
                block.eliminate_zeros()
            fh.write(_svmlight_chunk(block, trim(labels[a:b]), table, offset))
