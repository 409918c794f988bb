"""BMRM, OCAS and the active-set OCAS over row chunks on a Dask cluster: the passes go to the data.

:mod:`strategies.cutting_plane` comes here when the problem's operator is a
:class:`qpcore.chunked.ChunkedLowRankQ` (``problems.risk.hinge_svm`` of a dask array). The iteration
is the in-process one: the cutting-plane model (:class:`~strategies.cutting_plane.Cuts`), its reduced
problem and inner strategy, the stall logic, the active set's refresh/fallback/verification rules
and every status and limit are shared, not copied. What changes is where each quantity lives:

- on the workers, chunk by chunk: the margins H w_b and H w_t, each cut's member bits (which examples
  it sums), the active set (its rows copied once with ``DiagPlusLowRankQ.subset``, their margins,
  the inactive violators' bits) and finally α;
- on the client: w_b, w_t, the cuts a_t (k-vectors), their Gram matrix and offsets, β, and scalars.
  No vector of length m is ever gathered.

Every pass is one task per chunk running a module-level kernel on the chunk's own
:class:`qpcore.lowrank.DiagPlusLowRankQ`, and a reduction of small partial results. A pass that
keeps something on the workers returns ``(kept, partial)`` and a second tiny task per chunk picks
the partial where the chunk lives (so no kept m-vector ever crosses between workers). Kernels never
change their inputs: Dask replays them to recompute a lost chunk. A round trip costs far more than
the k-vector arithmetic, so the passes are fused: an OCAS iteration is

1. **the probe** (one pass, kept): m_t = H w_t, and from (m_b, m_t) the line search's first
   summary: each chunk's part of φ'(0), its smallest breakpoints t_i = r_i/δ_i listed (about 1024,
   or all when it has few) and the others as a histogram (16 bins per octave);
2. **the window** (only when the step lies past what every chunk listed, about 1 % of the
   iterations): the breakpoints of the histogram bin where it lies, gathered (or, when that bin is
   crowded, a finer histogram of it, then of its sub-bin);
3. **the move and the cut** (one reduction, nothing kept): m_b ← m_b + t(m_t − m_b), the risk at
   the new w_b, the cut at w_c = (1 − μ)w_b + μw_t (a = Σ_viol u_i h_i, b) and, for the active set,
   how many examples lie within the next step bound; its member bits are formed by a task per chunk
   the client does not wait for.

So an iteration costs two round trips (three stages of tasks: probe, pick, move). The line search
is exact without the m breakpoints ever meeting: φ(t) = F(w_b + t d) is convex and piecewise
quadratic, its right derivative s0 + t·dd + Σ_{t_i ≤ t} u_i|δ_i| is known exactly up to the first
bin with unlisted breakpoints and per bin beyond, the client finds the bin where it turns ≥ 0, and
the breakpoints of that bin alone decide the step through
:func:`strategies.cutting_plane.step_in_window`, the in-process search's own last step. A bin is
found from t's exponent and mantissa by exact operations, so it agrees with every comparison of t
with its edges made later. The step equals the in-process one up to the order of summation (the
minimizer lies among the smallest few dozen breakpoints of each chunk in nearly every iteration:
OCAS's steps are short).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.chunked import ChunkedLowRankQ, ChunkedVector, ClusterError, PerChunk, RowSpace
from qpcore.problem import QP, ProblemError
from qpcore.state import State
from strategies.cutting_plane import Cuts, step_in_window

if TYPE_CHECKING:
    from strategies.cutting_plane import BMRM, OCAS, ActiveSetOCAS, _CuttingPlane

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["ChunkedCutState", "chunked_line_search"]

# The histogram of breakpoints: _SUB bins per octave from 2^_LOW to 2^_HIGH, one below, one above.
# Bin id 0 is "no breakpoint", 1 is (0, 2^_LOW], 2 + b is (L(b), L(b + 1)] with
# L(b) = 2^(b // _SUB + _LOW)·(1 + (b % _SUB)/_SUB), and the last is (2^_HIGH, inf). The id of t
# comes from its exponent and mantissa (``np.frexp``) by exact operations, so it agrees with every
# comparison of t with the edges made later.
_SUB = 16
_LOW, _HIGH = -41, 39
_NBINS = 3 + (_HIGH - _LOW) * _SUB
_B = np.arange((_HIGH - _LOW) * _SUB + 1)
_UPPER = np.concatenate(([0.0, 2.0 ** _LOW], np.ldexp(1.0 + (_B[1:] % _SUB) / _SUB, _B[1:] // _SUB + _LOW),
                         [np.inf]))     # the upper edge of bin id j (and lower edge of id j + 1)
_LIST_CAP = 8192        # a chunk lists all its breakpoints (no histogram) when it has at most this many
_LIST_LOW = 1024        # else about this many of its smallest: the step almost always lies among them
_WINDOW_CAP = 1 << 17   # a window's breakpoints are gathered when at most this many (2 MB)
_SUB_BINS = 256         # a crowded window is split into this many sub-bins
_MAX_SUB = 6            # then gathered whatever its size (ties that no split separates)
_LONG = 4.0             # a longer step recomputes the margins (δ's rounding grows with t), as in process

# partial results and how they combine
_POINT_OPS = ("sum", "max", "sum", "sum", "sum")               # risk, max|m|, a, b, count
_SUMMARY_OPS = ("sum", "sum", "sum", "list", "list", "max")   # s0, counts, sums, listed t, their jumps, max|δ|
_MOVE_OPS = ("sum", "max", "sum", "sum", "sum")                # risk, max|m_b|, a, b, count
_BUILD_OPS = ("sum", "sum", "min", "sum")                      # a_X, B_0, safe radius, |active|


# --------------------------------------------------------------------------------------------- per chunk
# What a chunk keeps between passes (picklable, never changed once made).

class _Point:
    """An evaluated point: its margins m = H w and, when a cut was made there, the packed violators."""

    __slots__ = ("m", "bits")

    def __init__(self, m: FloatArray, bits: NDArray[np.uint8] | None) -> None:
        self.m, self.bits = m, bits


class _Probe:
    """The probe of an iteration (over a chunk, or over its active rows): the margins of w_b and w_t."""

    __slots__ = ("m_b", "m_t")

    def __init__(self, m_b: FloatArray, m_t: FloatArray) -> None:
        self.m_b, self.m_t = m_b, m_t


class _RD:
    """Residuals and rates given directly (the distributed line search on its own)."""

    __slots__ = ("r", "delta")

    def __init__(self, r: FloatArray, delta: FloatArray) -> None:
        self.r, self.delta = r, delta


class _ActiveChunk:
    """A chunk's part of the active set: the rows ``idx``, their operator (copied once), their margins
    at the rebuild, ρ and u there, and the packed bits of the violators outside the set."""

    __slots__ = ("idx", "sub", "m_b", "rho", "u", "out_viol", "rows")

    def __init__(self, idx: IndexArray, sub: Any, m_b: FloatArray, rho: Any, u: Any,
                 out_viol: NDArray[np.uint8], rows: int) -> None:
        self.idx, self.sub, self.m_b, self.rho, self.u = idx, sub, m_b, rho, u
        self.out_viol, self.rows = out_viol, rows


def _partials(ops: tuple[str, ...], *pairs: tuple[Any, Any]) -> tuple[Any, ...]:
    """The partial results of (kept, partial) pairs of chunks on one worker, combined there (as
    ``RowSpace.tree`` combines: elementwise sum, max, min or list concatenation)."""
    out = list(pairs[0][1])
    for _, part in pairs[1:]:
        for i, op in enumerate(ops):
            if op == "sum":
                out[i] = out[i] + part[i]
            elif op == "max":
                out[i] = max(out[i], part[i])
            elif op == "min":
                out[i] = min(out[i], part[i])
            else:
                out[i] = list(out[i]) + list(part[i])
    return tuple(out)


# Work arrays. A Dask worker gives freed memory back to the system at once (its nanny sets
# MALLOC_TRIM_THRESHOLD_), so every new array of a chunk's length costs its page faults again: on
# a 250,000-row chunk a pass's temporaries took longer than its product with the data. The
# temporaries of a pass therefore live in a few arrays per worker thread, reused from pass to pass;
# nothing a kernel returns or keeps is ever one of them.
_LOCAL = threading.local()


def _work(n: int, slot: int, kind: str = "f") -> Any:
    """Work array ``slot`` of ``kind`` ("f" float64, "b" bool, "i" intp, "e" intc) and length n, this thread's."""
    pool: dict[tuple[int, str], Any] | None = getattr(_LOCAL, "pool", None)
    if pool is None:
        pool = _LOCAL.pool = {}
    buf = pool.get((slot, kind))
    if buf is None or buf.size < n:
        buf = np.empty(n, dtype={"f": np.float64, "b": np.bool_, "i": np.intp, "e": np.intc}[kind])
        pool[(slot, kind)] = buf
    return buf[:n]


def _take(x: Any, idx: IndexArray) -> Any:
    """x[idx] for a chunk's array; a scalar (a constant vector) stays a scalar."""
    return x if np.ndim(x) == 0 else x[idx]


def _dot(v: FloatArray, x: Any) -> float:
    """vᵀx for x a chunk's array or a scalar standing for a constant vector."""
    return float(v @ x) if np.ndim(x) else float(x) * float(v.sum())


def _maxabs(x: FloatArray) -> float:
    """max|x_i| (0 for none), without a new array."""
    return max(float(x.max(initial=0.0)), -float(x.min(initial=0.0)))


def _risk_count(m: FloatArray, rho: Any, u: Any, bound: float | None) -> tuple[float, int]:
    """Σ u_i max(0, ρ_i − m_i) (the in-process ``_risk``) and how many |ρ_i − m_i| ≤ bound (0 for
    no bound). Work arrays: float 1, bool 1 and 2."""
    n = m.size
    h = np.subtract(rho, m, out=_work(n, 1))
    count = 0
    if bound is not None:
        inside = np.greater_equal(h, -bound, out=_work(n, 1, "b"))
        inside &= np.less_equal(h, bound, out=_work(n, 2, "b"))
        count = int(np.count_nonzero(inside))
    return _dot(np.maximum(h, 0.0, out=h), u), count


def _cut_of(blk: Any, m: FloatArray, rho: Any, u: Any) -> tuple[FloatArray, float, NDArray[np.bool_]]:
    """The chunk's part of the cut at margins m: a = Σ_viol u_i h_i, b = Σ_viol u_i ρ_i, and viol
    (a work array: bool 0; float 1 is used)."""
    n = m.size
    viol = np.less(m, rho, out=_work(n, 0, "b"))    # ρ − m > 0: a difference of doubles is 0 only at equality
    v = np.multiply(viol, u, out=_work(n, 1))     # u_i or 0 (u finite ≥ 0): the in-process np.where
    a = np.asarray(blk.rmatvec_lowrank(v), dtype=np.float64)
    return a, _dot(v, rho), viol


def _mb_of(src: Any, t: float, out: FloatArray | None = None) -> FloatArray:
    """w_b's margins on a chunk from what the last pass kept: a probe's m_b + t(m_t − m_b) (the
    in-process update, the same two roundings; into ``out``, else a new array), an evaluated
    point's m, an active chunk's m_b, an array. Only ``out`` may be changed by the caller."""
    if isinstance(src, _Probe):
        if t == 0.0:
            return src.m_b
        res: FloatArray = np.subtract(src.m_t, src.m_b, out=out)
        res *= t
        res += src.m_b
        return res
    if isinstance(src, _Point):
        return src.m
    if isinstance(src, _ActiveChunk):
        return src.m_b
    arr: FloatArray = src
    return arr


def _mt_of(src: Any) -> FloatArray:
    """w_t's margins: a probe's m_t or an evaluated point's m (BMRM evaluates w_t itself)."""
    out: FloatArray = src.m_t if isinstance(src, _Probe) else src.m
    return out


def _m_cut(m_b: FloatArray, m_t: FloatArray, mu: float) -> FloatArray:
    """The margins of the cut point w_c = (1 − μ)w_b + μw_t, as in process: (1 − μ)m_b + μm_t.
    Work arrays: float 2 (the result) and 3."""
    n = m_b.size
    out: FloatArray = np.multiply(m_b, 1.0 - mu, out=_work(n, 2))
    out += np.multiply(m_t, mu, out=_work(n, 3))
    return out


def _member_of(member: Any, rows: int) -> FloatArray:
    """A cut's member vector on a chunk: packed bits, or the fractions of an aggregated cut."""
    if member.dtype == np.uint8:
        return np.unpackbits(member, count=rows).astype(np.float64)
    out: FloatArray = member
    return out


def _bin_ids(ts: FloatArray, out: IndexArray | None = None) -> IndexArray:
    """The histogram bin id of each t (positive and finite; anything else gets a meaningless id).

    t = mant·2^e with mant in [0.5, 1): t lies in (2^(e−1)(1 + (c − 1)/_SUB), 2^(e−1)(1 + c/_SUB)] for
    c = ⌈(mant − 0.5)·2·_SUB⌉ (mant − 0.5 is exact, and so are the power-of-two product and the
    ceiling), so the id agrees with comparisons ``lo < t <= hi`` at its bin's edges.
    """
    n = ts.size
    mant, ex = np.frexp(ts, out=(_work(n, 3), _work(n, 0, "e")))
    with np.errstate(invalid="ignore"):
        mant -= 0.5
        mant *= 2 * _SUB
        np.ceil(mant, out=mant)
        ex -= _LOW + 1
        ex *= _SUB
        mant += ex
        mant += 1.0             # id = 2 + (e − 1 − _LOW)·_SUB + c − 1
        np.clip(mant, 1.0, _NBINS - 1.0, out=mant)
        ids = np.empty(n, dtype=np.intp) if out is None else out
        np.copyto(ids, mant, casting="unsafe")
    return ids


def _rdu(src: Any, act: Any, rho: Any, u: Any) -> tuple[FloatArray, FloatArray, Any]:
    """r = ρ − m_b and δ = m_t − m_b (as the in-process line search forms them; work arrays float 0
    and 1), and u."""
    if isinstance(src, _RD):
        n = src.r.size
        r, delta = _work(n, 0), _work(n, 1)
        np.copyto(r, src.r)
        np.copyto(delta, src.delta)
        return r, delta, u
    if act is not None:
        rho, u = act.rho, act.u
    n = src.m_b.size
    return np.subtract(rho, src.m_b, out=_work(n, 0)), np.subtract(src.m_t, src.m_b, out=_work(n, 1)), u


def _terms(r: FloatArray, delta: FloatArray, u: Any) -> tuple[float, FloatArray, FloatArray, NDArray[np.bool_],
                                                                  float]:
    """The chunk's terms of φ'(t) from r and δ (used up: r/δ and |u∘δ| are formed in their arrays).

    Returns
    -------
    s0 : float
        −Σ u_i δ_i over the examples violating just after t = 0: r > 0, or r = 0 with δ < 0 (as in
        ``line_search``; w_bᵀd and the slope are the client's).
    tb : ndarray
        r/δ (r's array): the breakpoints where ``pos``.
    jumps : ndarray
        |u_i δ_i| (δ's array).
    pos : ndarray of bool
        Where r/δ is a breakpoint, positive and finite (work array bool 2; bool 0 and 1 are used).
    maxd : float
        max|δ|.
    """
    n = r.size
    rpos = np.greater(r, 0.0, out=_work(n, 0, "b"))
    with np.errstate(divide="ignore", invalid="ignore"):
        tb = np.divide(r, delta, out=r)
    maxd = _maxabs(delta)
    zero = np.equal(tb, 0.0, out=_work(n, 1, "b"))
    zneg = zero & (delta < 0) if zero.any() else None
    ud = np.multiply(delta, u, out=delta)
    s0 = -float(ud.sum(where=rpos))
    if zneg is not None:
        s0 -= float(ud.sum(where=zneg))
    jumps = np.abs(ud, out=ud)
    pos = np.greater(tb, 0.0, out=_work(n, 2, "b"))
    pos &= np.less(tb, np.inf, out=_work(n, 1, "b"))
    return s0, tb, jumps, pos, maxd


def _summarize(r: FloatArray, delta: FloatArray, u: Any, cap: int) -> tuple[Any, ...]:
    """A chunk's part of the line search's first round (r and δ used up): its share of φ'(0), max|δ|
    and its breakpoints: all listed when at most ``cap``, else the smallest (whole bins of about
    ``_LIST_LOW``: the step lies among them nearly always) listed and the others binned."""
    s0, tb, jumps, pos, maxd = _terms(r, delta, u)
    if np.count_nonzero(pos) <= cap:
        return (s0, 0.0, 0.0, [tb[pos]], [jumps[pos]], maxd)
    ids = _bin_ids(tb, _work(tb.size, 0, "i"))
    ids *= pos                  # not a breakpoint (t ≤ 0, inf, NaN): bin 0
    counts = np.bincount(ids, minlength=_NBINS).astype(np.float64)
    counts[0] = 0.0
    low = int(np.searchsorted(np.cumsum(counts), min(cap, _LIST_LOW), side="right"))
    listed = np.greater(ids, 0, out=_work(tb.size, 0, "b"))
    listed &= np.less(ids, low, out=_work(tb.size, 1, "b"))
    sums = np.bincount(ids, weights=jumps, minlength=_NBINS)
    counts[:low] = sums[:low] = 0.0          # those bins are listed
    return (s0, counts, sums, [tb[listed]], [jumps[listed]], maxd)


# ------------------------------------------------------------------ kernels (one task per chunk)
def _k_start(blk: Any, x0: FloatArray, lb: Any, ub: Any) -> tuple[FloatArray, float]:
    """Hᵀx for the start x = clip(x0, lb, ub), and max|x|."""
    x = np.clip(x0, lb, ub)
    return np.asarray(blk.rmatvec_lowrank(x), dtype=np.float64), _maxabs(x)


def _k_point(blk: Any, w: FloatArray | None, rho: Any, u: Any, cut: bool,
             bound: float | None) -> tuple[_Point, tuple[Any, ...]]:
    """Evaluate w (None: w = 0): margins (kept), the risk, max|m|, the cut there (a, b, bits kept)
    and the examples within ``bound`` of the hinge's kink."""
    m = np.zeros(blk.shape[0]) if w is None else np.asarray(blk.matvec_lowrank(w), dtype=np.float64)
    risk, count = _risk_count(m, rho, u, bound)
    a: Any = 0.0
    b = 0.0
    bits = None
    if cut:
        a, b, viol = _cut_of(blk, m, rho, u)
        bits = np.packbits(viol)
    return _Point(m, bits), (risk, _maxabs(m), a, b, count)


def _k_bits(point: _Point) -> Any:
    return point.bits


def _k_matvec(blk: Any, w: FloatArray) -> FloatArray:
    return np.asarray(blk.matvec_lowrank(w), dtype=np.float64)


def _k_probe(blk: Any, src: Any, t: float, rho: Any, u: Any, w_t: FloatArray,
             cap: int) -> tuple[_Probe, tuple[Any, ...]]:
    """OCAS's first pass: m_b (from the last pass), m_t = H w_t, the line search's summary."""
    probe = _Probe(_mb_of(src, t), np.asarray(blk.matvec_lowrank(w_t), dtype=np.float64))
    return probe, _summarize(*_rdu(probe, None, rho, u), cap)


def _k_summary_rd(r: FloatArray, delta: FloatArray, u: Any, cap: int) -> tuple[_RD, tuple[Any, ...]]:
    src = _RD(r, delta)
    return src, _summarize(*_rdu(src, None, None, u), cap)


def _k_window(src: Any, act: Any, rho: Any, u: Any, lo: float, hi: float,
              edges: FloatArray | None) -> tuple[Any, ...]:
    """The breakpoints in (lo, hi]: listed, or (``edges``) counted, summed and their min/max per sub-bin."""
    _, tb, jumps, pos, _ = _terms(*_rdu(src, act, rho, u))
    n = tb.size
    inside = np.greater(tb, lo, out=_work(n, 0, "b"))
    inside &= pos
    inside &= np.less_equal(tb, hi, out=_work(n, 1, "b"))
    ts = tb[inside]
    js = jumps[inside]
    if edges is None:
        return ([ts], [js])
    k = edges.size
    ids = np.searchsorted(edges, ts, side="left")       # e_{k−1} < t ≤ e_k, k in 1..n−1
    counts = np.bincount(ids, minlength=k).astype(np.float64)
    sums = np.bincount(ids, weights=js, minlength=k)
    mins = np.full(k, np.inf)
    maxs = np.full(k, -np.inf)
    np.minimum.at(mins, ids, ts)
    np.maximum.at(maxs, ids, ts)
    return ([counts], [sums], [mins], [maxs])


def _mb_after(probe: _Probe, fresh: FloatArray | None, t: float) -> FloatArray:
    """The new w_b's margins (work array float 0): recomputed after a long step, else m_b + t(m_t − m_b)."""
    return fresh if fresh is not None else _mb_of(probe, t, _work(probe.m_b.size, 0))


def _k_move(blk: Any, probe: _Probe, fresh: FloatArray | None, t: float, rho: Any, u: Any, mu: float,
            bound: float | None) -> tuple[Any, ...]:
    """OCAS's second pass (nothing kept): the risk at the new w_b, max|m_b|, the cut at w_c and the
    examples within ``bound`` of the kink."""
    m_b = _mb_after(probe, fresh, t)
    risk, count = _risk_count(m_b, rho, u, bound)
    mx = _maxabs(m_b)
    a, b, _ = _cut_of(blk, _m_cut(m_b, probe.m_t, mu), rho, u)
    return (risk, mx, a, b, count)


def _k_move_bits(probe: _Probe, fresh: FloatArray | None, t: float, rho: Any, mu: float) -> NDArray[np.uint8]:
    """The member bits of the cut at w_c (the same violators as ``_k_move``'s)."""
    m_c = _m_cut(_mb_after(probe, fresh, t), probe.m_t, mu)
    return np.packbits(np.less(m_c, rho, out=_work(m_c.size, 0, "b")))


def _k_norms(blk: Any) -> FloatArray:
    """‖h_i‖ (d = 0)."""
    return np.sqrt(np.maximum(np.asarray(blk.diag(), dtype=np.float64), 0.0))


def _k_count(src: Any, t: float, rho: Any, bound: float) -> tuple[int]:
    out = _work(src.m_b.size, 0) if isinstance(src, _Probe) else None
    return (_risk_count(_mb_of(src, t, out), rho, 0.0, bound)[1],)


def _k_build(blk: Any, src: Any, t: float, rho: Any, u: Any, norms: FloatArray,
             bound: float) -> tuple[_ActiveChunk, tuple[Any, ...]]:
    """The chunk's active set around w_b (the in-process ``_rebuild``, same formulas): kept, with the
    inactive violators' a_X and B_0 and the certified radius min D_i/‖h_i‖ outside the set."""
    m_b = _mb_of(src, t)
    res = rho - m_b
    dist = np.abs(res)
    inside = dist <= bound
    idx = np.flatnonzero(inside)
    out_viol = (res > 0) & ~inside
    v = np.where(out_viol, u, 0.0)
    a_X = np.asarray(blk.rmatvec_lowrank(v), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(norms > 0, dist / norms, np.inf)
    safe = float(ratio[~inside].min(initial=np.inf))
    act = _ActiveChunk(idx, blk.subset(idx), m_b[idx].copy(), _take(rho, idx), _take(u, idx),
                       np.packbits(out_viol), int(m_b.size))
    return act, (a_X, _dot(v, rho), safe, int(idx.size))


def _k_active_probe(act: _ActiveChunk, src: Any, t: float, w_t: FloatArray,
                    cap: int) -> tuple[_Probe, tuple[Any, ...]]:
    """The active iteration's first pass, over the active rows only."""
    probe = _Probe(_mb_of(src, t), np.asarray(act.sub.matvec_lowrank(w_t), dtype=np.float64))
    return probe, _summarize(*_rdu(probe, act, None, None), cap)


def _k_active_move(act: _ActiveChunk, probe: _Probe, t: float, mu: float) -> tuple[Any, ...]:
    """The active rows' risk at the moved w_b and their part of the cut at w_c."""
    m_b = _mb_of(probe, t, _work(probe.m_b.size, 0))
    risk, _ = _risk_count(m_b, act.rho, act.u, None)
    a, b, _ = _cut_of(act.sub, _m_cut(m_b, probe.m_t, mu), act.rho, act.u)
    return (risk, a, b)


def _k_active_bits(act: _ActiveChunk, probe: _Probe, t: float, mu: float) -> NDArray[np.uint8]:
    """The member bits of an active cut: the inactive violators, and the active rows' violators at w_c."""
    m_c = _m_cut(_mb_of(probe, t, _work(probe.m_b.size, 0)), probe.m_t, mu)
    mask = np.unpackbits(act.out_viol, count=act.rows).astype(bool)
    mask[act.idx] = m_c < act.rho
    return np.packbits(mask)


def _k_alpha(u: Any, rows: int, beta: FloatArray, *members: Any) -> FloatArray:
    """α_i = u_i Σ_t β_t [i ∈ V_t], clipped to the box (the in-process ``finish``)."""
    acc = np.zeros(rows)
    for b, member in zip(beta, members):
        if member.dtype == np.uint8:
            # acc + b where the bit is set, acc + 0 = acc elsewhere: the in-process sum, bit for bit
            np.add(acc, b, out=acc, where=np.unpackbits(member, count=rows).view(np.bool_))
        else:
            acc += b * member
    out: FloatArray = np.clip(u * acc, 0.0, u)
    return out


def _k_grad(src: Any, c: Any) -> FloatArray:
    """g = H(Hᵀα) + c = m_t + c (Hᵀα = w_t)."""
    out: FloatArray = _mt_of(src) + c
    return out


def _k_mix(f0: float, m0: Any, f1: float, m1: Any, rows: int) -> FloatArray:
    """An aggregated cut's member: f0·member0 + f1·member1 (the in-process formula)."""
    out: FloatArray = f0 * _member_of(m0, rows) + f1 * _member_of(m1, rows)
    return out


# --------------------------------------------------------------------------------------------- client side
def _pass(space: RowSpace, fn: Callable[..., Any], *args: Any, ops: tuple[str, ...], name: str,
          groups: list[list[int]] | None = None) -> tuple[list[Any], tuple[Any, ...]]:
    """A pass that keeps: ``fn`` returns (kept, partial); the partials are picked and combined by one
    more task per group of chunks, ``groups`` the chunks each worker holds (one group per chunk when
    not known), where they live (a kept part never moves between workers), and reduced."""
    pairs = space.map(fn, *args, name=name)
    groups = groups if groups is not None else [[i] for i in range(space.n_chunks)]
    token = uuid.uuid4().hex[:12]
    parts = [space.client.submit(_partials, ops, *(pairs[i] for i in g), pure=False,
                                 key=f"{name}-partial-{token}-{j}") for j, g in enumerate(groups)]
    space.counters["tasks"] += len(parts)
    reduced: tuple[Any, ...] = space.tree(parts, ops)
    return pairs, reduced


def _groups(space: RowSpace, blocks: PerChunk) -> list[list[int]] | None:
    """The chunks each worker holds (where their blocks are): a pass picks its partials with one task
    per worker instead of one per chunk. None when not known."""
    try:
        where = space.client.who_has(blocks.items)
    except Exception:  # noqa: BLE001 - only an optimization
        return None
    by: dict[str, list[int]] = {}
    for i, f in enumerate(blocks.items):
        held = where.get(f.key) or ("?",)
        by.setdefault(sorted(held)[0], []).append(i)
    out = [by[w] for w in sorted(by)]
    return out if sum(len(g) for g in out) == space.n_chunks else None


def _arg(v: Any) -> Any:
    """A problem vector as a kernel argument: a constant one as its scalar (no array per task)."""
    if isinstance(v, ChunkedVector) and v.parts is None:
        return v.const
    return v


@attrs.define(eq=False)
class _Margins:
    """Margins held on the workers: per chunk ``_mb_of(kept, t)`` of the kept objects ``src``.

    Never changed once made (``copy`` returns itself), like the chunks it stands for.
    """

    src: PerChunk
    t: float = 0.0
    maxabs: float = float("nan")
    #: (bound, count) of |ρ_i − m_i| ≤ bound, when the pass that made them counted it
    count: tuple[float, int] | None = None

    def copy(self) -> _Margins:
        """Itself (immutable)."""
        return self


@attrs.define(eq=False)
class ChunkedCutState:
    """What a chunked cutting-plane run keeps (``state.extra``); the fields the shared in-process
    logic reads carry :class:`strategies.cutting_plane.CutState`'s names.

    Attributes
    ----------
    cuts : Cuts
        The model; each member is a ``PerChunk`` of futures of the chunks' packed bits (or, for an
        aggregated cut, float fractions).
    w_b, w_t : ndarray
        The best point and the reduced problem's solution (k-vectors, on the client).
    m_b, m_t : _Margins
        Their margins, on the workers (m_t None when only the active rows know them).
    F_b, dual : float
        F(w_b) and the reduced problem's value.
    rho, u : float or ChunkedVector
        ρ = −c and the weights (scalars for constant vectors).
    space, Q : RowSpace, ChunkedLowRankQ
        The partition and the operator.
    """

    cuts: Cuts
    w_b: FloatArray
    m_b: _Margins
    F_b: float
    w_t: FloatArray
    m_t: _Margins | None
    dual: float
    rho: Any
    u: Any
    tol: float
    t0: float
    space: RowSpace
    Q: ChunkedLowRankQ
    groups: list[list[int]] | None = None
    trace: list[dict[str, Any]] = attrs.Factory(list)
    eval_seconds: float = 0.0
    search_seconds: float = 0.0
    reach: float = 0.0
    stale: int = 0
    active: Any = None


@attrs.define(eq=False)
class _ChunkedActive:
    """The active set's state (the in-process ``_Active``'s fields the shared logic reads, same names)."""

    norms: ChunkedVector
    Q: PerChunk | None = None           # the active chunks (kept by the build pass)
    m_b: _Margins | None = None         # the active rows' margins of w_b
    size: int = 0
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
    best_m: Any = None
    best_F: float = np.inf
    misled: bool = False


# ------------------------------------------------------------------ the line search
class _Search:
    """The exact line search over the chunks (see the module docstring).

    Parameters
    ----------
    space : RowSpace
        The partition.
    src : PerChunk
        What each chunk's window kernel reads r and δ from (probes, or ``_RD``).
    act : PerChunk or None
        The active chunks (their ρ and u), for an active iteration.
    rho, u : float or ChunkedVector
        ρ and u (unused with ``act`` or ``_RD``).
    """

    def __init__(self, space: RowSpace, src: PerChunk, act: PerChunk | None, rho: Any, u: Any, *,
                 window_cap: int = _WINDOW_CAP, sub_bins: int = _SUB_BINS, max_sub: int = _MAX_SUB) -> None:
        self.space, self.src, self.act, self.rho, self.u = space, src, act, rho, u
        self.window_cap, self.sub_bins, self.max_sub = window_cap, sub_bins, max_sub
        self.rounds = 0

    def run(self, summary: tuple[Any, ...], wd: float, dd: float, slope: float = 0.0,
            t_max: float = np.inf) -> float:
        """The minimizer of φ over [0, t_max] from the first round's summary (more rounds if needed)."""
        s0_part, hc, hj, ts_lists, js_lists, _ = summary
        s0 = wd + slope + float(s0_part)
        if s0 >= 0 or t_max <= 0:
            return 0.0
        ts_l = np.concatenate(ts_lists) if ts_lists else np.zeros(0)
        js_l = np.concatenate(js_lists) if js_lists else np.zeros(0)
        ids = _bin_ids(ts_l)
        jumps = np.bincount(ids, weights=js_l, minlength=_NBINS)
        hidden = np.zeros(_NBINS)
        if np.ndim(hj):
            jumps = jumps + hj
            hidden = np.asarray(hc, dtype=np.float64)
        # the right derivative at the upper edge of every bin; the first bin where it turns ≥ 0
        cum = np.cumsum(jumps)
        with np.errstate(invalid="ignore"):
            edge = _UPPER * dd
        edge[-1] = np.inf if dd > 0 else 0.0        # past every breakpoint
        hit = np.flatnonzero(s0 + edge[1:] + cum[1:] >= 0)
        if not hit.size:        # decreasing past every breakpoint: the linear part beyond
            return self._resolve(s0, dd, float(cum[-1]), np.zeros(0), np.zeros(0), np.inf, t_max)
        j = int(hit[0]) + 1
        lo, hi, base = float(_UPPER[j - 1]), float(_UPPER[j]), float(cum[j - 1])
        sel = ids == j
        if hidden[j] == 0:      # the listed breakpoints are all there are in the bin
            return self._resolve(s0, dd, base, ts_l[sel], js_l[sel], hi, t_max)
        count = int(hidden[j]) + int(sel.sum())
        return self._window(s0, dd, base, lo, hi, count, t_max, 0)

    def _resolve(self, s0: float, dd: float, base: float, ts: FloatArray, js: FloatArray, hi: float,
                 t_max: float) -> float:
        t = step_in_window(s0, dd, base, np.asarray(ts, dtype=np.float64), np.asarray(js, dtype=np.float64),
                           t_max)
        # the derivative is ≥ 0 at hi (the bin was chosen so): only rounding could put t beyond
        return min(t, hi)

    def _window(self, s0: float, dd: float, base: float, lo: float, hi: float, count: int, t_max: float,
                depth: int) -> float:
        self.rounds += 1
        space = self.space
        if count <= self.window_cap or depth >= self.max_sub:
            ts_lists, js_lists = space.reduce(_k_window, self.src, self.act, self.rho, self.u, lo, hi, None,
                                              ops=("list", "list"), name="qpcore-ocas-window")
            return self._resolve(s0, dd, base, np.concatenate(ts_lists), np.concatenate(js_lists), hi, t_max)
        if hi < np.inf:
            edges = np.linspace(lo, hi, self.sub_bins + 1)
            edges[0], edges[-1] = lo, hi
        else:       # the last bin: bins of ratio 2^(1/4) up to the largest double
            with np.errstate(over="ignore"):
                far = lo * 2.0 ** (np.arange(1, 4097) / 4)
            edges = np.concatenate(([lo], far[np.isfinite(far)], [np.inf]))
        cl, jl, mnl, mxl = space.reduce(_k_window, self.src, self.act, self.rho, self.u, lo, hi, edges,
                                        ops=("list",) * 4, name="qpcore-ocas-subwindow")
        counts, jumps = np.sum(cl, axis=0), np.sum(jl, axis=0)
        mins, maxs = np.min(mnl, axis=0), np.max(mxl, axis=0)
        cumj = np.cumsum(jumps[1:])
        with np.errstate(invalid="ignore"):
            edge = edges[1:] * dd
        edge[np.isinf(edges[1:])] = np.inf if dd > 0 else 0.0      # past every breakpoint
        hit = np.flatnonzero(s0 + edge + base + cumj >= 0)
        empty = np.zeros(0)
        if not hit.size:        # every breakpoint of the window lies left of the zero
            return self._resolve(s0, dd, base + float(cumj[-1]), empty, empty, hi, t_max)
        k = int(hit[0]) + 1
        b_k = base + (float(cumj[k - 2]) if k >= 2 else 0.0)
        if counts[k] == 0:      # the zero is in the linear part of an empty sub-bin
            return self._resolve(s0, dd, b_k, empty, empty, float(edges[k]), t_max)
        if mins[k] == maxs[k]:  # one value, however many ties: a single jump
            return self._resolve(s0, dd, b_k, mins[k:k + 1], jumps[k:k + 1], float(edges[k]), t_max)
        return self._window(s0, dd, b_k, float(np.nextafter(mins[k], -np.inf)), float(edges[k]), int(counts[k]),
                            t_max, depth + 1)


def chunked_line_search(space: RowSpace, r: ChunkedVector, delta: ChunkedVector, u: ChunkedVector | float,
                        wd: float, dd: float, *, slope: float = 0.0, t_max: float = np.inf,
                        list_cap: int = _LIST_CAP, window_cap: int = _WINDOW_CAP, sub_bins: int = _SUB_BINS,
                        max_sub: int = _MAX_SUB) -> tuple[float, int]:
    """:func:`strategies.cutting_plane.line_search` of chunked residuals, rates and weights.

    Parameters
    ----------
    space : RowSpace
        The partition of r, δ and u.
    r, delta : ChunkedVector
        Residuals ρ − H w_b and rates H d.
    u : ChunkedVector or float
        The weights.
    wd, dd, slope, t_max
        As for ``line_search``.
    list_cap, window_cap, sub_bins, max_sub : int
        How many breakpoints a chunk lists instead of binning them, how many of a window are
        gathered, how many sub-bins a crowded window is split into, and after how many splits it
        is gathered whatever its size.

    Returns
    -------
    t : float
        The minimizer (the in-process one up to the order of summation).
    rounds : int
        Round trips after the first.
    """
    pairs, summary = _pass(space, _k_summary_rd, r, delta, _arg(u), int(list_cap), ops=_SUMMARY_OPS,
                           name="qpcore-ls-summary")
    search = _Search(space, PerChunk(pairs, pick=0), None, None, _arg(u), window_cap=window_cap,
                     sub_bins=sub_bins, max_sub=max_sub)
    t = search.run(summary, wd, dd, slope, t_max)
    return t, search.rounds


# ------------------------------------------------------------------ the engine's entry points
def _check(qp: QP) -> ChunkedLowRankQ:
    Q = qp.Q
    assert isinstance(Q, ChunkedLowRankQ)
    if Q.d != 0:
        raise ProblemError("cutting planes need Q = HHᵀ with no diagonal part (d = 0): the hinge loss; "
                           "for the squared hinge (d > 0) use ASVM")
    if qp.m:
        raise ProblemError(f"cutting planes solve the fixed-threshold dual (no equality rows), got {qp.m}; "
                           "put the bias in as a constant feature (hinge_svm(bias=1))")
    lb: Any = qp.lb
    ub: Any = qp.ub
    if not all(isinstance(v, ChunkedVector) for v in (lb, ub, qp.c)):
        raise ProblemError("chunked data need c, lb and ub as chunked vectors of the same partition")
    if not (lb.max_abs() == 0 and ub.all_finite() and ub.min() >= 0):
        raise ProblemError("cutting planes need 0 ≤ α ≤ C with finite C ≥ 0 (the hinge risk's weights)")
    return Q


def _lost(e: ClusterError, state: State | None, w_b: FloatArray) -> ClusterError:
    e.primal = np.array(w_b, dtype=np.float64)
    e.iteration = state.iteration if state is not None else 0
    return e


def init(cfg: _CuttingPlane, qp: QP, x0: Any, tol: float) -> State:
    """:meth:`strategies.cutting_plane._CuttingPlane.init` for chunked data: the start's margins,
    F and its cut in one pass (two more for a start x0: Hᵀx0, on the clipped x0)."""
    Q = _check(qp)
    space = Q.space
    k = int(Q.k)
    w = np.zeros(k)
    reductions = space.counters["reductions"]
    try:
        rho, u = _arg(-qp.c), _arg(qp.ub)
        start = False
        if x0 is not None:
            if not isinstance(x0, ChunkedVector) or x0.space.sizes != space.sizes:
                raise ProblemError("x0: a chunked problem starts from a ChunkedVector of its partition "
                                   "(e.g. a previous result's x) or None")
            wx, xmax = space.reduce(_k_start, Q.blocks, x0, _arg(qp.lb), u, ops=("sum", "max"),
                                    name="qpcore-cp-start")
            if xmax > 0:
                w, start = np.asarray(wx, dtype=np.float64), True
        groups = _groups(space, Q.blocks)
        pairs, (risk, mx, a, b, _) = _pass(space, _k_point, Q.blocks, w if start else None, rho, u, True, None,
                                           ops=_POINT_OPS, name="qpcore-cp-init", groups=groups)
        kept = PerChunk(pairs, pick=0)
        cs = ChunkedCutState(cuts=Cuts.empty(k, mix=functools.partial(_mix, space)), w_b=w,
                             m_b=_Margins(kept, 0.0, float(mx)), F_b=0.5 * float(w @ w) + float(risk),
                             w_t=w.copy(), m_t=None, dual=0.0, rho=rho, u=u, tol=tol, t0=time.perf_counter(),
                             space=space, Q=Q, groups=groups)
        state = State(x=space.full(0.0), g=qp.c, status=np.zeros(0, dtype=np.int8),  # type: ignore[arg-type]
                      extra=cs)
        state.primal = w.copy()
        state.counters.update(passes=2 if start else 0, cuts=0, cuts_added=0, inner_iterations=0, refreshes=0,
                              touched_eval=0, touched_search=0, aggregated=0, dropped=0, round_trips=0,
                              window_rounds=0)
        cfg._start(qp, state)
        state.counters["passes"] += 1
        cs.cuts.add(np.asarray(a, dtype=np.float64), float(b), PerChunk(space.map(_k_bits, kept, name="qpcore-bits")))
        state.counters["cuts_added"] += 1
        cfg._record(state, qp.n, 0)
        state.counters["round_trips"] = space.counters["reductions"] - reductions
    except ClusterError as e:
        raise _lost(e, None, w) from None
    return state


def _mix(space: RowSpace, f0: float, m0: PerChunk, f1: float, m1: PerChunk) -> PerChunk:
    """``Cuts.mix`` for members on the workers: the aggregated member, chunk by chunk."""
    return PerChunk(space.map(_k_mix, f0, m0, f1, m1, PerChunk(list(space.sizes)), name="qpcore-mix"))


_BLAS: list[Any] = []


def _one_blas_thread() -> Any:
    """A context in which the client's BLAS runs one thread (when threadpoolctl is installed).

    The client's own linear algebra is the reduced problem's, k×k at most a few hundred: more
    threads gain nothing there, and after each call an OpenBLAS pool spins for a while; with the
    workers on the same machine (a local cluster) that spinning took a core from them (68 ms of
    CPU per iteration on the client against 16 at one thread, 1,000,000 × 32 in 4 chunks).
    """
    if not _BLAS:
        try:
            tpc: Any = importlib.import_module("threadpoolctl")
        except ImportError:
            _BLAS.append(None)
        else:
            _BLAS.append(tpc.ThreadpoolController())
    controller = _BLAS[0]
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


def _counted(state: State, fn: Callable[[], Any]) -> Any:
    """Run a piece of the iteration (the client's BLAS at one thread), counting its round trips and
    attaching w_b to a cluster loss."""
    cs: ChunkedCutState = state.extra
    before = cs.space.counters["reductions"]
    try:
        with _one_blas_thread():
            return fn()
    except ClusterError as e:
        raise _lost(e, state, cs.w_b) from None
    finally:
        state.counters["round_trips"] += cs.space.counters["reductions"] - before


def step(cfg: _CuttingPlane, qp: QP, state: State) -> None:
    """:meth:`strategies.cutting_plane._CuttingPlane.step` for chunked data (the shared iteration)."""
    _counted(state, lambda: cfg._iterate(qp, state))


def converged_active(cfg: ActiveSetOCAS, qp: QP, state: State, tol: float) -> bool:
    """:meth:`strategies.cutting_plane.ActiveSetOCAS.converged` (its verification is a pass)."""
    done: bool = _counted(state, lambda: cfg._converged(qp, state, tol))
    return done


def finish(cfg: _CuttingPlane, qp: QP, state: State) -> None:
    """α_i = u_i Σ_t β_t [i ∈ V_t] chunk by chunk (a chunked vector: nothing gathered), g = m_t + c
    when w_t's margins are known, and ``state.primal = w_b``."""
    cs: ChunkedCutState = state.extra
    space = cs.space
    cuts = cs.cuts
    used = np.flatnonzero(cuts.beta > 0)
    if used.size:
        members = [cuts.members[t] for t in used]
        state.x = ChunkedVector(space, space.map(_k_alpha, cs.u, PerChunk(list(space.sizes)),  # type: ignore[assignment]
                                                 cuts.beta[used].copy(), *members, name="qpcore-alpha"))
    else:
        state.x = space.full(0.0)  # type: ignore[assignment]
    if cs.m_t is not None:
        state.g = ChunkedVector(space, space.map(_k_grad, cs.m_t.src, _arg(qp.c),  # type: ignore[assignment]
                                                 name="qpcore-grad"))
    state.primal = cs.w_b


def advance_bmrm(cfg: BMRM, qp: QP, state: State) -> None:
    """BMRM's evaluation of w_t and its cut there: one pass."""
    cs: ChunkedCutState = state.extra
    space, Q = cs.space, cs.Q
    t = time.perf_counter()
    pairs, (risk, mx, a, b, _) = _pass(space, _k_point, Q.blocks, cs.w_t, cs.rho, cs.u, True, None,
                                       ops=_POINT_OPS, name="qpcore-bmrm", groups=cs.groups)
    F_t = 0.5 * float(cs.w_t @ cs.w_t) + float(risk)
    cs.eval_seconds += time.perf_counter() - t
    state.counters["passes"] += 1
    kept = PerChunk(pairs, pick=0)
    cs.m_t = _Margins(kept, 0.0, float(mx))
    if F_t < cs.F_b:
        cs.w_b, cs.m_b, cs.F_b = cs.w_t.copy(), cs.m_t, F_t
    state.counters["passes"] += 1
    cs.cuts.add(np.asarray(a, dtype=np.float64), float(b), PerChunk(space.map(_k_bits, kept, name="qpcore-bits")))
    state.counters["cuts_added"] += 1
    cfg._record(state, qp.n, 0)


def _too_small(w_b: FloatArray, dd: float) -> bool:
    """w_t = w_b to rounding: δ would be cancellation noise (the in-process test)."""
    return dd <= (1e-13 * max(1.0, float(np.sqrt(w_b @ w_b)))) ** 2


def advance_ocas(cfg: OCAS, qp: QP, state: State) -> None:
    """OCAS's iteration after the reduced problem: the probe (one pass), the exact line search, the
    move and the cut (one reduction); for the active set the move also counts the examples within
    the next step bound."""
    cs: ChunkedCutState = state.extra
    space, Q = cs.space, cs.Q
    t0 = time.perf_counter()
    d = cs.w_t - cs.w_b
    dd = float(d @ d)
    pairs, summary = _pass(space, _k_probe, Q.blocks, cs.m_b.src, cs.m_b.t, cs.rho, cs.u, cs.w_t, _LIST_CAP,
                           ops=_SUMMARY_OPS, name="qpcore-ocas-probe", groups=cs.groups)
    t1 = time.perf_counter()
    state.counters["passes"] += 1
    probe = PerChunk(pairs, pick=0)
    cs.m_t = _Margins(probe)
    if _too_small(cs.w_b, dd):
        step = 0.0
    else:
        search = _Search(space, probe, None, cs.rho, cs.u)
        step = search.run(summary, float(cs.w_b @ d), dd)
        state.counters["window_rounds"] += search.rounds
    # how far the margins moved (to the new w_b or to the cut point): the active set's step bound
    cs.reach = max(step, cfg.mu) * float(summary[5])
    w_b = cs.w_b + step * d
    fresh = None
    if step > _LONG:
        # a long step amplifies the rounding of δ: the margins of the new point afresh
        fresh = PerChunk(space.map(_k_matvec, Q.blocks, w_b, name="qpcore-ocas-fresh"))
        state.counters["passes"] += 1
    act = cs.active
    bound = None
    if isinstance(act, _ChunkedActive):
        # the next rebuild's bound when the reach term is the larger one (it nearly always is;
        # rebuild checks, and counts again otherwise)
        bound = cfg.radius * act.scale * cs.reach  # type: ignore[attr-defined]
    risk, mx, a, b, count = space.reduce(_k_move, Q.blocks, probe, fresh, step, cs.rho, cs.u, cfg.mu, bound,
                                         ops=_MOVE_OPS, name="qpcore-ocas-move")
    bits = space.map(_k_move_bits, probe, fresh, step, cs.rho, cfg.mu, name="qpcore-ocas-bits")
    cs.w_b = w_b
    cs.m_b = _Margins(fresh if fresh is not None else probe, 0.0 if fresh is not None else step, float(mx),
                      (bound, int(count)) if bound is not None else None)
    cs.F_b = 0.5 * float(w_b @ w_b) + float(risk)
    t2 = time.perf_counter()
    cs.eval_seconds += t1 - t0
    cs.search_seconds += t2 - t1
    state.counters["passes"] += 1
    cs.cuts.add(np.asarray(a, dtype=np.float64), float(b), PerChunk(bits))
    state.counters["cuts_added"] += 1
    cfg._record(state, qp.n, qp.n)


# ------------------------------------------------------------------ the active set
def start_active(cfg: ActiveSetOCAS, qp: QP, state: State) -> None:
    """‖h_i‖ per chunk, on the workers (computed with the first pass that needs them)."""
    cs: ChunkedCutState = state.extra
    cs.active = _ChunkedActive(norms=ChunkedVector(cs.space, cs.space.map(_k_norms, cs.Q.blocks,
                                                                          name="qpcore-norms")))


def evaluate_best(cfg: ActiveSetOCAS, qp: QP, state: State) -> None:
    """w_b's margins and F(w_b) from all examples (one pass), counting the examples within the next
    rebuild's step bound on the way."""
    cs: ChunkedCutState = state.extra
    act: _ChunkedActive = cs.active
    bound = cfg.radius * act.scale * cs.reach
    pairs, (risk, mx, _, _, count) = _pass(cs.space, _k_point, cs.Q.blocks, cs.w_b, cs.rho, cs.u, False, bound,
                                           ops=_POINT_OPS, name="qpcore-ocas-exact", groups=cs.groups)
    cs.m_b = _Margins(PerChunk(pairs, pick=0), 0.0, float(mx), (bound, int(count)))
    cs.F_b = 0.5 * float(cs.w_b @ cs.w_b) + float(risk)


def rebuild(cfg: ActiveSetOCAS, qp: QP, state: State) -> None:
    """The active set around w_b (the in-process ``_rebuild``): its size from the pass that made
    the margins (or one count), then, when small enough, one pass that builds it on the workers."""
    cs: ChunkedCutState = state.extra
    act: _ChunkedActive = cs.active
    space = cs.space
    mb = cs.m_b
    bound = cfg.radius * act.scale * max(cs.reach, 1e-12 * (1.0 + mb.maxabs))
    if mb.count is not None and mb.count[0] == bound:
        size = mb.count[1]
    else:
        (size,) = space.reduce(_k_count, mb.src, mb.t, cs.rho, bound, ops=("sum",), name="qpcore-ocas-count")
    if size > cfg.max_fraction * qp.n:
        # early on the margins move too much for a small set: plain OCAS iterations until then
        act.Q = None
        act.exact = True
        return
    pairs, (a_X, B_0, safe, size) = _pass(space, _k_build, cs.Q.blocks, mb.src, mb.t, cs.rho, cs.u, act.norms,
                                          bound, ops=_BUILD_OPS, name="qpcore-ocas-build", groups=cs.groups)
    act.Q = PerChunk(pairs, pick=0)
    act.m_b = _Margins(act.Q)
    act.size = int(size)
    act.a_X = np.asarray(a_X, dtype=np.float64)
    act.B_0 = float(B_0)
    state.counters["passes"] += 1
    # within this distance of w_ref no inactive example can cross: F is exact there
    act.safe = float(safe)
    act.w_ref = cs.w_b.copy()
    act.bound = bound
    act.drift = 0.0
    act.age = 0
    act.exact = True


def active_iteration(cfg: ActiveSetOCAS, qp: QP, state: State) -> bool:
    """OCAS's evaluation, line search and cut over the active rows (the in-process
    ``_active_iteration``, same tests in the same order); False (nothing changed) when the margins
    would move past the step bound."""
    cs: ChunkedCutState = state.extra
    act: _ChunkedActive = cs.active
    assert act.Q is not None and act.m_b is not None
    space = cs.space
    d = cs.w_t - cs.w_b
    dd = float(d @ d)
    if _too_small(cs.w_b, dd) or not dd > 0:
        return False        # no direction to rounding: the exact iteration decides
    t0 = time.perf_counter()
    pairs, summary = _pass(space, _k_active_probe, act.Q, act.m_b.src, act.m_b.t, cs.w_t, _LIST_CAP,
                           ops=_SUMMARY_OPS, name="qpcore-ocas-aprobe", groups=cs.groups)
    t1 = time.perf_counter()
    probe = PerChunk(pairs, pick=0)
    # the inactive violators are linear in w: slope −a_Xᵀd along the ray
    search = _Search(space, probe, act.Q, None, None)
    step = search.run(summary, float(cs.w_b @ d), dd, slope=-float(act.a_X @ d))
    state.counters["window_rounds"] += search.rounds
    if step > _LONG:
        return False        # a long step amplifies δ's rounding: the exact iteration takes it
    reach = max(step, cfg.mu) * float(summary[5])
    cs.reach = reach
    cs.eval_seconds += t1 - t0
    w_b = cs.w_b + step * d
    # within the certified radius the model is exact; beyond it the step bound is a guess (see
    # the in-process method): refused when the margins moved past it ...
    exact = float(np.linalg.norm(w_b - act.w_ref)) <= act.safe
    if not exact and act.drift + reach > act.bound:
        cs.search_seconds += time.perf_counter() - t1
        return False
    risk, a_part, b_part = space.reduce(_k_active_move, act.Q, probe, step, cfg.mu, ops=("sum", "sum", "sum"),
                                        name="qpcore-ocas-amove")
    F_b = 0.5 * float(w_b @ w_b) + float(risk) + act.B_0 - float(act.a_X @ w_b)
    cs.search_seconds += time.perf_counter() - t1
    # ... or when the estimate (a lower bound of F) falls below the cutting-plane bound D ≤ min F
    if not exact and F_b < cs.dual:
        return False
    act.drift += reach
    cs.w_b, cs.F_b = w_b, F_b
    act.m_b = _Margins(probe, step)
    cs.m_t = None           # w_t's margins are known on the active set only
    act.exact = exact
    # the cut at w_c: the inactive violators' part is a_X, B_0 and their member bits
    bits = space.map(_k_active_bits, act.Q, probe, step, cfg.mu, name="qpcore-ocas-abits")
    cs.cuts.add(act.a_X + np.asarray(a_part, dtype=np.float64), act.B_0 + float(b_part), PerChunk(bits))
    state.counters["cuts_added"] += 1
    cfg._record(state, act.size, act.size)
    return True
