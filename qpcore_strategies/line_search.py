"""The exact line search of OCAS: the minimizer of F on the ray w_b → w_t, from the passes over the rows.

φ(t) = F(w_b + t d) (d = w_t − w_b) is convex and piecewise quadratic: t·wd + ½t²·dd + t·slope
+ Σ_i u_i max(0, r_i − t δ_i) with r = ρ − H w_b (residuals), δ = H d (rates). Its right
derivative s0 + t·dd + Σ_{t_i ≤ t} u_i|δ_i| increases at each breakpoint t_i = r_i/δ_i > 0. The
search never sorts the m breakpoints, nor gathers them:

1. **the summary** (one pass, kept): each block's part of φ'(0), its smallest breakpoints listed
   (about 1024, or all when it has few) and the others as a histogram (16 bins per octave);
2. **the window** (only when the step lies past what every block listed, about 1 % of the
   iterations): the breakpoints of the histogram bin where it lies, gathered (or, when that bin is
   crowded, a finer histogram of it, then of its sub-bin);
3. **the last step** (:func:`step_in_window`): the breakpoints of that bin alone decide t exactly.

A bin is found from t's exponent and mantissa by exact operations (:func:`qpcore_strategies.cutting_plane_kernels.bin_ids`),
so it agrees with every comparison of t with its edges made later. The same search runs in
process (:class:`qpcore.backends.rowspace.LocalRows`: one block) and over a cluster's chunks; the step is
the same up to the order of summation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from qpcore.backends.rowspace import LocalRows, Rows
from qpcore_strategies.cutting_plane_kernels import (LIST_CAP, MAX_SUB, NBINS, SUB_BINS, SUMMARY_OPS, UPPER, WINDOW_CAP,
                                              bin_ids, k_summary_rd, k_window, picked)

FloatArray = NDArray[np.float64]

__all__ = ["Search", "line_search", "rows_line_search", "step_in_window"]


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


def _joined(parts: list[FloatArray]) -> FloatArray:
    """The blocks' lists as one array: the only one itself, else their concatenation."""
    if len(parts) == 1:
        return np.asarray(parts[0], dtype=np.float64)
    return np.concatenate(parts) if parts else np.zeros(0)


class Search:
    """The exact line search over the chunks (see the module docstring).

    Parameters
    ----------
    rows : Rows
        The blocks and the passes over them.
    src : object
        What each block's window kernel reads r and δ from (probes, or ``RD``), as ``rows.kept`` gives it.
    act : object or None
        The active blocks (their ρ and u), for an active iteration.
    rho, u : float or vector
        ρ and u (unused with ``act`` or ``RD``).

    Attributes
    ----------
    rounds : int
        Window rounds (passes after the summary).
    examined : int
        Breakpoints the client looked at (listed and gathered).
    """

    def __init__(self, rows: Rows, src: Any, act: Any, rho: Any, u: Any, *,
                 window_cap: int = WINDOW_CAP, sub_bins: int = SUB_BINS, max_sub: int = MAX_SUB) -> None:
        self.rows, self.src, self.act, self.rho, self.u = rows, src, act, rho, u
        self.window_cap, self.sub_bins, self.max_sub = window_cap, sub_bins, max_sub
        self.rounds = 0
        self.examined = 0
        self.t = float("nan")

    def run(self, summary: tuple[Any, ...], wd: float, dd: float, slope: float = 0.0,
            t_max: float = np.inf) -> float:
        """The minimizer of φ over [0, t_max] from the first round's summary (more rounds if needed)."""
        s0_part, hc, hj, ts_lists, js_lists, _ = summary
        s0 = wd + slope + float(s0_part)
        if s0 >= 0 or t_max <= 0:
            return 0.0
        # one block (in process): its lists as they are, no copy (read only below)
        ts_l = _joined(ts_lists)
        js_l = _joined(js_lists)
        self.examined += int(ts_l.size)
        ids = bin_ids(ts_l)
        jumps = np.bincount(ids, weights=js_l, minlength=NBINS)
        hidden = None
        if isinstance(hj, np.ndarray) and hj.ndim:
            jumps = jumps + hj
            hidden = np.asarray(hc, dtype=np.float64)
        # the right derivative at the upper edge of every bin; the first bin where it turns ≥ 0
        cum = np.cumsum(jumps)
        with np.errstate(invalid="ignore"):
            edge = UPPER * dd
        edge[-1] = np.inf if dd > 0 else 0.0        # past every breakpoint
        hit = np.flatnonzero(s0 + edge[1:] + cum[1:] >= 0)
        if not hit.size:        # decreasing past every breakpoint: the linear part beyond
            return self._resolve(s0, dd, float(cum[-1]), np.zeros(0), np.zeros(0), np.inf, t_max)
        j = int(hit[0]) + 1
        lo, hi, base = float(UPPER[j - 1]), float(UPPER[j]), float(cum[j - 1])
        sel = ids == j
        if hidden is None or hidden[j] == 0:      # the listed breakpoints are all there are in the bin
            ts, js = picked(sel, ts_l, js_l)
            return self._resolve(s0, dd, base, ts, js, hi, t_max)
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
        rows = self.rows
        if count <= self.window_cap or depth >= self.max_sub:
            ts_lists, js_lists = rows.reduce(k_window, self.src, self.act, self.rho, self.u, lo, hi, None,
                                             ops=("list", "list"), name="qpcore-ocas-window")
            ts = np.concatenate(ts_lists)
            self.examined += int(ts.size)
            return self._resolve(s0, dd, base, ts, np.concatenate(js_lists), hi, t_max)
        if hi < np.inf:
            edges = np.linspace(lo, hi, self.sub_bins + 1)
            edges[0], edges[-1] = lo, hi
        else:       # the last bin: bins of ratio 2^(1/4) up to the largest double
            with np.errstate(over="ignore"):
                far = lo * 2.0 ** (np.arange(1, 4097) / 4)
            edges = np.concatenate(([lo], far[np.isfinite(far)], [np.inf]))
        cl, jl, mnl, mxl = rows.reduce(k_window, self.src, self.act, self.rho, self.u, lo, hi, edges,
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



def rows_line_search(rows: Rows, r: Any, delta: Any, u: Any, wd: float, dd: float, *, slope: float = 0.0,
                     t_max: float = np.inf, list_cap: int = LIST_CAP, window_cap: int = WINDOW_CAP,
                     sub_bins: int = SUB_BINS, max_sub: int = MAX_SUB) -> Search:
    """The exact minimizer over t ∈ [0, t_max] of φ(t) = t·wd + ½t²·dd + t·slope + Σ_i u_i max(0, r_i − t δ_i),
    for residuals, rates and weights held by ``rows``' backend.

    Parameters
    ----------
    rows : Rows
        The blocks of r, δ and u.
    r, delta : vector
        Residuals ρ − H w_b and rates H d.
    u : vector or float
        The weights (≥ 0).
    wd, dd : float
        w_bᵀd and ‖d‖² (≥ 0).
    slope : float
        An extra constant slope (the linear model of examples left out of r, δ).
    t_max : float
        Upper end of the search interval.
    list_cap, window_cap, sub_bins, max_sub : int
        How many breakpoints a block lists instead of binning them, how many of a window are
        gathered, how many sub-bins a crowded window is split into, and after how many splits it
        is gathered whatever its size.

    Returns
    -------
    Search
        Its ``t`` (the minimizer; t_max when φ still decreases there), ``rounds`` (passes after
        the first) and ``examined`` (breakpoints looked at).
    """
    pairs, summary = rows.map_reduce(k_summary_rd, r, delta, rows.scalar_or_vector(u), int(list_cap),
                                     ops=SUMMARY_OPS, name="qpcore-ls-summary")
    search = Search(rows, rows.kept(pairs, 0), None, None, rows.scalar_or_vector(u), window_cap=window_cap,
                    sub_bins=sub_bins, max_sub=max_sub)
    search.t = search.run(summary, wd, dd, slope, t_max)
    return search


def line_search(wd: float, dd: float, r: FloatArray, delta: FloatArray, u: FloatArray, *,
                slope: float = 0.0, t_max: float = np.inf) -> tuple[float, int]:
    """:func:`rows_line_search` of numpy arrays (in process).

    Parameters
    ----------
    wd, dd : float
        w_bᵀd and ‖d‖² (≥ 0).
    r, delta, u : ndarray
        Residuals, their rates and the weights u ≥ 0 (same length).
    slope : float
        An extra constant slope.
    t_max : float
        Upper end of the search interval.

    Returns
    -------
    t : float
        The minimizer in [0, t_max] (t_max when φ still decreases there).
    examined : int
        How many breakpoints the search looked at.
    """
    r = np.asarray(r, dtype=np.float64)
    search = rows_line_search(LocalRows(None, r.size), r, np.asarray(delta, dtype=np.float64),
                              np.asarray(u, dtype=np.float64), wd, dd, slope=slope, t_max=t_max)
    return search.t, search.examined
