"""Feasible points of general rows, for the test kit: a vertex of the feasible set by an LP, and a
random point between two (:func:`qpcore.testkit.generators.feasible_point` with inequality rows).

Its own module so that :mod:`qpcore.testkit.generators` and :mod:`qpcore.testkit.generators_general` both import
it and not each other.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from qpcore.core.problem import QP

FloatArray = NDArray[np.float64]

__all__ = ["inequality_rows", "lp_point", "rows_feasible_point"]


def inequality_rows(qp: QP) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(C, l, u): the inequality rows l ≤ C x ≤ u of ``qp`` (shape (k, n), k = 0 when it has none)."""
    return qp.C, qp.l, qp.u


def lp_point(lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray, C: FloatArray, l: FloatArray,
             u: FloatArray, cost: FloatArray) -> FloatArray | None:
    """A vertex of {lb ≤ x ≤ ub, A x = b, l ≤ C x ≤ u} minimizing costᵀx (scipy's HiGHS, feasibility
    tolerance 1e-10), clipped to the box; None when the LP has no solution (infeasible, unbounded)."""
    import scipy.optimize

    eq = l == u
    lo, hi = np.isfinite(l) & ~eq, np.isfinite(u) & ~eq
    A_eq = np.vstack([A, C[eq]])
    b_eq = np.concatenate([b, l[eq]])
    A_ub = np.vstack([C[hi], -C[lo]])
    b_ub = np.concatenate([u[hi], -l[lo]])
    bounds = [(a if np.isfinite(a) else None, z if np.isfinite(z) else None) for a, z in zip(lb.tolist(), ub.tolist())]
    res = scipy.optimize.linprog(cost, A_ub=A_ub if A_ub.shape[0] else None, b_ub=b_ub if A_ub.shape[0] else None,
                                 A_eq=A_eq if A_eq.shape[0] else None, b_eq=b_eq if A_eq.shape[0] else None,
                                 bounds=bounds, method="highs",
                                 options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    if res.status != 0 or res.x is None:
        return None
    out: FloatArray = np.clip(np.asarray(res.x, dtype=np.float64), lb, ub)
    return out


def rows_feasible_point(qp: QP, rng: np.random.Generator, p_bound: float) -> FloatArray:
    """:func:`qpcore.testkit.generators.feasible_point` with inequality rows: with probability ``p_bound`` a vertex of
    the feasible set (an LP with a random cost), else a random point between two such vertices."""
    C, l, u = inequality_rows(qp)
    finite = np.isfinite(qp.lb) & np.isfinite(qp.ub)
    # only doubly bounded variables carry a cost, so the LP is bounded whenever it is feasible
    first = lp_point(qp.lb, qp.ub, qp.A, qp.b, C, l, u, rng.standard_normal(qp.n) * finite)
    if first is None:
        raise ValueError("feasible_point: the LP solver found no feasible point")
    if rng.random() < p_bound:
        return first
    second = lp_point(qp.lb, qp.ub, qp.A, qp.b, C, l, u, rng.standard_normal(qp.n) * finite)
    if second is None:
        return first
    t = float(rng.uniform(0.0, 1.0))
    out: FloatArray = np.clip(t * first + (1.0 - t) * second, qp.lb, qp.ub)
    return out
