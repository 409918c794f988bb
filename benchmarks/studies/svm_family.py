"""The SVM family against LIBSVM (issue 25): ν-SVC, one-class, ε-SVR, ν-SVR and the incremental one-class SVM.

    python -m benchmarks.svm_family                                    # every row at full size
    python -m benchmarks.svm_family --rows nu_svc,one_class            # the adult rows only
    python -m benchmarks.svm_family --rows epsilon_svr,nu_svr          # the abalone rows only
    python -m benchmarks.svm_family --rows incremental                 # one learn vs a LIBSVM refit
    python -m benchmarks.svm_family --quick --data synthetic           # tiny sizes, a plumbing check

Rows (issue 25, "Benchmark rows and the bar"), each at the same parameters on both sides:

- ``nu_svc``: ν-SVC, ν = 0.5, on an adult subset of 10,000 rows, 5,000 of each class (RBF γ = 0.05;
  adult has 24% positives, so ν = 0.5 is infeasible on a plain prefix and LIBSVM refuses it);
- ``one_class``: the one-class SVM, ν = 0.1, on the same subset (labels unused);
- ``epsilon_svr``: ε-SVR on abalone (LIBSVM's abalone_scale, all 4,177 rows), RBF γ = 1, C = 10, ε = 0.1;
- ``nu_svr``: ν-SVR on abalone, RBF γ = 1, C = 10, ν = 0.5;
- ``incremental``: one ``learn`` into an incremental one-class model of 2,000 adult rows (ν = 0.1,
  γ = 0.05) against a LIBSVM refit of ``OneClassSVM`` on the 2,001 rows (tol 1e-3, as a LIBSVM
  user refits); each timed learn adds a different new row to the same model (the row is
  unlearned afterwards, untimed).

Protocol (as ``benchmarks.incas``; the harness is :mod:`benchmarks.harness`):

- at each tolerance of ``--tols`` (1e-3 and 1e-6) the anchor (LIBSVM through scikit-learn's
  ``NuSVC``, ``OneClassSVM``, ``SVR``, ``NuSVR``, fitted in a forked child so that it can be
  stopped) and each of our strategies at each of ``--threads`` BLAS thread counts (threadpoolctl)
  run **interleaved** (anchor, ours, anchor, ours, ...), ``--repeat`` times each (median reported);
- our strategies: ``smo`` (LIBSVM's Solver_NU way for the two groups of the ν formulations),
  ``decomposition`` and ``incas`` where the problem has one equality row (one-class, ε-SVR), and
  ``fit``: the training layer's whole fit with ``auto`` (``qpcore_train.fit.fit_formulation``, what
  the estimators and the command line run: for the regressions the mirrored stack of
  :mod:`qpcore_train.mirrored_stack`, the model decoded; regressions only); a
  strategy that does not take a problem (``qpcore_strategies.registry.accepts``) is listed with its
  reason; **best** is, at each thread count, the fastest of ours among those at rel_obj ≤ 1e-6
  (the fastest of all when none is);
- LIBSVM's input, the dense array or the CSR matrix, is the faster of two runs each on the data
  set's first problem at tol 1e-3 (``--anchor-input auto``; on adult the sparse one can be much
  the faster); ours always gets the CSR matrix (the operator densifies it for row blocks);
- our time covers building the problem (``qpcore_formulations.svm_family``, its kernel-row cache of
  ``--cache-mb``) and ``qpcore.solve`` from LIBSVM's start with its final certificate; LIBSVM's
  covers ``fit`` with the same cache size; the claim is the ratio ours / LIBSVM;
- every point is judged by *our* float64 problem (no cache): objective and the KKT gap of
  ``qpcore.kkt``. rel_obj = (f − f_ref)/|f_ref|, f_ref the lowest of every run's objective and an
  untimed tight solve of ours (``--ref-solver`` at tol 1e-9).

LIBSVM's α in our variables (scikit-learn's ``dual_coef_`` placed at ``support_``):

- one-class: α = dual_coef_ (LIBSVM's own scale: 0 ≤ α ≤ 1, Σα = νl, as ours);
- ν-SVC: LIBSVM divides α by r and signs it by y (coefficients y_i α_i / r); ours is
  |dual_coef_| rescaled class by class to Σ_{y=±1} α = νl/2 (the one factor r, exactly feasible);
- ε-SVR: α = max(coef, 0), α* = max(−coef, 0) with coef = dual_coef_ = α − α*;
- ν-SVR: the same, plus an equal amount d_i added to α_i and α*_i (greedily, within the box) so
  that Σα = Σα* = Cνl/2: LIBSVM's coef fixes only α − α*, and adding d to both halves leaves Qx
  and the objective (c = [−y; y]) unchanged.

Results accumulate in a JSON store (one entry per row; re-running a row replaces it) rendered to a
markdown page: ``docs/benchmarks/svm_family.{json,md}`` (``--quick``: ``benchmarks/results/quick/``).
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
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.anchors.libsvm import faster_input, run_libsvm  # noqa: E402
from benchmarks.harness import (  # noqa: E402
    OTHERS_MARGIN,
    add_store_arguments,
    resolve_store_arguments,
    PeakMemory,
    Runs,
    Study,
    blas_threads,
    blas_threads_under,
    clean,
    command_line,
    fmt_seconds,
    interleave,
    log,
    machine_info,
    need_sklearn,
    now_iso,
    ratio_stats,
    resolve_run_arguments,
    run_study,
    study_parser,
    thread_limit,
    summarize_runs,
)
from benchmarks.studies.svm import judge  # noqa: E402
from benchmarks.studies.svm_family_rows import (  # noqa: E402
    FIT,
    BAR,
    FULL,
    libsvm_alpha,
    load_source,
    make_strategy,
    QUICK,
    REF_TOL,
    ROW_NAMES,
    row_spec,
    SEED,
    Sizes,
    solver_label,
    Source,
    Spec,
)
from benchmarks.studies.svm_family_page import render  # noqa: E402


# ---------------------------------------------------------------------------------------------
# Sizes, problems, data
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------

@dataclass
class Ctx(Runs):
    """Settings shared by every run of one invocation: the harness's and the kernel runs' own."""

    cache_mb: int = 1000
    dtype: Any = np.float64
    anchor_input: str = "auto"
    ref_solver: str = "decomp:512"
    refs: dict[str, tuple[str, float | None]] = field(default_factory=dict)
    inputs: dict[str, dict[str, Any]] = field(default_factory=dict)   # data set → LIBSVM's input, and why

    def input_for(self, spec: Spec, src: Source) -> str:
        """LIBSVM's input on ``spec.data``: as asked, or (auto) the faster one on this first problem."""
        if spec.data not in self.inputs:
            if self.anchor_input == "auto":
                self.inputs[spec.data] = choose_anchor_input(spec, src, self)
            else:
                self.inputs[spec.data] = {"chosen": self.anchor_input}
        return str(self.inputs[spec.data]["chosen"])


def eval_qp(spec: Spec, X: Any, y: np.ndarray) -> Any:
    """Our float64 problem without cache: exact matvecs, used only to judge points."""
    return spec.build(X, y, cache_bytes=0, dtype=np.float64).qp


def n_support(x: np.ndarray, n: int) -> int:
    """Points with a nonzero coefficient (α_i, or α_i − α*_i over the 2l variables of a regression),
    as LIBSVM counts its support vectors."""
    coef = x[:n] - x[n:] if x.size == 2 * n else x
    return int(np.count_nonzero(coef))


def run_anchor(spec: Spec, Xin: Any, y: np.ndarray, ctx: Ctx, tol: float) -> dict[str, Any]:
    """LIBSVM's fit in a child (benchmarks.anchors.libsvm); the child's timer covers ``fit`` only."""
    return run_libsvm(lambda: spec.estimator(tol, ctx.cache_mb), Xin, y, lambda est: libsvm_alpha(spec, est, y),
                      ctx.anchor_timeout, supervised=spec.kind != "one-class")


def choose_anchor_input(spec: Spec, src: Source, ctx: Ctx) -> dict[str, Any]:
    """Time LIBSVM on the dense array and on the CSR of ``spec`` at tol 1e-3 (dense, sparse, dense,
    sparse; the faster of two runs each): the faster input serves every row of that data set
    (on adult the sparse one can be much the faster, on abalone the dense one)."""
    Xs, Xd, y = src.take(spec.n, spec.balanced)
    t, best = faster_input(lambda kind: run_anchor(spec, Xd if kind == "dense" else Xs, y, ctx, 1e-3))
    log(f"[anchor input] {spec.data}, {spec.key}: dense {fmt_seconds(t['dense'])} s, sparse "
        f"{fmt_seconds(t['sparse'])} s → {best}")
    return {"problem": spec.key, "dense_s": t["dense"], "sparse_s": t["sparse"], "chosen": best}


def run_ours(spec: Spec, Xin: Any, y: np.ndarray, solver: str, threads: int, ctx: Ctx, tol: float) -> dict[str, Any]:
    """Build the problem and solve it from LIBSVM's start; the timer covers both."""
    from qpcore import solve

    strategy = make_strategy(solver)
    with thread_limit(threads):
        eff = blas_threads()
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            if solver == FIT:
                # the estimators' and the command line's fit: build, the mirrored stack or the
                # strategy, certificate, model
                from qpcore import Kernel
                from qpcore_train.fit import fit_formulation

                extra = {"epsilon": spec.epsilon} if spec.kind == "epsilon-svr" else {"nu": spec.nu}
                res = fit_formulation(spec.kind, Xin, y, Kernel("rbf", gamma=spec.gamma), strategy,
                                      params={"C": spec.C, **extra}, tol=tol, cache_bytes=ctx.cache_mb << 20,
                                      time_limit=ctx.time_limit).results[0]
            else:
                prob = spec.build(Xin, y, cache_bytes=ctx.cache_mb << 20, dtype=ctx.dtype, compute_dtype=ctx.dtype)
                res = solve(prob.qp, strategy, prob.x0, tol=tol, time_limit=ctx.time_limit)
            seconds = time.perf_counter() - t0
    x = np.array(res.x, dtype=np.float64)
    return {"seconds": seconds, "x": x, "status": str(res.status), "iterations": int(res.iterations),
            "kkt_gap_solve": float(res.kkt.gap), "n_sv": n_support(x, y.size), "peak_mb": mem.peak_mb,
            "blas_threads": eff}


def reference(spec: Spec, X: Any, y: np.ndarray, qp: Any, ctx: Ctx) -> tuple[str, float | None]:
    """The untimed tight solve of ours (``ctx.ref_solver`` at REF_TOL), judged by ``qp``; once per row."""
    memo = f"{spec.row}:{spec.n}"
    if memo not in ctx.refs:
        try:
            r = run_ours(spec, X, y, ctx.ref_solver, max(ctx.threads), ctx, REF_TOL)
            ctx.refs[memo] = (f"{solver_label(ctx.ref_solver)} at tol {REF_TOL:g} ({r['status']})",
                              judge(qp, r["x"])["objective"])
        except Exception as e:  # noqa: BLE001 - a failed reference is reported, not fatal
            log(f"[reference] {ctx.ref_solver} at tol {REF_TOL:g} failed: {e}")
            ctx.refs[memo] = (f"{solver_label(ctx.ref_solver)} at tol {REF_TOL:g} failed", None)
    return ctx.refs[memo]


def pick_best(judged: dict[str, dict[str, Any]], threads: int) -> dict[str, Any] | None:
    """The fastest of ours at ``threads`` among those at rel_obj ≤ BAR; of all when none is."""
    ours = [s for k, s in judged.items() if k != "libsvm" and s["threads"] == threads
            and s.get("seconds") is not None and math.isfinite(s["seconds"])]
    good = [s for s in ours if s.get("rel_obj") is not None and s["rel_obj"] <= BAR["rel_obj"]]
    pool = good or ours
    if not pool:
        return None
    b = min(pool, key=lambda s: s["seconds"])
    best = dict(b, solver="best", best_of=b["solver"])
    rat = best.get("ratio")
    best["bar"] = bool(rat is not None and rat <= BAR["ratio"] and best.get("rel_obj") is not None
                       and best["rel_obj"] <= BAR["rel_obj"])
    return best


def bench_problem(spec: Spec, src: Source, tol: float, solvers: list[str], ctx: Ctx) -> dict[str, Any]:
    """One problem at one tolerance: the anchor and each applicable strategy of ours, interleaved."""
    from qpcore_strategies.registry import accepts

    Xs, Xd, y = src.take(spec.n, spec.balanced)
    anchor_input = ctx.input_for(spec, src)
    Xin = Xd if anchor_input == "dense" else Xs
    qp = eval_qp(spec, Xd, y)
    unavailable: dict[str, str] = {}
    fns: dict[str, Callable[[], dict[str, Any]]] = {"libsvm": partial(run_anchor, spec, Xin, y, ctx, tol)}
    for s in solvers:
        why = accepts(make_strategy(s), qp)
        if s == FIT and spec.kind not in ("epsilon-svr", "nu-svr"):
            why = "the training layer's fit is timed on the regressions (one problem, no classes)"
        if why is not None:
            unavailable[s] = why
            continue
        for t in ctx.threads:
            # ours gets the CSR matrix: the operator densifies it for row blocks when it is dense
            # enough and keeps the sparse copy for single rows (each side's fastest input)
            fns[f"{s}@{t}"] = partial(run_ours, spec, Xs, y, s, t, ctx, tol)
    if any(blas_threads_under(t) not in (None, t) for t in ctx.threads):
        log(f"warning: BLAS threads in effect {[blas_threads_under(t) for t in ctx.threads]} for {ctx.threads} asked "
            "(run as `python -m benchmarks.svm_family` so the pool is sized before numpy loads)")
    runs = interleave(ctx, fns, f"{spec.row} tol {tol:g}", anchor="libsvm")
    objs: list[tuple[float, str]] = []
    for k, rs in runs.items():
        for r in rs:
            if r.get("x") is not None:
                r["judge"] = judge(qp, r["x"])
                objs.append((r["judge"]["objective"], k))
    ref_src, f_tight = reference(spec, Xs, y, qp, ctx)
    if f_tight is not None:
        objs.append((f_tight, "tight solve"))
    f_ref, ref_by = min(objs) if objs else (None, None)
    anchor = runs["libsvm"]
    judged: dict[str, dict[str, Any]] = {}
    for k, rs in runs.items():
        sm = summarize_runs(rs, keep=("x", "judge"))
        jd = sm.pop("judge")
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
    for t in ctx.threads:
        best = pick_best(judged, t)
        if best is not None:
            judged[f"best@{t}"] = best
    return {"spec": spec.__dict__ | {"key": spec.key}, "tol": tol, "anchor_input": anchor_input, "f_ref": f_ref,
            "f_tight": f_tight, "ref_source": f"min over every run and {ref_src}", "ref_by": ref_by,
            "results": judged, "unavailable": unavailable, "time": now_iso()}


# ---------------------------------------------------------------------------------------------
# The incremental one-class SVM (qpcore_incremental.incremental_oneclass)
# ---------------------------------------------------------------------------------------------


def incremental_class() -> tuple[Any, str]:
    """(the incremental one-class model's class, "")."""
    from qpcore_incremental.incremental_oneclass import IncrementalOneClass

    return IncrementalOneClass, ""


def inc_new(cls: Any, spec: Spec, ctx: Ctx) -> Any:
    """The model in ``nu`` mode: C = 1/(νl) follows the points (an exact C path after each learn),
    so that its state is LIBSVM's one-class solution scaled by 1/(νl)."""
    from qpcore import Kernel

    return cls(Kernel("rbf", gamma=spec.gamma), nu=spec.nu, cache_bytes=ctx.cache_mb << 20)


def inc_objective(model: Any) -> float:
    """The model's objective in LIBSVM's scale: its α is LIBSVM's times C = 1/(νl) and c = 0, so
    ½αᵀKα is LIBSVM's times C²."""
    return float(model.objective()) / float(model.C) ** 2


def _learn_one(model: Any, x: Any, warm: Any, threads: int) -> dict[str, Any]:
    """One timed ``learn`` of a new row, then (untimed) its ``unlearn``: the model is back as it was.

    An untimed learn and unlearn of another row comes first: the anchor runs in a child forked
    from this process, and after a fork the parent's first write to each page of the model
    faults (copy-on-write), which doubled the measured learn (0.75 → 1.4 ms on the adult row);
    a user's process does not fork between learns.
    """
    with thread_limit(threads):
        wp = model.learn(warm)
        model.unlearn(wp)
        t0 = time.perf_counter()
        pid = model.learn(x)
        seconds = time.perf_counter() - t0
        model.unlearn(pid)
    return {"seconds": seconds, "status": "learned"}


def bench_incremental(src: Source, sz: Sizes, ctx: Ctx) -> dict[str, Any]:
    spec = Spec("incremental", "one-class", "adult", sz.inc_base, 0.05, nu=0.1)
    n0 = sz.inc_base
    Xs, Xd, y = src.take(n0 + sz.inc_sample)
    anchor_input = ctx.input_for(spec, src)
    Xin = Xd if anchor_input == "dense" else Xs
    out: dict[str, Any] = {"spec": spec.__dict__ | {"key": spec.key}, "base": n0, "sample": sz.inc_sample,
                           "anchor_input": anchor_input, "time": now_iso(), "unavailable": {}}
    cls, why = incremental_class()
    fns: dict[str, Callable[[], dict[str, Any]]] = {
        "libsvm": partial(run_anchor, spec, Xin[:n0 + 1], y[:n0 + 1], ctx, 1e-3)}
    model: Any = None
    if cls is not None:
        try:
            model = inc_new(cls, spec, ctx)
            t0 = time.perf_counter()
            model.fit(Xs[:n0])
            log(f"[incremental] base model of {n0} rows fitted in {time.perf_counter() - t0:.1f} s (untimed)")
        except Exception as e:  # noqa: BLE001 - the class is being written: report, go on
            why, model = f"failed ({type(e).__name__}: {e})"[:300], None
    if model is not None:
        new_rows = [Xs[n0 + k] for k in range(sz.inc_sample)]
        pos = {"k": 0}

        def learn(t: int) -> dict[str, Any]:
            k = pos["k"] % len(new_rows)
            pos["k"] += 1
            return _learn_one(model, new_rows[k], new_rows[(k + 1) % len(new_rows)], t)

        for t in ctx.threads:
            fns[f"learn@{t}"] = partial(learn, t)
    else:
        out["unavailable"]["incremental"] = why
    saved = ctx.repeat
    ctx.repeat = max(ctx.repeat, sz.inc_sample if model is not None else ctx.repeat)
    try:
        runs = interleave(ctx, fns, "incremental", anchor="libsvm")
    finally:
        ctx.repeat = saved
    lib = summarize_runs(runs["libsvm"])
    lib.pop("x", None)
    out["libsvm_refit"] = dict(lib, tol=1e-3, rows=n0 + 1)
    if model is not None:
        learn_s: dict[str, Any] = {}
        for t in ctx.threads:
            sm = summarize_runs(runs[f"learn@{t}"])
            sm.pop("x", None)
            sm["speedup"] = lib["seconds"] / sm["seconds"] if sm["seconds"] and math.isfinite(lib["seconds"]) else None
            sm["bar"] = bool(sm["speedup"] is not None and sm["speedup"] >= BAR["incremental"])
            learn_s[str(t)] = sm
        out["learn"] = learn_s
        out["check"] = inc_check(model, Xs, Xd, y, n0, spec, ctx)
    return out


def inc_check(model: Any, Xs: Any, Xd: np.ndarray, y: np.ndarray, n0: int, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """After one more learn (untimed): the model's objective against a tight batch solve on the n0 + 1 rows."""
    try:
        pid = model.learn(Xs[n0])
        f_inc = inc_objective(model)
        model.unlearn(pid)
        s2 = Spec("incremental", "one-class", "adult", n0 + 1, spec.gamma, nu=spec.nu)
        qp = eval_qp(s2, Xd[:n0 + 1], y[:n0 + 1])
        r = run_ours(s2, Xs[:n0 + 1], y[:n0 + 1], ctx.ref_solver, 1, ctx, REF_TOL)
        f_b = judge(qp, r["x"])["objective"]
        return {"objective_incremental": f_inc, "objective_batch": f_b,
                "batch": f"{solver_label(ctx.ref_solver)} at tol {REF_TOL:g}", "rel_diff": (f_inc - f_b) / abs(f_b)}
    except Exception as e:  # noqa: BLE001 - reported on the page
        return {"error": f"{type(e).__name__}: {e}"[:300]}


# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------

def _clean(v: Any) -> Any:
    return clean(v, drop=("x", "alpha", "result", "judge"))


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def _floats(text: str) -> list[float]:
    return [float(t) for t in text.split(",") if t]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = study_parser("python -m benchmarks.svm_family", __doc__, rows=ROW_NAMES, small="quick", threads="1,2")
    p.add_argument("--solvers", default="smo,decomposition,incas", help="ours (registry specs; default %(default)s)")
    p.add_argument("--tols", type=_floats, default=[1e-3, 1e-6], help="stopping tolerances (default 1e-3,1e-6)")
    p.add_argument("--data", default="real", choices=("real", "synthetic"),
                   help="the shared adult and abalone sets (default), or generated stand-ins (tests)")
    p.add_argument("--seed", type=int, default=SEED, help=f"adult subset seed (default {SEED})")
    p.add_argument("--cache-mb", type=int, default=1000, help="kernel cache, both sides (default 1000)")
    p.add_argument("--dtype", default="float64", choices=("float64", "float32"), help="our kernel-row cache")
    p.add_argument("--ref-solver", default="decomp:512", help="the tight reference solve (default %(default)s)")
    p.add_argument("--time-limit", type=float, default=None, help="each of our solves (s; default 600, quick 60)")
    p.add_argument("--anchor-timeout", type=float, default=600.0, help="LIBSVM runs longer are stopped (s)")
    p.add_argument("--anchor-input", default="auto", choices=("auto", "dense", "sparse"),
                   help="LIBSVM's input; auto (default): time both twice on each data set's first problem and "
                        "use the faster (ours always gets the CSR matrix)")
    add_store_arguments(p, "svm_family.json")
    a = p.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    rows = [x for r in rows for x in ({"all": list(ROW_NAMES)}.get(r, [r]))]
    bad = [r for r in rows if r not in ROW_NAMES]
    if bad:
        p.error(f"unknown rows {bad}; known {', '.join(ROW_NAMES)}")
    a.rows = rows
    a.solvers = [s for s in a.solvers.split(",") if s]
    resolve_run_arguments(p, a, small=a.quick)
    if a.time_limit is None:
        a.time_limit = 60.0 if a.quick else 600.0
    resolve_store_arguments(a, small=a.quick)
    return a


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    command = command_line("svm_family", argv)
    if not need_sklearn("svm_family", "LIBSVM"):
        return 2
    sz = QUICK if args.quick else FULL
    mode = "quick" if args.quick else "full"
    ctx = Ctx(cache_mb=args.cache_mb, dtype=np.dtype(args.dtype).type, time_limit=args.time_limit,
              anchor_timeout=args.anchor_timeout, repeat=args.repeat, long=args.long, threads=args.threads,
              pair_below=args.pair_below, anchor_input=args.anchor_input, ref_solver=args.ref_solver)
    machine = machine_info(max(args.threads))
    log(f"{command}\n{machine['cpu']}, {machine['cores']} cores, load average {machine['loadavg']}; "
        f"incremental one-class {incremental_class()[1] or 'available'}")
    t0 = time.perf_counter()
    need = {"adult" if r in ("nu_svc", "one_class", "incremental") else "abalone" for r in args.rows}
    n_syn = {"adult": max(sz.adult, sz.inc_base + sz.inc_sample + 1), "abalone": sz.abalone or 4177}
    sources = {name: load_source(name, args.data, n_syn[name], args.seed) for name in sorted(need)}
    for name, s in sources.items():
        log(f"{name} ({args.data}): {s.X.shape[0]} × {s.X.shape[1]} (read in {time.perf_counter() - t0:.1f} s, not timed)")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    store_path = args.out_dir / "svm_family.json"
    n_abalone = sources["abalone"].X.shape[0] if "abalone" in sources else 0

    def run_row(row: str, a: argparse.Namespace, runs: Runs) -> dict[str, Any]:
        run_meta = {"command": command, "time": now_iso(), "mode": mode, "data": a.data, "seed": a.seed,
                    "threads": a.threads, "cache_mb": a.cache_mb, "dtype": a.dtype, "repeat": a.repeat,
                    "long": a.long, "pair_below": a.pair_below, "anchor_input": a.anchor_input,
                    "sizes": sz.__dict__, "tols": a.tols, "solvers": a.solvers, "ref_solver": a.ref_solver,
                    "load_rule": f"others > {OTHERS_MARGIN} cores during the run", "load_at_start": a.load_at_start,
                    "time_limit": a.time_limit, "anchor_timeout": a.anchor_timeout}
        if row == "incremental":
            rec = bench_incremental(sources["adult"], sz, ctx)
        else:
            spec = row_spec(row, sz, n_abalone)
            src = sources[spec.data]
            rec = {"problems": [bench_problem(spec, src, tol, a.solvers, ctx) for tol in a.tols]}
        run_meta["anchor_check"] = ctx.inputs.get("adult" if row in ("nu_svc", "one_class", "incremental")
                                                  else "abalone")
        rec["_run"] = run_meta
        return rec

    study = Study(run_row, lambda store, a: render(store, a.docs / "svm_family.md"), _clean, store=store_path,
                  mode=mode, meta=lambda: {"machine": machine, "updated": now_iso()})
    run_study(study, args, args.rows, stamp={}, runs=ctx)
    log(f"\nwrote {store_path} and {args.docs / 'svm_family.md'} ({time.perf_counter() - t0:.1f} s)")
    return 0


__all__ = ["BAR", "FULL", "QUICK", "Sizes", "Spec", "libsvm_alpha", "main", "render"]

if __name__ == "__main__":
    sys.exit(main())
