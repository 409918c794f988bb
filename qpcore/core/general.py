"""Any convex QP in one call, in the ecosystem's convention: :func:`solve_qp` (qpsolvers' signature).

    minimize ½ xᵀPx + qᵀx   subject to   G x ≤ h,  A x = b,  lb ≤ x ≤ ub

The call builds a :class:`qpcore.QP` (G's rows become inequality rows ``−inf ≤ G x ≤ h``), runs
one strategy through :func:`qpcore.solve` and returns x with its multipliers in qpsolvers' signs,
the status and the certificate. A strategy given by name is looked up in the strategy registry
that the installed ``strategies`` package declares under the entry-point group
``qpcore.strategies``: qpcore itself imports nothing above it.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.core.certificate import KKT, at_bounds, rows_at_bounds
from qpcore.core.problem import QP
from qpcore.core.solve import solve
from qpcore.core.state import Result, Status
from qpcore.core.strategy import Strategy
from qpcore.core.validate import ProblemError, as_float_vector

FloatArray = NDArray[np.float64]

__all__ = ["QPSolution", "make_strategy", "solve_qp"]

#: The entry-point group where a strategies package declares its ``make(spec) -> Strategy``.
ENTRY_POINT_GROUP = "qpcore.strategies"


@attrs.frozen(eq=False)
class QPSolution:
    """What :func:`solve_qp` returns: the point, its multipliers in qpsolvers' convention, the
    status and the certificate.

    The multipliers satisfy ``P x + q + Gᵀz + Aᵀy + z_box = 0`` at an optimum, with z ≥ 0,
    z_box ≤ 0 where x is at its lower bound and ≥ 0 at its upper one (qpsolvers' ``Solution``).
    They are the certificate's, reported as 0 for a row off its side and a variable off its bounds
    (:func:`qpcore.core.certificate.at_bounds`), so complementarity holds exactly and what is left of
    stationarity is the dual residual ``P x + q + Gᵀz + Aᵀy + z_box``.

    Attributes
    ----------
    x : ndarray
        The best point found.
    y, z, z_box : ndarray
        Multipliers of ``A x = b``, of ``G x ≤ h`` and of the bounds.
    status : Status
        How the run ended (``converged`` only when the certificate confirms the tolerance).
    objective : float
        ½ xᵀPx + qᵀx.
    kkt : KKT
        The certificate, computed from the problem alone (in qpcore's signs: ``kkt.multipliers``
        = −y, ``kkt.y`` = −z, ``kkt.z`` = −z_box).
    result : Result
        The full :func:`qpcore.solve` result (iterations, stats, which strategy ran and why).
    """

    x: FloatArray
    y: FloatArray
    z: FloatArray
    z_box: FloatArray
    status: Status
    objective: float
    kkt: KKT
    result: Result

    @property
    def found(self) -> bool:
        """Whether the run converged (qpsolvers' ``Solution.found``)."""
        return self.status is Status.CONVERGED

    def __repr__(self) -> str:
        return (f"QPSolution(status={self.status.code}, objective={self.objective:.10g}, n={self.x.size}, "
                f"kkt={self.kkt!r})")


def make_strategy(strategy: str | Strategy) -> Strategy:
    """A strategy object, or one built from its name by the installed strategies package.

    Parameters
    ----------
    strategy : str or Strategy
        A :class:`qpcore.Strategy`, or a name with options (``"auto"``,
        ``"interior-point"``, ``"gpcg"``, ``"active-set"``, ...: the registry of the
        ``strategies`` package).

    Returns
    -------
    Strategy

    Raises
    ------
    ProblemError
        When no installed package declares the registry, or the name is unknown there.
    """
    if isinstance(strategy, Strategy):
        return strategy
    if not isinstance(strategy, str):
        raise ProblemError(f"strategy: expected a name or a qpcore.Strategy, got {type(strategy).__name__}")
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    if not found:
        raise ProblemError(f"strategy {strategy!r}: no strategy registry is installed (entry-point group "
                           f"{ENTRY_POINT_GROUP!r}); install qpcore with pip, or pass a Strategy object")
    make = found[0].load()
    out = make(strategy)
    if not isinstance(out, Strategy):
        raise ProblemError(f"strategy {strategy!r}: the registry returned {type(out).__name__}, not a Strategy")
    return out


def _matrix(value: Any, name: str) -> Any:
    import scipy.sparse as sp

    if value is None:
        return None
    if sp.issparse(value):
        return value
    arr = np.asarray(value)
    if arr.dtype == object:
        raise ProblemError(f"{name}: not a regular numeric array")
    return arr


def _vector(value: ArrayLike | None, name: str, size: int) -> FloatArray:
    if value is None:
        raise ProblemError(f"{name}: required with its matrix")
    arr = np.asarray(value, dtype=np.float64) if np.asarray(value).dtype != object else None
    if arr is None:
        raise ProblemError(f"{name}: not a regular numeric array")
    arr = arr.reshape(-1) if arr.ndim == 2 and 1 in arr.shape else np.atleast_1d(arr)
    if arr.shape != (size,):
        raise ProblemError(f"{name}: shape mismatch, expected ({size},), got {np.shape(value)}")
    return arr


def solve_qp(P: Any, q: ArrayLike, G: Any = None, h: ArrayLike | None = None, A: Any = None,
             b: ArrayLike | None = None, lb: ArrayLike | None = None, ub: ArrayLike | None = None, *,
             strategy: str | Strategy = "auto", initvals: ArrayLike | None = None, tol: float = 1e-9,
             time_limit: float | None = None, max_iter: int | None = None, threads: int | None = None,
             **options: Any) -> QPSolution:
    """Solve ``min ½xᵀPx + qᵀx  s.t.  G x ≤ h, A x = b, lb ≤ x ≤ ub`` (qpsolvers' signature).

    Parameters
    ----------
    P : array_like or scipy.sparse matrix
        Symmetric positive semidefinite n×n matrix (checked, with a tolerance relative to its scale).
    q : array_like
        Linear term, length n.
    G, h : array_like or sparse, optional
        Inequality rows ``G x ≤ h`` (a 1-D G is one row).
    A, b : array_like or sparse, optional
        Equality rows ``A x = b``.
    lb, ub : array_like, optional
        Bounds (±inf allowed).
    strategy : str or Strategy
        ``"auto"`` (default: chooses among the general strategies and records why in
        ``result.stats["strategy_choice"]``) or any strategy of the registry, by name or object.
    initvals : array_like, optional
        A warm start (projected onto the feasible set when infeasible).
    tol : float
        Tolerance on the certificate's KKT measure (absolute stationarity; feasibility relative to
        :func:`qpcore.core.optimality.feasibility_scale`).
    time_limit, max_iter, threads : optional
        As in :func:`qpcore.solve`.
    **options
        Further keywords of :func:`qpcore.solve` (``callback``, ``reporter``, ``feas_tol`` ...).

    Returns
    -------
    QPSolution
        Never None: a run that hits a limit returns its best point with that status.

    Raises
    ------
    ProblemError
        Before any work, on bad input: shapes, NaN, h or b missing, lb > ub, a P that is not PSD
        (with how far from PSD it is), or rows the LP feasibility check (HiGHS) proves infeasible.
    """
    Pm = _matrix(P, "P")
    if Pm is None:
        raise ProblemError("P: required (pass zeros for a linear program)")
    n = int(Pm.shape[0]) if len(Pm.shape) == 2 else -1
    if n < 0:
        raise ProblemError(f"P: expected an n×n matrix, got shape {Pm.shape}")
    Gm, Am = _matrix(G, "G"), _matrix(A, "A")
    if Gm is None and h is not None:
        raise ProblemError("h: given without G")
    if Am is None and b is not None:
        raise ProblemError("b: given without A")
    if Gm is not None and Gm.ndim == 1:
        Gm = Gm[None, :]
    if Am is not None and Am.ndim == 1:
        Am = Am[None, :]
    # q and G are checked here, under the names the caller used (the QP calls them c and C)
    if Gm is not None and (Gm.ndim != 2 or Gm.shape[1] != n):
        raise ProblemError(f"G: expected shape (rows, {n}), got {Gm.shape}")
    qv: Any = as_float_vector(q, "q", n)
    hv = _vector(h, "h", int(Gm.shape[0])) if Gm is not None else None
    bv = _vector(b, "b", int(Am.shape[0])) if Am is not None else None
    if hv is not None and np.isnan(hv).any():
        raise ProblemError(f"h: contains NaN at index {int(np.flatnonzero(np.isnan(hv))[0])}")
    lo: Any = -np.inf if lb is None else lb
    hi: Any = np.inf if ub is None else ub
    qp = QP(Pm, qv, lo, hi, Am, bv,
            C=Gm, l=None if Gm is None else np.full(Gm.shape[0], -np.inf), u=hv)
    chosen = make_strategy(strategy)
    x0 = None if initvals is None else np.asarray(initvals, dtype=np.float64)
    result = solve(qp, chosen, x0, tol=tol, time_limit=time_limit, max_iter=max_iter, threads=threads, **options)
    cert = result.kkt
    # a multiplier belongs to a constraint that holds with equality: the certificate's reduced
    # gradient of a variable off its bounds (a stationarity residual) or the multiplier of a row
    # off its side is reported as 0, so it shows in the dual residual and not, times a bound, in
    # the duality gap
    x = result.x
    at_lo, at_hi = at_bounds(x, qp.lb, qp.ub)
    z_box = np.where(at_lo | at_hi, -cert.z, 0.0)
    z = np.zeros(0)
    if qp.k:
        _, row_at_hi = rows_at_bounds(qp, x)
        z = np.where(row_at_hi, -cert.y, 0.0)
    return QPSolution(x=x, y=-cert.multipliers, z=z, z_box=z_box, status=result.status, objective=result.objective,
                      kkt=cert, result=result)
