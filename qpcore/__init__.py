"""qpcore: convex quadratic programs with pluggable solution strategies.

    minimize ½xᵀQx + cᵀx  subject to  lb ≤ x ≤ ub,  A x = b,  l ≤ C x ≤ u

Any convex QP in qpsolvers' convention goes through :func:`solve_qp` in one call.

The bottom layer: the problem (:class:`QP`), the linear-algebra backends, the per-run
:class:`State` and the :class:`Result`, the one loop (:func:`solve`), the certificate
(:func:`kkt`) and its primitives (:mod:`qpcore.optimality`), the working-set protocol
(:mod:`qpcore.rules`) and the test kit (:mod:`qpcore.testing`, :mod:`qpcore.reference`). It
imports nothing from ``strategies`` or ``problems``.
"""

from qpcore.capabilities import Capability, OperatorStats, QOperator
from qpcore.doubled import DoubledKernelQ
from qpcore.general import QPSolution, solve_qp
from qpcore.kkt import KKT, kkt
from qpcore.operators import DenseQ, Kernel, KernelQ
from qpcore.optimality import DEFAULT_FEAS_TOL, Scores
from qpcore.problem import QP, InfeasibleProblem, ProblemError
from qpcore.rules import PairRule, RuleView, SetRule, WorkingSetRule
from qpcore.solve import PrintReporter, Progress, Reporter, solve
from qpcore.state import Result, State, Status, Work, bound_status
from qpcore.strategy import Strategy, check_operator

__all__ = ["DEFAULT_FEAS_TOL", "InfeasibleProblem", "KKT", "QP", "Capability", "DenseQ", "DoubledKernelQ", "Kernel", "KernelQ",
           "OperatorStats", "PairRule", "PrintReporter",
           "ProblemError", "Progress", "QOperator", "Reporter", "Result", "RuleView", "Scores", "SetRule", "State",
           "Status", "Strategy", "QPSolution", "Work", "WorkingSetRule", "bound_status", "check_operator", "kkt", "solve",
           "solve_qp"]
__version__ = "0.1.0"
