"""The built-in working-set rules and their one name table.

- :mod:`qpcore_strategies.rules.pair`: the pair rules (SMO's; decomposition takes them as sets of
  size 2): LIBSVM's second-order rule, the maximal violating pair, Platt's heuristics;
- :mod:`qpcore_strategies.rules.sets`: the set rules (decomposition's): SVMlight's steepest
  feasible directions, chunking, Osuna's swap, and SVMlight's selection :func:`violators`;
- :mod:`qpcore_strategies.rules.names`: :data:`RULES`, name → kind and factory, which SMO,
  decomposition and the registry read;
- :mod:`qpcore_strategies.rules.stopping`: what happens when a rule returns None while the gap is
  still above tol (SMO's ``fallback``, or an honest ``stalled``), and :class:`RuleWarning`.

The protocol a rule follows (``kind``, ``select(view, tol)``, the read-only ``RuleView``) is
:mod:`qpcore.core.rules`; the tutorial docs/tutorials/working_set_rules.md writes three rules
against it.
"""

from qpcore_strategies.rules.names import PAIR_RULES, RULES, SET_RULES, RuleEntry, make_rule, rule_help
from qpcore_strategies.rules.pair import MaximalViolatingPair, PlattHeuristic, SecondOrderRule, pair_steps
from qpcore_strategies.rules.sets import Chunking, OsunaSwap, SteepestFeasible, group_ends, violators
from qpcore_strategies.rules.stopping import RuleWarning

__all__ = ["PAIR_RULES", "RULES", "SET_RULES", "Chunking", "MaximalViolatingPair", "OsunaSwap", "PlattHeuristic",
           "RuleEntry", "RuleWarning", "SecondOrderRule", "SteepestFeasible", "group_ends", "make_rule", "pair_steps",
           "rule_help", "violators"]
