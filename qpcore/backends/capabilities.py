"""The operator contract: what a strategy may ask of Q, and what an operator declares it offers.

:class:`QOperator` is the core every operator offers (``shape``, ``diag``, ``matvec``, ``rows``,
``row``, ``stats``) and the declared part (``capabilities``, ``row_dtype``, ``row_eps``, ``psd``);
:class:`Capability` names the optional methods, one protocol each; :class:`Operator` gives an
operator written outside qpcore the declarations' defaults. Code reads the declarations through
the helpers here (:func:`row_budget`, :func:`row_cached`, :func:`prefetch_rows`,
:func:`principal_block`, :func:`cross_block`), never by probing for methods. The concrete
operators live in :mod:`qpcore.backends.operators`, :mod:`qpcore.backends.lowrank`, :mod:`qpcore.backends.gram`,
:mod:`qpcore.backends.dynamic` and :mod:`qpcore.backends.chunked`; this module imports none of them.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Protocol, cast, runtime_checkable

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["BlockOperator", "BudgetOperator", "Capability", "CrossIntoOperator", "CrossOperator", "Operator",
           "OperatorStats", "PrefetchOperator", "Products", "QOperator", "RowCacheOperator",
           "cross_block", "prefetch_rows", "principal_block", "row_budget", "row_cached"]

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]


class Capability(enum.Enum):
    """What an operator offers beyond the :class:`QOperator` core (``shape``, ``diag``, ``matvec``,
    ``rows``, ``row``, ``stats``), declared in its ``capabilities`` class attribute.

    A strategy lists what it needs in ``requires`` (:class:`qpcore.core.strategy.Strategy`); the check is
    made once when it starts, with an error naming the missing capability, and the code that
    follows reads the declaration instead of probing for methods.
    """

    #: ``cached(i) -> bool``: whether row i is in the operator's row cache.
    ROW_CACHE = "row_cache"
    #: ``prefetch(idx) -> int``: compute and cache the uncached rows among idx in one block.
    PREFETCH = "prefetch"
    #: ``block(idx)``: the principal block Q[idx][:, idx] without computing the full rows.
    BLOCK = "block"
    #: ``cross(idx, cols)``: Q[idx][:, cols] without computing the full rows, nothing cached.
    CROSS = "cross"
    #: ``cross_into(i, j, out) -> bool``: ``cross`` computed straight into a caller's buffer.
    CROSS_INTO = "cross_into"
    #: ``cache_bytes`` and ``footprint``: a row-cache budget a strategy's own row buffer shares.
    BUDGET = "budget"
    #: Q = diag(d) + HHᵀ with ``d``, ``k``, ``matvec_lowrank`` (H w) and ``rmatvec_lowrank`` (Hᵀ v).
    LOWRANK = "lowrank"
    #: ``subset(idx)``: the operator of the rows idx (low-rank operators' active sets).
    SUBSET = "subset"
    #: the rows live on a cluster (:class:`qpcore.backends.chunked.ChunkedLowRankQ`): no ``rows``, passes only.
    CHUNKED = "chunked"
    #: n = 2l and Q = [[K, −K], [−K, K]]: variables i and i + l have opposite rows (ε-SVR's α and α*),
    #: so a face on which both are free is singular along e_i + e_(i+l).
    MIRRORED = "mirrored"


@attrs.define(slots=True)
class OperatorStats:
    """Counters of an operator: kernel rows computed, cache hits and misses."""

    rows_computed: int = 0
    cache_hits: int = 0
    cache_misses: int = 0

    @property
    def hit_rate(self) -> float:
        """Fraction of row requests served from the cache."""
        total = self.cache_hits + self.cache_misses
        return self.cache_hits / total if total else 0.0


@runtime_checkable
class QOperator(Protocol):
    """What a strategy may ask of Q.

    Besides the methods, every operator declares ``capabilities`` (the optional methods it offers,
    :class:`Capability`), ``row_dtype`` (the dtype ``rows`` returns) and ``row_eps`` (the relative
    error bound of the entries ``rows`` returns: the dtype's eps for exact rows, more for rows
    computed in single precision). ``psd`` is True when Q is known positive semidefinite, None
    when unknown.
    """

    capabilities: ClassVar[frozenset[Capability]]

    @property
    def shape(self) -> tuple[int, int]:
        """(n, n)."""
        ...

    stats: OperatorStats

    @property
    def row_dtype(self) -> np.dtype[Any]:
        """The dtype of the rows ``rows`` returns."""
        ...

    @property
    def row_eps(self) -> float:
        """Relative error bound of the entries ``rows`` returns."""
        ...

    @property
    def psd(self) -> bool | None:
        """True when Q is known positive semidefinite, None when unknown."""
        ...

    def diag(self) -> FloatArray:
        """The diagonal of Q."""
        ...

    def matvec(self, x: FloatArray) -> FloatArray:
        """The product Q x."""
        ...

    def rows(self, idx: ArrayLike) -> NDArray[np.floating[Any]]:
        """The block Q[idx, :] (read-only, possibly from a cache)."""
        ...

    def row(self, i: int) -> NDArray[np.floating[Any]]:
        """The row Q[i, :] (read-only, possibly from a cache)."""
        ...


@runtime_checkable
class Products(Protocol):
    """The three products every operator computes (``diag``, ``matvec``, ``rows``): an object with
    these that is not a full :class:`QOperator` lacks the declared part (see :class:`Operator`)."""

    def diag(self) -> FloatArray:
        """The diagonal of Q."""
        ...

    def matvec(self, x: FloatArray) -> FloatArray:
        """The product Q x."""
        ...

    def rows(self, idx: ArrayLike) -> NDArray[np.floating[Any]]:
        """The block Q[idx, :]."""
        ...


class Operator:
    """Defaults of the declared part of :class:`QOperator` for an operator written outside qpcore.

    No optional capability, float64 rows exact to float64's eps, positive semidefiniteness
    unknown. A subclass writes ``shape``, ``stats``, ``diag``, ``matvec``, ``rows`` and ``row``, and
    overrides the declarations when it offers more (``capabilities`` with the methods they name).
    """

    __slots__ = ()

    capabilities: ClassVar[frozenset[Capability]] = frozenset()
    row_dtype: ClassVar[np.dtype[Any]] = np.dtype(np.float64)
    row_eps: ClassVar[float] = float(np.finfo(np.float64).eps)

    @property
    def psd(self) -> bool | None:
        """Unknown (None): strategies test curvature as they go."""
        return None


class RowCacheOperator(QOperator, Protocol):
    """An operator declaring :attr:`Capability.ROW_CACHE` (and usually ``PREFETCH``)."""

    def cached(self, i: int) -> bool:
        """Whether row i is in the cache."""
        ...


class PrefetchOperator(QOperator, Protocol):
    """An operator declaring :attr:`Capability.PREFETCH`."""

    def prefetch(self, idx: ArrayLike) -> int:
        """Compute the uncached rows among ``idx`` in one block and cache them; the number computed."""
        ...


class BlockOperator(QOperator, Protocol):
    """An operator declaring :attr:`Capability.BLOCK`."""

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx]."""
        ...


class CrossOperator(QOperator, Protocol):
    """An operator declaring :attr:`Capability.CROSS`."""

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> NDArray[Any]:
        """Q[idx][:, cols] in the row dtype (all columns when ``cols`` is None), nothing cached."""
        ...


class CrossIntoOperator(QOperator, Protocol):
    """An operator declaring :attr:`Capability.CROSS_INTO`."""

    def cross_into(self, i: IndexArray, j: IndexArray | None, out: NDArray[Any]) -> bool:
        """Compute Q[i][:, j] into ``out`` when that path exists; False, ``out`` untouched, otherwise."""
        ...


class BudgetOperator(QOperator, Protocol):
    """An operator declaring :attr:`Capability.BUDGET`: its row-cache budget and own footprint."""

    cache_bytes: int

    @property
    def footprint(self) -> int:
        """Bytes of the operator's own arrays, the row cache aside."""
        ...


def row_budget(Q: QOperator) -> tuple[int, int]:
    """``(cache_bytes, footprint)`` of an operator declaring :attr:`Capability.BUDGET`, else (0, 0).

    A strategy with its own row buffer (decomposition) sizes it from the operator's budget, so the
    whole run stays within what the user gave the operator.
    """
    if Capability.BUDGET not in Q.capabilities:
        return 0, 0
    b = cast(BudgetOperator, Q)
    return int(b.cache_bytes), int(b.footprint)


def row_cached(Q: QOperator, i: int) -> bool:
    """Whether row i of Q is at hand: in the cache of an operator declaring
    :attr:`Capability.ROW_CACHE`; always for the others (their rows cost what they cost)."""
    return Capability.ROW_CACHE not in Q.capabilities or cast(RowCacheOperator, Q).cached(i)


def prefetch_rows(Q: QOperator, idx: ArrayLike) -> int:
    """Ask an operator declaring :attr:`Capability.PREFETCH` to compute rows ``idx`` in one block
    now; the number computed (0 for the others: a hint, nothing to do)."""
    if Capability.PREFETCH not in Q.capabilities:
        return 0
    return cast(PrefetchOperator, Q).prefetch(idx)


def principal_block(Q: QOperator, idx: ArrayLike) -> FloatArray:
    """Q[idx][:, idx] through the operator's ``block`` when it declares one, else from ``rows``.

    Parameters
    ----------
    Q : QOperator
        The operator.
    idx : array_like of int
        The indices.

    Returns
    -------
    ndarray
        The k×k principal block, float64.
    """
    i = np.asarray(idx, dtype=np.intp)
    if Capability.BLOCK in Q.capabilities:
        return np.asarray(cast(BlockOperator, Q).block(i), dtype=np.float64)
    return np.asarray(Q.rows(i)[:, i], dtype=np.float64)


def cross_block(Q: QOperator, idx: ArrayLike, cols: ArrayLike | None = None,
                out: NDArray[Any] | None = None) -> NDArray[np.floating[Any]]:
    """Q[idx][:, cols] through the operator's ``cross`` when it declares one, else from ``rows``.

    Decomposition with shrinking asks for rows over the active columns only; an operator
    that computes entries (kernels, Gram) then does |idx|·|cols| work instead of |idx|·n.
    Nothing is cached.

    Parameters
    ----------
    Q : QOperator
        The operator.
    idx : array_like of int
        Row indices.
    cols : array_like of int, optional
        Column indices; all columns when omitted.
    out : ndarray, optional
        Where to put the block (|idx|×|cols|, the row dtype). An operator with ``cross_into``
        computes straight into it, saving a copy of the block; others are copied in.

    Returns
    -------
    ndarray
        The |idx|×|cols| block, in the operator's row dtype (float32 rows stay float32).
    """
    i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
    j = None if cols is None else np.atleast_1d(np.asarray(cols, dtype=np.intp))
    caps = Q.capabilities
    if out is not None:
        if not (Capability.CROSS_INTO in caps and cast(CrossIntoOperator, Q).cross_into(i, j, out)):
            out[...] = cross_block(Q, i, j)
        return out
    if Capability.CROSS in caps:
        return np.asarray(cast(CrossOperator, Q).cross(i, j))
    r = Q.rows(i)
    return np.asarray(r if j is None else r[:, j])
