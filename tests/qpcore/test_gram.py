"""GramQ: Q = AᵀA applied through A, checked against the dense product for dense and sparse A."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from qpcore import ProblemError, QOperator
from qpcore.backends.gram import GramQ

M, N = 17, 9


def design(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(M, N))
    A[rng.random((M, N)) < 0.5] = 0.0  # real zeros, so the sparse formats have structure
    A[:, 3] = 0.0  # an all-zero column: zero diagonal entry and zero row of Q
    return A


FORMATS: dict[str, Callable[[np.ndarray], Any]] = {
    "dense": lambda A: A,
    "fortran": np.asfortranarray,
    "int": lambda A: np.round(3 * A).astype(np.int64),
    "csr": sp.csr_matrix,
    "csc": sp.csc_matrix,
    "coo_array": sp.coo_array,
}


@pytest.fixture(params=sorted(FORMATS))
def case(request: pytest.FixtureRequest) -> tuple[GramQ, np.ndarray]:
    A = FORMATS[request.param](design())
    dense = A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64)
    return GramQ(A), dense.T @ dense


def test_protocol_and_shape(case: tuple[GramQ, np.ndarray]) -> None:
    G, _ = case
    assert isinstance(G, QOperator)
    assert G.shape == (N, N)


def test_diag(case: tuple[GramQ, np.ndarray]) -> None:
    G, Q = case
    d = G.diag()
    assert d.dtype == np.float64 and d.shape == (N,)
    np.testing.assert_allclose(d, np.diag(Q), rtol=1e-13, atol=1e-13)


def test_matvec(case: tuple[GramQ, np.ndarray]) -> None:
    G, Q = case
    x = np.random.default_rng(1).normal(size=N)
    out = G.matvec(x)
    assert out.shape == (N,) and out.dtype == np.float64
    np.testing.assert_allclose(out, Q @ x, rtol=1e-12, atol=1e-12)


def test_rows_block_and_counter(case: tuple[GramQ, np.ndarray]) -> None:
    G, Q = case
    idx = np.array([5, 0, 3, 5, 8])  # repeats and the zero column
    blk = G.rows(idx)
    assert blk.shape == (idx.size, N) and blk.dtype == np.float64
    np.testing.assert_allclose(blk, Q[idx], rtol=1e-12, atol=1e-12)
    assert G.stats.rows_computed == idx.size
    np.testing.assert_allclose(G.rows([2]), Q[[2]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(G.row(7), Q[7], rtol=1e-12, atol=1e-12)
    assert G.stats.rows_computed == idx.size + 2
    assert G.stats.cache_hits == 0 and G.stats.cache_misses == 0  # nothing is cached


def test_sparse_duplicates_are_summed() -> None:
    # COO with a repeated (row, col) entry means their sum; the diagonal must see the sum
    A = sp.coo_matrix(([1.0, 2.0, 4.0], ([0, 0, 1], [0, 0, 1])), shape=(2, 2))
    np.testing.assert_allclose(GramQ(A).diag(), [9.0, 16.0])


def test_empty_rows_give_zero_q() -> None:
    G = GramQ(np.zeros((0, 3)))
    assert G.shape == (3, 3)
    np.testing.assert_array_equal(G.matvec(np.ones(3)), np.zeros(3))
    np.testing.assert_array_equal(G.diag(), np.zeros(3))


@pytest.mark.parametrize("bad, match", [
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "A: contains NaN or inf"),
    (np.array([[1.0, np.inf]]), "A: contains NaN or inf"),
    (sp.csr_matrix(np.array([[0.0, np.nan], [1.0, 0.0]])), "A: contains NaN or inf"),
    (sp.csr_matrix(np.array([[0.0, -np.inf]])), "A: contains NaN or inf"),
    (np.ones(3), "A: expected a 2-D array"),
    (np.ones((2, 2, 2)), "A: expected a 2-D array"),
    (np.array([["a", "b"]]), "A: dtype"),
    (np.ones((2, 2), dtype=complex), "A: dtype"),
    (np.ones((2, 2), dtype=bool), "A: dtype"),
    (sp.csr_matrix(np.ones((2, 2), dtype=complex)), "A: dtype"),
    ([[1.0, 2.0], [3.0]], "A: "),
])
def test_bad_input(bad: Any, match: str) -> None:
    with pytest.raises(ProblemError, match=match):
        GramQ(bad)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 120), n=st.integers(1, 12), block=st.integers(1, 4000), order=st.sampled_from(["C", "F"]),
       seed=st.integers(0, 2**31))
def test_blocked_matvec_matches_two_products(m: int, n: int, block: int, order: str, seed: int) -> None:
    """The fused Aᵀ(A x), a block of rows at a time, equals the two plain products (any block size)."""
    import qpcore.backends.gram as gram

    rng = np.random.default_rng(seed)
    A = np.asarray(rng.standard_normal((m, n)), order=order)
    x = rng.standard_normal(n)
    old = gram._BLOCK_BYTES
    gram._BLOCK_BYTES = block
    try:
        got = gram.GramQ(A).matvec(x)
    finally:
        gram._BLOCK_BYTES = old
    np.testing.assert_allclose(got, A.T @ (A @ x), rtol=1e-12, atol=1e-12 * float(np.abs(A).sum() * np.abs(x).max()))
