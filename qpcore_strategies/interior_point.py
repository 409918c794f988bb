"""A primal–dual interior point method (Mehrotra predictor–corrector) for general convex QPs.

The problem, in the user's own form (the strategy declares ``takes_inequalities``)::

    minimize ½xᵀQx + cᵀx   subject to   lb ≤ x ≤ ub,   A x = b,   l ≤ C x ≤ u

with any mix of finite and infinite bounds. The engine is a function of arrays
(:func:`ipm_solve`, :class:`~qpcore_strategies.ipm_core.IPMCore`); :class:`InteriorPoint` is a thin strategy around it, one
IPM iteration per ``step``; its ``x0`` is not used (an interior point method starts from the
centre of the feasible region, not from a vertex or a previous optimum).

**Why an interior point method.** The issue asks for a general strategy for the problems the
dense active set cannot finish (degenerate vertices, hundreds of active constraints). The two
candidates of the literature are a proximal augmented Lagrangian (OSQP, QPALM, ProxQP, PIQP's
outer loop) and a primal–dual interior point method (Mehrotra 1992; Gondzio's HOPDM; OOQP;
Clarabel; PIQP's inner iteration). We take the IPM:

- its iteration count hardly depends on the conditioning or the degeneracy of the problem
  (typically 10–40 Newton steps on the Maros–Meszaros set), while a proximal ALM's outer count
  depends on the penalty's tuning and its inner solver (GPCG or the active set here) must itself
  solve ill-conditioned box QPs: we would rebuild the very difficulty we want to avoid;
- each iteration is one factorization of a quasi-definite matrix, which scipy does well
  (LAPACK's ``sytrf`` dense, SuperLU sparse), and two solves with it; a proximal ALM needs many
  factorizations or many inner iterations when its active set changes;
- the IPM's weakness, the last digits, is what the exact active-set finish (a polish from the
  IPM's point and its multipliers) supplies; the IPM gives it a well-centred point whose
  multipliers identify the active set;
- infeasibility and unboundedness show as diverging iterates, which we turn into a proof (a
  Farkas ray or a recession direction, verified, else the verdict of an LP) before saying so.

**The modules.** The method is four ideas, one module each:

- :mod:`qpcore_strategies.ipm_presolve`: fixed variables out, rows with l = u into A x = b, rows
  with no finite end dropped, an empty row that no point satisfies reported infeasible at once;
  Ruiz equilibration of the KKT matrix, then of the cost;
- :mod:`qpcore_strategies.ipm_kkt`: the slacks and the bound multipliers eliminated analytically,
  each iteration factors the quasi-definite [[Q + Σ_x + CᵀWC + ρI, Aᵀ], [A, −δI]], dense (LAPACK's
  Bunch–Kaufman) or sparse (SuperLU over a pattern and an order built once);
- :mod:`qpcore_strategies.ipm_core`: the iteration (:class:`~qpcore_strategies.ipm_core.IPMCore`, its
  settings and outcome), Mehrotra's infeasible start, each solve refined on the unregularized
  Newton system; it stops the way :func:`qpcore.kkt` measures (for one equality row the loop's
  measure is LIBSVM's pair gap, which the strategy asks as well), and a run at the rounding level
  of its own terms or that stops progressing ends as ``stalled`` with the best point met;
- :mod:`qpcore_strategies.ipm_certificates`: infeasibility and unboundedness are never concluded
  from a failed step; a Farkas certificate from the diverging duals or a recession direction,
  verified in the user's data, else the verdict of the feasibility or recession LP (HiGHS), is
  the proof the status rests on.

This module holds the two ways to run the engine: :func:`ipm_solve` over arrays, and
:class:`InteriorPoint`, the strategy (the engine's names are re-exported here).
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import principal_block
from qpcore.backends.operators import DenseQ
from qpcore.backends.sparse import SparseQ
from qpcore.core.certificate import kkt
from qpcore.core.problem import QP
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy
from qpcore_strategies.ipm_core import IPMCore, IPMOutcome, IPMSettings

__all__ = ["IPMCore", "IPMOutcome", "IPMSettings", "IPMWork", "InteriorPoint", "ipm_solve"]

FloatArray = NDArray[np.float64]


# --------------------------------------------------------------------------------------------
# The array-level solve
# --------------------------------------------------------------------------------------------

def ipm_solve(Q: Any, c: Any, lb: Any = None, ub: Any = None, A: Any = None, b: Any = None, C: Any = None,
              l: Any = None, u: Any = None, *, settings: IPMSettings | None = None,
              time_limit: float | None = None, **options: Any) -> IPMOutcome:
    """Solve ``min ½xᵀQx + cᵀx  s.t.  lb ≤ x ≤ ub, A x = b, l ≤ C x ≤ u`` by the interior point method.

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        n×n symmetric positive semidefinite.
    c : array_like
        Linear term.
    lb, ub : array_like, optional
        Bounds (default ∓inf).
    A, b : optional
        Equality rows.
    C, l, u : optional
        Inequality rows l ≤ C x ≤ u.
    settings : IPMSettings, optional
        The engine's settings; ``**options`` override its fields (``tol=1e-9``, ...).
    time_limit : float, optional
        Seconds.

    Returns
    -------
    IPMOutcome
    """
    base = settings or IPMSettings()
    if options:
        base = attrs.evolve(base, **options)
    deadline = time.perf_counter() + time_limit if time_limit is not None else math.inf
    core = IPMCore(Q, c, lb, ub, A, b, C, l, u, settings=base)
    while core.outcome == "running":
        if core.iterations >= base.max_iter:
            core._restore_best()
            core._end("max_iter", "iteration limit reached")
            break
        if time.perf_counter() >= deadline:
            core._restore_best()
            core._end("stalled", "time limit reached")
            break
        core.iterate()
    return core.result()




# --------------------------------------------------------------------------------------------
# The strategy
# --------------------------------------------------------------------------------------------

@attrs.define(slots=True, eq=False)
class IPMWork(Work):
    """The interior point run: its engine and the tolerance."""

    core: IPMCore
    tol: float

    def release(self) -> None:
        """No ``resume``: a finished run keeps no factor."""
        return None


_STATUS = {"primal_infeasible": Status.PRIMAL_INFEASIBLE, "unbounded": Status.UNBOUNDED, "stalled": Status.STALLED,
           "max_iter": Status.MAX_ITER, "nonfinite": Status.NONFINITE}


def _q_matrix(Q: Any, n: int) -> Any:
    """Q as a matrix: a ``DenseQ``'s ndarray, a ``SparseQ``'s csr, else the principal block."""
    if isinstance(Q, DenseQ):
        return Q.M
    if isinstance(Q, SparseQ):
        return Q.M
    return principal_block(Q, np.arange(n))


@attrs.frozen
class InteriorPoint(Strategy):
    """Mehrotra predictor–corrector primal–dual interior point method for general convex QPs.

    Works on the user's problem (box, A x = b, l ≤ C x ≤ u) directly; one ``step`` is one IPM
    iteration. See :mod:`qpcore_strategies.interior_point` for the method and why it was chosen.

    Parameters
    ----------
    linear_solver : {"auto", "dense", "sparse"}
        KKT factorization: LAPACK's dense ``sytrf`` or SuperLU; ``auto`` by size and density.
    reg : float
        Primal and dual regularization of the factored matrix (the steps are refined on the
        unregularized system).
    ruiz_iter : int
        Ruiz equilibration passes.
    gap_tol : float or None
        Bound on the relative duality gap; None: the run's tol.
    step_fraction : float
        Fraction of the step to the boundary.
    max_dense_n : int
        Largest n taken when Q is neither a ``DenseQ`` nor a ``SparseQ`` (its matrix is formed).
    """

    takes_inequalities: ClassVar[bool] = True

    linear_solver: str = attrs.field(default="auto", validator=attrs.validators.in_(("auto", "dense", "sparse")))
    reg: float = attrs.field(default=1e-9, validator=attrs.validators.gt(0.0))
    ruiz_iter: int = attrs.field(default=15, validator=attrs.validators.ge(0))
    gap_tol: float | None = None
    step_fraction: float = attrs.field(default=0.99, validator=[attrs.validators.gt(0.0), attrs.validators.lt(1.0)])
    max_dense_n: int = 5000

    def accepts(self, qp: QP) -> str | None:
        """Any problem whose Q is a ``DenseQ`` or a ``SparseQ``; another operator up to ``max_dense_n``."""
        if isinstance(qp.Q, DenseQ) or isinstance(qp.Q, SparseQ):
            return None
        if qp.n > self.max_dense_n:
            return (f"InteriorPoint forms Q as a matrix: {type(qp.Q).__name__} with n = {qp.n} > max_dense_n = "
                    f"{self.max_dense_n}; use GPCG (products only) or a decomposition")
        return None

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Build the engine (presolve, scaling, the KKT pattern, the starting point); ``x0`` is not
        used (an interior point method starts from the centre, not from a vertex)."""
        self.check(qp)
        settings = IPMSettings(tol=tol, gap_tol=self.gap_tol, linear_solver=self.linear_solver, reg=self.reg,
                               ruiz_iter=self.ruiz_iter, step_fraction=self.step_fraction, max_iter=2 ** 62)
        k = qp.k

        def certified(x: FloatArray, g: FloatArray, lam: FloatArray, y: FloatArray) -> bool:
            # the loop's own certificate (for one equality row it is LIBSVM's pair gap, not the
            # stationarity the engine measures): done only where it agrees
            cert = kkt(qp, x, g, (lam, y if k else None))
            return bool(cert.measure <= tol and cert.feasible())

        core = IPMCore(_q_matrix(qp.Q, qp.n), qp.c, qp.lb, qp.ub, qp.A if qp.m else None, qp.b if qp.m else None,
                       qp.C if k else None, qp.l if k else None, qp.u if k else None, settings=settings,
                       accept=certified)
        state = State(x=core.x.copy(), g=core.g.copy(), status=bound_status(core.x, qp.lb, qp.ub),
                      work=IPMWork(core=core, tol=tol))
        if getattr(qp.Q, "psd", None) is False:
            state.nonconvex = True
        self._sync(core, state)
        return state

    def _sync(self, core: IPMCore, state: State) -> None:
        state.x, state.g = core.x, core.g
        if core.outcome == "converged":
            state.done = True
        elif core.outcome != "running":
            state.stop = _STATUS[core.outcome]

    def step(self, qp: QP, state: State) -> None:
        """One predictor–corrector iteration."""
        core = state.work(IPMWork).core
        core.iterate()
        self._sync(core, state)

    def finish(self, qp: QP, state: State) -> None:
        """A run that ends unconverged (a limit) returns the best point met."""
        core = state.work(IPMWork).core
        if core.outcome == "running":
            core._restore_best()
            state.x, state.g = core.x, core.g
        state.status = bound_status(state.x, qp.lb, qp.ub)

    def multipliers(self, qp: QP, state: State) -> tuple[FloatArray, FloatArray] | None:
        """The IPM's (λ, y) in the user's units and the certificate's sign convention."""
        work = state.work_or_none(IPMWork)
        if work is None:
            return None
        return work.core.multipliers()

    def report(self, state: State) -> dict[str, Any]:
        """The linear solver, the engine's last measures, and the verdict's proof when there is one."""
        work = state.work_or_none(IPMWork)
        if work is None:
            return {}
        core = work.core
        out: dict[str, Any] = {"ipm_outcome": core.outcome, "ipm_reason": core.reason}
        for key in ("linear_solver", "kkt_size", "primal", "stationarity", "relative_gap", "feasibility_lp", "ray_lp"):
            if key in core.info:
                out[f"ipm_{key}"] = core.info[key]
        return out
