"""The page of the INCAS study (``incas.md``), from its store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.harness import (
    OTHERS_MARGIN, fmt_exp as _e, fmt_flag as _flag, fmt_loads as _loads, fmt_ratio as _r, fmt_seconds as _sec,
    fmt_summary_seconds as _secs, generated_line,
)
from benchmarks.studies.incas_rows import BAR, REF_TOL, ROW_NAMES, solver_label


def _n(v: Any) -> str:
    return "–" if v is None else str(v)


def render(store: dict[str, Any], page: Path) -> None:
    """The markdown page from the whole store."""
    meta = store.get("_meta", {})
    L: list[str] = []
    L.append("# INCAS and the incremental SVM against LIBSVM\n")
    L.append(generated_line("incas", "incas.json", also="`docs/BENCHMARKS.md`"))
    small = [n for n in ROW_NAMES if n in store and store[n]["_run"]["mode"] != "full"]
    if small:
        L.append(f"> **{', '.join(small)}: {store[small[0]]['_run']['mode']}-mode results** (subsets of a few hundred "
                 "rows, our solves stopped after 1 s): they check the plumbing, they are *not* the issue-12 figures. "
                 "The full rows: `python -m benchmarks.incas --rows hard_small,hard_large`, `--rows weak`, "
                 "`--rows incremental,loo,window` (a full run drops the quick rows from the page).\n")
    for name in ROW_NAMES:
        rec = store.get(name)
        if not rec:
            continue
        m = rec["_run"]
        mode = m["mode"]
        L.append(f"## {TITLES[name]}\n")
        L.append(f"Command: `{m['command']}` ({m['time']}); mode **{mode}**"
                 + (" — small sizes, a plumbing check, not the issue's rows" if mode != "full" else "")
                 + f"; data {m['data']} (seed {m['seed']}: rows `default_rng({m['seed']}).permutation(n)[:k]`); "
                 f"threads {m['threads']}; cache {m['cache_mb']} MB both sides; our cache dtype {m['dtype']}; "
                 f"repeat {m['repeat']} (a first run over {m['long']:g} s is not repeated); anchor input "
                 f"**{m['anchor_input']}**{_anchor_note(m)}.\n")
        if name in ("hard_small", "hard_large", "weak"):
            _render_batch(L, name, rec)
        elif name == "incremental":
            _render_incremental(L, rec)
        elif name == "loo":
            _render_loo(L, rec)
        elif name == "window":
            _render_window(L, rec)
    L.append("## Reading the tables\n")
    L.append(
        "- **ratio** = our median wall time / LIBSVM's median (< 1: we are faster), the claim of each row; "
        "in brackets the range of the ratios of each of our runs to the anchor run just before it "
        "(anchor, ours, anchor, ours, ...; an anchor slower than `--pair-below` runs once per pass). "
        "Seconds are a detail. An anchor stopped at the time limit gives a ratio bound \"< x\".\n"
        "- **rel_obj** = (f − f_ref)/|f_ref|, f = ½αᵀQα − eᵀα of the median run judged by our float64 problem "
        "(LIBSVM's α = |dual_coef_| at support_); f_ref = the lowest of every run's objective and an untimed "
        "tight solve (stated per table). **KKT gap**: `qpcore.kkt`'s maximal-violating-pair gap of that point.\n"
        "- **load**: the highest 1-minute load average read right before a run / the estimated share of our own "
        "process in it (its CPU time, anchor children included, averaged like the kernel's load, τ = 60 s) / "
        "**others**: the CPU (in cores) that other processes used *during* the run, measured as the machine's busy "
        "time (/proc/stat) minus our own (this process and its reaped LIBSVM child). "
        f"A run is **loaded** when others > {OTHERS_MARGIN} of a core (after three 10 ms clock ticks of "
        "quantization), and its times are suspect. (The load "
        "average alone cannot decide it here: it lags by a minute and idles at 0.3–0.5 on this VM with nothing "
        "running; it is recorded as asked.)\n"
        "- Our solvers get the CSR matrix (`csvc` densifies it for row blocks and keeps the sparse copy for single "
        "rows); LIBSVM gets the input shown, its faster one.\n"
        "- Our time covers building `csvc(...)` (kernel-row cache of the stated budget) and `qpcore.solve` with "
        "its final certificate; LIBSVM's covers `SVC.fit` (in a forked child, so that it can be stopped). "
        "LIBSVM is single-threaded; ours runs at each BLAS thread count (threadpoolctl).\n")
    if meta.get("machine"):
        mc = meta["machine"]
        L.append("## Machine\n")
        L.append(f"{mc.get('cpu')}, {mc.get('cores')} cores; Python {mc.get('python')}, numpy {mc.get('numpy')}, "
                 f"scipy {mc.get('scipy')}, scikit-learn {mc.get('sklearn')}; BLAS "
                 f"{', '.join(str(b.get('lib')) for b in (mc.get('blas') or []))}; commit {mc.get('git', {}).get('commit')}"
                 f"{' (dirty)' if mc.get('git', {}).get('dirty') else ''}; load average at start {mc.get('loadavg')}.\n")
    page.write_text("\n".join(L))


TITLES = {
    "hard_small": "1a. INCAS hard regime, adult subset, C = 100",
    "hard_large": "1b. INCAS hard regime, larger adult subset, C = 100",
    "weak": "2. INCAS weak regime: many free support vectors, C = 1",
    "incremental": "3. Incremental: one example added to a solved model",
    "loo": "4. Exact leave-one-out against LIBSVM brute force",
    "window": "5. Sliding window",
}


def _anchor_note(m: dict[str, Any]) -> str:
    c = m.get("anchor_check")
    if not c:
        return ""
    return (f" (checked once on {c['problem']}: dense {_sec(c['dense_s'])} s, sparse {_sec(c['sparse_s'])} s)")


def _render_batch(L: list[str], name: str, rec: dict[str, Any]) -> None:
    bar = name.startswith("hard")
    L.append("| problem | solver | threads | ratio [per pass] | runs | ours s (min–max) | LIBSVM s (min–max) "
             "| rel_obj ours | rel_obj LIBSVM | KKT gap ours / LIBSVM | status | n_SV | load / own | load flag |"
             + (" bar |" if bar else ""))
    L.append("|---" * (14 + bar) + "|")
    for p in rec["problems"]:
        res = p["results"]
        a = res["libsvm"]
        a_s = _secs(a)
        for k, s in res.items():
            if k == "libsvm":
                continue
            rat = _r(s.get("ratio")) if s.get("ratio") is not None else (
                f"< {_r(s.get('ratio_below'))}" if s.get("ratio_below") is not None else "–")
            if s.get("status") == "time_limit" and s.get("ratio") is not None:
                rat = f"> {rat}"          # ours was stopped: the ratio is a lower bound
            rng = f" [{_r(s.get('paired_min'))}–{_r(s.get('paired_max'))}]" if s.get("paired_min") is not None else ""
            loaded = s["loaded"] or a["loaded"]
            th = str(s["threads"]) + (f" (BLAS {s['blas_threads']})" if s.get("blas_threads") not in (None, s["threads"])
                                      else "")
            row = (f"| {p['spec']['key']} | {solver_label(s['solver'])} | {th} | {rat}{rng} | "
                   f"{s['runs']} / {a['runs']} | {_secs(s)} | {a_s} | "
                   f"{_e(s['rel_obj'])} | {_e(a['rel_obj'])} | {_e(s['kkt_gap'], '.1e')} / {_e(a['kkt_gap'], '.1e')} | "
                   f"{s['status']} | "
                   f"{_n(s['n_sv'])} / {_n(a['n_sv'])} | {_loads(s['loads'] + a['loads'])} | {_flag(loaded)} |")
            if bar:
                vs = f" ({_r(s['vs_svmlight'])}× SVMlight)" if s.get("vs_svmlight") is not None else ""
                row += (" – |" if s.get("bar") is None else (" **met**" if s["bar"] else " not met") + vs + " |")
            L.append(row)
        for solver, why in p.get("unavailable", {}).items():
            L.append(f"| {p['spec']['key']} | {solver_label(solver)} | – | {why} |" + " |" * (10 + bar))
    L.append("")
    refs = sorted({p["ref_source"] for p in rec["problems"]})
    by = "; ".join(f"{p['spec']['key']}: {p.get('ref_by')}" for p in rec["problems"])
    L.append(f"f_ref: {'; '.join(refs)} (the lowest came from — {by}). Tolerance "
             f"{rec['problems'][0]['spec']['tol']:g} on both sides. runs: ours / LIBSVM.")
    if bar:
        L.append(f" Bar (issue 12): INCAS ≤ {BAR['hard']}× LIBSVM's time at rel_obj ≤ {BAR['hard_rel_obj']:g}; "
                 "issue 26 adds: below SVMlight (INCAS's median / SVMlight's, in brackets).")
        if any("svmlight@1" in p["results"] for p in rec["problems"]):
            L.append(" SVMlight V6.02: `svm_learn` (HIDEO, default q = 10) as a subprocess, -e tol/2 (its -e bounds "
                     "each example's KKT violation for its own b, so LIBSVM's m(α) − M(α) ≤ 2·e), -m the cache "
                     "above; its time is the subprocess's wall time (reading the data file, optimizing, writing "
                     "its model and α files); its α (the -a file) judged like LIBSVM's. `status` finished: at -v 0 "
                     "it reports none (docs/benchmarks/svmlight.md).")
    L.append("\n")


def _render_incremental(L: list[str], rec: dict[str, Any]) -> None:
    lib = rec["libsvm_retrain"]
    L.append(f"{rec['base']}-row model ({rec['spec']['key']}), {rec['additions']} additions. Retrains are timed "
             f"for {len(rec['sample'])} of them (additions {rec['sample']}): LIBSVM at tol 1e-3 on the grown set "
             "(cold, as a LIBSVM user retrains), and our decomposition (q = 512, tol 1e-6) resumed from the "
             "previous model (`qpcore.solve(grown_qp, Decomposition(...), resume=previous_result)`, the new α at 0; "
             "a fresh `csvc` and cache) and INCAS resumed from its previous result (`resume=`, its factor kept). "
             "learn() is timed for every addition; its median is the figure. "
             "Each further stream starts from the base model after its additions were unlearned (untimed).\n")
    L.append("| method | threads | median s per addition (min–max over runs) | runs | speed-up vs it "
             "(its time / learn's) | load / own | load flag | bar |")
    L.append("|---|---|---|---|---|---|---|---|")
    L.append(f"| LIBSVM retrain, tol 1e-3 | 1 | {_sec(lib['seconds'])} ({_sec(lib['min'])}–{_sec(lib['max'])}) | "
             f"{lib['runs']} | | {_loads(lib['loads'])} | {_flag(lib['loaded'])} | |")
    for name, key in (("warm decomposition", "warm_decomposition"), ("INCAS resumed", "incas_resume")):
        for t, w in rec.get(key, {}).items():
            L.append(f"| {name}, tol 1e-6 ({', '.join(w['statuses'])}) | {t} | {_sec(w['seconds'])} "
                     f"({_sec(w['min'])}–{_sec(w['max'])}) | {w['runs']} | | {_loads(w['loads'])} | "
                     f"{_flag(w['loaded'])} | |")
    if "learn" in rec:
        for t, s in rec["learn"].items():
            L.append(f"| IncrementalSVM.learn | {t} | {_sec(s['per_add_median'])} ({_sec(s['min'])}–{_sec(s['max'])}) | "
                     f"{s['streams']} × {rec['additions']} | LIBSVM {_r(s['ratio_libsvm'])}×, warm decomposition "
                     f"{_r(s['ratio_warm_decomposition'])}×"
                     + (f", INCAS resumed {_r(s['ratio_incas_resume'])}×" if "ratio_incas_resume" in s else "")
                     + f" | {_loads(s['loads'])} | {_flag(s['loaded'])} | "
                     f"{'**met**' if s['bar'] else 'not met'} (≥ {BAR['incremental']:g}× LIBSVM) |")
        c = rec["check"]
        L.append(f"\nCheck after the last addition: the incremental model's objective vs {c['batch']}: rel. diff "
                 f"{_e(c['rel_diff'])}, KKT gap of the incremental α {_e(c['kkt_gap_incremental'], '.1e')}.")
    else:
        L.append(f"| IncrementalSVM.learn | – | {rec['unavailable'].get('incremental')} | | | | | |")
    L.append("\n")


def _render_loo(L: list[str], rec: dict[str, Any]) -> None:
    b = rec["brute_force"]
    L.append(f"{rec['spec']['key']}. Brute force as a LIBSVM user does it: one fit (tol 1e-3), the full model "
             f"predicts the non-SVs (LOO-correct), each of the {b.get('refits')} SVs is predicted by a refit "
             "without it. Ours: `IncrementalSVM.fit` + `leave_one_out()` (exact), timed together.\n")
    L.append("| method | threads | speed-up (brute / ours) [per pass] | runs | seconds (min–max) | LOO errors "
             "| same count | points judged differently | load / own | load flag | bar |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    L.append(f"| LIBSVM brute force | 1 | | {b['runs']} | {_sec(b['seconds'])} ({_sec(b['min'])}–{_sec(b['max'])}) | "
             f"{b.get('errors')} | | | {_loads(b['loads'])} | {_flag(b['loaded'])} | |")
    if "ours" in rec:
        for t, s in rec["ours"].items():
            pr = ""
            if s.get("paired_min"):
                pr = f" [{_r(1 / s['paired_max'])}–{_r(1 / s['paired_min'])}]"
            L.append(f"| exact LOO | {t} | {_r(s.get('speedup'))}×{pr} | {s['runs']} | {_sec(s['seconds'])} "
                     f"({_sec(s['min'])}–{_sec(s['max'])}; LOO alone {_sec(s.get('loo_only_seconds'))}) | {s['errors']} | "
                     f"{'yes' if s['errors'] == b.get('errors') else '**no**'} | {_n(s.get('disagree'))} | "
                     f"{_loads(s['loads'])} | "
                     f"{_flag(s['loaded'])} | {'**met**' if s['bar'] else 'not met'} (≥ {BAR['loo']:g}×, same count) |")
    else:
        L.append(f"| exact LOO | – | {rec['unavailable'].get('incremental')} | | | | | | | | |")
    L.append("\n")


def _render_window(L: list[str], rec: dict[str, Any]) -> None:
    sp_ = rec["spec"]
    lib = rec["libsvm"]
    L.append(f"Window of {sp_['n']} rows slid over {sp_['total']} {rec['_run']['data']} rows (RBF γ={sp_['gamma']:g}, C={sp_['C']:g}): "
             "each step (`IncrementalSVM.window`) predicts the next row (its online error count), learns it and "
             "unlearns the oldest; all of it is timed. Every "
             f"{sp_['check']}th model is checked against a batch solve (our decomposition at tol {REF_TOL:g}, "
             "untimed: the clock stops). The anchor retrains LIBSVM (tol 1e-3) on each checked window: one new row "
             "per fit.\n")
    L.append("| method | threads | rows/s (min–max) | runs | ratio (ours rows/s / LIBSVM's) | max abs rel. objective "
             "diff at checks | load / own | load flag |")
    L.append("|---|---|---|---|---|---|---|---|")
    L.append(f"| LIBSVM retrain per row | 1 | {_r(lib['rows_per_s'])} | {lib['runs']} × {lib['fits']} fits | | | "
             f"{_loads(lib['loads'])} | {_flag(lib['loaded'])} |")
    if "ours" in rec:
        for t, s in rec["ours"].items():
            L.append(f"| IncrementalSVM window | {t} | {_r(s['rows_per_s'])} ({_r(s['min'])}–{_r(s['max'])}) | "
                     f"{s['runs']} | {_r(s['ratio_libsvm'])} | {_e(s['max_abs_rel_diff'], '.1e')} | "
                     f"{_loads(s['loads'])} | {_flag(s['loaded'])} |")
    else:
        L.append(f"| IncrementalSVM window | – | {rec['unavailable'].get('incremental')} | | | | | |")
    L.append("\n")
