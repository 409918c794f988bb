"""The active-set OCAS's passes over the rows: the kernels :mod:`qpcore_strategies.active_set_ocas` runs on
each block of rows (in process once on the whole data, on a Dask cluster once per chunk).

A block keeps, across iterations, only m-long numbers, never a copy of its rows
(:class:`Keys`): per example the key r_i + S_i (its last measured distance to the hinge's kink in
w-space plus the movement of w_b then), its side (violator or not) at w_b, and ‖h_i‖. An
iteration's active rows are an index list; the product over them reads ``H[idx]`` transiently.
Kept objects are never changed once made (a cluster replays kernels to recompute a lost chunk);
the temporaries live in the work arrays of :mod:`qpcore_strategies.cutting_plane_kernels` (slots ≥ 8
here, so they never meet OCAS's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from qpcore_strategies.cutting_plane_kernels import LONG, _work, breakpoint_summary

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["EXACT_OPS", "Keys", "MOVE_OPS", "PROBE_OPS", "Probe", "Window", "k_exact", "k_keys", "k_member", "k_own",
           "k_move", "k_probe", "rows_read"]

#: relative allowance for rounding in a measured distance (margins from a product, then a step)
SLACK = 1e-9

# partial results and how they combine
#: the line search's summary (as ``SUMMARY_OPS``), then |X^a|, |X^s|, blocks refreshed, rows read
PROBE_OPS = ("sum", "sum", "sum", "list", "list", "max", "sum", "sum", "sum", "sum")
#: ΔA_b, ΔB_b (old w_b to new), ΔA_c, ΔB_c (new w_b to the cut point), rows read
MOVE_OPS = ("sum", "sum", "sum", "sum", "sum")
#: risk, A_b, B_b (exact, from all rows)
EXACT_OPS = ("sum", "sum", "sum")


class Keys:
    """What a block keeps across iterations: per example key_i = r_i + S_i, its side at w_b, ‖h_i‖,
    and the margins at w_b where ``valid`` (the rows of the last active set; elsewhere stale)."""

    __slots__ = ("key", "side", "norms", "m", "valid")

    def __init__(self, key: FloatArray, side: BoolArray, norms: FloatArray, m: FloatArray, valid: BoolArray) -> None:
        self.key, self.side, self.norms, self.m, self.valid = key, side, norms, m, valid


class Probe:
    """An iteration's active rows: their indices (None: the whole block) and margins at w_b and w_t,
    with their ρ and u. Kept from the probe to the move of the same iteration only."""

    __slots__ = ("idx", "m_b", "m_t", "rho", "u")

    def __init__(self, idx: IndexArray | None, m_b: FloatArray, m_t: FloatArray, rho: Any, u: Any) -> None:
        self.idx, self.m_b, self.m_t, self.rho, self.u = idx, m_b, m_t, rho, u


class Window:
    """The rows of X^s (breakpoints inside (0, Λ)): margins, ρ and u, for the line search's window
    rounds (``qpcore_strategies.cutting_plane_kernels.k_window`` reads it as both its probe and its act)."""

    __slots__ = ("m_b", "m_t", "rho", "u")

    def __init__(self, m_b: FloatArray, m_t: FloatArray, rho: Any, u: Any) -> None:
        self.m_b, self.m_t, self.rho, self.u = m_b, m_t, rho, u


def _take(x: Any, idx: IndexArray | None) -> Any:
    """x[idx] for a block's array (x itself for None); a scalar (a constant vector) stays a scalar."""
    return x if idx is None or np.ndim(x) == 0 else x[idx]


def _dot(v: FloatArray, x: Any) -> float:
    """vᵀx for x an array or a scalar standing for a constant vector."""
    return float(v @ x) if np.ndim(x) else float(x) * float(v.sum())


def _matvec(blk: Any, idx: IndexArray | None, w: FloatArray) -> FloatArray:
    """H[idx] w (all rows for None): one pass over those rows (in place, ``matvec_rows``)."""
    if idx is None:
        return np.asarray(blk.matvec_lowrank(w), dtype=np.float64)
    out: FloatArray = blk.matvec_rows(idx, w)
    return out


def _maxabs(x: Any) -> float:
    """max|x_i| (0 for none; |x| for a scalar)."""
    if np.ndim(x) == 0:
        return abs(float(x))
    return max(float(np.max(x, initial=0.0)), -float(np.min(x, initial=0.0)))


def _distance(rho: Any, m: FloatArray, norms: FloatArray, spread: float, w_norm: float) -> FloatArray:
    """|ρ_i − m_i|/‖h_i‖ less a rounding allowance (``SLACK`` times the block's largest |ρ| + |m| +
    ``spread``, over ‖h_i‖, plus ‖w‖): a lower bound on the distance of w to example i's kink (a
    new array). Rows with h_i = 0 never cross: |ρ_i|/0 = inf, or NaN for ρ_i = 0 (never ≤ a bound)."""
    res = np.abs(np.subtract(rho, m))
    res -= SLACK * (_maxabs(rho) + _maxabs(m) + spread)
    with np.errstate(divide="ignore", invalid="ignore"):
        res /= norms
    res -= SLACK * w_norm
    out: FloatArray = np.maximum(res, 0.0, out=res)
    return out


def rows_read(partial: tuple[Any, ...]) -> int:
    """The rows a probe's partial says it read."""
    return int(partial[9])


# ------------------------------------------------------------------ kernels (one task per block)
def k_keys(blk: Any, point: Any, rho: Any, w_norm: float) -> Keys:
    """The start: ‖h_i‖ (one pass over the rows), and every example's key, side and margin from the
    first evaluation (``point.m``, kept by OCAS's ``k_point``); S = 0."""
    norms = np.sqrt(np.maximum(np.asarray(blk.diag(), dtype=np.float64), 0.0))
    m = point.m
    return Keys(_distance(rho, m, norms, 0.0, w_norm), np.less(m, rho), norms, m, np.ones(m.size, dtype=bool))


def k_probe(blk: Any, keys: Keys, rho: Any, u: Any, w_b: FloatArray, w_t: FloatArray, reach: float, lam: float,
            refresh: float, cap: int) -> tuple[Probe, Window, tuple[Any, ...]]:
    """Evaluation over the active set: X^a = {i : key_i ≤ S + θ} (``reach`` = S + θ; the whole block
    when it would hold more than ``refresh`` of it); margins at w_t (a product over X^a) and at w_b
    (kept for the rows of the last active set, a product over the rows entering); and the line
    search's summary over X^s, the breakpoints inside (0, Λ) (Λ = ``lam``). φ'(0)'s share here is
    only where the active rows' sides at 0+ differ from the kept ones (the ties r_i = 0, δ_i < 0,
    and rounding at the kink): the violators' part is the client's −A_bᵀd."""
    n = keys.key.size
    act = np.less_equal(keys.key, reach, out=_work(n, 8, "b"))
    count = int(np.count_nonzero(act))
    idx: IndexArray | None = None if count > refresh * n else np.flatnonzero(act)
    m_t = _matvec(blk, idx, w_t)
    # w_b's margins: kept where valid, a product over the rows entering
    valid = keys.valid if idx is None else keys.valid[idx]
    enter = np.flatnonzero(~valid)
    m_b = keys.m if idx is None and not enter.size else _take(keys.m, idx).copy()
    if enter.size:
        m_b[enter] = _matvec(blk, enter if idx is None else idx[enter], w_b)
    rho_a, u_a = _take(rho, idx), _take(u, idx)
    probe = Probe(idx, m_b, m_t, rho_a, u_a)
    na = m_b.size
    # r and δ as k_window forms them (the same roundings: the same breakpoints)
    r = np.subtract(rho_a, m_b, out=_work(na, 8))
    delta = np.subtract(m_t, m_b, out=_work(na, 9))
    # φ'(0+) counts the examples violating just after 0: r > 0, or r = 0 with δ < 0. The client's
    # −A_bᵀd counts the kept sides; the difference is added here (the ties, and an example within
    # rounding of its kink whose side a different rounding of its margin decided: the breakpoints
    # below must meet a derivative that agrees with the same r)
    v0 = np.greater(r, 0.0, out=_work(na, 9, "b"))
    v0 |= (r == 0.0) & (delta < 0)
    differ = np.flatnonzero(v0 != _take(keys.side, idx))
    s0 = 0.0
    if differ.size:
        sign = np.where(v0[differ], 1.0, -1.0)
        s0 = -_dot(sign * delta[differ], _take(u_a, differ))
    with np.errstate(divide="ignore", invalid="ignore"):
        tb = np.divide(r, delta, out=_work(na, 10))
    inside = np.greater(tb, 0.0, out=_work(na, 9, "b"))
    inside &= np.less(tb, lam, out=_work(na, 10, "b"))
    sel = np.flatnonzero(inside)
    ts = tb[sel]
    jumps = np.abs(np.multiply(delta[sel], _take(u_a, sel)))
    window = Window(m_b[sel], m_t[sel], _take(rho_a, sel), _take(u_a, sel))
    summary = breakpoint_summary(ts, jumps, None, cap)
    partial = (s0, *summary, 0.0, na, int(sel.size), int(idx is None), na + int(enter.size))
    return probe, window, partial


def k_move(blk: Any, keys: Keys, probe: Probe, step: float, c: float, S: float,
           w_norm: float) -> tuple[Keys, NDArray[np.uint8], tuple[Any, ...]]:
    """The move and the cut over the active rows: their margins and sides at the new w_b = w_b + step·d
    and their sides at the cut point w_b + c·d; the changes of the subgradient sums A_b, B_b (old
    w_b to new) and to the cut's A_c, B_c (new w_b to w_c), read from the rows whose side changed only; the new keys (the
    distance at the new w_b plus S, the movement so far) and the cut's member bits (the inactive
    sides kept: within the window they cannot change)."""
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
    parts: list[Any] = []
    read = 0
    # A_b to the new w_b from the rows whose side changed, then the cut's from those whose side at
    # w_c differs from the new w_b's (the breakpoints between the step and the cut point: few)
    for side, before in ((side_new, old), (side_cut, side_new)):
        pos = np.flatnonzero(np.not_equal(side, before, out=_work(na, 9, "b")))
        v = np.where(side[pos], 1.0, -1.0)
        v *= _take(u, pos)
        parts += [blk.rmatvec_rows(pos if idx is None else idx[pos], v), _dot(v, _take(rho, pos))]
        read += int(pos.size)
    # the keys: measured afresh on the active rows (slack for the step's rounding), kept elsewhere
    r_new = _distance(rho, m_new, _take(keys.norms, idx), step * _maxabs(delta) + _maxabs(m_t), w_norm)
    r_new += S
    # after a long step δ's rounding is amplified: those margins are taken afresh next time
    fresh = step <= LONG
    if idx is None:
        new = Keys(r_new, side_new, keys.norms, m_new, np.full(na, fresh))
        bits = np.packbits(side_cut)
    else:
        key = keys.key.copy()
        key[idx] = r_new
        side_all = keys.side.copy()
        side_all[idx] = side_new
        m = keys.m.copy()
        m[idx] = m_new
        valid = np.zeros(key.size, dtype=bool)
        valid[idx] = fresh
        new = Keys(key, side_all, keys.norms, m, valid)
        member = _work(key.size, 11, "b")
        np.copyto(member, keys.side)
        member[idx] = side_cut
        bits = np.packbits(member)
    return new, bits, (*parts, read)


def k_own(obj: Any) -> Any:
    """The object itself, as the output of a task of its own (on a cluster: held apart from the
    output it was picked from, which can then be released)."""
    return obj


def k_member(keys: Keys) -> NDArray[np.uint8]:
    """The member bits of a cut at w_b itself (the sides kept): no rows read."""
    return np.packbits(keys.side)


def k_exact(blk: Any, keys: Keys, w: FloatArray, rho: Any, u: Any, S: float,
            w_norm: float) -> tuple[Keys, tuple[Any, ...]]:
    """The exact evaluation (all rows: a product and a subgradient): the risk at w, A_b = Σ_viol u_i h_i
    and B_b = Σ_viol u_i ρ_i afresh (no accumulated rounding), and every key, side and margin reset."""
    m = np.asarray(blk.matvec_lowrank(w), dtype=np.float64)
    n = m.size
    h = np.subtract(rho, m, out=_work(n, 8))
    side = h > 0
    v = np.multiply(side, u, out=_work(n, 9))
    a = np.asarray(blk.rmatvec_lowrank(v), dtype=np.float64)
    b = _dot(v, rho)
    risk = _dot(np.maximum(h, 0.0, out=h), u)
    key = _distance(rho, m, keys.norms, 0.0, w_norm)
    key += S
    return Keys(key, side, keys.norms, m, np.ones(n, dtype=bool)), (risk, a, b)
