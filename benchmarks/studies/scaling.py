"""Platt's scaling experiment: time against training-set size on nested subsets of adult.trn.

    python -m benchmarks.scaling                  # both kernels, every strategy (about 30 min)
    python -m benchmarks.scaling --quick          # the three smallest sizes (a smoke run)

Nested random subsets (one seeded permutation, its first k rows) of Platt's sizes 1,605 …
32,561; the linear kernel with C = 0.05 and the Gaussian kernel of variance 10 (γ = 1/(2·10) =
0.05) with C = 1, as in the SMO paper; tol 1e-3 and a 1000 MB cache budget on every side. Each
solver's time is one run (the median of ``--repeat`` runs), the solvers of a size run interleaved with
LIBSVM first (a LIBSVM run under ``--pair-below`` seconds runs again before each of ours, its time the
median of those runs) and the load check of :mod:`benchmarks.harness`; a solver that passes ``--limit`` seconds
at one size is not run at the larger ones. The fitted slope is the least-squares slope of log time against log size. Writes
``benchmarks/results/scaling.jsonl`` (untracked) and the page ``scaling.md`` and ``scaling.png`` beside it
(``--docs``: into ``docs/benchmarks/``).
"""

from __future__ import annotations

from benchmarks.harness import default_blas_threads

default_blas_threads(2)

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.harness import (RESULTS, Runs, Study, interleave, log, median, page_folder, resolve_run_arguments,  # noqa: E402
                                run_study, study_parser)
from benchmarks.studies.svm import make_strategy, warm_memory  # noqa: E402

SIZES = [1605, 2265, 3185, 4781, 6414, 11221, 16101, 22697, 32561]
KERNELS: dict[str, dict[str, Any]] = {"linear": dict(C=0.05, gamma=None), "rbf": dict(C=1.0, gamma=0.05)}
SOLVERS = ["libsvm", "wss2", "decomp:16", "decomp:64", "decomp:256", "decomp:1024", "chunk:256"]


def _label(s: str) -> str:
    if s == "libsvm":
        return "LIBSVM"
    if s.startswith("decomp:"):
        return f"decomposition q={s.split(':')[1]}"
    if s.startswith("chunk:"):
        return f"chunking M={s.split(':')[1]}"
    return f"SMO {s}"


def run_one(X: Any, y: np.ndarray, kernel: str, solver: str, limit: float, cache_mb: int) -> dict[str, Any]:
    """One timed solve; the objective is judged on our float64 problem afterwards (not timed)."""
    from qpcore_formulations.svm import csvc
    from qpcore import Kernel, solve

    kw = KERNELS[kernel]
    C = float(kw["C"])
    k = Kernel("linear") if kernel == "linear" else Kernel("rbf", gamma=float(kw["gamma"]))
    if solver == "libsvm":
        from sklearn.svm import SVC

        clf = SVC(C=C, kernel=kernel, gamma=kw["gamma"] or "scale", tol=1e-3, cache_size=cache_mb)
        t0 = time.perf_counter()
        clf.fit(X, y)
        sec = time.perf_counter() - t0
        alpha = np.zeros(X.shape[0])
        coef = clf.dual_coef_
        alpha[clf.support_] = np.abs(np.asarray(coef.toarray() if sp.issparse(coef) else coef).ravel())
        status = "converged"
    else:
        compute = np.float32 if kernel == "rbf" and solver != "wss2" else np.float64
        t0 = time.perf_counter()
        prob = csvc(X, y, C, k, cache_bytes=cache_mb << 20, dtype=np.float32, compute_dtype=compute)
        res = solve(prob.qp, make_strategy(solver), tol=1e-3, time_limit=limit)
        sec = time.perf_counter() - t0
        alpha = np.asarray(res.x, dtype=np.float64)
        status = str(res.status)
    judge = csvc(X, y, C, k, cache_bytes=0, dtype=np.float64).qp
    g = judge.gradient(alpha)
    from qpcore import kkt

    return {"seconds": sec, "status": status, "objective": float(0.5 * alpha @ (g + judge.c)),
            "kkt_gap": float(kkt(judge, alpha, g).gap), "n_sv": int(np.count_nonzero(alpha > 0))}


def slope(ns: list[int], ts: list[float]) -> float:
    """Least-squares slope of log t against log n."""
    if len(ns) < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def render(records: list[dict[str, Any]], docs: Path, command: str) -> None:
    """The page and the plot (one panel per kernel)."""
    lines = ["# Platt's scaling experiment on adult.trn", "",
             f"Reproduce: `{command}`. Nested random subsets (seed 0); tol 1e-3; cache 1000 MB on every side; "
             "one run per point (else the median of --repeat), solvers interleaved (a short LIBSVM run again before each of ours, "
             "its median reported); times include building the QP and the final float64 certificate on our side, "
             "`fit()` for LIBSVM. Slopes: least squares of log time on log size over the sizes each solver "
             "finished within the limit.", ""]
    fig = None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    except ImportError:
        axes = None
    for p, kernel in enumerate(KERNELS):
        kw = KERNELS[kernel]
        title = f"{kernel} kernel, C = {kw['C']}" + (f", γ = {kw['gamma']}" if kw["gamma"] else "")
        recs = [r for r in records if r["kernel"] == kernel]
        sizes = sorted({r["n"] for r in recs})
        solvers = [s for s in SOLVERS if any(r["solver"] == s for r in recs)]
        lines += [f"## {title}", "", "| n | " + " | ".join(_label(s) for s in solvers) + " |",
                  "|---|" + "---|" * len(solvers)]
        for n in sizes:
            cells = []
            lib = next((r for r in recs if r["n"] == n and r["solver"] == "libsvm"), None)
            for s in solvers:
                r = next((r for r in recs if r["n"] == n and r["solver"] == s), None)
                if r is None:
                    cells.append("–")
                    continue
                rel = (r["objective"] - lib["objective"]) / abs(lib["objective"]) if lib else float("nan")
                mark = ("" if r["status"] == "converged" else f" ({r['status']})") + (" L" if r.get("loaded") else "")
                cells.append(f"{r['seconds']:.2f}{mark}" + (f" [{rel:+.0e}]" if s != "libsvm" else ""))
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines += ["", "Seconds; in brackets the objective relative to LIBSVM's (negative: lower, better); "
                  "L: other processes used more than a tenth of a core during the run (loaded).", "",
                  "| solver | fitted slope | ratio to LIBSVM at the largest common size |", "|---|---|---|"]
        for s in solvers:
            ok = [r for r in recs if r["solver"] == s and r["status"] == "converged"]
            ns, ts = [r["n"] for r in ok], [r["seconds"] for r in ok]
            ratio = "–"
            if ok and s != "libsvm":
                big = max(ns)
                lib = next((r for r in recs if r["n"] == big and r["solver"] == "libsvm"), None)
                if lib:
                    ratio = f"{ts[ns.index(big)] / lib['seconds']:.2f} (n = {big})"
            lines.append(f"| {_label(s)} | {slope(ns, ts):.2f} | {ratio} |")
            if axes is not None and ok:
                axes[p].loglog(ns, ts, marker="o", linewidth=1.2, label=f"{_label(s)} (slope {slope(ns, ts):.2f})")
        lines.append("")
        if axes is not None:
            axes[p].set_title(f"adult.trn subsets, {title}", fontsize=10)
            axes[p].set_xlabel("training-set size")
            axes[p].set_ylabel("seconds")
            axes[p].grid(True, which="both", alpha=0.3)
            axes[p].legend(fontsize=8)
    docs.mkdir(parents=True, exist_ok=True)
    if fig is not None:
        fig.tight_layout()
        fig.savefig(docs / "scaling.png", dpi=110)
        lines += ["![time against size](scaling.png)", ""]
    (docs / "scaling.md").write_text("\n".join(lines) + "\n")


OUT = RESULTS / "scaling.jsonl"


def scaling_rows(args: argparse.Namespace) -> tuple[list[str], Study]:
    """The rows (``kernel:size``) of the command line and the study measuring them.

    A row's record is one per solver; a solver past the limit (or not converged) at one size of a
    kernel is not run at that kernel's larger sizes.
    """
    sizes = SIZES[:3] if args.quick else SIZES
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    rows = [f"{kernel}:{n}" for kernel in args.kernels.split(",") for n in sizes]
    over: dict[str, set[str]] = {}
    data: list[Any] = []

    def run_row(row: str, a: argparse.Namespace, runs: Runs) -> list[dict[str, Any]]:
        if not data:
            from qpcore_formulations.data.files import load_dataset

            X, y = load_dataset("adult")
            data.extend([sp.csr_matrix(X, dtype=np.float64), y,
                         np.random.default_rng(0).permutation(X.shape[0])])
            if not a.quick:
                warm_memory()
        X, y, perm = data
        kernel, n = row.split(":")[0], int(row.split(":")[1])
        idx = np.sort(perm[:n])
        Xn = X[idx]
        Xn.sort_indices()
        Xn = sp.csr_matrix((Xn.data, Xn.indices.astype(np.int32), Xn.indptr.astype(np.int32)), shape=Xn.shape)
        yn = np.asarray(y[idx], dtype=np.float64)
        gone = over.setdefault(kernel, set())
        solvers = [s for s in a.solvers.split(",") if s not in gone]
        def solver(s: str) -> Callable[[], dict[str, Any]]:
            return lambda: run_one(Xn, yn, kernel, s, a.limit, a.cache_mb)

        timing = interleave(runs, {s: solver(s) for s in solvers}, row, anchor="libsvm" if "libsvm" in solvers else None)
        out = []
        for s in solvers:
            last = timing[s][-1]
            loads = [r["load"] for r in timing[s]]
            r = {"objective": math.nan, "kkt_gap": math.nan, "n_sv": 0, **last,
                 "seconds": median([r["seconds"] for r in timing[s]]), "runs": len(timing[s]),
                 "loaded": any(ld.get("loaded") for ld in loads)}
            out.append({"kernel": kernel, "n": n, "solver": s, **r, "threads": 2})
            log(f"{kernel:6s} n={n:6d} {_label(s):24s} {r['seconds']:8.2f} s  {r['status']:10s} "
                f"f={r['objective']:.8f} gap={r['kkt_gap']:.1e} sv={r['n_sv']}" + ("  LOADED" if r["loaded"] else ""))
            if not r["seconds"] <= a.limit or r["status"] != "converged":
                gone.add(s)
        return out

    def render_run(records: list[dict[str, Any]], a: argparse.Namespace) -> None:
        if a.merge:
            newest: dict[tuple[str, int, str], dict[str, Any]] = {}
            for r in records:
                newest[(r["kernel"], r["n"], r["solver"])] = r
            records = list(newest.values())
        elif records:   # this run's records only
            records = [r for r in records if r.get("run_id") == records[-1].get("run_id")]
        render(records, a.docs, "python -m benchmarks.scaling" + (" --quick" if a.quick else ""))

    return rows, Study(run_row, render_run)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = study_parser("python -m benchmarks.scaling", __doc__, small="quick", out=OUT, docs=True)
    p.set_defaults(repeat=1)    # one run per point: the full study takes half an hour as it is
    p.add_argument("--kernels", default="linear,rbf")
    p.add_argument("--solvers", default=",".join(SOLVERS))
    p.add_argument("--limit", type=float, default=120.0, help="seconds; a solver past it stops growing")
    p.add_argument("--cache-mb", type=int, default=1000)
    p.add_argument("--sizes", default=None, help="comma-separated subset sizes (default: Platt's nine)")
    p.add_argument("--merge", action="store_true",
                   help="render the page from the newest record of every (kernel, size, solver) in the "
                        "results file instead of this run's records only (to complete an interrupted run)")
    args = p.parse_args(argv)
    resolve_run_arguments(p, args, small=args.quick)
    if args.quick:   # a smoke run never writes over the full run's results
        args.out = RESULTS / "quick" / "scaling.jsonl" if args.out == OUT else args.out
    args.docs = page_folder(args.docs, args.out.parent)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows, study = scaling_rows(args)
    run_study(study, args, rows)
    log(f"wrote {args.docs / 'scaling.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
