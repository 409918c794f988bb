"""Checks of a strategy's result: the KKT assertion and an independent reference solve.

:func:`assert_kkt` recomputes the certificate from the problem alone; :func:`dense_reference` solves
a small problem to high precision with code that shares nothing with qpcore's strategies (an
interior-point method polished by an active-set method, numpy and scipy only), and
:func:`check_against_reference` runs a strategy and checks both. :func:`gradient_scale` is the unit
that tests scale their tolerance by. Together with the hypothesis strategies of
:mod:`qpcore.testkit.testing`, which draw the problems, they are the test kit; this module needs no
hypothesis, so a script or a benchmark can compare against the reference without it.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import attrs
import numpy as np
import scipy.linalg
from numpy.typing import NDArray

from qpcore.testkit.generators import meet_row
from qpcore.linalg.feasible_points import inequality_rows
from qpcore.testkit.generators_general import GeneralQP
from qpcore.core.certificate import kkt
from qpcore.backends.operators import DenseQ
from qpcore.core.optimality import maximal_violating_pair, projected_gradient, scores_of, single_violation
from qpcore.core.problem import QP
from qpcore.core.state import Result, Status

FloatArray = NDArray[np.float64]

__all__ = ["ReferenceSolution", "assert_kkt", "check_against_reference", "clarabel_reference", "dense_reference",
           "gradient_scale"]


# ---------------------------------------------------------------------------------------------
# the KKT assertion


def _worst(qp: QP, x: FloatArray, g: FloatArray, lam: FloatArray, y: FloatArray) -> str:
    """Name the variables behind the KKT measure, for the failure message (qpcore.core.optimality's terms)."""
    C, _, _ = inequality_rows(qp)
    if qp.equality.kind == "groups" and not C.shape[0]:
        sc = scores_of(qp, x, g)
        pair = maximal_violating_pair(sc)
        parts = []
        if pair is not None:
            i, j = pair
            parts.append(f"maximal violating pair i={i} (x={x[i]:.6g}, v=−g/a={sc.v[i]:.6g}), "
                         f"j={j} (x={x[j]:.6g}, v={sc.v[j]:.6g})")
        if sc.single is not None and single_violation(sc) > 0:
            pg = projected_gradient(x, g, qp.lb, qp.ub)
            k = int(np.argmax(np.where(sc.single, np.abs(pg), -1.0)))
            parts.append(f"variable outside the equality i={k}: projected gradient {pg[k]:.3e}")
        return "; ".join(parts) if parts else "no violating pair"
    r = g - qp.A.T @ lam if qp.m else g
    if C.shape[0]:
        r = r - C.T @ y
    pg = projected_gradient(x, r, qp.lb, qp.ub)
    if pg.size == 0:
        return "no variables"
    i = int(np.argmax(np.abs(pg)))
    return (f"worst variable i={i}: x={x[i]:.6g} in [{qp.lb[i]:.6g}, {qp.ub[i]:.6g}], "
            f"projected gradient {pg[i]:.3e}")


def assert_kkt(qp: QP, result: Result, tol: float, *, primal_tol: float = 1e-9) -> None:
    """Assert that ``result`` converged and its point is optimal for ``qp`` to ``tol``.

    The certificate is recomputed with ``qpcore.kkt(qp, result.x)`` (a fresh gradient from the
    problem); ``result.kkt`` and the strategy's own gradient are never trusted.

    Parameters
    ----------
    qp : QP
        The problem that was solved.
    result : Result
        What ``qpcore.solve`` returned.
    tol : float
        Bound on the KKT measure (the maximal-violating-pair gap with one equality row, else the
        projected-gradient norm), allowing a relative slack of 1e-6 for rounding.
    primal_tol : float
        Bound on the primal infeasibility (bounds and ``A x = b``), relative to
        :func:`qpcore.core.optimality.feasibility_scale` (as ``KKT.feasible`` and ``qpcore.solve``).

    Raises
    ------
    AssertionError
        Naming each condition that failed and by how much.
    """
    x = np.asarray(result.x, dtype=np.float64)
    problems: list[str] = []
    if result.status is not Status.CONVERGED:
        problems.append(f"status is {result.status.code!r} ({result.status.message}), expected 'converged'")
    if x.shape != (qp.n,):
        raise AssertionError(f"result.x has shape {x.shape}, the problem has n = {qp.n}")
    if not np.isfinite(x).all():
        bad = int(np.flatnonzero(~np.isfinite(x))[0])
        raise AssertionError("; ".join(problems + [f"result.x is not finite (x[{bad}] = {x[bad]})"]))
    g = qp.gradient(x)
    cert = kkt(qp, x, g)
    what = "maximal-violating-pair gap" if cert.paired else "projected-gradient norm"
    if not cert.measure <= tol * (1 + 1e-6):
        worst = _worst(qp, x, g, cert.multipliers, getattr(cert, "y", np.zeros(0)))
        problems.append(f"KKT measure ({what}) {cert.measure:.3e} > tol {tol:.3e} "
                        f"(×{cert.measure / tol:.3g}); {worst}")
    scale = cert.primal_scale          # the certificate's own scale, as solve() judges feasibility
    if not cert.feasible(primal_tol):
        viol = np.maximum(np.maximum(qp.lb - x, x - qp.ub), 0.0)
        i = int(np.argmax(viol)) if viol.size else -1
        C, l, u = inequality_rows(qp)
        Cx = C @ x
        row_viol = np.maximum(np.maximum(l - Cx, Cx - u), 0.0)
        j = int(np.argmax(row_viol)) if row_viol.size else -1
        if i >= 0 and viol[i] >= cert.primal:
            where = f"bound at i={i}: x={x[i]:.6g} outside [{qp.lb[i]:.6g}, {qp.ub[i]:.6g}]"
        elif j >= 0 and row_viol[j] >= cert.primal:
            where = f"row j={j} of C x: {Cx[j]:.6g} outside [{l[j]:.6g}, {u[j]:.6g}]"
        else:
            where = "A x = b"
        problems.append(f"primal infeasibility {cert.primal:.3e} > {primal_tol:.1e}·{scale:.3g} (worst: {where})")
    if problems:
        if result.kkt.measure != cert.measure:
            problems.append(f"(the result reported KKT measure {result.kkt.measure:.3e})")
        raise AssertionError("KKT check failed: " + "; ".join(problems)
                             + f" [stationarity {cert.stationarity:.3e}, complementarity {cert.complementarity:.3e}]")


# ---------------------------------------------------------------------------------------------
# the reference solve


def _dense(qp: QP) -> FloatArray:
    M = qp.Q.M if isinstance(qp.Q, DenseQ) else qp.Q.rows(np.arange(qp.n))
    out = np.array(M, dtype=np.float64)
    sym: FloatArray = 0.5 * (out + out.T)
    return sym


def _ipm(Q: FloatArray, c: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
         eps: float, max_iter: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
                                              float]:
    """Mehrotra predictor–corrector on min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, Ax = b (no fixed variables).

    Slacks s_l = x − lb and s_u = ub − x are variables of their own (met in the limit), so they
    never round to zero the way x − lb does near a bound. Every step keeps the products s_i z_i
    above γ times their mean (a wide neighbourhood of the central path); where the corrected step
    is short or fails to reduce the complementarity (Mehrotra's method can cycle there, e.g. on
    SVM duals with a large C), a plain Newton step towards the central path (σ ≥ 0.5) replaces
    it. Stops at ``eps``, at a rounding floor, or after a long stall. Returns the best iterate
    (x, s_l, s_u, z_l, z_u, y) and its merit: the largest of the scaled primal, dual and gap residuals.
    """
    n, m = c.size, b.size
    hl, hu = np.isfinite(lb), np.isfinite(ub)
    nb = max(int(hl.sum() + hu.sum()), 1)
    lbf, ubf = np.where(hl, lb, 0.0), np.where(hu, ub, 0.0)
    x = np.where(hl & hu, 0.5 * (lbf + ubf), np.where(hl, lbf + 1.0, np.where(hu, ubf - 1.0, 0.0)))
    # absent bounds carry s = 1, z = 0 throughout, so their terms vanish; s ≥ 1 keeps a tiny box
    # (C = 1e-3) from starting next to its boundary
    sl = np.where(hl, np.maximum(x - lbf, 1.0), 1.0)
    su = np.where(hu, np.maximum(ubf - x, 1.0), 1.0)
    zl, zu, y = hl.astype(np.float64), hu.astype(np.float64), np.zeros(m)
    reg = 1e-13 * max(1.0, float(np.abs(Q).max(initial=0.0)))
    K0 = np.zeros((n + m, n + m))
    K0[:n, :n] = Q
    K0[:n, n:] = A.T
    K0[n:, :n] = A
    bscale = 1.0 + max(float(np.abs(b).max(initial=0.0)), float(np.abs(lbf).max(initial=0.0)),
                       float(np.abs(ubf).max(initial=0.0)))
    best = (x, sl, su, zl, zu, y, np.inf)
    # the neighbourhood's γ: 1e-3, or less where the starting point is less centered than that
    p0 = np.concatenate([(sl * zl)[hl], (su * zu)[hu]])
    gamma = min(1e-3, 0.5 * float(p0.min(initial=1.0)) / max(float(p0.mean()) if p0.size else 1.0, 1e-300))
    stale = 0
    for _ in range(max_iter):
        Qx = Q @ x
        rd = Qx + c - A.T @ y - zl + zu
        rp = A @ x - b
        rl = np.where(hl, x - lbf - sl, 0.0)
        ru = np.where(hu, ubf - x - su, 0.0)
        comp = float((sl * zl)[hl].sum() + (su * zu)[hu].sum())
        obj = float(0.5 * x @ Qx + c @ x)
        xmax = float(np.abs(x).max(initial=0.0))
        merit = max(max(float(np.abs(rp).max(initial=0.0)), float(np.abs(rl).max(initial=0.0)),
                        float(np.abs(ru).max(initial=0.0))) / (bscale + float(np.abs(A).max(initial=0.0)) * xmax + xmax),
                    float(np.abs(rd).max(initial=0.0)) / (1.0 + float(np.abs(c).max(initial=0.0))
                                                          + float(np.abs(Qx).max(initial=0.0))),
                    comp / (1.0 + abs(obj)))
        # count the steps that gain < 10 %: near the end rounding puts a floor under the
        # residuals; earlier, a long run of them is a stall (left to the active-set method)
        stale = stale + 1 if merit >= 0.9 * best[6] else 0
        if merit < best[6]:
            best = (x, sl, su, zl, zu, y, merit)
        if merit <= eps or stale >= (5 if best[6] < 1e-8 else 25):
            break
        mu = comp / nb
        K = K0.copy()
        K[np.diag_indices(n)] += zl / sl + zu / su
        Kd = K.copy()
        K[np.diag_indices(n)] += reg
        K[n:, n:] -= reg * np.eye(m)
        with warnings.catch_warnings():
            # an exactly singular pivot shows up as inf/NaN in the direction, handled below
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            lu = scipy.linalg.lu_factor(K, check_finite=False)

        def direction(rcl: FloatArray, rcu: FloatArray) -> tuple[FloatArray, ...]:
            # eliminate ds and dz: Z ds + S dz = −rc with ds_l = dx + r_l, ds_u = −dx + r_u
            rcl = rcl + zl * rl
            rcu = rcu + zu * ru
            rhs = np.concatenate([-rd - rcl / sl + rcu / su, -rp])
            sol = scipy.linalg.lu_solve(lu, rhs, check_finite=False)
            for _ in range(2):  # refine against the unregularized system
                sol += scipy.linalg.lu_solve(lu, rhs - Kd @ sol, check_finite=False)
            dx = sol[:n]
            dzl = np.where(hl, (-rcl - zl * dx) / sl, 0.0)
            dzu = np.where(hu, (-rcu + zu * dx) / su, 0.0)
            dsl = np.where(hl, dx + rl, 0.0)
            dsu = np.where(hu, -dx + ru, 0.0)
            return dx, -sol[n:], dsl, dsu, dzl, dzu

        def max_step(*pairs: tuple[FloatArray, FloatArray]) -> float:
            a = 1.0
            for v, dv in pairs:
                neg = dv < 0
                if neg.any():
                    with np.errstate(over="ignore"):  # a subnormal dv: no limit on the step, inf is right
                        a = min(a, float((v[neg] / -dv[neg]).min()))
            return a

        def step_length(st: tuple[FloatArray, ...], mu: float, decrease: bool = False) -> tuple[float, float]:
            """Largest step (back-tracking from 0.995 of the way to the boundary) that keeps every
            product s_i z_i ≥ γ·mean (the wide neighbourhood of the central path)."""
            _, _, dsl, dsu, dzl, dzu = st
            a = min(1.0, 0.995 * max_step((sl, dsl), (su, dsu), (zl, dzl), (zu, dzu)))
            for _ in range(80):
                prod = np.concatenate([((sl + a * dsl) * (zl + a * dzl))[hl], ((su + a * dsu) * (zu + a * dzu))[hu]])
                m_new = float(prod.sum()) / nb
                if prod.min(initial=np.inf) >= gamma * m_new and (not decrease or m_new <= (1.0 - 0.01 * a) * mu):
                    return a, m_new
                a *= 0.8
            return 0.0, mu

        # predictor (affine scaling), then Mehrotra's centering and second-order correction
        dx, dy, dsl, dsu, dzl, dzu = direction(sl * zl * hl, su * zu * hu)
        a = max_step((sl, dsl), (su, dsu), (zl, dzl), (zu, dzu))
        mu_aff = float(((sl + a * dsl) * (zl + a * dzl))[hl].sum() + ((su + a * dsu) * (zu + a * dzu))[hu].sum()) / nb
        sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0
        rcl = np.where(hl, sl * zl + dsl * dzl - sigma * mu, 0.0)
        rcu = np.where(hu, su * zu + dsu * dzu - sigma * mu, 0.0)
        step = direction(rcl, rcu)
        a, mu_new = step_length(step, mu)
        if a < 0.1 or mu_new > (1.0 - 0.01 * a) * mu:
            # the second-order term can spoil a short step (Mehrotra's method then cycles):
            # a plain centered Newton step, kept in the neighbourhood, makes progress
            sig = max(sigma, 0.5)
            step = direction(np.where(hl, sl * zl - sig * mu, 0.0), np.where(hu, su * zu - sig * mu, 0.0))
            a, mu_new = step_length(step, mu, True)
        dx, dy, dsl, dsu, dzl, dzu = step
        if not a > 1e-14 or not np.isfinite(dx).all():
            break
        x, y = x + a * dx, y + a * dy
        sl = np.where(hl, sl + a * dsl, 1.0)
        su = np.where(hu, su + a * dsu, 1.0)
        zl = np.where(hl, zl + a * dzl, 0.0)
        zu = np.where(hu, zu + a * dzu, 0.0)
    return best


def _feasible(x0: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
              keep: NDArray[np.bool_]) -> FloatArray:
    """A point of the box that meets A x = b, near ``x0`` (a start for the active-set method).

    One row: the projection clip(x0 + λa), moving only the variables not in ``keep`` where they
    can meet the row (all of them otherwise), with λ found by bisection (a·x is nondecreasing in
    λ). Several rows: a vertex from the LP solver (scipy's HiGHS). Where none is found, clip(x0).
    """
    x = np.clip(x0, lb, ub)
    m = b.size
    if m == 0:
        return x
    if m > 1:
        import scipy.optimize

        bounds = [(lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None)
                  for lo, hi in zip(lb.tolist(), ub.tolist())]
        lp = scipy.optimize.linprog(np.zeros(x.size), A_eq=A, b_eq=b, bounds=bounds, method="highs")
        return np.clip(np.asarray(lp.x, dtype=np.float64), lb, ub) if lp.status == 0 else x
    a, beta = A[0], float(b[0])
    moved = np.where(keep, 0.0, a)
    rest = float(a[keep] @ x[keep])
    with np.errstate(invalid="ignore"):  # 0·inf for a variable that does not move
        top = rest + float(np.where(moved > 0, moved * ub, np.where(moved < 0, moved * lb, 0.0)).sum())
        bottom = rest + float(np.where(moved > 0, moved * lb, np.where(moved < 0, moved * ub, 0.0)).sum())
    if not bottom < beta < top:
        moved = a

    try:
        return meet_row(x, a, beta, lb, ub, direction=moved)
    except ValueError:
        return x  # A x = b is out of the box's reach


def _to_release(g: FloatArray, A: FloatArray, F: NDArray[np.bool_], wl: NDArray[np.bool_], wu: NDArray[np.bool_],
                y: FloatArray, tol: float) -> list[int]:
    """The bounds to drop from the working set at a minimizer of its face (none: the point is optimal).

    The bound multipliers are z = g − Aᵀλ, with λ from the free variables (g_F = A_Fᵀλ) when
    they determine it; a bound whose multiplier has the wrong sign by more than ``tol`` is
    released, the worst first. When λ is not determined (one row that no free variable involves:
    a degenerate vertex), no single bound can be released without breaking A x = b, and the
    maximal violating pair is released together (it moves both off their bounds). With several
    rows and A_F short of rank, λ is the least-squares one or ``y``, whichever fits better.
    """
    m = A.shape[0]
    W = wl | wu
    sign = np.where(wl, 1.0, -1.0)  # z must be ≥ 0 on wl, ≤ 0 on wu
    if m == 1 and not np.any(A[0, F] != 0):
        a = A[0]
        alone = W & (a == 0)
        bad0 = np.where(alone, np.maximum(-sign * g, 0.0), 0.0)
        # a_i ≠ 0 limits λ: from above (s > 0, violation |a_i|(λ − t_i)⁺) or below
        S = W & (a != 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(S, g / a, 0.0)
        s = sign * np.sign(a)
        up, lo = S & (s > 0), S & (s < 0)
        w = np.abs(a)
        pair: list[int] = []
        worst_pair = 0.0
        if up.any() and lo.any():
            i = int(np.flatnonzero(up)[np.argmin(t[up])])
            j = int(np.flatnonzero(lo)[np.argmax(t[lo])])
            if t[j] > t[i]:
                # at the balancing λ, both violate by w_i w_j (t_j − t_i) / (w_i + w_j)
                worst_pair = float(w[i] * w[j] * (t[j] - t[i]) / (w[i] + w[j]))
                pair = [i, j]
        k = int(np.argmax(bad0)) if bad0.size else 0
        if bad0.size and bad0[k] > max(tol, worst_pair):
            return [k]
        return pair if worst_pair > tol else []
    if m == 0:
        z = g
    else:
        AF = A[:, F]
        lam: FloatArray = scipy.linalg.lstsq(AF.T, g[F])[0] if F.any() else np.zeros(m)
        z = g - A.T @ lam
        if (not F.any() or np.linalg.matrix_rank(AF) < m) and y.size == m:
            zy = g - A.T @ y
            if np.minimum(sign * zy, 0.0)[W].min(initial=0.0) > np.minimum(sign * z, 0.0)[W].min(initial=0.0):
                z = zy
    bad = np.where(W, np.maximum(-sign * z, 0.0), 0.0)
    k = int(np.argmax(bad)) if bad.size else 0
    return [k] if bad.size and bad[k] > tol else []


def _active_set(Q: FloatArray, c: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
                x0: FloatArray, at_l: NDArray[np.bool_], at_u: NDArray[np.bool_], y: FloatArray,
                max_iter: int) -> tuple[FloatArray, bool]:
    """A primal active-set method; returns the last point and whether it is a KKT point.

    The working set starts as ``at_l``/``at_u`` (read off the interior-point pairs (slack,
    multiplier), or anything), from a feasible point near ``x0``. Each iteration solves the
    equality-constrained QP on the free variables (an eigendecomposition of its KKT system, so a
    singular Q is fine) and steps towards its solution until a bound blocks (added to the
    working set). When the face has no minimizer, the part of −g in the null space of its KKT
    system is a direction of zero curvature and descent, followed instead to the first bound
    (none: the problem is unbounded). At the minimizer of a face, the bounds with wrong-signed
    multipliers are released (:func:`_to_release`); none: the point is optimal. It lands
    exactly on the active bounds, which a KKT measure without tolerance on "at a bound" needs.
    """
    n, m = x0.size, b.size
    hl, hu = np.isfinite(lb), np.isfinite(ub)
    wl, wu = at_l & hl, at_u & hu & ~at_l
    x = _feasible(np.where(wl, lb, np.where(wu, ub, x0)), lb, ub, A, b, wl | wu)
    wl &= x == lb
    wu &= x == ub
    scale = 1.0 + float(np.abs(x).max(initial=0.0))
    gscale = 1.0 + float(np.abs(c).max(initial=0.0)) + float(np.abs(Q).max(initial=0.0)) * scale
    amax = float(np.abs(A).max(initial=0.0))
    stationary = refine = False
    for _ in range(max_iter):
        F = ~(wl | wu)
        g = Q @ x + c
        if stationary:
            release = _to_release(g, A, F, wl, wu, y, 1e-10 * gscale)
            if not release:
                return x, True
            wl[release] = wu[release] = False
            stationary = refine = False
            continue
        nf = int(F.sum())
        QF, AF = Q[np.ix_(F, F)], A[:, F]
        # balance the blocks so that the rank decision sees the spectrum of Q_FF itself
        qn, an = float(np.abs(QF).max(initial=0.0)), float(np.abs(AF).max(initial=0.0))
        sa = qn / an if qn > 0 and an > 0 else 1.0
        K = np.block([[QF, sa * AF.T], [sa * AF, np.zeros((m, m))]])
        rhs = np.concatenate([-g[F], sa * (b - A @ x)])
        # eigendecomposition of the (symmetric) KKT matrix: the Newton step from its range; the
        # part of the right-hand side in its null space (exact, unlike the residual that the
        # rounding of a huge Newton step leaves) tells a face without a minimizer
        sol, null = np.zeros(rhs.size), np.zeros(rhs.size)
        if rhs.size:
            ev, V = scipy.linalg.eigh(K, check_finite=False)
            small = np.abs(ev) <= 1e-12 * float(np.abs(ev).max(initial=0.0))
            proj = V.T @ rhs
            sol = V[:, ~small] @ (proj[~small] / ev[~small])
            null = V[:, small] @ proj[small]
        p = np.zeros(n)
        ray = float(np.abs(null[:nf]).max(initial=0.0)) > 1e-12 * gscale
        if not ray and float(np.abs(null[nf:]).max(initial=0.0)) > 1e-10 * sa * (1.0 + amax * scale):
            return x, False  # the face cannot meet A x = b
        pF = null[:nf] if ray else sol[:nf]  # a ray: descend along the null-space part of −g to a bound
        if m and nf:
            # A_F p = r (= 0 along a ray) again, to the rounding of p rather than of the multipliers
            pF = pF + scipy.linalg.lstsq(AF, (0.0 if ray else rhs[nf:] / sa) - AF @ pF)[0]
        p[F] = pF
        if not ray:
            if float(np.abs(p).max(initial=0.0)) <= 1e-13 * scale:
                # already at the minimizer of the face up to rounding (the step still corrects
                # what rounding left of A x = b)
                x = np.clip(x + p, lb, ub)
                stationary, refine = True, False
                continue
        # longest step in [0, 1] (unlimited along a ray) that stays in the box
        with np.errstate(divide="ignore", invalid="ignore"):
            tl = np.where(F & hl & (p < 0), (lb - x) / p, np.inf)
            tu = np.where(F & hu & (p > 0), (ub - x) / p, np.inf)
        t = np.minimum(tl, tu)
        k = int(np.argmin(t))
        if not ray and t[k] >= 1.0:
            # at the minimizer of the face after one more solve there, which refines the step
            # (what rounding left of A x = b and of g_F ≈ A_Fᵀλ)
            x = x + p
            stationary = refine
            refine = not refine
        elif not np.isfinite(t[k]):
            return x, False  # unbounded below
        else:
            refine = False
            x = x + max(float(t[k]), 0.0) * p
            if tl[k] <= tu[k]:
                wl[k] = True
            else:
                wu[k] = True
        x = np.clip(np.where(wl, lb, np.where(wu, ub, x)), lb, ub)
    return x, False


def gradient_scale(qp: QP, x_ref: FloatArray) -> float:
    """The size of the gradient's terms at ``x_ref``, in the KKT measure's units.

    g = Qx + c is known only to rounding times max(|c|, diag Q·|x|); the gap with an equality
    row is in g/a units, so it is divided by the smallest nonzero |a|. Tests scale their
    tolerance by it, so optima far from 0 (one-sided bounds) get a larger one.
    """
    s = max(1.0, float(np.abs(qp.c).max(initial=0.0)),
            float(qp.Q.diag().max(initial=0.0)) * max(1.0, float(np.abs(x_ref).max(initial=0.0))))
    if qp.m:
        a = np.abs(qp.A[0])
        s /= max(1e-300, float(a[a > 0].min(initial=np.inf)) if (a > 0).any() else 1.0)
    return s


def check_against_reference(qp: QP, strategy: Any, rel: float = 1e-8, max_iter: int = 20_000) -> Result:
    """Solve ``qp`` with ``strategy`` at tol = rel·:func:`gradient_scale` and assert the KKT
    certificate and the objective against :func:`dense_reference`.

    The objective bound is convexity's: f(x) − f* ≤ Σ z_i (x_i − x*_i) with z = g − λa; the
    certificate bounds each |z_i| by |a_i|·gap (by the gap itself where a_i = 0, by the
    stationarity for a box), plus the rounding of f (4·n·eps·(½|x*|ᵀ|Q||x*| + |c|ᵀ|x*|)).
    Returns the result for further checks.
    """
    from qpcore.core.solve import solve

    x_ref, f_ref = dense_reference(qp)
    tol = rel * gradient_scale(qp, x_ref)
    res = solve(qp, strategy, tol=tol, max_iter=max_iter)
    assert_kkt(qp, res, tol)
    if qp.m:
        gap = max(res.kkt.gap, 0.0)
        weights = np.where(qp.A[0] != 0, np.abs(qp.A[0]) * gap, gap)
    else:
        weights = np.full(qp.n, res.kkt.stationarity)
    # plus the rounding of f itself, evaluated two ways (dense here, through the operator there):
    # ~n·eps times the size of its terms, which for ill-conditioned Q and large x dwarfs 1e-8·|f|
    Qd = _dense(qp)
    terms = 0.5 * float(np.abs(x_ref) @ (np.abs(Qd) @ np.abs(x_ref))) + float(np.abs(qp.c) @ np.abs(x_ref))
    allowed = (float(weights @ np.abs(res.x - x_ref)) + 1e-8 * max(1.0, abs(f_ref))
               + 4.0 * qp.n * float(np.finfo(np.float64).eps) * terms)
    assert res.objective <= f_ref + allowed, (res.objective, f_ref, allowed)
    return res


def dense_reference(qp: QP, *, eps: float = 1e-13, max_iter: int = 200) -> tuple[FloatArray, float]:
    """An independent high-precision solve of a small problem, to compare strategies against.

    A primal–dual interior-point method (Mehrotra predictor–corrector, dense LU of the KKT system
    with iterative refinement; a step that the second-order correction spoils is replaced by a
    plain centered one, and every step keeps the iterate in a wide neighbourhood of the central
    path) followed by a primal active-set method: its working set starts from the bounds that
    the interior-point pairs (slack, multiplier) mark active, and it solves the
    equality-constrained QP on the free variables exactly, landing on the active bounds. The
    polished point is kept only if it is feasible and no worse. Should the interior-point method
    stall, the active-set method, run to the end from its best iterate, gives the answer when it
    certifies it (a minimizer of its face whose bound multipliers have the right signs). It
    shares nothing with qpcore's strategies or with ``qpcore.kkt``. Fixed variables (lb = ub) are
    eliminated first. The point is unique only when the optimum is (a singular Q or duplicate rows
    admit many); the objective is.

    Where it is trusted: the problems of :mod:`qpcore.testkit.testing`, checked against OSQP (eps_abs = eps_rel =
    1e-10, polished) by ``tests/qpcore/test_reference.py`` (40 problems per CI run, 1,000 fresh
    ones per nightly run): box QPs (finite, one-sided, degenerate), one general equality row
    (with zero coefficients), SVM duals (RBF and linear, duplicate points, C from 1e-3 to 1e3),
    nonnegative, planted and low-rank (``DiagPlusLowRankQ``, ν up to 1e4) problems, with fixed
    variables; n ≤ 60, condition number of Q ≤ 1e8, singular Q included. There its point is in
    the box exactly, meets A x = b to 1e-12 of the size of A x's terms, and has KKT measure
    ≤ 1e-11·:func:`gradient_scale` (seen over 12,000 draws: 2e-14); its objective is never above
    that of OSQP's point (projected onto the feasible set) by more than 1e-11·s, with
    s = 1 + ½|x|ᵀ|Q||x| + |c|ᵀ|x| the size of the objective's terms (seen: 4e-14·s), and where
    OSQP reports "solved" with recomputed residuals below 1e-9 (about 99 % of the draws; the rest
    are ill-conditioned or hit OSQP's iteration limit) the two agree to 1e-8·s (seen: 1e-10·s,
    OSQP's own accuracy). Being feasible, it is never below the optimum either. It matches
    planted optima to 1e-9 relative. Several equality rows and inequality rows l ≤ C x ≤ u
    (solved in slack form, over [x; s] with rows [[A, 0], [C, −I]]) are cross-checked by
    ``tests/qpcore/test_generators_general.py`` on the problems of
    :func:`qpcore.testkit.testing.general_problems` (overlapping, duplicated and dependent rows, crowded
    and degenerate optima; n ≤ 12, condition number ≤ 1e6, rows and columns scaled over ≤ 2
    decades): there its objective matches the planted optimum to 1e-10·s (seen over 3,000 draws:
    2e-12·s) and Clarabel's to 1e-8·s. Untested outside these domains: n in the hundreds (dense,
    O(n³) per iteration), condition numbers beyond 1e8, data scaled over more decades (with Q's
    condition number 1e13 after scaling, its objective was seen 1e-9·s above the optimum).

    Parameters
    ----------
    qp : QP
        A small problem (Q is materialized densely: O(n²) memory, O(n³) per iteration), with
        inequality rows or without.
    eps : float
        Target for the scaled primal, dual and gap residuals.
    max_iter : int
        Iteration limit of the interior-point method.

    Returns
    -------
    (ndarray, float)
        An optimal point and the optimal objective ½xᵀQx + cᵀx (the latter accurate whatever
        the point's multiplicity).

    Raises
    ------
    RuntimeError
        If the interior-point method does not reach 1e-8 and the active-set method finds no
        optimal point either (an unbounded or badly scaled problem).
    """
    Q, c, lb, ub, A, b = _dense(qp), qp.c, qp.lb, qp.ub, qp.A, qp.b
    C, l, u = inequality_rows(qp)
    n, k = qp.n, C.shape[0]
    if k:
        # the slack form over [x; s], s = C x bounded by l and u: box and equality rows only
        Qs = np.zeros((n + k, n + k))
        Qs[:n, :n] = Q
        xs = _dense_solve(Qs, np.concatenate([c, np.zeros(k)]), np.concatenate([lb, l]), np.concatenate([ub, u]),
                          np.block([[A, np.zeros((A.shape[0], k))], [C, -np.eye(k)]]),
                          np.concatenate([b, np.zeros(k)]), eps, max_iter)
        x = xs[:n]
    else:
        x = _dense_solve(Q, c, lb, ub, A, b, eps, max_iter)
    return x, float(0.5 * x @ (Q @ x) + c @ x)


def _dense_solve(Q: FloatArray, c: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray, b: FloatArray,
                 eps: float, max_iter: int) -> FloatArray:
    """:func:`dense_reference` on arrays (box and equality rows): the optimal point."""
    fixed = lb == ub
    free = ~fixed
    x = np.where(fixed, lb, 0.0)
    xfix = np.where(fixed, lb, 0.0)
    Qf = Q[np.ix_(free, free)]
    cf = c[free] + Q[np.ix_(free, fixed)] @ lb[fixed]
    Af, bf = A[:, free], b - A @ xfix
    if free.any():
        lbf, ubf = lb[free], ub[free]
        xf, sl, su, zl, zu, y, merit = _ipm(Qf, cf, lbf, ubf, Af, bf, eps, max_iter)
        xf = np.clip(xf, lbf, ubf)  # the slacks are met only in the limit
        at_l = np.isfinite(lbf) & (sl < zl)
        at_u = np.isfinite(ubf) & ~at_l & (su < zu)
        nf = int(free.sum())
        xp, converged = _active_set(Qf, cf, lbf, ubf, Af, bf, xf, at_l, at_u, y, 10 * nf + 50)

        def objective(v: FloatArray) -> float:
            return float(0.5 * v @ (Qf @ v) + cf @ v)

        ok_eq = (float(np.abs(Af @ xp - bf).max(initial=0.0))
                 <= 1e-12 * (1.0 + float(np.abs(bf).max(initial=0.0)) + float(np.abs(xp).max(initial=0.0))))
        if merit <= 1e-8:
            # the polished point must be as good as the interior-point one (which certifies the
            # value), up to the rounding of f itself: ~n·eps times the size of its terms, which
            # with an ill-conditioned Q and a large x (terms ~1e13, f ~1e5) dwarfs 1e-11·|f| and
            # would otherwise let noise reject a certified optimum for a non-stationary point
            fx = objective(xf)
            terms = 0.5 * float(np.abs(xp) @ (np.abs(Qf) @ np.abs(xp))) + float(np.abs(cf) @ np.abs(xp))
            slack = 1e-11 * (1.0 + abs(fx)) + (4.0 * nf * np.finfo(np.float64).eps * terms if converged else 0.0)
            x[free] = xp if ok_eq and objective(xp) <= fx + slack else xf
        elif converged and ok_eq:
            # the interior-point method stalled; the active-set method, run to the end from its
            # best iterate, certifies its own point (stationary, multipliers of the right sign)
            x[free] = xp
        else:
            raise RuntimeError(f"dense_reference: the interior-point method stopped at scaled residual {merit:.2e} "
                               "and the active-set method found no optimal point; the problem may be unbounded "
                               "or badly scaled")
    return x


# ---------------------------------------------------------------------------------------------
# the Clarabel cross-check


@attrs.frozen(eq=False)
class ReferenceSolution:
    """An optimum from an outside solver, in qpcore's terms and sign convention.

    Stationarity reads ``Q x + c − Aᵀλ − Cᵀy − z = 0`` with z ≥ 0 at a lower bound, ≤ 0 at an
    upper one; y ≥ 0 on rows with C x = l, ≤ 0 on rows with C x = u, any sign where l = u.

    Attributes
    ----------
    x : ndarray
        The solver's point (not moved onto bounds or rows: an interior-point method's point is
        off its active bounds by about its tolerance).
    objective : float
        ½xᵀQx + cᵀx at ``x``.
    multipliers : ndarray
        λ, the multipliers of A x = b (length m).
    y : ndarray
        The multipliers of l ≤ C x ≤ u (length k).
    z : ndarray
        The bound multipliers (length n).
    status : str
        The solver's own status ("Solved", "AlmostSolved", ...).
    primal_residual : float
        The largest violation of the bounds and rows at ``x``, recomputed here (absolute).
    dual_residual : float
        ‖Q x + c − Aᵀλ − Cᵀy − z‖∞, recomputed here (absolute).
    """

    x: FloatArray
    objective: float
    multipliers: FloatArray
    y: FloatArray
    z: FloatArray
    status: str
    primal_residual: float
    dual_residual: float
    tol: float = 1e-10
    """The tolerance Clarabel was run at (the requested one, or the fallback)."""


def _problem_arrays(problem: QP | GeneralQP) -> tuple[FloatArray, ...]:
    """(Q, c, lb, ub, A, b, C, l, u) as dense float64 arrays, C with 0 rows when there are none."""
    if isinstance(problem, GeneralQP):
        p = problem
        return p.Q, p.c, p.lb, p.ub, p.A, p.b, p.C, p.l, p.u
    C, l, u = inequality_rows(problem)
    return _dense(problem), problem.c, problem.lb, problem.ub, problem.A, problem.b, C, l, u


def clarabel_reference(problem: QP | GeneralQP, *, tol: float = 1e-10, max_iter: int = 500,
                       check: bool = True, fallback_tol: float | None = 1e-8) -> ReferenceSolution:
    """Solve a QP with Clarabel to a tight tolerance: x, the objective and the multipliers.

    A cross-check from outside qpcore for the general problems (several equality rows, inequality
    rows l ≤ C x ≤ u), where :func:`dense_reference` is not the only word. Clarabel (an
    interior-point solver; ``clarabel`` is in the test extra) is imported here, never at module
    import. The problem goes to it as: A x = b, the rows with l = u and the fixed variables
    (lb = ub) as equalities (its zero cone), every finite side of a row or a bound as one
    inequality (its nonnegative cone); infinite sides are left out. Its dual variables are mapped
    to qpcore's sign convention (see :class:`ReferenceSolution`).

    Parameters
    ----------
    problem : QP or GeneralQP
        A small problem (Q is materialized densely). A :class:`qpcore.QP` in slack form is solved
        as it is (its slacks are variables, y is then part of z).
    tol : float
        Clarabel's ``tol_gap_abs``, ``tol_gap_rel`` and ``tol_feas`` (its ``tol_ktratio`` is
        1e-8, ``max_iter`` as given).
    max_iter : int
        Iteration limit.
    check : bool
        Raise unless Clarabel reports "Solved" or "AlmostSolved".
    fallback_tol : float, optional
        Where Clarabel ends otherwise at ``tol`` (an iteration limit, a numerical error or
        insufficient progress: a few in a thousand generated problems, badly scaled ones), it is
        run again at this tolerance; :attr:`ReferenceSolution.tol` says which. None: no second run.

    Returns
    -------
    ReferenceSolution

    Raises
    ------
    RuntimeError
        With ``check``, on any other status (infeasible, unbounded, iteration limit, numerical
        error), naming it.
    ImportError
        When Clarabel is not installed.
    """
    out = _clarabel(_problem_arrays(problem), tol, max_iter)
    if out.status not in ("Solved", "AlmostSolved") and fallback_tol is not None and fallback_tol > tol \
            and out.status not in ("PrimalInfeasible", "DualInfeasible"):
        out = _clarabel(_problem_arrays(problem), fallback_tol, max_iter)
    if check and out.status not in ("Solved", "AlmostSolved"):
        raise RuntimeError(f"clarabel_reference: Clarabel ended with status {out.status!r} (tol {out.tol:g})")
    return out


def _clarabel(arrays: tuple[FloatArray, ...], tol: float, max_iter: int) -> ReferenceSolution:
    """One Clarabel run of :func:`clarabel_reference`."""
    import clarabel  # type: ignore[import-untyped, unused-ignore]
    import scipy.sparse as sp

    Q, c, lb, ub, A, b, C, l, u = arrays
    n, m, k = c.size, A.shape[0], C.shape[0]
    fixed = lb == ub
    row_eq = l == u
    I = np.eye(n)
    has_l, has_u = np.isfinite(lb) & ~fixed, np.isfinite(ub) & ~fixed
    rl, ru = np.isfinite(l) & ~row_eq, np.isfinite(u) & ~row_eq
    # zero cone: A x = b, C_eq x = l_eq, x_fixed = lb_fixed; nonnegative cone: G x ≤ h
    E = np.vstack([A, C[row_eq], I[fixed]])
    e = np.concatenate([b, l[row_eq], lb[fixed]])
    G = np.vstack([C[ru], -C[rl], I[has_u], -I[has_l]])
    h = np.concatenate([u[ru], -l[rl], ub[has_u], -lb[has_l]])
    cones = []
    if E.shape[0]:
        cones.append(clarabel.ZeroConeT(E.shape[0]))
    if G.shape[0]:
        cones.append(clarabel.NonnegativeConeT(G.shape[0]))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = float(tol)
    settings.tol_ktratio = 1e-8
    settings.max_iter = int(max_iter)
    P = sp.triu(sp.csc_matrix(0.5 * (Q + Q.T))).tocsc()
    M = sp.csc_matrix(np.vstack([E, G]) if E.shape[0] + G.shape[0] else np.zeros((0, n)))
    sol = clarabel.DefaultSolver(P, np.asarray(c, dtype=np.float64), M, np.concatenate([e, h]), cones,
                                 settings).solve()
    status = str(sol.status)
    x = np.asarray(sol.x, dtype=np.float64)
    dual = np.asarray(sol.z, dtype=np.float64)
    # Clarabel: P x + q + Mᵀ w = 0 with w ≥ 0 on G x ≤ h; ours: g − Aᵀλ − Cᵀy − z = 0
    ne = E.shape[0]
    w_eq, w_in = dual[:ne], dual[ne:]
    lam = -w_eq[:m]
    y = np.zeros(k)
    y[row_eq] = -w_eq[m:m + int(row_eq.sum())]
    z = np.zeros(n)
    z[fixed] = -w_eq[m + int(row_eq.sum()):]
    parts = np.cumsum([0, int(ru.sum()), int(rl.sum()), int(has_u.sum()), int(has_l.sum())])
    y[ru] -= w_in[parts[0]:parts[1]]
    y[rl] += w_in[parts[1]:parts[2]]
    z[has_u] -= w_in[parts[2]:parts[3]]
    z[has_l] += w_in[parts[3]:parts[4]]
    with np.errstate(over="ignore", invalid="ignore"):   # a failed run's point may be huge or NaN
        Qx = Q @ x
        primal = float(np.maximum(np.maximum(lb - x, x - ub), 0.0).max(initial=0.0))
        if m:
            primal = max(primal, float(np.abs(A @ x - b).max()))
        if k:
            Cx = C @ x
            primal = max(primal, float(np.maximum(np.maximum(l - Cx, Cx - u), 0.0).max()))
        stat = Qx + c - A.T @ lam - C.T @ y - z
        f = float(0.5 * x @ Qx + c @ x)
    return ReferenceSolution(x=x, objective=f, multipliers=lam, y=y, z=z, status=status, primal_residual=primal,
                             dual_residual=float(np.abs(stat).max(initial=0.0)), tol=tol)
