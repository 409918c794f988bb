"""qpcore: convex quadratic programs with pluggable solution strategies.

    minimize ½xᵀQx + cᵀx  subject to  lb ≤ x ≤ ub,  A x = b
"""

from qpcore.kkt import KKT, kkt
from qpcore.operators import DenseQ, Kernel, KernelQ, OperatorStats, QOperator
from qpcore.problem import QP, ProblemError
from qpcore.rules import WorkingSetRule
from qpcore.solve import PrintReporter, Progress, Reporter, Strategy, solve
from qpcore.state import Result, State, Status, bound_status

__all__ = ["KKT", "QP", "DenseQ", "Kernel", "KernelQ", "OperatorStats", "PrintReporter", "ProblemError",
           "Progress", "QOperator", "Reporter", "Result", "State", "Status", "Strategy", "WorkingSetRule",
           "bound_status", "kkt", "solve"]
__version__ = "0.1.0"
