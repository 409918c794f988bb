"""INCAS's gradient as the paper's stored products: the buffer of the free set's rows.

Scheinberg keeps Q_0S α_S, Q_CS α_S and Q e_C to price I0 and IC (:mod:`qpcore_strategies.incas`);
for any variable j, g_j = c_j + Σ_{k∈S} Q_jk x_k + Σ_{k∉S} Q_jk x_k, and the last sum is Q e_C
(times C) for the SVM. One vector g = Qx + c holds all three at once, and a Step 1 changes only
x_S, so g += t · Q[S, :]ᵀ p_S is one GEMV over a float64 buffer of the rows Q[S, :] (a row is
appended when a variable enters S and removed by swap-with-last when it leaves; rows are never
gathered again). With shrinking the buffer's columns are kept permuted so that the priced
(active) variables come first and the GEMV runs over them only; the gradient of the shrunk ones
is rebuilt from h = Σ_{k∉S} Q[k, :] x_k (the paper's Q e_C, kept by one axpy whenever a variable
with x_k ≠ 0 enters or leaves S) plus x_Sᵀ Q[S, shrunk].

This module holds that data structure (:class:`INCASWork`, the run's whole work state, whose
buffer fields these functions keep consistent) and its operations: the rows asked of the
operator (in float64, also from float32 kernel storage), a variable entering or leaving S, the
gradient updated, priced or rebuilt from the buffer, and shrinking (LIBSVM's test, the shrunk
columns moved to the end of the priced region by pairwise swaps).
"""

from __future__ import annotations

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.backends.capabilities import cross_block
from qpcore.backends.operators import KernelQ
from qpcore.core.optimality import measure, scores
from qpcore.core.problem import QP
from qpcore.core.state import State, Work
from qpcore.linalg.factor import BorderedCholesky

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["INCASWork"]


@attrs.define(slots=True, eq=False)
class INCASWork(Work):
    """INCAS's work state (``state.work(INCASWork)``); all of it is what ``resume`` continues from.

    The buffer ``buf`` holds the rows Q[S, :] in *slot* order (``var_of_slot``) with columns in
    *position* order (``perm[pos]`` is the variable of column ``pos``; ``pos_of`` its inverse);
    the first ``nact`` positions are the active (priced) variables.
    """

    a: FloatArray | None          # the equality row (None: no equality)
    b: float
    unit: bool                    # every a_i is ±1 (the SVM dual): cheaper scores
    tol: float
    fac: BorderedCholesky
    buf: FloatArray               # (capacity, n) float64 rows of S
    var_of_slot: IndexArray
    slot: IndexArray              # slot of each variable in S, −1 outside
    perm: IndexArray
    pos_of: IndexArray
    nact: int
    h: FloatArray                 # Σ_{k∉S} Q[k, :] x_k in position order (the paper's Q e_C)
    lb: FloatArray
    ub: FloatArray
    c: FloatArray
    ns: int = 0
    need_solve: bool = True
    lam: float | None = None      # equality multiplier at the last face optimum
    fresh: bool = False           # g was recomputed from the problem at the current x
    stuck: int = 0                # consecutive pricing rounds without a candidate
    zero_run: int = 0             # consecutive steps that did not move x
    since_shrink: int = 0
    unshrunk: bool = False        # the one unshrink near the end (LIBSVM's) has happened
    last_released: int = -1
    ident: bool = True            # perm is the identity (no scatter needed)
    since_eq: int = 0             # Step 1s since the equality residual was last checked
    stale: bool = False           # g off S is out of date (Step 1 keeps only g_S current)
    pos_cache: tuple[FloatArray, BoolArray] | None = None   # a and lb == ub in position order
    check_face: bool = False      # a full Step 1 awaits the residual check on the true gradient
    eq_fixed: bool = False        # the pre-convergence equality correction has been made
    face_misses: int = 0          # consecutive face checks that failed (then: refactor)


def _grow_rows(work: INCASWork) -> None:
    """Double the buffer's row capacity (the rows of S and their variables kept)."""
    cap = work.buf.shape[0]
    new_cap = max(8, 2 * cap)
    buf = np.empty((new_cap, work.buf.shape[1]))
    buf[:work.ns] = work.buf[:work.ns]
    work.buf = buf
    vs = np.full(new_cap, -1, dtype=np.intp)
    vs[:work.ns] = work.var_of_slot[:work.ns]
    work.var_of_slot = vs


# -- rows -----------------------------------------------------------------------------------------

def _row(qp: QP, state: State, i: int) -> FloatArray:
    """Q[i, :] in float64: from the operator's cache, or computed afresh for float32 storage."""
    state.counters["rows_requested"] += 1
    Q = qp.Q
    if isinstance(Q, KernelQ) and (Q.dtype != np.float64 or not Q.cached(i)):
        # the buffer of S's rows is INCAS's own cache: storing the row in the operator's
        # cache as well cost more (first touch of the cache's pages) than the rare
        # recomputation of a row that re-enters S (Adult 16k: 1.9 s against 0.3 s)
        Q.stats.cache_misses += 1
        row: FloatArray = np.asarray(Q.compute([i])[0], dtype=np.float64)
        return row
    return np.asarray(Q.row(i), dtype=np.float64).ravel()


def _cross64(qp: QP, state: State, rows: IndexArray, cols: IndexArray) -> FloatArray:
    """Q[rows][:, cols] in float64, computing only those entries where the operator can."""
    state.counters["cross_entries"] += int(rows.size * cols.size)
    Q = qp.Q
    if isinstance(Q, KernelQ) and Q.dtype != np.float64:
        if Q.kernel.name == "precomputed":
            blk = Q.X[rows][:, cols]
            out = np.array(blk.toarray() if sp.issparse(blk) else blk, dtype=np.float64)
        else:
            out = Q.kernel.block(Q.X[rows], Q.X[cols])
        out *= Q.s[cols]
        out *= Q.s[rows][:, None]
        return out
    return np.asarray(cross_block(Q, rows, cols), dtype=np.float64)


def _rows(qp: QP, state: State, idx: IndexArray) -> FloatArray:
    """Q[idx, :] in float64, computed together (one block of kernel rows), not cached."""
    state.counters["rows_requested"] += int(idx.size)
    Q = qp.Q
    if isinstance(Q, KernelQ):
        Q.stats.cache_misses += int(idx.size)
        return np.asarray(Q.compute(idx), dtype=np.float64)
    return np.asarray(Q.rows(idx), dtype=np.float64)


# -- the gradient from the buffer ---------------------------------------------------------------

def _s_product(work: INCASWork, x: FloatArray) -> FloatArray:
    """Q[S, :]ᵀ x_S over every column, in variable order."""
    ns = work.ns
    out = np.zeros(work.perm.size)
    if ns:
        out[work.perm] = x[work.var_of_slot[:ns]] @ work.buf[:ns]
    return out


def _fresh_gradient(qp: QP, state: State, work: INCASWork) -> None:
    """g = Qx + c from the problem (rounding drift gone); h rebuilt from it."""
    state.g = qp.gradient(state.x)
    work.fresh = True
    work.stale = False
    state.counters["gradient_refreshes"] += 1
    work.h = (state.g - work.c - _s_product(work, state.x))[work.perm]


def _price_gradient(state: State, work: INCASWork) -> None:
    """g over the priced variables afresh: c + h + Q[S, ·]ᵀ x_S (one GEMV with x_S)."""
    ns, na = work.ns, work.nact
    if work.ident and na == work.perm.size:
        gp = work.c + work.h
        if ns:
            gp += state.x[work.var_of_slot[:ns]] @ work.buf[:ns]
        state.g = gp
    else:
        act = work.perm[:na]
        gp = work.c[act] + work.h[:na]
        if ns:
            gp += state.x[work.var_of_slot[:ns]] @ work.buf[:ns, :na]
        state.g[act] = gp
    work.stale = False


def _update_g(state: State, work: INCASWork, dslot: FloatArray, extra: tuple[FloatArray, float] | None = None
              ) -> None:
    """g += Q[S, :]ᵀ Δx_S over the active columns (one GEMV), plus one outside row if given."""
    ns, na = work.ns, work.nact
    out = dslot @ work.buf[:ns, :na] if ns else np.zeros(na)
    if extra is not None:
        row, d = extra
        out += d * row[work.perm[:na]]
    if work.ident and na == work.perm.size:
        state.g += out
    else:
        state.g[work.perm[:na]] += out


# -- S bookkeeping ----------------------------------------------------------------------------------

def _append(state: State, work: INCASWork, i: int, row: FloatArray) -> None:
    if work.ns == work.buf.shape[0]:
        _grow_rows(work)
    k = work.ns
    work.buf[k] = row[work.perm]
    work.var_of_slot[k] = i
    work.slot[i] = k
    work.ns = k + 1
    state.status[i] = 0
    xi = float(state.x[i])
    if xi != 0.0:
        work.h -= xi * work.buf[k]     # x_i's term moves from h to the S product


def _remove(state: State, work: INCASWork, k: int, to_upper: bool) -> None:
    """Variable k leaves S for its bound (set exactly); its buffer row swaps with the last."""
    work.fac.remove(k)
    s = int(work.slot[k])
    state.x[k] = work.ub[k] if to_upper else work.lb[k]
    state.status[k] = 1 if to_upper else -1
    xk = float(state.x[k])
    if xk != 0.0:
        work.h += xk * work.buf[s]
    last = work.ns - 1
    if s != last:
        work.buf[s] = work.buf[last]
        v = int(work.var_of_slot[last])
        work.var_of_slot[s] = v
        work.slot[v] = s
    work.var_of_slot[last] = -1
    work.slot[k] = -1
    work.ns = last


# -- shrinking -------------------------------------------------------------------------------------

def _shrink(state: State, work: INCASWork) -> None:
    """Drop from pricing the bound variables that cannot form a violating pair (LIBSVM's test)."""
    if work.stale:
        _price_gradient(state, work)
    na = work.nact
    act = work.perm[:na]
    x, g = state.x[act], state.g[act]
    lb, ub = work.lb[act], work.ub[act]
    aa = None if work.a is None else work.a[act]
    s = scores(x, g, lb, ub, aa, unit=work.unit)
    only_up, only_low = s.up & ~s.low, s.low & ~s.up
    gone = ~(s.up | s.low)                      # fixed variables never move
    pu, pl = s.pair_masks()
    if pu.any() and pl.any():
        m_up, m_low = float(s.v[pu].max()), float(s.v[pl].min())
        gone |= (pu & only_up & (s.v < m_low)) | (pl & only_low & (s.v > m_up))
    su, sl = s.single_masks()
    if su.any() or sl.any():
        meas = measure(s)
        gone |= (su & only_up & (s.v < -meas)) | (sl & only_low & (s.v > meas))
    gone &= work.slot[act] < 0
    if not gone.any():
        return
    k = int(np.count_nonzero(gone))
    keep = na - k
    # the gone columns go to the end of the active region by pairwise swaps with the kept
    # columns there: 2·(moved) columns copied, not the whole buffer
    head = np.flatnonzero(gone[:keep])
    tail = keep + np.flatnonzero(~gone[keep:])
    if head.size:
        _swap_columns(work, head, tail)
    work.nact = keep
    state.counters["shrink_events"] += 1


def _swap_columns(work: INCASWork, p1: IndexArray, p2: IndexArray) -> None:
    """Exchange the buffer columns (and h, perm) at positions p1 and p2 (same length)."""
    ns = work.ns
    both = np.concatenate([p1, p2])
    swapped = np.concatenate([p2, p1])
    if ns:
        work.buf[:ns, both] = work.buf[:ns, swapped]
    work.h[both] = work.h[swapped]
    work.perm[both] = work.perm[swapped]
    work.pos_of[work.perm[both]] = both
    if work.pos_cache is not None:
        for arr in work.pos_cache:
            arr[both] = arr[swapped]
    work.ident = False


def _permute(work: INCASWork, newperm: IndexArray) -> None:
    """Reorder the buffer's columns (and h) so that column pos holds variable newperm[pos]."""
    cols = work.pos_of[newperm]
    ns = work.ns
    if ns:
        work.buf[:ns] = work.buf[:ns][:, cols]
    work.h = work.h[cols]
    work.perm = newperm
    work.pos_cache = None
    work.pos_of = np.empty_like(newperm)
    work.pos_of[newperm] = np.arange(newperm.size, dtype=np.intp)
    work.ident = bool(np.array_equal(newperm, np.arange(newperm.size)))


def _unshrink(state: State, work: INCASWork) -> None:
    """Rebuild the shrunk variables' gradient exactly (c + h + Q[S, ·]ᵀ x_S) and price all again."""
    n = work.perm.size
    if work.nact < n:
        inact = work.perm[work.nact:]
        ns = work.ns
        gi = work.c[inact] + work.h[work.nact:]
        if ns:
            gi += state.x[work.var_of_slot[:ns]] @ work.buf[:ns, work.nact:]
        state.g[inact] = gi
        state.counters["unshrink_events"] += 1
    work.nact = n
    if not work.ident:
        _permute(work, np.arange(n, dtype=np.intp))
