"""Sequential minimal optimization (Platt 1998) with modern working-set rules and shrinking.

SMO works on the SVM-shaped QP: finite bounds lb ≤ x ≤ ub and either disjoint equality groups
with entries ±1 (each variable in exactly one row: yᵀx = b, the C-SVC dual, is one group; ν-SVC
and ν-SVR have two, LIBSVM's Solver_NU) or no equality (the fixed-threshold SVM of Platt §2.6,
updated one variable at a time, Platt eq. 23). Each step moves two variables of one group along
d = y_i e_i − y_j e_j, which keeps every row fixed, by the analytic minimizer clipped to [L, H];
the rules pick the pair within a group and stop when every group's gap is within tol, and
shrinking judges each variable against its own group. When the curvature
eta = Q_ii + Q_jj − 2 y_i y_j Q_ij is not positive the objective is compared at both ends
(Platt eq. 19).

The gradient g = Qx + c is kept for every variable (two BLAS axpy per step): it *is* Platt's
error cache, since E_i = y_i g_i − b and only differences E_i − E_j (where b cancels) drive
the steps. Shrinking therefore only narrows the O(n) selection work; nothing is reconstructed.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.backends.operators import KernelQ
from qpcore.core.problem import QP, ProblemError
from qpcore.linalg.projection import bound_start
from qpcore.core.optimality import Scores, direction_masks, measure
from qpcore.core.rules import RuleView, check_rule
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy
from qpcore_strategies.rules.names import make_rule as _make_rule
from qpcore_strategies.rules.stopping import certified, rule_gave_up, run_notes
# the rules moved to qpcore_strategies.rules; their old import path stays (explicit re-exports)
from qpcore_strategies.rules.pair import TAU as TAU
from qpcore_strategies.rules.pair import MaximalViolatingPair as MaximalViolatingPair
from qpcore_strategies.rules.pair import PlattHeuristic as PlattHeuristic
from qpcore_strategies.rules.pair import SecondOrderRule as SecondOrderRule
from qpcore_strategies.rules.pair import pair_steps as pair_steps

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

SLOW_CHECKS = 3  # progress checks in a row without the gap halving before a Newton step


@attrs.define(slots=True, eq=False)
class SMOWork(Work):
    """SMO's work state (``state.work(SMOWork)``): labels, direction masks, the active (unshrunk) set, the rule's view."""

    y: FloatArray
    QD: FloatArray
    up: BoolArray            # y_t x_t may increase: (y=+1, x<ub) or (y=−1, x>lb)
    low: BoolArray           # y_t x_t may decrease
    view: RuleView
    act: IndexArray | None = None   # active variables; None means all
    since_shrink: int = 0
    unshrunk: bool = False
    w: FloatArray | None = None     # linear-kernel weight vector (Platt eq. 22)
    null_steps: int = 0
    fallback: bool = False          # the fallback chooses the steps (the rule gave up early)
    finish: Any = None              # the fallback rule, None when none was asked for
    note: str | None = None         # what happened when the rule gave up (stats["rule_gave_up"])
    tol: float = 1e-3
    x_fresh: FloatArray = attrs.Factory(lambda: np.zeros(0))  # point where g was last computed exactly
    # each variable's equality group when there are several (ν-SVC: two); None for one group or
    # none, which keeps the one-group path free of per-group work
    group: IndexArray | None = None
    n_groups: int = 1
    row_eps: float = 0.0      # relative rounding of a stored row entry
    qmax: float = 0.0         # bound on |Q_ij| (max diagonal for a PSD Q)
    buf: FloatArray = attrs.Factory(lambda: np.zeros(0))
    since_check: int = 0
    last_gap: float = math.inf   # gap at the previous progress check
    newton_hit: bool = False     # the last Newton step stopped at a bound
    slow_checks: int = 0         # consecutive progress checks at which the gap did not halve
    block_since: int = 0         # steps since the block finish's trigger was last checked
    block_level: float = math.inf    # the gap at which the block finish is tried next
    block_left: int = 0          # block finish attempts left
    block: Any = None            # the block finish's last result (BlockFinishResult)

    def release(self) -> None:
        """SMO has no ``resume``: a finished run keeps nothing (not the rule's view of Q)."""
        return None

    def set_active(self, act: IndexArray | None) -> None:
        """Restrict selection to ``act`` (None: every variable)."""
        if act is not None and act.size == self.y.size:
            act = None
        self.act = act
        self.view.restrict(act)


__all__ = ["SMO", "SMOWork", "make_rule"]


def make_rule(rule: Any) -> Any:
    """A pair rule from its name in :data:`qpcore_strategies.rules.RULES` (``"wss2"``, ``"mvp"``,
    ``"platt"``) or the rule itself (checked for a ``kind``)."""
    return _make_rule(rule, ("pair",))


def _make_fallback(rule: Any) -> Any:
    """SMO's ``fallback``: None, or a pair rule by name or object."""
    return None if rule is None else make_rule(rule)

# ---------------------------------------------------------------------------------------------
# The strategy
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class SMO(Strategy):
    """Sequential minimal optimization as a qpcore ``Strategy``.

    Parameters
    ----------
    rule : PairRule or {"wss2", "mvp", "platt"}
        Working-set rule: LIBSVM's second-order rule (default), the maximal violating pair, or
        Platt's heuristics (:mod:`qpcore_strategies.rules.pair`); any pair rule (``kind = "pair"``,
        ``select(view, tol)`` over a :class:`qpcore.core.rules.RuleView`) plugs in. A set rule is
        refused here. When the rule returns None (optimal to tol on what it sees), SMO re-checks
        every variable (shrinking hides some); if the gap over all of them is still above tol,
        the rule gave up early: the ``fallback`` chooses the remaining steps when one was asked
        for, else the run ends ``stalled`` at the point reached (``converged`` only when the
        certificate already accepts that point), with a
        :class:`~qpcore_strategies.rules.stopping.RuleWarning` and ``Result.stats["rule_gave_up"]``
        saying what happened.
    fallback : PairRule, {"mvp", "wss2"} or None
        The rule that chooses the remaining steps when ``rule`` gives up early (see ``rule``).
        None (default): the rule's own request, its ``fallback`` attribute when it declares one
        (:class:`~qpcore_strategies.rules.pair.PlattHeuristic` asks for ``"mvp"``: its passes
        refuse steps below ``eps``), else no fallback. The steps are counted apart:
        ``stats["rule_steps"]`` (the rule's) and ``stats["fallback_steps"]`` (the fallback's).
    shrinking : bool
        LIBSVM's shrinking: every ``shrink_every`` steps drop bound variables that cannot
        re-enter from the selection; unshrink once the gap is within 10·tol; always re-check the
        full set before declaring convergence. Ignored for the Platt rule, whose non-bound passes
        play that part.
    shrink_every : int
        Steps between shrinking checks (LIBSVM: min(n, 1000)).
    weight_update : bool
        Linear kernel only: keep w = Σ x_i y_i a_i (Platt eq. 22) and update the gradient as
        g += y∘(X Δw) instead of through two kernel rows; pair curvatures come from x_iᵀx_j.
        Off by default: with a row cache it measured slower on Adult (linear, C = 0.05: 11.6 s
        against 7.4 s with the MVP rule, 21 s against 9.6 s with the second-order rule, which
        still needs row i), since each step then costs one sparse matvec over all of X.
    max_null_steps : int
        Consecutive steps without movement before the run ends ``stalled``.
    newton_free : int
        The gap is checked every ``min(n, shrink_every)`` steps; when it has not halved at three
        checks in a row and at most this many variables are free, a Newton step on the free
        variables (bound ones held, every equality row kept), clipped to the box, and again (up
        to ten) while one stops at a bound. Ill-conditioned duals (ν-SVC with barely overlapping
        classes, C-SVC with a large C) otherwise take millions of pair steps, as LIBSVM does
        (NuSVC's ``n_iter_``). Runs that never crawl keep LIBSVM's iterates; 0 turns it off.
    newton_after : int
        Checks in a row without the gap halving before that Newton step (three by default).
    seed : int
        Seed of the rule's per-run generator (``view.rng``).
    finish : BlockFinish, optional
        An opt-in finish stage (:class:`qpcore_strategies.block_finish.BlockFinish`): once the gap
        is at its ``start_gap``, the block active-set finish; a certified point ends the run,
        otherwise SMO goes on from its own point (``Result.stats["block_finish"]`` says why).
        None (the default): SMO alone.
    """

    rule: Any = attrs.field(default="wss2", converter=make_rule)
    fallback: Any = attrs.field(default=None, converter=_make_fallback)
    shrinking: bool = True
    shrink_every: int = 1000
    weight_update: bool = False
    max_null_steps: int = 50
    newton_free: int = 200
    newton_after: int = SLOW_CHECKS
    seed: int = 0
    finish_stage: Any = attrs.field(default=None, alias="finish")

    def lockstep(self) -> str | None:
        """``"smo-wss2"`` for LIBSVM's rule without the weight update (what the batched SMO of the
        training layer takes in lockstep), else None."""
        return "smo-wss2" if isinstance(self.rule, SecondOrderRule) and not self.weight_update else None

    def __attrs_post_init__(self) -> None:
        check_rule(self.rule, ("pair",), "SMO")
        finish = self._fallback_rule()
        if finish is not None:
            check_rule(finish, ("pair",), "SMO")

    def _fallback_rule(self) -> Any:
        """The fallback asked for: SMO's own option, else the rule's declared ``fallback``, else None."""
        if self.fallback is not None:
            return self.fallback
        return _make_fallback(getattr(self.rule, "fallback", None))

    # -- set-up ---------------------------------------------------------------------------------
    def accepts(self, qp: QP) -> str | None:
        """None for SMO's shape, else the reason and the strategy that takes the problem.

        SMO's shape: finite bounds, and no equality or disjoint equality groups (each variable in
        exactly one row, coefficient ±1: C-SVC has one group, ν-SVC two).
        """
        if not (np.isfinite(qp.lb).all() and np.isfinite(qp.ub).all()):
            return ("lb/ub: SMO needs finite bounds on every variable (the SVM box); GPCG or DenseActiveSet "
                    "take infinite ones")
        eq = qp.equality
        if eq.kind == "general":
            return (f"A: SMO moves pairs within disjoint equality groups, but this problem has {eq.describe()}; "
                    "use DenseActiveSet or GPCG")
        if eq.kind == "groups" and (not eq.unit or eq.singles.size):
            what = ("coefficients other than ±1" if not eq.unit
                    else f"variable {int(eq.singles[0])} in no equality row")
            return (f"A: SMO needs every variable in one equality group with coefficient ±1 (yᵀx = b, the SVM "
                    f"form); this problem has {what}; use Decomposition with an active-set inner "
                    "(Decomposition(inner=DenseActiveSet()))")
        return None

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Check the problem has SMO's shape, find a feasible start, compute the gradient."""
        self.check(qp)
        eq = qp.equality
        # the labels y: each variable's ±1 coefficient in its group (all 1 without an equality)
        y = eq.coef.copy() if qp.m else np.ones(qp.n)
        x = self._start(qp, x0)
        g = qp.gradient(x) if x.any() else qp.c.copy()
        QD = np.asarray(qp.Q.diag(), dtype=np.float64)
        up, low = direction_masks(x, qp.lb, qp.ub, y)
        state = State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub))
        view = RuleView(qp, state, seed=self.seed, up=up if qp.m else None, low=low if qp.m else None, diag=QD)
        work = SMOWork(y=y, QD=QD, up=up, low=low, view=view, tol=tol, buf=np.empty(qp.n),
                       group=eq.group_ids, n_groups=max(1, qp.m), finish=self._fallback_rule())
        state.set_work(work)
        work.row_eps = qp.Q.row_eps
        work.qmax = float(np.abs(QD).max(initial=0.0))
        work.x_fresh = x.copy()
        if self._use_weights(qp):
            assert isinstance(qp.Q, KernelQ)
            work.w = np.asarray(qp.Q.X.T @ (qp.Q.s * x), dtype=np.float64).ravel()
        state.counters.update(shrink_events=0, unshrink_events=0, null_steps=0, rule_steps=0, fallback_steps=0)
        if self.finish_stage is not None:
            work.block_level = max(float(self.finish_stage.start_gap), tol)
            work.block_left = int(self.finish_stage.tries)
        return state

    def _use_weights(self, qp: QP) -> bool:
        lin = isinstance(qp.Q, KernelQ) and qp.Q.kernel.name == "linear"
        if self.weight_update and not lin:
            raise ProblemError("weight_update: needs a KernelQ with the linear kernel")
        return self.weight_update

    @staticmethod
    def _start(qp: QP, x0: FloatArray | None) -> FloatArray:
        if x0 is not None:
            return np.clip(x0, qp.lb, qp.ub)   # qpcore.solve made it feasible (feasible_start)
        return bound_start(qp)      # group by group for several groups

    # -- iteration ------------------------------------------------------------------------------
    def step(self, qp: QP, state: State) -> None:
        """One SMO step: select, shrink or unshrink as LIBSVM does, update two (or one) variables."""
        work = state.work(SMOWork)
        tol = work.tol
        rule = self.rule
        shrink = self.shrinking and not isinstance(rule, PlattHeuristic)
        if shrink:
            work.since_shrink += 1
            if work.since_shrink >= min(qp.n, self.shrink_every):
                work.since_shrink = 0
                self._shrink(qp, state, work, tol)
        if self.newton_free and not isinstance(rule, PlattHeuristic):
            work.since_check += 1
            if work.since_check >= min(qp.n, self.shrink_every):
                work.since_check = 0
                self._check_progress(qp, state, work, tol)
        if work.block_left and self._block_finish(qp, state, work, tol):
            return
        view = work.view
        view.iteration = state.iteration
        while True:
            chooser = work.finish if work.fallback else rule
            sel = chooser.select(view, tol)
            if sel is not None:
                sel = view.to_global(sel)
                break
            if work.act is not None:            # optimal on the active set: re-check on all
                work.set_active(None)
                state.counters["unshrink_events"] += 1
                continue
            gap = self._measure(qp, state, work)
            if gap > tol and work.finish is not None and not work.fallback:
                # the rule gave up early and a fallback was asked for: it takes over, reported
                work.fallback = True
                work.note = rule_gave_up("SMO", rule, state.iteration, gap, tol, fallback=work.finish)
                continue
            if work.row_eps * work.qmax * float(np.linalg.norm(state.x - work.x_fresh)) > 0.1 * tol:
                # Stored rows are deterministic, so g = Q̃x exactly for the rounded Q̃, and
                # g − Qx = (Q̃ − Q)(x − x_fresh): independent rounding errors of size row_eps·qmax
                # add up like ‖x − x_fresh‖₂. When that may matter at this tol, recompute g once
                # from the problem and go on if it reveals violations (LIBSVM never does).
                state.g = qp.gradient(state.x)
                work.x_fresh = state.x.copy()
                state.counters["gradient_refreshes"] = state.counters.get("gradient_refreshes", 0) + 1
                continue
            if gap > tol and not certified(qp, state.x, state.g, tol):
                # no fallback (or it gave up too): stop at the point reached, never "converged"
                why = ("" if work.fallback else
                       "no fallback asked for: SMO(fallback='mvp') finishes with the maximal violating pair")
                note = rule_gave_up("SMO", chooser, state.iteration, gap, tol, why=why)
                work.note = note if work.note is None else f"{work.note}; then {note}"
                state.stop = Status.STALLED
                return
            state.done = True
            return
        state.counters["fallback_steps" if work.fallback else "rule_steps"] += 1
        view.previous_global = sel
        if sel.size == 1 and not qp.m:
            moved = self._single_step(qp, state, work, int(sel[0]))
        elif sel.size == 2:
            i, j = int(sel[0]), int(sel[1])
            if work.group is not None and work.group[i] != work.group[j]:
                raise ProblemError(f"rule: {type(chooser).__name__} returned the pair ({i}, {j}) from two equality "
                                   "groups; a pair must be drawn within one group (view.group)")
            moved = self._pair_step(qp, state, work, i, j)
        else:
            raise ProblemError(f"rule: {type(chooser).__name__} returned {sel.size} indices; an SMO rule returns "
                               "two (one for a problem without an equality row)")
        if moved:
            work.null_steps = 0
        else:
            work.null_steps += 1
            state.counters["null_steps"] += 1
            if work.null_steps >= self.max_null_steps:
                state.stop = Status.STALLED

    @staticmethod
    def _gap(qp: QP, state: State, work: SMOWork) -> float:
        return measure(Scores(v=-work.y * state.g, up=work.up, low=work.low, single=None, group=work.group))

    @staticmethod
    def _measure(qp: QP, state: State, work: SMOWork) -> float:
        """The stopping measure over every variable: the pair gap the progress checks read, or,
        without an equality row, the largest projected-gradient entry."""
        if qp.m:
            return SMO._gap(qp, state, work)
        return measure(Scores(v=-state.g, up=work.up, low=work.low, single=np.ones(qp.n, dtype=bool)))

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
        work = state.work_or_none(SMOWork)
        return {} if work is None else run_notes(work.note, work.block)

    def multipliers(self, qp: QP, state: State) -> tuple[FloatArray, FloatArray] | None:
        """The block finish's λ when it certified the point (else None: the certificate's own)."""
        work = state.work_or_none(SMOWork)
        if work is None or work.block is None or not work.block.certified or work.block.lam is None:
            return None
        return (work.block.lam, np.zeros(0))

    def _block_finish(self, qp: QP, state: State, work: SMOWork, tol: float) -> bool:
        """The opt-in block finish: tried when the gap is at its level (checked every tenth of a
        shrinking period); True when it certified the point and ended the run."""
        work.block_since += 1
        if work.block_since < max(1, min(qp.n, self.shrink_every) // 10):
            return False
        work.block_since = 0
        if self._measure(qp, state, work) > work.block_level:
            return False
        work.block_left -= 1
        work.block_level = max(tol, 1e-2 * work.block_level)
        res = self.finish_stage.apply(qp, state, tol)
        work.block = res
        if not res.certified:
            return False
        work.up[:], work.low[:] = direction_masks(state.x, qp.lb, qp.ub, work.y)
        work.x_fresh = state.x.copy()
        state.done = True
        return True

    def _shrink(self, qp: QP, state: State, work: SMOWork, tol: float) -> None:
        y, G = work.y, state.g
        F = -y * G                                                  # the scores v of qpcore.core.optimality
        gmax1: float | FloatArray
        gmax2: float | FloatArray
        if work.group is None:
            gmax1 = float(np.max(F, where=work.up, initial=-np.inf))   # max_{up} v
            gmax2 = float(np.max(-F, where=work.low, initial=-np.inf))  # −min_{low} v
            gap = gmax1 + gmax2
        else:
            # LIBSVM's Solver_NU test, for any number of groups: each variable against its own
            # group's extremes (per-variable arrays below)
            grp = work.group
            g1, g2 = np.full(work.n_groups, -np.inf), np.full(work.n_groups, -np.inf)
            for k in range(work.n_groups):
                inside = grp == k
                g1[k] = np.max(F, where=work.up & inside, initial=-np.inf)
                g2[k] = np.max(-F, where=work.low & inside, initial=-np.inf)
            gap = float((g1 + g2).max())
            gmax1, gmax2 = g1[grp], g2[grp]
        if not work.unshrunk and gap <= 10.0 * tol:
            work.unshrunk = True
            work.set_active(None)
            state.counters["unshrink_events"] += 1
        x, lb, ub = state.x, qp.lb, qp.ub
        pos = y > 0
        at_ub, at_lb = x >= ub, x <= lb
        gone = (at_ub & np.where(pos, -G > gmax1, -G > gmax2)) | (at_lb & np.where(pos, G > gmax2, G > gmax1))
        keep = ~gone
        if work.act is not None:
            mask = np.zeros(qp.n, dtype=bool)
            mask[work.act] = True
            keep &= mask
        act = np.flatnonzero(keep)
        if act.size < 2:
            return
        if work.act is None or act.size < work.act.size:
            state.counters["shrink_events"] += 1
            work.set_active(act)

    def _check_progress(self, qp: QP, state: State, work: SMOWork, tol: float) -> None:
        # Pair steps converge linearly at a rate set by the conditioning of the free block; when
        # it is poor they crawl (gap flat over a whole check period) and one exact step on the
        # free subspace does what thousands of pair steps would.
        # Only a sustained crawl counts (several periods in a row), so that runs that converge
        # at the pair steps' usual pace keep LIBSVM's iterates.
        gap = self._gap(qp, state, work)
        work.slow_checks = work.slow_checks + 1 if tol < gap and gap > 0.5 * work.last_gap else 0
        work.last_gap = gap
        if work.slow_checks >= self.newton_after:
            work.slow_checks = 0
            for _ in range(10):    # active-set style: again while a step stops at a bound
                if not (self._newton_step(qp, state, work) and work.newton_hit):
                    break

    def _newton_step(self, qp: QP, state: State, work: SMOWork) -> bool:
        """Minimize over the free variables (bound ones held, every equality row kept), clipped."""
        x, G, y, lb, ub = state.x, state.g, work.y, qp.lb, qp.ub
        F = np.flatnonzero((lb < x) & (x < ub))
        nf = F.size
        if nf < 2 or nf > self.newton_free:
            return False
        rows = [np.asarray(qp.Q.row(int(k)), dtype=np.float64) for k in F]
        QFF = np.array([r[F] for r in rows])
        if work.group is not None:
            grp = work.group[F]
        else:
            grp = np.zeros(nf, dtype=np.intp) if qp.m else np.full(nf, -1, dtype=np.intp)
        ks = np.unique(grp[grp >= 0])
        A = np.zeros((ks.size, nf))
        for r, k in enumerate(ks):
            A[r, grp == k] = y[F][grp == k]
        K = np.block([[QFF, A.T], [A, np.zeros((ks.size, ks.size))]])
        rhs = np.concatenate((-G[F], np.zeros(ks.size)))
        d = np.linalg.lstsq(K, rhs, rcond=None)[0][:nf]
        for r, k in enumerate(ks):              # exactly in the rows' null space (lstsq rounds)
            inside = grp == k
            d[inside] -= A[r, inside] * (A[r, inside] @ d[inside]) / inside.sum()
        slope, curv = float(G[F] @ d), float(d @ QFF @ d)
        if not slope < 0.0:
            return False
        t = -slope / curv if curv > 0.0 else math.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(d > 0, (ub[F] - x[F]) / d, np.where(d < 0, (lb[F] - x[F]) / d, math.inf))
        block = int(room.argmin())
        hit = room[block] <= t
        t = min(t, float(room[block]))
        work.newton_hit = bool(hit)
        if not (math.isfinite(t) and t > 0.0):
            return False
        new = np.clip(x[F] + t * d, lb[F], ub[F])
        if hit:
            new[block] = ub[F][block] if d[block] > 0 else lb[F][block]
        for r, k in enumerate(ks):              # the clip and the snap move a row by an ulp: undo it
            inside = np.flatnonzero(grp == k)
            drift = float(A[r, inside] @ (new[inside] - x[F][inside]))
            free = inside[(new[inside] > lb[F][inside]) & (new[inside] < ub[F][inside])]
            if drift and free.size:
                j = free[np.argmax(np.minimum(new[free] - lb[F][free], ub[F][free] - new[free]))]
                new[j] = min(max(new[j] - A[r, j] * drift, lb[F][j]), ub[F][j])
        delta = new - x[F]
        if not delta.any():
            return False
        x[F] = new
        self._update_gradient(qp, state, work, tuple(int(k) for k in F), tuple(float(v) for v in delta),
                              None if work.w is not None else tuple(rows))
        for k in F:
            self._refresh(qp, state, work, int(k))
        state.counters["newton_steps"] = state.counters.get("newton_steps", 0) + 1
        return True

    def _update_gradient(self, qp: QP, state: State, work: SMOWork, idx: tuple[int, ...],
                         deltas: tuple[float, ...], rows: tuple[NDArray[Any], ...] | None) -> None:
        G = state.g
        if work.w is not None:
            Qo = qp.Q
            assert isinstance(Qo, KernelQ)
            dw = np.zeros_like(work.w)
            for k, d in zip(idx, deltas):
                xk = Qo.X[k]
                if sp.issparse(xk):
                    dw[xk.indices] += d * Qo.s[k] * xk.data
                else:
                    dw += (d * Qo.s[k]) * np.asarray(xk, dtype=np.float64).ravel()
            work.w += dw
            G += Qo.s * np.asarray(Qo.X @ dw, dtype=np.float64).ravel()
            return
        assert rows is not None
        buf = work.buf
        for r, d in zip(rows, deltas):
            # no scipy BLAS here: its thread pool fights numpy's OpenBLAS threads for the cores
            np.multiply(r, d, out=buf)
            G += buf

    def _qij(self, qp: QP, work: SMOWork, i: int, j: int) -> tuple[float, NDArray[Any] | None, NDArray[Any] | None]:
        if work.w is not None:
            Qo = qp.Q
            assert isinstance(Qo, KernelQ)
            xi, xj = Qo.X[i], Qo.X[j]
            dot = float(xi.multiply(xj).sum()) if sp.issparse(xi) else float(np.dot(xi, xj))
            return Qo.s[i] * Qo.s[j] * dot, None, None
        Qi = qp.Q.row(i)
        Qj = qp.Q.row(j)
        return float(Qi[j]), Qi, Qj

    def _pair_step(self, qp: QP, state: State, work: SMOWork, i: int, j: int) -> bool:
        if i == j:
            return False
        x, G, y = state.x, state.g, work.y
        lb, ub = qp.lb, qp.ub
        yi, yj = float(y[i]), float(y[j])
        xi, xj = float(x[i]), float(x[j])
        # the feasible interval of t for x_i += y_i t, x_j −= y_j t
        Li, Hi = (lb[i] - xi, ub[i] - xi) if yi > 0 else (xi - ub[i], xi - lb[i])
        Lj, Hj = (xj - ub[j], xj - lb[j]) if yj > 0 else (lb[j] - xj, ub[j] - xj)
        L, H = max(Li, Lj), min(Hi, Hj)
        if not L < H:
            return False
        Qij, Qi, Qj = self._qij(qp, work, i, j)
        d1 = yi * float(G[i]) - yj * float(G[j])
        a = float(work.QD[i] + work.QD[j]) - 2.0 * yi * yj * Qij
        if a > TAU:
            t = min(max(-d1 / a, L), H)
        else:                                   # Platt eq. 19: compare the objective at the ends
            if a < -1e-10 * max(1.0, float(work.QD[i] + work.QD[j])):
                state.nonconvex = True          # negative curvature along e_i − y_i y_j e_j: Q not PSD
            fL, fH = d1 * L + 0.5 * a * L * L, d1 * H + 0.5 * a * H * H
            t = L if fL < fH else (H if fH < fL else 0.0)
        if t == 0.0:
            return False
        ni, nj = self._snap(xi + yi * t, lb[i], ub[i]), self._snap(xj - yj * t, lb[j], ub[j])
        # a snap moves one end by up to 1e-12·C; the other end follows it, so y_i x_i + y_j x_j
        # stays put to an ulp (unfollowed snaps add up to a visible yᵀx drift over many steps)
        i_at, j_at = ni in (lb[i], ub[i]), nj in (lb[j], ub[j])
        if i_at and not j_at:
            nj = min(max(xj - yj * yi * (ni - xi), float(lb[j])), float(ub[j]))
        elif j_at and not i_at:
            ni = min(max(xi - yi * yj * (nj - xj), float(lb[i])), float(ub[i]))
        di, dj = ni - xi, nj - xj
        if di == 0.0 and dj == 0.0:
            return False
        x[i], x[j] = ni, nj
        self._update_gradient(qp, state, work, (i, j), (di, dj), None if Qi is None else (Qi, Qj))  # type: ignore[arg-type]
        for k in (i, j):
            self._refresh(qp, state, work, k)
        return True

    def _single_step(self, qp: QP, state: State, work: SMOWork, i: int) -> bool:
        """Platt eq. 23: one variable of the fixed-threshold SVM, clipped to its box."""
        x, G = state.x, state.g
        xi, gi, qii = float(x[i]), float(G[i]), float(work.QD[i])
        lo, hi = float(qp.lb[i]), float(qp.ub[i])
        if qii > TAU:
            ni = min(max(xi - gi / qii, lo), hi)
        else:   # no curvature: the end with the lower objective
            if qii < -1e-10:
                state.nonconvex = True
            fL = gi * (lo - xi) + 0.5 * qii * (lo - xi) ** 2
            fH = gi * (hi - xi) + 0.5 * qii * (hi - xi) ** 2
            ni = lo if fL < fH else (hi if fH < fL else xi)
        ni = self._snap(ni, lo, hi)
        d = ni - xi
        if d == 0.0:
            return False
        x[i] = ni
        rows = None if work.w is not None else (qp.Q.row(i),)
        self._update_gradient(qp, state, work, (i,), (d,), rows)
        self._refresh(qp, state, work, i)
        return True

    @staticmethod
    def _snap(v: float, lo: float, hi: float) -> float:
        # land exactly on a bound when within rounding of it, so bound tests are exact
        span = 1e-12 * max(1.0, hi - lo)
        if v <= lo + span:
            return lo
        if v >= hi - span:
            return hi
        return v

    @staticmethod
    def _refresh(qp: QP, state: State, work: SMOWork, k: int) -> None:
        xk = state.x[k]
        below, above = xk < qp.ub[k], xk > qp.lb[k]
        if work.y[k] > 0:
            work.up[k], work.low[k] = below, above
        else:
            work.up[k], work.low[k] = above, below
        state.status[k] = -1 if not above else (1 if not below else 0)

