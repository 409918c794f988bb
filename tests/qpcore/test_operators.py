"""Backends: DenseQ and KernelQ rows, diag, matvec, the LRU row cache and its counters."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import scipy.sparse as sp

from qpcore import Capability, DenseQ, Kernel, KernelQ, QOperator

pairwise = pytest.importorskip("sklearn.metrics.pairwise")

N, D = 23, 6
GAMMA, DEGREE, COEF0 = 0.3, 3, 0.7


def data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    X[rng.random((N, D)) < 0.6] = 0.0  # sparse enough to keep CSR when asked
    y = np.where(rng.random(N) < 0.5, 1.0, -1.0)
    return X, y


def sklearn_gram(name: str, X: np.ndarray) -> np.ndarray:
    f: dict[str, Callable[[], Any]] = {
        "linear": lambda: pairwise.linear_kernel(X),
        "rbf": lambda: pairwise.rbf_kernel(X, gamma=GAMMA),
        "poly": lambda: pairwise.polynomial_kernel(X, degree=DEGREE, gamma=GAMMA, coef0=COEF0),
        "sigmoid": lambda: pairwise.sigmoid_kernel(X, gamma=GAMMA, coef0=COEF0),
        "precomputed": lambda: pairwise.rbf_kernel(X, gamma=GAMMA),
    }
    return np.asarray(f[name](), dtype=np.float64)


def make(name: str, fmt: str, **kw: Any) -> tuple[KernelQ, np.ndarray]:
    """A KernelQ in the given input format and the dense Q it should equal."""
    X, y = data()
    G = sklearn_gram(name, X)
    inp: Any = G if name == "precomputed" else X
    if fmt == "csr":  # dense_threshold > 1 keeps the sparse code path
        inp = sp.csr_matrix(inp)
        kw.setdefault("dense_threshold", 1.1)
    kernel = Kernel(name, gamma=GAMMA, degree=DEGREE, coef0=COEF0)  # type: ignore[arg-type]
    return KernelQ(inp, kernel, scale=y, **kw), np.outer(y, y) * G


KERNELS = ["linear", "rbf", "poly", "sigmoid", "precomputed"]
FORMATS = ["dense", "csr"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", KERNELS)
def test_rows_match_sklearn(name: str, fmt: str) -> None:
    Q, ref = make(name, fmt)
    assert isinstance(Q, QOperator)
    idx = np.array([5, 0, 17, 5, 22])
    np.testing.assert_allclose(Q.rows(idx), ref[idx], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Q.row(3), ref[3], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Q.rows(np.arange(N)), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", KERNELS)
def test_diag(name: str, fmt: str) -> None:
    Q, ref = make(name, fmt)
    np.testing.assert_allclose(Q.diag(), np.diag(ref), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", KERNELS)
def test_matvec(name: str, fmt: str) -> None:
    Q, ref = make(name, fmt)
    x = np.random.default_rng(1).normal(size=N)
    x[::3] = 0.0  # zeros are skipped: their rows must not matter
    np.testing.assert_allclose(Q.matvec(x), ref @ x, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(Q.matvec(x, block_bytes=256), ref @ x, rtol=1e-11, atol=1e-11)
    np.testing.assert_array_equal(Q.matvec(np.zeros(N)), np.zeros(N))
    Q.rows([1, 2, 4, 5])  # some nonzeros' rows now cached: the product must not change
    np.testing.assert_allclose(Q.matvec(x), ref @ x, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("name", ["linear", "rbf", "poly", "sigmoid"])
def test_very_sparse_data_with_default_threshold(name: str) -> None:
    # text-like data (1 % nonzeros) stays CSR under the default dense_threshold
    X = sp.random(40, 300, density=0.01, format="csr", random_state=np.random.default_rng(3))
    y = np.where(np.arange(40) % 3 == 0, 1.0, -1.0)
    Q = KernelQ(X, Kernel(name, gamma=GAMMA, degree=DEGREE, coef0=COEF0), scale=y)  # type: ignore[arg-type]
    Xd = X.toarray()
    ref = np.outer(y, y) * sklearn_gram(name, Xd)
    np.testing.assert_allclose(Q.row(7), ref[7], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Q.rows([0, 39, 7]), ref[[0, 39, 7]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Q.rows(np.arange(40)), ref, rtol=1e-12, atol=1e-12)
    x = np.random.default_rng(0).normal(size=40)
    np.testing.assert_allclose(Q.matvec(x), ref @ x, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(Q.diag(), np.diag(ref), rtol=1e-12, atol=1e-12)


def test_default_sparse_input_densified_gives_same_rows() -> None:
    X, y = data()
    Q_sparse = KernelQ(sp.csr_matrix(X), Kernel("rbf", gamma=GAMMA), scale=y)  # dense enough: densified
    Q_dense = KernelQ(X, Kernel("rbf", gamma=GAMMA), scale=y)
    np.testing.assert_allclose(Q_sparse.rows([1, 2]), Q_dense.rows([1, 2]), rtol=1e-13, atol=1e-14)


def test_no_scale_means_ones() -> None:
    X, _ = data()
    Q = KernelQ(X, Kernel("linear"))
    np.testing.assert_allclose(Q.rows(np.arange(N)), X @ X.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", KERNELS)
def test_float32_storage_close_to_float64(name: str) -> None:
    Q32, ref = make(name, "dense", dtype=np.float32)
    r = Q32.rows([0, 4, 9])
    assert r.dtype == np.float32 and Q32.row(1).dtype == np.float32
    scale = np.abs(ref).max()
    np.testing.assert_allclose(r, ref[[0, 4, 9]], rtol=1e-6, atol=1e-6 * scale)
    # matvec never goes through the float32 rows
    x = np.random.default_rng(2).normal(size=N)
    np.testing.assert_allclose(Q32.matvec(x), ref @ x, rtol=1e-11, atol=1e-11)


def test_cached_rows_are_read_only() -> None:
    Q, _ = make("rbf", "dense")
    r = Q.row(2)
    with pytest.raises(ValueError):
        r[0] = 1.0


# --- the LRU cache -----------------------------------------------------------------------------

def n_cached(Q: KernelQ) -> int:
    return sum(Q.cached(i) for i in range(Q.shape[0]))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("budget_rows", [1, 3, 7])
def test_cache_respects_byte_budget(dtype: Any, budget_rows: int) -> None:
    row_bytes = N * np.dtype(dtype).itemsize
    Q, ref = make("rbf", "dense", dtype=dtype, cache_bytes=budget_rows * row_bytes + row_bytes - 1)
    assert Q.max_rows == budget_rows
    assert Q.max_rows * row_bytes <= Q.cache_bytes
    rng = np.random.default_rng(0)
    for _ in range(30):
        if rng.random() < 0.5:
            Q.row(int(rng.integers(N)))
        else:
            Q.rows(rng.integers(0, N, size=int(rng.integers(1, 12))))
        assert n_cached(Q) <= Q.max_rows
    np.testing.assert_allclose(Q.rows(np.arange(N)), ref, rtol=1e-6, atol=1e-6)
    assert n_cached(Q) <= Q.max_rows


def test_lru_evicts_least_recently_used() -> None:
    Q, _ = make("rbf", "dense", cache_bytes=3 * N * 8)
    assert Q.max_rows == 3
    for i in (0, 1, 2):
        Q.row(i)
    Q.row(0)  # 0 is now the most recent; 1 the least
    Q.row(3)
    assert [Q.cached(i) for i in range(4)] == [True, False, True, True]
    Q.rows([2])  # a hit through rows() also refreshes
    Q.row(4)
    assert [Q.cached(i) for i in range(5)] == [False, False, True, True, True]


def test_zero_budget_caches_nothing() -> None:
    Q, ref = make("linear", "dense", cache_bytes=0)
    for _ in range(2):
        np.testing.assert_allclose(Q.row(1), ref[1], rtol=1e-12, atol=1e-12)
    assert n_cached(Q) == 0
    assert Q.stats.cache_misses == 2 and Q.stats.rows_computed == 2 and Q.stats.cache_hits == 0


def test_counters() -> None:
    Q, _ = make("rbf", "dense")
    s = Q.stats
    Q.row(0)
    assert (s.rows_computed, s.cache_hits, s.cache_misses) == (1, 0, 1)
    Q.row(0)
    assert (s.rows_computed, s.cache_hits, s.cache_misses) == (1, 1, 1)
    Q.rows([0, 1, 2])  # one hit, two rows computed in one block
    assert (s.rows_computed, s.cache_hits, s.cache_misses) == (3, 2, 3)
    Q.rows([5, 5])  # a repeated miss is computed once
    assert (s.rows_computed, s.cache_hits, s.cache_misses) == (4, 3, 4)
    x = np.zeros(N)
    x[[7, 9, 11]] = 1.0
    Q.matvec(x)  # rows for the nonzeros (none cached): computed, neither hits nor misses
    assert (s.rows_computed, s.cache_hits, s.cache_misses) == (7, 3, 4)
    assert s.hit_rate == pytest.approx(3 / 7)
    Q.diag()
    assert s.rows_computed == 7
    assert not any(Q.cached(i) for i in (7, 9, 11))


def test_compute_bypasses_the_cache() -> None:
    Q, ref = make("poly", "dense")
    np.testing.assert_allclose(Q.compute([3, 1]), ref[[3, 1]], rtol=1e-12)
    assert n_cached(Q) == 0 and Q.stats.rows_computed == 2


# --- DenseQ --------------------------------------------------------------------------------------

def test_dense_q() -> None:
    rng = np.random.default_rng(0)
    B = rng.normal(size=(6, 6))
    M = B @ B.T
    Q = DenseQ(M)
    assert isinstance(Q, QOperator)
    assert Q.shape == (6, 6)
    x = rng.normal(size=6)
    np.testing.assert_allclose(Q.matvec(x), M @ x)
    np.testing.assert_array_equal(Q.diag(), np.diag(M))
    np.testing.assert_array_equal(Q.rows([4, 1]), M[[4, 1]])
    np.testing.assert_array_equal(Q.row(2), M[2])
    assert Q.stats.cache_hits == 3 and Q.stats.rows_computed == 0
    with pytest.raises(ValueError):
        Q.row(0)[0] = 1.0  # the matrix is read-only
    Q.diag()[0] = -1.0  # diag() is a copy
    assert Q.M[0, 0] == M[0, 0]


# --- principal blocks (used by GPCG's exact projected search and its face solves) -------------

def _principal_cases() -> list[tuple[str, object, np.ndarray]]:
    import scipy.sparse as sp

    from qpcore.backends.gram import GramQ

    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 4))
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    K = np.exp(-0.3 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    A = rng.normal(size=(12, 30))
    As = sp.random(40, 30, density=0.2, random_state=3, format="csr")
    M = A.T @ A
    return [
        ("dense", DenseQ(M), M),
        ("kernel rbf", KernelQ(X, Kernel("rbf", gamma=0.3), scale=y), np.outer(y, y) * K),
        ("kernel linear sparse", KernelQ(sp.csr_matrix(X), Kernel("linear")), X @ X.T),
        ("kernel precomputed", KernelQ(K, Kernel("precomputed"), scale=y), np.outer(y, y) * K),
        ("gram dense", GramQ(A), M),
        ("gram sparse", GramQ(As), (As.T @ As).toarray()),
    ]


@pytest.mark.parametrize("case", _principal_cases(), ids=lambda c: c[0])
def test_principal_block_every_backend(case: tuple[str, object, np.ndarray]) -> None:
    from qpcore.backends.capabilities import principal_block

    _, Q, ref = case
    idx = np.array([5, 0, 17, 5, 29])   # unordered, with a repeat
    blk = principal_block(Q, idx)  # type: ignore[arg-type]
    np.testing.assert_allclose(blk, ref[np.ix_(idx, idx)], rtol=1e-12, atol=1e-12)
    assert blk.dtype == np.float64 and blk.shape == (5, 5)


def test_principal_block_falls_back_to_rows() -> None:
    from qpcore.backends.capabilities import principal_block

    class RowsOnly:
        capabilities: frozenset[Capability] = frozenset()   # declares no block: rows it is

        def __init__(self, M: np.ndarray) -> None:
            self.M = M

        def rows(self, idx: np.ndarray) -> np.ndarray:
            return self.M[idx]

    M = np.arange(16.0).reshape(4, 4)
    M = M + M.T
    np.testing.assert_array_equal(principal_block(RowsOnly(M), [3, 1]), M[np.ix_([3, 1], [3, 1])])  # type: ignore[arg-type]


@pytest.mark.parametrize("gamma", [0.05, 1.0])
def test_float32_block_compute_within_row_eps(gamma: float) -> None:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 6)) * np.sqrt(1.0 / gamma) / 3
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    exact = KernelQ(X, Kernel("rbf", gamma=gamma), scale=y)
    fast = KernelQ(X, Kernel("rbf", gamma=gamma), scale=y, dtype=np.float32, compute_dtype=np.float32)
    idx = np.array([3, 17, 250, 99, 0])
    blk = fast.rows(idx)
    assert blk.dtype == np.float32
    ref = exact.rows(idx)
    err = float(np.abs(blk - ref).max())
    assert err <= fast.row_eps
    assert fast.row_eps > np.finfo(np.float32).eps   # the cancellation term is counted
    # cached rows come back identical; single rows and matvec stay float64
    np.testing.assert_array_equal(fast.rows(idx[::-1]), blk[::-1])
    v = rng.normal(size=300)
    np.testing.assert_allclose(fast.matvec(v), exact.matvec(v), rtol=1e-12, atol=1e-12)
    # float64 storage ignores the option
    assert KernelQ(X, Kernel("rbf", gamma=gamma), compute_dtype=np.float32).row_eps == np.finfo(np.float64).eps


@pytest.mark.parametrize("kind", ["dense", "kernel64", "kernel32", "kernel_sparse", "gram", "gram_sparse", "poly"])
def test_cross_block_matches_rows(kind: str) -> None:
    from qpcore.backends.gram import GramQ
    from qpcore.backends.capabilities import cross_block
    from qpcore.backends.operators import DenseQ, Kernel, KernelQ

    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 7))
    y = np.where(rng.random(60) < 0.5, -1.0, 1.0)
    Q: object
    if kind == "dense":
        M = rng.standard_normal((60, 60))
        Q = DenseQ(M @ M.T)
    elif kind == "kernel64":
        Q = KernelQ(X, Kernel("rbf", gamma=0.3), y)
    elif kind == "kernel32":
        Q = KernelQ(X, Kernel("rbf", gamma=0.3), y, dtype=np.float32, compute_dtype=np.float32)
    elif kind == "kernel_sparse":
        Xs = sp.random(60, 40, density=0.05, random_state=1, format="csr")
        Q = KernelQ(Xs, Kernel("rbf", gamma=0.3), y)
    elif kind == "poly":
        Q = KernelQ(X, Kernel("poly", gamma=0.5, degree=3, coef0=1.0), y)
    elif kind == "gram":
        Q = GramQ(rng.standard_normal((30, 60)))
    else:
        Q = GramQ(sp.random(30, 60, density=0.2, random_state=2, format="csr"))
    idx, cols = np.array([3, 17, 4, 59, 0]), np.array([1, 2, 8, 30, 31, 58])
    full = np.asarray(Q.rows(np.arange(60)), dtype=np.float64)  # type: ignore[attr-defined]
    tol = 1e-6 if kind == "kernel32" else 1e-12
    np.testing.assert_allclose(np.asarray(cross_block(Q, idx, cols), dtype=np.float64), full[np.ix_(idx, cols)],  # type: ignore[arg-type]
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(cross_block(Q, idx), dtype=np.float64), full[idx], rtol=tol, atol=tol)  # type: ignore[arg-type]


def test_kernel_cache_slab_views_stay_valid() -> None:
    from qpcore.backends.operators import Kernel, KernelQ

    rng = np.random.default_rng(6)
    X = rng.standard_normal((50, 4))
    Q = KernelQ(X, Kernel("rbf", gamma=0.5), cache_bytes=10 * 50 * 8)   # ten rows
    first = Q.row(0).copy()
    r0 = Q.row(0)
    assert not r0.flags.writeable
    for i in range(1, 5):      # fewer new rows than slots: row 0 stays cached and unchanged
        Q.row(i)
    np.testing.assert_array_equal(r0, first)
    for i in range(5, 40):     # evicted and its slot reused: a fresh fetch is still right
        Q.row(i)
    np.testing.assert_allclose(Q.row(0), first)
    assert Q.stats.cache_hits >= 1


# --- the refresh products: integer data, repeated points, blocks written in place ------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), integer=st.booleans(), repeats=st.integers(0, 30),
       fmt=st.sampled_from(FORMATS), block_bytes=st.sampled_from([256, 4096, 2 << 20]))
def test_rbf_matvec_exact_with_repeated_points(seed: int, integer: bool, repeats: int, fmt: str,
                                               block_bytes: int) -> None:
    # binary or count data take the float32-exact inner products; repeated points are computed
    # once (output side) and their weights summed (input side): Q x must not change either way
    rng = np.random.default_rng(seed)
    n, d = 40, 7
    X = rng.integers(0, 3, size=(n, d)).astype(float) if integer else rng.normal(size=(n, d))
    X[rng.random((n, d)) < 0.5] = 0.0
    if repeats:
        src = rng.integers(0, n, size=repeats)
        dst = rng.choice(n, size=repeats, replace=False)
        X[dst] = X[src]
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    x = rng.normal(size=n) * (rng.random(n) < 0.6)
    inp: Any = sp.csr_matrix(X) if fmt == "csr" else X
    Q = KernelQ(inp, Kernel("rbf", gamma=0.4), scale=y, cache_bytes=0, dense_threshold=0.0)
    assert (Q._X32 is not None) == integer
    ref = np.outer(y, y) * pairwise.rbf_kernel(X, gamma=0.4)
    scale = float(np.abs(ref).sum(axis=1).max()) * float(np.abs(x).max(initial=1.0))
    np.testing.assert_allclose(Q.matvec(x, block_bytes=block_bytes), ref @ x, rtol=0, atol=1e-13 * max(1.0, scale))


def test_integer_path_needs_small_exact_products() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(30, 5)).astype(float)
    assert KernelQ(X, Kernel("rbf", gamma=0.1))._X32 is not None
    assert KernelQ(X + 0.5, Kernel("rbf", gamma=0.1))._X32 is None          # not integers
    assert KernelQ(X * 3000.0, Kernel("rbf", gamma=0.1))._X32 is None       # |x·y| may reach 2²⁴


@pytest.mark.parametrize("cols", [None, np.array([0, 3, 4, 9, 10, 22])])
def test_cross_into_writes_the_float32_block_in_place(cols: Any) -> None:
    X, y = data()
    Q = KernelQ(X, Kernel("rbf", gamma=GAMMA), scale=y, dtype=np.float32, compute_dtype=np.float32)
    idx = np.array([5, 0, 17, 2])
    want = Q.cross(idx, cols)
    buf = np.full((6, N if cols is None else cols.size), np.nan, dtype=np.float32)
    assert Q.cross_into(idx, cols, buf[1:5])
    np.testing.assert_array_equal(buf[1:5], want)
    assert np.isnan(buf[0]).all() and np.isnan(buf[5]).all()
    ref = (np.outer(y, y) * sklearn_gram("rbf", X))[idx]
    np.testing.assert_allclose(buf[1:5], ref if cols is None else ref[:, cols], rtol=0, atol=50 * Q.row_eps)
    # no in-place path for other dtypes or shapes: nothing written
    other = np.zeros((4, N if cols is None else cols.size))
    assert not Q.cross_into(idx, cols, other) and not other.any()


def test_footprint_counts_the_operators_own_arrays() -> None:
    X, y = data()
    plain = KernelQ(X, Kernel("rbf", gamma=GAMMA), scale=y)
    fast = KernelQ(X, Kernel("rbf", gamma=GAMMA), scale=y, dtype=np.float32, compute_dtype=np.float32)
    assert plain.footprint >= X.nbytes + 2 * (N * (D + 2) * 8)          # data and its two factors
    assert fast.footprint >= plain.footprint + 2 * (N * (D + 2) * 4)    # and their float32 copies


# --- the PSD check: a tolerance relative to the largest eigenvalue -------------------------------

def _planted(n: int, smallest: float, largest: float, seed: int = 0) -> np.ndarray:
    """A symmetric matrix with the spectrum [smallest, ..., largest] (the rest in between, ≥ 0)."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((n, n)))[0]
    w = np.concatenate([[smallest], rng.uniform(0.0, largest, n - 2), [largest]])
    M: np.ndarray = (U * w) @ U.T
    out: np.ndarray = 0.5 * (M + M.T)
    return out


def test_psd_check_is_relative_to_the_largest_eigenvalue() -> None:
    from qpcore.backends.operators import PSD_TOL

    # rounding-sized negative eigenvalues (VALUES has −1.2e-6 of the largest) are accepted ...
    assert DenseQ(_planted(40, -1e-6 * 10.8, 10.8)).psd is True
    # ... whatever the matrix's scale
    assert DenseQ(_planted(40, -1e-6 * 1e9, 1e9)).psd is True
    assert DenseQ(_planted(40, -1e-6 * 1e-9, 1e-9)).psd is True
    # a clearly indefinite matrix is refused, saying how far it is
    with pytest.raises(Exception, match=r"smallest eigenvalue -0\.0108.*largest 10\.8.*ratio -0\.001.*1e-05"):
        DenseQ(_planted(40, -1e-3 * 10.8, 10.8))
    # the tolerance is the caller's: tighter refuses the rounding-sized one, with how to accept it
    with pytest.raises(Exception, match=r"ratio -1e-06.*tolerance above 1e-06 accepts it"):
        DenseQ(_planted(40, -1e-6 * 10.8, 10.8), psd_tol=1e-7)
    assert DenseQ(_planted(40, -1e-3, 1.0), psd_tol=1e-2).psd is True
    assert PSD_TOL == DenseQ(np.eye(2)).psd_tol


def test_psd_check_edge_cases() -> None:
    from qpcore import ProblemError

    v = np.arange(1.0, 6.0)
    assert DenseQ(np.outer(v, v)).psd is True                          # rank one: PSD, singular
    assert DenseQ(np.zeros((3, 3))).psd is True
    X = np.random.default_rng(1).standard_normal((60, 20))
    assert DenseQ(X @ X.T).psd is True                                  # a rank-deficient Gram matrix
    with pytest.raises(ProblemError, match="no positive eigenvalue"):
        DenseQ(-np.eye(3))
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(ProblemError, match="psd_tol"):
            DenseQ(np.eye(2), psd_tol=bad)


def test_psd_check_takes_the_cholesky_path_when_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    # the eigenvalues are computed only when the shifted Cholesky factorization fails: a PSD
    # matrix, rounding-sized negative eigenvalues included, never pays for them
    from qpcore.backends import operators

    def no_eigen(*args: object, **kwargs: object) -> None:
        raise AssertionError("eigvalsh called")

    monkeypatch.setattr(np.linalg, "eigvalsh", no_eigen)
    X = np.random.default_rng(2).standard_normal((300, 100))
    DenseQ(X @ X.T)
    DenseQ(_planted(200, -1e-7 * 5.0, 5.0))
    assert operators.negative_curvature(_planted(50, 0.0, 3.0)) is None


@pytest.mark.parametrize("seed", range(6))
def test_psd_check_decides_by_the_ratio(seed: int) -> None:
    # planted spectra on either side of the tolerance (a factor 3 away) are judged by it
    from qpcore.backends.operators import negative_curvature

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    top = float(10.0 ** rng.uniform(-6, 6))
    tol = float(10.0 ** rng.uniform(-9, -2))
    inside = _planted(max(n, 2), -tol / 3.0 * top, top, seed)
    outside = _planted(max(n, 2), -tol * 3.0 * top, top, seed)
    assert negative_curvature(inside, tol) is None
    bad = negative_curvature(outside, tol)
    assert bad is not None and bad[0] == pytest.approx(-3.0 * tol * top, rel=1e-6) and bad[1] == pytest.approx(top)


@pytest.mark.data
def test_values_is_accepted_as_convex() -> None:
    # VALUES (Maros–Meszaros): P given to six decimals, eigenvalues down to −1.27e-5 of 10.77
    import scipy.io

    from qpcore_formulations.data.files import data_dir

    path = data_dir() / "maros_meszaros" / "VALUES.mat"
    if not path.exists():
        pytest.skip(f"{path} not found")
    P = sp.csr_matrix(scipy.io.loadmat(str(path))["P"]).toarray()
    P = 0.5 * (P + P.T)
    assert DenseQ(P).psd is True
    with pytest.raises(Exception, match=r"smallest eigenvalue -1\.27.*largest 10\.7.*ratio -1\.18e-06"):
        DenseQ(P, psd_tol=1e-7)
