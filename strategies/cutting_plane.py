"""Cutting planes for the regularized hinge risk: BMRM, OCAS and the active-set OCAS of Xiao and Zhou.

They solve the fixed-threshold SVM dual ``min ½αᵀHHᵀα + cᵀα, 0 ≤ α ≤ u`` (a
:class:`qpcore.lowrank.DiagPlusLowRankQ` with d = 0, no equality) through its primal

    min_w F(w) = ½‖w‖² + R(w),   R(w) = Σ_i u_i max(0, ρ_i − h_iᵀw),   ρ = −c,

which for the hinge-loss linear SVM (h_i = y_i[x_i, bias], ρ = 1, u = C) is
½‖w‖² + Σ C_i max(0, 1 − y_i wᵀx̃_i). Each iteration touches the data only through two passes,
H w (margins) and Hᵀv (a subgradient); everything else is small:

- a **cut** at w is R(w') ≥ b − aᵀw' with a = Σ_{i∈V} u_i h_i, b = Σ_{i∈V} u_i ρ_i over the
  examples V violating at w;
- the **reduced problem** over cuts t = 1..k is the qpcore ``QP``
  ``min ½βᵀGβ − bᵀβ, β ≥ 0, s ≥ 0, Σβ + s = 1`` (G = the cuts' Gram matrix, one new row per
  iteration; the slack s makes Σβ ≤ 1 one all-ones equality row), solved by **any strategy**
  (``inner``) warm-started from the previous β; its solution gives w_t = Σβ_t a_t and the dual
  value D = Σβ_t b_t − ½‖w_t‖²;
- every β is a dual-feasible α: α_i = u_i Σ_t β_t [i ∈ V_t], with Hᵀα = w_t and D(α) = D, so
  F(w_b) − D is a duality gap that ``qpcore.solve`` re-checks from the problem alone
  (``state.primal = w_b``, :func:`qpcore.optimality.lagrangian_bound`).

:class:`BMRM` (libocas's method 0, SVMperf) cuts at w_t. :class:`OCAS` (Franc and Sonnenburg
2008/2009) keeps the best point w_b, moves it by an exact line search along w_b → w_t over the
sorted breakpoints of the piecewise-linear risk, and cuts at w_c = (1 − μ)w_b + μ w_t.
:class:`ActiveSetOCAS` (Xiao and Zhou 2013) runs OCAS's evaluation, line search and cuts over the
examples that can cross the margin only (the rest enter through an aggregated linear model), with
a periodic exact refresh.

``tol`` of ``qpcore.solve`` is libocas's TolRel: stop when F(w_b) − D ≤ tol·|F(w_b)|.

For data held as row chunks on a Dask cluster (``hinge_svm`` of a dask array, a
:class:`qpcore.chunked.ChunkedLowRankQ`) the same strategies, with the same iteration, statuses and
certificate, run their passes where the data are: :mod:`strategies.cutting_plane_chunked`.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.chunked import ChunkedLowRankQ
from qpcore.operators import DenseQ
from qpcore.problem import QP, ProblemError
from qpcore.solve import Strategy
from qpcore.state import State, Status
from strategies.active_set import DenseActiveSet

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IndexArray = NDArray[np.intp]

__all__ = ["ActiveSetOCAS", "BMRM", "OCAS", "line_search", "step_in_window"]

_SELECT_BELOW = 512      # the line search sorts at most this many breakpoints (selection above)


# --------------------------------------------------------------------------------------------- line search
def line_search(wd: float, dd: float, r: FloatArray, delta: FloatArray, u: FloatArray, *,
                slope: float = 0.0, t_max: float = np.inf) -> tuple[float, int]:
    """The exact minimizer over t ≥ 0 of φ(t) = t·wd + ½t²·dd + t·slope + Σ_i u_i max(0, r_i − t δ_i).

    φ is F(w_b + t d) up to a constant for wd = w_bᵀd, dd = ‖d‖², r = ρ − H w_b (residuals),
    δ = H d. It is convex and piecewise quadratic; its right derivative increases by u_i|δ_i| at
    each breakpoint t_i = r_i / δ_i > 0. The breakpoints are narrowed by selection (median
    splits, O(m) in all) until a few hundred remain, which are sorted: no O(m log m) sort of
    all m of them.

    Parameters
    ----------
    wd, dd : float
        w_bᵀd and ‖d‖² (≥ 0).
    r, delta, u : ndarray
        Residuals, their rates and the weights u ≥ 0 (same length).
    slope : float
        An extra constant slope (the linear model of examples left out of r, δ).
    t_max : float
        Upper end of the search interval.

    Returns
    -------
    t : float
        The minimizer in [0, t_max] (t_max when φ still decreases there).
    examined : int
        How many breakpoints the search looked at.
    """
    ud = u * delta
    with np.errstate(divide="ignore", invalid="ignore"):
        tb = r / delta
    # violating just after t = 0: r > 0, or r = 0 with δ < 0 (then t_i = ±0 is no breakpoint)
    s0 = wd + slope - float(ud[r > 0].sum())
    zero = tb == 0
    if zero.any():
        s0 -= float(ud[zero & (delta < 0)].sum())
    if s0 >= 0 or t_max <= 0:
        return 0.0, 0
    # a breakpoint t_i = r_i/δ_i > 0 needs r_i and δ_i of one sign: a violator that stops
    # violating (δ > 0) or a satisfied example that starts (δ < 0); δ = 0 gives ±inf or NaN.
    # Those in (0, 1] first (t = 1 is w_t itself, and the minimizer usually lies below): one
    # pass over all m decides the side, and only the short list is gathered
    near = np.flatnonzero((tb > 0) & (tb <= 1.0))
    ts = tb[near]
    jumps = np.abs(ud[near])
    base = 0.0          # the jumps of breakpoints known to lie left of the window
    examined = int(ts.size)
    jl = float(jumps.sum())
    if s0 + dd + jl < 0:
        far = np.flatnonzero((tb > 1.0) & (tb < np.inf))
        base = jl
        ts = tb[far]
        jumps = np.abs(ud[far])
        examined += int(ts.size)
    # selection: the right derivative at a pivot p is s0 + p·dd + base + Σ_{t_i ≤ p} jump_i
    while ts.size > _SELECT_BELOW:
        k = ts.size // 2
        p = float(np.partition(ts, k)[k])
        left = ts <= p
        jl = float(jumps[left].sum())
        right_slope = s0 + p * dd + base + jl
        if right_slope >= 0:
            if left.all():
                break        # all ties: sort what remains
            ts, jumps = ts[left], jumps[left]
        else:
            base += jl
            ts, jumps = ts[~left], jumps[~left]
    return step_in_window(s0, dd, base, ts, jumps, t_max), examined


def step_in_window(s0: float, dd: float, base: float, ts: FloatArray, jumps: FloatArray,
                   t_max: float = np.inf) -> float:
    """The last, exact step of :func:`line_search` (and of its distributed form), once the breakpoints
    that matter are known: the right derivative of φ is s0 + t·dd + base + Σ_{t_i ≤ t} jump_i over the
    window's breakpoints ``ts``, every breakpoint left of the window being counted in ``base``.

    Parameters
    ----------
    s0 : float
        φ's right derivative at 0 (< 0: a descent direction).
    dd : float
        φ's curvature ‖d‖² (≥ 0).
    base : float
        The jumps of the breakpoints left of the window (where the derivative is still < 0).
    ts, jumps : ndarray
        The window's breakpoints (any order, ties allowed) and their jumps u_i|δ_i|.
    t_max : float
        Upper end of the search interval.

    Returns
    -------
    float
        The minimizer in [0, t_max]: the kink where the derivative turns ≥ 0, the zero of the
        derivative between two kinks, or past the window's last breakpoint (t_max when φ is
        linear and still decreasing there).
    """
    order = np.argsort(ts, kind="stable")
    ts, jumps = ts[order], jumps[order]
    cum = base + np.cumsum(jumps)
    after = s0 + ts * dd + cum                # right derivative at each breakpoint
    hit = np.flatnonzero(after >= 0)
    if hit.size:
        k = int(hit[0])
        before = base if k == 0 else float(cum[k - 1])
        # zero of the derivative inside (t_{k−1}, t_k), else the kink t_k itself
        left_end = s0 + float(ts[k]) * dd + before
        t = float(ts[k]) if left_end < 0 or dd == 0 else -(s0 + before) / dd
    else:
        total = float(cum[-1]) if cum.size else base     # cum already starts from base
        if dd <= 0:
            return float(t_max)      # linear and decreasing to the end of the interval
        t = -(s0 + total) / dd
    return float(min(max(t, 0.0), t_max))


# --------------------------------------------------------------------------------------------- cuts
@attrs.define(eq=False)
class Cuts:
    """The cutting-plane model: cut vectors, offsets, their Gram matrix and weights.

    Attributes
    ----------
    A : ndarray
        (capacity, k) buffer; rows ``:n`` are the cuts a_t.
    b : ndarray
        Offsets b_t.
    G : ndarray
        (capacity, capacity) buffer of the Gram matrix a_sᵀa_t, one new row per cut.
    beta : ndarray
        The reduced problem's weights (length n) and ``slack`` its slack s.
    members : list
        For each cut, which examples it sums: packed bits over the m examples, or a float
        vector of fractions for an aggregated cut.
    idle : ndarray
        Iterations each cut has had β_t = 0 in a row.
    """

    A: FloatArray
    b: FloatArray
    G: FloatArray
    beta: FloatArray
    slack: float
    members: list[Any]
    idle: NDArray[np.int64]
    n: int = 0
    mix: Callable[[float, Any, float, Any], Any] | None = None

    @classmethod
    def empty(cls, dim: int, capacity: int = 16,
              mix: Callable[[float, Any, float, Any], Any] | None = None) -> Cuts:
        """No cuts yet; buffers for ``capacity`` of them. ``mix(f0, member0, f1, member1)`` forms an
        aggregated cut's member (default: the m-vector f0·member0 + f1·member1)."""
        return cls(A=np.zeros((capacity, dim)), b=np.zeros(capacity), G=np.zeros((capacity, capacity)),
                   beta=np.zeros(0), slack=1.0, members=[], idle=np.zeros(capacity, dtype=np.int64), mix=mix)

    def _grow(self) -> None:
        cap = 2 * self.A.shape[0]
        A = np.zeros((cap, self.A.shape[1]))
        A[:self.n] = self.A[:self.n]
        G = np.zeros((cap, cap))
        G[:self.n, :self.n] = self.G[:self.n, :self.n]
        b = np.zeros(cap)
        b[:self.n] = self.b[:self.n]
        idle = np.zeros(cap, dtype=np.int64)
        idle[:self.n] = self.idle[:self.n]
        self.A, self.G, self.b, self.idle = A, G, b, idle

    def add(self, a: FloatArray, b: float, member: Any) -> None:
        """Append a cut with weight 0; its Gram row is one product with the stored cuts."""
        if self.n == self.A.shape[0]:
            self._grow()
        k = self.n
        self.A[k] = a
        row = self.A[:k + 1] @ a
        self.G[k, :k + 1] = row
        self.G[:k + 1, k] = row
        self.b[k] = b
        self.idle[k] = 0
        self.members.append(member)
        self.beta = np.append(self.beta, 0.0)
        self.n = k + 1

    def remove(self, keep: BoolArray) -> None:
        """Keep only the cuts where ``keep`` (their weights must be 0 elsewhere)."""
        idx = np.flatnonzero(keep)
        n = idx.size
        self.A[:n] = self.A[idx]
        self.G[:n, :n] = self.G[np.ix_(idx, idx)]
        self.b[:n] = self.b[idx]
        self.idle[:n] = self.idle[idx]
        self.beta = self.beta[idx]
        self.members = [self.members[i] for i in idx]
        self.n = n

    def aggregate_oldest(self, m: int) -> None:
        """Replace the two oldest cuts by their β-weighted mean (w and D stay the same)."""
        b0, b1 = float(self.beta[0]), float(self.beta[1])
        tot = b0 + b1
        f0, f1 = (b0 / tot, b1 / tot) if tot > 0 else (0.5, 0.5)
        self.A[0] = f0 * self.A[0] + f1 * self.A[1]
        self.b[0] = f0 * self.b[0] + f1 * self.b[1]
        if self.mix is not None:
            self.members[0] = self.mix(f0, self.members[0], f1, self.members[1])
        else:
            self.members[0] = f0 * _member_vector(self.members[0], m) + f1 * _member_vector(self.members[1], m)
        self.beta[0] = tot
        keep = np.ones(self.n, dtype=bool)
        keep[1] = False
        self.remove(keep)
        k = self.n
        row = self.A[:k] @ self.A[0]
        self.G[0, :k] = row
        self.G[:k, 0] = row
        self.idle[0] = 0

    def reduced_qp(self) -> tuple[QP, float]:
        """min ½βᵀGβ − bᵀβ over β, s ≥ 0 with Σβ + s = 1, as a qpcore QP in θ = γβ (the slack last).

        The cuts of m examples have norms up to ~m while w = Σβ_t a_t stays O(1), so β is ~1/m:
        in θ = γβ with γ = max_t ‖a_t‖ the matrix G/γ², the costs b/γ and θ are all O(1) and the
        inner strategy's relative tolerances mean what they say. Returns the QP and γ.
        """
        k = self.n
        diag = np.diagonal(self.G)[:k]
        gamma = float(np.sqrt(diag.max(initial=0.0)))
        if not gamma > 0:
            gamma = 1.0
        M = np.zeros((k + 1, k + 1))
        M[:k, :k] = self.G[:k, :k] / (gamma * gamma)
        Q = DenseQ.trusted(M)
        Q.psd = True        # a Gram matrix
        c = np.zeros(k + 1)
        c[:k] = -self.b[:k] / gamma
        # valid by construction (a Gram matrix, a scaled simplex): built every iteration, not re-checked
        qp = QP.trusted(Q, c, np.zeros(k + 1), np.full(k + 1, gamma), np.ones((1, k + 1)), np.array([gamma]))
        return qp, gamma


def _inner_solve(inner: Strategy, qp: QP, x0: FloatArray, tol: float, state: State,
                 max_steps: int | None = None) -> FloatArray:
    """The inner strategy's own init/step/converged on the reduced problem, without the outer
    loop's certificate: the reduced problem is tiny and solved every iteration, and any feasible
    β is a valid dual point (its value is computed exactly afterwards). Stops at the deadline,
    at a status the strategy sets, or after ``max_steps`` (default 100·(k + 10); counted in
    ``inner_cut_short``)."""
    st = inner.init(qp, x0, tol)
    st.deadline = state.deadline
    steps = 0
    limit = 100 * (qp.n + 10) if max_steps is None else max_steps
    while st.stop is None and not inner.converged(qp, st, tol) and steps < limit:
        inner.step(qp, st)
        st.iteration += 1
        steps += 1
        if steps % 32 == 0 and st.out_of_time():
            break
    state.counters["inner_iterations"] += steps
    if steps >= limit:
        state.counters["inner_cut_short"] = state.counters.get("inner_cut_short", 0) + 1
    fin = getattr(inner, "finish", None)
    if fin is not None:
        fin(qp, st)
    x: FloatArray = st.x
    total = float(qp.b[0])
    if not np.isfinite(x).all() or np.any(x < -1e-12 * total) or abs(float(x.sum()) - total) > 1e-9 * total:
        # an inner failure must not break dual feasibility: fall back to the warm start
        return x0
    return x


def _member_vector(member: Any, m: int) -> FloatArray:
    if isinstance(member, tuple):          # ("bits", packed)
        return np.unpackbits(member[1], count=m).astype(np.float64)
    out: FloatArray = member
    return out


def _pack(mask: BoolArray) -> tuple[str, NDArray[np.uint8]]:
    return ("bits", np.packbits(mask))


# --------------------------------------------------------------------------------------------- the state
@attrs.define(eq=False)
class CutState:
    """What a cutting-plane run keeps (``state.extra``).

    Attributes
    ----------
    cuts : Cuts
        The model.
    w_b, m_b : ndarray
        The best point and its margins H w_b (BMRM: the last best iterate).
    F_b : float
        F(w_b).
    w_t, m_t : ndarray
        The reduced problem's solution and its margins.
    dual : float
        The reduced problem's value D, a lower bound on min F.
    trace : list of dict
        One entry per iteration: seconds, primal, dual, cuts, touched_eval, touched_search.
    """

    cuts: Cuts
    w_b: FloatArray
    m_b: FloatArray
    F_b: float
    w_t: FloatArray
    m_t: FloatArray | None
    dual: float
    rho: FloatArray
    u: FloatArray
    tol: float
    t0: float
    trace: list[dict[str, Any]] = attrs.Factory(list)
    eval_seconds: float = 0.0
    search_seconds: float = 0.0
    reach: float = 0.0
    stale: int = 0
    active: Any = None


def _check_problem(qp: QP) -> None:
    Q = qp.Q
    if not (hasattr(Q, "matvec_lowrank") and hasattr(Q, "rmatvec_lowrank") and hasattr(Q, "d")):
        raise ProblemError("cutting planes need Q = HHᵀ given as a qpcore.lowrank.DiagPlusLowRankQ "
                           "(e.g. problems.risk.hinge_svm); this operator has no low-rank factor")
    if np.any(np.asarray(Q.d) != 0):
        raise ProblemError("cutting planes need Q = HHᵀ with no diagonal part (d = 0): the hinge loss; "
                           "for the squared hinge (d > 0) use ASVM")
    if qp.m:
        raise ProblemError(f"cutting planes solve the fixed-threshold dual (no equality rows), got {qp.m}; "
                           "put the bias in as a constant feature (hinge_svm(bias=1))")
    if np.any(qp.lb != 0) or not np.isfinite(qp.ub).all() or np.any(qp.ub < 0):
        raise ProblemError("cutting planes need 0 ≤ α ≤ C with finite C ≥ 0 (the hinge risk's weights)")


def _risk(m: FloatArray, rho: FloatArray, u: FloatArray) -> float:
    return float(u @ np.maximum(rho - m, 0.0))


def _chunked(qp: QP) -> bool:
    """Whether the data are row chunks on a Dask cluster (then the passes run there)."""
    return isinstance(qp.Q, ChunkedLowRankQ)


def _engine() -> Any:
    """The chunked engine, imported on first use (it imports this module)."""
    import strategies.cutting_plane_chunked as engine

    return engine


@attrs.frozen
class _CuttingPlane:
    """Shared configuration and machinery (see the module docstring)."""

    inner: Strategy = attrs.field(factory=DenseActiveSet)
    inner_tol: float | None = None
    max_cuts: int | None = None
    drop_after: int | None = None
    tol_abs: float = 0.0
    target: float | None = None
    record_iterates: bool = False

    #: ``qpcore.solve`` judges ``tol`` on the certificate's relative duality gap (TolRel)
    criterion = "relative_gap"

    def __attrs_post_init__(self) -> None:
        if self.max_cuts is not None and self.max_cuts < 3:
            raise ProblemError(f"max_cuts: must be ≥ 3 (two oldest aggregated, one new), got {self.max_cuts}")
        if self.drop_after is not None and self.drop_after < 1:
            raise ProblemError(f"drop_after: must be ≥ 1, got {self.drop_after}")
        if self.inner_tol is not None and not self.inner_tol > 0:
            raise ProblemError(f"inner_tol: must be > 0, got {self.inner_tol}")
        if not self.tol_abs >= 0:
            raise ProblemError(f"tol_abs: must be ≥ 0, got {self.tol_abs}")

    # ------------------------------------------------------------------ Strategy protocol
    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Check the problem, evaluate the start (w = Hᵀx0, or 0) and make its cut.

        Parameters
        ----------
        qp : QP
            The fixed-threshold dual with Q = HHᵀ (d = 0), 0 ≤ α ≤ u, no equality.
        x0 : ndarray, optional
            A dual point; the run starts from its primal point w = Hᵀx0.
        tol : float
            TolRel.

        Returns
        -------
        State

        Raises
        ------
        ProblemError
            When the problem is not of this form.
        qpcore.chunked.ClusterError
            For chunked data, when the cluster loses data it cannot recompute.
        """
        if _chunked(qp):
            out: State = _engine().init(self, qp, x0, tol)
            return out
        _check_problem(qp)
        Q: Any = qp.Q
        rho, u = -qp.c, qp.ub
        k = int(Q.k)
        if x0 is None or not np.any(x0):
            w = np.zeros(k)
            m_b = np.zeros(qp.n)
            passes = 0
        else:
            w = np.asarray(Q.rmatvec_lowrank(x0), dtype=np.float64)
            m_b = np.asarray(Q.matvec_lowrank(w), dtype=np.float64)
            passes = 2
        F_b = 0.5 * float(w @ w) + _risk(m_b, rho, u)
        cs = CutState(cuts=Cuts.empty(k), w_b=w, m_b=m_b, F_b=F_b, w_t=w.copy(), m_t=None, dual=0.0,
                      rho=rho, u=u, tol=tol, t0=time.perf_counter())
        x = np.zeros(qp.n)
        state = State(x=x, g=qp.c.copy(), status=np.full(qp.n, -1, dtype=np.int8), extra=cs)
        state.primal = w.copy()
        state.counters.update(passes=passes, cuts=0, cuts_added=0, inner_iterations=0, refreshes=0,
                              touched_eval=0, touched_search=0, aggregated=0, dropped=0)
        self._start(qp, state)
        self._add_cut(qp, state, m_b)
        self._record(state, qp.n, 0)
        return state

    def converged(self, qp: QP, state: State, tol: float) -> bool:
        """F(w_b) − D ≤ tol·|F(w_b)| (or ≤ tol_abs); F(w_b) ≤ target ends the run as ``target``."""
        cs: CutState = state.extra
        gap = cs.F_b - cs.dual
        if gap <= tol * abs(cs.F_b) or gap <= self.tol_abs:
            return True
        if self.target is not None and cs.F_b <= self.target:
            state.stop = Status.TARGET
        return False

    def step(self, qp: QP, state: State) -> None:
        """One iteration: the reduced problem, one evaluation, the new point and one new cut.

        For chunked data (:mod:`strategies.cutting_plane_chunked`) the same iteration, its passes
        on the workers; a :class:`qpcore.chunked.ClusterError` carries ``primal = w_b``.
        """
        if _chunked(qp):
            _engine().step(self, qp, state)
            return
        self._iterate(qp, state)

    def _iterate(self, qp: QP, state: State) -> None:
        cs: CutState = state.extra
        before = (cs.F_b, cs.dual)
        self._solve_reduced(state)
        self._advance(qp, state)
        self._manage_cuts(state, qp.n)
        state.counters["cuts"] = cs.cuts.n
        if cs.trace:
            cs.trace[-1]["cuts"] = cs.cuts.n
        state.primal = cs.w_b
        # neither bound moving for many iterations (an inner solver that fails, or rounding at
        # the accuracy limit) ends the run honestly instead of spinning to max_iter
        cs.stale = cs.stale + 1 if (cs.F_b >= before[0] and cs.dual <= before[1]) else 0
        if cs.stale >= 50:
            state.stop = Status.STALLED

    def finish(self, qp: QP, state: State) -> None:
        """Write the dual point α_i = u_i Σ_t β_t [i ∈ V_t] (clipped to the box) into ``state.x``
        (for chunked data a chunked vector, built chunk by chunk on the workers)."""
        if _chunked(qp):
            _engine().finish(self, qp, state)
            return
        cs: CutState = state.extra
        m = qp.n
        acc = np.zeros(m)
        for t in np.flatnonzero(cs.cuts.beta > 0):
            acc += cs.cuts.beta[t] * _member_vector(cs.cuts.members[t], m)
        state.x = np.clip(cs.u * acc, 0.0, cs.u)
        # g = H(Hᵀα) + c; Hᵀα = w_t, whose margins the last evaluation computed
        if cs.m_t is not None and cs.m_t.shape[0] == m:
            state.g = cs.m_t + qp.c
        state.primal = cs.w_b

    def sync_gradient(self, qp: QP, state: State) -> None:
        """A progress snapshot sees the current dual point (one accumulation over the cuts)."""
        self.finish(qp, state)

    # ------------------------------------------------------------------ pieces
    def _start(self, qp: QP, state: State) -> None:
        """Hook for variants that keep more state (the active set)."""

    def _record(self, state: State, touched_eval: int, touched_search: int) -> None:
        cs: CutState = state.extra
        state.counters["touched_eval"] += touched_eval
        state.counters["touched_search"] += touched_search
        state.counters["cuts"] = cs.cuts.n
        cs.trace.append({"iteration": state.iteration, "seconds": time.perf_counter() - cs.t0,
                         "primal": cs.F_b, "dual": cs.dual, "cuts": cs.cuts.n,
                         "touched_eval": touched_eval, "touched_search": touched_search,
                         "eval_seconds": cs.eval_seconds, "search_seconds": cs.search_seconds})
        if self.record_iterates:
            cs.trace[-1]["w"] = cs.w_b.copy()

    def _cut_at(self, qp: QP, m: FloatArray, rho: FloatArray, u: FloatArray) -> tuple[FloatArray, float, BoolArray]:
        viol = rho - m > 0
        v = np.where(viol, u, 0.0)
        Q: Any = qp.Q
        a = np.asarray(Q.rmatvec_lowrank(v), dtype=np.float64)
        return a, float(v @ rho), viol

    def _add_cut(self, qp: QP, state: State, m: FloatArray) -> None:
        cs: CutState = state.extra
        a, b, viol = self._cut_at(qp, m, cs.rho, cs.u)
        state.counters["passes"] += 1
        cs.cuts.add(a, b, _pack(viol))
        state.counters["cuts_added"] += 1

    def _solve_reduced(self, state: State) -> None:
        cs: CutState = state.extra
        cuts = cs.cuts
        rqp, gamma = cuts.reduced_qp()
        x0 = np.append(cuts.beta, cuts.slack) * gamma
        # the slack absorbs rounding so the warm start is feasible
        x0[-1] = max(0.0, gamma - float(x0[:-1].sum()))
        scale = max(1.0, abs(cs.F_b))
        # 1 % of the outer target, or of the current gap while it is larger: an early reduced
        # problem need not be solved finer than the model it comes from is good (objective
        # units; the measure in θ is the gradient in β over γ, and Σθ ≤ γ)
        tol = self.inner_tol if self.inner_tol is not None else max(1e-13 * scale, 0.01 * cs.tol * scale,
                                                                     0.01 * (cs.F_b - cs.dual))
        # an explicit inner_tol gets a hundred times the step budget (a first-order inner method
        # on these rank-deficient problems can need tens of thousands of steps); a solve cut
        # short still gives a valid dual point and is counted in inner_cut_short
        x = _inner_solve(self.inner, rqp, x0, tol / gamma, state,
                         max_steps=None if self.inner_tol is None else 10_000 * (rqp.n + 10))
        beta = np.maximum(x[:-1], 0.0) / gamma
        tot = float(beta.sum())
        if tot > 1.0:
            beta /= tot
        cuts.beta = beta
        cuts.slack = max(0.0, 1.0 - float(beta.sum()))
        k = cuts.n
        cs.w_t = beta @ cuts.A[:k]
        # D(α) of the dual point these weights stand for (exact, whatever the inner accuracy)
        cs.dual = float(beta @ cuts.b[:k]) - 0.5 * float(cs.w_t @ cs.w_t)

    def _advance(self, qp: QP, state: State) -> None:
        raise NotImplementedError

    def _manage_cuts(self, state: State, m: int) -> None:
        cuts = state.extra.cuts
        newest = cuts.n - 1
        cuts.idle[:cuts.n] = np.where(np.append(cuts.beta[:newest] > 0, True), 0, cuts.idle[:cuts.n] + 1)
        if self.drop_after is not None:
            keep = cuts.idle[:cuts.n] < self.drop_after
            keep[newest] = True
            if not keep.all():
                state.counters["dropped"] += int((~keep).sum())
                cuts.remove(keep)
        if self.max_cuts is not None:
            while cuts.n > self.max_cuts:
                cuts.aggregate_oldest(m)
                state.counters["aggregated"] += 1


@attrs.frozen
class BMRM(_CuttingPlane):
    """Plain cutting planes (BMRM, SVMperf; libocas's method 0): the cut at the reduced solution.

    Parameters
    ----------
    inner : Strategy
        Solves the reduced QP (any qpcore strategy: DenseActiveSet, SMO, GPCG).
    inner_tol : float, optional
        Its tolerance (default: 1 % of the outer absolute target tol·|F|, or of the gap while
        larger, with at most 100·(k + 10) inner steps; given explicitly, 10,000·(k + 10) steps).
    max_cuts : int, optional
        At most this many cuts: the two oldest are aggregated (their β-weighted mean).
    drop_after : int, optional
        Remove a cut whose weight has been 0 for this many iterations.
    tol_abs : float
        Stop when F(w_b) − D ≤ tol_abs (libocas's TolAbs).
    target : float, optional
        Stop with status ``target`` once F(w_b) ≤ target (libocas's QPValue).
    record_iterates : bool
        Keep a copy of w_b in every trace entry (``trace[k]["w"]``), to judge each iterate
        afterwards (benchmarks); off by default (dim floats per iteration).
    """

    def _advance(self, qp: QP, state: State) -> None:
        if _chunked(qp):
            _engine().advance_bmrm(self, qp, state)
            return
        cs: CutState = state.extra
        Q: Any = qp.Q
        t = time.perf_counter()
        m_t = np.asarray(Q.matvec_lowrank(cs.w_t), dtype=np.float64)
        F_t = 0.5 * float(cs.w_t @ cs.w_t) + _risk(m_t, cs.rho, cs.u)
        cs.eval_seconds += time.perf_counter() - t
        state.counters["passes"] += 1
        cs.m_t = m_t
        if F_t < cs.F_b:
            cs.w_b, cs.m_b, cs.F_b = cs.w_t.copy(), m_t, F_t
        self._add_cut(qp, state, m_t)
        self._record(state, qp.n, 0)


@attrs.frozen
class OCAS(_CuttingPlane):
    """The optimized cutting plane algorithm (Franc and Sonnenburg 2008/2009; libocas's method 1).

    Keeps the best point w_b; each iteration evaluates the reduced solution w_t (one pass),
    moves w_b to the exact minimizer of F on the ray w_b → w_t (the breakpoints of the risk,
    :func:`line_search`), and cuts at w_c = (1 − μ)w_b + μ w_t (one pass).

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
        if _chunked(qp):
            _engine().advance_ocas(self, qp, state)
            return
        cs: CutState = state.extra
        Q: Any = qp.Q
        t0 = time.perf_counter()
        m_t = np.asarray(Q.matvec_lowrank(cs.w_t), dtype=np.float64)
        t1 = time.perf_counter()
        state.counters["passes"] += 1
        cs.m_t = m_t
        d = cs.w_t - cs.w_b
        delta = m_t - cs.m_b
        dd = float(d @ d)
        if dd <= (1e-13 * max(1.0, float(np.sqrt(cs.w_b @ cs.w_b)))) ** 2:
            step = 0.0               # w_t = w_b to rounding: δ is cancellation noise, no direction
        else:
            step, _ = line_search(float(cs.w_b @ d), dd, cs.rho - cs.m_b, delta, cs.u)
        # how far the margins moved (to the new w_b or to the cut point): the active set's step bound
        cs.reach = max(step, self.mu) * float(np.abs(delta).max(initial=0.0))
        cs.w_b = cs.w_b + step * d
        if step <= 4.0:
            cs.m_b = cs.m_b + step * delta
        else:
            # a long step amplifies the rounding of δ: the margins of the new point afresh
            cs.m_b = np.asarray(Q.matvec_lowrank(cs.w_b), dtype=np.float64)
            state.counters["passes"] += 1
        cs.F_b = 0.5 * float(cs.w_b @ cs.w_b) + _risk(cs.m_b, cs.rho, cs.u)
        t2 = time.perf_counter()
        cs.eval_seconds += t1 - t0
        cs.search_seconds += t2 - t1
        m_c = (1.0 - self.mu) * cs.m_b + self.mu * m_t
        self._add_cut(qp, state, m_c)
        self._record(state, qp.n, qp.n)


@attrs.frozen
class ActiveSetOCAS(OCAS):
    """OCAS over an active set of examples (Xiao and Zhou 2013).

    At an exact refresh (a full OCAS iteration over all examples) each example gets its distance
    estimate D_i = |ρ_i − h_iᵀw_b|, how far its margin is from the hinge's kink, and the step
    bound Λ = ``radius`` × the largest margin change of that iteration (max_i |Δ(h_iᵀw)| over the
    line-search step and the cut point). The examples with D_i ≤ Λ form the active set X^a; the
    others are expected to keep their side until the margins have moved by Λ in all, so they
    enter F as one linear model: the violators among them contribute B_0 − a_Xᵀw, with a_X their
    summed subgradient Σ u_i h_i and B_0 = Σ u_i ρ_i (together with ½‖w‖² the quadratic
    A_0 t² + B_0' t + C_0 of the line search along w_b → w_t). Evaluation at w_t, the line search
    and the cut then touch X^a only.

    The bound is checked as the run goes: the active examples' margin changes are summed, and
    once they exceed Λ (the fallback), or every ``refresh_every`` iterations, an exact iteration
    rebuilds the set. Between refreshes F(w_b) is exact when w_b is within the certified radius
    min_{i∉X^a} D_i/‖h_i‖ of the refresh point (Cauchy–Schwarz), else a lower estimate; a stop
    (tol or target) is only claimed after an exact evaluation. Every cut is valid whatever the
    sides (a sum over any subset of examples minorizes the risk), so the dual point stays feasible.

    Parameters
    ----------
    refresh_every : int
        Exact refresh at least this often (iterations).
    radius : float
        Λ as a multiple of the last exact iteration's largest margin change (≥ 1); doubled when
        the set is outrun within two iterations, narrowed back when it lasts to the refresh.
    max_fraction : float
        Iterate over all examples (plain OCAS) while the active set would hold more than this
        fraction of them (the first iterations, when the margins move a lot).
    mu, inner, inner_tol, max_cuts, drop_after, tol_abs, target, record_iterates
        As for :class:`OCAS`.
    """

    refresh_every: int = 20
    radius: float = 3.0
    max_fraction: float = 0.5

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        if self.refresh_every < 1:
            raise ProblemError(f"refresh_every: must be ≥ 1, got {self.refresh_every}")
        if not 0 < self.max_fraction <= 1:
            raise ProblemError(f"max_fraction: must be in (0, 1], got {self.max_fraction}")
        if not self.radius >= 1:
            raise ProblemError(f"radius: must be ≥ 1, got {self.radius}")

    def _start(self, qp: QP, state: State) -> None:
        if _chunked(qp):
            _engine().start_active(self, qp, state)
            return
        Q: Any = qp.Q
        norms = np.sqrt(np.maximum(Q.diag(), 0.0))     # ‖h_i‖ (d = 0)
        state.extra.active = _Active(norms=norms)

    def converged(self, qp: QP, state: State, tol: float) -> bool:
        """As OCAS, but a stop is claimed only on an exactly evaluated F(w_b)."""
        if _chunked(qp):
            done: bool = _engine().converged_active(self, qp, state, tol)
            return done
        return self._converged(qp, state, tol)

    def _converged(self, qp: QP, state: State, tol: float) -> bool:
        cs: CutState = state.extra
        act: _Active = cs.active
        gap = cs.F_b - cs.dual
        met = gap <= tol * abs(cs.F_b) or gap <= self.tol_abs
        hit = self.target is not None and cs.F_b <= self.target
        if (met or hit) and not act.exact:
            self._verify(qp, state)
        return super().converged(qp, state, tol)

    def _verify(self, qp: QP, state: State) -> None:
        """F(w_b) from all examples (one pass), and a new active set around w_b."""
        cs: CutState = state.extra
        act: _Active = cs.active
        Q: Any = qp.Q
        self._evaluate_exactly(qp, state)
        state.counters["verifications"] = state.counters.get("verifications", 0) + 1
        if act.Q is not None:
            self._rebuild(qp, state)

    def _evaluate_exactly(self, qp: QP, state: State) -> None:
        """F(w_b) and its margins from all examples (one pass). An estimate that led w_b to a point
        worse than the best exactly evaluated one is undone: w_b goes back there (the best point
        never gets worse in exact terms)."""
        cs: CutState = state.extra
        act: _Active = cs.active
        t0 = time.perf_counter()
        estimate = cs.F_b
        self._evaluate_best(qp, state)
        cs.eval_seconds += time.perf_counter() - t0
        if not act.exact and cs.F_b > estimate + 1e-12 * abs(cs.F_b):
            # the inactive part was wrong: its cuts were no subgradients and may not cut off the
            # reduced solution, so the next iteration runs over all examples, with a wider set after
            act.misled = True
        state.counters["passes"] += 1
        if act.best_w is not None and cs.F_b > act.best_F:
            cs.w_b, cs.m_b, cs.F_b = act.best_w.copy(), act.best_m.copy(), act.best_F
            state.counters["reverted"] = state.counters.get("reverted", 0) + 1
        act.exact = True
        self._keep_best(state)

    def _evaluate_best(self, qp: QP, state: State) -> None:
        """w_b's margins and F(w_b) from all examples (one pass)."""
        if _chunked(qp):
            _engine().evaluate_best(self, qp, state)
            return
        cs: CutState = state.extra
        Q: Any = qp.Q
        cs.m_b = np.asarray(Q.matvec_lowrank(cs.w_b), dtype=np.float64)
        cs.F_b = 0.5 * float(cs.w_b @ cs.w_b) + _risk(cs.m_b, cs.rho, cs.u)

    def _keep_best(self, state: State) -> None:
        cs: CutState = state.extra
        act: _Active = cs.active
        if act.best_w is None or cs.F_b <= act.best_F:
            act.best_w, act.best_m, act.best_F = cs.w_b.copy(), cs.m_b.copy(), cs.F_b

    def _advance(self, qp: QP, state: State) -> None:
        cs: CutState = state.extra
        act: _Active = cs.active
        act.age += 1
        if act.Q is None or act.misled:
            # no set yet, the margins still move too much, or the set misled the last estimate:
            # a plain OCAS iteration (its cut is an exact subgradient)
            if act.misled:
                act.misled = False
                act.scale *= 2.0
            self._full(qp, state)
            return
        if act.age > self.refresh_every:
            act.scale = max(1.0, 0.75 * act.scale)     # it held to the periodic refresh: narrow it
            if not self._refresh(qp, state):
                self._full(qp, state)
                return
        for attempt in range(2):
            if self._active_iteration(qp, state):
                return
            # the fallback: the margins moved by more than the step bound, so inactive examples
            # may have crossed. A set outrun within two iterations was too narrow: the next is
            # built twice as wide around the same w_b, from exact margins, and the iteration redone
            if act.age <= 2:
                act.scale *= 2.0
            if attempt or not self._refresh(qp, state):
                break
        self._full(qp, state)

    def _full(self, qp: QP, state: State) -> None:
        """A plain OCAS iteration over all examples (exact margins of w_b at hand), then a new set."""
        state.extra.active.exact = True
        OCAS._advance(self, qp, state)
        self._keep_best(state)
        self._rebuild(qp, state)

    def _refresh(self, qp: QP, state: State) -> bool:
        """The exact refresh: w_b's margins from all examples (one pass), F(w_b) exact, a new
        active set around w_b; False when the set would be too large to pay."""
        cs: CutState = state.extra
        self._evaluate_exactly(qp, state)
        state.counters["refreshes"] += 1
        self._rebuild(qp, state)
        return cs.active.Q is not None

    def _active_iteration(self, qp: QP, state: State) -> bool:
        """OCAS's evaluation, line search and cut over the active set; False (nothing changed)
        when the margins would move past the step bound."""
        if _chunked(qp):
            moved: bool = _engine().active_iteration(self, qp, state)
            return moved
        cs: CutState = state.extra
        act: _Active = cs.active
        d = cs.w_t - cs.w_b
        t0 = time.perf_counter()
        m_t = np.asarray(act.Q.matvec_lowrank(cs.w_t), dtype=np.float64)
        t1 = time.perf_counter()
        rho_a, u_a = act.rho, act.u
        delta = m_t - act.m_b
        dd = float(d @ d)
        if dd <= (1e-13 * max(1.0, float(np.sqrt(cs.w_b @ cs.w_b)))) ** 2 or not dd > 0:
            return False        # no direction to rounding: the exact iteration decides
        # the inactive violators are linear in w: slope −a_Xᵀd along the ray
        step, _ = line_search(float(cs.w_b @ d), dd, rho_a - act.m_b, delta, u_a,
                              slope=-float(act.a_X @ d))
        if step > 4.0:
            return False        # a long step amplifies δ's rounding: the exact iteration takes it
        reach = max(step, self.mu) * float(np.abs(delta).max(initial=0.0))
        cs.reach = reach
        cs.eval_seconds += t1 - t0
        w_b = cs.w_b + step * d
        m_b = act.m_b + step * delta
        F_b = 0.5 * float(w_b @ w_b) + _risk(m_b, rho_a, u_a) + act.B_0 - float(act.a_X @ w_b)
        cs.search_seconds += time.perf_counter() - t1
        # within the certified radius the model is exact; beyond it the step bound is a guess,
        # refused when the margins moved past it or when the estimate (a lower bound of F, as
        # the inactive part is a minorant) falls below the cutting-plane bound D ≤ min F:
        # then some inactive example has certainly crossed
        exact = float(np.linalg.norm(w_b - act.w_ref)) <= act.safe
        if not exact and (act.drift + reach > act.bound or F_b < cs.dual):
            return False
        act.drift += reach
        cs.w_b, act.m_b, cs.F_b = w_b, m_b, F_b
        cs.m_t = None         # w_t's margins are known on the active set only
        act.exact = exact
        # the cut at w_c: the inactive violators' part is a_X, B_0 and their member bits
        m_c = (1.0 - self.mu) * m_b + self.mu * m_t
        viol = rho_a - m_c > 0
        v = np.where(viol, u_a, 0.0)
        a = act.a_X + np.asarray(act.Q.rmatvec_lowrank(v), dtype=np.float64)
        b = act.B_0 + float(v @ rho_a)
        mask = act.out_viol.copy()
        mask[act.idx] = viol
        cs.cuts.add(a, b, _pack(mask))
        state.counters["cuts_added"] += 1
        self._record(state, int(act.idx.size), int(act.idx.size))
        return True

    def _record(self, state: State, touched_eval: int, touched_search: int) -> None:
        super()._record(state, touched_eval, touched_search)
        state.extra.trace[-1]["primal_exact"] = bool(state.extra.active.exact)

    def _rebuild(self, qp: QP, state: State) -> None:
        if _chunked(qp):
            _engine().rebuild(self, qp, state)
            return
        cs: CutState = state.extra
        act: _Active = cs.active
        Q: Any = qp.Q
        bound = self.radius * act.scale * max(cs.reach, 1e-12 * (1.0 + float(np.abs(cs.m_b).max(initial=0.0))))
        res = cs.rho - cs.m_b
        dist = np.abs(res)
        inside = dist <= bound
        act.idx = np.flatnonzero(inside)
        if act.idx.size > self.max_fraction * qp.n:
            # early on the margins move too much for a small set: plain OCAS iterations until then
            act.Q = None
            act.exact = True
            return
        act.Q = Q.subset(act.idx)
        act.m_b = cs.m_b[act.idx].copy()
        act.rho, act.u = cs.rho[act.idx], cs.u[act.idx]
        act.out_viol = (res > 0) & ~inside
        v = np.where(act.out_viol, cs.u, 0.0)
        act.a_X = np.asarray(Q.rmatvec_lowrank(v), dtype=np.float64)
        act.B_0 = float(v @ cs.rho)
        state.counters["passes"] += 1
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(act.norms > 0, dist / act.norms, np.inf)
        # within this distance of w_ref no inactive example can cross: F is exact there
        act.safe = float(ratio[~inside].min(initial=np.inf))
        act.w_ref = cs.w_b.copy()
        act.bound = bound
        act.drift = 0.0
        act.age = 0
        act.exact = True


@attrs.define(eq=False)
class _Active:
    norms: FloatArray
    Q: Any = None
    idx: IndexArray = attrs.Factory(lambda: np.zeros(0, dtype=np.intp))
    m_b: FloatArray = attrs.Factory(lambda: np.zeros(0))
    rho: FloatArray = attrs.Factory(lambda: np.zeros(0))
    u: FloatArray = attrs.Factory(lambda: np.zeros(0))
    out_viol: BoolArray = attrs.Factory(lambda: np.zeros(0, dtype=bool))
    a_X: FloatArray = attrs.Factory(lambda: np.zeros(0))
    B_0: float = 0.0
    w_ref: FloatArray = attrs.Factory(lambda: np.zeros(0))
    bound: float = 0.0
    drift: float = 0.0
    safe: float = 0.0
    exact: bool = True
    age: int = 0
    scale: float = 1.0
    best_w: FloatArray | None = None
    best_m: FloatArray = attrs.Factory(lambda: np.zeros(0))
    best_F: float = np.inf
    misled: bool = False
