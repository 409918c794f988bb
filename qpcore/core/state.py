"""Mutable per-run state, results and statuses."""

from __future__ import annotations

import enum
import time
from typing import Any, TypeVar

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.core.certificate import KKT

__all__ = ["Result", "State", "Status", "Work", "bound_status"]

FloatArray = NDArray[np.float64]
W = TypeVar("W", bound="Work")


class Work:
    """Base class of a strategy's own part of the :class:`State` (shrink mask, factor, cuts ...).

    Each strategy subclasses it (an ``attrs`` class works: the base has no fields and no
    ``__init__``) and reads it back typed through ``state.work(MyWork)``.
    """

    __slots__ = ()

    def release(self) -> Work | None:
        """What a finished run's ``Result.state`` keeps of this work state: ``solve`` calls it on the
        final state unless asked to keep everything (``solve(keep_state=)``).

        Returns
        -------
        Work or None
            What ``resume`` needs: the default keeps everything (``self``); a strategy without
            ``resume`` returns None, so its buffers (row buffers, factors, the rule's view of Q and
            through it the kernel's row cache) are not held by the result.
        """
        return self


class Status(enum.Enum):
    """How a run ended; each member carries its message."""

    CONVERGED = ("converged", "optimal to the requested tolerance")
    MAX_ITER = ("max_iter", "iteration limit reached; the point is the best found, not optimal")
    TIME_LIMIT = ("time_limit", "time limit reached; the point is the best found, not optimal")
    STALLED = ("stalled", "no progress over many iterations; the point is the best found")
    NONFINITE = ("nonfinite", "a NaN or inf appeared; the point is the last finite one")
    STOPPED = ("stopped", "stopped by the callback; the point is the best found")
    UNBOUNDED = ("unbounded", "the objective is unbounded below along a feasible direction")
    NONCONVEX = ("nonconvex", "negative curvature met: Q is not positive semidefinite, so the point "
                 "(the best found) is not certified a minimizer")
    TARGET = ("target", "the target objective was reached; the point is not certified optimal to tol")
    INFEASIBLE = ("infeasible", "the point violates the constraints beyond the feasibility tolerance; "
                  "not a solution")
    PRIMAL_INFEASIBLE = ("primal_infeasible", "the constraints have no common point, proved by a certificate "
                         "(a Farkas ray, or the feasibility LP's verdict); the point is the last one")

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.code


@attrs.define(slots=True, eq=False)
class State:
    """What a strategy mutates in place.

    Attributes
    ----------
    x : ndarray
        Current point.
    g : ndarray
        Gradient Qx + c, kept up to date incrementally by the strategy.
    status : ndarray of int8
        −1 at lower bound, 0 free, +1 at upper bound.
    iteration : int
        Steps taken.
    counters : dict
        Strategy counters (shown in ``Result.stats``).
    work : Work or None
        The part the strategy owns (shrink mask, factor, cutting planes ...), given as the
        ``work=`` argument or by :meth:`set_work`, read back by :meth:`work`.
    done : bool
        Set by the strategy when it has verified optimality to the tolerance.
    stop : Status or None
        Set by the strategy to end the run with that status (stalled, unbounded ...).
    exact : tuple of ndarray or None
        ``(x, g)`` where the strategy last computed g = ``qp.gradient(x)`` afresh; when the run
        ends at that very x, ``solve`` certifies with this g instead of a second product.
    deadline : float
        ``time.perf_counter()`` value at which the run's time limit expires (inf: none). Set by
        ``solve`` before the first step; a strategy whose step can be long (inner loops, inner
        solves) checks :meth:`out_of_time` inside it and returns early with a consistent state.
    nonconvex : bool
        Set by a strategy that met a direction of negative curvature (Q not PSD); ``solve`` then
        never reports ``converged``.
    primal : ndarray or None
        A point w of the primal problem, for operators Q = diag(d) + HHᵀ (the cutting planes'
        best point w_b): ``solve`` turns it into a lower bound and a duality gap in the
        certificate (:func:`qpcore.core.optimality.lagrangian_bound`), computed from the problem.
    """

    x: FloatArray
    g: FloatArray
    status: NDArray[np.int8]
    iteration: int = 0
    counters: dict[str, int] = attrs.Factory(dict)
    _work: Work | None = attrs.field(default=None, alias="work")
    done: bool = False
    stop: Status | None = None
    exact: tuple[FloatArray, FloatArray] | None = None
    deadline: float = float("inf")
    nonconvex: bool = False
    primal: FloatArray | None = None

    def __repr__(self) -> str:
        # a summary: x, g and status have one entry per variable
        work = None if self._work is None else type(self._work).__name__
        stop = "" if self.stop is None else f", stop={self.stop.code}"
        return (f"State(n={self.x.shape[0]}, iteration={self.iteration}, done={self.done}{stop}, work={work}, "
                f"counters={self.counters})")

    def work(self, kind: type[W]) -> W:
        """The strategy's work state, checked to be a ``kind``.

        Parameters
        ----------
        kind : type
            The strategy's :class:`Work` subclass.

        Returns
        -------
        Work
            The work state, typed as ``kind``.

        Raises
        ------
        TypeError
            When the state holds no work state, or one of another kind (another strategy's).
        """
        w = self._work
        if not isinstance(w, kind):
            held = "no work state" if w is None else f"a {type(w).__name__}"
            raise TypeError(f"state: holds {held}, not a {kind.__name__} (a state from another strategy?)")
        return w

    def work_or_none(self, kind: type[W]) -> W | None:
        """The work state when it is a ``kind`` (``resume`` takes over only its own kind), else None."""
        w = self._work
        return w if isinstance(w, kind) else None

    def set_work(self, work: Work | None) -> None:
        """Replace the strategy's work state."""
        self._work = work

    def release(self) -> None:
        """Keep only what the work state says a resume needs (:meth:`Work.release`)."""
        if self._work is not None:
            self._work = self._work.release()

    def out_of_time(self) -> bool:
        """Whether the run's deadline has passed (cheap: one clock read)."""
        return time.perf_counter() >= self.deadline

    def time_left(self) -> float:
        """Seconds until the deadline (inf when there is none)."""
        return self.deadline - time.perf_counter()


def bound_status(x: FloatArray, lb: FloatArray, ub: FloatArray) -> NDArray[np.int8]:
    """−1 where x is at lb, +1 at ub, 0 elsewhere."""
    s = np.zeros(x.shape, dtype=np.int8)
    s[x <= lb] = -1
    s[x >= ub] = 1
    return s


@attrs.frozen(eq=False)
class Result:
    """The outcome of ``qpcore.solve``.

    Attributes
    ----------
    x : ndarray
        The best point found.
    multipliers : ndarray
        Equality multipliers λ (for an SVM dual λ = rho, the bias is −λ).
    z : ndarray
        Bound multipliers (reduced gradient g − Aᵀλ).
    status : Status
        How the run ended.
    objective : float
        ½xᵀQx + cᵀx, from the problem's own matvec.
    kkt : KKT
        The certificate, computed from the problem alone.
    iterations : int
        Steps taken.
    stats : dict
        Time, rows computed, cache hits and strategy counters.
    state : State
        The final state, for warm starts (what it keeps of the strategy's work state:
        ``solve(keep_state=)``).
    """

    x: FloatArray
    multipliers: FloatArray
    z: FloatArray
    status: Status
    objective: float
    kkt: KKT
    iterations: int
    stats: dict[str, Any]
    state: State

    def __repr__(self) -> str:
        # a summary: the point and the multipliers are printed by asking for them
        return (f"Result(status={self.status.code}, objective={self.objective:.10g}, iterations={self.iterations}, "
                f"n={self.x.shape[0]}, kkt={self.kkt!r}, stats: {len(self.stats)} entries)")

    @property
    def converged(self) -> bool:
        """Whether the run converged."""
        return self.status is Status.CONVERGED
