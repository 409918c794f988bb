"""Linear SVM data held as row chunks on a Dask cluster: validation, labels, the chunked operator.

:func:`qpcore_formulations.asvm.asvm_dual` and :func:`qpcore_formulations.risk.hinge_svm` come here when their data is a
dask array: the rows stay on the workers, each chunk becomes a
:class:`qpcore.backends.lowrank.DiagPlusLowRankQ` of its own rows (validated there: NaN/inf raise before any
solve starts), the labels are mapped to ±1 chunk by chunk after one reduction of the distinct
values, and the result is a :class:`qpcore.backends.chunked.ChunkedLowRankQ`. Only the distinct labels and a
few counts reach the client.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.backends.chunked import ChunkedLowRankQ, ChunkedVector, PerChunk, RowSpace, connect
from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore.core.problem import ProblemError

FloatArray = NDArray[np.float64]

__all__ = ["ChunkedData", "chunked_data", "is_dask_array", "loss_sum"]


def is_dask_array(X: Any) -> bool:
    """Whether X is a dask array (checked without importing dask)."""
    return type(X).__module__.startswith("dask.") and hasattr(X, "chunks") and hasattr(X, "to_delayed")


def _labels_of(y: Any) -> tuple[list[Any], int, bool]:
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ProblemError(f"y: expected a 1-D array of labels, got shape {arr.shape}")
    finite = True
    if np.issubdtype(arr.dtype, np.number):
        finite = bool(np.isfinite(arr.astype(np.float64)).all())
    return list(np.unique(arr)), int(arr.size), finite


def _as_rows(X: Any) -> Any:
    if sp.issparse(X):
        return X
    if hasattr(X, "tocsr"):          # pydata/sparse COO and friends
        return X.tocsr()
    return X


def _block(X: Any, y: Any, positive: Any, d: float, bias: float | None, scale: Any = None) -> DiagPlusLowRankQ:
    """The chunk's operator: validates its rows (NaN/inf raise ProblemError here, on the worker).
    With ``scale`` (the chunk's per-row divisors) the diagonal is d / scale."""
    X = _as_rows(X)
    s = np.where(np.asarray(y) == positive, 1.0, -1.0)
    return DiagPlusLowRankQ(d if scale is None else d / np.asarray(scale, dtype=np.float64), X, row_scale=s,
                            bias=bias)


def _diag_part(block: DiagPlusLowRankQ) -> FloatArray:
    return block.d


def _rows(block: DiagPlusLowRankQ) -> tuple[int]:
    return (int(block.shape[0]),)


def _signs(block: DiagPlusLowRankQ) -> FloatArray:
    assert block.s is not None
    return block.s


class ChunkedData:
    """The outcome of :func:`chunked_data`: the operator, the ±1 labels and the classes.

    Attributes
    ----------
    Q : ChunkedLowRankQ
        d·I + HHᵀ, H = diag(y)·[X, β·e], over the chunks.
    y : ChunkedVector
        The ±1 labels, chunk by chunk.
    classes : ndarray
        The two original labels ``[negative, positive]``.
    n_features : int
        Columns of X.
    """

    def __init__(self, Q: ChunkedLowRankQ, y: ChunkedVector, classes: NDArray[Any], n_features: int) -> None:
        self.Q, self.y, self.classes, self.n_features = Q, y, classes, n_features


def chunked_data(X: Any, y: Any, *, d: float, bias: float | None, client: Any = None,
                 scale: FloatArray | None = None) -> ChunkedData:
    """Put a dask array of rows (dense or sparse chunks) and its labels in chunked-operator form.

    Parameters
    ----------
    X : dask.array.Array
        m×n, chunked by rows (column chunks are merged: each row chunk must hold whole rows).
        Chunks may be numpy arrays or scipy.sparse matrices; uneven and empty chunks are fine.
    y : dask.array.Array or array_like
        The m labels, exactly two distinct values (the larger is +1); rechunked to X's rows.
    d : float
        The operator's diagonal (ASVM: 1/ν; the hinge dual: 0).
    bias : float or None
        β of H's constant column (None: none).
    scale : ndarray, optional
        m positive divisors of the diagonal, validated by the caller (ASVM's sample weights:
        d_i = d / scale_i); the operator's ``d`` is then a :class:`ChunkedVector`.
    client : distributed.Client or str, optional
        The cluster to use (the default client when omitted). None is ever started here.

    Returns
    -------
    ChunkedData

    Raises
    ------
    ProblemError
        Before any solve: no client, NaN/inf in X or y, a shape mismatch, labels that are not two
        classes.
    """
    da: Any = importlib.import_module("dask.array")
    client = connect(client)
    if X.ndim != 2:
        raise ProblemError(f"X: expected a 2-D dask array (rows are points), got {X.ndim} dimensions")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})          # a task must see whole rows
    m, n = int(X.shape[0]), int(X.shape[1])
    if m == 0:
        raise ProblemError("X: no rows")
    if not is_dask_array(y):
        y_np = np.asarray(y)
        if y_np.ndim != 1 or y_np.shape[0] != m:
            raise ProblemError(f"y: shape mismatch, expected ({m},) labels for {m} rows, got {y_np.shape}")
        y = da.from_array(y_np, chunks=(X.chunks[0],))
    else:
        if any(np.isnan(c) for c in y.chunks[0]):
            y = y.compute_chunk_sizes()
        if y.ndim != 1 or int(y.shape[0]) != m:
            raise ProblemError(f"y: shape mismatch, expected ({m},) labels for {m} rows, got {tuple(y.shape)}")
        if y.chunks[0] != X.chunks[0]:
            y = y.rechunk((X.chunks[0],))
    space = RowSpace(client, X.chunks[0])
    xf = client.compute(list(X.to_delayed().ravel()))
    yf = client.compute(list(y.to_delayed().ravel()))
    labels, total, finite = space.reduce(_labels_of, PerChunk(yf), ops=("list", "sum", "all"), name="qpcore-labels")
    if not finite:
        raise ProblemError("y: contains NaN or inf; labels must be two distinct finite values")
    classes = np.unique(np.asarray(labels))
    if classes.size != 2:
        shown = ", ".join(map(str, classes[:5])) + (" ..." if classes.size > 5 else "")
        raise ProblemError(f"y: labels must take exactly two distinct values, got {classes.size}: [{shown}]")
    sf: Any = None
    if scale is not None:
        if np.shape(scale) != (m,):
            raise ProblemError(f"scale: shape mismatch, expected ({m},), got {np.shape(scale)}")
        sf = PerChunk(client.compute(list(da.from_array(np.asarray(scale, dtype=np.float64),
                                                        chunks=(X.chunks[0],)).to_delayed().ravel())))
    blocks = space.map(_block, PerChunk(xf), PerChunk(yf), classes[1], float(d), bias, sf, name="qpcore-block")
    # the blocks are built (and validated) now, so bad data raises here, before any solve
    (rows,) = space.reduce(_rows, PerChunk(blocks), ops=("sum",), name="qpcore-validate")
    if rows != m:
        raise ProblemError(f"X: the chunks hold {rows} rows, the array says {m}")
    sparse = isinstance(X._meta, sp.spmatrix) or sp.issparse(X._meta) or hasattr(X._meta, "tocsr")
    Q = ChunkedLowRankQ(space, blocks, d=float(d), p=n, bias=bias, sparse=bool(sparse))
    if scale is not None:
        Q.d = ChunkedVector(space, space.map(_diag_part, Q.blocks, name="qpcore-diagonal"))
    ypm = ChunkedVector(space, space.map(_signs, Q.blocks, name="qpcore-labels"))
    return ChunkedData(Q=Q, y=ypm, classes=classes, n_features=n)


def _loss_chunk(block: DiagPlusLowRankQ, z: FloatArray, weight: FloatArray, power: int) -> tuple[float]:
    xi = np.maximum(0.0, 1.0 - np.asarray(block.matvec_lowrank(z), dtype=np.float64))
    return (float(weight @ (xi * xi if power == 2 else xi)),)


def loss_sum(Q: ChunkedLowRankQ, z: FloatArray, weight: ChunkedVector | float = 1.0, *, power: int = 1) -> float:
    """Σ_i C_i max(0, 1 − h_iᵀz)^power over the chunks (one reduction): the hinge (power 1) or the
    squared hinge (power 2) with H's rows h_i (labels and bias included)."""
    wv = weight if isinstance(weight, ChunkedVector) else Q.space.full(float(weight))
    (total,) = Q.space.reduce(_loss_chunk, Q.blocks, np.asarray(z, dtype=np.float64), wv, int(power),
                              ops=("sum",), name="qpcore-loss")
    return float(total)
