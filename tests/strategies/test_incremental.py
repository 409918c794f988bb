"""The Cauwenberghs–Poggio incremental SVM: every state it reaches is the batch optimum."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qpcore.backends.operators import Kernel
from qpcore.testkit.reference import dense_reference
from qpcore_incremental.incremental import IncrementalSVM

REL = 1e-9


@st.composite
def svm_data(draw: st.DrawFn, min_n: int = 4, max_n: int = 30) -> tuple[np.ndarray, np.ndarray, Kernel, float]:
    """Random two-class data with duplicates and contradicting labels, a kernel and C in [1e-3, 1e3]."""
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    X = rng.standard_normal((n, d))
    X[:, 0] += 0.8 * y
    for _ in range(draw(st.integers(0, n // 3))):          # duplicates, same label
        i, j = rng.integers(2, n, size=2)
        X[j], y[j] = X[i], y[i]
    for _ in range(draw(st.integers(0, 2))):               # same point, opposite label
        i, j = rng.integers(2, n, size=2)
        X[j], y[j] = X[i], -y[i]
    if draw(st.booleans()):
        kernel = Kernel("rbf", gamma=draw(st.sampled_from([0.1, 0.5, 2.0])))
    else:
        kernel = Kernel("linear")
    C = 10.0 ** draw(st.floats(-3.0, 3.0))
    return X, y, kernel, C


def assert_batch_optimum(m: IncrementalSVM) -> None:
    """Objective within 1e-9 relative of the dense reference, and certified by qpcore.kkt."""
    qp = m.qp()
    _, f_ref = dense_reference(qp)
    f = qp.objective(m.alpha)
    assert abs(f - f_ref) <= REL * max(1.0, abs(f_ref)), (f, f_ref)
    cert = m.certificate()
    assert cert.ok(m.tol), cert


def two_classes(m: IncrementalSVM) -> bool:
    return len(set(m.y.tolist())) == 2


@given(svm_data())
def test_learning_one_by_one_gives_batch_optimum(data: Any) -> None:
    X, y, kernel, C = data
    m = IncrementalSVM(kernel, C)
    m.learn_many(X, y)
    assert_batch_optimum(m)
    # the margin and error sets agree with the reference where its optimum is strict
    qp = m.qp()
    x_ref, _ = dense_reference(qp)
    g = m.margin_function
    strict = np.abs(g) > 1e-6
    assert np.all((m.alpha[strict] > 0) == (x_ref[strict] > 1e-9 * C))


@given(svm_data(), st.data())
def test_unlearn_gives_batch_optimum_without_the_point(data: Any, draw: st.DataObject) -> None:
    X, y, kernel, C = data
    m = IncrementalSVM(kernel, C)
    ids = m.learn_many(X, y)
    for pid in draw.draw(st.lists(st.sampled_from(ids.tolist()), min_size=1, max_size=3, unique=True)):
        m.unlearn(pid)
        if two_classes(m):
            assert_batch_optimum(m)
    assert m.n == len(ids) - len(set(ids.tolist()) - set(m.ids.tolist()))


@given(svm_data(), st.floats(-2.0, 2.0))
def test_c_path_ends_at_batch_optimum(data: Any, log_ratio: float) -> None:
    X, y, kernel, C = data
    m = IncrementalSVM(kernel, C)
    m.learn_many(X, y)
    C1 = C * 10.0 ** log_ratio
    bps = m.c_path(C1)
    assert m.C == C1 and bps[-1].event == "end" and bps[-1].C == C1
    Cs = [b.C for b in bps]
    assert Cs == sorted(Cs, reverse=C1 < C)
    assert_batch_optimum(m)


@given(svm_data())
def test_batch_fit_polishes_to_the_exact_state(data: Any) -> None:
    X, y, kernel, C = data
    m = IncrementalSVM(kernel, C).fit(X, y)
    assert_batch_optimum(m)
    m.learn(X[0] + 0.1, y[0])          # the polished state is a valid start for the increments
    assert_batch_optimum(m)


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_leave_one_out_matches_brute_force(C: float) -> None:
    rng = np.random.default_rng(int(C * 10))
    n = 50
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n, 2))
    X[:, 0] += 0.8 * y
    kernel = Kernel("rbf", gamma=0.5)
    m = IncrementalSVM(kernel, C)
    m.learn_many(X, y)
    alpha, b = m.alpha, m.bias
    res = m.leave_one_out()
    np.testing.assert_array_equal(m.alpha, alpha)          # restored exactly
    assert m.bias == b and m.certificate().ok(m.tol)
    brute = 0
    for i in range(n):
        keep = np.arange(n) != i
        mi = IncrementalSVM(kernel, C).fit(X[keep], y[keep])
        f = float(mi.decision_function(X[i:i + 1])[0])
        assert abs(f) > 1e-6           # no ambiguous point in these draws
        wrong = (f > 0) != (y[i] > 0)
        brute += wrong
        assert res.error[i] == wrong
        if not np.isnan(res.decision[i]) and len(mi.margin_):   # b unique only with a margin vector
            assert res.decision[i] == pytest.approx(f, rel=1e-7, abs=1e-7)
    assert res.errors == brute


def test_leave_one_out_against_sklearn() -> None:
    svm = pytest.importorskip("sklearn.svm")
    rng = np.random.default_rng(7)
    n = 60
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n, 3))
    X[:, 0] += 0.8 * y
    m = IncrementalSVM(Kernel("rbf", gamma=0.3), 1.0)
    m.learn_many(X, y)
    brute = 0
    for i in range(n):
        keep = np.arange(n) != i
        f = svm.SVC(C=1.0, gamma=0.3, tol=1e-10).fit(X[keep], y[keep]).decision_function(X[i:i + 1])[0]
        brute += int((f > 0) != (y[i] > 0))
    assert m.leave_one_out().errors == brute


def test_sliding_window_every_model_certified() -> None:
    rng = np.random.default_rng(3)
    n = 120
    X = rng.standard_normal((n, 2))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, "spam", "ham")
    m = IncrementalSVM(Kernel("rbf", gamma=0.5), 2.0, classes=["ham", "spam"])
    worst: list[float] = []

    def check(model: IncrementalSVM, k: int) -> None:
        if two_classes(model):
            cert = model.certificate()
            assert cert.ok(model.tol), (k, cert)
            worst.append(cert.measure)

    rep = m.window(X, y, 25, callback=check)
    assert rep.learned == n and rep.unlearned == n - 25 and m.n == 25
    assert rep.throughput > 0 and len(worst) > 90
    assert set(m.predict(X).tolist()) <= {"ham", "spam"}
    assert_batch_optimum(m)


def test_special_cases() -> None:
    k = Kernel("rbf", gamma=1.0)
    m = IncrementalSVM(k, 1.0)
    a = m.learn([0.0, 0.0], 1)            # the first point: the bias alone moves
    assert m.certificate().ok(m.tol) and m.bias == pytest.approx(1.0)
    m.learn([0.0, 0.0], 1)                # a duplicate
    m.learn([0.0, 0.0], -1)               # the same point with the opposite label
    m.learn([1.0, 0.0], -1)
    m.learn([1.0, 0.0], -1)
    m.learn([1.0, 0.0], 1)
    assert_batch_optimum(m)
    m.unlearn(a)
    assert_batch_optimum(m)
    lin = IncrementalSVM(Kernel("linear"), 5.0)
    for x, lab in [([1.0], 1), ([2.0], 1), ([3.0], 1), ([-1.0], -1), ([-2.0], -1), ([1.0], -1), ([0.5], 1)]:
        lin.learn(x, lab)
        if two_classes(lin):
            assert_batch_optimum(lin)
    with pytest.raises(KeyError):
        lin.unlearn(999)


@pytest.mark.parametrize("C0, C1", [(10.0, 1.0), (1.0, 10.0), (10.0, 0.05)])
def test_c_path_margin_vector_heading_for_both_bounds(C0: float, C1: float) -> None:
    # C falling faster than a margin α falls: that α nears 0 and the ceiling w·C at once; the
    # nearer limit must win (the path once took the ceiling's and clipped α at 0, breaking yᵀα)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=100) > 0.3, 1.0, -1.0)
    m = IncrementalSVM(Kernel("rbf", gamma=0.5), C0)
    m.learn_many(X, y)
    bps = m.c_path(C1)
    assert m.C == C1 and len(bps) > 5
    assert_batch_optimum(m)


def test_learns_rows_of_sparse_arrays_and_matrices() -> None:
    """A row of a scipy.sparse array is 1-D (of a sparse matrix 2-D): both learn like dense rows."""
    import scipy.sparse as sp

    import qpcore
    from qpcore_incremental.incremental import IncrementalSVM

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    want = None
    for conv in (np.asarray, sp.csr_matrix, sp.csr_array):
        m = IncrementalSVM(kernel=qpcore.Kernel("rbf", gamma=0.5), C=1.0)
        m.learn_many(conv(X), y)
        got = m.decision_function(X)
        want = got if want is None else want
        np.testing.assert_allclose(got, want, atol=1e-12)
