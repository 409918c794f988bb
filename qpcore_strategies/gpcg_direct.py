"""GPCG's direct steps: the face's minimizer by a dense solve, and the moves out of a stuck cycle.

:class:`qpcore_strategies.gradient_projection.GPCG` minimizes on a face by conjugate gradients
(or by Newton steps through a face factor on a dense Q). When CG keeps running into bounds or
keeps returning to one face, or when a whole cycle cannot move x, it steps directly:

- :func:`face_direction`: the step to the minimizer of the current face through its principal
  block (least squares, so a singular face is fine; with equality rows the bordered system, the
  step put exactly on the rows' null space), for faces of at most ``max_face_solve`` variables;
- :func:`cut_step`: that step cut at the first bound it meets, the primal active-set method's
  step (face solve, cut at the first bound, face solve on the smaller face, until a face's
  minimizer);
- :func:`settle`: variables a rounding error inside a bound (1e-10 relative) put onto it, where
  the rows stay met and the objective does not rise;
- :func:`pair_direction`: the maximal violating pair e_i/a_i − e_j/a_j or the most violating
  single variable, whichever descends faster per unit step; for general rows, which have no
  pairs, :func:`steepest_feasible`, the steepest feasible descent direction of the
  linearization (a small LP).

GPCG takes the projected search along these directions (or applies the cut step) itself.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import principal_block
from qpcore.core.optimality import maximal_violating_pair, scores_of
from qpcore.core.problem import QP
from qpcore.core.state import State
from qpcore_strategies.projected_search import (SearchResult, _hit_times, _lstsq, _null_project, _product, _rows_met,
                                                _snap)

FloatArray = NDArray[np.float64]

__all__ = ["cut_step", "face_direction", "pair_direction", "settle", "steepest_feasible"]


def steepest_feasible(qp: QP, x: FloatArray, g: FloatArray) -> FloatArray | None:
    """argmin gᵀd subject to A d = 0, d ≥ 0 at lb, d ≤ 0 at ub, |d| ≤ 1 (a small LP, scipy's
    HiGHS), put exactly on the null space of the rows; None when it does not descend.

    Parameters
    ----------
    qp : QP
        The problem (general equality rows).
    x, g : ndarray
        The point and its gradient.

    Returns
    -------
    ndarray or None
    """
    from scipy.optimize import linprog

    movable = qp.lb < qp.ub
    lo = np.where(movable & (x > qp.lb), -1.0, 0.0)
    hi = np.where(movable & (x < qp.ub), 1.0, 0.0)
    res = linprog(g, A_eq=qp.A, b_eq=np.zeros(qp.m), bounds=np.column_stack([lo, hi]), method="highs")
    if res.status != 0 or res.x is None:
        return None
    d = np.clip(np.asarray(res.x, dtype=np.float64), lo, hi)
    d = _null_project(qp, d, d != 0)
    d = np.clip(d, lo, hi)
    return d if float(g @ d) < 0.0 else None


def settle(qp: QP, state: State) -> bool:
    """Snap coordinates within 1e-10 (relative) of a finite bound onto it, if the equality
    stays satisfied to 1e-10 relative and the objective does not rise.

    Parameters
    ----------
    qp : QP
        The problem.
    state : State
        The run's state: x and g updated in place when the snap is taken (``settled`` counted).

    Returns
    -------
    bool
        True if x changed.
    """
    x = state.x
    rel = 1e-10
    xn = _snap(qp, x.copy(), rel)
    if np.array_equal(xn, x):
        return False
    if qp.m:
        if not _rows_met(qp, xn, rel):
            return False
    s = xn - x
    Qs = _product(qp, s, state.deadline)
    dq = float(state.g @ s) + 0.5 * float(s @ Qs)
    f = float(0.5 * x @ (state.g + qp.c))
    if dq > 1e-14 * max(1.0, abs(f)):
        return False
    state.x = xn
    state.g = state.g + Qs
    state.counters["settled"] += 1
    return True


def face_direction(qp: QP, state: State, max_face_solve: int) -> FloatArray | None:
    """The step to the minimizer of the current face through its principal block (least
    squares, so singular faces are fine).

    Parameters
    ----------
    qp : QP
        The problem.
    state : State
        The run's state (``face_solves`` counted).
    max_face_solve : int
        The largest face solved.

    Returns
    -------
    ndarray or None
        None when the face is empty, too large, or its dense solve would overrun the time limit.
    """
    x, g = state.x, state.g
    F = np.flatnonzero((x > qp.lb) & (x < qp.ub))
    if F.size == 0 or F.size > max_face_solve:
        return None
    if 2e-9 * float(F.size) ** 3 > state.time_left():
        return None                     # a dense solve that would overrun the time limit
    B = principal_block(qp.Q, F)
    rhs = -g[F]
    if qp.m:
        AF = qp.A[:, F]
        m = qp.m
        K = np.block([[B, AF.T], [AF, np.zeros((m, m))]])
        sol = _lstsq(K, np.concatenate([rhs, np.zeros(m)]))[:-m]
        # on the null space of the rows on F exactly, not to rounding
        full = np.zeros(x.size)
        full[F] = sol
        sol = _null_project(qp, full)[F]
    else:
        sol = _lstsq(np.asarray(B, dtype=np.float64), rhs)
    state.counters["face_solves"] += 1
    d = np.zeros(x.size)
    d[F] = sol
    return d


def cut_step(qp: QP, state: State, d: FloatArray) -> SearchResult | None:
    """The step d from x cut at the first bound it meets (the bounds met set exactly).

    Parameters
    ----------
    qp : QP
        The problem.
    state : State
        The run's state (x, g and the deadline read).
    d : ndarray
        A face's minimizing step (:func:`face_direction`).

    Returns
    -------
    SearchResult or None
        The cut step (``alpha`` 1 when d's end is reached: the face's minimizer), or None when
        it does not decrease the objective.
    """
    x, g = state.x, state.g
    t = _hit_times(qp, x, d)
    alpha = min(1.0, float(t.min(initial=np.inf)))
    if not alpha > 0.0:
        return None
    xn = x + alpha * d
    hit = t <= alpha
    xn[hit] = np.where(d > 0, qp.ub, qp.lb)[hit]
    np.clip(xn, qp.lb, qp.ub, out=xn)
    s = xn - x
    Qs = _product(qp, s, state.deadline)
    dq = float(g @ s) + 0.5 * float(s @ Qs)
    if not dq < 0.0:
        return None
    return SearchResult(xn, alpha, -dq, Qs)


def pair_direction(qp: QP, x: FloatArray, g: FloatArray) -> FloatArray | None:
    """The maximal violating pair ``e_i/a_i − e_j/a_j`` or the most violating single variable,
    whichever descends faster per unit step. General rows have no pairs: the steepest feasible
    descent direction of the linearization instead.

    Parameters
    ----------
    qp : QP
        The problem.
    x, g : ndarray
        The point and its gradient.

    Returns
    -------
    ndarray or None
        The direction (zero when nothing violates); None when the LP of general rows finds no
        descent.
    """
    if qp.equality.kind == "general":
        return steepest_feasible(qp, x, g)
    s = scores_of(qp, x, g)
    d = np.zeros(qp.n)
    rate = 0.0
    ij = maximal_violating_pair(s) if s.paired else None
    if ij is not None and ij[0] != ij[1] and s.v[ij[0]] > s.v[ij[1]]:
        i, j = ij                       # in one group (the one with the largest gap)
        a = qp.equality.coef
        d[i] += 1.0 / a[i]
        d[j] -= 1.0 / a[j]
        rate = float(s.v[i] - s.v[j]) * min(abs(float(a[i])), abs(float(a[j])))
    su, sl = s.single_masks()
    viol = np.maximum(np.where(su, s.v, 0.0), np.where(sl, -s.v, 0.0))
    if viol.size and float(viol.max()) > rate:
        k = int(np.argmax(viol))
        d[:] = 0.0
        d[k] = 1.0 if (su[k] and s.v[k] > 0) else -1.0
    return d
