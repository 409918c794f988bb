"""qpcore_train.multiclass: the assembled one-vs-one / one-vs-rest model equals its binary problems
solved one by one, and predicts by LIBSVM's vote."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore_train.multiclass import problems_of, train_multiclass, votes
from qpcore_formulations.svm import csvc
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore_strategies.smo import SMO


def _blobs(seed: int, n: int, k: int, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    X = rng.standard_normal((n, d)) + 1.5 * np.eye(k, d)[y]
    return X, y


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(8, 45), k=st.integers(2, 4),
       scheme=st.sampled_from(["ovo", "ovr"]), dup=st.booleans())
def test_model_equals_its_binary_problems(seed: int, n: int, k: int, scheme: str, dup: bool) -> None:
    X, y = _blobs(seed, n, k)
    if dup:
        X[n // 2:] = X[: n - n // 2]
    kern = Kernel("rbf", gamma=0.5)
    C = np.full(n, 2.0)
    tr = train_multiclass(X, y, np.arange(k), C, kern, SMO(), scheme=scheme, tol=1e-8)
    m = tr.model
    assert m.pairs.shape == problems_of(k, scheme).shape
    # support vectors grouped by class, each group ascending
    assert np.all(np.diff(m.support_class) >= 0)
    for c in range(k):
        assert np.all(np.diff(m.support[m.support_class == c]) > 0)
    raw = m.raw(X)
    for p, (i, j) in enumerate(m.pairs):
        rows = tr.rows[p]
        prob = csvc(X[rows], np.where(y[rows] == i, 1.0, -1.0), C[rows], kern)
        res = qpcore.solve(prob.qp, SMO(), tol=1e-8)
        alone = prob.decode(res).decision_function(X)
        np.testing.assert_allclose(raw[:, p], alone, atol=1e-5)
        # the dual of each problem is feasible: 0 ≤ α ≤ C and Σ y α = 0
        assert np.all(np.abs(m.D[:, p]) <= 2.0 * (1 + 1e-12))
        assert abs(m.D[:, p].sum()) <= 1e-9 * n
        assert tr.results[p].status.code == "converged"
    pred = m.predict_index(raw)
    if k == 2:
        np.testing.assert_array_equal(pred, np.where(raw[:, 0] > 0, 0, 1))
    elif m.scheme == "ovo":
        np.testing.assert_array_equal(pred, np.argmax(votes(raw, m.pairs, k), axis=1))
    else:
        np.testing.assert_array_equal(pred, np.argmax(raw, axis=1))


def test_votes_tie_goes_to_the_second_class_and_lowest_index() -> None:
    pairs = problems_of(3, "ovo")
    raw = np.array([[0.0, 1.0, -1.0]])      # 0-1: 0 → class 1; 0-2: class 0; 1-2: class 2
    np.testing.assert_array_equal(votes(raw, pairs, 3), [[1, 1, 1]])


def test_precomputed_and_refusals() -> None:
    X, y = _blobs(0, 30, 3)
    G = X @ X.T
    lin = train_multiclass(X, y, np.arange(3), np.ones(30), Kernel("linear"), SMO(), tol=1e-9).model
    pre = train_multiclass(G, y, np.arange(3), np.ones(30), Kernel("precomputed"), SMO(), tol=1e-9).model
    assert pre.sv is None
    np.testing.assert_allclose(pre.raw(G), lin.raw(X), atol=1e-6)
    with pytest.raises(ProblemError, match="two classes"):
        train_multiclass(X, np.zeros(30, dtype=np.intp), np.arange(1), np.ones(30), Kernel("linear"), SMO())
    C = np.ones(30)
    C[y != 0] = 0.0                          # only class 0 keeps a nonzero C
    with pytest.raises(ProblemError, match="two classes"):
        train_multiclass(X, y, np.arange(3), C, Kernel("linear"), SMO())


def test_binary_model_predicts_from_a_precomputed_block() -> None:
    """qpcore_formulations.svm's own model: fit on the Gram matrix, predict from K(test, train), as SVC does."""
    X, y = _blobs(1, 60, 2)
    tr, te = np.arange(30), np.arange(30, 60)
    kern = Kernel("rbf", gamma=0.3)
    direct = csvc(X[tr], y[tr], 1.0, kern)
    m_direct = direct.decode(qpcore.solve(direct.qp, SMO(), tol=1e-9))
    pre = csvc(kern.block(X[tr], X[tr]), y[tr], 1.0, Kernel("precomputed"))
    m_pre = pre.decode(qpcore.solve(pre.qp, SMO(), tol=1e-9))
    K_test = kern.block(X[te], X[tr])
    np.testing.assert_allclose(m_pre.decision_function(K_test), m_direct.decision_function(X[te]), atol=1e-7)
    np.testing.assert_array_equal(m_pre.predict(K_test), m_direct.predict(X[te]))
    with pytest.raises(ProblemError, match="one column per training point"):
        m_pre.decision_function(K_test[:, :-1])


def test_linear_binary_squared_hinge_scaling_and_refusals() -> None:
    """The squared hinge through ASVM with intercept scaling β: the optimum of
    ½(‖w‖² + v²) + C Σ max(0, 1 − y(xᵀw + βv))², checked by its stationarity in (w, v)."""
    from qpcore_train.multiclass import linear_binary
    from qpcore_strategies.asvm import ASVM

    X, y = _blobs(2, 80, 2, d=3)
    for beta in (1.0, 0.3, 5.0):
        w, b, res = linear_binary(X, y, 2.0, ASVM(), squared_hinge=True, bias=beta, tol=1e-10)
        assert res.status.code == "converged"
        ypm = np.where(y == 1, 1.0, -1.0)
        xi = np.maximum(0.0, 1.0 - ypm * (X @ w + b))
        v = b / beta
        grad_w = w - 2.0 * 2.0 * (ypm * xi) @ X
        grad_v = v - 2.0 * 2.0 * beta * float(ypm @ xi)
        assert np.abs(grad_w).max() <= 1e-6 * max(1.0, np.abs(w).max()) and abs(grad_v) <= 1e-6 * max(1.0, abs(v))
    # per-example C_i (zeros included: those rows leave the dual) is the diagonal d_i = 1/(2 C_i β²):
    # the same stationarity with C_i inside the sums
    Ci = np.linspace(0.01, 4.0, 80)
    Ci[::7] = 0.0
    for beta in (1.0, 0.3):
        w, b, res = linear_binary(X, y, Ci, ASVM(), squared_hinge=True, bias=beta, tol=1e-10)
        assert res.status.code == "converged" and res.x.shape == (int((Ci > 0).sum()),)
        ypm = np.where(y == 1, 1.0, -1.0)
        xi = np.maximum(0.0, 1.0 - ypm * (X @ w + b))
        v = b / beta
        grad_w = w - 2.0 * (Ci * ypm * xi) @ X
        grad_v = v - 2.0 * beta * float((Ci * ypm) @ xi)
        assert np.abs(grad_w).max() <= 1e-6 * max(1.0, np.abs(w).max()) and abs(grad_v) <= 1e-6 * max(1.0, abs(v))
    with pytest.raises(ProblemError, match="C: must be finite, ≥ 0"):
        linear_binary(X, y, -np.linspace(1, 2, 80), ASVM(), squared_hinge=True)
    with pytest.raises(ProblemError, match="bias must be > 0"):
        linear_binary(X, y, 1.0, ASVM(), squared_hinge=True, bias=0.0)
