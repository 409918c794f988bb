"""C-SVC rows: qpcore's SMO (each working-set rule) against LIBSVM (scikit-learn's SVC).

Both sides solve the same dual  min ½αᵀ(yyᵀ∘K)α − eᵀα,  0 ≤ α ≤ C,  yᵀα = 0,  stop at the
maximal-violating-pair gap ``tol`` and get the same kernel-cache budget. Both dual points are
judged by *our* problem: objective ``qp.objective(α)`` and the KKT certificate ``qpcore.kkt``
(LIBSVM's α is |dual_coef_| placed at support_).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from benchmarks.harness.records import seed
from benchmarks.harness.measure import PeakMemory, TraceReporter, now_iso

REFERENCE_TOL = 1e-6


@dataclass(frozen=True)
class SVMRow:
    """One benchmark problem: data set, C, RBF gamma, stopping tolerance."""

    name: str
    dataset: str
    C: float
    gamma: float
    tol: float = 1e-3
    quick_n: int = 3000
    title: str = ""


ROWS: dict[str, SVMRow] = {
    "adult_rbf": SVMRow("adult_rbf", "adult", C=1.0, gamma=0.05, quick_n=3000,
                        title="adult.trn, RBF γ=0.05, C=1, tol 1e-3"),
    "ijcnn1_rbf": SVMRow("ijcnn1_rbf", "ijcnn1", C=1.0, gamma=1.0, quick_n=5000,
                         title="ijcnn1.trn, RBF γ=1, C=1, tol 1e-3"),
}


@dataclass
class RowData:
    """The arrays every solver of a row gets (read once, before any timing)."""

    row: SVMRow
    key: str            # reference-cache key: the row name, plus the subset in quick mode
    X: Any              # CSR as read from the file (int32 indices, which LIBSVM's sparse path needs)
    Xdense: np.ndarray  # the same data as a dense C-contiguous float64 array (LIBSVM dense input)
    y: np.ndarray       # ±1 float64 labels
    subset: int | None  # rows kept in quick mode (random, seed 0), None for the full data

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])


def load_row(row: SVMRow, quick: bool, seed: int = 0) -> RowData:
    """Read the data set (not timed); in quick mode keep a random subset of ``row.quick_n`` rows."""
    from qpcore_formulations.data.files import load_dataset

    X, y = load_dataset(row.dataset)
    X = sp.csr_matrix(X, dtype=np.float64)
    subset = None
    if quick and row.quick_n < X.shape[0]:
        keep = np.sort(np.random.default_rng(seed).permutation(X.shape[0])[: row.quick_n])
        X, y = X[keep], y[keep]
        subset = row.quick_n
    X.sort_indices()
    # scikit-learn's sparse SVC rejects int64 index arrays: give it (and us) int32 ones
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    key = row.name if subset is None else f"{row.name}[quick:{subset}]"
    return RowData(row=row, key=key, X=X, Xdense=np.ascontiguousarray(X.toarray()), y=np.asarray(y, np.float64),
                   subset=subset)


def eval_problem(data: RowData) -> Any:
    """Our float64 problem of the row, used only to judge points (no cache: exact matvecs)."""
    from qpcore_formulations.svm import csvc
    from qpcore import Kernel

    return csvc(data.X, data.y, data.row.C, Kernel("rbf", gamma=data.row.gamma), cache_bytes=0,
                dtype=np.float64).qp


def judge(qp: Any, x: np.ndarray) -> dict[str, float]:
    """Dual objective ½xᵀQx − eᵀx and our KKT certificate of x, from one fresh matvec.

    ``objective`` is ``qp.objective(x)`` written through the gradient g = Qx + c
    (½xᵀQx + cᵀx = ½xᵀ(g − c) + cᵀx), so the certificate needs no second matvec.
    """
    from qpcore import kkt

    g = qp.gradient(x)
    cert = kkt(qp, x, g)
    f = float(0.5 * x @ (g - qp.c) + qp.c @ x)
    return {"objective": f, "kkt_gap": float(cert.gap), "primal_infeas": float(cert.primal)}


# ---------------------------------------------------------------------------------------------
# One timed run of each side
# ---------------------------------------------------------------------------------------------

def make_strategy(spec: str) -> Any:
    """The strategy of a registry spec (:mod:`qpcore_strategies.registry`): ``wss2``/``mvp``/``platt``: SMO
    with that rule; ``decomp:Q``: decomposition with SVMlight's rule and working sets of Q;
    ``chunk:M``: chunking with M new violators per round; any other spec the registry reads."""
    from qpcore_strategies.registry import make

    return make(spec)


def warm_memory(gib: float = 3.0) -> None:
    """Touch and free ``gib`` GiB once before any timing.

    On the virtual machines we measure on, the first touch of memory the process has never used
    costs 5-10× a later one (about 1.5 s per GiB against 0.15 s), so whichever solver ran first
    would pay for it; freed pages are then recycled quickly for every side alike.
    """
    w = np.ones(int(gib * (1 << 30)) // 8)
    del w


def run_ours(data: RowData, rule: str, *, tol: float, cache_mb: int, dtype: Any = np.float32,
             trace_interval: float = 0.5, time_limit: float | None = None) -> dict[str, Any]:
    """qpcore: build csvc(...) and solve it; the timer covers both (and the certificate).

    ``rule`` is an SMO working-set rule (``wss2``, ``mvp``, ``platt``) or ``decomp:Q`` for
    decomposition with SVMlight's rule and working sets of Q (RBF blocks computed in float32).
    """
    from qpcore_formulations.svm import csvc
    from qpcore import Kernel, solve

    strategy = make_strategy(rule)
    compute: Any = np.float64
    if rule.startswith(("decomp:", "chunk:")):
        compute = np.float32 if dtype == np.float32 else np.float64

    row = data.row
    rep = TraceReporter(trace_interval)
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        prob = csvc(data.X, data.y, row.C, Kernel("rbf", gamma=row.gamma), cache_bytes=cache_mb << 20, dtype=dtype,
                    compute_dtype=compute)
        t_build = time.perf_counter() - t0
        res = solve(prob.qp, strategy, tol=tol, reporter=rep, time_limit=time_limit)
        seconds = time.perf_counter() - t0
    x = np.array(res.x, dtype=np.float64)
    st = res.stats
    hits, misses = int(st["cache_hits"]), int(st["cache_misses"])
    if "rows_reused" in st:
        # decomposition serves rows from its own buffer (kept over the active columns, LRU within
        # the same byte budget); its hit rate is the share of working-set rows found there
        hits, misses = int(st["rows_reused"]), int(st["rows_fetched"])
    trace = [[round(t + t_build, 4), g, it] for t, g, it, _ in rep.points]
    trace.append([round(seconds, 4), float(res.kkt.gap), int(res.iterations)])
    C = np.asarray(prob.qp.ub)
    out = {
        "seconds": seconds,
        "build_seconds": t_build,
        "solve_seconds": float(st["seconds"]),
        "status": str(res.status),
        "iterations": int(res.iterations),
        "kkt_gap": float(res.kkt.gap),
        "objective_solve": float(res.objective),
        "rows_computed": int(st["rows_computed"]),
        "cache_hits": hits,
        "cache_misses": misses,
        "hit_rate": hits / (hits + misses) if hits + misses else float("nan"),
        "gradient_drift": float(st.get("gradient_drift", float("nan"))),
        "shrink_events": int(st.get("shrink_events", 0)),
        "n_sv": int(np.count_nonzero(x > 0)),
        "n_bsv": int(np.count_nonzero(x >= C)),
        "peak_mb": mem.peak_mb,
        "peak_mem_method": mem.method,
        "counters": {k: int(v) for k, v in st.items() if isinstance(v, (int, np.integer)) and not isinstance(v, bool)},
        "trace": trace,
        "x": x,
    }
    del prob, res
    return out


def run_libsvm(data: RowData, input_kind: str, *, tol: float, cache_mb: int) -> dict[str, Any]:
    """LIBSVM through scikit-learn's SVC on the CSR (``sparse``) or dense array; the timer covers fit()."""
    from sklearn.svm import SVC

    row = data.row
    Xin = data.X if input_kind == "sparse" else data.Xdense
    clf = SVC(C=row.C, kernel="rbf", gamma=row.gamma, tol=tol, cache_size=cache_mb, shrinking=True)
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        clf.fit(Xin, data.y)
        seconds = time.perf_counter() - t0
    alpha = np.zeros(data.n)
    coef = clf.dual_coef_   # a sparse matrix when fitted on sparse input
    alpha[clf.support_] = np.abs(np.asarray(coef.toarray() if sp.issparse(coef) else coef).ravel())
    n_iter = np.atleast_1d(getattr(clf, "n_iter_", [-1]))
    out = {
        "seconds": seconds,
        "status": "converged",
        "iterations": int(n_iter[0]),
        "n_sv": int(clf.support_.size),
        "n_bsv": int(np.count_nonzero(alpha >= row.C * (1 - 1e-12))),
        "peak_mb": mem.peak_mb,
        "peak_mem_method": mem.method,
        "x": alpha,
    }
    del clf
    return out


# ---------------------------------------------------------------------------------------------
# The high-precision reference objective (cached)
# ---------------------------------------------------------------------------------------------

def _config(data: RowData, cache_mb: int) -> dict[str, Any]:
    r = data.row
    return {"dataset": r.dataset, "n": data.n, "d": data.d, "C": r.C, "gamma": r.gamma, "subset": data.subset,
            "tol": REFERENCE_TOL}


def reference(data: RowData, path: Path, *, cache_mb: int, refresh: bool = False,
              log: Any = print) -> dict[str, Any]:
    """f_ref = min(LIBSVM at tol 1e-6, ours wss2 (float64 cache) at tol 1e-6), both judged by our
    problem; computed once per row (and quick subset) and cached in ``path`` (JSON)."""
    cache: dict[str, Any] = {}
    seed(path)
    if path.is_file():
        cache = json.loads(path.read_text())
    cfg = _config(data, cache_mb)
    hit = cache.get(data.key)
    if hit is not None and not refresh and hit.get("config") == cfg:
        return dict(hit)
    log(f"[{data.key}] computing the reference objective (LIBSVM and qpcore wss2 at tol {REFERENCE_TOL:g}) ...")
    qp = eval_problem(data)
    lib = run_libsvm(data, "sparse", tol=REFERENCE_TOL, cache_mb=cache_mb)
    lj = judge(qp, lib["x"])
    log(f"[{data.key}]   LIBSVM: {lib['seconds']:.1f} s, f = {lj['objective']:.10f}, our gap {lj['kkt_gap']:.2e}")
    ours = run_ours(data, "wss2", tol=REFERENCE_TOL, cache_mb=cache_mb, dtype=np.float64, trace_interval=1e9)
    oj = judge(qp, ours["x"])
    log(f"[{data.key}]   qpcore: {ours['seconds']:.1f} s, f = {oj['objective']:.10f}, gap {oj['kkt_gap']:.2e} "
        f"({ours['status']})")
    entry = {
        "f_ref": min(lj["objective"], oj["objective"]),
        "source": "libsvm" if lj["objective"] <= oj["objective"] else "qpcore-wss2",
        "libsvm": {"objective": lj["objective"], "kkt_gap": lj["kkt_gap"], "seconds": round(lib["seconds"], 3),
                   "iterations": lib["iterations"], "n_sv": lib["n_sv"]},
        "qpcore_wss2": {"objective": oj["objective"], "kkt_gap": oj["kkt_gap"], "seconds": round(ours["seconds"], 3),
                        "iterations": ours["iterations"], "n_sv": ours["n_sv"], "status": ours["status"]},
        "config": cfg,
        "computed": now_iso(),
    }
    if path.is_file():   # re-read: another run may have added rows meanwhile
        cache = json.loads(path.read_text())
    cache[data.key] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cache, indent=1, sort_keys=True) + "\n")
    return dict(entry)
