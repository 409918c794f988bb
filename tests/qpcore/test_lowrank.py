"""DiagPlusLowRankQ against the dense matrix it stands for; the SMW factor and its rank updates."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore.capabilities import cross_block, principal_block
from qpcore.lowrank import DiagPlusLowRankQ
from qpcore.testing import lowrank_qps


def _dense(Q: DiagPlusLowRankQ) -> np.ndarray:
    F = Q.F.toarray() if sp.issparse(Q.F) else np.asarray(Q.F)
    H = F if Q.bias is None else np.hstack([F, np.full((F.shape[0], 1), Q.bias)])
    if Q.s is not None:
        H = Q.s[:, None] * H
    return np.diag(Q.d) + H @ H.T


@given(qp=lowrank_qps(), data=st.data())
def test_operator_matches_dense(qp: qpcore.QP, data: st.DataObject) -> None:
    Q = qp.Q
    assert isinstance(Q, DiagPlusLowRankQ)
    M = _dense(Q)
    m = qp.n
    scale = max(1.0, float(np.abs(M).max()))
    x = np.random.default_rng(0).standard_normal(m)
    assert np.allclose(Q.matvec(x), M @ x, atol=1e-12 * scale * np.abs(x).sum())
    assert np.allclose(Q.diag(), np.diag(M), atol=1e-12 * scale)
    idx = np.array(data.draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=8)))
    cols = np.array(data.draw(st.lists(st.integers(0, m - 1), min_size=1, max_size=8)))
    assert np.allclose(Q.rows(idx), M[idx], atol=1e-12 * scale)
    assert np.allclose(Q.row(int(idx[0])), M[idx[0]], atol=1e-12 * scale)
    assert np.allclose(principal_block(Q, idx), M[np.ix_(idx, idx)], atol=1e-12 * scale)
    assert np.allclose(cross_block(Q, idx, cols), M[np.ix_(idx, cols)], atol=1e-12 * scale)
    # the low-rank pieces: Hᵀu, Hz and Σ v_j h_idx_j against the explicit H
    H = Q.lowrank_rows(np.arange(m))
    assert np.allclose(H @ H.T + np.diag(Q.d), M, atol=1e-12 * scale)
    assert np.allclose(Q.rmatvec_lowrank(x), H.T @ x, atol=1e-12 * scale * np.abs(x).sum())
    z = np.random.default_rng(1).standard_normal(Q.k)
    assert np.allclose(Q.matvec_lowrank(z), H @ z, atol=1e-12 * scale * np.abs(z).sum() * m)
    v = np.arange(idx.size, dtype=float)
    assert np.allclose(Q.rmatvec_rows(idx, v), H[idx].T @ v, atol=1e-12 * scale * max(1.0, v.sum()))


@given(qp=lowrank_qps(), data=st.data())
def test_factor_and_rank_updates_match_dense_solves(qp: qpcore.QP, data: st.DataObject) -> None:
    Q = qp.Q
    assert isinstance(Q, DiagPlusLowRankQ)
    M = _dense(Q)
    m = qp.n
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    r = rng.standard_normal(m)
    B = np.flatnonzero(rng.random(m) < 0.6)
    f = Q.factor(B, rhs=r)
    for _ in range(data.draw(st.integers(0, 6))):
        f.update(np.flatnonzero(rng.random(m) < 0.2), np.flatnonzero(rng.random(m) < 0.2))
    Bn = np.flatnonzero(f.mask)
    if Bn.size == 0:
        return
    MB = M[np.ix_(Bn, Bn)]
    cond = np.linalg.cond(MB)
    want = np.linalg.solve(MB, r[Bn])
    tol = 1e-13 * cond * max(1.0, float(np.abs(want).max())) + 1e-12
    x, z = f.solve_fixed()
    assert np.allclose(x[Bn], want, atol=tol)
    assert (x[~f.mask] == 0).all()
    assert np.allclose(f.solve(r[Bn]), want, atol=tol)
    # z = H_Bᵀx: the primal of the block solve
    H = Q.lowrank_rows(Bn)
    assert np.allclose(z, H.T @ x[Bn], atol=tol * max(1.0, float(np.abs(H).max())) * Bn.size)


def test_rebuild_after_many_updates_and_counters() -> None:
    rng = np.random.default_rng(0)
    Q = DiagPlusLowRankQ(0.5, rng.standard_normal((300, 4)), row_scale=np.sign(rng.standard_normal(300)), bias=-1.0)
    f = Q.factor(np.arange(100))
    f.add(np.arange(100, 110))
    assert f.counters["rank_updates"] == 10 and f.counters["rebuilds"] == 1
    f.remove(np.arange(0, 95))     # more rows than remain: rebuilt, not downdated
    assert f.counters["rebuilds"] == 2
    assert f.size == 15
    M = _dense(Q)
    B = np.flatnonzero(f.mask)
    assert np.allclose(f.solve(np.ones(15)), np.linalg.solve(M[np.ix_(B, B)], np.ones(15)))
    assert f.condition() >= 1.0


def test_block_rows_bound_memory() -> None:
    # the Gram matrix is accumulated over row blocks of at most 8 MB, whatever m is
    rng = np.random.default_rng(1)
    F = rng.standard_normal((70_000, 20))
    Q = DiagPlusLowRankQ(1.0, F)
    assert Q._block_rows * Q.k * 8 <= 8 << 20
    G, t = Q.weighted_gram(None, np.ones(70_000), np.ones(70_000))
    assert np.allclose(G, F.T @ F)
    assert np.allclose(t, F.sum(axis=0))


@pytest.mark.parametrize("kwargs,match", [
    (dict(d=-1.0), "negative"), (dict(d=np.ones(3)), "shape mismatch"), (dict(d=np.nan), "NaN"),
    (dict(F=np.full((5, 2), np.inf)), "NaN"), (dict(F=np.ones(5)), "2-D"),
    (dict(row_scale=np.ones(4)), "row_scale"), (dict(row_scale=np.full(5, np.nan)), "row_scale"),
    (dict(bias=np.inf), "bias"),
])
def test_bad_input(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = dict(d=1.0, F=np.ones((5, 2)))
    args.update(kwargs)
    with pytest.raises(qpcore.ProblemError, match=match):
        DiagPlusLowRankQ(args.pop("d"), args.pop("F"), **args)  # type: ignore[arg-type]


def test_factor_needs_positive_diagonal() -> None:
    Q = DiagPlusLowRankQ(np.r_[1.0, 0.0, 1.0], np.ones((3, 1)))
    with pytest.raises(qpcore.ProblemError, match="d > 0"):
        Q.factor([0, 1])
    assert Q.factor([0, 2]).size == 2
