"""qpcore.linalg.blas: scipy-BLAS products equal numpy's for every memory order and shape."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from qpcore.linalg.blas import gemm, gemv


def _layout(A: np.ndarray, kind: str) -> np.ndarray:
    if kind == "C":
        return np.ascontiguousarray(A)
    if kind == "F":
        return np.asfortranarray(A)
    big = np.zeros((A.shape[0], 2 * A.shape[1] + 1))   # a strided view: copied by gemv/gemm
    big[:, ::2][:, : A.shape[1]] = A
    return big[:, ::2][:, : A.shape[1]]


@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 9), n=st.integers(0, 9), kind=st.sampled_from(["C", "F", "strided"]),
       trans=st.booleans(), seed=st.integers(0, 2**31))
def test_gemv_matches_numpy(m: int, n: int, kind: str, trans: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    A = _layout(rng.standard_normal((m, n)), kind)
    x = rng.standard_normal(m if trans else n)
    want = A.T @ x if trans else A @ x
    got = gemv(A, x, trans=trans)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@settings(max_examples=60, deadline=None)
@given(m=st.integers(0, 7), k=st.integers(0, 7), n=st.integers(0, 7), ka=st.sampled_from(["C", "F", "strided"]),
       kb=st.sampled_from(["C", "F", "strided"]), trans=st.booleans(), seed=st.integers(0, 2**31))
def test_gemm_matches_numpy(m: int, k: int, n: int, ka: str, kb: str, trans: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    A = _layout(rng.standard_normal((k, m) if trans else (m, k)), ka)
    B = _layout(rng.standard_normal((k, n)), kb)
    want = A.T @ B if trans else A @ B
    got = gemm(A, B, trans_a=trans)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
