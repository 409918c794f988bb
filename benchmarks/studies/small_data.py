"""Small data: KernelSVC against scikit-learn's SVC (LIBSVM) on the classic toy sets (issue 26, §1).

    python -m benchmarks.small_data            # every set, interleaved, median of 3 (quiet machine)
    python -m benchmarks.small_data --quick    # one pass, a correctness run (predictions agree)

Rows. scikit-learn's digits (1,797 images, 10 classes: 45 one-vs-one problems), iris (3 classes),
wine (3 classes), breast cancer (2 classes), each split by ``train_test_split(test_size=0.3,
random_state=0)`` (digits: 1,257 training rows). Both fit RBF with ``gamma="scale"``, C = 10,
tol 1e-3 and the default cache; KernelSVC with its default strategy. One BLAS thread.

Protocol. A fit of these sets takes milliseconds, so a timed run is a loop of ``--fits`` fits
(the time per fit is reported); SVC and KernelSVC runs alternate (SVC, ours, SVC, ours, ...,
:func:`benchmarks.harness.interleave`) and the ratio is of the medians of ``--repeat`` runs.
Each row checks that the predictions agree: the test accuracies within 0.5 % and the share of
equal test predictions. Time only on an otherwise quiet machine (each run records other
processes' CPU: ``others``). Results append to ``benchmarks/results/small_data.jsonl``
(``results/quick/`` with ``--quick``).
"""

from __future__ import annotations

import sys

from benchmarks.harness import pin_blas_threads

if __name__ == "__main__":
    pin_blas_threads(1)     # before numpy is imported: OpenBLAS sizes its pool at load

import argparse  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from benchmarks.harness import (REPO, Runs, add_run_arguments, append_jsonl, interleave, log,  # noqa: E402
                                machine_info, markdown_table, need_sklearn, now_iso, ratio_stats,
                                resolve_run_arguments, settle, thread_limit)

__all__ = ["DATASETS", "load", "main", "row"]

#: The sets, by their scikit-learn loader name.
DATASETS = ("digits", "iris", "wine", "breast_cancer")
C_VALUE = 10.0
TOL = 1e-3


def load(name: str) -> tuple[Any, Any, Any, Any]:
    """The training and test split of one set: (X_train, X_test, y_train, y_test)."""
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    out: tuple[Any, Any, Any, Any] = tuple(train_test_split(X, y, test_size=0.3, random_state=0))
    return out


def row(name: str, ctx: Runs, fits: int) -> dict[str, Any]:
    """Time and compare SVC and KernelSVC on one set; the row's record."""
    import numpy as np
    from sklearn.svm import SVC

    from qpcore_sklearn.svm import KernelSVC

    Xtr, Xte, ytr, yte = load(name)
    made: dict[str, Any] = {}

    def runner(key: str, make: Any) -> Any:
        def run() -> dict[str, Any]:
            t0 = time.perf_counter()
            for _ in range(fits):
                made[key] = make().fit(Xtr, ytr)
            return {"seconds": (time.perf_counter() - t0) / fits, "status": "fitted"}
        return run

    solvers = {"SVC": runner("SVC", lambda: SVC(C=C_VALUE, tol=TOL)),
               "KernelSVC": runner("KernelSVC", lambda: KernelSVC(C=C_VALUE, tol=TOL))}
    with thread_limit(1):
        runs = interleave(ctx, solvers, name, anchor="SVC")
    svc, ours = made["SVC"], made["KernelSVC"]
    ps, po = svc.predict(Xte), ours.predict(Xte)
    acc_s, acc_o = float(np.mean(ps == yte)), float(np.mean(po == yte))
    certified = all(r.kkt.measure <= TOL * (1 + 1e-9) + 1e-12 for r in
                    (ours.result_ if isinstance(ours.result_, list) else [ours.result_]))
    stats = ratio_stats(runs["KernelSVC"], runs["SVC"])
    return {"dataset": name, "n_train": int(Xtr.shape[0]), "n_classes": int(np.unique(ytr).size),
            "svc_s": float(np.median([r["seconds"] for r in runs["SVC"]])),
            "ours_s": float(np.median([r["seconds"] for r in runs["KernelSVC"]])), **stats,
            "acc_svc": acc_s, "acc_ours": acc_o, "accuracy_agrees": abs(acc_s - acc_o) <= 0.005,
            "same_predictions": float(np.mean(ps == po)), "certified": certified,
            "n_sv_svc": int(svc.support_.size), "n_sv_ours": int(ours.support_.size),
            "loaded": any(r["load"]["loaded"] for v in runs.values() for r in v)}


def main(argv: list[str] | None = None) -> int:
    """Run the study; 1 when a row's predictions disagree or a problem is not certified."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.small_data", description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="one pass, few fits: a correctness run")
    p.add_argument("--fits", type=int, default=None, help="fits per timed run (default 20; quick 2)")
    p.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated subset of " + ", ".join(DATASETS))
    add_run_arguments(p)
    a = p.parse_args(argv)
    resolve_run_arguments(p, a, a.quick)
    fits = a.fits if a.fits is not None else (2 if a.quick else 20)
    names = [s for s in a.datasets.split(",") if s]
    bad = [s for s in names if s not in DATASETS]
    if bad:
        p.error(f"--datasets: unknown {', '.join(bad)}; use {', '.join(DATASETS)}")
    if not need_sklearn("small_data", "SVC"):
        return 2
    ctx = Runs(repeat=a.repeat, long=a.long, pair_below=a.pair_below, threads=[1])
    settle(ctx, a.settle)
    out = REPO / "benchmarks" / "results" / ("quick" if a.quick else "") / "small_data.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        r = row(name, ctx, fits)
        rows.append(r)
        append_jsonl(out, {"study": "small_data", "time": now_iso(), "machine": machine_info(1), "quick": a.quick, **r})
    log(markdown_table(["set", "n", "classes", "SVC (ms)", "ours (ms)", "ours / SVC", "acc SVC", "acc ours",
                        "same pred.", "certified"],
                       [[r["dataset"], str(r["n_train"]), str(r["n_classes"]), f"{1e3 * r['svc_s']:.2f}",
                         f"{1e3 * r['ours_s']:.2f}", f"{r['ratio']:.2f}" + (" LOADED" if r["loaded"] else ""),
                         f"{r['acc_svc']:.4f}", f"{r['acc_ours']:.4f}", f"{r['same_predictions']:.4f}",
                         "yes" if r["certified"] else "NO"] for r in rows]))
    return 0 if all(r["accuracy_agrees"] and r["certified"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
