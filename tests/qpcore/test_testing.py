"""qpcore.testing and problems.random: generated problems are valid, assert_kkt catches wrong points,
dense_reference is accurate."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpcore
from problems.random import (planted_qp, psd_matrix, random_box_qp, random_degenerate_qp, random_nonneg_qp,
                             random_one_sided_qp, random_svm_dual)
from qpcore import QP, DenseQ, Kernel, KernelQ, Result, State, Status, kkt
from qpcore.testing import assert_kkt, box_qps, dense_reference, nonneg_qps, planted_qps, qps, svm_duals


def min_eig(qp: QP) -> tuple[float, float]:
    Q = qp.Q.rows(np.arange(qp.n))
    w = np.linalg.eigvalsh(Q)
    return float(w[0]), float(w[-1])


def check_valid(qp: QP) -> None:
    assert isinstance(qp, QP)
    assert 1 <= qp.n <= 40
    lo, hi = min_eig(qp)
    assert lo >= -1e-10 * max(1.0, hi)  # convex
    assert np.all(qp.lb <= qp.ub)


def fake_result(qp: QP, x: np.ndarray, status: Status = Status.CONVERGED) -> Result:
    """A Result whose own certificate claims perfection, to check that assert_kkt ignores it."""
    cert = kkt(qp, x, g=np.zeros(qp.n))
    state = State(x=x, g=np.zeros(qp.n), status=qpcore.bound_status(x, qp.lb, qp.ub))
    return Result(x=x, multipliers=cert.multipliers, z=cert.z, status=status, objective=0.0, kkt=cert,
                  iterations=0, stats={}, state=state)


def test_import_qpcore_does_not_import_testing_or_hypothesis() -> None:
    code = ("import sys, qpcore; bad = [m for m in ('qpcore.testing', 'hypothesis') if m in sys.modules]; "
            "sys.exit(str(bad) if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- the hypothesis strategies -----------------------------------------------------------------

@given(qps())
def test_generated_problems_are_valid_and_bounded(qp: QP) -> None:
    check_valid(qp)
    x, f = dense_reference(qp)  # raises if the problem were unbounded
    assert np.isfinite(f)
    k = kkt(qp, x)
    assert k.primal <= 1e-9 * max(1.0, float(np.abs(x).max()))


@given(svm_duals())
def test_svm_duals_have_svm_form(qp: QP) -> None:
    check_valid(qp)
    assert qp.m == 1 and qp.n >= 2
    y = qp.A[0]
    assert set(np.unique(y)) == {-1.0, 1.0}
    np.testing.assert_array_equal(qp.b, [0.0])
    assert np.all(qp.lb == 0.0)
    C = qp.ub[0]
    assert np.all(qp.ub == C) and 1e-3 * (1 - 1e-12) <= C <= 1e3 * (1 + 1e-12)


@given(nonneg_qps())
def test_nonneg_qps_shape(qp: QP) -> None:
    check_valid(qp)
    assert qp.m == 0 and np.all(qp.lb == 0.0) and np.all(qp.ub == np.inf)


@given(box_qps(one_sided=False, degenerate=False, max_cond=10.0, rank_deficient=False))
def test_box_qps_options_restrict_the_draw(qp: QP) -> None:
    check_valid(qp)
    assert qp.m == 0 and np.isfinite(qp.lb).all() and np.isfinite(qp.ub).all()
    lo, hi = min_eig(qp)
    assert hi / lo <= 10.0 * (1 + 1e-8)


@given(box_qps(min_cond=1e6, max_cond=1e8, rank_deficient=False, one_sided=False, degenerate=False))
def test_box_qps_ill_conditioned(qp: QP) -> None:
    lo, hi = min_eig(qp)
    assert 1e6 * (1 - 1e-3) <= hi / lo <= 1e8 * (1 + 1e-3)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_strategies_reject_bad_options() -> None:
    with pytest.raises(ValueError, match="cond"):
        box_qps(min_cond=10.0, max_cond=1.0).example()
    with pytest.raises(ValueError, match="kernels"):
        svm_duals(kernels=("poly",)).example()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n"):
        nonneg_qps(min_n=5, max_n=2).example()


@settings(max_examples=15)
@given(planted_qps(max_n=20))
def test_dense_reference_finds_planted_optimum(pair: tuple[QP, np.ndarray]) -> None:
    qp, x_star = pair
    x, f = dense_reference(qp)
    f_star = qp.objective(x_star)
    assert f == pytest.approx(f_star, rel=1e-9, abs=1e-9)
    k = kkt(qp, x)
    assert k.measure <= 1e-8 * (1 + float(np.abs(qp.c).max()))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::PendingDeprecationWarning")
def test_dense_reference_matches_osqp() -> None:
    osqp = pytest.importorskip("osqp")
    import scipy.sparse as sp

    for seed in range(4):
        qp = random_svm_dual(25, seed=seed, C=10.0, duplicates=3) if seed % 2 else random_box_qp(25, seed=seed, cond=1e4)
        Q = qp.Q.rows(np.arange(qp.n))
        cons = sp.csc_matrix(np.vstack([np.eye(qp.n), qp.A]))
        lo = np.concatenate([qp.lb, qp.b])
        hi = np.concatenate([qp.ub, qp.b])
        m = osqp.OSQP()
        m.setup(sp.csc_matrix(np.triu(Q)), qp.c, cons, lo, hi, eps_abs=1e-11, eps_rel=1e-11, max_iter=100000,
                polish=True, verbose=False)
        xo = np.clip(m.solve().x, qp.lb, qp.ub)
        x, f = dense_reference(qp)
        assert f == pytest.approx(qp.objective(xo), rel=1e-8, abs=1e-10)
        assert f <= qp.objective(xo) + 1e-12 * (1 + abs(f))


# SVM duals on which Mehrotra's predictor-corrector cycled (complementarity stuck near 1e-2, the
# first one found by hypothesis in svm_duals(max_n=24, max_cond=1e6)); objectives from OSQP
# (eps 1e-11, polished), which agree to 1e-14
STALLED_SVM_DUALS = [
    (dict(n=17, seed=17, C=1000.0, kernel="rbf", d=4), -48.0837913053695),
    (dict(n=4, seed=246, C=1000.0, cond=275.59176546811443, kernel="linear", d=7), -0.1650599180143179),
    (dict(n=35, seed=153, C=1e-3, duplicates=19, kernel="linear", d=2), -0.031454087034401675),
    (dict(n=31, seed=136, C=212.50126295919063, duplicates=8, kernel="rbf", d=3), -134.4757881473031),
]


@pytest.mark.parametrize(("params", "f_star"), STALLED_SVM_DUALS)
def test_dense_reference_where_mehrotra_cycled(params: Any, f_star: float) -> None:
    qp = random_svm_dual(**params)
    x, f = dense_reference(qp)
    assert f == pytest.approx(f_star, rel=1e-9)
    assert f == pytest.approx(qp.objective(x))
    k = kkt(qp, x)
    assert k.measure <= 1e-9 and k.primal <= 1e-12 * max(1.0, float(np.abs(x).max()))


@pytest.mark.parametrize(("params", "f_star"), STALLED_SVM_DUALS)
def test_dense_reference_active_set_alone(params: Any, f_star: float) -> None:
    # max_iter=0: the interior-point method does nothing, the active-set method starts mid-box
    x, f = dense_reference(random_svm_dual(**params), max_iter=0)
    assert f == pytest.approx(f_star, rel=1e-9)


@settings(max_examples=15)
@given(planted_qps(max_n=20))
def test_dense_reference_active_set_alone_finds_planted_optimum(pair: tuple[QP, np.ndarray]) -> None:
    qp, x_star = pair
    x, f = dense_reference(qp, max_iter=0)
    assert f == pytest.approx(qp.objective(x_star), rel=1e-9, abs=1e-9)
    k = kkt(qp, x)
    assert k.measure <= 1e-8 * (1 + float(np.abs(qp.c).max()))
    assert k.primal <= 1e-12 * max(1.0, float(np.abs(x).max()))


def test_dense_reference_on_kernel_operator_and_fixed_variables() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 3))
    y = np.where(np.arange(12) % 2 == 0, 1.0, -1.0)
    ub = np.ones(12)
    ub[[2, 5]] = 0.0  # lb = ub = 0: fixed
    qp = QP(KernelQ(X, Kernel("rbf", gamma=0.5), scale=y), -np.ones(12), 0.0, ub, y, 0.0)
    x, f = dense_reference(qp)
    assert x[2] == 0.0 and x[5] == 0.0
    assert kkt(qp, x).measure <= 1e-9
    assert f == pytest.approx(qp.objective(x))


def test_dense_reference_raises_on_unbounded() -> None:
    qp = QP(np.zeros((2, 2)), [-1.0, 0.0], 0.0, np.inf)
    with pytest.raises(RuntimeError, match="unbounded"):
        dense_reference(qp)


# --- assert_kkt --------------------------------------------------------------------------------

def test_assert_kkt_passes_at_the_optimum() -> None:
    qp, x_star = planted_qp(10, seed=0, svm_form=True, ub=2.0)
    assert_kkt(qp, fake_result(qp, x_star), 1e-10)


def test_assert_kkt_fails_on_a_wrong_point_whatever_the_result_claims() -> None:
    qp, x_star = planted_qp(10, seed=0, svm_form=True, ub=2.0)
    res = fake_result(qp, np.zeros(10))
    assert res.kkt.measure == 0.0  # the result's own (made-up) certificate is perfect
    with pytest.raises(AssertionError, match=r"maximal-violating-pair gap\) 5\.4\d*e\+00 > tol .*maximal violating pair i="):
        assert_kkt(qp, res, 1e-6)


def test_assert_kkt_names_the_worst_variable_of_a_box_qp() -> None:
    qp = QP(np.eye(3), [-0.5, 2.0, -3.0], -1.0, 1.0)
    with pytest.raises(AssertionError, match=r"projected-gradient norm\) 3\.500e\+00.*worst variable i=2"):
        assert_kkt(qp, fake_result(qp, np.array([0.5, -1.0, -0.5])), 1e-6)


def test_assert_kkt_tolerance_has_tiny_slack() -> None:
    qp = QP(np.eye(1), [0.0], -1.0, 1.0)
    x = np.array([1e-3])  # measure exactly 1e-3
    assert_kkt(qp, fake_result(qp, x), 1e-3)
    with pytest.raises(AssertionError, match="KKT measure"):
        assert_kkt(qp, fake_result(qp, x), 0.999e-3)


def test_assert_kkt_requires_convergence() -> None:
    qp, x_star = planted_qp(6, seed=1)
    with pytest.raises(AssertionError, match=r"status is 'max_iter'"):
        assert_kkt(qp, fake_result(qp, x_star, Status.MAX_ITER), 1e-6)


def test_assert_kkt_primal_infeasibility() -> None:
    qp, x_star = planted_qp(6, seed=1, svm_form=True, ub=1.0)
    x = x_star.copy()
    x[0] = -0.5
    with pytest.raises(AssertionError, match=r"primal infeasibility 5\.000e-01.*bound at i=0"):
        assert_kkt(qp, fake_result(qp, x), 1e6)
    with pytest.raises(AssertionError, match=r"A x = b"):
        x = np.zeros(6)
        i = int(np.flatnonzero(qp.A[0] > 0)[0])
        x[i] = 0.5  # inside the box, off the equality
        assert_kkt(qp, fake_result(qp, x), 1e6)


def test_assert_kkt_nonfinite_and_shape() -> None:
    qp = QP(np.eye(2), [0.0, 0.0])
    with pytest.raises(AssertionError, match="not finite"):
        assert_kkt(qp, fake_result(qp, np.array([np.nan, 0.0])), 1.0)
    with pytest.raises(AssertionError, match="shape"):
        assert_kkt(qp, fake_result(QP(np.eye(3), np.zeros(3)), np.zeros(3)), 1.0)


# --- the generators ----------------------------------------------------------------------------

@pytest.mark.parametrize("cond", [1.0, 1e3, 1e8])
def test_psd_matrix_spectrum(cond: float) -> None:
    w = np.linalg.eigvalsh(psd_matrix(20, seed=0, cond=cond))
    assert w[-1] == pytest.approx(1.0) and w[0] == pytest.approx(1.0 / cond, rel=1e-6)
    r = np.linalg.eigvalsh(psd_matrix(20, seed=0, cond=cond, rank=7))
    assert np.sum(r > 1e-12) == 7 and abs(r[0]) < 1e-12


def test_generators_are_deterministic() -> None:
    makers: list[Callable[[int], QP]] = [
        lambda s: random_box_qp(8, seed=s), lambda s: random_svm_dual(8, seed=s, duplicates=2),
        lambda s: random_nonneg_qp(8, seed=s), lambda s: random_one_sided_qp(8, seed=s),
        lambda s: random_degenerate_qp(8, seed=s, svm_form=True)]
    for make in makers:
        a, b, c = make(3), make(3), make(4)
        np.testing.assert_array_equal(a.Q.rows(np.arange(8)), b.Q.rows(np.arange(8)))
        np.testing.assert_array_equal(a.c, b.c)
        assert not np.array_equal(a.Q.rows(np.arange(8)), c.Q.rows(np.arange(8)))


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_svm_dual_form_and_duplicates(kernel: Any) -> None:
    qp = random_svm_dual(20, seed=5, C=3.0, duplicates=6, kernel=kernel)
    assert isinstance(qp.Q, DenseQ)
    y = qp.A[0]
    np.testing.assert_array_equal(qp.c, -np.ones(20))
    assert set(y) == {-1.0, 1.0} and np.all(qp.ub == 3.0) and np.all(qp.lb == 0.0)
    Q = qp.Q.rows(np.arange(20))
    K = Q * np.outer(y, y)
    assert np.all(np.diag(K) >= 0)
    # six copies: at most 14 distinct rows, bit-for-bit identical
    assert np.unique(K, axis=0).shape[0] <= 14


def test_svm_dual_rbf_condition_number() -> None:
    for cond in (1e2, 1e6):
        qp = random_svm_dual(25, seed=1, cond=cond)
        w = np.linalg.eigvalsh(qp.Q.rows(np.arange(25)))
        assert w[-1] / w[0] == pytest.approx(cond, rel=0.05)


def test_svm_dual_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="duplicates"):
        random_svm_dual(5, seed=0, duplicates=4)
    with pytest.raises(ValueError, match="C"):
        random_svm_dual(5, seed=0, C=0.0)
    with pytest.raises(ValueError, match="kernel"):
        random_svm_dual(5, seed=0, kernel="poly")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cond"):
        random_box_qp(5, seed=0, cond=0.5)
    with pytest.raises(ValueError, match="rank"):
        random_box_qp(5, seed=0, rank=6)


def test_nonneg_and_one_sided_bounds() -> None:
    qp = random_nonneg_qp(10, seed=0, rank=3)
    assert np.all(qp.lb == 0) and np.all(qp.ub == np.inf)
    sides: list[Any] = ["lower", "upper", "mixed"]
    for side in sides:
        qp = random_one_sided_qp(12, seed=2, side=side, rank=4)
        assert np.all(np.isfinite(qp.lb) != np.isfinite(qp.ub))
        if side == "lower":
            assert np.all(qp.ub == np.inf)
        if side == "upper":
            assert np.all(qp.lb == -np.inf)


@given(st.integers(0, 2**32 - 1), st.booleans())
def test_degenerate_optimum_has_zero_multipliers_at_bounds(seed: int, svm_form: bool) -> None:
    qp, x = planted_qp(15, seed=seed, degenerate=1.0, svm_form=svm_form, ub=1.0, p_bound=0.7)
    k = kkt(qp, x)
    at_bound = (x <= qp.lb) | (x >= qp.ub)
    assert at_bound.any()
    assert np.abs(k.z[at_bound]).max() <= 1e-10
    assert k.measure <= 1e-10 and k.primal <= 1e-12


def test_singular_box_qp_with_open_side_is_bounded() -> None:
    qp = random_box_qp(12, seed=0, rank=3, lb=0.0, ub=np.inf)
    x, f = dense_reference(qp)
    assert np.isfinite(f) and kkt(qp, x).measure <= 1e-9
