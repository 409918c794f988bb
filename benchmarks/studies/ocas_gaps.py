"""Relative primal gaps: the time a run takes to reach each, and Xiao and Zhou's Table 3 (the
time in evaluation and in search, the rows read, per gap) for benchmarks.studies.ocas and
benchmarks.studies.dask_scale.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchmarks.harness import median


GAPS = (1e-2, 1e-3, 1e-4)
#: the gaps of Xiao and Zhou's Table 3 (the candidates of the default ``--gaps``: those ≥ 10·tol)
TABLE3_GAPS = (1e-2, 1e-3, 1e-4, 1e-5)
#: Table 3's bars (issue 27), active-set OCAS / OCAS at the gap ``t3_gap`` on the text rows
BAR_T3 = {"gap": 1e-4, "eval": 0.6, "search": 0.3, "total": 1.0}


def gkey(g: float) -> str:
    return f"{g:.0e}"


def gtext(g: float) -> str:
    """A gap as the tables write it: 1e-2, 1e-5, 5e-3."""
    m, e = f"{g:.0e}".split("e")
    return f"{m}e{int(e)}"


def parse_gaps(text: str) -> tuple[float, ...]:
    """``1e-2,1e-3`` → (0.01, 0.001): sorted loosest first, duplicates dropped; each in (0, 1)."""
    vals = sorted({float(v) for v in text.split(",") if v.strip()}, reverse=True)
    if not vals or any(not 0 < v < 1 for v in vals):
        raise ValueError(f"gaps: comma-separated numbers in (0, 1), got {text!r}")
    return tuple(vals)


def default_gaps(tol: float) -> tuple[float, ...]:
    """Table 3's gaps down to min(10·tol, 1e-4): 1e-2…1e-4 at TolRel 1e-5 (and at the quick runs'
    1e-4, whose certificate still bounds the primal gap by 1e-4), 1e-2…1e-5 at 1e-6."""
    return tuple(g for g in TABLE3_GAPS if g >= min(10 * tol, 1e-4) * (1 - 1e-9))


def time_to_gaps(times: list[float], primal: list[float], f_star: float,
                 gaps: tuple[float, ...] = GAPS) -> dict[str, float]:
    """For each gap g, the first time with (F − F*)/F* ≤ g (inf when never)."""
    out: dict[str, float] = {}
    rel = (np.asarray(primal, dtype=np.float64) - f_star) / abs(f_star)
    for g in gaps:
        hit = np.flatnonzero(rel <= g)
        out[gkey(g)] = float(times[int(hit[0])]) if hit.size else math.inf
    return out


#: Table 3's fields at a gap: cumulative at the first iteration reaching it (means: per iteration up to it)
T3_FIELDS = ("iteration", "seconds", "eval_s", "search_s", "rows_read", "mean_touched_eval", "mean_touched_search")


def _mean_or_none(vals: list[Any]) -> float | None:
    return None if not vals or any(v is None for v in vals) else float(np.mean(np.asarray(vals, dtype=np.float64)))


def table3_points(trace: list[dict[str, Any]], f_star: float,
                  gaps: tuple[float, ...] = TABLE3_GAPS) -> dict[str, dict[str, Any] | None]:
    """Xiao and Zhou's Table 3 read off one run's trace: for each gap, at the first trace entry with
    (F − F*)/F* ≤ gap, its iteration, seconds, cumulative T1 (``eval_s``) and T2 (``search_s``) and
    ``rows_read``, and the mean |X^a| (``touched_eval``) and |X^s| (``touched_search``) per
    iteration up to it. None for a gap never reached; a field the trace lacks is None."""
    out: dict[str, dict[str, Any] | None] = {gkey(g): None for g in gaps}
    if not trace:
        return out
    rel = (np.asarray([p["primal"] for p in trace], dtype=np.float64) - f_star) / abs(f_star)
    for g in gaps:
        hit = np.flatnonzero(rel <= g)
        if not hit.size:
            continue
        i = int(hit[0])
        p = trace[i]
        out[gkey(g)] = {"iteration": p.get("iteration"), "seconds": p.get("seconds"), "eval_s": p.get("eval_s"),
                        "search_s": p.get("search_s"), "rows_read": p.get("rows_read"),
                        "mean_touched_eval": _mean_or_none([q.get("touched_eval") for q in trace[:i + 1]]),
                        "mean_touched_search": _mean_or_none([q.get("touched_search") for q in trace[:i + 1]])}
    return out


def table3_summary(points: list[dict[str, dict[str, Any] | None]], gaps: tuple[float, ...]) -> dict[str, Any]:
    """The median over runs of each Table-3 field at each gap (over the runs that reached it: ``reached``
    of ``runs``); a field some run lacks is None."""
    out: dict[str, Any] = {}
    for g in gaps:
        hits = [h for p in points if (h := p.get(gkey(g))) is not None]
        if not hits:
            out[gkey(g)] = {"reached": 0, "runs": len(points)}
            continue
        ent: dict[str, Any] = {"reached": len(hits), "runs": len(points)}
        for f in T3_FIELDS:
            vals = [h.get(f) for h in hits]
            nums = [float(v) for v in vals if v is not None]
            ent[f] = float(median(nums)) if len(nums) == len(vals) else None
        out[gkey(g)] = ent
    return out


def _quot(a: Any, b: Any) -> float | None:
    return float(a) / float(b) if a is not None and b is not None and float(b) > 0 else None


def table3_compare(asx: dict[str, Any], oc: dict[str, Any], gaps: tuple[float, ...], *,
                   barred: bool) -> dict[str, Any]:
    """Active-set OCAS against OCAS at each gap (their :func:`table3_summary`): T1, T2, time to the gap,
    iterations and rows read, each as AS / OCAS; the bars (:data:`BAR_T3`) at their gap when
    ``barred`` (the text rows): T1 ≤ 0.6, T2 ≤ 0.3, time < 1."""
    out: dict[str, Any] = {}
    for g in gaps:
        a, o = asx.get(gkey(g)) or {}, oc.get(gkey(g)) or {}
        d: dict[str, Any] = {"as": a, "ocas": o,
                             "t1_ratio": _quot(a.get("eval_s"), o.get("eval_s")),
                             "t2_ratio": _quot(a.get("search_s"), o.get("search_s")),
                             "total_ratio": _quot(a.get("seconds"), o.get("seconds")),
                             "iterations_ratio": _quot(a.get("iteration"), o.get("iteration")),
                             "rows_read_ratio": _quot(a.get("rows_read"), o.get("rows_read"))}
        if barred and math.isclose(g, BAR_T3["gap"]):
            def bar(v: float | None, lim: float, strict: bool = False) -> bool | None:
                return None if v is None else bool(v < lim if strict else v <= lim)
            d["bars"] = {"t1": bar(d["t1_ratio"], BAR_T3["eval"]), "t2": bar(d["t2_ratio"], BAR_T3["search"]),
                         "total": bar(d["total_ratio"], BAR_T3["total"], strict=True)}
        out[gkey(g)] = d
    return out


def _thin(t: list[float], v: list[float], keep: int = 400) -> list[list[float]]:
    """At most ``keep`` points of a trajectory (log-spaced indices, first and last kept)."""
    n = len(t)
    if n <= keep:
        idx = np.arange(n)
    else:
        idx = np.unique(np.concatenate([[0, n - 1], np.geomspace(1, n - 1, keep - 2).astype(int)]))
    return [[float(t[i]), float(v[i])] for i in idx]
