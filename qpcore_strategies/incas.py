"""INCAS: the active-set method of Scheinberg (2006) for SVM-shaped QPs, one variable at a time.

Scheinberg, "An efficient implementation of an active set method for SVMs", JMLR 7 (2006).
The problem is min ½xᵀQx + cᵀx over finite boxes lb ≤ x ≤ ub with at most one equality row
aᵀx = b (the C-SVC dual: a = y, c = −e, lb = 0, ub = C; general a, lb, ub are supported, a
variable with a_i = 0 moves alone, and no equality row is the fixed-threshold SVM).

The variables are partitioned into I0 (at lb), IC (at ub) and the free set S. Each step is one
of the paper's two:

- **Step 1** solves the equality-constrained QP on S with I0 and IC fixed: the Newton step p_S
  of the bordered KKT system ``[[Q_SS, a_S], [a_Sᵀ, 0]] [p; μ] = [−g_S; r]`` (r = b − aᵀx, zero
  up to the rounding it corrects), through a :class:`qpcore.linalg.factor.BorderedCholesky` updated in
  O(|S|²) per change of S. The largest t ≤ 1 that keeps S in its box is taken; when t < 1 the
  blocking variable leaves S for its bound and Step 1 is repeated. At t = 1, S is at the optimum
  of its face and λ = −μ is the equality multiplier (qpcore's convention z = g − λa; for an
  SVM dual λ = rho and the bias is −λ).
- **Step 2** prices the bound variables with the reduced gradient z = g − λa (the scores of
  :mod:`qpcore.core.optimality` applied to z): a variable at lb violates when it could move into its
  box along a descent direction, at ub likewise. The run stops when the qpcore measure (the
  maximal-violating-pair gap) on the maintained gradient is within tol; otherwise the most
  violated variable (in the measure's units, |z_i/a_i|) is released into S. With S = ∅ (or
  a_S = 0) λ is not determined by S and the first index of the maximal violating pair enters.

**The gradient is the paper's stored products** (:mod:`qpcore_strategies.incas_buffer`): one
vector g = Qx + c, updated after a step by one GEMV over a float64 buffer of the rows Q[S, :]
(rows appended and removed as S changes, never gathered again); with shrinking only the priced
columns take part, and the shrunk variables' gradient is rebuilt from the paper's Q e_C.

**Dependence.** When Q_SS plus a new variable makes the bordered matrix singular (duplicate
points with the same label, the same point with both labels, a linear kernel with more free
vectors than features + 1) the factor refuses it and returns v with Qv ≈ 0, aᵀv ≈ 0. The
objective is linear along v with slope v_i z_i < 0 once v is oriented so that the released
variable moves into its box; the step goes to the first bound, the blocking variable leaves
(when it is the released variable itself, that one crosses to its other bound) and the
variable is offered again. The gradient is updated with the actual products, never assuming
Qv = 0.

**Accuracy.** Before stopping, the gradient is recomputed from the problem (``qp.gradient``)
and the measure checked again; ``state.exact`` hands that gradient to ``qpcore.solve``. The
factor is refactorized from the buffer when the face residual ‖g_S − λa_S‖ after a full step
exceeds ``refresh_tol``·tol. Rows of a float32 ``KernelQ`` are computed in float64.

**Incremental mode** (the paper's last section): ``qpcore.solve(grown, INCAS(), resume=old)``
calls :meth:`INCAS.resume`, which keeps the factor as it is, gives the buffer the new columns
Q[S, new] (only those kernel entries), computes the new variables' gradient from Q[new, :]x
over the nonzeros of x, puts them at lb (in I0) and continues with Step 2.
"""

from __future__ import annotations

import copy
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.core.optimality import maximal_violating_pair, measure, pair_gap, projected_gradient, scores, single_violation
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import State, Status, bound_status
from qpcore.core.strategy import Strategy
from qpcore.linalg.factor import BorderedCholesky, Dependence
from qpcore.linalg.projection import bound_start, bound_steps
from qpcore_strategies.incas_buffer import (INCASWork, _append, _cross64, _fresh_gradient, _price_gradient, _remove,
                                            _row, _rows, _s_product, _shrink, _unshrink, _update_g)

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["INCAS", "INCASWork"]

_INIT_BLOCK = 256   # interior variables of a warm start entered into S per block update

_COUNTERS = ("step1_full", "step1_blocked", "released", "dependences", "refactors", "shrink_events",
             "unshrink_events", "rows_requested", "cross_entries", "gradient_refreshes", "zero_steps")

_EPS = float(np.finfo(np.float64).eps)


@attrs.frozen
class INCAS(Strategy):
    """Scheinberg's active-set method (INCAS) as a qpcore ``Strategy``.

    Parameters
    ----------
    shrinking : bool
        Selective pricing: every ``shrink_every`` steps, bound variables that cannot form a
        violating pair with anything (LIBSVM's test on the scores) leave the priced set, and the
        gradient update runs over the priced columns only; their gradient is rebuilt exactly
        before convergence is declared. A shrink event moves only the newly shrunk columns of
        the buffer (pairwise swaps to the end of the priced region). On by default: in the
        hard regime (large C) most bound variables settle early and the pricing GEMV shrinks
        with them (Adult, RBF γ = 0.01, C = 100, tol 1e-6, one thread: 3,185 rows 1.04 s → 0.54 s,
        16,101 rows 13.2 s → 9.5 s); at C ≤ 10 it cost about 10% (5,000 rows, C = 10: 0.86 s
        against 0.95 s).
    shrink_every : int
        Steps between shrinking checks.
    refresh_tol : float
        Refactorize the free block from the buffer when the face residual after a full Step 1
        exceeds ``refresh_tol · tol``.
    singular_tol : float
        The factor's dependence threshold (a pivot ρ² ≤ singular_tol · M_ii).
    nonconvex_tol : float
        A pivot ρ² < −nonconvex_tol · M_ii is negative curvature: Q is not PSD on the face; the
        run stops with status ``nonconvex``.
    max_zero_steps : int
        Consecutive steps that do not move x (degenerate pivots) before a refresh, and twice
        that before the run ends ``stalled``.
    release : int
        Violators released into S per pricing (1: the paper's one at a time). Their rows are
        computed in one block and appended to the factor by one block update; each pricing is a
        pass over S's rows, so releasing several saves passes, while a variable released in vain
        (pushed back to its bound) costs a blocked Step 1. A batch that is dependent (duplicated
        points) enters only its most violated variable, as the paper does.

    Notes
    -----
    One ``step`` is one pivot: a Step 1 or a Step 2. ``state.counters`` (``Result.stats``):
    ``step1_full`` (face optimum reached), ``step1_blocked`` (a variable left S),
    ``released`` (variables entered S by pricing), ``dependences`` (singular KKT met, ray
    steps taken), ``refactors`` (Q_SS factored afresh; none in a resumed run unless the
    residual asks), ``shrink_events``, ``unshrink_events``, ``rows_requested`` (full rows asked
    of the operator; ``stats["rows_computed"]`` is the operator's own count, matvecs included),
    ``cross_entries`` (single kernel entries computed by ``resume``), ``gradient_refreshes``
    (g = Qx + c recomputed from the problem) and ``zero_steps`` (pivots that did not move x).
    """

    shrinking: bool = True
    shrink_every: int = 200
    refresh_tol: float = 0.05
    singular_tol: float = 1e-11
    nonconvex_tol: float = 1e-8
    max_zero_steps: int = 500
    release: int = 8

    def __attrs_post_init__(self) -> None:
        if self.shrink_every < 1:
            raise ProblemError(f"shrink_every: must be ≥ 1, got {self.shrink_every}")
        if not self.refresh_tol > 0 or not self.singular_tol > 0 or not self.nonconvex_tol > 0:
            raise ProblemError("refresh_tol, singular_tol, nonconvex_tol: must be > 0")
        if self.max_zero_steps < 1:
            raise ProblemError(f"max_zero_steps: must be ≥ 1, got {self.max_zero_steps}")
        if self.release < 1:
            raise ProblemError(f"release: must be ≥ 1, got {self.release}")

    # -- set-up ---------------------------------------------------------------------------------
    def accepts(self, qp: QP) -> str | None:
        """None for INCAS's shape (finite bounds, at most one equality row), else why not and
        which strategy can.

        Parameters
        ----------
        qp : QP
            The problem.

        Returns
        -------
        str or None
        """
        if not (np.isfinite(qp.lb).all() and np.isfinite(qp.ub).all()):
            return "lb/ub: INCAS needs finite bounds on every variable (the SVM box); use GPCG or DenseActiveSet"
        if qp.m > 1:
            # its bordered factor carries one row: the method adds and drops one variable at a time
            # against a single multiplier
            eq = qp.equality
            other = ("SMO or Decomposition" if eq.kind == "groups" and eq.unit and not eq.singles.size
                     else "Decomposition" if eq.kind == "groups" else "DenseActiveSet or GPCG")
            return f"A: INCAS handles at most one equality row; this problem has {eq.describe()}; use {other}"
        return None

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Check the shape, start from x0 (or SMO's start), enter its interior variables into S.

        Parameters
        ----------
        qp : QP
            Finite box, at most one equality row.
        x0 : ndarray, optional
            A feasible start (``qpcore.solve`` makes it so).
        tol : float
            The tolerance on the KKT measure.

        Returns
        -------
        State

        Raises
        ------
        ProblemError
            Infinite bounds or several equality rows.
        """
        self.check(qp)
        a = qp.A[0].copy() if qp.m else None
        x = bound_start(qp) if x0 is None else np.clip(np.asarray(x0, dtype=np.float64), qp.lb, qp.ub)
        g = qp.gradient(x) if x.any() else qp.c.copy()
        state = State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub))
        state.counters.update({k: 0 for k in _COUNTERS})
        n = qp.n
        fac = BorderedCholesky(a, singular_tol=self.singular_tol)
        work = INCASWork(a=a, b=float(qp.b[0]) if qp.m else 0.0,
                         unit=a is not None and bool(np.all(np.abs(a) == 1.0)), tol=tol, fac=fac,
                         buf=np.empty((min(n, 16), n)), var_of_slot=np.full(min(n, 16), -1, dtype=np.intp),
                         slot=np.full(n, -1, dtype=np.intp), perm=np.arange(n, dtype=np.intp),
                         pos_of=np.arange(n, dtype=np.intp), nact=n, h=np.zeros(n), lb=qp.lb.copy(),
                         ub=qp.ub.copy(), c=qp.c.copy())
        state.set_work(work)
        interior = np.flatnonzero((x > qp.lb) & (x < qp.ub))
        for lo in range(0, interior.size, _INIT_BLOCK):
            if state.stop is not None:
                break
            self._enter_start(qp, state, work, interior[lo:lo + _INIT_BLOCK])
        # h = g − c − Q[S, :]ᵀ x_S, from the exact gradient of the start
        work.h = g - qp.c - _s_product(work, state.x)
        return state

    # -- the Strategy protocol ------------------------------------------------------------------
    def step(self, qp: QP, state: State) -> None:
        """One pivot: a Step 1 (Newton step on S, maybe blocked) or a Step 2 (price, release).

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            Mutated in place.
        """
        work = state.work(INCASWork)
        if work.zero_run >= self.max_zero_steps:
            # a degenerate cycle of pivots that do not move x: refresh once, then stop honestly
            if state.counters["zero_steps"] >= 2 * self.max_zero_steps and work.fresh:
                state.stop = Status.STALLED
                return
            work.zero_run = 0
            _fresh_gradient(qp, state, work)
            self._refactor(state, work)
            work.need_solve = True
        if work.need_solve:
            self._step1(qp, state, work)
            return
        if self.shrinking:
            work.since_shrink += 1
            if work.since_shrink >= self.shrink_every:
                work.since_shrink = 0
                _shrink(state, work)
        self._step2(qp, state, work)

    def sync_gradient(self, qp: QP, state: State) -> None:
        """Bring g up to date on the priced variables (``qpcore.solve`` calls it before a progress
        snapshot): Step 1 keeps only g_S current until the next pricing."""
        work = state.work(INCASWork)
        if work.stale:
            _price_gradient(state, work)

    def resume(self, qp: QP, state: State, tol: float) -> State | None:
        """Continue a finished (or stopped) INCAS run on a grown problem.

        The old variables come first in ``qp`` with the same bounds, linear term and equality
        row; the new ones join I0 at lb (which must be 0 where the equality row involves them,
        so that aᵀx = b still holds; a box with lb < 0 < ub puts the variable at 0 and into S).
        The factor is kept untouched, the buffer gets the columns Q[S, new] only, the new
        variables' gradient is Q[new, nz]x_nz + c_new. Returns None (``qpcore.solve`` then warm
        starts from the old point) when the state is not INCAS's or the old part changed.

        Parameters
        ----------
        qp : QP
            The grown problem.
        state : State
            The previous run's final state (not modified).
        tol : float
            The tolerance of the new run.

        Returns
        -------
        State or None
        """
        old = state.work_or_none(INCASWork)
        if old is None:
            return None
        self.check(qp)
        n0, n = old.lb.size, qp.n
        if n < n0 or (old.a is None) != (qp.m == 0):
            return None
        if not (np.array_equal(qp.lb[:n0], old.lb) and np.array_equal(qp.ub[:n0], old.ub)
                and np.array_equal(qp.c[:n0], old.c)):
            return None
        a = qp.A[0].copy() if qp.m else None
        if a is not None and (old.a is None or not np.array_equal(a[:n0], old.a) or float(qp.b[0]) != old.b):
            return None
        new = np.arange(n0, n, dtype=np.intp)
        x_new = np.clip(np.zeros(new.size), qp.lb[n0:], qp.ub[n0:])
        if np.any(x_new != 0.0):
            return None   # a new variable away from 0 would move aᵀx and every gradient
        # a private copy: the old Result keeps its own state
        w = copy.copy(old)
        w.fac = copy.deepcopy(old.fac)
        w.fac.a = a          # the row over the grown problem; the factor itself is not touched
        w.buf, w.h = old.buf[:max(old.ns, 1)].copy(), old.h.copy()
        w.perm, w.pos_of, w.var_of_slot = old.perm.copy(), old.pos_of.copy(), old.var_of_slot.copy()
        st = State(x=np.concatenate([state.x, x_new]), g=np.empty(n), status=np.empty(n, dtype=np.int8),
                   counters={k: 0 for k in _COUNTERS}, work=w, nonconvex=state.nonconvex)
        st.g[:n0] = state.g
        st.status[:n0] = state.status
        st.status[n0:] = bound_status(x_new, qp.lb[n0:], qp.ub[n0:])
        _unshrink(st, w)      # every old gradient exact before pricing
        ns = w.ns
        S = w.var_of_slot[:ns]
        cap = max(old.buf.shape[0], ns + 8)
        buf = np.empty((cap, n))
        buf[:ns, :n0] = w.buf[:ns]
        if ns and new.size:
            buf[:ns, n0:] = _cross64(qp, st, S, new)
        w.buf = buf
        vs = np.full(cap, -1, dtype=np.intp)
        vs[:ns] = S
        w.var_of_slot = vs
        w.slot = np.concatenate([old.slot, np.full(new.size, -1, dtype=np.intp)])
        w.perm = np.arange(n, dtype=np.intp)      # the unshrink above restored the identity
        w.pos_of = np.arange(n, dtype=np.intp)
        w.ident = True
        w.nact = n
        x = st.x
        nz = np.flatnonzero(x[:n0])
        gn = qp.c[n0:].copy()
        if nz.size and new.size:
            gn += _cross64(qp, st, new, nz) @ x[nz]
        st.g[n0:] = gn
        # h over the new columns: g − c − Q[S, new]ᵀ x_S
        xs = x[S]
        w.h = np.concatenate([w.h, gn - qp.c[n0:] - (xs @ buf[:ns, n0:] if ns else 0.0)])
        w.lb, w.ub, w.c, w.a, w.tol = qp.lb.copy(), qp.ub.copy(), qp.c.copy(), a, tol
        w.pos_cache = None
        w.fresh = False
        w.stuck = w.zero_run = w.since_shrink = 0
        w.unshrunk = False
        st.done = False
        st.stop = None
        # S is still at its face optimum (nothing in it changed): price at once, unless the old
        # run stopped before reaching it
        w.need_solve = w.need_solve or (w.lam is None and ns > 0)
        for i in np.flatnonzero((x_new > qp.lb[n0:]) & (x_new < qp.ub[n0:])).tolist():
            self._enter(qp, st, w, n0 + int(i), release=False)
        return st

    # -- Step 1 ---------------------------------------------------------------------------------
    def _step1(self, qp: QP, state: State, work: INCASWork) -> None:
        """Newton step on S's face; the first blocking variable leaves S."""
        fac = work.fac
        order = fac.members
        ns = order.size
        if ns == 0:
            work.need_solve, work.lam = False, None
            return
        x = state.x
        bordered = fac.bordered()
        # the equality's residual rides along in the right-hand side, so rounding never piles up
        r_eq = 0.0
        work.since_eq += 1
        if bordered and work.a is not None and work.since_eq >= 16:
            # the residual of aᵀx = b grows by rounding only: an O(n) check now and then suffices
            work.since_eq = 0
            ax = work.a * x
            r_eq = work.b - float(ax.sum())
            if abs(r_eq) <= 16 * _EPS * float(np.abs(ax).sum()):
                r_eq = 0.0                # its own rounding: correcting it would only jiggle x
        p, mu = fac.solve_kkt(-state.g[order], r_eq)
        if bordered and ns == 1 and work.a is not None:
            p[0] = r_eq / float(work.a[order[0]])    # exact: the row alone fixes the step
        xs, lo, hi = x[order], work.lb[order], work.ub[order]
        # a member sitting on a bound, pushed outward by rounding only, must not block at t = 0
        tiny = 1e-12 * (hi - lo) + 64 * _EPS * float(np.abs(p).max())
        p[((xs <= lo) & (p < 0) & (p >= -tiny)) | ((xs >= hi) & (p > 0) & (p <= tiny))] = 0.0
        tl, tu = bound_steps(xs, p, lo, hi)
        tt = np.minimum(tl, tu)
        k = int(np.argmin(tt))
        full = not float(tt[k]) < 1.0
        t = 1.0 if full else float(tt[k])
        new = np.clip(xs + t * p, lo, hi)
        upper = bool(tu[k] < tl[k])
        if not full:
            new[k] = hi[k] if upper else lo[k]
        d = new - xs
        if np.any(d != 0.0):
            x[order] = new
            # only g_S is needed until the next pricing, which rebuilds all of g from h: a
            # blocked step updates g_S by Q_SS d from the factor (O(|S|²)), a full step not at all
            if not full:
                state.g[order] += fac.matvec(d)
            work.stale = True
            work.fresh = False
            work.zero_run = 0
        else:
            work.zero_run += 1
            state.counters["zero_steps"] += 1
        if not full:
            state.counters["step1_blocked"] += 1
            _remove(state, work, int(order[k]), upper)
            return
        state.counters["step1_full"] += 1
        work.need_solve = False
        work.lam = -mu if bordered else None
        work.check_face = True

    def _face_ok(self, state: State, work: INCASWork) -> bool:
        """After a full Step 1, on the rebuilt gradient: is g_S = λ a_S to refresh_tol·tol?

        A miss re-solves the face from the true gradient; two in a row refactor Q_SS (the
        factor, not the gradient, has drifted).
        """
        work.check_face = False
        order = work.fac.members
        if order.size == 0:
            return True
        gs = state.g[order]
        res = gs - work.lam * work.a[order] if work.lam is not None and work.a is not None else gs
        if not float(np.abs(res).max()) > self.refresh_tol * work.tol:
            work.face_misses = 0
            return True
        work.face_misses += 1
        if work.face_misses >= 2:
            work.face_misses = 0
            self._refactor(state, work)
        work.need_solve = True
        return False

    def _refactor(self, state: State, work: INCASWork) -> bool:
        """Factor Q_SS afresh from the buffer; False when it is singular (the factor is kept)."""
        fac = work.fac
        order = fac.members
        if order.size == 0:
            return False
        block = work.buf[work.slot[order]][:, work.pos_of[order]]
        block = 0.5 * (block + block.T)
        try:
            fac.refactor(block, order)
        except np.linalg.LinAlgError:
            return False
        state.counters["refactors"] += 1
        return True

    # -- Step 2 ---------------------------------------------------------------------------------
    def _step2(self, qp: QP, state: State, work: INCASWork) -> None:
        """Price the active bound variables; stop, unshrink, refresh, or release the worst."""
        n = qp.n
        if work.stale:
            _price_gradient(state, work)
        if work.check_face and not self._face_ok(state, work):
            return
        full_set = work.nact == n
        act = None if full_set else work.perm[:work.nact]
        if work.a is not None and work.lam is not None and work.unit and work.fac.bordered():
            # pricing fast path: with S on its face every free member scores −λ on both sides,
            # so the pair gap is at least any bound variable's violation |z_i|; a violation
            # beyond the stopping band releases at once, and qpcore's measure is computed only
            # when the run may be near its end. Only g and the bound status are gathered.
            if work.pos_cache is None:
                work.pos_cache = (work.a[work.perm], work.lb[work.perm] == work.ub[work.perm])
            a_pos, fixed_pos = work.pos_cache
            na = work.nact
            if act is None and work.ident:
                gp, st = state.g, state.status
            else:
                acts = work.perm[:na]
                gp, st = state.g[acts], state.status[acts]
            z = gp - work.lam * a_pos[:na]
            viol = np.where(st < 0, -z, np.where(st > 0, z, 0.0))
            viol[fixed_pos[:na]] = 0.0
            band = (10.0 if self.shrinking and not work.unshrunk else 1.0) * work.tol
            k = self.release
            if k > 1 and na > k:
                top = np.argpartition(viol, na - k)[na - k:]
                top = top[np.argsort(-viol[top])]
                top = top[viol[top] > band]
            else:
                i = int(np.argmax(viol))
                top = np.array([i] if float(viol[i]) > band else [], dtype=np.intp)
            if top.size:
                work.stuck = 0
                if top.size > 1:
                    self._enter_many(qp, state, work, work.perm[top])
                    return
                var = int(work.perm[int(top[0])])
                work.last_released = var
                self._enter(qp, state, work, var, release=True)
                return
        x, g = state.x, state.g
        a = work.a
        if act is None:
            xa, ga, lba, uba, aa, inS = x, g, work.lb, work.ub, a, work.slot >= 0
        else:
            xa, ga, lba, uba = x[act], g[act], work.lb[act], work.ub[act]
            aa, inS = (None if a is None else a[act]), work.slot[act] >= 0
        if aa is not None and work.lam is not None:
            # scores of z = g − λa: v shifts by λ, so the pair gap (the measure) is the same
            s = scores(xa, ga - work.lam * aa, lba, uba, aa, unit=work.unit)
        else:
            s = scores(xa, ga, lba, uba, aa, unit=work.unit)
        meas = measure(s)
        tol = work.tol
        if meas <= tol:
            if not full_set:
                _unshrink(state, work)
                return
            if a is not None and work.fac.bordered() and not work.eq_fixed:
                ax = a * x
                if abs(work.b - float(ax.sum())) > 16 * _EPS * float(np.abs(ax).sum()):
                    # aᵀx = b drifted (rays, rounding): one Step 1 with the residual in its
                    # right-hand side puts it back before convergence is declared
                    work.eq_fixed = True
                    work.since_eq = 16
                    work.need_solve = True
                    return
            if not work.fresh:
                # the incremental gradient has drifted by rounding: judge with Qx + c itself
                _fresh_gradient(qp, state, work)
                if measure(scores(x, state.g, work.lb, work.ub, a, unit=work.unit)) > tol:
                    work.need_solve = True
                    return
            state.exact = (x.copy(), state.g.copy())
            state.done = True
            return
        if self.shrinking and not work.unshrunk and meas <= 10.0 * tol:
            work.unshrunk = True            # near the end: price everything once more (LIBSVM)
            if not full_set:
                _unshrink(state, work)
                return
        i = self._pick(s, xa, ga, lba, uba, aa, inS, work)
        if i < 0:
            # measure > tol but nothing violates against λ: the face solve is off by rounding
            work.stuck += 1
            if work.stuck == 2:
                _fresh_gradient(qp, state, work)
                self._refactor(state, work)
            elif work.stuck > 3:
                state.stop = Status.STALLED
                return
            work.need_solve = True
            return
        work.stuck = 0
        var = i if act is None else int(act[i])
        work.last_released = var
        self._enter(qp, state, work, var, release=True)

    def _pick(self, s: Any, xa: FloatArray, ga: FloatArray, lba: FloatArray, uba: FloatArray,
              aa: FloatArray | None, inS: BoolArray, work: INCASWork) -> int:
        """The most violated variable outside S (its position among the priced), −1 for none."""
        if aa is None:
            viol = np.abs(projected_gradient(xa, ga, lba, uba))
        elif work.lam is not None:
            # s scores the reduced gradient z = g − λa, in the measure's units (−z_i/a_i)
            viol = np.maximum(np.where(s.up, s.v, 0.0), np.where(s.low, -s.v, 0.0))
        else:
            # λ not determined by S (S = ∅ or a_S = 0): the maximal violating pair's first index
            if s.paired and pair_gap(s) >= single_violation(s):
                pair = maximal_violating_pair(s)
                if pair is not None:
                    for k in pair:
                        if not inS[k]:
                            return int(k)
            su, sl = s.single_masks()
            viol = np.maximum(np.where(su, s.v, 0.0), np.where(sl, -s.v, 0.0))
        viol[inS] = 0.0
        i = int(np.argmax(viol))
        return i if viol[i] > 0.0 else -1

    # -- entering S (release, warm start) and dependences ---------------------------------------
    def _append_block(self, state: State, work: INCASWork, var: IndexArray, rows: FloatArray) -> bool:
        """Append ``var`` (rows Q[var, :]) to S by one block update of the factor; False, with S
        unchanged, when the block is dependent."""
        fac = work.fac
        order = fac.members
        # Q[S, var] from the new rows (Q symmetric): no gather over the buffer of S
        cols = rows[:, order].T if order.size else np.zeros((0, var.size))
        blk = rows[:, var]
        a_new = work.a[var] if work.a is not None else None
        if not fac.add_block(var, cols, 0.5 * (blk + blk.T), a_new):
            return False
        for k, i in enumerate(var.tolist()):
            _append(state, work, int(i), rows[k])
        work.need_solve = True
        return True

    def _enter_start(self, qp: QP, state: State, work: INCASWork, var: IndexArray) -> None:
        """Enter interior variables of a warm start into S: a block of rows and one block update
        of the factor; one at a time (with the dependence handling) if the block is dependent."""
        rows = _rows(qp, state, var)
        if var.size > 1 and self._append_block(state, work, var, rows):
            return
        for k, i in enumerate(var.tolist()):
            if state.stop is not None:
                return
            self._enter(qp, state, work, int(i), release=False, row=rows[k])

    def _enter_many(self, qp: QP, state: State, work: INCASWork, var: IndexArray) -> None:
        """Release several bound variables (most violated first) into S: their rows in one call,
        the factor in one block append; on a dependence only the first enters."""
        work.eq_fixed = False
        rows = _rows(qp, state, var)
        if self._append_block(state, work, var, rows):
            work.last_released = int(var[-1])
            state.counters["released"] += int(var.size)
            return
        # a dependence among them (or with S): the most violated enters alone, as in the paper
        # (its ray step moves x, so the others' violations are priced afresh before they enter)
        work.last_released = int(var[0])
        self._enter(qp, state, work, int(var[0]), release=True, row=rows[0])

    def _enter(self, qp: QP, state: State, work: INCASWork, i: int, *, release: bool,
               row: FloatArray | None = None) -> None:
        """Add variable i to S; on a dependence walk along the null direction to a bound first.

        ``release``: i is a bound variable that violates (it moves into its box along the null
        direction); otherwise an interior variable of a start, moved the way that does not
        increase the objective.
        """
        fac = work.fac
        if release:
            work.eq_fixed = False         # a new phase: the equality check before the stop is due again
        if row is None:
            row = _row(qp, state, i)
        a_i = float(work.a[i]) if work.a is not None else 0.0
        x = state.x
        while True:
            order = fac.members
            col = work.buf[work.slot[order], work.pos_of[i]] if order.size else np.zeros(0)
            dep = fac.add(i, col=col, diag=float(row[i]), a_i=a_i)
            if dep is None:
                _append(state, work, i, row)
                work.need_solve = True
                if release:
                    state.counters["released"] += 1
                return
            m_ii = float(row[i]) + (fac.tau or 0.0) * a_i * a_i
            if dep.residual < -self.nonconvex_tol * max(abs(m_ii), float(np.finfo(float).tiny)):
                state.nonconvex = True          # negative curvature on the face: Q is not PSD
                state.stop = Status.NONCONVEX
                return
            state.counters["dependences"] += 1
            if not self._ray(state, work, i, row, dep, release):
                return
            if state.out_of_time():
                # i stays outside S at its (feasible) value; a later pricing offers it again
                state.status[i] = 0 if work.lb[i] < x[i] < work.ub[i] else (1 if x[i] >= work.ub[i] else -1)
                return

    def _ray(self, state: State, work: INCASWork, i: int, row: FloatArray, dep: Dependence, release: bool) -> bool:
        """Step along the null direction to the first bound; True when i should be offered again."""
        x = state.x
        mem = dep.members
        v = dep.direction.copy()
        if work.a is not None:
            # a near-dependence (pivot ≤ singular_tol) leaves aᵀv ≈ ρ/√τ, not 0; a long ray step
            # would carry that into aᵀx = b, so v is projected onto aᵀv = 0 (Q v stays ≈ 0 and
            # the gradient update uses the real products anyway)
            am = work.a[mem]
            aa = float(am @ am)
            if aa > 0.0:
                v -= (float(am @ v) / aa) * am
        lb_i, ub_i = work.lb[i], work.ub[i]
        if release and (x[i] <= lb_i or x[i] >= ub_i):
            if x[i] >= ub_i:
                v = -v                            # i leaves its upper bound downwards
        elif float(state.g[mem] @ v) > 0.0:
            v = -v                                # the objective is linear along v: go downhill
        xs, lo, hi = x[mem], work.lb[mem], work.ub[mem]
        tl, tu = bound_steps(xs, v, lo, hi)
        tt = np.minimum(tl, tu)
        k = int(np.argmin(tt))
        t = float(tt[k])
        upper = bool(tu[k] < tl[k])
        new = np.clip(xs + t * v, lo, hi)
        new[k] = hi[k] if upper else lo[k]
        d = new - xs
        x[mem] = new
        ns = work.ns
        dslot = np.zeros(ns)
        if ns:
            dslot[work.slot[mem[:-1]]] = d[:-1]
        if np.any(d != 0.0):
            # the actual products, never Qv = 0: x_i's own row joins the GEMV
            _update_g(state, work, dslot, (row, float(d[-1])))
            if d[-1] != 0.0:
                work.h += float(d[-1]) * row[work.perm]   # i is outside S: its term lives in h
            work.fresh = False
        kvar = int(mem[k])
        if kvar == i:
            state.status[i] = 1 if upper else -1
            work.need_solve = True
            return False
        _remove(state, work, kvar, upper)
        return True
