"""An operator with a diagonal added: Q = B + diag(d).

The L2-loss (squared hinge) SVM's dual has the Hessian yyᵀ∘K + diag(1/(2C_i)): a kernel operator
plus a diagonal. :func:`shift_diagonal` wraps any operator B so: products, the diagonal and every
row, block and cross block are B's with d added where a row meets its own column. The wrapper
declares (:class:`qpcore.backends.capabilities.Capability`) ``BLOCK`` and ``CROSS`` always (B's
own, through :func:`~qpcore.backends.capabilities.principal_block` and
:func:`~qpcore.backends.capabilities.cross_block`), and B's row cache with its prefetch and
budget when B declares all three (:class:`CachedDiagonalShiftQ`): what B declares is read,
never probed.
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.capabilities import (
    BudgetOperator,
    Capability,
    OperatorStats,
    PrefetchOperator,
    QOperator,
    RowCacheOperator,
    cross_block,
    principal_block,
)
from qpcore.core.validate import ProblemError

__all__ = ["CachedDiagonalShiftQ", "DiagonalShiftQ", "shift_diagonal"]

FloatArray = NDArray[np.float64]

#: What a base must declare for the wrapper to keep its row cache (:class:`CachedDiagonalShiftQ`).
_CACHE = frozenset({Capability.ROW_CACHE, Capability.PREFETCH, Capability.BUDGET})


class DiagonalShiftQ:
    """Q = B + diag(d) over any operator B.

    Rows are B's rows with d_i added to entry (i, i): a fresh array per request, in B's row
    dtype (float32 rows stay float32, and so within B's ``row_eps``); ``matvec`` and ``diag``
    are float64. Counters are B's.

    Parameters
    ----------
    base : QOperator
        B (n×n).
    d : array_like
        The n diagonal entries added, finite (≥ 0 keeps a PSD B's answer to ``psd``).

    Raises
    ------
    ProblemError
        When d is not n finite numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from qpcore.backends.operators import DenseQ
    >>> from qpcore.backends.shifted import shift_diagonal
    >>> Q = shift_diagonal(DenseQ(np.ones((2, 2))), [0.5, 1.0])
    >>> Q.row(1)
    array([1., 2.])
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.BLOCK, Capability.CROSS})

    def __init__(self, base: QOperator, d: ArrayLike) -> None:
        n = int(base.shape[0])
        dv = np.asarray(d, dtype=np.float64)
        if dv.ndim == 0:
            dv = np.full(n, float(dv))
        if dv.shape != (n,) or not np.isfinite(dv).all():
            raise ProblemError(f"d: expected {n} finite diagonal entries, got shape {dv.shape}")
        self.base = base
        self.d = dv
        self.stats: OperatorStats = base.stats

    @property
    def shape(self) -> tuple[int, int]:
        """B's (n, n)."""
        return (int(self.base.shape[0]), int(self.base.shape[1]))

    @property
    def row_dtype(self) -> np.dtype[Any]:
        """B's row dtype."""
        return self.base.row_dtype

    @property
    def row_eps(self) -> float:
        """B's bound: adding d_i to one entry in the row dtype rounds it once, within that dtype's eps."""
        return float(max(self.base.row_eps, float(np.finfo(self.base.row_dtype).eps)))

    @property
    def psd(self) -> bool | None:
        """True when B is known PSD and d ≥ 0; otherwise unknown (a large d may make a B PSD)."""
        return True if self.base.psd is True and bool((self.d >= 0).all()) else None

    def diag(self) -> FloatArray:
        """diag(B) + d."""
        return np.asarray(self.base.diag(), dtype=np.float64) + self.d

    def matvec(self, x: FloatArray) -> FloatArray:
        """B x + d ∘ x."""
        out: FloatArray = np.asarray(self.base.matvec(x), dtype=np.float64) + self.d * x
        return out

    def _add_diagonal(self, out: NDArray[Any], i: NDArray[np.intp], j: NDArray[np.intp] | None) -> NDArray[Any]:
        """Add d where row i_a meets column i_a (j None: the columns are all variables)."""
        if j is None:
            out[np.arange(i.size), i] += self.d[i].astype(out.dtype)
            return out
        hit_r, hit_c = np.nonzero(i[:, None] == j[None, :])
        out[hit_r, hit_c] += self.d[i[hit_r]].astype(out.dtype)
        return out

    def rows(self, idx: ArrayLike) -> NDArray[Any]:
        """Q[idx, :]: B's rows (copied) with d on the diagonal."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        return self._add_diagonal(np.array(self.base.rows(i)), i, None)

    def row(self, i: int) -> NDArray[Any]:
        """Q[i, :]."""
        out = np.array(self.base.row(int(i)))
        out[int(i)] += self.d[int(i)].astype(out.dtype)
        return out

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx]: B's block (its own ``block`` when it declares one)."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        out = np.array(principal_block(self.base, i), dtype=np.float64)
        out[np.arange(i.size), np.arange(i.size)] += self.d[i]
        return out

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> NDArray[Any]:
        """Q[idx][:, cols] in the row dtype (all columns when ``cols`` is None), nothing cached."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        j = None if cols is None else np.atleast_1d(np.asarray(cols, dtype=np.intp))
        return self._add_diagonal(np.array(cross_block(self.base, i, j)), i, j)


class CachedDiagonalShiftQ(DiagonalShiftQ):
    """:class:`DiagonalShiftQ` over a B with a row cache: B's cache answers ``cached`` and
    ``prefetch``, and B's budget is the wrapper's (d adds its n entries to the footprint)."""

    capabilities: ClassVar[frozenset[Capability]] = DiagonalShiftQ.capabilities | _CACHE

    @property
    def cache_bytes(self) -> int:
        """B's row-cache budget."""
        return int(cast(BudgetOperator, self.base).cache_bytes)

    @property
    def footprint(self) -> int:
        """B's footprint plus d."""
        return int(cast(BudgetOperator, self.base).footprint) + int(self.d.nbytes)

    def cached(self, i: int) -> bool:
        """Whether B has row i cached."""
        return cast(RowCacheOperator, self.base).cached(i)

    def prefetch(self, idx: ArrayLike) -> int:
        """B computes and caches its uncached rows among idx; the number computed."""
        return cast(PrefetchOperator, self.base).prefetch(idx)


def shift_diagonal(base: QOperator, d: ArrayLike) -> DiagonalShiftQ:
    """Q = base + diag(d), keeping the base's row cache when it declares one.

    Parameters
    ----------
    base : QOperator
        The operator B.
    d : array_like
        The diagonal added: n finite numbers (or one for all).

    Returns
    -------
    DiagonalShiftQ
        A :class:`CachedDiagonalShiftQ` when B declares ``ROW_CACHE``, ``PREFETCH`` and
        ``BUDGET``, else a :class:`DiagonalShiftQ`.

    Raises
    ------
    ProblemError
        When d is not n finite numbers.
    """
    if _CACHE <= base.capabilities:
        return CachedDiagonalShiftQ(base, d)
    return DiagonalShiftQ(base, d)
