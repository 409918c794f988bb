"""LIBSVM (scikit-learn's SVC, NuSVC, OneClassSVM, SVR, NuSVR) as an anchor: one fit in a forked
child with a timeout, the child's timer covering ``fit`` only; and the dense-versus-sparse input
check (the faster of two runs each) that picks LIBSVM's input for a study.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import numpy as np

from benchmarks.harness import PeakMemory, in_child

KINDS = ("dense", "sparse")


def run_libsvm(make: Callable[[], Any], Xin: Any, y: np.ndarray, alpha: Callable[[Any], np.ndarray],
               timeout: float, *, supervised: bool = True) -> dict[str, Any]:
    """One LIBSVM fit in a forked child (stopped after ``timeout`` s).

    ``make()`` builds the estimator in the child; ``alpha(est)`` gives its point in our variables;
    ``supervised=False`` (one-class) fits without ``y``.
    """

    def fit() -> dict[str, Any]:
        est = make()
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            if supervised:
                est.fit(Xin, y)
            else:
                est.fit(Xin)
            seconds = time.perf_counter() - t0
        return {"seconds": seconds, "x": alpha(est), "iterations": int(np.atleast_1d(est.n_iter_)[0]),
                "n_sv": int(est.support_.size), "peak_mb": mem.peak_mb, "status": "converged"}

    out = in_child(fit, timeout + 30.0)
    if out.get("timeout") or out.get("seconds", 0.0) > timeout:
        return {"seconds": float("inf"), "status": f"> {timeout:g} s (stopped)", "timeout": True, "limit": timeout}
    if "error" in out:
        return {"seconds": float("nan"), "status": "error: " + str(out["error"]), "error": True}
    return out


def faster_input(run: Callable[[str], dict[str, Any]]) -> tuple[dict[str, float], str]:
    """Time ``run(kind)`` on dense, sparse, dense, sparse: the faster of two runs each (inf when none
    finished), and the faster kind."""
    t: dict[str, float] = {k: math.inf for k in KINDS}
    for _ in range(2):
        for kind in KINDS:
            r = run(kind)
            if math.isfinite(r["seconds"]):
                t[kind] = min(t[kind], r["seconds"])
    return t, min(t, key=lambda k: t[k])
