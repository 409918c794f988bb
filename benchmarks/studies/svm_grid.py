"""C-SVC over the model-selection grid against LIBSVM (issue 26, §1 "Bar").

    python -m benchmarks.svm_grid                                        # every row, 1 and 2 threads
    python -m benchmarks.svm_grid --rows adult3k,ijcnn1_3k               # the 3,000-row subsets
    python -m benchmarks.svm_grid --rows adult10k --cells "C=1000,g=1"   # one cell
    python -m benchmarks.svm_grid --strategies auto,smo,incas            # several of ours
    python -m benchmarks.svm_grid --quick                                # 600 rows, 2×2 cells, one run

Rows: C-SVC with the RBF kernel on the first 3,000 and 10,000 rows of the shared training files of
adult (d = 123 features) and ijcnn1 (d = 22): ``adult3k``, ``adult10k``, ``ijcnn1_3k``,
``ijcnn1_10k``. Each row is the grid C ∈ {0.1, 1, 10, 100, 1000} × γ ∈ {0.1/d, 1/d, 10/d} at
tol 1e-3; ``--cells`` restricts it (``"C=1000,g=1"``: C = 1000 and γ = 1/d; ``"C=100|1000"``:
those C at every γ; several specs separated by ``;``), ``g`` being γ in units of 1/d.

Protocol (the harness is :mod:`benchmarks.harness`):

- in each cell LIBSVM (scikit-learn's ``SVC``, cache 200 MB, shrinking on, fitted in a forked
  child so that it can be stopped) and each of ``--strategies`` (default ``auto``) at each of
  ``--threads`` BLAS thread counts run **interleaved** (anchor, ours, anchor, ours, ...),
  ``--repeat`` times each (median reported);
- LIBSVM's input, the dense array or the CSR matrix, is chosen once per row: the faster of two
  runs each on the cell C = 1, γ = 1/d (``--anchor-input auto``); ours always gets the CSR matrix;
- our time covers building the problem (``qpcore_formulations.svm.csvc``, kernel-row cache of 200 MB in the
  library's default storage, ``--dtype``) and ``qpcore.solve`` with its final certificate;
  LIBSVM's covers ``fit``. Each of our solves gets a time limit of max(``--limit-factor`` × the
  cell's first LIBSVM time, ``--limit-min`` s) (20×, 5 s) so that a bad cell does not stall the
  run; such a cell is reported as stopped (its ratio is then a lower bound) and a run that comes
  within 5% of its limit is not repeated;
- every point is judged by *our* float64 problem without cache (``benchmarks.svm.judge``):
  objective and KKT gap; rel_obj = (f − f_ref)/|f_ref|, f_ref the lowest objective of every run
  and of an untimed tight solve (``--ref-solver``, INCAS, at tol 1e-9; at 1e-6 when that does
  not converge within ``--ref-time-limit``, as on a large-C cell where an absolute gap of 1e-9 is
  below what float64 resolves), which is cached per cell in ``svm_grid_reference.json`` in the
  results folder so that a rerun skips it;
- per cell: LIBSVM's and our median times, the ratio ours / LIBSVM, rel_obj, our iterations and
  LIBSVM's, and what ``auto`` chose (``Result.stats["strategy"]`` and the iteration of its switch);
- per row, strategy and thread count: the **sum** over the grid of our median times over the sum
  of LIBSVM's (bar ≤ 0.5) and the largest per-cell ratio (bar ≤ 1.0), each *met* only with every
  cell of the grid measured, none stopped and every rel_obj ≤ 1e-6; the load flag (any run of the
  row during which other processes used more than a tenth of a core).

Results accumulate in a JSON store (one entry per row; re-running cells of a row replaces those
cells and keeps the others) rendered to a markdown page: ``docs/benchmarks/svm_grid.{json,md}``
(``--quick``: ``benchmarks/results/quick/``).
"""

from __future__ import annotations

import sys

from benchmarks.harness import pin_blas_threads, thread_list_from_argv

# OpenBLAS sizes its pool when numpy is first imported: make it as large as the largest thread
# count asked for (threadpoolctl can lower it per run, never raise it). Only when run as a script.
if __name__ == "__main__":
    pin_blas_threads(max(thread_list_from_argv(sys.argv[1:]) or [2]))

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.anchors.libsvm import faster_input, run_libsvm  # noqa: E402
from benchmarks.harness import (  # noqa: E402
    OTHERS_MARGIN,
    RESULTS,
    add_store_arguments,
    resolve_store_arguments,
    seed,
    generated_line,
    PeakMemory,
    Runs,
    Study,
    blas_threads,
    blas_threads_under,
    clean,
    command_line,
    fmt_exp,
    fmt_flag,
    fmt_loads,
    fmt_ratio,
    fmt_seconds,
    interleave,
    load_store,
    log,
    machine_info,
    markdown_table,
    need_sklearn,
    now_iso,
    ratio_stats,
    resolve_run_arguments,
    run_study,
    study_parser,
    summarize_runs,
    thread_limit,
)
from benchmarks.studies.svm import judge  # noqa: E402

__all__ = ["BAR", "C_GRID", "GAMMA_FACTORS", "QUICK_CELLS", "QUICK_N", "ROWS", "RowSpec", "cell_key", "main",
           "parse_cells", "render", "row_summary"]

C_GRID = (0.1, 1.0, 10.0, 100.0, 1000.0)
#: γ = factor / d (d: the number of features).
GAMMA_FACTORS = (0.1, 1.0, 10.0)
TOL = 1e-3
#: The tight reference solve's tolerances, tried in turn until one converges.
REF_TOLS = (1e-9, 1e-6)
CACHE_MB = 200
QUICK_N = 600
QUICK_CELLS = "C=1|1000,g=1|10"
#: Issue 26's bar: summed ratio, largest cell ratio, rel_obj of every cell.
BAR = {"sum": 0.5, "max": 1.0, "rel_obj": 1e-6}
#: A run that comes this close to its time limit is not repeated (it would be stopped again).
NEAR_LIMIT = 0.95


@dataclass(frozen=True)
class RowSpec:
    """One row: a data set and the number of its first rows."""

    name: str
    dataset: str
    n: int


ROWS: dict[str, RowSpec] = {r.name: r for r in (RowSpec("adult3k", "adult", 3000), RowSpec("adult10k", "adult", 10000),
                                                 RowSpec("ijcnn1_3k", "ijcnn1", 3000),
                                                 RowSpec("ijcnn1_10k", "ijcnn1", 10000))}


def cell_key(C: float, g: float) -> str:
    """A cell's name: ``C=100,g=1`` (g: γ in units of 1/d)."""
    return f"C={C:g},g={g:g}"


def parse_cells(text: str | None) -> list[tuple[float, float]]:
    """The cells of ``--cells`` (the whole grid for None or empty), in grid order.

    ``text`` is one or more specs separated by ``;``, each ``C=v|v...,g=w|w...`` (either part
    may be left out: every value of the grid); values need not be on the grid.

    Raises
    ------
    ValueError
        On a malformed spec.
    """
    if not text or not text.strip():
        return [(C, g) for C in C_GRID for g in GAMMA_FACTORS]
    want: set[tuple[float, float]] = set()
    for spec in (s.strip() for s in text.split(";")):
        if not spec:
            continue
        Cs: list[float] = list(C_GRID)
        gs: list[float] = list(GAMMA_FACTORS)
        for part in (p.strip() for p in spec.split(",")):
            name, eq, vals = part.partition("=")
            if not eq or name.strip() not in ("C", "g"):
                raise ValueError(f"--cells: {part!r} is not C=... or g=...")
            values = [float(v) for v in vals.split("|") if v.strip()]
            if not values:
                raise ValueError(f"--cells: {part!r} has no value")
            if name.strip() == "C":
                Cs = values
            else:
                gs = values
        want.update((C, g) for C in Cs for g in gs)
    return sorted(want)


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------

@dataclass
class RowData:
    """A row's arrays (read once, not timed)."""

    spec: RowSpec
    X: Any               # CSR, sorted int32 indices (LIBSVM's sparse path needs them)
    Xd: np.ndarray       # the same, dense C-contiguous float64
    y: np.ndarray        # ±1
    source: str          # "real" or "synthetic"

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


def synthetic(n: int, seed: int = 0) -> tuple[Any, np.ndarray]:
    """An adult-like stand-in for tests: 30 binary sparse features, noisy linear labels, 25% positives."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, 30)) < 0.15).astype(np.float64)
    s = X @ rng.standard_normal(30) + 0.5 * rng.standard_normal(n)
    return sp.csr_matrix(X), np.where(s > np.quantile(s, 0.75), 1.0, -1.0)


def load_row(spec: RowSpec, n: int, data: str, cache: dict[str, tuple[Any, np.ndarray]]) -> RowData:
    """The first ``n`` rows of ``spec.dataset`` (``cache``: the files read so far)."""
    if spec.dataset not in cache:
        if data == "synthetic":
            cache[spec.dataset] = synthetic(max(r.n for r in ROWS.values()), seed=len(spec.dataset))
        else:
            from qpcore_formulations.data.files import load_dataset

            cache[spec.dataset] = load_dataset(spec.dataset)
    X0, y0 = cache[spec.dataset]
    if n > X0.shape[0]:
        raise ValueError(f"{spec.dataset} has {X0.shape[0]} rows, {n} asked for")
    X = sp.csr_matrix(X0[:n], dtype=np.float64)
    X.sort_indices()
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    y = np.where(np.asarray(y0[:n], dtype=np.float64) > 0, 1.0, -1.0)
    return RowData(spec=spec, X=X, Xd=np.ascontiguousarray(X.toarray()), y=y, source=data)


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------

@dataclass
class Ctx(Runs):
    """Settings shared by every run of one invocation: the harness's and this study's own."""

    cache_mb: int = CACHE_MB
    dtype: Any = np.float32
    tol: float = TOL
    limit_factor: float = 20.0
    limit_min: float = 5.0
    anchor_input: str = "auto"
    ref_solver: str = "incas"
    ref_tols: tuple[float, ...] = REF_TOLS
    ref_time_limit: float = 120.0
    ref_path: Path | None = None
    strategies: list[str] = field(default_factory=lambda: ["auto"])


def run_anchor(Xin: Any, y: np.ndarray, C: float, gamma: float, ctx: Ctx, tol: float) -> dict[str, Any]:
    """LIBSVM's fit (scikit-learn's SVC) in a forked child (benchmarks.anchors.libsvm); the child's
    timer covers ``fit`` only."""

    def make() -> Any:
        from sklearn.svm import SVC

        return SVC(C=C, kernel="rbf", gamma=gamma, tol=tol, cache_size=ctx.cache_mb, shrinking=True)

    def alpha(est: Any) -> np.ndarray:
        a = np.zeros(y.size)
        dc = est.dual_coef_
        a[est.support_] = np.abs(np.asarray(dc.toarray() if sp.issparse(dc) else dc, dtype=np.float64).ravel())
        return a

    return run_libsvm(make, Xin, y, alpha, ctx.anchor_timeout)


def run_ours(X: Any, y: np.ndarray, C: float, gamma: float, solver: str, threads: int, ctx: Ctx, tol: float,
             time_limit: float | None, dtype: Any = None) -> dict[str, Any]:
    """Build ``csvc`` and solve it; the timer covers both. ``auto``'s choices from ``Result.stats``."""
    from qpcore_formulations.svm import csvc
    from qpcore import Kernel, solve
    from qpcore_strategies.registry import make

    strategy = make(solver)
    with thread_limit(threads):
        eff = blas_threads()
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            prob = csvc(X, y, C, Kernel("rbf", gamma=gamma), cache_bytes=ctx.cache_mb << 20,
                        dtype=ctx.dtype if dtype is None else dtype)
            res = solve(prob.qp, strategy, tol=tol, time_limit=time_limit)
            seconds = time.perf_counter() - t0
    x = np.array(res.x, dtype=np.float64)
    choices = [(int(c[0]), str(c[1]), str(c[2])) for c in res.stats.get("strategy_choice", [])]
    return {"seconds": seconds, "x": x, "status": str(res.status), "iterations": int(res.iterations),
            "kkt_gap_solve": float(res.kkt.gap), "n_sv": int(np.count_nonzero(x > 0)), "peak_mb": mem.peak_mb,
            "blas_threads": eff, "limit": time_limit, "strategy": str(res.stats.get("strategy", solver)),
            "switch_at": choices[-1][0] if len(choices) > 1 else None, "choices": choices}


def choose_anchor_input(data: RowData, ctx: Ctx) -> dict[str, Any]:
    """Time LIBSVM on the dense array and on the CSR matrix (dense, sparse, dense, sparse; the
    faster of two runs each) on the cell C = 1, γ = 1/d at tol 1e-3: the faster input serves the row."""
    gamma = 1.0 / data.d
    t, best = faster_input(lambda kind: run_anchor(data.Xd if kind == "dense" else data.X, data.y, 1.0, gamma, ctx,
                                                   TOL))
    log(f"[anchor input] {data.spec.name}: dense {fmt_seconds(t['dense'])} s, sparse {fmt_seconds(t['sparse'])} s "
        f"→ {best}")
    return {"cell": cell_key(1.0, 1.0), "dense_s": t["dense"], "sparse_s": t["sparse"], "chosen": best}


def _ref_id(data: RowData, C: float, gamma: float) -> str:
    return f"{data.source}:{data.spec.dataset}[:{data.y.size}]:C={C:g}:gamma={gamma:.12g}"


def reference(data: RowData, C: float, gamma: float, qp: Any, ctx: Ctx) -> dict[str, Any]:
    """The untimed tight solve of the cell, judged by ``qp``; read from ``ctx.ref_path`` when a run
    with the same settings left it there.

    ``ctx.ref_solver`` runs at each of ``ctx.ref_tols`` in turn (each bounded by
    ``ctx.ref_time_limit``) until one run converges; ``f_tight`` is the lowest objective of the
    attempts. A looser second tolerance is there because an absolute gap of 1e-9 can be below
    what float64 resolves on a large-C dual, where INCAS then pivots without end.
    """
    key = _ref_id(data, C, gamma)
    cfg = {"solver": ctx.ref_solver, "tols": list(ctx.ref_tols), "time_limit": ctx.ref_time_limit,
           "n": int(data.y.size), "d": data.d, "nnz": int(data.X.nnz), "labels": int(np.count_nonzero(data.y > 0))}
    cache: dict[str, Any] = {}
    if ctx.ref_path is not None and (seed(ctx.ref_path) or ctx.ref_path.is_file()):
        cache = json.loads(ctx.ref_path.read_text())
    hit = cache.get(key)
    if hit is not None and hit.get("config") == cfg:
        return dict(hit, cached=True)
    attempts: list[dict[str, Any]] = []
    for tol in ctx.ref_tols:
        label = f"{ctx.ref_solver} at tol {tol:g}"
        try:
            r = run_ours(data.X, data.y, C, gamma, ctx.ref_solver, max(ctx.threads), ctx, tol, ctx.ref_time_limit,
                         dtype=np.float64)
        except Exception as e:  # noqa: BLE001 - a failed reference is reported, not fatal
            log(f"[reference] {label} failed: {e}")
            attempts.append({"label": label, "status": f"error: {type(e).__name__}: {e}"[:300]})
            continue
        jd = judge(qp, r["x"])
        attempts.append({"label": label, "status": r["status"], "objective": jd["objective"],
                         "kkt_gap": jd["kkt_gap"], "seconds": round(r["seconds"], 3)})
        log(f"[reference] {data.spec.name} {cell_key(C, gamma * data.d)}: {label}: {r['status']} in "
            f"{r['seconds']:.1f} s, KKT gap {jd['kkt_gap']:.1e}")
        if r["status"] == "converged":
            break
    done = [a for a in attempts if "objective" in a]
    best = min(done, key=lambda a: a["objective"]) if done else None
    entry: dict[str, Any] = {
        "f_tight": best["objective"] if best else None, "kkt_gap": best["kkt_gap"] if best else None,
        "status": best["status"] if best else "failed",
        "source": (f"{best['label']} ({best['status']})" if best else "failed")
                  + (f"; tried {', '.join(a['label'] + ' (' + a['status'] + ')' for a in attempts)}"
                     if len(attempts) > 1 else ""),
        "attempts": attempts, "config": cfg, "computed": now_iso()}
    if ctx.ref_path is not None and best is not None:
        if ctx.ref_path.is_file():   # re-read: another run may have added cells meanwhile
            cache = json.loads(ctx.ref_path.read_text())
        cache[key] = clean(entry)
        ctx.ref_path.parent.mkdir(parents=True, exist_ok=True)
        ctx.ref_path.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n")
    return dict(entry, cached=False)


def eval_qp(data: RowData, C: float, gamma: float) -> Any:
    """Our float64 problem of the cell without cache: exact matvecs, used only to judge points."""
    from qpcore_formulations.svm import csvc
    from qpcore import Kernel

    return csvc(data.X, data.y, C, Kernel("rbf", gamma=gamma), cache_bytes=0, dtype=np.float64).qp


def bench_cell(data: RowData, C: float, g: float, anchor_input: str, ctx: Ctx) -> dict[str, Any]:
    """One cell: LIBSVM and each of our strategies at each thread count, interleaved, then judged."""
    gamma = g / data.d
    tag = f"{data.spec.name} {cell_key(C, g)}"
    Xin = data.Xd if anchor_input == "dense" else data.X
    first: dict[str, float] = {}
    saved_long = ctx.long

    def anchor() -> dict[str, Any]:
        r = run_anchor(Xin, data.y, C, gamma, ctx, ctx.tol)
        if "seconds" not in first:
            a = r["seconds"]
            first["seconds"] = a
            first["limit"] = max(ctx.limit_factor * a, ctx.limit_min) if math.isfinite(a) else ctx.anchor_timeout
            # interleave repeats a solver whose first run was shorter than ctx.long: a run of ours
            # stopped at (or near) its limit would only be stopped again
            ctx.long = min(saved_long, NEAR_LIMIT * first["limit"])
        return r

    def ours(solver: str, threads: int) -> dict[str, Any]:
        return run_ours(data.X, data.y, C, gamma, solver, threads, ctx, ctx.tol, first["limit"])

    fns: dict[str, Callable[[], dict[str, Any]]] = {"libsvm": anchor}
    for s in ctx.strategies:
        for t in ctx.threads:
            fns[f"{s}@{t}"] = partial(ours, s, t)
    try:
        runs = interleave(ctx, fns, tag, anchor="libsvm")
    finally:
        ctx.long = saved_long
    qp = eval_qp(data, C, gamma)
    judged_x: dict[str, dict[str, float]] = {}   # equal points (deterministic reruns) judged once
    objs: list[tuple[float, str]] = []
    for k, rs in runs.items():
        for r in rs:
            x = r.get("x")
            if x is None:
                continue
            h = hashlib.sha1(np.ascontiguousarray(x).tobytes()).hexdigest()
            if h not in judged_x:
                judged_x[h] = judge(qp, x)
            r["judge"] = judged_x[h]
            objs.append((r["judge"]["objective"], k))
    ref = reference(data, C, gamma, qp, ctx)
    if ref.get("f_tight") is not None:
        objs.append((float(ref["f_tight"]), "tight solve"))
    f_ref, ref_by = min(objs) if objs else (None, None)
    results: dict[str, dict[str, Any]] = {}
    for k, rs in runs.items():
        sm = summarize_runs(rs, keep=("x", "judge", "strategy", "switch_at", "choices", "limit"))
        jd = sm.pop("judge")
        sm.pop("x", None)
        sm["objective"] = jd["objective"] if jd else None
        sm["kkt_gap"] = jd["kkt_gap"] if jd else None
        sm["primal_infeas"] = jd["primal_infeas"] if jd else None
        sm["rel_obj"] = (jd["objective"] - f_ref) / abs(f_ref) if jd and f_ref else None
        if k == "libsvm":
            sm["solver"], sm["threads"] = "libsvm", 1
            for extra in ("strategy", "switch_at", "choices", "limit"):
                sm.pop(extra, None)
        else:
            sm.update(ratio_stats(rs, runs["libsvm"]))
            sm["solver"], sm["threads"] = k.rsplit("@", 1)[0], int(k.rsplit("@", 1)[1])
            sm["stopped"] = any(r.get("status") == "time_limit" for r in rs)
        results[k] = sm
    return {"C": C, "g": g, "gamma": gamma, "key": cell_key(C, g), "anchor_input": anchor_input, "f_ref": f_ref,
            "ref_by": ref_by, "f_tight": ref.get("f_tight"), "ref_source": ref.get("source"),
            "ref_cached": ref.get("cached"), "results": results, "time": now_iso()}


def row_summary(cells: list[dict[str, Any]], grid: int = len(C_GRID) * len(GAMMA_FACTORS)) -> dict[str, Any]:
    """Per strategy and thread count: the summed ratio, the largest cell ratio, the worst rel_obj, the flags.

    Parameters
    ----------
    cells : list of dict
        The row's cell records (:func:`bench_cell`).
    grid : int
        Cells of the whole grid: a bar is *met* only with every one measured.

    Returns
    -------
    dict
        Keyed ``strategy@threads``: ``sum_ours``, ``sum_anchor``, ``sum_ratio``, ``max_ratio``
        (and its cell), ``max_rel_obj``, ``cells``, ``stopped``, ``loaded``, ``rel_ok``,
        ``bar_sum`` / ``bar_max`` (``met``, ``not met`` or ``incomplete``).
    """
    keys: list[str] = []
    for c in cells:
        keys += [k for k in c["results"] if k != "libsvm" and k not in keys]
    out: dict[str, Any] = {}
    for k in keys:
        have = [c for c in cells if k in c["results"]]
        so = sum(float(c["results"][k]["seconds"]) for c in have)
        sa = sum(float(c["results"]["libsvm"]["seconds"]) for c in have)
        ratios = [(c["results"][k].get("ratio"), c["key"]) for c in have]
        finite = [(r, key) for r, key in ratios if r is not None and math.isfinite(r)]
        worst = max(finite) if finite else (None, None)
        rels = [c["results"][k].get("rel_obj") for c in have]
        stopped = [c["key"] for c in have if c["results"][k].get("stopped")]
        rel_ok = all(r is not None and r <= BAR["rel_obj"] for r in rels)
        # at tol 1e-3 LIBSVM itself can end above the rel_obj bar (small C on ijcnn1): which cells
        # miss it, and at which of them ours is also worse than LIBSVM's own point
        above = [c["key"] for c in have if not (c["results"][k].get("rel_obj") is not None
                                                and c["results"][k]["rel_obj"] <= BAR["rel_obj"])]
        worse = [key for key in above for c in have if c["key"] == key
                 and not (c["results"][k].get("rel_obj") is not None and c["results"]["libsvm"].get("rel_obj") is not None
                          and c["results"][k]["rel_obj"] <= c["results"]["libsvm"]["rel_obj"])]
        complete = len(have) >= grid and len(finite) == len(have) and math.isfinite(sa) and sa > 0
        sum_ratio = so / sa if math.isfinite(sa) and sa > 0 and math.isfinite(so) else None

        def flag(v: float | None, bar: float) -> str:
            if not complete or v is None:
                return "incomplete"
            return "met" if v <= bar and rel_ok and not stopped else "not met"

        out[k] = {"solver": k.rsplit("@", 1)[0], "threads": int(k.rsplit("@", 1)[1]), "cells": len(have),
                  "sum_ours": so, "sum_anchor": sa, "sum_ratio": sum_ratio, "max_ratio": worst[0],
                  "max_ratio_cell": worst[1],
                  "max_rel_obj": max((r for r in rels if r is not None), default=None), "rel_ok": rel_ok,
                  "rel_above": above, "rel_above_libsvm": worse,
                  "stopped": stopped,
                  "loaded": any(c["results"][k]["loaded"] or c["results"]["libsvm"]["loaded"] for c in have),
                  "bar_sum": flag(sum_ratio, BAR["sum"]), "bar_max": flag(worst[0], BAR["max"])}
    return out


# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------

def _clean(v: Any) -> Any:
    return clean(v, drop=("x", "judge"))


def _ratio_cell(s: dict[str, Any]) -> str:
    if s.get("ratio") is None:
        return "–"
    rat = fmt_ratio(s["ratio"])
    if s.get("stopped"):
        rat = f"> {rat} (stopped)"     # ours hit its time limit: the ratio is a lower bound
    if s.get("paired_min") is not None and s.get("runs", 1) > 1:
        rat += f" [{fmt_ratio(s['paired_min'])}–{fmt_ratio(s['paired_max'])}]"
    return rat


def _choice(s: dict[str, Any]) -> str:
    who = str(s.get("strategy") or s.get("solver"))
    return who + (f" (switch at {s['switch_at']})" if s.get("switch_at") is not None else "")


def _above(s: dict[str, Any]) -> str:
    if not s.get("rel_above"):
        return "–"
    return f"{len(s['rel_above'])} ({', '.join(s.get('rel_above_libsvm', [])) or 'none'})"


def _bar(v: str) -> str:
    return "**met**" if v == "met" else v


def render(store: dict[str, Any], page: Path) -> None:
    """The markdown page from the whole store."""
    meta = store.get("_meta", {})
    rows = [n for n in ROWS if n in store]
    L: list[str] = ["# C-SVC over the model-selection grid against LIBSVM\n",
                    generated_line("svm_grid", "svm_grid.json")]
    small = [n for n in rows if store[n]["_run"]["mode"] != "full"]
    if small:
        L.append(f"> **{', '.join(small)}: quick-mode results** ({QUICK_N} rows, 2×2 cells, one run): they check the "
                 "plumbing, they are *not* the issue-26 figures. The full run: `python -m benchmarks.svm_grid`.\n")
    body = []
    for n in rows:
        for s in store[n]["summary"].values():
            body.append([n, str(s["threads"]), s["solver"], f"{s['cells']}", fmt_ratio(s["sum_ratio"]),
                         _bar(s["bar_sum"]), f"{fmt_ratio(s['max_ratio'])} ({s['max_ratio_cell']})",
                         _bar(s["bar_max"]), fmt_exp(s["max_rel_obj"]), _above(s), ", ".join(s["stopped"]) or "–",
                         fmt_flag(s["loaded"])])
    if body:
        L.append("## Summary: the bar\n")
        L.append(f"Σ ours / Σ LIBSVM over the row's cells (bar ≤ {BAR['sum']}), the largest cell ratio (bar ≤ "
                 f"{BAR['max']}), each met only with the whole grid measured, no cell stopped and every rel_obj ≤ "
                 f"{BAR['rel_obj']:g}.\n")
        L.append(markdown_table(["row", "threads", "ours", "cells", "Σ ours / Σ LIBSVM", "bar", "max cell ratio",
                                 "bar", "max rel_obj", "cells above 1e-6 (ours also above LIBSVM's)", "stopped",
                                 "load flag"], body))
        L.append("")
    for n in rows:
        rec = store[n]
        m = rec["_run"]
        ai = rec.get("anchor_check") or {}
        why = (f" (the faster on {ai['cell']}: dense {fmt_seconds(ai['dense_s'])} s, sparse "
               f"{fmt_seconds(ai['sparse_s'])} s)" if "dense_s" in ai else " (as asked)")
        L.append(f"## {n}: the first {rec['n']:,} rows of {rec['dataset']} (d = {rec['d']})\n")
        L.append(f"Command: `{m['command']}` ({m['time']}); mode **{m['mode']}**; data {m['data']}; tol {m['tol']:g}; "
                 f"threads {m['threads']}; cache {m['cache_mb']} MB both sides; our cache dtype {m['dtype']}; repeat "
                 f"{m['repeat']}; our time limit max({m['limit_factor']:g} × LIBSVM, {m['limit_min']:g} s); LIBSVM "
                 f"input **{rec['anchor_input']}**{why}.\n")
        lines = []
        for c in rec["cells"]:
            a = c["results"]["libsvm"]
            for k, s in c["results"].items():
                if k == "libsvm":
                    continue
                lines.append([f"{c['C']:g}", f"{c['g']:g}/d", k, fmt_seconds(a["seconds"]), fmt_seconds(s["seconds"]),
                              _ratio_cell(s), fmt_exp(s["rel_obj"]), fmt_exp(a["rel_obj"]), _choice(s),
                              f"{s['iterations']} / {a['iterations']}", str(s["status"]),
                              fmt_loads(s["loads"] + a["loads"]), fmt_flag(s["loaded"] or a["loaded"])])
        L.append(markdown_table(["C", "γ", "ours@threads", "LIBSVM s", "ours s", "ratio [per pair]", "rel_obj ours",
                                 "rel_obj LIBSVM", "ours chose", "iterations ours / LIBSVM", "status",
                                 "load / own / others", "load flag"], lines))
        L.append("")
    L.append("## Reading the tables\n")
    L.append(
        "- **ratio** = our median wall time / LIBSVM's median (< 1: we are faster); in brackets the range of "
        "the ratios of each of our runs to the LIBSVM run just before it. **stopped**: ours hit its time limit "
        "(the ratio is a lower bound).\n"
        "- **rel_obj** = (f − f_ref)/|f_ref|, f the objective of the median run's point judged by our float64 "
        "problem; f_ref the lowest of every run's and an untimed tight solve's (INCAS at tol 1e-9, or 1e-6 "
        "when 1e-9 does not converge; each cell's source is in `svm_grid.json`).\n"
        "- **ours chose**: the strategy that finished (`Result.stats[\"strategy\"]`) and the iteration of "
        "`auto`'s switch, if it switched.\n"
        "- **load**: highest 1-minute load / our share / others' CPU during the run (cores); a run is "
        f"**loaded** when others > {OTHERS_MARGIN} core.\n")
    if meta.get("machine"):
        mc = meta["machine"]
        L.append("## Machine\n")
        L.append(f"{mc.get('cpu')}, {mc.get('cores')} cores; Python {mc.get('python')}, numpy {mc.get('numpy')}, "
                 f"scipy {mc.get('scipy')}, scikit-learn {mc.get('sklearn')}; commit "
                 f"{mc.get('git', {}).get('commit')}{' (dirty)' if mc.get('git', {}).get('dirty') else ''}.\n")
    page.write_text("\n".join(L))


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def _floats(text: str) -> list[float]:
    return [float(t) for t in text.split(",") if t]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = study_parser("python -m benchmarks.svm_grid", __doc__, rows=ROWS, small="quick", threads="1,2")
    p.add_argument("--cells", default=None,
                   help='restrict the grid: "C=1000,g=1" (g: γ in units of 1/d), "C=100|1000", several with ";" '
                        f"(default: the whole grid; quick {QUICK_CELLS})")
    p.add_argument("--strategies", default="auto", help="ours (registry specs, comma-separated; default %(default)s)")
    p.add_argument("--n", type=int, default=None, help=f"rows of every row's data (default: the row's; quick {QUICK_N})")
    p.add_argument("--data", default="real", choices=("real", "synthetic"),
                   help="the shared adult and ijcnn1 files (default), or a generated stand-in (tests)")
    p.add_argument("--tol", type=float, default=TOL, help="stopping tolerance, both sides (default %(default)g)")
    p.add_argument("--cache-mb", type=int, default=CACHE_MB, help="kernel cache, both sides (default %(default)s)")
    p.add_argument("--dtype", default="float32", choices=("float32", "float64"),
                   help="our kernel-row cache (default float32, the library's)")
    p.add_argument("--limit-factor", type=float, default=20.0, help="ours stops after this × LIBSVM's time ...")
    p.add_argument("--limit-min", type=float, default=5.0, help="... or this many seconds, the larger (default 5)")
    p.add_argument("--anchor-timeout", type=float, default=600.0, help="LIBSVM runs longer are stopped (s)")
    p.add_argument("--anchor-input", default="auto", choices=("auto", "dense", "sparse"),
                   help="LIBSVM's input; auto (default): the faster of both, timed twice on each row's cell C=1,g=1")
    p.add_argument("--ref-solver", default="incas", help="the tight reference solve (default %(default)s)")
    p.add_argument("--ref-tols", type=_floats, default=list(REF_TOLS),
                   help="its tolerances, tried in turn until one converges (default 1e-9,1e-6)")
    p.add_argument("--ref-time-limit", type=float, default=120.0, help="of each reference solve (s; default 120)")
    add_store_arguments(p, "svm_grid.json")
    p.add_argument("--ref-dir", type=Path, default=None,
                   help="where svm_grid_reference.json goes (default benchmarks/results; quick benchmarks/results/quick)")
    a = p.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    rows = [x for r in rows for x in ({"all": list(ROWS)}.get(r, [r]))]
    bad = [r for r in rows if r not in ROWS]
    if bad:
        p.error(f"unknown rows {bad}; known {', '.join(ROWS)}")
    if a.quick and not any(x == "--rows" or x.startswith("--rows=") for x in argv):
        rows = ["adult3k", "ijcnn1_3k"]     # at 600 rows the 10k rows would repeat them
    a.rows = rows
    a.strategies = [s for s in a.strategies.split(",") if s]
    try:
        a.cell_list = parse_cells(QUICK_CELLS if a.quick and a.cells is None else a.cells)
    except ValueError as e:
        p.error(str(e))
    resolve_run_arguments(p, a, small=a.quick)
    resolve_store_arguments(a, small=a.quick)
    if a.ref_dir is None:
        a.ref_dir = RESULTS / "quick" if a.quick else RESULTS
    if a.n is None and a.quick:
        a.n = QUICK_N
    return a


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    command = command_line("svm_grid", argv)
    if not need_sklearn("svm_grid", "LIBSVM"):
        return 2
    from qpcore_strategies.registry import make

    for s in args.strategies + [args.ref_solver]:
        make(s)     # an unknown spec fails here, before any run
    mode = "quick" if args.quick else "full"
    ctx = Ctx(cache_mb=args.cache_mb, dtype=np.dtype(args.dtype).type, tol=args.tol, limit_factor=args.limit_factor,
              limit_min=args.limit_min, anchor_timeout=args.anchor_timeout, repeat=args.repeat, long=args.long,
              threads=args.threads, pair_below=args.pair_below, anchor_input=args.anchor_input,
              ref_solver=args.ref_solver, ref_tols=tuple(args.ref_tols), ref_time_limit=args.ref_time_limit,
              ref_path=args.ref_dir / "svm_grid_reference.json", strategies=args.strategies)
    machine = machine_info(max(args.threads))
    log(f"{command}\n{machine['cpu']}, {machine['cores']} cores, load average {machine['loadavg']}")
    if any(blas_threads_under(t) not in (None, t) for t in ctx.threads):
        log(f"warning: BLAS threads in effect {[blas_threads_under(t) for t in ctx.threads]} for {ctx.threads} asked "
            "(run as `python -m benchmarks.svm_grid` so the pool is sized before numpy loads)")
    t0 = time.perf_counter()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    store_path = args.out_dir / "svm_grid.json"
    before = load_store(store_path, mode)     # cells of earlier runs that this one does not measure are kept
    files: dict[str, tuple[Any, np.ndarray]] = {}

    def run_row(name: str, a: argparse.Namespace, runs: Runs) -> dict[str, Any]:
        spec = ROWS[name]
        data = load_row(spec, a.n or spec.n, a.data, files)
        log(f"[{name}] {data.X.shape[0]} × {data.d} ({a.data}), {int(np.count_nonzero(data.y > 0))} positives")
        check = choose_anchor_input(data, ctx) if ctx.anchor_input == "auto" else {"chosen": ctx.anchor_input}
        cells = [bench_cell(data, C, g, check["chosen"], ctx) for C, g in a.cell_list]
        old = before.get(name)
        if old and old.get("n") == data.y.size and old["_run"].get("data") == a.data:
            done = {c["key"] for c in cells}
            cells = sorted([c for c in old["cells"] if c["key"] not in done] + cells, key=lambda c: (c["C"], c["g"]))
        rec: dict[str, Any] = {"dataset": spec.dataset, "n": int(data.y.size), "d": data.d, "anchor_input": check["chosen"],
               "anchor_check": check, "cells": cells,
               "summary": row_summary(cells, len(a.cell_list) if a.quick else len(C_GRID) * len(GAMMA_FACTORS)),
               "_run": {"command": command, "time": now_iso(), "mode": mode, "data": a.data, "tol": a.tol,
                        "threads": a.threads, "strategies": a.strategies, "cache_mb": a.cache_mb, "dtype": a.dtype,
                        "repeat": a.repeat, "long": a.long, "pair_below": a.pair_below,
                        "limit_factor": a.limit_factor, "limit_min": a.limit_min, "ref_solver": a.ref_solver,
                        "ref_tols": a.ref_tols, "ref_time_limit": a.ref_time_limit,
                        "anchor_timeout": a.anchor_timeout, "load_at_start": a.load_at_start,
                        "load_rule": f"others > {OTHERS_MARGIN} cores during the run"}}
        for k, s in rec["summary"].items():
            log(f"[{name}] {k}: Σ ours / Σ LIBSVM {fmt_ratio(s['sum_ratio'])} ({s['bar_sum']}), max cell "
                f"{fmt_ratio(s['max_ratio'])} ({s['bar_max']}), max rel_obj {fmt_exp(s['max_rel_obj'])}"
                f"{', LOADED' if s['loaded'] else ''}")
        return rec

    study = Study(run_row, lambda store, a: render(store, a.docs / "svm_grid.md"), _clean, store=store_path,
                  mode=mode, meta=lambda: {"machine": machine, "updated": now_iso()})
    run_study(study, args, args.rows, stamp={}, runs=ctx)
    log(f"\nwrote {store_path} and {args.docs / 'svm_grid.md'} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
