"""ASVM: Mangasarian & Musicant's active-set algorithm for min ½uᵀQu + cᵀu, u ≥ 0, Q = D + HHᵀ.

Mangasarian & Musicant, "Active set support vector machine classification", NIPS 13 (2000),
Algorithm 3.1. Each ``step`` is one iteration i:

(1) B = {j : u_j > 0}.
(2) ũ_B = −Q_BB⁻¹c_B through Sherman–Morrison–Woodbury (a k×k Cholesky, k = columns of H) and
    u⁺ = (ũ_B)₊, u⁺_N = 0. Stop when 0 ≤ u⁺ ⊥ Qu⁺ + c ≥ 0 to tol.
(2a) If f(u⁺) ≥ f(u): go to (4a).
(2b) If u⁺ is optimal on the face u_N = 0: accept it and go to (4b).
(3)  Accept u⁺.
(4a) Move from u toward the face minimum ũ, u + λ(ũ − u), with λ ≤ 1 the largest step keeping
     u ≥ 0 (the ratio test; q decreases all along it). If λ = 1 the face minimum is reached: (4b).
(4b) One gradient-projection step: Moré–Toraldo's projected search along −∇f with their
     sufficient-decrease test, first trial the Cauchy step of the moving variables, then
     safeguarded interpolation.

With (2a), (2b), (4a) and (4b) the iteration is a Moré–Toraldo method, whose finite termination
result applies; each safeguard is counted in the run's stats (``decrease_fails`` for (2a),
``face_optimal`` for (2b), ``face_moves`` for (4a), ``projection_steps`` for (4b)).

**Written once for every backend.** The algorithm below touches the data only through passes
over the rows (:class:`qpcore.backends.rowspace.Rows`, the kernels of :mod:`qpcore_strategies.asvm_kernels`):
in process one pass is one call on the whole data (:class:`qpcore.backends.rowspace.LocalRows`); over a
:class:`qpcore.backends.chunked.ChunkedLowRankQ` (``asvm_dual`` of a dask array) it is a task per chunk on
the Dask workers and a tree reduction, u and g stay chunk by chunk on the workers and only the
k×k system comes back to the client. What lives where:

- with the rows: u, the gradient g, the candidate points;
- beside the loop: the k×k Gram matrix G = H_Bᵀ D_B⁻¹ H_B of the face B = {u > 0}, the k-vector
  t = H_Bᵀ D_B⁻¹ r_B (r = −c), the factor of I + G (:func:`qpcore.backends.lowrank.factor_identity_plus`),
  the primal point p = Hᵀu, the objective and a few counts. Nothing of length m is gathered.

A round trip to a cluster costs far more than the arithmetic of k-vectors, so the passes are fused:

- a normal iteration is **one pass**: at the accepted point the gradient g = d∘u + H p + c, its
  projected-gradient measure and face measure, and, run ahead, the *next* face solve
  ũ = D_B⁻¹(r − H z) from that point (clip, the clipped rows' correction of Hᵀu⁺, Σd u², cᵀu,
  the counts, and the Gram update over the rows that leave B). The next iteration only reads it;
- G is kept by rank updates over the rows that enter or leave B, and rebuilt from the rows when
  the rows updated since the last build would outnumber |B| (or the update fails to factor); a
  rebuild rides on the gradient pass, and one foreseen from the last step's shrinkage is built
  by the face solve itself;
- the exact check before claiming convergence is two passes (Hᵀu, then g): the point is only
  declared optimal after a gradient computed afresh from u meets tol;
- (2a): an exact refresh that also reduces the refinement's right-hand side, a ratio test (one
  min-reduction) and the move; (2b)/(4b): each trial of the projected search is one pass
  returning Hᵀ(x(t) − u) and the scalars of f (the first trial's curvature rides on the
  gradient pass when the search is foreseen).

Cost per iteration: O(m·k) for the products and O(|changed|·k²) for the Gram updates, never O(m²).

Limits: one step is a few passes over the data, so ``max_iter`` bounds the work; on the run's
deadline a step skips its projection step (4b), and the projected search takes no further pass.
The problem class has no fixed variables (ub = inf) and no negative curvature (d > 0 and
HHᵀ ⪰ 0 make Q positive definite), so neither needs handling. When a cluster loses data it
cannot recompute, a :class:`qpcore.backends.rowspace.ClusterError` carries the last p = Hᵀu.
"""

from __future__ import annotations

from typing import Any, cast

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.lowrank import SmallFactor, factor_identity_plus
from qpcore.backends.capabilities import Capability
from qpcore.core.problem import QP, ProblemError
from qpcore.backends.rowspace import ClusterError, LowRankRows, Rows
from qpcore.core.state import State, Status, Work
from qpcore.core.strategy import Strategy
from qpcore_strategies.asvm_kernels import (FACE_OPS, GRAD_OPS, STEP_OPS, k_bounds, k_cauchy, k_face, k_grad, k_gram, k_hu,
                                     k_move, k_ratio, k_start, k_trial)

FloatArray = NDArray[np.float64]

__all__ = ["ASVM", "ASVMWork"]

_MU = 0.01                          # Moré–Toraldo's sufficient-decrease constant
_TRIALS = 60                        # trial steps of one projected search at most


@attrs.define(slots=True, eq=False)
class _Face:
    """A face solve's outcome: the candidate u⁺ (with the rows) and its summary."""

    u: Any                    # the point the face B = {u > 0} is taken from
    version: int              # the factor it used (ASVMWork.version)
    un: Any                   # u⁺
    p: FloatArray             # Hᵀu⁺ (z minus the clipped rows' part)
    f: float                  # f(u⁺)
    neg: int                  # rows of B clipped to 0 (ũ < 0)
    size: int                 # |{u⁺ > 0}|
    changed: int              # rows leaving B
    G: Any                    # the Gram update over them (already negative), or with `fresh`
    t: Any                    # the Gram matrix of the new B built from its rows
    skipped: bool             # a block left the Gram update to a rebuild
    fresh: bool               # G, t were built from the rows of B⁺ (a foreseen rebuild)


@attrs.define(slots=True, eq=False)
class ASVMWork(Work):
    """ASVM's work state.

    Attributes
    ----------
    rows : Rows
        The rows and the passes over them (in process, or a cluster's chunks whose
        ``space.counters`` record the communication).
    d, winv : float or ndarray
        The diagonal and 1/d, as the kernels take them (scalars when constant on a cluster).
    c : float or vector
        The linear term as the kernels take it.
    G, t : ndarray
        H_Bᵀ D_B⁻¹ H_B and H_Bᵀ D_B⁻¹ r_B for B = {u > 0}, r = −c.
    small : SmallFactor
        The factor of I + G.
    size, since : int
        |B|, and the rows changed by rank updates since G was last built from the rows.
    p : ndarray
        Hᵀu (k-vector): the primal (w, γ) of the ASVM dual.
    f : float
        The objective at u.
    tol : float
        The requested tolerance.
    version : int
        Bumped whenever G, t or the factor change (a face solve run ahead is valid only for its version).
    measure : float
        ‖P(g)‖∞ at the state's gradient.
    face_measure : float
        max |P(g)_i| over the face the last face step came from.
    flat : int
        Iterations in a row without a decrease.
    pending : _Face or None
        The face solve from the state's u, run ahead by the last gradient pass.
    cauchy : tuple or None
        (Hᵀ P(g), ‖P(g)‖², Σd P(g)²) at the state's point, reduced ahead when a projected search was foreseen.
    tr : ndarray or None
        H_Bᵀ D_B⁻¹(−g_B), the right-hand side of (2a)'s refined solve, from the last exact refresh.
    shrink : float
        The fraction of B the last accepted step removed (to foresee the next rebuild).
    """

    rows: Rows
    d: Any
    winv: Any
    c: Any
    G: FloatArray
    t: FloatArray
    small: SmallFactor
    size: int
    since: int
    p: FloatArray
    f: float
    tol: float
    version: int = 0
    measure: float = np.inf
    face_measure: float = np.inf
    flat: int = 0
    pending: _Face | None = None
    cauchy: tuple[FloatArray, float, float] | None = None
    tr: FloatArray | None = None
    shrink: float = 0.0

    def release(self) -> ASVMWork:
        """Drop the face solve run ahead (an m-vector) a finished run no longer needs."""
        self.pending = None
        return self


@attrs.frozen
class ASVM(Strategy):
    """Algorithm 3.1 of Mangasarian & Musicant with the Moré–Toraldo safeguards.

    For a nonnegativity QP (lb = 0, ub = inf, no equality rows) whose Q is diagonal plus low rank
    with d > 0 (``Capability.LOWRANK``: :class:`qpcore.backends.lowrank.DiagPlusLowRankQ`, or
    :class:`qpcore.backends.chunked.ChunkedLowRankQ` for rows on a Dask cluster): the ASVM / L2-loss SVM
    dual built by :func:`qpcore_formulations.asvm.asvm_dual`, or any diagonal-plus-low-rank QP.

    The diagonal is one vector d (per-example weights: d_i = 1/(ν s_i)); every pass takes it, and
    1/d, as the block's own array, or as one number where it is a constant vector on a cluster (a
    scalar ν there costs no traffic). The same Sherman–Morrison–Woodbury solve serves both:
    Q_BB⁻¹ = D_B⁻¹ − D_B⁻¹H_B(I + H_BᵀD_B⁻¹H_B)⁻¹H_BᵀD_B⁻¹.

    Parameters
    ----------
    max_rank : int
        Largest k (columns of H) accepted: the k×k system costs k² memory and k³ per factorization.
    stall : int
        Iterations in a row without a decrease after which the run ends as ``stalled`` (after an
        exact gradient refresh has failed to restart progress).
    """

    max_rank: int = 20000
    stall: int = 5

    requires = frozenset({Capability.LOWRANK})

    def accepts(self, qp: QP) -> str | None:
        """None for a problem ASVM solves, else why not (the bounds and d are checked in ``init``,
        on the rows where they live).

        Parameters
        ----------
        qp : QP
            The problem.

        Returns
        -------
        str or None
        """
        Q = qp.Q
        if Capability.LOWRANK not in Q.capabilities:
            return ("ASVM: Q must be diag(d) + HHᵀ (a DiagPlusLowRankQ, or a ChunkedLowRankQ for rows on a "
                    f"cluster); got {type(Q).__name__} (use SMO, decomposition or GPCG)")
        if qp.m:
            return "ASVM: equality constraints are not supported (the ASVM dual has none; use SMO or decomposition)"
        k = cast(LowRankRows, Q).k
        if k > self.max_rank:
            return (f"ASVM: H has k = {k} columns, above max_rank = {self.max_rank}; "
                    "the k×k system would not fit (use SMO or decomposition)")
        # bounds and d held in this process are checked here; on a cluster, by init's one reduction
        if isinstance(qp.lb, np.ndarray) and isinstance(qp.ub, np.ndarray):
            if not (np.all(qp.lb == 0.0) and np.all(qp.ub == np.inf)):
                return "ASVM: the feasible set must be u ≥ 0 (lb = 0, ub = inf); for other bounds use GPCG"
        d = cast(LowRankRows, Q).d
        if isinstance(d, (float, int, np.ndarray)) and not bool(np.all(np.asarray(d) > 0)):
            return "ASVM: the diagonal d must be > 0 (SMW inverts D_B); for d = 0 (the hinge loss) use OCAS"
        return None

    def init(self, qp: QP, x0: Any, tol: float) -> State:
        """Check the problem and start from u⁰ = (Q⁻¹(−c))₊, or from x0 clipped to u ≥ 0.

        Parameters
        ----------
        qp : QP
            A nonnegativity QP with a diagonal-plus-low-rank Q (d > 0) and no equality rows.
        x0 : ndarray or ChunkedVector, optional
            A start (a ``ChunkedVector`` of the problem's partition for chunked data); the face
            solve's clipped minimizer when None.
        tol : float
            The tolerance on the projected-gradient norm.

        Returns
        -------
        State

        Raises
        ------
        ProblemError
            For another operator, equality rows, bounds other than u ≥ 0, d ≤ 0, k > max_rank,
            or a start that is not a vector of the problem's backend.
        ClusterError
            When a cluster loses data it cannot recompute.
        """
        self.check(qp)
        Q = cast(LowRankRows, qp.Q)
        rows = Q.row_space()
        d = rows.scalar_or_vector(Q.d)
        lb, ub = rows.scalar_or_vector(qp.lb), rows.scalar_or_vector(qp.ub)
        if isinstance(lb, float) and isinstance(ub, float) and isinstance(d, float):
            ok = k_bounds(np.asarray(lb), np.asarray(ub), d)
        else:
            ok = rows.reduce(k_bounds, lb, ub, d, ops=("all", "all", "all"), name="qpcore-asvm-bounds")
        if not (ok[0] and ok[1]):
            raise ProblemError("ASVM: the feasible set must be u ≥ 0 (lb = 0, ub = inf)")
        if not ok[2]:
            raise ProblemError("ASVM: the diagonal d must be > 0 (SMW inverts D_B)")
        winv = 1.0 / d
        start = None if x0 is None else rows.adopt(x0)
        c = rows.scalar_or_vector(qp.c)
        counters = {"face_solves": 0, "decrease_fails": 0, "face_optimal": 0, "face_moves": 0,
                    "projection_steps": 0, "exact_checks": 0, "refined_solves": 0, "refinements": 0,
                    "gram_rebuilds": 0, "gram_rank_updates": 0, "gram_fallbacks": 0, "faces_ahead": 0}
        k = Q.k
        # the per-variable bound status would be m long: B = {u > 0} stays with the rows
        state = State(x=rows.full(0.0), g=rows.full(0.0), status=np.zeros(0, dtype=np.int8), counters=counters)
        if start is None:
            G, t = rows.reduce(k_gram, rows.blocks, winv, c, ops=("sum", "sum"), name="qpcore-asvm-gram")
            G, t = _kmat(G, k), _kvec(t, k)
            size, dsq, cu, p = rows.m, 0.0, 0.0, np.zeros(k)
        else:
            outs, red = rows.map_reduce(k_start, rows.blocks, start, d, winv, c,
                                        ops=("sum", "sum", "sum", "sum", "sum", "sum", "all"), name="qpcore-asvm-start")
            G, t, p, dsq, cu, size, finite = red
            G, t, p, size = _kmat(G, k), _kvec(t, k), _kvec(p, k), int(size)
            u0 = rows.vector(outs, 0, bool(finite))
        counters["gram_rebuilds"] += 1
        small = factor_identity_plus(G)
        assert small is not None
        if small.eig is not None:
            counters["gram_fallbacks"] += 1
        work = ASVMWork(rows=rows, d=d, winv=winv, c=c, G=G, t=t, small=small, size=size, since=0, p=p,
                        f=_objective(float(dsq), p, float(cu)), tol=tol)
        state.set_work(work)
        try:
            if start is None:
                face = _face_pass(state, rows.full(1.0))   # B = every row
                counters["face_solves"] = 1
                # the start runs no face solve ahead: its cost is not bounded by the deadline, and
                # the first step runs its own
                _accept(state, face.un, face.p, face.f, face.size, face.changed, face.G, face.t, face.skipped,
                        face_from=None, ahead=False, cauchy=False, progress=False, fresh=face.fresh)
            else:
                _accept(state, u0, p, work.f, size, 0, 0.0, 0.0, False, face_from=None, ahead=True, cauchy=False,
                        progress=False)
                _install(state, None, state.g, exact=True)      # p = Hᵀu was reduced afresh: g is exact
            _check(state)
        except ClusterError as e:
            e.primal, e.iteration = work.p.copy(), 0
            raise
        return state

    def step(self, qp: QP, state: State) -> None:
        """One iteration of Algorithm 3.1 (steps 1–4b).

        A normal iteration reads the face solve run ahead by the last pass and takes one pass for
        the gradient at the accepted point (with the next face solve); the safeguards take a few
        more. On the run's deadline the step skips its projection step (4b) and returns with u,
        Hᵀu, g and f accepted together.

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            Mutated in place.

        Raises
        ------
        ClusterError
            When a cluster loses data it cannot recompute; its ``primal`` is the last accepted
            p = Hᵀu (the model (w, γ)) and ``iteration`` the iteration reached.
        """
        work = state.work(ASVMWork)
        try:
            self._step(state, work)
        except ClusterError as e:
            e.primal, e.iteration = work.p.copy(), state.iteration
            raise

    def _step(self, state: State, work: ASVMWork) -> None:
        if work.flat >= self.stall:
            # rounding-level progress only: refresh everything exactly, and give up honestly when
            # that has not restarted progress either
            if state.counters["refinements"] >= 3:
                state.stop = Status.STALLED
                return
            state.counters["refinements"] += 1
            work.flat = 0
            if _exact(state) <= work.tol:
                state.done = True
            return
        u = state.x
        face = work.pending
        if face is not None and face.u is u and face.version == work.version:
            state.counters["faces_ahead"] += 1
        else:
            face = _face_pass(state, u)
        work.pending = None
        state.counters["face_solves"] += 1
        if not face.f < work.f:
            _decrease_fail(state)
            return
        # (2b) is foreseen when nothing was clipped or B⁺ is empty: reduce the projected search's
        # first curvature with the gradient instead of running the next face solve ahead
        foreseen = face.neg == 0 or face.size == 0
        _accept(state, face.un, face.p, face.f, face.size, face.changed, face.G, face.t, face.skipped,
                face_from=u, ahead=not foreseen, cauchy=foreseen, fresh=face.fresh)
        if _check(state) or state.out_of_time():
            return      # on the deadline: u, p, g and f were just accepted together
        if foreseen or work.face_measure <= work.tol:
            # (2b) optimal on the face u_N = 0: leave the face by a projected-gradient step
            state.counters["face_optimal"] += 1
            _projection(state)
            _check(state)


# --------------------------------------------------------------------------------------------- the pieces
def _kvec(v: Any, k: int) -> FloatArray:
    """A reduced k-vector (0.0 when no block contributed one)."""
    if isinstance(v, np.ndarray):
        return np.asarray(v, dtype=np.float64)
    return np.zeros(k)


def _kmat(v: Any, k: int) -> FloatArray:
    """A reduced k×k matrix (0.0 when no block contributed one)."""
    if isinstance(v, np.ndarray):
        return np.asarray(v, dtype=np.float64)
    return np.zeros((k, k))


def _objective(dsq: float, p: FloatArray, cu: float) -> float:
    """f(u) = ½(Σd u² + ‖Hᵀu‖²) + cᵀu from the reduced scalars and p = Hᵀu."""
    return float(0.5 * (dsq + p @ p) + cu)


def _factor(state: State, G: FloatArray, *, fallback: bool) -> SmallFactor | None:
    small = factor_identity_plus(G, fallback=fallback)
    if small is not None and small.eig is not None:
        state.counters["gram_fallbacks"] += 1
    return small


def _limit(work: ASVMWork) -> float:
    """|B| − (rows updated since the last build): a change removing more than half of it is a rebuild."""
    return float(work.size - work.since)


def _rebuild_foreseen(work: ASVMWork) -> bool:
    """Whether the next face step will rebuild G (more than half of |B| − since rows leaving B),
    if it removes the same fraction of B as the last step did.

    Early on B shrinks by large fractions and the rule rebuilds every other step; a face solve
    that foresees it builds the Gram matrix of B⁺ from its rows in its own pass, so the next
    face solve can still run ahead with the gradient (one pass per iteration instead of two).
    """
    return work.shrink * work.size > 0.5 * (work.size - work.since)


def _face_pass(state: State, u: Any) -> _Face:
    """Step (2) as its own pass (when it was not run ahead)."""
    work = state.work(ASVMWork)
    z = work.small.solve(work.t)
    full = _rebuild_foreseen(work)
    outs, red = work.rows.map_reduce(k_face, work.rows.blocks, u, z, work.d, work.winv, work.c, _limit(work), full,
                                     ops=FACE_OPS, name="qpcore-asvm-face")
    return _face_of(work, u, z, outs, 0, red, full)


def _face_of(work: ASVMWork, u: Any, z: FloatArray, outs: list[Any], pick: int, red: tuple[Any, ...],
             full: bool) -> _Face:
    dp, dsq, cu, neg, size, changed, G, t, skipped, finite = red
    k = z.size
    p = z + _kvec(dp, k)
    un = work.rows.vector(outs, pick, bool(finite))
    return _Face(u=u, version=work.version, un=un, p=p, f=_objective(float(dsq), p, float(cu)),
                 neg=int(neg), size=int(size), changed=int(changed), G=G, t=t, skipped=bool(skipped), fresh=full)


def _accept(state: State, u: Any, p: FloatArray, f: float, size: int, changed: int, G: Any, t: Any,
            skipped: bool, *, face_from: Any, ahead: bool, cauchy: bool, progress: bool = True,
            fresh: bool = False) -> None:
    """Accept u (with p = Hᵀu and f): update the Gram matrix, then one pass for the gradient at u
    and what comes next (the face solve run ahead, the Cauchy step's curvature).

    ``changed`` rows entered or left B with the Gram update (G, t); G is rebuilt from the rows
    when the rows updated since the last build would outnumber |B| (or the update fails to
    factor), so rounding from many updates never outweighs one fresh build. With ``fresh``,
    (G, t) are already the Gram matrix of the new B built from its rows.
    """
    work = state.work(ASVMWork)
    k = p.size
    rebuild = False
    work.shrink = changed / work.size if work.size else 0.0
    if fresh:
        _rebuilt(state, G, t, k)
    elif changed:
        if skipped or (work.since + changed > size) or changed >= size:
            rebuild = True
        else:
            work.G = work.G + _kmat(G, k)
            work.t = work.t + _kvec(t, k)
            work.since += changed
            state.counters["gram_rank_updates"] += changed
            small = _factor(state, work.G, fallback=False)
            if small is None:
                rebuild = True          # blamed on the updates' rounding: rebuild from the rows
            else:
                work.small = small
        work.version += 1
    work.size = size
    if progress:
        # progress is a decrease above rounding: near the optimum f can oscillate by an ulp between
        # two faces, and that must count as flat for the stall test to see it
        tiny = 8.0 * np.finfo(np.float64).eps * max(1.0, abs(work.f))
        work.flat = 0 if f < work.f - tiny else work.flat + 1
    work.p, work.f = p, f
    z = work.small.solve(work.t) if ahead and not rebuild else None
    full = z is not None and _rebuild_foreseen(work)
    rows = work.rows
    outs, red = rows.map_reduce(k_grad, rows.blocks, u, p, work.d, work.winv, work.c, face_from, rebuild, cauchy,
                                False, z, _limit(work), full, ops=GRAD_OPS, name="qpcore-asvm-grad")
    measure, face, finite, Gb, tb, hg, sg, dsg, _, *fr = red
    if rebuild:
        _rebuilt(state, Gb, tb, k)
    _install(state, u, rows.vector(outs, 0, bool(finite)), exact=False)
    work.measure, work.face_measure = float(measure), float(face)
    work.cauchy = (_kvec(hg, k), float(sg), float(dsg)) if cauchy else None
    work.tr = None
    work.pending = _face_of(work, u, z, outs, 1, tuple(fr), full) if z is not None else None


def _rebuilt(state: State, G: Any, t: Any, k: int) -> None:
    """Install a Gram matrix built from the rows of B (the fallback factor allowed)."""
    work = state.work(ASVMWork)
    work.G, work.t = _kmat(G, k), _kvec(t, k)
    work.since = 0
    state.counters["gram_rebuilds"] += 1
    small = _factor(state, work.G, fallback=True)
    assert small is not None
    work.small = small
    work.version += 1


def _install(state: State, x: Any, g: Any, *, exact: bool) -> None:
    """Set the state's point (when given) and gradient; ``exact``: g was computed afresh from x."""
    if x is not None:
        state.x = x
    state.g = g
    state.exact = (state.x, g) if exact else None


def _exact(state: State, *, refine: bool = False) -> float:
    """Recompute p = Hᵀu, g and f from u afresh (two passes); returns the KKT measure.

    With ``refine`` the gradient pass also reduces (2a)'s right-hand side H_Bᵀ D_B⁻¹(−g_B).
    """
    work = state.work(ASVMWork)
    rows = work.rows
    u = state.x
    k = work.p.size
    p, dsq, cu = rows.reduce(k_hu, rows.blocks, u, work.d, work.c, ops=("sum", "sum", "sum"), name="qpcore-asvm-Hu")
    p = _kvec(p, k)
    outs, red = rows.map_reduce(k_grad, rows.blocks, u, p, work.d, work.winv, work.c, None, False, False, refine,
                                None, _limit(work), False, ops=GRAD_OPS, name="qpcore-asvm-exact")
    measure, _, finite, _, _, _, _, _, tr, *_ = red
    _install(state, None, rows.vector(outs, 0, bool(finite)), exact=True)
    work.p, work.f = p, _objective(float(dsq), p, float(cu))
    work.measure = float(measure)
    work.cauchy = None
    work.tr = _kvec(tr, k) if refine else None
    return work.measure


def _check(state: State) -> bool:
    """When the running gradient meets tol, confirm with an exact one before claiming it."""
    work = state.work(ASVMWork)
    if work.measure > work.tol:
        return False
    state.counters["exact_checks"] += 1
    # a gradient already computed afresh at this very point (a warm start's) needs no refresh
    exact = state.exact is not None and state.exact[0] is state.x
    if (work.measure if exact else _exact(state)) <= work.tol:
        state.done = True
        return True
    return False


def _projection(state: State) -> None:
    """(4b): Moré–Toraldo's projected search along −g from u, with sufficient decrease
    f(x(t)) ≤ f(u) + μ gᵀ(x(t) − u); first trial the Cauchy step of the moving variables
    (t = ‖P(g)‖² / P(g)ᵀQ P(g)), then safeguarded interpolation, each trial one pass."""
    work = state.work(ASVMWork)
    rows = work.rows
    state.counters["projection_steps"] += 1
    u, g = state.x, state.g
    k = work.p.size
    if work.cauchy is None:
        if state.out_of_time():
            work.flat += 1      # on the deadline the search takes no further product
            return
        hg, sg, dsg = rows.reduce(k_cauchy, rows.blocks, u, g, work.d, ops=("sum", "sum", "sum"),
                                  name="qpcore-asvm-cauchy")
        work.cauchy = (_kvec(hg, k), float(sg), float(dsg))
    hg, sg, dsg = work.cauchy
    curv = dsg + float(hg @ hg)
    if not sg > 0 or not curv > 0:
        work.flat += 1          # no moving variable: P(g) = 0
        return
    step = sg / curv
    for _ in range(_TRIALS):
        if state.out_of_time():
            break
        outs, red = rows.map_reduce(k_trial, rows.blocks, u, g, step, work.d, work.winv, work.c, _limit(work),
                                    ops=STEP_OPS, name="qpcore-asvm-trial")
        hs, dss, gs, size, changed, G, t, skipped, finite = red
        hs = _kvec(hs, k)
        gs = float(gs)
        q = gs + 0.5 * (float(dss) + float(hs @ hs))      # f(x(t)) − f(u)
        if not np.isfinite(q):
            if not finite:
                break           # a NaN or inf in the trial point: no step (the loop's check reports it)
            state.stop = Status.UNBOUNDED   # cannot happen with d > 0; kept for honesty
            return
        if q < 0 and q <= _MU * gs:
            x = rows.vector(outs, 0, bool(finite))
            _accept(state, x, work.p + hs, work.f + q, int(size), int(changed), G, t, bool(skipped),
                    face_from=None, ahead=True, cauchy=False)
            return
        # the minimizer of the quadratic through f(u), the slope gᵀs/t and f(x(t)), kept in [t/10, t/2]
        bend = q - gs
        t_new = step * (-gs) / (2.0 * bend) if bend > 0 and gs < 0 else 0.5 * step
        step = min(max(t_new, 0.1 * step), 0.5 * step)
    work.flat += 1


def _face_move(state: State, zz: FloatArray) -> bool:
    """(4a): u + λδ toward the refined face minimum, λ ≤ 1 from the ratio test (a min-reduction);
    True when the face minimum was reached (λ = 1)."""
    work = state.work(ASVMWork)
    rows = work.rows
    state.counters["face_moves"] += 1
    u = state.x
    outs, (lam_min,) = rows.map_reduce(k_ratio, rows.blocks, u, state.g, zz, work.winv, ops=("min",),
                                       name="qpcore-asvm-ratio")
    lam = float(min(1.0, lam_min))
    delta = rows.vector(outs, 0)
    outs, red = rows.map_reduce(k_move, rows.blocks, u, delta, lam, work.d, work.winv, work.c, _limit(work),
                                ops=STEP_OPS, name="qpcore-asvm-move")
    corr, dsq, cu, size, changed, G, t, skipped, finite = red
    k = zz.size
    p = work.p + lam * zz - _kvec(corr, k)
    un = rows.vector(outs, 0, bool(finite))
    reached = lam >= 1.0
    _accept(state, un, p, _objective(float(dsq), p, float(cu)), int(size), int(changed), G, t, bool(skipped),
            face_from=None, ahead=not reached, cauchy=reached)
    return reached


def _decrease_fail(state: State) -> None:
    """(2a): no decrease; refresh exactly, move toward the refined face minimum, then (4b) if reached."""
    work = state.work(ASVMWork)
    state.counters["decrease_fails"] += 1
    # the face minimum from the fixed right-hand side is exact only to cond(Q_BB)·eps of its own
    # size, which near the optimum is the whole remaining step: take it instead as a correction
    # from the exact gradient (one step of iterative refinement)
    _exact(state, refine=True)
    state.counters["refined_solves"] += 1
    assert work.tr is not None
    zz = work.small.solve(work.tr)
    if _face_move(state, zz) and not _check(state) and not state.out_of_time():
        _projection(state)
    if not state.done:
        _check(state)
