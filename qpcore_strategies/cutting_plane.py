"""Cutting planes for the regularized hinge risk: BMRM, OCAS and the active-set OCAS of Xiao and Zhou.

They solve the fixed-threshold SVM dual ``min ½αᵀHHᵀα + cᵀα, 0 ≤ α ≤ u`` (Q diagonal plus low
rank with d = 0, no equality) through its primal

    min_w F(w) = ½‖w‖² + R(w),   R(w) = Σ_i u_i max(0, ρ_i − h_iᵀw),   ρ = −c,

which for the hinge-loss linear SVM (h_i = y_i[x_i, bias], ρ = 1, u = C) is
½‖w‖² + Σ C_i max(0, 1 − y_i wᵀx̃_i). Each iteration touches the data only through passes over
the rows (H w: margins; Hᵀv: a subgradient); everything else is small:

- the cutting-plane model and its reduced problem (:mod:`qpcore_strategies.cut_store`), solved by a
  primal active set that keeps the factor of its free cuts across iterations
  (:mod:`qpcore_strategies.cut_qp`), or by **any strategy** (``inner``, run by
  :func:`qpcore.core.solve.iterate`), warm-started from the previous β;
  its solution gives w_t = Σβ_t a_t and the dual value D = Σβ_t b_t − ½‖w_t‖²;
- every β is a dual-feasible α: α_i = u_i Σ_t β_t [i ∈ V_t], with Hᵀα = w_t and D(α) = D, so
  F(w_b) − D is a duality gap that ``qpcore.solve`` re-checks from the problem alone
  (``state.primal = w_b``, :func:`qpcore.core.optimality.lagrangian_bound`).

:class:`BMRM` (libocas's method 0, SVMperf) cuts at w_t. :class:`OCAS` (Franc and Sonnenburg
2008/2009) keeps the best point w_b, moves it by the exact line search along w_b → w_t
(:mod:`qpcore_strategies.line_search`), and cuts at w_c = (1 − μ)w_b + μ w_t. The active-set OCAS of Xiao
and Zhou (2013), :class:`qpcore_strategies.active_set_ocas.ActiveSetOCAS`, builds on this module: OCAS's
evaluation and line search over the examples that can cross the kink within the step's window.

``tol`` of ``qpcore.solve`` is libocas's TolRel: stop when F(w_b) − D ≤ tol·|F(w_b)|.

**Written once for every backend.** The passes are the kernels of
:mod:`qpcore_strategies.cutting_plane_kernels` run by :class:`qpcore.backends.rowspace.Rows`: in process once on
the whole data, over a :class:`qpcore.backends.chunked.ChunkedLowRankQ` (``hinge_svm`` of a dask array)
once per chunk on the Dask workers. What lives where:

- with the rows: the margins H w_b and H w_t, each cut's member bits (which examples it sums)
  and finally α (the active-set OCAS adds its per-example keys and sides there);
- beside the loop: w_b, w_t, the cuts a_t (k-vectors), their Gram matrix and offsets, β, scalars.

The passes are fused (on a cluster a round trip costs far more than the k-vector arithmetic): an
OCAS iteration is **the probe** (one pass, kept: m_t = H w_t and the line search's summary), rarely
a window round of the line search, and **the move and the cut** (one reduction: m_b ← m_b +
t(m_t − m_b), the risk at the new w_b and the cut at w_c); the cut's member bits are formed by a pass the loop does not
wait for. A BMRM iteration is one pass.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, cast

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import Capability
from qpcore.core.problem import QP, ProblemError
from qpcore.backends.rowspace import ClusterError, LowRankRows, Rows
from qpcore.core.solve import iterate
from qpcore.core.state import State, Status, Work
from qpcore.core.strategy import Strategy
from qpcore_strategies.cut_qp import CutQP
from qpcore_strategies.cut_store import Cuts
from qpcore_strategies.cutting_plane_kernels import (LIST_CAP, LONG, MOVE_OPS, POINT_OPS, SUMMARY_OPS, k_alpha, k_bits, k_box,
                                              k_grad, k_matvec, k_mix, k_move, k_point, k_probe, k_start, release_work)
from qpcore_strategies.line_search import Search, line_search, step_in_window

FloatArray = NDArray[np.float64]

__all__ = ["BMRM", "CutState", "OCAS", "line_search", "step_in_window"]


# --------------------------------------------------------------------------------------------- the state
@attrs.define(eq=False)
class _Margins:
    """Margins held with the rows: per block ``mb_of(kept, t)`` of the kept objects ``src``.

    Never changed once made (``copy`` returns itself), like the blocks it stands for.
    """

    src: Any
    t: float = 0.0
    maxabs: float = float("nan")

    def copy(self) -> _Margins:
        """Itself (immutable)."""
        return self


@attrs.define(eq=False)
class CutState(Work):
    """What a cutting-plane run keeps (its work state).

    Attributes
    ----------
    cuts : Cuts
        The model; each member is held with the rows (per block, packed bits or, for an
        aggregated cut, float fractions).
    w_b, w_t : ndarray
        The best point (BMRM: the last best iterate) and the reduced problem's solution.
    m_b, m_t : _Margins
        Their margins, with the rows (m_t None when only the active rows know them).
    F_b, dual : float
        F(w_b) and the reduced problem's value D, a lower bound on min F.
    rho, u : float or vector
        ρ = −c and the weights (scalars for constant vectors on a cluster).
    rows : Rows
        The rows and the passes over them (``rows.counters`` record the round trips).
    eval_seconds, search_seconds : float
        Seconds spent so far in the evaluations and in the line searches (the strategy's own clocks).
    reduced : CutQP or None
        The reduced problem's solver and its factor, kept across iterations (``inner`` None).

    Notes
    -----
    The run keeps no per-iteration trace: a callback of ``qpcore.solve`` reads what it wants after
    each step, without the progress snapshot's sync (a pass over the data),
    e.g. ``callback=lambda p: trace.append((p.elapsed, p.work(CutState).F_b))``; besides the fields
    above, :attr:`touched_eval`, :attr:`touched_search` and :attr:`primal_exact` describe the last
    iteration.
    """

    cuts: Cuts
    w_b: FloatArray
    m_b: _Margins
    F_b: float
    w_t: FloatArray
    m_t: _Margins | None
    dual: float
    rho: Any
    u: Any
    tol: float
    rows: Rows
    eval_seconds: float = 0.0
    search_seconds: float = 0.0
    stale: int = 0
    active: Any = None
    #: the reduced problem's solver and its factor, kept across iterations (``inner`` None)
    reduced: CutQP | None = None
    #: examples the last iteration's evaluation and line search touched
    _touched: tuple[int, int] = (0, 0)

    @property
    def touched_eval(self) -> int:
        """Examples the last iteration's evaluation touched (all m for BMRM and OCAS; |X^a| for the
        active-set OCAS)."""
        return self._touched[0]

    @property
    def touched_search(self) -> int:
        """Examples the last iteration's line search touched (0 for BMRM, which has none; |X^s|, the
        breakpoints inside the window, for the active-set OCAS)."""
        return self._touched[1]

    @property
    def primal_exact(self) -> bool:
        """Whether ``F_b`` is F(w_b) from all examples: True for every variant here (the active-set
        OCAS's F_b is exact too, from its violators' sums)."""
        return True

    def release(self) -> CutState:
        """Give back the passes' work arrays (in process as long as the data); the model stays."""
        release_work()
        return self


def _mix(rows: Rows, f0: float, m0: Any, f1: float, m1: Any) -> Any:
    """``Cuts.mix`` for members held with the rows: the aggregated member, block by block."""
    return rows.kept(rows.map(k_mix, f0, m0, f1, m1, rows.sizes(), name="qpcore-mix"))


def _too_small(w_b: FloatArray, dd: float) -> bool:
    """w_t = w_b to rounding: δ would be cancellation noise."""
    return dd <= (1e-13 * max(1.0, float(np.sqrt(w_b @ w_b)))) ** 2


def _inner_solve(inner: Strategy, qp: QP, x0: FloatArray, tol: float, state: State,
                 max_steps: int | None = None) -> FloatArray:
    """The inner strategy on the reduced problem through :func:`qpcore.core.solve.iterate`, without the
    outer loop's certificate: the reduced problem is tiny and solved every iteration, and any
    feasible β is a valid dual point (its value is computed exactly afterwards). Stops at the
    deadline, at a status the strategy sets, or after ``max_steps`` (default 100·(k + 10); counted
    in ``inner_cut_short``)."""
    st = inner.init(qp, x0, tol)
    limit = 100 * (qp.n + 10) if max_steps is None else max_steps
    status = iterate(qp, inner, st, max_iter=limit, deadline=state.deadline)
    state.counters["inner_iterations"] += st.iteration
    if status is Status.MAX_ITER:
        state.counters["inner_cut_short"] = state.counters.get("inner_cut_short", 0) + 1
    inner.finish(qp, st)
    x: FloatArray = st.x
    total = float(qp.b[0])
    if not np.isfinite(x).all() or np.any(x < -1e-12 * total) or abs(float(x.sum()) - total) > 1e-9 * total:
        # an inner failure must not break dual feasibility: fall back to the warm start
        return x0
    return x


def _lost(e: ClusterError, state: State | None, w_b: FloatArray) -> ClusterError:
    e.primal = np.array(w_b, dtype=np.float64)
    e.iteration = state.iteration if state is not None else 0
    return e


def _counted(state: State, fn: Callable[[], Any]) -> Any:
    """Run a piece of the iteration in the backend's client context, counting its round trips and
    attaching w_b to a cluster loss."""
    cs = state.work(CutState)
    before = cs.rows.counters["reductions"]
    try:
        with cs.rows.client_context():
            return fn()
    except ClusterError as e:
        raise _lost(e, state, cs.w_b) from None
    finally:
        state.counters["round_trips"] += cs.rows.counters["reductions"] - before


@attrs.frozen
class _CuttingPlane(Strategy):
    """Shared configuration and machinery (see the module docstring)."""

    inner: Strategy | None = None
    inner_tol: float | None = None
    max_cuts: int | None = None
    drop_after: int | None = None
    tol_abs: float = 0.0
    target: float | None = None

    #: ``qpcore.solve`` judges ``tol`` on the certificate's relative duality gap (TolRel)
    criterion = "relative_gap"
    requires = frozenset({Capability.LOWRANK})

    def __attrs_post_init__(self) -> None:
        if self.max_cuts is not None and self.max_cuts < 3:
            raise ProblemError(f"max_cuts: must be ≥ 3 (two oldest aggregated, one new), got {self.max_cuts}")
        if self.drop_after is not None and self.drop_after < 1:
            raise ProblemError(f"drop_after: must be ≥ 1, got {self.drop_after}")
        if self.inner_tol is not None and not self.inner_tol > 0:
            raise ProblemError(f"inner_tol: must be > 0, got {self.inner_tol}")
        if not self.tol_abs >= 0:
            raise ProblemError(f"tol_abs: must be ≥ 0, got {self.tol_abs}")

    def accepts(self, qp: QP) -> str | None:
        """None for the fixed-threshold dual with Q = HHᵀ, else why not (the box and d are checked
        in ``init``, on the rows where they live).

        Parameters
        ----------
        qp : QP
            The problem.

        Returns
        -------
        str or None
        """
        if Capability.LOWRANK not in qp.Q.capabilities:
            return ("cutting planes need Q = HHᵀ given as a qpcore.backends.lowrank.DiagPlusLowRankQ "
                    "(e.g. qpcore_formulations.risk.hinge_svm); this operator has no low-rank factor")
        if qp.m:
            return (f"cutting planes solve the fixed-threshold dual (no equality rows), got {qp.m}; "
                    "put the bias in as a constant feature (hinge_svm(bias=1))")
        # d and bounds held in this process are checked here; on a cluster, by init's one reduction
        d = cast(LowRankRows, qp.Q).d
        if isinstance(d, (float, int, np.ndarray)) and bool(np.any(np.asarray(d) != 0)):
            return ("cutting planes need Q = HHᵀ with no diagonal part (d = 0): the hinge loss; "
                    "for the squared hinge (d > 0) use ASVM")
        if isinstance(qp.lb, np.ndarray) and isinstance(qp.ub, np.ndarray):
            if not (np.all(qp.lb == 0.0) and np.all(np.isfinite(qp.ub)) and np.all(qp.ub >= 0.0)):
                return "cutting planes need 0 ≤ α ≤ C with finite C ≥ 0 (the hinge risk's weights); use GPCG"
        return None

    # ------------------------------------------------------------------ Strategy
    def init(self, qp: QP, x0: Any, tol: float) -> State:
        """Check the problem, evaluate the start (w = Hᵀx0 for x0 clipped to the box, or 0) and make
        its cut: one pass (two more for a start x0).

        Parameters
        ----------
        qp : QP
            The fixed-threshold dual with Q = HHᵀ (d = 0), 0 ≤ α ≤ u, no equality.
        x0 : ndarray or ChunkedVector, optional
            A dual point (of the problem's backend); the run starts from its primal point w = Hᵀx0.
        tol : float
            TolRel.

        Returns
        -------
        State

        Raises
        ------
        ProblemError
            When the problem is not of this form.
        ClusterError
            On a cluster, when it loses data it cannot recompute.
        """
        self.check(qp)
        Q = cast(LowRankRows, qp.Q)
        rows = Q.row_space()
        # d and a box held in this process were checked by ``accepts`` (through ``check``) just now;
        # the rest (on a cluster) here, the box by one reduction
        if not isinstance(Q.d, (float, int, np.ndarray)) and np.any(np.asarray(Q.d) != 0):
            raise ProblemError("cutting planes need Q = HHᵀ with no diagonal part (d = 0): the hinge loss; "
                               "for the squared hinge (d > 0) use ASVM")
        lb, ub = rows.scalar_or_vector(qp.lb), rows.scalar_or_vector(qp.ub)
        if not (isinstance(qp.lb, np.ndarray) and isinstance(qp.ub, np.ndarray)):
            if isinstance(lb, float) and isinstance(ub, float):
                box = k_box(np.asarray(lb), np.asarray(ub))
            else:
                box = rows.reduce(k_box, lb, ub, ops=("max", "all", "min"), name="qpcore-cp-box")
            if not (box[0] == 0 and box[1] and box[2] >= 0):
                raise ProblemError("cutting planes need 0 ≤ α ≤ C with finite C ≥ 0 (the hinge risk's weights)")
        k = int(Q.k)
        w = np.zeros(k)
        reductions = rows.counters["reductions"]
        try:
            with rows.client_context():
                rho, u = rows.scalar_or_vector(-qp.c), ub
                start = False
                read = 0
                if x0 is not None:
                    wx, xmax = rows.reduce(k_start, rows.blocks, rows.adopt(x0), lb, u, ops=("sum", "max"),
                                           name="qpcore-cp-start")
                    read += qp.n
                    if xmax > 0:
                        w, start = np.asarray(wx, dtype=np.float64), True
                pairs, (risk, mx, a, b, point_read) = rows.map_reduce(k_point, rows.blocks, w if start else None, rho, u, True,
                                                             ops=POINT_OPS, name="qpcore-cp-init")
                kept = rows.kept(pairs, 0)
                cs = CutState(cuts=Cuts.empty(k, functools.partial(_mix, rows)), w_b=w,
                              m_b=_Margins(kept, 0.0, float(mx)), F_b=0.5 * float(w @ w) + float(risk),
                              w_t=w.copy(), m_t=None, dual=0.0, rho=rho, u=u, tol=tol, rows=rows)
                # the per-variable bound status would be m long: the cuts' members stay with the rows
                state = State(x=rows.full(0.0), g=qp.c, status=np.zeros(0, dtype=np.int8), work=cs)
                state.primal = w.copy()
                state.counters.update(passes=2 if start else 0, cuts=0, cuts_added=0, inner_iterations=0,
                                      refreshes=0, touched_eval=0, touched_search=0, aggregated=0, dropped=0,
                                      round_trips=0, window_rounds=0, rows_read=read + int(point_read))
                self._start(qp, state)
                state.counters["passes"] += 1
                cs.cuts.add(np.asarray(a, dtype=np.float64), float(b), rows.kept(rows.map(k_bits, kept,
                                                                                          name="qpcore-bits")))
                state.counters["cuts_added"] += 1
                self._record(state, qp.n, 0)
                self._judge(qp, state)
            state.counters["round_trips"] = rows.counters["reductions"] - reductions
        except ClusterError as e:
            raise _lost(e, None, w) from None
        return state

    def step(self, qp: QP, state: State) -> None:
        """One iteration: the reduced problem, one evaluation, the new point and one new cut; then
        the stopping test (F(w_b) − D ≤ tol·|F(w_b)| or ≤ tol_abs sets ``state.done``,
        F(w_b) ≤ target ends the run as ``target``).

        On a cluster a :class:`qpcore.backends.rowspace.ClusterError` carries ``primal = w_b``.
        """
        _counted(state, lambda: self._iterate(qp, state))

    def _iterate(self, qp: QP, state: State) -> None:
        cs = state.work(CutState)
        before = (cs.F_b, cs.dual)
        self._solve_reduced(state)
        self._advance(qp, state)
        self._manage_cuts(state)
        state.counters["cuts"] = cs.cuts.n
        state.primal = cs.w_b
        # neither bound moving for many iterations (an inner solver that fails, or rounding at
        # the accuracy limit) ends the run honestly instead of spinning to max_iter
        cs.stale = cs.stale + 1 if (cs.F_b >= before[0] and cs.dual <= before[1]) else 0
        if cs.stale >= 50:
            state.stop = Status.STALLED
        self._judge(qp, state)

    def _met(self, cs: CutState) -> tuple[bool, bool]:
        """(the gap meets tol or tol_abs, F(w_b) reached the target)."""
        gap = cs.F_b - cs.dual
        met = gap <= cs.tol * abs(cs.F_b) or gap <= self.tol_abs
        return met, self.target is not None and cs.F_b <= self.target

    def _judge(self, qp: QP, state: State) -> None:
        """Set ``state.done`` when the gap meets tol, ``state.stop = target`` at the target."""
        met, hit = self._met(state.work(CutState))
        if met:
            state.done = True
        elif hit:
            state.stop = Status.TARGET

    def finish(self, qp: QP, state: State) -> None:
        """Write the dual point α_i = u_i Σ_t β_t [i ∈ V_t] (clipped to the box) into ``state.x``,
        block by block where the rows are, g = m_t + c when w_t's margins are known, and
        ``state.primal = w_b``."""
        cs = state.work(CutState)
        rows = cs.rows
        cuts = cs.cuts
        used = np.flatnonzero(cuts.beta > 0)
        if used.size:
            members = [cuts.members[t] for t in used]
            state.x = rows.vector(rows.map(k_alpha, cs.u, rows.sizes(), cuts.beta[used].copy(), *members,
                                           name="qpcore-alpha"))
        else:
            state.x = rows.full(0.0)
        if cs.m_t is not None:
            state.g = rows.vector(rows.map(k_grad, cs.m_t.src, rows.scalar_or_vector(qp.c), name="qpcore-grad"))
        state.primal = cs.w_b

    def sync_gradient(self, qp: QP, state: State) -> None:
        """A progress snapshot sees the current dual point (one accumulation over the cuts)."""
        self.finish(qp, state)

    # ------------------------------------------------------------------ pieces
    def _start(self, qp: QP, state: State) -> None:
        """Hook for variants that keep more state (the active set)."""

    def _record(self, state: State, touched_eval: int, touched_search: int) -> None:
        """The counters after an iteration, and what its evaluation and search touched."""
        cs = state.work(CutState)
        state.counters["touched_eval"] += touched_eval
        state.counters["touched_search"] += touched_search
        state.counters["cuts"] = cs.cuts.n
        cs._touched = (touched_eval, touched_search)

    def _solve_reduced(self, state: State) -> None:
        """The reduced problem from the last β: by the kept factor (:class:`qpcore_strategies.cut_qp.CutQP`),
        or by ``inner`` through :func:`qpcore.core.solve.iterate`; then w_t and D from β."""
        cs = state.work(CutState)
        cuts = cs.cuts
        k = cuts.n
        scale = max(1.0, abs(cs.F_b))
        # 1 % of the outer target, or of the current gap while it is larger: an early reduced
        # problem need not be solved finer than the model it comes from is good (objective units)
        tol = self.inner_tol if self.inner_tol is not None else max(1e-13 * scale, 0.01 * cs.tol * scale,
                                                                     0.01 * (cs.F_b - cs.dual))
        if self.inner is None:
            if cs.reduced is None:
                cs.reduced = CutQP()
            red = cs.reduced
            before = red.counters["pivots"], red.counters["cut_short"]
            beta = red.solve(cuts.G[:k, :k], cuts.b[:k], cuts.ids[:k], cuts.beta, tol)
            state.counters["inner_iterations"] += red.counters["pivots"] - before[0]
            if red.counters["cut_short"] > before[1]:
                state.counters["inner_cut_short"] = state.counters.get("inner_cut_short", 0) + 1
        else:
            beta = self._inner_reduced(state, tol)
        cuts.beta = beta
        cuts.slack = max(0.0, 1.0 - float(beta.sum()))
        # one product over the contiguous rows (a gather of the used rows copies them first)
        cs.w_t = beta @ cuts.A[:k]
        # D(α) of the dual point these weights stand for (exact, whatever the inner accuracy)
        cs.dual = float(beta @ cuts.b[:k]) - 0.5 * float(cs.w_t @ cs.w_t)

    def _inner_reduced(self, state: State, tol: float) -> FloatArray:
        """β from the strategy ``inner`` on the reduced problem as a qpcore QP (scaled, see
        :meth:`qpcore_strategies.cut_store.Cuts.reduced_qp`)."""
        assert self.inner is not None
        cuts = state.work(CutState).cuts
        rqp, gamma = cuts.reduced_qp()
        x0 = np.append(cuts.beta, cuts.slack) * gamma
        # the slack absorbs rounding so the warm start is feasible
        x0[-1] = max(0.0, gamma - float(x0[:-1].sum()))
        # an explicit inner_tol gets a hundred times the step budget (a first-order inner method
        # on these rank-deficient problems can need tens of thousands of steps); a solve cut
        # short still gives a valid dual point and is counted in inner_cut_short
        x = _inner_solve(self.inner, rqp, x0, tol / gamma, state,
                         max_steps=None if self.inner_tol is None else 10_000 * (rqp.n + 10))
        beta: FloatArray = np.maximum(x[:-1], 0.0) / gamma
        tot = float(beta.sum())
        if tot > 1.0:
            beta /= tot
        return beta

    def _advance(self, qp: QP, state: State) -> None:
        raise NotImplementedError

    def _manage_cuts(self, state: State) -> None:
        cuts = state.work(CutState).cuts
        newest = cuts.n - 1
        # idle + 1, reset where β > 0 and for the newest cut (in place: no mask or where over the cuts)
        idle = cuts.idle[:cuts.n]
        idle += 1
        idle[:newest][cuts.beta[:newest] > 0] = 0
        idle[newest] = 0
        if self.drop_after is not None:
            keep = cuts.idle[:cuts.n] < self.drop_after
            keep[newest] = True
            if not keep.all():
                state.counters["dropped"] += int((~keep).sum())
                cuts.remove(keep)
        if self.max_cuts is not None:
            while cuts.n > self.max_cuts:
                cuts.aggregate_oldest()
                state.counters["aggregated"] += 1


@attrs.frozen
class BMRM(_CuttingPlane):
    """Plain cutting planes (BMRM, SVMperf; libocas's method 0): the cut at the reduced solution.

    Parameters
    ----------
    inner : Strategy, optional
        Solves the reduced QP: None (default) the warm-started active set that keeps its factor
        across iterations (:class:`qpcore_strategies.cut_qp.CutQP`), else any qpcore strategy
        (DenseActiveSet, SMO, GPCG) on it as a QP, through :func:`qpcore.core.solve.iterate`.
    inner_tol : float, optional
        Its tolerance in objective units (default: 1 % of the outer absolute target tol·|F|, or of
        the gap while larger; a strategy ``inner`` gets at most 100·(k + 10) steps, or
        10,000·(k + 10) with an explicit inner_tol).
    max_cuts : int, optional
        At most this many cuts: the two oldest are aggregated (their β-weighted mean).
    drop_after : int, optional
        Remove a cut whose weight has been 0 for this many iterations.
    tol_abs : float
        Stop when F(w_b) − D ≤ tol_abs (libocas's TolAbs).
    target : float, optional
        Stop with status ``target`` once F(w_b) ≤ target (libocas's QPValue).

    Notes
    -----
    ``Result.stats["rows_read"]`` counts the rows every product over the data read: m for a full
    pass (the margins, a recomputation after a long step), the violators alone for a cut whose
    product reads only their rows. ``inner_iterations`` counts the reduced solver's pivots (or the
    inner strategy's steps).
    """

    def _advance(self, qp: QP, state: State) -> None:
        """The evaluation of w_t and the cut there: one pass."""
        cs = state.work(CutState)
        rows = cs.rows
        t = time.perf_counter()
        pairs, (risk, mx, a, b, read) = rows.map_reduce(k_point, rows.blocks, cs.w_t, cs.rho, cs.u, True,
                                                           ops=POINT_OPS, name="qpcore-bmrm")
        state.counters["rows_read"] += int(read)
        F_t = 0.5 * float(cs.w_t @ cs.w_t) + float(risk)
        cs.eval_seconds += time.perf_counter() - t
        state.counters["passes"] += 1
        kept = rows.kept(pairs, 0)
        cs.m_t = _Margins(kept, 0.0, float(mx))
        if F_t < cs.F_b:
            cs.w_b, cs.m_b, cs.F_b = cs.w_t.copy(), cs.m_t, F_t
        state.counters["passes"] += 1
        cs.cuts.add(np.asarray(a, dtype=np.float64), float(b), rows.kept(rows.map(k_bits, kept, name="qpcore-bits")))
        state.counters["cuts_added"] += 1
        self._record(state, qp.n, 0)


@attrs.frozen
class OCAS(_CuttingPlane):
    """The optimized cutting plane algorithm (Franc and Sonnenburg 2008/2009; libocas's method 1).

    Keeps the best point w_b; each iteration evaluates the reduced solution w_t (one pass),
    moves w_b to the exact minimizer of F on the ray w_b → w_t (the breakpoints of the risk,
    :mod:`qpcore_strategies.line_search`), and cuts at w_c = (1 − μ)w_b + μ w_t (one reduction).

    Parameters
    ----------
    mu : float
        In (0, 1]: where between w_b and w_t the cut is made (libocas: 0.1; the seed paper 0.05).
    inner, inner_tol, max_cuts, drop_after, tol_abs, target
        As for :class:`BMRM`.
    """

    mu: float = 0.1

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if not 0 < self.mu <= 1:
            raise ProblemError(f"mu: must be in (0, 1], got {self.mu}")

    def _advance(self, qp: QP, state: State) -> None:
        """The probe (one pass), the exact line search, the move and the cut (one reduction)."""
        cs = state.work(CutState)
        rows = cs.rows
        t0 = time.perf_counter()
        d = cs.w_t - cs.w_b
        dd = float(d @ d)
        pairs, summary = rows.map_reduce(k_probe, rows.blocks, cs.m_b.src, cs.m_b.t, cs.rho, cs.u, cs.w_t, LIST_CAP,
                                         ops=SUMMARY_OPS, name="qpcore-ocas-probe")
        t1 = time.perf_counter()
        state.counters["passes"] += 1
        state.counters["rows_read"] += qp.n
        probe = rows.kept(pairs, 0)
        cs.m_t = _Margins(probe)
        if _too_small(cs.w_b, dd):
            step = 0.0               # w_t = w_b to rounding: δ is cancellation noise, no direction
        else:
            search = Search(rows, probe, None, cs.rho, cs.u)
            step = search.run(summary, float(cs.w_b @ d), dd)
            state.counters["window_rounds"] += search.rounds
        w_b = cs.w_b + step * d
        fresh = None
        if step > LONG:
            # a long step amplifies the rounding of δ: the margins of the new point afresh
            fresh = rows.kept(rows.map(k_matvec, rows.blocks, w_b, name="qpcore-ocas-fresh"))
            state.counters["passes"] += 1
            state.counters["rows_read"] += qp.n
        # one pass: the cut's member bits stay with their rows, the rest is reduced
        moved, (risk, _, a, b, read) = rows.map_reduce(k_move, rows.blocks, probe, fresh, step, cs.rho, cs.u,
                                                               self.mu, ops=MOVE_OPS, name="qpcore-ocas-move")
        bits = rows.kept(moved, 0)
        cs.w_b = w_b
        cs.m_b = _Margins(rows.kept(moved, 1))
        cs.F_b = 0.5 * float(w_b @ w_b) + float(risk)
        state.counters["rows_read"] += int(read)
        t2 = time.perf_counter()
        cs.eval_seconds += t1 - t0
        cs.search_seconds += t2 - t1
        state.counters["passes"] += 1
        cs.cuts.add(np.asarray(a, dtype=np.float64), float(b), bits)
        state.counters["cuts_added"] += 1
        self._record(state, qp.n, qp.n)
