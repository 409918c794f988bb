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
from typing import Any, ClassVar, Literal

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.backends.operators import KernelQ
from qpcore.core.problem import QP, ProblemError
from qpcore.linalg.projection import bound_start
from qpcore.core.optimality import Scores, direction_masks, maximal_violating_pair, measure, projected_gradient
from qpcore.core.rules import RuleView, check_rule, rule_kind
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

TAU = 1e-12  # LIBSVM's guard: curvature below this is treated as non-positive
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
    fallback: bool = False
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

    def release(self) -> None:
        """SMO has no ``resume``: a finished run keeps nothing (not the rule's view of Q)."""
        return None

    def set_active(self, act: IndexArray | None) -> None:
        """Restrict selection to ``act`` (None: every variable)."""
        if act is not None and act.size == self.y.size:
            act = None
        self.act = act
        self.view.restrict(act)


# ---------------------------------------------------------------------------------------------
# Working-set rules (pairs for one equality row; single indices for the fixed-threshold SVM).
# Each reads only the RuleView, so it is correct with shrinking on and plugs into SMO and
# decomposition alike.
# ---------------------------------------------------------------------------------------------


@attrs.frozen
class MaximalViolatingPair:
    """First-order rule (Keerthi et al. 2001): i = argmax_{up} v, j = argmin_{low} v, v = −g/a.

    With several equality groups: that pair in the group with the largest gap. With no equality
    row: the variable of largest projected-gradient magnitude.
    """

    kind: ClassVar[Literal["pair"]] = "pair"

    def select(self, view: RuleView, tol: float) -> IndexArray | None:
        """The maximal violating pair, or None when the gap m(x) − M(x) ≤ tol."""
        if view.a is None:
            return _single_select(view, tol, second_order=False)
        s = view.scores()
        pair = maximal_violating_pair(s)
        if pair is None or not s.v[pair[0]] - s.v[pair[1]] > tol:
            return None
        return np.array(pair, dtype=np.intp)


@attrs.frozen
class SecondOrderRule:
    """LIBSVM's rule (Fan, Chen, Lin 2005): i as in MVP, j maximizing the second-order decrease b²/a.

    ``a = Q_ii + Q_tt − 2 y_i y_t Q_it`` is replaced by ``tau`` where it is not positive (non-PSD
    kernels). With several equality groups, per group as LIBSVM's Solver_NU: each group's i, and
    j scored against its own group's i. With no equality row: the variable whose exact clipped
    Newton step decreases most.
    """

    kind: ClassVar[Literal["pair"]] = "pair"
    tau: float = TAU
    prefetch: int = 0

    def select(self, view: RuleView, tol: float) -> IndexArray | None:
        """The pair (i, j), or None when m(x) − M(x) ≤ tol.

        When row i or j is not cached, the next most violating candidates' rows are asked for
        with it in one block (``prefetch`` rows), which a caching operator computes at once.
        """
        y = view.a
        if y is None:
            return _single_select(view, tol, second_order=True, tau=self.tau)
        s = view.scores()
        if s.group is not None:
            return self._select_groups(view, s, y, tol)
        vu = np.where(s.up, s.v, -np.inf)
        i = int(vu.argmax())
        gmax = float(vu[i])
        vl = np.where(s.low, s.v, np.inf)
        if not gmax - float(vl.min()) > tol:
            return None
        if self.prefetch > 1 and not view.cached(i):
            view.prefetch(_top(vu, i, self.prefetch))
        QD = view.diag
        a = np.multiply(y, view.row(i))
        a *= -2.0 * y[i]
        a += QD
        a += QD[i]                           # a_t = Q_ii + Q_tt − 2 y_i y_t Q_it
        np.maximum(a, self.tau, out=a)
        score = np.subtract(gmax, vl, out=vl)   # b_t = gmax − v_t; −inf outside low
        np.maximum(score, 0.0, out=score)    # only violating pairs (b > 0) score
        score *= score
        score /= a
        j = int(score.argmax())
        if self.prefetch > 1 and not view.cached(j):
            view.prefetch(_top(score, j, self.prefetch))
        return np.array([i, j], dtype=np.intp)

    def _select_groups(self, view: RuleView, s: Scores, y: FloatArray, tol: float) -> IndexArray | None:
        """Several disjoint groups (LIBSVM's Solver_NU, for any number of groups).

        i_k = argmax of v over up ∩ group k for every group k; j maximizes b²/a over low, with
        b = gmax_{k(j)} − v_j and a from row i_{k(j)}, so a pair never leaves its group; the rows
        of every group's i are fetched (LIBSVM fetches both). None when every group's gap is
        ≤ tol. A variable in no group (a decomposition subproblem's) that violates by more than
        every group's gap is returned alone.
        """
        grp = s.group
        assert grp is not None
        v = s.v
        vu = np.where(s.up, v, -np.inf)
        vl = np.where(s.low, v, np.inf)
        k_n = int(grp.max(initial=-1)) + 1
        # index −1 (a variable in no group) reads the appended last entry: −inf / no row
        gmax = np.full(k_n + 1, -np.inf)
        i_of = np.full(k_n + 1, -1, dtype=np.intp)
        best = -np.inf
        for k in range(k_n):
            inside = grp == k
            vk = np.where(inside, vu, -np.inf)
            i = int(vk.argmax())
            gmin = float(np.min(vl, where=inside, initial=np.inf))
            if np.isfinite(vk[i]) and np.isfinite(gmin):
                gmax[k], i_of[k] = vk[i], i
                best = max(best, float(vk[i]) - gmin)
        single = grp < 0
        if single.any():
            pg = np.maximum(np.where(s.up & single, v, 0.0), np.where(s.low & single, -v, 0.0))
            t = int(pg.argmax())
            if pg[t] > tol and pg[t] > best:
                return np.array([t], dtype=np.intp)
        if not best > tol:
            return None
        QD = view.diag
        qi = np.zeros(v.size)                  # Q_{i_k(t), t}: row i of t's own group
        for k in range(k_n):
            if i_of[k] >= 0:
                inside = grp == k
                qi[inside] = view.row(int(i_of[k]))[inside]
        ii = i_of[grp]
        a = np.multiply(y, qi)
        a *= -2.0 * y[ii]
        a += QD
        a += QD[ii]                            # a_t = Q_ii + Q_tt − 2 y_i y_t Q_it, i = i_{k(t)}
        np.maximum(a, self.tau, out=a)
        score = np.subtract(gmax[grp], vl)     # b_t = gmax_{k(t)} − v_t; −inf outside low
        np.maximum(score, 0.0, out=score)
        score *= score
        score /= a
        score[single | (ii < 0)] = 0.0
        j = int(score.argmax())
        return np.array([int(ii[j]), j], dtype=np.intp)


def _top(values: FloatArray, first: int, k: int) -> IndexArray:
    """``first`` and the k − 1 other largest finite ``values`` (view positions): rows to prefetch."""
    k = min(k, values.size)
    top = np.argpartition(values, values.size - k)[values.size - k:]
    top = top[np.isfinite(values[top]) & (top != first)]
    return np.concatenate(([first], top[np.argsort(-values[top])])).astype(np.intp)


def _single_select(view: RuleView, tol: float, *, second_order: bool, tau: float = TAU) -> IndexArray | None:
    """Fixed-threshold rules: one variable, chosen by projected gradient or exact decrease."""
    x, g, lb, ub = view.x, view.g, view.lb, view.ub
    pg = projected_gradient(x, g, lb, ub)
    k = int(np.abs(pg).argmax())
    if not abs(pg[k]) > tol:
        return None
    if second_order:
        t = np.clip(-g / np.maximum(view.diag, tau), lb - x, ub - x)
        dec = -(g * t + 0.5 * view.diag * t * t)
        k = int(dec.argmax())
    return np.array([k], dtype=np.intp)


@attrs.frozen
class PlattHeuristic:
    """Platt's first- and second-choice heuristics (SMO paper §2.2), vectorized per examined example.

    First choice: passes over all examples alternate with passes over the non-bound ones until a
    pass over all changes nothing; an example is examined when it violates the KKT conditions
    by more than tol/2 against the threshold b (so that no violation means a gap ≤ tol). Second
    choice for an examined i2: the non-bound i1 maximizing |E1 − E2|; failing positive progress,
    the non-bound ones from a random start; then all from a random start. The candidate steps of
    each tier are computed at once from row i2. The threshold b follows Platt eqs. 20–21. With
    several equality groups, each group keeps its own threshold and i1 comes from i2's group.

    Parameters
    ----------
    eps : float
        Smallest relative change of x_i2 that counts as progress (Platt's ``eps``).
    """

    kind: ClassVar[Literal["pair"]] = "pair"
    eps: float = 1e-12

    def select(self, view: RuleView, tol: float) -> IndexArray | None:
        """Next (i1, i2) with positive progress, or None after a clean pass over all examples."""
        rs = view.memo
        grp = view.group
        if "examine_all" not in rs:
            # one threshold per equality group (the last entry stands for variables in none)
            rs.update(examine_all=True, pos=0, changed=0, pending=None,
                      b=0.0 if grp is None else np.zeros(view.qp.m + 1))
        x, G, lb, ub = view.x, view.g, view.lb, view.ub
        y = view.a
        if rs["pending"] is not None:
            # the pair returned last time has been stepped on: Platt eqs. 20–21 from its ends
            if grp is not None:
                rs["b"][grp[rs["pending"][1]]] = self._threshold(view, rs["pending"])
            else:
                rs["b"] = self._threshold(view, rs["pending"]) if y is not None else 0.0
            rs["pending"] = None
        n = x.size
        free = (x > lb) & (x < ub)
        if grp is not None:
            assert y is not None
            r = G - y * rs["b"][grp]
        else:
            r = G - y * float(rs["b"]) if y is not None else G
        viol = ((r < -0.5 * tol) & (x < ub)) | ((r > 0.5 * tol) & (x > lb))
        while True:
            cand = viol if rs["examine_all"] else viol & free
            hits = np.flatnonzero(cand[rs["pos"]:])
            if hits.size == 0:
                was_all = rs["examine_all"]
                if was_all and rs["changed"] == 0:
                    rs.clear()
                    return None
                # after a pass over all: non-bound passes; a non-bound pass that changed nothing
                # sends the loop back to a pass over all (Platt's outer loop)
                rs["examine_all"] = (not was_all) and rs["changed"] == 0
                rs["pos"], rs["changed"] = 0, 0
                continue
            for i2 in (rs["pos"] + hits).tolist():
                rs["pos"] = i2 + 1
                if y is None:
                    rs["changed"] += 1
                    return np.array([i2], dtype=np.intp)
                i1 = self._second_choice(view, i2, free)
                if i1 is not None:
                    rs["changed"] += 1
                    rs["pending"] = (i1, i2)
                    return np.array([i1, i2], dtype=np.intp)
            rs["pos"] = n

    def _second_choice(self, view: RuleView, i2: int, free: BoolArray) -> int | None:
        G, y, x = view.g, view.a, view.x
        assert y is not None
        row = view.row(i2)
        e = y * G                       # E_t + b: differences of e are differences of errors
        grp = view.group
        same = None if grp is None else grp == grp[i2]   # the partner comes from i2's own group
        nb = np.flatnonzero(free if same is None else free & same)
        nb = nb[nb != i2]
        tiers: list[IndexArray] = []
        rng = view.rng
        if nb.size:
            k = int(nb[e[nb].argmin()] if e[i2] > 0 else nb[e[nb].argmax()])
            tiers.append(np.array([k], dtype=np.intp))
            s = int(rng.integers(nb.size))
            tiers.append(np.roll(nb, -s))
        alln = np.arange(x.size, dtype=np.intp) if same is None else np.flatnonzero(same)
        alln = alln[alln != i2]
        s = int(rng.integers(max(1, alln.size)))
        tiers.append(np.roll(alln, -s))
        lb, ub, QD = view.lb, view.ub, view.diag
        for cand in tiers:
            if cand.size == 0:
                continue
            t = pair_steps(i2, cand, x, G, y, lb, ub, QD, np.asarray(row[cand], dtype=np.float64))
            moved = np.abs(t) > self.eps * (np.abs(x[i2]) + np.abs(x[i2] + y[i2] * t) + self.eps)
            hit = np.flatnonzero(moved)
            if hit.size:
                return int(cand[hit[0]])
        return None

    @staticmethod
    def _threshold(view: RuleView, pair: tuple[int, int]) -> float:
        i1, i2 = pair
        x, G, y, lb, ub = view.x, view.g, view.a, view.lb, view.ub
        assert y is not None
        b2, b1 = y[i2] * G[i2], y[i1] * G[i1]   # E = 0 at a free variable after the step
        if lb[i2] < x[i2] < ub[i2]:
            return float(b2)
        if lb[i1] < x[i1] < ub[i1]:
            return float(b1)
        return float(0.5 * (b1 + b2))


def pair_steps(i: int, js: IndexArray, x: FloatArray, G: FloatArray, y: FloatArray, lb: FloatArray,
               ub: FloatArray, QD: FloatArray, Qij: FloatArray, tau: float = TAU) -> FloatArray:
    """Vectorized analytic steps t along y_i e_i − y_j e_j for one i and many j.

    Returns t per j (0 where no decrease is possible); x_i += y_i t, x_j −= y_j t.
    """
    yi, yj = y[i], y[js]
    if yi > 0:
        Li, Hi = lb[i] - x[i], ub[i] - x[i]
    else:
        Li, Hi = x[i] - ub[i], x[i] - lb[i]
    pos = yj > 0
    Lj = np.where(pos, x[js] - ub[js], lb[js] - x[js])
    Hj = np.where(pos, x[js] - lb[js], ub[js] - x[js])
    L, H = np.maximum(Li, Lj), np.minimum(Hi, Hj)
    d1 = yi * G[i] - yj * G[js]
    a = QD[i] + QD[js] - 2.0 * yi * yj * Qij
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.clip(np.where(a > tau, -d1 / np.where(a > tau, a, 1.0), 0.0), L, H)
    flat = a <= tau
    if flat.any():  # Platt eq. 19: objective at both ends
        fL = d1 * L + 0.5 * a * L * L
        fH = d1 * H + 0.5 * a * H * H
        t = np.where(flat, np.where(fL < fH, L, np.where(fH < fL, H, 0.0)), t)
    return np.where(L < H, t, 0.0)


RuleName = Literal["wss2", "mvp", "platt"]


def make_rule(rule: Any) -> Any:
    """A rule from its name ("wss2", "mvp", "platt") or the rule itself (checked for a ``kind``)."""
    if isinstance(rule, str):
        table: dict[str, Any] = {"wss2": SecondOrderRule(), "mvp": MaximalViolatingPair(), "platt": PlattHeuristic()}
        if rule not in table:
            raise ProblemError(f"rule: unknown working-set rule {rule!r}; use one of {sorted(table)}")
        return table[rule]
    rule_kind(rule)
    return rule


_MVP = MaximalViolatingPair()

__all__ = ["SMO", "SMOWork", "MaximalViolatingPair", "PlattHeuristic", "SecondOrderRule", "make_rule", "pair_steps"]


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
        Platt's heuristics; any pair rule (``kind = "pair"``, ``select(view, tol)`` over a
        :class:`qpcore.core.rules.RuleView`) plugs in. A set rule is refused here.
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
    """

    rule: Any = attrs.field(default="wss2", converter=make_rule)
    shrinking: bool = True
    shrink_every: int = 1000
    weight_update: bool = False
    max_null_steps: int = 50
    newton_free: int = 200
    newton_after: int = SLOW_CHECKS
    seed: int = 0

    def __attrs_post_init__(self) -> None:
        check_rule(self.rule, ("pair",), "SMO")

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
                       group=eq.group_ids, n_groups=max(1, qp.m))
        state.set_work(work)
        work.row_eps = qp.Q.row_eps
        work.qmax = float(np.abs(QD).max(initial=0.0))
        work.x_fresh = x.copy()
        if self._use_weights(qp):
            assert isinstance(qp.Q, KernelQ)
            work.w = np.asarray(qp.Q.X.T @ (qp.Q.s * x), dtype=np.float64).ravel()
        state.counters.update(shrink_events=0, unshrink_events=0, null_steps=0, fallback_steps=0)
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
        view = work.view
        view.iteration = state.iteration
        while True:
            sel = (_MVP if work.fallback else rule).select(view, tol)
            if sel is not None:
                sel = view.to_global(sel)
                break
            if work.act is not None:            # optimal on the active set: re-check on all
                work.set_active(None)
                state.counters["unshrink_events"] += 1
                continue
            if qp.m and self._gap(qp, state, work) > tol and not work.fallback:
                work.fallback = True            # a heuristic rule stopped early: finish with MVP
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
            state.done = True
            return
        if work.fallback:
            state.counters["fallback_steps"] += 1
        view.previous_global = sel
        if sel.size == 1 and not qp.m:
            moved = self._single_step(qp, state, work, int(sel[0]))
        elif sel.size == 2:
            i, j = int(sel[0]), int(sel[1])
            if work.group is not None and work.group[i] != work.group[j]:
                raise ProblemError(f"rule: {type(rule).__name__} returned the pair ({i}, {j}) from two equality "
                                   "groups; a pair must be drawn within one group (view.group)")
            moved = self._pair_step(qp, state, work, i, j)
        else:
            raise ProblemError(f"rule: {type(rule).__name__} returned {sel.size} indices; an SMO rule returns "
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

