"""The active-set OCAS's passes over the rows: the kernels :mod:`strategies.active_set_ocas` runs on
each block of rows (in process once on the whole data, on a Dask cluster once per chunk).

A block keeps, across iterations, only m-long numbers, never a copy of its rows
(:class:`Keys`): per example the key r_i + S_i (its last measured distance to the hinge's kink in
w-space plus the movement of w_b then), its side (violator or not) at w_b, and ‖h_i‖. An
iteration's active rows are an index list; the product over them reads ``H[idx]`` transiently.
Kept objects are never changed once made (a cluster replays kernels to recompute a lost chunk);
the temporaries live in the work arrays of :mod:`strategies.cutting_plane_kernels` (slots ≥ 8
here, so they never meet OCAS's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from strategies.cutting_plane_kernels import NBINS, _work, bin_ids

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["EXACT_OPS", "Keys", "MOVE_OPS", "PROBE_OPS", "Probe", "Window", "k_exact", "k_keys", "k_member",
           "k_move", "k_probe", "rows_read"]

_LIST_LOW = 1024        # a crowded block lists about this many of its smallest breakpoints, bins the rest
#: relative allowance for rounding in a measured distance (margins from a product, then a step)
SLACK = 1e-9

# partial results and how they combine
#: the line search's summary (as ``SUMMARY_OPS``), then |X^a|, |X^s|, blocks refreshed, rows read
PROBE_OPS = ("sum", "sum", "sum", "list", "list", "max", "sum", "sum", "sum", "sum")
#: ΔA_b, ΔB_b, ΔA_c, ΔB_c (the changes of the subgradient sums), rows read
MOVE_OPS = ("sum", "sum", "sum", "sum", "sum")
#: risk, A_b, B_b (exact, from all rows)
EXACT_OPS = ("sum", "sum", "sum")


class Keys:
    """What a block keeps across iterations: per example key_i = r_i + S_i, its side at w_b and ‖h_i‖."""

    __slots__ = ("key", "side", "norms")

    def __init__(self, key: FloatArray, side: BoolArray, norms: FloatArray) -> None:
        self.key, self.side, self.norms = key, side, norms


class Probe:
    """An iteration's active rows: their indices (None: the whole block) and margins at w_b and w_t,
    with their ρ and u. Kept from the probe to the move of the same iteration only."""

    __slots__ = ("idx", "m_b", "m_t", "rho", "u")

    def __init__(self, idx: IndexArray | None, m_b: FloatArray, m_t: FloatArray, rho: Any, u: Any) -> None:
        self.idx, self.m_b, self.m_t, self.rho, self.u = idx, m_b, m_t, rho, u


class Window:
    """The rows of X^s (breakpoints inside (0, Λ)): margins, ρ and u, for the line search's window
    rounds (``strategies.cutting_plane_kernels.k_window`` reads it as both its probe and its act)."""

    __slots__ = ("m_b", "m_t", "rho", "u")

    def __init__(self, m_b: FloatArray, m_t: FloatArray, rho: Any, u: Any) -> None:
        self.m_b, self.m_t, self.rho, self.u = m_b, m_t, rho, u


def _take(x: Any, idx: IndexArray | None) -> Any:
    """x[idx] for a block's array (x itself for None); a scalar (a constant vector) stays a scalar."""
    return x if idx is None or np.ndim(x) == 0 else x[idx]


def _dot(v: FloatArray, x: Any) -> float:
    """vᵀx for x an array or a scalar standing for a constant vector."""
    return float(v @ x) if np.ndim(x) else float(x) * float(v.sum())


def _margins(blk: Any, idx: IndexArray | None, W: FloatArray) -> FloatArray:
    """H[idx] W for W of shape (k, c): one pass over the rows (a transient copy of ``H[idx]``), as a
    (c, |idx|) array whose rows are contiguous."""
    p = int(blk.F.shape[1])
    F = blk.F if idx is None else blk.F[idx]
    out = np.asarray(F @ W[:p], dtype=np.float64).reshape(-1, W.shape[1])
    if blk.bias is not None:
        out += blk.bias * W[p]
    if blk.s is not None:
        out *= _take(blk.s, idx)[:, None]
    return np.ascontiguousarray(out.T)


def _rmatvec(blk: Any, idx: IndexArray, V: FloatArray) -> FloatArray:
    """H[idx]ᵀ V for V of shape (|idx|, c): a (k, c) array (a transient copy of the rows)."""
    k = int(blk.k)
    if idx.size == 0:
        return np.zeros((k, V.shape[1]))
    p = int(blk.F.shape[1])
    Vs = V if blk.s is None else V * blk.s[idx][:, None]
    out = np.empty((k, V.shape[1]))
    out[:p] = np.asarray(blk.F[idx].T @ Vs, dtype=np.float64).reshape(p, V.shape[1])
    if blk.bias is not None:
        out[p] = blk.bias * Vs.sum(axis=0)
    return out


def _distance(rho: Any, m: FloatArray, norms: FloatArray, spread: FloatArray | None, w_norm: float) -> FloatArray:
    """|ρ_i − m_i|/‖h_i‖ less a rounding allowance (``SLACK`` times |ρ_i| + |m_i| + ``spread``, over
    ‖h_i‖, plus ‖w‖): a lower bound on the distance of w to example i's kink. Rows with h_i = 0 never
    cross (inf)."""
    res = np.abs(np.subtract(rho, m))
    err = np.abs(m) + np.abs(rho)
    if spread is not None:
        err += spread
    res -= SLACK * err
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(norms > 0, res / norms, np.inf)
    out -= SLACK * w_norm
    return np.maximum(out, 0.0, out=out)


def rows_read(partial: tuple[Any, ...]) -> int:
    """The rows a probe's partial says it read."""
    return int(partial[9])


# ------------------------------------------------------------------ kernels (one task per block)
def k_keys(blk: Any, point: Any, rho: Any, w_norm: float) -> Keys:
    """The start: ‖h_i‖ (one pass over the rows), and every example's key and side from the margins of
    the first evaluation (``point.m``, kept by OCAS's ``k_point``); S = 0."""
    norms = np.sqrt(np.maximum(np.asarray(blk.diag(), dtype=np.float64), 0.0))
    m = point.m
    return Keys(_distance(rho, m, norms, None, w_norm), np.less(m, rho), norms)


def k_probe(blk: Any, keys: Keys, rho: Any, u: Any, W: FloatArray, reach: float, lam: float, refresh: float,
            cap: int) -> tuple[Probe, Window, tuple[Any, ...]]:
    """Evaluation over the active set: X^a = {i : key_i ≤ S + θ} (``reach`` = S + θ; the whole block
    when it would hold more than ``refresh`` of it), margins at w_b and w_t (one product of H[X^a] with
    W = [w_b, w_t]), and the line search's summary over X^s, the breakpoints inside (0, Λ)
    (Λ = ``lam``); φ'(0)'s share here is only the ties (r_i = 0, δ_i < 0): the violators' part is the
    client's −A_bᵀd."""
    n = keys.key.size
    act = np.less_equal(keys.key, reach, out=_work(n, 8, "b"))
    count = int(np.count_nonzero(act))
    idx: IndexArray | None = None if count > refresh * n else np.flatnonzero(act)
    M = _margins(blk, idx, W)
    m_b, m_t = M[0], M[1]
    rho_a, u_a = _take(rho, idx), _take(u, idx)
    probe = Probe(idx, m_b, m_t, rho_a, u_a)
    na = m_b.size
    # r and δ as k_window forms them (the same roundings: the same breakpoints)
    r = np.subtract(rho_a, m_b, out=_work(na, 8))
    delta = np.subtract(m_t, m_b, out=_work(na, 9))
    ties = r == 0.0
    s0 = 0.0
    if ties.any():
        tie_neg = ties & (delta < 0)
        s0 = -_dot(delta[tie_neg], _take(u_a, np.flatnonzero(tie_neg)))
    with np.errstate(divide="ignore", invalid="ignore"):
        tb = np.divide(r, delta, out=_work(na, 10))
    inside = np.greater(tb, 0.0, out=_work(na, 9, "b"))
    inside &= np.less(tb, lam, out=_work(na, 10, "b"))
    sel = np.flatnonzero(inside)
    ts = tb[sel]
    jumps = np.abs(np.multiply(delta[sel], _take(u_a, sel)))
    window = Window(m_b[sel], m_t[sel], _take(rho_a, sel), _take(u_a, sel))
    summary = _summary(ts, jumps, cap)
    partial = (s0, *summary, 0.0, na, int(sel.size), int(idx is None), na)
    return probe, window, partial


def _summary(ts: FloatArray, jumps: FloatArray, cap: int) -> tuple[Any, ...]:
    """A block's breakpoints as the line search's first round takes them: all listed when at most
    ``cap``, else about ``_LIST_LOW`` of the smallest listed (whole bins) and the rest binned."""
    if ts.size <= cap:
        return (0.0, 0.0, [ts], [jumps])
    ids = bin_ids(ts)
    counts = np.bincount(ids, minlength=NBINS).astype(np.float64)
    counts[0] = 0.0
    low = int(np.searchsorted(np.cumsum(counts), min(cap, _LIST_LOW), side="right"))
    listed = ids < low
    sums = np.bincount(ids, weights=jumps, minlength=NBINS)
    counts[:low] = sums[:low] = 0.0
    return (counts, sums, [ts[listed]], [jumps[listed]])


def k_move(blk: Any, keys: Keys, probe: Probe, step: float, c: float, S: float,
           w_norm: float) -> tuple[Keys, NDArray[np.uint8], tuple[Any, ...]]:
    """The move and the cut over the active rows: their sides at the new w_b = w_b + step·d and at the
    cut point w_b + c·d, the changes of the subgradient sums A_b, B_b (to the new w_b) and A_c, B_c
    (to the cut) over the rows whose side changed (only those are read), the new keys (r at the new
    w_b plus S, the movement so far) and the cut's member bits (inactive sides kept: within the window
    they cannot change)."""
    idx = probe.idx
    m_b, m_t, rho, u = probe.m_b, probe.m_t, probe.rho, probe.u
    na = m_b.size
    delta = np.subtract(m_t, m_b, out=_work(na, 8))
    m_new = m_b + step * delta
    m_cut = np.multiply(delta, c, out=_work(na, 9))
    m_cut += m_b
    side_new = np.less(m_new, rho)
    side_cut = np.less(m_cut, rho, out=_work(na, 8, "b"))
    old = _take(keys.side, idx)
    changed = np.not_equal(side_new, old, out=_work(na, 9, "b"))
    changed |= np.not_equal(side_cut, old, out=_work(na, 10, "b"))
    pos = np.flatnonzero(changed)
    o = old[pos].astype(np.float64)
    uu = _take(u, pos)
    V = np.empty((pos.size, 2))
    V[:, 0] = (side_new[pos] - o) * uu
    V[:, 1] = (side_cut[pos] - o) * uu
    rows = pos if idx is None else idx[pos]
    dA = _rmatvec(blk, rows, V)
    rho_p = _take(rho, pos)
    dB = (V.T @ rho_p) if np.ndim(rho_p) else V.sum(axis=0) * float(rho_p)
    # the keys: measured afresh on the active rows (slack for the step's rounding), kept elsewhere
    spread = np.abs(delta, out=_work(na, 10))
    spread *= step
    spread += np.abs(m_t)
    r_new = _distance(rho, m_new, _take(keys.norms, idx), spread, w_norm)
    r_new += S
    if idx is None:
        key, side = r_new, side_new
        bits = np.packbits(side_cut)
    else:
        key = keys.key.copy()
        key[idx] = r_new
        side = keys.side.copy()
        side[idx] = side_new
        member = _work(side.size, 11, "b")
        np.copyto(member, keys.side)
        member[idx] = side_cut
        bits = np.packbits(member)
    return Keys(key, side, keys.norms), bits, (dA[:, 0].copy(), float(dB[0]), dA[:, 1].copy(), float(dB[1]),
                                               int(pos.size))


def k_member(keys: Keys) -> NDArray[np.uint8]:
    """The member bits of a cut at w_b itself (the sides kept): no rows read."""
    return np.packbits(keys.side)


def k_exact(blk: Any, keys: Keys, w: FloatArray, rho: Any, u: Any, S: float,
            w_norm: float) -> tuple[Keys, tuple[Any, ...]]:
    """The exact evaluation (all rows: a product and a subgradient): the risk at w, A_b = Σ_viol u_i h_i
    and B_b = Σ_viol u_i ρ_i afresh (no accumulated rounding), and every key and side reset."""
    m = np.asarray(blk.matvec_lowrank(w), dtype=np.float64)
    n = m.size
    h = np.subtract(rho, m, out=_work(n, 8))
    side = h > 0
    v = np.multiply(side, u, out=_work(n, 9))
    a = np.asarray(blk.rmatvec_lowrank(v), dtype=np.float64)
    b = _dot(v, rho)
    risk = _dot(np.maximum(h, 0.0, out=h), u)
    key = _distance(rho, m, keys.norms, None, w_norm)
    key += S
    return Keys(key, side, keys.norms), (risk, a, b)
