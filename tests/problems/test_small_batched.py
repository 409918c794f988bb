"""Small multiclass data: the one-vs-one problems solved together (qpcore_train.batched_smo through
qpcore_train.multiclass) give LIBSVM's model, each problem certified by qpcore's KKT certificate."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpcore
from qpcore_train.multiclass import train_multiclass
from qpcore_formulations.svm import csvc
from qpcore.core.certificate import kkt
from qpcore.backends.operators import Kernel
from qpcore_train.batched_smo import batched_smo
from qpcore_strategies.smo import SMO

sklearn = pytest.importorskip("sklearn")
from sklearn import datasets  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from qpcore_sklearn.svm import KernelSVC  # noqa: E402


def _split(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    return Xtr, Xte, ytr, yte


def _blobs(seed: int, n: int, k: int, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % k)
    X = rng.standard_normal((n, d)) + 1.2 * np.eye(k, d)[y]
    return X, y


def _certified_alone(X: np.ndarray, y_idx: np.ndarray, C: np.ndarray, kern: Kernel, tr: object, tol: float) -> None:
    """Each problem's point, judged by an independent build of its dual (KernelQ, csvc)."""
    for p, (i, j) in enumerate(tr.model.pairs):  # type: ignore[attr-defined]
        rows = tr.rows[p]  # type: ignore[attr-defined]
        res = tr.results[p]  # type: ignore[attr-defined]
        assert res.status.code == "converged"
        assert res.kkt.measure <= tol * (1 + 1e-9) + 1e-12
        assert res.stats["strategy"] == "batched-smo"
        prob = csvc(X[rows], np.where(y_idx[rows] == i, 1.0, -1.0), C[rows], kern, dtype=np.float64)
        cert = kkt(prob.qp, res.x)
        assert cert.feasible()
        assert cert.measure <= tol * (1 + 1e-6) + 1e-10
        np.testing.assert_allclose(cert.multipliers, res.multipliers, atol=1e-8 * max(1.0, abs(res.multipliers[0])))


@pytest.mark.parametrize("name", ["digits", "iris"])
def test_same_model_as_svc(name: str) -> None:
    Xtr, Xte, ytr, yte = _split(name)
    ours = KernelSVC(C=10).fit(Xtr, ytr)
    svc = SVC(C=10).fit(Xtr, ytr)
    results = ours.result_ if isinstance(ours.result_, list) else [ours.result_]
    assert all(r.stats["strategy"] == "batched-smo" for r in results)
    assert all(r.status.code == "converged" and r.kkt.measure <= 1e-3 * (1 + 1e-9) for r in results)
    assert np.mean(ours.predict(Xte) == svc.predict(Xte)) >= 0.995
    np.testing.assert_array_equal(ours.n_support_, svc.n_support_)
    # at a tight tolerance both reach the same optimum: the same decision values
    ours = KernelSVC(C=10, tol=1e-7).fit(Xtr, ytr)
    svc = SVC(C=10, tol=1e-7).fit(Xtr, ytr)
    np.testing.assert_array_equal(ours.predict(Xte), svc.predict(Xte))
    d_o = ours.decision_function(Xte) if name == "iris" else KernelSVC(C=10, tol=1e-7, decision_function_shape="ovo") \
        .fit(Xtr, ytr).decision_function(Xte)
    d_s = svc.decision_function(Xte) if name == "iris" else SVC(C=10, tol=1e-7, decision_function_shape="ovo") \
        .fit(Xtr, ytr).decision_function(Xte)
    np.testing.assert_allclose(d_o, d_s, atol=1e-4)
    np.testing.assert_allclose(ours.intercept_, svc.intercept_, atol=1e-4)


def test_auto_and_explicit_strategies() -> None:
    """``auto`` takes the batched path on small data (and says so); a strategy named explicitly
    other than SMO is kept."""
    Xtr, _, ytr, _ = _split("iris")
    auto = KernelSVC(C=10, strategy="auto").fit(Xtr, ytr)
    assert isinstance(auto.result_, list)
    assert all(r.stats["strategy_choice"][0][1] == "batched-smo" for r in auto.result_)
    incas = KernelSVC(C=10, strategy="incas").fit(Xtr, ytr)
    assert isinstance(incas.result_, list)
    assert all(r.stats.get("strategy") != "batched-smo" for r in incas.result_)
    np.testing.assert_allclose(auto.decision_function(Xtr), incas.decision_function(Xtr), atol=5e-2)


@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_each_problem_certified_by_an_independent_dual(tol: float) -> None:
    Xtr, _, ytr, _ = _split("iris")
    kern = Kernel("rbf", gamma=1.0 / (Xtr.shape[1] * Xtr.var()))
    y_idx = ytr.astype(np.intp)
    C = np.full(y_idx.size, 10.0)
    tr = train_multiclass(Xtr, y_idx, np.arange(3), C, kern, SMO(), tol=tol)
    _certified_alone(Xtr, y_idx, C, kern, tr, tol)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(6, 60), k=st.integers(2, 4), weighted=st.booleans(),
       kernel=st.sampled_from(["rbf", "linear", "poly"]), dup=st.booleans(), big_c=st.booleans())
def test_batched_equals_one_by_one(seed: int, n: int, k: int, weighted: bool, kernel: str, dup: bool,
                                   big_c: bool) -> None:
    X, y = _blobs(seed, n, k)
    if dup:                                     # duplicate points: singular faces
        X[n // 2:] = X[: n - n // 2]
    rng = np.random.default_rng(seed)
    C = rng.uniform(0.5, 5.0, n) if weighted else np.full(n, 2.0)
    if weighted:
        C[rng.random(n) < 0.1] = 0.0            # left out, as a sample weight of 0
    for c in range(k):                          # every class keeps a point
        C[np.flatnonzero(y == c)[0]] = 1.0
    kern = Kernel(kernel, gamma=0.5, coef0=1.0, degree=2)   # type: ignore[arg-type]
    for tol in (1e-8, 1e-3):                    # float64 and (RBF) float32 rounds
        if tol > 1e-6 and big_c:                # many free variables: the face steps' regime
            C = 30.0 * C
        one = train_multiclass(X, y, np.arange(k), C, kern, SMO(), tol=tol, batched=False)
        many = train_multiclass(X, y, np.arange(k), C, kern, SMO(), tol=tol, batched=True)
        _certified_alone(X, y, C, kern, many, tol)
        for p in range(len(one.rows)):
            np.testing.assert_array_equal(one.rows[p], many.rows[p])
            a, b = one.results[p].objective, many.results[p].objective
            if tol < 1e-6:      # both certified at a tight tol: the same optimum
                assert abs(a - b) <= 1e-6 * max(1.0, abs(a))
        if tol < 1e-6:
            np.testing.assert_allclose(many.model.raw(X), one.model.raw(X), atol=1e-4)


def test_limits_and_warm_start() -> None:
    Xtr, _, ytr, _ = _split("wine")
    Xtr = (Xtr - Xtr.mean(0)) / Xtr.std(0)
    kern = Kernel("rbf", gamma=1.0 / Xtr.shape[1])
    y_idx = ytr.astype(np.intp)
    C = np.full(y_idx.size, 10.0)
    cut = train_multiclass(Xtr, y_idx, np.arange(3), C, kern, SMO(), tol=1e-6, max_iter=5)
    for r in cut.results:
        assert r.iterations <= 5
        assert r.status.code == "max_iter"
        assert r.kkt.feasible()
    full = train_multiclass(Xtr, y_idx, np.arange(3), C, kern, SMO(), tol=1e-6)
    warm = train_multiclass(Xtr, y_idx, np.arange(3), C, kern, SMO(), tol=1e-6, x0=full.alphas)
    for a, b in zip(full.results, warm.results):
        assert b.status.code == "converged"
        assert b.iterations < a.iterations
        assert abs(a.objective - b.objective) <= 1e-6 * abs(a.objective)


def test_stack_equals_each_problem_alone() -> None:
    """A padded stack of problems of different sizes: each gets the point it gets alone."""
    rng = np.random.default_rng(3)
    sizes = [7, 12, 4]
    N = max(sizes)
    Ks, ys, ubs = [], [], []
    for m in sizes:
        Z = rng.standard_normal((m, 2))
        K = np.zeros((N, N))
        K[:m, :m] = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1))
        y = np.ones(N)
        y[:m] = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
        ub = np.zeros(N)
        ub[:m] = rng.uniform(0.5, 3.0, m)
        Ks.append(K)
        ys.append(y)
        ubs.append(ub)
    K3 = np.stack(Ks)

    def rows(pid: np.ndarray, t: np.ndarray) -> np.ndarray:
        out: np.ndarray = K3[pid, t] if t.ndim == 1 else K3[pid[:, None], t]
        return out

    def rows_of(b: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        def one(pid: np.ndarray, t: np.ndarray) -> np.ndarray:
            out: np.ndarray = K3[b:b + 1][pid, t] if t.ndim == 1 else K3[b:b + 1][pid[:, None], t]
            return out
        return one

    diag = np.stack([np.diag(K) for K in Ks])
    run = batched_smo(rows, diag, np.stack(ys), np.stack(ubs), tol=1e-9)
    assert run.converged.all()
    for b, m in enumerate(sizes):
        alone = batched_smo(rows_of(b), diag[b:b + 1], np.stack(ys)[b:b + 1],
                            np.stack(ubs)[b:b + 1], tol=1e-9)
        np.testing.assert_array_equal(run.alpha[b], alone.alpha[0])
        assert run.iterations[b] == alone.iterations[0]
        assert np.all(run.alpha[b, m:] == 0.0)
        # and it is the optimum: the certificate of the dual built from the same matrix
        Q = np.outer(ys[b][:m], ys[b][:m]) * Ks[b][:m, :m]
        qp = qpcore.QP(Q, -np.ones(m), np.zeros(m), ubs[b][:m], ys[b][:m][None, :], np.zeros(1))
        assert kkt(qp, run.alpha[b, :m]).measure <= 1e-9 * (1 + 1e-6)


def _random_case(seed: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, Kernel, float]:
    """Blobs of any size, kernel, C and tol, a third with duplicated points (singular faces)."""
    rng = np.random.default_rng(seed)
    n, k, d = int(rng.integers(6, 120)), int(rng.integers(2, 5)), int(rng.integers(1, 5))
    y = rng.permutation(np.arange(n) % k)
    X = rng.standard_normal((n, d)) + rng.uniform(0, 2) * np.eye(k, d)[y]
    if rng.random() < 0.3:
        X[n // 2:] = X[: n - n // 2]
    C = rng.uniform(0.1, 100, n) if rng.random() < 0.5 else np.full(n, float(10 ** rng.uniform(-1, 3)))
    name = str(rng.choice(["rbf", "linear", "poly"]))
    kern = Kernel(name, gamma=float(10 ** rng.uniform(-1, 1)), coef0=1.0, degree=2)  # type: ignore[arg-type]
    return X, y, k, C, kern, float(10 ** rng.uniform(-8, -2))


@pytest.mark.parametrize("seed", [8, 18, 80, 136, 163, 211, 216, 240])
def test_low_rank_and_large_entries(seed: int) -> None:
    """Linear and polynomial kernels of low rank and large entries, up to C = 1000: the face steps
    keep the equality (an ill-conditioned K_FF) and the rounds keep tol (float64 entries)."""
    X, y, k, C, kern, tol = _random_case(seed)
    many = train_multiclass(X, y, np.arange(k), C, kern, SMO(), tol=tol, batched=True, time_limit=20)
    _certified_alone(X, y, C, kern, many, tol)


def test_small_batch_runs_at_one_thread_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # a small batch takes one BLAS thread without measuring the load; a user's variable stands
    pytest.importorskip("threadpoolctl")
    from qpcore.linalg.threads import THREAD_VARIABLES

    for name in THREAD_VARIABLES:       # CI sets them: the case without a user's variable first
        monkeypatch.delenv(name, raising=False)
    X, y = _blobs(0, 90, 3)
    est = KernelSVC(C=10.0).fit(X, y)
    for res in est.result_:
        assert res.stats["strategy"] == "batched-smo"
        assert res.stats["blas_threads"] == 1
        assert "small batch" in res.stats["blas_threads_reason"]
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    again = KernelSVC(C=10.0).fit(X, y)
    assert all(r.stats["blas_threads"] is None for r in again.result_)
    np.testing.assert_array_equal(again.dual_coef_, est.dual_coef_)
