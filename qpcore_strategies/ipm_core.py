"""The interior point engine: Mehrotra's predictor–corrector iteration over arrays.

:class:`IPMCore` solves ::

    minimize ½xᵀQx + cᵀx   subject to   lb ≤ x ≤ ub,   A x = b,   l ≤ C x ≤ u

one iteration per :meth:`IPMCore.iterate`; :func:`qpcore_strategies.interior_point.ipm_solve`
runs it to the end and :class:`qpcore_strategies.interior_point.InteriorPoint` is the strategy
around it (the method, and why it was chosen, are told there).

**Formulation.** Inequality rows get slacks s = C x, bounded by [l, u]. Every finite bound of x
and s has a slack t > 0 and a multiplier z > 0 (t_l = x − lb, t_u = ub − x, ...), and the
iteration keeps only t and z positive: the rows ``A x = b``, ``C x − s = 0`` and the slacks'
definitions may be violated on the way (an infeasible start, Mehrotra's, whose residuals vanish
with the steps). The data are presolved and equilibrated first
(:mod:`qpcore_strategies.ipm_presolve`), every Newton system is solved through the factored
quasi-definite KKT matrix (:mod:`qpcore_strategies.ipm_kkt`) and refined on the unregularized
system, and every output is mapped back to the user's units.

**Stopping.** In the user's units, the way :func:`qpcore.kkt` measures: the rows' and bounds'
violation relative to :func:`qpcore.core.optimality.feasibility_scale`; the projected reduced gradient
of [x; Cx] with the IPM's multipliers, a variable within ``BOUND_BAND`` of a bound counting at it
(the user's point puts such variables on their bounds where that measures no worse); and the
relative duality gap of the IPM's own multipliers. A run whose residuals reach the rounding level
of their own terms (huge multipliers) or that stops progressing ends as ``stalled`` with the best
point met, judged as the certificate judges. When the duals or the primal iterate diverge, or
progress stalls, the engine asks for a proof of infeasibility or unboundedness
(:mod:`qpcore_strategies.ipm_certificates`) before it says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.core.certificate import BOUND_BAND, box_terms
from qpcore.core.optimality import DEFAULT_FEAS_TOL
from qpcore_strategies.ipm_certificates import Certificates, UserData
from qpcore_strategies.ipm_kkt import _DENSE_FILL, _DENSE_MAX_N, DenseKKT, SparseKKT, choose_kkt
from qpcore_strategies.ipm_presolve import (_as_2d, _dense_if_small, _is_sparse, _mv, _scale, _sparse_if_sparse,
                                            presolve, ruiz)

__all__ = ["IPMCore", "IPMOutcome", "IPMSettings"]

FloatArray = NDArray[np.float64]

#: Outcomes of the engine: the codes of :class:`qpcore.Status` it maps to.
Outcome = Literal["running", "converged", "primal_infeasible", "unbounded", "stalled", "max_iter", "nonfinite"]


# --------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------

@attrs.frozen
class IPMSettings:
    """The engine's settings.

    Attributes
    ----------
    tol : float
        Bound on the projected reduced gradient (absolute, the user's units).
    feas_tol : float
        Bound on the primal violation, relative to the feasibility scale.
    gap_tol : float or None
        Bound on the relative duality gap |f − d| / max(1, |f|); None: ``tol``.
    max_iter : int
        Iterations at most (:func:`ipm_solve` only; the strategy's limit is the loop's).
    linear_solver : {"auto", "dense", "sparse"}
        How the KKT matrix is factored; ``auto`` picks by size and density.
    ruiz_iter : int
        Ruiz equilibration passes (0: none).
    reg : float
        Primal and dual regularization ρ = δ of the factored matrix (scaled units).
    step_fraction : float
        Fraction of the step to the boundary taken.
    refine : int
        Iterative refinement steps at most per solve.
    stall_window : int
        Iterations without halving the error that count as a stall.
    """

    tol: float = 1e-8
    feas_tol: float = DEFAULT_FEAS_TOL
    gap_tol: float | None = None
    max_iter: int = 200
    linear_solver: str = attrs.field(default="auto", validator=attrs.validators.in_(("auto", "dense", "sparse")))
    ruiz_iter: int = 15
    reg: float = 1e-9
    step_fraction: float = 0.99
    refine: int = 20
    stall_window: int = 12


#: The relative residual at which iterative refinement stops, and the merit above which the
#: regularized solve is taken unrefined.
_REFINE_TOL, _INEXACT = 1e-12, 1e-2

#: Variables this close to a bound (relative) are put on it in the user's point.
_SNAP = BOUND_BAND

#: The ceiling of the regularization, raised (×10) from the setting only after a zero pivot.
_MAX_REG = 1e-6


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------

@attrs.frozen
class IPMOutcome:
    """What :func:`ipm_solve` returns.

    Attributes
    ----------
    x : ndarray
        The point (user's variables).
    lam : ndarray
        Multipliers of A x = b.
    y : ndarray
        Multipliers of l ≤ C x ≤ u (≥ 0 where C x = l, ≤ 0 where C x = u).
    z : ndarray
        Bound multipliers g − Aᵀλ − Cᵀy.
    status : str
        ``converged``, ``primal_infeasible``, ``unbounded``, ``stalled``, ``max_iter`` or ``nonfinite``.
    objective : float
        ½xᵀQx + cᵀx.
    iterations : int
        IPM iterations.
    info : dict
        Residuals, the linear solver, and for an infeasible or unbounded verdict its proof.
    """

    x: FloatArray
    lam: FloatArray
    y: FloatArray
    z: FloatArray
    status: str
    objective: float
    iterations: int
    info: dict[str, Any]


def _vec(v: Any, n: int, default: float, name: str) -> FloatArray:
    if v is None:
        return np.full(n, default)
    out = np.asarray(v, dtype=np.float64).reshape(-1)
    if out.size == 1 and n != 1:
        out = np.full(n, float(out[0]))
    if out.shape != (n,):
        raise ValueError(f"{name}: length {out.size}, expected {n}")
    return out


class IPMCore:
    """The interior point engine over arrays (see the module docstring).

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        n×n, symmetric positive semidefinite.
    c, lb, ub : array_like
        Linear term and bounds (±inf allowed; lb = ub fixes a variable).
    A, b : array_like or sparse, optional
        Equality rows A x = b.
    C, l, u : array_like or sparse, optional
        Inequality rows l ≤ C x ≤ u (l = u: an equality; ±inf allowed).
    settings : IPMSettings, optional
    accept : callable, optional
        ``accept(x, g, λ, y)``, asked once the engine's own measures are met: False (an outside
        certificate that measures otherwise) keeps the run going.

    Notes
    -----
    Call :meth:`iterate` until :attr:`outcome` is no longer ``"running"``. The user's point and
    multipliers (:attr:`x`, :attr:`g`, :meth:`multipliers`) are current after each call.
    """

    def __init__(self, Q: Any, c: Any, lb: Any = None, ub: Any = None, A: Any = None, b: Any = None, C: Any = None,
                 l: Any = None, u: Any = None, settings: IPMSettings | None = None,
                 accept: Callable[[FloatArray, FloatArray, FloatArray, FloatArray], bool] | None = None) -> None:
        self.settings = settings or IPMSettings()
        self.accept = accept
        self.refused = 0
        self.gap_tol = self.settings.tol if self.settings.gap_tol is None else self.settings.gap_tol
        c = np.asarray(c, dtype=np.float64).reshape(-1)
        n = c.size
        Qm = sp.csr_matrix(Q, dtype=np.float64) if _is_sparse(Q) else np.asarray(Q, dtype=np.float64).reshape(n, n)
        lb, ub = _vec(lb, n, -np.inf, "lb"), _vec(ub, n, np.inf, "ub")
        Am = _as_2d(A, None, n, "A")
        bm = _vec(b, Am.shape[0], 0.0, "b")
        Cm = _as_2d(C, None, n, "C")
        lm, um = _vec(l, Cm.shape[0], -np.inf, "l"), _vec(u, Cm.shape[0], np.inf, "u")
        # mostly-zero dense data (qpcore.QP keeps A and C dense) is worked on sparse, small sparse
        # data dense (see _dense_if_small)
        Qm, Am, Cm = (_dense_if_small(_sparse_if_sparse(M)) for M in (Qm, Am, Cm))
        self.user: UserData = (Qm, c, lb, ub, Am, bm, Cm, lm, um)
        self.abs_A = abs(Am) if _is_sparse(Am) else np.abs(Am)
        self.abs_C = abs(Cm) if _is_sparse(Cm) else np.abs(Cm)
        self.n, self.m, self.k = n, Am.shape[0], Cm.shape[0]
        self.iterations = 0
        self.outcome: Outcome = "running"
        self.reason = ""
        self.info: dict[str, Any] = {}
        self.proofs = Certificates(self.user, self.info)
        t0 = time.perf_counter()
        pre = presolve(Qm, c, lb, ub, Am, bm, Cm, lm, um)
        self.pre = pre
        self.x = np.clip(np.zeros(n), lb, ub)
        self.lam, self.y = np.zeros(self.m), np.zeros(self.k)
        self.g = _mv(Qm, self.x) + c
        self.best: tuple[float, FloatArray, FloatArray, FloatArray, FloatArray] | None = None
        if pre.infeasible is not None:
            self._end("primal_infeasible", f"presolve: {pre.infeasible}")
            return
        self._setup()
        self.info["setup_seconds"] = time.perf_counter() - t0
        self._start()
        self._measure()

    # ---------------------------------------------------------------- setup

    def _setup(self) -> None:
        pre, s = self.pre, self.settings
        D, EA, EC, cs = ruiz(pre.Q, pre.c, pre.A, pre.C, s.ruiz_iter)
        self.D, self.EA, self.EC, self.cs = D, EA, EC, cs
        self.Q = _scale(pre.Q, D * cs, D)
        self.c = cs * D * pre.c
        self.A = _scale(pre.A, EA, D)
        self.b = EA * pre.b
        self.C = _scale(pre.C, EC, D)
        nx, m, k = D.size, self.A.shape[0], self.C.shape[0]
        self.nx, self.mr, self.kr = nx, m, k
        self.lo = np.concatenate([pre.lb / D, EC * pre.l])
        self.hi = np.concatenate([pre.ub / D, EC * pre.u])
        self.has_lo, self.has_hi = np.isfinite(self.lo), np.isfinite(self.hi)
        self.lo_f = np.where(self.has_lo, self.lo, 0.0)
        self.hi_f = np.where(self.has_hi, self.hi, 0.0)
        self.n_comp = int(self.has_lo.sum() + self.has_hi.sum())
        self.kkt = choose_kkt(self.Q, self.A, self.C, s.linear_solver)
        # the products of every iteration: dense where that is the cheaper (_dense_if_small)
        self.Q, self.A, self.C = (_dense_if_small(_sparse_if_sparse(M)) for M in (self.Q, self.A, self.C))
        self.AT = sp.csr_matrix(self.A.T) if _is_sparse(self.A) else np.ascontiguousarray(self.A.T)
        self.CT = sp.csr_matrix(self.C.T) if _is_sparse(self.C) else np.ascontiguousarray(self.C.T)
        self.info["linear_solver"] = self.kkt.kind
        self.info["kkt_size"] = self.kkt.N
        self.rho = s.reg
        self.delta = s.reg
        self.solve_err = 0.0
        self.fill_checked = False
        self.resid_at = -1
        self.floor_seen = False
        self.restarts = 0
        self.resid: tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray] = ()  # type: ignore[assignment]
        self.alpha = 0.0
        self.small_steps = 0
        self.history: list[float] = []
        self.stat_history: list[float] = []
        self.diagnosed_at = -10 ** 9
        self.diagnoses = 0
        self.x_prev = np.zeros(nx)
        self.norm_b = max(1.0, float(np.abs(self.b).max(initial=0.0)))
        self.norm_c = max(1.0, float(np.abs(self.c).max(initial=0.0)))

    # ---------------------------------------------------------------- linear algebra

    def _apply_true(self, sx: FloatArray, ss: FloatArray, a: FloatArray, bs: FloatArray, cy: FloatArray,
                    dw: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """The unregularized Newton matrix times (a, b, c, d)."""
        r1 = _mv(self.Q, a) + sx * a + _mv(self.AT, cy) + _mv(self.CT, dw)
        r2 = ss * bs - dw
        r3 = _mv(self.A, a)
        r4 = _mv(self.C, a) - bs
        return r1, r2, r3, r4

    def _solve_reg(self, f1: FloatArray, f2: FloatArray, f3: FloatArray, f4: FloatArray, Ds: FloatArray,
                   W: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Solve the regularized system [[H+ρ, 0, Aᵀ, Cᵀ], [0, Σ_s+ρ, 0, −I], [A, 0, −δ, 0],
        [C, −I, 0, −δ]] (a, b, c, d) = f through the reduced quasi-definite factor."""
        nx = self.nx
        # W/D_s = 1/(1 + δD_s) written out: an inactive row has D_s ≈ ρ, and f₂/D_s then
        # b = (f₂ + d)/D_s would cancel huge terms
        g2 = f2 / (1.0 + self.delta * Ds)
        rhs = np.concatenate([f1 + _mv(self.CT, W * f4 + g2), f3])
        sol = self.kkt.solve(rhs)
        a, cy = sol[:nx], sol[nx:]
        ca = _mv(self.C, a)
        dw = W * (ca - f4) - g2
        bs = (ca - f4 + self.delta * f2) / (1.0 + self.delta * Ds)
        return a, bs, cy, dw

    def _newton(self, f1: FloatArray, f2: FloatArray, f3: FloatArray, f4: FloatArray, sx: FloatArray,
                ss: FloatArray, Ds: FloatArray, W: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """The regularized solve refined on the unregularized system; the relative residual it
        reached is kept in ``solve_err``."""
        sol = self._solve_reg(f1, f2, f3, f4, Ds, W)
        # an inexact Newton step suffices far from the solution: the accuracy asked of a solve
        # follows the residuals (Dembo–Eisenstat–Steihaug), and early on it is not even checked
        merit = self.history[-1] if self.history else 0.0     # the start: refined (it may be the solution)
        if merit > _INEXACT:
            self.solve_err = float("nan")
            return sol
        tol = max(_REFINE_TOL, 1e-4 * merit)
        fnorm = 1.0 + max(np.abs(f1).max(initial=0), np.abs(f2).max(initial=0), np.abs(f3).max(initial=0),
                          np.abs(f4).max(initial=0))
        best, best_err, prev = sol, np.inf, np.inf
        for i in range(self.settings.refine + 1):
            r = self._apply_true(sx, ss, *sol)
            e = (f1 - r[0], f2 - r[1], f3 - r[2], f4 - r[3])
            err = max(float(np.abs(v).max(initial=0)) for v in e) / fnorm
            if err < best_err:
                best, best_err = sol, err
            # stop when accurate, at the limit, or when a correction no longer halves the error
            if err <= tol or i == self.settings.refine or (i > 0 and err > 0.7 * prev):
                break
            prev = err
            d = self._solve_reg(*e, Ds, W)
            sol = (sol[0] + d[0], sol[1] + d[1], sol[2] + d[2], sol[3] + d[3])
        self.solve_err = best_err
        return best

    def _factor(self, sx: FloatArray, ss: FloatArray) -> tuple[FloatArray, FloatArray] | None:
        """Factor the regularized matrix at barrier terms (Σ_x, Σ_s); (D_s, W) of the reduction,
        or None when even a large regularization leaves a zero pivot."""
        while True:
            Ds = ss + self.rho
            W = 1.0 / (1.0 / Ds + self.delta)
            if self.kkt.factor(sx + self.rho, W, self.delta):
                kkt = self.kkt
                if (isinstance(kkt, SparseKKT) and self.settings.linear_solver == "auto" and not self.fill_checked
                        and kkt.N <= _DENSE_MAX_N and kkt.fill() > _DENSE_FILL * kkt.N * kkt.N):
                    self.kkt = DenseKKT(self.Q, self.A, self.C)
                    self.info["linear_solver"] = "dense"
                    self.info["sparse_fill"] = kkt.fill() / (kkt.N * kkt.N)
                    continue
                self.fill_checked = True
                return Ds, W
            if self.rho >= _MAX_REG:
                return None
            self.rho = self.delta = min(_MAX_REG, 10 * self.rho)

    # ---------------------------------------------------------------- start

    def _start(self) -> None:
        """Mehrotra's starting point, adapted to bounds: minimize ½xᵀQx + cᵀx plus ½ the squared
        distances of x and s = Cx to their finite bounds subject to A x = b (one solve with
        Σ = the number of finite bounds); the bound slacks t and their multipliers z = −t are then
        shifted positive and balanced (Mehrotra 1992, §7). x need not lie in the box: the slacks
        t carry the bounds, and t − (x − lb) → 0 with the other residuals."""
        nx, k = self.nx, self.kr
        has_lo, has_hi = self.has_lo, self.has_hi
        sig = has_lo.astype(float) + has_hi.astype(float)
        sx, ss = sig[:nx], sig[nx:]
        factored = self._factor(sx, ss)
        if factored is None:
            raise np.linalg.LinAlgError("the KKT matrix of the starting point could not be factored")
        Ds, W = factored
        pull = self.lo_f + self.hi_f          # Σ·target: the sum of the finite bounds
        a, bs, cy, dw = self._newton(-self.c + pull[:nx], pull[nx:], self.b.copy(), np.zeros(k), sx, ss, Ds, W)
        p = np.concatenate([a, bs])
        tl = np.where(has_lo, p - self.lo_f, 0.0)
        tu = np.where(has_hi, self.hi_f - p, 0.0)
        t = np.concatenate([tl[has_lo], tu[has_hi]])
        z = -t
        if t.size:
            dt = max(-1.5 * float(t.min()), 0.0)
            dz = max(-1.5 * float(z.min()), 0.0)
            t, z = t + dt, z + dz
            tz = float(t @ z)
            if tz <= 1e-12 * max(1.0, float(t.sum()), float(z.sum())):
                t, z = t + 1.0, z + 1.0
                tz = float(t @ z)
            t = t + 0.5 * tz / float(z.sum())
            z = z + 0.5 * tz / float(t.sum())
            # a floor keeps a slack that was already at its bound from being born at zero
            floor = 1e-2 * max(1.0, float(np.median(t)))
            t, z = np.maximum(t, floor), np.maximum(z, floor)
        nl = int(has_lo.sum())
        self.tl = np.ones(p.size)
        self.tu = np.ones(p.size)
        self.zl = np.zeros(p.size)
        self.zu = np.zeros(p.size)
        self.tl[has_lo], self.tu[has_hi] = t[:nl], t[nl:]
        self.zl[has_lo], self.zu[has_hi] = z[:nl], z[nl:]
        self.p = p
        self.yA = -cy
        self.w = -dw
        self.x_prev = p[:nx].copy()

    def _dual_residual_core(self, p: FloatArray, yA: FloatArray, w: FloatArray) -> FloatArray:
        """Qx + c − Aᵀy − Cᵀw on x, w on s (before the bound multipliers)."""
        x = p[:self.nx]
        rx = _mv(self.Q, x) + self.c - _mv(self.AT, yA) - _mv(self.CT, w)
        return np.concatenate([rx, w])

    def _slack_residuals(self, p: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(x − lb) − t_l and (ub − x) − t_u where the bounds are finite, 0 elsewhere."""
        rl = np.where(self.has_lo, p - self.lo_f - self.tl, 0.0)
        ru = np.where(self.has_hi, self.hi_f - p - self.tu, 0.0)
        return rl, ru

    # ---------------------------------------------------------------- one iteration

    def _step_length(self, t: FloatArray, dt: FloatArray) -> float:
        neg = dt < 0
        if not neg.any():
            return 1.0
        return float(min(1.0, np.min(-t[neg] / dt[neg])))

    def _direction(self, rdual: FloatArray, rA: FloatArray, rC: FloatArray, rl: FloatArray, ru: FloatArray,
                   rcl: FloatArray, rcu: FloatArray, sx: FloatArray, ss: FloatArray, Ds: FloatArray,
                   W: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
                                           FloatArray]:
        """The Newton direction for complementarity targets rc (t∘z + Δt∘z + t∘Δz = t∘z + rc)."""
        nx = self.nx
        zl, zu, tl, tu = self.zl, self.zu, self.tl, self.tu
        R = -rdual + (rcl - zl * rl) / tl - (rcu - zu * ru) / tu
        a, bs, cy, dw = self._newton(R[:nx], R[nx:], -rA, -rC, sx, ss, Ds, W)
        dp = np.concatenate([a, bs])
        dtl = np.where(self.has_lo, dp + rl, 0.0)
        dtu = np.where(self.has_hi, -dp + ru, 0.0)
        dzl = (rcl - zl * dtl) / tl
        dzu = (rcu - zu * dtu) / tu
        return dp, dtl, dtu, dzl, dzu, cy, dw

    def _max_step(self, dtl: FloatArray, dtu: FloatArray, dzl: FloatArray, dzu: FloatArray) -> float:
        return min(self._step_length(self.tl, dtl), self._step_length(self.tu, dtu),
                   self._step_length(self.zl, dzl), self._step_length(self.zu, dzu))

    def iterate(self) -> None:
        """One Mehrotra predictor–corrector iteration, then the measures, then (when the run
        looks divergent or stalls) the attempt to prove infeasibility or unboundedness."""
        if self.outcome != "running":
            return
        nx = self.nx
        has_lo, has_hi = self.has_lo, self.has_hi
        p, tl, tu, zl, zu = self.p, self.tl, self.tu, self.zl, self.zu
        x = p[:nx]
        rdual, rA, rC, rl, ru = self._residuals()
        mu = float((tl * zl + tu * zu).sum() / self.n_comp) if self.n_comp else 0.0
        sig = zl / tl + zu / tu
        sx, ss = sig[:nx], sig[nx:]
        factored = self._factor(sx, ss)
        if factored is None:
            self._restore_best()
            self._end("stalled", "the KKT matrix could not be factored, even regularized")
            return
        Ds, W = factored
        # predictor (affine scaling): complementarity target 0
        rcl = np.where(has_lo, -tl * zl, 0.0)
        rcu = np.where(has_hi, -tu * zu, 0.0)
        dp, dtl, dtu, dzl, dzu, cy, dw = self._direction(rdual, rA, rC, rl, ru, rcl, rcu, sx, ss, Ds, W)
        alpha = self._max_step(dtl, dtu, dzl, dzu)
        if self.n_comp:
            mu_aff = float(((tl + alpha * dtl) * (zl + alpha * dzl) + (tu + alpha * dtu) * (zu + alpha * dzu)).sum()
                           / self.n_comp)
            sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0
            # corrector: centring and the second-order term of the complementarity
            rcl = np.where(has_lo, sigma * mu - tl * zl - dtl * dzl, 0.0)
            rcu = np.where(has_hi, sigma * mu - tu * zu - dtu * dzu, 0.0)
            dp, dtl, dtu, dzl, dzu, cy, dw = self._direction(rdual, rA, rC, rl, ru, rcl, rcu, sx, ss, Ds, W)
            alpha = min(1.0, self.settings.step_fraction * self._max_step(dtl, dtu, dzl, dzu))
        else:
            alpha = 1.0
        self.x_prev = x.copy()
        self.p = p + alpha * dp
        self.tl = np.where(has_lo, tl + alpha * dtl, 1.0)
        self.tu = np.where(has_hi, tu + alpha * dtu, 1.0)
        self.zl = zl + alpha * dzl
        self.zu = zu + alpha * dzu
        self.yA = self.yA - alpha * cy
        self.w = self.w - alpha * dw
        self.alpha = alpha
        self.iterations += 1
        if self.rho > self.settings.reg and self.solve_err < 1e-12:
            # raised after a zero pivot: back toward the setting once solves are accurate again
            self.rho = self.delta = max(self.settings.reg, 0.1 * self.rho)
        if not (np.isfinite(self.p).all() and np.isfinite(self.zl).all() and np.isfinite(self.zu).all()
                and np.isfinite(self.yA).all() and np.isfinite(self.w).all()):
            self._restore_best()
            self._end("nonfinite", "a NaN or inf appeared in the iterates")
            return
        self.small_steps = self.small_steps + 1 if alpha < 1e-8 else 0
        self._measure()
        if self.outcome == "running":
            self._watch()

    # ---------------------------------------------------------------- the user's point and measures

    def _user_point(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """x, λ, y and the IPM's bound multipliers z in the user's units."""
        pre = self.pre
        nx = self.nx
        x = np.empty(self.n)
        x[pre.keep] = self.D * self.p[:nx]
        x[pre.fixed] = pre.x_fixed
        np.clip(x, self.user[2], self.user[3], out=x)
        ya = self.EA * self.yA / self.cs
        wc = self.EC * self.w / self.cs
        lam = np.zeros(self.m)
        y = np.zeros(self.k)
        na = pre.a_rows.size
        lam[pre.a_rows] = ya[:na]
        y[pre.ceq_rows] = ya[na:]
        y[pre.cin_rows] = wc
        zb = np.zeros(self.n)
        zb[pre.keep] = (self.zl[:nx] - self.zu[:nx]) / (self.cs * self.D)
        return x, lam, y, zb

    def _primal(self, x: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        """The largest violation of the user's constraints at x, with A x and C x."""
        _, _, lb, ub, A, b, C, l, u = self.user
        ax = _mv(A, x) if self.m else np.zeros(0)
        cx = _mv(C, x) if self.k else np.zeros(0)
        pres = float(np.maximum(np.maximum(lb - x, x - ub), 0.0).max(initial=0.0))
        if self.m:
            pres = max(pres, float(np.abs(ax - b).max()))
        if self.k:
            pres = max(pres, float(np.maximum(np.maximum(l - cx, cx - u), 0.0).max()))
        return pres, ax, cx

    def _feas_scale(self, x: FloatArray, ax: FloatArray, cx: FloatArray) -> float:
        """The primal violation's scale, :func:`qpcore.core.optimality.feasibility_scale`'s."""
        _, _, _, _, A, b, C, l, u = self.user
        scale = max(1.0, float(np.abs(x).max(initial=0.0)))
        if self.m:
            scale = max(scale, float(np.abs(b).max()), float(_mv(self.abs_A, np.abs(x)).max()))
        if self.k:
            ends = np.concatenate([l[np.isfinite(l)], u[np.isfinite(u)]])
            scale = max(scale, float(np.abs(ends).max(initial=0.0)), float(_mv(self.abs_C, np.abs(x)).max()))
        return scale

    def _evaluate(self, x: FloatArray, lam: FloatArray, y: FloatArray) -> tuple[float, float, float, FloatArray]:
        """(primal violation, its scale, stationarity, gradient) of the user's point x with the
        multipliers (λ, y), measured the way :func:`qpcore.kkt` measures them: the projected
        reduced gradient of [x; Cx] with reduced gradients [g − Aᵀλ − Cᵀy; y], a variable or row
        within ``BOUND_BAND`` of a bound counting at it."""
        Qm, c, lb, ub, A, b, C, l, u = self.user
        pres, ax, cx = self._primal(x)
        scale = self._feas_scale(x, ax, cx)
        g = _mv(Qm, x) + c
        r = g - (_mv(A.T, lam) if self.m else 0.0) - (_mv(C.T, y) if self.k else 0.0)
        v = np.concatenate([x, cx])
        rv = np.concatenate([r, y])
        vlo, vhi = np.concatenate([lb, l]), np.concatenate([ub, u])
        # the certificate's own terms (qpcore.core.certificate.box_terms: bounds identified in the band, their
        # complementarity counted), so the engine stops where the certificate would
        _, stat, _, _ = box_terms(v, rv, vlo, vhi)
        return pres, scale, stat, g

    def _measure(self) -> None:
        """The user's point, its gradient, and the three measures the run stops on."""
        Qm, c, lb, ub, *_ = self.user
        s = self.settings
        x, lam, y, _ = self._user_point()
        merit = self._merit()
        if merit > _INEXACT and self.iterations > 0:
            # far from a solution (1% residuals): the point and its gradient only, no certificate
            self.x, self.g, self.lam, self.y = x, _mv(Qm, x) + c, lam, y
            self.history.append(merit)
            self.stat_history.append(np.inf)
            return
        rel_gap = abs(self._gap()) / max(1.0, abs(self.info.get("objective", 0.0)))
        pres, scale, stat, g = self._evaluate(x, lam, y)

        def error(pres: float, scale: float, stat: float) -> float:
            return float(max(pres / (s.feas_tol * scale), stat / s.tol, rel_gap / self.gap_tol))

        # onto a bound what lies within the certificate's band of it, where that measures no
        # worse: the point then reads as at its bounds in every measure (the pair gap of one-row
        # problems, which has no band, included)
        with np.errstate(invalid="ignore"):
            xs = np.where(np.isfinite(lb) & (x - lb <= _SNAP * np.maximum(1.0, np.abs(lb))), lb, x)
            xs = np.where(np.isfinite(ub) & (ub - xs <= _SNAP * np.maximum(1.0, np.abs(ub))), ub, xs)
        if error(pres, scale, stat) <= 1e3 and not np.array_equal(xs, x):
            snapped = self._evaluate(xs, lam, y)
            if error(*snapped[:3]) <= max(1.0, error(pres, scale, stat)):
                x, (pres, scale, stat, g) = xs, snapped
        self.x, self.g, self.lam, self.y = x, g, lam, y
        f = float(0.5 * x @ (g + c))
        gap = self._gap()
        rel_gap = abs(gap) / max(1.0, abs(f))
        self.info.update(primal=pres, primal_scale=scale, stationarity=stat, gap=gap, relative_gap=rel_gap,
                         objective=f)
        # the best point is judged as the certificate will judge it; stalls by the engine's merit
        err = error(pres, scale, stat)
        if self.best is None or err < self.best[0]:
            self.best = (err, x.copy(), g.copy(), lam.copy(), y.copy())
            self.info.update(best_primal=pres, best_stationarity=stat, best_relative_gap=rel_gap)
        self.history.append(merit)
        self.stat_history.append(max(stat, pres / scale))
        if pres <= s.feas_tol * scale and stat <= s.tol and rel_gap <= self.gap_tol:
            if self.accept is None or self.accept(x, g, lam, y):
                self._end("converged", "optimal to tol")
            else:
                # an outside certificate measures otherwise (a one-row problem's pair gap): go on
                self.refused += 1

    def _residuals(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
        """(dual residual, A x − b, C x − s, and the bound slacks' residuals) of the current
        iterate, computed once per iterate."""
        if self.resid_at != self.iterations:
            p, nx = self.p, self.nx
            rdual = self._dual_residual_core(p, self.yA, self.w) - self.zl + self.zu
            rA = _mv(self.A, p[:nx]) - self.b
            rC = _mv(self.C, p[:nx]) - p[nx:]
            self.resid = (rdual, rA, rC, *self._slack_residuals(p))
            self.resid_at = self.iterations
        return self.resid

    def _merit(self) -> float:
        """The engine's own progress measure (scaled units): the largest of the relative dual and
        primal residuals and the mean complementarity; a stall is this not halving."""
        rd, rA, rC, rl, ru = self._residuals()
        rp = np.concatenate([rA, rC, rl, ru])
        mu = float((self.tl * self.zl + self.tu * self.zu).sum() / self.n_comp) if self.n_comp else 0.0
        # floored at rounding: going below it is no progress (a stall is then seen as one)
        return max(float(np.abs(rd).max(initial=0.0)) / self.norm_c, float(np.abs(rp).max(initial=0.0)) / self.norm_b,
                   mu, 1e-14)

    def _gap(self) -> float:
        """f − d in the user's units: d = −½xᵀQx + bᵀy + Σ lo·zl − Σ hi·zu (scaled, then / cs)."""
        if not hasattr(self, "p"):
            return 0.0
        x = self.p[:self.nx]
        qx = _mv(self.Q, x)
        primal = 0.5 * x @ qx + self.c @ x
        dual = -0.5 * x @ qx + self.b @ self.yA + float(self.lo_f @ self.zl - self.hi_f @ self.zu)
        return float((primal - dual) / self.cs)

    def _end(self, outcome: Outcome, reason: str) -> None:
        self.outcome = outcome
        self.reason = reason

    def _restore_best(self) -> None:
        if self.best is not None:
            _, x, g, lam, y = self.best
            self.x, self.g, self.lam, self.y = x, g, lam, y

    def multipliers(self) -> tuple[FloatArray, FloatArray]:
        """(λ, y) of the current point, in the user's units and sign convention."""
        return self.lam, self.y

    def result(self) -> IPMOutcome:
        """The outcome so far: the point, its multipliers, the status and the measures."""
        Qm, c, lb, ub, A, b, C, l, u = self.user
        x, g, lam, y = self.x, self.g, self.lam, self.y
        z = g - (_mv(A.T, lam) if self.m else 0.0) - (_mv(C.T, y) if self.k else 0.0)
        info = dict(self.info)
        info["reason"] = self.reason
        info.update(self.proofs.certificate)
        return IPMOutcome(x=x, lam=lam, y=y, z=np.asarray(z, dtype=np.float64), status=self.outcome,
                          objective=float(0.5 * x @ (g + c)), iterations=self.iterations, info=info)

    # ---------------------------------------------------------------- divergence and stalls

    def _at_precision_floor(self) -> bool:
        """Whether the residuals are at the rounding level of their own terms and μ is negligible:
        further iterations cannot improve the point (huge multipliers, e.g. QFORPLAN's)."""
        p, nx = self.p, self.nx
        x = p[:nx]
        qx, aty, ctw = _mv(self.Q, x), _mv(self.AT, self.yA), _mv(self.CT, self.w)
        rd = np.concatenate([qx + self.c - aty - ctw, self.w]) - self.zl + self.zu
        big_d = max(float(np.abs(qx).max(initial=0)), float(np.abs(self.c).max(initial=0)),
                    float(np.abs(aty).max(initial=0)), float(np.abs(ctw).max(initial=0)),
                    float(np.abs(self.zl).max(initial=0)), float(np.abs(self.zu).max(initial=0)), 1.0)
        ax, cx = _mv(self.A, x), _mv(self.C, x)
        rl, ru = self._slack_residuals(p)
        rp = max(float(np.abs(ax - self.b).max(initial=0)), float(np.abs(cx - p[nx:]).max(initial=0)),
                 float(np.abs(rl).max(initial=0)), float(np.abs(ru).max(initial=0)))
        big_p = max(float(np.abs(ax).max(initial=0)), float(np.abs(self.b).max(initial=0)),
                    float(np.abs(cx).max(initial=0)), float(np.abs(p).max(initial=0)), 1.0)
        mu = float((self.tl * self.zl + self.tu * self.zu).sum() / self.n_comp) if self.n_comp else 0.0
        f = abs(float(0.5 * x @ qx + self.c @ x))
        eps = 1e-14
        return (float(np.abs(rd).max(initial=0)) <= eps * big_d and rp <= eps * big_p
                and self.n_comp * mu <= 0.1 * eps * max(1.0, f))

    def _watch(self) -> None:
        """Decide whether the run looks divergent or stalled; if so, try to prove why."""
        s = self.settings
        it = self.iterations
        dual_norm = max(float(np.abs(self.yA).max(initial=0)), float(np.abs(self.w).max(initial=0)),
                        float(np.abs(self.zl).max(initial=0)), float(np.abs(self.zu).max(initial=0)))
        primal_norm = float(np.abs(self.p).max(initial=0))
        h = self.history
        window = s.stall_window
        stats = self.stat_history
        # no progress: neither the engine's merit nor the certificate's measure halved in a window
        recent = min(stats[-window:]) if len(stats) > window else np.inf
        stalled = (len(h) > window and min(h[-window:]) > 0.5 * min(h[:-window])
                   and (not np.isfinite(recent) or recent > 0.5 * min(stats[:-window])))
        # at the rounding level of the residuals, an iteration that no longer halves the
        # certificate's measure ends the run (more would only wander: μ below rounding)
        if it >= 5 and h[-1] < 1e-6 and self._at_precision_floor():
            self.floor_seen = True
        if self.floor_seen and len(stats) > 1 and (stats[-1] > 0.5 * stats[-2] or h[-1] > 100 * min(h)):
            self._restore_best()
            self._end("stalled", "the residuals are at the rounding level of their terms: the point cannot be "
                                 "improved in double precision (the best found)")
            return
        suspect = (dual_norm > 1e10 or primal_norm > 1e10 or self.small_steps >= 3 or stalled)
        if not suspect or it - self.diagnosed_at < window:
            return
        self.diagnosed_at = it
        verdict = self._diagnose()
        if verdict is not None:
            self._restore_best()
            self._end(*verdict)
            return
        self.diagnoses += 1
        if stalled or self.small_steps >= 3:
            # the problem has a minimizer (feasible, no descent ray) and the iterations stall
            if self.diagnoses >= 2 or (min(h[-window:]) >= min(h[:-window])
                                       and (not np.isfinite(recent) or recent >= min(stats[:-window]))):
                if self.restarts == 0 and (self.best is None or self.best[0] > 1e3):
                    # far from any solution: once more from the start, with a stronger
                    # regularization and shorter steps (the best point so far is kept)
                    self._restart()
                    return
                self._restore_best()
                self._end("stalled", "no progress: the problem is feasible and bounded (checked), "
                                     "but the iterations stall; the point is the best found")

    def _restart(self) -> None:
        self.restarts += 1
        self.info["restarts"] = self.restarts
        self.rho = self.delta = max(self.rho, 1e-7)
        self.settings = attrs.evolve(self.settings, reg=self.rho, step_fraction=min(self.settings.step_fraction, 0.95))
        self._start()
        self.history.clear()
        self.stat_history.clear()
        self.diagnosed_at = self.iterations
        self.diagnoses = 0
        self.small_steps = 0
        self.floor_seen = False
        self.resid_at = -1

    def _diagnose(self) -> tuple[Outcome, str] | None:
        """Try to prove infeasibility or unboundedness: a Farkas certificate from the diverging
        duals (verified exactly); else the feasibility LP (HiGHS); for a feasible problem the
        recession LP's ray, or the diverging primal iterates' own direction (both verified)."""
        _, lam, y, _ = self._user_point()
        cert = self.proofs.farkas(lam, y)
        if cert is not None:
            return "primal_infeasible", cert
        feasible, message = self.proofs.feasible_lp()
        self.info["feasibility_lp"] = message
        if feasible is False:
            return "primal_infeasible", f"the feasibility LP (HiGHS) has no solution: {message}"
        if feasible is None:
            return None
        ray_msg = self.proofs.ray_lp()
        if ray_msg is not None:
            return "unbounded", ray_msg
        x = self._user_x(self.p[:self.nx])
        for d in (x, x - self._user_x(self.x_prev)):
            ray = self.proofs.ray(d)
            if ray is not None:
                return "unbounded", ray
        return None

    def _user_x(self, xs: FloatArray) -> FloatArray:
        x = np.empty(self.n)
        x[self.pre.keep] = self.D * xs
        x[self.pre.fixed] = self.pre.x_fixed
        return x
