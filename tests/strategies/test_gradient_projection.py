"""GPCG (box constraints): KKT property tests, dense references, OSQP, unboundedness."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import qpcore
from qpcore.testing import assert_kkt, box_qps, dense_reference, nonneg_qps
from strategies.gradient_projection import GPCG


def _check(qp: qpcore.QP) -> None:
    # the gradient is only known to rounding times the scale of Q and c
    tol = 1e-8 * max(1.0, float(np.abs(qp.c).max()), float(qp.Q.diag().max()))
    res = qpcore.solve(qp, GPCG(), tol=tol, max_iter=20_000)
    assert_kkt(qp, res, tol)
    _, f_ref = dense_reference(qp)
    assert res.objective <= f_ref + 1e-8 * max(1.0, abs(f_ref)), (res.objective, f_ref)


@given(qp=box_qps())
@settings(max_examples=60)
def test_box_kkt_and_reference(qp: qpcore.QP) -> None:
    _check(qp)


@given(qp=nonneg_qps())
@settings(max_examples=60)
def test_nonneg_kkt_and_reference(qp: qpcore.QP) -> None:
    _check(qp)


def test_against_osqp() -> None:
    osqp = pytest.importorskip("osqp")
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    n = 300
    M = rng.normal(size=(450, n))
    Q = M.T @ M / n + 1e-3 * np.eye(n)
    c = rng.normal(size=n)
    qp = qpcore.QP(Q, c, -0.1, 0.1)
    res = qpcore.solve(qp, GPCG(), tol=1e-10)
    assert res.converged
    solver = osqp.OSQP()
    solver.setup(P=sp.csc_matrix(np.triu(Q)), q=c, A=sp.identity(n, format="csc"), l=qp.lb, u=qp.ub,
                 eps_abs=1e-10, eps_rel=1e-10, max_iter=200_000, polishing=True, verbose=False)
    sol = solver.solve()
    f_osqp = qp.objective(np.clip(sol.x, qp.lb, qp.ub))
    assert res.objective <= f_osqp + 1e-9 * abs(f_osqp)
    assert res.objective == pytest.approx(f_osqp, rel=1e-8)


def test_unbounded_is_reported() -> None:
    Q = np.diag([1.0, 0.0])
    qp = qpcore.QP(Q, np.array([0.0, -1.0]), np.array([-1.0, 0.0]), np.array([1.0, np.inf]))
    res = qpcore.solve(qp, GPCG(), tol=1e-8, max_iter=100)
    assert res.status is qpcore.Status.UNBOUNDED


def test_two_equality_rows_rejected() -> None:
    qp = qpcore.QP(np.eye(3), np.zeros(3), 0.0, 1.0, np.ones((2, 3)), np.ones(2))
    with pytest.raises(qpcore.ProblemError, match="one equality"):
        qpcore.solve(qp, GPCG())
