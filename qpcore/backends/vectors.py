"""The seam between the loop, the certificate and where a problem's data live.

The loop (:func:`qpcore.solve`) and the certificate (:func:`qpcore.kkt`,
:func:`qpcore.core.optimality.lagrangian_bound`) work on numpy arrays. A backend that keeps its
m-vectors and its rows elsewhere (``qpcore.backends.chunked``: chunks on the workers of a Dask cluster)
declares so by subclassing the two classes here, and answers the few questions the loop and the
certificate ask where its data are:

- :class:`DistributedVector`: finiteness, identity of two points, the largest difference;
- :class:`DistributedOperator`: the certificate's per-element terms over the box and the
  Lagrangian lower bound, computed next to the rows with the same per-element functions.

This module is the bottom of that dependency: the loop and the certificate import it, the
backends import it (and the certificate's primitives), never the reverse.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from qpcore.core.problem import QP

FloatArray = NDArray[np.float64]

__all__ = ["DistributedOperator", "DistributedVector", "all_finite", "is_distributed", "max_abs_diff", "same_point"]


class DistributedVector(abc.ABC):
    """An m-vector whose entries live outside this process (never gathered implicitly)."""

    @abc.abstractmethod
    def all_finite(self) -> bool:
        """Whether every entry is finite."""

    @abc.abstractmethod
    def same_point(self, other: DistributedVector) -> bool:
        """Whether ``other`` holds the very same entries (cheaply: without comparing them all)."""

    @abc.abstractmethod
    def max_abs_diff(self, other: DistributedVector) -> float:
        """max_i |self_i − other_i|."""


class DistributedOperator(abc.ABC):
    """An operator whose rows live outside this process, with the certificate computed there."""

    @abc.abstractmethod
    def kkt_terms(self, qp: QP, x: Any, g: Any) -> tuple[float, float, float, float]:
        """:func:`qpcore.core.certificate.box_terms` of the point ``x`` with gradient ``g`` over the problem's box.

        Returns
        -------
        (violation, stationarity, complementarity, xmax)
            Each the largest over the rows, as in process.
        """

    @abc.abstractmethod
    def lagrangian_bound(self, qp: QP, w: FloatArray) -> float:
        """:func:`qpcore.core.optimality.lagrangian_bound` of the primal point ``w``."""


def is_distributed(v: Any) -> bool:
    """Whether ``v`` is a :class:`DistributedVector`."""
    return isinstance(v, DistributedVector)


def all_finite(v: Any) -> bool:
    """Whether every entry of a numpy or distributed vector is finite."""
    if isinstance(v, DistributedVector):
        return v.all_finite()
    return bool(np.isfinite(v).all())


def same_point(a: Any, b: Any) -> bool:
    """Whether two points are the same: the vectors' own test for distributed ones, equality of
    entries for numpy arrays (a numpy array is never the same point as a distributed vector)."""
    if isinstance(a, DistributedVector) or isinstance(b, DistributedVector):
        return isinstance(a, DistributedVector) and isinstance(b, DistributedVector) and a.same_point(b)
    return bool(np.array_equal(a, b))


def max_abs_diff(a: Any, b: Any) -> float:
    """max_i |a_i − b_i| for two numpy or two distributed vectors."""
    if isinstance(a, DistributedVector) and isinstance(b, DistributedVector):
        return a.max_abs_diff(b)
    return float(np.abs(np.asarray(a) - np.asarray(b)).max(initial=0.0))
