"""Measurement helpers: peak memory, convergence traces, machine description, medians."""

from __future__ import annotations

import gc
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------
# Peak memory
# ---------------------------------------------------------------------------------------------

def _status_kb(key: str) -> int | None:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM), or None off Linux."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _malloc_trim() -> bool:
    """Give freed heap memory back to the OS (glibc), so that a run's RSS growth is not hidden by
    memory an earlier run freed but the allocator kept resident."""
    try:
        import ctypes

        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0) >= 0)
    except (OSError, AttributeError):
        return False


def _reset_hwm() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS (Linux ≥ 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class PeakMemory:
    """Context manager: peak resident memory above the RSS at entry, in MiB.

    Preferred method: collect garbage, ``malloc_trim(0)`` (glibc keeps freed memory resident
    otherwise, and a run reusing it would show no growth), reset the kernel's high-water mark
    (``echo 5 > /proc/self/clear_refs``) at entry and read ``VmHWM`` at exit: exact, no
    sampling, no overhead. Fallback:
    the growth of ``getrusage(RUSAGE_SELF).ru_maxrss``, a lower bound (0 unless the run goes
    above every earlier peak of the process).
    """

    def __init__(self) -> None:
        self.method = ""
        self.peak_mb = float("nan")
        self._rss0 = 0
        self._max0 = 0

    def __enter__(self) -> PeakMemory:
        gc.collect()
        trimmed = _malloc_trim()
        rss = _status_kb("VmRSS")
        if rss is not None and _reset_hwm() and _status_kb("VmHWM") is not None:
            self.method = ("VmHWM after reset via /proc/self/clear_refs, minus RSS at start"
                           + (" (after gc and malloc_trim)" if trimmed else " (after gc)"))
            self._rss0 = rss
        else:
            self.method = "ru_maxrss growth (lower bound)"
            self._max0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return self

    def __exit__(self, *exc: object) -> None:
        if self.method.startswith("VmHWM"):
            hwm = _status_kb("VmHWM") or 0
            self.peak_mb = max(0, hwm - self._rss0) / 1024.0
        else:
            mx = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            self.peak_mb = max(0, mx - self._max0) / 1024.0


# ---------------------------------------------------------------------------------------------
# Convergence trace
# ---------------------------------------------------------------------------------------------

class TraceReporter:
    """A qpcore Reporter that records (elapsed seconds, KKT gap, iteration, objective).

    ``elapsed`` is measured by ``qpcore.solve`` from the start of the solve; the benchmark adds
    the problem-building time afterwards so traces start where the timer started. Each update
    costs one O(n) KKT evaluation (about a millisecond at n = 50,000), every ``interval`` s.
    """

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.points: list[tuple[float, float, int, float]] = []

    def update(self, progress: Any) -> None:
        """Record one snapshot."""
        self.points.append((float(progress.elapsed), float(progress.gap), int(progress.iteration),
                            float(progress.objective)))

    def finish(self, result: Any) -> None:
        """Nothing: the final certified point is added by the caller (it knows the total time)."""


# ---------------------------------------------------------------------------------------------
# Machine and software description
# ---------------------------------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git() -> dict[str, Any]:
    def out(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10,
                                  check=False).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit = out("rev-parse", "--short", "HEAD")
    dirty = bool(out("status", "--porcelain", "--untracked-files=no"))
    return {"commit": commit or None, "dirty": dirty}


def machine_info(threads: int) -> dict[str, Any]:
    """CPU, cores, load, versions, BLAS libraries and their thread counts, git commit."""
    import numpy as np
    import scipy

    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "loadavg": [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "threads": threads,
        "thread_env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                       "MKL_NUM_THREADS")},
        "git": _git(),
    }
    try:
        import sklearn

        info["sklearn"] = sklearn.__version__
    except ImportError:
        info["sklearn"] = None
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = [{"api": p.get("internal_api"), "threads": p.get("num_threads"),
                         "lib": Path(str(p.get("filepath", ""))).name} for p in threadpool_info()]
    except ImportError:
        info["blas"] = None
    info["platform"] = f"{platform.system()} {platform.release()}; {sys.implementation.name}"
    return info


def median(values: list[float]) -> float:
    """Median (the middle run for an odd count)."""
    return float(statistics.median(values))


def now_iso() -> str:
    """Local time, ISO 8601 to the second."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
