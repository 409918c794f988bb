"""INCAS and the incremental SVM against LIBSVM (issue 12): batch, incremental, exact LOO, sliding window.

    python -m benchmarks.incas --rows hard_small,hard_large        # INCAS hard regime (C = 100)
    python -m benchmarks.incas --rows weak                         # many free SVs
    python -m benchmarks.incas --rows incremental,loo,window       # the incremental SVM
    python -m benchmarks.incas --quick                             # every row on small subsets (< 1 min)

SVMlight V6.02 (issue 26; build it once with ``bash benchmarks/anchors/setup_svmlight.sh``) runs beside LIBSVM
in the hard rows (RBF problems; ``--svmlight all`` adds the linear ones, ``off`` none): one run per
pass, its ratio to LIBSVM like ours, its α judged like LIBSVM's (:mod:`benchmarks.anchor_svmlight`:
the subprocess's wall time, ``-e tol/2``). Without the binary the table says so and the row goes on.

Protocol (docs/BENCHMARKS.md, section "INCAS and the incremental SVM"):

- the anchor (LIBSVM through ``sklearn.svm.SVC``) and each of our solvers run **interleaved on the
  same arrays in one process** (anchor, ours@1 thread, anchor, ours@2 threads, ...; an anchor slower
  than ``--pair-below`` s runs once per pass instead); the anchor's
  ``fit`` runs in a forked child so that a run longer than ``--anchor-timeout`` (600 s) is killed
  and reported "> 600 s" while the benchmark goes on;
- ``--repeat`` runs of each (default 3), median and spread (min–max) reported; a solver whose first
  run takes longer than ``--long`` s (default 300) is not repeated, and the table says so (runs = 1);
- ``os.getloadavg()`` is read right before every timed run, together with an estimate of what our
  own process (and its anchor children) contributes to it; a run is flagged **loaded** when the
  1-minute load exceeds 0.3 + that contribution (see :class:`LoadMeter`);
- ours at each of ``--threads`` BLAS thread counts (threadpoolctl); LIBSVM is single-threaded;
- the claim is a ratio (ours / anchor, and the range of the per-pass ratios); absolute seconds
  appear only as detail;
- every point is judged by *our* float64 problem: dual objective f = ½αᵀQα − eᵀα and the KKT gap of
  ``qpcore.kkt`` (LIBSVM's α is |dual_coef_| placed at support_); rel_obj = (f − f_ref)/|f_ref| with
  f_ref the lowest of every run's objective and an untimed tight solve (INCAS at tol 1e-9 when
  available, else our decomposition at 1e-9).

Results accumulate in a JSON store (one entry per row; re-running a row replaces its entry) and the
markdown page is rendered from all of it: ``docs/benchmarks/incas.{json,md}`` (``--quick``:
``benchmarks/results/quick/``).
"""

from __future__ import annotations

import sys

from benchmarks.harness import pin_blas_threads, thread_list_from_argv


# OpenBLAS sizes its pool when numpy is first imported: make it as large as the largest thread
# count asked for (threadpoolctl can lower it per run, never raise it). Only when run as a script.
if __name__ == "__main__":
    pin_blas_threads(max(thread_list_from_argv(sys.argv[1:]) or [2]))

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from functools import partial  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.anchors.libsvm import faster_input  # noqa: E402
from benchmarks.harness import (  # noqa: E402
    command_line,
    need_sklearn,
    OTHERS_MARGIN,
    add_store_arguments,
    resolve_store_arguments,
    LoadMeter,
    Runs,
    blas_threads_under,
    clean,
    in_child,
    interleave,
    log,
    machine_info,
    now_iso,
    ratio_stats,
    Study,
    resolve_run_arguments,
    run_study,
    study_parser,
    summarize_runs,
)
from benchmarks.studies.incas_rows import (  # noqa: E402
    arrays,
    available,
    BAR,
    batch_specs,
    Ctx,
    eval_qp,
    FULL,
    judge,
    load_source,
    QUICK,
    REF_TOL,
    ROW_NAMES,
    run_anchor,
    run_ours,
    run_svmlight,
    SEED,
    Sizes,
    solver_label,
    Source,
    Spec,
    TINY,
    wants_svmlight,
)
from benchmarks.studies.incas_incremental import bench_incremental, bench_loo, bench_window  # noqa: E402
from benchmarks.studies.incas_page import render  # noqa: E402
from benchmarks.harness import fmt_seconds as _sec  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Sizes and problems
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Load average, threads, child processes
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# Our strategies and the classes being written (imported lazily)
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Batch rows: hard regime, weak regime
# ---------------------------------------------------------------------------------------------

def choose_anchor_input(src: Source, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """Time LIBSVM on the CSR and on the dense array of ``spec`` (dense, sparse, dense, sparse; the
    faster of two runs each); the faster input is used for everything, on both sides."""
    Xs, Xd, y = src.take(spec.n)
    t, best = faster_input(lambda kind: run_anchor(arrays(Xs, Xd, kind), y, spec, ctx))
    log(f"[anchor input] {spec.key}: dense {_sec(t['dense'])} s, sparse {_sec(t['sparse'])} s → {best}")
    return {"problem": spec.key, "dense_s": t["dense"], "sparse_s": t["sparse"], "chosen": best}


def reference_solve(X: Any, y: np.ndarray, spec: Spec, ctx: Ctx) -> tuple[str, np.ndarray | None]:
    """The untimed tight solve: INCAS at REF_TOL when available, else decomposition q=512."""
    c2 = ctx
    failed = ""
    for solver in (["incas"] if available("incas")[0] else []) + ["decomp:512"]:
        try:
            r = run_ours(X, y, spec, solver, max(ctx.threads), c2, tol=REF_TOL)
        except Exception as e:  # noqa: BLE001 - a failed reference is reported, not fatal
            log(f"[reference] {solver} at tol {REF_TOL:g} failed: {e}")
            failed += f"{solver_label(solver)} at tol {REF_TOL:g} failed; "
            continue
        return f"{failed}{solver_label(solver)} at tol {REF_TOL:g} ({r['status']})", r["x"]
    return failed + "no tight solve", None


def bench_batch(src: Source, spec: Spec, solvers: list[str], ctx: Ctx) -> dict[str, Any]:
    Xs, Xd, y = src.take(spec.n)
    Xin = arrays(Xs, Xd, ctx.anchor_input)
    unavailable: dict[str, str] = {}
    fns: dict[str, Callable[[], dict[str, Any]]] = {"libsvm": lambda: run_anchor(Xin, y, spec, ctx)}
    if wants_svmlight(spec, ctx):
        from benchmarks.anchors.svmlight import find_svm_learn, missing_message

        if find_svm_learn() is None:
            unavailable["svmlight"] = missing_message()
            log(f"[{spec.row} {spec.key}] {missing_message()}: its column is skipped")
        else:
            fns["svmlight@1"] = partial(run_svmlight, Xs, y, spec, ctx)   # single-threaded; a file either way
    for s in solvers:
        if s == "incas":
            ok, why = available("incas")
            if not ok:
                unavailable[s] = why
                continue
        for t in ctx.threads:
            # ours always gets the CSR matrix: csvc densifies it for block products and keeps
            # the sparse copy for single rows (5× cheaper on Adult), each side's fastest input
            fns[f"{s}@{t}"] = partial(run_ours, Xs, y, spec, s, t, ctx)
    if any(blas_threads_under(t) not in (None, t) for t in ctx.threads):
        log(f"warning: BLAS threads in effect {[blas_threads_under(t) for t in ctx.threads]} for {ctx.threads} asked "
            "(run as `python -m benchmarks.incas` so the pool is sized before numpy loads)")
    tag = f"{spec.row} {spec.key}"
    runs = interleave(ctx, fns, tag, anchor="libsvm")
    qp = eval_qp(Xd, y, spec)
    objs: list[tuple[float, str]] = []
    judged: dict[str, dict[str, Any]] = {}
    for k, rs in runs.items():
        for r in rs:
            if r.get("x") is not None:
                r["judge"] = judge(qp, r["x"])
                objs.append((r["judge"]["objective"], k))
    ref_src, xr = reference_solve(Xin, y, spec, ctx)
    if xr is not None:
        f_tight = judge(qp, xr)["objective"]
        objs.append((f_tight, "tight solve"))
    else:
        f_tight = None
    f_ref, ref_by = min(objs) if objs else (None, None)
    anchor = runs["libsvm"]
    for k, rs in runs.items():
        sm = summarize_runs(rs)
        mid = next((r for r in rs if r.get("x") is sm["x"]), None)
        jd = mid.get("judge") if mid else None
        sm.pop("x", None)
        sm["objective"] = jd["objective"] if jd else None
        sm["kkt_gap"] = jd["kkt_gap"] if jd else None
        sm["primal_infeas"] = jd["primal_infeas"] if jd else None
        sm["rel_obj"] = (jd["objective"] - f_ref) / abs(f_ref) if jd and f_ref else None
        if k != "libsvm":
            sm.update(ratio_stats(rs, anchor))
            sm["solver"], sm["threads"] = k.split("@")[0], int(k.split("@")[1])
        else:
            sm["solver"], sm["threads"] = "libsvm", 1
        judged[k] = sm
    rec = {"spec": spec.__dict__ | {"key": spec.key}, "anchor_input": ctx.anchor_input, "f_ref": f_ref,
           "f_tight": f_tight, "ref_source": f"min over every run and {ref_src}", "ref_by": ref_by, "results": judged,
           "unavailable": unavailable, "time": now_iso()}
    if spec.row.startswith("hard") and "incas" not in unavailable:
        slt = judged.get("svmlight@1", {}).get("seconds")
        for k, sm in judged.items():
            if sm["solver"] == "incas":
                rat = sm.get("ratio") if sm.get("ratio") is not None else sm.get("ratio_below")
                sm["bar"] = None if rat is None else bool(rat <= BAR["hard"] and sm["rel_obj"] is not None
                                                          and sm["rel_obj"] <= BAR["hard_rel_obj"])
                # issue 26 adds "below SVMlight": INCAS's median over SVMlight's (a stopped SVMlight: inf, 0)
                if slt is not None and not math.isnan(slt) and slt > 0:
                    sm["vs_svmlight"] = sm["seconds"] / slt
    return rec


# ---------------------------------------------------------------------------------------------
# The incremental SVM (qpcore_incremental.incremental.IncrementalSVM): adapters to its API
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Row 3: one example added to a solved model
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Row 4: exact leave-one-out
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Row 5: sliding window
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Store, page
# ---------------------------------------------------------------------------------------------

def _clean(v: Any) -> Any:
    return clean(v, drop=("x", "alpha", "result", "decision", "per_add"))


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    p = study_parser("python -m benchmarks.incas", __doc__, rows=("hard_small", "weak", "incremental", "loo", "window"),
                     small="quick", threads="1,2")
    p.add_argument("--solvers", default="incas,smo,decomp:512", help="ours in the batch rows (default %(default)s)")
    p.add_argument("--tiny", action="store_true", help="the tests' sizes (a few seconds)")
    p.add_argument("--data", default="adult", help="adult (default) or synthetic (tests)")
    p.add_argument("--seed", type=int, default=SEED, help=f"subset seed (default {SEED})")
    p.add_argument("--cache-mb", type=int, default=1000, help="kernel cache, both sides (default 1000)")
    p.add_argument("--dtype", default="float64", choices=("float64", "float32"), help="our kernel-row cache")
    p.add_argument("--time-limit", type=float, default=None,
                   help="time limit of each of our solves (s; default 600, quick/tiny 1: the linear C = 100 "
                        "problems take SMO and decomposition long even at a few hundred rows)")
    p.add_argument("--anchor-timeout", type=float, default=600.0,
                   help="LIBSVM (and SVMlight) runs longer are stopped (s)")
    p.add_argument("--svmlight", default="rbf", choices=("rbf", "all", "off"),
                   help="kernels of the hard rows that also run SVMlight V6.02 (default rbf; built by "
                        "benchmarks/anchors/setup_svmlight.sh, skipped with a message when absent)")
    p.add_argument("--anchor-input", default="auto", choices=("auto", "dense", "sparse"),
                   help="LIBSVM's input; auto: time both once on the first problem, use the faster (ours gets the same)")
    add_store_arguments(p, "incas.json")
    a = p.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    rows = [x for r in rows for x in ({"hard": ["hard_small", "hard_large"], "all": list(ROW_NAMES)}.get(r, [r]))]
    bad = [r for r in rows if r not in ROW_NAMES]
    if bad:
        p.error(f"unknown rows {bad}; known {', '.join(ROW_NAMES)}")
    a.rows = rows
    a.solvers = [s for s in a.solvers.split(",") if s]
    resolve_run_arguments(p, a, small=a.quick or a.tiny)
    if a.time_limit is None:
        a.time_limit = 1.0 if (a.tiny or a.quick) else 600.0
    resolve_store_arguments(a, small=a.quick or a.tiny)
    return a


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    command = command_line("incas", argv)
    if not need_sklearn("incas", "LIBSVM"):
        return 2
    sz = TINY if args.tiny else QUICK if args.quick else FULL
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    ctx = Ctx(cache_mb=args.cache_mb, dtype=np.dtype(args.dtype).type, time_limit=args.time_limit,
              svmlight=args.svmlight,
              anchor_timeout=args.anchor_timeout, repeat=args.repeat, long=args.long, threads=args.threads,
              pair_below=args.pair_below)
    machine = machine_info(max(args.threads))
    log(f"{command}\n{machine['cpu']}, {machine['cores']} cores, load average {machine['loadavg']}; "
        f"INCAS {available('incas')[1] or 'available'}; IncrementalSVM {available('incremental')[1] or 'available'}")
    t0 = time.perf_counter()
    src = load_source(args.data, args.seed)
    log(f"{args.data}: {src.X.shape[0]} × {src.X.shape[1]} (read in {time.perf_counter() - t0:.1f} s, not timed)")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    store_path = args.out_dir / "incas.json"
    anchor_check: dict[str, Any] | None = None

    def run_row(row: str, a: argparse.Namespace, runs: Runs) -> dict[str, Any]:
        nonlocal anchor_check
        if ctx.anchor_input == "":   # chosen once, after the settle, before the first row
            if a.anchor_input == "auto":
                # a problem of moderate cost (the C = 100 ones can take LIBSVM minutes): RBF γ = 0.05,
                # C = 1, as many rows as the smaller hard subset, tol 1e-6
                anchor_check = choose_anchor_input(src, Spec("check", sz.hard_small, "rbf", 0.05, 1.0), ctx)
                ctx.anchor_input = anchor_check["chosen"]
            else:
                ctx.anchor_input = a.anchor_input
        run_meta = {"command": command, "time": now_iso(), "mode": mode, "data": a.data, "seed": a.seed,
                    "threads": a.threads, "cache_mb": a.cache_mb, "dtype": a.dtype, "repeat": a.repeat,
                    "long": a.long, "pair_below": a.pair_below, "anchor_input": ctx.anchor_input,
                    "anchor_check": anchor_check, "sizes": sz.__dict__,
                    "load_rule": f"others > {OTHERS_MARGIN} cores during the run", "load_at_start": a.load_at_start,
                    "time_limit": a.time_limit, "anchor_timeout": a.anchor_timeout, "svmlight": a.svmlight}
        if row in ("hard_small", "hard_large", "weak"):
            rec: dict[str, Any] = {"problems": [bench_batch(src, s, a.solvers, ctx) for s in batch_specs(row, sz)]}
        elif row == "incremental":
            rec = bench_incremental(src, sz, ctx)
        elif row == "loo":
            rec = bench_loo(src, sz, ctx)
        else:
            rec = bench_window(src, sz, ctx)
        rec["_run"] = run_meta
        return rec

    ctx.anchor_input = ""
    study = Study(run_row, lambda store, a: render(store, a.docs / "incas.md"), _clean, store=store_path, mode=mode,
                  meta=lambda: {"machine": machine, "updated": now_iso()})
    run_study(study, args, args.rows, stamp={}, runs=ctx)
    log(f"\nwrote {store_path} and {args.docs / 'incas.md'} ({time.perf_counter() - t0:.1f} s)")
    return 0


__all__ = ["main", "render", "LoadMeter", "in_child", "Sizes", "FULL", "QUICK", "TINY"]

if __name__ == "__main__":
    sys.exit(main())
