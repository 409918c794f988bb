"""The regularization path of the exact incremental SVM, and the leave-one-out values built on it.

Moving C (every C_i scaled with it) keeps the dual solved along a piecewise-linear path: α_E
moves with C, the margin α and the multiplier b through M's factor, and the path breaks where a
point changes set (Cauwenberghs and Poggio's path in C; Diehl and Cauwenberghs 2003). On a segment
α is linear in C, so ν(C) = eᵀα/(C l) meets a target ν at a C found exactly on the segment
(Chang and Lin: the ν-SVC is the C-SVC at that C). Leave-one-out decrements each point to 0 —
through :class:`qpcore_incremental.incremental_loo.LOODecrements` (the margin KKT matrix inverted once),
or with the path engine's adiabatic move where the C path re-tunes C (ν mode) or that cannot
treat a point — reads the point's margin value and restores the state from a snapshot.

:class:`RegularizationPath` adds these to :class:`qpcore_incremental.incremental_path.PathEngine`; the
user's models (:mod:`qpcore_incremental.incremental`) extend it.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore_incremental.incremental_loo import LOODecrements
from qpcore_incremental.incremental_path import ERROR, MARGIN, RESERVE, PathEngine, entry_event

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["Breakpoint", "NuNotReached", "RegularizationPath"]


@attrs.frozen
class Breakpoint:
    """A break point of a regularization path: the C where a set changed.

    Attributes
    ----------
    C : float
        The value of C.
    event : str
        ``"margin->reserve"``, ``"margin->error"``, ``"error->margin"``, ``"reserve->margin"``,
        ``"bias"`` (no margin vector: the bias alone moved) or ``"end"``.
    id : int
        The point that changed set (−1 for ``"end"``).
    n_margin, n_error, n_reserve : int
        Set sizes after the event.
    """

    C: float
    event: str
    id: int
    n_margin: int
    n_error: int
    n_reserve: int


class NuNotReached(RuntimeError):
    """A C path with a target ν ended (at its far end, or with digits of ν(C) lost) short of it."""


class RegularizationPath(PathEngine):
    """:class:`qpcore_incremental.incremental_path.PathEngine` with the exact path in C (or ν) and the
    leave-one-out values; the state and the steps are the engine's."""

    # -- the regularization path ---------------------------------------------------------------------
    def _c_path(self, C1: float, nu: float | None = None, *, count: int | None = None,
                guard: bool = True, check: bool = True) -> list[Breakpoint]:
        """Move C exactly from its current value to ``C1`` (up or down), scaling every C_i with it.

        α_E = C_i·(C/C₀) moves with C, the margin α and b through M's factor (the right-hand side's
        derivative in C is −[Q_ME w_E; a_Eᵀw_E]; c and β are constant), and the path breaks where
        a set changes. With ``nu``, it stops where ν(C) = eᵀα/(C l) equals ``nu`` (``C1`` is then
        only the far end searched; ``count``: the l of ν(C), default the number of points; a
        point left a candidate at α = 0 stays out). Leaves the state solved at the C reached
        (:attr:`C`); ``guard=False`` skips the closing refresh and check (leave-one-out's inner
        paths, whose candidate the check would reject; the snapshot restores the state after);
        ``check=False`` leaves only the check to a caller that makes it next.
        """
        op = self._op
        hw = op.n_slots
        y = self._a[:hw]
        alpha, g, st = self._alpha, self._g, self._status
        C = self.C
        w = self._Cv[:hw] / C                      # C_i = w_i C along the path
        s = 1.0 if C1 > C else -1.0
        out: list[Breakpoint] = []

        def mark(event: str, who: int) -> None:
            stv = st[:hw]
            out.append(Breakpoint(C=C, event=event, id=int(self._id[who]) if who >= 0 else -1,
                                  n_margin=int((stv == MARGIN).sum()), n_error=int((stv == ERROR).sum()),
                                  n_reserve=int((stv == RESERVE).sum())))

        wE = np.where(st[:hw] == ERROR, w, 0.0)
        u = self._error_product(C)                 # Q_:E w_E, updated as E changes
        blocked: set[int] = set()
        S = target = 0.0
        if nu is not None:
            # ν(C) = eᵀα/(C l) (Chang and Lin 2001): α is affine in C on a segment, so the C where
            # ν(C) meets the target is a root of a linear equation there
            target = float(nu) * float(op.n_alive if count is None else count)
        for _ in range(20 * hw + 1000):
            if nu is not None:
                S = float(alpha[:hw][op.alive].sum())      # exact each segment (no drift, O(n))
                if abs(S - target * C) <= 1e-12 * (S + target * C):
                    C1 = C                             # reached (also where ν(C) is flat)
            if C == C1:
                break
            self.stats["steps"] += 1
            stE, stR = st[:hw] == ERROR, st[:hw] == RESERVE
            if self._fac.size == 0:
                # no margin vector: shift the bias to the nearest point's g = 0 and let it track it.
                # When α_E = w_E·C moves aᵀα (β ≠ 0: the one-class), the point must also be able to
                # compensate: one whose α can rise (R) or fall (E) as the equality asks
                alive = (stE | stR) & op.alive
                drift = s * float(y @ wE)
                if abs(drift) > 1e-12 * float(np.abs(y).max(initial=0.0)) * float(wE.sum()):
                    up = -drift * y > 0.0              # a_k·dα_k = −drift: dα_k > 0 wanted
                    alive &= np.where(up, stR, stE)
                if not alive.any():
                    break
                cand = np.flatnonzero(alive)
                k = int(cand[np.argmin(np.abs(g[cand]))])
                db = -float(g[k]) / float(y[k])
                self._b += db
                g[:hw] += y * db
                g[k] = 0.0
                if self._add_margin(k, np.asarray(op.row(k))) is not None:
                    raise RuntimeError("c_path: a single point is singular")
                if stE[k]:
                    u -= w[k] * np.asarray(op.row(k))
                    wE[k] = 0.0
                mark("bias", k)
                continue
            mem = self._fac.members
            rows = self._qmrow[mem]
            yw = float(y @ wE)
            x, mu = self._fac.solve_kkt(-u[mem], -yw)
            coef = np.zeros(self._nq)
            coef[rows] = x
            gam = (coef @ self._QM[:self._nq])[:hw] + u + mu * y
            sg = s * gam
            dx = s * x
            lam, event, who = abs(C1 - C), "end", -1
            dS = 0.0
            if nu is not None:
                dS = float(dx.sum()) + s * float(wE[op.alive[:hw]].sum())
                den = dS - target * s
                if den != 0.0:
                    lstar = (target * C - S) / den
                    if 0.0 <= lstar <= lam:
                        lam = lstar
            btol = 1e-13 * (1.0 + float(np.abs(dx).max(initial=0.0)))
            am, wm = alpha[mem], w[mem]
            # a margin α can head for 0 and for the moving ceiling w_k·C at once (C falling faster
            # than α): both limits count, the nearer one wins
            l_dn = np.full(mem.size, np.inf)
            dn = dx < -btol
            l_dn[dn] = am[dn] / -dx[dn]
            l_up = np.full(mem.size, np.inf)
            upr = dx - s * wm                      # d(α_k − w_k C)/dλ
            up = upr > btol
            l_up[up] = (wm[up] * C - am[up]) / upr[up]
            lm = np.minimum(l_dn, l_up)
            k = int(np.argmin(lm))
            if lm[k] < lam:
                lam, who = max(float(lm[k]), 0.0), int(mem[k])
                event = "margin->error" if l_up[k] < l_dn[k] else "margin->reserve"
            tol_g = 1e-12 * (self._qmax * (1.0 + float(np.abs(x).sum()) + float(np.abs(wE).sum())) + abs(mu))
            hit = entry_event(g, sg, stE, stR, blocked, tol_g)
            if hit is not None and hit[0] < lam:
                lam, who = max(hit[0], 0.0), hit[1]
                event = "error->margin" if stE[who] else "reserve->margin"
            if event == "end" and nu is not None:
                C1 = C + s * lam                   # where ν(C) meets the target (or the far end)
            C = C1 if event == "end" else C + s * lam
            alpha[mem] = np.clip(am + lam * dx, 0.0, wm * C)
            e = np.flatnonzero(stE)
            alpha[e] = w[e] * C
            self._b += s * lam * mu
            g[:hw] += lam * sg
            self._drift += 1e-3 * tol_g * lam          # the rounding bound, as in _move
            if lam > 0:
                blocked.clear()
            if event == "end":
                break
            if abs(g[who]) <= self._gtol():
                g[who] = 0.0
            if event == "margin->error":
                self._remove_margin(who, ERROR)
                alpha[who] = w[who] * C
                u += w[who] * np.asarray(op.row(who))
                wE[who] = w[who]
            elif event == "margin->reserve":
                self._remove_margin(who, RESERVE)
            else:
                row = np.asarray(op.row(who))
                if self._add_margin(who, row) is not None:
                    blocked.add(who)
                    continue
                if event == "error->margin":
                    u -= w[who] * row
                    wE[who] = 0.0
            if lam == 0.0 and event.startswith("margin"):
                blocked.add(who)
            mark(event, who)
        else:
            raise RuntimeError("c_path: no convergence")
        S = float(alpha[:hw][op.alive].sum())
        missed = nu is not None and abs(S - target * C) > 1e-9 * (S + target * C)
        if not guard:
            if missed:
                raise NuNotReached("nu_path: ν(C) did not reach the target within the C range searched")
            self.C = C1
            self._Cv[:hw] = w * C1
            e = np.flatnonzero(st[:hw] == ERROR)
            alpha[e] = self._Cv[e]
            return out
        self.C = C1
        self._Cv[:hw] = w * C1
        e = np.flatnonzero(st[:hw] == ERROR)
        alpha[e] = self._Cv[e]
        # the guard: never hand back a model that looks solved and is not (it recomputes g when
        # the rounding the path's updates gathered nears the tolerance)
        if check:
            self._ensure("c_path")
        if missed:
            raise NuNotReached("nu_path: ν(C) did not reach the target within the C range searched")
        mark("end", -1)
        return out

    def _error_product(self, C: float) -> FloatArray:
        """Q_:E w_E (α_E = w_E C) from the maintained quantities, without a product with Q.

        Qα = g + c − a b over the points (g = Qα − c + a b is kept), and its margin part Q_:M α_M
        comes from M's buffered rows; what is left is the error vectors' part (reserve points
        have α = 0). O(|M| n), where a product with Q costs n² kernel entries.
        """
        op = self._op
        hw = op.n_slots
        Qa = np.where(op.alive, self._g[:hw] + self._lin[:hw] - self._a[:hw] * self._b, 0.0)
        mem = self._fac.members
        if mem.size:
            # M's rows are the buffer's first rows (in any order): weight them in place, no gather
            coef = np.zeros(self._nq)
            coef[self._qmrow[mem]] = self._alpha[mem]
            Qa -= coef @ self._QM[:self._nq, :hw]
        out: FloatArray = Qa / C
        return out

    def _loo_values(self, loo_below: float, nu: float | None = None, every: bool = False,
                    C_after: float | None = None) -> FloatArray:
        """Each point's leave-one-out margin value g₋ᵢ(xᵢ), over :meth:`qpcore.backends.dynamic.DynamicKernelQ.slots`.

        For each point with α > 0 (``every``: each point), α_c is decremented adiabatically to 0 —
        stopping early, with −inf, once g_c < ``loo_below``, a certain verdict since g_c only falls
        on the way — and with ``nu`` the C path then restores ν(C) = ν over the other l − 1
        points; with ``C_after`` the C path first moves C there (the one-class ν mode: C = 1/(ν(l − 1)),
        which leaves room for α_c's share). The state is restored from a snapshot after each point
        (bit for bit, no drift).
        A reserve point's value is its g when it is not recomputed; NaN where no state exists
        without the point.
        """
        sl = self._op.slots()
        hw = self._op.n_slots
        out = np.full(hw, np.nan)
        res = self._status[sl] == RESERVE
        out[sl[res]] = self._g[sl[res]]
        work = sl if every else sl[~res]
        if nu is None and C_after is None:
            out[work] = self._decrement_values(work, loo_below)
            return out[sl]
        snap = self._save()
        try:
            for c in work.tolist():
                try:
                    if C_after is not None:
                        self._c_path(C_after, guard=False)
                    why = self._decrement(c, loo=nu is None, loo_below=loo_below)
                    if why == "loo":
                        out[c] = -np.inf
                    else:
                        if nu is not None:
                            far = self.C * 1e10 if self._nu_now(int(sl.size) - 1) > nu else self.C * 1e-10
                            self._c_path(far, nu, count=int(sl.size) - 1, guard=False)
                        out[c] = float(self._g[c])
                except RuntimeError:
                    out[c] = np.nan            # no state without this point (an infeasible ν or C)
                self._restore(snap)
        finally:
            self._qm_written = None
        return out[sl]

    def _decrement_values(self, work: IndexArray, loo_below: float = -np.inf, block: int = 256) -> FloatArray:
        """g_c at α_c = 0 for each slot c of ``work``, each decremented from the solved state and
        the state restored after (−inf once g_c < ``loo_below``, a certain error; NaN where no
        state exists without the point).

        The decrements run through :class:`qpcore_incremental.incremental_loo.LOODecrements` (M's KKT
        matrix inverted once; neither the factor nor the row buffer is written, so a restore is
        a few O(n) copies); a point it hands back takes the general step from the restored state
        (``stats["loo_general"]`` counts them). The rows Q_c are gathered in blocks, one kernel
        product each.
        """
        out = np.full(work.size, np.nan)
        if work.size == 0:
            return out
        hw = self._op.n_slots
        block = max(1, min(block, (4 << 20) // max(hw, 1)))      # a block of rows within 32 MB
        snap = self._save()
        fast = LOODecrements.build(self)
        try:
            for b0 in range(0, int(work.size), block):
                chunk = work[b0:b0 + block]
                Qb = self._op.rows(chunk) if fast is not None else None
                for k, c in enumerate(chunk.tolist()):
                    val: float | None = None
                    try:
                        if fast is not None and Qb is not None:
                            val = fast.value(c, Qb[k, :hw], loo_below)
                            if val is None:
                                self.stats["loo_general"] += 1
                                self._restore(snap)
                        if val is None:
                            why = self._decrement(c, loo=bool(np.isfinite(loo_below)), loo_below=loo_below)
                            val = -np.inf if why == "loo" else float(self._g[c])
                    except RuntimeError:
                        val = np.nan           # no state without this point
                    out[b0 + k] = val
                    self._restore(snap)
        finally:
            self._qm_written = None
        return out

    def _nu_now(self, count: int | None = None) -> float:
        """ν(C) = eᵀα / (C l) over the points (l = ``count``, default their number)."""
        sl = self._op.slots()
        l = int(sl.size) if count is None else int(count)
        return float(self._alpha[sl].sum()) / (self.C * l) if l else 0.0
