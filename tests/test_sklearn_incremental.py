"""IncrementalSVC: every state it reaches is the batch C-SVC optimum (partial_fit in batches,
unlearn, exact leave-one-out against brute-force refits), scikit-learn's estimator checks, and
input validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from qpcore import QP, DenseQ, Kernel, kkt
from qpcore.testkit.reference import dense_reference
from qpcore_sklearn import KernelSVC
from qpcore_sklearn.incremental import IncrementalSVC


@parametrize_with_checks([IncrementalSVC(), IncrementalSVC(kernel="linear", fit_method="incremental")])
def test_sklearn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)


@pytest.fixture(scope="module")
def cancer() -> tuple[np.ndarray, np.ndarray, float]:
    """300 breast-cancer points, standardized, and the 'scale' gamma of the whole set as a float."""
    X, y = load_breast_cancer(return_X_y=True)
    idx = np.random.default_rng(0).permutation(y.size)[:300]
    X = StandardScaler().fit_transform(X[idx])
    return X, y[idx], 1.0 / (X.shape[1] * X.var())


def _same_model(ours: IncrementalSVC, ref: Any, X: np.ndarray, atol: float = 1e-6) -> None:
    """Same decision values, support set (SVC's order: by class, then index), coefficients, bias.

    Against LIBSVM (sklearn's SVC) ``atol`` is 1e-6 on the decision values and 10·atol on the
    coefficients: LIBSVM caches kernel rows in single precision, which moves α by a few 1e-6 even
    at tol = 1e-10; qpcore's KernelSVC at tol = 1e-12 agrees to 1e-11.
    """
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=atol)
    np.testing.assert_array_equal(ours.support_, ref.support_)
    np.testing.assert_array_equal(ours.n_support_, ref.n_support_)
    np.testing.assert_allclose(ours.dual_coef_, ref.dual_coef_, atol=10 * atol)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=atol)
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


@pytest.mark.parametrize("sizes", [[300], [1, 7, 42, 100, 150], [60] * 5])
def test_partial_fit_in_batches_equals_batch_fit(cancer: Any, sizes: list[int]) -> None:
    X, y, gamma = cancer
    ref = SVC(C=1.0, gamma=gamma, tol=1e-10).fit(X, y)
    m = IncrementalSVC(C=1.0, gamma=gamma)
    s = 0
    for k in sizes:
        m.partial_fit(X[s:s + k], y[s:s + k], classes=np.array([0, 1]))
        s += k
    assert s == y.size and m.shape_fit_ == X.shape
    _same_model(m, ref, X)
    assert m.certificate().ok(1e-8)
    # the other anchor: qpcore's own batch SVC, and fit() through both routes
    _same_model(m, KernelSVC(C=1.0, gamma=gamma, tol=1e-12).fit(X, y), X, atol=1e-9)
    for method in ("batch", "incremental"):
        _same_model(IncrementalSVC(C=1.0, gamma=gamma, fit_method=method).fit(X, y), m, X, atol=1e-10)


def test_partial_fit_continues_a_fit_and_scale_gamma_is_frozen_at_the_first_batch(cancer: Any) -> None:
    X, y, _ = cancer
    first = X[:100]
    g0 = 1.0 / (X.shape[1] * first.var())
    m = IncrementalSVC(C=3.0).fit(first, y[:100])           # gamma="scale" from these 100 points
    m.partial_fit(X[100:200], y[100:200]).partial_fit(X[200:], y[200:], classes=[0, 1])
    _same_model(m, SVC(C=3.0, gamma=g0, tol=1e-10).fit(X, y), X)
    _same_model(m, KernelSVC(C=3.0, gamma=g0, tol=1e-12).fit(X, y), X, atol=1e-9)


def test_unlearn_equals_fit_without_the_points(cancer: Any) -> None:
    X, y, gamma = cancer
    X, y = X[:150], y[:150]
    ref = SVC(C=1.0, gamma=gamma, tol=1e-10).fit(X, y)
    at_c = np.flatnonzero(np.abs(ref.dual_coef_[0]) >= 1.0 - 1e-9)
    free = np.flatnonzero(np.abs(ref.dual_coef_[0]) < 1.0 - 1e-9)
    assert at_c.size and free.size
    non_sv = np.setdiff1d(np.arange(y.size), ref.support_)
    # a margin vector, an error vector, a non-support vector, then two at once (one negative index)
    for drop in ([int(ref.support_[free[0]])], [int(ref.support_[at_c[0]])], [int(non_sv[0])],
                 [3, -1]):
        m = IncrementalSVC(C=1.0, gamma=gamma).fit(X, y)
        m.unlearn(drop)
        keep = np.delete(np.arange(y.size), drop)
        _same_model(m, SVC(C=1.0, gamma=gamma, tol=1e-10).fit(X[keep], y[keep]), X)
        np.testing.assert_array_equal(m.support_vectors_, X[keep][m.support_])
        assert m.shape_fit_ == (keep.size, X.shape[1])
    # in sequence: indices refer to the current training set
    m = IncrementalSVC(C=1.0, gamma=gamma).fit(X, y)
    pos = np.arange(y.size)
    for i in (int(ref.support_[free[1]]), 0, 70, int(ref.support_[at_c[-1]]) - 3):
        m.unlearn(i)
        pos = np.delete(pos, i)
    _same_model(m, SVC(C=1.0, gamma=gamma, tol=1e-10).fit(X[pos], y[pos]), X)


@pytest.mark.parametrize("C", [0.3, 3.0])
def test_exact_leave_one_out_equals_brute_force_refits(C: float) -> None:
    rng = np.random.default_rng(int(10 * C))
    n = 50
    yy = np.where(rng.random(n) < 0.5, "b", "a")
    X = rng.standard_normal((n, 2))
    X[:, 0] += 0.8 * (yy == "b")
    m = IncrementalSVC(C=C, gamma=0.5).fit(X, yy)
    before = m.decision_function(X)
    loo = m.leave_one_out()
    np.testing.assert_array_equal(m.decision_function(X), before)       # the model is restored exactly
    assert m.certificate().ok(1e-8)
    brute = np.empty(n)
    for i in range(n):
        keep = np.arange(n) != i
        brute[i] = SVC(C=C, gamma=0.5, tol=1e-10).fit(X[keep], yy[keep]).decision_function(X[i:i + 1])[0]
    assert np.abs(brute).min() > 1e-4                 # no ambiguous point in this draw
    np.testing.assert_array_equal(loo.predictions, np.where(brute > 0, "b", "a"))
    np.testing.assert_allclose(loo.decision, brute, atol=1e-6)
    assert loo.errors == int(((brute > 0) != (yy == "b")).sum()) > 0
    assert m.loo_score() == pytest.approx(loo.score) == pytest.approx(np.mean(loo.correct))
    # the early-stopping route to the score agrees with the full one
    assert IncrementalSVC(C=C, gamma=0.5).fit(X, yy).loo_score() == pytest.approx(loo.score)


@st.composite
def _stream(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, float, str, list[tuple[str, Any]]]:
    """Two-class data (with duplicates and a contradicting pair), C, a kernel, and a random
    sequence of partial_fit batches and unlearn calls."""
    n = draw(st.integers(6, 36))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = np.where(rng.random(n) < 0.5, 1, -1)
    X = rng.standard_normal((n, d))
    X[:, 0] += 0.8 * y
    for _ in range(draw(st.integers(0, n // 4))):
        i, j = rng.integers(0, n, size=2)
        X[j], y[j] = X[i], y[i]
    if draw(st.booleans()):
        i, j = rng.integers(0, n, size=2)
        X[j], y[j] = X[i], -y[i]
    C = 10.0 ** draw(st.floats(-2.0, 2.0))
    kernel = draw(st.sampled_from(["rbf", "linear"]))
    ops: list[tuple[str, Any]] = []
    s, held = 0, 0
    while s < n:
        k = draw(st.integers(1, n - s))
        ops.append(("fit", (s, s + k)))
        s += k
        held += k
        if held > 1 and draw(st.booleans()):
            drop = draw(st.lists(st.integers(0, held - 1), min_size=1, max_size=min(3, held - 1), unique=True))
            ops.append(("unlearn", drop))
            held -= len(drop)
    return X, y, C, kernel, ops


@given(_stream())
def test_random_partial_fit_and_unlearn_sequences_stay_at_the_batch_optimum(data: Any) -> None:
    X, y, C, kernel, ops = data
    m = IncrementalSVC(C=C, kernel=kernel, gamma=0.5)
    pos = np.zeros(0, dtype=np.intp)                 # rows of X in the current training set, in order
    for op, arg in ops:
        if op == "fit":
            m.partial_fit(X[arg[0]:arg[1]], y[arg[0]:arg[1]], classes=[-1, 1])
            pos = np.concatenate([pos, np.arange(arg[0], arg[1])])
        else:
            m.unlearn(arg)
            pos = np.delete(pos, arg)
    Xc, yc = X[pos], y[pos].astype(float)
    n = pos.size
    np.testing.assert_array_equal(m.support_vectors_, Xc[m.support_])
    # the dual point, read from SVC's attributes alone, is feasible ...
    alpha = np.zeros(n)
    alpha[m.support_] = np.abs(m.dual_coef_[0])
    np.testing.assert_array_equal(np.sign(m.dual_coef_[0]), yc[m.support_])
    assert (alpha >= 0).all() and (alpha <= C).all()
    assert abs(yc @ alpha) <= 1e-10 * max(1.0, C * n)
    # ... optimal: the objective of an independent dense solve, and a certificate from the problem
    K = Kernel(kernel, gamma=0.5).block(Xc, Xc)
    qp = QP(DenseQ(np.outer(yc, yc) * K), -np.ones(n), np.zeros(n), np.full(n, C), yc[None, :], np.zeros(1))
    _, f_ref = dense_reference(qp)
    assert qp.objective(alpha) <= f_ref + 1e-9 * max(1.0, abs(f_ref))
    assert kkt(qp, alpha).ok(1e-7 * max(1.0, C))
    # ... and the bias is consistent with it: y f(x) = 1 on free vectors, ≥ 1 at 0, ≤ 1 at C
    yf = yc * m.decision_function(Xc)
    eps = 1e-7 * max(1.0, C * float(np.abs(K).max()) * n)
    free = (alpha > 1e-9 * C) & (alpha < C * (1 - 1e-9))
    assert np.all(np.abs(yf[free] - 1) <= eps)
    assert np.all(yf[alpha == 0] >= 1 - eps)
    assert np.all(yf[alpha >= C * (1 - 1e-9)] <= 1 + eps)


def test_a_first_batch_of_one_class_and_string_labels() -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 2))
    y = np.where(X[:, 0] > 0, "spam", "ham")
    order = np.argsort(y, kind="stable")             # all "ham" first
    X, y = X[order], y[order]
    m = IncrementalSVC(gamma=1.0).partial_fit(X[:10], y[:10], classes=["spam", "ham"])
    assert list(m.classes_) == ["ham", "spam"] and (m.predict(X[:10]) == "ham").all()
    m.partial_fit(X[10:], y[10:])
    _same_model(m, SVC(gamma=1.0, tol=1e-10).fit(X, y), X)


def test_bad_input() -> None:
    X = np.random.default_rng(0).standard_normal((12, 2))
    y = np.array([0, 1] * 6)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        IncrementalSVC().fit(bad, y)
    with pytest.raises(ValueError, match="NaN"):
        IncrementalSVC().partial_fit(bad, y, classes=[0, 1])
    with pytest.raises(ValueError, match="Only binary"):
        IncrementalSVC().fit(X, np.arange(12) % 3)
    with pytest.raises(ValueError, match="Only binary"):
        IncrementalSVC().partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="classes must be passed"):
        IncrementalSVC().partial_fit(X, y)
    with pytest.raises(ValueError, match="not among"):
        IncrementalSVC().partial_fit(X, y, classes=[0, 2])
    m = IncrementalSVC().partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match="not among"):
        m.partial_fit(X[:2], np.array([1, 5]))
    with pytest.raises(ValueError, match="not the same"):
        m.partial_fit(X[:2], y[:2], classes=[0, 2])
    with pytest.raises(ValueError, match="1 class"):
        IncrementalSVC().fit(X, np.zeros(12))
    for C in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="C must be"):
            IncrementalSVC(C=C).fit(X, y)
        with pytest.raises(ValueError, match="C must be"):
            IncrementalSVC(C=C).partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError, match="kernel"):
        IncrementalSVC(kernel="precomputed").fit(X, y)
    with pytest.raises(ValueError, match="gamma"):
        IncrementalSVC(gamma=-1.0).fit(X, y)
    for idx in ([12], [-13], [1, 1], [0.5], list(range(12))):
        with pytest.raises(ValueError, match="indices"):
            m.unlearn(idx)
    assert m.shape_fit_ == (12, 2)                     # nothing was removed by the failed calls
