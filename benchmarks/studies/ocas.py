"""Cutting planes for the hinge-loss linear SVM against libocas's ``svmocas`` and LIBLINEAR (issue 13).

    python -m benchmarks.ocas --rows reuters,adult,ijcnn1          # the real data sets, C = 1, bias 1
    python -m benchmarks.ocas --rows dense2m,text1m                # the generated large rows
    python -m benchmarks.ocas --rows crossover                     # sparse text: rows × C, who wins where
    python -m benchmarks.ocas --quick                              # every row on small subsets (< 1 min)
    python -m benchmarks.ocas --rows reuters,adult,ijcnn1 --C 1,10 --variants ocas   # OCAS / svmocas at C = 1 and 10
    python -m benchmarks.ocas --rows reuters,text1m,dense200k --variants ocas,asocas,asocas-paper --gaps 1e-2,1e-3,1e-4,1e-5 --tol 1e-6
                                                                   # Table 3: active-set OCAS / OCAS, T1 and T2

Problem: min_w F(w) = ½‖w‖² + C Σ_i max(0, 1 − y_i (x_iᵀ w[:d] + bias·w[d])), bias 1 (a regularized
constant feature, as ``svmocas -b 1`` and LIBLINEAR ``-B 1`` do), built by ``qpcore_formulations.risk.hinge_svm``
outside the timed region. Every row reports the **time to relative primal gaps** (F − F*)/F* ≤ 1e-2,
1e-3, 1e-4, where F* is a tight reference (our OCAS at TolRel 1e-8, certified by the problem's own
duality gap, cached in ``benchmarks/results/ocas_reference.json``; lowered to any lower objective a
run reaches), iterations and cuts. ``--gaps`` chooses the gaps (default those of 1e-2…1e-5 down to
min(10×``--tol``, 1e-4): 1e-2…1e-4 at the default TolRel 1e-5; ``--tol 1e-6`` adds 1e-5);
``--C 1,10`` runs each row at each C, a row of its own in the store (``reuters`` at C = 1,
``reuters@C=10``), svmocas with the same ``-c``, the reference cached by data and C.

Table 3 (Xiao and Zhou 2013), for each active-set variant (``asocas``: the registry's
``ocas-active``; ``asocas-paper``: ``ActiveSetOCAS.paper()``, the paper's μ = 0.05 and 20 cuts)
against OCAS at each thread count: at the first iteration reaching each gap, the cumulative
objective evaluation seconds T1 (``CutState.eval_seconds``) and line-search seconds T2
(``CutState.search_seconds``), the time to the gap, iterations, rows read by every product
(``state.counters["rows_read"]``, read through ``Progress.counters``), and the mean |X^a|
(``CutState.touched_eval``) and |X^s| (``touched_search``) per iteration up to it, all from a
per-iteration trace kept by the solve's callback; medians over the runs, ratios AS / OCAS. Bars
at 1e-4 on the text rows (reuters, text1m): T1 ≤ 0.6, T2 ≤ 0.3, time < 1; the other rows are
reported as they are. A field the strategy does not keep shows "–".

Anchors:

- ``svmocas`` (Debian ``libocas-tools``) in a subprocess, ``-m 1`` (OCAS) and ``-m 0`` (BMRM), same C,
  ``-b 1``, ``-r`` TolRel as ours, ``-p`` threads (default 1: it is compared with ours at each of our
  thread counts; ``--ocas-threads match`` runs it at ours). Its data are our arrays written once with
  ``qpcore_formulations.data.svmlight.dump_svmlight`` (1-based) into ``--svm-dir``; its loading is excluded: times are
  its own per-iteration ``tim`` (solver time since the start of the optimization), parsed from
  ``-v 1``. Objective parity: F of its model file judged by our problem against its final Q_P.
- LIBLINEAR's hinge-loss dual coordinate descent (``sklearn.svm.LinearSVC(loss="hinge", dual=True,
  fit_intercept=True, intercept_scaling=1)``) in a forked child: an eps ladder 1e-1 … 1e-7 is run
  once (loosest first) and, for each gap, the loosest eps whose solution reaches it (judged by our
  problem) is the one timed; its fit time includes scikit-learn's copy of the data into LIBLINEAR's
  format, which is also measured (fit with ``max_iter=1``) and reported.

Protocol (the harness shared with every study, ``benchmarks/harness.py``): runs interleaved in one
process (svmocas, ours@1, svmocas, ours@2, ...; LIBLINEAR's fits in their own passes), ``--repeat``
passes (median, min–max and the range of each pair's ratio), the load read before every run and
the CPU other processes used during it (``timed``; a run is **loaded** when others > 0.1 core),
ours at each ``--threads`` BLAS thread count (threadpoolctl). Results accumulate in
``docs/benchmarks/ocas.json`` (one entry per row; re-running a row replaces it), rendered into
``docs/benchmarks/ocas.md`` with one convergence plot per row (``ocas_<row>.png``); ``--quick``
writes to ``benchmarks/results/quick/``.
"""

from __future__ import annotations

import os
import sys

# OpenBLAS sizes its pool when numpy is first imported: let it take every core (threadpoolctl then
# lowers it to each run's thread count). Only when run as a script.
if __name__ == "__main__":
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ[_var] = str(os.cpu_count() or 1)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.harness import (  # noqa: E402
    command_line,
    need_sklearn,
    RESULTS,
    add_store_arguments,
    resolve_store_arguments,
    Runs,
    Study,
    clean,
    blas_threads_under,
    fmt_exp as _e,
    fmt_seconds as _sec,
    interleave,
    log,
    machine_info,
    median,
    now_iso,
    ratio_stats,
    resolve_run_arguments,
    run_study,
    study_parser,
    timed,
)
from benchmarks.anchors.svmocas import (  # noqa: E402
    parse_svmocas,
    read_model,
    run_svmocas,
    SVMOCAS_INSTALL,
    svmocas_path,
    svmocas_version,
)
from benchmarks.anchors.liblinear import run_liblinear  # noqa: E402
from benchmarks.studies.ocas_gaps import (  # noqa: E402
    _thin,
    default_gaps,
    GAPS,
    gkey,
    parse_gaps,
    table3_compare,
    table3_points,
    table3_summary,
    time_to_gaps,
)
from benchmarks.studies.ocas_rows import (  # noqa: E402
    ANCHOR_METHOD,
    AS_VARIANTS,
    available,
    BAR,
    build_problem,
    DEFAULT_SVM_DIR,
    DEFAULT_VARIANTS,
    dense_row,
    DENSE_ROWS,
    EPS_LADDER,
    FULL,
    parse_C,
    QUICK,
    real_row,
    REAL_ROWS,
    reference,
    Row,
    ROW_NAMES,
    run_ours,
    Sizes,
    store_key,
    svm_file,
    text_row,
    TEXT_ROWS,
    text_source,
    VARIANTS,
)
from benchmarks.studies.ocas_page import plot_name, plot_row, render  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Sizes and rows
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# What is available
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# svmocas: the SVMlight file, the run, its output
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# LIBLINEAR (scikit-learn LinearSVC, hinge loss, dual coordinate descent)
# ---------------------------------------------------------------------------------------------


def choose_liblinear_input(row: Row, ctx: Runs, rows: int = 50_000) -> dict[str, Any]:
    """LIBLINEAR's input as a user would pick it: a dense row is timed as the ndarray and as CSR
    (eps 1e-2, first ``rows`` rows, best of two each); sparse rows stay CSR (densifying a text matrix
    is not an option a user has)."""
    if row.kind == "sparse":
        return {"chosen": "sparse", "why": "sparse data"}
    n = min(rows, row.X.shape[0])
    Xd = np.ascontiguousarray(row.X[:n])
    Xs = sp.csr_matrix(Xd)
    t = {"dense": math.inf, "sparse": math.inf}
    for _ in range(2):
        for kind, Xin in (("dense", Xd), ("sparse", Xs)):
            r = run_liblinear(Xin, row.y[:n], row.C, row.bias, 1e-2, ctx.anchor_timeout)
            if math.isfinite(r["seconds"]):
                t[kind] = min(t[kind], r["seconds"])
    best = min(t, key=lambda k: t[k])
    log(f"[{row.name}] LIBLINEAR input on {n} rows at eps 1e-2: dense {t['dense']:.3g} s, CSR {t['sparse']:.3g} s → {best}")
    return {"chosen": best, "rows": n, "dense_s": t["dense"], "sparse_s": t["sparse"]}


# ---------------------------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Time to gap
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# One row
# ---------------------------------------------------------------------------------------------

@dataclass
class Opts:
    """Settings of one invocation beyond the harness's :class:`~benchmarks.harness.Runs`."""

    tol: float = 1e-5
    ref_tol: float = 1e-8
    cross_ref_tol: float = 1e-6
    ref_time_limit: float = 3600.0
    ocas_threads: str = "1"               # "1" or "match"
    svm_dir: Path = DEFAULT_SVM_DIR
    ref_path: Path = RESULTS / "ocas_reference.json"
    variants: tuple[str, ...] = VARIANTS
    ladder: tuple[float, ...] = EPS_LADDER
    ocas_cache: int = 2000
    gaps: tuple[float, ...] = GAPS
    svmocas: bool = True                  # False: no svmocas runs (and none in the reference)
    extra: dict[str, Any] = field(default_factory=dict)


def _ours_fn(prob: Any, variant: str, t: int, ctx: Runs, opts: Opts, last_anchor: dict[int, dict[str, Any]], method: int) -> Callable[[], dict[str, Any]]:
    def fn() -> dict[str, Any]:
        r = run_ours(prob, variant, t, opts.tol, ctx.time_limit)
        r["anchor_pair"] = last_anchor.get(method)
        return r
    return fn


def _anchor_fn(path: str, row: Row, method: int, p: int, ctx: Runs, opts: Opts,
               last_anchor: dict[int, dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    def fn() -> dict[str, Any]:
        r = run_svmocas(path, row.X.shape[1], row.C, row.bias, method, opts.tol, p, ctx.time_limit,
                        ctx.anchor_timeout, opts.ocas_cache)
        last_anchor[method] = r
        return r
    return fn


def _judge_runs(runs: list[dict[str, Any]], prob: Any, f_star: float, *, kind: str,
                gaps: tuple[float, ...] = GAPS) -> None:
    """Our problem's F of each run's final point; the trajectory's relative gaps and time to gaps
    (ours: also Table 3's points, :func:`table3_points`)."""
    for r in runs:
        if r.get("w") is None:
            continue
        r["final_primal"] = float(prob.primal_objective(r["w"]))
        r["final_rel"] = (r["final_primal"] - f_star) / abs(f_star)
        rep = r.get("final_primal_reported")
        r["parity"] = (rep - r["final_primal"]) / abs(r["final_primal"]) if rep is not None else None
        if kind == "svmocas":
            tr = r["trajectory"]
            r["ttg"] = time_to_gaps(tr["tim"], tr["Q_P"], f_star, gaps)
            r["curve"] = _thin(tr["tim"], [max((q - f_star) / abs(f_star), 1e-16) for q in tr["Q_P"]])
        elif kind == "ours":
            tr = r["trace"]
            ts = [p["seconds"] for p in tr]
            fs = [p["primal"] for p in tr]
            r["ttg"] = time_to_gaps(ts, fs, f_star, gaps) if tr else {gkey(g): math.inf for g in gaps}
            r["table3"] = table3_points(tr, f_star, gaps)
            r["curve"] = _thin(ts, [max((f - f_star) / abs(f_star), 1e-16) for f in fs]) if tr else []


def _ttg_summary(runs: list[dict[str, Any]], gaps: tuple[float, ...] = GAPS) -> dict[str, Any]:
    """Median, min, max of each gap's time and of the total; loads; the median run's details."""
    ok = [r for r in runs if r.get("ttg")]
    out: dict[str, Any] = {"runs": len(runs), "loads": [r.get("load") for r in runs],
                           "loaded": any(r.get("load", {}).get("loaded") for r in runs)}
    secs = [r["seconds"] for r in runs]
    out["seconds"] = median(secs) if secs else None
    out["min"], out["max"] = (min(secs), max(secs)) if secs else (None, None)
    out["ttg"] = {}
    for g in gaps:
        v = [r["ttg"][gkey(g)] for r in ok]
        out["ttg"][gkey(g)] = {"median": median(v), "min": min(v), "max": max(v)} if v else None
    if any("table3" in r for r in runs):
        out["table3"] = table3_summary([r["table3"] for r in runs if "table3" in r], gaps)
    fin = [r for r in runs if math.isfinite(r.get("seconds", math.nan))] or runs
    mid = min(fin, key=lambda r: abs(r["seconds"] - out["seconds"])) if fin and out["seconds"] is not None else None
    if mid is not None:
        for k in ("status", "iterations", "cuts_active", "cuts_added", "final_primal", "final_rel", "parity", "curve",
                  "peak_mb", "blas_threads", "threads", "stats", "load_s", "command", "eps"):
            if k in mid:
                out[k] = mid[k]
    return out


def _pair_ratio(ours: list[dict[str, Any]], anchor: list[dict[str, Any]], g: float) -> dict[str, Any]:
    """ratio_stats (the harness) on the time to gap g: median / median, and each of our runs against the
    svmocas run just before it."""
    k = gkey(g)
    o = [{"seconds": r["ttg"][k], **({"anchor_before": r["anchor_pair"]["ttg"][k]}
                                     if r.get("anchor_pair") and r["anchor_pair"].get("ttg") else {})}
         for r in ours if r.get("ttg")]
    # an svmocas run that never reached the gap bounds the ratio by its whole run (ratio_below)
    a = [{"seconds": r["ttg"][k], "limit": r["seconds"]} for r in anchor if r.get("ttg")]
    if not o or not a:
        return {"ratio": None, "paired_min": None, "paired_max": None}
    if not all("anchor_before" in x for x in o):
        o = [{"seconds": x["seconds"]} for x in o]
    return ratio_stats(o, a)


def _eval_search_seconds(stats: dict[str, Any] | None) -> float | None:
    """Seconds in objective evaluation + line search, when the strategy's stats report them."""
    if not stats:
        return None
    for a, b in (("eval_seconds", "search_seconds"), ("seconds_eval", "seconds_search"),
                 ("time_eval", "time_search")):
        if a in stats and b in stats:
            return float(stats[a]) + float(stats[b])
    return None


def _liblinear_ladder(row: Row, prob: Any, Xin: Any, f_star: float, ctx: Runs, opts: Opts,
                      gaps: tuple[float, ...] = GAPS) -> dict[str, Any]:
    """Run the eps ladder (loosest first) until every gap is reached; returns each gap's eps and
    the ladder's fits (time, relative gap, iterations)."""
    chosen: dict[str, float | None] = {gkey(g): None for g in gaps}
    fits: list[dict[str, Any]] = []
    for eps in opts.ladder:
        r = timed(ctx, partial(run_liblinear, Xin, row.y, row.C, row.bias, eps, ctx.anchor_timeout))
        rec = {"eps": eps, "seconds": r["seconds"], "status": r.get("status"), "iterations": r.get("iterations"),
               "load": r.get("load")}
        if r.get("w") is not None:
            rec["rel"] = (float(prob.primal_objective(r["w"])) - f_star) / abs(f_star)
            for g in gaps:
                if chosen[gkey(g)] is None and rec["rel"] <= g:
                    chosen[gkey(g)] = eps
        fits.append(rec)
        log(f"[{row.name}] LIBLINEAR eps {eps:g}: {_sec(r['seconds'])} s, rel. gap {_e(rec.get('rel'), '.1e')}"
            f" ({r.get('status')})")
        if all(v is not None for v in chosen.values()) or not math.isfinite(r["seconds"]):
            break
    return {"chosen": chosen, "ladder": fits}


def _liblinear_setup(Xin: Any, row: Row, ctx: Runs) -> float | None:
    """Seconds of a LinearSVC fit with max_iter=1: scikit-learn's copy of the data into LIBLINEAR's
    format plus one coordinate-descent epoch (an upper bound on the copy)."""
    ts = []
    for _ in range(2):
        r = run_liblinear(Xin, row.y, row.C, row.bias, 1e-1, ctx.anchor_timeout, max_iter=1)
        if math.isfinite(r["seconds"]):
            ts.append(r["seconds"])
    return min(ts) if ts else None


def bench_row(row: Row, ctx: Runs, opts: Opts, *, liblinear: bool = True) -> dict[str, Any]:
    """Every variant of ours at every thread count, svmocas -m 1 / -m 0, LIBLINEAR; one row."""
    ok, why = available()
    desc = row.describe()
    log(f"\n[{row.name}] {desc['rows']} × {desc['features']}, nnz {desc['nnz']}, C={row.C:g}, bias {row.bias:g} "
        f"({row.source})")
    gaps = opts.gaps
    rec: dict[str, Any] = {"data": desc, "time": now_iso(), "unavailable": {} if ok else {"ours": why},
                           "gaps": list(gaps)}
    if not ok:
        return rec
    t0 = time.perf_counter()
    prob = build_problem(row)
    rec["build_s"] = round(time.perf_counter() - t0, 3)
    # svmocas's input file (written once; not timed)
    have_ocas = opts.svmocas and svmocas_path() is not None
    groups: list[tuple[str | None, dict[str, Callable[[], dict[str, Any]]]]] = []
    last_anchor: dict[int, dict[str, Any]] = {}
    if have_ocas:
        rec["svm_file"] = svm_file(row, opts.svm_dir)
        log(f"[{row.name}] svmocas input {rec['svm_file']['path']} ({rec['svm_file']['bytes'] / 2**20:.0f} MB, "
            + ("reused" if rec["svm_file"]["reused"] else f"written in {rec['svm_file']['write_s']} s") + ")")
    elif opts.svmocas:
        rec["unavailable"]["svmocas"] = f"svmocas not installed ({SVMOCAS_INSTALL})"
    ref = reference(row, prob, opts.ref_path, opts.ref_tol, opts.ref_time_limit, max(ctx.threads),
                    rec["svm_file"]["path"] if have_ocas else None, opts.ocas_cache)
    f_star = ref["primal"]
    rec["reference"] = ref
    # one interleaved group per svmocas run: with -p 1 (default) every thread count of ours shares it
    # (svmocas, ours@1, svmocas, ours@2, ...; a slow svmocas runs once a pass); with "match" one per t
    pvals = sorted({t if opts.ocas_threads == "match" else 1 for t in ctx.threads})
    for method in (1, 0):
        members = [v for v in opts.variants if ANCHOR_METHOD[v] == method]
        for p in pvals if members else []:
            g: dict[str, Callable[[], dict[str, Any]]] = {}
            if have_ocas:
                g[f"svmocas -m {method} -p {p}"] = _anchor_fn(rec["svm_file"]["path"], row, method, p, ctx, opts,
                                                              last_anchor)
            for t in ctx.threads:
                if opts.ocas_threads == "match" and t != p:
                    continue
                for v in members:
                    g[f"{v}@{t}"] = _ours_fn(prob, v, t, ctx, opts, last_anchor, method)
            groups.append((f"svmocas -m {method} -p {p}" if have_ocas else None, g))
    if any(blas_threads_under(t) not in (None, t) for t in ctx.threads):
        log(f"warning: BLAS threads in effect {[blas_threads_under(t) for t in ctx.threads]} for {ctx.threads} asked")
    runs: dict[str, list[dict[str, Any]]] = {}
    for anchor, g in groups:
        out = interleave(ctx, g, f"{row.name}", anchor=anchor)
        for k, rs in out.items():
            runs.setdefault(k, []).extend(rs)

    # LIBLINEAR: the ladder decides each gap's eps; those fits are then repeated in their own passes
    lib: dict[str, Any] = {}
    if liblinear:
        choice = choose_liblinear_input(row, ctx)
        Xin = np.ascontiguousarray(row.X) if choice["chosen"] == "dense" else (
            row.X if row.kind == "sparse" else sp.csr_matrix(row.X))
        lad = _liblinear_ladder(row, prob, Xin, f_star, ctx, opts, gaps)
        setup = _liblinear_setup(Xin, row, ctx)
        eps_set = sorted({e for e in lad["chosen"].values() if e is not None}, reverse=True)
        lfns: dict[str, Callable[[], dict[str, Any]]] = {
            f"liblinear eps={e:g}": partial(run_liblinear, Xin, row.y, row.C, row.bias, e, ctx.anchor_timeout)
            for e in eps_set}
        lruns = interleave(ctx, lfns, f"{row.name} LIBLINEAR") if lfns else {}
        lib = {"input": choice, "ladder": lad["ladder"], "chosen": lad["chosen"], "setup_s": setup, "runs": lruns}

    # judge every point by our problem; F* = min(reference, every final point)
    everything = [r for rs in runs.values() for r in rs] + [r for rs in lib.get("runs", {}).values() for r in rs]
    for r in everything:
        if r.get("w") is not None:
            r["_F"] = float(prob.primal_objective(r["w"]))
    lowest = min([f_star] + [r["_F"] for r in everything if "_F" in r])
    rec["f_star"] = lowest
    rec["f_star_source"] = ("reference" if lowest == f_star else
                            f"a run's final point ({(f_star - lowest) / abs(lowest):.1e} below the reference)")
    for k, rs in runs.items():
        _judge_runs(rs, prob, lowest, kind="svmocas" if k.startswith("svmocas") else "ours", gaps=gaps)

    res: dict[str, Any] = {}
    for k, rs in runs.items():
        s = _ttg_summary(rs, gaps)
        if not k.startswith("svmocas"):
            variant, th = k.split("@")
            s["variant"], s["threads"] = variant, int(th)
            p = int(th) if opts.ocas_threads == "match" else 1
            anchor_key = f"svmocas -m {ANCHOR_METHOD[variant]} -p {p}"
            if anchor_key in runs:
                s["anchor"] = anchor_key
                s["ratios"] = {gkey(g): _pair_ratio(rs, runs[anchor_key], g) for g in gaps}
            es = [_eval_search_seconds(r.get("stats")) for r in rs]
            s["eval_search_s"] = median([x for x in es if x is not None]) if any(x is not None for x in es) else None
            s["touched_eval"] = median([r["stats"].get("touched_eval", math.nan) for r in rs]) if rs else None
            s["touched_search"] = median([r["stats"].get("touched_search", math.nan) for r in rs]) if rs else None
        res[k] = s
    rec["results"] = res

    if lib:
        lsum: dict[str, Any] = {"input": lib["input"], "ladder": lib["ladder"], "chosen": lib["chosen"],
                                "setup_s": lib["setup_s"], "ttg": {}, "per_eps": {}}
        for k, rs in lib["runs"].items():
            e = float(k.split("=")[1])
            for r in rs:
                if "_F" in r:
                    r["final_rel"] = (r["_F"] - lowest) / abs(lowest)
            secs = [r["seconds"] for r in rs]
            lsum["per_eps"][f"{e:g}"] = {"seconds": median(secs), "min": min(secs), "max": max(secs), "runs": len(rs),
                                         "final_rel": rs[0].get("final_rel"), "iterations": rs[0].get("iterations"),
                                         "peak_mb": max((r.get("peak_mb") or 0.0) for r in rs),
                                         "loads": [r.get("load") for r in rs],
                                         "loaded": any(r.get("load", {}).get("loaded") for r in rs)}
        for gap in gaps:
            e = lib["chosen"][gkey(gap)]
            pe = lsum["per_eps"].get(f"{e:g}") if e is not None else None
            lsum["ttg"][gkey(gap)] = (None if pe is None else
                                    {"median": pe["seconds"], "min": pe["min"], "max": pe["max"], "eps": e})
        lsum["loaded"] = any(v["loaded"] for v in lsum["per_eps"].values())
        rec["liblinear"] = lsum
    rec["comparisons"] = compare(rec, ctx, opts, barred=row.name in TEXT_ROWS)
    return rec


def _med(s: dict[str, Any] | None, g: float) -> float | None:
    if not s or not s.get("ttg") or s["ttg"].get(gkey(g)) is None:
        return None
    v = s["ttg"][gkey(g)]["median"]
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def compare(rec: dict[str, Any], ctx: Runs, opts: Opts, *, barred: bool = False) -> dict[str, Any]:
    """The issue's bars: ours / svmocas per gap; best of ours / min(svmocas, LIBLINEAR); active-set
    OCAS against OCAS (evaluation + line search time, total time, final accuracy); Table 3 of each
    active-set variant against OCAS at each thread count (its bars when ``barred``: the text rows)."""
    res = rec["results"]
    lib = rec.get("liblinear")
    gaps = tuple(rec.get("gaps", GAPS))
    out: dict[str, Any] = {"vs_svmocas": {}, "best_vs_anchors": {}, "asocas_vs_ocas": {}, "table3": {}}
    for k, s in res.items():
        if k.startswith("svmocas") or "ratios" not in s:
            continue
        out["vs_svmocas"][k] = {}
        for gk, v in s["ratios"].items():
            rat = v.get("ratio") if v.get("ratio") is not None else v.get("ratio_below")
            out["vs_svmocas"][k][gk] = dict(v, bar=None if rat is None else bool(rat <= BAR["vs_svmocas"]))
    for t in ctx.threads:
        ours = {k: s for k, s in res.items() if not k.startswith("svmocas") and s.get("threads") == t}
        anchors = {k: s for k, s in res.items() if k.startswith("svmocas")}
        cmp_t: dict[str, Any] = {}
        for g in gaps:
            o = [(v, k) for k, s in ours.items() if (v := _med(s, g)) is not None]
            a = [(v, k) for k, s in anchors.items() if (v := _med(s, g)) is not None]
            if lib and lib["ttg"].get(gkey(g)):
                a.append((lib["ttg"][gkey(g)]["median"], f"LIBLINEAR eps={lib['ttg'][gkey(g)]['eps']:g}"))
                if lib.get("setup_s") is not None:   # conservative: LIBLINEAR without its data copy
                    a.append((max(lib["ttg"][gkey(g)]["median"] - lib["setup_s"], 1e-9),
                              f"LIBLINEAR eps={lib['ttg'][gkey(g)]['eps']:g} minus its copy"))
            if o and a:
                bo, ba = min(o), min(a)
                cmp_t[gkey(g)] = {"ours": bo[1], "ours_s": bo[0], "anchor": ba[1], "anchor_s": ba[0],
                                  "ratio": bo[0] / ba[0], "bar": bool(bo[0] / ba[0] <= BAR["dense_best"])}
        out["best_vs_anchors"][str(t)] = cmp_t
        oc, asc = res.get(f"ocas@{t}"), res.get(f"asocas@{t}")
        for v in AS_VARIANTS:
            av = res.get(f"{v}@{t}")
            if oc and av and oc.get("table3") and av.get("table3"):
                out["table3"].setdefault(v, {})[str(t)] = table3_compare(av["table3"], oc["table3"], gaps,
                                                                           barred=barred)
        if oc and asc:
            es_o, es_a = oc.get("eval_search_s"), asc.get("eval_search_s")
            te = [(asc.get(x), oc.get(x)) for x in ("touched_eval", "touched_search")]
            touched = [(a or 0.0) + (b or 0.0) for a, b in [(te[0][0], te[1][0]), (te[0][1], te[1][1])]]
            d: dict[str, Any] = {
                "eval_search_s": [es_a, es_o],
                "eval_search_ratio": (es_a / es_o) if es_a is not None and es_o else None,
                "touched_ratio": (touched[0] / touched[1]) if touched[1] else None,
                "total_ratio": (asc["seconds"] / oc["seconds"]) if oc.get("seconds") else None,
                "final_rel": [asc.get("final_rel"), oc.get("final_rel")],
            }
            d["bar_eval_search"] = (None if d["eval_search_ratio"] is None else
                                    bool(d["eval_search_ratio"] <= BAR["asocas_eval_search"]))
            d["bar_total"] = None if d["total_ratio"] is None else bool(d["total_ratio"] < 1.0)
            fa, fo = d["final_rel"]
            d["same_accuracy"] = (None if fa is None or fo is None else
                                  bool(max(fa, 0.0) <= max(fo, 0.0) + opts.tol))
            out["asocas_vs_ocas"][str(t)] = d
    return out


# ---------------------------------------------------------------------------------------------
# The crossover table: sparse text, rows × C
# ---------------------------------------------------------------------------------------------

def bench_crossover(X: Any, y: np.ndarray, spec: Any, sz: Sizes, ctx: Runs, opts: Opts) -> dict[str, Any]:
    """Time to 1e-3 for our OCAS (1 thread), svmocas -m 1 -p 1 and LIBLINEAR, on prefixes of the
    generated text at each C, plus peak memory: ours (above the data, which it uses in place),
    svmocas (its whole RSS: it holds its own copy of the data), LIBLINEAR (above the data: its copy in
    LIBLINEAR's format and its model)."""
    ok, why = available()
    out: dict[str, Any] = {"cells": [], "time": now_iso(), "unavailable": {} if ok else {"ours": why}}
    if not ok:
        return out
    g = 1e-3
    for n in sz.cross_rows:
        for C in sz.cross_C:
            row = text_row(X, y, spec, n, C=C, name=f"text{n}")
            prob = build_problem(row)
            last: dict[int, dict[str, Any]] = {}
            fns: dict[str, Callable[[], dict[str, Any]]] = {}
            anchor = None
            fi = svm_file(row, opts.svm_dir) if opts.svmocas and svmocas_path() else None
            if fi is not None:
                fns["svmocas -m 1 -p 1"] = _anchor_fn(fi["path"], row, 1, 1, ctx, opts, last)
                anchor = "svmocas -m 1 -p 1"
            ref = reference(row, prob, opts.ref_path, opts.cross_ref_tol, opts.ref_time_limit, max(ctx.threads),
                            fi["path"] if fi else None, opts.ocas_cache)
            f_star = ref["primal"]
            fns["ocas@1"] = _ours_fn(prob, "ocas", 1, ctx, opts, last, 1)
            runs = interleave(ctx, fns, f"crossover n={n} C={C:g}", anchor=anchor)
            lad = _liblinear_ladder(row, prob, row.X, f_star, ctx, opts, gaps=(g,))
            e = lad["chosen"][gkey(g)]
            lfns: dict[str, Callable[[], dict[str, Any]]] = (
                {f"liblinear eps={e:g}": partial(run_liblinear, row.X, row.y, C, row.bias, e, ctx.anchor_timeout)}
                if e is not None else {})
            lruns = interleave(ctx, lfns, f"crossover n={n} C={C:g} LIBLINEAR") if lfns else {}
            everything = [r for rs in runs.values() for r in rs] + [r for rs in lruns.values() for r in rs]
            lowest = min([f_star] + [float(prob.primal_objective(r["w"])) for r in everything if r.get("w") is not None])
            for k, rs in runs.items():
                _judge_runs(rs, prob, lowest, kind="svmocas" if k.startswith("svmocas") else "ours")
            cell: dict[str, Any] = {"rows": n, "C": C, "f_star": lowest, "reference": ref, "data": row.describe()}
            for k, rs in runs.items():
                s = _ttg_summary(rs)
                cell["svmocas" if k.startswith("svmocas") else "ocas"] = {
                    "seconds": _med(s, g), "min": (s["ttg"][gkey(g)] or {}).get("min"),
                    "max": (s["ttg"][gkey(g)] or {}).get("max"), "total_s": s["seconds"], "runs": s["runs"],
                    "iterations": s.get("iterations"), "peak_mb": s.get("peak_mb"), "loaded": s["loaded"],
                    "loads": s["loads"], "parity": s.get("parity"), "status": s.get("status")}
            if lruns:
                rs = next(iter(lruns.values()))
                secs = [r["seconds"] for r in rs]
                cell["liblinear"] = {"seconds": median(secs), "min": min(secs), "max": max(secs), "eps": e,
                                     "runs": len(rs), "peak_mb": max((r.get("peak_mb") or 0.0) for r in rs),
                                     "iterations": rs[0].get("iterations"), "loads": [r.get("load") for r in rs],
                                     "loaded": any(r.get("load", {}).get("loaded") for r in rs)}
            else:
                cell["liblinear"] = {"seconds": None, "eps": None, "ladder": lad["ladder"]}
            times = {k: cell[k]["seconds"] for k in ("ocas", "svmocas", "liblinear")
                     if k in cell and cell[k].get("seconds") is not None and math.isfinite(cell[k]["seconds"])}
            cell["fastest"] = min(times, key=lambda k: times[k]) if times else None
            mems = {k: cell[k].get("peak_mb") for k in ("ocas", "svmocas", "liblinear")
                    if k in cell and cell[k].get("peak_mb") is not None}
            cell["least_memory"] = min(mems, key=lambda k: mems[k]) if mems else None
            cell["ladder"] = lad["ladder"]
            out["cells"].append(cell)
            log(f"[crossover n={n} C={C:g}] to 1e-3: " + ", ".join(f"{k} {_sec(v)} s" for k, v in times.items())
                + f" → {cell['fastest']}")
    return out


# ---------------------------------------------------------------------------------------------
# Page and plots
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    p = study_parser("python -m benchmarks.ocas", __doc__, rows=ROW_NAMES, small="quick")
    p.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                   help="ours, of ocas,bmrm,asocas,asocas-paper (ActiveSetOCAS with μ 0.05 and 20 cuts); default "
                        "ocas,bmrm,asocas")
    p.add_argument("--C", default="1", help="C of the rows (not the crossover's), comma-separated (e.g. 1,10); each "
                                            "C is its own row in ocas.json (reuters@C=10 beside reuters)")
    p.add_argument("--gaps", default=None,
                   help="relative primal gaps of the tables, comma-separated (e.g. 1e-2,1e-3,1e-4,1e-5); default "
                        "those of 1e-2…1e-5 down to min(10×--tol, 1e-4)")
    p.add_argument("--no-svmocas", action="store_true",
                   help="skip svmocas (runs and reference): Table 3 alone, or rows where it is slow")
    p.add_argument("--threads", default=None, help="our BLAS thread counts (default 1,2; quick 1)")
    p.add_argument("--ocas-threads", default="1", choices=("1", "match"),
                   help="svmocas -p: 1 (default) or the thread count of the run of ours it is paired with")
    p.add_argument("--tol", type=float, default=None,
                   help="TolRel of the timed runs, ours and svmocas -r (default 1e-5; quick 1e-4)")
    p.add_argument("--ref-tol", type=float, default=None, help="TolRel of the reference solves (1e-8; quick 1e-6)")
    p.add_argument("--cross-ref-tol", type=float, default=1e-6,
                   help="TolRel of the crossover table's references (1e-6: its gap is 1e-3)")
    p.add_argument("--ref-time-limit", type=float, default=None,
                   help="time limit of a reference solve (s; default 3600, quick 3)")
    p.add_argument("--time-limit", type=float, default=None, help="each timed solve (ours, svmocas -t); default 900, quick 3")
    p.add_argument("--anchor-timeout", type=float, default=None, help="svmocas / LIBLINEAR runs are killed after (s)")
    p.add_argument("--svm-dir", type=Path, default=DEFAULT_SVM_DIR,
                   help=f"where the SVMlight files for svmocas are written and reused (default {DEFAULT_SVM_DIR})")
    p.add_argument("--ocas-cache", type=int, default=2000, help="svmocas -s, its cut buffer (its default 2000)")
    p.add_argument("--cross-rows", default=None, help="crossover row counts, comma-separated (100000,300000,1000000)")
    p.add_argument("--cross-C", default=None, help="crossover C values, comma-separated (0.1,1,10)")
    p.add_argument("--seed", type=int, default=13, help="generator seed of dense2m, text1m, crossover (13)")
    p.add_argument("--no-liblinear", action="store_true", help="skip the LIBLINEAR anchor")
    add_store_arguments(p, "ocas.json and ocas_reference.json")
    a = p.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    rows = [x for r in rows for x in ({"all": list(ROW_NAMES), "real": list(REAL_ROWS)}.get(r, [r]))]
    bad = [r for r in rows if r not in ROW_NAMES]
    if bad:
        p.error(f"unknown rows {bad}; known {', '.join(ROW_NAMES)}")
    a.rows = rows
    a.variants = tuple(v for v in a.variants.split(",") if v)
    if any(v not in VARIANTS for v in a.variants):
        p.error(f"variants: {', '.join(VARIANTS)}")
    try:
        a.C = parse_C(a.C)
        a.gaps = parse_gaps(a.gaps) if a.gaps else None
    except ValueError as e:
        p.error(str(e))
    small = a.quick
    a.threads = [int(t) for t in (a.threads or ("1" if small else "1,2")).split(",") if t]
    resolve_run_arguments(p, a, small)
    if a.time_limit is None:
        a.time_limit = 3.0 if small else 900.0
    if a.ref_time_limit is None:
        a.ref_time_limit = 3.0 if small else 3600.0
    if a.ref_tol is None:
        a.ref_tol = 1e-6 if small else 1e-8
    if a.tol is None:
        a.tol = 1e-4 if small else 1e-5
    if a.gaps is None:
        a.gaps = default_gaps(a.tol)
    if min(a.gaps) < a.tol:
        log(f"warning: gaps below TolRel {a.tol:g} may not be reached (the runs stop there)")
    if min(a.gaps) < 10 * a.ref_tol:
        log(f"warning: the reference's TolRel {a.ref_tol:g} does not resolve the gap {min(a.gaps):g} (--ref-tol)")
    if a.anchor_timeout is None:
        a.anchor_timeout = 120.0 if small else 1800.0
    resolve_store_arguments(a, small)
    return a


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    command = command_line("ocas", argv)
    if not need_sklearn("ocas", "LIBLINEAR"):
        return 2
    sz = QUICK if args.quick else FULL
    if args.cross_rows:
        sz = dataclasses.replace(sz, cross_rows=tuple(int(v) for v in args.cross_rows.split(",")))
    if args.cross_C:
        sz = dataclasses.replace(sz, cross_C=tuple(float(v) for v in args.cross_C.split(",")))
    mode = "quick" if args.quick else "full"
    ctx = Runs(time_limit=args.time_limit, anchor_timeout=args.anchor_timeout, repeat=args.repeat, long=args.long,
              threads=args.threads, pair_below=args.pair_below)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    opts = Opts(tol=args.tol, ref_tol=args.ref_tol, cross_ref_tol=args.cross_ref_tol, ref_time_limit=args.ref_time_limit,
                ocas_threads=args.ocas_threads, svm_dir=args.svm_dir, variants=args.variants, ocas_cache=args.ocas_cache,
                gaps=args.gaps, svmocas=not args.no_svmocas,
                ref_path=args.out_dir / "ocas_reference.json")
    machine = machine_info(max(args.threads))
    ok, why = available()
    log(f"{command}\n{machine['cpu']}, {machine['cores']} cores, load average {machine['loadavg']}; "
        f"ours {why or 'available'}; svmocas {svmocas_version() or 'NOT installed (' + SVMOCAS_INSTALL + ')'}")
    store_path = args.out_dir / "ocas.json"
    t0 = time.perf_counter()
    text_cache: dict[int, tuple[Any, np.ndarray, Any]] = {}

    def text(n: int) -> tuple[Any, np.ndarray, Any]:
        if n not in text_cache:
            big = max([k for k in text_cache if k >= n], default=None)
            if big is not None:
                return text_cache[big]
            text_cache.clear()          # one text matrix at a time (memory)
            t1 = time.perf_counter()
            text_cache[n] = text_source(n, args.seed)
            log(f"[text] generated {n:,} rows in {time.perf_counter() - t1:.1f} s (not timed)")
        return text_cache[n]

    current: list[str] = []

    def run_row(item: tuple[str, float], a: argparse.Namespace, runs: Runs) -> dict[str, Any]:
        name, C = item
        current[:] = [store_key(name, C)]
        run_meta = {"command": command, "time": now_iso(), "mode": mode, "threads": a.threads,
                    "ocas_threads": a.ocas_threads, "tol": a.tol, "ref_tol": a.ref_tol, "repeat": a.repeat,
                    "long": a.long, "pair_below": a.pair_below, "sizes": sz.__dict__, "seed": a.seed,
                    "time_limit": a.time_limit, "anchor_timeout": a.anchor_timeout, "C": C, "gaps": list(a.gaps),
                    "variants": list(a.variants), "svmocas": not a.no_svmocas,
                    "load_at_start": a.load_at_start, "svm_dir": str(a.svm_dir)}
        t1 = time.perf_counter()
        if name in REAL_ROWS:
            row = real_row(name, sz.real, C=C)
            rec = bench_row(row, ctx, opts, liblinear=not a.no_liblinear)
        elif name in DENSE_ROWS:
            row = dense_row(sz.dense if name == "dense2m" else sz.dense_small, C=C, seed=a.seed, name=name)
            log(f"[{name}] generated in {time.perf_counter() - t1:.1f} s (not timed)")
            rec = bench_row(row, ctx, opts, liblinear=not a.no_liblinear)
            del row
        elif name == "text1m":
            X, y, spec = text(max([sz.text] + (list(sz.cross_rows) if "crossover" in a.rows else [])))
            rec = bench_row(text_row(X, y, spec, sz.text, C=C), ctx, opts, liblinear=not a.no_liblinear)
        else:
            X, y, spec = text(max(sz.cross_rows))
            rec = bench_crossover(X, y, spec, sz, ctx, opts)
        run_meta["seconds"] = round(time.perf_counter() - t1, 1)
        rec["_run"] = run_meta
        return rec

    def page(store: dict[str, Any], a: argparse.Namespace) -> None:
        key = current[0]
        if key != "crossover":
            plot_row(key, store[key], a.docs / plot_name(key))
        render(store, a.docs / "ocas.md")
        log(f"[{key}] done in {store[key]['_run']['seconds']} s")

    # the crossover table has its own C grid: it runs once, whatever --C says
    items = [(n, C) for n in args.rows for C in ((1.0,) if n == "crossover" else args.C)]
    study = Study(run_row, page, lambda r: clean(r, drop=("x", "alpha", "result", "decision", "per_add")),
                  store=store_path, mode=mode, key=lambda it: store_key(*it),
                  meta=lambda: {"machine": machine, "updated": now_iso(), "svmocas": svmocas_version()})
    run_study(study, args, items, stamp={}, runs=ctx)
    log(f"\nwrote {store_path} and {args.docs / 'ocas.md'} ({time.perf_counter() - t0:.1f} s)")
    return 0


__all__ = ["main", "render", "parse_svmocas", "read_model", "time_to_gaps", "run_svmocas", "run_liblinear",
           "Sizes", "FULL", "QUICK"]

if __name__ == "__main__":
    sys.exit(main())
