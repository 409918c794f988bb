"""qpcore_cvxpy.QPCORE: CVXPY models solved by qpcore's strategies, checked against Clarabel.

Each model is solved by CVXPY with Clarabel at tight tolerances and with ``QPCORE()``; the
objective, the point and every constraint's dual value must agree to 1e-6 (the duals unique:
P positive definite, random rows in general position). The statuses are checked where qpcore
proves infeasibility or unboundedness, refuses a non-convex P, or stops at a limit.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

cp = pytest.importorskip("cvxpy")

from qpcore import QP, State, Status, Strategy, bound_status  # noqa: E402
from qpcore_cvxpy import QPCORE  # noqa: E402

pytestmark = pytest.mark.anchor

#: Clarabel well below the comparison's 1e-6
CLARABEL = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10, "max_iter": 500}
AGREE = 1e-6


def _portfolio(n: int = 30, factors: int = 4, seed: int = 0) -> tuple[Any, Any, list[Any]]:
    """Markowitz with a factor model: risk − ½ return, fully invested, long only, capped, a return floor."""
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(n, factors)) * 0.3
    d = rng.uniform(0.01, 0.05, n)
    mu = rng.normal(0.05, 0.03, n)
    x = cp.Variable(n)
    constraints = [cp.sum(x) == 1, x >= 0, x <= 0.15, mu @ x >= 0.08]
    risk = cp.sum_squares(F.T @ x) + cp.sum(cp.multiply(d, cp.square(x)))
    return cp.Problem(cp.Minimize(risk - 0.5 * mu @ x), constraints), x, constraints


def _random_qp(n: int = 20, m: int = 3, k: int = 10, seed: int = 1) -> tuple[Any, Any, list[Any]]:
    """A strictly convex QP with equality rows, inequality rows, the variable's bounds (some
    infinite) and a bound written as a constraint; a strong pull q so that several bind."""
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n))
    P = M @ M.T / n + 0.1 * np.eye(n)
    q = rng.normal(size=n) * 5
    A = rng.normal(size=(m, n))
    x0 = rng.uniform(-0.5, 0.5, n)           # feasible by construction
    G = rng.normal(size=(k, n))
    h = G @ x0 + rng.uniform(0.0, 0.5, k)
    lb, ub = np.full(n, -1.0), np.full(n, 1.0)
    lb[:3] = -np.inf
    x = cp.Variable(n, bounds=[lb, ub])
    constraints = [A @ x == A @ x0, G @ x <= h, x[0] >= -2.0]
    return cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, P) + q @ x), constraints), x, constraints


def _duals(constraints: list[Any]) -> list[np.ndarray]:
    return [np.atleast_1d(np.asarray(c.dual_value, dtype=float)).copy() for c in constraints]


@pytest.mark.parametrize("strategy", ["auto", "active-set", "interior-point"])
@pytest.mark.parametrize("model", [_portfolio, _random_qp], ids=["portfolio", "random_qp"])
def test_agrees_with_clarabel(model: Any, strategy: str) -> None:
    problem, x, constraints = model()
    problem.solve(solver="CLARABEL", **CLARABEL)
    assert problem.status == cp.OPTIMAL
    value, point, duals = problem.value, x.value.copy(), _duals(constraints)

    got = problem.solve(solver=QPCORE(), strategy=strategy)
    assert problem.status == cp.OPTIMAL
    assert problem.solver_stats.solver_name == "QPCORE"
    run = problem.solver_stats.extra_stats
    assert run.solution is not None and run.solution.found
    assert abs(got - value) <= AGREE * max(1.0, abs(value))
    np.testing.assert_allclose(x.value, point, atol=AGREE, rtol=0)
    for c, ref, dual in zip(constraints, duals, _duals(constraints), strict=True):
        np.testing.assert_allclose(dual, ref, atol=AGREE, rtol=0, err_msg=f"dual of {c}")
    # the constraints bind: the comparison of duals is not one of zeros
    assert max(float(np.max(np.abs(d))) for d in duals) > 1e-3
    # CVXPY's signs: the dual value of an inequality (either direction) is ≥ 0
    for c, dual in zip(constraints, _duals(constraints), strict=True):
        if isinstance(c, cp.constraints.Inequality):
            assert np.all(dual >= -1e-9), f"{c}: a ≤ row's dual value must be ≥ 0"


def test_strategy_by_name_is_the_one_that_ran() -> None:
    problem, x, constraints = _random_qp(seed=3)
    problem.solve(solver=QPCORE(), strategy="active-set", tol=1e-10)
    assert problem.status == cp.OPTIMAL
    result = problem.solver_stats.extra_stats.solution.result
    assert "strategy_choice" not in result.stats       # no auto choice: the named strategy ran
    assert result.kkt.measure <= 1e-10


def test_infeasible() -> None:
    x = cp.Variable(3)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x)), [x >= 1, cp.sum(x) <= 2])
    problem.solve(solver=QPCORE())
    assert problem.status == cp.INFEASIBLE
    assert problem.value == np.inf
    assert "infeasible" in problem.solver_stats.extra_stats.message


def test_infeasible_bounds() -> None:
    x = cp.Variable(3, bounds=[0, 1])
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x)), [cp.sum(x) == 5])
    problem.solve(solver=QPCORE())
    assert problem.status == cp.INFEASIBLE


def test_unbounded() -> None:
    x = cp.Variable(3)
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x[1:]) - x[0]), [x[0] >= 0, x[1] <= 1])
    problem.solve(solver=QPCORE())
    assert problem.status == cp.UNBOUNDED
    assert problem.value == -np.inf


def test_not_psd_is_a_solver_error_with_the_message() -> None:
    x = cp.Variable(2)
    P = np.array([[1.0, 0.0], [0.0, -1.0]])
    problem = cp.Problem(cp.Minimize(cp.quad_form(x, P, assume_PSD=True)), [x <= 1, x >= -1])
    with pytest.raises(cp.error.SolverError, match="not positive semidefinite"):
        problem.solve(solver=QPCORE())


@pytest.mark.parametrize("limit", [{"time_limit": 1e-6}, {"max_iter": 1}], ids=["time_limit", "max_iter"])
@pytest.mark.parametrize("strategy", ["auto", "active-set"])
def test_limit_is_never_optimal(limit: dict[str, Any], strategy: str) -> None:
    problem, _, _ = _portfolio(seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # CVXPY warns that a user_limit solution may be inaccurate
        problem.solve(solver=QPCORE(), strategy=strategy, **limit)
    assert problem.status == cp.USER_LIMIT
    assert problem.solver_stats.extra_stats.solution.result.stats["stopped_by"] in ("time_limit", "max_iter")


class _StallAtOnce(Strategy):
    """Stops at its start with status stalled (a box-only test strategy)."""

    def init(self, qp: QP, x0: np.ndarray | None, tol: float) -> State:
        x = np.clip(np.zeros(qp.n) if x0 is None else np.array(x0, dtype=float), qp.lb, qp.ub)
        return State(x=x, g=qp.gradient(x), status=bound_status(x, qp.lb, qp.ub))

    def step(self, qp: QP, state: State) -> None:
        state.stop = Status.STALLED


def test_stall_is_inaccurate_near_the_optimum_else_an_error() -> None:
    x = cp.Variable(3, bounds=[0.0, 2.0])
    problem = cp.Problem(cp.Minimize(cp.sum_squares(x - np.array([1.0, 3.0, -1.0]))))
    with pytest.raises(cp.error.SolverError, match="stalled"):
        problem.solve(solver=QPCORE(), strategy=_StallAtOnce())      # from 0: far from optimal
    problem.solve(solver=QPCORE(), strategy="active-set")
    assert problem.status == cp.OPTIMAL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # CVXPY warns on an optimal_inaccurate status
        problem.solve(solver=QPCORE(), strategy=_StallAtOnce(), warm_start=True)   # from the optimum
    assert problem.status == cp.OPTIMAL_INACCURATE
    np.testing.assert_allclose(x.value, [1.0, 2.0, 0.0], atol=1e-12)


def test_warm_start_and_options() -> None:
    problem, x, _ = _random_qp(seed=4)
    problem.solve(solver=QPCORE(), strategy="active-set")
    first, cold = x.value.copy(), problem.solver_stats.num_iters
    # a new instance equals the last one, so CVXPY keeps its cache: the run starts from the optimum
    problem.solve(solver=QPCORE(), strategy="active-set", warm_start=True)
    assert problem.status == cp.OPTIMAL
    np.testing.assert_allclose(x.value, first, atol=1e-8)
    assert problem.solver_stats.num_iters < cold
    with pytest.raises(ValueError, match="unknown solver option"):
        problem.solve(solver=QPCORE(), eps_abs=1e-3)
    with pytest.raises(ValueError, match="unknown name"):
        problem.solve(solver=QPCORE(), strategy="no-such-strategy")
