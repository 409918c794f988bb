"""Solution strategies over qpcore's problem, backends, state and loop.

Each is frozen configuration subclassing :class:`qpcore.Strategy` (``init`` / ``step``, the
optional hooks, ``accepts``), run by ``qpcore.solve``:

- :class:`~qpcore_strategies.auto.Auto` (``"auto"``, the estimators' and commands' default): starts with
  SMO and switches to INCAS once pair steps crawl over a large free set, decomposition where SMO
  cannot take the problem; its choices and reasons in ``Result.stats``;
- :class:`~qpcore_strategies.smo.SMO`: sequential minimal optimization with pair rules (LIBSVM's
  second-order rule, the maximal violating pair, Platt's heuristics) and shrinking;
- :class:`~qpcore_strategies.decomposition.Decomposition`: Osuna decomposition and chunking with set
  rules and any inner strategy;
- :class:`~qpcore_strategies.gradient_projection.GPCG`: Moré–Toraldo gradient projection with
  conjugate gradients;
- :class:`~qpcore_strategies.active_set.DenseActiveSet`: a dense primal active-set method;
- :class:`~qpcore_strategies.asvm.ASVM`: Mangasarian–Musicant's active-set SVM;
- :class:`~qpcore_strategies.cutting_plane.OCAS`, :class:`~qpcore_strategies.cutting_plane.BMRM` and
  :class:`~qpcore_strategies.active_set_ocas.ActiveSetOCAS`: cutting planes for the hinge-loss linear
  SVM (the fixed-threshold dual with Q = HHᵀ), the reduced problem solved by any strategy;
- :class:`~qpcore_strategies.interior_point.InteriorPoint`: a Mehrotra predictor–corrector primal–dual
  interior point method for any convex QP with inequality rows (dense or sparse KKT factor), which
  proves infeasibility and unboundedness before it reports them;
- :class:`~qpcore_strategies.incas.INCAS`: Scheinberg's active-set method, one variable at a time over a
  bordered Cholesky factor, with an incremental mode (``qpcore.solve(..., resume=)``).

Each has a name, its options and what it accepts in the one registry, :mod:`qpcore_strategies.registry`
(:func:`by_name`, the command line, the estimators and the benchmarks read it).

The working-set rules SMO and decomposition take live in :mod:`qpcore_strategies.rules`: the pair
rules (:mod:`~qpcore_strategies.rules.pair`), the set rules (:mod:`~qpcore_strategies.rules.sets`)
and their one name table, :data:`RULES` (:mod:`~qpcore_strategies.rules.names`); the protocol a
rule follows is :mod:`qpcore.core.rules`.

Not loop strategies, and at home in :mod:`qpcore_incremental`: the models that stay solved (the
exact incremental/decremental SVM of Cauwenberghs and Poggio).
"""

from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.asvm import ASVM
from qpcore_strategies.auto import Auto
from qpcore_strategies.active_set_ocas import ActiveSetOCAS
from qpcore_strategies.cutting_plane import BMRM, OCAS
from qpcore_strategies.decomposition import Decomposition
from qpcore_strategies.gradient_projection import GPCG
from qpcore_strategies.incas import INCAS
from qpcore_strategies.interior_point import InteriorPoint
from qpcore_strategies.registry import KERNEL_STRATEGIES, LINEAR_STRATEGIES, REGISTRY, make
from qpcore_strategies.rules import (RULES, Chunking, MaximalViolatingPair, OsunaSwap, PlattHeuristic, RuleWarning,
                                     SecondOrderRule, SteepestFeasible)
from qpcore_strategies.smo import SMO

from qpcore.core.solve import Strategy

__all__ = ["ASVM", "Auto", "BMRM", "GPCG", "KERNEL_STRATEGIES", "LINEAR_STRATEGIES", "OCAS", "REGISTRY", "RULES",
           "ActiveSetOCAS", "INCAS", "InteriorPoint", "SMO", "Chunking", "Decomposition", "DenseActiveSet",
           "MaximalViolatingPair", "OsunaSwap", "PlattHeuristic", "RuleWarning", "SecondOrderRule", "SteepestFeasible",
           "by_name"]


def by_name(name: str) -> Strategy:
    """A strategy by the name the command line and the estimators use (:mod:`qpcore_strategies.registry`).

    Parameters
    ----------
    name : str
        A name of :data:`REGISTRY` (``smo``, ``decomposition``, ``incas``, ``gpcg``,
        ``active-set``, ``asvm``, ``ocas``, ``ocas-active``, ``bmrm``), an older spelling
        (``decomp:512``, ``asocas``), or a spec with options (``decomposition:q=128,rule=mvp``).

    Returns
    -------
    Strategy
        Configured with the registry's defaults for the options not given.

    Raises
    ------
    ProblemError
        For an unknown name or option.
    """
    return make(name)
