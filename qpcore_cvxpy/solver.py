"""CVXPY's QP solver interface over :func:`qpcore.solve_qp`: :class:`QPCORE`.

CVXPY reduces a problem it recognises as a QP to

    minimize ½ xᵀPx + qᵀx   subject to   A x = b,  F x ≤ g,  lb ≤ x ≤ ub

(the bounds from variables declared with ``bounds=``), and hands the data to a ``QpSolver``.
:class:`QPCORE` passes them to :func:`qpcore.solve_qp` unchanged, F's rows as inequality rows
``−inf ≤ F x ≤ g``, runs the strategy chosen in the solver options and maps the answer back:

- the point;
- the dual values in CVXPY's signs, which are qpsolvers' (and OSQP's): ``P x + q + Aᵀy + Fᵀz = 0``
  with z ≥ 0, so the dual of a constraint ``expr <= rhs`` is ≥ 0 and that of ``lhs == rhs``
  the multiplier of ``lhs − rhs = 0``; the bounds of a variable have no dual value in CVXPY;
- the status, honestly: ``optimal`` only when qpcore's certificate confirms the tolerance.

How qpcore's statuses read in CVXPY:

- ``converged``: ``optimal``.
- ``max_iter``, ``time_limit``, ``stopped`` (the callback), ``target``: ``user_limit``, with the
  best point found (CVXPY warns that it may be inaccurate); also when the point is still off
  the constraints (qpcore's ``infeasible``) after one of those limits.
- ``stalled``: ``optimal_inaccurate`` when the certificate meets the looser ``inaccurate_tol``
  (CVXPY warns), else an error.
- ``primal_infeasible``, or a :class:`qpcore.InfeasibleProblem` (the constraints proved to leave no
  point: the bounds' or the rows' range check, the feasibility LP's verdict): ``infeasible``
  (value +inf, no point).
- ``unbounded``: ``unbounded`` (value −inf).
- A P that is not positive semidefinite (the refusal says how far from PSD it is), any other
  refusal of the data, ``nonconvex``, ``nonfinite``, a stall far from optimal, or a point off the
  constraints without a limit: ``cvxpy.error.SolverError`` with qpcore's message.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

import cvxpy.settings as s
from cvxpy.error import SolverError
from cvxpy.reductions.solution import Solution, failure_solution
from cvxpy.reductions.solvers import utilities
from cvxpy.reductions.solvers.qp_solvers.qp_solver import QpSolver
from qpcore.core.general import QPSolution, make_strategy, solve_qp
from qpcore.core.solve import PrintReporter
from qpcore.core.state import Status
from qpcore.core.validate import InfeasibleProblem, ProblemError

__all__ = ["QPCORE", "QPCoreRun"]

FloatArray = NDArray[np.float64]

#: Solver options passed through to :func:`qpcore.solve` under their own names.
PASSED_OPTIONS = frozenset({"time_limit", "max_iter", "threads", "feas_tol", "callback", "callback_every",
                            "reporter", "x0_policy"})

#: qpcore statuses that mean a limit ended the run (a point is there, not certified).
_LIMITS = frozenset({Status.MAX_ITER, Status.TIME_LIMIT, Status.STOPPED, Status.TARGET})


@attrs.frozen(eq=False)
class QPCoreRun:
    """What :meth:`QPCORE.solve_via_data` hands to :meth:`QPCORE.invert` (and CVXPY keeps as
    ``problem.solver_stats.extra_stats``).

    Attributes
    ----------
    status : str
        The CVXPY status (``cvxpy.OPTIMAL``, ``cvxpy.USER_LIMIT`` ...).
    message : str
        Why: qpcore's status message, or the refusal's text.
    seconds : float
        Wall time of the call to :func:`qpcore.solve_qp`, problem checks included.
    solution : QPSolution or None
        qpcore's answer (the certificate, ``solution.result.stats``, which strategy ran and why);
        None when the problem was refused before any work.
    """

    status: str
    message: str
    seconds: float
    solution: QPSolution | None = None


def _claims_infeasible(error: ProblemError) -> bool:
    # qpcore proved that no point meets the constraints (a bound's or a row's sides crossing, a
    # row's range over the box, the feasibility LP's verdict): CVXPY's "infeasible"
    return isinstance(error, InfeasibleProblem)


def _cvxpy_status(sol: QPSolution, tol: float, inaccurate_tol: float) -> str | None:
    """CVXPY's status for qpcore's, or None where the honest answer is an error."""
    status = sol.status
    if status is Status.CONVERGED:
        return s.OPTIMAL
    if status is Status.PRIMAL_INFEASIBLE:
        return s.INFEASIBLE
    if status is Status.UNBOUNDED:
        return s.UNBOUNDED
    if status in _LIMITS:
        return s.USER_LIMIT
    stopped_by = sol.result.stats.get("stopped_by", "")
    if status is Status.INFEASIBLE and stopped_by in {st.code for st in _LIMITS}:
        return s.USER_LIMIT           # a limit ended the run before the point was feasible
    if status is Status.STALLED and sol.kkt.ok(inaccurate_tol):
        return s.OPTIMAL_INACCURATE
    return None


class QPCORE(QpSolver):
    """qpcore as a CVXPY QP solver: ``problem.solve(solver=QPCORE(), **options)``.

    An instance is passed as CVXPY's ``solver`` (a custom solver); the keyword arguments of
    ``problem.solve`` that CVXPY does not use itself arrive as the solver options.

    Notes
    -----
    The solver options (keyword arguments of ``problem.solve``):

    ``strategy`` : str or qpcore.Strategy
        ``"auto"`` (default: :func:`qpcore.solve_qp` chooses among the general strategies and
        records why in ``solution.result.stats["strategy_choice"]``), any name of the strategy
        registry with its options (``"active-set"``, ``"interior-point"``, ``"gpcg"`` ...), or a
        strategy object.
    ``tol`` : float
        Tolerance on the certificate's KKT measure (default 1e-9, :func:`qpcore.solve_qp`'s).
    ``inaccurate_tol`` : float
        A stalled run whose certificate meets this looser tolerance is reported
        ``optimal_inaccurate`` (default ``1e3 * tol``); a stall above it is an error.
    ``time_limit``, ``max_iter``, ``threads``, ``feas_tol``, ``callback``, ``callback_every``, ``reporter``, ``x0_policy``
        As in :func:`qpcore.solve`. With ``verbose=True`` and no reporter, progress lines are
        printed to stdout.

    With ``warm_start=True`` a problem of the same size starts from the previous solution (any
    two ``QPCORE()`` instances are equal, so CVXPY keeps the problem's solver cache between
    them). ``problem.solver_stats.extra_stats`` is the :class:`QPCoreRun`.

    Examples
    --------
    >>> import cvxpy as cp, numpy as np
    >>> from qpcore_cvxpy import QPCORE
    >>> x = cp.Variable(2)
    >>> problem = cp.Problem(cp.Minimize(cp.sum_squares(x - np.array([1.0, 2.0]))), [cp.sum(x) == 1, x >= 0])
    >>> value = problem.solve(solver=QPCORE(), strategy="active-set")
    >>> problem.status, bool(np.allclose(x.value, [0.0, 1.0], atol=1e-8))
    ('optimal', True)
    """

    MIP_CAPABLE = False
    # the variables' bounds go to qpcore's lb/ub, not into F as rows
    BOUNDED_VARIABLES = True

    def __eq__(self, other: object) -> bool:
        # CVXPY keeps a problem's compiled chain and its solver cache (warm starts) while the
        # ``solver`` argument compares equal; instances hold no state, so any two are the same
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def name(self) -> str:
        """The solver's name in CVXPY (``solver_stats.solver_name``)."""
        return "QPCORE"

    def import_solver(self) -> None:
        """Import qpcore (always present: this package depends on it)."""
        import qpcore  # noqa: F401

    def cite(self, data: Any) -> str:
        """The citation CVXPY prints with ``verbose=True`` and ``bibtex=True``."""
        return ("@misc{qpcore,\n  title = {qpcore: convex quadratic programs with pluggable solution "
                "strategies},\n  note = {Python package}\n}")

    def solve_via_data(self, data: dict[str, Any], warm_start: bool, verbose: bool,
                       solver_opts: dict[str, Any], solver_cache: dict[str, Any] | None = None) -> QPCoreRun:
        """Solve CVXPY's QP data with :func:`qpcore.solve_qp`.

        Parameters
        ----------
        data : dict
            What :meth:`QpSolver.apply` built: P, q, A, b, F, G and the variables' bounds.
        warm_start : bool
            Start from the previous solution when it has the same size.
        verbose : bool
            Print progress lines (a :class:`qpcore.PrintReporter` on stdout).
        solver_opts : dict
            See the class's solver options.
        solver_cache : dict, optional
            CVXPY's cache across solves (the previous point, for ``warm_start``).

        Returns
        -------
        QPCoreRun

        Raises
        ------
        cvxpy.error.SolverError
            When qpcore refuses the problem for any reason but infeasibility (a P that is not
            PSD, with how far from PSD it is), or ends without an answer CVXPY can state
            (``nonconvex``, ``nonfinite``, a stall far from optimal).
        ValueError
            For an unknown solver option or strategy name.
        """
        opts = dict(solver_opts)
        opts.pop("use_quad_obj", None)      # CVXPY's own switch, read before the solver is called
        strategy = make_strategy(opts.pop("strategy", "auto"))
        tol = float(opts.pop("tol", 1e-9))
        inaccurate_tol = float(opts.pop("inaccurate_tol", 1e3 * tol))
        unknown = sorted(set(opts) - PASSED_OPTIONS)
        if unknown:
            raise ValueError(f"QPCORE: unknown solver option(s) {unknown}; use strategy, tol, inaccurate_tol, "
                             f"{', '.join(sorted(PASSED_OPTIONS))}")
        if verbose and opts.get("reporter") is None:
            opts["reporter"] = PrintReporter(stream=sys.stdout)
        n = int(data[s.Q].shape[0])
        initvals = None
        if warm_start and solver_cache is not None:
            previous = solver_cache.get(self.name())
            if isinstance(previous, np.ndarray) and previous.shape == (n,):
                initvals = previous
        A, F = data[s.A], data[s.F]
        t0 = time.perf_counter()
        try:
            sol = solve_qp(data[s.P], data[s.Q],
                           G=F if F.shape[0] else None, h=data[s.G] if F.shape[0] else None,
                           A=A if A.shape[0] else None, b=data[s.B] if A.shape[0] else None,
                           lb=data.get(s.LOWER_BOUNDS), ub=data.get(s.UPPER_BOUNDS),
                           strategy=strategy, initvals=initvals, tol=tol, **opts)
        except ProblemError as exc:
            if _claims_infeasible(exc):
                return QPCoreRun(status=s.INFEASIBLE, message=str(exc), seconds=time.perf_counter() - t0)
            raise SolverError(f"QPCORE: {exc}") from exc
        seconds = time.perf_counter() - t0
        status = _cvxpy_status(sol, tol, inaccurate_tol)
        if status is None:
            raise SolverError(f"QPCORE: {sol.status.code} ({sol.result.stats.get('stopped_by', '')}): "
                              f"{sol.status.message}; certificate {sol.kkt!r}")
        if solver_cache is not None and status in s.SOLUTION_PRESENT:
            solver_cache[self.name()] = sol.x
        return QPCoreRun(status=status, message=sol.status.message, seconds=seconds, solution=sol)

    def invert(self, solution: QPCoreRun, inverse_data: dict[str, Any]) -> Solution:
        """CVXPY's ``Solution`` of a :class:`QPCoreRun`: status, value, point and dual values."""
        attr: dict[str, Any] = {s.SOLVE_TIME: solution.seconds, s.EXTRA_STATS: solution}
        sol = solution.solution
        if sol is None or solution.status not in s.SOLUTION_PRESENT:
            if sol is not None:
                attr[s.NUM_ITERS] = sol.result.iterations
            return failure_solution(solution.status, attr)
        attr[s.NUM_ITERS] = sol.result.iterations
        primal_vars = {self.VAR_ID: np.asarray(sol.x, dtype=np.float64)}
        dual_vars: dict[Any, Any] = {}
        dual_vars.update(utilities.get_dual_values(sol.y, utilities.extract_dual_value,
                                                   inverse_data[self.EQ_CONSTR]))
        dual_vars.update(utilities.get_dual_values(sol.z, utilities.extract_dual_value,
                                                   inverse_data[self.NEQ_CONSTR]))
        return Solution(solution.status, sol.objective + inverse_data[s.OFFSET], primal_vars, dual_vars, attr)
