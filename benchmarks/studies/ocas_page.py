"""The page and plots of the cutting-plane study (``ocas.md``, ``ocas_<row>.png``), from its store.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchmarks.harness import (
    fmt_exp as _e, fmt_flag as _flag, fmt_loads as _loads, fmt_ratio as _r, fmt_seconds as _sec, generated_line,
)
from benchmarks.studies.ocas_gaps import BAR_T3, GAPS, gkey, gtext
from benchmarks.studies.ocas_rows import BAR, LABEL, REAL_ROWS, ROW_NAMES, TEXT_ROWS, split_key


TITLES = {
    "reuters": "reuters.trn", "adult": "adult.trn", "ijcnn1": "ijcnn1.trn",
    "dense2m": "Tall dense: two overlapping Gaussian classes", "dense200k": "Tall dense, 200,000 rows",
    "text1m": "Sparse text-like (Zipf features)", "crossover": "Crossover on sparse text: rows × C",
}


def title(key: str) -> str:
    """A row's heading: its title and C (the crossover table has its own C column)."""
    name, C = split_key(key)
    if name == "crossover":
        return TITLES[name]
    return f"{TITLES.get(name, name)} (C = {C:g})" if name in REAL_ROWS else f"{TITLES.get(name, name)}, C = {C:g}"


def plot_name(key: str) -> str:
    """``ocas_<row>.png``; a row at C ≠ 1 gets ``ocas_<row>_C<C>.png``."""
    name, C = split_key(key)
    return f"ocas_{name}.png" if C == 1.0 else f"ocas_{name}_C{C:g}.png"


def _ttg_cell(s: dict[str, Any] | None) -> str:
    if not s:
        return "–"
    if s["median"] is None or s["median"] == "inf" or (isinstance(s["median"], float) and math.isinf(s["median"])):
        return "not reached"
    if s.get("min") is not None and s.get("max") is not None and s["min"] != s["max"]:
        return f"{_sec(s['median'])} ({_sec(s['min'])}–{_sec(s['max'])})"
    return _sec(s["median"])


def _label(k: str) -> str:
    if k.startswith("svmocas"):
        return k.replace("svmocas", "svmocas", 1)
    v, t = k.split("@")
    return f"{LABEL.get(v, v)}"


def plot_row(name: str, rec: dict[str, Any], png: Path) -> bool:
    """Relative primal gap against seconds (log-y): every variant's median run, both svmocas modes,
    LIBLINEAR's ladder fits (points: fit time, gap reached)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for k, s in rec.get("results", {}).items():
        c = s.get("curve") or []
        if not c:
            continue
        t = [max(p[0], 1e-6) for p in c]
        v = [p[1] for p in c]
        style: dict[str, Any] = ({"linestyle": "--", "color": "black" if "-m 1" in k else "grey"}
                                 if k.startswith("svmocas") else {})
        lab = k if k.startswith("svmocas") else f"{_label(k)} @{s['threads']} thr"
        ax.plot(t, v, marker=".", markersize=2.5, linewidth=1.1, label=lab, **style)
    lib = rec.get("liblinear")
    if lib:
        pts = [(f["seconds"], f["rel"], f["eps"]) for f in lib["ladder"]
               if f.get("rel") is not None and isinstance(f["seconds"], (int, float)) and math.isfinite(f["seconds"])]
        if pts:
            ax.plot([p[0] for p in pts], [max(p[1], 1e-16) for p in pts], "s:", color="tab:red", markersize=4,
                    label="LIBLINEAR (one fit per eps)")
    for g in rec.get("gaps", GAPS):
        ax.axhline(g, color="red", linewidth=0.6, linestyle=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("seconds (solver time; problem building and svmocas's file loading excluded)")
    ax.set_ylabel("(F − F*) / F*")
    d = rec.get("data", {})
    ax.set_title(f"{TITLES.get(split_key(name)[0], name)} — {d.get('rows')} × {d.get('features')}, C = {d.get('C')}",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True


def _bar(b: Any) -> str:
    return "–" if b is None else ("**met**" if b else "not met")


def _ref_text(ref: dict[str, Any]) -> str:
    parts = []
    for k, c in ref.get("candidates", {}).items():
        if c.get("primal") is None:
            parts.append(f"{k}: {c.get('error')}")
        elif k == "OCAS":
            parts.append(f"our OCAS F = {c['primal']:.12g} (certified rel. duality gap {c['rel_gap']:.1e}, "
                         f"{c['status']}, {c['iterations']} iterations, {_sec(c['seconds'])} s)")
        else:
            parts.append(f"svmocas -m 1 F = {c['primal']:.12g} (its Q_P {c['reported']}, its dual bound Q_D "
                         f"{c.get('its_dual')}, {c['iterations']} iterations, {c['status']})")
    return (f"Reference (TolRel {ref['tol']:g}, untimed{', cached' if ref.get('cached') else ''}): "
            + "; ".join(parts) + f". The optimum lies within {_e(ref.get('bracket'), '.1e')} (relative) below the "
            "reference, by OCAS's dual point: gaps smaller than that are not resolved.")


def _render_row(L: list[str], key: str, rec: dict[str, Any], page_dir: Path) -> None:
    name = split_key(key)[0]
    gaps = tuple(rec.get("gaps", GAPS))
    d = rec["data"]
    ref = rec.get("reference", {})
    L.append(f"Data: {d['source']}: {d['rows']:,} × {d['features']:,}, {d['nnz']:,} non-zeros ({d['kind']}, "
             f"{d['data_mb']} MB), {d['positive']:,} positive; C = {d['C']:g}, bias {d['bias']:g}.")
    if ref:
        L.append(f"F* = {rec['f_star']:.12g} ({rec['f_star_source']}); {_ref_text(ref)} "
                 f"Problem built in {rec.get('build_s')} s (not timed).")
    if rec.get("svm_file"):
        f = rec["svm_file"]
        L.append(f"svmocas input: {f['bytes'] / 2**20:.0f} MB SVMlight file ({f['writer']}"
                 + (", reused" if f.get("reused") else f", written in {f.get('write_s')} s") + ").")
    for k, why in rec.get("unavailable", {}).items():
        L.append(f"**{k}: {why}**")
    L.append("")
    res = rec.get("results", {})
    if not res:
        return
    L.append("| solver | threads | " + " | ".join(f"to {gtext(g)} s" for g in gaps) + " | total s (min–max) | final rel. gap "
             "| status | iterations | cuts active / added | parity | runs | load / own / others | load flag |")
    L.append("|---" * (11 + len(gaps)) + "|")
    for k, s in res.items():
        th = (str(s["threads"]) + (f" (BLAS {s['blas_threads']})" if s.get("blas_threads") not in (None, s["threads"])
                                   else "")) if "threads" in s else "–"
        lab = f"`{k}`" if k.startswith("svmocas") else _label(k)
        L.append(f"| {lab} | {th} | " + " | ".join(_ttg_cell(s["ttg"].get(gkey(g))) for g in gaps)
                 + f" | {_sec(s['seconds'])} ({_sec(s['min'])}–{_sec(s['max'])}) | {_e(s.get('final_rel'), '.1e')} | "
                 f"{s.get('status')} | {s.get('iterations')} | {s.get('cuts_active')} / {s.get('cuts_added')} | "
                 f"{_e(s.get('parity'), '+.1e')} | {s['runs']} | {_loads(s['loads'])} | {_flag(s['loaded'])} |")
    lib = rec.get("liblinear")
    if lib:
        by_eps: dict[Any, list[float]] = {}
        for g in gaps:
            t = lib["ttg"].get(gkey(g))
            by_eps.setdefault(t["eps"] if t else None, []).append(g)
        for eps, gs in by_eps.items():
            if eps is None:
                L.append("| LIBLINEAR, no eps of the ladder | 1 | "
                         + " | ".join("not reached" if g in gs else "" for g in gaps) + " |" + " |" * 10)
                continue
            pe = lib["per_eps"][f"{eps:g}"]
            cells = " | ".join(_ttg_cell(lib["ttg"][gkey(g)]) if g in gs else "" for g in gaps)
            L.append(f"| LIBLINEAR, eps {eps:g} ({lib['input']['chosen']}) | 1 | {cells} | "
                     f"{_sec(pe['seconds'])} | {_e(pe['final_rel'], '.1e')} | | {pe['iterations']} | | | {pe['runs']} | "
                     f"{_loads(pe['loads'])} | {_flag(pe['loaded'])} |")
        ladder = ", ".join(f"{f['eps']:g}: {_sec(f['seconds'])} s → {_e(f.get('rel'), '.1e')}" for f in lib["ladder"])
        L.append("")
        L.append(f"LIBLINEAR input: **{lib['input']['chosen']}**"
                 + (f" (timed on {lib['input']['rows']:,} rows at eps 1e-2: dense {_sec(lib['input']['dense_s'])} s, "
                    f"CSR {_sec(lib['input']['sparse_s'])} s)" if "dense_s" in lib["input"] else "")
                 + f". Its eps ladder (fit time → relative gap): {ladder}. A fit with max_iter=1 (scikit-learn's copy "
                 f"of the data into LIBLINEAR's format plus one epoch) takes {_sec(lib.get('setup_s'))} s; the "
                 "comparisons below also use LIBLINEAR's time minus that (the conservative figure).")
    L.append("")
    cmp_ = rec.get("comparisons", {})
    vs = cmp_.get("vs_svmocas", {})
    if vs:
        L.append(f"**Ours / svmocas** (time to each gap; median / median, [range of each run against the svmocas run "
                 f"just before it]; bar ≤ {BAR['vs_svmocas']:g}×):\n")
        L.append("| ours | against | " + " | ".join(f"gap {g:g}" for g in gaps) + " |")
        L.append("|---|---|" + "---|" * len(gaps))
        for k, gs in vs.items():
            rcells: list[str] = []
            for g in gaps:
                v = gs.get(gkey(g), {})
                rng = (f" [{_r(v.get('paired_min'))}–{_r(v.get('paired_max'))}]" if v.get("paired_min") is not None
                       else "")
                if v.get("ratio") in ("inf", math.inf):
                    rcells.append(f"ours did not reach it {_bar(v.get('bar'))}")
                elif v.get("ratio") is not None:
                    rcells.append(f"{_r(v.get('ratio'))}×{rng} {_bar(v.get('bar'))}")
                elif v.get("ratio_below") is not None:
                    rcells.append(f"< {_r(v['ratio_below'])}× (svmocas did not reach it in its run) {_bar(v.get('bar'))}")
                else:
                    rcells.append("neither reached it")
            L.append(f"| {_label(k)} @{res[k]['threads']} | `{res[k].get('anchor')}` | " + " | ".join(rcells) + " |")
        L.append("")
    best = cmp_.get("best_vs_anchors", {})
    if best and any(best.values()):
        L.append("**Fastest of ours / fastest anchor** (svmocas either mode, LIBLINEAR, and LIBLINEAR minus its data "
                 f"copy)" + (f"; the bar on this row: ≤ {BAR['dense_best']:g}×" if name == "dense2m" else "") + ":\n")
        L.append("| threads | gap | fastest of ours | s | fastest anchor | s | ratio |"
                 + (" bar |" if name == "dense2m" else ""))
        L.append("|---" * (7 + (name == "dense2m")) + "|")
        for t, gs in best.items():
            for gk, v in gs.items():
                L.append(f"| {t} | {float(gk):g} | {_label(v['ours'])} | {_sec(v['ours_s'])} | {v['anchor']} | "
                         f"{_sec(v['anchor_s'])} | {_r(v['ratio'])} |" + (f" {_bar(v['bar'])} |" if name == "dense2m"
                                                                           else ""))
        L.append("")
    asv = cmp_.get("asocas_vs_ocas", {})
    if asv:
        L.append(f"**Active-set OCAS / OCAS** (bars: objective evaluation + line search ≤ {BAR['asocas_eval_search']:g}×, "
                 "total time < 1×, same final accuracy):\n")
        L.append("| threads | eval + search s (AS / OCAS) | ratio | examples touched ratio (eval + search) "
                 "| total time ratio | final rel. gap AS / OCAS | bars: eval+search / total / accuracy |")
        L.append("|---" * 7 + "|")
        for t, v in asv.items():
            es = v["eval_search_s"]
            L.append(f"| {t} | {_sec(es[0])} / {_sec(es[1])} | {_r(v['eval_search_ratio'])} | {_r(v['touched_ratio'])} | "
                     f"{_r(v['total_ratio'])} | {_e(v['final_rel'][0], '.1e')} / {_e(v['final_rel'][1], '.1e')} | "
                     f"{_bar(v['bar_eval_search'])} / {_bar(v['bar_total'])} / {_bar(v['same_accuracy'])} |")
        if all(v["eval_search_s"][0] is None for v in asv.values()):
            L.append("\n(The strategies' stats report no evaluation / line-search seconds: the examples-touched "
                     "ratio stands in for that bar.)")
        L.append("")
    t3 = cmp_.get("table3", {})
    if t3:
        _render_table3(L, name, t3, res, gaps)
    png = page_dir / plot_name(key)
    if png.is_file():
        L.append(f"![{key}]({png.name})\n")


def _num(v: Any, fmt: str) -> str:
    return "–" if v is None else format(float(v), fmt)


def _pair(a: dict[str, Any], o: dict[str, Any], f: str, fmt: str) -> str:
    return f"{_num(a.get(f), fmt)} / {_num(o.get(f), fmt)}"


def _render_table3(L: list[str], name: str, t3: dict[str, Any], res: dict[str, Any], gaps: tuple[float, ...]) -> None:
    """Xiao and Zhou's Table 3, ours: each active-set variant against OCAS at each thread count."""
    barred = name in TEXT_ROWS
    L.append("**Table 3 (Xiao and Zhou 2013): active-set OCAS against OCAS**, cumulative at the first iteration "
             "reaching each relative gap (median over the runs that reached it): T1 = objective evaluation seconds "
             "(`CutState.eval_seconds`), T2 = line-search seconds (`search_seconds`), time to the gap, iterations, "
             "rows read by every product (`rows_read`), mean |X^a| (`touched_eval`) and |X^s| (`touched_search`) "
             "per iteration; ratios AS / OCAS. "
             + (f"Bars at {gtext(BAR_T3['gap'])} (text rows): T1 ≤ {BAR_T3['eval']:g}, T2 ≤ {BAR_T3['search']:g}, "
                f"time < {BAR_T3['total']:g}." if barred else "No bar on this row (reported as it is)."))
    L.append("")
    for v, by_t in t3.items():
        for t, gs in by_t.items():
            where = f"{t} thread{'s' if t != '1' else ''}" if t.isdigit() else t
            L.append(f"*{LABEL.get(v, v)} / OCAS, {where}:*\n")
            L.append("| gap | iterations AS / OCAS | T1 s AS / OCAS | **T1 ratio** | T2 s AS / OCAS | **T2 ratio** "
                     "| time s AS / OCAS | **time ratio** | rows read AS / OCAS (ratio) | mean X^a AS / OCAS "
                     "| mean X^s AS / OCAS | runs reached AS / OCAS |" + (" bars T1 / T2 / time |" if barred else ""))
            L.append("|---" * (12 + barred) + "|")
            for g in gaps:
                d = gs.get(gkey(g))
                if d is None:
                    continue
                a, o = d.get("as") or {}, d.get("ocas") or {}
                if not a.get("reached") and not o.get("reached"):
                    L.append(f"| {gtext(g)} | not reached |" + " |" * (10 + barred))
                    continue
                rr = d.get("rows_read_ratio")
                bars = d.get("bars")
                L.append(f"| {gtext(g)} | {_pair(a, o, 'iteration', '.0f')} | {_pair(a, o, 'eval_s', '.3g')} | "
                         f"{_r(d.get('t1_ratio'))} | {_pair(a, o, 'search_s', '.3g')} | {_r(d.get('t2_ratio'))} | "
                         f"{_pair(a, o, 'seconds', '.3g')} | {_r(d.get('total_ratio'))} | "
                         f"{_pair(a, o, 'rows_read', ',.0f')} ({_r(rr)}) | {_pair(a, o, 'mean_touched_eval', ',.0f')} | "
                         f"{_pair(a, o, 'mean_touched_search', ',.0f')} | {a.get('reached', 0)}/{a.get('runs', 0)} / "
                         f"{o.get('reached', 0)}/{o.get('runs', 0)} |"
                         + (f" {_bar(bars['t1'])} / {_bar(bars['t2'])} / {_bar(bars['total'])} |" if bars else
                            (" |" if barred else "")))
            L.append("")
    if all(((d.get("as") or {}).get("rows_read") is None) for by_t in t3.values() for gs in by_t.values()
           for d in gs.values()):
        L.append("(`rows_read`: the strategies keep no such counter in this run: –.)\n")


def _render_crossover(L: list[str], rec: dict[str, Any]) -> None:
    cells = rec.get("cells", [])
    for k, why in rec.get("unavailable", {}).items():
        L.append(f"**{k}: {why}**\n")
    if not cells:
        return
    L.append("Prefixes of the generated text (`sparse_text`, the same seed: a prefix is the generator's output at "
             "that size), bias 1, time to a relative primal gap of 1e-3 (F*: the lowest of our OCAS and svmocas at TolRel "
             f"{cells[0]['reference']['tol']:g} and every run's final point; the largest certified bracket of the cells "
             f"is {_e(max((c['reference'].get('bracket') or 0.0) for c in cells), '.1e')}). Ours: OCAS at 1 thread; svmocas "
             "`-m 1 -p 1`; LIBLINEAR at the loosest eps of its ladder that reaches 1e-3. Peak memory: ours and "
             "LIBLINEAR above the data they are given (LIBLINEAR copies it into its own format), svmocas its whole "
             "RSS (it reads its own copy of the data from the file).\n")
    L.append("| rows | C | OCAS s | svmocas s | LIBLINEAR s (eps) | fastest | peak MB OCAS / svmocas / LIBLINEAR "
             "| least memory | data MB | load flag |")
    L.append("|---" * 10 + "|")
    for c in cells:
        o, s, lb = c.get("ocas", {}), c.get("svmocas", {}), c.get("liblinear", {})

        def sec(x: dict[str, Any]) -> str:
            v = x.get("seconds")
            if v is None:
                return "not reached"
            return _sec(v) + (f" ({_sec(x['min'])}–{_sec(x['max'])})" if x.get("runs", 1) > 1 and x.get("min") is not None
                              else "")

        loaded = any(x.get("loaded") for x in (o, s, lb))
        eps = f" (eps {lb['eps']:g})" if lb.get("eps") is not None else ""
        L.append(f"| {c['rows']:,} | {c['C']:g} | {sec(o)} | {sec(s) if s else '–'} | {sec(lb)}{eps} | "
                 f"**{c.get('fastest')}** | {_r(o.get('peak_mb'))} / {_r(s.get('peak_mb'))} / {_r(lb.get('peak_mb'))} | "
                 f"{c.get('least_memory')} | {c['data']['data_mb']} | {_flag(loaded)} |")
    L.append("")
    L.append(crossover_summary(cells))
    L.append("")


def crossover_summary(cells: list[dict[str, Any]]) -> str:
    """Plain words: who wins where (fastest to 1e-3 at each C, as rows grow)."""
    if not cells:
        return ""
    lines = []
    for C in sorted({c["C"] for c in cells}):
        cs = sorted([c for c in cells if c["C"] == C], key=lambda c: c["rows"])
        seq = ", ".join(f"{c['rows']:,} rows: {c.get('fastest')}" for c in cs)
        lines.append(f"- C = {C:g}: {seq}.")
    winners = {c.get("fastest") for c in cells}
    head = (f"Fastest to 1e-3 everywhere: {winners.pop()}." if len(winners) == 1 else
            "Fastest to 1e-3 by cell (where the winner changes along a line, the lines cross there):")
    return head + "\n\n" + "\n".join(lines)


def row_keys(store: dict[str, Any]) -> list[str]:
    """The store's row keys in page order: by :data:`ROW_NAMES`, each name's C ascending."""
    keys = [k for k in store if not k.startswith("_") and split_key(k)[0] in ROW_NAMES]
    return sorted(keys, key=lambda k: (ROW_NAMES.index(split_key(k)[0]), split_key(k)[1]))


def render(store: dict[str, Any], page: Path) -> None:
    """The markdown page from the whole store."""
    meta = store.get("_meta", {})
    L: list[str] = ["# Cutting planes (OCAS, active-set OCAS, BMRM) against svmocas and LIBLINEAR\n",
                    generated_line("ocas", "ocas.json", also="`docs/BENCHMARKS.md`")]
    keys = row_keys(store)
    small = [k for k in keys if store[k]["_run"]["mode"] != "full"]
    if small:
        L.append(f"> **{', '.join(small)}: {store[small[0]]['_run']['mode']}-mode results** (small subsets): they "
                 "check the plumbing, they are *not* the issue-13 figures. The full rows: "
                 "`python -m benchmarks.ocas --rows reuters,adult,ijcnn1,dense2m,text1m,crossover`.\n")
    for key in keys:
        rec = store[key]
        m = rec["_run"]
        L.append(f"## {title(key)}\n")
        L.append(f"Command: `{m['command']}` ({m['time']}); mode **{m['mode']}**; threads {m['threads']} (ours, "
                 f"BLAS via threadpoolctl); svmocas `-p` {m['ocas_threads']}; TolRel {m['tol']:g} on both sides; "
                 f"repeat {m['repeat']}; load at start {m['load_at_start'].get('load1')}.\n")
        if key == "crossover":
            _render_crossover(L, rec)
        else:
            _render_row(L, key, rec, page.parent)
    L.append("## Reading the tables\n")
    L.append(
        "- **to 1e-k s**: seconds until the relative primal gap (F − F*)/F* first reaches 1e-k: median over the runs "
        "(min–max). Ours: from a trace kept by a `qpcore.solve` callback (after each step: seconds since the "
        "solve started, F(w_b) read from the strategy's `CutState`); svmocas: its per-iteration `tim` and `Q_P` "
        "(`-v 1`; solver time since the optimization started, the file's loading excluded); LIBLINEAR: the fit time at the loosest eps of the ladder whose solution "
        "reaches the gap (judged by our problem), so each gap has its own fit. The problem building "
        "(`hinge_svm`) is not timed, like svmocas's loading.\n"
        "- **total s**: our `qpcore.solve` wall time to TolRel (its final certificate included); svmocas's "
        "`ocas_time`. **final rel. gap**: the final point judged by our problem (svmocas's model file, our w_b, "
        "LIBLINEAR's coef_ and intercept_). **parity**: (objective the solver reports − F of its point by our "
        "problem)/F: svmocas's last Q_P against its model file (Q_P is printed with 6 decimals), ours the last "
        "trace value against `prob.primal_objective(w)`.\n"
        "- **cuts**: svmocas's `nza` (active cuts at the end) / cuts added (one per iteration); ours "
        "`stats['cuts']` / `stats['cuts_added']`.\n"
        "- **ratios** = our median / svmocas's median of the time to the same gap, with the range over pairs "
        "(each of our runs against the svmocas run just before it; the runs are interleaved).\n"
        "- **load**: the highest 1-minute load average read right before a run / our own share of it / "
        "**others**: the CPU (cores) other processes used during the run (/proc/stat minus our process and its "
        "children). A run is **loaded** when others > 0.1 core: its times are suspect.\n")
    if meta.get("machine"):
        mc = meta["machine"]
        L.append("## Machine\n")
        L.append(f"{mc.get('cpu')}, {mc.get('cores')} cores; Python {mc.get('python')}, numpy {mc.get('numpy')}, "
                 f"scipy {mc.get('scipy')}, scikit-learn {mc.get('sklearn')}; BLAS "
                 f"{', '.join(str(b.get('lib')) for b in (mc.get('blas') or []))}; svmocas {meta.get('svmocas')}; "
                 f"commit {mc.get('git', {}).get('commit')}{' (dirty)' if mc.get('git', {}).get('dirty') else ''}.\n")
    page.write_text("\n".join(L))
