"""The path engine of the exact incremental/decremental SVM (Cauwenberghs and Poggio, NIPS 2000).

The abstract SVM of Laskov et al. (JMLR 7, 2006, section 2),
min ½αᵀQα − cᵀα over 0 ≤ α ≤ C subject to aᵀα = β (Q_ij = s_i s_j K(x_i, x_j)), is kept *solved*
while points are added and removed, by moving one coefficient α_c adiabatically: all other points
keep their KKT conditions on the margin function g_i = (Qα)_i − c_i + a_i b (b the equality's
multiplier) while α_c changes. The instances choose (s, c, a, β): the C-SVC s = a = y, c = 1,
β = 0 (then b is the bias); the one-class (SVDD) s = a = 1, c = ½ diag K, β = 1. The path is
piecewise linear, with break points where a point changes set:

- margin M: 0 ≤ α ≤ C, g = 0 (its α and the bias b move with α_c through the bordered KKT
  system of M, kept factored in a :class:`qpcore.linalg.factor.BorderedCholesky`);
- error E: α = C, g ≤ 0;  reserve R: α = 0, g ≥ 0.

Per unit of Δα_c the margin vectors move by β = −K⁻¹[a_c; Q_Mc] (K the bordered matrix of M), every
g by γ = Q_:c + Q_:M β_M + a β_b; the step is the largest one before the first event (a margin
α at a bound, an E or R point's g at 0, the candidate at its target or, when learning, its g at 0).
γ and the ratio tests are vectorized over all points; the margin rows Q[M, :] sit in a buffer that
grows with the data. With no margin vector the bias alone moves (Diehl and Cauwenberghs 2003).

:class:`PathEngine` takes the steps on that state
(:class:`qpcore_incremental.incremental_state.PathState`: per-slot α, g, C_i and set; the margin
factor and rows; the kernel operator over the points; the snapshot that leave-one-out restores):
the increment and decrement of one α_c, the polish of a near-optimal α into an exact state, the
drift control (:meth:`PathEngine.refresh`) and the guard. The regularization path in C (or ν) and the
leave-one-out values built on those steps are :class:`qpcore_incremental.incremental_regpath.RegularizationPath`,
which the user's models (:mod:`qpcore_incremental.incremental`) extend.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from qpcore.linalg.projection import bound_steps
# the set codes and the state live in incremental_state; imported from here too, as before the split
from qpcore_incremental.incremental_state import CANDIDATE, DEAD, ERROR, MARGIN, RESERVE, PathState

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["CANDIDATE", "DEAD", "ERROR", "MARGIN", "RESERVE", "PathEngine", "PathState", "entry_event"]


def entry_event(g: FloatArray, sg: FloatArray, stE: NDArray[np.bool_], stR: NDArray[np.bool_], blocked: set[int],
                 tol_g: float, wrong: float = np.inf) -> tuple[float, int] | None:
    """The first error or reserve point whose margin value g reaches 0 at rate sg.

    An error point (g ≤ 0) joins M when g rises, a reserve point (g ≥ 0) when it falls; rates
    within ``tol_g`` of 0 are rounding, and ``blocked`` points (just left M at a zero step) wait.
    A point already on the wrong side by more than ``wrong`` (a violator that a repair will
    treat) never joins: its ratio would be negative, and joining would set its g to 0 by fiat.

    Parameters
    ----------
    g, sg : ndarray
        The margin values and their rates of change per unit step, over the slots.
    stE, stR : ndarray of bool
        The error and reserve points.
    blocked : set of int
        Slots that may not join now.
    tol_g : float
        Rates of at most this size count as zero.
    wrong : float
        Violations (E with g > 0, R with g < 0) beyond this exclude the point.

    Returns
    -------
    (float, int) or None
        The step to the first event and its slot; None when no point can join.
    """
    gv = g[:sg.size]
    cand = (stE & (sg > tol_g) & (gv <= wrong)) | (stR & (sg < -tol_g) & (gv >= -wrong))
    if blocked:
        cand[list(blocked)] = False
    idx = np.flatnonzero(cand)
    if idx.size == 0:
        return None
    li = -g[idx] / sg[idx]
    k = int(np.argmin(li))
    return float(li[k]), int(idx[k])


class PathEngine(PathState):
    """An abstract SVM dual kept exactly solved: the exact steps on its state.

    The state (:class:`qpcore_incremental.incremental_state.PathState`) keeps, per slot of a
    :class:`qpcore.backends.dynamic.DynamicKernelQ`, α, g, C_i, the set code and the point's id, and
    the margin set M factored (:class:`qpcore.linalg.factor.BorderedCholesky`) with its rows Q[M, :]
    in a buffer. The steps (the increment and decrement of one α_c along the piecewise-linear path)
    leave every other point's KKT conditions in place. Subclasses add the user's operations;
    :class:`qpcore_incremental.incremental.IncrementalSVM` is the one in this package.

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    C : float
        Default box bound (each point has its own C_i).
    capacity : int
        Initial number of point slots.
    cache_bytes : int
        Row-cache budget of the kernel operator.
    tol : float
        The certificate's tolerance; the guard (:meth:`_ensure`) checks half of it.

    Attributes
    ----------
    stats : dict
        ``learned``, ``unlearned``, ``steps`` (path segments), ``refreshes``, ``dependences``,
        ``repairs``, ``ties`` (degenerate vertices resolved at once), ``guards`` (states the
        guard found wrong and re-derived), ``loo_general`` (leave-one-out decrements left to the
        general step).
    """

    # -- the adiabatic move ------------------------------------------------------------------------
    def _move(self, c: int, s: float, target: float, *, to_margin: bool, loo: bool = False,
              Qc: FloatArray | None = None, loo_below: float = -1.0) -> str:
        """Move α_c by direction s (±1) toward ``target`` keeping every other point's KKT conditions.

        Returns ``"target"`` (α_c reached it), ``"margin"`` (c joined M), ``"reserve"`` (c reached
        g = 0 at α_c = 0, learning only) or ``"loo"`` (g_c below ``loo_below``: a certain LOO
        error, as g_c only falls while α_c does).
        """
        op = self._op
        hw = op.n_slots
        if Qc is None:
            Qc = np.array(op.row(c))
        y = self._a[:hw]
        alpha, g, Cv, st = self._alpha, self._g, self._Cv, self._status
        blocked: set[int] = set()
        resolved = 0
        # while repairing, the other violators wait their turn (joining would set their g to 0
        # by fiat); otherwise a point a rounding step put past 0 joins at once
        vtol = self._vtol() if self._repairing else np.inf
        snap = self._gtol()
        max_steps = 20 * hw + 1000
        for _ in range(max_steps):
            self.stats["steps"] += 1
            if loo and g[c] < loo_below:
                return "loo"
            m = self._fac.size
            lam = (Cv[c] - alpha[c]) if s > 0 else alpha[c]
            lam = max(float(lam), 0.0)
            event, who = "target", c
            stE = st[:hw] == ERROR
            stR = st[:hw] == RESERVE
            scale = 0.0
            if m == 0:
                # no margin vector: α_c cannot move (aᵀα = β), the bias alone does, Δb = s·a_c·t,
                # until a point that can compensate α_c reaches g = 0 (or, learning, c itself does)
                lam = np.inf
                yc = float(y[c])
                sg = (s * yc) * y
                dx = np.zeros(0)
                mu = 0.0
                if to_margin:
                    t = max(-float(g[c]) / (yc * yc), 0.0)
                    lam, event = t, "cmargin"
                # the rates are products of the a_i: exact, so only a zero a_i gives a zero rate
                tol_g = 1e-12 * abs(yc) * float(np.abs(y).max(initial=0.0))
            else:
                mem = self._fac.members
                rows = self._qmrow[mem]
                x, mu = self._fac.solve_kkt(-self._QM[rows, c], -float(y[c]))
                coef = np.zeros(self._nq)
                coef[rows] = x
                # over the whole (contiguous) row buffer: a BLAS GEMV; a column slice would be
                # strided and take numpy's slow loop (measured 6× slower on Adult)
                gam = (coef @ self._QM[:self._nq])[:hw]
                gam += Qc
                gam += mu * y
                sg = s * gam
                dx = s * x
                scale = self._qmax * (1.0 + float(np.abs(x).sum())) + abs(mu)
                tol_g = 1e-12 * max(scale, 1e-300)
                if to_margin and sg[c] > tol_g:
                    t = max(-float(g[c]) / float(sg[c]), 0.0)
                    if t < lam:
                        lam, event = t, "cmargin"
                btol = 1e-13 * (1.0 + float(np.abs(dx).max(initial=0.0)))
                am, Cm = alpha[mem], Cv[mem]
                lm = np.full(mem.size, np.inf)
                up, dn = dx > btol, dx < -btol
                lm[up] = (Cm[up] - am[up]) / dx[up]
                lm[dn] = am[dn] / -dx[dn]
                if mem.size:
                    k = int(np.argmin(lm))
                    if lm[k] < lam:
                        lam, event, who = max(float(lm[k]), 0.0), ("m->E" if up[k] else "m->R"), int(mem[k])
            hit = entry_event(g, sg, stE, stR, blocked, tol_g, vtol)
            if hit is not None and hit[0] < lam:
                lam, event, who = max(hit[0], 0.0), "join", hit[1]
            if lam == 0.0 and event in ("m->E", "m->R", "join") and resolved < 5:
                # a degenerate vertex (several points at g = 0 on a bound): taking its events one
                # at a time can cycle or let a point cross its bound; choose the sets at once
                resolved += 1
                twins = self._resolve_tie(c, s, Qc)
                if twins is not None:
                    blocked = twins                # dependent on M: γ ≡ 0 until the next step
                    continue
            if not np.isfinite(lam):
                if abs(alpha[c] - target) <= 1e-9 * Cv[c]:
                    # nothing can compensate α_c in yᵀα = 0: what is left of it is rounding residue
                    alpha[c] = target
                    return "target"
                raise RuntimeError("incremental SVM: no event bounds the step (inconsistent state)")
            # the step
            if m == 0:
                self._b += s * float(y[c]) * lam
            else:
                alpha[c] += s * lam
                alpha[mem] = np.clip(alpha[mem] + lam * dx, 0.0, Cv[mem])
                self._b += s * lam * mu
            g[:hw] += lam * sg
            # a bound on the rounding this update adds to every g (its terms' size times a few ulps)
            self._drift += 1e-15 * lam * scale
            if lam > 0.0:
                blocked.clear()
                resolved = 0
            # the event
            if event == "target":
                alpha[c] = target
                return "target"
            if event == "cmargin":
                g[c] = 0.0
                if alpha[c] <= 0.0:
                    alpha[c] = 0.0
                    st[c] = RESERVE
                    return "reserve"
                if self._add_margin(c, Qc) is None:
                    return "margin"
                raise RuntimeError("incremental SVM: candidate dependent at its margin event")
            # g of a point changing set keeps its computed value (≈ 0): set to 0 by fiat, the
            # rounding a step left there (or a crossing) would be hidden from the guard
            if abs(g[who]) <= snap:
                g[who] = 0.0
            if event in ("m->E", "m->R"):
                self._remove_margin(who, ERROR if event == "m->E" else RESERVE)
                if lam == 0.0:
                    blocked.add(who)   # no zero-length in/out cycling of the same point
                continue
            # an E or R point reached g = 0
            row = np.asarray(op.row(who))
            dep = self._add_margin(who, row)
            if dep is not None:
                # [Q_i, y_i] depends on M's: γ_i ≡ 0, so i stays at g = 0 in its set (still KKT)
                blocked.add(who)
        raise RuntimeError(f"incremental SVM: no convergence in {max_steps} path segments")

    def _resolve_tie(self, c: int, s: float, Qc: FloatArray) -> set[int] | None:
        """Choose the margin set at a degenerate vertex from the direction problem.

        At a vertex where points outside M sit at g = 0 (ties), or margin vectors sit at a bound,
        the path's next direction d (per unit of s·Δα_c) solves the small QP
        min ½dᵀQ_TT d + s·dᵀQ_Tc over T = M ∪ ties, subject to y_Tᵀd = −s·y_c, d ≥ 0 where α is at
        0 and d ≤ 0 where α is at its C_i (free inside): its KKT conditions are exactly "every
        point's g keeps its sign" (γ = Qd + yμ is 0 on the moving points, of the right sign on the
        others). M becomes the points that move (and the inner ones); a point that would move but
        depends on M (a duplicate) is traded along the null direction for a member at a bound, or
        stays out with γ ≡ 0. Returns those points (None, nothing changed, when the problem has no
        feasible direction or is too large to solve densely).
        """
        from qpcore.core.problem import QP, ProblemError
        from qpcore.testkit.reference import dense_reference

        hw = self._op.n_slots
        st, g, alpha, Cv = self._status[:hw], self._g[:hw], self._alpha[:hw], self._Cv[:hw]
        tie = 100.0 * self._gtol()
        ties = np.flatnonzero(((st == RESERVE) | (st == ERROR)) & (np.abs(g) <= tie) & self._op.alive)
        ties = ties[ties != c]
        mem = self._fac.members
        T = np.concatenate([mem, ties]).astype(np.intp)
        if T.size == 0 or T.size > 400:
            return None
        y = self._a[:hw]
        H = self._op.rows(T)[:, T]
        H = 0.5 * (H + H.T)
        am, Cm = alpha[T], Cv[T]
        at0 = am <= 1e-13 * Cm
        atC = am >= Cm * (1.0 - 1e-13)
        # a box far beyond any step's size keeps the problem bounded where H is singular (duplicate
        # points make the optimal d a ray); a solution on it is not trusted
        B = 1e6
        lo = np.where(at0, 0.0, -B)
        hi = np.where(atC & ~at0, 0.0, B)
        # where the optimal d is a ray, a small ridge picks its short (least-norm) member
        dmax = max(1.0, float(np.abs(np.diag(H)).max(initial=0.0)))
        d = None
        for ridge in (0.0, 1e-10 * dmax, 1e-7 * dmax):
            try:
                Hr = H + ridge * np.eye(T.size) if ridge else H
                qp = QP(Hr, s * Qc[T], lo, hi, y[T][None, :], np.array([-s * float(y[c])]))
                d, _ = dense_reference(qp)
            except (ProblemError, RuntimeError, np.linalg.LinAlgError):
                d = None
            if d is not None and float(np.abs(d).max(initial=0.0)) < 1e-3 * B:
                break
            d = None
        if d is None:
            return None
        dtol = 1e-9 * max(1.0, float(np.abs(d).max(initial=0.0)))
        inner = ~(at0 | atC)
        keep = inner | (np.abs(d) > dtol)
        self.stats["ties"] += 1
        # the sign each d_i must keep (+1: α at 0, −1: α at C_i, 0: free), and d by slot
        sig = np.where(at0, 1.0, np.where(atC, -1.0, 0.0))
        pos = {int(t): k for k, t in enumerate(T.tolist())}
        nm = mem.size
        twins: set[int] = set()
        for k in range(nm):
            if not keep[k]:
                sl = int(T[k])
                self._remove_margin(sl, RESERVE if at0[k] else ERROR)
                g[sl] = 0.0
        for k in range(nm, T.size):
            if not keep[k]:
                continue
            sl = int(T[k])
            g[sl] = 0.0
            row = np.asarray(self._op.row(sl))
            for _ in range(self._fac.size + 2):
                dep = self._add_margin(sl, row)
                if dep is None:
                    break
                # [Q_sl; a_sl] depends on M's: d can move along the null direction v without
                # changing γ; move it until a sign-constrained component (sl's own, or a member
                # at a bound) reaches 0 — that one stays out (or leaves) M
                ix = np.array([pos[int(j)] for j in dep.members.tolist()], dtype=np.intp)
                v = dep.direction
                best_t, best_j = np.inf, -1
                for sgn in (1.0, -1.0):
                    vv = sgn * v
                    hit = (sig[ix] * vv < 0.0) & (np.abs(vv) > 1e-14 * float(np.abs(v).max()))
                    if hit.any():
                        tj = -d[ix[hit]] / vv[hit]
                        q = int(np.argmin(tj))
                        if tj[q] < abs(best_t):
                            best_t, best_j = sgn * max(float(tj[q]), 0.0), int(np.flatnonzero(hit)[q])
                if best_j < 0:
                    break
                d[ix] += best_t * v
                j = int(dep.members[best_j])
                d[pos[j]] = 0.0
                if j == sl:
                    twins.add(sl)                  # sl needs not move: it stays in its set at g = 0
                    break
                self._remove_margin(j, RESERVE if at0[pos[j]] else ERROR)
                g[j] = 0.0
        return twins

    def _increment(self, c: int, Qc: FloatArray | None = None) -> None:
        """c (α_c at 0 or anywhere below C, not in M) learned: increase α_c until g_c = 0 or α_c = C."""
        if self._g[c] >= -self._gtol():
            if self._alpha[c] == 0.0:
                self._status[c] = RESERVE
                return
        self._status[c] = CANDIDATE
        if self._move(c, 1.0, float(self._Cv[c]), to_margin=True, Qc=Qc) == "target":
            self._status[c] = ERROR

    def _decrement(self, c: int, *, loo: bool = False, loo_below: float = -1.0) -> str:
        """Take c out of M if there, then decrease α_c to 0 (c left as a candidate)."""
        if self._status[c] == MARGIN:
            self._remove_margin(c, CANDIDATE)
        self._status[c] = CANDIDATE
        if self._alpha[c] <= 0.0:
            self._alpha[c] = 0.0
            return "target"
        return self._move(c, -1.0, 0.0, to_margin=False, loo=loo, loo_below=loo_below)

    # -- points in and out --------------------------------------------------------------------------
    def _add_point(self, row: Any, ypm: float, Ci: float, lin: float | None = None, a_i: float | None = None,
                   *, learn: bool = True) -> int:
        """Append a point (a one-row matrix, sign s_i = ±1, box bound C_i, linear term c_i (default 1;
        ``nan``: ½ Q_ii), equality coefficient a_i (default s_i)) at α = 0 and learn it exactly: the
        adiabatic increment (``learn=False``: leave it a reserve point, g not yet computed).
        Returns its id."""
        slot = int(self._op.append(row, [ypm])[0])
        self._sync_capacity()
        pid = self._next_id
        self._next_id += 1
        self._id[slot] = pid
        self._slot_of[pid] = slot
        Qc = np.array(self._op.row(slot))
        self._qmax = max(self._qmax, float(Qc[slot]))
        if self._nq:
            self._QM[:self._nq, slot] = Qc[self._qm_slot[:self._nq]]
        self._alpha[slot] = 0.0
        self._Cv[slot] = Ci
        ci = 1.0 if lin is None else float(lin)
        self._lin[slot] = 0.5 * float(Qc[slot]) if np.isnan(ci) else ci
        self._a[slot] = ypm if a_i is None else float(a_i)
        if not learn:
            self._status[slot] = RESERVE
            return pid
        hw = self._op.n_slots
        self._g[slot] = float(Qc @ self._alpha[:hw]) + self._a[slot] * self._b - self._lin[slot]
        self._status[slot] = CANDIDATE
        self._increment(slot, Qc)
        return pid

    def _remove_point(self, slot: int) -> None:
        """Unlearn the point in ``slot`` exactly (decrement α to 0), then drop it."""
        self._decrement(slot)
        self._alpha[slot] = 0.0
        if self._nq:
            self._QM[:self._nq, slot] = 0.0
        self._op.remove(slot)
        self._status[slot] = DEAD
        self._g[slot] = 0.0
        self._Cv[slot] = 0.0
        self._lin[slot] = 0.0
        self._a[slot] = 0.0
        del self._slot_of[int(self._id[slot])]
        self._id[slot] = -1

    # -- an exact state from a near-optimal α, and drift control ----------------------------------
    def _polish(self, slots: IndexArray, a: FloatArray, bias: float) -> None:
        """Turn a near-optimal α into an exact CP state (see :meth:`fit`)."""
        Cs = self._Cv[slots]
        a = np.clip(a, 0.0, Cs)
        a[a <= 1e-14 * Cs] = 0.0
        a[a >= Cs * (1.0 - 1e-14)] = Cs[a >= Cs * (1.0 - 1e-14)]
        self._alpha[slots] = a
        self._b = bias
        self._status[slots] = np.where(a <= 0.0, RESERVE, np.where(a >= Cs, ERROR, MARGIN)).astype(np.int8)
        free = slots[self._status[slots] == MARGIN]
        self._status[free] = CANDIDATE
        if free.size:
            rows = self._op.rows(free)
            block = rows[:, free]
            self._fac.a = self._a
            try:
                self._fac.refactor(0.5 * (block + block.T), free)
                for k, sl in enumerate(free.tolist()):
                    self._status[sl] = MARGIN
                    self._qm_add(sl, rows[k])
            except np.linalg.LinAlgError:
                for k, sl in enumerate(free.tolist()):
                    self._admit_free(sl, rows[k])
        # α_M and b from the KKT system of M; margin values out of bounds go to that bound
        for _ in range(10 * free.size + 10):
            bad = self._resolve_margin(strict=True)
            if bad is None:
                break
            sl, to = bad
            self._remove_margin(sl, to)
        self._recompute_g()
        self._repair_violators()
        self.refresh()

    def _admit_free(self, sl: int, row: FloatArray) -> None:
        """Add a free variable to M; on a dependence, step along the null direction (the objective
        and g are constant there) until a variable reaches a bound, which leaves the free set."""
        for _ in range(self._fac.size + 2):
            dep = self._add_margin(sl, row)
            if dep is None:
                return
            mem, v = dep.members, dep.direction
            a, Cm = self._alpha[mem], self._Cv[mem]
            best = (np.inf, -1, 0.0)
            for sgn in (1.0, -1.0):
                t = np.minimum(*bound_steps(a, sgn * v, np.zeros_like(a), Cm))
                k = int(np.argmin(t))
                if t[k] < best[0]:
                    best = (float(t[k]), k, sgn)
            t0, k, sgn = best
            self._alpha[mem] = np.clip(a + t0 * sgn * v, 0.0, Cm)
            j = int(mem[k])
            to = RESERVE if sgn * v[k] < 0 else ERROR
            if j == sl:
                self._alpha[sl] = 0.0 if to == RESERVE else self._Cv[sl]
                self._status[sl] = to
                return
            self._remove_margin(j, to)
        raise RuntimeError("incremental SVM: could not admit a dependent free variable")

    def _resolve_margin(self, strict: bool = False) -> tuple[int, int] | None:
        """Re-solve α_M and b exactly from M's KKT system given α_E = C_E (and α_R = 0).

        Returns the worst margin vector the solution puts out of its bounds (and that bound's
        set), leaving the state unchanged then; None when applied.
        """
        m = self._fac.size
        if m == 0:
            return None
        hw = self._op.n_slots
        mem = self._fac.members
        rows = self._qmrow[mem]
        aE = np.where(self._status[:hw] == ERROR, self._alpha[:hw], 0.0)
        y = self._a[:hw]
        r = self._lin[mem] - self._QM[rows, :hw] @ aE
        x, mu = self._fac.solve_kkt(r, self._beq - float(y @ aE))
        Cm = self._Cv[mem]
        slack = 1e-9 * Cm if not strict else 1e-12 * Cm
        over = np.maximum(-x - slack, x - Cm - slack)
        k = int(np.argmax(over))
        if over[k] > 0:
            return int(mem[k]), RESERVE if x[k] < 0 else ERROR
        self._alpha[mem] = np.clip(x, 0.0, Cm)
        self._b = float(mu)
        return None

    def _recompute_g(self) -> None:
        """g from scratch; the margin vectors' g (0 by definition) is kept as :attr:`_m_resid`."""
        hw = self._op.n_slots
        y = self._a[:hw]
        a = np.where(self._op.alive, self._alpha[:hw], 0.0)
        self._g[:hw] = self._op.matvec(a) + y * self._b - self._lin[:hw]
        isM = self._status[:hw] == MARGIN
        self._m_resid = float(np.abs(self._g[:hw][isM]).max(initial=0.0))
        self._g[:hw][isM] = 0.0
        self._drift = 0.0

    def _repair_violators(self) -> None:
        """Repair exactly the E and R points whose g has the wrong sign beyond rounding."""
        hw = self._op.n_slots
        thr = self._vtol()
        self._repairing = True
        try:
            self._repair_loop(hw, thr)
        finally:
            self._repairing = False

    def _repair_loop(self, hw: int, thr: float) -> None:
        for _ in range(hw + 1):
            st, g = self._status[:hw], self._g[:hw]
            bad = np.flatnonzero(((st == ERROR) & (g > thr)) | ((st == RESERVE) & (g < -thr)))
            if bad.size == 0:
                return
            c = int(bad[np.argmax(np.abs(g[bad]))])
            self.stats["repairs"] += 1
            self._decrement(c)
            self._increment(c)

    def refresh(self) -> None:
        """Refactor the margin block, re-solve α_M and b, recompute g from scratch (drift control).

        A margin vector that the re-solve puts out of its bounds goes to that bound (and M is
        re-solved without it); what that leaves on the wrong side is for the guard's repair.
        """
        self._since_refresh = 0
        self.stats["refreshes"] += 1
        m = self._fac.size
        if m:
            mem = self._fac.members
            rows = self._qmrow[mem]
            block = self._QM[rows][:, mem]
            self._fac.a = self._a
            try:
                self._fac.refactor(0.5 * (block + block.T), mem)
            except np.linalg.LinAlgError:
                pass
            for _ in range(m + 1):
                bad = self._resolve_margin()
                if bad is None:
                    break
                self._remove_margin(*bad)
        self._recompute_g()

    # -- the guard: never present an uncertified state ----------------------------------------------
    def _violation(self) -> float:
        """The worst violation of the state's conditions, read from the maintained quantities in O(n).

        Sign conditions of g by set (E: g ≤ 0, R: g ≥ 0, M: g = 0; and M's g as last recomputed),
        α at its set's value, no point left a candidate, and the equality residual |aᵀα − β| (in
        units of g per unit α: ×qmax). Rounding-size values are below :meth:`_vtol`.
        """
        hw = self._op.n_slots
        if hw == 0:
            return 0.0
        alive = self._op.alive
        st, g, a, Cv = self._status[:hw], self._g[:hw], self._alpha[:hw], self._Cv[:hw]
        if ((st == CANDIDATE) & alive).any():
            return np.inf
        isE, isR, isM = (st == ERROR) & alive, (st == RESERVE) & alive, (st == MARGIN) & alive
        if (a[isE] != Cv[isE]).any() or (a[isR] != 0.0).any():
            return np.inf
        am, cm = a[isM], Cv[isM]
        out = max(float(np.maximum(-am, am - cm).max(initial=0.0)), 0.0) * self._qmax
        out = max(out, float(g[isE].max(initial=0.0)), float(-g[isR].min(initial=0.0)), self._m_resid)
        # a margin vector's g is carried along (its rate is 0 by construction, and a point joins M
        # with the g it reached, never 0 by fiat), so a crossing at its entry shows here
        out = max(out, float(np.abs(g[isM]).max(initial=0.0)))
        y = self._a[:hw]
        eq = abs(float(y[alive] @ a[alive]) - self._beq)
        return max(out, eq * self._qmax)

    def _guard_tol(self) -> float:
        """The guard's threshold: half the certificate's tolerance, never below rounding."""
        return max(0.5 * self.tol, self._vtol())

    def _ensure(self, what: str) -> None:
        """After an operation: check the state in O(n) from the maintained quantities; on a violation
        re-derive it exactly (refresh, repair of the violators) or raise, so that no uncertified
        state is presented. g is recomputed first when the bound on the rounding its updates
        gathered (each step adds ~1e-15 × step × the size of its terms) nears the tolerance."""
        if self._drift > 0.5 * self._guard_tol():
            # the rounding the maintained g may carry could hide a violation: recompute it
            self.refresh()
        if self._violation() <= self._guard_tol():
            return
        self.stats["guards"] += 1
        for _ in range(3):
            self.refresh()
            self._repair_violators()
            self._recompute_g()
            if self._violation() <= self._guard_tol():
                return
        raise RuntimeError(f"incremental SVM: {what} left a state that fails its check (violation "
                           f"{self._violation():.3g} > {self._guard_tol():.3g}) and the repair did not "
                           "restore it; refit with fit(X, y)")

    # -- a batch start -------------------------------------------------------------------------------
    def _batch(self, slots: IndexArray, batch_tol: float, x0: FloatArray | None = None) -> None:
        """Solve the current points' problem by SMO (tolerance relative to the gradient's scale,
        iterations capped), then polish that point into an exact state."""
        from qpcore.core.solve import solve
        from qpcore_strategies.smo import SMO

        qp = self.qp()
        # an absolute tolerance can lie below the rounding of a large kernel times a large C, and
        # SMO would never stop; the cap bounds an ill-conditioned run (the polish makes any
        # near-optimal point exact)
        scale = max(1.0, self._qmax * float(self._Cv[slots].max(initial=0.0)))
        n = int(slots.size)
        res = solve(qp, SMO(), x0, tol=batch_tol * scale, max_iter=max(10_000, 50 * n))
        self._polish(slots, np.asarray(res.x, dtype=np.float64), -float(res.multipliers[0]))
