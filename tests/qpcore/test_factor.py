"""BorderedCholesky against dense solves after random sequences of appends and deletes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qpcore.linalg.factor import BorderedCholesky, Dependence, Factor
from qpcore.backends.operators import DenseQ
from qpcore.core.problem import ProblemError


def _kernel_problem(kind: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Q = yyᵀ∘K and y for one of several conditioning regimes."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    if kind == "rbf":
        X = rng.normal(size=(n, 4))
        K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    elif kind == "ill":
        # small γ: K close to the all-ones matrix, eigenvalues spread over many decades
        X = rng.normal(size=(n, 3))
        K = np.exp(-1e-3 * ((X[:, None] - X[None]) ** 2).sum(-1))
    elif kind == "linear":
        # rank 3: more than 4 members makes Q_SS singular; the bordered matrix stays regular up to 4
        X = rng.normal(size=(n, 3))
        K = X @ X.T
    else:  # duplicates: pairs of identical points, some with the opposite label
        X = rng.normal(size=(n // 2 + 1, 3))
        X = np.vstack([X, X])[:n]
        K = np.exp(-0.5 * ((X[:, None] - X[None]) ** 2).sum(-1))
    return K * np.outer(y, y), y


def _check(f: BorderedCholesky, Q: np.ndarray, a: np.ndarray | None, rng: np.random.Generator) -> None:
    m = f.members
    if m.size == 0:
        return
    B = Q[np.ix_(m, m)]
    np.testing.assert_allclose(f.block(), B, atol=1e-8 * max(1.0, np.abs(B).max()))
    r = rng.normal(size=m.size)
    t = float(rng.normal())
    x, mu = f.solve_kkt(r, t)
    if a is None:
        resid = B @ x - r
        ref = np.linalg.lstsq(B, r, rcond=None)[0]
    else:
        K = np.block([[B, a[m, None]], [a[None, m], np.zeros((1, 1))]])
        resid = K @ np.r_[x, mu] - np.r_[r, t]
        ref = np.linalg.solve(K, np.r_[r, t])[:-1]
    cond = np.linalg.cond(B if a is None else K)
    scale = 1.0 + np.abs(ref).max()
    # backward error small; forward error within the conditioning
    assert np.abs(resid).max() <= 1e-9 * scale * max(1.0, np.abs(B).max()) * max(1.0, cond) ** 0.5
    assert np.abs(x - ref).max() <= 1e-10 * cond * scale + 1e-9 * scale


@given(kind=st.sampled_from(["rbf", "ill", "linear", "duplicates"]), seed=st.integers(0, 2**31 - 1),
       ops=st.lists(st.tuples(st.booleans(), st.integers(0, 10**6)), min_size=1, max_size=120),
       equality=st.booleans())
def test_random_appends_and_deletes_match_dense_solves(kind: str, seed: int, ops: list[tuple[bool, int]],
                                                        equality: bool) -> None:
    n = 30
    Q, y = _kernel_problem(kind, n, seed)
    a = y if equality else None
    f = BorderedCholesky(a, capacity=4)
    rng = np.random.default_rng(seed + 1)
    S: list[int] = []
    for add, k in ops:
        if add or not S:
            i = k % n
            if i in S:
                continue
            dep = f.add(i, Q[f.members, i], Q[i, i])
            if dep is None:
                S.append(i)
            else:
                # a refusal is only right when the bordered matrix with i really is singular
                assert isinstance(dep, Dependence)
                mm = dep.members
                v = dep.direction
                assert v[-1] == 1.0 and mm[-1] == i
                qn = max(1.0, np.abs(Q).max())
                assert np.abs(Q[np.ix_(mm, mm)] @ v).max() <= 1e-4 * qn * np.abs(v).max()
                if a is not None:
                    assert abs(a[mm] @ v) <= 1e-4 * np.abs(v).max()
        else:
            i = S.pop(k % len(S))
            f.remove(i)
        assert sorted(f.members.tolist()) == sorted(S)
        _check(f, Q, a, rng)


def test_linear_kernel_bordered_matrix_regular_beyond_rank_of_Q() -> None:
    # d = 3 features: Q_SS has rank ≤ 3, yet with the border up to d + 1 = 4 members are regular
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 3))
    y = np.where(rng.random(20) < 0.5, -1.0, 1.0)
    Q = (X @ X.T) * np.outer(y, y)
    f = BorderedCholesky(y)
    added = 0
    dep = None
    for i in range(20):
        dep = f.add(i, Q[f.members, i], Q[i, i])
        if dep is not None:
            break
        added += 1
    assert added == 4
    assert dep is not None and dep.index == 4
    assert np.linalg.matrix_rank(Q[np.ix_(f.members, f.members)]) == 3   # Q_SS itself singular


def test_same_point_opposite_label_is_regular_same_label_is_dependent() -> None:
    x = np.array([[0.3, 1.0], [0.3, 1.0], [0.3, 1.0]])
    K = np.exp(-((x[:, None] - x[None]) ** 2).sum(-1))
    y = np.array([1.0, -1.0, 1.0])
    Q = K * np.outer(y, y)
    f = BorderedCholesky(y)
    assert f.add(0, Q[f.members, 0], Q[0, 0]) is None
    # (0, 1): Q_SS = [[1, −1], [−1, 1]] singular, but v = (1, 1) has yᵀv = 0 … and Qv = 0: dependent
    dep = f.add(1, Q[f.members, 1], Q[1, 1])
    assert dep is not None
    np.testing.assert_allclose(dep.direction, [1.0, 1.0], atol=1e-12)
    dep2 = f.add(2, Q[f.members, 2], Q[2, 2])
    assert dep2 is not None   # duplicate with the same label: v = (−1, 1)
    np.testing.assert_allclose(dep2.direction, [-1.0, 1.0], atol=1e-12)


def test_no_equality_solves_the_block() -> None:
    rng = np.random.default_rng(0)
    A = rng.normal(size=(12, 12))
    Q = A @ A.T + np.eye(12)
    f = BorderedCholesky(None, DenseQ(Q))
    for i in (5, 1, 7, 3):
        assert f.add(i) is None        # columns read from the operator
    x, mu = f.solve_kkt(np.ones(4))
    assert mu == 0.0
    m = f.members
    np.testing.assert_allclose(Q[np.ix_(m, m)] @ x, np.ones(4), rtol=1e-10)
    f.remove(1)
    np.testing.assert_allclose(Q[np.ix_(f.members, f.members)] @ f.solve(np.ones(3)), np.ones(3), rtol=1e-10)


def test_refactor_and_growth() -> None:
    rng = np.random.default_rng(1)
    A = rng.normal(size=(50, 60))
    Q = A @ A.T / 60
    y = np.where(rng.random(50) < 0.5, -1.0, 1.0)
    f = BorderedCholesky(y, capacity=4)
    for i in range(40):
        assert f.add(i, Q[f.members, i], Q[i, i]) is None
    m = f.members[::2]
    f.refactor(Q[np.ix_(m, m)], m)
    assert f.size == 20 and f.counters["refactors"] == 1
    x, mu = f.solve_kkt(np.ones(20), 0.5)
    K = np.block([[Q[np.ix_(m, m)], y[m, None]], [y[None, m], np.zeros((1, 1))]])
    np.testing.assert_allclose(K @ np.r_[x, mu], np.r_[np.ones(20), 0.5], atol=1e-9)
    with pytest.raises(ProblemError):
        f.solve_kkt(np.ones(3))
    with pytest.raises(ValueError):
        f.remove(999)


def test_the_factor_satisfies_the_protocol() -> None:
    assert isinstance(BorderedCholesky(None), Factor)


def test_equality_row_given_per_variable() -> None:
    # data that grow with the block: no global row a, each add passes its a_i
    rng = np.random.default_rng(2)
    A = rng.normal(size=(8, 10))
    Q = A @ A.T
    y = np.array([1.0, -1.0] * 4)
    ref = BorderedCholesky(y)
    f = BorderedCholesky(equality=True)
    for i in range(6):
        assert ref.add(i, Q[ref.members, i], Q[i, i]) is None
        assert f.add(i, Q[f.members, i], Q[i, i], a_i=y[i]) is None
    for fac in (f, ref):
        fac.remove(2)
    np.testing.assert_allclose(f.solve_kkt(np.ones(5), 0.2)[0], ref.solve_kkt(np.ones(5), 0.2)[0], rtol=1e-10)
    m = f.members
    f.refactor(Q[np.ix_(m, m)])
    np.testing.assert_allclose(f.solve_kkt(np.ones(5), 0.2)[1], ref.solve_kkt(np.ones(5), 0.2)[1], rtol=1e-10)
    with pytest.raises(ValueError, match="a_i"):
        f.add(7, Q[f.members, 7], Q[7, 7])


def test_matvec_is_the_block_product() -> None:
    Q, y = _kernel_problem("rbf", 40, 4)
    f = BorderedCholesky(y, capacity=8)
    for i in range(25):
        assert f.add(i, Q[f.members, i], Q[i, i]) is None
    for i in (3, 17, 0):
        f.remove(i)
    m = f.members
    d = np.random.default_rng(0).normal(size=m.size)
    np.testing.assert_allclose(f.matvec(d), Q[np.ix_(m, m)] @ d, atol=1e-12)
    assert BorderedCholesky(None).matvec(np.zeros(0)).size == 0


@given(seed=st.integers(0, 10_000), n0=st.integers(0, 12), k=st.integers(1, 8), equality=st.booleans())
def test_block_append_equals_appends_one_by_one(seed: int, n0: int, k: int, equality: bool) -> None:
    rng = np.random.default_rng(seed)
    n = n0 + k
    B = rng.standard_normal((n, n + 3))
    Q = B @ B.T
    a = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    one, blk = (BorderedCholesky(a if equality else None) for _ in range(2))
    for i in range(n):
        assert one.add(i, col=Q[:i, i], diag=Q[i, i]) is None
    for i in range(n0):
        assert blk.add(i, col=Q[:i, i], diag=Q[i, i]) is None
    new = np.arange(n0, n)
    assert blk.add_block(new, Q[:n0][:, new], Q[np.ix_(new, new)])
    assert np.array_equal(blk.members, one.members)
    np.testing.assert_allclose(blk.block(), one.block(), rtol=1e-9, atol=1e-9 * np.abs(Q).max())
    r = rng.standard_normal(n)
    x1, m1 = one.solve_kkt(r, 0.3)
    x2, m2 = blk.solve_kkt(r, 0.3)
    np.testing.assert_allclose(x2, x1, rtol=1e-7, atol=1e-7 * np.abs(x1).max())
    assert m2 == pytest.approx(m1, rel=1e-7, abs=1e-9)


def test_block_append_refuses_a_dependent_block_and_changes_nothing() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 3))
    X = np.vstack([X, X[2]])               # a duplicate point: variables 2 and 5 are dependent
    Q = X @ X.T + np.diag([1.0, 1, 0, 1, 1, 0])
    fac = BorderedCholesky(np.ones(6))
    for i in range(3):
        assert fac.add(i, col=Q[:i, i], diag=Q[i, i]) is None
    before = fac.block().copy()
    new = np.array([3, 4, 5])
    assert not fac.add_block(new, Q[:3][:, new], Q[np.ix_(new, new)])
    assert np.array_equal(fac.members, [0, 1, 2])
    np.testing.assert_array_equal(fac.block(), before)
