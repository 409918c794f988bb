"""Negative curvature: GPCG and DenseActiveSet on a Q that is not PSD (wrapped in an operator that
``DenseQ``'s construction check never sees) flag ``state.nonconvex`` and never end ``converged``;
convex problems, singular ones included, are never flagged. ASVM's form (diag(d) + HHᵀ with
d > 0) is positive definite, so it has no such case."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore.backends.capabilities import Operator, OperatorStats
from qpcore.testkit.testing import box_equality_qps, box_qps, svm_duals
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.gradient_projection import GPCG

STRATEGIES = {"gpcg": GPCG(), "dense": DenseActiveSet()}


class UncheckedQ(Operator):
    """The QOperator protocol over any symmetric matrix, with no PSD check."""

    def __init__(self, M: np.ndarray) -> None:
        self.M = np.asarray(M, dtype=np.float64)
        self.stats = OperatorStats()

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.M.shape[0]), int(self.M.shape[1]))

    def diag(self) -> np.ndarray:
        return np.diag(self.M).copy()

    def matvec(self, x: np.ndarray) -> np.ndarray:
        out: np.ndarray = self.M @ x
        return out

    def rows(self, idx: Any) -> np.ndarray:
        out: np.ndarray = self.M[np.asarray(idx, dtype=np.intp)]
        return out

    def row(self, i: int) -> np.ndarray:
        out: np.ndarray = self.M[i]
        return out


def _indefinite(n: int, seed: int) -> np.ndarray:
    """A symmetric matrix with a third of its eigenvalues in [−2, −0.5], the rest in [0.1, 3]."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    k = n // 3
    w = np.concatenate([rng.uniform(-2.0, -0.5, size=k), rng.uniform(0.1, 3.0, size=n - k)])
    M: np.ndarray = (U * w) @ U.T
    return 0.5 * (M + M.T)


def test_the_wrapper_bypasses_the_construction_check() -> None:
    with pytest.raises(qpcore.ProblemError, match="positive semidefinite"):
        qpcore.QP(np.diag([1.0, -1.0]), np.zeros(2), -1.0, 1.0)
    qpcore.QP(UncheckedQ(np.diag([1.0, -1.0])), np.zeros(2), -1.0, 1.0)


def _indefinite_qp(equality: bool, seed: int) -> qpcore.QP:
    n = 12
    rng = np.random.default_rng(100 + seed)
    A, b = (rng.normal(size=(1, n)), 0.0) if equality else (None, None)
    return qpcore.QP(UncheckedQ(_indefinite(n, seed)), rng.normal(size=n), -1.0, 1.0, A, b)


@pytest.mark.parametrize("equality", [False, True], ids=["box", "equality"])
def test_gpcg_negative_curvature_met_is_never_converged(equality: bool) -> None:
    # GPCG sees non-convexity where it meets it: a CG or gradient-projection direction with
    # pᵀQp < 0. Whenever it does, the run does not end "converged"
    met = 0
    for seed in range(8):
        qp = _indefinite_qp(equality, seed)
        res = qpcore.solve(qp, GPCG(), tol=1e-8, max_iter=5_000)
        assert res.state.nonconvex == (res.stats["negative_curvature"] > 0)
        if res.state.nonconvex:
            met += 1
            assert res.status is qpcore.Status.NONCONVEX   # a stationary point, not certified a minimizer
            assert res.kkt.measure <= 1e-8 and res.kkt.feasible()
    assert met >= 4                                        # the test is not vacuous


@pytest.mark.parametrize("equality", [False, True], ids=["box", "equality"])
@pytest.mark.parametrize("seed", range(4))
def test_dense_active_set_nonconvex_is_never_converged(equality: bool, seed: int) -> None:
    # DenseActiveSet checks Q once (it forms it anyway), then takes negative curvature on a face
    # to a bound: it ends at a point that minimizes its face
    qp = _indefinite_qp(equality, seed)
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-8, max_iter=5_000)
    assert res.state.nonconvex
    assert res.status is qpcore.Status.NONCONVEX
    assert res.kkt.measure <= 1e-8 and res.kkt.feasible()
    free = np.flatnonzero((res.x > qp.lb) & (res.x < qp.ub))
    H = qp.Q.rows(free)[:, free]
    if equality and free.size:
        u = qp.A[0][free] / np.linalg.norm(qp.A[0][free])
        P = np.eye(free.size) - np.outer(u, u)
        H = P @ H @ P
    assert np.linalg.eigvalsh(H).min(initial=0.0) >= -1e-8    # second order on the final face


def test_dense_active_set_leaves_a_saddle() -> None:
    # x0 = 0 is stationary (g = 0) but a saddle: the face's negative curvature is followed to a bound
    qp = qpcore.QP(UncheckedQ(np.diag([1.0, -1.0])), np.zeros(2), -1.0, 1.0)
    res = qpcore.solve(qp, DenseActiveSet(), np.zeros(2), tol=1e-12)
    assert res.status is qpcore.Status.NONCONVEX
    assert res.stats["negative_curvature"] >= 1
    assert res.x[0] == 0.0 and abs(res.x[1]) == 1.0     # a local minimizer
    assert res.objective == pytest.approx(-0.5)


def test_gpcg_follows_negative_curvature_to_the_boundary() -> None:
    # q = ½(x0² − x1²) − 0.1 x1: from 0, the descent along x1 has curvature −1; the bound stops it
    qp = qpcore.QP(UncheckedQ(np.diag([1.0, -1.0])), np.array([0.0, -0.1]), -1.0, 2.0)
    res = qpcore.solve(qp, GPCG(), tol=1e-12)
    assert res.status is qpcore.Status.NONCONVEX
    np.testing.assert_allclose(res.x, [0.0, 2.0])


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_negative_curvature_without_a_bound_is_unbounded(name: str) -> None:
    # x0 has curvature −1 and no bounds: q → −∞ along it
    qp = qpcore.QP(UncheckedQ(np.diag([-1.0, 1.0])), np.array([0.1, -0.5]), [-np.inf, -1.0], [np.inf, 1.0])
    res = qpcore.solve(qp, STRATEGIES[name], tol=1e-8, max_iter=1_000)
    assert res.status is qpcore.Status.UNBOUNDED
    assert res.state.nonconvex


@pytest.mark.parametrize("name", list(STRATEGIES))
@given(qp=st.one_of(box_qps(max_n=20), box_equality_qps(max_n=20), svm_duals(max_n=20)))
def test_convex_problems_are_never_flagged(name: str, qp: qpcore.QP) -> None:
    # singular and ill-conditioned PSD matrices included: rounding is not negative curvature
    res = qpcore.solve(qp, STRATEGIES[name], tol=1e-9 * max(1.0, float(np.abs(qp.c).max())), max_iter=20_000)
    assert not res.state.nonconvex
    assert res.stats.get("negative_curvature", 0) == 0
