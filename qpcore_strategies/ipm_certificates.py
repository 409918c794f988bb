"""The proofs behind the interior point method's verdicts of infeasibility and unboundedness.

Infeasibility and unboundedness are never concluded from a failed step. When the duals diverge,
the primal iterate diverges, or progress stalls, the engine
(:class:`qpcore_strategies.ipm_core.IPMCore`) asks :class:`Certificates` to prove what the
iterates suggest, in the user's own data:

- a Farkas certificate read off the diverging duals and verified exactly (a multiplier on a boxed
  variable absorbs the row residual): :meth:`Certificates.farkas`;
- a recession direction d with Qd ≈ 0, cᵀd < 0, A d ≈ 0, C d in the recession cone of [l, u] and
  d in that of the box: :meth:`Certificates.ray`, :meth:`Certificates.check_ray`.

When the iterates' candidates do not verify, the feasibility LP (HiGHS,
:meth:`Certificates.feasible_lp`) and the LP over the recession cone
(:meth:`Certificates.ray_lp`) give their verdict, which the status' explanation quotes. When
neither proves anything the problem has a minimizer (Frank–Wolfe), and the engine ends a stall
as ``stalled`` with the best point.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore_strategies.ipm_presolve import _abs_mv, _is_sparse, _mv

__all__ = ["Certificates"]

FloatArray = NDArray[np.float64]

#: The user's problem (Q, c, lb, ub, A, b, C, l, u), matrices dense or csr, (0, n) for no rows.
UserData = tuple[Any, FloatArray, FloatArray, FloatArray, Any, FloatArray, Any, FloatArray, FloatArray]


class Certificates:
    """Verified proofs of infeasibility and unboundedness of one problem.

    Parameters
    ----------
    user : UserData
        The user's problem, as the engine holds it.
    info : dict
        The engine's info: the LPs' messages are recorded in it (and the feasibility LP's verdict
        is kept there, asked once).

    Attributes
    ----------
    certificate : dict
        The last proof found: ``farkas_lam``, ``farkas_y``, ``farkas_z`` (a Farkas certificate) or
        ``ray`` (a recession direction).
    """

    def __init__(self, user: UserData, info: dict[str, Any]) -> None:
        self.user = user
        self.info = info
        self.n, self.m, self.k = user[1].shape[0], user[4].shape[0], user[6].shape[0]
        self.certificate: dict[str, FloatArray] = {}

    def farkas(self, lam: FloatArray, y: FloatArray) -> str | None:
        """Verify (λ, y) as a Farkas certificate of the user's constraints; a message when it is one.

        With a = Aᵀλ + Cᵀy, the bound multipliers z = −a where a bound allows that sign; for
        every feasible x, 0 = xᵀ(a + z) − eᵀx ≥ bᵀλ + h(y) + h(z) − eᵀx, so a positive value V with
        e = 0 proves infeasibility (h the support terms: l·y⁺ − u·y⁻, lb·z⁺ − ub·z⁻).
        """
        Qm, c, lb, ub, A, b, C, l, u = self.user
        lam = np.asarray(lam, dtype=np.float64).copy()
        y = np.asarray(y, dtype=np.float64).copy()
        norm = max(float(np.abs(lam).max(initial=0)), float(np.abs(y).max(initial=0)))
        if not norm > 0 or not np.isfinite(norm):
            return None
        lam /= norm
        y /= norm
        # a row's multiplier may only take the sign its finite end allows
        y = np.where(y > 0, np.where(np.isfinite(l), y, 0.0), np.where(np.isfinite(u), y, 0.0))
        a = (_mv(A.T, lam) if self.m else np.zeros(self.n)) + (_mv(C.T, y) if self.k else np.zeros(self.n))
        z = -a
        ok = np.where(z > 0, np.isfinite(lb), np.where(z < 0, np.isfinite(ub), True))
        e = np.where(ok, 0.0, a)
        z = np.where(ok, z, 0.0)
        terms = [b * lam, np.where(y > 0, np.where(np.isfinite(l), l, 0.0) * y, np.where(np.isfinite(u), u, 0.0) * y),
                 np.where(z > 0, np.where(np.isfinite(lb), lb, 0.0) * z, np.where(np.isfinite(ub), ub, 0.0) * z)]
        value = float(sum(float(t.sum()) for t in terms))
        size = float(sum(float(np.abs(t).sum()) for t in terms))
        scale_a = max(1.0, float((_abs_mv(A.T, np.abs(lam)) if self.m else np.zeros(1)).max(initial=0)),
                      float((_abs_mv(C.T, np.abs(y)) if self.k else np.zeros(1)).max(initial=0)))
        resid = float(np.abs(e).max(initial=0.0))
        if resid <= 1e-12 * scale_a and value > 1e-9 * max(1.0, size):
            self.certificate = {"farkas_lam": lam, "farkas_y": y, "farkas_z": z}
            return (f"Farkas certificate: multipliers (λ, y, z) with Aᵀλ + Cᵀy + z = 0 (residual {resid:.1e} on "
                    f"unbounded variables) and bᵀλ + l·y⁺ − u·y⁻ + lb·z⁺ − ub·z⁻ = {value:.3g} > 0")
        return None

    def ray(self, d: FloatArray) -> str | None:
        """Verify d as a descent direction of recession; a message when it is one."""
        Qm, c, lb, ub, A, b, C, l, u = self.user
        norm = float(np.abs(d).max(initial=0.0))
        if not norm > 0 or not np.isfinite(norm):
            return None
        d = d / norm
        d = np.where(np.isfinite(lb), np.maximum(d, 0.0), d)
        d = np.where(np.isfinite(ub), np.minimum(d, 0.0), d)
        return self.check_ray(d)

    def check_ray(self, d: FloatArray) -> str | None:
        """Verify d, as it is, as a descent direction of recession; a message when it is one."""
        Qm, c, lb, ub, A, b, C, l, u = self.user
        norm = float(np.abs(d).max(initial=0.0))
        if not norm > 0:
            return None
        d = d / norm
        if np.any((d > 0) & np.isfinite(ub)) or np.any((d < 0) & np.isfinite(lb)):
            return None
        cd = float(c @ d)
        qscale = max(1.0, float(np.abs(Qm).max(initial=0.0)) if not _is_sparse(Qm) else float(abs(Qm).max()))
        qd = float(np.abs(_mv(Qm, d)).max(initial=0.0))
        ad = float(np.abs(_mv(A, d)).max(initial=0.0)) if self.m else 0.0
        cdv = _mv(C, d) if self.k else np.zeros(0)
        cone = float(np.maximum(np.where(np.isfinite(l), -cdv, 0.0), np.where(np.isfinite(u), cdv, 0.0))
                     .max(initial=0.0))
        ascale = max(1.0, float(np.abs(A).max(initial=0)) if self.m and not _is_sparse(A) else
                     (float(abs(A).max()) if self.m else 1.0))
        cscale = max(1.0, float(np.abs(C).max(initial=0)) if self.k and not _is_sparse(C) else
                     (float(abs(C).max()) if self.k else 1.0))
        if (cd < -1e-6 * max(1.0, float(np.abs(c).max(initial=0))) and qd <= 1e-9 * qscale and ad <= 1e-9 * ascale
                and cone <= 1e-9 * cscale):
            self.certificate = {"ray": d}
            return (f"a recession direction d (‖d‖∞ = 1) with cᵀd = {cd:.3g} < 0, ‖Qd‖∞ = {qd:.1e}, ‖Ad‖∞ = {ad:.1e}, "
                    f"C d in the rows' recession cone to {cone:.1e}, d in the box's; the problem is feasible "
                    f"(feasibility LP, HiGHS)")
        return None

    def _lp_parts(self) -> tuple[Any, Any, Any, Any, list[tuple[float | None, float | None]]]:
        Qm, c, lb, ub, A, b, C, l, u = self.user
        up, lo = np.isfinite(u), np.isfinite(l)
        if self.k:
            if _is_sparse(C):
                A_ub: Any = sp.vstack([C[up], -C[lo]]).tocsr()
            else:
                A_ub = np.vstack([C[up], -C[lo]])
            b_ub: Any = np.concatenate([u[up], -l[lo]])
        else:
            A_ub = b_ub = None
        bounds = [(None if not np.isfinite(a) else float(a), None if not np.isfinite(z) else float(z))
                  for a, z in zip(lb, ub)]
        return A_ub, b_ub, (A if self.m else None), (b if self.m else None), bounds

    def feasible_lp(self) -> tuple[bool | None, str]:
        """The feasibility LP's verdict: True (a point exists), False (none), None (no verdict)."""
        if "feasible_lp" in self.info:
            verdict: tuple[bool | None, str] = self.info["feasible_lp"]
            return verdict
        from scipy.optimize import linprog

        A_ub, b_ub, A_eq, b_eq, bounds = self._lp_parts()
        res = linprog(np.zeros(self.n), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
        out: tuple[bool | None, str] = ((True if res.status == 0 else False if res.status == 2 else None),
                                        str(res.message).strip())
        self.info["feasible_lp"] = out
        return out

    def ray_lp(self) -> str | None:
        """Minimize cᵀd over the recession cone ∩ {Qd = 0} ∩ [−1, 1]ⁿ (HiGHS); a verified ray's
        message when the minimum is negative."""
        from scipy.optimize import linprog

        Qm, c, lb, ub, A, b, C, l, u = self.user
        if not np.any(c):
            return None
        blocks = [Qm] + ([A] if self.m else [])
        if any(_is_sparse(M) for M in blocks):
            A_eq: Any = sp.vstack([sp.csr_matrix(M) for M in blocks]).tocsr()
        else:
            A_eq = np.vstack(blocks)
        up, lo = np.isfinite(u), np.isfinite(l)
        if self.k and (up.any() or lo.any()):
            A_ub: Any = (sp.vstack([C[up], -C[lo]]).tocsr() if _is_sparse(C) else np.vstack([C[up], -C[lo]]))
            b_ub: Any = np.zeros(int(up.sum() + lo.sum()))
        else:
            A_ub = b_ub = None
        bounds = [(0.0 if np.isfinite(a) else -1.0, 0.0 if np.isfinite(z) else 1.0) for a, z in zip(lb, ub)]
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.zeros(A_eq.shape[0]), bounds=bounds, method="highs")
        self.info["ray_lp"] = str(res.message).strip()
        if res.status != 0 or res.fun >= 0:
            return None
        d = np.asarray(res.x, dtype=np.float64)
        return self.check_ray(d)
