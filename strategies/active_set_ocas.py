"""The active-set OCAS of Xiao and Zhou (2013): OCAS whose evaluation, line search and cuts touch
only the examples that can cross the hinge's kink (the rest enter through an aggregated linear model).

Built on :mod:`strategies.cutting_plane` (the model, the reduced problem, OCAS's passes) and the
kernels of :mod:`strategies.cutting_plane_kernels`, so it runs unchanged in process and on a cluster.
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.problem import QP, ProblemError
from qpcore.state import State
from strategies.cutting_plane import OCAS, CutState, _Margins, _too_small
from strategies.cutting_plane_kernels import (BUILD_OPS, LIST_CAP, LONG, POINT_OPS, SUMMARY_OPS, k_active_bits,
                                              k_active_move, k_active_probe, k_build, k_count, k_norms, k_point)
from strategies.line_search import Search

FloatArray = NDArray[np.float64]

__all__ = ["ActiveSetOCAS"]


@attrs.define(eq=False)
class _Active:
    """The active set's state."""

    norms: Any                          # ‖h_i‖, a vector with the rows
    Q: Any = None                       # the active blocks (kept by the build pass)
    m_b: _Margins | None = None         # the active rows' margins of w_b
    size: int = 0
    a_X: FloatArray = attrs.Factory(lambda: np.zeros(0))
    B_0: float = 0.0
    w_ref: FloatArray = attrs.Factory(lambda: np.zeros(0))
    bound: float = 0.0
    drift: float = 0.0
    safe: float = 0.0
    exact: bool = True
    age: int = 0
    scale: float = 1.0
    best_w: FloatArray | None = None
    best_m: Any = None
    best_F: float = np.inf
    misled: bool = False



@attrs.frozen
class ActiveSetOCAS(OCAS):
    """OCAS over an active set of examples (Xiao and Zhou 2013).

    At an exact refresh (a full OCAS iteration over all examples) each example gets its distance
    estimate D_i = |ρ_i − h_iᵀw_b|, how far its margin is from the hinge's kink, and the step
    bound Λ = ``radius`` × the largest margin change of that iteration (max_i |Δ(h_iᵀw)| over the
    line-search step and the cut point). The examples with D_i ≤ Λ form the active set X^a; the
    others are expected to keep their side until the margins have moved by Λ in all, so they
    enter F as one linear model: the violators among them contribute B_0 − a_Xᵀw, with a_X their
    summed subgradient Σ u_i h_i and B_0 = Σ u_i ρ_i (together with ½‖w‖² the quadratic
    A_0 t² + B_0' t + C_0 of the line search along w_b → w_t). Evaluation at w_t, the line search
    and the cut then touch X^a only.

    The bound is checked as the run goes: the active examples' margin changes are summed, and
    once they exceed Λ (the fallback), or every ``refresh_every`` iterations, an exact iteration
    rebuilds the set. Between refreshes F(w_b) is exact when w_b is within the certified radius
    min_{i∉X^a} D_i/‖h_i‖ of the refresh point (Cauchy–Schwarz), else a lower estimate; a stop
    (tol or target) is only claimed after an exact evaluation. Every cut is valid whatever the
    sides (a sum over any subset of examples minorizes the risk), so the dual point stays feasible.

    Parameters
    ----------
    refresh_every : int
        Exact refresh at least this often (iterations).
    radius : float
        Λ as a multiple of the last exact iteration's largest margin change (≥ 1); doubled when
        the set is outrun within two iterations, narrowed back when it lasts to the refresh.
    max_fraction : float
        Iterate over all examples (plain OCAS) while the active set would hold more than this
        fraction of them (the first iterations, when the margins move a lot).
    mu, inner, inner_tol, max_cuts, drop_after, tol_abs, target
        As for :class:`OCAS`.
    """

    refresh_every: int = 20
    radius: float = 3.0
    max_fraction: float = 0.5

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.refresh_every < 1:
            raise ProblemError(f"refresh_every: must be ≥ 1, got {self.refresh_every}")
        if not 0 < self.max_fraction <= 1:
            raise ProblemError(f"max_fraction: must be in (0, 1], got {self.max_fraction}")
        if not self.radius >= 1:
            raise ProblemError(f"radius: must be ≥ 1, got {self.radius}")

    def _next_bound(self, cs: CutState) -> float | None:
        # the next rebuild's bound when the reach term is the larger one (it nearly always is;
        # rebuild checks, and counts again otherwise)
        act: _Active = cs.active
        return self.radius * act.scale * cs.reach

    def _start(self, qp: QP, state: State) -> None:
        """‖h_i‖ per block, with the rows (computed with the first pass that needs them)."""
        cs = state.work(CutState)
        cs.active = _Active(norms=cs.rows.vector(cs.rows.map(k_norms, cs.rows.blocks, name="qpcore-norms")))

    def _judge(self, qp: QP, state: State) -> None:
        """As OCAS, but a stop is claimed only on an exactly evaluated F(w_b)."""
        cs = state.work(CutState)
        met, hit = self._met(cs)
        if (met or hit) and not cs.active.exact:
            self._verify(qp, state)
        super()._judge(qp, state)

    def _verify(self, qp: QP, state: State) -> None:
        """F(w_b) from all examples (one pass), and a new active set around w_b."""
        act: _Active = state.work(CutState).active
        self._evaluate_exactly(qp, state)
        state.counters["verifications"] = state.counters.get("verifications", 0) + 1
        if act.Q is not None:
            self._rebuild(qp, state)

    def _evaluate_exactly(self, qp: QP, state: State) -> None:
        """F(w_b) and its margins from all examples (one pass). An estimate that led w_b to a point
        worse than the best exactly evaluated one is undone: w_b goes back there (the best point
        never gets worse in exact terms)."""
        cs = state.work(CutState)
        act: _Active = cs.active
        t0 = time.perf_counter()
        estimate = cs.F_b
        self._evaluate_best(state)
        cs.eval_seconds += time.perf_counter() - t0
        if not act.exact and cs.F_b > estimate + 1e-12 * abs(cs.F_b):
            # the inactive part was wrong: its cuts were no subgradients and may not cut off the
            # reduced solution, so the next iteration runs over all examples, with a wider set after
            act.misled = True
        state.counters["passes"] += 1
        if act.best_w is not None and cs.F_b > act.best_F:
            cs.w_b, cs.m_b, cs.F_b = act.best_w.copy(), act.best_m.copy(), act.best_F
            state.counters["reverted"] = state.counters.get("reverted", 0) + 1
        act.exact = True
        self._keep_best(state)

    def _evaluate_best(self, state: State) -> None:
        """w_b's margins and F(w_b) from all examples (one pass), counting the examples within the
        next rebuild's step bound on the way."""
        cs = state.work(CutState)
        act: _Active = cs.active
        rows = cs.rows
        bound = self.radius * act.scale * cs.reach
        pairs, (risk, mx, _, _, count) = rows.map_reduce(k_point, rows.blocks, cs.w_b, cs.rho, cs.u, False, bound,
                                                         ops=POINT_OPS, name="qpcore-ocas-exact")
        cs.m_b = _Margins(rows.kept(pairs, 0), 0.0, float(mx), (bound, int(count)))
        cs.F_b = 0.5 * float(cs.w_b @ cs.w_b) + float(risk)

    def _keep_best(self, state: State) -> None:
        cs = state.work(CutState)
        act: _Active = cs.active
        if act.best_w is None or cs.F_b <= act.best_F:
            act.best_w, act.best_m, act.best_F = cs.w_b.copy(), cs.m_b.copy(), cs.F_b

    def _advance(self, qp: QP, state: State) -> None:
        cs = state.work(CutState)
        act: _Active = cs.active
        act.age += 1
        if act.Q is None or act.misled:
            # no set yet, the margins still move too much, or the set misled the last estimate:
            # a plain OCAS iteration (its cut is an exact subgradient)
            if act.misled:
                act.misled = False
                act.scale *= 2.0
            self._full(qp, state)
            return
        if act.age > self.refresh_every:
            act.scale = max(1.0, 0.75 * act.scale)     # it held to the periodic refresh: narrow it
            if not self._refresh(qp, state):
                self._full(qp, state)
                return
        for attempt in range(2):
            if self._active_iteration(qp, state):
                return
            # the fallback: the margins moved by more than the step bound, so inactive examples
            # may have crossed. A set outrun within two iterations was too narrow: the next is
            # built twice as wide around the same w_b, from exact margins, and the iteration redone
            if act.age <= 2:
                act.scale *= 2.0
            if attempt or not self._refresh(qp, state):
                break
        self._full(qp, state)

    def _full(self, qp: QP, state: State) -> None:
        """A plain OCAS iteration over all examples (exact margins of w_b at hand), then a new set."""
        state.work(CutState).active.exact = True
        OCAS._advance(self, qp, state)
        self._keep_best(state)
        self._rebuild(qp, state)

    def _refresh(self, qp: QP, state: State) -> bool:
        """The exact refresh: w_b's margins from all examples (one pass), F(w_b) exact, a new
        active set around w_b; False when the set would be too large to pay."""
        cs = state.work(CutState)
        self._evaluate_exactly(qp, state)
        state.counters["refreshes"] += 1
        self._rebuild(qp, state)
        return cs.active.Q is not None

    def _active_iteration(self, qp: QP, state: State) -> bool:
        """OCAS's evaluation, line search and cut over the active rows; False (nothing changed)
        when the margins would move past the step bound."""
        cs = state.work(CutState)
        act: _Active = cs.active
        assert act.Q is not None and act.m_b is not None
        rows = cs.rows
        d = cs.w_t - cs.w_b
        dd = float(d @ d)
        if _too_small(cs.w_b, dd) or not dd > 0:
            return False        # no direction to rounding: the exact iteration decides
        t0 = time.perf_counter()
        pairs, summary = rows.map_reduce(k_active_probe, act.Q, act.m_b.src, act.m_b.t, cs.w_t, LIST_CAP,
                                         ops=SUMMARY_OPS, name="qpcore-ocas-aprobe")
        t1 = time.perf_counter()
        probe = rows.kept(pairs, 0)
        # the inactive violators are linear in w: slope −a_Xᵀd along the ray
        search = Search(rows, probe, act.Q, None, None)
        step = search.run(summary, float(cs.w_b @ d), dd, slope=-float(act.a_X @ d))
        state.counters["window_rounds"] += search.rounds
        if step > LONG:
            return False        # a long step amplifies δ's rounding: the exact iteration takes it
        reach = max(step, self.mu) * float(summary[5])
        cs.reach = reach
        cs.eval_seconds += t1 - t0
        w_b = cs.w_b + step * d
        # within the certified radius the model is exact; beyond it the step bound is a guess,
        # refused when the margins moved past it ...
        exact = float(np.linalg.norm(w_b - act.w_ref)) <= act.safe
        if not exact and act.drift + reach > act.bound:
            cs.search_seconds += time.perf_counter() - t1
            return False
        risk, a_part, b_part = rows.reduce(k_active_move, act.Q, probe, step, self.mu, ops=("sum", "sum", "sum"),
                                           name="qpcore-ocas-amove")
        F_b = 0.5 * float(w_b @ w_b) + float(risk) + act.B_0 - float(act.a_X @ w_b)
        cs.search_seconds += time.perf_counter() - t1
        # ... or when the estimate (a lower bound of F, as the inactive part is a minorant) falls
        # below the cutting-plane bound D ≤ min F: then some inactive example has certainly crossed
        if not exact and F_b < cs.dual:
            return False
        act.drift += reach
        cs.w_b, cs.F_b = w_b, F_b
        act.m_b = _Margins(probe, step)
        cs.m_t = None           # w_t's margins are known on the active set only
        act.exact = exact
        # the cut at w_c: the inactive violators' part is a_X, B_0 and their member bits
        bits = rows.map(k_active_bits, act.Q, probe, step, self.mu, name="qpcore-ocas-abits")
        cs.cuts.add(act.a_X + np.asarray(a_part, dtype=np.float64), act.B_0 + float(b_part), rows.kept(bits))
        state.counters["cuts_added"] += 1
        self._record(state, act.size, act.size)
        return True

    def _rebuild(self, qp: QP, state: State) -> None:
        """The active set around w_b: its size from the pass that made the margins (or one count),
        then, when small enough, one pass that builds it where the rows are."""
        cs = state.work(CutState)
        act: _Active = cs.active
        rows = cs.rows
        mb = cs.m_b
        bound = self.radius * act.scale * max(cs.reach, 1e-12 * (1.0 + mb.maxabs))
        if mb.count is not None and mb.count[0] == bound:
            size = mb.count[1]
        else:
            (size,) = rows.reduce(k_count, mb.src, mb.t, cs.rho, bound, ops=("sum",), name="qpcore-ocas-count")
        if size > self.max_fraction * qp.n:
            # early on the margins move too much for a small set: plain OCAS iterations until then
            act.Q = None
            act.exact = True
            return
        pairs, (a_X, B_0, safe, size) = rows.map_reduce(k_build, rows.blocks, mb.src, mb.t, cs.rho, cs.u, act.norms,
                                                        bound, ops=BUILD_OPS, name="qpcore-ocas-build")
        act.Q = rows.kept(pairs, 0)
        act.m_b = _Margins(act.Q)
        act.size = int(size)
        act.a_X = np.asarray(a_X, dtype=np.float64)
        act.B_0 = float(B_0)
        state.counters["passes"] += 1
        # within this distance of w_ref no inactive example can cross: F is exact there
        act.safe = float(safe)
        act.w_ref = cs.w_b.copy()
        act.bound = bound
        act.drift = 0.0
        act.age = 0
        act.exact = True
