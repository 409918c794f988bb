"""ASVM over row chunks on a Dask cluster: the dual variable lives with the data.

:class:`strategies.asvm.ASVM` comes here when the problem's operator is a
:class:`qpcore.chunked.ChunkedLowRankQ` (``problems.asvm.asvm_dual`` of a dask array). The
iteration is the in-process one (Mangasarian & Musicant's Algorithm 3.1 with the Moré–Toraldo
safeguards, the same counters, statuses and limits); what changes is where each quantity lives:

- on the workers, chunk by chunk: u, the gradient g, the candidate points (``ChunkedVector``);
- on the client: the k×k Gram matrix G = H_Bᵀ D_B⁻¹ H_B of the face B = {u > 0}, the k-vector
  t = H_Bᵀ D_B⁻¹ r_B (r = −c), the factor of I + G (:func:`qpcore.lowrank.factor_identity_plus`,
  the same Cholesky-with-fallback as :class:`qpcore.lowrank.SMWFactor`), the primal point
  p = Hᵀu, the objective and a few counts. Nothing of length m is ever gathered.

Every pass is one task per chunk running a module-level kernel on the chunk's own
:class:`qpcore.lowrank.DiagPlusLowRankQ` (its products, ``rmatvec_rows``, ``weighted_gram``) and
one small reduction; a round trip to the workers costs far more than the arithmetic of the
k-vectors, so the passes are fused:

- a normal iteration is **one pass**: at the accepted point the gradient g = d∘u + H p + c, its
  projected-gradient measure and face measure (:func:`qpcore.optimality.projected_gradient`),
  and, speculatively, the *next* face solve ũ = D_B⁻¹(r − H z) from that point (clip, the
  clipped rows' correction of Hᵀu⁺, Σu², Σcᵀu, the counts, and the Gram update over the rows
  that leave B). The next iteration then only reads the result;
- a Gram rebuild (when more rows changed than B holds, the in-process rule) rides on the
  gradient pass and costs one more pass for the next face solve;
- the exact check before claiming convergence is two passes (Hᵀu, then g), as in process
  the point is only declared optimal after a gradient computed afresh from u meets tol;
- the safeguards: (2a) an exact refresh that also reduces the refinement's right-hand side,
  a ratio test (one min-reduction) and the move; (2b)/(4b) a projected search along −g with
  Moré–Toraldo's sufficient-decrease test, first trial the Cauchy step on the moving variables
  (its curvature is reduced with the gradient when the step is foreseen), each trial one pass
  returning Hᵀ(x(t) − u) and the scalars of f.

A pass keeps its m-vectors on the workers: a kernel returns ``(kept..., partial)``, a second
tiny task per chunk picks the partial where the chunk lives (so no kept chunk crosses between
workers), and the partials are tree-reduced (:meth:`qpcore.chunked.RowSpace.tree`). Kernels never
change their inputs: Dask replays them to recompute a lost chunk.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.chunked import ChunkedLowRankQ, ChunkedVector, ClusterError, PerChunk, RowSpace
from qpcore.lowrank import DiagPlusLowRankQ, SmallFactor, factor_identity_plus
from qpcore.optimality import projected_gradient
from qpcore.problem import QP, ProblemError
from qpcore.state import State, Status

if TYPE_CHECKING:
    from strategies.asvm import ASVM

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["ChunkedASVMWork", "init_chunked", "step_chunked"]

_LB = np.zeros(())                  # the bounds of u ≥ 0, as 0-d arrays that broadcast over a chunk
_UB = np.full((), np.inf)
_MU = 0.01                          # Moré–Toraldo's sufficient-decrease constant (as the in-process search)
_TRIALS = 60                        # trial steps of one projected search at most

# the face solve's partial results and how they combine (see _face_solve)
_FACE_OPS = ("sum", "sum", "sum", "sum", "sum", "sum", "sum", "sum", "max", "all")
_NO_FACE: tuple[Any, ...] = (0.0, 0.0, 0.0, 0, 0, 0, 0.0, 0.0, False, True)


# --------------------------------------------------------------------------------------------- kernels
# Module-level (picklable) functions run by one task per chunk. `u`, `g`, ... are the chunk's
# arrays; `d`, `winv` = 1/d and `c` are scalars (c may be the chunk's array of a non-constant c).

def _partial(out: tuple[Any, ...]) -> Any:
    """The partial result of a kernel's output (its last element), picked where the chunk lives."""
    return out[-1]


def _vec(v: float | FloatArray, n: int) -> FloatArray:
    """A chunk-length view of a scalar (no copy), or the chunk's own array."""
    if isinstance(v, np.ndarray):
        return v
    return np.broadcast_to(np.float64(v), (n,))


def _dot_c(c: float | FloatArray, x: FloatArray) -> float:
    """Σ c_i x_i for a scalar or per-row c."""
    if isinstance(c, np.ndarray):
        return float(c @ x)
    return float(c * x.sum())


def _gram(block: DiagPlusLowRankQ, idx: IndexArray | None, winv: float, c: float | FloatArray
          ) -> tuple[FloatArray, FloatArray]:
    """(Σ_i w h_i h_iᵀ, Σ_i w r_i h_i) over the rows idx (all when None), w = 1/d, r = −c."""
    n = block.shape[0]
    minus_c = -c if isinstance(c, np.ndarray) else -float(c)
    return block.weighted_gram(idx, _vec(winv, n), _vec(minus_c, n))


def _gram_change(block: DiagPlusLowRankQ, added: IndexArray, removed: IndexArray, winv: float,
                 c: float | FloatArray, limit: float) -> tuple[Any, Any, bool]:
    """The Gram update (G, t) of the rows entering and leaving B, or (0, 0, True) when this chunk
    alone removes more than ``limit`` rows: then the client's rule rebuilds G whatever the other
    chunks did (rank updates need 2·removed ≤ |B| − rows updated since the last build)."""
    if 2.0 * removed.size > limit:
        return 0.0, 0.0, True
    G: Any = 0.0
    t: Any = 0.0
    if added.size:
        G, t = _gram(block, added, winv, c)
    if removed.size:
        Gr, tr = _gram(block, removed, winv, c)
        G, t = G - Gr, t - tr
    return G, t, False


def _face_solve(block: DiagPlusLowRankQ, u: FloatArray, z: FloatArray, winv: float, c: float | FloatArray,
                limit: float, full: bool) -> tuple[FloatArray, tuple[Any, ...]]:
    """Step (2) on the chunk: ũ = D_B⁻¹(r − H z) on B = {u > 0} (0 off B), u⁺ = ũ₊.

    Returns u⁺ and the partial (−H_negᵀ ũ_neg, Σu⁺², Σcᵀu⁺, |neg|, |u⁺ > 0|, rows leaving B,
    the Gram update over them, whether it was skipped, all finite): with z = (I + G)⁻¹t the
    client's p = z + Σ(−H_negᵀ ũ_neg) is Hᵀu⁺, as in process. With ``full`` the Gram part is
    instead the Gram matrix of B⁺ = {u⁺ > 0} built from its rows (a rebuild the client foresaw).
    """
    ut = block.matvec_lowrank(z)            # a new array: ours to overwrite
    np.negative(ut, out=ut)
    ut -= c
    ut *= winv
    B = u > 0
    ut[~B] = 0.0
    neg = np.flatnonzero(ut < 0)
    dp: Any = 0.0
    if 3 * neg.size > ut.size:
        # most rows clipped (the first steps): one plain pass beats gathering the rows
        dp = -block.rmatvec_lowrank(np.minimum(ut, 0.0))
    elif neg.size:
        dp = -block.rmatvec_rows(neg, ut[neg])
    un = np.maximum(ut, 0.0, out=ut)
    pos = un > 0
    removed = np.flatnonzero(np.greater(B, pos))       # in B, not in B⁺ (bools: B > pos is B & ~pos)
    if full:
        G, t = _gram(block, None if pos.all() else np.flatnonzero(pos), winv, c)
        skipped = False
    else:
        G, t, skipped = _gram_change(block, np.zeros(0, dtype=np.intp), removed, winv, c, limit)
    finite = bool(np.isfinite(un).all())
    return un, (dp, float(un @ un), _dot_c(c, un), int(neg.size), int(np.count_nonzero(pos)), int(removed.size),
                G, t, skipped, finite)


def _k_gram(block: DiagPlusLowRankQ, winv: float, c: float | FloatArray) -> tuple[FloatArray, FloatArray]:
    """The Gram matrix of all rows (the start's B)."""
    return _gram(block, None, winv, c)


def _k_face(block: DiagPlusLowRankQ, u: FloatArray, z: FloatArray, winv: float, c: float | FloatArray,
            limit: float, full: bool) -> tuple[FloatArray, tuple[Any, ...]]:
    """A face solve alone (the start, or an iteration whose face solve was not run ahead)."""
    return _face_solve(block, u, z, winv, c, limit, full)


def _k_start(block: DiagPlusLowRankQ, x0: FloatArray, winv: float, c: float | FloatArray
             ) -> tuple[FloatArray, tuple[Any, ...]]:
    """A warm start: u = (x0)₊, the Gram matrix of B = {u > 0}, Hᵀu and the scalars of f."""
    u = np.maximum(x0, 0.0)
    pos = u > 0
    G, t = _gram(block, None if pos.all() else np.flatnonzero(pos), winv, c)
    p = block.rmatvec_lowrank(u)
    return u, (G, t, p, float(u @ u), _dot_c(c, u), int(np.count_nonzero(pos)), bool(np.isfinite(u).all()))


def _k_hu(block: DiagPlusLowRankQ, u: FloatArray, c: float | FloatArray) -> tuple[FloatArray, float, float]:
    """Hᵀu, Σu² and Σcᵀu afresh (the exact refresh)."""
    return block.rmatvec_lowrank(u), float(u @ u), _dot_c(c, u)


def _k_grad(block: DiagPlusLowRankQ, u: FloatArray, p: FloatArray, d: float, winv: float, c: float | FloatArray,
            face_from: FloatArray | None, rebuild: bool, cauchy: bool, refine: bool, z: FloatArray | None,
            limit: float, full: bool) -> tuple[FloatArray, FloatArray | None, tuple[Any, ...]]:
    """The gradient at an accepted point, with whatever the next decision needs.

    g = d∘u + H p + c (kept), and the partial: ‖P(g)‖∞; the largest |P(g)_i| over the face
    {face_from > 0} (step 2b's test); whether g is finite; with ``rebuild`` the Gram matrix of
    B = {u > 0}; with ``cauchy`` Hᵀ P(g) and ‖P(g)‖² (the projected search's first step); with
    ``refine`` H_Bᵀ D_B⁻¹(−g_B) (the right-hand side of (2a)'s refined face solve); with z the
    next face solve from u (:func:`_face_solve` with ``limit`` and ``full``, kept too).
    """
    g = block.matvec_lowrank(p)
    # one scratch array for d∘u, then P(g), then |P(g)|: on workers every new array costs page faults
    scratch = np.multiply(u, d)
    g += scratch
    g += c
    pg = projected_gradient(u, g, _LB, _UB, out=scratch)
    hg: Any = 0.0
    sg = 0.0
    if cauchy:
        hg, sg = block.rmatvec_lowrank(pg), float(pg @ pg)
    apg = np.abs(pg, out=pg)
    measure = float(apg.max(initial=0.0))
    face = float(np.max(apg, where=face_from > 0, initial=0.0)) if face_from is not None else np.inf
    finite = bool(np.isfinite(g).all())
    G: Any = 0.0
    t: Any = 0.0
    if rebuild:
        pos = u > 0
        G, t = _gram(block, None if pos.all() else np.flatnonzero(pos), winv, c)
    tr: Any = 0.0
    if refine:
        tr = block.rmatvec_lowrank(np.where(u > 0, -winv * g, 0.0))
    un: FloatArray | None = None
    fp = _NO_FACE
    if z is not None:
        un, fp = _face_solve(block, u, z, winv, c, limit, full)
    return g, un, (measure, face, finite, G, t, hg, sg, tr, *fp)


_GRAD_OPS = ("max", "max", "all", "sum", "sum", "sum", "sum", "sum", *_FACE_OPS)


def _k_cauchy(block: DiagPlusLowRankQ, u: FloatArray, g: FloatArray) -> tuple[FloatArray, float]:
    """Hᵀ P(g) and ‖P(g)‖² at (u, g): the curvature of the first trial of the projected search."""
    pg = projected_gradient(u, g, _LB, _UB)
    return block.rmatvec_lowrank(pg), float(pg @ pg)


def _k_ratio(block: DiagPlusLowRankQ, u: FloatArray, g: FloatArray, zz: FloatArray, winv: float
             ) -> tuple[FloatArray, tuple[float]]:
    """(2a)'s refined face step δ = D_B⁻¹(−g − H zz) on B (kept) and the ratio test's
    min u_i / (u_i − ũ_i) over the rows of B that ũ = u + δ takes below 0."""
    delta = block.matvec_lowrank(zz)
    np.negative(delta, out=delta)
    delta -= g
    delta *= winv
    delta[~(u > 0)] = 0.0
    ut = u + delta
    drop = np.flatnonzero(ut < 0)           # only rows of B: off B, ũ = u ≥ 0
    lam = float((u[drop] / (u[drop] - ut[drop])).min(initial=np.inf))
    return delta, (lam,)


def _k_move(block: DiagPlusLowRankQ, u: FloatArray, delta: FloatArray, lam: float, winv: float,
            c: float | FloatArray, limit: float) -> tuple[FloatArray, tuple[Any, ...]]:
    """(4a): u + λδ with the blocking rows set exactly to 0; the partial corrects p = Hᵀu."""
    ut = u + delta
    drop = np.flatnonzero(ut < 0)
    ratios = u[drop] / (u[drop] - ut[drop])
    hit = drop[ratios <= lam]
    un = u + lam * delta
    un[hit] = 0.0                           # the blocking variables land exactly on their bound
    np.maximum(un, 0.0, out=un)
    corr: Any = block.rmatvec_rows(hit, u[hit] + lam * delta[hit]) if hit.size else 0.0
    B, pos = u > 0, un > 0
    added, removed = np.flatnonzero(np.greater(pos, B)), np.flatnonzero(np.greater(B, pos))
    G, t, skipped = _gram_change(block, added, removed, winv, c, limit)
    return un, (corr, float(un @ un), _dot_c(c, un), int(np.count_nonzero(pos)), int(added.size + removed.size),
                G, t, skipped, bool(np.isfinite(un).all()))


_STEP_OPS = ("sum", "sum", "sum", "sum", "sum", "sum", "sum", "max", "all")


def _k_trial(block: DiagPlusLowRankQ, u: FloatArray, g: FloatArray, step: float, winv: float,
             c: float | FloatArray, limit: float) -> tuple[FloatArray, tuple[Any, ...]]:
    """One trial of the projected search: x(t) = (u − t g)₊ (kept) and, for s = x(t) − u, the
    partial (Hᵀs, Σs², Σgᵀs, |x > 0|, rows changing B, the Gram update over them, skipped, finite)."""
    x = u - step * g
    np.maximum(x, 0.0, out=x)
    s = x - u
    moved = np.flatnonzero(s)
    # Hᵀs over the moved rows; when most rows move one plain pass is cheaper than gathering them
    hs: Any = 0.0
    if 3 * moved.size > s.size:
        hs = block.rmatvec_lowrank(s)
    elif moved.size:
        hs = block.rmatvec_rows(moved, s[moved])
    B, pos = u > 0, x > 0
    added, removed = np.flatnonzero(np.greater(pos, B)), np.flatnonzero(np.greater(B, pos))
    G, t, skipped = _gram_change(block, added, removed, winv, c, limit)
    return x, (hs, float(s @ s), float(g @ s), int(np.count_nonzero(pos)), int(added.size + removed.size),
               G, t, skipped, bool(np.isfinite(x).all()))


def _k_bounds(lb: FloatArray, ub: FloatArray) -> tuple[bool, bool]:
    """Whether the chunk's bounds are u ≥ 0 (lb = 0, ub = inf)."""
    return bool((lb == 0).all()), bool(np.isposinf(ub).all())


# --------------------------------------------------------------------------------------------- client side
class _Checked(ChunkedVector):
    """A chunked vector whose finiteness the pass that made it reported (the loop's periodic
    ``all_finite`` then costs no reduction)."""

    def __init__(self, space: RowSpace, parts: list[Any], *, pick: int, finite: bool) -> None:
        super().__init__(space, parts, pick=pick)
        self.finite = finite

    def all_finite(self) -> bool:
        """Whether every entry is finite (as reported by the pass that computed the chunks)."""
        return self.finite


@attrs.define(slots=True, eq=False)
class _Face:
    """A face solve's outcome: the candidate u⁺ (on the workers) and its client-side summary."""

    u: ChunkedVector          # the point the face B = {u > 0} is taken from
    version: int              # the factor it used (ChunkedASVMWork.version)
    un: ChunkedVector         # u⁺
    p: FloatArray             # Hᵀu⁺ (z minus the clipped rows' part, as in process)
    f: float                  # f(u⁺)
    neg: int                  # rows of B clipped to 0 (ũ < 0)
    size: int                 # |{u⁺ > 0}|
    changed: int              # rows leaving B
    G: Any                    # the Gram update over them (already negative), or with `fresh`
    t: Any                    # the Gram matrix of the new B built from its rows
    skipped: bool             # a chunk left the Gram update to a rebuild
    fresh: bool               # G, t were built from the rows of B⁺ (a foreseen rebuild)


@attrs.define(slots=True, eq=False)
class ChunkedASVMWork:
    """ASVM's slot in ``State.extra`` for chunked data.

    Attributes
    ----------
    space : RowSpace
        The partition (its ``counters`` record the communication).
    blocks : PerChunk
        The chunks' ``DiagPlusLowRankQ`` operators.
    d, winv : float
        The diagonal and 1/d.
    c : float or ChunkedVector
        The linear term as the kernels take it (a scalar when constant).
    G, t : ndarray
        H_Bᵀ D_B⁻¹ H_B and H_Bᵀ D_B⁻¹ r_B for B = {u > 0}, r = −c.
    small : SmallFactor
        The factor of I + G.
    size, since : int
        |B|, and the rows changed by rank updates since G was last built from the rows.
    version : int
        Bumped whenever G, t or the factor change (a face solve run ahead is valid only for its version).
    p : ndarray
        Hᵀu (k-vector): the primal (w, γ) of the ASVM dual, on the client.
    f : float
        The objective at u.
    tol : float
        The requested tolerance.
    measure : float
        ‖P(g)‖∞ at the state's gradient.
    face_measure : float
        max |P(g)_i| over the face the last face step came from.
    flat : int
        Iterations in a row without a decrease.
    pending : _Face or None
        The face solve from the state's u, run ahead by the last gradient pass.
    cauchy : tuple or None
        (Hᵀ P(g), ‖P(g)‖²) at the state's point, reduced ahead when a projected search was foreseen.
    tr : ndarray or None
        H_Bᵀ D_B⁻¹(−g_B), the right-hand side of (2a)'s refined solve, from the last exact refresh.
    shrink : float
        The fraction of B the last accepted step removed (to foresee the next rebuild).
    """

    space: RowSpace
    blocks: PerChunk
    d: float
    winv: float
    c: float | ChunkedVector
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
    cauchy: tuple[FloatArray, float] | None = None
    tr: FloatArray | None = None
    shrink: float = 0.0


def _pass(space: RowSpace, fn: Callable[..., Any], *args: Any, ops: tuple[str, ...], name: str
          ) -> tuple[list[Any], tuple[Any, ...]]:
    """One pass that keeps m-vectors on the workers and brings back the reduced partial results.

    ``fn`` returns ``(kept..., partial)``; a tiny task per chunk picks the partial on the worker
    that holds the output, so the kept chunks never travel, and the partials are tree-reduced.
    """
    outs = space.map(fn, *args, name=name)
    parts = space.map(_partial, PerChunk(outs), name=f"{name}-partial")
    reduced: tuple[Any, ...] = space.tree(parts, ops)
    return outs, reduced


def _kvec(v: Any, k: int) -> FloatArray:
    """A reduced k-vector (0.0 when no chunk contributed one)."""
    if isinstance(v, np.ndarray):
        return np.asarray(v, dtype=np.float64)
    return np.zeros(k)


def _kmat(v: Any, k: int) -> FloatArray:
    """A reduced k×k matrix (0.0 when no chunk contributed one)."""
    if isinstance(v, np.ndarray):
        return np.asarray(v, dtype=np.float64)
    return np.zeros((k, k))


def _objective(d: float, sq: float, p: FloatArray, cu: float) -> float:
    """f(u) = ½(d‖u‖² + ‖Hᵀu‖²) + cᵀu from the reduced scalars and p = Hᵀu."""
    return float(0.5 * (d * sq + p @ p) + cu)


def _no_status() -> NDArray[np.int8]:
    # the per-variable bound status would be m long: for chunked data B = {u > 0} stays on the workers
    return np.zeros(0, dtype=np.int8)


def _check_problem(cfg: ASVM, qp: QP) -> ChunkedLowRankQ:
    Q = qp.Q
    assert isinstance(Q, ChunkedLowRankQ)
    if qp.m:
        raise ProblemError("ASVM: equality constraints are not supported (the ASVM dual has none)")
    lb: Any = qp.lb
    ub: Any = qp.ub
    if not (isinstance(lb, ChunkedVector) and isinstance(ub, ChunkedVector)):
        raise ProblemError("ASVM: a chunked problem's bounds must be chunked vectors")
    if lb.parts is None and ub.parts is None:
        ok = lb.const == 0 and ub.const == np.inf
    else:
        lo, hi = Q.space.reduce(_k_bounds, lb, ub, ops=("all", "all"), name="qpcore-asvm-bounds")
        ok = bool(lo) and bool(hi)
    if not ok:
        raise ProblemError("ASVM: the feasible set must be u ≥ 0 (lb = 0, ub = inf)")
    if not Q.d > 0:
        raise ProblemError("ASVM: the diagonal d must be > 0 (SMW inverts D_B)")
    if Q.k > cfg.max_rank:
        raise ProblemError(f"ASVM: H has k = {Q.k} columns, above max_rank = {cfg.max_rank}; "
                           "the k×k system would not fit (use SMO or decomposition)")
    return Q


def _factor(state: State, G: FloatArray, *, fallback: bool) -> SmallFactor | None:
    small = factor_identity_plus(G, fallback=fallback)
    if small is not None and small.eig is not None:
        state.counters["gram_fallbacks"] += 1
    return small


def _face_pass(state: State, u: ChunkedVector) -> _Face:
    """Step (2) as its own pass (when it was not run ahead)."""
    work: ChunkedASVMWork = state.extra
    z = work.small.solve(work.t)
    full = _rebuild_foreseen(work)
    outs, red = _pass(work.space, _k_face, work.blocks, u, z, work.winv, work.c, _limit(work), full,
                      ops=_FACE_OPS, name="qpcore-asvm-face")
    return _face_of(work, u, z, outs, 0, red, full)


def _limit(work: ChunkedASVMWork) -> float:
    """|B| − (rows updated since the last build): a change removing more than half of it is a rebuild."""
    return float(work.size - work.since)


def _rebuild_foreseen(work: ChunkedASVMWork) -> bool:
    """Whether the next face step will rebuild G by the in-process rule (more than half of
    |B| − since rows leaving B), if it removes the same fraction of B as the last step did.

    Early on B shrinks by large fractions and the rule rebuilds every other step; a face solve
    that foresees it builds the Gram matrix of B⁺ from its rows in its own pass, so the next
    face solve can still run ahead with the gradient (one pass per iteration instead of two).
    """
    return work.shrink * work.size > 0.5 * (work.size - work.since)


def _face_of(work: ChunkedASVMWork, u: ChunkedVector, z: FloatArray, outs: list[Any], pick: int,
             red: tuple[Any, ...], full: bool) -> _Face:
    dp, sq, cu, neg, size, changed, G, t, skipped, finite = red
    k = z.size
    p = z + _kvec(dp, k)
    un = _Checked(work.space, outs, pick=pick, finite=bool(finite))
    return _Face(u=u, version=work.version, un=un, p=p, f=_objective(work.d, float(sq), p, float(cu)),
                 neg=int(neg), size=int(size), changed=int(changed), G=G, t=t, skipped=bool(skipped), fresh=full)


def _accept(state: State, u: ChunkedVector, p: FloatArray, f: float, size: int, changed: int, G: Any, t: Any,
            skipped: bool, *, face_from: ChunkedVector | None, ahead: bool, cauchy: bool, progress: bool = True,
            fresh: bool = False) -> None:
    """Accept u (with p = Hᵀu and f): update the Gram matrix by the in-process rule, then one pass
    for the gradient at u and what comes next (the face solve run ahead, the Cauchy step's curvature).

    ``changed`` rows entered or left B with the Gram update (G, t); the rule rebuilds G from the
    rows when the rows updated since the last build would outnumber |B| (or the update fails to
    factor), so rounding from many updates never outweighs one fresh build. With ``fresh``, (G, t)
    are already the Gram matrix of the new B built from its rows.
    """
    work: ChunkedASVMWork = state.extra
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
        # progress is a decrease above rounding (see the in-process ASVM): an ulp of oscillation
        # between two faces counts as flat, so the stall test sees it
        tiny = 8.0 * np.finfo(np.float64).eps * max(1.0, abs(work.f))
        work.flat = 0 if f < work.f - tiny else work.flat + 1
    work.p, work.f = p, f
    z = work.small.solve(work.t) if ahead and not rebuild else None
    full = z is not None and _rebuild_foreseen(work)
    outs, red = _pass(work.space, _k_grad, work.blocks, u, p, work.d, work.winv, work.c, face_from, rebuild,
                      cauchy, False, z, _limit(work), full, ops=_GRAD_OPS, name="qpcore-asvm-grad")
    measure, face, finite, Gb, tb, hg, sg, _, *fr = red
    if rebuild:
        _rebuilt(state, Gb, tb, k)
    _install(state, u, _Checked(work.space, outs, pick=0, finite=bool(finite)), exact=False)
    work.measure, work.face_measure = float(measure), float(face)
    work.cauchy = (_kvec(hg, k), float(sg)) if cauchy else None
    work.tr = None
    work.pending = _face_of(work, u, z, outs, 1, tuple(fr), full) if z is not None else None


def _rebuilt(state: State, G: Any, t: Any, k: int) -> None:
    """Install a Gram matrix built from the rows of B (the fallback factor allowed)."""
    work: ChunkedASVMWork = state.extra
    work.G, work.t = _kmat(G, k), _kvec(t, k)
    work.since = 0
    state.counters["gram_rebuilds"] += 1
    small = _factor(state, work.G, fallback=True)
    assert small is not None
    work.small = small
    work.version += 1


def _install(state: State, x: ChunkedVector | None, g: Any, *, exact: bool) -> None:
    """Set the state's point (when given) and gradient; ``exact``: g was computed afresh from x.

    ``State`` types its fields for numpy points; chunked vectors stand in for them (the loop, the
    certificate and the progress snapshots accept both).
    """
    if x is not None:
        state.x = x  # type: ignore[assignment]
    state.g = g
    state.exact = (state.x, g) if exact else None


def _exact(state: State, *, refine: bool = False) -> float:
    """Recompute p = Hᵀu, g and f from u afresh (two passes); returns the KKT measure.

    With ``refine`` the gradient pass also reduces (2a)'s right-hand side H_Bᵀ D_B⁻¹(−g_B).
    """
    work: ChunkedASVMWork = state.extra
    u: ChunkedVector = state.x  # type: ignore[assignment]
    k = work.p.size
    p, sq, cu = work.space.reduce(_k_hu, work.blocks, u, work.c, ops=("sum", "sum", "sum"), name="qpcore-asvm-Hu")
    p = _kvec(p, k)
    outs, red = _pass(work.space, _k_grad, work.blocks, u, p, work.d, work.winv, work.c, None, False, False,
                      refine, None, _limit(work), False, ops=_GRAD_OPS, name="qpcore-asvm-exact")
    measure, _, finite, _, _, _, _, tr, *_ = red
    _install(state, None, _Checked(work.space, outs, pick=0, finite=bool(finite)), exact=True)
    work.p, work.f = p, _objective(work.d, float(sq), p, float(cu))
    work.measure = float(measure)
    work.cauchy = None
    work.tr = _kvec(tr, k) if refine else None
    return work.measure


def _check(state: State) -> bool:
    """When the running gradient meets tol, confirm with an exact one before claiming it."""
    work: ChunkedASVMWork = state.extra
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
    work: ChunkedASVMWork = state.extra
    state.counters["projection_steps"] += 1
    u: ChunkedVector = state.x  # type: ignore[assignment]
    g: ChunkedVector = state.g  # type: ignore[assignment]
    k = work.p.size
    if work.cauchy is None:
        if state.out_of_time():
            work.flat += 1      # on the deadline the search takes no further product
            return
        hg, sg = work.space.reduce(_k_cauchy, work.blocks, u, g, ops=("sum", "sum"), name="qpcore-asvm-cauchy")
        work.cauchy = (_kvec(hg, k), float(sg))
    hg, sg = work.cauchy
    curv = work.d * sg + float(hg @ hg)
    if not sg > 0 or not curv > 0:
        work.flat += 1          # no moving variable: P(g) = 0
        return
    step = sg / curv
    for _ in range(_TRIALS):
        if state.out_of_time():
            break
        outs, red = _pass(work.space, _k_trial, work.blocks, u, g, step, work.winv, work.c, _limit(work),
                          ops=_STEP_OPS, name="qpcore-asvm-trial")
        hs, ss, gs, size, changed, G, t, skipped, finite = red
        hs = _kvec(hs, k)
        gs = float(gs)
        q = gs + 0.5 * (work.d * float(ss) + float(hs @ hs))      # f(x(t)) − f(u)
        if not np.isfinite(q):
            if not finite:
                break           # a NaN or inf in the trial point: no step (the loop's check reports it)
            state.stop = Status.UNBOUNDED   # cannot happen with d > 0; kept for honesty
            return
        if q < 0 and q <= _MU * gs:
            x = _Checked(work.space, outs, pick=0, finite=bool(finite))
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
    work: ChunkedASVMWork = state.extra
    state.counters["face_moves"] += 1
    u: ChunkedVector = state.x  # type: ignore[assignment]
    outs, (lam_min,) = _pass(work.space, _k_ratio, work.blocks, u, state.g, zz, work.winv, ops=("min",),
                             name="qpcore-asvm-ratio")
    lam = float(min(1.0, lam_min))
    delta = ChunkedVector(work.space, outs, pick=0)
    outs, red = _pass(work.space, _k_move, work.blocks, u, delta, lam, work.winv, work.c, _limit(work),
                      ops=_STEP_OPS, name="qpcore-asvm-move")
    corr, sq, cu, size, changed, G, t, skipped, finite = red
    k = zz.size
    p = work.p + lam * zz - _kvec(corr, k)
    un = _Checked(work.space, outs, pick=0, finite=bool(finite))
    reached = lam >= 1.0
    _accept(state, un, p, _objective(work.d, float(sq), p, float(cu)), int(size), int(changed), G, t, bool(skipped),
            face_from=None, ahead=not reached, cauchy=reached)
    return reached


def _decrease_fail(state: State) -> None:
    """(2a): no decrease; refresh exactly, move toward the refined face minimum, then (4b) if reached."""
    work: ChunkedASVMWork = state.extra
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


# --------------------------------------------------------------------------------------------- entry points
def init_chunked(cfg: ASVM, qp: QP, x0: Any, tol: float) -> State:
    """:meth:`strategies.asvm.ASVM.init` for a :class:`qpcore.chunked.ChunkedLowRankQ`.

    Parameters
    ----------
    cfg : ASVM
        The configuration.
    qp : QP
        min ½uᵀQu + cᵀu, u ≥ 0, with Q chunked (c, lb, ub chunked vectors).
    x0 : ChunkedVector or None
        A start, clipped to u ≥ 0 chunk by chunk; None: u⁰ = (Q⁻¹(−c))₊ through the factor of
        the full block, as in process.
    tol : float
        The tolerance on the projected-gradient norm.

    Returns
    -------
    State
        ``x`` and ``g`` chunked vectors; ``extra`` a :class:`ChunkedASVMWork`.

    Raises
    ------
    ProblemError
        For equality rows, bounds other than u ≥ 0, d ≤ 0, k > max_rank, or an x0 that is not a
        chunked vector of the problem's partition.
    ClusterError
        When the cluster loses data it cannot recompute.
    """
    Q = _check_problem(cfg, qp)
    space = Q.space
    if x0 is not None:
        if not isinstance(x0, ChunkedVector):
            raise ProblemError("x0: a chunked problem starts from a ChunkedVector (e.g. a previous result's x) or None")
        if x0.space.sizes != space.sizes:
            raise ProblemError(f"x0: its chunks {x0.space.sizes} are not the problem's {space.sizes}")
    c_in: Any = qp.c
    c_arg: float | ChunkedVector = c_in.const if isinstance(c_in, ChunkedVector) and c_in.parts is None else c_in
    d = float(Q.d)
    counters = {"face_solves": 0, "decrease_fails": 0, "face_optimal": 0, "face_moves": 0,
                "projection_steps": 0, "exact_checks": 0, "refined_solves": 0, "refinements": 0,
                "gram_rebuilds": 0, "gram_rank_updates": 0, "gram_fallbacks": 0, "faces_ahead": 0}
    k = Q.k
    state = State(x=space.full(0.0), g=space.full(0.0), status=_no_status(), counters=counters)  # type: ignore[arg-type]
    if x0 is None:
        G, t = space.reduce(_k_gram, Q.blocks, 1.0 / d, c_arg, ops=("sum", "sum"), name="qpcore-asvm-gram")
        G, t = _kmat(G, k), _kvec(t, k)
        size, cu, sq, p = space.m, 0.0, 0.0, np.zeros(k)
    else:
        outs, red = _pass(space, _k_start, Q.blocks, x0, 1.0 / d, c_arg,
                          ops=("sum", "sum", "sum", "sum", "sum", "sum", "all"), name="qpcore-asvm-start")
        G, t, p, sq, cu, size, finite = red
        G, t, p, size = _kmat(G, k), _kvec(t, k), _kvec(p, k), int(size)
        u0 = _Checked(space, outs, pick=0, finite=bool(finite))
    counters["gram_rebuilds"] += 1
    small = factor_identity_plus(G)
    assert small is not None
    if small.eig is not None:
        counters["gram_fallbacks"] += 1
    work = ChunkedASVMWork(space=space, blocks=Q.blocks, d=d, winv=1.0 / d, c=c_arg, G=G, t=t, small=small,
                           size=size, since=0, p=p, f=_objective(d, float(sq), p, float(cu)), tol=tol)
    state.extra = work
    try:
        if x0 is None:
            face = _face_pass(state, space.full(1.0))   # B = every row
            counters["face_solves"] = 1
            _accept(state, face.un, face.p, face.f, face.size, face.changed, face.G, face.t, face.skipped,
                    face_from=None, ahead=True, cauchy=False, progress=False, fresh=face.fresh)
        else:
            _accept(state, u0, p, work.f, size, 0, 0.0, 0.0, False, face_from=None, ahead=True, cauchy=False,
                    progress=False)
            _install(state, None, state.g, exact=True)      # p = Hᵀu was reduced afresh: g is exact
        _check(state)
    except ClusterError as e:
        e.primal, e.iteration = work.p.copy(), 0
        raise
    return state


def step_chunked(cfg: ASVM, qp: QP, state: State) -> None:
    """:meth:`strategies.asvm.ASVM.step` for chunked data: one iteration of Algorithm 3.1.

    A normal iteration reads the face solve run ahead by the last pass and takes one pass for the
    gradient at the accepted point (with the next face solve); the safeguards take a few more.
    On the run's deadline the step skips its projection step (4b) and returns with u, Hᵀu, g and
    f accepted together.

    Raises
    ------
    ClusterError
        When the cluster loses data it cannot recompute; its ``primal`` is the last accepted
        p = Hᵀu (the model (w, γ)) and ``iteration`` the iteration reached.
    """
    work: ChunkedASVMWork = state.extra
    try:
        _step(cfg, state)
    except ClusterError as e:
        e.primal, e.iteration = work.p.copy(), state.iteration
        raise


def _step(cfg: ASVM, state: State) -> None:
    work: ChunkedASVMWork = state.extra
    if work.flat >= cfg.stall:
        # rounding-level progress only: refresh everything exactly, and give up honestly when that
        # has not restarted progress either
        if state.counters["refinements"] >= 3:
            state.stop = Status.STALLED
            return
        state.counters["refinements"] += 1
        work.flat = 0
        if _exact(state) <= work.tol:
            state.done = True
        return
    u: ChunkedVector = state.x  # type: ignore[assignment]
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
