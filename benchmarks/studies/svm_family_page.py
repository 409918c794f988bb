"""The page of the SVM-family study (``svm_family.md``), from its store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness import (
    OTHERS_MARGIN, fmt_exp as _e, fmt_flag as _flag, fmt_loads as _loads, fmt_ratio as _r, fmt_seconds as _sec,
    fmt_summary_seconds as _secs, generated_line,
)
from benchmarks.studies.svm_family_rows import BAR, BATCH_ROWS, ROW_NAMES, solver_label


TITLES = {
    "nu_svc": "ν-SVC (ν = 0.5), class-balanced adult subset, RBF γ = 0.05",
    "one_class": "One-class SVM (ν = 0.1), adult subset, RBF γ = 0.05",
    "epsilon_svr": "ε-SVR, abalone, RBF γ = 1, C = 10, ε = 0.1",
    "nu_svr": "ν-SVR, abalone, RBF γ = 1, C = 10, ν = 0.5",
    "incremental": "Incremental one-class: one learn against a LIBSVM refit",
}


def _input(rec: dict[str, Any]) -> str:
    return str(rec["problems"][0]["anchor_input"] if "problems" in rec else rec.get("anchor_input"))


def _anchor_note(m: dict[str, Any]) -> str:
    c = m.get("anchor_check")
    if not c or "dense_s" not in c:
        return " (as asked)"
    return f" (the faster on {c['problem']} at tol 1e-3: dense {_sec(c['dense_s'])} s, sparse {_sec(c['sparse_s'])} s)"


def _n(v: Any) -> str:
    return "–" if v is None else str(v)


def _ratio_cell(s: dict[str, Any]) -> str:
    rat = _r(s.get("ratio")) if s.get("ratio") is not None else (
        f"< {_r(s.get('ratio_below'))}" if s.get("ratio_below") is not None else "–")
    if s.get("status") == "time_limit" and s.get("ratio") is not None:
        rat = f"> {rat}"          # ours was stopped: the ratio is a lower bound
    rng = f" [{_r(s.get('paired_min'))}–{_r(s.get('paired_max'))}]" if s.get("paired_min") is not None else ""
    return rat + rng


def render(store: dict[str, Any], page: Path) -> None:
    """The markdown page from the whole store."""
    meta = store.get("_meta", {})
    L: list[str] = ["# The SVM family against LIBSVM\n",
                    generated_line("svm_family", "svm_family.json")]
    small = [n for n in ROW_NAMES if n in store and store[n]["_run"]["mode"] != "full"]
    if small:
        L.append(f"> **{', '.join(small)}: {store[small[0]]['_run']['mode']}-mode results** (tiny subsets): they "
                 "check the plumbing, they are *not* the issue-25 figures. The full run: "
                 "`python -m benchmarks.svm_family` (a full run drops the quick rows from the page).\n")
    _render_summary(L, store)
    for name in ROW_NAMES:
        rec = store.get(name)
        if not rec:
            continue
        m = rec["_run"]
        L.append(f"## {TITLES[name]}\n")
        L.append(f"Command: `{m['command']}` ({m['time']}); mode **{m['mode']}**; data {m['data']}; threads "
                 f"{m['threads']}; cache {m['cache_mb']} MB both sides; our cache dtype {m['dtype']}; repeat "
                 f"{m['repeat']} (a first run over {m['long']:g} s is not repeated); LIBSVM input "
                 f"**{_input(rec)}**{_anchor_note(m)}.\n")
        if name == "incremental":
            _render_incremental(L, rec)
        else:
            _render_batch(L, rec)
    L.append("## Reading the tables\n")
    L.append(
        "- **ratio** = our median wall time / LIBSVM's median (< 1: we are faster); in brackets the range of "
        "the ratios of each of our runs to the anchor run just before it. Seconds are a detail.\n"
        "- **best**: at each thread count the fastest of ours among those at rel_obj ≤ "
        f"{BAR['rel_obj']:g} (of all when none is); **bar** (issue 25): best ≤ {BAR['ratio']}× LIBSVM's time at "
        f"rel_obj ≤ {BAR['rel_obj']:g}.\n"
        "- **rel_obj** = (f − f_ref)/|f_ref|, f the objective of the median run's point judged by our float64 "
        "problem (LIBSVM's α mapped to our variables as the module docstring says); f_ref the lowest of every "
        "run's and an untimed tight solve's. **KKT gap**: `qpcore.kkt`'s gap of that point.\n"
        "- **load**: highest 1-minute load / our share / others' CPU during the run (cores); a run is "
        f"**loaded** when others > {OTHERS_MARGIN} core.\n")
    if meta.get("machine"):
        mc = meta["machine"]
        L.append("## Machine\n")
        L.append(f"{mc.get('cpu')}, {mc.get('cores')} cores; Python {mc.get('python')}, numpy {mc.get('numpy')}, "
                 f"scipy {mc.get('scipy')}, scikit-learn {mc.get('sklearn')}; commit "
                 f"{mc.get('git', {}).get('commit')}{' (dirty)' if mc.get('git', {}).get('dirty') else ''}.\n")
    page.write_text("\n".join(L))


def _render_summary(L: list[str], store: dict[str, Any]) -> None:
    """The closing note's figures up front: every best ratio against the bar, and the learn speed-up."""
    lines = []
    for name in BATCH_ROWS:
        rec = store.get(name)
        for p in (rec or {}).get("problems", []):
            for k, s in p["results"].items():
                if s["solver"] == "best":
                    lines.append(f"| {TITLES[name].split(',')[0]} | {p['tol']:g} | {s['threads']} | "
                                 f"{solver_label(s['best_of'])} | {_ratio_cell(s)} | {_e(s['rel_obj'])} | "
                                 f"{_flag(s['loaded'] or p['results']['libsvm']['loaded'])} | "
                                 f"{'**met**' if s['bar'] else 'not met'} |")
    inc = store.get("incremental")
    if not lines and not inc:
        return
    L.append("## Summary: the bar\n")
    if lines:
        L.append("| formulation | tol | threads | best is | ratio ours / LIBSVM | rel_obj | load flag | bar |")
        L.append("|---|---|---|---|---|---|---|---|")
        L.extend(lines)
        L.append("")
    if inc:
        if "learn" in inc:
            for t, s in inc["learn"].items():
                L.append(f"- incremental one-class, {t} thread(s): one learn {_r(s['speedup'])}× faster than a "
                         f"LIBSVM refit (bar ≥ {BAR['incremental']:g}×: {'**met**' if s['bar'] else 'not met'}).")
        else:
            L.append(f"- incremental one-class: skipped, {inc['unavailable'].get('incremental')}.")
        L.append("")


def _render_batch(L: list[str], rec: dict[str, Any]) -> None:
    L.append("| tol | solver | threads | ratio [per pass] | runs | ours s (min–max) | LIBSVM s (min–max) | rel_obj ours "
             "| rel_obj LIBSVM | KKT gap ours / LIBSVM | status | n_SV | load / own / others | load flag | bar |")
    L.append("|---" * 15 + "|")
    for p in rec["problems"]:
        res = p["results"]
        a = res["libsvm"]
        for k, s in res.items():
            if k == "libsvm":
                continue
            th = str(s["threads"]) + (f" (BLAS {s['blas_threads']})" if s.get("blas_threads") not in (None, s["threads"])
                                      else "")
            who = solver_label(s["solver"]) + (f" ({solver_label(s['best_of'])})" if s["solver"] == "best" else "")
            bar = ("**met**" if s["bar"] else "not met") if "bar" in s else ""
            L.append(f"| {p['tol']:g} | {who} | {th} | {_ratio_cell(s)} | {s['runs']} / {a['runs']} | {_secs(s)} | "
                     f"{_secs(a)} | {_e(s['rel_obj'])} | {_e(a['rel_obj'])} | "
                     f"{_e(s['kkt_gap'], '.1e')} / {_e(a['kkt_gap'], '.1e')} | {s['status']} | "
                     f"{_n(s['n_sv'])} / {_n(a['n_sv'])} | {_loads(s['loads'] + a['loads'])} | "
                     f"{_flag(s['loaded'] or a['loaded'])} | {bar} |")
        for solver, why in p.get("unavailable", {}).items():
            L.append(f"| {p['tol']:g} | {solver_label(solver)} | – | does not apply: {why} |" + " |" * 11)
    L.append("")
    p0 = rec["problems"][0]
    by = "; ".join(f"tol {p['tol']:g}: {p.get('ref_by')}" for p in rec["problems"])
    L.append(f"Problem: {p0['spec']['key']}. f_ref: {p0['ref_source']} (the lowest came from — {by}). "
             "runs: ours / LIBSVM; n_SV: ours / LIBSVM (points with a nonzero coefficient).\n")


def _render_incremental(L: list[str], rec: dict[str, Any]) -> None:
    lib = rec["libsvm_refit"]
    L.append(f"One-class model of {rec['base']} rows ({rec['spec']['key']}); each timed `learn` adds one of "
             f"{rec['sample']} new rows to it (then unlearned, untimed). LIBSVM refits `OneClassSVM` on the "
             f"{lib['rows']} rows at tol {lib['tol']:g}.\n")
    L.append("| method | threads | median s (min–max) | runs | speed-up (LIBSVM / learn) | load / own / others "
             "| load flag | bar |")
    L.append("|---|---|---|---|---|---|---|---|")
    L.append(f"| LIBSVM refit | 1 | {_secs(lib)} | {lib['runs']} | | {_loads(lib['loads'])} | {_flag(lib['loaded'])} | |")
    if "learn" in rec:
        for t, s in rec["learn"].items():
            L.append(f"| learn | {t} | {_secs(s)} | {s['runs']} | {_r(s['speedup'])}× | {_loads(s['loads'])} | "
                     f"{_flag(s['loaded'])} | {'**met**' if s['bar'] else 'not met'} (≥ {BAR['incremental']:g}×) |")
        c = rec.get("check", {})
        if "error" in c:
            L.append(f"\nCheck after one more learn: failed ({c['error']}).")
        else:
            L.append(f"\nCheck after one more learn: the model's objective against {c.get('batch')} on the same "
                     f"rows: rel. diff {_e(c.get('rel_diff'))}.")
    else:
        L.append(f"| learn | – | {rec['unavailable'].get('incremental')} | | | | | |")
    L.append("\n")
