"""Grid search: SVMGridSearchCV(KernelSVC()) against GridSearchCV(SVC()) (issue 26, §2).

    python -m benchmarks.grid_search                # 8,000 Adult rows, interleaved (quiet machine)
    python -m benchmarks.grid_search --quick        # 1,000 rows, one pass: a correctness run
    python -m benchmarks.grid_search --threads 1,2 --strategy incas

Rows. A seeded subset (``numpy.random.default_rng(0)``, no replacement, original order) of the
shared Adult training file, ``--rows`` rows (8,000; quick 1,000); the grid
C ∈ {0.1, 1, 10, 100, 1000} × γ ∈ {0.1/d, 1/d, 10/d} (d = 123 features), tol 1e-3 (``--tol``), 5 folds
``StratifiedKFold(5)`` without shuffling (GridSearchCV's default for a classifier), accuracy,
``refit=False`` (the search alone). The anchor is ``GridSearchCV(SVC(cache_size=M))`` run
sequentially; ours ``SVMGridSearchCV(KernelSVC())`` with the estimator's default strategy (or
``--strategy``) and M MB for each kernel matrix (``kernel_bytes``; the dense matrix of 8,000 rows
in single precision takes 256 MB, so M = 256 holds it).

Protocol. The two alternate (SVC, ours, SVC, ours, ... :func:`benchmarks.harness.interleave`)
for each thread count of ``--threads`` (BLAS pools limited per run); the ratio is of the medians
of ``--repeat`` runs. Each run's scores are kept: the row reports the largest |difference| of
mean test scores over the 15 cells (the bar: ≤ 0.002) and each cell's mean fit time. Time only
on a quiet machine (each run records other processes' CPU, ``LOADED`` when they took more than
a tenth of a core). Results append to ``benchmarks/results/grid_search.jsonl``
(``results/quick/`` with ``--quick``). Exit status 1 when a cell's scores differ by more than
0.002.
"""

from __future__ import annotations

import sys

from benchmarks.harness import pin_blas_threads, thread_list_from_argv

if __name__ == "__main__":
    pin_blas_threads(max(thread_list_from_argv(sys.argv[1:], "1")))   # before numpy: OpenBLAS sizes its pool at load

import argparse  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from benchmarks.harness import (REPO, Runs, add_run_arguments, append_jsonl, blas_threads_under,  # noqa: E402
                                command_line, interleave, log, machine_info, markdown_table, need_sklearn,
                                now_iso, ratio_stats, resolve_run_arguments, settle, thread_limit)

__all__ = ["C_GRID", "GAMMA_FACTORS", "TOL", "load", "main", "row"]

C_GRID = (0.1, 1.0, 10.0, 100.0, 1000.0)
#: γ = factor / d.
GAMMA_FACTORS = (0.1, 1.0, 10.0)
TOL = 1e-3
#: The bar on each cell's mean test score (issue 26, §2).
SCORE_BAR = 0.002


def load(rows: int, seed: int = 0) -> tuple[Any, Any]:
    """``rows`` rows of Adult (CSR, labels ±1), a seeded subset in the file's order."""
    import numpy as np

    from qpcore_formulations.data.files import load_dataset

    X, y = load_dataset("adult")
    keep = np.sort(np.random.default_rng(seed).choice(X.shape[0], size=min(rows, X.shape[0]), replace=False))
    return X[keep], y[keep]


def row(X: Any, y: Any, ctx: Runs, threads: int, *, folds: int, cache_mb: float,
        strategy: str | None, stack_mb: float | None = None, svc_dense: bool = False,
        tol: float = TOL) -> dict[str, Any]:
    """Time both searches at one thread count; the row's record with scores per cell."""
    import numpy as np
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import SVC

    from qpcore_sklearn.model_selection import SVMGridSearchCV
    from qpcore_sklearn.svm import KernelSVC

    d = int(X.shape[1])
    grid = {"C": list(C_GRID), "gamma": [f / d for f in GAMMA_FACTORS]}
    cv = StratifiedKFold(folds)
    made: dict[str, Any] = {}
    # LIBSVM reads dense rows faster than sparse ones on Adult's 123 columns (svm_grid's check):
    # --svc-dense gives the anchor that input, ours keeps the CSR matrix
    X_svc = X.toarray() if svc_dense and hasattr(X, "toarray") else X

    def svc() -> dict[str, Any]:
        t0 = time.perf_counter()
        made["SVC"] = GridSearchCV(SVC(tol=tol, cache_size=cache_mb), grid, cv=cv, refit=False).fit(X_svc, y)
        return {"seconds": time.perf_counter() - t0, "status": "searched"}

    def ours() -> dict[str, Any]:
        est = KernelSVC(tol=tol) if strategy is None else KernelSVC(tol=tol, strategy=strategy)
        t0 = time.perf_counter()
        gs = SVMGridSearchCV(est, grid, cv=cv, refit=False, kernel_bytes=int(cache_mb * (1 << 20)),
                             stack_bytes=None if stack_mb is None else int(stack_mb * (1 << 20))).fit(X, y)
        made["ours"] = gs
        return {"seconds": time.perf_counter() - t0, "status": "shared" if gs.shared_ else "fallback"}

    with thread_limit(threads):
        runs = interleave(ctx, {"SVC": svc, "ours": ours}, f"{X.shape[0]} rows, {threads} thr", anchor="SVC")
    ref, got = made["SVC"].cv_results_, made["ours"].cv_results_
    diff = np.abs(np.asarray(got["mean_test_score"]) - np.asarray(ref["mean_test_score"]))
    cells = [{"C": p["C"], "gamma_d": p["gamma"] * d, "score_svc": float(a), "score_ours": float(b),
              "fit_svc_s": float(fa), "fit_ours_s": float(fb)}
             for p, a, b, fa, fb in zip(ref["params"], ref["mean_test_score"], got["mean_test_score"],
                                         ref["mean_fit_time"], got["mean_fit_time"])]
    gs = made["ours"]
    return {"rows": int(X.shape[0]), "folds": folds, "threads": threads, "tol": tol,
            "blas_threads": blas_threads_under(threads), "cache_mb": cache_mb,
            "strategy": strategy or "default", "shared": bool(gs.shared_), "kernel_dense": bool(gs.kernel_dense_),
            "converged": bool(gs.converged_), "lockstep": bool(gs.lockstep_), "lockstep_note": gs.lockstep_note_,
            "stack_mb": stack_mb, "svc_input": "dense" if svc_dense else "as loaded (CSR)",
            "svc_s": float(np.median([r["seconds"] for r in runs["SVC"]])),
            "ours_s": float(np.median([r["seconds"] for r in runs["ours"]])), **ratio_stats(runs["ours"], runs["SVC"]),
            "max_score_diff": float(diff.max()), "scores_agree": bool(diff.max() <= SCORE_BAR), "cells": cells,
            "loaded": any(r["load"]["loaded"] for v in runs.values() for r in v)}


def main(argv: list[str] | None = None) -> int:
    """Run the study; 1 when a cell's mean test scores differ by more than 0.002."""
    args = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m benchmarks.grid_search", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="1,000 rows, one pass: a correctness run")
    p.add_argument("--rows", type=int, default=None, help="rows of the Adult subset (default 8000; quick 1000)")
    p.add_argument("--folds", type=int, default=5, help="folds (default 5)")
    p.add_argument("--threads", default="1", help="comma-separated BLAS thread counts, one row each (default 1)")
    p.add_argument("--cache-mb", type=float, default=256.0,
                   help="SVC's cache_size and our kernel_bytes, in MB (default 256: 8,000 rows' dense kernel)")
    p.add_argument("--stack-mb", type=float, default=None,
                   help="our lockstep stack's budget in MB (default: --cache-mb; 1024 holds 5 folds of 8,000 rows)")
    p.add_argument("--svc-dense", action="store_true",
                   help="give GridSearchCV(SVC()) the rows as a dense array (LIBSVM's faster input on Adult)")
    p.add_argument("--tol", type=float, default=TOL, help="both searches' tol (default 1e-3, SVC's)")
    p.add_argument("--strategy", default=None, help="KernelSVC's strategy (default: the estimator's default)")
    add_run_arguments(p)
    a = p.parse_args(args)
    resolve_run_arguments(p, a, a.quick)
    rows = a.rows if a.rows is not None else (1000 if a.quick else 8000)
    threads = thread_list_from_argv(["--threads", a.threads], "1")
    if not need_sklearn("grid_search", "GridSearchCV(SVC())"):
        return 2
    X, y = load(rows)
    ctx = Runs(repeat=a.repeat, long=a.long, pair_below=a.pair_below, threads=threads)
    settle(ctx, a.settle)
    out = REPO / "benchmarks" / "results" / ("quick" if a.quick else "") / "grid_search.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    records = []
    for t in threads:
        r = row(X, y, ctx, t, folds=a.folds, cache_mb=a.cache_mb, strategy=a.strategy, stack_mb=a.stack_mb,
                svc_dense=a.svc_dense, tol=a.tol)
        records.append(r)
        append_jsonl(out, {"study": "grid_search", "time": now_iso(), "machine": machine_info(t), "quick": a.quick,
                           "command": command_line("grid_search", args), **r})
    for r in records:
        log(f"\n{r['rows']} rows, {r['folds']} folds, tol {r['tol']:g}, {r['threads']} thread(s), "
            f"strategy {r['strategy']}: "
            f"SVC {r['svc_s']:.2f} s, ours {r['ours_s']:.2f} s, ours / SVC {r['ratio']:.2f}"
            f"{' LOADED' if r['loaded'] else ''}; max |score diff| {r['max_score_diff']:.4f}"
            f"{'' if r['scores_agree'] else ' ABOVE 0.002'}; {'shared' if r['shared'] else 'FALLBACK'}, "
            f"{'dense kernel' if r['kernel_dense'] else 'row cache'}, "
            f"{'all converged' if r['converged'] else 'NOT all converged'}; {r['lockstep_note']}")
        log(markdown_table(["C", "γ·d", "score SVC", "score ours", "|diff|", "fit SVC (s)", "fit ours (s)"],
                           [[f"{c['C']:g}", f"{c['gamma_d']:g}", f"{c['score_svc']:.4f}", f"{c['score_ours']:.4f}",
                             f"{abs(c['score_svc'] - c['score_ours']):.4f}", f"{c['fit_svc_s']:.3f}",
                             f"{c['fit_ours_s']:.3f}"] for c in r["cells"]]))
    return 0 if all(r["scores_agree"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
