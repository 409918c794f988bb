"""A busy machine: our slowdown with one core taken, against LIBSVM's and PIQP's (issue 26, §4).

    python -m benchmarks.busy                       # every row, 3 passes (quiet, busy) each
    python -m benchmarks.busy --quick               # small sizes, one pass (a correctness run)
    python -m benchmarks.busy --threads 2           # ours forced to 2 BLAS threads (the old default)

Rows. ``ijcnn1_decomp``: decomposition (its registry default) on a random subset of ijcnn1.trn,
RBF γ = 1, C = 1, tol 1e-3, against LIBSVM (scikit-learn's SVC, same γ, C, tol and cache);
``adult_smo``: SMO on a subset of adult.trn, RBF γ = 0.05, C = 1; ``box_2000``: GPCG on the dense
box QP of ``benchmarks.qp.box_row`` (n = 2000) at tol 1e-9 · max(1, ‖c‖∞), against PIQP's dense
back-end at eps 1e-10 (the settings of ``benchmarks.qp``).

Protocol. For each row and pass: *quiet* (the anchor, then ours), then *busy*: a ``yes >
/dev/null`` process is started, left running ``--busy-settle`` s before the first timed run (a
shared machine is busy before our run starts, and our thread decision reads the load of the
time just before the run), the anchor and ours run beside it, and it is killed; then
``--quiet-settle`` s before the next quiet run. The slowdown of a solver is the median busy time
over the median quiet time; the row's claim is ours / the anchor's slowdown (target ≤ 1.5).

Our thread decision is automatic (``qpcore.linalg.threads``): the thread variables
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ...) are removed from the environment before
numpy is imported, as a user who never set them has it, and each of our runs records the decision
(``blas_threads`` and its reason). LIBSVM is single-threaded, PIQP runs as its wheel is built
(its dense back-end does not use our BLAS pools). Time only on an otherwise
quiet machine (the quiet runs record other processes' CPU: ``others``). Results append to
``benchmarks/results/busy.jsonl`` (``results/quick/`` with ``--quick``).
"""

from __future__ import annotations

import os
import sys

# The variables through which a user fixes BLAS threads (qpcore.linalg.threads.THREAD_VARIABLES, which
# cannot be imported before numpy): unset, so that the automatic decision is what is measured.
# OpenBLAS sizes its pools when first loaded, so this happens before numpy is imported.
_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                     "GOTO_NUM_THREADS")
_UNSET: list[str] = []
if __name__ == "__main__":
    _UNSET = [f"{v}={os.environ.pop(v)}" for v in _THREAD_VARIABLES if v in os.environ]

import argparse  # noqa: E402
import contextlib  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness import (  # noqa: E402
    REPO,
    Runs,
    append_jsonl,
    clean,
    log,
    machine_info,
    markdown_table,
    median,
    now_iso,
    timed,
)

RESULTS = REPO / "benchmarks" / "results"
TARGET = 1.5          # our slowdown at most this many times the anchor's


@dataclass(frozen=True)
class Row:
    """One comparison: what ours runs, against which anchor, at which sizes."""

    name: str
    kind: str              # "svm" or "box"
    n: int
    quick_n: int
    strategy: str
    anchor: str
    dataset: str = ""
    C: float = 1.0
    gamma: float = 1.0
    tol: float = 1e-3


ROWS: dict[str, Row] = {
    "ijcnn1_decomp": Row("ijcnn1_decomp", "svm", 10_000, 1_500, "decomposition", "libsvm", "ijcnn1", C=1.0, gamma=1.0),
    "adult_smo": Row("adult_smo", "svm", 10_000, 1_500, "smo", "libsvm", "adult", C=1.0, gamma=0.05),
    "box_2000": Row("box_2000", "box", 2_000, 300, "gpcg", "piqp", tol=1e-9),
}


# --- the runs ------------------------------------------------------------------------------------

def _svm_solvers(row: Row, n: int, threads: int | None, cache_mb: int) -> tuple[dict[str, Callable[[], dict[str, Any]]],
                                                                               Callable[[np.ndarray], float]]:
    """LIBSVM and ours on a random n-row subset (seed 0); the objective judge of a dual point."""
    from benchmarks.studies.svm import SVMRow, eval_problem, judge, load_row, run_libsvm
    from qpcore_formulations.svm import csvc
    from qpcore import Kernel, solve
    from qpcore_strategies.registry import make

    data = load_row(SVMRow(row.name, row.dataset, C=row.C, gamma=row.gamma, tol=row.tol, quick_n=n), quick=True)
    log(f"[{row.name}] {data.n} rows × {data.d} features")

    def anchor() -> dict[str, Any]:
        out = run_libsvm(data, "sparse", tol=row.tol, cache_mb=cache_mb)
        return {"seconds": out["seconds"], "x": out["x"]}

    def ours() -> dict[str, Any]:
        strategy = make(row.strategy)
        # the kernel blocks of decomposition in float32, SMO's rows in float64 (as benchmarks.svm)
        compute: Any = np.float32 if row.strategy.startswith("decomp") else np.float64
        t0 = time.perf_counter()
        prob = csvc(data.X, data.y, row.C, Kernel("rbf", gamma=row.gamma), cache_bytes=cache_mb << 20,
                    dtype=np.float32, compute_dtype=compute)
        res = solve(prob.qp, strategy, tol=row.tol, threads=threads)
        secs = time.perf_counter() - t0
        return {"seconds": secs, "x": np.array(res.x, dtype=np.float64), "status": res.status.code,
                "blas_threads": res.stats["blas_threads"], "reason": res.stats["blas_threads_reason"]}

    qp = eval_problem(data)
    return {"anchor": anchor, "ours": ours}, lambda x: float(judge(qp, x)["objective"])


def _box_solvers(row: Row, n: int, threads: int | None) -> tuple[dict[str, Callable[[], dict[str, Any]]],
                                                                Callable[[np.ndarray], float]]:
    """PIQP and GPCG on ``benchmarks.qp.box_row(n)``; the objective at a point clipped to the box."""
    import qpcore
    from benchmarks.studies.qp import box_row, objective, peer
    from qpcore_strategies.registry import make

    data = box_row(n)
    run_piqp = peer("piqp", data)

    def anchor() -> dict[str, Any]:
        t0 = time.perf_counter()
        x = run_piqp()
        return {"seconds": time.perf_counter() - t0, "x": x}

    def ours() -> dict[str, Any]:
        t0 = time.perf_counter()
        qp = qpcore.QP(data["Q"], data["c"], data["lb"], data["ub"])
        tol = row.tol * max(1.0, float(np.abs(qp.c).max()))
        res = qpcore.solve(qp, make(row.strategy), tol=tol, max_iter=100_000, threads=threads)
        secs = time.perf_counter() - t0
        return {"seconds": secs, "x": res.x, "status": res.status.code,
                "blas_threads": res.stats["blas_threads"], "reason": res.stats["blas_threads_reason"]}

    return {"anchor": anchor, "ours": ours}, lambda x: objective(data, x)


@contextlib.contextmanager
def one_core_busy(settle: float) -> Iterator[subprocess.Popen[bytes]]:
    """``yes > /dev/null`` (a Python spin loop where ``yes`` is missing) for the duration, killed after."""
    cmd = [shutil.which("yes") or "yes"] if shutil.which("yes") else [sys.executable, "-c", "while True: pass"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(settle)
        yield proc
    finally:
        proc.kill()
        proc.wait()


# --- one row -------------------------------------------------------------------------------------

def _slowdown(busy: list[float], quiet: list[float]) -> float | None:
    b = [s for s in busy if math.isfinite(s)]
    q = [s for s in quiet if math.isfinite(s)]
    return median(b) / median(q) if b and q and median(q) > 0 else None


def bench(row: Row, args: argparse.Namespace, ctx: Runs) -> dict[str, Any]:
    """Passes of (quiet: anchor, ours; busy: anchor, ours) on one row; the slowdowns and their ratio."""
    n = row.quick_n if args.quick else row.n
    if row.kind == "svm":
        solvers, f = _svm_solvers(row, n, args.threads, args.cache_mb)
    else:
        solvers, f = _box_solvers(row, n, args.threads)
    runs: dict[str, list[dict[str, Any]]] = {f"{k}_{c}": [] for c in ("quiet", "busy") for k in solvers}
    for p in range(ctx.repeat):
        for cond in ("quiet", "busy"):
            busy = one_core_busy(args.busy_settle) if cond == "busy" else contextlib.nullcontext()
            if cond == "quiet":
                time.sleep(args.quiet_settle)
            with busy, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for k, fn in solvers.items():
                    r = timed(ctx, fn)
                    runs[f"{k}_{cond}"].append(r)
                    others = r["load"].get("others", "?")
                    extra = f"  threads {r['blas_threads']} ({r['reason']})" if "blas_threads" in r else ""
                    log(f"[{row.name}] pass {p + 1} {cond:<5} {k:<6} {r['seconds']:8.3f} s  others {others}{extra}")
    # judged after the timed runs (and with no spinner beside): each point's objective
    for rs in runs.values():
        for r in rs:
            x = r.pop("x", None)
            r["objective"] = f(x) if x is not None else math.nan
    ref = min((r["objective"] for rs in runs.values() for r in rs if math.isfinite(r["objective"])),
              default=math.nan)
    for rs in runs.values():
        for r in rs:
            r["rel_obj"] = (r["objective"] - ref) / max(abs(ref), 1e-300) if math.isfinite(ref) else math.nan

    def secs(key: str) -> list[float]:
        return [float(r["seconds"]) for r in runs[key]]

    ours_sd = _slowdown(secs("ours_busy"), secs("ours_quiet"))
    anchor_sd = _slowdown(secs("anchor_busy"), secs("anchor_quiet"))
    ratio = ours_sd / anchor_sd if ours_sd is not None and anchor_sd is not None and anchor_sd > 0 else None
    return {"row": row.name, "n": n, "strategy": row.strategy, "anchor": row.anchor, "quick": args.quick,
            "threads_forced": args.threads,
            "median": {k: median(secs(k)) for k in runs},
            "ours_slowdown": ours_sd, "anchor_slowdown": anchor_sd, "ratio": ratio,
            "meets_target": ratio is not None and ratio <= TARGET,
            "threads_quiet": sorted({str(r.get("blas_threads")) for r in runs["ours_quiet"]}),
            "threads_busy": sorted({str(r.get("blas_threads")) for r in runs["ours_busy"]}),
            "max_rel_obj": max((r["rel_obj"] for rs in runs.values() for r in rs), default=math.nan),
            "max_quiet_others": max((float(r["load"].get("others", math.nan)) for k in ("anchor_quiet", "ours_quiet")
                                     for r in runs[k]), default=math.nan),
            "runs": runs}


def render(records: list[dict[str, Any]]) -> str:
    """The table: medians, both slowdowns, their ratio against the target, our thread decisions."""
    def f(v: Any, spec: str = ".3f") -> str:
        return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)

    body = []
    for r in records:
        m = r["median"]
        body.append([r["row"], str(r["n"]), f"{r['strategy']} / {r['anchor']}",
                     f"{f(m['ours_quiet'])} → {f(m['ours_busy'])}", f"{f(m['anchor_quiet'])} → {f(m['anchor_busy'])}",
                     f(r["ours_slowdown"], ".2f"), f(r["anchor_slowdown"], ".2f"),
                     f(r["ratio"], ".2f") + (" ✓" if r["meets_target"] else " ✗"),
                     f"{','.join(r['threads_quiet'])} / {','.join(r['threads_busy'])}",
                     f(r["max_rel_obj"], ".1e"), f(r["max_quiet_others"], ".2f")])
    head = ["row", "n", "ours / anchor", "ours s (quiet → busy)", "anchor s (quiet → busy)", "ours ×", "anchor ×",
            f"ratio (≤ {TARGET})", "threads quiet / busy", "max rel_obj", "quiet others"]
    return markdown_table(head, body)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.busy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated rows (default all: {', '.join(ROWS)})")
    p.add_argument("--quick", action="store_true", help="small sizes, one pass (a correctness run, not a result)")
    p.add_argument("--repeat", type=int, default=None, help="passes (quiet, busy) per row (default 3; --quick 1)")
    p.add_argument("--threads", type=int, default=None, help="force our BLAS threads (default: automatic)")
    p.add_argument("--busy-settle", type=float, default=1.0, help="seconds the spinner runs before the busy runs")
    p.add_argument("--quiet-settle", type=float, default=1.0, help="seconds of quiet before the quiet runs")
    p.add_argument("--cache-mb", type=int, default=200, help="kernel cache of both SVM sides (MB)")
    args = p.parse_args(argv)
    bad = [k for k in args.rows.split(",") if k not in ROWS]
    if bad:
        p.error(f"unknown rows {bad}; choose from {list(ROWS)}")
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.repeat < 1 or (args.threads is not None and args.threads < 1):
        p.error("--repeat and --threads must be ≥ 1")
    args.out = (RESULTS / "quick" if args.quick else RESULTS) / "busy.jsonl"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from qpcore.linalg.threads import THREAD_VARIABLES

    assert set(THREAD_VARIABLES) == set(_THREAD_VARIABLES)
    if _UNSET:
        log(f"unset for this run (the automatic thread decision is what is measured): {', '.join(_UNSET)}")
    ctx = Runs(repeat=args.repeat)
    records = [bench(ROWS[k], args, ctx) for k in args.rows.split(",")]
    table = render(records)
    print(table, flush=True)
    append_jsonl(args.out, clean({"run": now_iso(), "machine": machine_info(args.threads or 0), "rows": records,
                                  "unset": _UNSET, "command": " ".join(["python -m benchmarks.busy", *sys.argv[1:]])}))
    log(f"appended to {args.out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
