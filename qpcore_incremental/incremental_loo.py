"""Leave-one-out decrements that never touch the solved state's margin factor.

Exact leave-one-out decrements each support vector c to α_c = 0 from the *same* solved state,
then restores it. The general step (:meth:`qpcore_incremental.incremental_path.PathEngine._move`) solves
the KKT system of the current margin set M at every path segment and updates M's factor at every
event, O(|M|·n) and O(|M|²) each, and the restore then copies the factor back. Here the bordered
KKT matrix K₀ of the solved state's margin set M₀ is inverted once, H₀ = K₀⁻¹, together with
Z = Bᵀ H₀ (B = [Q_M₀,:; a]: row i of Z is the response of M₀'s coefficients and the multiplier
to point i's column), and the margin set met on the way, M = M₀ \\ D ∪ A, is written as K₀
bordered by k = |D| + |A| columns:

    ⎡ K₀   U ⎤ ⎡ z ⎤   ⎡ r₀ ⎤
    ⎣ Uᵀ   W ⎦ ⎣ v ⎦ = ⎣ r₁ ⎦ ,

a column eₚ per member p of M₀ that left (its multiplier frees p's row, and z_p = 0 is imposed),
a column [Q_M₀,a; a_a] per point a that joined (W = Q_AA). Block elimination leaves a k × k
system S v = h, S = W − UᵀH₀U, h = r₁ − Uᵀz₀ with z₀ = H₀ r₀ fixed for the point (S⁻¹ is
kept by bordering and its reverse), so a segment costs O(k·n + k·|M₀|) (γ = G₀ + P v, with a
row of P per bordering column) and an event O(|M₀|·n) only the first time a point joins (its
row of P is cached; a member leaving reads its column of Z). The factor and the margin-row
buffer are never written, so restoring after a point copies the O(n) vectors only.

The segments and events are the general step's (the same ratio tests and tolerances). What it
does not treat — a zero-length event at a degenerate vertex, a point dependent on M, an empty M,
more than ``max_cols`` bordering columns — is handed back (``None``) to the general step, which
runs from the restored state.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray

from qpcore_incremental.incremental_path import ERROR, RESERVE, PathEngine

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["LOODecrements"]


class LOODecrements:
    """The decrement of one point to α = 0 from an engine's solved state, through K₀⁻¹.

    Build with :meth:`build`; :meth:`value` decrements one point in place (the caller restores
    the engine's snapshot after each point). Only valid while the engine's margin set, factor
    and row buffer are those it was built on.

    Parameters
    ----------
    eng : PathEngine
        The solved state (no candidate left anywhere).
    H : ndarray
        K₀⁻¹ over M₀ in factor order, then the multiplier (symmetric).
    Z : ndarray
        Bᵀ H₀ over the slots 0 .. n_slots − 1, B = [Q_M₀,:; a]: row i is H₀ [Q_M₀,i; a_i], the
        response of M₀'s coefficients and the multiplier to point i's column.
    max_cols : int
        Bordering columns beyond which a point is handed back to the general step.
    col_bytes : int
        Budget of the cache of columns Q_:i − Z [Q_M₀,i; a_i] (the rates of every g per unit of
        a point i outside M₀ with M₀ compensating), computed once per point that joins M or is
        decremented: the same points near the margin join over and over.
    """

    def __init__(self, eng: PathEngine, H: FloatArray, Z: FloatArray, *, max_cols: int = 64,
                 col_bytes: int = 128 << 20) -> None:
        self.eng = eng
        self.H = H
        self.Z = Z
        self.hw = hw = eng._op.n_slots
        self.M0: IndexArray = eng._fac.members
        s0 = int(self.M0.size)
        self.s0 = s0
        self.pos = np.full(hw, -1, dtype=np.intp)
        self.pos[self.M0] = np.arange(s0)
        self.max_cols = kc = int(max_cols)
        self.Y = np.zeros((kc, s0 + 1))
        self.P = np.zeros((kc, hw))
        self.Sinv = np.zeros((kc, kc))
        self.h = np.zeros(kc)
        self.slot = np.zeros(kc, dtype=np.intp)
        self.joined = np.zeros(kc, dtype=bool)
        st = eng._status[:hw]
        # +1 on error points (they join M when g rises), −1 on reserve points (when g falls)
        self.side0 = np.where(st == ERROR, 1.0, np.where(st == RESERVE, -1.0, 0.0))
        # the members' slots and bounds: M₀ in factor order, then one position per bordering
        # column (a joined point sits at s0 + its column)
        self.T = np.zeros(s0 + kc, dtype=np.intp)
        self.T[:s0] = self.M0
        self.CT = np.zeros(s0 + kc)
        self.CT[:s0] = eng._Cv[self.M0]
        self._cols: dict[int, FloatArray] = {}
        self._max_cached = max(0, int(col_bytes) // (8 * max(hw, 1)))

    @classmethod
    def build(cls, eng: PathEngine, *, max_entries: int = 32 << 20) -> LOODecrements | None:
        """K₀⁻¹ and Z for the engine's margin set.

        Parameters
        ----------
        eng : PathEngine
            The solved state.
        max_entries : int
            The most numbers Z may hold (|M₀| + 1 per slot).

        Returns
        -------
        LOODecrements or None
            None without margin vectors, when Z would be larger, or when K₀ is too
            ill-conditioned for an explicit inverse (its residual above 1e-8).
        """
        m = eng._fac.size
        hw = eng._op.n_slots
        if m == 0 or hw * (m + 1) > max_entries:
            return None
        mem = eng._fac.members
        rows = eng._qmrow[mem]
        a = eng._a[:hw]
        K = np.zeros((m + 1, m + 1))
        blk = eng._QM[rows][:, mem]
        K[:m, :m] = 0.5 * (blk + blk.T)
        K[:m, m] = K[m, :m] = a[mem]
        try:
            lu = sla.lu_factor(K, check_finite=False)
            H = sla.lu_solve(lu, np.eye(m + 1), check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return None
        H = 0.5 * (H + H.T)
        # the explicit inverse multiplies every later solve's error by K₀'s condition: the general
        # step (Givens-updated factor) keeps the states where that would show
        resid = float(np.abs(K @ H - np.eye(m + 1)).max())
        if not np.isfinite(resid) or resid > 1e-8:
            return None
        B = np.empty((m + 1, hw))
        B[:m] = eng._QM[rows, :hw]
        B[m] = a
        return cls(eng, H, np.ascontiguousarray((H @ B).T))

    def _column(self, i: int, Qi: FloatArray) -> tuple[FloatArray, FloatArray]:
        """u = [Q_M₀,i; a_i] and Q_:i − Z u for a point i outside M₀ (the latter cached)."""
        u = np.empty(self.s0 + 1)
        u[:self.s0] = Qi[self.M0]
        u[self.s0] = self.eng._a[i]
        r = self._cols.get(i)
        if r is None:
            r = Qi - self.Z @ u
            if len(self._cols) < self._max_cached:
                self._cols[i] = r
        return u, r

    # -- the bordering columns: S⁻¹ kept by bordering and its reverse, k being small ---------------
    def _push(self, k: int, slot: int, joined: bool, srow: FloatArray, skk: float, y: FloatArray, p: FloatArray,
              h: float) -> float:
        """Append column k with S's new row ``srow`` (over the k columns) and diagonal ``skk``;
        returns its pivot (the Schur complement of the new entry), the column not taken when that
        is 0 or not finite."""
        Si = self.Sinv
        if k:
            t = Si[:k, :k] @ srow
            piv = skk - float(srow @ t)
        else:
            piv = skk
        if not (np.isfinite(piv) and piv != 0.0):
            return piv
        if k:
            t /= piv
            Si[:k, :k] += np.multiply.outer(t * piv, t)
            Si[:k, k] = -t
            Si[k, :k] = -t
        Si[k, k] = 1.0 / piv
        self.Y[k] = y
        self.P[k] = p
        self.h[k] = h
        self.slot[k] = slot
        self.joined[k] = joined
        return piv

    def _drop(self, j: int, k: int) -> None:
        """Delete column j of k (the last one takes its place)."""
        last = k - 1
        Si = self.Sinv
        if j != last:
            for arr in (self.Y, self.P):
                arr[j] = arr[last]
            self.h[j] = self.h[last]
            self.slot[j] = self.slot[last]
            self.joined[j] = self.joined[last]
            # a true swap: the downdate below needs the deleted column's entries in the last place
            Si[[j, last], :k] = Si[[last, j], :k]
            Si[:k, [j, last]] = Si[:k, [last, j]]
        if last:
            b = Si[:last, last].copy()
            Si[:last, :last] -= np.multiply.outer(b, b / Si[last, last])

    def _remove_col(self, col_of: dict[int, int], who: int, k: int, wt: FloatArray, aT: FloatArray) -> int:
        """Drop ``who``'s bordering column (and a joined point's member position); returns k − 1."""
        s0 = self.s0
        j = col_of.pop(who)
        self._drop(j, k)
        last = k - 1
        T, CT = self.T, self.CT
        if j < last:
            col_of[int(self.slot[j])] = j
            T[s0 + j], CT[s0 + j], wt[s0 + j], aT[s0 + j] = T[s0 + last], CT[s0 + last], wt[s0 + last], aT[s0 + last]
        CT[s0 + last] = wt[s0 + last] = aT[s0 + last] = 0.0
        return last

    # -- one point ---------------------------------------------------------------------------------
    def value(self, c: int, Qc: FloatArray, loo_below: float) -> float | None:
        """Decrement α_c to 0 from the solved state.

        Only the engine's g (and α of the points that leave M) and its step count change; the
        caller restores the snapshot after each point. The members' α, the bias and the sets are
        followed here: the value needs g_c alone.

        Parameters
        ----------
        c : int
            The point's slot.
        Qc : ndarray
            Row c of Q over the slots.
        loo_below : float
            Stop once g_c falls below this (a certain verdict: g_c only falls on the way);
            −inf for none.

        Returns
        -------
        float or None
            g_c at α_c = 0; −inf when stopped early; None to leave the point to the general step.
        """
        e = self.eng
        hw, s0, M0, pos, H, Z = self.hw, self.s0, self.M0, self.pos, self.H, self.Z
        alpha, Cv = e._alpha, e._Cv
        g = e._g[:hw]
        Ys, Ps, Si, hs, T, CT, joined, cslot = self.Y, self.P, self.Sinv, self.h, self.T, self.CT, self.joined, self.slot
        kc = self.max_cols
        side = self.side0.copy()
        side[c] = 0.0
        # per member position: α, and the weight 1 on M₀ members still in M and on joined points
        # (0 elsewhere: a position left idle keeps α = 0 and never bounds the step)
        aT = np.zeros(s0 + kc)
        aT[:s0] = alpha[M0]
        CT[s0:] = 0.0
        wt = np.zeros(s0 + kc)
        wt[:s0] = 1.0
        x = np.zeros(s0 + kc)
        col_of: dict[int, int] = {}
        k = 0
        nm = s0                                  # |M|
        snap = e._gtol()
        qmax = e._qmax
        pc = int(pos[c])
        if pc >= 0:
            # c is in M₀: [Q_M₀c; a_c] is K₀'s own column, so z₀ = −e_c and G₀ = Q_:c − Q_:c = 0;
            # c leaves M at once (its bordering column: S = −H_cc, h = −z₀_c = 1)
            z0 = np.zeros(s0 + 1)
            z0[pc] = -1.0
            G0 = np.zeros(hw)
            self._push(0, c, False, np.zeros(0), -float(H[pc, pc]), H[pc], -Z[:, pc], 1.0)
            col_of[c] = 0
            wt[pc] = aT[pc] = 0.0
            k = 1
            nm -= 1
        else:
            z0 = -Z[c]
            G0 = self._column(c, Qc)[1]
        ac = float(alpha[c])
        if ac <= 0.0:
            return float(g[c])
        if nm == 0:
            return None                          # no margin vector: the bias-only step
        steps = 0
        try:
            for _ in range(20 * hw + 1000):
                steps += 1
                if g[c] < loo_below:
                    return -np.inf
                if k:
                    v = Si[:k, :k] @ hs[:k]
                    z = z0 - v @ Ys[:k]
                    gam = G0 + v @ Ps[:k]
                    x[s0:s0 + k] = v
                else:
                    z, gam = z0, G0
                x[:s0] = z[:s0]
                x *= wt                            # per unit of α_c; α_c falls, so the step is −x
                mu = float(z[s0])
                ax = np.abs(x)
                xmax = float(ax.max())
                tol_g = 1e-12 * max(qmax * (1.0 + float(ax.sum())) + abs(mu), 1e-300)
                btol = 1e-13 * (1.0 + xmax)
                lam, event, who, q = ac, 0, c, -1           # 0 target, 1 m->E, 2 m->R, 3 join
                lm = np.where(x < 0.0, CT - aT, aT)
                lm /= np.maximum(ax, btol)
                lm[ax <= btol] = np.inf
                qq = int(lm.argmin())
                if lm[qq] < lam:
                    lam, event, q = max(float(lm[qq]), 0.0), (1 if x[qq] < 0.0 else 2), qq
                    who = int(T[q])
                # an error point joins when its g rises (γ < 0 as α_c falls), a reserve point when it falls
                idx = np.flatnonzero(side * gam < -tol_g)
                if idx.size:
                    li = g[idx] / gam[idx]
                    qq = int(li.argmin())
                    if li[qq] < lam:
                        lam, event, who = max(float(li[qq]), 0.0), 3, int(idx[qq])
                if lam == 0.0 and event:
                    return None                    # a degenerate vertex: the general step resolves ties
                if event and float(g[c]) - lam * float(gam[c]) < loo_below:
                    return -np.inf                 # g_c passes the verdict on this segment: no event needed
                aT -= lam * x
                np.maximum(aT, 0.0, out=aT)
                np.minimum(aT, CT, out=aT)
                ac -= lam
                g -= lam * gam
                if event == 0:
                    return float(g[c])
                if abs(g[who]) <= snap:
                    g[who] = 0.0
                p = int(pos[who])
                if event != 3:
                    # a member leaves for its bound (α kept there for a later join)
                    bound = float(CT[q]) if event == 1 else 0.0
                    alpha[who] = aT[q] = bound
                    side[who] = 1.0 if event == 1 else -1.0
                    nm -= 1
                    if nm == 0:
                        return None                # no margin vector: the bias-only step
                    if p < 0:
                        k = self._remove_col(col_of, who, k, wt, aT)
                        continue
                    if k == kc:
                        return None
                    # a member of M₀ leaves: its unit column eₚ (S row −Y[:, p], diagonal −H_pp)
                    wt[p] = 0.0
                    if not self._push(k, who, False, -Ys[:k, p], -float(H[p, p]), H[p], -Z[:, p],
                                      -float(z0[p])) < 0.0:
                        return None
                    col_of[who] = k
                    k += 1
                    continue
                # an error or reserve point reached g = 0: it joins M
                nm += 1
                side[who] = 0.0
                if p >= 0:
                    k = self._remove_col(col_of, who, k, wt, aT)
                    wt[p] = 1.0
                    continue
                if k == kc:
                    return None
                Qa = e._op.row(who)
                u, r = self._column(who, Qa)
                ya = Z[who]
                srow = np.where(joined[:k], Qa[cslot[:k]], 0.0) - Ys[:k] @ u
                # the pivot is the squared distance of the point from M's span: near 0 it
                # depends on M, which the general step treats
                piv = self._push(k, who, True, srow, float(Qa[who]) - float(u @ ya), ya, r,
                                 -float(Qc[who]) - float(u @ z0))
                if not piv > 1e-10 * max(float(Qa[who]), 1e-300):
                    return None
                col_of[who] = k
                T[s0 + k], CT[s0 + k], wt[s0 + k], aT[s0 + k] = who, Cv[who], 1.0, alpha[who]
                k += 1
            return None
        finally:
            e.stats["steps"] += steps
