"""The rows of the SVM-family study (ν-SVC, one-class, ε-SVR, ν-SVR on adult and abalone subsets, or
synthetic data), their sizes and problems, and our solvers' names; see :mod:`benchmarks.studies.svm_family`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp


SEED = 25                      # the adult subsets: rows default_rng(SEED).permutation(n_adult)[:n]
REF_TOL = 1e-9                 # the tight reference solve
ROW_NAMES = ("nu_svc", "one_class", "epsilon_svr", "nu_svr", "incremental")
BATCH_ROWS = ROW_NAMES[:4]
BAR = {"ratio": 0.5, "rel_obj": 1e-6, "incremental": 50.0}


@dataclass(frozen=True)
class Sizes:
    """Rows of each benchmark (full: issue 25; quick: a plumbing check in seconds)."""

    adult: int = 10000
    abalone: int | None = None    # None: the whole set
    inc_base: int = 2000
    inc_sample: int = 5           # different new rows, each learned once into the same model


FULL = Sizes()
QUICK = Sizes(adult=240, abalone=200, inc_base=120, inc_sample=2)


@dataclass(frozen=True)
class Spec:
    """One problem of the family: kind, data, kernel width and the kind's parameters."""

    row: str
    kind: str                 # nu-svc, one-class, epsilon-svr, nu-svr
    data: str                 # adult, abalone (or their synthetic stand-ins)
    n: int
    gamma: float
    C: float = 1.0
    nu: float = 0.0           # ν (the ν formulations and one-class)
    epsilon: float = 0.0      # ε (ε-SVR)
    balanced: bool = False    # n/2 rows of each class (ν-SVC: adult's 24% positives make ν = 0.5 infeasible)

    @property
    def key(self) -> str:
        p = {"nu-svc": f"ν-SVC ν={self.nu:g}", "one-class": f"one-class ν={self.nu:g}",
             "epsilon-svr": f"ε-SVR C={self.C:g} ε={self.epsilon:g}",
             "nu-svr": f"ν-SVR C={self.C:g} ν={self.nu:g}"}[self.kind]
        return f"{p}, n={self.n}{' (classes balanced)' if self.balanced else ''}, RBF γ={self.gamma:g}"

    def build(self, X: Any, y: np.ndarray, **kw: Any) -> Any:
        """Our problem (``qpcore_formulations.svm_family``); ``kw`` goes to the kernel operator."""
        from qpcore_formulations import svm_family as fam
        from qpcore import Kernel

        k = Kernel("rbf", gamma=self.gamma)
        if self.kind == "nu-svc":
            return fam.nu_svc(X, y, self.nu, k, **kw)
        if self.kind == "one-class":
            return fam.one_class(X, self.nu, k, **kw)
        if self.kind == "epsilon-svr":
            return fam.epsilon_svr(X, y, self.C, self.epsilon, k, **kw)
        return fam.nu_svr(X, y, self.C, self.nu, k, **kw)

    def estimator(self, tol: float, cache_mb: int) -> Any:
        """scikit-learn's LIBSVM estimator at the same parameters."""
        from sklearn import svm

        common = {"kernel": "rbf", "gamma": self.gamma, "tol": tol, "cache_size": cache_mb, "shrinking": True}
        if self.kind == "nu-svc":
            return svm.NuSVC(nu=self.nu, **common)
        if self.kind == "one-class":
            return svm.OneClassSVM(nu=self.nu, **common)
        if self.kind == "epsilon-svr":
            return svm.SVR(C=self.C, epsilon=self.epsilon, **common)
        return svm.NuSVR(C=self.C, nu=self.nu, **common)


def row_spec(row: str, sz: Sizes, n_abalone: int) -> Spec:
    if row == "nu_svc":
        return Spec(row, "nu-svc", "adult", sz.adult, 0.05, nu=0.5, balanced=True)
    if row == "one_class":
        return Spec(row, "one-class", "adult", sz.adult, 0.05, nu=0.1)
    n = n_abalone if sz.abalone is None else min(sz.abalone, n_abalone)
    if row == "epsilon_svr":
        return Spec(row, "epsilon-svr", "abalone", n, 1.0, C=10.0, epsilon=0.1)
    if row == "nu_svr":
        return Spec(row, "nu-svr", "abalone", n, 1.0, C=10.0, nu=0.5)
    raise KeyError(row)


def libsvm_alpha(spec: Spec, est: Any, y: np.ndarray) -> np.ndarray:
    """LIBSVM's dual point in our variables (the mapping of the module docstring)."""
    n = y.size
    coef = np.zeros(n)
    dc = est.dual_coef_
    coef[est.support_] = np.asarray(dc.toarray() if sp.issparse(dc) else dc, dtype=np.float64).ravel()
    if spec.kind == "one-class":
        return coef
    if spec.kind == "nu-svc":
        a = np.abs(coef)
        half = spec.nu * n / 2.0
        for side in (y > 0, y < 0):
            s = a[side].sum()
            if s > 0:
                a[side] *= half / s
        return np.minimum(a, 1.0)
    pos, neg = np.maximum(coef, 0.0), np.maximum(-coef, 0.0)
    if spec.kind == "nu-svr":
        room = np.maximum(spec.C - np.maximum(pos, neg), 0.0)
        need = max(0.0, spec.C * spec.nu * n / 2.0 - float(pos.sum()))
        before = np.cumsum(room) - room
        d = np.clip(need - before, 0.0, room)
        pos, neg = pos + d, neg + d
    return np.concatenate([pos, neg])


@dataclass
class Source:
    """A data set in a fixed seeded order: subsets are prefixes of it."""

    name: str
    X: Any               # CSR with int32 indices (LIBSVM's sparse path needs them)
    Xd: np.ndarray       # dense C-contiguous float64
    y: np.ndarray        # ±1 labels (adult) or real targets (abalone)

    def take(self, n: int, balanced: bool = False) -> tuple[Any, np.ndarray, np.ndarray]:
        """The first n rows, or (balanced) the first n/2 of each class, in the fixed order."""
        if n > self.X.shape[0]:
            raise ValueError(f"{self.name} has {self.X.shape[0]} rows, {n} asked for")
        if not balanced:
            return self.X[:n], self.Xd[:n], self.y[:n]
        pos, neg = np.flatnonzero(self.y > 0), np.flatnonzero(self.y <= 0)
        if min(pos.size, neg.size) < n // 2:
            raise ValueError(f"{self.name} has too few rows of one class for a balanced subset of {n}")
        idx = np.sort(np.concatenate([pos[: n // 2], neg[: n - n // 2]]))
        return self.X[idx], self.Xd[idx], self.y[idx]


def synthetic(kind: str, n: int, seed: int = 0) -> tuple[Any, np.ndarray]:
    """Stand-ins for tests: adult-like binary sparse features with noisy linear labels, or
    abalone-like 8 dense features in [−1, 1] with a smooth target."""
    rng = np.random.default_rng(seed)
    if kind == "adult":
        X = (rng.random((n, 30)) < 0.15).astype(np.float64)
        w = rng.standard_normal(30)
        s = X @ w + 0.5 * rng.standard_normal(n)
        return sp.csr_matrix(X), np.where(s > np.median(s), 1.0, -1.0)
    X = rng.uniform(-1.0, 1.0, size=(n, 8))
    return sp.csr_matrix(X), 10.0 + 3.0 * np.sin(2.0 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.3 * rng.standard_normal(n)


def _read(name: str) -> tuple[Any, np.ndarray]:
    from qpcore_formulations.data.files import DATASET_NAMES, data_dir, load_dataset

    if name in DATASET_NAMES:
        return load_dataset(name)
    from qpcore_formulations.data.svmlight import load_svmlight

    return load_svmlight(data_dir() / f"{name}.trn.bz2")


def load_source(name: str, data: str, n: int, seed: int = SEED) -> Source:
    """Read the data set (not timed) and fix its order (adult: seeded permutation; abalone: the file's)."""
    if data == "synthetic":
        X, y = synthetic(name, n, seed)
    else:
        X, y = _read(name)
    X = sp.csr_matrix(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if name == "adult":
        order = np.random.default_rng(seed).permutation(X.shape[0])
        X, y = X[order], np.where(y[order] > 0, 1.0, -1.0)
    X.sort_indices()
    X = sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)), shape=X.shape)
    return Source(name=name, X=X, Xd=np.ascontiguousarray(X.toarray()), y=y)


#: The training layer's whole fit (``qpcore_train.fit.fit_formulation`` with ``auto``: what the
#: estimators and the command line run, the mirrored stack included), not one strategy.
FIT = "fit"


def make_strategy(solver: str) -> Any:
    from qpcore_strategies.registry import make

    return make("auto" if solver == FIT else solver)


def solver_label(solver: str) -> str:
    return {"smo": "SMO", "decomposition": "decomposition", "incas": "INCAS", "best": "**best**",
            FIT: "fit (auto, training layer)"}.get(solver, solver.replace("decomp:", "decomposition q="))
