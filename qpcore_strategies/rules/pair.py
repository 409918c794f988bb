"""The built-in pair rules: SMO's working-set rules, also decomposition's (a pair is a set of size 2).

- :class:`SecondOrderRule`: LIBSVM's second-order rule (Fan, Chen and Lin 2005), SMO's default;
- :class:`MaximalViolatingPair`: the first-order rule of Keerthi et al. (2001);
- :class:`PlattHeuristic`: Platt's first- and second-choice heuristics (1998).

Each reads only the :class:`qpcore.core.rules.RuleView` (the protocol and the view live in
:mod:`qpcore.core.rules`), so it is correct with shrinking on and plugs into SMO and
decomposition alike. Pairs for disjoint equality groups; single indices for the fixed-threshold
SVM (no equality row). Their names are in :mod:`qpcore_strategies.rules.names`.

On SMO's problems (±1 equality groups, or no equality row) MaximalViolatingPair and
SecondOrderRule return None exactly when the stopping measure of the variables they see is within
tol, so SMO never needs a fallback for them. PlattHeuristic can
return None with the measure above tol (its passes refuse steps below ``eps``); it asks SMO for
the maximal violating pair as its fallback (``PlattHeuristic.fallback``), which SMO counts apart
and reports (:mod:`qpcore_strategies.rules.stopping`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.core.optimality import Scores, maximal_violating_pair, projected_gradient
from qpcore.core.rules import RuleView

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

TAU = 1e-12  # LIBSVM's guard: curvature below this is treated as non-positive

__all__ = ["TAU", "MaximalViolatingPair", "PlattHeuristic", "SecondOrderRule", "pair_steps"]


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

    A pass over all examples that changes nothing ends the rule (None), also when the gap is
    still above tol: a violating pair whose step is below ``eps`` (a variable a rounding error
    inside its bound) is refused. It therefore asks SMO for a ``fallback``.

    Parameters
    ----------
    eps : float
        Smallest relative change of x_i2 that counts as progress (Platt's ``eps``).
    fallback : str, pair rule or None
        The rule SMO finishes with when this one gives up with the gap above tol (``SMO``'s
        ``fallback`` option, which overrides it): the maximal violating pair by default, its
        steps counted in ``stats["fallback_steps"]`` and reported by a warning; None: the run
        ends ``stalled`` there. Decomposition has no fallback (its run ends ``stalled``).
    """

    kind: ClassVar[Literal["pair"]] = "pair"
    eps: float = 1e-12
    fallback: Any = "mvp"

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
