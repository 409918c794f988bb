"""'converged' means optimal *and* feasible, for every strategy, from any warm start.

Every strategy receives an infeasible warm start through the one shared treatment in
``qpcore.solve`` (projection onto the feasible set, or a ProblemError naming the violated
constraint), and no run may report ``converged`` at a point whose certificate is infeasible.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore_formulations.asvm import asvm_dual
from qpcore_formulations.svm import csvc
from qpcore.core.problem import ProblemError
from qpcore.core.state import State, Status
from qpcore.testkit.reference import assert_kkt, dense_reference
from qpcore.testkit.testing import box_equality_qps, box_qps, svm_duals, warm_starts
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.asvm import ASVM
from qpcore_strategies.decomposition import Decomposition, SteepestFeasible
from qpcore_strategies.gradient_projection import GPCG
from qpcore_strategies.smo import SMO


def test_issue_repro_infeasible_warm_start_is_projected() -> None:
    # yᵀx0 = 1: was reported 'converged' with kkt.primal = 1.0
    qp = qpcore.QP(np.eye(4), -np.ones(4), 0.0, 1.0, [[1.0, -1.0, 1.0, -1.0]], [0.0])
    res = qpcore.solve(qp, Decomposition(rule=SteepestFeasible(q=2), inner=DenseActiveSet()),
                       x0=np.array([1.0, 0.0, 0.0, 0.0]), tol=1e-9)
    assert_kkt(qp, res, 1e-9)
    assert res.kkt.primal <= 1e-12 and res.stats["x0_moved"] > 0
    np.testing.assert_allclose(res.x, np.ones(4), atol=1e-9)
    with pytest.raises(ProblemError, match=r"x0: infeasible warm start, violates the equality row 0"):
        qpcore.solve(qp, Decomposition(rule=SteepestFeasible(q=2), inner=DenseActiveSet()),
                     x0=np.array([1.0, 0.0, 0.0, 0.0]), x0_policy="raise")
    with pytest.raises(ProblemError, match=r"bound ub at index 2"):
        qpcore.solve(qp, SMO(), x0=np.array([0.0, 0.0, 3.0, 0.0]), x0_policy="raise")
    with pytest.raises(ProblemError, match="x0_policy"):
        qpcore.solve(qp, SMO(), x0=np.zeros(4), x0_policy="ignore")


def _svm_strategies() -> list[Any]:
    return [SMO(), SMO(rule="mvp"), SMO(rule="platt"), Decomposition(rule=SteepestFeasible(q=4)),
            Decomposition(rule=SteepestFeasible(q=4), inner=DenseActiveSet()),
            Decomposition(rule=SteepestFeasible(q=4), inner=GPCG()), DenseActiveSet(), GPCG()]


def _bad_start(qp: qpcore.QP) -> st.SearchStrategy[np.ndarray]:
    """A start that violates the bounds (by up to 10 box widths), the equality, or both."""
    return warm_starts(qp, feasible=False)


def _objective_slack(qp: qpcore.QP, res: qpcore.Result, x_ref: np.ndarray, f_ref: float) -> float:
    """What a certificate to its measure allows above f*: convexity's Σ|z_i||x_i − x*_i| with
    |z_i| ≤ |a_i|·gap (gap where a_i = 0; the stationarity for a box), plus 1e-8·|f*|."""
    if qp.m:
        gap = max(res.kkt.gap, 0.0)
        w = np.where(qp.A[0] != 0, np.abs(qp.A[0]) * gap, gap)
    else:
        w = np.full(qp.n, res.kkt.stationarity)
    return float(w @ np.abs(res.x - x_ref)) + 1e-8 * max(1.0, abs(f_ref))


@given(data=st.data(), qp=svm_duals(max_n=12, max_cond=1e3, max_C=10.0))
def test_every_svm_strategy_from_infeasible_warm_start(data: st.DataObject, qp: qpcore.QP) -> None:
    x0 = data.draw(_bad_start(qp))
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    x_ref, f_ref = dense_reference(qp)
    for strategy in _svm_strategies():
        # the budget of tests/strategies/test_smo.py: rank-deficient duals need ~1e5 steps
        res = qpcore.solve(qp, strategy, x0=x0, tol=tol, max_iter=1_000_000)
        assert_kkt(qp, res, tol)
        assert res.objective <= f_ref + _objective_slack(qp, res, x_ref, f_ref), type(strategy).__name__


@given(data=st.data(), qp=box_qps(max_n=12, max_cond=1e4))
def test_box_strategies_from_infeasible_warm_start(data: st.DataObject, qp: qpcore.QP) -> None:
    x0 = data.draw(_bad_start(qp))
    for strategy in (GPCG(), DenseActiveSet()):
        res = qpcore.solve(qp, strategy, x0=x0, tol=1e-7, max_iter=100_000)
        assert res.status is not Status.CONVERGED or res.kkt.feasible()
        assert res.kkt.primal <= 1e-9 * max(1.0, float(np.abs(res.x).max()))


@given(data=st.data(), qp=box_equality_qps(max_n=12, max_cond=1e4))
def test_equality_row_strategies_from_infeasible_warm_start(data: st.DataObject, qp: qpcore.QP) -> None:
    x0 = data.draw(_bad_start(qp))
    for strategy in (GPCG(), DenseActiveSet()):
        res = qpcore.solve(qp, strategy, x0=x0, tol=1e-6, max_iter=100_000)
        assert res.kkt.feasible(), (type(strategy).__name__, res.kkt.primal)
        if res.status is Status.CONVERGED:
            assert res.kkt.measure <= 1e-6 * (1 + 1e-9) + 1e-12


def test_asvm_from_infeasible_warm_start() -> None:
    rng = np.random.default_rng(0)
    A = rng.normal(size=(300, 5))
    y = np.where(A[:, 0] + 0.3 * rng.normal(size=300) > 0, 1.0, -1.0)
    prob = asvm_dual(A, y, nu=2.0)
    x0 = rng.normal(size=300) * 5.0            # negative entries violate u ≥ 0
    res = qpcore.solve(prob.qp, ASVM(), x0=x0, tol=1e-8)
    assert_kkt(prob.qp, res, 1e-8)
    ref = qpcore.solve(prob.qp, ASVM(), tol=1e-8)
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)


class _ClaimsDone(qpcore.Strategy):
    """A broken strategy: declares itself done at once, at an infeasible point."""

    def init(self, qp: qpcore.QP, x0: np.ndarray | None, tol: float) -> State:
        x = np.full(qp.n, 0.5)
        x[0] = 5.0                                 # outside [0, 1]
        return State(x=x, g=qp.gradient(x), status=np.zeros(qp.n, dtype=np.int8), done=True)

    def step(self, qp: qpcore.QP, state: State) -> None:
        raise AssertionError("never called")


def test_converged_requires_feasible_certificate() -> None:
    qp = qpcore.QP(np.zeros((3, 3)), np.zeros(3), 0.0, 1.0)   # every feasible point is optimal
    res = qpcore.solve(qp, _ClaimsDone(), tol=1e-3)
    assert res.kkt.measure <= 1e-3 and res.kkt.primal == pytest.approx(4.0)
    assert res.status is Status.INFEASIBLE and not res.converged
    assert not res.kkt.ok(1e-3) and res.kkt.ok(1e-3, feas_tol=1.0)


def test_kkt_ok_is_relative_as_documented() -> None:
    # primal violation 1e-7 at ‖x‖∞ = 1e3: within 1e-9 relative to the scale 1e3? no (1e-6 allowed: yes)
    qp = qpcore.QP(np.eye(2), np.zeros(2), -1e4, 1e4, [[1.0, 1.0]], [2e3])
    x = np.array([1e3, 1e3 + 1e-7])
    cert = qpcore.kkt(qp, x)
    assert cert.primal_scale == pytest.approx(2e3 + 1e-7)
    assert cert.feasible(1e-9 * 1e3) and not cert.feasible(1e-12)
    assert cert.ok(1e10, feas_tol=1e-9) == (cert.primal <= 1e-9 * cert.primal_scale)


def test_nonconvex_dense_q_is_rejected() -> None:
    with pytest.raises(ProblemError, match="not positive semidefinite"):
        qpcore.QP(np.array([[1.0, 0.0], [0.0, -1.0]]), np.zeros(2), -1.0, 1.0)
    # PSD but singular (rank 1) is convex and accepted
    v = np.array([1.0, 2.0, 3.0])
    qpcore.QP(np.outer(v, v), np.zeros(3), -1.0, 1.0)


def test_sigmoid_kernel_never_reports_converged() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    y = np.where(rng.random(60) < 0.5, -1.0, 1.0)
    prob = csvc(X, y, 1.0, qpcore.Kernel("sigmoid", gamma=2.0, coef0=1.0), dtype=np.float64)
    for strategy in (SMO(), Decomposition(rule=SteepestFeasible(q=8), inner=SMO(shrinking=False))):
        res = qpcore.solve(prob.qp, strategy, tol=1e-4)
        assert res.status is not Status.CONVERGED, type(strategy).__name__


def test_decomposition_time_limit_holds_inside_inner_solves() -> None:
    # one big working set solved by the dense active-set method: the inner run shares the deadline
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 10))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=1500) > 0, 1.0, -1.0)
    prob = csvc(X, y, 100.0, qpcore.Kernel("rbf", gamma=0.5), dtype=np.float64)
    t0 = time.perf_counter()
    res = qpcore.solve(prob.qp, Decomposition(rule=SteepestFeasible(q=1000), inner=DenseActiveSet()),
                       tol=1e-9, time_limit=0.5)
    elapsed = time.perf_counter() - t0
    assert res.status is Status.TIME_LIMIT
    assert res.kkt.feasible()
    # the limit plus the final certificate (one kernel product) and the round in flight
    assert res.stats["seconds"] <= 0.5 * 1.1 + 0.3, res.stats["seconds"]
    assert elapsed < 5.0


def _assert_honest(qp: qpcore.QP, res: qpcore.Result, tol: float, x_ref: np.ndarray, f_ref: float, who: str) -> None:
    """Converged with a certificate and the reference objective, or an honest other status with
    a feasible best point: never a silent wrong answer."""
    assert res.kkt.feasible(), (who, res.status, res.kkt.primal)
    if res.status is Status.CONVERGED:
        assert_kkt(qp, res, tol)
        assert res.objective <= f_ref + _objective_slack(qp, res, x_ref, f_ref), (who, res.objective, f_ref)
    else:
        assert res.status in (Status.MAX_ITER, Status.TIME_LIMIT, Status.STALLED), (who, res.status)
        assert res.objective >= f_ref - 1e-6 * max(1.0, abs(f_ref)), (who, res.objective, f_ref)


# The full generated range (condition up to 1e8, C up to 1e3, fixed variables, duplicates):
# coordinate methods may run out of their step budget there, and may say so, but whatever they
# return is feasible, and a 'converged' result carries a certificate and the optimal objective.
@given(qp=svm_duals(max_n=16, fixed=True))
def test_full_range_svm_duals_are_honest(qp: qpcore.QP) -> None:
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    x_ref, f_ref = dense_reference(qp)
    for strategy in (SMO(), Decomposition(rule=SteepestFeasible(q=4)),
                     Decomposition(rule=SteepestFeasible(q=4), inner=DenseActiveSet()), DenseActiveSet(), GPCG()):
        res = qpcore.solve(qp, strategy, tol=tol, max_iter=20_000, time_limit=2.0)
        _assert_honest(qp, res, tol, x_ref, f_ref, type(strategy).__name__)


@given(qp=box_equality_qps(max_n=16, fixed=True, zero_coefficients=True))
def test_full_range_equality_row_qps_are_honest(qp: qpcore.QP) -> None:
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    x_ref, f_ref = dense_reference(qp)
    for strategy in (Decomposition(rule=SteepestFeasible(q=4), inner=DenseActiveSet()),
                     Decomposition(rule=SteepestFeasible(q=4), inner=GPCG()), DenseActiveSet(), GPCG()):
        if not (np.isfinite(qp.lb).all() and np.isfinite(qp.ub).all()) and isinstance(strategy, Decomposition):
            continue      # decomposition needs finite bounds (documented; refused at init)
        res = qpcore.solve(qp, strategy, tol=tol, max_iter=20_000, time_limit=2.0)
        _assert_honest(qp, res, tol, x_ref, f_ref, type(strategy).__name__)
