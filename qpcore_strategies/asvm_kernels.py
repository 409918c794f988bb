"""ASVM's passes over the rows: the kernels :mod:`qpcore_strategies.asvm` runs on each block of rows.

Each kernel is a module-level (picklable) function run on one block by
:class:`qpcore.backends.rowspace.Rows`: in process once on the whole data, on a Dask cluster once per
chunk where the chunk lives. ``block`` is the block's :class:`qpcore.backends.lowrank.DiagPlusLowRankQ`
(its products, ``rmatvec_rows``, ``weighted_gram``); ``u``, ``g``, ... are the block's arrays;
``d``, ``winv`` = 1/d and ``c`` are scalars standing for constant vectors, or the block's arrays.
A kernel returns ``(kept..., partial)``: the kept m-vector pieces stay with the block, the
partial (a tuple) is combined over the blocks by the ops named beside the kernel. Kernels never
change their inputs (a cluster replays them to recompute a lost chunk).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore.core.optimality import projected_gradient

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
Scalar = float | FloatArray      # a constant vector's value, or the block's own array

__all__ = ["FACE_OPS", "GRAD_OPS", "STEP_OPS", "k_bounds", "k_cauchy", "k_face", "k_grad", "k_gram", "k_hu",
           "k_move", "k_ratio", "k_start", "k_trial"]

_LB = np.zeros(())                  # the bounds of u ≥ 0, as 0-d arrays that broadcast over a block
_UB = np.full((), np.inf)

#: how the face solve's partial results combine (see :func:`face_solve`)
FACE_OPS = ("sum", "sum", "sum", "sum", "sum", "sum", "sum", "sum", "max", "all")
_NO_FACE: tuple[Any, ...] = (0.0, 0.0, 0.0, 0, 0, 0, 0.0, 0.0, False, True)


def _vec(v: Scalar, n: int) -> FloatArray:
    """A block-length view of a scalar (no copy), or the block's own array."""
    if isinstance(v, np.ndarray):
        return v
    return np.broadcast_to(np.float64(v), (n,))


def _dot_c(c: Scalar, x: FloatArray) -> float:
    """Σ c_i x_i for a scalar or per-row c."""
    if isinstance(c, np.ndarray):
        return float(c @ x)
    return float(c * x.sum())


def _dsq(d: Scalar, x: FloatArray) -> float:
    """Σ d_i x_i² for a scalar or per-row d."""
    if isinstance(d, np.ndarray):
        return float((d * x) @ x)
    return float(d) * float(x @ x)


def _gram(block: DiagPlusLowRankQ, idx: IndexArray | None, winv: Scalar, c: Scalar) -> tuple[FloatArray, FloatArray]:
    """(Σ_i w_i h_i h_iᵀ, Σ_i w_i r_i h_i) over the rows idx (all when None), w = 1/d, r = −c."""
    n = block.shape[0]
    minus_c = -c if isinstance(c, np.ndarray) else -float(c)
    return block.weighted_gram(idx, _vec(winv, n), _vec(minus_c, n))


def _gram_change(block: DiagPlusLowRankQ, added: IndexArray, removed: IndexArray, winv: Scalar, c: Scalar,
                 limit: float) -> tuple[Any, Any, bool]:
    """The Gram update (G, t) of the rows entering and leaving B, or (0, 0, True) when this block
    alone removes more than ``limit`` rows: then the rebuild rule applies whatever the other
    blocks did (rank updates need 2·removed ≤ |B| − rows updated since the last build)."""
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


def face_solve(block: DiagPlusLowRankQ, u: FloatArray, z: FloatArray, d: Scalar, winv: Scalar, c: Scalar,
               limit: float, full: bool) -> tuple[FloatArray, tuple[Any, ...]]:
    """Step (2) on the block: ũ = D_B⁻¹(r − H z) on B = {u > 0} (0 off B), u⁺ = ũ₊.

    Returns u⁺ and the partial (−H_negᵀ ũ_neg, Σd u⁺², Σcᵀu⁺, |neg|, |u⁺ > 0|, rows leaving B,
    the Gram update over them, whether it was skipped, all finite): with z = (I + G)⁻¹t,
    p = z + Σ(−H_negᵀ ũ_neg) is Hᵀu⁺. With ``full`` the Gram part is instead the Gram matrix
    of B⁺ = {u⁺ > 0} built from its rows (a rebuild foreseen).
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
    return un, (dp, _dsq(d, un), _dot_c(c, un), int(neg.size), int(np.count_nonzero(pos)), int(removed.size),
                G, t, skipped, finite)


def k_gram(block: DiagPlusLowRankQ, winv: Scalar, c: Scalar) -> tuple[FloatArray, FloatArray]:
    """The Gram matrix of all rows (the start's B); ops ``("sum", "sum")``."""
    return _gram(block, None, winv, c)


def k_face(block: DiagPlusLowRankQ, u: FloatArray, z: FloatArray, d: Scalar, winv: Scalar, c: Scalar,
           limit: float, full: bool) -> tuple[FloatArray, tuple[Any, ...]]:
    """A face solve alone (the start, or an iteration whose face solve was not run ahead); :data:`FACE_OPS`."""
    return face_solve(block, u, z, d, winv, c, limit, full)


def k_start(block: DiagPlusLowRankQ, x0: FloatArray, d: Scalar, winv: Scalar, c: Scalar
            ) -> tuple[FloatArray, tuple[Any, ...]]:
    """A warm start: u = (x0)₊, the Gram matrix of B = {u > 0}, Hᵀu and the scalars of f;
    ops ``("sum",) * 6 + ("all",)``."""
    u = np.maximum(x0, 0.0)
    pos = u > 0
    G, t = _gram(block, None if pos.all() else np.flatnonzero(pos), winv, c)
    p = block.rmatvec_lowrank(u)
    return u, (G, t, p, _dsq(d, u), _dot_c(c, u), int(np.count_nonzero(pos)), bool(np.isfinite(u).all()))


def k_hu(block: DiagPlusLowRankQ, u: FloatArray, d: Scalar, c: Scalar) -> tuple[FloatArray, float, float]:
    """Hᵀu, Σd u² and Σcᵀu afresh (the exact refresh); ops ``("sum", "sum", "sum")``."""
    return block.rmatvec_lowrank(u), _dsq(d, u), _dot_c(c, u)


def k_grad(block: DiagPlusLowRankQ, u: FloatArray, p: FloatArray, d: Scalar, winv: Scalar, c: Scalar,
           face_from: FloatArray | None, rebuild: bool, cauchy: bool, refine: bool, z: FloatArray | None,
           limit: float, full: bool) -> tuple[FloatArray, FloatArray | None, tuple[Any, ...]]:
    """The gradient at an accepted point, with whatever the next decision needs; :data:`GRAD_OPS`.

    g = d∘u + H p + c (kept), and the partial: ‖P(g)‖∞; the largest |P(g)_i| over the face
    {face_from > 0} (step 2b's test); whether g is finite; with ``rebuild`` the Gram matrix of
    B = {u > 0}; with ``cauchy`` Hᵀ P(g), ‖P(g)‖² and Σd P(g)² (the projected search's first
    step); with ``refine`` H_Bᵀ D_B⁻¹(−g_B) (the right-hand side of (2a)'s refined face solve);
    with z the next face solve from u (:func:`face_solve` with ``limit`` and ``full``, kept too).
    """
    g = block.matvec_lowrank(p)
    # one scratch array for d∘u, then P(g), then |P(g)|: on workers every new array costs page faults
    scratch = np.multiply(u, d)
    g += scratch
    g += c
    pg = projected_gradient(u, g, _LB, _UB, out=scratch)
    hg: Any = 0.0
    sg = dsg = 0.0
    if cauchy:
        hg, sg, dsg = block.rmatvec_lowrank(pg), float(pg @ pg), _dsq(d, pg)
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
        un, fp = face_solve(block, u, z, d, winv, c, limit, full)
    return g, un, (measure, face, finite, G, t, hg, sg, dsg, tr, *fp)


GRAD_OPS = ("max", "max", "all", "sum", "sum", "sum", "sum", "sum", "sum", *FACE_OPS)


def k_cauchy(block: DiagPlusLowRankQ, u: FloatArray, g: FloatArray, d: Scalar) -> tuple[FloatArray, float, float]:
    """Hᵀ P(g), ‖P(g)‖² and Σd P(g)² at (u, g): the first trial of the projected search; all summed."""
    pg = projected_gradient(u, g, _LB, _UB)
    return block.rmatvec_lowrank(pg), float(pg @ pg), _dsq(d, pg)


def k_ratio(block: DiagPlusLowRankQ, u: FloatArray, g: FloatArray, zz: FloatArray, winv: Scalar
            ) -> tuple[FloatArray, tuple[float]]:
    """(2a)'s refined face step δ = D_B⁻¹(−g − H zz) on B (kept) and the ratio test's
    min u_i / (u_i − ũ_i) over the rows of B that ũ = u + δ takes below 0; ops ``("min",)``."""
    delta = block.matvec_lowrank(zz)
    np.negative(delta, out=delta)
    delta -= g
    delta *= winv
    delta[~(u > 0)] = 0.0
    ut = u + delta
    drop = np.flatnonzero(ut < 0)           # only rows of B: off B, ũ = u ≥ 0
    lam = float((u[drop] / (u[drop] - ut[drop])).min(initial=np.inf))
    return delta, (lam,)


def k_move(block: DiagPlusLowRankQ, u: FloatArray, delta: FloatArray, lam: float, d: Scalar, winv: Scalar,
           c: Scalar, limit: float) -> tuple[FloatArray, tuple[Any, ...]]:
    """(4a): u + λδ with the blocking rows set exactly to 0; the partial corrects p = Hᵀu; :data:`STEP_OPS`."""
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
    return un, (corr, _dsq(d, un), _dot_c(c, un), int(np.count_nonzero(pos)), int(added.size + removed.size),
                G, t, skipped, bool(np.isfinite(un).all()))


STEP_OPS = ("sum", "sum", "sum", "sum", "sum", "sum", "sum", "max", "all")


def k_trial(block: DiagPlusLowRankQ, u: FloatArray, g: FloatArray, step: float, d: Scalar, winv: Scalar,
            c: Scalar, limit: float) -> tuple[FloatArray, tuple[Any, ...]]:
    """One trial of the projected search: x(t) = (u − t g)₊ (kept) and, for s = x(t) − u, the
    partial (Hᵀs, Σd s², Σgᵀs, |x > 0|, rows changing B, the Gram update over them, skipped,
    finite); :data:`STEP_OPS`."""
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
    return x, (hs, _dsq(d, s), float(g @ s), int(np.count_nonzero(pos)), int(added.size + removed.size),
               G, t, skipped, bool(np.isfinite(x).all()))


def k_bounds(lb: FloatArray, ub: FloatArray, d: Scalar) -> tuple[bool, bool, bool]:
    """Whether the block's bounds are u ≥ 0 (lb = 0, ub = inf) and d > 0; ops ``("all",) * 3``."""
    return bool(np.all(lb == 0)), bool(np.all(np.isposinf(ub))), bool(np.all(np.asarray(d) > 0))
