"""Osuna decomposition and chunking: working sets chosen by a rule, each subproblem solved by any strategy.

Osuna, Freund & Girosi (1997) fix all variables outside a working set B and solve the QP in B;
SMO is the q = 2 extreme, Vapnik's chunking grows B to all support vectors plus the worst
violators. A round of :class:`Decomposition`: the rule picks B from a :class:`qpcore.core.rules.RuleView`
of the unshrunk variables; the rows Q[B, :] come from a row buffer sized by the operator's cache
budget (rows of earlier sets are reused, the new ones computed in blocks); the subproblem over B
(Q_BB, c_B = g_B − Q_BB x_B, and the equality rows of the groups that B touches, their right-hand
sides as they stand) is a :class:`qpcore.QP` solved by the inner strategy through
:func:`qpcore.core.solve.iterate`, to a tolerance tied to B's own gap; then every gradient entry is
updated by one block product ``g += Q[B, :]ᵀ Δx_B``.

The problem shape: finite bounds, and no equality or disjoint equality groups (each variable in
at most one row, any nonzero coefficients; the C-SVC dual's ``yᵀx = 0`` is one group, and a
variable in no row moves alone). General rows are refused, naming
:class:`~qpcore_strategies.active_set.DenseActiveSet`. Without an ``inner`` strategy, one that takes
every subproblem is chosen from the problem: SMO without shrinking when there is no equality or
every variable sits in a group with coefficient ±1, else the dense active set.

Working-set rules have ``select(view, tol)``: the set rules of :mod:`qpcore_strategies.rules.sets`,
:class:`~qpcore_strategies.rules.sets.SteepestFeasible` (SVMlight's q/2-top/q/2-bottom rule, within
each group, reusing part of the previous set), :class:`~qpcore_strategies.rules.sets.Chunking` and
:class:`~qpcore_strategies.rules.sets.OsunaSwap`, and SMO's pair rules taken as sets of size 2; a
user's rule plugs in the same way. Shrinking (LIBSVM's test, each variable against its own group) narrows the buffered
rows to the active columns; convergence is claimed only after the gradient has been recomputed
exactly over all variables where shrinking or float32 rows could hide a violation.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import cross_block, principal_block, row_budget
from qpcore.backends.operators import DenseQ
from qpcore.linalg.memory import small_pages_zeros
from qpcore.core.problem import QP, ProblemError
from qpcore.core.optimality import measure, scores, scores_of
from qpcore.linalg.projection import feasible_start
from qpcore.core.rules import RuleView, check_rule
from qpcore.core.solve import iterate
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.rules.names import make_rule
from qpcore_strategies.rules.pair import PlattHeuristic
# the set rules moved to qpcore_strategies.rules; their old import path stays (explicit re-exports)
from qpcore_strategies.rules.sets import Chunking as Chunking
from qpcore_strategies.rules.sets import OsunaSwap as OsunaSwap
from qpcore_strategies.rules.sets import SteepestFeasible as SteepestFeasible
from qpcore_strategies.rules.sets import group_ends as group_ends
from qpcore_strategies.rules.sets import violators as violators
from qpcore_strategies.rules.stopping import certified, rule_gave_up, run_notes
from qpcore_strategies.smo import SMO

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

#: bytes of the run's temporaries (row chunks, the gradient update, the exact refresh and the
#: final certificate), charged to the row buffer's budget: about 90 MB measured on ijcnn1, but
#: with 128 MB Adult's 1-thread run still peaked 28 MB above LIBSVM's at the same cache budget
_WORKING_BYTES = 160 << 20

__all__ = ["Decomposition", "DecompositionWork", "make_set_rule"]


@attrs.define(slots=True, eq=False)
class DecompositionWork(Work):
    """Decomposition's work state (``state.work(DecompositionWork)``): the previous working set,
    the stall count, the row buffer."""

    tol: float
    view: RuleView
    inner: Strategy               # the subproblem strategy: the configured one or the default
    previous: IndexArray = attrs.field(factory=lambda: np.zeros(0, dtype=np.intp))
    rounds: int = 0
    since_best: int = 0
    row_eps: float = 0.0          # relative rounding of a stored row entry (float32 caches)
    qmax: float = 0.0
    x_fresh: FloatArray = attrs.field(factory=lambda: np.zeros(0))  # where g was last exact
    g_fresh: FloatArray = attrs.field(factory=lambda: np.zeros(0))  # that exact gradient (float64)
    f: float = 0.0                # the objective, tracked by exact per-round decreases
    noise: float = 0.0            # bound on the float32 summation error in g since the last refresh
    # shrinking: the active variables (sorted) and their mask, None when nothing is shrunk
    active: IndexArray | None = None
    mask: BoolArray | None = None
    # the rows of recent working sets over the current columns, one slot per row: W[slot] is
    # row slot_var[slot] (−1: empty); slot_of[i] is i's slot or −1. The buffer is reused every
    # round, since fresh q×n arrays cost more in page faults than in arithmetic. W is always
    # C-contiguous, so rows in consecutive slots are computed straight into it and read as views.
    W: NDArray[Any] | None = None
    base: NDArray[Any] | None = None   # W's flat storage; W is its first cap·ncols items
    slot_var: IndexArray = attrs.field(factory=lambda: np.zeros(0, dtype=np.intp))
    slot_of: IndexArray = attrs.field(factory=lambda: np.zeros(0, dtype=np.intp))
    slot_used: NDArray[np.int64] = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64))
    note: str | None = None       # what happened when the rule gave up early (stats["rule_gave_up"])
    block_level: float = float("inf")   # the gap at which the opt-in block finish is tried next
    block_left: int = 0           # block finish attempts left
    block: Any = None             # its last result (BlockFinishResult)

    def release(self) -> None:
        """Decomposition has no ``resume``: a finished run keeps neither the row buffer nor the view."""
        return None


def _runs(sorted_idx: IndexArray) -> list[tuple[int, int]]:
    """Positions [a, b) of the maximal runs of consecutive integers in a sorted index array."""
    if sorted_idx.size == 0:
        return []
    cut = np.flatnonzero(np.diff(sorted_idx) != 1) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [sorted_idx.size]])
    return list(zip(starts.tolist(), ends.tolist()))


def _sum16(w: FloatArray, rows: NDArray[Any]) -> FloatArray:
    """w @ rows in float64; float32 rows are summed 16 at a time in float32 (one batched SGEMM,
    zero rows padding the last group) and the partial sums added in float64."""
    if rows.dtype == np.float64:
        out: FloatArray = w @ rows
        return out
    pad = (-w.size) % 16
    w32 = np.concatenate([w, np.zeros(pad)]).astype(np.float32)
    if pad:
        rows = np.concatenate([rows, np.zeros((pad, rows.shape[1]), dtype=rows.dtype)])
    partial = np.matmul(w32.reshape(-1, 1, 16), rows.reshape(-1, 16, rows.shape[1]))
    total: FloatArray = partial.sum(axis=0, dtype=np.float64)[0]
    return total


def _row_sum(W: NDArray[Any], slots: IndexArray, w: FloatArray) -> FloatArray:
    """Σ_k w_k W[slots_k], float64 (float32 rows by :func:`_sum16`).

    Rows in runs of consecutive slots are read in place (views, whole groups of 16); the rest
    are gathered a chunk at a time, so temporaries stay small and are recycled.
    """
    ncols = W.shape[1]
    delta = np.zeros(ncols)
    order = np.argsort(slots, kind="stable")
    sl, w = slots[order], w[order]
    group = 1 if W.dtype == np.float64 else 16
    chunk = max(16, ((8 << 20) // max(1, ncols * W.itemsize)) // 16 * 16)
    rest: list[IndexArray] = []
    for a, b in _runs(sl):
        full = a + (b - a) // group * group
        for k in range(a, full, chunk):
            e = min(full, k + chunk)
            s0 = int(sl[k])
            delta += _sum16(w[k:e], W[s0:s0 + e - k])
        if full < b:
            rest.append(np.arange(full, b))
    if rest:
        r = np.concatenate(rest)
        for k in range(0, r.size, chunk):
            part = r[k:k + chunk]
            delta += _sum16(w[part], W[sl[part]])
    return delta


def _whole_groups(B: IndexArray, group: IndexArray) -> IndexArray:
    """B without the members of groups it holds only one of (its row would pin that variable).

    B itself when nothing else would be left (the round then moves nothing and counts as a stall).
    """
    gB = group[B]
    inside = gB >= 0
    counts = np.bincount(gB[inside])
    lone = np.zeros(B.size, dtype=bool)
    lone[inside] = counts[gB[inside]] < 2
    if not lone.any() or lone.all():
        return B
    out: IndexArray = B[~lone]
    return out


def _subproblem_rows(qp: QP, B: IndexArray, xB: FloatArray
                     ) -> tuple[FloatArray | None, FloatArray | None, FloatArray | None]:
    """The subproblem's equality over B: the rows of the groups B touches, and each member's coefficient.

    Returns ``(A_B, b_B, a_B)``: A_B has one row per group present in B (None when B holds only
    variables in no row, or there is no equality); the right-hand side is ``A_B x_B`` as it
    stands, so the rows hold exactly; ``a_B`` is the coefficient of each member (None without
    an equality), for the subproblem's scores.
    """
    if not qp.m:
        return None, None, None
    eq = qp.equality
    aB = eq.coef[B]
    gB = eq.group[B]
    inside = np.flatnonzero(gB >= 0)
    rows = np.unique(gB[inside])
    if rows.size == 0:
        return None, None, aB
    A = np.zeros((rows.size, B.size))
    A[np.searchsorted(rows, gB[inside]), inside] = aB[inside]
    b = A @ xB
    return A, b, aB


def _work(state: State) -> DecompositionWork:
    return state.work(DecompositionWork)


def make_set_rule(rule: Any) -> Any:
    """A rule from its name in :data:`qpcore_strategies.rules.RULES` or the rule itself (checked for
    its kind by ``Decomposition``).

    Set rules by name: ``"svmlight"`` (:class:`~qpcore_strategies.rules.sets.SteepestFeasible`),
    ``"chunking"``, ``"osuna"`` (:class:`~qpcore_strategies.rules.sets.OsunaSwap`), each with its
    defaults; pair rules by SMO's names (``"wss2"``, ``"mvp"``, ``"platt"``: the same rule objects
    as ``SMO(rule=...)``, taken as sets of size 2).
    """
    if not isinstance(rule, str):
        return rule
    return make_rule(rule, ("set", "pair"))


def _default_inner(qp: QP) -> Strategy:
    """The subproblem strategy when none is given: one that takes every subproblem of ``qp``.

    SMO (without shrinking: subproblems are small) for the SVM form, no equality or ±1 entries
    only; otherwise the dense active set, which takes any row (mixed signs, scales, zeros). Chosen
    from the problem at init, so a run never fails later inside a strategy the user did not choose.
    """
    eq = qp.equality
    if eq.kind == "none" or (eq.unit and eq.singles.size == 0):
        return SMO(shrinking=False)
    return DenseActiveSet(max_n=max(DenseActiveSet().max_n, qp.n))   # any working set B of qp fits


@attrs.frozen
class Decomposition(Strategy):
    """Decomposition over working sets chosen by a rule, subproblems solved by any strategy.

    Each step: B = rule.select(...); the subproblem over B with the rest fixed (Q_BB from one
    block of rows, c_B = g_B − Q_BB x_B, the rows of the equality groups B touches with
    right-hand sides A_B x_B as they stand) is solved by ``inner`` to a local tolerance tied to
    the global gap; then ``g += Q[B, :]ᵀ Δx_B``. Equality groups (disjoint rows, any nonzero
    coefficients; ν-SVC has two) are handled group by group: the rules rank each variable
    against its own group, a group with a single member in B is dropped from B (its row would
    pin it), and shrinking tests each variable against its group's extremes. General rows (a
    variable in several) are refused: DenseActiveSet takes them.

    Rows of the previous working set are kept and reused for the part of B that stays
    (ThunderSVM); only the new part is fetched, as one block.

    Parameters
    ----------
    rule : SetRule, PairRule or str
        Picks B (default :class:`~qpcore_strategies.rules.sets.SteepestFeasible` with q = 64) from a
        :class:`qpcore.core.rules.RuleView` restricted to the unshrunk variables; a pair rule works
        as a set rule of size 2. Names as :func:`make_set_rule` reads them (``"mvp"`` is the
        rule of ``SMO(rule="mvp")``). When the rule returns None and the point is not optimal to
        tol over every variable (after shrinking is undone and the gradient recomputed; by its
        certificate), the run ends ``stalled`` there, with a
        :class:`~qpcore_strategies.rules.stopping.RuleWarning` and ``Result.stats["rule_gave_up"]``:
        decomposition has no fallback.
    inner : Strategy, optional
        Solves the subproblems (GPCG and others work too). None (default): chosen at init from
        the problem, SMO without shrinking when the equality has ±1 entries only (or there is
        none), else :class:`~qpcore_strategies.active_set.DenseActiveSet`.
    inner_fraction : float
        The subproblem tolerance: max(inner_fraction × gap_B, min(tol, gap_B)/2), gap_B being
        the working set's own gap (the global gap when the maximal violating pair is in B), so
        early subproblems are solved loosely, the last ones tightly, and any violating set moves.
    stall_rounds : int
        Consecutive rounds whose objective decrease (computed from the step, −g_Bᵀdx − ½dxᵀQ_BB dx)
        is within that formula's own rounding, or whose subproblem did not move, before the run
        ends as ``stalled``. The gap is not used: on
        real data it plateaus for hundreds of rounds while the objective still falls.
    shrinking : bool
        Every ``shrink_every`` rounds, drop from the active set the variables at a bound that
        cannot be part of a violating pair (LIBSVM's test); rows are then fetched and the
        gradient updated over the active columns only. When the active set is optimal, the
        full gradient is recomputed exactly (one product) and the run goes on over all variables
        if anything outside still violates.
    shrink_every : int
        Rounds between shrinking tests.
    shrink_ratio : float
        The active set shrinks only when the test would cut it to at most this fraction, since
        each shrink compacts the buffered rows' columns.
    keep_rounds : int
        At a shrink, buffered rows unused for more rounds than this are dropped, not compacted.
    seed : int
        Seed of the rule's per-run generator (``view.rng``).
    finish : BlockFinish, optional
        An opt-in finish stage (:class:`qpcore_strategies.block_finish.BlockFinish`): once the
        gap is at its ``start_gap``, the gradient is made exact and the block active-set finish
        runs; a certified point ends the run, otherwise the rounds go on from the same point
        (``Result.stats["block_finish"]`` says why). None (the default): decomposition alone.
    """

    rule: Any = attrs.field(factory=SteepestFeasible, converter=make_set_rule)
    inner: Strategy | None = None
    inner_fraction: float = 0.1
    stall_rounds: int = 50
    shrinking: bool = True
    shrink_every: int = 1
    shrink_ratio: float = 0.7
    keep_rounds: int = 4
    seed: int = 0
    finish_stage: Any = attrs.field(default=None, alias="finish")

    def __attrs_post_init__(self) -> None:
        check_rule(self.rule, ("set", "pair"), "Decomposition")

    def report(self, state: State) -> dict[str, Any]:
        """``rule_gave_up``: what happened when the rule returned None with the gap above tol (only then).

        Parameters
        ----------
        state : State
            The run's final state.

        Returns
        -------
        dict
        """
        work = state.work_or_none(DecompositionWork)
        return {} if work is None else run_notes(work.note, work.block)

    def accepts(self, qp: QP) -> str | None:
        """None for decomposition's shape, else the reason and the strategy that takes the problem.

        Its shape: finite bounds, and no equality or disjoint equality groups (each variable in at
        most one row, any nonzero coefficients; variables in no row move alone). General rows
        are refused: a working set would need at least m + 1 free variables whose reduced
        gradient (with multipliers of all m rows) drives the choice, and the working-set rules
        score pairs within a group instead.
        """
        if not (np.isfinite(qp.lb).all() and np.isfinite(qp.ub).all()):
            return "lb/ub: decomposition needs finite bounds; GPCG or DenseActiveSet take infinite ones"
        eq = qp.equality
        if eq.kind == "general":
            return (f"A: decomposition picks working sets within disjoint equality groups, but this problem has "
                    f"{eq.describe()}; use DenseActiveSet or GPCG")
        return None

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Check the problem shape; start at x0 (or 0, which is feasible for the SVM dual)."""
        self.check(qp)
        # from 0 (feasible for the SVM dual) or x0, made feasible by the one shared projection
        start = np.zeros(qp.n) if x0 is None else np.asarray(x0, dtype=np.float64)
        x = feasible_start(qp, start)[0]
        g = qp.gradient(x)
        state = State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub))
        work = DecompositionWork(tol=tol, view=RuleView(qp, state, seed=self.seed),
                                 inner=self.inner if self.inner is not None else _default_inner(qp))
        state.set_work(work)
        work.row_eps = qp.Q.row_eps
        work.qmax = float(np.abs(qp.Q.diag()).max(initial=0.0))
        work.x_fresh = x.copy()
        work.g_fresh = g.copy()
        work.f = 0.5 * float(x @ (g + qp.c))
        state.exact = (work.x_fresh, work.g_fresh)
        state.counters.update(rounds=0, inner_iterations=0, working_set_total=0, stalled_subproblems=0,
                              gradient_refreshes=0, rows_reused=0, rows_fetched=0, shrink_events=0,
                              unshrinks=0, active_min=qp.n)
        if self.finish_stage is not None:
            work.block_level = max(float(self.finish_stage.start_gap), tol)
            work.block_left = int(self.finish_stage.tries)
        return state

    # -- shrinking -------------------------------------------------------------------------

    def _refresh(self, qp: QP, state: State) -> None:
        """g = Q x + c exactly, in float64, over all variables (ends shrinking and float32 drift).

        Computed as the last exact gradient plus Q (x − x_fresh): a product over the variables
        that moved since, which near the end are a few working sets, not every support vector
        (a full product is the single largest cost of a kernel run).
        """
        work = _work(state)
        d = state.x - work.x_fresh
        moved = int(np.count_nonzero(d))
        if work.g_fresh.size == qp.n and moved < np.count_nonzero(state.x):
            state.g = work.g_fresh + qp.Q.matvec(d)
        else:
            state.g = qp.gradient(state.x)
        work.g_fresh = state.g.copy()
        work.x_fresh = state.x.copy()
        work.noise = 0.0
        work.f = 0.5 * float(state.x @ (state.g + qp.c))
        state.exact = (work.x_fresh, work.g_fresh)
        if work.active is not None:
            work.active = work.mask = None
            work.view.restrict(None)
            work.W = None             # its columns were the active ones only
            state.counters["unshrinks"] += 1
        state.counters["gradient_refreshes"] += 1

    def _shrink(self, qp: QP, state: State) -> None:
        """Drop bound variables that cannot join a violating pair (LIBSVM's be_shrunk test)."""
        work = _work(state)
        s = scores_of(qp, state.x, state.g)     # shrunk entries of g are stale: masked below
        v, up, low = s.v, s.up, s.low
        if work.mask is not None:
            up, low = up & work.mask, low & work.mask
        single = s.single if s.single is not None else np.zeros(qp.n, dtype=bool)
        out = np.zeros(qp.n, dtype=bool)
        if s.paired:
            pu, pl = up & ~single, low & ~single
            if not pu.any() or not pl.any():
                return
            m_up: float | FloatArray
            m_low: float | FloatArray
            if s.group is None:
                m_up, m_low = float(v[pu].max()), float(v[pl].min())
            else:   # LIBSVM's Solver_NU: each variable against its own group's extremes
                m_up, m_low = group_ends(v, pu, pl, s.group)
            # an up-only variable is useful only as the pair's upper end (needs v > m_low), and
            # the other way round; a variable that can move neither way is never useful
            out |= ~single & ((pu & ~pl & (v < m_low)) | (pl & ~pu & (v > m_up)) | (~pu & ~pl))
        # single variables: at a bound with the gradient pushing into it (or fixed)
        out |= single & ~((up & (v > 0)) | (low & (v < 0))) & ((state.x <= qp.lb) | (state.x >= qp.ub))
        keep = ~out if work.mask is None else work.mask & ~out
        keep[work.previous] = True       # the last working set stays (its rows are reused)
        n_old = qp.n if work.active is None else work.active.size
        n_new = int(np.count_nonzero(keep))
        if n_new > self.shrink_ratio * n_old or n_new < 2:
            return   # too little gained for compacting the buffered rows
        new_active = np.flatnonzero(keep)
        old_cols = np.arange(qp.n) if work.active is None else work.active
        pos = np.searchsorted(old_cols, new_active)
        if work.W is not None and work.base is not None:
            # rows of shrunk variables are dropped (they cannot be asked for while shrunk); the
            # others' columns are compacted in place into the narrower row layout, a chunk of
            # rows at a time in increasing slot order: row r moves from offset r·n_old down to
            # r·n_new, so a chunk's writes reach only rows already moved or gathered
            W = work.W
            # rows unused for a few rounds are dropped too: compacting them costs more than
            # recomputing the few that come back
            gone = (work.slot_var >= 0) & (~keep[np.maximum(work.slot_var, 0)]
                                           | (work.slot_used < work.rounds - self.keep_rounds))
            work.slot_of[work.slot_var[gone]] = -1
            work.slot_var[gone] = -1
            work.slot_used[gone] = -1
            used = np.flatnonzero(work.slot_var >= 0)
            cap = W.shape[0]
            Wn = work.base[: cap * pos.size].reshape(cap, pos.size)
            chunk = max(8, (8 << 20) // max(1, W.shape[1] * W.itemsize))
            for k in range(0, used.size, chunk):
                r = used[k:k + chunk]
                Wn[r] = W[np.ix_(r, pos)]
            work.W = Wn
        work.active, work.mask = new_active, keep
        work.view.restrict(new_active)
        state.counters["shrink_events"] += 1
        state.counters["active_min"] = min(state.counters["active_min"], n_new)

    # -- rows ------------------------------------------------------------------------------

    def _capacity(self, qp: QP, q: int, ncols: int) -> int:
        """Slots in the row buffer: the operator's cache budget (as LIBSVM's cache), at least q."""
        # the budget covers the round's temporaries too (row chunks, the gradient update's
        # partial sums: a few 8 MB blocks), so the whole run stays within it, as LIBSVM's does
        # and so do the operator's own arrays (data copies, factors), as LIBSVM's peak includes
        # its copy of the data
        budget, footprint = row_budget(qp.Q)
        budget -= min(_WORKING_BYTES + footprint, budget // 2)
        itemsize = qp.Q.row_dtype.itemsize
        return int(min(qp.n, max(q, budget // max(1, ncols * itemsize))))

    def _fetch(self, qp: QP, work: DecompositionWork, B: IndexArray, counters: dict[str, int]) -> IndexArray:
        """Put the rows of B (over the current columns) into the slot buffer; return their slots.

        Rows still in the buffer from earlier rounds are reused (least recently used slots are
        replaced); the others are computed in chunks of at most 8 MB (small temporaries are
        recycled by the allocator) into their slots.
        """
        ncols = qp.n if work.active is None else work.active.size
        if work.slot_of.size != qp.n:
            work.slot_of = np.full(qp.n, -1, dtype=np.intp)
        if work.W is None or work.W.shape[0] < B.size or work.W.shape[1] != ncols:
            cap = self._capacity(qp, B.size, ncols)
            work.base = small_pages_zeros(cap * ncols, qp.Q.row_dtype)
            work.W = work.base.reshape(cap, ncols)
            work.slot_of[:] = -1
            work.slot_var = np.full(cap, -1, dtype=np.intp)
            work.slot_used = np.full(cap, -1, dtype=np.int64)
        W = work.W
        slot = work.slot_of[B]
        have = slot >= 0
        new = B[~have]
        if new.size:
            # empty slots first, then the least recently used ones outside B
            age = work.slot_used.copy()
            age[slot[have]] = np.iinfo(np.int64).max
            free = np.argpartition(age, new.size - 1)[: new.size] if new.size < age.size else np.arange(age.size)
            # in slot order: slots freed together (rows fetched in the same round age together)
            # form runs, and a run's rows are computed straight into the buffer
            free = np.sort(free)
            gone = work.slot_var[free]
            work.slot_of[gone[gone >= 0]] = -1
            chunk = max(8, (8 << 20) // max(1, ncols * W.itemsize))
            short: list[IndexArray] = []    # rows of short runs: one block, then scattered
            for a, b in _runs(free):
                if b - a < 16:
                    short.append(np.arange(a, b))
                    continue
                for k in range(a, b, chunk):
                    e = min(b, k + chunk)
                    s0 = int(free[k])
                    cross_block(qp.Q, new[k:e], work.active, out=W[s0:s0 + e - k])
            if short:
                pos_s = np.concatenate(short)
                for k in range(0, pos_s.size, chunk):
                    p = pos_s[k:k + chunk]
                    W[free[p]] = cross_block(qp.Q, new[p], work.active)
            work.slot_var[free] = new
            work.slot_of[new] = free
        slots = work.slot_of[B]
        work.slot_used[slots] = work.rounds
        counters["rows_reused"] += int(np.count_nonzero(have))
        counters["rows_fetched"] += int(new.size)
        return slots

    # -- the opt-in block finish -----------------------------------------------------------

    def _block_finish(self, qp: QP, state: State, work: DecompositionWork) -> bool:
        """Tried when the gap is at its level, from the exact gradient over every variable;
        True when it certified the point and ended the run."""
        if measure(scores_of(qp, state.x, state.g)) > work.block_level:
            return False
        work.block_left -= 1
        work.block_level = max(work.tol, 1e-2 * work.block_level)
        self._refresh(qp, state)      # shrunk variables' gradients are stale; float32 sums drift
        res = self.finish_stage.apply(qp, state, work.tol)
        work.block = res
        if not res.certified:
            return False
        work.x_fresh = state.x.copy()
        work.g_fresh = state.g.copy()
        work.f = 0.5 * float(state.x @ (state.g + qp.c))
        state.done = True
        return True

    # -- the round -------------------------------------------------------------------------

    def step(self, qp: QP, state: State) -> None:
        """One round: select B, solve the subproblem, update the gradient by one block product."""
        work = _work(state)
        if work.block_left and self._block_finish(qp, state, work):
            return
        view = work.view
        view.iteration = work.rounds
        sel = self.rule.select(view, work.tol)
        if sel is None:
            if work.active is not None:
                self._refresh(qp, state)      # optimal on the active set: check every variable
                return
            drift = work.row_eps * work.qmax * float(np.linalg.norm(state.x - work.x_fresh)) + work.noise
            if drift > 0.1 * work.tol:
                # rows stored in float32 make g exact for the rounded Q̃; the error (Q̃ − Q)(x − x_fresh)
                # grows like ‖x − x_fresh‖₂ (as in SMO): when it may matter at this tol, recompute once
                self._refresh(qp, state)
                return
            gap = measure(scores_of(qp, state.x, state.g))
            if gap > work.tol and not certified(qp, state.x, state.g, work.tol):
                # the rule gave up with the gap above tol: no fallback here, the run stops where it is
                work.note = rule_gave_up("Decomposition", self.rule, work.rounds, gap, work.tol,
                                         why="Decomposition has no fallback")
                state.stop = Status.STALLED
                return
            state.done = True
            return
        B = np.unique(view.to_global(sel))     # the rule saw only the unshrunk variables
        eq = qp.equality
        if qp.m:
            B = _whole_groups(B, eq.group)
        x, g = state.x, state.g
        slots = self._fetch(qp, work, B, state.counters)
        W = work.W
        assert W is not None
        # Q_BB afresh from the operator, in float64: cheaper than gathering q² scattered entries
        # of the buffer, and exact where the buffer holds float32
        QBB = np.array(principal_block(qp.Q, B), dtype=np.float64)
        QBB += QBB.T
        QBB *= 0.5
        xB = x[B].copy()
        gB = g[B]
        cB = gB - QBB @ xB
        A, b, aB = _subproblem_rows(qp, B, xB)
        sub = QP(DenseQ.trusted(QBB), cB, qp.lb[B], qp.ub[B], A, b)
        # the subproblem's tolerance from its own gap: with the maximal violating pair inside B
        # that is the global gap; a set that violates by less than tol (a pair rule's choice) is
        # still solved to half its own gap, so it moves
        gB_ids = eq.group[B] if eq.group_ids is not None else None
        gap_B = measure(scores(xB, gB, qp.lb[B], qp.ub[B], aB, group=gB_ids))
        inner_tol = max(self.inner_fraction * gap_B, min(0.5 * work.tol, 0.5 * gap_B), 1e-300)
        # the inner run shares the outer deadline, so a time limit holds inside long subproblems
        if state.out_of_time():
            return      # x and g unchanged: the loop ends on the time limit (an inner init can be long)
        inner = work.inner.init(sub, xB, inner_tol)
        done = iterate(sub, work.inner, inner, max_iter=100_000, deadline=state.deadline)
        work.inner.finish(sub, inner)
        state.counters["inner_iterations"] += inner.iteration
        if inner.nonconvex:
            state.nonconvex = True          # negative curvature inside B is negative curvature of Q
        if done is not Status.CONVERGED:
            state.counters["stalled_subproblems"] += 1
        dx = inner.x - xB
        # the objective's change, exactly for the quadratic: g_Bᵀdx + ½ dxᵀQ_BB dx
        decrease = -(float(gB @ dx) + 0.5 * float(dx @ (QBB @ dx)))
        # the rounding of that formula itself: a decrease above it is real progress, however small
        # against |f| (ill-conditioned sets end with many rounds of 1e-14·|f| that still converge)
        adx = np.abs(dx)
        noise = 8.0 * float(np.finfo(np.float64).eps) * (float(np.abs(gB) @ adx) + 0.5 * float(adx @ (np.abs(QBB) @ adx)))
        if np.any(dx):
            x[B] = inner.x
            # g += Q[B, :]ᵀ Δx_B. Float32 rows are summed 16 at a time in float32 (one batched
            # SGEMM) and the partial sums added in float64: 4× faster than a float64 sum, with an
            # error of at most ~17·eps32·Σ|Δx_i|·max|Q_ij| per entry, which is tracked in
            # `work.noise` and cleared by an exact refresh before convergence is claimed
            moved = np.flatnonzero(dx)
            delta = _row_sum(W, slots[moved], dx[moved])
            if W.dtype != np.float64:
                work.noise += 17.0 * float(np.finfo(np.float32).eps) * work.qmax * float(np.abs(dx).sum())
            if work.active is None:
                g += delta
            else:
                g[work.active] += delta
            state.status[B] = bound_status(x[B], qp.lb[B], qp.ub[B])
        work.previous = B
        view.previous_global = B
        work.rounds += 1
        state.counters["rounds"] += 1
        state.counters["working_set_total"] += int(B.size)
        work.f -= decrease
        # a step of a few ulps of x (an inner solver's rounding jitter) is no progress however its
        # rounded decrease comes out: without this, such rounds can repeat forever
        if decrease > noise and bool(np.any(adx > 4.0 * float(np.finfo(np.float64).eps) * np.abs(xB))):
            work.since_best = 0
        else:
            work.since_best += 1
            if work.since_best >= self.stall_rounds:
                state.stop = Status.STALLED
        # Platt's heuristic keeps positions across calls (its pass order), which shrinking would
        # renumber: it runs unshrunk, as in SMO
        if self.shrinking and not isinstance(self.rule, PlattHeuristic) and work.rounds % self.shrink_every == 0:
            self._shrink(qp, state)
