"""ASVM against LIBLINEAR's L2-loss SVM, side by side in one process.

    python -m benchmarks.asvm                       # adult, ijcnn1, 2M×32 synthetic (a few minutes)
    python -m benchmarks.asvm --rows synth7m        # the paper's 7M×32 size: time and peak memory
    python -m benchmarks.asvm --cv                  # tenfold accuracy against LIBSVM's hinge loss

The problem on both sides: min ½(‖w‖² + b²) + C Σ max(0, 1 − y_i(x_iᵀw + b))², the bias regularized
(LIBLINEAR ``-s 1 -B 1``, scikit-learn ``LinearSVC(loss="squared_hinge", dual=True,
intercept_scaling=1)``); for ASVM ν = 2C and b = −γ. Both sides are scored by this primal objective
against a reference from a finite Newton method on the primal (independent of both solvers, run to
machine precision; the lower of it and the solvers' own values is f_ref).

LIBLINEAR's stopping rule is not ours, so it is run at eps = 1e-1, 1e-2, … and timed at the loosest
eps whose primal objective is within ``--rel`` (1e-6) of f_ref: the same accuracy on both sides.
LIBLINEAR at that eps and ASVM (2 threads, then 1) run interleaved with the load check of
:mod:`benchmarks.harness`; times are the median of ``--repeat`` runs; ours include building the QP
(and densifying sparse data).
"""

from __future__ import annotations

from benchmarks.harness import default_blas_threads

default_blas_threads(2)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.harness import (RESULTS, Runs, Study, fmt_flag, interleave, log, median, page_folder, ratio_stats,  # noqa: E402
                                resolve_run_arguments, run_study, study_parser,
                                thread_limit)

ROWS = ("adult", "ijcnn1", "synth2m")


def synthetic(m: int, n: int = 32, seed: int = 0, shift: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussians N(±shift·e, I) in n dimensions, half of the rows each, in place."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    h = m // 2
    X[:h] += shift
    X[h:] -= shift
    y = np.ones(m)
    y[h:] = -1.0
    return X, y


SYNTHETIC = {  # name: (rows, shift); shift 0.5: means 5.7σ apart (Bayes error 0.2%), 0.1: 1.1σ (29%)
    "synth2m": (2_000_000, 0.5), "synth7m": (7_000_000, 0.5), "synth200k_heavy": (200_000, 0.1),
}


def load_row(name: str) -> tuple[Any, np.ndarray]:
    """The data of a benchmark row."""
    if name in SYNTHETIC:
        m, shift = SYNTHETIC[name]
        return synthetic(m, shift=shift)
    from qpcore_formulations.data.files import load_dataset

    X, y = load_dataset(name)
    X = sp.csr_matrix(X, dtype=np.float64)
    return X, np.asarray(y, dtype=np.float64)


def primal(X: Any, y: np.ndarray, C: float, w: np.ndarray, b: float) -> float:
    """½(‖w‖² + b²) + C Σ max(0, 1 − y(Xw + b))²."""
    xi = np.maximum(0.0, 1.0 - y * (np.asarray(X @ w).ravel() + b))
    return float(0.5 * (w @ w + b * b) + C * (xi @ xi))


def newton_reference(X: Any, y: np.ndarray, C: float, max_iter: int = 200) -> tuple[np.ndarray, float]:
    """The L2-loss primal by a finite Newton method with exact line search (Mangasarian 2002).

    The objective is a strongly convex piecewise quadratic; Newton steps on the current active set
    I = {i : y_i(x̃_iᵀw̃) < 1} with an exact search along the step converge finitely. The generalized
    Hessian I + 2C X̃_IᵀX̃_I is (n+1)×(n+1), so this is cheap for the data sets here.
    """
    m, n = X.shape
    ysign = y

    def Xt(v: np.ndarray) -> np.ndarray:     # X̃ v, X̃ = [X, 1]
        return np.asarray(np.asarray(X @ v[:n]).ravel() + v[n])

    def XtT(r: np.ndarray) -> np.ndarray:    # X̃ᵀ r
        return np.concatenate((np.asarray(X.T @ r).ravel(), [r.sum()]))

    wt = np.zeros(n + 1)
    for _ in range(max_iter):
        mar = ysign * Xt(wt)
        act = mar < 1
        grad = wt - 2 * C * XtT(np.where(act, ysign * (1 - mar), 0.0))
        if np.abs(grad).max() <= 1e-13 * max(1.0, np.abs(wt).max()) * max(1.0, 2 * C * m):
            break
        Xa = X[np.flatnonzero(act)]
        Xa = Xa.toarray() if sp.issparse(Xa) else Xa
        Xa = np.hstack((Xa, np.ones((Xa.shape[0], 1))))
        Hm = np.eye(n + 1) + 2 * C * (Xa.T @ Xa)
        d = -np.linalg.solve(Hm, grad)
        # exact line search on the piecewise quadratic φ(t) = f(w̃ + t d): its slope is monotone
        Xd = ysign * Xt(d)
        lo, hi = 0.0, 1.0

        def slope(t: float) -> float:
            r = 1 - mar - t * Xd
            a = r > 0
            return float(wt @ d + t * (d @ d) - 2 * C * (r[a] @ Xd[a]))

        while slope(hi) < 0:
            lo, hi = hi, 2 * hi
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if slope(mid) < 0:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-15 * hi:
                break
        wt = wt + hi * d if slope(1.0) < 0 or hi < 1.0 else wt + d
    return wt, primal(X, y, C, wt[:n], wt[n])


def run_asvm(X: Any, y: np.ndarray, C: float, tol: float) -> tuple[dict[str, Any], Callable[[], Any]]:
    """A closure that builds and solves the ASVM dual; its record is filled on each call."""
    from qpcore_formulations.asvm import asvm_dual
    from qpcore import solve
    from qpcore_strategies.asvm import ASVM

    rec: dict[str, Any] = {}

    def fit() -> Any:
        P = asvm_dual(X, y, nu=2 * C)
        r = solve(P.qp, ASVM(), tol=tol)
        w, gamma = P.primal(r.x)
        rec.update(w=w, b=-gamma, status=r.status.code, iterations=r.iterations, kkt=r.kkt.measure,
                   counters={k: v for k, v in r.stats.items() if isinstance(v, int)})
        return r

    return rec, fit


def liblinear(X: Any, y: np.ndarray, C: float, eps: float) -> dict[str, Any]:
    """One fit of scikit-learn's LinearSVC (LIBLINEAR -s 1 -B 1) at stopping tolerance eps, timed."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        t = time.perf_counter()
        mdl = LinearSVC(loss="squared_hinge", dual=True, C=C, fit_intercept=True, intercept_scaling=1.0,
                        tol=eps, max_iter=1000, random_state=0).fit(X, y)
        seconds = time.perf_counter() - t
    return {"w": mdl.coef_.ravel().copy(), "b": float(mdl.intercept_[0]), "seconds": seconds,
            "epochs": int(np.max(mdl.n_iter_)),
            "hit_max_iter": any(issubclass(w.category, ConvergenceWarning) for w in caught)}


def clocked(fn: Callable[[], Any], threads: int | None = None) -> Callable[[], dict[str, Any]]:
    """``fn`` as a run for :func:`benchmarks.harness.interleave`: its wall time (under ``threads``)."""
    def run() -> dict[str, Any]:
        with thread_limit(threads) if threads else contextlib.nullcontext():
            t = time.perf_counter()
            fn()
            return {"seconds": time.perf_counter() - t}
    return run


def bench_row(name: str, C: float, args: argparse.Namespace, runs: Runs) -> dict[str, Any]:
    """One row: reference; LIBLINEAR's loosest eps meeting the accuracy bar (one fit each); then
    LIBLINEAR at that eps and ASVM (2 threads, 1 thread) timed interleaved, with the load check."""
    X, y = load_row(name)
    log(f"[{name}] m={X.shape[0]} n={X.shape[1]} C={C}")
    wt, f_newton = newton_reference(X, y, C)
    rec, fit = run_asvm(X, y, C, args.tol)
    fit()
    f_ours = primal(X, y, C, rec["w"], rec["b"])
    f_ref = min(f_newton, f_ours)
    lib: list[dict[str, Any]] = []
    chosen = None
    for eps in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
        fit_l = liblinear(X, y, C, eps)
        f = primal(X, y, C, fit_l["w"], fit_l["b"])
        f_ref = min(f_ref, f)
        entry = {"eps": eps, "objective": f, "seconds": fit_l["seconds"], "epochs": fit_l["epochs"],
                 "hit_max_iter": fit_l["hit_max_iter"]}
        lib.append(entry)
        log(f"  LIBLINEAR eps={eps:.0e}: {entry['seconds']:.3f} s  f={f:.12g} epochs={entry['epochs']}")
        if (f - f_ref) / abs(f_ref) <= args.rel:
            chosen = entry
            break
    solvers = {"asvm": clocked(fit), "asvm_1thread": clocked(fit, 1)}
    if chosen:
        eps_c = chosen["eps"]
        solvers = {"liblinear": clocked(lambda: liblinear(X, y, C, eps_c)), **solvers}
    timing = interleave(runs, solvers, name, anchor="liblinear" if chosen else None)
    loads = [r["load"] for rs in timing.values() for r in rs]
    out = {
        "row": name, "m": int(X.shape[0]), "n": int(X.shape[1]), "C": C, "nu": 2 * C, "tol": args.tol,
        "f_ref": f_ref, "f_newton": f_newton,
        "ours_seconds": median([r["seconds"] for r in timing["asvm"]]),
        "ours_seconds_1thread": median([r["seconds"] for r in timing["asvm_1thread"]]),
        "ours_objective": f_ours, "ours_rel": (f_ours - f_ref) / abs(f_ref),
        "ours_status": rec["status"], "ours_iterations": rec["iterations"], "ours_kkt": rec["kkt"],
        "ours_counters": rec["counters"],
        "liblinear": [{**e, "rel": (e["objective"] - f_ref) / abs(f_ref)} for e in lib],
        "liblinear_eps": chosen["eps"] if chosen else None,
        "liblinear_seconds": median([r["seconds"] for r in timing["liblinear"]]) if chosen else None,
        "liblinear_rel": (chosen["objective"] - f_ref) / abs(f_ref) if chosen else None,
        "loads": loads, "loaded": any(ld.get("loaded") for ld in loads),
    }
    if chosen:
        out["ratio"] = ratio_stats(timing["asvm"], timing["liblinear"])["ratio"]
        out["ratio_1thread"] = ratio_stats(timing["asvm_1thread"], timing["liblinear"])["ratio"]
    log(f"  ASVM {out['ours_seconds']:.3f} s (1 thread {out['ours_seconds_1thread']:.3f} s) rel {out['ours_rel']:+.1e} "
        f"{rec['status']} it={rec['iterations']}; ratio {out.get('ratio') or float('nan'):.3f}"
        + ("  LOADED" if out["loaded"] else ""))
    return out


def big_row(name: str, C: float, tol: float) -> dict[str, Any]:
    """ASVM alone on a synthetic size: time, and peak memory against the data array (tracemalloc)."""
    from qpcore_formulations.asvm import asvm_dual
    from qpcore import solve
    from qpcore_strategies.asvm import ASVM

    t0 = time.perf_counter()
    X, y = load_row(name)
    t_data = time.perf_counter() - t0
    data_bytes = X.nbytes
    tracemalloc.start()
    tracemalloc.reset_peak()
    t = time.perf_counter()
    P = asvm_dual(X, y, nu=2 * C)
    r = solve(P.qp, ASVM(), tol=tol)
    w, gamma = P.primal(r.x)
    seconds = time.perf_counter() - t
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    f = primal(X, y, C, w, -gamma)
    out = {"row": name, "m": int(X.shape[0]), "n": int(X.shape[1]), "C": C, "nu": 2 * C, "tol": tol,
           "ours_seconds": seconds, "data_seconds": t_data, "status": r.status.code, "iterations": r.iterations,
           "kkt": r.kkt.measure, "objective": f, "data_bytes": data_bytes, "traced_peak_bytes": peak,
           "peak_over_data": (data_bytes + peak) / data_bytes, "max_rss_bytes": rss,
           "rss_over_data": rss / data_bytes,
           "counters": {k: v for k, v in r.stats.items() if isinstance(v, int)}}
    print(json.dumps(out, indent=1), flush=True)
    return out


def cross_validation(name: str, C: float, C_hinge: float, folds: int = 10) -> dict[str, Any]:
    """Tenfold test accuracy: ASVM (ν = 2C) against LIBSVM's hinge-loss linear SVM (SVC, C_hinge)."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import SVC

    from qpcore_formulations.asvm import asvm_dual
    from qpcore import solve
    from qpcore_strategies.asvm import ASVM

    X, y = load_row(name)
    acc_a, acc_l, t_a, t_l = [], [], 0.0, 0.0
    for k, (tr, te) in enumerate(StratifiedKFold(folds, shuffle=True, random_state=0).split(np.zeros(len(y)), y)):
        t = time.perf_counter()
        P = asvm_dual(X[tr], y[tr], nu=2 * C)
        model = P.decode(solve(P.qp, ASVM(), tol=1e-6))
        t_a += time.perf_counter() - t
        acc_a.append(float((model.predict(X[te]) == y[te]).mean()))
        t = time.perf_counter()
        svc = SVC(kernel="linear", C=C_hinge, tol=1e-3, cache_size=1000).fit(X[tr], y[tr])
        t_l += time.perf_counter() - t
        acc_l.append(float((svc.predict(X[te]) == y[te]).mean()))
        print(f"  [{name}] fold {k}: ASVM {acc_a[-1]:.4f}  LIBSVM {acc_l[-1]:.4f}", flush=True)
    out: dict[str, Any] = {"row": name, "C": C, "nu": 2 * C, "C_hinge": C_hinge, "folds": folds,
           "asvm_accuracy": float(np.mean(acc_a)), "libsvm_accuracy": float(np.mean(acc_l)),
           "asvm_fold_accuracy": acc_a, "libsvm_fold_accuracy": acc_l,
           "asvm_seconds": t_a, "libsvm_seconds": t_l}
    print(f"[{name}] tenfold: ASVM {100 * out['asvm_accuracy']:.2f}%  LIBSVM {100 * out['libsvm_accuracy']:.2f}%",
          flush=True)
    return out


def _epochs(r: dict[str, Any]) -> str:
    e: dict[str, Any] = next((e for e in r["liblinear"] if e["eps"] == r["liblinear_eps"]), {})
    return f" ({e['epochs']} epochs)" if "epochs" in e else ""


def render(records: list[dict[str, Any]], docs: Path) -> None:
    """docs/benchmarks/asvm.md from the newest record of each row and kind."""
    newest: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        newest[(r["kind"], r["row"])] = r
    lines = ["# ASVM against LIBLINEAR (L2-loss SVM, bias regularized)", "",
             "Reproduce: `python -m benchmarks.asvm`, `python -m benchmarks.asvm --rows synth7m`, "
             "`python -m benchmarks.asvm --cv`. Same problem on both sides (ν = 2C); primal objectives "
             "against f_ref, the lowest of a finite Newton reference and the solvers' own values. LIBLINEAR "
             "(scikit-learn LinearSVC) is timed at the loosest eps that reaches rel ≤ 1e-6. Times include building "
             "the problem; ours use 2 BLAS threads (1-thread times beside them; LIBLINEAR is single-threaded).", "",
             "| row | m × n | C | ASVM s (1 thread) | ASVM rel / iters | LIBLINEAR eps | LIBLINEAR s | LIBLINEAR rel "
             "| **ratio** (1 thread) |", "|---|---|---|---|---|---|---|---|---|"]
    for (kind, row), r in sorted(newest.items()):
        if kind != "time":
            continue
        ratio = f"**{r['ratio']:.2g}** ({r['ratio_1thread']:.2g})" if r.get("ratio") is not None else "–"
        if "loaded" in r:   # records before the load check carry no flag
            ratio += f" {fmt_flag(r['loaded'])}"
        lines.append(f"| {row} | {r['m']} × {r['n']} | {r['C']} | {r['ours_seconds']:.3f} ({r['ours_seconds_1thread']:.3f}) "
                     f"| {r['ours_rel']:+.1e} / {r['ours_iterations']} | {r['liblinear_eps']}{_epochs(r)} | "
                     f"{(r['liblinear_seconds'] or float('nan')):.3f} | {(r['liblinear_rel'] or float('nan')):+.1e} | {ratio} |")
    big = [r for (kind, _), r in sorted(newest.items()) if kind == "big"]
    if big:
        lines += ["", "## The paper's size (ASVM alone)", "",
                  "| row | m × n | ASVM seconds (data generation, not counted) | status / iterations / KKT | peak / data (tracemalloc) "
                  "| max RSS / data |", "|---|---|---|---|---|---|"]
        for r in big:
            lines.append(f"| {r['row']} | {r['m']} × {r['n']} | {r['ours_seconds']:.1f} ({r['data_seconds']:.1f}) | "
                         f"{r['status']} / {r['iterations']} / {r['kkt']:.1e} | {r['peak_over_data']:.2f} | "
                         f"{r['rss_over_data']:.2f} |")
    cv = [r for (kind, _), r in sorted(newest.items()) if kind == "cv"]
    if cv:
        lines += ["", "## Tenfold test accuracy: ASVM against LIBSVM's hinge-loss linear SVM", "",
                  "| row | ASVM (ν) | LIBSVM linear (C) | difference (points) |", "|---|---|---|---|"]
        for r in cv:
            lines.append(f"| {r['row']} | {100 * r['asvm_accuracy']:.2f}% ({r['nu']}) | "
                         f"{100 * r['libsvm_accuracy']:.2f}% ({r['C_hinge']}) | "
                         f"{100 * (r['asvm_accuracy'] - r['libsvm_accuracy']):+.2f} |")
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "asvm.md").write_text("\n".join(lines) + "\n")


def run_row(name: str, args: argparse.Namespace, runs: Runs) -> dict[str, Any]:
    """One row of the command line: tenfold accuracy with --cv, ASVM alone on synth7m, else timed."""
    if args.cv:
        return {"kind": "cv", **cross_validation(name if name != "synth2m" else "adult", args.C,
                                                 args.C_hinge or args.C)}
    if name == "synth7m":
        return {"kind": "big", **big_row(name, args.C, args.tol)}
    return {"kind": "time", **bench_row(name, args.C, args, runs)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = study_parser("python -m benchmarks.asvm", __doc__, rows=ROWS, out=RESULTS / "asvm.jsonl", docs=True)
    p.add_argument("--C", type=float, default=1.0, help="LIBLINEAR's C (ν = 2C)")
    p.add_argument("--C-hinge", type=float, default=None, help="LIBSVM's C in --cv (default: --C)")
    p.add_argument("--tol", type=float, default=1e-6, help="ASVM's KKT tolerance")
    p.add_argument("--rel", type=float, default=1e-6, help="the accuracy bar on the primal objective")
    p.add_argument("--cv", action="store_true", help="tenfold accuracy instead of timing")
    args = p.parse_args(argv)
    resolve_run_arguments(p, args, small=args.cv)
    args.docs = page_folder(args.docs, args.out.parent)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_study(Study(run_row, lambda records, a: render(records, a.docs)), args, args.rows.split(","))
    log(f"wrote {args.docs / 'asvm.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
