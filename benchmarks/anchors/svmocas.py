"""libocas's ``svmocas`` (Debian libocas-tools) as an anchor: one run in a subprocess, its output parsed,
its model read back as our w = [w, b] (the linear SVM studies: ocas, dask_scale).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


SVMOCAS_INSTALL = "apt-get install libocas-tools"


def svmocas_path() -> str | None:
    return shutil.which("svmocas")


_ITER = re.compile(r"^\s*(\d+):\s*tim=([-+0-9.eE]+),\s*Q_P=([-+0-9.eEinfa]+),\s*Q_D=([-+0-9.eEinfa]+),"
                   r".*?nza=\s*(\d+)")


_TIMING = re.compile(r"^\s*(\w+_time)\s*:\s*([-+0-9.eE]+)\s*\[s\]")


def parse_svmocas(text: str) -> dict[str, Any]:
    """svmocas's ``-v 1`` output: the per-iteration lines ``N: tim=…, Q_P=…, Q_D=…, …, nza=…``
    (tim: solver seconds since the optimization started, loading excluded; Q_P: primal objective of
    its current point — the best-so-far for OCAS, the last one for BMRM; nza: active cuts), its
    timing statistics, stopping condition and training error."""
    it: list[int] = []
    tim: list[float] = []
    qp: list[float] = []
    qd: list[float] = []
    nza: list[int] = []
    timing: dict[str, float] = {}
    stop = ""
    err: float | None = None
    for line in text.splitlines():
        m = _ITER.match(line)
        if m:
            it.append(int(m.group(1)))
            tim.append(float(m.group(2)))
            qp.append(float(m.group(3)))
            qd.append(float(m.group(4)))
            nza.append(int(m.group(5)))
            continue
        m = _TIMING.match(line)
        if m:
            timing[m.group(1)] = float(m.group(2))
        elif line.startswith("Stopping condition:"):
            stop = line.split(":", 1)[1].strip()
        elif line.startswith("Training error:"):
            err = float(line.split(":", 1)[1].strip().rstrip("%")) / 100.0
    return {"iteration": it, "tim": tim, "Q_P": qp, "Q_D": qd, "nza": nza, "timing": timing, "stop": stop,
            "train_error": err}


def read_model(path: Path, n_features: int) -> np.ndarray:
    """svmocas's model file: d' lines of w then W0, the weight of the constant feature (its value is
    ``-b``; the decision is wᵀx + b·W0 — checked: with -b 2 the objective of the file's point matches
    Q_P only read this way). d' is the largest feature index in its input file, so w is padded with
    zeros to ``n_features``. Returns our w = [w, W0] (our bias·w[d] is its b·W0)."""
    vals = np.loadtxt(path, dtype=np.float64, ndmin=1)
    w = np.zeros(n_features + 1)
    d = vals.size - 1
    w[:min(d, n_features)] = vals[:min(d, n_features)]
    w[n_features] = vals[-1]
    return w


def run_svmocas(path: str, n_features: int, C: float, bias: float, method: int, tolrel: float, threads: int,
                time_limit: float, timeout: float, cache: int = 2000) -> dict[str, Any]:
    """One svmocas run in a subprocess; output to a file, the child's own rusage (peak RSS) from wait4."""
    exe = svmocas_path()
    if exe is None:
        return {"seconds": float("nan"), "status": f"svmocas not installed ({SVMOCAS_INSTALL})", "error": True}
    with tempfile.TemporaryDirectory(prefix="qpcore_svmocas_") as tmp:
        model, out = Path(tmp) / "model.txt", Path(tmp) / "out.txt"
        cmd = [exe, "-c", repr(float(C)), "-b", repr(float(bias)), "-m", str(method), "-r", repr(float(tolrel)),
               "-p", str(threads), "-s", str(cache), "-t", repr(float(time_limit)), "-v", "1", path, str(model)]
        t0 = time.perf_counter()
        with open(out, "w") as fh:
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=tmp)
        status, ru = 0, None
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                _, status, ru = os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"seconds": float("inf"), "status": f"> {timeout:g} s (killed)", "timeout": True,
                        "limit": timeout}
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        text = out.read_text(errors="replace")
        parsed = parse_svmocas(text)
        if not parsed["tim"] or not model.is_file():
            return {"seconds": float("nan"), "status": f"error (exit {proc.returncode}): " + text[-300:].strip(),
                    "error": True, "command": shlex.join(cmd)}
        w = read_model(model, n_features)
    tm = parsed["timing"]
    return {"seconds": tm.get("ocas_time", parsed["tim"][-1]), "trajectory": parsed, "w": w,
            "iterations": parsed["iteration"][-1], "cuts_active": parsed["nza"][-1], "cuts_added": parsed["iteration"][-1],
            "final_primal_reported": parsed["Q_P"][-1], "status": parsed["stop"] or f"exit {proc.returncode}",
            "load_s": tm.get("load_time"), "wall_s": wall, "peak_mb": (ru.ru_maxrss / 1024.0) if ru else None,
            "command": shlex.join(cmd), "threads": threads}


def svmocas_version() -> str | None:
    exe = svmocas_path()
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "-h"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return exe
    m = re.search(r"v\d[^\n]*", out)
    return f"{exe} {m.group(0).strip() if m else ''}".strip()
