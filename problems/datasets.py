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
