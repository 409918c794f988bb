"""The reduced problem of the cutting planes, solved by a warm-started primal active set.

Over k cuts with Gram matrix G and offsets b the reduced problem is

    min_β f(β) = ½βᵀGβ − bᵀβ   over   β ≥ 0, Σβ ≤ 1.

With the slack s = 1 − Σβ as one more variable whose cut is the zero vector (a row and column of
zeros in G, offset 0), it is the same quadratic over the unit simplex, x = (β, s):
min ½xᵀG̃x − b̃ᵀx, x ≥ 0, 1ᵀx = 1. :class:`CutQP` keeps, across calls, the free set F and the
upper Cholesky factor of the bordered KKT matrix of F (:class:`qpcore.linalg.factor.BorderedCholesky`
with the all-ones row), so that a new cut costs one O(|F|²) append and a cut leaving F one
O(|F|²) downdate; a call of an OCAS iteration is a few such pivots plus the gradient, O(k·|F|).

**Dependence.** The KKT matrix of F is singular exactly when F's points (the cuts, the slack at the
origin) are affinely dependent: G is a Gram matrix of k cuts in dimension d, often k > d, and cuts
can be nearly parallel. Then ``add`` returns a null direction v (v = 1 on the entering variable,
1ᵀv = 0, G̃v ≈ 0) along which f is linear; x moves along v, downhill, to the first variable that
reaches 0, which leaves (or, when it is the entering one, the entering one stays at its bound). So F
stays affinely independent and every x is on the simplex.

**Exactness where it matters.** The caller computes the dual value D from the returned β, so β
must be feasible (it is: clipped to ≥ 0 and scaled onto Σβ ≤ 1 at the end) and accurate enough for
convergence: the stopping test is the Frank–Wolfe gap xᵀg − min_i g_i ≥ f(x) − f* with g = G̃x − b̃
formed from G itself, not from the factor, so an inaccurate factor cannot claim optimality (it is
refactored once, then the call stops with its feasible point).

Cuts are named by ids (an id stands for one fixed cut vector): a call passes the current cuts' ids,
and members of the factor whose ids are gone are deleted from it; an aggregated cut is a new id.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.linalg.factor import BorderedCholesky, Dependence

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["CutQP", "SLACK"]

#: the id of the slack variable in the factor (cut ids are ≥ 0)
SLACK = -1


@attrs.define(eq=False)
class CutQP:
    """Warm-started primal active-set solver of ``min ½βᵀGβ − bᵀβ, β ≥ 0, Σβ ≤ 1`` (module docstring).

    Parameters
    ----------
    singular_tol : float
        A pivot of the bordered factor at or below this fraction of its diagonal entry is a
        dependence (:class:`qpcore.linalg.factor.BorderedCholesky`).
    rescale : float
        The factor's shift τ (the scale of G's diagonal when the factor was made) is renewed, by
        refactoring, when G's diagonal scale has moved by more than this factor.

    Attributes
    ----------
    counters : dict
        ``pivots`` (variables entering or leaving F), ``dependences`` (ray steps),
        ``refactors``, ``cut_short`` (calls stopped at the pivot limit or on a factor that stays
        inaccurate).
    """

    singular_tol: float = 1e-11
    rescale: float = 1e4
    counters: dict[str, int] = attrs.Factory(lambda: {"pivots": 0, "dependences": 0, "refactors": 0,
                                                      "cut_short": 0})
    _fac: BorderedCholesky | None = None
    _tau: float = 0.0
    #: the last call's ids and the factor's members as positions among them (the slack as k)
    _ids: IntArray = attrs.Factory(lambda: np.zeros(0, dtype=np.int64))
    _F: NDArray[np.intp] = attrs.Factory(lambda: np.zeros(0, dtype=np.intp))

    @property
    def free(self) -> IntArray:
        """The ids in the free set, in factor order (the slack is :data:`SLACK`)."""
        if self._fac is None:
            return np.zeros(0, dtype=np.int64)
        return self._fac.members.astype(np.int64)

    def reset(self) -> None:
        """Forget the factor (the next call starts from its β alone)."""
        self._fac = None

    # ------------------------------------------------------------------------------------------
    def solve(self, G: FloatArray, b: FloatArray, ids: IntArray, beta: FloatArray, tol: float,
              max_pivots: int | None = None) -> FloatArray:
        """Solve the reduced problem from the warm start ``beta``.

        Parameters
        ----------
        G : ndarray, shape (k, k)
            The cuts' Gram matrix (symmetric positive semidefinite).
        b : ndarray, shape (k,)
            The offsets.
        ids : ndarray of int, shape (k,)
            Each cut's id (≥ 0, distinct; an id seen before must name the same cut vector).
        beta : ndarray, shape (k,)
            The warm start (made feasible: negative entries to 0, scaled onto Σβ ≤ 1).
        tol : float
            Stop when the Frank–Wolfe gap xᵀg − min_i g_i (≥ f(β) − min f) is at most ``tol``.
        max_pivots : int, optional
            Pivots allowed in this call (default 3(k + 1) + 50).

        Returns
        -------
        ndarray
            β ≥ 0 with Σβ ≤ 1 (always feasible, also when the call is cut short).
        """
        k = int(b.size)
        limit = 3 * (k + 1) + 50 if max_pivots is None else int(max_pivots)
        x = np.zeros(k + 1)
        bv = np.asarray(beta, dtype=np.float64)
        np.copyto(x[:k], bv, where=bv > 0)           # NaN and negative entries to 0
        tot = float(x[:k].sum())
        if tot > 1.0:
            x[:k] /= tot
            tot = float(x[:k].sum())
        x[k] = max(0.0, 1.0 - tot)
        run = _Run(self, G, b, ids, x)
        run.sync()
        # x was the last call's answer on the same free set (cuts only appended, none of its support
        # outside F): it solves the KKT system of F already, so the first solve is skipped
        warm = run.crash() and run.appended
        run.optimize(tol, limit, warm)
        self._ids, self._F = run.ids.copy(), run.F.copy()
        out = np.maximum(run.x[:k], 0.0)
        tot = float(out.sum())
        while tot > 1.0:        # one division, and a rounding step down if its sum still exceeds 1
            out *= (1.0 - 2.0 ** -52) / tot
            tot = float(out.sum())
        return out


class _Run:
    """One call of :meth:`CutQP.solve`: the problem, x over cuts and slack (position k), the factor."""

    def __init__(self, owner: CutQP, G: FloatArray, b: FloatArray, ids: IntArray, x: FloatArray) -> None:
        self.owner, self.G, self.b, self.x = owner, G, b, x
        self.k = k = int(b.size)
        self.ids = np.asarray(ids, dtype=np.int64)
        self.bt = np.append(b, 0.0)            # b̃: the slack's offset is 0
        self.g = np.zeros(k + 1)
        self.fresh = False                       # g is G̃x − b̃ for the current x
        self.F = np.zeros(0, dtype=np.intp)      # the factor's members as positions, in factor order
        self.appended = False                    # the factor and F as the last call left them

    # -- the factor ---------------------------------------------------------------------------
    @property
    def fac(self) -> BorderedCholesky:
        fac = self.owner._fac
        assert fac is not None
        return fac

    def _add(self, p: int) -> Dependence | None:
        c, dg = self.col(p, self.F)
        dep = self.fac.add(self._id(p), c, dg, a_i=1.0)
        self.owner.counters["pivots"] += 1
        if dep is None:
            self.F = np.append(self.F, p)
        return dep

    def _remove(self, p: int) -> None:
        self.fac.remove(self._id(p))
        self.owner.counters["pivots"] += 1
        self.F = self.F[self.F != p]

    def sync(self) -> None:
        """Drop from the factor the cuts that are gone; renew it when G's scale has moved."""
        owner = self.owner
        k = self.k
        # the mean of G's diagonal (np.mean's arithmetic: its sum over k, without np.mean's wrapping)
        scale = float(np.diagonal(self.G).sum()) / k if k else 0.0
        scale = scale if scale > 0 else 1.0
        if owner._fac is not None and not (owner._tau / owner.rescale <= scale <= owner._tau * owner.rescale):
            owner._fac = None
        if owner._fac is None:
            owner._tau = scale
            owner._fac = BorderedCholesky(tau=scale, equality=True, singular_tol=owner.singular_tol)
            return
        old = owner._ids
        n = old.size
        if n <= k and bool((self.ids[:n] == old).all()):
            # cuts only appended since the last call (the usual case): the same positions
            F = owner._F.copy()
            F[F == n] = k
            self.F = F
            self.appended = True
            return
        pos = {int(i): p for p, i in enumerate(self.ids.tolist())}
        pos[SLACK] = k
        for i in self.fac.members.tolist():
            if int(i) not in pos:
                self.fac.remove(int(i))
        self.F = np.array([pos[int(i)] for i in self.fac.members.tolist()], dtype=np.intp)

    def col(self, p: int, F: NDArray[np.intp]) -> tuple[FloatArray, float]:
        """G̃[F, p] and G̃[p, p]."""
        k = self.k
        if p == k:
            return np.zeros(F.size), 0.0
        c = np.zeros(F.size)
        cut = F < k
        c[cut] = self.G[F[cut], p]
        return c, float(self.G[p, p])

    def grad(self) -> FloatArray:
        """g = G̃x − b̃ (the slack's entry 0), from G."""
        if not self.fresh:
            k = self.k
            g = self.g
            # G symmetric: xᵀG over contiguous rows (a gather of the support's columns copies them)
            g[:k] = self.x[:k] @ self.G
            g[:k] -= self.b
            g[k] = 0.0
            self.fresh = True
        return self.g

    def _id(self, p: int) -> int:
        return SLACK if p == self.k else int(self.ids[p])

    def enter(self, p: int, descent: bool = False) -> bool:
        """Add position p to F; on a dependence, the ray step along the null direction first.

        ``descent``: p was priced at a point stationary on F (ν_p < 0), so f decreases along the null
        direction v with x_p growing: its slope is ν_p (g is constant on F and 1ᵀv = 0), not the
        rounding noise of gᵀv, whose terms are g on F times entries of v that grow as large as the
        dependence is close. Otherwise (the crash) the slope is gᵀv, either way when flat.

        Returns whether p entered (False: p ended at its bound 0, or no step was possible).
        """
        owner = self.owner
        while True:
            F = self.F
            dep = self._add(p)
            if dep is None:
                return True
            owner.counters["dependences"] += 1
            at = np.append(F, p)
            v = dep.direction
            dirv = v if descent or float(self.grad()[at] @ v) <= 0 else -v
            neg = np.flatnonzero(dirv < 0)
            if not neg.size:
                return False
            ratios = self.x[at[neg]] / -dirv[neg]
            j = int(np.argmin(ratios))
            alpha = float(ratios[j])
            self.x[at] += alpha * dirv
            blocking = int(at[neg[j]])
            self.x[blocking] = 0.0
            np.maximum(self.x, 0.0, out=self.x)
            self.fresh = False
            if blocking == p:
                return False
            self._remove(blocking)

    def crash(self) -> bool:
        """F ⊇ the support of x: its variables outside F enter (largest first). Returns whether
        there were none."""
        out = self.x > 0
        out[self.F] = False
        if not out.any():
            return True
        for p in sorted(np.flatnonzero(out).tolist(), key=lambda p: -self.x[p]):
            if self.x[p] > 0:
                self.enter(p)
        return False

    def optimize(self, tol: float, limit: int, warm: bool = False) -> None:
        """Primal active-set iterations to the Frank–Wolfe gap ``tol`` or ``limit`` pivots (``warm``:
        x solves F's KKT system already)."""
        owner = self.owner
        start = owner.counters["pivots"]
        refused: set[int] = set()
        refactored = False
        refines = 0
        pending: FloatArray | None = self.x[self.F].copy() if warm else None
        last = -1
        while True:
            if owner.counters["pivots"] - start > limit:
                owner.counters["cut_short"] += 1
                return
            F = self.F
            if pending is None:
                y, _ = self.fac.solve_kkt(self.bt[F], 1.0)
            else:
                y, pending = pending, None
            if not np.isfinite(y).all():
                owner.counters["cut_short"] += 1
                return
            if float(y.min(initial=0.0)) < 0:
                # step towards y to the first variable reaching 0; it leaves F
                low = np.flatnonzero(y < 0)
                d = y - self.x[F]
                # y < 0 ≤ x on ``low`` (x ≥ 0 always), so d = y − x ≤ y < 0 there (rounding is
                # monotone): every ratio is a finite division, no guard or np.where needed
                ratios = self.x[F[low]] / -d[low]
                j = int(ratios.argmin())
                alpha = min(1.0, max(0.0, float(ratios[j])))
                self.x[F] += alpha * d
                p = int(F[low[j]])
                self.x[p] = 0.0
                np.maximum(self.x, 0.0, out=self.x)
                self.fresh = False
                self._remove(p)
                if p == last and alpha == 0.0:
                    refused.add(p)      # entered and left at once: rounding; not again this call
                continue
            self.x[F] = y
            self.fresh = False
            g = self.grad()
            xg = float(self.x @ g)
            # an inaccurate solve (an ill-conditioned free set) shows as a free variable with a lower
            # gradient than xᵀg: refine with the residual from G (λ = −xᵀg), then refactor, then stop
            if F.size and float(g[F].min()) - xg < -tol:
                if refines < 3:
                    refines += 1
                    dy, _ = self.fac.solve_kkt(xg - g[F], 1.0 - float(self.x[F].sum()))
                    pending = self.x[F] + dy
                    continue
                if refactored:
                    owner.counters["cut_short"] += 1
                    return
                refactored = True
                refines = 0
                self._refactor(F)
                continue
            gc = g.copy()
            gc[F] = np.inf
            if refused:
                gc[list(refused)] = np.inf
            p = int(gc.argmin())
            if not float(gc[p]) - xg < -tol:      # also when every variable is free or refused
                return
            last = p
            if not self.enter(p, descent=True):
                refused.add(p)

    def _refactor(self, F: NDArray[np.intp]) -> None:
        """Factor F afresh (members that turn out dependent are dropped with a ray step)."""
        self.owner.counters["refactors"] += 1
        self.owner._fac = BorderedCholesky(tau=self.owner._tau, equality=True, singular_tol=self.owner.singular_tol)
        self.F = np.zeros(0, dtype=np.intp)
        order = sorted(F.tolist(), key=lambda p: -self.x[p])
        for p in order:
            if self.x[p] > 0:
                self.enter(int(p))
