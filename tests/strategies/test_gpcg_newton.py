"""GPCG's Cholesky mode (Newton steps on the face, factor kept across faces through a Schur
complement): KKT property tests on generated problems (well/ill-conditioned, singular, degenerate,
duplicated variables, fixed variables), cross-checks against scipy's lsq_linear and OSQP, the
exact solves of the face factor, and honest limits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import lsq_linear

import qpcore
from qpcore_formulations.least_squares import bounded_least_squares
from qpcore.testkit.generators import random_degenerate_qp
from qpcore.backends.operators import DenseQ
from qpcore.testkit.reference import assert_kkt, check_against_reference
from qpcore.testkit.testing import box_qps, nonneg_qps
from qpcore_strategies.gradient_projection import GPCG, _FaceFactor

NEWTON = GPCG(face_solver="cholesky")


def _dense(qp: qpcore.QP) -> np.ndarray:
    return np.asarray(qp.Q.rows(np.arange(qp.n))[:, np.arange(qp.n)], dtype=np.float64)


@given(qp=box_qps())
def test_box_kkt_and_reference(qp: qpcore.QP) -> None:
    res = check_against_reference(qp, NEWTON)
    assert res.stats["cg_steps"] == 0          # the faces went to the factor, never to CG


@given(qp=box_qps(min_cond=1e6, max_cond=1e8, rank_deficient=False))
def test_ill_conditioned_kkt_and_reference(qp: qpcore.QP) -> None:
    check_against_reference(qp, GPCG())       # auto: DenseQ without equality → Cholesky mode


@given(qp=nonneg_qps())
def test_nonneg_kkt_and_reference(qp: qpcore.QP) -> None:
    check_against_reference(qp, NEWTON)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 40), cond=st.sampled_from([1.0, 1e4, 1e8]),
       rank=st.sampled_from([None, 1, 3]))
def test_degenerate_kkt_and_reference(seed: int, n: int, cond: float, rank: int | None) -> None:
    qp = random_degenerate_qp(n, seed=seed, cond=cond, rank=None if rank is None else min(rank, n - 1) or None)
    check_against_reference(qp, NEWTON)


@given(qp=box_qps(max_n=25), seed=st.integers(0, 2**32 - 1), copies=st.integers(1, 5))
def test_duplicated_variables(qp: qpcore.QP, seed: int, copies: int) -> None:
    # x_j a copy of x_i: Q gets equal rows and columns, so every face holding both is singular
    rng = np.random.default_rng(seed)
    dup = rng.integers(0, qp.n, size=copies)
    idx = np.concatenate([np.arange(qp.n), dup])
    Q = _dense(qp)[np.ix_(idx, idx)]
    Q = 0.5 * (Q + Q.T)
    big = qpcore.QP(Q, qp.c[idx], qp.lb[idx], qp.ub[idx])
    check_against_reference(big, NEWTON)


@given(seed=st.integers(0, 2**32 - 1), m=st.integers(5, 60), n=st.integers(2, 30),
       lo=st.sampled_from([-0.3, -np.inf, 0.0]), hi=st.sampled_from([0.2, np.inf]))
def test_bounded_least_squares_against_lsq_linear(seed: int, m: int, n: int, lo: float, hi: float) -> None:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, n)) * np.logspace(0, -3, n)      # columns scaled: cond(AᵀA) up to 1e6
    d = rng.normal(size=m)
    prob = bounded_least_squares(A, d, lo, hi, backend="dense")
    res = qpcore.solve(prob.qp, NEWTON, tol=1e-10 * max(1.0, float(np.abs(prob.qp.c).max())))
    assert_kkt(prob.qp, res, 1e-10 * max(1.0, float(np.abs(prob.qp.c).max())))
    ref = lsq_linear(A, d, bounds=(lo, hi), method="bvls", tol=1e-13, lsmr_tol=None)
    ours = prob.residual_norm(res.x)
    theirs = float(np.linalg.norm(A @ np.clip(ref.x, lo, hi) - d))
    # the objectives ½‖Ax − d‖², to 1e-9 of their scale ½‖d‖² (a zero residual is met to rounding)
    assert 0.5 * ours**2 <= 0.5 * theirs**2 + 1e-9 * (1.0 + 0.5 * float(d @ d))


@pytest.mark.parametrize("cond", [1e2, 1e6])
def test_against_osqp_on_the_issue_family(cond: float) -> None:
    osqp = pytest.importorskip("osqp")
    import scipy.sparse as sp

    n = 150
    rng = np.random.default_rng(11)
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    Q = (U * np.logspace(0, -np.log10(cond), n)) @ U.T
    Q = 0.5 * (Q + Q.T)
    c = 0.05 * rng.normal(size=n)
    lb, ub = -np.ones(n), np.ones(n)
    lb[rng.choice(n, n // 3, replace=False)] = 0.0
    qp = qpcore.QP(Q, c, lb, ub)
    res = qpcore.solve(qp, GPCG(), tol=1e-10)
    assert res.converged and res.stats["newton_steps"] > 0
    solver = osqp.OSQP()
    solver.setup(sp.csc_matrix(Q), c, sp.identity(n, format="csc"), lb, ub, eps_abs=1e-10, eps_rel=1e-10,
                 max_iter=200_000, polish=True, verbose=False)
    x = np.clip(solver.solve().x, lb, ub)
    f_osqp = float(0.5 * x @ Q @ x + c @ x)
    assert res.objective <= f_osqp + 1e-9 * abs(f_osqp)


def test_factor_updates_are_taken_and_exact() -> None:
    n = 300
    rng = np.random.default_rng(2)
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    Q = (U * np.logspace(0, -4, n)) @ U.T
    Q = 0.5 * (Q + Q.T)
    c = 0.05 * rng.normal(size=n)
    qp = qpcore.QP(Q, c, -1.0, 1.0)
    res = qpcore.solve(qp, GPCG(), tol=1e-11)
    assert res.converged
    assert res.stats["factor_updates"] > 0 and res.stats["cg_steps"] == 0
    x_cg = qpcore.solve(qp, GPCG(face_solver="cg"), tol=1e-11)
    assert res.objective == pytest.approx(x_cg.objective, rel=1e-10)


@pytest.mark.parametrize("cond", [1.0, 1e4, 1e8])
def test_face_factor_schur_solves_match_direct(cond: float) -> None:
    n = 120
    rng = np.random.default_rng(7)
    U, _ = np.linalg.qr(rng.normal(size=(n, n)))
    M = (U * np.logspace(0, -np.log10(cond), n)) @ U.T
    M = 0.5 * (M + M.T)
    base = np.sort(rng.choice(n, 80, replace=False))
    ff = _FaceFactor(DenseQ(M), base)
    outside = np.setdiff1d(np.arange(n), base)
    for k in range(5):
        removed = rng.choice(base, 2 + k, replace=False)
        added = rng.choice(outside, k, replace=False)
        F = np.sort(np.concatenate([np.setdiff1d(base, removed), added]))
        r = rng.normal(size=F.size)
        y = ff.solve(F, r)
        assert y is not None
        B = M[np.ix_(F, F)]
        # backward error: the residual relative to ‖B‖‖y‖ (forward error grows with cond)
        assert np.linalg.norm(B @ y - r) <= 1e-11 * np.linalg.norm(B, 2) * np.linalg.norm(y) + 1e-13 * np.linalg.norm(r)
    # a face far from the base is refused (a new factor is cheaper)
    assert ff.solve(np.sort(rng.choice(n, 30, replace=False)), rng.normal(size=30)) is None


def test_iteration_limit_is_honest_in_newton_mode() -> None:
    rng = np.random.default_rng(5)
    M = rng.normal(size=(200, 150))
    qp = qpcore.QP(M.T @ M * 1e-6 + np.diag(np.logspace(-6, 2, 150)), rng.normal(size=150), -1.0, 1.0)
    res = qpcore.solve(qp, GPCG(), tol=1e-12, max_iter=2)
    assert res.status is qpcore.Status.MAX_ITER
    assert res.kkt.primal == 0.0 and res.objective < qp.objective(np.zeros(150))


def test_bad_face_solver_rejected() -> None:
    qp = qpcore.QP(DenseQ(np.eye(2)), np.ones(2), 0.0, 1.0)
    with pytest.raises(qpcore.ProblemError, match="face_solver"):
        qpcore.solve(qp, GPCG(face_solver="lu"))


def test_equality_row_keeps_cg() -> None:
    rng = np.random.default_rng(1)
    n = 30
    M = rng.normal(size=(n, n))
    qp = qpcore.QP(M @ M.T / n, rng.normal(size=n), 0.0, 1.0, np.ones((1, n)), np.array([n / 3]))
    res = qpcore.solve(qp, GPCG(face_solver="cholesky"), tol=1e-9)
    assert res.converged and res.stats["newton_steps"] == 0
