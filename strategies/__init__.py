"""Solution strategies over qpcore's problem, backends, state and loop.

Each is frozen configuration subclassing :class:`qpcore.Strategy` (``init`` / ``step``, the
optional hooks, ``accepts``), run by ``qpcore.solve``:

- :class:`~strategies.smo.SMO`: sequential minimal optimization with pair rules (LIBSVM's
  second-order rule, the maximal violating pair, Platt's heuristics) and shrinking;
- :class:`~strategies.decomposition.Decomposition`: Osuna decomposition and chunking with set
  rules and any inner strategy;
- :class:`~strategies.gradient_projection.GPCG`: Moré–Toraldo gradient projection with
  conjugate gradients;
- :class:`~strategies.active_set.DenseActiveSet`: a dense primal active-set method;
- :class:`~strategies.asvm.ASVM`: Mangasarian–Musicant's active-set SVM;
- :class:`~strategies.cutting_plane.OCAS`, :class:`~strategies.cutting_plane.BMRM` and
  :class:`~strategies.cutting_plane.ActiveSetOCAS`: cutting planes for the hinge-loss linear
  SVM (the fixed-threshold dual with Q = HHᵀ), the reduced problem solved by any strategy;
- :class:`~strategies.incas.INCAS`: Scheinberg's active-set method, one variable at a time over a
  bordered Cholesky factor, with an incremental mode (``qpcore.solve(..., resume=)``).

Not a loop strategy but a model that stays solved: :class:`~strategies.incremental.IncrementalSVM`,
the exact incremental/decremental SVM of Cauwenberghs and Poggio (learn, unlearn, exact
leave-one-out, sliding windows, the regularization path in C).
"""

from typing import Any

from strategies.active_set import DenseActiveSet
from strategies.asvm import ASVM
from strategies.cutting_plane import BMRM, OCAS, ActiveSetOCAS
from strategies.decomposition import Chunking, Decomposition, OsunaSwap, SteepestFeasible
from strategies.gradient_projection import GPCG
from strategies.incas import INCAS
from strategies.incremental import IncrementalSVM
from strategies.smo import SMO, MaximalViolatingPair, PlattHeuristic, SecondOrderRule

from qpcore.problem import ProblemError
from qpcore.solve import Strategy

__all__ = ["ASVM", "BMRM", "GPCG", "KERNEL_STRATEGIES", "LINEAR_STRATEGIES", "OCAS", "ActiveSetOCAS", "INCAS", "SMO",
           "Chunking", "Decomposition", "DenseActiveSet", "IncrementalSVM", "MaximalViolatingPair", "OsunaSwap",
           "PlattHeuristic", "SecondOrderRule", "SteepestFeasible", "by_name"]

#: Names of the strategies for kernel SVM duals (``by_name``; the command line's ``--strategy``).
KERNEL_STRATEGIES = ("smo", "decomposition", "incas", "gpcg")
#: Names of the strategies for linear SVMs: ASVM on the squared hinge, cutting planes on the hinge.
LINEAR_STRATEGIES = ("asvm", "ocas", "ocas-active", "bmrm")


def by_name(name: str) -> Strategy:
    """A strategy with its default settings, by the name the command line and the estimators use.

    Parameters
    ----------
    name : str
        One of :data:`KERNEL_STRATEGIES` (``smo``: LIBSVM's second-order rule with shrinking;
        ``decomposition``: SVMlight's working sets; ``incas``; ``gpcg``) or
        :data:`LINEAR_STRATEGIES` (``asvm``, ``ocas``, ``ocas-active``, ``bmrm``).

    Returns
    -------
    Strategy

    Raises
    ------
    ProblemError
        For an unknown name.
    """
    makers: dict[str, type[Any]] = {"smo": SMO, "decomposition": Decomposition, "incas": INCAS, "gpcg": GPCG,
                                    "asvm": ASVM, "ocas": OCAS, "ocas-active": ActiveSetOCAS, "bmrm": BMRM}
    if name not in makers:
        raise ProblemError(f"strategy: unknown name {name!r}; use one of "
                           f"{', '.join(KERNEL_STRATEGIES + LINEAR_STRATEGIES)}")
    out: Strategy = makers[name]()
    return out
