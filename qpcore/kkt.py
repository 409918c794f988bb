"""KKT certificates computed from the problem alone, never trusted from a strategy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from qpcore.problem import QP

FloatArray = NDArray[np.float64]


@attrs.frozen
class KKT:
    """A KKT certificate of a point.

    Attributes
    ----------
    primal : float
        Largest violation of the bounds or of A x = b (∞-norm).
    stationarity : float
        ∞-norm of the projected reduced gradient P(g − Aᵀλ) with the best multipliers λ.
    complementarity : float
        max_i |z_i| · distance of x_i to the bound that z_i belongs to (finite bounds only).
    gap : float
        For one equality row: the maximal-violating-pair gap m(x) − M(x) (LIBSVM's stopping
        measure; ≤ 0 at an exact optimum). For no equality: equals ``stationarity``.
    multipliers : ndarray
        Equality multipliers λ (length m): for an SVM dual, λ = rho = −bias.
    z : ndarray
        Reduced gradient g − Aᵀλ: bound multipliers, ≥ 0 at a lower bound, ≤ 0 at an upper one.
    """

    primal: float
    stationarity: float
    complementarity: float
    gap: float
    multipliers: FloatArray
    z: FloatArray

    @property
    def measure(self) -> float:
        """The stopping measure compared with ``tol``: the gap with one equality, else stationarity."""
        return max(self.gap, 0.0) if self.multipliers.size == 1 else self.stationarity

    def ok(self, tol: float, primal_tol: float = 1e-9) -> bool:
        """Whether the point is optimal to ``tol`` (and feasible to ``primal_tol`` relative)."""
        return self.measure <= tol and self.primal <= primal_tol


def bound_masks(qp: QP, x: FloatArray) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Masks of variables that may increase (below ub) and may decrease (above lb)."""
    return x < qp.ub, x > qp.lb


def one_row_interval(a: FloatArray, g: FloatArray, up: NDArray[np.bool_], down: NDArray[np.bool_]
                     ) -> tuple[float, float, NDArray[np.bool_]]:
    """For one equality row a, the interval [lo, hi] that λ must lie in for stationarity.

    Variable i that may increase needs g_i − λa_i ≥ 0, one that may decrease needs ≤ 0.
    Returns (lo, hi, a ≠ 0); the MVP gap is lo − hi.
    """
    nz = a != 0
    ratio = np.divide(g, a, out=np.zeros_like(g), where=nz)
    pos, neg = nz & (a > 0), nz & (a < 0)
    upper_mask = (pos & up) | (neg & down)   # these give λ ≤ g_i/a_i
    lower_mask = (pos & down) | (neg & up)   # these give λ ≥ g_i/a_i
    hi = float(ratio[upper_mask].min()) if upper_mask.any() else np.inf
    lo = float(ratio[lower_mask].max()) if lower_mask.any() else -np.inf
    return lo, hi, nz


def estimate_multipliers(qp: QP, x: FloatArray, g: FloatArray) -> FloatArray:
    """Equality multipliers λ from the gradient: the mean over free variables (LIBSVM's rho),
    else the midpoint of the feasible interval; least squares on free variables for m > 1."""
    m = qp.m
    if m == 0:
        return np.zeros(0)
    up, down = bound_masks(qp, x)
    free = up & down
    if m == 1:
        a = qp.A[0]
        f = free & (a != 0)
        if f.any():
            return np.array([float(np.mean(g[f] / a[f]))])
        lo, hi, _ = one_row_interval(a, g, up, down)
        if np.isfinite(lo) and np.isfinite(hi):
            return np.array([0.5 * (lo + hi)])
        return np.array([lo if np.isfinite(lo) else (hi if np.isfinite(hi) else 0.0)])
    Af = qp.A[:, free]
    if Af.shape[1] == 0:
        return np.zeros(m)
    lam, *_ = np.linalg.lstsq(Af.T, g[free], rcond=None)
    return np.asarray(lam, dtype=np.float64)


def kkt(qp: QP, x: FloatArray, g: FloatArray | None = None) -> KKT:
    """The KKT certificate of ``x`` for ``qp``.

    Parameters
    ----------
    qp : QP
        The problem.
    x : ndarray
        The point.
    g : ndarray, optional
        Its gradient Qx + c; computed from the problem (one matvec) when omitted, which is
        what an honest certificate does.

    Returns
    -------
    KKT
    """
    x = np.asarray(x, dtype=np.float64)
    if g is None:
        g = qp.gradient(x)
    viol = np.maximum(np.maximum(qp.lb - x, x - qp.ub), 0.0)
    primal = float(viol.max(initial=0.0))
    if qp.m:
        primal = max(primal, float(np.abs(qp.A @ x - qp.b).max()))
    lam = estimate_multipliers(qp, x, g)
    r = g - qp.A.T @ lam if qp.m else g.copy()
    up, down = bound_masks(qp, x)
    pg = np.where(up & down, r, np.where(up, np.minimum(r, 0.0), np.where(down, np.maximum(r, 0.0), 0.0)))
    stationarity = float(np.abs(pg).max(initial=0.0))
    zl, zu = np.maximum(r, 0.0), np.maximum(-r, 0.0)
    # a multiplier on an infinite bound is a stationarity violation, already counted there
    dl = np.where(np.isfinite(qp.lb), x - qp.lb, 0.0)
    du = np.where(np.isfinite(qp.ub), qp.ub - x, 0.0)
    comp = float(np.maximum(zl * np.abs(dl), zu * np.abs(du)).max(initial=0.0))
    if qp.m == 1:
        lo, hi, nz = one_row_interval(qp.A[0], g, up, down)
        gap = lo - hi if np.isfinite(lo) and np.isfinite(hi) else -np.inf
        if (~nz).any():
            gap = max(gap, float(np.abs(pg[~nz]).max()))
        if not np.isfinite(gap):
            gap = 0.0 if gap < 0 else gap
    else:
        gap = stationarity
    return KKT(primal=primal, stationarity=stationarity, complementarity=comp, gap=float(gap),
               multipliers=lam, z=r)
