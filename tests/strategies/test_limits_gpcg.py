"""GPCG's bounded steps: time limits honored inside long steps (sliced kernel products
included), max_iter bounding the work, a CG phase resumed across steps, stall detection, and
regressions for runs that used to creep (the equality search on a blocked null-space
direction, decomposition's inner solve, an ill-conditioned face)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qpcore
from qpcore.backends.capabilities import Operator, OperatorStats
from qpcore.backends.operators import DenseQ, Kernel, KernelQ
from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore.testkit.generators import random_box_qp, random_svm_dual
from qpcore_strategies.decomposition import Decomposition, SteepestFeasible
from qpcore_strategies.gradient_projection import GPCG, projected_search

LIMIT = 0.5


class CountingQ(Operator):
    """A QOperator that counts its products (wraps a dense matrix, unchecked)."""

    def __init__(self, M: np.ndarray) -> None:
        self.M = M
        self.stats = OperatorStats()
        self.products = 0

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.M.shape[0]), int(self.M.shape[1]))

    def diag(self) -> np.ndarray:
        return np.diag(self.M).copy()

    def matvec(self, x: np.ndarray) -> np.ndarray:
        self.products += 1
        out: np.ndarray = self.M @ x
        return out

    def rows(self, idx: Any) -> np.ndarray:
        out: np.ndarray = self.M[np.asarray(idx, dtype=np.intp)]
        return out

    def row(self, i: int) -> np.ndarray:
        out: np.ndarray = self.M[i]
        return out


def _ill_conditioned(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n // 2))
    return M @ M.T / n + 1e-8 * np.eye(n)


def _assert_honest_time_limit(qp: qpcore.QP, res: qpcore.Result, tol: float, slack: float = 0.0) -> None:
    assert res.status is qpcore.Status.TIME_LIMIT
    assert res.stats["seconds"] <= LIMIT * 1.1 + 0.05 + slack, res.stats["seconds"]
    assert res.kkt.feasible()                   # a feasible point ...
    assert np.isfinite(res.kkt.measure) and res.kkt.measure > tol   # ... with its certificate
    assert res.objective == pytest.approx(qp.objective(res.x), rel=1e-9, abs=1e-9)


def test_time_limit_inside_long_cg_phases() -> None:
    # a diagonal from 1e-6 to 1e4 plus a low-rank part: unlimited, this run takes many seconds
    # of long CG phases
    n = 1500
    rng = np.random.default_rng(1)
    M = rng.normal(size=(n, 40))
    Q = np.diag(np.logspace(-6, 4, n)[rng.permutation(n)]) + M @ M.T / n
    qp = qpcore.QP(DenseQ.trusted(Q), rng.normal(size=n) * 100, -1.0, 1.0, rng.normal(size=(1, n)), 0.0)
    t0 = time.perf_counter()
    res = qpcore.solve(qp, GPCG(cg_per_step=10_000), tol=1e-12, time_limit=LIMIT)
    wall = time.perf_counter() - t0
    _assert_honest_time_limit(qp, res, 1e-12)
    assert wall <= LIMIT * 1.1 + 0.25


def test_time_limit_inside_kernel_products() -> None:
    # one product is 6000 kernel rows: sliced, with a clock check between slices
    n = 6000
    rng = np.random.default_rng(2)
    X = rng.normal(size=(n, 20))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    Q = KernelQ(X, Kernel("rbf", gamma=0.05), scale=y, cache_bytes=0)
    qp = qpcore.QP(Q, -np.ones(n), 0.0, 10.0, y[None, :], 0.0)
    t0 = time.perf_counter()
    Q.matvec(rng.random(n))
    product = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = qpcore.solve(qp, GPCG(), tol=1e-10, time_limit=LIMIT)
    wall = time.perf_counter() - t0
    # the clock is read between slices of a product: on a busy machine a slice can run past it
    _assert_honest_time_limit(qp, res, 1e-10, slack=0.5 * product)
    assert wall <= LIMIT * 1.1 + 2.0 * product + 0.1   # the certificate's own product comes after


@pytest.mark.parametrize("max_iter", [1, 6])
def test_max_iter_bounds_the_work(max_iter: int) -> None:
    # a wide box: one CG phase would need hundreds of iterations (the old step ran them all)
    n = 300
    rng = np.random.default_rng(3)
    Q = CountingQ(_ill_conditioned(n))
    qp = qpcore.QP(Q, rng.normal(size=n), -1e3, 1e3)
    strategy = GPCG(cg_per_step=5)
    res = qpcore.solve(qp, strategy, tol=1e-12, max_iter=max_iter)
    assert res.status is qpcore.Status.MAX_ITER
    assert res.stats["cg_steps"] <= max_iter * strategy.cg_per_step
    # per step: the CG iterations, one projected search (≤ 2 products a round, 8 rounds),
    # a gradient refresh and the fallbacks of a stuck cycle; plus init and the certificate
    assert Q.products <= max_iter * (strategy.cg_per_step + 60) + 2


def test_resumed_cg_phase_is_the_same_phase() -> None:
    n = 200
    rng = np.random.default_rng(4)
    qp = qpcore.QP(_ill_conditioned(n, 5) + 1e-2 * np.eye(n), rng.normal(size=n), -5.0, 5.0)
    # CG on the faces (a dense Q would otherwise get Newton steps through a Cholesky factor)
    short = qpcore.solve(qp, GPCG(cg_per_step=3, face_solver="cg"), tol=1e-9, max_iter=100_000)
    long = qpcore.solve(qp, GPCG(cg_per_step=100_000, face_solver="cg"), tol=1e-9, max_iter=100_000)
    assert short.converged and long.converged
    assert short.stats["cg_steps"] == long.stats["cg_steps"]
    assert short.iterations > long.iterations
    assert short.objective == pytest.approx(long.objective, rel=1e-12)


@pytest.mark.parametrize("qp", [random_box_qp(30, seed=1, cond=1e6), random_svm_dual(30, seed=2, C=10.0)],
                         ids=["box", "svm"])
def test_tolerance_below_rounding_ends_stalled(qp: qpcore.QP) -> None:
    # the optimum is reached to rounding; the cycles after it decrease f by nothing
    res = qpcore.solve(qp, GPCG(), tol=1e-300, max_iter=100_000)
    assert res.status is qpcore.Status.STALLED
    assert res.iterations < 2_000
    assert res.kkt.measure <= 1e-10 * max(1.0, float(np.abs(qp.c).max()))


# --- regressions -------------------------------------------------------------------------------

def test_gradient_in_the_null_space_blocked_at_once() -> None:
    # −g lies in the null space of a, and x0 sits on the bound −g points through: the projected
    # path bends at α = 0. The equality search used to report no move, and GPCG stalled at gap 2
    Q = 0.1 * np.eye(4)
    x0 = np.array([1.0, 0.0, 0.5, 0.5])
    qp = qpcore.QP(Q, -1.0 - Q @ x0, 0.0, 1.0, np.array([[1.0, 1.0, -1.0, -1.0]]), 0.0)
    g = qp.gradient(x0)
    assert float(qp.A[0] @ g) == 0.0
    assert projected_search(qp, x0, g, -g).decrease > 0.0
    res = qpcore.solve(qp, GPCG(), x0, tol=1e-12, max_iter=100)
    assert res.status is qpcore.Status.CONVERGED
    np.testing.assert_allclose(res.x, np.ones(4))


def test_decomposition_inner_gpcg_does_not_creep() -> None:
    # a rank-2 linear-kernel dual: the inner GPCG used to run 30,000+ steps on one subproblem
    qp = random_svm_dual(60, seed=8, C=1000.0, kernel="linear", d=2)
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    res = qpcore.solve(qp, Decomposition(rule=SteepestFeasible(q=6), inner=GPCG()), tol=tol, max_iter=20_000,
                       time_limit=60.0)
    assert res.status is qpcore.Status.CONVERGED
    assert res.stats["inner_iterations"] < 20_000


def test_ill_conditioned_face_is_solved_directly() -> None:
    # cond(Q) ≈ 8e10: CG cut short by eta1 on one face cycle after cycle (13,800 cycles before);
    # the face is factored and the primal active-set steps finish it
    d = np.load(Path(__file__).parent / "data" / "asvm_rounding_floor.npz")
    m = d["d"].size
    qp = qpcore.QP(Q=DiagPlusLowRankQ(d["d"], d["F"], row_scale=d["s"], bias=-1.0), c=-np.ones(m),
                   lb=np.zeros(m), ub=np.full(m, np.inf))
    res = qpcore.solve(qp, GPCG(), tol=1e-6, max_iter=2_000)
    assert res.status is qpcore.Status.CONVERGED
    assert res.iterations < 1_000
    assert res.stats["face_solves"] > 0


def test_bad_configuration_rejected() -> None:
    qp = qpcore.QP(DenseQ(np.eye(2)), np.ones(2), 0.0, 1.0)
    with pytest.raises(qpcore.ProblemError, match="cg_per_step"):
        qpcore.solve(qp, GPCG(cg_per_step=0))
