"""qpcore: convex quadratic programs with pluggable solution strategies.

    minimize ½xᵀQx + cᵀx  subject to  lb ≤ x ≤ ub,  A x = b,  l ≤ C x ≤ u

Any convex QP in qpsolvers' convention goes through :func:`solve_qp` in one call.

The bottom layer: the problem (:class:`QP`), the linear-algebra backends, the per-run
:class:`State` and the :class:`Result`, the one loop (:func:`solve`), the certificate
(:func:`kkt`) and its primitives (:mod:`qpcore.core.optimality`), the working-set protocol
(:mod:`qpcore.core.rules`) and the test kit (:mod:`qpcore.testkit.testing`, :mod:`qpcore.testkit.reference`). It
imports nothing from ``strategies`` or ``problems``.
"""

from qpcore import _aliases
from qpcore.backends.capabilities import Capability, OperatorStats, QOperator
from qpcore.backends.doubled import DoubledKernelQ
from qpcore.core.general import QPSolution, solve_qp
from qpcore.core.certificate import KKT, kkt
from qpcore.backends.operators import DenseQ, Kernel, KernelQ
from qpcore.core.optimality import DEFAULT_FEAS_TOL, Scores
from qpcore.core.problem import QP, InfeasibleProblem, ProblemError
from qpcore.core.rules import PairRule, RuleView, SetRule, WorkingSetRule
from qpcore.core.solve import PrintReporter, Progress, Reporter, solve
from qpcore.core.state import Result, State, Status, Work, bound_status
from qpcore.core.strategy import Strategy, check_operator

__all__ = ["DEFAULT_FEAS_TOL", "InfeasibleProblem", "KKT", "QP", "Capability", "DenseQ", "DoubledKernelQ", "Kernel", "KernelQ",
           "OperatorStats", "PairRule", "PrintReporter",
           "ProblemError", "Progress", "QOperator", "Reporter", "Result", "RuleView", "Scores", "SetRule", "State",
           "Status", "Strategy", "QPSolution", "Work", "WorkingSetRule", "bound_status", "check_operator", "kkt", "solve",
           "solve_qp"]
__version__ = "0.1.0"

# the flat modules of 0.1 moved into the sub-packages: their old paths import, with a warning, for one
# release (qpcore.solve and qpcore.kkt are the functions; their modules are qpcore.core.solve and
# qpcore.core.certificate)
_aliases.install({
    "qpcore.blas": "qpcore.linalg.blas",
    "qpcore.capabilities": "qpcore.backends.capabilities",
    "qpcore.chunked": "qpcore.backends.chunked",
    "qpcore.doubled": "qpcore.backends.doubled",
    "qpcore.dynamic": "qpcore.backends.dynamic",
    "qpcore.factor": "qpcore.linalg.factor",
    "qpcore.feasible_points": "qpcore.linalg.feasible_points",
    "qpcore.general": "qpcore.core.general",
    "qpcore.generators": "qpcore.testkit.generators",
    "qpcore.generators_general": "qpcore.testkit.generators_general",
    "qpcore.gram": "qpcore.backends.gram",
    "qpcore.lowrank": "qpcore.backends.lowrank",
    "qpcore.operators": "qpcore.backends.operators",
    "qpcore.optimality": "qpcore.core.optimality",
    "qpcore.problem": "qpcore.core.problem",
    "qpcore.projection": "qpcore.linalg.projection",
    "qpcore.reference": "qpcore.testkit.reference",
    "qpcore.rowcache": "qpcore.backends.rowcache",
    "qpcore.rowspace": "qpcore.backends.rowspace",
    "qpcore.rules": "qpcore.core.rules",
    "qpcore.sparse": "qpcore.backends.sparse",
    "qpcore.state": "qpcore.core.state",
    "qpcore.strategy": "qpcore.core.strategy",
    "qpcore.testing": "qpcore.testkit.testing",
    "qpcore.threads": "qpcore.linalg.threads",
    "qpcore.validate": "qpcore.core.validate",
    "qpcore.vectors": "qpcore.backends.vectors",
})
