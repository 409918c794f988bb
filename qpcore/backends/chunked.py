"""Row-partitioned data on Dask workers: vectors, the diagonal-plus-low-rank operator, certificates.

When the data outgrow one machine, the methods that touch it only through passes with small
results (ASVM, the cutting planes) run those passes where the data live. This module is the
backend for that: the rows of H = diag(s)·[F, β·e] are split into chunks held on the workers of
a ``dask.distributed`` cluster, and every pass is a **map-reduce on the chunks**: one task per
chunk computes a partial result from its rows, a tree of combine tasks adds (or takes the max of)
the partials, and only the root, a k×k matrix, a k-vector or scalars, comes back to the client.

- :class:`RowSpace` is the partition (the client and the chunk sizes) and the two primitives every
  pass is made of: :meth:`RowSpace.map` (a task per chunk, results kept on the workers) and
  :meth:`RowSpace.reduce` (the same, then the tree reduction and one small result gathered).
- :class:`ChunkedVector` is an m-vector of the problem (a dual variable, a gradient, margins) as one
  numpy array per chunk, on the worker that holds the chunk's rows. Arithmetic builds new chunks
  on the workers; nothing of length m is gathered unless :meth:`ChunkedVector.to_numpy` is called.
- :class:`ChunkedLowRankQ` is :class:`qpcore.backends.lowrank.DiagPlusLowRankQ` over the chunks: each chunk
  holds a ``DiagPlusLowRankQ`` of its own rows, so every per-chunk computation is that class's
  own (one home for Hᵀv, H z, the weighted Gram matrices), and the chunked operator only adds
  the reductions.
- :class:`ChunkedRows` is :class:`qpcore.backends.rowspace.Rows` on the cluster (``ChunkedLowRankQ.row_space()``):
  the primitives ASVM and the cutting planes are written over, so the same algorithm code runs
  here and in process; a pass that keeps m-vectors picks its partials with one task per worker,
  beside the chunks, and the client's BLAS runs one thread between passes.
- The certificate: ``ChunkedVector`` is a :class:`qpcore.backends.vectors.DistributedVector` and
  ``ChunkedLowRankQ`` a :class:`qpcore.backends.vectors.DistributedOperator`, so :func:`qpcore.core.certificate.kkt`,
  :func:`qpcore.core.optimality.lagrangian_bound` and the loop ask them (``kkt_terms``,
  ``lagrangian_bound``, ``all_finite``...) and compute the same per-element terms chunk by chunk.

Dask is the engine (its scheduler places the tasks next to their chunks, and recomputes a lost
chunk from its source when a worker dies); it is an optional extra and imported only when a
chunked problem is built. A cluster is never started here: the caller's ``Client`` (or a
scheduler address to connect to) is used.
"""

from __future__ import annotations

import importlib
import operator
from typing import Any, Callable, ClassVar, Sequence

import numpy as np
from numpy.typing import NDArray

from qpcore.core.certificate import box_terms
from qpcore.backends.capabilities import Capability, OperatorStats
from qpcore.core.optimality import separable_minimum
from qpcore.core.problem import ProblemError
from qpcore.backends.rowspace import ClusterError, Rows
from qpcore.backends.vectors import DistributedOperator, DistributedVector, all_finite, max_abs_diff, same_point

FloatArray = NDArray[np.float64]

__all__ = ["ChunkedLowRankQ", "ChunkedRows", "ChunkedVector", "ClusterError", "RowSpace", "all_finite", "connect",
           "max_abs_diff", "same_point"]

_SPLIT_EVERY = 8     # fan-in of the tree reduction: a root after ⌈log_8(chunks)⌉ levels


def _cluster_errors() -> tuple[type[BaseException], ...]:
    """The exception types that mean "the cluster lost it", not "a task raised"."""
    from asyncio import CancelledError, TimeoutError as AsyncTimeout

    from distributed.client import FutureCancelledError
    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker

    return (KilledWorker, FutureCancelledError, CancelledError, CommClosedError, AsyncTimeout, OSError)


def connect(client: Any = None) -> Any:
    """The ``dask.distributed`` client to run on: the one given, one connected to a scheduler
    address, or the current default client. Never starts a cluster.

    Parameters
    ----------
    client : distributed.Client or str, optional
        A client, or the address of a running scheduler (``"tcp://host:8786"``).

    Returns
    -------
    distributed.Client

    Raises
    ------
    ProblemError
        When dask.distributed is not installed or there is no client to use.
    """
    try:
        distributed: Any = importlib.import_module("distributed")
    except ImportError:  # pragma: no cover - the extra is installed in the tests
        raise ProblemError("chunked data need dask.distributed: pip install 'qpcore[dask]'") from None
    if client is None:
        try:
            return distributed.get_client()
        except ValueError:
            raise ProblemError("no Dask client: create one (distributed.Client(...)) or pass client= "
                               "or a scheduler address; qpcore never starts a cluster by itself") from None
    if isinstance(client, str):
        return distributed.Client(client)
    if not isinstance(client, distributed.Client):
        raise ProblemError(f"client: expected a distributed.Client or a scheduler address, got {type(client).__name__}")
    return client


class _Const:
    """A vector whose entries are all one value: no chunks exist; tasks see ``np.full``."""

    __slots__ = ("value",)

    def __init__(self, value: float) -> None:
        self.value = float(value)


_PICK = "__qpcore_pick__"


def _arg(a: Any, rows: int) -> Any:
    if isinstance(a, _Const):
        return np.full(rows, a.value)
    if isinstance(a, dict) and _PICK in a:
        return a["value"][a[_PICK]]
    return a


def _call(fn: Callable[..., Any], rows: int, *args: Any) -> Any:
    """Run a chunk kernel: constant vectors become ``np.full`` of the chunk's length, and a part
    kept by :meth:`RowSpace.map_reduce` is taken out of its task's (kept, partial) pair."""
    return fn(*(_arg(a, rows) for a in args))


def _pick(pair: Any, i: int) -> Any:
    return pair[i]


def _combine(ops: tuple[str, ...], *parts: Any, pick: int | None = None) -> tuple[Any, ...]:
    """Combine partial results elementwise: ``sum``, ``max``, ``min``, ``all`` or ``list`` (concatenate).

    With ``pick``, each part is a task's (kept, partial) pair and its element ``pick`` is used.
    """
    if pick is not None:
        parts = tuple(p[pick] for p in parts)
    out = list(parts[0])
    for p in parts[1:]:
        for i, op in enumerate(ops):
            if op == "sum":
                out[i] = out[i] + p[i]
            elif op == "max":
                out[i] = max(out[i], p[i])
            elif op == "min":
                out[i] = min(out[i], p[i])
            elif op == "all":
                out[i] = bool(out[i]) and bool(p[i])
            elif op == "list":
                out[i] = list(out[i]) + list(p[i])
            else:
                raise ValueError(f"unknown combine op {op!r}")
    return tuple(out)


class RowSpace:
    """A partition of m rows into chunks on a Dask cluster, and the map/reduce primitives.

    Parameters
    ----------
    client : distributed.Client
        The client the tasks are submitted through.
    sizes : sequence of int
        The rows of each chunk (uneven sizes and empty chunks are allowed).
    """

    def __init__(self, client: Any, sizes: Sequence[int]) -> None:
        self.client = client
        self.sizes = tuple(int(s) for s in sizes)
        if any(s < 0 for s in self.sizes):
            raise ProblemError(f"chunk sizes must be ≥ 0, got {self.sizes}")
        self.offsets = np.concatenate(([0], np.cumsum(self.sizes, dtype=np.int64)))
        self.m = int(self.offsets[-1])
        #: tasks submitted and results gathered (the communication a run caused)
        self.counters = {"maps": 0, "reductions": 0, "tasks": 0, "bytes_gathered": 0}

    @property
    def n_chunks(self) -> int:
        """Number of chunks."""
        return len(self.sizes)

    def _columns(self, args: Sequence[Any]) -> list[list[Any]]:
        """Per-chunk argument lists: chunked vectors and per-chunk lists are split, the rest broadcast."""
        cols: list[list[Any]] = []
        for a in args:
            if isinstance(a, ChunkedVector):
                if a.space is not self and a.space.sizes != self.sizes:
                    raise ProblemError("chunked vectors on different partitions cannot be combined")
                cols.append([_Const(a.const)] * self.n_chunks if a.parts is None else a.columns())
            elif isinstance(a, PerChunk):
                cols.append(a.columns())
            else:
                cols.append([a] * self.n_chunks)
        return cols

    def map(self, fn: Callable[..., Any], *args: Any, name: str = "qpcore-map") -> list[Any]:
        """One task per chunk, ``fn(*chunk_args)``; the results stay on the workers (futures).

        Arguments that are :class:`ChunkedVector` or :class:`PerChunk` are split by chunk (a
        constant vector arrives as ``np.full`` of the chunk's length); anything else is passed
        whole to every task (keep it small: a k-vector, a few scalars).
        """
        cols = self._columns(args)
        n = self.n_chunks
        self.counters["maps"] += 1
        self.counters["tasks"] += n
        futs: list[Any] = self.client.map(_call, [fn] * n, list(self.sizes), *cols, pure=False,
                                          key=[f"{name}-{_token()}-{i}" for i in range(n)])
        return futs

    def tree(self, parts: list[Any], ops: tuple[str, ...], pick: int | None = None) -> Any:
        """The tree reduction of per-chunk partial results (futures), gathered: one small result.

        Combine tasks of fan-in 8 run on the workers until at most 8 partials are left; those
        are gathered and combined on the client (so a pass over ≤ 8 chunks costs one round trip,
        and the client never receives more than 8 partials whatever the number of chunks).
        With ``pick``, the parts are (kept, partial) pairs and the first level takes the partial.
        """
        self.counters["reductions"] += 1
        if not parts:
            raise ProblemError("a partition with no chunks")
        level = list(parts)
        while len(level) > _SPLIT_EVERY or pick is not None:
            level = [self.client.submit(_combine, ops, *level[i:i + _SPLIT_EVERY], pick=pick, pure=False)
                     for i in range(0, len(level), _SPLIT_EVERY)]
            pick = None
            self.counters["tasks"] += len(level)
        gathered = self.gather(level)
        out = gathered[0] if len(gathered) == 1 else _combine(ops, *gathered)
        return out

    def reduce(self, fn: Callable[..., tuple[Any, ...]], *args: Any, ops: tuple[str, ...],
               name: str = "qpcore-reduce") -> tuple[Any, ...]:
        """``map`` then ``tree``: ``fn`` returns a tuple of partial results combined by ``ops``."""
        out: tuple[Any, ...] = self.tree(self.map(fn, *args, name=name), ops)
        return out

    def map_reduce(self, fn: Callable[..., tuple[Any, Any]], *args: Any, ops: tuple[str, ...],
                   name: str = "qpcore-pass") -> tuple[list[Any], tuple[Any, ...]]:
        """One pass that both keeps and reports: ``fn`` returns ``(kept..., partial)``; the kept
        objects stay on the workers (one future per chunk) and the partials (the last elements)
        are tree-reduced.

        Returns
        -------
        (kept, reduced)
            The per-chunk futures of the (kept, partial) pairs, and the combined partial results.
            Wrap the pairs as ``ChunkedVector(space, pairs, pick=0)`` or ``PerChunk(pairs,
            pick=0)``; tasks that take them receive the kept object alone (no extra task).
        """
        pairs = self.map(fn, *args, name=name)
        # the partial is taken out by a tiny task beside each pair, so the kept m-vector never
        # travels to a combining worker
        n = self.n_chunks
        partials: list[Any] = self.client.map(_pick, pairs, [-1] * n, pure=False)
        self.counters["tasks"] += n
        return pairs, self.tree(partials, ops)

    def gather(self, futures: list[Any]) -> list[Any]:
        """Gather per-chunk results (for small per-chunk objects only), translating cluster losses."""
        try:
            out: list[Any] = self.client.gather(futures)
        except _cluster_errors() as e:
            raise ClusterError(f"the Dask cluster lost part of the data and could not recompute it ({type(e).__name__}: "
                               f"{e}); the run cannot go on") from e
        self.counters["bytes_gathered"] += sum(_nbytes(o) for o in out)
        return out

    def vector(self, parts: list[Any]) -> ChunkedVector:
        """A chunked vector from per-chunk futures of 1-D arrays."""
        return ChunkedVector(self, parts)

    def full(self, value: float) -> ChunkedVector:
        """The constant vector (no chunks are stored)."""
        return ChunkedVector(self, None, const=value)


class PerChunk:
    """Per-chunk arguments for :meth:`RowSpace.map` that are not vectors (e.g. the chunks' blocks)."""

    __slots__ = ("items", "pick")

    def __init__(self, items: Sequence[Any], *, pick: int | None = None) -> None:
        self.items = list(items)
        self.pick = pick

    def columns(self) -> list[Any]:
        """The per-chunk task arguments (picked out of (kept, partial) pairs on the worker)."""
        if self.pick is None:
            return list(self.items)
        return [{_PICK: self.pick, "value": f} for f in self.items]


_counter = [0]


def _token() -> str:
    import uuid

    _counter[0] += 1
    return f"{uuid.uuid4().hex[:8]}{_counter[0]}"


def _nbytes(obj: Any) -> int:
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    return 8


# --------------------------------------------------------------------------------------------- vectors
def _binop(op: str, a: Any, b: Any) -> FloatArray:
    out: FloatArray = getattr(operator, op)(a, b)
    return out


def _neg(a: FloatArray) -> FloatArray:
    return -a


def _dot(a: FloatArray, b: FloatArray) -> tuple[float]:
    return (float(a @ b),)


def _stats(a: FloatArray) -> tuple[float, float, bool, float]:
    fin = bool(np.isfinite(a).all())
    return (float(np.abs(a).max(initial=0.0)) if fin else np.inf, float(a.sum()), fin, float(a.min(initial=np.inf)))


def _absdiff(a: FloatArray, b: FloatArray) -> tuple[float]:
    return (float(np.abs(a - b).max(initial=0.0)),)


def _ident(a: FloatArray) -> FloatArray:
    return a


class ChunkedVector(DistributedVector):
    """An m-vector held as one numpy array per chunk of a :class:`RowSpace`, on the workers.

    Arithmetic with scalars and with vectors of the same partition runs on the workers and gives
    a new chunked vector; reductions (``@``, :meth:`sum`, :meth:`max_abs`, :meth:`all_finite`)
    bring back one number. Converting to numpy is explicit (:meth:`to_numpy`): ``np.asarray``
    refuses, so that no accidental gather of m numbers happens.

    Parameters
    ----------
    space : RowSpace
        The partition.
    parts : list of futures, or None
        One future per chunk of a float64 array of the chunk's length; None for a constant vector.
    const : float
        The value of a constant vector (``parts`` None).
    pick : int, optional
        The chunks are the outputs of a pass (tuples) and the vector is their element ``pick``.
    finite : bool, optional
        Whether every entry is finite, when the pass that computed the chunks reported it (then
        :meth:`all_finite` costs no reduction).
    """

    __array_ufunc__ = None      # numpy defers to our reflected operators (ndarray + ChunkedVector)

    def __init__(self, space: RowSpace, parts: list[Any] | None, *, const: float = 0.0,
                 pick: int | None = None, finite: bool | None = None) -> None:
        self.space = space
        self.parts = parts
        self.const = float(const)
        self.pick = pick
        self.finite = finite

    def columns(self) -> list[Any]:
        """The per-chunk task arguments (see :meth:`RowSpace.map_reduce` for ``pick``)."""
        assert self.parts is not None
        if self.pick is None:
            return list(self.parts)
        return [{_PICK: self.pick, "value": f} for f in self.parts]

    # ------------------------------------------------------------------ array-like
    @property
    def shape(self) -> tuple[int]:
        """(m,)."""
        return (self.space.m,)

    @property
    def size(self) -> int:
        """m."""
        return self.space.m

    ndim = 1
    dtype = np.dtype(np.float64)

    def __len__(self) -> int:
        return self.space.m

    def __array__(self, dtype: Any = None, copy: Any = None) -> NDArray[Any]:
        raise TypeError("a ChunkedVector lives on the Dask workers; call .to_numpy() to gather it on purpose")

    def copy(self) -> ChunkedVector:
        """The vector itself: chunks are never changed in place, so a copy is the same chunks."""
        return self

    def map(self, fn: Callable[..., FloatArray], *others: Any) -> ChunkedVector:
        """A new vector from ``fn(chunk, *other_chunks)`` on each chunk."""
        return ChunkedVector(self.space, self.space.map(fn, self, *others))

    def materialize(self) -> ChunkedVector:
        """Stored chunks of their own: a constant vector, or one picked from pairs, is copied into
        plain chunks (others are returned as they are)."""
        if self.parts is not None and self.pick is None:
            return self
        return self.map(_ident)

    # ------------------------------------------------------------------ arithmetic
    def _op(self, op: str, other: Any, reflect: bool = False) -> ChunkedVector:
        if isinstance(other, np.ndarray) and other.ndim:
            raise TypeError("a ChunkedVector combines with scalars and ChunkedVectors, not with numpy arrays")
        if not isinstance(other, ChunkedVector):
            other = float(other)
            if self.parts is None:
                v = _binop(op, other, self.const) if reflect else _binop(op, self.const, other)
                return ChunkedVector(self.space, None, const=float(v))
        elif self.parts is None and other.parts is None:
            v = _binop(op, other.const, self.const) if reflect else _binop(op, self.const, other.const)
            return ChunkedVector(self.space, None, const=float(v))
        a, b = (other, self) if reflect else (self, other)
        return ChunkedVector(self.space, self.space.map(_binop, op, a, b, name=f"qpcore-{op}"))

    def __add__(self, other: Any) -> ChunkedVector:
        return self._op("add", other)

    def __radd__(self, other: Any) -> ChunkedVector:
        return self._op("add", other, True)

    def __sub__(self, other: Any) -> ChunkedVector:
        return self._op("sub", other)

    def __rsub__(self, other: Any) -> ChunkedVector:
        return self._op("sub", other, True)

    def __mul__(self, other: Any) -> ChunkedVector:
        return self._op("mul", other)

    def __rmul__(self, other: Any) -> ChunkedVector:
        return self._op("mul", other, True)

    def __truediv__(self, other: Any) -> ChunkedVector:
        return self._op("truediv", other)

    def __rtruediv__(self, other: Any) -> ChunkedVector:
        return self._op("truediv", other, True)

    def __neg__(self) -> ChunkedVector:
        if self.parts is None:
            return ChunkedVector(self.space, None, const=-self.const)
        return self.map(_neg)

    # ------------------------------------------------------------------ reductions
    def __matmul__(self, other: ChunkedVector) -> float:
        if not isinstance(other, ChunkedVector):
            raise TypeError("a ChunkedVector's inner product is with another ChunkedVector")
        if self.parts is None and other.parts is None:
            return self.const * other.const * self.space.m
        (v,) = self.space.reduce(_dot, self, other, ops=("sum",), name="qpcore-dot")
        return float(v)

    def dot(self, other: ChunkedVector) -> float:
        """The inner product (one reduction)."""
        return self @ other

    def _stats(self) -> tuple[float, float, bool, float]:
        if self.parts is None:
            fin = bool(np.isfinite(self.const))
            m = self.space.m
            return (abs(self.const) if m else 0.0, self.const * m, fin, self.const if m else np.inf)
        mx, total, fin, mn = self.space.reduce(_stats, self, ops=("max", "sum", "all", "min"), name="qpcore-stats")
        return float(mx), float(total), bool(fin), float(mn)

    def sum(self) -> float:
        """Σ_i v_i."""
        return float(self._stats()[1])

    def max_abs(self) -> float:
        """max_i |v_i| (inf when an entry is not finite; 0 for an empty vector)."""
        return float(self._stats()[0])

    def min(self) -> float:
        """min_i v_i (inf for an empty vector)."""
        return float(self._stats()[3])

    def all_finite(self) -> bool:
        """Whether every entry is finite (as reported by the pass that computed it, when it did)."""
        if self.finite is not None:
            return self.finite
        return bool(self._stats()[2])

    def same_point(self, other: DistributedVector) -> bool:
        """Whether ``other`` is the same point: the same chunks (they are never changed in place)."""
        if not isinstance(other, ChunkedVector):
            return False
        if self.parts is None or other.parts is None:
            return self.parts is None and other.parts is None and self.const == other.const
        return self.pick == other.pick and all(x is y or x.key == y.key for x, y in zip(self.parts, other.parts))

    def max_abs_diff(self, other: DistributedVector) -> float:
        """max_i |self_i − other_i| (one reduction)."""
        if not isinstance(other, ChunkedVector):
            raise TypeError("a ChunkedVector is compared with another ChunkedVector")
        (v,) = self.space.reduce(_absdiff, self, other, ops=("max",), name="qpcore-absdiff")
        return float(v)

    # ------------------------------------------------------------------ leaving the cluster
    def to_numpy(self) -> FloatArray:
        """Gather the whole vector on the client (m numbers: for tests and small problems)."""
        if self.parts is None:
            return np.full(self.space.m, self.const)
        chunks = self.space.gather(self.materialize().parts if self.pick is not None else self.parts)  # type: ignore[arg-type]
        return np.concatenate([np.asarray(c, dtype=np.float64) for c in chunks]) if chunks else np.zeros(0)

    def to_dask(self) -> Any:
        """The vector as a dask array with the partition's chunks (nothing is gathered)."""
        dask: Any = importlib.import_module("dask")
        da: Any = importlib.import_module("dask.array")
        v = self.materialize()
        assert v.parts is not None
        blocks = [da.from_delayed(dask.delayed(f), shape=(s,), dtype=np.float64)
                  for f, s in zip(v.parts, self.space.sizes)]
        return da.concatenate(blocks) if blocks else da.zeros(0)

    def __repr__(self) -> str:
        kind = f"constant {self.const}" if self.parts is None else f"{self.space.n_chunks} chunks"
        return f"ChunkedVector(m={self.space.m}, {kind})"


_BLAS: list[Any] = []


def _one_blas_thread() -> Any:
    """A context in which this process's BLAS runs one thread (a no-op without threadpoolctl)."""
    import contextlib

    if not _BLAS:
        try:
            tpc: Any = importlib.import_module("threadpoolctl")
        except ImportError:
            _BLAS.append(None)
        else:
            _BLAS.append(tpc.ThreadpoolController())
    controller = _BLAS[0]
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


# --------------------------------------------------------------------------------------------- the operator
def _block_rmatvec(block: Any, v: FloatArray) -> tuple[FloatArray]:
    out: FloatArray = block.rmatvec_lowrank(v)
    return (out,)


def _block_matvec(block: Any, z: FloatArray) -> FloatArray:
    out: FloatArray = block.matvec_lowrank(z)
    return out


def _block_qmatvec(block: Any, x: FloatArray, p: FloatArray) -> FloatArray:
    out: FloatArray = block.matvec_lowrank(p)
    out += block.d * x
    return out


def _block_diag(block: Any) -> FloatArray:
    out: FloatArray = block.diag()
    return out


class ChunkedRows(Rows):
    """:class:`qpcore.backends.rowspace.Rows` on a Dask cluster: a task per chunk, tree reductions, and
    :class:`ChunkedVector` m-vectors that never leave the workers.

    Parameters
    ----------
    space : RowSpace
        The partition (its ``counters`` record the communication).
    blocks : PerChunk
        The chunks' ``DiagPlusLowRankQ`` operators.
    """

    def __init__(self, space: RowSpace, blocks: PerChunk) -> None:
        self.space = space
        self.blocks = blocks
        self.m = space.m
        self.counters = space.counters
        self._groups: list[list[int]] | None = None
        self._grouped = False

    def map(self, fn: Callable[..., Any], *args: Any, name: str) -> list[Any]:
        """:meth:`RowSpace.map`."""
        return self.space.map(fn, *args, name=name)

    def groups(self) -> list[list[int]] | None:
        """The chunks each worker holds (where their blocks are), asked once; None when not known."""
        if not self._grouped:
            self._grouped = True
            try:
                where = self.space.client.who_has(self.blocks.items)
            except Exception:  # noqa: BLE001 - only an optimization
                return None
            by: dict[str, list[int]] = {}
            for i, f in enumerate(self.blocks.items):
                held = where.get(f.key) or ("?",)
                by.setdefault(sorted(held)[0], []).append(i)
            out = [by[w] for w in sorted(by)]
            self._groups = out if sum(len(g) for g in out) == self.space.n_chunks else None
        return self._groups

    def map_reduce(self, fn: Callable[..., tuple[Any, ...]], *args: Any, ops: tuple[str, ...], name: str
                   ) -> tuple[list[Any], tuple[Any, ...]]:
        """A pass that keeps: the outputs stay on the workers; their partials (last elements) are
        picked and combined by one task per worker, beside the chunks (a kept m-vector never moves
        between workers), then tree-reduced."""
        space = self.space
        pairs = space.map(fn, *args, name=name)
        groups = self.groups() or [[i] for i in range(space.n_chunks)]
        token = _token()
        parts = [space.client.submit(_combine, ops, *(pairs[i] for i in g), pick=-1, pure=False,
                                     key=f"{name}-partial-{token}-{j}") for j, g in enumerate(groups)]
        space.counters["tasks"] += len(parts)
        reduced: tuple[Any, ...] = space.tree(parts, ops)
        return pairs, reduced

    def reduce(self, fn: Callable[..., tuple[Any, ...]], *args: Any, ops: tuple[str, ...], name: str
               ) -> tuple[Any, ...]:
        """:meth:`RowSpace.reduce`."""
        return self.space.reduce(fn, *args, ops=ops, name=name)

    def vector(self, outs: list[Any], pick: int | None = None, finite: bool | None = None) -> ChunkedVector:
        """The chunked vector of the outputs (their element ``pick``, picked on the workers)."""
        return ChunkedVector(self.space, outs, pick=pick, finite=finite)

    def kept(self, outs: list[Any], pick: int | None = None) -> PerChunk:
        """The outputs (their element ``pick``) as per-chunk arguments."""
        return PerChunk(outs, pick=pick)

    def sizes(self) -> PerChunk:
        """The chunk sizes, one per task."""
        return PerChunk(list(self.space.sizes))

    def client_context(self) -> Any:
        """The client's BLAS at one thread (when threadpoolctl is installed) while a run steps.

        The client's own linear algebra is small (k×k, the cutting planes' reduced problem): more
        threads gain nothing there, and after each call an OpenBLAS pool spins for a while; with
        the workers on the same machine (a local cluster) that spinning took a core from them.
        """
        return _one_blas_thread()

    def full(self, value: float) -> ChunkedVector:
        """The constant vector (no chunks stored)."""
        return self.space.full(value)

    def scalar_or_vector(self, v: Any) -> Any:
        """A constant chunked vector as its value (tasks then carry one number, no chunk)."""
        if isinstance(v, ChunkedVector) and v.parts is None:
            return v.const
        return v

    def adopt(self, x0: Any) -> ChunkedVector:
        """``x0`` when it is a chunked vector of this partition.

        Raises
        ------
        ProblemError
            For a numpy array (the start of a chunked problem lives on the cluster) or another partition.
        """
        if not isinstance(x0, ChunkedVector):
            raise ProblemError("x0: a chunked problem starts from a ChunkedVector (e.g. a previous result's x) or None")
        if x0.space.sizes != self.space.sizes:
            raise ProblemError(f"x0: its chunks {x0.space.sizes} are not the problem's {self.space.sizes}")
        return x0


class ChunkedLowRankQ(DistributedOperator):
    """Q = d·I + HHᵀ over row chunks on a Dask cluster; each chunk holds a
    :class:`qpcore.backends.lowrank.DiagPlusLowRankQ` of its rows (built and validated on the worker).

    Parameters
    ----------
    space : RowSpace
        The partition of the m rows.
    blocks : list of futures
        One future per chunk of a ``DiagPlusLowRankQ`` of the chunk's rows.
    d : float
        The diagonal, one value for all rows (≥ 0). A builder with a diagonal per row (each
        chunk's ``DiagPlusLowRankQ`` holding its own) sets ``d`` to a :class:`ChunkedVector` of them.
    p : int
        Columns of the data part F.
    bias : float or None
        β of H's constant column (None: no such column).
    sparse : bool
        Whether the chunks hold CSR data.
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.LOWRANK, Capability.CHUNKED})
    row_dtype: ClassVar[np.dtype[Any]] = np.dtype(np.float64)
    row_eps: ClassVar[float] = float(np.finfo(np.float64).eps)

    def __init__(self, space: RowSpace, blocks: list[Any], d: float, p: int, bias: float | None,
                 sparse: bool) -> None:
        self.space = space
        self.blocks = PerChunk(blocks)
        self.d: float | ChunkedVector = float(d)
        self.p = int(p)
        self.bias = bias
        self.k = self.p + (bias is not None)
        self.sparse = bool(sparse)
        self.stats = OperatorStats()

    @property
    def psd(self) -> bool:
        """Always True: d ≥ 0 and HHᵀ ⪰ 0."""
        return True

    @property
    def shape(self) -> tuple[int, int]:
        """(m, m)."""
        return (self.space.m, self.space.m)

    def row_space(self) -> ChunkedRows:
        """The chunks and the passes over them (:class:`qpcore.backends.rowspace.Rows`)."""
        return ChunkedRows(self.space, self.blocks)

    def diag(self) -> ChunkedVector:
        """Q_ii as a chunked vector."""
        return ChunkedVector(self.space, self.space.map(_block_diag, self.blocks, name="qpcore-diag"))

    def rmatvec_lowrank(self, v: ChunkedVector) -> FloatArray:
        """Hᵀv, a k-vector: a partial per chunk, tree-reduced."""
        (out,) = self.space.reduce(_block_rmatvec, self.blocks, v, ops=("sum",), name="qpcore-Htv")
        return np.asarray(out, dtype=np.float64)

    def matvec_lowrank(self, z: FloatArray) -> ChunkedVector:
        """H z, a chunked vector (z is sent to every chunk)."""
        z = np.asarray(z, dtype=np.float64)
        return ChunkedVector(self.space, self.space.map(_block_matvec, self.blocks, z, name="qpcore-Hz"))

    def matvec(self, x: ChunkedVector) -> ChunkedVector:
        """Q x = d x + H(Hᵀx): one reduction and one map."""
        p = self.rmatvec_lowrank(x)
        return ChunkedVector(self.space, self.space.map(_block_qmatvec, self.blocks, x, p, name="qpcore-Qx"))

    def rows(self, idx: Any) -> FloatArray:
        """Not available: rows of Q would be m long, gathered on the client."""
        raise ProblemError("rows of Q are not formed for chunked data (each would be m long); "
                           "use a strategy that works through passes (ASVM, the cutting planes)")

    def row(self, i: int) -> FloatArray:
        """Not available, as :meth:`rows`."""
        return self.rows([i])

    # ------------------------------------------------------------------ the certificate, chunk by chunk
    def kkt_terms(self, qp: Any, x: Any, g: Any) -> tuple[float, float, float, float]:
        """:func:`qpcore.core.certificate.box_terms` of a chunked point, per chunk, then the max: one reduction.

        Raises
        ------
        ProblemError
            When the problem has equality rows (chunked problems have none).
        """
        if qp.m:
            raise ProblemError("chunked problems have no equality rows")
        primal, stat, comp, xmax = self.space.reduce(_kkt_chunk, x, g, qp.lb, qp.ub, ops=("max", "max", "max", "max"),
                                                     name="qpcore-kkt")
        return float(primal), float(stat), float(comp), float(xmax)

    def lagrangian_bound(self, qp: Any, w: FloatArray) -> float:
        """:func:`qpcore.core.optimality.lagrangian_bound` chunk by chunk: one reduction."""
        w = np.asarray(w, dtype=np.float64)
        (total,) = self.space.reduce(_bound_chunk, self.blocks, w, qp.c, qp.lb, qp.ub, ops=("sum",),
                                     name="qpcore-bound")
        return float(-0.5 * (w @ w) + total)


# --------------------------------------------------------------------------------------------- certificates
def _kkt_chunk(x: FloatArray, g: FloatArray, lb: FloatArray, ub: FloatArray) -> tuple[float, float, float, float]:
    return box_terms(x, g, lb, ub)


def _bound_chunk(block: Any, w: FloatArray, c: FloatArray, lb: FloatArray, ub: FloatArray) -> tuple[float]:
    r = np.asarray(block.matvec_lowrank(w), dtype=np.float64) + c
    return (separable_minimum(r, block.d, lb, ub),)
