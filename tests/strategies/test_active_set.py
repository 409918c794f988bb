"""The dense primal active-set method: KKT property tests on every generated shape, agreement
with the dense reference and with scipy's nnls, status on unbounded and cycling-prone input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import nnls as scipy_nnls

import qpcore
from qpcore_formulations.least_squares import nnls
from qpcore.testkit.reference import check_against_reference
from qpcore.testkit.testing import box_equality_qps, box_qps, nonneg_qps, svm_duals
from qpcore_strategies.active_set import DenseActiveSet


def _check(qp: qpcore.QP, rel: float = 1e-8) -> qpcore.Result:
    return check_against_reference(qp, DenseActiveSet(), rel)


@given(qp=box_qps(max_n=30))
def test_box_qps(qp: qpcore.QP) -> None:
    _check(qp)


@given(qp=box_equality_qps(max_n=30))
def test_box_equality_qps(qp: qpcore.QP) -> None:
    _check(qp)


@given(qp=nonneg_qps(max_n=30))
def test_nonneg_qps(qp: qpcore.QP) -> None:
    _check(qp)


@given(qp=svm_duals(max_n=30))
def test_svm_duals(qp: qpcore.QP) -> None:
    _check(qp)


@pytest.mark.parametrize("shape", [(60, 20), (20, 60)])
def test_agrees_with_scipy_nnls(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(3)
    A, d = rng.standard_normal(shape), rng.standard_normal(shape[0])
    prob = nnls(A, d, backend="dense")
    res = qpcore.solve(prob.qp, DenseActiveSet(), tol=1e-10)
    assert res.status is qpcore.Status.CONVERGED
    x_ref, r_ref = scipy_nnls(A, d)
    assert float(np.linalg.norm(A @ res.x - d)) <= r_ref * (1 + 1e-9) + 1e-12
    if shape[0] > shape[1]:   # full column rank: the minimizer is unique
        np.testing.assert_allclose(res.x, x_ref, atol=1e-8)


def test_zero_curvature_ray_is_unbounded() -> None:
    # Q = 0 along x1: the objective falls forever along x1 ≥ 0
    qp = qpcore.QP(np.diag([1.0, 0.0]), np.array([1.0, -1.0]), lb=np.zeros(2), ub=np.array([5.0, np.inf]))
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-9)
    assert res.status is qpcore.Status.UNBOUNDED


def test_zero_curvature_ray_to_a_bound() -> None:
    # the same ray with a finite bound: a null-space move to the bound, then optimal
    qp = qpcore.QP(np.diag([1.0, 0.0]), np.array([1.0, -1.0]), lb=np.zeros(2), ub=np.array([5.0, 3.0]))
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-12)
    assert res.status is qpcore.Status.CONVERGED
    np.testing.assert_allclose(res.x, [0.0, 3.0])
    assert res.stats["null_moves"] >= 1


def test_too_large_rejected_naming_another_strategy() -> None:
    with pytest.raises(qpcore.ProblemError, match="max_n.*GPCG"):
        qpcore.solve(qpcore.QP(np.eye(5), np.ones(5)), DenseActiveSet(max_n=4))


def test_two_identical_rows_solved() -> None:
    # two copies of one row: the rows are dependent, the method keeps one
    qp = qpcore.QP(np.eye(3), np.ones(3), lb=0, ub=1, A=np.ones((2, 3)), b=np.array([1.0, 1.0]))
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-10)
    assert res.status is qpcore.Status.CONVERGED
    np.testing.assert_allclose(res.x, [1 / 3, 1 / 3, 1 / 3], atol=1e-12)


def test_iteration_limit_is_honest() -> None:
    rng = np.random.default_rng(0)
    M = rng.standard_normal((40, 40))
    qp = qpcore.QP(M @ M.T, rng.standard_normal(40) * 10, lb=-0.1, ub=0.1)
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-10, max_iter=2)
    assert res.status is qpcore.Status.MAX_ITER
    assert res.kkt.measure > 1e-10       # the certificate says it is not done


def test_face_whose_only_direction_the_equality_forbids() -> None:
    # found by hypothesis 6.170: one free variable with a_i ≠ 0 gave a rounding-size step that
    # the equality projection zeroed, and the method repeated that null step until it stalled
    from pathlib import Path

    d = np.load(Path(__file__).parent / "data" / "active_set_zero_step.npz")
    qp = qpcore.QP(Q=d["Q"], c=d["c"], lb=d["lb"], ub=d["ub"], A=d["A"], b=d["b"])
    res = _check(qp)
    assert res.stats["releases"] > 0


def _linear_svm_dual(X: list[float] | list[list[float]], y: list[int], C: float, fixed: dict[int, float]) -> qpcore.QP:
    """The C-SVC dual of a linear kernel, Q = yyᵀ ∘ XXᵀ (as ``qpcore.testkit.generators.random_svm_dual``
    forms it, bit for bit), c = −1, 0 ≤ x ≤ C, yᵀx = 0, with the given variables fixed."""
    ya = np.asarray(y, dtype=np.float64)
    Xa = np.asarray(X, dtype=np.float64).reshape(ya.size, -1)
    G = Xa @ Xa.T
    Q = np.outer(ya, ya) * (0.5 * (G + G.T))
    lb, ub = np.zeros(ya.size), np.full(ya.size, C)
    for i, v in fixed.items():
        lb[i] = ub[i] = v
    return qpcore.QP(Q, -np.ones(ya.size), lb, ub, ya[None, :], 0.0)


# found by hypothesis 6.170 (nightly): a free variable reached its bound at the same step as the
# variable that blocked (a tie at C: balancing a variable fixed at C, or duplicated points moving
# together), stayed free on its bound, and then blocked every later descent ray of the singular
# face at once; a blocked ray took a pair step without adding that variable to the working set,
# so the same block repeated and the pair steps crept along until the step budget ran out
# ('stalled', gaps 1.8 and 1.2)
_STALLED_SVM_DUALS = {
    "linear-d2-one-fixed-at-C": dict(
        X=[[-0.9465335813554305, 9.622352161524155e-05], [-0.24835580469425134, 4.149211405890431e-05],
          [2.012579716184478, 0.00011140129234574146], [1.3489238954147327, 6.503461554472058e-05],
          [-0.7414349722119844, -0.00016663595172069945], [0.4837689251386521, 4.394485292950571e-05],
          [1.1509420766529226, 4.691473603274032e-05], [-0.12244102403053114, 7.58569117235658e-05],
          [-1.1396180343346078, 2.2914755464343644e-05], [0.07588131489237793, -3.203592910540537e-05],
          [-0.766660773463443, 4.777561954000778e-05], [-0.5788078081445198, -6.297451124122971e-05],
          [2.3636582942642743, 8.105109665820571e-05], [1.3466860544936479, 3.859323286528738e-05]],
        y=[1, -1, 1, 1, 1, -1, 1, -1, -1, 1, -1, -1, 1, -1],
        C=100.0, fixed={3: 100.0}),
    "linear-d1-duplicates-four-fixed": dict(
        X=[0.5149944931081742, 0.28486623992953874, 2.0743470192369573, 1.878523141900478, -0.9197604977231354,
          1.7192722011381627, 1.9657576351945363, -1.5144641157203993, 1.878523141900478,
          -1.122529517606024, 1.0514208584493328, -0.5070611469012648, -0.37971596178075484,
          1.0514208584493328, 1.878523141900478, -2.168665689801485, -0.9197604977231354,
          1.9657576351945363, 1.878523141900478, -0.46596185474962915, -1.313287198504038,
          1.878523141900478, -1.8290604591369424, 0.3281411738216838, 1.6184602112115103,
          1.6184602112115103, 1.6184602112115103, -1.5144641157203993, 2.0743470192369573,
          1.7192722011381627, -1.8290604591369424, 1.0514208584493328, 1.9657576351945363,
          -1.5144641157203993, 0.5149944931081742, 1.6184602112115103, -0.5964181134640423,
          0.9605718123752806],
        y=[1, -1, 1, 1, -1, 1, 1, -1, 1, 1, -1, -1, 1, -1, 1, -1, -1, 1, 1, -1, -1, 1, -1, 1, 1, 1, 1, -1, 1, 1,
          -1, -1, 1, -1, 1, 1, -1, 1],
        C=177.82794100389228,
        fixed={1: 177.82794100389228, 5: 82.79567776103733, 24: 36.45859240330749, 34: 99.47289350565349}),
}


@pytest.mark.parametrize("case", list(_STALLED_SVM_DUALS))
def test_free_variable_on_its_bound_blocks_a_ray(case: str) -> None:
    qp = _linear_svm_dual(**_STALLED_SVM_DUALS[case])  # type: ignore[arg-type]
    res = _check(qp)
    assert res.stats["blocks"] > 0
    assert res.iterations < 10 * qp.n


# the m-row engine's factor and degeneracy handling: tests/strategies/test_active_set_rows.py
