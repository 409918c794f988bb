"""The KKT certificate: zero at known optima, the expected violation elsewhere, LIBSVM's gap and rho."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore.testkit.generators import planted_qp, random_svm_dual
from qpcore import QP, kkt
from qpcore.testkit.testing import planted_qps

# min ½‖x‖² + cᵀx over [−1, 1]³: x* = clip(−c) = (0.5, −1, 1), g* = x* + c = (0, 1, −2)
C3 = np.array([-0.5, 2.0, -3.0])
BOX = QP(np.eye(3), C3, -1.0, 1.0)
XSTAR = np.array([0.5, -1.0, 1.0])


def test_known_box_optimum_has_measure_zero() -> None:
    k = kkt(BOX, XSTAR)
    assert (k.primal, k.stationarity, k.complementarity, k.measure) == (0.0, 0.0, 0.0, 0.0)
    assert k.gap == k.stationarity  # no equality: the gap is the projected-gradient norm
    np.testing.assert_array_equal(k.z, [0.0, 1.0, -2.0])  # bound multipliers: ≥ 0 at lb, ≤ 0 at ub
    assert k.multipliers.shape == (0,)
    assert k.ok(1e-12)


@pytest.mark.parametrize("delta", [1e-3, 0.25])
def test_perturbed_free_variable(delta: float) -> None:
    k = kkt(BOX, XSTAR + [delta, 0.0, 0.0])
    assert k.stationarity == pytest.approx(delta)
    assert k.measure == pytest.approx(delta)
    assert k.primal == 0.0
    # the positive reduced gradient δ reads as a multiplier of lb = −1, at distance 1.5 + δ
    assert k.complementarity == pytest.approx(delta * (1.5 + delta))


@pytest.mark.parametrize("delta", [1e-3, 0.25])
def test_variable_moved_off_its_bound(delta: float) -> None:
    # x1 leaves lb = −1: its gradient 1 + δ is no longer balanced by a bound multiplier
    k = kkt(BOX, XSTAR + [0.0, delta, 0.0])
    assert k.stationarity == pytest.approx(1.0 + delta)
    assert k.complementarity == pytest.approx((1.0 + delta) * delta)
    assert k.primal == 0.0
    assert not k.ok(0.5)


def test_wrong_sign_at_a_bound() -> None:
    # x0 at its upper bound with gradient 1 − 0.5 = 0.5 > 0: decreasing it lowers the objective
    x = np.array([1.0, -1.0, 1.0])
    assert kkt(BOX, x).stationarity == pytest.approx(0.5)


@pytest.mark.parametrize("delta", [1e-6, 0.5])
def test_primal_infeasibility_of_bounds(delta: float) -> None:
    k = kkt(BOX, XSTAR + [0.0, -delta, 0.0])
    assert k.primal == pytest.approx(delta)


def test_primal_infeasibility_of_equality() -> None:
    qp = QP(np.eye(3), np.zeros(3), 0.0, 1.0, [1.0, 1.0, 1.0], 1.5)
    assert kkt(qp, np.array([0.5, 0.5, 0.5])).primal == 0.0
    assert kkt(qp, np.array([0.5, 0.5, 0.75])).primal == pytest.approx(0.25)


def test_equality_optimum_measure_zero() -> None:
    # min ½‖x‖² s.t. x0 + x1 = 1 over [0, 1]²: x* = (½, ½), λ = ½
    qp = QP(np.eye(2), np.zeros(2), 0.0, 1.0, [1.0, 1.0], 1.0)
    k = kkt(qp, np.array([0.5, 0.5]))
    assert k.measure == 0.0 and k.primal == 0.0 and k.stationarity == 0.0
    np.testing.assert_allclose(k.multipliers, [0.5])
    # moving along the constraint: gradient (½+δ, ½−δ), the pair violates by 2δ
    assert kkt(qp, np.array([0.6, 0.4])).gap == pytest.approx(0.2)


@given(planted_qps(max_n=25))
def test_planted_optima_certify(pair: tuple[QP, np.ndarray]) -> None:
    qp, x = pair
    k = kkt(qp, x)
    scale = 1.0 + float(np.abs(qp.c).max())
    assert k.primal <= 1e-12 * (1.0 + float(np.abs(x).max()))
    assert k.measure <= 1e-12 * scale
    assert k.complementarity <= 1e-12 * scale * (1.0 + float(np.abs(x).max()))


def test_planted_degenerate_optimum() -> None:
    qp, x = planted_qp(30, seed=11, degenerate=1.0, p_bound=0.6)
    k = kkt(qp, x)
    # every bound is active with a zero multiplier: the reduced gradient vanishes everywhere
    assert np.abs(k.z).max() <= 1e-12
    assert k.measure <= 1e-12


# --- LIBSVM's measures on the SVM dual ---------------------------------------------------------

def libsvm_gap_and_rho(y: np.ndarray, alpha: np.ndarray, G: np.ndarray, C: float) -> tuple[float, float]:
    """m(α) − M(α) and rho exactly as LIBSVM's Solver::select_working_set / calculate_rho do."""
    at_up, at_low = alpha >= C, alpha <= 0
    I_up = ((y > 0) & ~at_up) | ((y < 0) & ~at_low)
    I_low = ((y > 0) & ~at_low) | ((y < 0) & ~at_up)
    m_ = float(np.max(-y[I_up] * G[I_up], initial=-np.inf))
    M_ = float(np.min(-y[I_low] * G[I_low], initial=np.inf))
    yG = y * G
    free = ~at_up & ~at_low
    if free.any():
        rho = float(yG[free].mean())
    else:
        ub_mask = (at_up & (y < 0)) | (at_low & (y > 0))
        lb_mask = (at_up & (y > 0)) | (at_low & (y < 0))
        rho = 0.5 * (float(yG[ub_mask].min(initial=np.inf)) + float(yG[lb_mask].max(initial=-np.inf)))
    return m_ - M_, rho


@given(seed=st.integers(0, 2**32 - 1), C=st.sampled_from([1e-3, 1.0, 1e3]), n=st.integers(4, 30),
       frac_bound=st.sampled_from([0.0, 0.5, 1.0]))
def test_gap_and_rho_match_libsvm_formulas(seed: int, C: float, n: int, frac_bound: float) -> None:
    qp = random_svm_dual(n, seed=seed, C=C)
    y = qp.A[0]
    rng = np.random.default_rng(seed)
    alpha = rng.uniform(0.0, C, n)
    at = rng.random(n) < frac_bound
    alpha[at] = np.where(rng.random(int(at.sum())) < 0.5, 0.0, C)
    G = qp.gradient(alpha)
    gap, rho = libsvm_gap_and_rho(y, alpha, G, C)
    k = kkt(qp, alpha)
    if np.isfinite(gap):
        assert k.gap == pytest.approx(gap, rel=1e-12, abs=1e-12 * C)
    else:  # no pair can move (e.g. one class entirely at one bound): optimal as far as the pair rule sees
        assert k.gap == 0.0
    assert k.measure == max(k.gap, 0.0)
    if np.isfinite(rho):
        assert k.multipliers[0] == pytest.approx(rho, rel=1e-12, abs=1e-12)
    else:  # LIBSVM's rho is ±inf when one side of its interval is empty; ours takes the finite end
        assert np.isfinite(k.multipliers[0])


def test_rho_midpoint_without_free_variables() -> None:
    qp = random_svm_dual(10, seed=5, C=1.0)
    y = qp.A[0]
    alpha = np.where(np.arange(10) % 3 == 0, 1.0, 0.0)
    G = qp.gradient(alpha)
    _, rho = libsvm_gap_and_rho(y, alpha, G, 1.0)
    assert kkt(qp, alpha).multipliers[0] == pytest.approx(rho)


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_against_libsvm_itself(kernel: str) -> None:
    """scikit-learn's SVC (LIBSVM) solves the same dual; its α is optimal and its rho is ours."""
    svm = pytest.importorskip("sklearn.svm")
    qp = random_svm_dual(60, seed=3, C=1.0, kernel=kernel)  # type: ignore[arg-type]
    y = qp.A[0]
    K = qp.Q.rows(np.arange(60)) * np.outer(y, y)
    clf = svm.SVC(C=1.0, kernel="precomputed", tol=1e-8, shrinking=False).fit(K, y)
    alpha = np.zeros(60)
    alpha[clf.support_] = np.abs(clf.dual_coef_[0])
    k = kkt(qp, alpha)
    # LIBSVM keeps Q in single precision, so its gradient (and the gap it stopped at) is ours to ~1e-7
    assert k.measure <= 1e-5
    assert k.primal <= 1e-8
    # LIBSVM's decision function is Σ α_i y_i K(x_i, ·) − rho; scikit-learn reports −rho as the intercept
    assert k.multipliers[0] == pytest.approx(-clf.intercept_[0], abs=1e-5)


def test_gap_with_a_zero_coefficient_counts_its_projected_gradient() -> None:
    # a variable outside the equality (a_i = 0) is judged by its own projected gradient
    qp = QP(np.eye(3), [0.0, 0.0, -0.5], 0.0, 1.0, [1.0, -1.0, 0.0], 0.0)
    assert kkt(qp, np.array([0.0, 0.0, 0.5])).measure == 0.0
    assert kkt(qp, np.array([0.0, 0.0, 0.2])).measure == pytest.approx(0.3)


def test_multi_row_equality_measure_is_stationarity() -> None:
    qp = QP(np.eye(3), np.zeros(3), -1.0, 1.0, [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]], [1.0, 1.0])
    # x* = (1/3, 2/3, 1/3) minimizes ‖x‖² on the two planes
    k = kkt(qp, np.array([1.0, 2.0, 1.0]) / 3.0)
    assert k.measure == k.stationarity
    assert k.measure <= 1e-15 and k.primal <= 1e-15


def test_fixed_variable_is_never_a_violation() -> None:
    qp = QP(np.eye(2), [5.0, 0.0], [0.0, -1.0], [0.0, 1.0])
    assert kkt(qp, np.array([0.0, 0.0])).measure == 0.0


def test_complementarity_ignores_infinite_bounds() -> None:
    qp = QP(np.eye(2), np.zeros(2))
    k = kkt(qp, np.array([1e-12, 0.0]))
    assert k.measure == pytest.approx(1e-12)
    assert np.isfinite(k.complementarity)


def test_certificate_uses_the_problem_gradient_by_default() -> None:
    k_true = kkt(BOX, XSTAR)
    k_lied = kkt(BOX, XSTAR, g=np.zeros(3))
    assert k_true.measure == 0.0
    assert k_lied.stationarity == 0.0  # with the caller's gradient, the caller's answer
    assert qpcore.kkt(BOX, XSTAR + 0.1).measure > 0.0
