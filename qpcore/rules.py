"""The working-set protocol: a rule picks the variables a strategy updates next."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from qpcore.problem import QP
from qpcore.state import State


@runtime_checkable
class WorkingSetRule(Protocol):
    """Picks a working set, or None when the point is optimal to ``tol`` on the variables it sees."""

    def select(self, qp: QP, state: State, tol: float) -> NDArray[np.intp] | None:
        """Indices of the next working set, or None if optimal to ``tol``."""
        ...
