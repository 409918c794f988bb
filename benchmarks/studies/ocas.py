"""Cutting planes for the hinge-loss linear SVM against libocas's ``svmocas`` and LIBLINEAR (issue 13).

    python -m benchmarks.ocas --rows reuters,adult,ijcnn1          # the real data sets, C = 1, bias 1
    python -m benchmarks.ocas --rows dense2m,text1m                # the generated large rows
    python -m benchmarks.ocas --rows crossover                     # sparse text: rows × C, who wins where
    python -m benchmarks.ocas --quick                              # every row on small subsets (< 1 min)
    python -m benchmarks.ocas --rows reuters,adult,ijcnn1 --C 1,10 --variants ocas   # OCAS / svmocas at C = 1 and 10
    python -m benchmarks.ocas --rows reuters,text1m,dense200k --variants ocas,asocas,asocas-paper --gaps 1e-2,1e-3,1e-4,1e-5 --tol 1e-6
                                                                   # Table 3: active-set OCAS / OCAS, T1 and T2

Problem: min_w F(w) = ½‖w‖² + C Σ_i max(0, 1 − y_i (x_iᵀ w[:d] + bias·w[d])), bias 1 (a regularized
constant feature, as ``svmocas -b 1`` and LIBLINEAR ``-B 1`` do), built by ``qpcore_formulations.risk.hinge_svm``
outside the timed region. Every row reports the **time to relative primal gaps** (F − F*)/F* ≤ 1e-2,
1e-3, 1e-4, where F* is a tight reference (our OCAS at TolRel 1e-8, certified by the problem's own
duality gap, cached in ``benchmarks/results/ocas_reference.json``; lowered to any lower objective a
run reaches), iterations and cuts. ``--gaps`` chooses the gaps (default those of 1e-2…1e-5 down to
min(10×``--tol``, 1e-4): 1e-2…1e-4 at the default TolRel 1e-5; ``--tol 1e-6`` adds 1e-5);
``--C 1,10`` runs each row at each C, a row of its own in the store (``reuters`` at C = 1,
``reuters@C=10``), svmocas with the same ``-c``, the reference cached by data and C.

Table 3 (Xiao and Zhou 2013), for each active-set variant (``asocas``: the registry's
``ocas-active``; ``asocas-paper``: ``ActiveSetOCAS.paper()``, the paper's μ = 0.05 and 20 cuts)
against OCAS at each thread count: at the first iteration reaching each gap, the cumulative
objective evaluation seconds T1 (``CutState.eval_seconds``) and line-search seconds T2
(``CutState.search_seconds``), the time to the gap, iterations, rows read by every product
(``state.counters["rows_read"]``, read through ``Progress.counters``), and the mean |X^a|
(``CutState.touched_eval``) and |X^s| (``touched_search``) per iteration up to it, all from a
per-iteration trace kept by the solve's callback; medians over the runs, ratios AS / OCAS. Bars
at 1e-4 on the text rows (reuters, text1m): T1 ≤ 0.6, T2 ≤ 0.3, time < 1; the other rows are
reported as they are. A field the strategy does not keep shows "–".

Anchors:

- ``svmocas`` (Debian ``libocas-tools``) in a subprocess, ``-m 1`` (OCAS) and ``-m 0`` (BMRM), same C,
  ``-b 1``, ``-r`` TolRel as ours, ``-p`` threads (default 1: it is compared with ours at each of our
  thread counts; ``--ocas-threads match`` runs it at ours). Its data are our arrays written once with
  ``qpcore_formulations.data.svmlight.dump_svmlight`` (1-based) into ``--svm-dir``; its loading is excluded: times are
  its own per-iteration ``tim`` (solver time since the start of the optimization), parsed from
  ``-v 1``. Objective parity: F of its model file judged by our problem against its final Q_P.
- LIBLINEAR's hinge-loss dual coordinate descent (``sklearn.svm.LinearSVC(loss="hinge", dual=True,
  fit_intercept=True, intercept_scaling=1)``) in a forked child: an eps ladder 1e-1 … 1e-7 is run
  once (loosest first) and, for each gap, the loosest eps whose solution reaches it (judged by our
  problem) is the one timed; its fit time includes scikit-learn's copy of the data into LIBLINEAR's
  format, which is also measured (fit with ``max_iter=1``) and reported.

Protocol (the harness shared with every study, ``benchmarks/harness.py``): runs interleaved in one
process (svmocas, ours@1, svmocas, ours@2, ...; LIBLINEAR's fits in their own passes), ``--repeat``
passes (median, min–max and the range of each pair's ratio), the load read before every run and
the CPU other processes used during it (``timed``; a run is **loaded** when others > 0.1 core),
ours at each ``--threads`` BLAS thread count (threadpoolctl). Results accumulate in
``docs/benchmarks/ocas.json`` (one entry per row; re-running a row replaces it), rendered into
``docs/benchmarks/ocas.md`` with one convergence plot per row (``ocas_<row>.png``); ``--quick``
writes to ``benchmarks/results/quick/``.
"""

from __future__ import annotations

import os
import sys

# OpenBLAS sizes its pool when numpy is first imported: let it take every core (threadpoolctl then
# lowers it to each run's thread count). Only when run as a script.
if __name__ == "__main__":
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
        os.environ[_var] = str(os.cpu_count() or 1)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from functools import partial  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from benchmarks.harness import (  # noqa: E402
    command_line,
    need_sklearn,
    RESULTS,
    add_store_arguments,
    resolve_store_arguments,
    seed,
    generated_line,
    PeakMemory,
    Runs,
    Study,
    clean,
    blas_threads,
    blas_threads_under,
    fmt_exp as _e,
    fmt_flag as _flag,
    fmt_loads as _loads,
    fmt_ratio as _r,
    fmt_seconds as _sec,
    in_child,
    interleave,
    log,
    machine_info,
    median,
    now_iso,
    ratio_stats,
    resolve_run_arguments,
    run_study,
    study_parser,
    thread_limit,
    timed,
)

GAPS = (1e-2, 1e-3, 1e-4)
#: the gaps of Xiao and Zhou's Table 3 (the candidates of the default ``--gaps``: those ≥ 10·tol)
TABLE3_GAPS = (1e-2, 1e-3, 1e-4, 1e-5)
EPS_LADDER = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7)
REAL_ROWS = ("reuters", "adult", "ijcnn1")
DENSE_ROWS = ("dense2m", "dense200k")
#: the text rows, where the paper expects the active set's gain (Table 3's bars apply there)
TEXT_ROWS = ("reuters", "text1m")
ROW_NAMES = (*REAL_ROWS, *DENSE_ROWS, "text1m", "crossover")
VARIANTS = ("ocas", "bmrm", "asocas", "asocas-paper")
DEFAULT_VARIANTS = ("ocas", "bmrm", "asocas")
AS_VARIANTS = ("asocas", "asocas-paper")
#: Xiao and Zhou's settings (``ActiveSetOCAS.paper()``): the cut point μ = 0.05 and at most 20 cuts
PAPER_MU, PAPER_MAX_CUTS = 0.05, 20
LABEL = {"ocas": "OCAS", "bmrm": "BMRM", "asocas": "active-set OCAS",
         "asocas-paper": "active-set OCAS (paper: μ 0.05, 20 cuts)"}
ANCHOR_METHOD = {"ocas": 1, "bmrm": 0, "asocas": 1, "asocas-paper": 1}  # the svmocas -m each of ours is compared with
BAR = {"vs_svmocas": 1.0, "dense_best": 0.5, "asocas_eval_search": 0.5}
#: Table 3's bars (issue 27), active-set OCAS / OCAS at the gap ``t3_gap`` on the text rows
BAR_T3 = {"gap": 1e-4, "eval": 0.6, "search": 0.3, "total": 1.0}
SVMOCAS_INSTALL = "apt-get install libocas-tools"
DEFAULT_SVM_DIR = Path(tempfile.gettempdir()) / "qpcore_ocas_svm"


def gkey(g: float) -> str:
    return f"{g:.0e}"


def gtext(g: float) -> str:
    """A gap as the tables write it: 1e-2, 1e-5, 5e-3."""
    m, e = f"{g:.0e}".split("e")
    return f"{m}e{int(e)}"


def parse_gaps(text: str) -> tuple[float, ...]:
    """``1e-2,1e-3`` → (0.01, 0.001): sorted loosest first, duplicates dropped; each in (0, 1)."""
    vals = sorted({float(v) for v in text.split(",") if v.strip()}, reverse=True)
    if not vals or any(not 0 < v < 1 for v in vals):
        raise ValueError(f"gaps: comma-separated numbers in (0, 1), got {text!r}")
    return tuple(vals)


def default_gaps(tol: float) -> tuple[float, ...]:
    """Table 3's gaps down to min(10·tol, 1e-4): 1e-2…1e-4 at TolRel 1e-5 (and at the quick runs'
    1e-4, whose certificate still bounds the primal gap by 1e-4), 1e-2…1e-5 at 1e-6."""
    return tuple(g for g in TABLE3_GAPS if g >= min(10 * tol, 1e-4) * (1 - 1e-9))


def store_key(name: str, C: float) -> str:
    """A row's key in ``ocas.json``: its name at C = 1 (the issue-13 rows), ``name@C=10`` otherwise,
    so the same data at several C stay side by side."""
    return name if C == 1.0 else f"{name}@C={C:g}"


def split_key(key: str) -> tuple[str, float]:
    """The inverse of :func:`store_key`."""
    name, _, c = key.partition("@C=")
    return name, float(c) if c else 1.0


def parse_C(text: str) -> tuple[float, ...]:
    """``1,10`` → (1.0, 10.0), in the order given, each > 0."""
    vals = tuple(dict.fromkeys(float(v) for v in text.split(",") if v.strip()))
    if not vals or any(not v > 0 for v in vals):
        raise ValueError(f"C: comma-separated positive numbers, got {text!r}")
    return vals


# ---------------------------------------------------------------------------------------------
# Sizes and rows
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sizes:
    """Rows of each benchmark row (full: issue 13; quick: plumbing checks). 0 = the whole set."""

    real: int = 0
    dense: int = 2_000_000
    dense_small: int = 200_000
    text: int = 1_000_000
    cross_rows: tuple[int, ...] = (100_000, 300_000, 1_000_000)
    cross_C: tuple[float, ...] = (0.1, 1.0, 10.0)


FULL = Sizes()
QUICK = Sizes(real=1000, dense=5000, dense_small=2000, text=5000, cross_rows=(1000, 3000), cross_C=(0.1, 10.0))


@dataclass
class Row:
    """One data set with its C and bias; ``key`` identifies the data (the reference cache and the
    svmocas file are keyed by it)."""

    name: str
    X: Any                 # CSR float64 (sorted, int32 indices) or dense C-contiguous float64
    y: np.ndarray          # ±1.0
    C: float
    bias: float
    source: str            # human description
    data_key: str          # what defines the data: generator spec or file + rows + fingerprint

    @property
    def key(self) -> str:
        return f"{self.data_key}; C={self.C:g}; bias={self.bias:g}"

    @property
    def kind(self) -> str:
        return "sparse" if sp.issparse(self.X) else "dense"

    @property
    def nnz(self) -> int:
        return int(self.X.nnz) if sp.issparse(self.X) else int(self.X.size)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "rows": int(self.X.shape[0]), "features": int(self.X.shape[1]), "nnz": self.nnz,
                "kind": self.kind, "C": self.C, "bias": self.bias, "source": self.source, "data_key": self.data_key,
                "positive": int(np.count_nonzero(self.y > 0)),
                "data_mb": round(_nbytes(self.X) / 2**20, 1)}


def _nbytes(X: Any) -> int:
    if sp.issparse(X):
        return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
    return int(X.nbytes)


def fingerprint(X: Any, y: np.ndarray) -> str:
    """A short hash of the arrays (the data, not how they were made)."""
    h = hashlib.sha1()
    if sp.issparse(X):
        for a in (X.indptr, X.indices, X.data):
            h.update(np.ascontiguousarray(a).tobytes())
    else:
        h.update(np.ascontiguousarray(X).tobytes())
    h.update(np.ascontiguousarray(y, dtype=np.float64).tobytes())
    return h.hexdigest()[:12]


def _csr(X: Any) -> Any:
    X = sp.csr_matrix(X, dtype=np.float64)
    X.sum_duplicates()
    X.sort_indices()
    if X.nnz < 2**31 - 1:
        X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    return X


def real_row(name: str, n: int, C: float = 1.0, bias: float = 1.0) -> Row:
    from qpcore_formulations.data.files import load_dataset

    X, y = load_dataset(name)
    X = _csr(X)
    y = np.asarray(y, dtype=np.float64)
    y = np.where(y == y.max(), 1.0, -1.0)
    src = f"{name}.trn"
    if n and n < X.shape[0]:
        X, y = _csr(X[:n]), y[:n]
        src += f", first {n} rows"
    return Row(name, X, y, C, bias, src, f"{name}.trn rows={X.shape[0]} {fingerprint(X, y)}")


def dense_row(rows: int, C: float = 1.0, bias: float = 1.0, seed: int = 13, name: str = "dense2m") -> Row:
    from benchmarks.harness.generators import DenseSpec, tall_dense

    spec = DenseSpec(rows=rows, seed=seed)
    X, y = tall_dense(rows, spec.features, bayes_error=spec.bayes_error, flip=spec.flip, seed=seed)
    return Row(name, X, y, C, bias,
               f"benchmarks.harness.generators.tall_dense({rows}, {spec.features}, bayes_error={spec.bayes_error:g}, "
               f"flip={spec.flip:g}, seed={seed})", spec.key())


def text_source(rows: int, seed: int = 13) -> tuple[Any, np.ndarray, Any]:
    from benchmarks.harness.generators import TextSpec, sparse_text

    spec = TextSpec(rows=rows, seed=seed)
    X, y = sparse_text(rows, spec.features, nnz_per_row=spec.nnz_per_row, zipf_s=spec.zipf_s, zipf_q=spec.zipf_q,
                       support=spec.support, skip_top=spec.skip_top, flip=spec.flip, seed=seed)
    return X, y, spec


def text_row(X: Any, y: np.ndarray, spec: Any, n: int, C: float = 1.0, bias: float = 1.0,
             name: str = "text1m") -> Row:
    """Rows [:n] of the generated text (a prefix is the generator's output at n rows)."""
    from dataclasses import replace

    if n < X.shape[0]:
        X, y = X[:n], y[:n]
    sub = replace(spec, rows=n)
    return Row(name, X, y, C, bias,
               f"benchmarks.harness.generators.sparse_text({n}, {sub.features}, nnz_per_row={sub.nnz_per_row:g}, "
               f"zipf=({sub.zipf_s:g}, {sub.zipf_q:g}), support={sub.support}, skip_top={sub.skip_top}, "
               f"flip={sub.flip:g}, seed={sub.seed})", sub.key())


# ---------------------------------------------------------------------------------------------
# What is available
# ---------------------------------------------------------------------------------------------

def available() -> tuple[bool, str]:
    """Whether our side (qpcore_formulations.risk.hinge_svm and qpcore_strategies.cutting_plane) can be imported."""
    try:
        from qpcore_formulations.risk import hinge_svm  # noqa: F401
        from qpcore_strategies.active_set_ocas import ActiveSetOCAS  # noqa: F401
        from qpcore_strategies.cutting_plane import BMRM, OCAS  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any failure means "not available"
        return False, f"not available ({type(e).__name__}: {e})"
    return True, ""


def svmocas_path() -> str | None:
    return shutil.which("svmocas")


def make_strategy(variant: str) -> Any:
    """The strategy of a variant (``asocas`` is the registry's ``ocas-active``), default settings;
    ``asocas-paper`` is ``ActiveSetOCAS.paper()``, Xiao and Zhou's μ = 0.05 and 20 cuts."""
    from qpcore_strategies.registry import make

    if variant == "asocas-paper":
        from qpcore_strategies.active_set_ocas import ActiveSetOCAS

        return ActiveSetOCAS.paper()
    return make(variant)


def build_problem(row: Row) -> Any:
    from qpcore_formulations.risk import hinge_svm

    return hinge_svm(row.X, row.y, row.C, bias=row.bias)


# ---------------------------------------------------------------------------------------------
# svmocas: the SVMlight file, the run, its output
# ---------------------------------------------------------------------------------------------

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


def svm_file(row: Row, svm_dir: Path) -> dict[str, Any]:
    """The row's data as an SVMlight file (1-based), written once: reused when a file with the same
    data key and fingerprint is there (its sidecar .json says so)."""
    svm_dir.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", row.name) + "-" + hashlib.sha1(row.data_key.encode()).hexdigest()[:10]
    path = svm_dir / f"{slug}.svm"
    side = svm_dir / f"{slug}.json"
    if path.is_file() and side.is_file():
        meta = json.loads(side.read_text())
        if meta.get("data_key") == row.data_key and meta.get("bytes") == path.stat().st_size:
            return dict(meta, path=str(path), reused=True)
    from qpcore_formulations.data.svmlight import dump_svmlight

    t0 = time.perf_counter()
    tmp = path.with_suffix(".svm.part")
    dump_svmlight(tmp, row.X, row.y, zero_based=False)
    os.replace(tmp, path)
    meta = {"data_key": row.data_key, "bytes": path.stat().st_size, "write_s": round(time.perf_counter() - t0, 2),
            "writer": "qpcore_formulations.data.svmlight.dump_svmlight (1-based)", "rows": int(row.X.shape[0])}
    side.write_text(json.dumps(meta, indent=1) + "\n")
    return dict(meta, path=str(path), reused=False)


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


# ---------------------------------------------------------------------------------------------
# LIBLINEAR (scikit-learn LinearSVC, hinge loss, dual coordinate descent)
# ---------------------------------------------------------------------------------------------

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


def choose_liblinear_input(row: Row, ctx: Runs, rows: int = 50_000) -> dict[str, Any]:
    """LIBLINEAR's input as a user would pick it: a dense row is timed as the ndarray and as CSR
    (eps 1e-2, first ``rows`` rows, best of two each); sparse rows stay CSR (densifying a text matrix
    is not an option a user has)."""
    if row.kind == "sparse":
        return {"chosen": "sparse", "why": "sparse data"}
    n = min(rows, row.X.shape[0])
    Xd = np.ascontiguousarray(row.X[:n])
    Xs = sp.csr_matrix(Xd)
    t = {"dense": math.inf, "sparse": math.inf}
    for _ in range(2):
        for kind, Xin in (("dense", Xd), ("sparse", Xs)):
            r = run_liblinear(Xin, row.y[:n], row.C, row.bias, 1e-2, ctx.anchor_timeout)
            if math.isfinite(r["seconds"]):
                t[kind] = min(t[kind], r["seconds"])
    best = min(t, key=lambda k: t[k])
    log(f"[{row.name}] LIBLINEAR input on {n} rows at eps 1e-2: dense {t['dense']:.3g} s, CSR {t['sparse']:.3g} s → {best}")
    return {"chosen": best, "rows": n, "dense_s": t["dense"], "sparse_s": t["sparse"]}


# ---------------------------------------------------------------------------------------------
# Ours
# ---------------------------------------------------------------------------------------------

def _trace_entry(p: Any) -> dict[str, Any]:
    """One entry of our trace, read by the solve's callback after each step: seconds since
    ``qpcore.solve`` started, F(w_b), the dual value D and the active cuts; the cumulative seconds
    of objective evaluation (T1, ``CutState.eval_seconds``) and line search (T2,
    ``search_seconds``); what the last iteration touched (|X^a| ``touched_eval``, |X^s|
    ``touched_search``); the cumulative ``rows_read`` counter (None while the strategy keeps none).
    All read without the snapshot's sync, which would add a pass over the data."""
    from qpcore_strategies.cutting_plane import CutState

    cs = p.work(CutState)
    return {"iteration": p.iteration, "seconds": p.elapsed, "primal": cs.F_b, "dual": cs.dual, "cuts": cs.cuts.n,
            "eval_s": cs.eval_seconds, "search_s": cs.search_seconds, "touched_eval": cs.touched_eval,
            "touched_search": cs.touched_search, "rows_read": p.counters.get("rows_read")}


def run_ours(prob: Any, variant: str, threads: int, tol: float, time_limit: float) -> dict[str, Any]:
    """qpcore.solve(prob.qp, variant) at ``threads`` BLAS threads; the problem is built beforehand
    (not timed). The trace's primal values (the strategy's F(w_b), recorded by a callback after each
    step) give the time to each gap; the final point is judged by the problem afterwards (not timed)."""
    from qpcore import solve
    from qpcore_strategies.cutting_plane import CutState

    strategy = make_strategy(variant)
    trace: list[dict[str, Any]] = []
    with thread_limit(threads):
        eff = blas_threads()
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            res = solve(prob.qp, strategy, tol=tol, time_limit=time_limit,
                        callback=lambda p: trace.append(_trace_entry(p)))
            seconds = time.perf_counter() - t0
    stats = {k: v for k, v in dict(res.stats).items() if isinstance(v, (int, float, str, bool)) or v is None}
    cs = res.state.work_or_none(CutState)
    if cs is not None:                                  # the strategy's own clocks
        stats.setdefault("eval_seconds", cs.eval_seconds)
        stats.setdefault("search_seconds", cs.search_seconds)
    w = np.asarray(prob.weights(res), dtype=np.float64)
    return {"seconds": seconds, "trace": [{k: (float(v) if isinstance(v, (int, float, np.number)) else v)
                                            for k, v in p.items()} for p in trace],
            "w": w, "status": res.status.code, "iterations": int(res.iterations),
            "cuts_active": stats.get("cuts"), "cuts_added": stats.get("cuts_added"), "stats": stats,
            "peak_mb": mem.peak_mb, "blas_threads": eff, "threads": threads,
            "final_primal_reported": float(trace[-1]["primal"]) if trace else None}


def reference(row: Row, prob: Any, path: Path, tol: float, time_limit: float, threads: int,
              svm_path: str | None = None, ocas_cache: int = 2000) -> dict[str, Any]:
    """F* of the row, untimed, cached in ``path`` by row key (a cached entry at least as tight is reused).

    Candidates: our OCAS at TolRel ``tol`` (time limit ``time_limit``), whose certificate
    (``prob.certificate``: F(w_b) and the dual value D(α) of its dual-feasible α, both computed from
    the data) gives the lower bound D ≤ F_opt; and, when installed, svmocas ``-m 1 -r tol`` on the same
    file, its point judged by our problem. F* = the lowest F; the optimum lies in [D, F*], so
    ``bracket`` = (F* − D)/F* bounds the error of every relative gap measured against F*.
    """
    seed(path)
    cache: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    hit = cache.get(row.key)
    if hit and hit.get("tol", 1.0) <= tol * (1 + 1e-12) and hit.get("primal") is not None and hit.get("converged"):
        return dict(hit, cached=True)
    from qpcore import solve

    cands: dict[str, dict[str, Any]] = {}
    dual: float | None = None
    log(f"[{row.name}] reference: OCAS at TolRel {tol:g}" + (" and svmocas -r " + f"{tol:g}" if svm_path else "")
        + f" (untimed; cached in {path.name}) ...")
    try:
        with thread_limit(threads):
            t0 = time.perf_counter()
            res = solve(prob.qp, make_strategy("ocas"), tol=tol, time_limit=time_limit)
            seconds = time.perf_counter() - t0
            cert = prob.certificate(res)
        dual = float(cert.dual)
        cands["OCAS"] = {"primal": float(cert.primal), "dual": dual, "rel_gap": float(cert.rel_gap),
                         "status": res.status.code, "iterations": int(res.iterations),
                         "seconds": round(seconds, 2)}
    except Exception as e:  # noqa: BLE001 - a failed candidate is reported, the other may do
        cands["OCAS"] = {"error": f"{type(e).__name__}: {e}"[:200]}
    if svm_path:
        r = run_svmocas(svm_path, row.X.shape[1], row.C, row.bias, 1, tol, 1, time_limit, time_limit + 60.0,
                        ocas_cache)
        if r.get("w") is not None:
            cands["svmocas"] = {"primal": float(prob.primal_objective(r["w"])), "reported": r["final_primal_reported"],
                                "its_dual": r["trajectory"]["Q_D"][-1],
                                "status": r["status"], "iterations": r["iterations"], "seconds": r["seconds"]}
        else:
            cands["svmocas"] = {"error": r.get("status")}
    ok = {k: v for k, v in cands.items() if v.get("primal") is not None}
    if not ok:
        raise RuntimeError(f"{row.name}: no reference solve succeeded: {cands}")
    best = min(ok, key=lambda k: ok[k]["primal"])
    f = ok[best]["primal"]
    # reused by later runs only when some candidate met TolRel (ours certified, or svmocas by its own Q_D)
    conv = [k for k, v in ok.items() if v["status"] == "converged" or "TolRel" in str(v["status"])]
    ent = {"primal": f, "dual": dual, "bracket": (f - dual) / abs(f) if dual is not None else None, "by": best,
           "tol": tol, "time_limit": time_limit, "candidates": cands, "converged": conv, "time": now_iso()}
    log(f"[{row.name}] reference F* = {f:.12g} (by {best}); optimum within {_e(ent['bracket'], '.1e')} below "
        "(certified by OCAS's dual point)")
    cache = json.loads(path.read_text()) if path.is_file() else {}
    cache[row.key] = ent
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n")
    return dict(ent, cached=False)


# ---------------------------------------------------------------------------------------------
# Time to gap
# ---------------------------------------------------------------------------------------------

def time_to_gaps(times: list[float], primal: list[float], f_star: float,
                 gaps: tuple[float, ...] = GAPS) -> dict[str, float]:
    """For each gap g, the first time with (F − F*)/F* ≤ g (inf when never)."""
    out: dict[str, float] = {}
    rel = (np.asarray(primal, dtype=np.float64) - f_star) / abs(f_star)
    for g in gaps:
        hit = np.flatnonzero(rel <= g)
        out[gkey(g)] = float(times[int(hit[0])]) if hit.size else math.inf
    return out


#: Table 3's fields at a gap: cumulative at the first iteration reaching it (means: per iteration up to it)
T3_FIELDS = ("iteration", "seconds", "eval_s", "search_s", "rows_read", "mean_touched_eval", "mean_touched_search")


def _mean_or_none(vals: list[Any]) -> float | None:
    return None if not vals or any(v is None for v in vals) else float(np.mean(np.asarray(vals, dtype=np.float64)))


def table3_points(trace: list[dict[str, Any]], f_star: float,
                  gaps: tuple[float, ...] = TABLE3_GAPS) -> dict[str, dict[str, Any] | None]:
    """Xiao and Zhou's Table 3 read off one run's trace: for each gap, at the first trace entry with
    (F − F*)/F* ≤ gap, its iteration, seconds, cumulative T1 (``eval_s``) and T2 (``search_s``) and
    ``rows_read``, and the mean |X^a| (``touched_eval``) and |X^s| (``touched_search``) per
    iteration up to it. None for a gap never reached; a field the trace lacks is None."""
    out: dict[str, dict[str, Any] | None] = {gkey(g): None for g in gaps}
    if not trace:
        return out
    rel = (np.asarray([p["primal"] for p in trace], dtype=np.float64) - f_star) / abs(f_star)
    for g in gaps:
        hit = np.flatnonzero(rel <= g)
        if not hit.size:
            continue
        i = int(hit[0])
        p = trace[i]
        out[gkey(g)] = {"iteration": p.get("iteration"), "seconds": p.get("seconds"), "eval_s": p.get("eval_s"),
                        "search_s": p.get("search_s"), "rows_read": p.get("rows_read"),
                        "mean_touched_eval": _mean_or_none([q.get("touched_eval") for q in trace[:i + 1]]),
                        "mean_touched_search": _mean_or_none([q.get("touched_search") for q in trace[:i + 1]])}
    return out


def table3_summary(points: list[dict[str, dict[str, Any] | None]], gaps: tuple[float, ...]) -> dict[str, Any]:
    """The median over runs of each Table-3 field at each gap (over the runs that reached it: ``reached``
    of ``runs``); a field some run lacks is None."""
    out: dict[str, Any] = {}
    for g in gaps:
        hits = [h for p in points if (h := p.get(gkey(g))) is not None]
        if not hits:
            out[gkey(g)] = {"reached": 0, "runs": len(points)}
            continue
        ent: dict[str, Any] = {"reached": len(hits), "runs": len(points)}
        for f in T3_FIELDS:
            vals = [h.get(f) for h in hits]
            nums = [float(v) for v in vals if v is not None]
            ent[f] = float(median(nums)) if len(nums) == len(vals) else None
        out[gkey(g)] = ent
    return out


def _quot(a: Any, b: Any) -> float | None:
    return float(a) / float(b) if a is not None and b is not None and float(b) > 0 else None


def table3_compare(asx: dict[str, Any], oc: dict[str, Any], gaps: tuple[float, ...], *,
                   barred: bool) -> dict[str, Any]:
    """Active-set OCAS against OCAS at each gap (their :func:`table3_summary`): T1, T2, time to the gap,
    iterations and rows read, each as AS / OCAS; the bars (:data:`BAR_T3`) at their gap when
    ``barred`` (the text rows): T1 ≤ 0.6, T2 ≤ 0.3, time < 1."""
    out: dict[str, Any] = {}
    for g in gaps:
        a, o = asx.get(gkey(g)) or {}, oc.get(gkey(g)) or {}
        d: dict[str, Any] = {"as": a, "ocas": o,
                             "t1_ratio": _quot(a.get("eval_s"), o.get("eval_s")),
                             "t2_ratio": _quot(a.get("search_s"), o.get("search_s")),
                             "total_ratio": _quot(a.get("seconds"), o.get("seconds")),
                             "iterations_ratio": _quot(a.get("iteration"), o.get("iteration")),
                             "rows_read_ratio": _quot(a.get("rows_read"), o.get("rows_read"))}
        if barred and math.isclose(g, BAR_T3["gap"]):
            def bar(v: float | None, lim: float, strict: bool = False) -> bool | None:
                return None if v is None else bool(v < lim if strict else v <= lim)
            d["bars"] = {"t1": bar(d["t1_ratio"], BAR_T3["eval"]), "t2": bar(d["t2_ratio"], BAR_T3["search"]),
                         "total": bar(d["total_ratio"], BAR_T3["total"], strict=True)}
        out[gkey(g)] = d
    return out


def _thin(t: list[float], v: list[float], keep: int = 400) -> list[list[float]]:
    """At most ``keep`` points of a trajectory (log-spaced indices, first and last kept)."""
    n = len(t)
    if n <= keep:
        idx = np.arange(n)
    else:
        idx = np.unique(np.concatenate([[0, n - 1], np.geomspace(1, n - 1, keep - 2).astype(int)]))
    return [[float(t[i]), float(v[i])] for i in idx]


# ---------------------------------------------------------------------------------------------
# One row
# ---------------------------------------------------------------------------------------------

@dataclass
class Opts:
    """Settings of one invocation beyond the harness's :class:`~benchmarks.harness.Runs`."""

    tol: float = 1e-5
    ref_tol: float = 1e-8
    cross_ref_tol: float = 1e-6
    ref_time_limit: float = 3600.0
    ocas_threads: str = "1"               # "1" or "match"
    svm_dir: Path = DEFAULT_SVM_DIR
    ref_path: Path = RESULTS / "ocas_reference.json"
    variants: tuple[str, ...] = VARIANTS
    ladder: tuple[float, ...] = EPS_LADDER
    ocas_cache: int = 2000
    gaps: tuple[float, ...] = GAPS
    svmocas: bool = True                  # False: no svmocas runs (and none in the reference)
    extra: dict[str, Any] = field(default_factory=dict)


def _ours_fn(prob: Any, variant: str, t: int, ctx: Runs, opts: Opts, last_anchor: dict[int, dict[str, Any]], method: int) -> Callable[[], dict[str, Any]]:
    def fn() -> dict[str, Any]:
        r = run_ours(prob, variant, t, opts.tol, ctx.time_limit)
        r["anchor_pair"] = last_anchor.get(method)
        return r
    return fn


def _anchor_fn(path: str, row: Row, method: int, p: int, ctx: Runs, opts: Opts,
               last_anchor: dict[int, dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    def fn() -> dict[str, Any]:
        r = run_svmocas(path, row.X.shape[1], row.C, row.bias, method, opts.tol, p, ctx.time_limit,
                        ctx.anchor_timeout, opts.ocas_cache)
        last_anchor[method] = r
        return r
    return fn


def _judge_runs(runs: list[dict[str, Any]], prob: Any, f_star: float, *, kind: str,
                gaps: tuple[float, ...] = GAPS) -> None:
    """Our problem's F of each run's final point; the trajectory's relative gaps and time to gaps
    (ours: also Table 3's points, :func:`table3_points`)."""
    for r in runs:
        if r.get("w") is None:
            continue
        r["final_primal"] = float(prob.primal_objective(r["w"]))
        r["final_rel"] = (r["final_primal"] - f_star) / abs(f_star)
        rep = r.get("final_primal_reported")
        r["parity"] = (rep - r["final_primal"]) / abs(r["final_primal"]) if rep is not None else None
        if kind == "svmocas":
            tr = r["trajectory"]
            r["ttg"] = time_to_gaps(tr["tim"], tr["Q_P"], f_star, gaps)
            r["curve"] = _thin(tr["tim"], [max((q - f_star) / abs(f_star), 1e-16) for q in tr["Q_P"]])
        elif kind == "ours":
            tr = r["trace"]
            ts = [p["seconds"] for p in tr]
            fs = [p["primal"] for p in tr]
            r["ttg"] = time_to_gaps(ts, fs, f_star, gaps) if tr else {gkey(g): math.inf for g in gaps}
            r["table3"] = table3_points(tr, f_star, gaps)
            r["curve"] = _thin(ts, [max((f - f_star) / abs(f_star), 1e-16) for f in fs]) if tr else []


def _ttg_summary(runs: list[dict[str, Any]], gaps: tuple[float, ...] = GAPS) -> dict[str, Any]:
    """Median, min, max of each gap's time and of the total; loads; the median run's details."""
    ok = [r for r in runs if r.get("ttg")]
    out: dict[str, Any] = {"runs": len(runs), "loads": [r.get("load") for r in runs],
                           "loaded": any(r.get("load", {}).get("loaded") for r in runs)}
    secs = [r["seconds"] for r in runs]
    out["seconds"] = median(secs) if secs else None
    out["min"], out["max"] = (min(secs), max(secs)) if secs else (None, None)
    out["ttg"] = {}
    for g in gaps:
        v = [r["ttg"][gkey(g)] for r in ok]
        out["ttg"][gkey(g)] = {"median": median(v), "min": min(v), "max": max(v)} if v else None
    if any("table3" in r for r in runs):
        out["table3"] = table3_summary([r["table3"] for r in runs if "table3" in r], gaps)
    fin = [r for r in runs if math.isfinite(r.get("seconds", math.nan))] or runs
    mid = min(fin, key=lambda r: abs(r["seconds"] - out["seconds"])) if fin and out["seconds"] is not None else None
    if mid is not None:
        for k in ("status", "iterations", "cuts_active", "cuts_added", "final_primal", "final_rel", "parity", "curve",
                  "peak_mb", "blas_threads", "threads", "stats", "load_s", "command", "eps"):
            if k in mid:
                out[k] = mid[k]
    return out


def _pair_ratio(ours: list[dict[str, Any]], anchor: list[dict[str, Any]], g: float) -> dict[str, Any]:
    """ratio_stats (the harness) on the time to gap g: median / median, and each of our runs against the
    svmocas run just before it."""
    k = gkey(g)
    o = [{"seconds": r["ttg"][k], **({"anchor_before": r["anchor_pair"]["ttg"][k]}
                                     if r.get("anchor_pair") and r["anchor_pair"].get("ttg") else {})}
         for r in ours if r.get("ttg")]
    # an svmocas run that never reached the gap bounds the ratio by its whole run (ratio_below)
    a = [{"seconds": r["ttg"][k], "limit": r["seconds"]} for r in anchor if r.get("ttg")]
    if not o or not a:
        return {"ratio": None, "paired_min": None, "paired_max": None}
    if not all("anchor_before" in x for x in o):
        o = [{"seconds": x["seconds"]} for x in o]
    return ratio_stats(o, a)


def _eval_search_seconds(stats: dict[str, Any] | None) -> float | None:
    """Seconds in objective evaluation + line search, when the strategy's stats report them."""
    if not stats:
        return None
    for a, b in (("eval_seconds", "search_seconds"), ("seconds_eval", "seconds_search"),
                 ("time_eval", "time_search")):
        if a in stats and b in stats:
            return float(stats[a]) + float(stats[b])
    return None


def _liblinear_ladder(row: Row, prob: Any, Xin: Any, f_star: float, ctx: Runs, opts: Opts,
                      gaps: tuple[float, ...] = GAPS) -> dict[str, Any]:
    """Run the eps ladder (loosest first) until every gap is reached; returns each gap's eps and
    the ladder's fits (time, relative gap, iterations)."""
    chosen: dict[str, float | None] = {gkey(g): None for g in gaps}
    fits: list[dict[str, Any]] = []
    for eps in opts.ladder:
        r = timed(ctx, partial(run_liblinear, Xin, row.y, row.C, row.bias, eps, ctx.anchor_timeout))
        rec = {"eps": eps, "seconds": r["seconds"], "status": r.get("status"), "iterations": r.get("iterations"),
               "load": r.get("load")}
        if r.get("w") is not None:
            rec["rel"] = (float(prob.primal_objective(r["w"])) - f_star) / abs(f_star)
            for g in gaps:
                if chosen[gkey(g)] is None and rec["rel"] <= g:
                    chosen[gkey(g)] = eps
        fits.append(rec)
        log(f"[{row.name}] LIBLINEAR eps {eps:g}: {_sec(r['seconds'])} s, rel. gap {_e(rec.get('rel'), '.1e')}"
            f" ({r.get('status')})")
        if all(v is not None for v in chosen.values()) or not math.isfinite(r["seconds"]):
            break
    return {"chosen": chosen, "ladder": fits}


def _liblinear_setup(Xin: Any, row: Row, ctx: Runs) -> float | None:
    """Seconds of a LinearSVC fit with max_iter=1: scikit-learn's copy of the data into LIBLINEAR's
    format plus one coordinate-descent epoch (an upper bound on the copy)."""
    ts = []
    for _ in range(2):
        r = run_liblinear(Xin, row.y, row.C, row.bias, 1e-1, ctx.anchor_timeout, max_iter=1)
        if math.isfinite(r["seconds"]):
            ts.append(r["seconds"])
    return min(ts) if ts else None


def bench_row(row: Row, ctx: Runs, opts: Opts, *, liblinear: bool = True) -> dict[str, Any]:
    """Every variant of ours at every thread count, svmocas -m 1 / -m 0, LIBLINEAR; one row."""
    ok, why = available()
    desc = row.describe()
    log(f"\n[{row.name}] {desc['rows']} × {desc['features']}, nnz {desc['nnz']}, C={row.C:g}, bias {row.bias:g} "
        f"({row.source})")
    gaps = opts.gaps
    rec: dict[str, Any] = {"data": desc, "time": now_iso(), "unavailable": {} if ok else {"ours": why},
                           "gaps": list(gaps)}
    if not ok:
        return rec
    t0 = time.perf_counter()
    prob = build_problem(row)
    rec["build_s"] = round(time.perf_counter() - t0, 3)
    # svmocas's input file (written once; not timed)
    have_ocas = opts.svmocas and svmocas_path() is not None
    groups: list[tuple[str | None, dict[str, Callable[[], dict[str, Any]]]]] = []
    last_anchor: dict[int, dict[str, Any]] = {}
    if have_ocas:
        rec["svm_file"] = svm_file(row, opts.svm_dir)
        log(f"[{row.name}] svmocas input {rec['svm_file']['path']} ({rec['svm_file']['bytes'] / 2**20:.0f} MB, "
            + ("reused" if rec["svm_file"]["reused"] else f"written in {rec['svm_file']['write_s']} s") + ")")
    elif opts.svmocas:
        rec["unavailable"]["svmocas"] = f"svmocas not installed ({SVMOCAS_INSTALL})"
    ref = reference(row, prob, opts.ref_path, opts.ref_tol, opts.ref_time_limit, max(ctx.threads),
                    rec["svm_file"]["path"] if have_ocas else None, opts.ocas_cache)
    f_star = ref["primal"]
    rec["reference"] = ref
    # one interleaved group per svmocas run: with -p 1 (default) every thread count of ours shares it
    # (svmocas, ours@1, svmocas, ours@2, ...; a slow svmocas runs once a pass); with "match" one per t
    pvals = sorted({t if opts.ocas_threads == "match" else 1 for t in ctx.threads})
    for method in (1, 0):
        members = [v for v in opts.variants if ANCHOR_METHOD[v] == method]
        for p in pvals if members else []:
            g: dict[str, Callable[[], dict[str, Any]]] = {}
            if have_ocas:
                g[f"svmocas -m {method} -p {p}"] = _anchor_fn(rec["svm_file"]["path"], row, method, p, ctx, opts,
                                                              last_anchor)
            for t in ctx.threads:
                if opts.ocas_threads == "match" and t != p:
                    continue
                for v in members:
                    g[f"{v}@{t}"] = _ours_fn(prob, v, t, ctx, opts, last_anchor, method)
            groups.append((f"svmocas -m {method} -p {p}" if have_ocas else None, g))
    if any(blas_threads_under(t) not in (None, t) for t in ctx.threads):
        log(f"warning: BLAS threads in effect {[blas_threads_under(t) for t in ctx.threads]} for {ctx.threads} asked")
    runs: dict[str, list[dict[str, Any]]] = {}
    for anchor, g in groups:
        out = interleave(ctx, g, f"{row.name}", anchor=anchor)
        for k, rs in out.items():
            runs.setdefault(k, []).extend(rs)

    # LIBLINEAR: the ladder decides each gap's eps; those fits are then repeated in their own passes
    lib: dict[str, Any] = {}
    if liblinear:
        choice = choose_liblinear_input(row, ctx)
        Xin = np.ascontiguousarray(row.X) if choice["chosen"] == "dense" else (
            row.X if row.kind == "sparse" else sp.csr_matrix(row.X))
        lad = _liblinear_ladder(row, prob, Xin, f_star, ctx, opts, gaps)
        setup = _liblinear_setup(Xin, row, ctx)
        eps_set = sorted({e for e in lad["chosen"].values() if e is not None}, reverse=True)
        lfns: dict[str, Callable[[], dict[str, Any]]] = {
            f"liblinear eps={e:g}": partial(run_liblinear, Xin, row.y, row.C, row.bias, e, ctx.anchor_timeout)
            for e in eps_set}
        lruns = interleave(ctx, lfns, f"{row.name} LIBLINEAR") if lfns else {}
        lib = {"input": choice, "ladder": lad["ladder"], "chosen": lad["chosen"], "setup_s": setup, "runs": lruns}

    # judge every point by our problem; F* = min(reference, every final point)
    everything = [r for rs in runs.values() for r in rs] + [r for rs in lib.get("runs", {}).values() for r in rs]
    for r in everything:
        if r.get("w") is not None:
            r["_F"] = float(prob.primal_objective(r["w"]))
    lowest = min([f_star] + [r["_F"] for r in everything if "_F" in r])
    rec["f_star"] = lowest
    rec["f_star_source"] = ("reference" if lowest == f_star else
                            f"a run's final point ({(f_star - lowest) / abs(lowest):.1e} below the reference)")
    for k, rs in runs.items():
        _judge_runs(rs, prob, lowest, kind="svmocas" if k.startswith("svmocas") else "ours", gaps=gaps)

    res: dict[str, Any] = {}
    for k, rs in runs.items():
        s = _ttg_summary(rs, gaps)
        if not k.startswith("svmocas"):
            variant, th = k.split("@")
            s["variant"], s["threads"] = variant, int(th)
            p = int(th) if opts.ocas_threads == "match" else 1
            anchor_key = f"svmocas -m {ANCHOR_METHOD[variant]} -p {p}"
            if anchor_key in runs:
                s["anchor"] = anchor_key
                s["ratios"] = {gkey(g): _pair_ratio(rs, runs[anchor_key], g) for g in gaps}
            es = [_eval_search_seconds(r.get("stats")) for r in rs]
            s["eval_search_s"] = median([x for x in es if x is not None]) if any(x is not None for x in es) else None
            s["touched_eval"] = median([r["stats"].get("touched_eval", math.nan) for r in rs]) if rs else None
            s["touched_search"] = median([r["stats"].get("touched_search", math.nan) for r in rs]) if rs else None
        res[k] = s
    rec["results"] = res

    if lib:
        lsum: dict[str, Any] = {"input": lib["input"], "ladder": lib["ladder"], "chosen": lib["chosen"],
                                "setup_s": lib["setup_s"], "ttg": {}, "per_eps": {}}
        for k, rs in lib["runs"].items():
            e = float(k.split("=")[1])
            for r in rs:
                if "_F" in r:
                    r["final_rel"] = (r["_F"] - lowest) / abs(lowest)
            secs = [r["seconds"] for r in rs]
            lsum["per_eps"][f"{e:g}"] = {"seconds": median(secs), "min": min(secs), "max": max(secs), "runs": len(rs),
                                         "final_rel": rs[0].get("final_rel"), "iterations": rs[0].get("iterations"),
                                         "peak_mb": max((r.get("peak_mb") or 0.0) for r in rs),
                                         "loads": [r.get("load") for r in rs],
                                         "loaded": any(r.get("load", {}).get("loaded") for r in rs)}
        for gap in gaps:
            e = lib["chosen"][gkey(gap)]
            pe = lsum["per_eps"].get(f"{e:g}") if e is not None else None
            lsum["ttg"][gkey(gap)] = (None if pe is None else
                                    {"median": pe["seconds"], "min": pe["min"], "max": pe["max"], "eps": e})
        lsum["loaded"] = any(v["loaded"] for v in lsum["per_eps"].values())
        rec["liblinear"] = lsum
    rec["comparisons"] = compare(rec, ctx, opts, barred=row.name in TEXT_ROWS)
    return rec


def _med(s: dict[str, Any] | None, g: float) -> float | None:
    if not s or not s.get("ttg") or s["ttg"].get(gkey(g)) is None:
        return None
    v = s["ttg"][gkey(g)]["median"]
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def compare(rec: dict[str, Any], ctx: Runs, opts: Opts, *, barred: bool = False) -> dict[str, Any]:
    """The issue's bars: ours / svmocas per gap; best of ours / min(svmocas, LIBLINEAR); active-set
    OCAS against OCAS (evaluation + line search time, total time, final accuracy); Table 3 of each
    active-set variant against OCAS at each thread count (its bars when ``barred``: the text rows)."""
    res = rec["results"]
    lib = rec.get("liblinear")
    gaps = tuple(rec.get("gaps", GAPS))
    out: dict[str, Any] = {"vs_svmocas": {}, "best_vs_anchors": {}, "asocas_vs_ocas": {}, "table3": {}}
    for k, s in res.items():
        if k.startswith("svmocas") or "ratios" not in s:
            continue
        out["vs_svmocas"][k] = {}
        for gk, v in s["ratios"].items():
            rat = v.get("ratio") if v.get("ratio") is not None else v.get("ratio_below")
            out["vs_svmocas"][k][gk] = dict(v, bar=None if rat is None else bool(rat <= BAR["vs_svmocas"]))
    for t in ctx.threads:
        ours = {k: s for k, s in res.items() if not k.startswith("svmocas") and s.get("threads") == t}
        anchors = {k: s for k, s in res.items() if k.startswith("svmocas")}
        cmp_t: dict[str, Any] = {}
        for g in gaps:
            o = [(v, k) for k, s in ours.items() if (v := _med(s, g)) is not None]
            a = [(v, k) for k, s in anchors.items() if (v := _med(s, g)) is not None]
            if lib and lib["ttg"].get(gkey(g)):
                a.append((lib["ttg"][gkey(g)]["median"], f"LIBLINEAR eps={lib['ttg'][gkey(g)]['eps']:g}"))
                if lib.get("setup_s") is not None:   # conservative: LIBLINEAR without its data copy
                    a.append((max(lib["ttg"][gkey(g)]["median"] - lib["setup_s"], 1e-9),
                              f"LIBLINEAR eps={lib['ttg'][gkey(g)]['eps']:g} minus its copy"))
            if o and a:
                bo, ba = min(o), min(a)
                cmp_t[gkey(g)] = {"ours": bo[1], "ours_s": bo[0], "anchor": ba[1], "anchor_s": ba[0],
                                  "ratio": bo[0] / ba[0], "bar": bool(bo[0] / ba[0] <= BAR["dense_best"])}
        out["best_vs_anchors"][str(t)] = cmp_t
        oc, asc = res.get(f"ocas@{t}"), res.get(f"asocas@{t}")
        for v in AS_VARIANTS:
            av = res.get(f"{v}@{t}")
            if oc and av and oc.get("table3") and av.get("table3"):
                out["table3"].setdefault(v, {})[str(t)] = table3_compare(av["table3"], oc["table3"], gaps,
                                                                           barred=barred)
        if oc and asc:
            es_o, es_a = oc.get("eval_search_s"), asc.get("eval_search_s")
            te = [(asc.get(x), oc.get(x)) for x in ("touched_eval", "touched_search")]
            touched = [(a or 0.0) + (b or 0.0) for a, b in [(te[0][0], te[1][0]), (te[0][1], te[1][1])]]
            d: dict[str, Any] = {
                "eval_search_s": [es_a, es_o],
                "eval_search_ratio": (es_a / es_o) if es_a is not None and es_o else None,
                "touched_ratio": (touched[0] / touched[1]) if touched[1] else None,
                "total_ratio": (asc["seconds"] / oc["seconds"]) if oc.get("seconds") else None,
                "final_rel": [asc.get("final_rel"), oc.get("final_rel")],
            }
            d["bar_eval_search"] = (None if d["eval_search_ratio"] is None else
                                    bool(d["eval_search_ratio"] <= BAR["asocas_eval_search"]))
            d["bar_total"] = None if d["total_ratio"] is None else bool(d["total_ratio"] < 1.0)
            fa, fo = d["final_rel"]
            d["same_accuracy"] = (None if fa is None or fo is None else
                                  bool(max(fa, 0.0) <= max(fo, 0.0) + opts.tol))
            out["asocas_vs_ocas"][str(t)] = d
    return out


# ---------------------------------------------------------------------------------------------
# The crossover table: sparse text, rows × C
# ---------------------------------------------------------------------------------------------

def bench_crossover(X: Any, y: np.ndarray, spec: Any, sz: Sizes, ctx: Runs, opts: Opts) -> dict[str, Any]:
    """Time to 1e-3 for our OCAS (1 thread), svmocas -m 1 -p 1 and LIBLINEAR, on prefixes of the
    generated text at each C, plus peak memory: ours (above the data, which it uses in place),
    svmocas (its whole RSS: it holds its own copy of the data), LIBLINEAR (above the data: its copy in
    LIBLINEAR's format and its model)."""
    ok, why = available()
    out: dict[str, Any] = {"cells": [], "time": now_iso(), "unavailable": {} if ok else {"ours": why}}
    if not ok:
        return out
    g = 1e-3
    for n in sz.cross_rows:
        for C in sz.cross_C:
            row = text_row(X, y, spec, n, C=C, name=f"text{n}")
            prob = build_problem(row)
            last: dict[int, dict[str, Any]] = {}
            fns: dict[str, Callable[[], dict[str, Any]]] = {}
            anchor = None
            fi = svm_file(row, opts.svm_dir) if opts.svmocas and svmocas_path() else None
            if fi is not None:
                fns["svmocas -m 1 -p 1"] = _anchor_fn(fi["path"], row, 1, 1, ctx, opts, last)
                anchor = "svmocas -m 1 -p 1"
            ref = reference(row, prob, opts.ref_path, opts.cross_ref_tol, opts.ref_time_limit, max(ctx.threads),
                            fi["path"] if fi else None, opts.ocas_cache)
            f_star = ref["primal"]
            fns["ocas@1"] = _ours_fn(prob, "ocas", 1, ctx, opts, last, 1)
            runs = interleave(ctx, fns, f"crossover n={n} C={C:g}", anchor=anchor)
            lad = _liblinear_ladder(row, prob, row.X, f_star, ctx, opts, gaps=(g,))
            e = lad["chosen"][gkey(g)]
            lfns: dict[str, Callable[[], dict[str, Any]]] = (
                {f"liblinear eps={e:g}": partial(run_liblinear, row.X, row.y, C, row.bias, e, ctx.anchor_timeout)}
                if e is not None else {})
            lruns = interleave(ctx, lfns, f"crossover n={n} C={C:g} LIBLINEAR") if lfns else {}
            everything = [r for rs in runs.values() for r in rs] + [r for rs in lruns.values() for r in rs]
            lowest = min([f_star] + [float(prob.primal_objective(r["w"])) for r in everything if r.get("w") is not None])
            for k, rs in runs.items():
                _judge_runs(rs, prob, lowest, kind="svmocas" if k.startswith("svmocas") else "ours")
            cell: dict[str, Any] = {"rows": n, "C": C, "f_star": lowest, "reference": ref, "data": row.describe()}
            for k, rs in runs.items():
                s = _ttg_summary(rs)
                cell["svmocas" if k.startswith("svmocas") else "ocas"] = {
                    "seconds": _med(s, g), "min": (s["ttg"][gkey(g)] or {}).get("min"),
                    "max": (s["ttg"][gkey(g)] or {}).get("max"), "total_s": s["seconds"], "runs": s["runs"],
                    "iterations": s.get("iterations"), "peak_mb": s.get("peak_mb"), "loaded": s["loaded"],
                    "loads": s["loads"], "parity": s.get("parity"), "status": s.get("status")}
            if lruns:
                rs = next(iter(lruns.values()))
                secs = [r["seconds"] for r in rs]
                cell["liblinear"] = {"seconds": median(secs), "min": min(secs), "max": max(secs), "eps": e,
                                     "runs": len(rs), "peak_mb": max((r.get("peak_mb") or 0.0) for r in rs),
                                     "iterations": rs[0].get("iterations"), "loads": [r.get("load") for r in rs],
                                     "loaded": any(r.get("load", {}).get("loaded") for r in rs)}
            else:
                cell["liblinear"] = {"seconds": None, "eps": None, "ladder": lad["ladder"]}
            times = {k: cell[k]["seconds"] for k in ("ocas", "svmocas", "liblinear")
                     if k in cell and cell[k].get("seconds") is not None and math.isfinite(cell[k]["seconds"])}
            cell["fastest"] = min(times, key=lambda k: times[k]) if times else None
            mems = {k: cell[k].get("peak_mb") for k in ("ocas", "svmocas", "liblinear")
                    if k in cell and cell[k].get("peak_mb") is not None}
            cell["least_memory"] = min(mems, key=lambda k: mems[k]) if mems else None
            cell["ladder"] = lad["ladder"]
            out["cells"].append(cell)
            log(f"[crossover n={n} C={C:g}] to 1e-3: " + ", ".join(f"{k} {_sec(v)} s" for k, v in times.items())
                + f" → {cell['fastest']}")
    return out


# ---------------------------------------------------------------------------------------------
# Page and plots
# ---------------------------------------------------------------------------------------------

TITLES = {
    "reuters": "reuters.trn", "adult": "adult.trn", "ijcnn1": "ijcnn1.trn",
    "dense2m": "Tall dense: two overlapping Gaussian classes", "dense200k": "Tall dense, 200,000 rows",
    "text1m": "Sparse text-like (Zipf features)", "crossover": "Crossover on sparse text: rows × C",
}


def title(key: str) -> str:
    """A row's heading: its title and C (the crossover table has its own C column)."""
    name, C = split_key(key)
    if name == "crossover":
        return TITLES[name]
    return f"{TITLES.get(name, name)} (C = {C:g})" if name in REAL_ROWS else f"{TITLES.get(name, name)}, C = {C:g}"


def plot_name(key: str) -> str:
    """``ocas_<row>.png``; a row at C ≠ 1 gets ``ocas_<row>_C<C>.png``."""
    name, C = split_key(key)
    return f"ocas_{name}.png" if C == 1.0 else f"ocas_{name}_C{C:g}.png"


def _ttg_cell(s: dict[str, Any] | None) -> str:
    if not s:
        return "–"
    if s["median"] is None or s["median"] == "inf" or (isinstance(s["median"], float) and math.isinf(s["median"])):
        return "not reached"
    if s.get("min") is not None and s.get("max") is not None and s["min"] != s["max"]:
        return f"{_sec(s['median'])} ({_sec(s['min'])}–{_sec(s['max'])})"
    return _sec(s["median"])


def _label(k: str) -> str:
    if k.startswith("svmocas"):
        return k.replace("svmocas", "svmocas", 1)
    v, t = k.split("@")
    return f"{LABEL.get(v, v)}"


def plot_row(name: str, rec: dict[str, Any], png: Path) -> bool:
    """Relative primal gap against seconds (log-y): every variant's median run, both svmocas modes,
    LIBLINEAR's ladder fits (points: fit time, gap reached)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for k, s in rec.get("results", {}).items():
        c = s.get("curve") or []
        if not c:
            continue
        t = [max(p[0], 1e-6) for p in c]
        v = [p[1] for p in c]
        style: dict[str, Any] = ({"linestyle": "--", "color": "black" if "-m 1" in k else "grey"}
                                 if k.startswith("svmocas") else {})
        lab = k if k.startswith("svmocas") else f"{_label(k)} @{s['threads']} thr"
        ax.plot(t, v, marker=".", markersize=2.5, linewidth=1.1, label=lab, **style)
    lib = rec.get("liblinear")
    if lib:
        pts = [(f["seconds"], f["rel"], f["eps"]) for f in lib["ladder"]
               if f.get("rel") is not None and isinstance(f["seconds"], (int, float)) and math.isfinite(f["seconds"])]
        if pts:
            ax.plot([p[0] for p in pts], [max(p[1], 1e-16) for p in pts], "s:", color="tab:red", markersize=4,
                    label="LIBLINEAR (one fit per eps)")
    for g in rec.get("gaps", GAPS):
        ax.axhline(g, color="red", linewidth=0.6, linestyle=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("seconds (solver time; problem building and svmocas's file loading excluded)")
    ax.set_ylabel("(F − F*) / F*")
    d = rec.get("data", {})
    ax.set_title(f"{TITLES.get(split_key(name)[0], name)} — {d.get('rows')} × {d.get('features')}, C = {d.get('C')}",
                 fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return True


def _bar(b: Any) -> str:
    return "–" if b is None else ("**met**" if b else "not met")


def _ref_text(ref: dict[str, Any]) -> str:
    parts = []
    for k, c in ref.get("candidates", {}).items():
        if c.get("primal") is None:
            parts.append(f"{k}: {c.get('error')}")
        elif k == "OCAS":
            parts.append(f"our OCAS F = {c['primal']:.12g} (certified rel. duality gap {c['rel_gap']:.1e}, "
                         f"{c['status']}, {c['iterations']} iterations, {_sec(c['seconds'])} s)")
        else:
            parts.append(f"svmocas -m 1 F = {c['primal']:.12g} (its Q_P {c['reported']}, its dual bound Q_D "
                         f"{c.get('its_dual')}, {c['iterations']} iterations, {c['status']})")
    return (f"Reference (TolRel {ref['tol']:g}, untimed{', cached' if ref.get('cached') else ''}): "
            + "; ".join(parts) + f". The optimum lies within {_e(ref.get('bracket'), '.1e')} (relative) below the "
            "reference, by OCAS's dual point: gaps smaller than that are not resolved.")


def _render_row(L: list[str], key: str, rec: dict[str, Any], page_dir: Path) -> None:
    name = split_key(key)[0]
    gaps = tuple(rec.get("gaps", GAPS))
    d = rec["data"]
    ref = rec.get("reference", {})
    L.append(f"Data: {d['source']}: {d['rows']:,} × {d['features']:,}, {d['nnz']:,} non-zeros ({d['kind']}, "
             f"{d['data_mb']} MB), {d['positive']:,} positive; C = {d['C']:g}, bias {d['bias']:g}.")
    if ref:
        L.append(f"F* = {rec['f_star']:.12g} ({rec['f_star_source']}); {_ref_text(ref)} "
                 f"Problem built in {rec.get('build_s')} s (not timed).")
    if rec.get("svm_file"):
        f = rec["svm_file"]
        L.append(f"svmocas input: {f['bytes'] / 2**20:.0f} MB SVMlight file ({f['writer']}"
                 + (", reused" if f.get("reused") else f", written in {f.get('write_s')} s") + ").")
    for k, why in rec.get("unavailable", {}).items():
        L.append(f"**{k}: {why}**")
    L.append("")
    res = rec.get("results", {})
    if not res:
        return
    L.append("| solver | threads | " + " | ".join(f"to {gtext(g)} s" for g in gaps) + " | total s (min–max) | final rel. gap "
             "| status | iterations | cuts active / added | parity | runs | load / own / others | load flag |")
    L.append("|---" * (11 + len(gaps)) + "|")
    for k, s in res.items():
        th = (str(s["threads"]) + (f" (BLAS {s['blas_threads']})" if s.get("blas_threads") not in (None, s["threads"])
                                   else "")) if "threads" in s else "–"
        lab = f"`{k}`" if k.startswith("svmocas") else _label(k)
        L.append(f"| {lab} | {th} | " + " | ".join(_ttg_cell(s["ttg"].get(gkey(g))) for g in gaps)
                 + f" | {_sec(s['seconds'])} ({_sec(s['min'])}–{_sec(s['max'])}) | {_e(s.get('final_rel'), '.1e')} | "
                 f"{s.get('status')} | {s.get('iterations')} | {s.get('cuts_active')} / {s.get('cuts_added')} | "
                 f"{_e(s.get('parity'), '+.1e')} | {s['runs']} | {_loads(s['loads'])} | {_flag(s['loaded'])} |")
    lib = rec.get("liblinear")
    if lib:
        by_eps: dict[Any, list[float]] = {}
        for g in gaps:
            t = lib["ttg"].get(gkey(g))
            by_eps.setdefault(t["eps"] if t else None, []).append(g)
        for eps, gs in by_eps.items():
            if eps is None:
                L.append("| LIBLINEAR, no eps of the ladder | 1 | "
                         + " | ".join("not reached" if g in gs else "" for g in gaps) + " |" + " |" * 10)
                continue
            pe = lib["per_eps"][f"{eps:g}"]
            cells = " | ".join(_ttg_cell(lib["ttg"][gkey(g)]) if g in gs else "" for g in gaps)
            L.append(f"| LIBLINEAR, eps {eps:g} ({lib['input']['chosen']}) | 1 | {cells} | "
                     f"{_sec(pe['seconds'])} | {_e(pe['final_rel'], '.1e')} | | {pe['iterations']} | | | {pe['runs']} | "
                     f"{_loads(pe['loads'])} | {_flag(pe['loaded'])} |")
        ladder = ", ".join(f"{f['eps']:g}: {_sec(f['seconds'])} s → {_e(f.get('rel'), '.1e')}" for f in lib["ladder"])
        L.append("")
        L.append(f"LIBLINEAR input: **{lib['input']['chosen']}**"
                 + (f" (timed on {lib['input']['rows']:,} rows at eps 1e-2: dense {_sec(lib['input']['dense_s'])} s, "
                    f"CSR {_sec(lib['input']['sparse_s'])} s)" if "dense_s" in lib["input"] else "")
                 + f". Its eps ladder (fit time → relative gap): {ladder}. A fit with max_iter=1 (scikit-learn's copy "
                 f"of the data into LIBLINEAR's format plus one epoch) takes {_sec(lib.get('setup_s'))} s; the "
                 "comparisons below also use LIBLINEAR's time minus that (the conservative figure).")
    L.append("")
    cmp_ = rec.get("comparisons", {})
    vs = cmp_.get("vs_svmocas", {})
    if vs:
        L.append(f"**Ours / svmocas** (time to each gap; median / median, [range of each run against the svmocas run "
                 f"just before it]; bar ≤ {BAR['vs_svmocas']:g}×):\n")
        L.append("| ours | against | " + " | ".join(f"gap {g:g}" for g in gaps) + " |")
        L.append("|---|---|" + "---|" * len(gaps))
        for k, gs in vs.items():
            rcells: list[str] = []
            for g in gaps:
                v = gs.get(gkey(g), {})
                rng = (f" [{_r(v.get('paired_min'))}–{_r(v.get('paired_max'))}]" if v.get("paired_min") is not None
                       else "")
                if v.get("ratio") in ("inf", math.inf):
                    rcells.append(f"ours did not reach it {_bar(v.get('bar'))}")
                elif v.get("ratio") is not None:
                    rcells.append(f"{_r(v.get('ratio'))}×{rng} {_bar(v.get('bar'))}")
                elif v.get("ratio_below") is not None:
                    rcells.append(f"< {_r(v['ratio_below'])}× (svmocas did not reach it in its run) {_bar(v.get('bar'))}")
                else:
                    rcells.append("neither reached it")
            L.append(f"| {_label(k)} @{res[k]['threads']} | `{res[k].get('anchor')}` | " + " | ".join(rcells) + " |")
        L.append("")
    best = cmp_.get("best_vs_anchors", {})
    if best and any(best.values()):
        L.append("**Fastest of ours / fastest anchor** (svmocas either mode, LIBLINEAR, and LIBLINEAR minus its data "
                 f"copy)" + (f"; the bar on this row: ≤ {BAR['dense_best']:g}×" if name == "dense2m" else "") + ":\n")
        L.append("| threads | gap | fastest of ours | s | fastest anchor | s | ratio |"
                 + (" bar |" if name == "dense2m" else ""))
        L.append("|---" * (7 + (name == "dense2m")) + "|")
        for t, gs in best.items():
            for gk, v in gs.items():
                L.append(f"| {t} | {float(gk):g} | {_label(v['ours'])} | {_sec(v['ours_s'])} | {v['anchor']} | "
                         f"{_sec(v['anchor_s'])} | {_r(v['ratio'])} |" + (f" {_bar(v['bar'])} |" if name == "dense2m"
                                                                           else ""))
        L.append("")
    asv = cmp_.get("asocas_vs_ocas", {})
    if asv:
        L.append(f"**Active-set OCAS / OCAS** (bars: objective evaluation + line search ≤ {BAR['asocas_eval_search']:g}×, "
                 "total time < 1×, same final accuracy):\n")
        L.append("| threads | eval + search s (AS / OCAS) | ratio | examples touched ratio (eval + search) "
                 "| total time ratio | final rel. gap AS / OCAS | bars: eval+search / total / accuracy |")
        L.append("|---" * 7 + "|")
        for t, v in asv.items():
            es = v["eval_search_s"]
            L.append(f"| {t} | {_sec(es[0])} / {_sec(es[1])} | {_r(v['eval_search_ratio'])} | {_r(v['touched_ratio'])} | "
                     f"{_r(v['total_ratio'])} | {_e(v['final_rel'][0], '.1e')} / {_e(v['final_rel'][1], '.1e')} | "
                     f"{_bar(v['bar_eval_search'])} / {_bar(v['bar_total'])} / {_bar(v['same_accuracy'])} |")
        if all(v["eval_search_s"][0] is None for v in asv.values()):
            L.append("\n(The strategies' stats report no evaluation / line-search seconds: the examples-touched "
                     "ratio stands in for that bar.)")
        L.append("")
    t3 = cmp_.get("table3", {})
    if t3:
        _render_table3(L, name, t3, res, gaps)
    png = page_dir / plot_name(key)
    if png.is_file():
        L.append(f"![{key}]({png.name})\n")


def _num(v: Any, fmt: str) -> str:
    return "–" if v is None else format(float(v), fmt)


def _pair(a: dict[str, Any], o: dict[str, Any], f: str, fmt: str) -> str:
    return f"{_num(a.get(f), fmt)} / {_num(o.get(f), fmt)}"


def _render_table3(L: list[str], name: str, t3: dict[str, Any], res: dict[str, Any], gaps: tuple[float, ...]) -> None:
    """Xiao and Zhou's Table 3, ours: each active-set variant against OCAS at each thread count."""
    barred = name in TEXT_ROWS
    L.append("**Table 3 (Xiao and Zhou 2013): active-set OCAS against OCAS**, cumulative at the first iteration "
             "reaching each relative gap (median over the runs that reached it): T1 = objective evaluation seconds "
             "(`CutState.eval_seconds`), T2 = line-search seconds (`search_seconds`), time to the gap, iterations, "
             "rows read by every product (`rows_read`), mean |X^a| (`touched_eval`) and |X^s| (`touched_search`) "
             "per iteration; ratios AS / OCAS. "
             + (f"Bars at {gtext(BAR_T3['gap'])} (text rows): T1 ≤ {BAR_T3['eval']:g}, T2 ≤ {BAR_T3['search']:g}, "
                f"time < {BAR_T3['total']:g}." if barred else "No bar on this row (reported as it is)."))
    L.append("")
    for v, by_t in t3.items():
        for t, gs in by_t.items():
            where = f"{t} thread{'s' if t != '1' else ''}" if t.isdigit() else t
            L.append(f"*{LABEL.get(v, v)} / OCAS, {where}:*\n")
            L.append("| gap | iterations AS / OCAS | T1 s AS / OCAS | **T1 ratio** | T2 s AS / OCAS | **T2 ratio** "
                     "| time s AS / OCAS | **time ratio** | rows read AS / OCAS (ratio) | mean X^a AS / OCAS "
                     "| mean X^s AS / OCAS | runs reached AS / OCAS |" + (" bars T1 / T2 / time |" if barred else ""))
            L.append("|---" * (12 + barred) + "|")
            for g in gaps:
                d = gs.get(gkey(g))
                if d is None:
                    continue
                a, o = d.get("as") or {}, d.get("ocas") or {}
                if not a.get("reached") and not o.get("reached"):
                    L.append(f"| {gtext(g)} | not reached |" + " |" * (10 + barred))
                    continue
                rr = d.get("rows_read_ratio")
                bars = d.get("bars")
                L.append(f"| {gtext(g)} | {_pair(a, o, 'iteration', '.0f')} | {_pair(a, o, 'eval_s', '.3g')} | "
                         f"{_r(d.get('t1_ratio'))} | {_pair(a, o, 'search_s', '.3g')} | {_r(d.get('t2_ratio'))} | "
                         f"{_pair(a, o, 'seconds', '.3g')} | {_r(d.get('total_ratio'))} | "
                         f"{_pair(a, o, 'rows_read', ',.0f')} ({_r(rr)}) | {_pair(a, o, 'mean_touched_eval', ',.0f')} | "
                         f"{_pair(a, o, 'mean_touched_search', ',.0f')} | {a.get('reached', 0)}/{a.get('runs', 0)} / "
                         f"{o.get('reached', 0)}/{o.get('runs', 0)} |"
                         + (f" {_bar(bars['t1'])} / {_bar(bars['t2'])} / {_bar(bars['total'])} |" if bars else
                            (" |" if barred else "")))
            L.append("")
    if all(((d.get("as") or {}).get("rows_read") is None) for by_t in t3.values() for gs in by_t.values()
           for d in gs.values()):
        L.append("(`rows_read`: the strategies keep no such counter in this run: –.)\n")


def _render_crossover(L: list[str], rec: dict[str, Any]) -> None:
    cells = rec.get("cells", [])
    for k, why in rec.get("unavailable", {}).items():
        L.append(f"**{k}: {why}**\n")
    if not cells:
        return
    L.append("Prefixes of the generated text (`sparse_text`, the same seed: a prefix is the generator's output at "
             "that size), bias 1, time to a relative primal gap of 1e-3 (F*: the lowest of our OCAS and svmocas at TolRel "
             f"{cells[0]['reference']['tol']:g} and every run's final point; the largest certified bracket of the cells "
             f"is {_e(max((c['reference'].get('bracket') or 0.0) for c in cells), '.1e')}). Ours: OCAS at 1 thread; svmocas "
             "`-m 1 -p 1`; LIBLINEAR at the loosest eps of its ladder that reaches 1e-3. Peak memory: ours and "
             "LIBLINEAR above the data they are given (LIBLINEAR copies it into its own format), svmocas its whole "
             "RSS (it reads its own copy of the data from the file).\n")
    L.append("| rows | C | OCAS s | svmocas s | LIBLINEAR s (eps) | fastest | peak MB OCAS / svmocas / LIBLINEAR "
             "| least memory | data MB | load flag |")
    L.append("|---" * 10 + "|")
    for c in cells:
        o, s, lb = c.get("ocas", {}), c.get("svmocas", {}), c.get("liblinear", {})

        def sec(x: dict[str, Any]) -> str:
            v = x.get("seconds")
            if v is None:
                return "not reached"
            return _sec(v) + (f" ({_sec(x['min'])}–{_sec(x['max'])})" if x.get("runs", 1) > 1 and x.get("min") is not None
                              else "")

        loaded = any(x.get("loaded") for x in (o, s, lb))
        eps = f" (eps {lb['eps']:g})" if lb.get("eps") is not None else ""
        L.append(f"| {c['rows']:,} | {c['C']:g} | {sec(o)} | {sec(s) if s else '–'} | {sec(lb)}{eps} | "
                 f"**{c.get('fastest')}** | {_r(o.get('peak_mb'))} / {_r(s.get('peak_mb'))} / {_r(lb.get('peak_mb'))} | "
                 f"{c.get('least_memory')} | {c['data']['data_mb']} | {_flag(loaded)} |")
    L.append("")
    L.append(crossover_summary(cells))
    L.append("")


def crossover_summary(cells: list[dict[str, Any]]) -> str:
    """Plain words: who wins where (fastest to 1e-3 at each C, as rows grow)."""
    if not cells:
        return ""
    lines = []
    for C in sorted({c["C"] for c in cells}):
        cs = sorted([c for c in cells if c["C"] == C], key=lambda c: c["rows"])
        seq = ", ".join(f"{c['rows']:,} rows: {c.get('fastest')}" for c in cs)
        lines.append(f"- C = {C:g}: {seq}.")
    winners = {c.get("fastest") for c in cells}
    head = (f"Fastest to 1e-3 everywhere: {winners.pop()}." if len(winners) == 1 else
            "Fastest to 1e-3 by cell (where the winner changes along a line, the lines cross there):")
    return head + "\n\n" + "\n".join(lines)


def row_keys(store: dict[str, Any]) -> list[str]:
    """The store's row keys in page order: by :data:`ROW_NAMES`, each name's C ascending."""
    keys = [k for k in store if not k.startswith("_") and split_key(k)[0] in ROW_NAMES]
    return sorted(keys, key=lambda k: (ROW_NAMES.index(split_key(k)[0]), split_key(k)[1]))


def render(store: dict[str, Any], page: Path) -> None:
    """The markdown page from the whole store."""
    meta = store.get("_meta", {})
    L: list[str] = ["# Cutting planes (OCAS, active-set OCAS, BMRM) against svmocas and LIBLINEAR\n",
                    generated_line("ocas", "ocas.json", also="`docs/BENCHMARKS.md`")]
    keys = row_keys(store)
    small = [k for k in keys if store[k]["_run"]["mode"] != "full"]
    if small:
        L.append(f"> **{', '.join(small)}: {store[small[0]]['_run']['mode']}-mode results** (small subsets): they "
                 "check the plumbing, they are *not* the issue-13 figures. The full rows: "
                 "`python -m benchmarks.ocas --rows reuters,adult,ijcnn1,dense2m,text1m,crossover`.\n")
    for key in keys:
        rec = store[key]
        m = rec["_run"]
        L.append(f"## {title(key)}\n")
        L.append(f"Command: `{m['command']}` ({m['time']}); mode **{m['mode']}**; threads {m['threads']} (ours, "
                 f"BLAS via threadpoolctl); svmocas `-p` {m['ocas_threads']}; TolRel {m['tol']:g} on both sides; "
                 f"repeat {m['repeat']}; load at start {m['load_at_start'].get('load1')}.\n")
        if key == "crossover":
            _render_crossover(L, rec)
        else:
            _render_row(L, key, rec, page.parent)
    L.append("## Reading the tables\n")
    L.append(
        "- **to 1e-k s**: seconds until the relative primal gap (F − F*)/F* first reaches 1e-k: median over the runs "
        "(min–max). Ours: from a trace kept by a `qpcore.solve` callback (after each step: seconds since the "
        "solve started, F(w_b) read from the strategy's `CutState`); svmocas: its per-iteration `tim` and `Q_P` "
        "(`-v 1`; solver time since the optimization started, the file's loading excluded); LIBLINEAR: the fit time at the loosest eps of the ladder whose solution "
        "reaches the gap (judged by our problem), so each gap has its own fit. The problem building "
        "(`hinge_svm`) is not timed, like svmocas's loading.\n"
        "- **total s**: our `qpcore.solve` wall time to TolRel (its final certificate included); svmocas's "
        "`ocas_time`. **final rel. gap**: the final point judged by our problem (svmocas's model file, our w_b, "
        "LIBLINEAR's coef_ and intercept_). **parity**: (objective the solver reports − F of its point by our "
        "problem)/F: svmocas's last Q_P against its model file (Q_P is printed with 6 decimals), ours the last "
        "trace value against `prob.primal_objective(w)`.\n"
        "- **cuts**: svmocas's `nza` (active cuts at the end) / cuts added (one per iteration); ours "
        "`stats['cuts']` / `stats['cuts_added']`.\n"
        "- **ratios** = our median / svmocas's median of the time to the same gap, with the range over pairs "
        "(each of our runs against the svmocas run just before it; the runs are interleaved).\n"
        "- **load**: the highest 1-minute load average read right before a run / our own share of it / "
        "**others**: the CPU (cores) other processes used during the run (/proc/stat minus our process and its "
        "children). A run is **loaded** when others > 0.1 core: its times are suspect.\n")
    if meta.get("machine"):
        mc = meta["machine"]
        L.append("## Machine\n")
        L.append(f"{mc.get('cpu')}, {mc.get('cores')} cores; Python {mc.get('python')}, numpy {mc.get('numpy')}, "
                 f"scipy {mc.get('scipy')}, scikit-learn {mc.get('sklearn')}; BLAS "
                 f"{', '.join(str(b.get('lib')) for b in (mc.get('blas') or []))}; svmocas {meta.get('svmocas')}; "
                 f"commit {mc.get('git', {}).get('commit')}{' (dirty)' if mc.get('git', {}).get('dirty') else ''}.\n")
    page.write_text("\n".join(L))


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def parse_args(argv: list[str]) -> argparse.Namespace:
    p = study_parser("python -m benchmarks.ocas", __doc__, rows=ROW_NAMES, small="quick")
    p.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                   help="ours, of ocas,bmrm,asocas,asocas-paper (ActiveSetOCAS with μ 0.05 and 20 cuts); default "
                        "ocas,bmrm,asocas")
    p.add_argument("--C", default="1", help="C of the rows (not the crossover's), comma-separated (e.g. 1,10); each "
                                            "C is its own row in ocas.json (reuters@C=10 beside reuters)")
    p.add_argument("--gaps", default=None,
                   help="relative primal gaps of the tables, comma-separated (e.g. 1e-2,1e-3,1e-4,1e-5); default "
                        "those of 1e-2…1e-5 down to min(10×--tol, 1e-4)")
    p.add_argument("--no-svmocas", action="store_true",
                   help="skip svmocas (runs and reference): Table 3 alone, or rows where it is slow")
    p.add_argument("--threads", default=None, help="our BLAS thread counts (default 1,2; quick 1)")
    p.add_argument("--ocas-threads", default="1", choices=("1", "match"),
                   help="svmocas -p: 1 (default) or the thread count of the run of ours it is paired with")
    p.add_argument("--tol", type=float, default=None,
                   help="TolRel of the timed runs, ours and svmocas -r (default 1e-5; quick 1e-4)")
    p.add_argument("--ref-tol", type=float, default=None, help="TolRel of the reference solves (1e-8; quick 1e-6)")
    p.add_argument("--cross-ref-tol", type=float, default=1e-6,
                   help="TolRel of the crossover table's references (1e-6: its gap is 1e-3)")
    p.add_argument("--ref-time-limit", type=float, default=None,
                   help="time limit of a reference solve (s; default 3600, quick 3)")
    p.add_argument("--time-limit", type=float, default=None, help="each timed solve (ours, svmocas -t); default 900, quick 3")
    p.add_argument("--anchor-timeout", type=float, default=None, help="svmocas / LIBLINEAR runs are killed after (s)")
    p.add_argument("--svm-dir", type=Path, default=DEFAULT_SVM_DIR,
                   help=f"where the SVMlight files for svmocas are written and reused (default {DEFAULT_SVM_DIR})")
    p.add_argument("--ocas-cache", type=int, default=2000, help="svmocas -s, its cut buffer (its default 2000)")
    p.add_argument("--cross-rows", default=None, help="crossover row counts, comma-separated (100000,300000,1000000)")
    p.add_argument("--cross-C", default=None, help="crossover C values, comma-separated (0.1,1,10)")
    p.add_argument("--seed", type=int, default=13, help="generator seed of dense2m, text1m, crossover (13)")
    p.add_argument("--no-liblinear", action="store_true", help="skip the LIBLINEAR anchor")
    add_store_arguments(p, "ocas.json and ocas_reference.json")
    a = p.parse_args(argv)
    rows = [r for r in a.rows.split(",") if r]
    rows = [x for r in rows for x in ({"all": list(ROW_NAMES), "real": list(REAL_ROWS)}.get(r, [r]))]
    bad = [r for r in rows if r not in ROW_NAMES]
    if bad:
        p.error(f"unknown rows {bad}; known {', '.join(ROW_NAMES)}")
    a.rows = rows
    a.variants = tuple(v for v in a.variants.split(",") if v)
    if any(v not in VARIANTS for v in a.variants):
        p.error(f"variants: {', '.join(VARIANTS)}")
    try:
        a.C = parse_C(a.C)
        a.gaps = parse_gaps(a.gaps) if a.gaps else None
    except ValueError as e:
        p.error(str(e))
    small = a.quick
    a.threads = [int(t) for t in (a.threads or ("1" if small else "1,2")).split(",") if t]
    resolve_run_arguments(p, a, small)
    if a.time_limit is None:
        a.time_limit = 3.0 if small else 900.0
    if a.ref_time_limit is None:
        a.ref_time_limit = 3.0 if small else 3600.0
    if a.ref_tol is None:
        a.ref_tol = 1e-6 if small else 1e-8
    if a.tol is None:
        a.tol = 1e-4 if small else 1e-5
    if a.gaps is None:
        a.gaps = default_gaps(a.tol)
    if min(a.gaps) < a.tol:
        log(f"warning: gaps below TolRel {a.tol:g} may not be reached (the runs stop there)")
    if min(a.gaps) < 10 * a.ref_tol:
        log(f"warning: the reference's TolRel {a.ref_tol:g} does not resolve the gap {min(a.gaps):g} (--ref-tol)")
    if a.anchor_timeout is None:
        a.anchor_timeout = 120.0 if small else 1800.0
    resolve_store_arguments(a, small)
    return a


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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    command = command_line("ocas", argv)
    if not need_sklearn("ocas", "LIBLINEAR"):
        return 2
    sz = QUICK if args.quick else FULL
    if args.cross_rows:
        sz = dataclasses.replace(sz, cross_rows=tuple(int(v) for v in args.cross_rows.split(",")))
    if args.cross_C:
        sz = dataclasses.replace(sz, cross_C=tuple(float(v) for v in args.cross_C.split(",")))
    mode = "quick" if args.quick else "full"
    ctx = Runs(time_limit=args.time_limit, anchor_timeout=args.anchor_timeout, repeat=args.repeat, long=args.long,
              threads=args.threads, pair_below=args.pair_below)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    opts = Opts(tol=args.tol, ref_tol=args.ref_tol, cross_ref_tol=args.cross_ref_tol, ref_time_limit=args.ref_time_limit,
                ocas_threads=args.ocas_threads, svm_dir=args.svm_dir, variants=args.variants, ocas_cache=args.ocas_cache,
                gaps=args.gaps, svmocas=not args.no_svmocas,
                ref_path=args.out_dir / "ocas_reference.json")
    machine = machine_info(max(args.threads))
    ok, why = available()
    log(f"{command}\n{machine['cpu']}, {machine['cores']} cores, load average {machine['loadavg']}; "
        f"ours {why or 'available'}; svmocas {svmocas_version() or 'NOT installed (' + SVMOCAS_INSTALL + ')'}")
    store_path = args.out_dir / "ocas.json"
    t0 = time.perf_counter()
    text_cache: dict[int, tuple[Any, np.ndarray, Any]] = {}

    def text(n: int) -> tuple[Any, np.ndarray, Any]:
        if n not in text_cache:
            big = max([k for k in text_cache if k >= n], default=None)
            if big is not None:
                return text_cache[big]
            text_cache.clear()          # one text matrix at a time (memory)
            t1 = time.perf_counter()
            text_cache[n] = text_source(n, args.seed)
            log(f"[text] generated {n:,} rows in {time.perf_counter() - t1:.1f} s (not timed)")
        return text_cache[n]

    current: list[str] = []

    def run_row(item: tuple[str, float], a: argparse.Namespace, runs: Runs) -> dict[str, Any]:
        name, C = item
        current[:] = [store_key(name, C)]
        run_meta = {"command": command, "time": now_iso(), "mode": mode, "threads": a.threads,
                    "ocas_threads": a.ocas_threads, "tol": a.tol, "ref_tol": a.ref_tol, "repeat": a.repeat,
                    "long": a.long, "pair_below": a.pair_below, "sizes": sz.__dict__, "seed": a.seed,
                    "time_limit": a.time_limit, "anchor_timeout": a.anchor_timeout, "C": C, "gaps": list(a.gaps),
                    "variants": list(a.variants), "svmocas": not a.no_svmocas,
                    "load_at_start": a.load_at_start, "svm_dir": str(a.svm_dir)}
        t1 = time.perf_counter()
        if name in REAL_ROWS:
            row = real_row(name, sz.real, C=C)
            rec = bench_row(row, ctx, opts, liblinear=not a.no_liblinear)
        elif name in DENSE_ROWS:
            row = dense_row(sz.dense if name == "dense2m" else sz.dense_small, C=C, seed=a.seed, name=name)
            log(f"[{name}] generated in {time.perf_counter() - t1:.1f} s (not timed)")
            rec = bench_row(row, ctx, opts, liblinear=not a.no_liblinear)
            del row
        elif name == "text1m":
            X, y, spec = text(max([sz.text] + (list(sz.cross_rows) if "crossover" in a.rows else [])))
            rec = bench_row(text_row(X, y, spec, sz.text, C=C), ctx, opts, liblinear=not a.no_liblinear)
        else:
            X, y, spec = text(max(sz.cross_rows))
            rec = bench_crossover(X, y, spec, sz, ctx, opts)
        run_meta["seconds"] = round(time.perf_counter() - t1, 1)
        rec["_run"] = run_meta
        return rec

    def page(store: dict[str, Any], a: argparse.Namespace) -> None:
        key = current[0]
        if key != "crossover":
            plot_row(key, store[key], a.docs / plot_name(key))
        render(store, a.docs / "ocas.md")
        log(f"[{key}] done in {store[key]['_run']['seconds']} s")

    # the crossover table has its own C grid: it runs once, whatever --C says
    items = [(n, C) for n in args.rows for C in ((1.0,) if n == "crossover" else args.C)]
    study = Study(run_row, page, lambda r: clean(r, drop=("x", "alpha", "result", "decision", "per_add")),
                  store=store_path, mode=mode, key=lambda it: store_key(*it),
                  meta=lambda: {"machine": machine, "updated": now_iso(), "svmocas": svmocas_version()})
    run_study(study, args, items, stamp={}, runs=ctx)
    log(f"\nwrote {store_path} and {args.docs / 'ocas.md'} ({time.perf_counter() - t0:.1f} s)")
    return 0


__all__ = ["main", "render", "parse_svmocas", "read_model", "time_to_gaps", "run_svmocas", "run_liblinear",
           "Sizes", "FULL", "QUICK"]

if __name__ == "__main__":
    sys.exit(main())
