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
from dataclasses import dataclass, field  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.harness import (  # noqa: E402
    generated_line,
    command_line,
    need_sklearn,
    OTHERS_MARGIN,
    add_store_arguments,
    resolve_store_arguments,
    LoadMeter,
    PeakMemory,
    Runs,
    blas_threads,
    blas_threads_under,
    clean,
    fmt_exp,
    fmt_flag,
    fmt_loads,
    fmt_ratio,
    fmt_seconds,
    fmt_summary_seconds,
    in_child,
    interleave,
    log,
    machine_info,
    median,
    now_iso,
    ratio_stats,
    Study,
    resolve_run_arguments,
    run_study,
    study_parser,
    thread_limit,
    summarize_runs,
)

SEED = 12                      # the subsets: rows default_rng(SEED).permutation(n_adult)[:n]
REF_TOL = 1e-9                 # the tight reference solve
ROW_NAMES = ("hard_small", "hard_large", "weak", "incremental", "loo", "window")
BAR = {"hard": 0.5, "hard_rel_obj": 1e-8, "incremental": 50.0, "loo": 20.0}


# ---------------------------------------------------------------------------------------------
# Sizes and problems
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sizes:
    """Rows of each benchmark (full: issue 12; quick / tiny: plumbing checks)."""

    hard_small: int = 3185
    hard_large: int = 16101
    weak: int = 3185
    inc_base: int = 5000
    inc_add: int = 200
    inc_sample: int = 5           # additions for which the retrains (LIBSVM, warm decomposition) are timed
    loo: int = 1000
    win: int = 2000
    win_total: int = 20000
    win_check: int = 1000         # every win_check-th window model is checked against a batch solve


FULL = Sizes()
QUICK = Sizes(hard_small=200, hard_large=400, weak=200, inc_base=300, inc_add=20, inc_sample=2, loo=100,
              win=150, win_total=450, win_check=150)
TINY = Sizes(hard_small=60, hard_large=100, weak=60, inc_base=60, inc_add=4, inc_sample=1, loo=30,
             win=30, win_total=60, win_check=15)


@dataclass(frozen=True)
class Spec:
    """One C-SVC problem: rows, kernel, C, tolerance."""

    row: str
    n: int
    kernel: str          # "linear" or "rbf"
    gamma: float
    C: float
    tol: float = 1e-6

    @property
    def key(self) -> str:
        k = "linear" if self.kernel == "linear" else f"rbf γ={self.gamma:g}"
        return f"n={self.n}, {k}, C={self.C:g}"

    def qkernel(self) -> Any:
        from qpcore import Kernel

        return Kernel("linear") if self.kernel == "linear" else Kernel("rbf", gamma=self.gamma)

    def svc_params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"C": self.C, "kernel": self.kernel}
        if self.kernel == "rbf":
            p["gamma"] = self.gamma
        return p


def batch_specs(row: str, sz: Sizes) -> list[Spec]:
    if row in ("hard_small", "hard_large"):
        n = sz.hard_small if row == "hard_small" else sz.hard_large
        return [Spec(row, n, "linear", 0.0, 100.0), Spec(row, n, "rbf", 0.01, 100.0),
                Spec(row, n, "rbf", 0.025, 100.0)]
    if row == "weak":
        return [Spec(row, sz.weak, "rbf", 1.0, 1.0), Spec(row, sz.weak, "rbf", 0.5, 1.0)]
    raise KeyError(row)


@dataclass
class Source:
    """The whole data set, in the fixed seeded order: subsets are prefixes of it."""

    name: str
    X: Any               # CSR, int32 indices (what LIBSVM's sparse path needs)
    Xd: np.ndarray       # dense C-contiguous float64
    y: np.ndarray        # ±1
    order: np.ndarray    # row i of X is row order[i] of the file

    def take(self, n: int, start: int = 0) -> tuple[Any, np.ndarray, np.ndarray]:
        if start + n > self.X.shape[0]:
            raise ValueError(f"{self.name} has {self.X.shape[0]} rows, {start + n} asked for")
        return self.X[start:start + n], self.Xd[start:start + n], self.y[start:start + n]


def synthetic(n: int = 3000, d: int = 30, seed: int = 0) -> tuple[Any, np.ndarray]:
    """A small adult-like data set (binary sparse features, noisy linear labels) for tests."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < 0.15).astype(np.float64)
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.5 * rng.standard_normal(n) > np.median(X @ w), 1.0, -1.0)
    return sp.csr_matrix(X), y


def load_source(name: str, seed: int = SEED) -> Source:
    """Read the data set (not timed) and fix its seeded order."""
    if name == "synthetic":
        X, y = synthetic()
    else:
        from qpcore_formulations.data.files import load_dataset

        X, y = load_dataset(name)
    X = sp.csr_matrix(X, dtype=np.float64)
    order = np.random.default_rng(seed).permutation(X.shape[0])
    X = X[order]
    X.sort_indices()
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    y = np.where(np.asarray(y, dtype=np.float64)[order] > 0, 1.0, -1.0)
    return Source(name=name, X=X, Xd=np.ascontiguousarray(X.toarray()), y=y, order=order)


# ---------------------------------------------------------------------------------------------
# Load average, threads, child processes
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# Our strategies and the classes being written (imported lazily)
# ---------------------------------------------------------------------------------------------

def available(what: str) -> tuple[bool, str]:
    """Whether INCAS (``incas``) or the incremental SVM (``incremental``) can be imported."""
    mod, cls = {"incas": ("qpcore_strategies.incas", "INCAS"),
                "incremental": ("qpcore_incremental.incremental", "IncrementalSVM")}[what]
    try:
        m = __import__(mod, fromlist=[cls])
        getattr(m, cls)
    except Exception as e:  # noqa: BLE001 - any failure means "not available"
        return False, f"not available ({mod}.{cls}: {type(e).__name__}: {e})"
    return True, ""


def make_strategy(solver: str) -> Any:
    """``incas``; ``smo`` (wss2); ``decomp:Q`` (decomposition, SVMlight's rule, working sets of Q):
    specs of the one registry (:mod:`qpcore_strategies.registry`)."""
    from qpcore_strategies.registry import make

    return make(solver)


def solver_label(solver: str) -> str:
    return {"incas": "INCAS", "smo": "SMO wss2", "svmlight": "SVMlight V6.02"}.get(
        solver, solver.replace("decomp:", "decomposition q="))


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------

@dataclass
class Ctx(Runs):
    """Settings shared by every run of one invocation: the harness's, and the kernel runs' own."""

    cache_mb: int = 1000
    dtype: Any = np.float64
    anchor_input: str = "dense"
    svmlight: str = "rbf"          # which hard-row kernels also run SVMlight: rbf, all, off
    batch_memo: dict[tuple[Any, ...], float] = field(default_factory=dict)


def arrays(X: Any, Xd: np.ndarray, kind: str) -> Any:
    return Xd if kind == "dense" else X


def eval_qp(X: Any, y: np.ndarray, spec: Spec) -> Any:
    """Our float64 problem without cache: exact matvecs, used only to judge points."""
    from qpcore_formulations.svm import csvc

    return csvc(X, y, spec.C, spec.qkernel(), cache_bytes=0, dtype=np.float64).qp


def judge(qp: Any, x: np.ndarray) -> dict[str, float]:
    from benchmarks.studies.svm import judge as _judge

    return _judge(qp, np.asarray(x, dtype=np.float64))


def svc_alpha(clf: Any, n: int) -> np.ndarray:
    alpha = np.zeros(n)
    coef = clf.dual_coef_
    alpha[clf.support_] = np.abs(np.asarray(coef.toarray() if sp.issparse(coef) else coef).ravel())
    return alpha


def run_anchor(Xin: Any, y: np.ndarray, spec: Spec, ctx: Ctx, tol: float | None = None) -> dict[str, Any]:
    """LIBSVM's fit in a child; the child's timer covers ``SVC.fit`` only."""
    tol = spec.tol if tol is None else tol

    def fit() -> dict[str, Any]:
        from sklearn.svm import SVC

        clf = SVC(**spec.svc_params(), tol=tol, cache_size=ctx.cache_mb, shrinking=True)
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            clf.fit(Xin, y)
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "x": svc_alpha(clf, len(y)), "iterations": int(np.atleast_1d(clf.n_iter_)[0]),
                "n_sv": int(clf.support_.size), "peak_mb": mem.peak_mb, "status": "converged"}

    out = in_child(fit, ctx.anchor_timeout + 30.0)
    if out.get("timeout") or out.get("seconds", 0.0) > ctx.anchor_timeout:
        return {"seconds": float("inf"), "status": f"> {ctx.anchor_timeout:g} s (stopped)", "timeout": True,
                "limit": ctx.anchor_timeout}
    if "error" in out:
        return {"seconds": float("nan"), "status": "error: " + out["error"], "error": True}
    return out


def run_svmlight(X: Any, y: np.ndarray, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """SVMlight's ``svm_learn`` as a subprocess (benchmarks.anchor_svmlight): the timer covers the
    subprocess alone (its reading of the data file, the optimization, its model and α files); -e
    is tol/2 (LIBSVM's guarantee), -m the shared cache size; killed after ``--anchor-timeout``."""
    from benchmarks.anchors.svmlight import run_svmlight as _run

    return _run(X, y, spec.C, spec.qkernel(), tol=spec.tol, cache_mb=ctx.cache_mb, timeout=ctx.anchor_timeout,
                model_objective_too=False)


def wants_svmlight(spec: Spec, ctx: Ctx) -> bool:
    """SVMlight runs in the hard rows (Scheinberg's comparison), on the kernels ``--svmlight`` names."""
    return spec.row.startswith("hard") and (ctx.svmlight == "all" or ctx.svmlight == spec.kernel)


def run_ours(Xin: Any, y: np.ndarray, spec: Spec, solver: str, threads: int, ctx: Ctx, *,
             tol: float | None = None, resume: Any = None, keep_result: bool = False) -> dict[str, Any]:
    """Build csvc(...) and solve it; the timer covers both."""
    from qpcore_formulations.svm import csvc
    from qpcore import solve

    tol = spec.tol if tol is None else tol
    strategy = make_strategy(solver)
    with thread_limit(threads):
        eff = blas_threads()
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            prob = csvc(Xin, y, spec.C, spec.qkernel(), cache_bytes=ctx.cache_mb << 20, dtype=ctx.dtype,
                        compute_dtype=ctx.dtype)
            res = solve(prob.qp, strategy, tol=tol, time_limit=ctx.time_limit, resume=resume)
            seconds = time.perf_counter() - t0
    x = np.array(res.x, dtype=np.float64)
    out = {"seconds": seconds, "x": x, "status": str(res.status), "iterations": int(res.iterations),
           "kkt_gap_solve": float(res.kkt.gap), "n_sv": int(np.count_nonzero(x > 0)), "peak_mb": mem.peak_mb,
           "blas_threads": eff}
    if keep_result:
        out["result"] = res
    return out


# ---------------------------------------------------------------------------------------------
# Batch rows: hard regime, weak regime
# ---------------------------------------------------------------------------------------------

def choose_anchor_input(src: Source, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """Time LIBSVM on the CSR and on the dense array of ``spec`` (dense, sparse, dense, sparse; the
    faster of two runs each); the faster input is used for everything, on both sides."""
    Xs, Xd, y = src.take(spec.n)
    t: dict[str, float] = {"dense": math.inf, "sparse": math.inf}
    for _ in range(2):
        for kind in ("dense", "sparse"):
            r = run_anchor(arrays(Xs, Xd, kind), y, spec, ctx)
            if math.isfinite(r["seconds"]):
                t[kind] = min(t[kind], r["seconds"])
    best = min(t, key=lambda k: t[k])
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

def inc_new(spec: Spec, ctx: Ctx) -> Any:
    from qpcore_incremental.incremental import IncrementalSVM

    return IncrementalSVM(spec.qkernel(), C=spec.C, cache_bytes=ctx.cache_mb << 20)


def inc_rows(model: Any, first_row: int) -> np.ndarray:
    """The data rows of the model's variables (the order of ``model.ids`` / ``model.alpha``), when
    the model holds consecutive rows first_row, first_row + 1, ... learned in that order: ids grow
    with learning, so the rank of an id is its row's offset."""
    ids = np.asarray(model.ids)
    return first_row + np.argsort(np.argsort(ids, kind="stable"), kind="stable")


def inc_judge(model: Any, Xd: np.ndarray, y: np.ndarray, first_row: int, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """The model's α judged by our own problem over its rows, against a tight batch solve of it."""
    rows = inc_rows(model, first_row)
    if not np.array_equal(np.asarray(model.y), y[rows]):
        return {"error": "the model's labels do not match the rows it should hold"}
    qp = eval_qp(Xd[rows], y[rows], spec)
    jd = judge(qp, np.asarray(model.alpha, dtype=np.float64))
    memo = (spec.key, int(rows.min()), int(rows.max()), rows.size)   # the same rows in every stream: solve once
    if memo not in ctx.batch_memo:
        xr = run_ours(Xd[rows], y[rows], spec, "decomp:512", 1, ctx, tol=REF_TOL)["x"]
        ctx.batch_memo[memo] = judge(qp, xr)["objective"]
    f_b = ctx.batch_memo[memo]
    return {"objective": jd["objective"], "kkt_gap": jd["kkt_gap"], "batch": f_b,
            "rel_diff": (jd["objective"] - f_b) / abs(f_b)}


# ---------------------------------------------------------------------------------------------
# Row 3: one example added to a solved model
# ---------------------------------------------------------------------------------------------

def bench_incremental(src: Source, sz: Sizes, ctx: Ctx) -> dict[str, Any]:
    spec = Spec("incremental", sz.inc_base, "rbf", 0.05, 1.0)
    n0, m = sz.inc_base, sz.inc_add
    Xs, Xd, y = src.take(n0 + m)
    kind = ctx.anchor_input
    sample = sorted({int(round(v)) for v in np.linspace(0, m - 1, sz.inc_sample)})
    log(f"[incremental] base {n0} rows, {m} additions, retrains timed for additions {sample}")
    inc_ok, inc_why = available("incremental")

    # (b) our warm-started decomposition: the previous model solved (untimed), then the grown
    # problem resumed from it; (a) LIBSVM retrained on the grown set at tol 1e-3
    prev: dict[int, Any] = {}
    for k in sample:
        r = run_ours(arrays(Xs[:n0 + k], Xd[:n0 + k], kind), y[:n0 + k], spec, "decomp:512", max(ctx.threads), ctx,
                     keep_result=True)
        try:    # only the point is needed (decomposition has no resume state): drop the rest
            import attrs

            prev[k] = attrs.evolve(r["result"], state=None, stats={})
        except Exception:  # noqa: BLE001
            prev[k] = r["result"]
    # (c) INCAS's incremental mode: solve(grown, INCAS(), resume=previous INCAS result) keeps its
    # factor (the previous state is not modified, so the same one serves every repeat)
    prev_incas: dict[int, Any] = {}
    if available("incas")[0]:
        for k in sample:
            try:
                r = run_ours(arrays(Xs[:n0 + k], Xd[:n0 + k], kind), y[:n0 + k], spec, "incas", max(ctx.threads), ctx,
                             keep_result=True)
                prev_incas[k] = r["result"]
            except Exception as e:  # noqa: BLE001 - under development: report, go on
                log(f"[incremental] INCAS on the base set failed: {e}")
                prev_incas.clear()
                break
    fns: dict[str, Callable[[], dict[str, Any]]] = {}
    for k in sample:
        Xg, yg = arrays(Xs[:n0 + k + 1], Xd[:n0 + k + 1], kind), y[:n0 + k + 1]
        fns[f"libsvm tol 1e-3 #{k}"] = partial(run_anchor, Xg, yg, spec, ctx, tol=1e-3)
        for t in ctx.threads:
            fns[f"warm decomp #{k}@{t}"] = partial(run_ours, Xg, yg, spec, "decomp:512", t, ctx, resume=prev[k])
            if k in prev_incas:
                fns[f"INCAS resume #{k}@{t}"] = partial(run_ours, Xg, yg, spec, "incas", t, ctx, resume=prev_incas[k])
    base_model: Any = None
    if inc_ok:
        base_model = inc_new(spec, ctx)
        t0 = time.perf_counter()
        base_model.fit(arrays(Xs[:n0], Xd[:n0], kind), y[:n0])
        log(f"[incremental] base model fitted in {time.perf_counter() - t0:.1f} s (untimed)")
        for t in ctx.threads:
            fns[f"learn x{m}@{t}"] = partial(_learn_stream, base_model, Xs, Xd, y, n0, m, kind, t, spec, ctx)
    runs = interleave(ctx, fns, "incremental")

    def med_of(prefix: str) -> tuple[float, list[float]]:
        ts = [r["seconds"] for k, rs in runs.items() if k.startswith(prefix) for r in rs]
        return (median(ts) if ts else float("nan")), ts

    lib_med, lib_ts = med_of("libsvm")
    out: dict[str, Any] = {"spec": spec.__dict__ | {"key": spec.key}, "base": n0, "additions": m, "sample": sample,
                           "anchor_input": kind, "time": now_iso(), "unavailable": {} if inc_ok else
                           {"incremental": inc_why},
                           "libsvm_retrain": {"seconds": lib_med, "min": min(lib_ts), "max": max(lib_ts),
                                              "runs": len(lib_ts), "tol": 1e-3,
                                              "loaded": any(r["load"]["loaded"] for k, rs in runs.items()
                                                            if k.startswith("libsvm") for r in rs),
                                              "loads": [r["load"] for k, rs in runs.items() if k.startswith("libsvm")
                                                        for r in rs]}}
    def warm_of(prefix: str) -> dict[str, Any]:
        w: dict[str, Any] = {}
        for t in ctx.threads:
            rs = [r for k, v in runs.items() if k.startswith(prefix) and k.endswith(f"@{t}") for r in v]
            ts = [r["seconds"] for r in rs]
            if ts:
                w[str(t)] = {"seconds": median(ts), "min": min(ts), "max": max(ts), "runs": len(ts),
                             "statuses": sorted({r["status"] for r in rs}),
                             "loaded": any(r["load"]["loaded"] for r in rs), "loads": [r["load"] for r in rs]}
        return w

    warm = warm_of("warm decomp")
    out["warm_decomposition"] = warm
    out["incas_resume"] = warm_of("INCAS resume")
    if inc_ok:
        learn: dict[str, Any] = {}
        for t in ctx.threads:
            rs = runs[f"learn x{m}@{t}"]
            per = [r["per_add_median"] for r in rs]
            learn[str(t)] = {"per_add_median": median(per), "min": min(per), "max": max(per), "streams": len(rs),
                             "loaded": any(r["load"]["loaded"] for r in rs), "loads": [r["load"] for r in rs],
                             "ratio_libsvm": lib_med / median(per),
                             "ratio_warm_decomposition": warm[str(t)]["seconds"] / median(per)}
            if str(t) in out["incas_resume"]:
                learn[str(t)]["ratio_incas_resume"] = out["incas_resume"][str(t)]["seconds"] / median(per)
            learn[str(t)]["bar"] = bool(learn[str(t)]["ratio_libsvm"] >= BAR["incremental"])
        last = runs[f"learn x{m}@{ctx.threads[0]}"][-1]
        out["learn"] = learn
        c = last.get("check") or {}
        out["check"] = {"objective_incremental": c.get("objective"), "kkt_gap_incremental": c.get("kkt_gap"),
                        "objective_batch": c.get("batch"), "batch": f"decomposition q=512 at tol {REF_TOL:g}",
                        "rel_diff": c.get("rel_diff"), "error": c.get("error")}
    return out


def _learn_stream(model: Any, Xs: Any, Xd: np.ndarray, y: np.ndarray, n0: int, m: int, kind: str,
                  threads: int, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """The solved base model learns the m next rows one at a time, each learn timed; then (untimed)
    it is checked against a batch solve and the m rows are unlearned again, back to the base model
    for the next stream (a deep copy would copy the model's preallocated kernel cache)."""
    Xin = arrays(Xs, Xd, kind)
    per: list[float] = []
    ids: list[int] = []
    with thread_limit(threads):
        t_all = time.perf_counter()
        for i in range(n0, n0 + m):
            xi = Xin[i:i + 1] if sp.issparse(Xin) else Xin[i]
            t0 = time.perf_counter()
            ids.append(model.learn(xi, float(y[i])))
            per.append(time.perf_counter() - t0)
        total = time.perf_counter() - t_all
        check = inc_judge(model, Xd, y, 0, spec, ctx)
        for pid in reversed(ids):
            model.unlearn(pid)
    return {"seconds": median(per), "per_add_median": median(per), "per_add": per, "total": total,
            "status": "learned", "check": check}


# ---------------------------------------------------------------------------------------------
# Row 4: exact leave-one-out
# ---------------------------------------------------------------------------------------------

def brute_force_loo(Xin: Any, y: np.ndarray, spec: Spec, ctx: Ctx, tol: float = 1e-3) -> dict[str, Any]:
    """LOO as a LIBSVM user does it: fit once; a non-SV's LOO prediction is the full model's; each
    SV is predicted by a model retrained without it. Runs in a child (timeout ``anchor_timeout``)."""

    def work() -> dict[str, Any]:
        from sklearn.svm import SVC

        t0 = time.perf_counter()
        full = SVC(**spec.svc_params(), tol=tol, cache_size=ctx.cache_mb, shrinking=True).fit(Xin, y)
        f = np.asarray(full.decision_function(Xin), dtype=np.float64)
        sv = np.asarray(full.support_)
        keep = np.ones(len(y), dtype=bool)
        for i in sv:
            keep[i] = False
            clf = SVC(**spec.svc_params(), tol=tol, cache_size=ctx.cache_mb, shrinking=True).fit(Xin[keep], y[keep])
            f[i] = float(clf.decision_function(Xin[i:i + 1])[0])
            keep[i] = True
        seconds = time.perf_counter() - t0
        errors = int(np.count_nonzero(np.where(f > 0, 1.0, -1.0) != y))
        return {"seconds": seconds, "errors": errors, "refits": int(sv.size), "status": "done", "decision": f}

    out = in_child(work, ctx.anchor_timeout + 30.0)
    if out.get("timeout") or out.get("seconds", 0.0) > ctx.anchor_timeout:
        return {"seconds": float("inf"), "status": f"> {ctx.anchor_timeout:g} s (stopped)", "timeout": True}
    if "error" in out:
        return {"seconds": float("nan"), "status": "error: " + out["error"]}
    return out


def _loo_errors(res: Any, y: np.ndarray) -> tuple[int, np.ndarray | None]:
    """Error count from whatever leave_one_out() returns: a count, predictions, decision values,
    or an object with ``errors`` / ``decision`` / ``predictions``."""
    if isinstance(res, (int, np.integer)):
        return int(res), None
    for name in ("errors", "n_errors"):
        v = getattr(res, name, None)
        if isinstance(v, (int, np.integer)):
            dec = getattr(res, "decision", None)
            return int(v), None if dec is None else np.asarray(dec, dtype=np.float64)
    for name in ("decision", "decision_values", "values"):
        v = getattr(res, name, None)
        if v is not None:
            d = np.asarray(v, dtype=np.float64)
            return int(np.count_nonzero(np.where(d > 0, 1.0, -1.0) != y)), d
    arr = np.asarray(res, dtype=np.float64)
    if set(np.unique(arr)) <= {-1.0, 1.0}:
        return int(np.count_nonzero(arr != y)), None
    return int(np.count_nonzero(np.where(arr > 0, 1.0, -1.0) != y)), arr


def run_our_loo(Xin: Any, y: np.ndarray, spec: Spec, ctx: Ctx, threads: int) -> dict[str, Any]:
    with thread_limit(threads):
        t0 = time.perf_counter()
        model = inc_new(spec, ctx)
        model.fit(Xin, y)
        res = model.leave_one_out()
        seconds = time.perf_counter() - t0
    errors, dec = _loo_errors(res, y)
    flags = None
    if getattr(res, "error", None) is not None and getattr(res, "ids", None) is not None:
        flags = np.zeros(len(y), dtype=bool)     # by data row: fit gives ids in row order
        flags[np.argsort(np.argsort(np.asarray(res.ids), kind="stable"), kind="stable")] = np.asarray(res.error)
    return {"seconds": seconds, "errors": errors, "status": "done", "decision": dec, "error_flags": flags,
            "loo_only_seconds": float(getattr(res, "seconds", float("nan")))}


def bench_loo(src: Source, sz: Sizes, ctx: Ctx) -> dict[str, Any]:
    spec = Spec("loo", sz.loo, "rbf", 0.05, 1.0, tol=1e-3)
    Xs, Xd, y = src.take(sz.loo)
    Xin = arrays(Xs, Xd, ctx.anchor_input)
    ok, why = available("incremental")
    fns: dict[str, Callable[[], dict[str, Any]]] = {"libsvm brute force": lambda: brute_force_loo(Xin, y, spec, ctx)}
    if ok:
        for t in ctx.threads:
            fns[f"exact LOO@{t}"] = partial(run_our_loo, Xin, y, spec, ctx, t)
    runs = interleave(ctx, fns, "loo")
    br = runs["libsvm brute force"]
    bs = summarize_runs(br)
    bs.pop("x", None)
    bs["errors"] = br[0].get("errors")
    bs["refits"] = br[0].get("refits")
    out: dict[str, Any] = {"spec": spec.__dict__ | {"key": spec.key}, "anchor_input": ctx.anchor_input,
                           "brute_force": bs, "time": now_iso(), "unavailable": {} if ok else {"incremental": why}}
    if ok:
        ours: dict[str, Any] = {}
        for t in ctx.threads:
            rs = runs[f"exact LOO@{t}"]
            s = summarize_runs(rs)
            s.pop("x", None)
            s.update(ratio_stats(rs, br) if len(br) == len(rs) else ratio_stats(rs, br))
            s["errors"] = rs[0]["errors"]
            fo, db = rs[0].get("error_flags"), br[0].get("decision")
            if fo is not None and db is not None:
                s["disagree"] = int(np.count_nonzero(fo != (np.where(np.asarray(db) > 0, 1.0, -1.0) != y)))
            s["loo_only_seconds"] = median([r.get("loo_only_seconds", float("nan")) for r in rs])
            s["speedup"] = 1.0 / s["ratio"] if s.get("ratio") else None
            s["bar"] = bool(s["speedup"] is not None and s["speedup"] >= BAR["loo"] and s["errors"] == bs["errors"])
            ours[str(t)] = s
        out["ours"] = ours
    return out


# ---------------------------------------------------------------------------------------------
# Row 5: sliding window
# ---------------------------------------------------------------------------------------------

def _window_stream(src: Source, sz: Sizes, spec: Spec, ctx: Ctx, threads: int) -> dict[str, Any]:
    """Fit the first window (untimed), then ``IncrementalSVM.window`` over the rest of the stream
    (learn the next row, unlearn the oldest). Every ``win_check``-th model is checked against a
    batch solve inside the helper's callback; that time is measured and taken out of the helper's."""
    Xs, Xd, y = src.take(sz.win_total)
    Xin = arrays(Xs, Xd, ctx.anchor_input)
    model = inc_new(spec, ctx)
    checks: list[dict[str, Any]] = []
    spent = [0.0]

    def callback(mdl: Any, k: int) -> None:
        if (k + 1) % sz.win_check == 0:
            t0 = time.perf_counter()
            c = inc_judge(mdl, Xd, y, k + 1, spec, ctx)
            c["step"] = k + 1
            checks.append(c)
            spent[0] += time.perf_counter() - t0

    with thread_limit(threads):
        model.fit(Xin[:sz.win], y[:sz.win])
        rep = model.window(Xin[sz.win:], y[sz.win:], sz.win, callback=callback)
    seconds = rep.seconds - spent[0]
    return {"seconds": seconds, "rows_per_s": rep.learned / seconds, "steps": rep.learned, "checks": checks,
            "online_errors": rep.online_errors, "helper_seconds": rep.seconds, "check_seconds": spent[0],
            "status": f"{rep.learned} learned, {rep.unlearned} unlearned"}


def bench_window(src: Source, sz: Sizes, ctx: Ctx) -> dict[str, Any]:
    spec = Spec("window", sz.win, "rbf", 0.05, 1.0)
    Xs, Xd, y = src.take(sz.win_total)
    kind = ctx.anchor_input
    ok, why = available("incremental")
    cps = list(range(sz.win + sz.win_check - 1, sz.win_total, sz.win_check))   # last row of checked windows
    fns: dict[str, Callable[[], dict[str, Any]]] = {}
    # the anchor: LIBSVM retrained (tol 1e-3) on each checked window; its throughput is 1 row per fit
    fns["libsvm retrain"] = lambda: _anchor_windows(Xs, Xd, y, cps, sz, spec, ctx, kind)
    if ok:
        for t in ctx.threads:
            fns[f"window@{t}"] = partial(_window_stream, src, sz, spec, ctx, t)
    runs = interleave(ctx, fns, "window")
    lib = runs["libsvm retrain"]
    per_fit = median([r["seconds"] for r in lib])
    out: dict[str, Any] = {"spec": spec.__dict__ | {"key": spec.key, "total": sz.win_total, "check": sz.win_check},
                           "anchor_input": kind, "time": now_iso(), "unavailable": {} if ok else {"incremental": why},
                           "libsvm": {"per_fit_median": per_fit, "rows_per_s": 1.0 / per_fit, "fits": len(cps),
                                      "runs": len(lib), "loaded": any(r["load"]["loaded"] for r in lib),
                                      "loads": [r["load"] for r in lib], "tol": 1e-3}}
    if ok:
        ours: dict[str, Any] = {}
        for t in ctx.threads:
            rs = runs[f"window@{t}"]
            rps = [r["rows_per_s"] for r in rs]
            diffs = [abs(c["rel_diff"]) if "rel_diff" in c else math.inf for r in rs for c in r["checks"]]
            ours[str(t)] = {"rows_per_s": median(rps), "min": min(rps), "max": max(rps), "runs": len(rs),
                            "online_errors": rs[0].get("online_errors"),
                            "ratio_libsvm": median(rps) / (1.0 / per_fit),
                            "checks": rs[0]["checks"], "max_abs_rel_diff": max(diffs) if diffs else None,
                            "loaded": any(r["load"]["loaded"] for r in rs), "loads": [r["load"] for r in rs]}
        out["ours"] = ours
    return out


def _anchor_windows(Xs: Any, Xd: np.ndarray, y: np.ndarray, cps: list[int], sz: Sizes, spec: Spec, ctx: Ctx,
                    kind: str) -> dict[str, Any]:
    ts: list[float] = []
    for i in cps:
        lo = i + 1 - sz.win
        r = run_anchor(arrays(Xs[lo:i + 1], Xd[lo:i + 1], kind), y[lo:i + 1], spec, ctx, tol=1e-3)
        ts.append(r["seconds"])
    return {"seconds": median(ts), "fits": ts, "status": f"{len(ts)} fits"}


# ---------------------------------------------------------------------------------------------
# Store, page
# ---------------------------------------------------------------------------------------------

def _clean(v: Any) -> Any:
    return clean(v, drop=("x", "alpha", "result", "decision", "per_add"))


# the page's cells, as every study renders them (benchmarks.harness)
_e, _r, _sec, _secs, _loads, _flag = fmt_exp, fmt_ratio, fmt_seconds, fmt_summary_seconds, fmt_loads, fmt_flag


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
