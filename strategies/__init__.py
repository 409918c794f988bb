"""Solution strategies over qpcore's problem, backends, state and loop.

Each is frozen configuration with ``init`` / ``step`` / ``converged`` (the ``qpcore.Strategy``
protocol), run by ``qpcore.solve``:

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

from strategies.active_set import DenseActiveSet
from strategies.asvm import ASVM
from strategies.cutting_plane import BMRM, OCAS, ActiveSetOCAS
from strategies.decomposition import Chunking, Decomposition, OsunaSwap, SteepestFeasible
from strategies.gradient_projection import GPCG
from strategies.incas import INCAS
from strategies.incremental import IncrementalSVM
from strategies.smo import SMO, MaximalViolatingPair, PlattHeuristic, SecondOrderRule

__all__ = ["ASVM", "BMRM", "GPCG", "OCAS", "ActiveSetOCAS", "INCAS", "SMO", "Chunking", "Decomposition", "DenseActiveSet", "IncrementalSVM",
           "MaximalViolatingPair", "OsunaSwap", "PlattHeuristic", "SecondOrderRule", "SteepestFeasible"]
