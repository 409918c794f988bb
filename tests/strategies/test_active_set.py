"""The dense primal active-set method: KKT property tests on every generated shape, agreement
with the dense reference and with scipy's nnls, status on unbounded and cycling-prone input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from scipy.optimize import nnls as scipy_nnls

import qpcore
from problems.least_squares import nnls
from qpcore.testing import box_equality_qps, box_qps, check_against_reference, nonneg_qps, svm_duals
from strategies.active_set import DenseActiveSet


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


def test_bad_shapes_rejected() -> None:
    qp = qpcore.QP(np.eye(3), np.ones(3), lb=0, ub=1, A=np.ones((2, 3)), b=np.array([1.0, 1.0]))
    with pytest.raises(qpcore.ProblemError, match="at most one equality"):
        qpcore.solve(qp, DenseActiveSet())
    with pytest.raises(qpcore.ProblemError, match="max_n"):
        qpcore.solve(qpcore.QP(np.eye(5), np.ones(5)), DenseActiveSet(max_n=4))


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
