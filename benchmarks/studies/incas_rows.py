"""The rows of the INCAS study (sizes, problems, the adult subsets or synthetic data), our solvers and
the anchors (LIBSVM in a forked child, SVMlight), and how one run of each is made and judged; see
:mod:`benchmarks.studies.incas`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from benchmarks.anchors.libsvm import run_libsvm
from benchmarks.harness import PeakMemory, Runs, blas_threads, thread_limit


SEED = 12                      # the subsets: rows default_rng(SEED).permutation(n_adult)[:n]
REF_TOL = 1e-9                 # the tight reference solve
ROW_NAMES = ("hard_small", "hard_large", "weak", "incremental", "loo", "window")
BAR = {"hard": 0.5, "hard_rel_obj": 1e-8, "incremental": 50.0, "loo": 20.0}


@dataclass(frozen=True)
class Sizes:
    """Rows of each benchmark (full: issue 12; quick / tiny: plumbing checks)."""

    hard_small: int = 3185
    hard_large: int = 16101
    weak: int = 3185
    inc_base: int = 5000
    inc_add: int = 200
    inc_sample: int = 5           # additions for which the retrains (LIBSVM, warm decomposition) are timed
    loo: int = 1000
    win: int = 2000
    win_total: int = 20000
    win_check: int = 1000         # every win_check-th window model is checked against a batch solve


FULL = Sizes()
QUICK = Sizes(hard_small=200, hard_large=400, weak=200, inc_base=300, inc_add=20, inc_sample=2, loo=100,
              win=150, win_total=450, win_check=150)


TINY = Sizes(hard_small=60, hard_large=100, weak=60, inc_base=60, inc_add=4, inc_sample=1, loo=30,
             win=30, win_total=60, win_check=15)


@dataclass(frozen=True)
class Spec:
    """One C-SVC problem: rows, kernel, C, tolerance."""

    row: str
    n: int
    kernel: str          # "linear" or "rbf"
    gamma: float
    C: float
    tol: float = 1e-6

    @property
    def key(self) -> str:
        k = "linear" if self.kernel == "linear" else f"rbf γ={self.gamma:g}"
        return f"n={self.n}, {k}, C={self.C:g}"

    def qkernel(self) -> Any:
        from qpcore import Kernel

        return Kernel("linear") if self.kernel == "linear" else Kernel("rbf", gamma=self.gamma)

    def svc_params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"C": self.C, "kernel": self.kernel}
        if self.kernel == "rbf":
            p["gamma"] = self.gamma
        return p


def batch_specs(row: str, sz: Sizes) -> list[Spec]:
    if row in ("hard_small", "hard_large"):
        n = sz.hard_small if row == "hard_small" else sz.hard_large
        return [Spec(row, n, "linear", 0.0, 100.0), Spec(row, n, "rbf", 0.01, 100.0),
                Spec(row, n, "rbf", 0.025, 100.0)]
    if row == "weak":
        return [Spec(row, sz.weak, "rbf", 1.0, 1.0), Spec(row, sz.weak, "rbf", 0.5, 1.0)]
    raise KeyError(row)


@dataclass
class Source:
    """The whole data set, in the fixed seeded order: subsets are prefixes of it."""

    name: str
    X: Any               # CSR, int32 indices (what LIBSVM's sparse path needs)
    Xd: np.ndarray       # dense C-contiguous float64
    y: np.ndarray        # ±1
    order: np.ndarray    # row i of X is row order[i] of the file

    def take(self, n: int, start: int = 0) -> tuple[Any, np.ndarray, np.ndarray]:
        if start + n > self.X.shape[0]:
            raise ValueError(f"{self.name} has {self.X.shape[0]} rows, {start + n} asked for")
        return self.X[start:start + n], self.Xd[start:start + n], self.y[start:start + n]


def synthetic(n: int = 3000, d: int = 30, seed: int = 0) -> tuple[Any, np.ndarray]:
    """A small adult-like data set (binary sparse features, noisy linear labels) for tests."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < 0.15).astype(np.float64)
    w = rng.standard_normal(d)
    y = np.where(X @ w + 0.5 * rng.standard_normal(n) > np.median(X @ w), 1.0, -1.0)
    return sp.csr_matrix(X), y


def load_source(name: str, seed: int = SEED) -> Source:
    """Read the data set (not timed) and fix its seeded order."""
    if name == "synthetic":
        X, y = synthetic()
    else:
        from qpcore_formulations.data.files import load_dataset

        X, y = load_dataset(name)
    X = sp.csr_matrix(X, dtype=np.float64)
    order = np.random.default_rng(seed).permutation(X.shape[0])
    X = X[order]
    X.sort_indices()
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    y = np.where(np.asarray(y, dtype=np.float64)[order] > 0, 1.0, -1.0)
    return Source(name=name, X=X, Xd=np.ascontiguousarray(X.toarray()), y=y, order=order)


def available(what: str) -> tuple[bool, str]:
    """Whether INCAS (``incas``) or the incremental SVM (``incremental``) can be imported."""
    mod, cls = {"incas": ("qpcore_strategies.incas", "INCAS"),
                "incremental": ("qpcore_incremental.incremental", "IncrementalSVM")}[what]
    try:
        m = __import__(mod, fromlist=[cls])
        getattr(m, cls)
    except Exception as e:  # noqa: BLE001 - any failure means "not available"
        return False, f"not available ({mod}.{cls}: {type(e).__name__}: {e})"
    return True, ""


def make_strategy(solver: str) -> Any:
    """``incas``; ``smo`` (wss2); ``decomp:Q`` (decomposition, SVMlight's rule, working sets of Q):
    specs of the one registry (:mod:`qpcore_strategies.registry`)."""
    from qpcore_strategies.registry import make

    return make(solver)


def solver_label(solver: str) -> str:
    return {"incas": "INCAS", "smo": "SMO wss2", "svmlight": "SVMlight V6.02"}.get(
        solver, solver.replace("decomp:", "decomposition q="))


@dataclass
class Ctx(Runs):
    """Settings shared by every run of one invocation: the harness's, and the kernel runs' own."""

    cache_mb: int = 1000
    dtype: Any = np.float64
    anchor_input: str = "dense"
    svmlight: str = "rbf"          # which hard-row kernels also run SVMlight: rbf, all, off
    batch_memo: dict[tuple[Any, ...], float] = field(default_factory=dict)


def arrays(X: Any, Xd: np.ndarray, kind: str) -> Any:
    return Xd if kind == "dense" else X


def eval_qp(X: Any, y: np.ndarray, spec: Spec) -> Any:
    """Our float64 problem without cache: exact matvecs, used only to judge points."""
    from qpcore_formulations.svm import csvc

    return csvc(X, y, spec.C, spec.qkernel(), cache_bytes=0, dtype=np.float64).qp


def judge(qp: Any, x: np.ndarray) -> dict[str, float]:
    from benchmarks.studies.svm import judge as _judge

    return _judge(qp, np.asarray(x, dtype=np.float64))


def svc_alpha(clf: Any, n: int) -> np.ndarray:
    alpha = np.zeros(n)
    coef = clf.dual_coef_
    alpha[clf.support_] = np.abs(np.asarray(coef.toarray() if sp.issparse(coef) else coef).ravel())
    return alpha


def run_anchor(Xin: Any, y: np.ndarray, spec: Spec, ctx: Ctx, tol: float | None = None) -> dict[str, Any]:
    """LIBSVM's fit in a child (benchmarks.anchors.libsvm); the child's timer covers ``SVC.fit`` only."""
    tol = spec.tol if tol is None else tol

    def make() -> Any:
        from sklearn.svm import SVC

        return SVC(**spec.svc_params(), tol=tol, cache_size=ctx.cache_mb, shrinking=True)

    return run_libsvm(make, Xin, y, lambda clf: svc_alpha(clf, len(y)), ctx.anchor_timeout)


def run_svmlight(X: Any, y: np.ndarray, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """SVMlight's ``svm_learn`` as a subprocess (benchmarks.anchor_svmlight): the timer covers the
    subprocess alone (its reading of the data file, the optimization, its model and α files); -e
    is tol/2 (LIBSVM's guarantee), -m the shared cache size; killed after ``--anchor-timeout``."""
    from benchmarks.anchors.svmlight import run_svmlight as _run

    return _run(X, y, spec.C, spec.qkernel(), tol=spec.tol, cache_mb=ctx.cache_mb, timeout=ctx.anchor_timeout,
                model_objective_too=False)


def wants_svmlight(spec: Spec, ctx: Ctx) -> bool:
    """SVMlight runs in the hard rows (Scheinberg's comparison), on the kernels ``--svmlight`` names."""
    return spec.row.startswith("hard") and (ctx.svmlight == "all" or ctx.svmlight == spec.kernel)


def run_ours(Xin: Any, y: np.ndarray, spec: Spec, solver: str, threads: int, ctx: Ctx, *,
             tol: float | None = None, resume: Any = None, keep_result: bool = False) -> dict[str, Any]:
    """Build csvc(...) and solve it; the timer covers both."""
    from qpcore_formulations.svm import csvc
    from qpcore import solve

    tol = spec.tol if tol is None else tol
    strategy = make_strategy(solver)
    with thread_limit(threads):
        eff = blas_threads()
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            prob = csvc(Xin, y, spec.C, spec.qkernel(), cache_bytes=ctx.cache_mb << 20, dtype=ctx.dtype,
                        compute_dtype=ctx.dtype)
            res = solve(prob.qp, strategy, tol=tol, time_limit=ctx.time_limit, resume=resume)
            seconds = time.perf_counter() - t0
    x = np.array(res.x, dtype=np.float64)
    out = {"seconds": seconds, "x": x, "status": str(res.status), "iterations": int(res.iterations),
           "kkt_gap_solve": float(res.kkt.gap), "n_sv": int(np.count_nonzero(x > 0)), "peak_mb": mem.peak_mb,
           "blas_threads": eff}
    if keep_result:
        out["result"] = res
    return out
