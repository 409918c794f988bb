"""The rows of the cutting-plane study (real sets, tall dense, sparse text) and their keys, the
variants of ours and how one runs, and the untimed reference F* (see :mod:`benchmarks.studies.ocas`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from benchmarks.anchors.svmocas import run_svmocas
from benchmarks.harness import PeakMemory, blas_threads, fmt_exp as _e, log, now_iso, seed, thread_limit


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
DEFAULT_SVM_DIR = Path(tempfile.gettempdir()) / "qpcore_ocas_svm"


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


def available() -> tuple[bool, str]:
    """Whether our side (qpcore_formulations.risk.hinge_svm and qpcore_strategies.cutting_plane) can be imported."""
    try:
        from qpcore_formulations.risk import hinge_svm  # noqa: F401
        from qpcore_strategies.active_set_ocas import ActiveSetOCAS  # noqa: F401
        from qpcore_strategies.cutting_plane import BMRM, OCAS  # noqa: F401
    except Exception as e:  # noqa: BLE001 - any failure means "not available"
        return False, f"not available ({type(e).__name__}: {e})"
    return True, ""


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
