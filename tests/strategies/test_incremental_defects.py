"""Regressions of the incremental SVM's defects (issue 25) and its guard against uncertified states."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from qpcore.backends.operators import Kernel
from qpcore.testkit.reference import dense_reference
from qpcore_incremental.incremental import IncrementalSVM


def assert_optimal(m: IncrementalSVM, rel: float = 1e-9) -> None:
    qp = m.qp()
    _, f_ref = dense_reference(qp)
    f = qp.objective(m.alpha)
    assert abs(f - f_ref) <= rel * max(1.0, abs(f_ref)), (f, f_ref)
    cert = m.certificate()
    assert cert.ok(m.tol), cert


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging) when the block runs longer than ``seconds``."""
    if sys.platform == "win32":
        yield
        return

    def fire(*_: object) -> None:
        raise TimeoutError(f"ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_second_class_arrives_after_three_of_the_first() -> None:
    # with one class seen, every point sits at g = 0 (α = 0, b = 1): a tie the first negative
    # point breaks; taking the ties one at a time let a point cross its bound unnoticed
    # (α = (0, 0, 0.4, 0.4), KKT measure 0.35)
    m = IncrementalSVM(Kernel("linear"), 0.4)
    for x, lab in [([0.6, 1.5], 1), ([0.8, -0.3], 1), ([0.5, 0.3], 1), ([-0.3, 1.1], -1)]:
        m.learn(x, lab)
    assert_optimal(m)
    assert m.stats["ties"] >= 1


def test_one_class_then_the_other_random_draws() -> None:
    rng = np.random.default_rng(0)
    for _ in range(60):
        d = int(rng.integers(1, 3))
        k = int(rng.integers(2, 5))
        X = rng.standard_normal((k + 2, d)).round(1)
        y = np.r_[np.ones(k), -np.ones(2)]
        m = IncrementalSVM(Kernel("linear"), 0.4)
        for i in range(k + 2):
            m.learn(X[i], y[i])
        assert_optimal(m)


def test_near_duplicates_and_contradictory_labels() -> None:
    # points 0, 3, 4 coincide (4 to 1e-7) with labels +, −, +: a degenerate vertex whose events,
    # taken one at a time with the zero-step block, ended at a KKT measure of 7e-3
    X = np.array([[-0.27374478815675657, 0.23181085815390728], [-0.7775465122994599, 0.41225176908421896],
                  [-1.4599486353188647, 0.4664293236558085], [-0.27374478815675657, 0.23181085815390728],
                  [-0.27374465076469623, 0.23181086176796964], [0.36050161962623284, -0.05524509080174243],
                  [-0.05426218676437943, -1.48680188297737], [-1.8979169157429885, 1.2615890637044733]])
    y = np.array([1, 1, 1, -1, 1, 1, -1, -1])
    m = IncrementalSVM(Kernel("rbf", gamma=0.1), 0.25)
    for i in range(len(y)):
        m.learn(X[i], y[i])
        if i >= 3:
            assert_optimal(m)


def test_near_duplicates_random_draws() -> None:
    rng = np.random.default_rng(1)
    for _ in range(25):
        n = int(rng.integers(5, 20))
        X = rng.standard_normal((n, 2))
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        y[:2] = 1.0, -1.0
        for _ in range(n // 3):
            i, j = rng.integers(0, n, 2)
            X[j] = X[i] + 1e-7 * rng.standard_normal(2) * rng.integers(0, 2)
            y[j] = y[i] if rng.random() < 0.5 else -y[i]
        m = IncrementalSVM(Kernel("rbf", gamma=float(rng.choice([0.1, 0.5, 2.0]))), 0.25)
        m.learn_many(X, y)
        if len(set(y.tolist())) == 2:
            assert_optimal(m)


X_POLY = np.array([
    -0.08850503660355542, 0.16009030002886393, -0.07434439205850371, -1.0173334091236028, 0.8665798234085362,
    0.7205393289487745, 1.2898365242331404, 1.384948156829288, -1.3439678262752042, 1.285511286548568,
    1.2977346737804971, -0.5322431935575963, 1.0374046058699675, 1.4682311715954466, -0.5388355035053808,
    -1.3787593492234531, -0.35953652621000887, 2.7927070644123453, 0.2362604528002979, -1.2142094517444664,
    -0.25294727240699827, -0.9940522145966545, -0.3992805958166949, 0.09514411855683473, -2.5615970049418655,
    0.3604007814793848, 1.414669637031431, -0.19736880534650283, -0.3826949229049677, 1.093590445914832,
    -1.2666386260594742, -1.2458901811085736, -1.390536062696525, -0.15737795686565786, 0.39402697761720096,
    -0.0905729440598697, 0.5497762232980942, 0.8307471999624526, 0.49658526727151686, -0.808653806541262,
    -0.2680876891363307, 1.2482471952104277, -1.0466865932236276, -0.2534237044859402, -0.4172738136648339])[:, None]
Y_POLY = np.array([-1, -1, 1, -1, 1, 1, 1, 1, -1, 1, 1, -1, 1, -1, -1, -1, -1, 1, 1, -1, -1, -1, -1, -1, -1, 1, 1,
                   -1, -1, 1, -1, -1, -1, 1, 1, 1, 1, -1, 1, -1, -1, 1, -1, 1, -1])


def test_batch_fit_on_an_ill_conditioned_cubic_kernel_is_bounded() -> None:
    # a rank-4 kernel (cubic in one dimension) with Q_ii up to 4.6e3 and C = 620: the batch solve's
    # absolute 1e-8 lay below the gradient's rounding and SMO never stopped; a polish from a rough
    # point then let violators join M with their g set to 0 by fiat (a silently wrong state)
    kernel = Kernel("poly", gamma=2.0, degree=3, coef0=1)
    with time_limit(20):
        m = IncrementalSVM(kernel, 620.0).fit(X_POLY, Y_POLY)
    assert_optimal(m)
    with time_limit(60):
        m.learn([0.3], 1)
        m.unlearn(int(m.ids[0]))
    assert_optimal(m)


@pytest.mark.parametrize("iters", [300, 1000])
def test_polish_from_a_rough_point_is_exact(iters: int) -> None:
    # the polish (M = the free α, then exact repairs) must turn any feasible point into the optimum;
    # it once let the violators not yet repaired join M with g = 0 by fiat (KKT measure 27 and 1.2)
    from qpcore.core.solve import solve
    from qpcore_strategies.smo import SMO

    m = IncrementalSVM(Kernel("poly", gamma=2.0, degree=3, coef0=1), 620.0)
    y = Y_POLY.astype(np.float64)
    m._encode(y)
    sl = m._append_many(X_POLY, y, np.full(y.size, 620.0), 1.0)
    res = solve(m.qp(), SMO(), tol=1e-8, max_iter=iters)
    m._polish(sl, np.asarray(res.x), -float(res.multipliers[0]))
    m._ensure("test")
    assert m.stats["guards"] == 0       # exact without the guard's help
    assert_optimal(m)


def test_the_guard_repairs_a_corrupted_state() -> None:
    rng = np.random.default_rng(2)
    X = rng.standard_normal((30, 2))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(30) > 0, 1.0, -1.0)
    m = IncrementalSVM(Kernel("rbf", gamma=0.5), 1.0)
    m.learn_many(X, y)
    sl = m._op.slots()
    e = sl[m._status[sl] == 2]
    assert e.size
    # the O(n) check sees a wrong-signed maintained g and re-derives the state
    m._g[e[0]] = 0.5
    m._ensure("test")
    assert m.stats["guards"] == 1
    assert_optimal(m)
    # drift the maintained quantities cannot show (the bias): the periodic recomputation (here after
    # every operation) re-derives b and g, and the check then holds on the recomputed values
    m.refresh_every = 1
    m._b += 1e-3
    m.learn(X[0] + 0.05, y[0])
    assert_optimal(m)


def test_nu_svc_batch_fit_on_far_blobs() -> None:
    # points around (100, 100) (scikit-learn's check_fit_check_is_fitted data): the RBF exponent
    # −γ(‖x‖² + ‖y‖² − 2x·y) loses digits to cancellation, so every kernel entry carries ~1e-11 and
    # g = Qα − c + ab that times ‖α‖₁ (≈ 3e4 at the C of ν = 0.5); the guard's tolerance ignored it
    # and refused the batch fit's correct state (violation 8.0e-9 > 6.2e-9 after the C path to ν)
    from qpcore_incremental.incremental import IncrementalNuSVC

    rng = np.random.RandomState(42)
    X = rng.normal(loc=100, size=(100, 2))
    y = np.where(rng.randint(low=0, high=2, size=100) == 1, 1.0, -1.0)
    kernel = Kernel("rbf", gamma=1 / (2 * X.var()))
    # the operator declares that error (row_eps), and it bounds the entries' distance to K computed
    # from centred points (RBF is translation invariant: no cancellation there)
    from qpcore.backends.dynamic import DynamicKernelQ

    op = DynamicKernelQ(kernel)
    op.append(X, y)
    Xc = X - X.mean(0)
    exact = np.exp(-kernel.gamma * ((Xc[:, None, :] - Xc[None, :, :]) ** 2).sum(-1)) * np.outer(y, y)
    assert op.row_eps > 1e4 * np.finfo(np.float64).eps
    assert float(np.abs(op.rows(np.arange(100)) - exact).max()) <= op.row_eps
    batch = IncrementalNuSVC(kernel, nu=0.5).fit(X, y)
    inc = IncrementalNuSVC(kernel, nu=0.5).fit(X, y, method="incremental")
    assert batch.stats["guards"] == 0 and inc.stats["guards"] == 0
    for m in (batch, inc):
        assert m.current_nu() == pytest.approx(0.5, rel=1e-9)
        qp = m.qp()
        _, f_ref = dense_reference(qp)
        assert qp.objective(m.alpha) == pytest.approx(f_ref, rel=1e-10)
        assert m.certificate().ok(1e-6)
    assert batch.C == pytest.approx(inc.C, rel=1e-8)
    np.testing.assert_allclose(batch.decision_function(X), inc.decision_function(X), atol=1e-6)
    # the widened tolerance (about 1e-6 here) still catches a wrong state: a wrong-signed g of an
    # error vector, or α of a margin vector off by 1e-4, is found and re-derived
    sl = batch._op.slots()
    e = sl[batch._status[sl] == 2]
    batch._g[e[0]] = 1e-4
    batch._ensure("test")
    assert batch.stats["guards"] == 1
    mv = sl[batch._status[sl] == 1]
    batch._alpha[mv[0]] += 1e-4
    batch._ensure("test")
    assert batch.stats["guards"] == 2
    qp = batch.qp()
    assert qp.objective(batch.alpha) == pytest.approx(dense_reference(qp)[1], rel=1e-10)
