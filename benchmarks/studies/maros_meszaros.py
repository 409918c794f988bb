"""The Maros–Meszaros dense subset: ``qpcore.solve_qp`` against PIQP, ProxQP, OSQP and Clarabel (issue 33, "Bars").

    python -m benchmarks.maros_meszaros                                  # all 31 problems, 1 and 2 threads
    python -m benchmarks.maros_meszaros --problems HS21,QPCBOEI2 --threads 1
    python -m benchmarks.maros_meszaros --solvers ours,piqp --time-limit 20
    python -m benchmarks.maros_meszaros --quick                          # HS21, HS35, QPTEST, one run each

Problems: the 31 files of ``<data>/maros_meszaros/*.mat`` (``qpcore_formulations.data.files.data_dir()``), read as
qpbenchmark's Maros–Meszaros test set reads them (``maros_meszaros.py`` of
github.com/qpsolvers/maros_meszaros_qpbenchmark): ``l ≤ A x ≤ u`` whose last n rows are the
identity (the bounds lb ≤ x ≤ ub; checked here), ±1e20 standing for ±inf; a row with u − l < 1e-10
is an equality A x = b, any other row gives the rows G x ≤ h of its finite sides (x ≤ u as is,
x ≥ l as −x ≤ −l), qpsolvers' form. The matrices are dense, as in qpbenchmark's dense subset.

Solvers: ours is ``qpcore.solve_qp(P, q, G, h, A, b, lb, ub, time_limit=...)`` with its default
settings (``--ours``; ``clarabel-standin`` runs Clarabel through the same adapter, to test the
harness); the anchors run through qpsolvers (the ``bench`` extra) at qpbenchmark's settings of
each accuracy level (``--levels``; :func:`anchor_settings`), each level a separate run as in
qpbenchmark. OSQP and Clarabel, which take sparse matrices only, get CSC copies made outside the
timer (qpbenchmark's ``time_solve_problem`` does the same).

Accuracy, as qpbenchmark defines it (``qpbenchmark/solver_settings.py``, ``results.py``,
``test_set.py``, ``shgeom.py`` of github.com/qpsolvers/qpbenchmark), computed for every solver
from its returned x, y, z, z_box on the problem above (:func:`judge`):

- primal residual  r_p = max(‖Ax − b‖∞, [Gx − h]⁺, [lb − x]⁺, [x − ub]⁺);
- dual residual    r_d = ‖Px + q + Aᵀy + Gᵀz + z_box‖∞;
- duality gap      r_g = |xᵀPx + qᵀx + bᵀy + hᵀz + lbᵀz_box⁻ + ubᵀz_box⁺| (finite bounds only);
- a run *succeeds* at a level when the solver reported success and r_p, r_d, r_g are all
  below that level's tolerance (default 1, low 1e-3, mid 1e-6, high 1e-9);
- the shifted geometric mean of the run times, shift 10 s, counts a run the solver did not
  report solved (or that ran past ``--time-limit``) at the time limit.

Ours runs once per pass and is judged at every level; a status (or an error message) that calls
one of these feasible, bounded, convex problems infeasible, unbounded or nonconvex is a **false
claim**: counted, flagged, and never a success.

Protocol (``benchmarks.harness``): per problem and BLAS thread count (``--threads 1,2``) the
solvers run interleaved (PIQP at the last level, ours, then the others; PIQP again right before
each run of another solver), ``--repeat`` passes (default 3) and the median time reported; a
solver's claim holds only if every one of its runs succeeds, and the residuals shown are the
worst run's. The load is read before every run and other processes' CPU measured during it; a
run during which they used more than 0.1 core is **loaded** and flagged. Results append to
``benchmarks/results/maros_meszaros.jsonl`` (untracked); the page ``maros_meszaros.md`` beside it
(``--docs``: in ``docs/benchmarks/``) is rendered from the latest record of every (problem, threads)
pair (``--quick``: both under ``benchmarks/results/quick/``).
"""

from __future__ import annotations

import sys

from benchmarks.harness import pin_blas_threads, thread_list_from_argv

# OpenBLAS sizes its pool when numpy is first imported: make it as large as the largest thread
# count asked for (threadpoolctl lowers it per run). Only when run as a script.
if __name__ == "__main__":
    pin_blas_threads(max(thread_list_from_argv(sys.argv[1:]) or [2]))

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Iterable  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness import (  # noqa: E402
    RESULTS,
    Runs,
    add_docs_argument,
    Study,
    blas_threads_under,
    clean,
    command_line,
    fmt_seconds,
    interleave,
    log,
    machine_info,
    median,
    now_iso,
    page_folder,
    resolve_run_arguments,
    run_study,
    study_parser,
    thread_limit,
)
from benchmarks.studies.maros_meszaros_set import (  # noqa: E402
    ANCHORS,
    data_folder,
    false_claim,
    FALSE_CLAIMS,
    FloatArray,
    FORMAT,
    judge,
    LEVELS,
    library_residuals,
    load_problem,
    MMProblem,
    problem_names,
    QUICK,
    residuals,
    SHIFT,
    shifted_geometric_mean,
    SOLVERS,
    SPARSE_ONLY,
    success,
    TIME_LIMIT,
)
from benchmarks.studies.maros_meszaros_page import _e, _latest, bars, render, summarize  # noqa: E402
from benchmarks.studies.maros_meszaros_set import anchor_settings  # noqa: E402

__all__ = ["ANCHORS", "FALSE_CLAIMS", "LEVELS", "MMProblem", "QUICK", "SHIFT", "SOLVERS", "anchor_runner",
           "anchor_settings", "bars", "false_claim", "judge", "judge_runs", "library_residuals", "load_problem",
           "main", "ours_runner", "parse_args", "problem_names", "render", "residuals", "resolve_ours",
           "shifted_geometric_mean", "success", "summarize"]


# ---------------------------------------------------------------------------------------------
# Problems
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Accuracy (qpbenchmark's definitions)
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Solvers
# ---------------------------------------------------------------------------------------------


def _failed(status: str) -> dict[str, Any]:
    return {"found": False, "status": status[:300], "x": None, "y": None, "z": None, "z_box": None}


def anchor_runner(prob: MMProblem, solver: str, level: str, time_limit: float | None) -> Callable[[], dict[str, Any]]:
    """A closure solving ``prob`` once with an anchor through ``qpsolvers.solve_problem``."""
    import qpsolvers

    problem = prob.qp_sparse if solver in SPARSE_ONLY else prob.qp_dense
    kwargs = anchor_settings(solver, level, time_limit)

    def run() -> dict[str, Any]:
        try:
            sol = qpsolvers.solve_problem(problem, solver=solver, **kwargs)
        except Exception as e:  # noqa: BLE001 - qpbenchmark counts a raising solver as not solved
            return _failed(f"error: {type(e).__name__}: {e}")
        return {"found": bool(sol.found), "status": "solved" if sol.found else "not solved",
                "x": sol.x, "y": sol.y, "z": sol.z, "z_box": sol.z_box}
    return run


OursSolve = Callable[..., Any]


def _qpcore_solve_qp(*args: Any, **kwargs: Any) -> Any:
    import qpcore

    solve_qp: OursSolve = getattr(qpcore, "solve_qp")
    return solve_qp(*args, **kwargs)


def clarabel_standin(P: Any, q: FloatArray, G: Any = None, h: Any = None, A: Any = None, b: Any = None,
                     lb: Any = None, ub: Any = None, time_limit: float | None = None, **_: Any) -> Any:
    """A stand-in for ``qpcore.solve_qp`` (to test the harness): Clarabel through qpsolvers at
    tolerances 1e-10, returning x, y, z, z_box, status (``converged`` or ``max_iter``) and no kkt."""
    import qpsolvers
    import scipy.sparse as sp

    def csc(M: Any) -> Any:
        return None if M is None else sp.csc_matrix(M)

    kw: dict[str, Any] = {"verbose": False, "tol_feas": 1e-10, "tol_gap_abs": 1e-10, "tol_gap_rel": 0.0}
    if time_limit is not None:
        kw["time_limit"] = float(time_limit)
    sol = qpsolvers.solve_problem(qpsolvers.Problem(csc(P), q, csc(G), h, csc(A), b, lb, ub), solver="clarabel", **kw)
    return SimpleNamespace(x=sol.x, y=sol.y, z=sol.z, z_box=sol.z_box,
                           status="converged" if sol.found else "max_iter", kkt=None)


#: the implementations ``--ours`` picks from
OURS: dict[str, OursSolve] = {"qpcore": _qpcore_solve_qp, "clarabel-standin": clarabel_standin}


def resolve_ours(name: str) -> OursSolve:
    """The function behind ``--ours`` (``qpcore``: ``qpcore.solve_qp``)."""
    return OURS[name]


def _status_code(status: Any) -> str:
    return str(getattr(status, "code", status))


def _kkt_measure(res: Any) -> float | None:
    k = getattr(res, "kkt", None)
    for attr in ("measure", "gap"):
        v = getattr(k, attr, None)
        if isinstance(v, (int, float, np.floating)):
            return float(v)
    return None


def ours_runner(prob: MMProblem, solve: OursSolve, time_limit: float | None,
                sparse_input: bool = False) -> Callable[[], dict[str, Any]]:
    """A closure calling ``solve(P, q, G, h, A, b, lb, ub, time_limit=...)`` once: default settings.

    A status ``converged`` is a reported solution; any other status, or an exception, is not.
    A status or an error message that calls the problem infeasible, unbounded or nonconvex is
    recorded as ``claim`` (:func:`false_claim`).
    """
    if sparse_input:
        import scipy.sparse as sp

        def csr(M: FloatArray | None) -> Any:
            return None if M is None else sp.csr_matrix(M)

        P, G, A = csr(prob.P), csr(prob.G), csr(prob.A)
    else:
        P, G, A = prob.P, prob.G, prob.A
    kw: dict[str, Any] = {} if time_limit is None else {"time_limit": float(time_limit)}

    def run() -> dict[str, Any]:
        try:
            res = solve(P, prob.q, G, prob.h, A, prob.b, prob.lb, prob.ub, **kw)
        except Exception as e:  # noqa: BLE001 - a failure of ours is a result of the benchmark
            msg = f"{type(e).__name__}: {e}"
            return dict(_failed(f"error: {msg}"), claim=false_claim(None, msg), error_type=type(e).__name__)
        code = _status_code(getattr(res, "status", None))
        return {"found": code == "converged", "status": code, "claim": false_claim(code),
                "x": getattr(res, "x", None), "y": getattr(res, "y", None), "z": getattr(res, "z", None),
                "z_box": getattr(res, "z_box", None), "kkt": _kkt_measure(res)}
    return run


def _measured(fn: Callable[[], dict[str, Any]], threads: int) -> Callable[[], dict[str, Any]]:
    """A run for ``timed``: the solve's wall time under the BLAS thread limit."""
    def run() -> dict[str, Any]:
        with thread_limit(threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            out = fn()
            secs = time.perf_counter() - t
        return dict(out, seconds=secs)
    return run


# ---------------------------------------------------------------------------------------------
# One problem
# ---------------------------------------------------------------------------------------------

def judge_runs(prob: MMProblem, runs: list[dict[str, Any]], levels: Iterable[str],
               time_limit: float | None) -> dict[str, Any]:
    """One solver's runs on one problem: median time, status, worst residuals, success per level.

    A run past ``time_limit`` counts as not solved. The claim (found, success at a level) holds
    only if it holds for every run; the residuals are each the largest over the runs.
    """
    secs = [float(r["seconds"]) for r in runs]
    judged = []
    for r in runs:
        found = bool(r.get("found")) and (time_limit is None or r["seconds"] <= time_limit)
        judged.append((found, judge(prob, r.get("x"), r.get("y"), r.get("z"), r.get("z_box"))))
    worst = {k: max(res[k] for _, res in judged) for k in ("primal", "dual", "gap")}
    med = median(secs)
    mid = min(runs, key=lambda r: abs(r["seconds"] - med) if math.isfinite(r["seconds"]) else math.inf)
    claims = sorted({r["claim"] for r in runs if r.get("claim")})
    out: dict[str, Any] = {
        "runs": len(runs), "times": [round(s, 6) for s in secs], "seconds": med, "min": min(secs), "max": max(secs),
        "found": all(f for f, _ in judged), "status": mid.get("status"),
        "statuses": sorted({str(r.get("status")) for r in runs}), "residuals": worst,
        "success": {lv: all(success(f, res, lv) for f, res in judged) for lv in levels},
        "false_claim": claims[0] if claims else None,
        "loads": [r.get("load") for r in runs], "loaded": any(r.get("load", {}).get("loaded") for r in runs)}
    if any("kkt" in r for r in runs):
        out["kkt"] = mid.get("kkt")
    if mid.get("x") is not None and np.all(np.isfinite(mid["x"])):
        out["objective"] = prob.objective(np.asarray(mid["x"], dtype=np.float64))
    return out


def solver_keys(solvers: Iterable[str], levels: list[str]) -> list[str]:
    """``ours`` and ``<anchor>@<level>``, in run order: PIQP at the last level first (the anchor
    of the interleaving), then ours, then the rest."""
    keys = [s if s == "ours" else f"{s}@{lv}" for s in solvers for lv in ([None] if s == "ours" else levels)]
    anchor = f"piqp@{levels[-1]}"
    return ([anchor] if anchor in keys else []) + [k for k in keys if k != anchor]


def bench_problem(name: str, args: argparse.Namespace, ctx: Runs) -> list[dict[str, Any]]:
    """Every solver on one problem at each thread count: one record per thread count."""
    prob = load_problem(name, args.data)
    solve = resolve_ours(args.ours)
    keys = solver_keys(args.solvers, args.levels)
    anchor = keys[0] if keys and keys[0].startswith("piqp@") else None
    out = []
    for t in args.threads:
        fns: dict[str, Callable[[], dict[str, Any]]] = {}
        for k in keys:
            if k == "ours":
                fn = ours_runner(prob, solve, args.time_limit, args.ours_input == "sparse")
            else:
                s, lv = k.split("@")
                fn = anchor_runner(prob, s, lv, args.time_limit)
            fns[k] = _measured(fn, t)
        runs = interleave(ctx, fns, f"{name} @{t}t", anchor=anchor)
        summ = {k: dict(judge_runs(prob, rs, args.levels if k == "ours" else [k.split("@")[1]], args.time_limit),
                        solver=k.split("@")[0], level=None if k == "ours" else k.split("@")[1])
                for k, rs in runs.items()}
        rec = {"format": FORMAT, "problem": name, "threads": t, "quick": bool(args.quick), "n": prob.n,
               "m_eq": prob.m_eq, "m_ineq": prob.m_ineq, "k": int(prob.C.shape[0]), "levels": list(args.levels),
               "time_limit": args.time_limit, "ours": args.ours, "ours_input": args.ours_input, "anchor": anchor,
               "solvers": summ, "blas_threads": blas_threads_under(t), "time": now_iso()}
        o = summ.get("ours")
        if o is not None:
            r = o["residuals"]
            log(f"[{name} @{t}t] ours: {o['status']}, {fmt_seconds(o['seconds'])} s, r_p {_e(r['primal'])} "
                f"r_d {_e(r['dual'])} gap {_e(r['gap'])}; "
                + ", ".join(f"{lv} {'ok' if o['success'][lv] else 'FAIL'}" for lv in args.levels)
                + (f"; FALSE CLAIM: {o['false_claim']}" if o["false_claim"] else ""))
        out.append(rec)
    return out


# ---------------------------------------------------------------------------------------------
# Summary and page
# ---------------------------------------------------------------------------------------------


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for name, pkg in (("qpsolvers", "qpsolvers"), ("piqp", "piqp"), ("proxqp", "proxsuite"), ("osqp", "osqp"),
                      ("clarabel", "clarabel")):
        try:
            out[name] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def _clean(v: Any) -> Any:
    return clean(v, drop=("x", "y", "z", "z_box"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The study's command line (``study_parser`` plus its own flags)."""
    p = study_parser("python -m benchmarks.maros_meszaros", __doc__, small="quick", threads="1,2")
    p.add_argument("--problems", default="all",
                   help=f"comma-separated problem names, or all (default; quick: {','.join(QUICK)})")
    p.add_argument("--solvers", default=",".join(SOLVERS), help="comma-separated, from %(default)s")
    p.add_argument("--levels", default="mid,high",
                   help=f"accuracy levels, from {','.join(LEVELS)} (default %(default)s): each anchor runs at each")
    p.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                   help="per solve (s): ours, OSQP and Clarabel stop there; any run past it counts as not solved, "
                        "and the shifted geometric mean counts a failure at it (default %(default)g, qpbenchmark's)")
    p.add_argument("--ours", default="qpcore", choices=sorted(OURS),
                   help="qpcore: qpcore.solve_qp (default); clarabel-standin: Clarabel behind the same adapter")
    p.add_argument("--ours-input", default="dense", choices=("dense", "sparse"),
                   help="our matrices: dense arrays as the anchors get (default) or scipy CSR")
    p.add_argument("--data", type=Path, default=None, help="the folder of the .mat files (default <data>/maros_meszaros)")
    p.add_argument("--out", type=Path, default=None, help="the JSON-lines results file "
                   "(default benchmarks/results/maros_meszaros.jsonl; quick under benchmarks/results/quick)")
    add_docs_argument(p)
    a = p.parse_args([] if argv is None else argv)
    resolve_run_arguments(p, a, small=a.quick)
    if a.data is None:
        a.data = data_folder()
    known = problem_names(a.data)
    if a.problems == "all":
        a.problems = list(QUICK) if a.quick else known
    else:
        a.problems = [x for x in a.problems.split(",") if x]
    bad = [x for x in a.problems if x not in known]
    if bad:
        p.error(f"unknown problems {bad}; the folder {a.data} has {', '.join(known)}")
    a.solvers = [s for s in a.solvers.split(",") if s]
    if any(s not in SOLVERS for s in a.solvers) or not a.solvers:
        p.error(f"--solvers: choose from {','.join(SOLVERS)}")
    a.levels = [lv for lv in a.levels.split(",") if lv]
    if any(lv not in LEVELS for lv in a.levels) or not a.levels:
        p.error(f"--levels: choose from {','.join(LEVELS)}")
    if not a.time_limit > 0:
        p.error("--time-limit must be > 0")
    folder = RESULTS / "quick" if a.quick else RESULTS
    a.out = a.out or folder / "maros_meszaros.jsonl"
    a.docs = page_folder(a.docs, a.out.parent)
    a.total = len(known)
    return a


def main(argv: list[str] | None = None) -> int:
    """Run the study (see the module docstring); returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    run_id = now_iso()
    command = command_line("maros_meszaros", argv)
    machine = machine_info(max(args.threads))
    log(f"{command}\n{machine['cpu']}, {machine['cores']} cores, load average {machine['loadavg']}")
    if any(blas_threads_under(t) not in (None, t) for t in args.threads):
        log(f"warning: BLAS threads in effect {[blas_threads_under(t) for t in args.threads]} for {args.threads} "
            "asked (run as `python -m benchmarks.maros_meszaros` so the pool is sized before numpy loads)")
    head = {"format": FORMAT, "run_id": run_id, "threads": args.threads, "quick": bool(args.quick),
            "command": command, "machine": machine, "versions": _versions(), "problems": args.problems,
            "solvers": args.solvers, "levels": args.levels, "time_limit": args.time_limit, "ours": args.ours,
            "repeat": args.repeat}

    def write_page(lines: list[dict[str, Any]], a: argparse.Namespace) -> None:
        recs, heads = _latest(lines, bool(a.quick))
        page = render(recs, heads, total=a.total)
        a.docs.mkdir(parents=True, exist_ok=True)
        (a.docs / "maros_meszaros.md").write_text(page, encoding="utf-8")
        for t in sorted({r["threads"] for r in recs}):
            log(f"\n{t} thread(s):\n  " + "\n  ".join(bars(summarize(recs, t), a.total)))
        log(f"\nwrote {a.out} and {a.docs / 'maros_meszaros.md'}")

    run_study(Study(bench_problem, write_page, _clean), args, args.problems,
              stamp={"format": FORMAT, "run_id": run_id}, head=head)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
