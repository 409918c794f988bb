"""What a strategy does when a rule returns None while the gap is still above tol.

A rule's None says "optimal to tol on what I see". After the strategy has re-checked every
variable (shrinking hides some), a None with the stopping measure still above tol means the rule
gave up early, and the run must not be credited as converged:

- SMO, when a fallback was asked for (``SMO(fallback=...)``, or the rule's own ``fallback``, as
  :class:`~qpcore_strategies.rules.pair.PlattHeuristic` declares), lets the fallback choose the
  remaining steps and counts them apart (``stats["rule_steps"]`` and ``stats["fallback_steps"]``);
- otherwise the run stops ``stalled`` at the point reached (its certificate, computed from the
  problem, says how far from optimal it is), unless that certificate already accepts the point
  (:func:`certified`: a variable a rounding error inside its bound counts as at the bound there),
  which then converged on the rule's own steps.

Either way a :class:`RuleWarning` is issued and ``Result.stats["rule_gave_up"]`` says what happened.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from qpcore.core.certificate import kkt
from qpcore.core.problem import QP

__all__ = ["RuleWarning", "certified", "rule_gave_up", "run_notes"]


class RuleWarning(UserWarning):
    """A working-set rule returned None (optimal to tol) while the stopping measure was above tol."""


def rule_gave_up(strategy: str, rule: Any, iteration: int, gap: float, tol: float, *,
                 fallback: Any | None = None, why: str = "") -> str:
    """Warn that ``rule`` gave up early, and return the text for ``Result.stats["rule_gave_up"]``.

    Parameters
    ----------
    strategy : str
        The strategy running the rule (``"SMO"``, ``"Decomposition"``).
    rule : rule object
        The rule that returned None.
    iteration : int
        Steps (rounds) taken so far.
    gap, tol : float
        The stopping measure over every variable, and the run's tolerance.
    fallback : rule object, optional
        The rule that chooses the remaining steps; None: the run stops ``stalled``.
    why : str
        Why there is no fallback (appended to the text when ``fallback`` is None).

    Returns
    -------
    str
        The text, as warned.
    """
    head = (f"{strategy}: the rule {type(rule).__name__} returned None (optimal to tol) at step {iteration} "
            f"while the gap is {gap:.3g} > tol = {tol:.3g}; ")
    if fallback is not None:
        text = (head + f"the fallback {type(fallback).__name__} chooses the remaining steps "
                "(counted in stats['fallback_steps'], the rule's own in stats['rule_steps'])")
    else:
        text = head + "the run stops stalled at the point reached" + (f" ({why})" if why else "")
    warnings.warn(text, RuleWarning, stacklevel=3)
    return text


def certified(qp: QP, x: NDArray[np.float64], g: NDArray[np.float64], tol: float) -> bool:
    """Whether the certificate of ``x`` (with the strategy's gradient ``g``) accepts it at ``tol``,
    by the test :func:`qpcore.solve` applies to a run that ends converged."""
    return bool(kkt(qp, x, g).measure <= tol * (1 + 1e-9) + 1e-12)


def run_notes(note: str | None, block: Any) -> dict[str, Any]:
    """What SMO's and decomposition's ``report`` add to ``Result.stats``: ``rule_gave_up`` when the
    rule gave up early (``note``, only then) and ``block_finish`` when the opt-in block finish was
    tried (``block``, its last :class:`~qpcore_strategies.block_finish.BlockFinishResult`)."""
    out: dict[str, Any] = {}
    if note is not None:
        out["rule_gave_up"] = note
    if block is not None:
        out["block_finish"] = block.message
    return out
