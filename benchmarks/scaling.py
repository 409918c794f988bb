"""Platt's scaling experiment: time against training-set size on nested subsets of adult.trn.

    python -m benchmarks.scaling                  # both kernels, every strategy (about 30 min)
    python -m benchmarks.scaling --quick          # the three smallest sizes (a smoke run)

Nested random subsets (one seeded permutation, its first k rows) of Platt's sizes 1,605 …
32,561; the linear kernel with C = 0.05 and the Gaussian kernel of variance 10 (γ = 1/(2·10) =
0.05) with C = 1, as in the SMO paper; tol 1e-3 and a 1000 MB cache budget on every side. Each
solver's time is one run; a solver that passes ``--limit`` seconds at one size is not run at the
larger ones. The fitted slope is the least-squares slope of log time against log size. Writes
``benchmarks/results/scaling.jsonl``, ``docs/benchmarks/scaling.md`` and ``scaling.png``.
"""

from __future__ import annotations

from benchmarks.harness import append_jsonl, default_blas_threads, read_jsonl

default_blas_threads(2)

import argparse  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.measure import machine_info, now_iso  # noqa: E402
from benchmarks.svm import make_strategy, warm_memory  # noqa: E402

SIZES = [1605, 2265, 3185, 4781, 6414, 11221, 16101, 22697, 32561]
KERNELS = {"linear": dict(C=0.05, gamma=None), "rbf": dict(C=1.0, gamma=0.05)}
SOLVERS = ["libsvm", "wss2", "decomp:16", "decomp:64", "decomp:256", "decomp:1024", "chunk:256"]
ROOT = Path(__file__).resolve().parent


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
    from problems.svm import csvc
    from qpcore import Kernel, solve

    kw = KERNELS[kernel]
    C = float(kw["C"])  # type: ignore[arg-type]
    k = Kernel("linear") if kernel == "linear" else Kernel("rbf", gamma=float(kw["gamma"]))  # type: ignore[arg-type]
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
             "one run per point; times include building the QP and the final float64 certificate on our side, "
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
                mark = "" if r["status"] == "converged" else f" ({r['status']})"
                cells.append(f"{r['seconds']:.2f}{mark}" + (f" [{rel:+.0e}]" if s != "libsvm" else ""))
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines += ["", "Seconds; in brackets the objective relative to LIBSVM's (negative: lower, better).", "",
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the three smallest sizes only")
    p.add_argument("--kernels", default="linear,rbf")
    p.add_argument("--solvers", default=",".join(SOLVERS))
    p.add_argument("--limit", type=float, default=120.0, help="seconds; a solver past it stops growing")
    p.add_argument("--cache-mb", type=int, default=1000)
    p.add_argument("--docs", type=Path, default=None)
    p.add_argument("--sizes", default=None, help="comma-separated subset sizes (default: Platt's nine)")
    p.add_argument("--merge", action="store_true",
                   help="render the page from the newest record of every (kernel, size, solver) in the "
                        "results file instead of this run's records only (to complete an interrupted run)")
    args = p.parse_args(argv)
    from problems.datasets import load_dataset

    X, y = load_dataset("adult")
    X = sp.csr_matrix(X, dtype=np.float64)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    sizes = SIZES[:3] if args.quick else SIZES
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    out = ROOT / "results" / ("quick" if args.quick else "") / "scaling.jsonl"
    docs = args.docs or (ROOT / "results" / "quick" if args.quick else ROOT.parent / "docs" / "benchmarks")
    out.parent.mkdir(parents=True, exist_ok=True)
    run_id = now_iso()
    machine = machine_info(2)
    records: list[dict[str, Any]] = []
    warm_memory()
    for kernel in args.kernels.split(","):
        over: set[str] = set()
        for n in sizes:
            idx = np.sort(perm[:n])
            Xn = X[idx]
            Xn.sort_indices()
            Xn = sp.csr_matrix((Xn.data, Xn.indices.astype(np.int32), Xn.indptr.astype(np.int32)), shape=Xn.shape)
            yn = np.asarray(y[idx], dtype=np.float64)
            for s in args.solvers.split(","):
                if s in over:
                    continue
                r = run_one(Xn, yn, kernel, s, args.limit, args.cache_mb)
                rec = {"run_id": run_id, "kernel": kernel, "n": n, "solver": s, **r,
                       "machine": machine.get("cpu"), "threads": 2}
                records.append(rec)
                append_jsonl(out, rec)
                print(f"{kernel:6s} n={n:6d} {_label(s):24s} {r['seconds']:8.2f} s  {r['status']:10s} "
                      f"f={r['objective']:.8f} gap={r['kkt_gap']:.1e} sv={r['n_sv']}", flush=True)
                if r["seconds"] > args.limit or r["status"] != "converged":
                    over.add(s)
    if args.merge:
        newest: dict[tuple[str, int, str], dict[str, Any]] = {}
        for r in read_jsonl(out):
            newest[(r["kernel"], r["n"], r["solver"])] = r
        records = list(newest.values())
    render(records, docs, "python -m benchmarks.scaling" + (" --quick" if args.quick else ""))
    print(f"wrote {docs / 'scaling.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
