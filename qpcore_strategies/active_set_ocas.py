"""The active-set OCAS of Xiao and Zhou (2013): OCAS whose evaluation and line search touch only the
examples that can cross the hinge's kink within the step's window (equations 8–12, Algorithm 1).

Built on :mod:`qpcore_strategies.cutting_plane` (the model, the reduced problem, the cut management) and
the kernels of :mod:`qpcore_strategies.active_set_ocas_kernels`, run by :class:`qpcore.backends.rowspace.Rows`, so
it runs unchanged in process (one block) and on a Dask cluster (one task per chunk; the active set
is an index list per chunk, never a kept copy of rows).
"""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import State
from qpcore_strategies.active_set_ocas_kernels import (EXACT_OPS, MOVE_OPS, PROBE_OPS, k_exact, k_keys, k_member, k_move,
                                                k_own, k_probe, rows_read)
from qpcore_strategies.cutting_plane import OCAS, CutState, _counted, _too_small
from qpcore_strategies.cutting_plane_kernels import LIST_CAP
from qpcore_strategies.line_search import Search

FloatArray = NDArray[np.float64]

#: the smallest window λ̂ (after tiny steps a window this narrow would clamp for many iterations)
_MIN_WINDOW = 1e-4

__all__ = ["ActiveSetOCAS"]


@attrs.define(eq=False)
class _Active:
    """The active set's state beside the loop (the per-example keys and sides stay with the rows)."""

    keys: Any                       # per block: qpcore_strategies.active_set_ocas_kernels.Keys
    A_b: FloatArray                 # Σ u_i h_i over the violators at w_b (the subgradient)
    B_b: float                      # Σ u_i ρ_i over the same
    S: float = 0.0                  # Σ‖Δw_b‖, the movement of w_b so far (eq. 8)
    lam: float = 1.0                # the window λ̂: θ_t = λ̂‖d‖, Λ = λ̂ (eqs. 9, 10)
    verified: bool = False          # F_b was just recomputed from all rows


def _rows(state: State, n: int) -> None:
    state.counters["rows_read"] = state.counters.get("rows_read", 0) + int(n)


@attrs.frozen
class ActiveSetOCAS(OCAS):
    """OCAS over an active set of examples (Xiao and Zhou 2013, Algorithm 1).

    Every example keeps a lower bound on its distance to the hinge's kink: D_i(w) = |ρ_i − h_iᵀw|
    measured at some w_b, lowered afterwards by the *actual* movement of w_b (eq. 8: a move by
    ‖Δw_b‖ changes h_iᵀw by at most ‖h_i‖‖Δw_b‖). It is stored per example as
    key_i = D_i/‖h_i‖ + S_i with S = Σ‖Δw_b‖ the movement so far, so the bound now is
    ‖h_i‖(key_i − S) and nothing is touched to lower it. Each iteration, after the reduced problem
    gives w_t and d = w_t − w_b:

    1. θ_t = λ̂‖d‖ (eq. 10) and the window Λ = θ_t/‖d‖ = λ̂ (eq. 9): on the segment w_b + t d,
       0 ≤ t ≤ Λ, w moves by at most θ_t, so an example with key_i − S > θ_t keeps its side;
    2. the active set X^a = {i : key_i − S ≤ θ_t}, rebuilt from the keys every iteration; one
       product of H[X^a] with [w_b, w_t] gives its margins (T1, ``eval_seconds``);
    3. the exact line search of φ(t) = F(w_b + t d) over [0, Λ]: the inactive examples are linear
       there (their violators' part of the subgradient is in A_b), so only the breakpoints of X^a
       inside (0, Λ) are examined (X^s, eq. 12), listed or binned as OCAS does (T2,
       ``search_seconds``);
    4. the step: the minimizer t* when it lies inside the window, else the **clamp** 0.9Λ with the
       cut at Λ (counted in ``clamped``; never a fallback); 0 when d is no descent direction;
    5. the cut at w_c = w_b + c d, c = min(t* + μ(1 − t*), Λ) (OCAS's point, kept inside the window):
       its subgradient is A_b plus the changes of the active rows whose side differs at w_c; A_b
       follows the rows whose side changed at the new w_b; only those rows are read. The keys of
       X^a are measured afresh at the new w_b; S grows by ‖Δw_b‖.

    Everything is exact: F(w_b) = ½‖w_b‖² + B_b − A_bᵀw_b with the violators' sums A_b, B_b over
    all examples (kept up to date through the side changes, which the window makes certain), and
    every cut is the subgradient at its point. Before a stop is claimed, one pass recomputes F(w_b),
    A_b and B_b from all rows (``verifications``), so rounding accumulated in A_b cannot decide it.

    Where this departs from the paper, and why:

    - **rows of any norm.** The paper assumes ‖h_i‖ = 1, so a distance in margins is a distance in
      w. Here the distance is divided by ‖h_i‖ (computed once, with the rows); rows with h_i = 0
      never cross. Each measured distance is lowered by a relative 1e-9 for rounding of the margins.
    - **the window λ̂ (θ_t = λ̂‖d‖).** λ̂ adapts to the steps: doubled after a clamp, otherwise set
      toward ``grow`` × OCAS's last cut point t* + μ(1 − t*) (at most doubling or quartering an
      iteration, at least 1e-4), so the window usually holds the next step and OCAS's cut point;
      when that point lies beyond Λ the cut is at Λ. (A window fitted to the step alone touches
      somewhat fewer rows, but its nearer cuts, with μ = 0.05 and 20 cuts, cost many iterations.)
    - **refresh.** When a block's active set would hold more than ``refresh`` of its rows, the
      block takes all its rows that iteration (scattered rows are read at a fraction of the rate
      of a pass over the whole block, so past a quarter of them the whole block is cheaper); its
      keys are then all measured afresh (``refreshes``).
    - **the move reads only the rows whose side changes** (for the cut at w_c and for A_b), not
      the active set again.

    Parameters
    ----------
    window : float
        The first λ̂ (Λ of the first iteration), > 0.
    grow : float
        > 1: the next window as a multiple of the last cut point.
    refresh : float
        In (0, 1]: a block whose active set would exceed this fraction of its rows takes them all.
    clamp : float
        In (0, 1): the step when the minimizer is not inside the window, as a fraction of Λ (paper 0.9).
    mu, inner, inner_tol, max_cuts, drop_after, tol_abs, target
        As for :class:`qpcore_strategies.cutting_plane.OCAS` (μ = 0.1 by default like OCAS; the paper's
        settings, μ = 0.05 and at most 20 cuts, are :meth:`paper`).

    Notes
    -----
    Counters (``Result.stats``): ``rows_read`` (every row read by every product: the start, ‖h_i‖,
    the active products, the rows whose side changed, the verifications), ``touched_eval`` = Σ|X^a|,
    ``touched_search`` = Σ|X^s|, ``clamped``, ``refreshes`` (blocks that took all their rows),
    ``verifications``.
    """

    window: float = 1.0
    grow: float = 1.5
    refresh: float = 0.25
    clamp: float = 0.9

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if not self.window > 0:
            raise ProblemError(f"window: must be > 0, got {self.window}")
        if not self.grow > 1:
            raise ProblemError(f"grow: must be > 1, got {self.grow}")
        if not 0 < self.refresh <= 1:
            raise ProblemError(f"refresh: must be in (0, 1], got {self.refresh}")
        if not 0 < self.clamp < 1:
            raise ProblemError(f"clamp: must be in (0, 1), got {self.clamp}")

    @classmethod
    def paper(cls, **options: Any) -> ActiveSetOCAS:
        """The paper's settings: μ = 0.05 and at most 20 cuts (the others as given).

        Parameters
        ----------
        **options
            Any other option of the class.

        Returns
        -------
        ActiveSetOCAS
        """
        return cls(**{"mu": 0.05, "max_cuts": 20, **options})

    # ------------------------------------------------------------------ start
    def init(self, qp: QP, x0: Any, tol: float) -> State:
        """OCAS's start (w_b = Hᵀx0 or 0, its margins and first cut: the subgradient A_b, B_b), then
        ‖h_i‖ and every example's key and side (one more pass over the rows).

        Parameters
        ----------
        qp : QP
            The fixed-threshold dual with Q = HHᵀ (d = 0), 0 ≤ α ≤ u, no equality.
        x0 : ndarray or ChunkedVector, optional
            A dual point; the run starts from w = Hᵀx0.
        tol : float
            TolRel.

        Returns
        -------
        State
        """
        state = super().init(qp, x0, tol)
        cs = state.work(CutState)
        if "rows_read" not in state.counters:
            # the start's passes: (Hᵀx0,) the margins and the first cut's Hᵀv
            _rows(state, (3 if x0 is not None else 2) * qp.n)

        def setup() -> None:
            rows = cs.rows
            keys = rows.kept(rows.map(k_keys, rows.blocks, cs.m_b.src, cs.rho, float(np.linalg.norm(cs.w_b)),
                                      name="qpcore-asocas-keys"))
            cs.active = _Active(keys=keys, A_b=cs.cuts.A[0].copy(), B_b=float(cs.cuts.b[0]), lam=self.window)
            state.counters["passes"] += 1
            _rows(state, qp.n)

        _counted(state, setup)
        state.counters.update(clamped=0, refreshes=0, verifications=0)
        return state

    # ------------------------------------------------------------------ the iteration
    def _advance(self, qp: QP, state: State) -> None:
        cs = state.work(CutState)
        act: _Active = cs.active
        act.verified = False
        rows = cs.rows
        d = cs.w_t - cs.w_b
        dd = float(d @ d)
        nd = float(np.sqrt(dd))
        if _too_small(cs.w_b, dd) or not nd > 0:
            # w_t = w_b to rounding: no direction; the cut at w_b is the subgradient kept (no rows read)
            cs.cuts.add(act.A_b.copy(), act.B_b, rows.kept(rows.map(k_member, act.keys, name="qpcore-asocas-member")))
            state.counters["cuts_added"] += 1
            self._record(state, 0, 0)
            return
        lam = act.lam
        theta = lam * nd
        t0 = time.perf_counter()
        pairs, partial = rows.map_reduce(k_probe, rows.blocks, act.keys, cs.rho, cs.u, cs.w_b, cs.w_t, act.S + theta, lam,
                                         self.refresh, LIST_CAP, ops=PROBE_OPS, name="qpcore-asocas-probe")
        t1 = time.perf_counter()
        probe, window = rows.kept(pairs, 0), rows.kept(pairs, 1)
        n_active, n_search, refreshed = int(partial[6]), int(partial[7]), int(partial[8])
        _rows(state, rows_read(partial))
        state.counters["passes"] += 1
        state.counters["refreshes"] += refreshed
        # φ'(0) = w_bᵀd − A_bᵀd (the violators at w_b, active or not) + the active ties
        search = Search(rows, window, window, None, None)
        t_star = search.run(partial[:6], float(cs.w_b @ d), dd, slope=-float(act.A_b @ d), t_max=lam)
        state.counters["window_rounds"] += search.rounds
        if t_star >= lam:
            # the minimizer is not inside the window: the clamp, the cut at Λ; a wider window next
            step, c = self.clamp * lam, lam
            state.counters["clamped"] += 1
            act.lam = 2.0 * lam
        else:
            step = t_star
            want = step + self.mu * (1.0 - step)               # OCAS's cut point
            c = min(want, lam)
            # toward grow × the cut point, by at most a factor 4 down or 2 up an iteration: one
            # short step (near a tie, or at the accuracy limit) must not collapse the window
            act.lam = max(_MIN_WINDOW, 0.25 * lam, min(2.0 * lam, self.grow * abs(want)))
        w_b = cs.w_b + step * d
        S = act.S + step * nd * (1.0 + 1e-12)
        moved, (dA_b, dB_b, dA_c, dB_c, read) = rows.map_reduce(
            k_move, rows.blocks, act.keys, probe, step, c, S, float(np.linalg.norm(w_b)), ops=MOVE_OPS,
            name="qpcore-asocas-move")
        act.keys = rows.kept(moved, 0)
        # the cut's members in an object of their own: a member picked out of the move's output
        # would keep that output, this iteration's keys (m numbers), alive as long as the cut
        bits = rows.kept(rows.map(k_own, rows.kept(moved, 1), name="qpcore-asocas-bits"))
        _rows(state, int(read))
        act.A_b = act.A_b + np.asarray(dA_b, dtype=np.float64)
        act.B_b += float(dB_b)
        a_c = act.A_b + np.asarray(dA_c, dtype=np.float64)
        b_c = act.B_b + float(dB_c)
        act.S = S
        cs.w_b = w_b
        cs.m_t = None           # w_t's margins are known on the active rows only
        cs.F_b = self._F(cs, act)
        cs.eval_seconds += t1 - t0
        cs.search_seconds += time.perf_counter() - t1
        cs.cuts.add(a_c, b_c, bits)
        state.counters["cuts_added"] += 1
        self._record(state, n_active, n_search)

    @staticmethod
    def _F(cs: CutState, act: _Active) -> float:
        """F(w_b) = ½‖w_b‖² + Σ_viol u_i(ρ_i − h_iᵀw_b) from the violators' sums."""
        return 0.5 * float(cs.w_b @ cs.w_b) + act.B_b - float(act.A_b @ cs.w_b)

    # ------------------------------------------------------------------ the stop
    def _judge(self, qp: QP, state: State) -> None:
        """As OCAS, but a stop (tol, tol_abs or target) is claimed only on F(w_b), A_b and B_b
        recomputed from all rows (one pass; its keys and sides are reset too)."""
        cs = state.work(CutState)
        act: _Active | None = cs.active
        met, hit = self._met(cs)
        if (met or hit) and act is not None and not act.verified:
            self._verify(qp, state)
        super()._judge(qp, state)

    def _verify(self, qp: QP, state: State) -> None:
        cs = state.work(CutState)
        act: _Active = cs.active
        rows = cs.rows
        t0 = time.perf_counter()
        kept, (risk, a, b) = rows.map_reduce(k_exact, rows.blocks, act.keys, cs.w_b, cs.rho, cs.u, act.S,
                                             float(np.linalg.norm(cs.w_b)), ops=EXACT_OPS,
                                             name="qpcore-asocas-exact")
        act.keys = rows.kept(kept, 0)
        act.A_b, act.B_b = np.asarray(a, dtype=np.float64), float(b)
        cs.F_b = 0.5 * float(cs.w_b @ cs.w_b) + float(risk)
        act.verified = True
        cs.eval_seconds += time.perf_counter() - t0
        state.counters["passes"] += 1
        state.counters["verifications"] += 1
        _rows(state, 2 * qp.n)
