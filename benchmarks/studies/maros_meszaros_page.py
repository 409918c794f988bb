"""The summary and page of the Maros–Meszaros study (``maros_meszaros.md``), from its JSON lines.
"""

from __future__ import annotations

import math
from typing import Any

from benchmarks.harness import OTHERS_MARGIN, fmt_seconds, markdown_table
from benchmarks.studies.maros_meszaros_set import (
    ANCHORS, BAR, FORMAT, LEVELS, SOLVERS, SPARSE_ONLY, TIME_LIMIT, anchor_settings, shifted_geometric_mean,
)


def _e(v: Any) -> str:
    if v is None or v == "inf" or (isinstance(v, float) and not math.isfinite(v)):
        return "inf"
    return f"{float(v):.1e}"


def _secs(v: Any) -> float:
    return math.inf if v in (None, "inf") else float(v)


def summarize(records: list[dict[str, Any]], threads: int, time_limit: float | None = None) -> dict[str, Any]:
    """Per solver and level, over the records at one thread count: successes, false claims,
    the shifted geometric mean of the times (a run not reported solved counts at the time
    limit, qpbenchmark's rule) and, for ours, its ratio to PIQP's at each level.

    Returns
    -------
    dict
        ``problems`` (the count), ``rows``: ``{key: {solver, level, solved: {level: count},
        shm, false_claims, loaded}}`` with key ``ours`` or ``<anchor>@<level>``, and ``ratio``:
        ``{level: shm(ours) / shm(piqp@level)}``.
    """
    recs = [r for r in records if r["threads"] == threads]
    limit = time_limit if time_limit is not None else max((r.get("time_limit") or TIME_LIMIT for r in recs),
                                                           default=TIME_LIMIT)
    rows: dict[str, dict[str, Any]] = {}
    for r in recs:
        for k, s in r["solvers"].items():
            row = rows.setdefault(k, {"solver": s["solver"], "level": s["level"], "solved": {}, "times": [],
                                      "false_claims": [], "loaded": False, "problems": 0})
            row["problems"] += 1
            for lv, ok in s["success"].items():
                row["solved"][lv] = row["solved"].get(lv, 0) + int(bool(ok))
            row["times"].append(min(_secs(s["seconds"]), limit) if s["found"] else limit)
            if s.get("false_claim"):
                row["false_claims"].append(f"{r['problem']}: {s['false_claim']}")
            row["loaded"] = row["loaded"] or bool(s.get("loaded"))
    for row in rows.values():
        row["shm"] = shifted_geometric_mean(row.pop("times"))
    ratio = {}
    if "ours" in rows:
        for lv in rows["ours"]["solved"]:
            p = rows.get(f"piqp@{lv}")
            if p is not None and p["problems"] == rows["ours"]["problems"] and p["shm"] > 0:
                ratio[lv] = rows["ours"]["shm"] / p["shm"]
    return {"problems": len({r["problem"] for r in recs}), "rows": rows, "ratio": ratio, "time_limit": limit}


def bars(summary: dict[str, Any], total: int) -> list[str]:
    """The issue's bars on ours, as lines: met or not met; when fewer than ``total`` problems
    were measured, whether a count can still be met by the others (``still reachable`` or
    ``missed``) and where the time ratio stands so far."""
    o = summary["rows"].get("ours")
    if o is None:
        return ["ours was not run"]
    partial = summary["problems"] < total
    tail = f" (partial: {summary['problems']} of {total} problems measured)" if partial else ""

    def verdict(ok: bool) -> str:       # partial: whether the bar can still be met by the rest
        return ("still reachable" if ok else "**missed**") if partial else ("met" if ok else "**not met**")

    out = []
    for lv in ("mid", "high"):
        if lv in o["solved"]:
            n = o["solved"][lv]
            need = BAR[lv] - (total - summary["problems"])
            out.append(f"{lv} ({LEVELS[lv]:g}): {n} of {summary['problems']} solved (bar ≥ {BAR[lv]} of {total}) → "
                       f"{verdict(n >= need)}{tail}")
    fc = o["false_claims"]
    out.append(f"false claims of infeasibility, unboundedness or non-convexity: {len(fc)}"
               + (f" ({'; '.join(fc)})" if fc else "") + f" → {verdict(not fc)}")
    for lv, rt in summary["ratio"].items():
        ok = rt <= BAR["shm_ratio"]
        say = ("within so far" if ok else "above so far") if partial else ("met" if ok else "**not met**")
        out.append(f"shm ours / PIQP at {lv}: {rt:.3g} (bar ≤ {BAR['shm_ratio']:g}) → {say}"
                   + (" — LOADED runs: not a result" if o["loaded"] or summary["rows"][f"piqp@{lv}"]["loaded"] else ""))
    return out


def _latest(lines: list[dict[str, Any]], quick: bool) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """The latest record of every (problem, threads), and the run header of each thread count."""
    recs: dict[tuple[str, int], dict[str, Any]] = {}
    heads: dict[int, dict[str, Any]] = {}
    for d in lines:
        if d.get("format") != FORMAT or bool(d.get("quick")) != quick:
            continue
        if "machine" in d:
            for t in d.get("threads", []):
                heads[int(t)] = d
            continue
        recs[(d["problem"], int(d["threads"]))] = d
    return sorted(recs.values(), key=lambda d: (d["problem"], d["threads"])), heads


def _cell(s: dict[str, Any] | None, levels: list[str]) -> str:
    if s is None:
        return "–"
    marks = "".join("✓" if s["success"].get(lv) else "✗" for lv in levels)
    flag = " **FALSE CLAIM**" if s.get("false_claim") else ""
    return f"{marks} {fmt_seconds(s['seconds'])}{flag}"


def _esc(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(records: list[dict[str, Any]], heads: dict[int, dict[str, Any]], total: int | None = None) -> str:
    """The markdown page: bars, summary per solver, the per-problem table and every solver's runs."""
    levels = list(dict.fromkeys(lv for r in records for lv in r.get("levels", [])))
    total = total if total is not None else len({r["problem"] for r in records})
    L = ["# The Maros–Meszaros dense subset: `qpcore.solve_qp` against PIQP, ProxQP, OSQP and Clarabel", "",
         "Generated by `python -m benchmarks.maros_meszaros` (issue 33, \"Bars\"); do not edit by hand.", ""]
    for t, h in sorted(heads.items()):
        m = h.get("machine", {})
        L.append(f"- {t} BLAS thread{'s' if t > 1 else ''}: `{h.get('command', '')}` (run {h.get('run_id')}); "
                 f"{m.get('cpu')}, {m.get('cores')} cores, numpy {m.get('numpy')}, scipy {m.get('scipy')}, "
                 f"commit {m.get('git', {}).get('commit')}{' (dirty)' if m.get('git', {}).get('dirty') else ''}; "
                 f"solvers {', '.join(f'{k} {v}' for k, v in h.get('versions', {}).items())}")
    L += ["", "Accuracy as qpbenchmark defines it, from each solver's returned x, y, z, z_box on the problem in "
          "qpsolvers' form (G x ≤ h, A x = b, lb ≤ x ≤ ub): primal residual r_p = max(‖Ax − b‖∞, [Gx − h]⁺, "
          "[lb − x]⁺, [x − ub]⁺), dual residual r_d = ‖Px + q + Aᵀy + Gᵀz + z_box‖∞, duality gap "
          "r_g = |xᵀPx + qᵀx + bᵀy + hᵀz + lbᵀz_box⁻ + ubᵀz_box⁺|. A run succeeds at a level when the solver "
          "reported success and all three are below the level's tolerance (mid 1e-6, high 1e-9). Ours runs once "
          "per pass at its default settings and is judged at every level; each anchor runs at qpbenchmark's "
          "settings of each level (see the end). shm = shifted geometric mean of the median times, shift 10 s, "
          "a run not reported solved counted at the time limit. A solver's success on a problem holds only if "
          "every one of its runs succeeded; the residuals shown are the worst run's. **FALSE CLAIM**: ours "
          "called a feasible, bounded, convex problem infeasible, unbounded or nonconvex. **LOADED**: another "
          f"process used more than {OTHERS_MARGIN} core during a run: its times are not a result.", ""]
    for t in sorted({r["threads"] for r in records}):
        summ = summarize(records, t)
        L += [f"## {t} BLAS thread{'s' if t > 1 else ''}", "", "Bars on ours (issue 33):", ""]
        L += [f"- {b}" for b in bars(summ, total)]
        L += ["", f"Summary over {summ['problems']} problems (time limit {summ['time_limit']:g} s):", ""]
        body = []
        for k, row in sorted(summ["rows"].items(), key=lambda kv: (kv[0] != "ours", kv[0])):
            solved = ", ".join(f"{lv} {row['solved'][lv]}" for lv in levels if lv in row["solved"])
            rel = (f"{summ['rows']['ours']['shm'] / row['shm']:.3g}" if k != "ours" and "ours" in summ["rows"]
                   and row["shm"] > 0 else "–")
            body.append([k, solved, f"{row['shm']:.4g}", rel, str(len(row["false_claims"])),
                         "**LOADED**" if row["loaded"] else "ok"])
        L += [markdown_table(["solver", f"solved of {summ['problems']}", "shm (s)", "shm of ours / this",
                              "false claims", "load"], body), ""]
        names = [x for x in SOLVERS if any(k.split("@")[0] == x for r in records if r["threads"] == t
                                           for k in r["solvers"])]
        L += ["Per problem: ✓/✗ = success at " + ", ".join(levels) + " (ours: its one run judged at each level; an "
              "anchor: its run at each level's settings), then the median seconds:", ""]
        body = []
        for r in (r for r in records if r["threads"] == t):
            o = r["solvers"].get("ours")
            res = o["residuals"] if o else None
            cells = []
            for x in names:
                if x == "ours":
                    cells.append(_cell(o, levels))
                else:
                    cells.append(" · ".join(f"{lv} {_cell(r['solvers'].get(f'{x}@{lv}'), [lv])}" for lv in levels))
            body.append([r["problem"], str(r["n"]), f"{r['m_eq']} / {r['m_ineq']}",
                         _esc(o["status"]) if o else "–",
                         " / ".join(_e(res[k]) for k in ("primal", "dual", "gap")) if res else "–"]
                        + cells + ["**LOADED**" if any(s.get("loaded") for s in r["solvers"].values()) else "ok"])
        L += [markdown_table(["problem", "n", "eq / ineq rows", "ours status", "ours r_p / r_d / r_g"] + names
                             + ["load"], body), ""]
    L += ["## Every solver's runs", "",
          "| problem | threads | solver | settings | status | runs | seconds: median (min–max) | r_p | r_d | r_g | "
          + " | ".join(levels) + " | load |", "|" + "---|" * (11 + len(levels))]
    for r in records:
        for k, s in sorted(r["solvers"].items(), key=lambda kv: (kv[0] != "ours", kv[0])):
            res = s["residuals"]
            st = _esc(s["status"]) + (f" **FALSE CLAIM: {s['false_claim']}**" if s.get("false_claim") else "")
            L.append(f"| {r['problem']} | {r['threads']} | {s['solver']} | {s['level'] or 'default (ours)'} | {st} | "
                     f"{s['runs']} | {fmt_seconds(s['seconds'])} ({fmt_seconds(s['min'])}–{fmt_seconds(s['max'])}) | "
                     f"{_e(res['primal'])} | {_e(res['dual'])} | {_e(res['gap'])} | "
                     + " | ".join(("✓" if s["success"][lv] else "✗") if lv in s["success"] else "" for lv in levels)
                     + f" | {'**LOADED**' if s.get('loaded') else 'ok'} |")
    limit = max((float(r.get("time_limit") or TIME_LIMIT) for r in records), default=TIME_LIMIT)
    L += ["", "## Anchor settings (qpbenchmark's, through qpsolvers)", ""]
    for s in ANCHORS:
        L.append(f"- **{s}**: " + "; ".join(f"{lv}: {_esc(anchor_settings(s, lv, limit))}" for lv in levels)
                 + (" (matrices as CSC, converted outside the timer)" if s in SPARSE_ONLY else " (dense matrices)"))
    L += ["", "Time limits: OSQP as qpbenchmark sets it, Clarabel as a safety (`--time-limit`); PIQP and ProxQP have "
          "none. A run past the limit counts as not solved for every solver.", ""]
    return "\n".join(L)
