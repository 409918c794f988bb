"""The declared interface of a solution strategy: what the loop calls, with its defaults.

A strategy is frozen configuration (an ``@attrs.frozen`` class, or any class without per-run
data) subclassing :class:`Strategy`; everything a run changes lives in its :class:`qpcore.State`,
whose strategy-owned part is a :class:`qpcore.core.state.Work` subclass read back through
``state.work(MyWork)``.

The contract, as :func:`qpcore.core.solve.solve` and :func:`qpcore.core.solve.iterate` use it:

- ``init(qp, x0, tol)`` begins with ``self.check(qp)`` (``accepts`` and the operator's
  capabilities against ``requires``), builds the state and keeps ``tol`` in its work state: the
  tolerance is given once, here.
- ``step(qp, state)`` mutates the state. The loop ends on what the strategy sets: ``state.done``
  once it has verified optimality to ``tol`` (``init`` may set it already), ``state.stop`` to end
  with another status (stalled, unbounded, target ...). There is no ``converged`` method: a test
  with side effects (a refresh of the gradient, a verification pass) belongs in ``step``.
- The hooks ``resume`` and ``finish`` are always called, ``sync_gradient`` whenever a progress
  snapshot's state is read (their defaults do nothing), and ``criterion`` / ``tol_abs`` say how the certificate judges convergence.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import Capability, QOperator
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import State
from qpcore.core.validate import field

__all__ = ["Strategy", "check_operator"]

FloatArray = NDArray[np.float64]


def check_operator(Q: QOperator, required: frozenset[Capability], who: str) -> None:
    """Raise when the operator lacks a capability the strategy ``who`` needs.

    Parameters
    ----------
    Q : QOperator
        The problem's operator.
    required : frozenset of Capability
        What the strategy needs.
    who : str
        The strategy's name, for the message.

    Raises
    ------
    ProblemError
        Naming the missing capabilities and the operator.
    """
    missing = required - Q.capabilities
    if missing:
        names = ", ".join(sorted(c.name for c in missing))
        raise ProblemError(f"{field('Q')}: {who} needs an operator with {names}; {type(Q).__name__} does not declare "
                           f"{'it' if len(missing) == 1 else 'them'} (its capabilities: "
                           f"{', '.join(sorted(c.name for c in Q.capabilities)) or 'none'})")


class Strategy(abc.ABC):
    """Base class of the solution strategies (see the module docstring for the contract).

    Attributes
    ----------
    requires : frozenset of Capability
        Operator capabilities the strategy needs (class attribute; empty by default), checked by
        :meth:`check` when a run starts.
    criterion : {"kkt", "relative_gap"}
        How the certificate judges convergence (class attribute): ``"kkt"`` (the default) bounds
        the KKT measure by ``tol``; ``"relative_gap"`` bounds the duality gap of
        ``state.primal`` relative to the primal objective (libocas's TolRel), or by ``tol_abs``.
    takes_inequalities : bool
        Whether the strategy works on inequality rows ``l ≤ C x ≤ u`` itself (class attribute;
        False by default). ``qpcore.solve`` hands any other strategy the problem's slack form
        (:meth:`qpcore.QP.slack_form`) and maps its result back to the user's variables.
    """

    __slots__ = ()

    requires: ClassVar[frozenset[Capability]] = frozenset()
    criterion: ClassVar[Literal["kkt", "relative_gap"]] = "kkt"
    takes_inequalities: ClassVar[bool] = False

    @property
    def tol_abs(self) -> float:
        """Absolute bound on the duality gap that also ends a ``"relative_gap"`` run (0: none)."""
        return 0.0

    @property
    def name(self) -> str:
        """The strategy's name in messages (its class name)."""
        return type(self).__name__

    def accepts(self, qp: QP) -> str | None:
        """None when the strategy can solve ``qp``, else a one-line reason naming one that can.

        Parameters
        ----------
        qp : QP
            The problem.

        Returns
        -------
        str or None
            E.g. ``"SMO takes one or more disjoint ±1 equality groups; for general rows use
            DenseActiveSet or GPCG"``.
        """
        return None

    def check(self, qp: QP) -> None:
        """What ``init`` calls first: :meth:`accepts` and the operator against ``requires``.

        Parameters
        ----------
        qp : QP
            The problem.

        Raises
        ------
        ProblemError
            With the reason ``accepts`` gave, or naming the missing operator capability.
        """
        reason = self.accepts(qp)
        if reason is not None:
            raise ProblemError(reason)
        check_operator(qp.Q, self.requires, self.name)

    @abc.abstractmethod
    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Check the problem (``self.check(qp)``) and build the initial state.

        Parameters
        ----------
        qp : QP
            The problem.
        x0 : ndarray, optional
            A start (``qpcore.solve`` hands over a feasible one), or None.
        tol : float
            The stopping tolerance, kept in the work state: ``step`` sets ``state.done`` once it
            has verified optimality to it.

        Returns
        -------
        State
        """

    @abc.abstractmethod
    def step(self, qp: QP, state: State) -> None:
        """One iteration, mutating ``state`` (``state.done`` once optimal to tol, ``state.stop``
        to end with another status).

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            Mutated in place.
        """

    def resume(self, qp: QP, state: State, tol: float) -> State | None:
        """Continue a previous run's ``state`` on ``qp`` (the same problem or a grown one, old
        variables first), or None to let ``solve`` restart from the previous point.

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            The previous run's final state (``Result.state``).
        tol : float
            The new run's tolerance.

        Returns
        -------
        State or None
            The default is None.
        """
        return None

    def sync_gradient(self, qp: QP, state: State) -> None:
        """Bring ``state.g`` (and anything a progress snapshot reads) up to date; called once per
        snapshot, when its state is first read (``Progress.state``, its objective or gap), for
        strategies that update the gradient lazily. The default does nothing.

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            The run's state.
        """

    def finish(self, qp: QP, state: State) -> None:
        """Bring ``state.x`` up to date before the certificate (for strategies that keep their
        point in another form, as the cutting planes keep cut weights), and drop what a
        finished run need not keep. The default does nothing.

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            The run's final state.
        """

    def multipliers(self, qp: QP, state: State) -> tuple[FloatArray, FloatArray] | None:
        """Multipliers the strategy proposes for its final point: (λ for A x = b, y for the rows
        l ≤ C x ≤ u), in the sign convention of :func:`qpcore.kkt`. The certificate verifies a
        proposal and never takes it on trust (any multipliers bound the measure from above).
        The default proposes none.

        Parameters
        ----------
        qp : QP
            The problem the strategy ran on.
        state : State
            The run's final state (after :meth:`finish`).

        Returns
        -------
        (ndarray, ndarray) or None
        """
        return None

    def lockstep(self) -> str | None:
        """The lockstep method whose steps this configured strategy takes on small problems, or None.

        A training layer that solves many small problems together (one-vs-one pairs in a padded
        stack) may do so only for a strategy that declares the method it would run: the batch then
        takes the same steps the strategy would. ``"smo-wss2"`` is LIBSVM's SMO with the
        second-order working-set rule. The default is None (solve each problem alone).

        Returns
        -------
        str or None
        """
        return None

    def lockstep_handoff(self, tol: float) -> bool:
        """Whether a lockstep stack should hand this strategy the problems it has not finished
        within its step budget at this ``tol``, rather than take pair steps to the end.

        True when the strategy's own method at ``tol`` is not pair steps (``auto`` starts an
        active set at a tight tol): there SMO's steps on a hard problem outnumber the active set's
        pivots by orders of magnitude. The default is False.

        Parameters
        ----------
        tol : float
            The tolerance the problems are solved to.

        Returns
        -------
        bool
        """
        return False

    def lockstep_switch(self, qp: QP) -> bool:
        """Whether this strategy alone has a method other than pair steps for ``qp`` once they crawl
        (``auto`` switches a crawling SMO to INCAS, which takes one equality row). A stack of one
        problem hands such a problem over after its step budget; otherwise the strategy alone would
        take the same pair steps, each dearer. The default is False.

        Parameters
        ----------
        qp : QP
            The problem.

        Returns
        -------
        bool
        """
        return False

    def stage(self, state: State) -> str | None:
        """What the run is doing now, for progress displays (``Progress.stage``): a strategy that
        delegates names the one running. The default is None.

        Parameters
        ----------
        state : State
            The run's state.

        Returns
        -------
        str or None
        """
        return None

    def report(self, state: State) -> dict[str, Any]:
        """What the run adds to ``Result.stats`` beyond its counters (e.g. the choices a
        strategy that delegates made, and why). The default adds nothing.

        Parameters
        ----------
        state : State
            The run's final state.

        Returns
        -------
        dict
        """
        return {}
