"""DoubledKernelQ: every method against the dense 2l×2l matrix built by hand, the one cache of
l-long kernel rows, and SMO on an ε-SVR dual against scikit-learn's SVR (LIBSVM)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore import Capability, Kernel, ProblemError, QOperator
from qpcore.backends.capabilities import cross_block, prefetch_rows, principal_block, row_budget, row_cached
from qpcore.backends.doubled import DoubledKernelQ
from qpcore.testkit.reference import assert_kkt

pairwise = pytest.importorskip("sklearn.metrics.pairwise")

L, D = 19, 5
GAMMA, DEGREE, COEF0 = 0.3, 3, 0.7


def data(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(L, D))
    X[rng.random((L, D)) < 0.6] = 0.0  # sparse enough to keep CSR when asked
    return X


def gram(name: str, X: np.ndarray) -> np.ndarray:
    f: dict[str, Callable[[], Any]] = {
        "linear": lambda: pairwise.linear_kernel(X),
        "rbf": lambda: pairwise.rbf_kernel(X, gamma=GAMMA),
        "poly": lambda: pairwise.polynomial_kernel(X, degree=DEGREE, gamma=GAMMA, coef0=COEF0),
    }
    return np.asarray(f[name](), dtype=np.float64)


def doubled_dense(K: np.ndarray) -> np.ndarray:
    """Q_ij = s_i s_j K(x_{i mod l}, x_{j mod l}), s = [e; −e], written out."""
    n = K.shape[0]
    s = np.r_[np.ones(n), -np.ones(n)]
    Q = np.empty((2 * n, 2 * n))
    for i in range(2 * n):
        for j in range(2 * n):
            Q[i, j] = s[i] * s[j] * K[i % n, j % n]
    return Q


def make(name: str, fmt: str, dtype: Any = np.float64, **kw: Any) -> tuple[DoubledKernelQ, np.ndarray]:
    X = data()
    inp: Any = X
    if fmt == "csr":  # dense_threshold > 1 keeps the sparse code path
        inp = sp.csr_matrix(X)
        kw.setdefault("dense_threshold", 1.1)
    if np.dtype(dtype) == np.float32 and name == "rbf":
        kw.setdefault("compute_dtype", np.float32)
    kernel = Kernel(name, gamma=GAMMA, degree=DEGREE, coef0=COEF0)  # type: ignore[arg-type]
    return DoubledKernelQ(inp, kernel, dtype=dtype, **kw), doubled_dense(gram(name, X))


def tolerance(Q: DoubledKernelQ, ref: np.ndarray) -> float:
    """Absolute tolerance on returned rows: the row dtype's error bound times the entries' size."""
    return 8.0 * Q.row_eps * max(1.0, float(np.abs(ref).max())) if Q.row_dtype == np.float32 else 1e-12


CASES = [(name, fmt, dt) for name in ("linear", "rbf", "poly") for fmt in ("dense", "csr")
         for dt in (np.float64, np.float32)]
IDS = [f"{n}-{f}-{np.dtype(d).name}" for n, f, d in CASES]


@pytest.mark.parametrize(("name", "fmt", "dtype"), CASES, ids=IDS)
def test_every_method_matches_the_dense_matrix(name: str, fmt: str, dtype: Any) -> None:
    Q, ref = make(name, fmt, dtype)
    tol = tolerance(Q, ref)
    assert isinstance(Q, QOperator)
    assert Q.shape == (2 * L, 2 * L) == ref.shape
    assert Q.row_dtype == np.dtype(dtype) and Q.row_eps == Q.base.row_eps and Q.psd is True
    assert Q.stats is Q.base.stats
    np.testing.assert_allclose(Q.diag(), np.diag(ref), rtol=1e-12)
    x = np.random.default_rng(1).normal(size=2 * L)
    x[::3] = 0.0
    np.testing.assert_allclose(Q.matvec(x), ref @ x, rtol=1e-10, atol=1e-10)
    for i in (0, 4, L - 1, L, L + 4, 2 * L - 1, 4, L + 4):
        r = Q.row(i)
        assert r.shape == (2 * L,) and r.dtype == np.dtype(dtype) and not r.flags.writeable
        np.testing.assert_allclose(r, ref[i], rtol=0, atol=tol)
    idx = np.array([L + 3, 3, 0, 2 * L - 1, 3, L + 3, 7])
    rows = Q.rows(idx)
    assert rows.shape == (idx.size, 2 * L) and rows.dtype == np.dtype(dtype)
    np.testing.assert_allclose(rows, ref[idx], rtol=0, atol=tol)
    np.testing.assert_allclose(Q.block(idx), ref[np.ix_(idx, idx)], rtol=0, atol=1e-12)
    np.testing.assert_allclose(principal_block(Q, idx), ref[np.ix_(idx, idx)], rtol=0, atol=1e-12)
    cols = np.array([1, L + 1, 2 * L - 2, 5, L + 5, 1])
    fresh = np.array([2, L + 6, 2 * L - 3])        # rows never cached: the base computes them
    for ii in (idx, fresh):
        c = Q.cross(ii, cols)
        assert c.dtype == np.dtype(dtype)
        np.testing.assert_allclose(c, ref[np.ix_(ii, cols)], rtol=0, atol=tol)
        np.testing.assert_allclose(Q.cross(ii), ref[ii], rtol=0, atol=tol)
        np.testing.assert_allclose(cross_block(Q, ii, cols), ref[np.ix_(ii, cols)], rtol=0, atol=tol)
        out = np.zeros((ii.size, cols.size), dtype=Q.row_dtype)
        cross_block(Q, ii, cols, out=out)
        np.testing.assert_allclose(out, ref[np.ix_(ii, cols)], rtol=0, atol=tol)
    # rows only ever cached as the base's: fresh points stay uncached after cross
    assert not any(Q.base.cached(int(p) % L) for p in fresh)


INDICES = st.lists(st.integers(0, 2 * L - 1), min_size=1, max_size=12)


@given(idx=INDICES, cols=INDICES, budget=st.integers(0, 6))
def test_any_indices_in_any_order_under_any_budget(idx: list[int], cols: list[int], budget: int) -> None:
    Q, ref = make("rbf", "dense", cache_bytes=budget * L * 8)
    i, j = np.array(idx), np.array(cols)
    np.testing.assert_allclose(Q.rows(i), ref[i], rtol=0, atol=1e-12)
    np.testing.assert_allclose(Q.cross(i, j), ref[np.ix_(i, j)], rtol=0, atol=1e-12)
    np.testing.assert_allclose(Q.block(j), ref[np.ix_(j, j)], rtol=0, atol=1e-12)
    for k in idx:
        np.testing.assert_allclose(Q.row(k), ref[k], rtol=0, atol=1e-12)
    assert len(Q.base._rows) <= min(budget, L)


def test_capabilities_map_onto_the_base() -> None:
    Q, _ = make("rbf", "dense", cache_bytes=12345)
    assert Q.capabilities == {Capability.ROW_CACHE, Capability.PREFETCH, Capability.BLOCK, Capability.CROSS,
                              Capability.BUDGET, Capability.MIRRORED}
    assert row_budget(Q) == (Q.base.cache_bytes, Q.base.footprint) == (12345, Q.base.footprint)
    assert not row_cached(Q, 3) and not row_cached(Q, L + 3)
    assert prefetch_rows(Q, [3, L + 3, L + 5, 5, 8]) == 3     # points 3, 5, 8: each once
    assert Q.base.stats.rows_computed == 3
    assert row_cached(Q, 3) and row_cached(Q, L + 3) and row_cached(Q, L + 8) and not row_cached(Q, 4)
    assert Q.prefetch([L + 5, 8]) == 0
    Q.row(L + 4)
    assert Q.cached(L + 4) and Q.cached(4)
    assert Q.footprint == Q.base.footprint + 2 * L * 8       # the one kept doubled row
    assert Q.n_points == L and Q.kernel is Q.base.kernel


def test_the_cache_holds_kernel_rows_once_per_point() -> None:
    Q, ref = make("rbf", "dense")
    base = Q.base
    for i in (2, L + 2, 5, L + 5, 2, L + 2, L + 9):
        np.testing.assert_allclose(Q.row(i), ref[i], rtol=0, atol=1e-12)
    Q.rows([1, L + 1, L + 11, 11, 2])
    Q.prefetch([L + 12, 12])
    computed = {1, 2, 5, 9, 11, 12}
    assert base.stats.rows_computed == len(computed)
    ids, _ = base._rows.entries()
    assert set(ids.tolist()) == computed                      # point ids only, none ≥ l
    assert base._rows.width == L                                # l-long rows, not 2l
    assert base._rows.slab.shape == (L, L)                    # at most one slot per point


def test_a_small_budget_counts_points_not_doubled_rows() -> None:
    Q, ref = make("rbf", "dense", cache_bytes=5 * L * 8)
    assert Q.max_rows == 5 == Q.base.max_rows
    for i in range(2 * L):
        np.testing.assert_allclose(Q.row(i), ref[i], rtol=0, atol=1e-12)
    assert len(Q.base._rows) == 5
    # rows handed out earlier are never overwritten by later builds or evictions
    first = Q.row(0)
    keep = first.copy()
    for i in range(1, 2 * L):
        Q.row(i)
        Q.rows([i, (i + 7) % (2 * L)])
    np.testing.assert_array_equal(first, keep)


def test_the_last_two_rows_are_kept() -> None:
    Q, _ = make("rbf", "dense", cache_bytes=0)   # no cache: every base row is computed afresh
    a, b = Q.row(3), Q.row(L + 7)
    n = Q.stats.rows_computed
    assert Q.row(3) is a and Q.row(L + 7) is b and Q.row(3) is a
    assert Q.stats.rows_computed == n
    Q.row(9)                                        # evicts L + 7, the least recently used
    assert Q.row(3) is a and Q.stats.rows_computed == n + 1
    assert Q.row(L + 7) is not b and Q.stats.rows_computed == n + 2
    np.testing.assert_array_equal(Q.row(L + 3), -a)


def test_bad_input_is_a_clear_error() -> None:
    X = data()
    with pytest.raises(ProblemError, match="kernel"):
        DoubledKernelQ(X, "rbf")  # type: ignore[arg-type]
    with pytest.raises(ProblemError, match="dtype"):
        DoubledKernelQ(X, Kernel("rbf"), dtype=np.int32)
    with pytest.raises(ProblemError, match="compute_dtype"):
        DoubledKernelQ(X, Kernel("rbf"), compute_dtype="not a dtype")
    with pytest.raises(ProblemError, match="no points"):
        DoubledKernelQ(np.zeros((0, 3)), Kernel("rbf"))
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ProblemError, match="NaN"):
        DoubledKernelQ(bad, Kernel("rbf"))
    with pytest.raises(ProblemError, match="cache_bytes"):
        DoubledKernelQ(X, Kernel("rbf"), cache_bytes=-1)
    with pytest.raises(ProblemError, match="shape"):
        DoubledKernelQ(X, Kernel("rbf")).matvec(np.ones(L))


def test_a_precomputed_kernel_doubles_too() -> None:
    K = gram("rbf", data())
    Q = DoubledKernelQ(K, Kernel("precomputed"))
    ref = doubled_dense(K)
    np.testing.assert_allclose(Q.rows(np.arange(2 * L)), ref, atol=1e-12)
    np.testing.assert_allclose(Q.block([0, L, 3]), ref[np.ix_([0, L, 3], [0, L, 3])], atol=1e-12)


# ---------------------------------------------------------------------------------------------
# SMO on ε-SVR's dual against LIBSVM (scikit-learn's SVR)
# ---------------------------------------------------------------------------------------------


def epsilon_svr_qp(Q: DoubledKernelQ, y: np.ndarray, C: float, eps: float) -> qpcore.QP:
    """min ½xᵀQx + [ε − y; ε + y]ᵀx over x = [α; α*], 0 ≤ x ≤ C, Σα − Σα* = 0."""
    n = y.size
    return qpcore.QP(Q, np.r_[eps - y, eps + y], np.zeros(2 * n), np.full(2 * n, C),
                     np.r_[np.ones(n), -np.ones(n)][None, :], np.zeros(1))


@pytest.mark.parametrize("name", ["rbf", "linear", "poly"])
def test_smo_on_epsilon_svr_matches_sklearn(name: str) -> None:
    from sklearn.svm import SVR
    from qpcore_strategies.smo import SMO

    rng = np.random.default_rng(11)
    # four dimensions keep the RBF matrix well conditioned (smallest eigenvalue 0.03): LIBSVM
    # caches its rows in single precision, and on a near-singular K that error moves α − α*
    # by far more than 1e-6 while the decision values still agree
    n, C, eps = 60, 3.0, 0.1
    gamma = {"rbf": 1.0, "linear": 1.0, "poly": 0.25}[name]
    X = rng.normal(size=(n, 4))
    y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    kernel = Kernel(name, gamma=gamma, degree=3, coef0=1.0)  # type: ignore[arg-type]
    Q = DoubledKernelQ(X, kernel)
    qp = epsilon_svr_qp(Q, y, C, eps)
    res = qpcore.solve(qp, SMO(), tol=1e-10, max_iter=500_000)
    assert res.status == qpcore.Status.CONVERGED
    assert_kkt(qp, res, 1e-10)
    model = SVR(kernel=name, C=C, epsilon=eps, gamma=gamma, degree=3, coef0=1.0, tol=1e-12,
                shrinking=False).fit(X, y)
    coef = np.zeros(n)
    coef[model.support_] = model.dual_coef_[0]
    x_ref = np.r_[np.maximum(coef, 0.0), np.maximum(-coef, 0.0)]   # α − α* = coef, α α* = 0
    obj_ref = qp.objective(x_ref)
    assert res.objective == pytest.approx(obj_ref, rel=1e-6, abs=1e-9)
    assert res.objective <= obj_ref + 1e-9
    beta = res.x[:n] - res.x[n:]
    K = np.asarray(Q.base.rows(np.arange(n)), dtype=np.float64)
    # linear and cubic kernels have few features (a singular K): ½‖w‖² is the only strong
    # convexity, so ‖w − w*‖² ≤ 2·gap and LIBSVM's 1e-14 relative gap leaves ~1e-6 in w
    atol = 1e-6 if name == "rbf" else 1e-5
    np.testing.assert_allclose(K @ beta, model.predict(X) - model.intercept_[0], atol=atol)
    if name == "rbf":   # K positive definite: α − α* is unique
        np.testing.assert_allclose(beta, coef, atol=1e-6)
    # the run went through l-long kernel rows only
    ids, _ = Q.base._rows.entries()
    assert ids.size and int(ids.max()) < n and Q.base._rows.width == n


def test_float32_rows_solve_the_same_svr() -> None:
    from qpcore_strategies.smo import SMO

    rng = np.random.default_rng(12)
    n = 40
    X = rng.normal(size=(n, 3))
    y = X[:, 0] - X[:, 1] ** 2 + 0.05 * rng.normal(size=n)
    q64 = epsilon_svr_qp(DoubledKernelQ(X, Kernel("rbf", gamma=0.4)), y, 2.0, 0.05)
    q32 = epsilon_svr_qp(DoubledKernelQ(X, Kernel("rbf", gamma=0.4), dtype=np.float32,
                                        compute_dtype=np.float32), y, 2.0, 0.05)
    r64 = qpcore.solve(q64, SMO(), tol=1e-8)
    r32 = qpcore.solve(q32, SMO(), tol=1e-5)
    assert r32.status == qpcore.Status.CONVERGED
    assert r32.objective == pytest.approx(r64.objective, rel=1e-5)


def test_decomposition_reads_the_doubled_rows_through_cross_and_block() -> None:
    from qpcore_strategies.decomposition import Decomposition
    from qpcore_strategies.smo import SMO

    rng = np.random.default_rng(13)
    n = 70
    X = rng.normal(size=(n, 4))
    y = np.cos(X[:, 0]) + 0.2 * X[:, 2]
    Q = DoubledKernelQ(X, Kernel("rbf", gamma=0.7), cache_bytes=10 * n * 8)
    qp = epsilon_svr_qp(Q, y, 5.0, 0.05)
    res = qpcore.solve(qp, Decomposition(), tol=1e-8)
    assert_kkt(qp, res, 1e-8)
    ref = qpcore.solve(epsilon_svr_qp(DoubledKernelQ(X, Kernel("rbf", gamma=0.7)), y, 5.0, 0.05), SMO(), tol=1e-10)
    assert res.objective == pytest.approx(ref.objective, rel=1e-7)
    assert Q.base._rows.width == n and len(Q.base._rows) <= 10


def test_mirrored_rows_are_opposite() -> None:
    # what Capability.MIRRORED declares: rows i and i + l are opposite
    Q, _ = make("rbf", "dense", cache_bytes=12345)
    for i in (0, 2, L - 1):
        np.testing.assert_array_equal(Q.rows([i]), -Q.rows([L + i]))
