"""LIBLINEAR (scikit-learn's LinearSVC, hinge loss, dual coordinate descent) as an anchor: one fit
in a forked child with a timeout, its point as our w = [coef_, intercept_/B].
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks.harness import PeakMemory, in_child


def run_liblinear(Xin: Any, y: np.ndarray, C: float, bias: float, eps: float, timeout: float,
                  max_iter: int = 10**7) -> dict[str, Any]:
    """One LinearSVC fit in a forked child (stopped after ``timeout`` s); w = [coef_, intercept_/B]."""

    def fit() -> dict[str, Any]:
        import warnings

        from sklearn.svm import LinearSVC

        clf = LinearSVC(loss="hinge", dual=True, C=C, tol=eps, fit_intercept=bias > 0,
                        intercept_scaling=bias if bias > 0 else 1.0, max_iter=max_iter, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with PeakMemory() as mem:
                t0 = time.perf_counter()
                clf.fit(Xin, y)
                seconds = time.perf_counter() - t0
        w = np.zeros(Xin.shape[1] + (1 if bias > 0 else 0))
        w[:Xin.shape[1]] = np.asarray(clf.coef_, dtype=np.float64).ravel()
        if bias > 0:
            w[-1] = float(np.asarray(clf.intercept_).ravel()[0]) / bias
        return {"seconds": seconds, "w": w, "iterations": int(np.max(clf.n_iter_)), "peak_mb": mem.peak_mb,
                "status": "converged" if int(np.max(clf.n_iter_)) < max_iter else "max_iter"}

    out = in_child(fit, timeout + 30.0)
    if out.get("timeout") or out.get("seconds", 0.0) > timeout:
        return {"seconds": float("inf"), "status": f"> {timeout:g} s (stopped)", "timeout": True, "limit": timeout}
    if "error" in out:
        return {"seconds": float("nan"), "status": "error: " + out["error"], "error": True}
    return out
