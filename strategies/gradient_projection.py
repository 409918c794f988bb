"""Moré–Toraldo gradient projection with conjugate gradients (GPCG).

Moré & Toraldo, "On the solution of large quadratic programming problems with bound
constraints", SIAM J. Optim. 1 (1991). Each ``step`` is one outer cycle: a gradient-projection
phase that identifies the face, then conjugate gradients on that face followed by a projected
search along the CG step, repeated while the binding set equals the active set.

The feasible set is the box ``lb ≤ x ≤ ub`` (any mix of finite and infinite bounds), optionally
with **one** equality row ``aᵀx = b`` (the SVM-dual shape): projections then go through
:func:`qpcore.projection.project_box_equality`, and CG runs on the face restricted to the null
space of the free part of ``a``. Only ``matvec``, ``diag`` and small principal blocks of the
operator are used, so it runs on ``DenseQ``, ``KernelQ`` and ``GramQ`` alike.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.kkt import kkt
from qpcore.operators import principal_block
from qpcore.problem import QP, ProblemError
from qpcore.projection import project_box_equality
from qpcore.state import State, Status, bound_status

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

__all__ = ["GPCG", "SearchResult", "projected_gradient", "projected_search"]


def projected_gradient(qp: QP, x: FloatArray, g: FloatArray) -> FloatArray:
    """The projected gradient onto the tangent cone of the box at ``x``.

    Parameters
    ----------
    qp : QP
        The problem (its bounds are used; equality rows are ignored here).
    x, g : ndarray
        The point and a gradient (or reduced gradient) there.

    Returns
    -------
    ndarray
        ``g`` on free variables, only its inward-pointing part on variables at a bound.
    """
    at_lb, at_ub = x <= qp.lb, x >= qp.ub
    pg = g.copy()
    pg[at_lb] = np.minimum(g[at_lb], 0.0)
    pg[at_ub] = np.maximum(g[at_ub], 0.0)
    return pg


@attrs.frozen
class SearchResult:
    """The outcome of a projected search.

    Attributes
    ----------
    x : ndarray
        The accepted point (``x`` itself when no step was accepted).
    alpha : float
        The accepted step length (0 when none; ``inf`` for an unbounded ray).
    decrease : float
        q(x) − q(x_new) ≥ 0 (``inf`` when the quadratic is unbounded below along the path).
    Qs : ndarray or None
        Q (x_new − x), so the caller updates its gradient without another product.
    """

    x: FloatArray
    alpha: float
    decrease: float
    Qs: FloatArray | None


def _no_move(x: FloatArray) -> SearchResult:
    return SearchResult(x, 0.0, 0.0, None)


def _prefix(v: FloatArray) -> FloatArray:
    """[0, v₁, v₁+v₂, …]: sums over the first k clipped coordinates, k = 0..K."""
    return np.concatenate(([0.0], np.cumsum(v)))


def _prefix2(M: FloatArray) -> FloatArray:
    """[0, Σ_{j,l≤1} M_jl, Σ_{j,l≤2} M_jl, …] via a 2-D prefix sum."""
    return np.concatenate(([0.0], np.diagonal(M.cumsum(0).cumsum(1))))


def _hit_times(qp: QP, x: FloatArray, d: FloatArray) -> FloatArray:
    """t_i at which x_i + t d_i reaches the bound it moves toward (inf: never; may be ≤ 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = (np.where(d > 0, qp.ub, qp.lb) - x) / d
    t[(d == 0) | ~np.isfinite(t)] = np.inf
    return t


def _box_path_round(qp: QP, x: FloatArray, g: FloatArray, d: FloatArray, segments: int,
                    Qd: FloatArray | None = None) -> tuple[FloatArray, float, bool, bool]:
    """Exact minimizer of q along P[x + αd] over the first ``segments`` breakpoints.

    On the k-th segment, with the first k breakpoint coordinates clipped, the path is
    s(α) = α d⁽ᵏ⁾ + e⁽ᵏ⁾ and q's slope is A_k + α c_k. Both come from Qd and the principal block
    of Q on the clipped coordinates by prefix sums, so a round costs one product and a k×k block.
    Returns (d with blocked coordinates removed, α*, found inside the round, unbounded ray).
    """
    t = _hit_times(qp, x, d)
    blocked = t <= 0.0
    if blocked.any():                      # at a bound and pointing out: never moves
        d = np.where(blocked, 0.0, d)
        t[blocked] = np.inf
        Qd = None
    if Qd is None:
        Qd = qp.Q.matvec(d)
    gd, dQd = float(g @ d), float(d @ Qd)
    if not gd < 0.0:
        return d, 0.0, True, False
    finite = np.flatnonzero(np.isfinite(t))
    if finite.size > segments + 1:
        finite = finite[np.argpartition(t[finite], segments)[: segments + 1]]
    finite = finite[np.argsort(t[finite], kind="stable")]
    idx, t_next = finite[:segments], (float(t[finite[segments]]) if finite.size > segments else np.inf)
    tk, dk = t[idx], d[idx]
    u = tk * dk                            # the clipped coordinates' displacement, exactly bound − x
    B = principal_block(qp.Q, idx)
    Qdk = Qd[idx]
    c = dQd - 2.0 * _prefix(dk * Qdk) + _prefix2(B * np.outer(dk, dk))
    A = gd - _prefix(g[idx] * dk) + _prefix(u * Qdk) - _prefix2(B * np.outer(dk, u))
    start = np.concatenate(([0.0], tk))
    end = np.concatenate((tk, [t_next]))
    with np.errstate(divide="ignore", invalid="ignore"):
        amin = np.where(c > 0, -A / np.where(c > 0, c, 1.0), np.inf)
    at_start = A + start * c >= 0.0
    if not np.isfinite(t_next) and np.count_nonzero(d) == idx.size:
        at_start[-1] = True                 # every moving coordinate is clipped: the path ends there
    hit = np.flatnonzero(at_start | (np.isfinite(amin) & (amin <= end)))
    if hit.size:
        k = int(hit[0])
        return d, float(start[k]) if at_start[k] else max(float(amin[k]), float(start[k])), True, False
    if not np.isfinite(t_next):
        return d, np.inf, False, True       # descent with nonpositive curvature and no bound ahead
    return d, t_next, False, False


def _box_point(qp: QP, x: FloatArray, d: FloatArray, alpha: float) -> FloatArray:
    """P[x + αd] with coordinates whose breakpoint is ≤ α set exactly to their bound."""
    xn = np.clip(x + alpha * d, qp.lb, qp.ub)
    hit = _hit_times(qp, x, d) <= alpha
    xn[hit] = np.where(d > 0, qp.ub, qp.lb)[hit]
    return xn


def _box_search(qp: QP, x: FloatArray, g: FloatArray, d: FloatArray, segments: int,
                rounds: int, Qd: FloatArray | None) -> SearchResult:
    x0, total, alpha_total = x, 0.0, 0.0
    Qs_total = None
    for _ in range(rounds):
        d, alpha, found, unbounded = _box_path_round(qp, x, g, d, segments, Qd)
        Qd = None                         # later rounds start from a clipped direction
        if unbounded:
            return SearchResult(x0, np.inf, np.inf, None)
        if alpha <= 0.0:
            break
        xn = _box_point(qp, x, d, alpha)
        s = xn - x
        Qs = qp.Q.matvec(s)
        dq = float(g @ s) + 0.5 * float(s @ Qs)
        if not dq < 0.0:                  # rounding on a flat path: keep what we have
            break
        total -= dq
        alpha_total += alpha
        Qs_total = Qs if Qs_total is None else Qs_total + Qs
        x, g = xn, g + Qs
        if found:
            break
    if Qs_total is None:
        return _no_move(x0)
    return SearchResult(x, alpha_total, total, Qs_total)


def _snap(qp: QP, x: FloatArray, rel: float = 8.0 * np.finfo(np.float64).eps) -> FloatArray:
    """Put coordinates within ``rel`` (relative) of a finite bound onto it (in place; returns x).

    Rounding (in x + αd, or in the projection's multiplier) leaves coordinates a few ulps off their
    bound; one would count as free and block the face, and the certificate's violating pair, for a
    move of 1e-16.
    """
    with np.errstate(invalid="ignore"):
        near_lb = np.isfinite(qp.lb) & (np.abs(x - qp.lb) <= rel * np.maximum(1.0, np.abs(qp.lb)))
        near_ub = np.isfinite(qp.ub) & (np.abs(x - qp.ub) <= rel * np.maximum(1.0, np.abs(qp.ub)))
    x[near_lb] = qp.lb[near_lb]
    x[near_ub] = qp.ub[near_ub]
    return x


def _eq_point(qp: QP, v: FloatArray) -> FloatArray:
    return _snap(qp, project_box_equality(v, qp.lb, qp.ub, qp.A[0], float(qp.b[0]))[0])


def _equality_search(qp: QP, x: FloatArray, g: FloatArray, d: FloatArray, alpha: float, mu: float,
                     max_backtracks: int) -> SearchResult:
    """Projected search along P_Ω[x + αd], Ω = {box, aᵀx = b}.

    When d keeps aᵀx fixed (a CG step on the face), the path is the ray x + αd up to its first
    breakpoint: its minimum there is exact; past the breakpoint only the projected trial step
    P_Ω[x + αd] is compared (one projection, not a backtracking sequence: the face step is what
    CG computed, and the next cycle's gradient projection handles the rest). Other directions:
    safeguarded backtracking from α with the test q(x(α)) ≤ q(x) + μ gᵀ(x(α) − x).
    """
    a = qp.A[0]
    best: SearchResult | None = None
    ad = float(a @ d)
    ray = abs(ad) <= 1e-8 * float(np.abs(a) @ np.abs(d))
    if ray and ad != 0.0:
        # a face step off the null space by rounding only: put it back there exactly, on its support
        on = (d != 0) & (a != 0)
        d = d.copy()
        d[on] -= ad / float(a[on] @ a[on]) * a[on]
    if ray:
        lb, ub = qp.lb, qp.ub
        t = _hit_times(qp, x, d)
        t0 = float(t.min(initial=np.inf))
        Qd = qp.Q.matvec(d)
        gd, dQd = float(g @ d), float(d @ Qd)
        if not (gd < 0.0 and t0 > 0.0):
            return _no_move(x)
        a_ray = -gd / dQd if dQd > 0 else np.inf
        if not np.isfinite(min(a_ray, t0)):
            return SearchResult(x, np.inf, np.inf, None)
        a0 = min(a_ray, t0)
        xs = x + a0 * d
        hit = t <= a0
        xs[hit] = np.where(d > 0, ub, lb)[hit]
        xs = np.clip(xs, lb, ub)
        s = xs - x
        Qs = qp.Q.matvec(s)
        dq = float(g @ s) + 0.5 * float(s @ Qs)
        if dq < 0.0:
            best = SearchResult(xs, a0, -dq, Qs)
        if a_ray <= t0 or alpha <= t0:    # the ray's minimum, or the trial step, lies before any bound
            return best if best is not None else _no_move(x)
        max_backtracks = 1
    xscale = max(1.0, float(np.abs(x).max(initial=0.0)))
    tiny = 4.0 * np.finfo(np.float64).eps * xscale
    dmax = float(np.abs(d).max())
    # a Cauchy step over a nearly flat direction can be astronomically long; the projection of such
    # a trial point loses the equality to cancellation, so start at most 1e8·|x| away
    alpha = min(alpha, 1e8 * xscale / dmax)
    for _ in range(max_backtracks):
        if alpha * dmax <= tiny:
            break
        v = x + alpha * d
        if not np.isfinite(v).all():      # a huge trial step: shrink it, the path is what matters
            alpha *= 1e-3
            continue
        xa = _eq_point(qp, v)
        # a trial point far outside the box loses aᵀx = b to cancellation (|v| ≫ |x|): reject it
        if abs(float(a @ xa) - float(qp.b[0])) > 1e-10 * (float(np.abs(a) @ np.abs(xa)) + abs(float(qp.b[0])) + 1e-300):
            alpha *= 0.1
            continue
        s = xa - x
        gs = float(g @ s)
        if not gs < 0.0:
            alpha *= 0.5
            continue
        Qs = qp.Q.matvec(s)
        sQs = float(s @ Qs)
        dq = gs + 0.5 * sQs
        if dq <= mu * gs:
            if best is None or -dq > best.decrease:
                best = SearchResult(xa, alpha, -dq, Qs)
            break
        theta = -gs / sQs if sQs > 0 else 0.5  # the minimizer along s, safeguarded
        alpha *= min(0.5, max(0.1, theta))
    return best if best is not None else _no_move(x)


def projected_search(qp: QP, x: FloatArray, g: FloatArray, d: FloatArray, alpha: float = 1.0, *,
                     mu: float = 0.01, max_backtracks: int = 60, segments: int = 64,
                     rounds: int = 8, Qd: FloatArray | None = None) -> SearchResult:
    """Search along the projected path P[x + αd] onto the feasible set of ``qp``.

    Box constraints: the first local minimizer of the piecewise quadratic along the path (the
    path objective need not be unimodal), found exactly segment by segment (``segments`` breakpoints per round, one product with Q and one
    principal block per round, at most ``rounds`` rounds; each round's point is a decrease).
    With one equality row: the ray up to the first breakpoint is minimized exactly when d keeps
    aᵀx fixed, and otherwise safeguarded backtracking from ``alpha`` with the Moré–Toraldo
    sufficient-decrease test ``q(x(α)) ≤ q(x) + μ gᵀ(x(α) − x)``.

    Parameters
    ----------
    qp : QP
        The problem: box constraints and at most one equality row.
    x : ndarray
        A feasible point.
    g : ndarray
        The gradient Qx + c at ``x``.
    d : ndarray
        The search direction.
    alpha : float
        The first trial step of the backtracking (equality case).
    mu : float
        Sufficient-decrease constant, 0 < mu < 1/2.
    max_backtracks : int
        Cap on the trial steps of the backtracking.
    segments, rounds : int
        Breakpoints examined per round and rounds (box case).
    Qd : ndarray, optional
        Q d when the caller has it (box case: saves the first round's product).

    Returns
    -------
    SearchResult
        The accepted point, its step, the decrease and Q(x_new − x); ``decrease == inf`` marks a
        path along which the quadratic is unbounded below.
    """
    if qp.m > 1:
        raise ProblemError("A: the projected search handles at most one equality row")
    if not d.any():
        return _no_move(x)
    if qp.m == 0:
        return _box_search(qp, x, g, d, max(1, segments), max(1, rounds), Qd)
    return _equality_search(qp, x, g, d, alpha, mu, max_backtracks)


@attrs.define(slots=True, eq=False)
class GPCGWork:
    """GPCG's slot in ``State.extra``: the requested tolerance."""

    tol: float


@attrs.frozen
class GPCG:
    """Gradient projection + conjugate gradients (Moré–Toraldo 1991).

    For box constraints and at most one equality row. Counters in ``Result.stats``:
    ``gp_steps`` (projected-gradient searches), ``cg_steps`` (CG iterations), ``cg_searches``
    (projected searches along CG steps), ``boundary_moves`` (zero-curvature moves) and
    ``face_solves`` (direct face minimizations, the fallback when a cycle is stuck) and ``settled``
    (snaps of variables stuck a rounding error inside a bound).

    Parameters
    ----------
    mu : float
        Sufficient-decrease constant of the projected searches.
    eta1 : float
        CG stops when an iteration's decrease falls below eta1 of the largest one.
    eta2 : float
        Gradient projection stops when a step's decrease falls below eta2 of the largest one.
    max_gp : int
        Cap on the gradient-projection steps of one phase.
    max_cg : int
        Cap on the CG iterations of one CG phase (and on CG phases per cycle).
    segments : int
        Breakpoints examined per round of the exact projected search (box case).
    max_face_solve : int
        When a whole cycle cannot move x (CG stuck on an ill-conditioned or singular face), the
        face problem is solved directly through its principal block if it has at most this many
        variables; otherwise, and if that fails too, the run ends as ``stalled``.
    """

    mu: float = 0.01
    eta1: float = 0.1
    eta2: float = 0.25
    max_gp: int = 50
    max_cg: int = 500
    segments: int = 64
    max_face_solve: int = 2000

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Check the problem shape and start from the projection of x0 (or 0) onto the feasible set."""
        if qp.m > 1:
            raise ProblemError(f"A: GPCG handles box constraints and at most one equality row, got {qp.m} rows")
        v = np.zeros(qp.n) if x0 is None else np.asarray(x0, dtype=np.float64)
        x = _eq_point(qp, v) if qp.m else np.clip(v, qp.lb, qp.ub)
        g = qp.gradient(x)
        state = State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub), extra=GPCGWork(tol=tol))
        state.counters.update(gp_steps=0, cg_steps=0, cg_searches=0, boundary_moves=0, face_solves=0, settled=0)
        return state

    def converged(self, qp: QP, state: State, tol: float) -> bool:
        """The KKT measure at the strategy's gradient is ≤ tol (projected gradient for a box)."""
        if qp.m == 0:
            return float(np.abs(projected_gradient(qp, state.x, state.g)).max(initial=0.0)) <= tol
        return kkt(qp, state.x, state.g).measure <= tol

    def step(self, qp: QP, state: State) -> None:
        """One cycle: gradient projection, then CG phases while the binding set is the active set.

        A cycle that cannot move x at all (no descent left to rounding) ends the run as stalled.
        """
        x_start = state.x
        self._gradient_projection(qp, state)
        spent = 0   # CG iterations since the last face solve, this cycle
        for _ in range(self.max_cg):
            if state.stop is not None:
                break
            nfree = int(np.count_nonzero((state.x > qp.lb) & (state.x < qp.ub)))
            before = state.counters["cg_steps"]
            # CG phases that keep running into bounds on one face have spent more products than
            # the face's dimension: a direct face solve (|F|³ flops ≤ |F| products with Q) is cheaper
            if spent > nfree and nfree <= self.max_face_solve:
                moved, spent = self._face_solve(qp, state), 0
            else:
                moved = self._conjugate_gradient(qp, state)
                spent += state.counters["cg_steps"] - before
            if not moved:
                break
            if not self._binding_is_active(qp, state) or self.converged(qp, state, state.extra.tol):
                break
        # one fresh product per cycle (a cycle costs several): the gradient cannot drift
        state.g = qp.gradient(state.x)
        state.status = bound_status(state.x, qp.lb, qp.ub)
        if state.stop is None and state.x is x_start and not self.converged(qp, state, state.extra.tol):
            # CG and gradient projection are both stuck to rounding (an ill-conditioned or singular
            # face): one direct minimization on the face, while the face is small enough to factor;
            # failing that, variables stuck a rounding error inside a bound (b at the edge of its
            # range leaves them 1e-13 of room) go onto it, which is what the certificate needs
            if not self._face_solve(qp, state) and not self._settle(qp, state):
                state.stop = Status.STALLED
            state.g = qp.gradient(state.x)
            state.status = bound_status(state.x, qp.lb, qp.ub)

    # -- pieces ---------------------------------------------------------------------------------

    @staticmethod
    def _face_multiplier(qp: QP, free: BoolArray, g: FloatArray) -> float:
        """λ making g − λa orthogonal to a on the free set (0 without an equality)."""
        if qp.m == 0:
            return 0.0
        af = qp.A[0][free]
        aa = float(af @ af)
        return float(af @ g[free]) / aa if aa > 0 else 0.0

    def _binding_is_active(self, qp: QP, state: State) -> bool:
        """Whether every variable at a bound is held there by the reduced gradient (Moré–Toraldo's switch)."""
        x, g = state.x, state.g
        at_lb, at_ub = x <= qp.lb, x >= qp.ub
        lam = self._face_multiplier(qp, ~(at_lb | at_ub), g)
        r = g - lam * qp.A[0] if qp.m else g
        return bool(np.all(r[at_lb] >= 0) and np.all(r[at_ub] <= 0))

    def _apply(self, qp: QP, state: State, res: SearchResult) -> None:
        assert res.Qs is not None
        state.g = state.g + res.Qs   # the snap below moves x by ulps: g is refreshed every cycle
        state.x = _snap(qp, res.x.copy())

    def _gradient_projection(self, qp: QP, state: State) -> None:
        best = 0.0
        for _ in range(self.max_gp):
            x, g = state.x, state.g
            free = (x > qp.lb) & (x < qp.ub)
            lam = self._face_multiplier(qp, free, g)
            pg = projected_gradient(qp, x, g - lam * qp.A[0] if qp.m else g)
            if not pg.any():
                return
            Qpg = qp.Q.matvec(pg)
            curv = float(pg @ Qpg)
            alpha = float(pg @ pg) / curv if curv > 0 else 1.0   # the Cauchy step
            active = bound_status(x, qp.lb, qp.ub)
            res = projected_search(qp, x, g, -pg if qp.m == 0 else -g, alpha, mu=self.mu,
                                   segments=self.segments, Qd=-Qpg if qp.m == 0 else None)
            state.counters["gp_steps"] += 1
            if res.decrease == np.inf:
                state.stop = Status.UNBOUNDED
                return
            if res.decrease <= 0.0:
                return
            self._apply(qp, state, res)
            best = max(best, res.decrease)
            if np.array_equal(active, bound_status(state.x, qp.lb, qp.ub)) or res.decrease <= self.eta2 * best:
                return

    def _conjugate_gradient(self, qp: QP, state: State) -> bool:
        """CG on the current face and a projected search along its step; True if x moved."""
        x, g = state.x, state.g
        free = (x > qp.lb) & (x < qp.ub)
        if not free.any():
            return False
        af: FloatArray | None = None
        if qp.m:
            a = qp.A[0] * free
            aa = float(a @ a)
            af = a / np.sqrt(aa) if aa > 0 else None

        def proj(v: FloatArray) -> FloatArray:
            # onto the face: zero off the free set, and orthogonal to a there
            w = v * free
            if af is not None:
                w -= float(af @ w) * af
            return w

        tol = float(state.extra.tol)
        # face optimality in the units of the KKT measure: with an equality row the measure is
        # in g/a, so a residual r_i = a_i(g_i/a_i − λ) must be read divided by |a_i|
        unit = np.where(qp.A[0] != 0, np.abs(qp.A[0]), 1.0) if qp.m else None

        def face_done(res: FloatArray, rr: float) -> bool:
            if unit is None:
                return bool(np.sqrt(rr) <= 0.1 * tol)
            return float(np.abs(res / unit).max(initial=0.0)) <= 0.1 * tol

        r = -proj(g)
        p = r.copy()
        d = np.zeros(x.size)
        rr = float(r @ r)
        best = 0.0
        # in exact arithmetic CG ends within dim(face) iterations; running past that means
        # rounding on an ill-conditioned face, where a direct face solve is the better step
        limit = min(self.max_cg, int(free.sum()) - (af is not None) + 1)
        finished = False
        for _ in range(limit):
            if face_done(r, rr):            # the face is optimal well within tol
                finished = True
                break
            Qp = proj(qp.Q.matvec(p))
            pQp = float(p @ Qp)
            state.counters["cg_steps"] += 1
            if pQp <= 1e-14 * rr:
                # zero (or, by rounding, negative) curvature: a flat or descending ray
                state.counters["boundary_moves"] += 1
                if not self._to_boundary(qp, state, d, p):
                    state.stop = Status.UNBOUNDED
                    return False
                return not np.array_equal(state.x, x)
            step = rr / pQp
            d += step * p
            dec = 0.5 * step * rr           # the face quadratic's decrease in this iteration
            best = max(best, dec)
            r -= step * Qp
            rr_new = float(r @ r)
            p = r + (rr_new / rr) * p
            rr = rr_new
            if dec <= self.eta1 * best:
                finished = True
                break
        if not finished and limit < self.max_cg and self._face_solve(qp, state):
            return True
        if not d.any():
            return False
        res = projected_search(qp, x, g, d, 1.0, mu=self.mu, segments=self.segments)
        state.counters["cg_searches"] += 1
        if res.decrease == np.inf:
            state.stop = Status.UNBOUNDED
            return False
        if res.decrease <= 0.0:
            return False
        self._apply(qp, state, res)
        return True

    def _settle(self, qp: QP, state: State) -> bool:
        """Snap coordinates within 1e-10 (relative) of a finite bound onto it, if the equality
        stays satisfied to 1e-10 relative and the objective does not rise; True if x changed."""
        x = state.x
        rel = 1e-10
        xn = _snap(qp, x.copy(), rel)
        if np.array_equal(xn, x):
            return False
        if qp.m:
            a, b = qp.A[0], float(qp.b[0])
            if abs(float(a @ xn) - b) > rel * (float(np.abs(a) @ np.abs(xn)) + abs(b)):
                return False
        if qp.objective(xn) > qp.objective(x) + 1e-14 * max(1.0, abs(qp.objective(x))):
            return False
        state.x = xn
        state.counters["settled"] += 1
        return True

    def _face_solve(self, qp: QP, state: State) -> bool:
        """Minimize on the current face through its principal block (least squares, so singular
        faces are fine), then a projected search along that step; True if x moved."""
        x, g = state.x, state.g
        F = np.flatnonzero((x > qp.lb) & (x < qp.ub))
        if F.size == 0 or F.size > self.max_face_solve:
            return False
        B = principal_block(qp.Q, F)
        rhs = -g[F]
        if qp.m:
            aF = qp.A[0][F]
            K = np.block([[B, aF[:, None]], [aF[None, :], np.zeros((1, 1))]])
            sol = np.linalg.lstsq(K, np.concatenate([rhs, [0.0]]), rcond=None)[0][:-1]
        else:
            sol = np.linalg.lstsq(B, rhs, rcond=None)[0]
        d = np.zeros(x.size)
        d[F] = sol
        state.counters["face_solves"] += 1
        res = projected_search(qp, x, g, d, 1.0, mu=self.mu, segments=self.segments)
        if not 0.0 < res.decrease < np.inf:
            return False
        self._apply(qp, state, res)
        return True

    def _to_boundary(self, qp: QP, state: State, d: FloatArray, p: FloatArray) -> bool:
        """Take the CG step so far, then follow ±p (no curvature) to the first bound.

        Returns False when that ray descends without ever meeting a bound (unbounded below).
        """
        x, g = state.x, state.g
        if d.any():
            res = projected_search(qp, x, g, d, 1.0, mu=self.mu, segments=self.segments)
            if res.decrease == np.inf:
                return False
            if res.decrease > 0.0:
                self._apply(qp, state, res)
                x, g = state.x, state.g
        direction = p if float(g @ p) <= 0 else -p
        slope = -float(g @ direction)
        if slope <= 1e-12 * float(np.abs(g).max(initial=0.0)) * float(np.abs(direction).max(initial=0.0)):
            return True                    # flat to rounding: nothing to gain along this ray
        res = projected_search(qp, x, g, direction, 1.0, mu=self.mu, segments=self.segments)
        if res.decrease == np.inf:
            return False
        if res.decrease > 0.0:
            self._apply(qp, state, res)
        return True
