"""The map/reduce primitives a pass over the rows is made of, in process and on a cluster.

A method that touches the data only through passes with small results (ASVM, the cutting
planes) is written once against :class:`Rows`: a **kernel** is a module-level function that
takes a block of rows (a :class:`qpcore.backends.lowrank.DiagPlusLowRankQ` of them) and the matching
pieces of the m-vectors, and returns new m-vector pieces and a small partial result. The
backend runs it on every block and combines the partials:

- :class:`LocalRows` (in process): one block, the whole operator; a kernel runs once on the
  whole arrays and its partial is the result (no combining, no copies): the in-process path
  costs what a direct implementation would.
- ``qpcore.backends.chunked.ChunkedRows`` (a Dask cluster): one task per chunk where the chunk lives, a
  tree of combine tasks on the workers, only the root gathered; the m-vectors stay on the workers
  as :class:`qpcore.backends.chunked.ChunkedVector`.

Kernels never change their inputs (a cluster replays them to recompute a lost chunk), and take
vectors that are either the block's own arrays or scalars standing for constant vectors.
"""

from __future__ import annotations

import abc
import contextlib
from typing import Any, Callable, ContextManager, Protocol

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

__all__ = ["ClusterError", "LocalRows", "LowRankRows", "Rows"]


class ClusterError(RuntimeError):
    """The cluster lost work it could not recompute (a worker died and its chunks' source is gone,
    or the scheduler went away).

    Attributes
    ----------
    primal : ndarray or None
        The best primal point the client held when the run failed (ASVM's (w, γ) = Hᵀu, the
        cutting planes' w_b): small, on the client, so it survives the loss.
    iteration : int or None
        The iteration the run had reached.
    """

    def __init__(self, message: str, *, primal: FloatArray | None = None, iteration: int | None = None) -> None:
        super().__init__(message)
        self.primal = primal
        self.iteration = iteration


class Rows(abc.ABC):
    """The rows of an operator as blocks, and the passes over them.

    Attributes
    ----------
    m : int
        The number of rows (the length of the m-vectors).
    blocks : object
        The blocks, as a kernel's first argument: each kernel call receives one block's
        ``DiagPlusLowRankQ``.
    counters : dict
        ``maps``, ``reductions`` (round trips on a cluster), ``tasks``, ``bytes_gathered``.
    """

    m: int
    blocks: Any
    counters: dict[str, int]

    @abc.abstractmethod
    def map(self, fn: Callable[..., Any], *args: Any, name: str) -> list[Any]:
        """``fn(*block_args)`` on every block; the outputs stay where the blocks are (one per block).

        Vectors of this backend are split by block; anything else (a k-vector, scalars) is passed
        whole to every call.
        """

    @abc.abstractmethod
    def map_reduce(self, fn: Callable[..., tuple[Any, ...]], *args: Any, ops: tuple[str, ...], name: str
                   ) -> tuple[list[Any], tuple[Any, ...]]:
        """One pass that keeps and reports: ``fn`` returns ``(kept..., partial)``; the outputs stay
        with the blocks, the partials (tuples) are combined element by element by ``ops``
        (``sum``, ``max``, ``min``, ``all``, ``list``)."""

    @abc.abstractmethod
    def reduce(self, fn: Callable[..., tuple[Any, ...]], *args: Any, ops: tuple[str, ...], name: str
               ) -> tuple[Any, ...]:
        """``fn`` returns a partial (a tuple) per block; the combined partial."""

    @abc.abstractmethod
    def vector(self, outs: list[Any], pick: int | None = None, finite: bool | None = None) -> Any:
        """The m-vector made of each block's output (its element ``pick`` when the outputs are
        tuples); ``finite``: whether the pass that made it found every entry finite, when it checked."""

    @abc.abstractmethod
    def kept(self, outs: list[Any], pick: int | None = None) -> Any:
        """Per-block objects that are not vectors (a block's probe, its active rows ...) as one
        argument of later passes: each block's output, or its element ``pick``."""

    @abc.abstractmethod
    def sizes(self) -> Any:
        """Each block's number of rows, as one argument of a pass."""

    def client_context(self) -> ContextManager[Any]:
        """The context the client's own work runs in between passes (the default: nothing)."""
        return contextlib.nullcontext()

    @abc.abstractmethod
    def full(self, value: float) -> Any:
        """The constant m-vector."""

    @abc.abstractmethod
    def scalar_or_vector(self, v: Any) -> Any:
        """A problem vector as kernels take it: a scalar when it is known constant, else the vector."""

    @abc.abstractmethod
    def adopt(self, x0: Any) -> Any:
        """A start point as this backend's vector.

        Raises
        ------
        qpcore.core.problem.ProblemError
            When ``x0`` is not a vector of this backend (and of its partition).
        """


class LocalRows(Rows):
    """In process: the whole operator is one block, vectors are numpy arrays.

    Parameters
    ----------
    Q : DiagPlusLowRankQ
        The operator (the one block).
    """

    def __init__(self, Q: Any, m: int | None = None) -> None:
        self.blocks = Q
        self.m = int(Q.shape[0]) if m is None else int(m)
        self.counters = {"maps": 0, "reductions": 0, "tasks": 0, "bytes_gathered": 0}

    def map(self, fn: Callable[..., Any], *args: Any, name: str) -> list[Any]:
        """``[fn(*args)]``."""
        self.counters["maps"] += 1
        return [fn(*args)]

    def map_reduce(self, fn: Callable[..., tuple[Any, ...]], *args: Any, ops: tuple[str, ...], name: str
                   ) -> tuple[list[Any], tuple[Any, ...]]:
        """``fn(*args)`` once; its last element is the result."""
        self.counters["reductions"] += 1
        out = fn(*args)
        partial: tuple[Any, ...] = out[-1]
        return [out], partial

    def reduce(self, fn: Callable[..., tuple[Any, ...]], *args: Any, ops: tuple[str, ...], name: str
               ) -> tuple[Any, ...]:
        """``fn(*args)``."""
        self.counters["reductions"] += 1
        out: tuple[Any, ...] = fn(*args)
        return out

    def vector(self, outs: list[Any], pick: int | None = None, finite: bool | None = None) -> FloatArray:
        """The block's array itself (no copy)."""
        v: FloatArray = outs[0] if pick is None else outs[0][pick]
        return v

    def kept(self, outs: list[Any], pick: int | None = None) -> Any:
        """The block's object itself."""
        return outs[0] if pick is None else outs[0][pick]

    def sizes(self) -> int:
        """m."""
        return self.m

    def full(self, value: float) -> FloatArray:
        """``np.full(m, value)``."""
        return np.full(self.m, float(value))

    def scalar_or_vector(self, v: Any) -> Any:
        """The array itself (in process a constant vector costs no traffic)."""
        return v

    def adopt(self, x0: Any) -> FloatArray:
        """``x0`` as a float64 array."""
        return np.asarray(x0, dtype=np.float64)


class LowRankRows(Protocol):
    """An operator Q = diag(d) + HHᵀ that hands out its rows as :class:`Rows` (``Capability.LOWRANK``)."""

    @property
    def d(self) -> Any:
        """The diagonal: a scalar or an m-vector."""
        ...

    @property
    def k(self) -> int:
        """Columns of H."""
        ...

    def row_space(self) -> Rows:
        """The rows as blocks, with the passes over them."""
        ...
