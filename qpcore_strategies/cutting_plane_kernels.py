"""The cutting planes' passes over the rows: the kernels :mod:`qpcore_strategies.cutting_plane` and
:mod:`qpcore_strategies.line_search` run on each block of rows.

Each kernel is a module-level (picklable) function run on one block by
:class:`qpcore.backends.rowspace.Rows`: in process once on the whole data, on a Dask cluster once per
chunk where the chunk lives. ``blk`` is the block's :class:`qpcore.backends.lowrank.DiagPlusLowRankQ`;
ρ and u are the block's arrays or scalars standing for constant vectors. A kernel that keeps
something with the block returns ``(kept, partial)``; what a block keeps between passes (an
evaluated point, a probe) is a small object below, never changed
once made (a cluster replays kernels to recompute a lost chunk).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["k_box", "LIST_CAP", "LONG", "MAX_SUB", "MOVE_OPS", "NBINS", "POINT_OPS", "Point", "Probe", "RD", "SUB_BINS", "SUMMARY_OPS", "UPPER", "WINDOW_CAP", "CUT_SUBSET", "CUT_SUBSET_ROWS", "bin_ids", "breakpoint_summary", "k_alpha", "k_bits", "k_grad", "k_matvec", "k_mix", "k_move", "k_point", "k_probe", "k_start", "k_summary_rd", "k_window", "picked", "release_work"]

# The histogram of breakpoints: _SUB bins per octave from 2^_LOW to 2^_HIGH, one below, one above.
# Bin id 0 is "no breakpoint", 1 is (0, 2^_LOW], 2 + b is (L(b), L(b + 1)] with
# L(b) = 2^(b // _SUB + _LOW)·(1 + (b % _SUB)/_SUB), and the last is (2^_HIGH, inf). The id of t
# comes from its exponent and mantissa (``np.frexp``) by exact operations, so it agrees with every
# comparison of t with the edges made later.
_SUB = 16               # a power of two: bin_ids reads its bins off t's top fraction bits
_LOW, _HIGH = -41, 39
NBINS = 3 + (_HIGH - _LOW) * _SUB
_B = np.arange((_HIGH - _LOW) * _SUB + 1)
UPPER = np.concatenate(([0.0, 2.0 ** _LOW], np.ldexp(1.0 + (_B[1:] % _SUB) / _SUB, _B[1:] // _SUB + _LOW),
                         [np.inf]))     # the upper edge of bin id j (and lower edge of id j + 1)
LIST_CAP = 8192        # a chunk lists all its breakpoints (no histogram) when it has at most this many
_LIST_LOW = 1024        # else about this many of its smallest: the step almost always lies among them
WINDOW_CAP = 1 << 17   # a window's breakpoints are gathered when at most this many (2 MB)
SUB_BINS = 256         # a crowded window is split into this many sub-bins
MAX_SUB = 6            # then gathered whatever its size (ties that no split separates)
LONG = 4.0             # a longer step recomputes the margins (δ's rounding grows with t), as in process

# partial results and how they combine
POINT_OPS = ("sum", "max", "sum", "sum", "sum")               # risk, max|m|, a, b, rows read
SUMMARY_OPS = ("sum", "sum", "sum", "list", "list", "max")   # s0, counts, sums, listed t, their jumps, 0 (unused)
MOVE_OPS = ("sum", "max", "sum", "sum", "sum")                # risk, 0 (unused), a, b, rows read
CUT_SUBSET = 8          # a cut's product reads only its violators' rows when they are at most 1/8 of a block
CUT_SUBSET_ROWS = 4096  # ... of at least this many rows (the rows' copy has a fixed cost of a few 1,000 rows' product)


# --------------------------------------------------------------------------------------------- per block
# What a block keeps between passes (picklable, never changed once made).

class Point:
    """An evaluated point: its margins m = H w and, when a cut was made there, the packed violators."""

    __slots__ = ("m", "bits")

    def __init__(self, m: FloatArray, bits: NDArray[np.uint8] | None) -> None:
        self.m, self.bits = m, bits


class Probe:
    """The probe of an iteration (over a chunk): the margins of w_b and w_t."""

    __slots__ = ("m_b", "m_t")

    def __init__(self, m_b: FloatArray, m_t: FloatArray) -> None:
        self.m_b, self.m_t = m_b, m_t


class RD:
    """Residuals and rates given directly (the distributed line search on its own)."""

    __slots__ = ("r", "delta")

    def __init__(self, r: FloatArray, delta: FloatArray) -> None:
        self.r, self.delta = r, delta


# Work arrays. A Dask worker gives freed memory back to the system at once (its nanny sets
# MALLOC_TRIM_THRESHOLD_), so every new array of a chunk's length costs its page faults again: on
# a 250,000-row chunk a pass's temporaries took longer than its product with the data. The
# temporaries of a pass therefore live in a few arrays per worker thread, reused from pass to pass;
# nothing a kernel returns or keeps is ever one of them.
_LOCAL = threading.local()


def release_work() -> None:
    """Drop this thread's work arrays (in process they are as long as the data: a finished run
    gives them back)."""
    _LOCAL.pool = None


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


def _dot(v: FloatArray, x: Any) -> float:
    """vᵀx for x a block's array or a scalar standing for a constant vector."""
    return float(v @ x) if np.ndim(x) else float(x) * float(v.sum())


def _maxabs(x: FloatArray) -> float:
    """max|x_i| (0 for none), without a new array."""
    return max(float(x.max(initial=0.0)), -float(x.min(initial=0.0)))


def _risk(m: FloatArray, rho: Any, u: Any) -> float:
    """Σ u_i max(0, ρ_i − m_i) (the in-process ``_risk``). Work array: float 1."""
    h = np.subtract(rho, m, out=_work(m.size, 1))
    return _dot(np.maximum(h, 0.0, out=h), u)


def _cut_of(blk: Any, m: FloatArray, rho: Any, u: Any) -> tuple[FloatArray, float, NDArray[np.bool_], int]:
    """The block's part of the cut at margins m: a = Σ_viol u_i h_i, b = Σ_viol u_i ρ_i, viol (a work
    array: bool 0; float 1 is used) and the rows the product read.

    With few violators (at most 1/``CUT_SUBSET`` of a block of ``CUT_SUBSET_ROWS`` rows or more: late
    iterations on text-like data) the product reads their rows alone (``rmatvec_rows``), not the
    whole block."""
    n = m.size
    viol = np.less(m, rho, out=_work(n, 0, "b"))    # ρ − m > 0: a difference of doubles is 0 only at equality
    v = np.multiply(viol, u, out=_work(n, 1))     # u_i or 0 (u finite ≥ 0): the in-process np.where
    nv = int(np.count_nonzero(viol))
    if nv * CUT_SUBSET <= n and n >= CUT_SUBSET_ROWS:
        idx = np.flatnonzero(viol)
        a = np.asarray(blk.rmatvec_rows(idx, v[idx]), dtype=np.float64) if nv else np.zeros(blk.k)
        return a, _dot(v, rho), viol, nv
    a = np.asarray(blk.rmatvec_lowrank(v), dtype=np.float64)
    return a, _dot(v, rho), viol, n


def _mb_of(src: Any, t: float, out: FloatArray | None = None) -> FloatArray:
    """w_b's margins on a block from what the last pass kept: a probe's m_b + t(m_t − m_b) (the
    in-process update, the same two roundings; into ``out``, else a new array), an evaluated
    point's m, an array. Only ``out`` may be changed by the caller."""
    if isinstance(src, Probe):
        if t == 0.0:
            return src.m_b
        res: FloatArray = np.subtract(src.m_t, src.m_b, out=out)
        res *= t
        res += src.m_b
        return res
    if isinstance(src, Point):
        return src.m
    arr: FloatArray = src
    return arr


def _mt_of(src: Any) -> FloatArray:
    """w_t's margins: a probe's m_t or an evaluated point's m (BMRM evaluates w_t itself)."""
    out: FloatArray = src.m_t if isinstance(src, Probe) else src.m
    return out


def _m_cut(m_b: FloatArray, m_t: FloatArray, mu: float) -> FloatArray:
    """The margins of the cut point w_c = (1 − μ)w_b + μw_t, as in process: (1 − μ)m_b + μm_t.
    Work arrays: float 2 (the result) and 3."""
    n = m_b.size
    out: FloatArray = np.multiply(m_b, 1.0 - mu, out=_work(n, 2))
    out += np.multiply(m_t, mu, out=_work(n, 3))
    return out


def _member_of(member: Any, rows: int) -> FloatArray:
    """A cut's member vector on a block: packed bits, or the fractions of an aggregated cut."""
    if member.dtype == np.uint8:
        return np.unpackbits(member, count=rows).astype(np.float64)
    out: FloatArray = member
    return out


def picked(mask: NDArray[np.bool_], *arrays: FloatArray) -> tuple[FloatArray, ...]:
    """Each array's entries where ``mask``, in order: ``a[mask]`` for every a (new arrays), with the
    positions found once and gathered (boolean indexing pays a branch per entry: several times
    slower on the scattered masks of breakpoints)."""
    idx = np.flatnonzero(mask)
    return tuple(a.take(idx) for a in arrays)


def bin_ids(ts: FloatArray, out: IndexArray | None = None) -> IndexArray:
    """The histogram bin id of each t (positive and finite; anything else gets a meaningless id).

    t = mant·2^e with mant in [0.5, 1): t lies in (2^(e−1)(1 + (c − 1)/_SUB), 2^(e−1)(1 + c/_SUB)] for
    c = ⌈(mant − 0.5)·2·_SUB⌉, so the id agrees with comparisons ``lo < t <= hi`` at its bin's edges.
    Read from t's bits, by integer operations (exact; no per-element ``frexp`` call): for a normal
    t with biased exponent E and fraction bits f, e = E − 1022 and (mant − 0.5)·2·_SUB = f/2^48
    (_SUB = 16), so c = ⌈f/2^48⌉ = (f + 2^48 − 1) >> 48; subnormals land in the lowest bin as before.
    """
    n = ts.size
    bits = np.asarray(ts, dtype=np.float64).view(np.int64)
    ids = np.empty(n, dtype=np.intp) if out is None else out
    np.right_shift(bits, 52, out=ids)                     # E (the sign bit is 0 for t > 0)
    c = np.bitwise_and(bits, (1 << 52) - 1, out=_work(n, 1, "i"))
    c += (1 << 48) - 1
    c >>= 48                                              # c = ⌈f / 2^48⌉, in 0..16
    ids -= 1023 + _LOW                                    # e − 1 − _LOW
    ids <<= 4                                             # ·_SUB
    ids += c
    ids += 1                                              # id = 2 + (e − 1 − _LOW)·_SUB + c − 1
    np.clip(ids, 1, NBINS - 1, out=ids)
    return ids


def _rdu(src: Any, act: Any, rho: Any, u: Any) -> tuple[FloatArray, FloatArray, Any]:
    """r = ρ − m_b and δ = m_t − m_b (as the in-process line search forms them; work arrays float 0
    and 1), and u."""
    if isinstance(src, RD):
        n = src.r.size
        r, delta = _work(n, 0), _work(n, 1)
        np.copyto(r, src.r)
        np.copyto(delta, src.delta)
        return r, delta, u
    if act is not None:
        rho, u = act.rho, act.u
    n = src.m_b.size
    return np.subtract(rho, src.m_b, out=_work(n, 0)), np.subtract(src.m_t, src.m_b, out=_work(n, 1)), u


def _terms(r: FloatArray, delta: FloatArray, u: Any) -> tuple[float, FloatArray, FloatArray, NDArray[np.bool_]]:
    """The block's terms of φ'(t) from r and δ (used up: r/δ and |u∘δ| are formed in their arrays).

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
    """
    n = r.size
    rpos = np.greater(r, 0.0, out=_work(n, 0, "b"))
    with np.errstate(divide="ignore", invalid="ignore"):
        tb = np.divide(r, delta, out=r)
    zero = np.equal(tb, 0.0, out=_work(n, 1, "b"))
    zneg = zero & (delta < 0) if zero.any() else None
    ud = np.multiply(delta, u, out=delta)
    # a dot with the mask: a masked reduction (sum(where=)) is several times slower over m (u, δ finite)
    s0 = -float(np.dot(ud, rpos))
    if zneg is not None:
        s0 -= float(np.dot(ud, zneg))
    jumps = np.abs(ud, out=ud)
    pos = np.greater(tb, 0.0, out=_work(n, 2, "b"))
    pos &= np.less(tb, np.inf, out=_work(n, 1, "b"))
    return s0, tb, jumps, pos


def breakpoint_summary(tb: FloatArray, jumps: FloatArray, pos: NDArray[np.bool_] | None,
                       cap: int) -> tuple[Any, ...]:
    """A block's breakpoints as the line search's first round takes them (``pos``: which entries of
    ``tb`` are breakpoints, None for all): (counts, sums, [listed t], [their jumps]), all listed
    when at most ``cap``, else the smallest (whole bins of about ``_LIST_LOW``: the step lies among
    them nearly always) listed and the others binned."""
    n = tb.size
    if (n if pos is None else np.count_nonzero(pos)) <= cap:
        if pos is None:
            return (0.0, 0.0, [tb], [jumps])
        ts, js = picked(pos, tb, jumps)
        return (0.0, 0.0, [ts], [js])
    ids = bin_ids(tb, _work(n, 0, "i"))
    if pos is not None:
        ids *= pos              # not a breakpoint (t ≤ 0, inf, NaN): bin 0
    counts = np.bincount(ids, minlength=NBINS).astype(np.float64)
    counts[0] = 0.0
    low = int(np.searchsorted(np.cumsum(counts), min(cap, _LIST_LOW), side="right"))
    listed = np.greater(ids, 0, out=_work(n, 0, "b"))
    listed &= np.less(ids, low, out=_work(n, 1, "b"))
    sums = np.bincount(ids, weights=jumps, minlength=NBINS)
    counts[:low] = sums[:low] = 0.0          # those bins are listed
    ts, js = picked(listed, tb, jumps)
    return (counts, sums, [ts], [js])


def _summarize(r: FloatArray, delta: FloatArray, u: Any, cap: int) -> tuple[Any, ...]:
    """A block's part of the line search's first round (r and δ used up): its share of φ'(0) and its
    breakpoints (:func:`breakpoint_summary`); the last slot of ``SUMMARY_OPS`` is 0 (nothing reads a
    max|δ|: two reductions over the block saved per iteration)."""
    s0, tb, jumps, pos = _terms(r, delta, u)
    return (s0, *breakpoint_summary(tb, jumps, pos, cap), 0.0)


# ------------------------------------------------------------------ kernels (one task per block)
def k_box(lb: Any, ub: Any) -> tuple[float, bool, float]:
    """max|lb|, whether ub is finite, min ub: the box 0 ≤ α ≤ C with finite C ≥ 0 has (0, True, ≥ 0)."""
    lb, ub = np.asarray(lb), np.asarray(ub)
    return float(np.abs(lb).max(initial=0.0)), bool(np.isfinite(ub).all()), float(ub.min(initial=np.inf))


def k_start(blk: Any, x0: FloatArray, lb: Any, ub: Any) -> tuple[FloatArray, float]:
    """Hᵀx for the start x = clip(x0, lb, ub), and max|x|."""
    x = np.clip(x0, lb, ub)
    return np.asarray(blk.rmatvec_lowrank(x), dtype=np.float64), _maxabs(x)


def k_point(blk: Any, w: FloatArray | None, rho: Any, u: Any, cut: bool) -> tuple[Point, tuple[Any, ...]]:
    """Evaluate w (None: w = 0): margins (kept), the risk, max|m|, the cut there (a, b, bits kept)
    and the rows the products read."""
    m = np.zeros(blk.shape[0]) if w is None else np.asarray(blk.matvec_lowrank(w), dtype=np.float64)
    read = 0 if w is None else m.size
    risk = _risk(m, rho, u)
    a: Any = 0.0
    b = 0.0
    bits = None
    if cut:
        a, b, viol, cut_rows = _cut_of(blk, m, rho, u)
        read += cut_rows
        bits = np.packbits(viol)
    return Point(m, bits), (risk, _maxabs(m), a, b, read)


def k_bits(point: Point) -> Any:
    return point.bits


def k_matvec(blk: Any, w: FloatArray) -> FloatArray:
    return np.asarray(blk.matvec_lowrank(w), dtype=np.float64)


def k_probe(blk: Any, src: Any, t: float, rho: Any, u: Any, w_t: FloatArray,
             cap: int) -> tuple[Probe, tuple[Any, ...]]:
    """OCAS's first pass: m_b (from the last pass), m_t = H w_t, the line search's summary."""
    probe = Probe(_mb_of(src, t), np.asarray(blk.matvec_lowrank(w_t), dtype=np.float64))
    return probe, _summarize(*_rdu(probe, None, rho, u), cap)


def k_summary_rd(r: FloatArray, delta: FloatArray, u: Any, cap: int) -> tuple[RD, tuple[Any, ...]]:
    src = RD(r, delta)
    return src, _summarize(*_rdu(src, None, None, u), cap)


def k_window(src: Any, act: Any, rho: Any, u: Any, lo: float, hi: float,
              edges: FloatArray | None) -> tuple[Any, ...]:
    """The breakpoints in (lo, hi]: listed, or (``edges``) counted, summed and their min/max per sub-bin."""
    _, tb, jumps, pos = _terms(*_rdu(src, act, rho, u))
    n = tb.size
    inside = np.greater(tb, lo, out=_work(n, 0, "b"))
    inside &= pos
    inside &= np.less_equal(tb, hi, out=_work(n, 1, "b"))
    ts, js = picked(inside, tb, jumps)
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


def _mb_after(probe: Probe, fresh: FloatArray | None, t: float) -> FloatArray:
    """The new w_b's margins (a new array, or one already kept): recomputed after a long step, else
    m_b + t(m_t − m_b)."""
    return fresh if fresh is not None else _mb_of(probe, t)


def k_move(blk: Any, probe: Probe, fresh: FloatArray | None, t: float, rho: Any, u: Any,
           mu: float) -> tuple[NDArray[np.uint8], FloatArray, tuple[Any, ...]]:
    """OCAS's second pass: the cut's member bits at w_c and the new w_b's margins (both kept: the
    next probe reads the margins instead of forming them again, the same values) and, reduced,
    the risk at the new w_b, 0 (the slot of a max|m_b| nothing reads: two reductions saved), the
    cut at w_c and the rows read."""
    m_b = _mb_after(probe, fresh, t)
    risk = _risk(m_b, rho, u)
    a, b, viol, read = _cut_of(blk, _m_cut(m_b, probe.m_t, mu), rho, u)
    return np.packbits(viol), m_b, (risk, 0.0, a, b, read)


def k_alpha(u: Any, rows: int, beta: FloatArray, *members: Any) -> FloatArray:
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


def k_grad(src: Any, c: Any) -> FloatArray:
    """g = H(Hᵀα) + c = m_t + c (Hᵀα = w_t)."""
    out: FloatArray = _mt_of(src) + c
    return out


def k_mix(f0: float, m0: Any, f1: float, m1: Any, rows: int) -> FloatArray:
    """An aggregated cut's member: f0·member0 + f1·member1 (the in-process formula)."""
    out: FloatArray = f0 * _member_of(m0, rows) + f1 * _member_of(m1, rows)
    return out

