"""The incremental SVM on the abstract form (Laskov et al. 2006): the one-class and ν instances.

Every state reached by learn/unlearn/paths equals a batch solve: qpcore's dense reference of the
same problem, and LIBSVM (scikit-learn's OneClassSVM / NuSVC) where it defines the model.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qpcore.backends.operators import Kernel
from qpcore.core.problem import QP, ProblemError
from qpcore.testkit.reference import dense_reference
from qpcore_incremental.incremental import IncrementalNuSVC, IncrementalSVM
from qpcore_incremental.incremental_oneclass import IncrementalOneClass

RBF = Kernel("rbf", gamma=0.5)


def assert_solved(m: IncrementalSVM | IncrementalOneClass, rel: float = 1e-9) -> None:
    qp = m.qp()
    _, f_ref = dense_reference(qp)
    f = qp.objective(m._alpha[m._op.slots()])
    assert abs(f - f_ref) <= rel * max(1.0, abs(f_ref)), (f, f_ref)
    assert m.certificate().ok(max(m.tol, 1e-9)), m.certificate()


def blob(n: int, seed: int, d: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[: n // 6] *= 3.0                      # a few far points (outliers)
    X[n - 3:] = X[:3]                       # duplicates
    return X


# -- one-class ------------------------------------------------------------------------------------

def ocsvm(nu: float, X: np.ndarray, gamma: float = 0.5):  # type: ignore[no-untyped-def]
    svm = pytest.importorskip("sklearn.svm")
    return svm.OneClassSVM(nu=nu, gamma=gamma, tol=1e-12).fit(X)


@pytest.mark.parametrize("nu", [0.1, 0.5, 0.9])
def test_one_class_nu_one_by_one_equals_libsvm(nu: float) -> None:
    X = blob(40, int(nu * 10))
    m = IncrementalOneClass(RBF, nu=nu)
    m.learn_many(X)
    assert m.C == pytest.approx(1.0 / (nu * 40), rel=1e-15)
    assert_solved(m)
    sk = ocsvm(nu, X)
    a = np.zeros(40)
    a[sk.support_] = sk.dual_coef_[0]
    # duplicates (rows 37–39 repeat 0–2) share their α arbitrarily: compare the sums
    a[:3] += a[37:]
    ours = m.libsvm_alpha
    ours[:3] += ours[37:]
    np.testing.assert_allclose(ours[:37], a[:37], atol=1e-5)
    np.testing.assert_allclose(m.decision_function(X), sk.decision_function(X), atol=1e-6)
    np.testing.assert_allclose(m.score_samples(X), sk.score_samples(X), atol=1e-6)
    assert m.rho == pytest.approx(float(sk.offset_[0]), abs=1e-6)
    agree = np.abs(sk.decision_function(X)) > 1e-6
    np.testing.assert_array_equal(m.predict(X)[agree], sk.predict(X)[agree])
    batch = IncrementalOneClass(RBF, nu=nu).fit(X)
    ab, am = batch.alpha, m.alpha
    ab[:3] += ab[37:]                       # the duplicates' shares are not unique: their sums are
    am[:3] += am[37:]
    np.testing.assert_allclose(ab[:37], am[:37], atol=1e-9)
    assert batch.objective() == pytest.approx(m.objective(), rel=1e-12, abs=1e-15)


def test_one_class_unlearn_equals_batch_without_the_point() -> None:
    X = blob(30, 3)
    m = IncrementalOneClass(RBF, nu=0.3)
    ids = m.learn_many(X)
    keep = np.ones(30, dtype=bool)
    for k in (0, 7, 29):
        m.unlearn(int(ids[k]))
        keep[k] = False
        assert_solved(m)
        assert m.C == pytest.approx(1.0 / (0.3 * keep.sum()), rel=1e-15)
        sk = ocsvm(0.3, X[keep])
        np.testing.assert_allclose(m.decision_function(X), sk.decision_function(X), atol=1e-6)


def test_one_class_leave_one_out_equals_brute_force() -> None:
    X = blob(24, 5)
    m = IncrementalOneClass(RBF, nu=0.25)
    m.learn_many(X)
    alpha = m.alpha
    res = m.leave_one_out()
    np.testing.assert_array_equal(m.alpha, alpha)
    for i in range(24):
        keep = np.arange(24) != i
        f = float(ocsvm(0.25, X[keep]).decision_function(X[i:i + 1])[0])
        if abs(f) < 1e-6:
            continue
        assert res.error[i] == (f <= 0.0), (i, f, res.decision[i])
        if not np.isnan(res.decision[i]):
            assert res.decision[i] == pytest.approx(f, abs=1e-6)


def test_one_class_C_mode_buffers_until_feasible_and_svdd_form() -> None:
    X = blob(20, 7)
    poly = Kernel("poly", gamma=0.5, degree=2, coef0=1.0)
    m = IncrementalOneClass(poly, C=0.2, form="svdd")
    for k in range(4):
        m.learn(X[k])
        assert not m.ready
        with pytest.raises(ProblemError):
            m.decision_function(X[:1])
    m.learn(X[4])
    assert m.ready
    assert_solved(m)
    for k in range(5, 20):
        m.learn(X[k])
        assert_solved(m)
    # SVDD: the decision is ½(R² − ‖φ(x) − a‖²)/C, positive inside; its c is ½ diag K
    K = poly.block(X, X)
    qp = m.qp()
    np.testing.assert_allclose(-qp.c, 0.5 * np.diag(K))
    a = m.alpha
    d2 = np.diag(K) - 2 * K @ a + a @ K @ a
    R2 = a @ K @ a + 2 * m.bias
    np.testing.assert_allclose(m.decision_function(X), 0.5 * (R2 - d2) / m.C, atol=1e-9)
    with pytest.raises(ProblemError):
        IncrementalOneClass(poly, C=0.01).fit(X)


def test_one_class_paths_end_at_batch_solves() -> None:
    X = blob(30, 9)
    m = IncrementalOneClass(RBF, C=0.1)
    m.learn_many(X)
    bps = m.c_path(0.05)
    assert bps[-1].C == 0.05 and m.C == 0.05
    assert_solved(m)
    bps = m.c_path(0.5)
    assert_solved(m)
    m.nu_path(0.4)
    assert m.C == pytest.approx(1.0 / 12.0)
    sk = ocsvm(0.4, X)
    np.testing.assert_allclose(m.decision_function(X), sk.decision_function(X), atol=1e-6)


def test_one_class_window_every_state_solved() -> None:
    rng = np.random.default_rng(11)
    X = rng.standard_normal((40, 2))
    m = IncrementalOneClass(RBF, nu=0.2)
    seen: list[int] = []

    def check(model: IncrementalOneClass, k: int) -> None:
        assert model.certificate().ok(1e-9)
        seen.append(k)

    rep = m.window(X, 15, callback=check)
    assert rep.learned == 40 and rep.unlearned == 25 and m.n == 15 and len(seen) == 40
    sk = ocsvm(0.2, X[25:])
    np.testing.assert_allclose(m.decision_function(X), sk.decision_function(X), atol=1e-6)


# -- ν-SVC ----------------------------------------------------------------------------------------

def two_class(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = 1.0, -1.0
    X = rng.standard_normal((n, 2))
    X[:, 0] += 0.8 * y
    X[n - 2] = X[2]                          # a duplicate
    X[n - 1], y[n - 1] = X[3], -y[3]         # the same point with the opposite label
    return X, y


def nu_reference(X: np.ndarray, y: np.ndarray, nu: float) -> np.ndarray:
    """LIBSVM's ν-SVC dual: min ½αᵀQα, 0 ≤ α ≤ 1, Σ_{y=±1} α = ν l / 2 (qpcore's dense reference)."""
    Q = np.outer(y, y) * RBF.block(X, X)
    n = y.size
    A = np.vstack([(y > 0).astype(float), (y < 0).astype(float)])
    x, _ = dense_reference(QP(Q, np.zeros(n), np.zeros(n), np.ones(n), A, np.full(2, nu * n / 2)))
    return x


def assert_nu_state(m: IncrementalNuSVC, X: np.ndarray, y: np.ndarray) -> None:
    assert m.nu_reached
    assert m.current_nu() == pytest.approx(m.nu, rel=1e-12)
    ref = nu_reference(X, y, m.nu)
    Q = np.outer(y, y) * RBF.block(X, X)
    f_ref, f = 0.5 * ref @ Q @ ref, 0.5 * m.libsvm_alpha @ Q @ m.libsvm_alpha
    assert abs(f - f_ref) <= 1e-9 * max(1.0, f_ref)
    assert m.certificate().ok(max(m.tol * m.C, 1e-9))


@pytest.mark.parametrize("nu", [0.2, 0.5, 0.7])
def test_nu_svc_one_by_one_equals_batch(nu: float) -> None:
    X, y = two_class(40, int(nu * 10))
    m = IncrementalNuSVC(RBF, nu=nu)
    m.learn_many(X, y)
    assert_nu_state(m, X, y)
    assert np.all(m.libsvm_alpha <= 1.0) and m.libsvm_alpha.sum() == pytest.approx(nu * 40)
    batch = IncrementalNuSVC(RBF, nu=nu).fit(X, y)
    np.testing.assert_allclose(batch.decision_function(X), m.decision_function(X), atol=1e-7)


@pytest.mark.parametrize("nu", [0.3, 0.5])
def test_nu_svc_equals_libsvm(nu: float) -> None:
    svm = pytest.importorskip("sklearn.svm")
    rng = np.random.default_rng(int(nu * 100))
    y = np.where(rng.random(40) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((40, 2)) + 0.8 * y[:, None]
    m = IncrementalNuSVC(RBF, nu=nu)
    m.learn_many(X, y)
    sk = svm.NuSVC(nu=nu, gamma=0.5, tol=1e-12).fit(X, y)
    coef = np.zeros(40)
    coef[sk.support_] = sk.dual_coef_[0]
    np.testing.assert_allclose(m.dual_coef_, coef, atol=1e-6 * max(1.0, float(np.abs(coef).max())))
    assert m.intercept_ == pytest.approx(float(sk.intercept_[0]), abs=1e-6)
    np.testing.assert_allclose(m.decision_function(X), sk.decision_function(X), atol=1e-6)
    np.testing.assert_array_equal(m.predict(X), sk.predict(X))


def test_nu_svc_unlearn_and_nu_path() -> None:
    X, y = two_class(30, 4)
    m = IncrementalNuSVC(RBF, nu=0.4)
    ids = m.learn_many(X, y)
    keep = np.ones(30, dtype=bool)
    for k in (0, 5, 17):
        m.unlearn(int(ids[k]))
        keep[k] = False
        assert_nu_state(m, X[keep], y[keep])
    m.nu_path(0.7)
    assert m.nu == 0.7
    assert_nu_state(m, X[keep], y[keep])
    m.nu_path(0.3)
    assert_nu_state(m, X[keep], y[keep])


def test_nu_svc_leave_one_out_equals_brute_force() -> None:
    X, y = two_class(24, 8)
    m = IncrementalNuSVC(RBF, nu=0.5)
    m.learn_many(X, y)
    alpha, C = m.alpha, m.C
    res = m.leave_one_out()
    np.testing.assert_array_equal(m.alpha, alpha)
    assert m.C == C
    for i in range(24):
        keep = np.arange(24) != i
        mi = IncrementalNuSVC(RBF, nu=0.5).fit(X[keep], y[keep])
        f = float(mi.decision_function(X[i:i + 1])[0])
        if abs(f) < 1e-7:
            continue
        assert res.error[i] == ((f > 0) != (y[i] > 0))
        assert res.decision[i] == pytest.approx(f, abs=1e-7)


def test_nu_svc_infeasible_and_first_points() -> None:
    X, y = two_class(20, 1)
    m = IncrementalNuSVC(RBF, nu=0.5)
    m.learn(X[0], 1.0)
    assert not m.nu_reached                 # one class: ν infeasible, the C-SVC's state meanwhile
    m.learn(X[1], -1.0)
    assert m.nu_reached
    y1 = np.r_[np.ones(18), -np.ones(2)]
    with pytest.raises(ProblemError, match="infeasible"):
        IncrementalNuSVC(RBF, nu=0.5).fit(X, y1)
    with pytest.raises(ProblemError):
        IncrementalNuSVC(RBF, nu=1.5)
    with pytest.raises(ProblemError):
        IncrementalSVM(RBF, 1.0).fit(X, y).nu_path(0.0)


# -- properties ----------------------------------------------------------------------------------

@st.composite
def one_class_data(draw: st.DrawFn) -> tuple[np.ndarray, Kernel, float, str]:
    """Points with duplicates, a kernel, ν and the linear term's form."""
    n = draw(st.integers(3, 25))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.standard_normal((n, d))
    if draw(st.booleans()):
        X = X.round(1)
    for _ in range(draw(st.integers(0, n // 3))):
        i, j = rng.integers(0, n, size=2)
        X[j] = X[i]
    kernel = draw(st.sampled_from([Kernel("linear"), Kernel("rbf", gamma=0.5), Kernel("rbf", gamma=2.0),
                                   Kernel("poly", gamma=0.5, degree=2, coef0=1.0)]))
    return X, kernel, draw(st.floats(0.05, 1.0)), draw(st.sampled_from(["ocsvm", "svdd"]))


@given(one_class_data(), st.data())
def test_one_class_every_state_is_the_batch_optimum(data: tuple[np.ndarray, Kernel, float, str],
                                                    draw: st.DataObject) -> None:
    X, kernel, nu, form = data
    m = IncrementalOneClass(kernel, nu=nu, form=form)
    order = draw.draw(st.permutations(range(len(X))))
    ids = [m.learn(X[k]) for k in order]
    assert_solved(m)
    for pid in draw.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=2, unique=True)):
        if m.n > 1:
            m.unlearn(pid)
            assert_solved(m)


@given(st.integers(0, 2**32 - 1), st.floats(0.1, 0.9), st.data())
def test_nu_svc_every_reached_state_is_the_batch_optimum(seed: int, nu: float, draw: st.DataObject) -> None:
    X, y = two_class(int(draw.draw(st.integers(6, 24))), seed % 1000)
    m = IncrementalNuSVC(RBF, nu=nu)
    order = draw.draw(st.permutations(range(len(y))))
    for k in order:
        m.learn(X[k], y[k])
    held = np.asarray(order)
    if m.nu_reached:
        keep = np.sort(held)
        # the model's variables follow the learning order: compare the objective on that order
        ref = nu_reference(X[held], y[held], nu)
        Q = np.outer(y[held], y[held]) * RBF.block(X[held], X[held])
        f_ref, f = 0.5 * ref @ Q @ ref, 0.5 * m.libsvm_alpha @ Q @ m.libsvm_alpha
        assert abs(f - f_ref) <= 1e-8 * max(1.0, f_ref), (f, f_ref)
        assert keep.size == m.n
    elif m.feasible():
        # feasible by the class counts yet not reached: ν lies below every ν(C), where the
        # ν-SVC's optimum has w = 0 (objective 0)
        ref = nu_reference(X[held], y[held], nu)
        Q = np.outer(y[held], y[held]) * RBF.block(X[held], X[held])
        assert 0.5 * ref @ Q @ ref <= 1e-9
