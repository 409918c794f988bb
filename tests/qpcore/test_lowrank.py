"""DiagPlusLowRankQ against the dense matrix it stands for; SMW block solves from its weighted Gram
matrices (and their rank updates) and factor_identity_plus."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore.backends.capabilities import cross_block, principal_block
import qpcore.backends.lowrank as lr
from qpcore.backends.lowrank import DiagPlusLowRankQ, factor_identity_plus
from qpcore.testkit.testing import lowrank_qps


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
    assert np.allclose(Q.matvec_rows(idx, z), H[idx] @ z, atol=1e-12 * scale * np.abs(z).sum() * m)


@given(seed=st.integers(0, 2**16), bias=st.sampled_from([None, 0.5]), scaled=st.booleans(),
       idx=st.lists(st.integers(0, 29), min_size=0, max_size=40))
def test_row_products_in_place_on_csr(seed: int, bias: float | None, scaled: bool, idx: list[int]) -> None:
    # CSR rows are multiplied where they lie (scipy's kernels over an interleaved row pointer): any
    # order, repeats, empty rows, no rows at all; the same as the gathered rows' products
    rng = np.random.default_rng(seed)
    D = sp.random(30, 7, density=0.3, random_state=rng).toarray()
    D[3] = 0.0                                  # an empty row
    X = sp.csr_matrix(D)
    s = rng.uniform(0.5, 2.0, 30) * rng.choice([-1.0, 1.0], 30) if scaled else None
    Q = DiagPlusLowRankQ(0.0, X, row_scale=s, bias=bias)
    i = np.array(idx, dtype=np.intp)
    H = Q.lowrank_rows(np.arange(30))
    w = rng.standard_normal(Q.k)
    v = rng.standard_normal(i.size)
    assert np.allclose(Q.matvec_rows(i, w), H[i] @ w, atol=1e-12)
    assert np.allclose(Q.rmatvec_rows(i, v), H[i].T @ v, atol=1e-12)


def _smw_solve(Q: DiagPlusLowRankQ, G: np.ndarray, t: np.ndarray, B: np.ndarray, r: np.ndarray,
               **kw: bool) -> np.ndarray:
    """x_B = Q_BB⁻¹ r_B through SMW: z = (I + G)⁻¹ t, x_B = D_B⁻¹(r_B − H_B z) (ASVM's face solve)."""
    small = factor_identity_plus(G, **kw)
    assert small is not None
    z = small.solve(t)
    return (r[B] - Q.lowrank_rows(B) @ z) / Q.d[B]


@given(qp=lowrank_qps(), data=st.data())
def test_smw_block_solves_and_rank_updates_match_dense_solves(qp: qpcore.QP, data: st.DataObject) -> None:
    Q = qp.Q
    assert isinstance(Q, DiagPlusLowRankQ)
    M = _dense(Q)
    m = qp.n
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    r = rng.standard_normal(m)
    w = 1.0 / Q.d
    mask = rng.random(m) < 0.6
    G, t = Q.weighted_gram(np.flatnonzero(mask), w, r)
    # rows entering and leaving B by rank updates of G and t, as ASVM keeps them
    for _ in range(data.draw(st.integers(0, 6))):
        add = np.flatnonzero(~mask & (rng.random(m) < 0.2))
        drop = np.flatnonzero(mask & (rng.random(m) < 0.2))
        Ga, ta = Q.weighted_gram(add, w, r)
        Gd, td = Q.weighted_gram(drop, w, r)
        G, t = G + Ga - Gd, t + ta - td
        mask[add], mask[drop] = True, False
    B = np.flatnonzero(mask)
    if B.size == 0:
        return
    MB = M[np.ix_(B, B)]
    want = np.linalg.solve(MB, r[B])
    tol = 1e-12 * np.linalg.cond(MB) * max(1.0, float(np.abs(want).max())) + 1e-12
    assert np.allclose(_smw_solve(Q, G, t, B, r), want, atol=tol)
    # the rank-updated Gram matrix is the one built from the rows of B
    G0, t0 = Q.weighted_gram(B, w, r)
    assert np.allclose(G, G0, atol=1e-9 * max(1.0, float(np.abs(G0).max())))
    assert np.allclose(t, t0, atol=1e-9 * max(1.0, float(np.abs(t0).max())))


def test_factor_identity_plus_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    Q = DiagPlusLowRankQ(0.5, rng.standard_normal((40, 3)), bias=-1.0)
    B = np.arange(0, 40, 2)
    r = np.arange(40.0)
    G, t = Q.weighted_gram(B, 1.0 / Q.d, r)
    want = np.linalg.solve(_dense(Q)[np.ix_(B, B)], r[B])
    assert factor_identity_plus(G).chol is not None        # type: ignore[union-attr]

    def broken(*args: object, **kwargs: object) -> None:
        raise np.linalg.LinAlgError("forced")

    monkeypatch.setattr(lr.sla, "cho_factor", broken)
    assert factor_identity_plus(G, fallback=False) is None   # a caller with rank-updated G rebuilds first
    small = factor_identity_plus(G)
    assert small is not None and small.eig is not None and (small.eig[0] >= 1.0).all()
    assert np.allclose(_smw_solve(Q, G, t, B, r), want, rtol=1e-10, atol=1e-12)


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
