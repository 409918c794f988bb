"""NNLS and bounded least squares as QPs: backend choice, the objective identity, and the
formulation cross-checked by KKT at scipy's own solutions (no qpcore solver involved)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import lsq_linear
from scipy.optimize import nnls as scipy_nnls

import qpcore
from qpcore_formulations.least_squares import LeastSquaresProblem, bounded_least_squares, nnls
from qpcore import DenseQ, ProblemError
from qpcore.backends.gram import GramQ

SHAPES = [(40, 15), (10, 25)]  # tall (auto → dense) and wide (auto → gram)


def data(m: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, n)), rng.normal(size=m)


def relative_kkt(p: LeastSquaresProblem, x: np.ndarray) -> float:
    cert = qpcore.kkt(p.qp, x)
    assert cert.primal == 0.0
    # the gradient AᵀAx − Aᵀd is a difference of terms of size ‖Aᵀd‖; measure relative to that
    return cert.measure / max(1.0, float(np.abs(p.qp.c).max()))


@pytest.mark.parametrize("A, expected", [
    (np.ones((8, 8)), DenseQ),
    (np.ones((4, 8)), DenseQ),           # m = n/2: still dense
    (np.ones((3, 8)), GramQ),            # wide
    (sp.csr_matrix(np.eye(8)), GramQ),   # sparse
    (np.ones((1, 4001)), GramQ),         # n past the dense cap (and wide)
    (np.ones((3600, 1200)), GramQ),      # tall and large: forming AᵀA would cost more than the solve
])
def test_auto_backend(A: Any, expected: type) -> None:
    p = nnls(A, np.ones(A.shape[0]))
    assert isinstance(p.qp.Q, expected)


def test_forced_backend() -> None:
    A, d = data(40, 15)
    assert isinstance(nnls(A, d, backend="gram").qp.Q, GramQ)
    assert isinstance(nnls(A[:3], d[:3], backend="dense").qp.Q, DenseQ)
    Q = bounded_least_squares(sp.csr_matrix(A), d, -1, 1, backend="dense").qp.Q
    assert isinstance(Q, DenseQ)
    np.testing.assert_allclose(Q.M, A.T @ A, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["dense", "gram"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("m, n", SHAPES)
def test_objective_identity_and_residual(m: int, n: int, sparse: bool, backend: str) -> None:
    A, d = data(m, n, seed=1)
    A[np.random.default_rng(2).random(A.shape) < 0.3] = 0.0
    p = nnls(sp.csr_matrix(A) if sparse else A, d, backend=backend)  # type: ignore[arg-type]
    assert p.qp.n == n and (p.qp.lb == 0).all() and (p.qp.ub == np.inf).all()
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = rng.normal(size=n)
        r = A @ x - d
        assert p.qp.objective(x) == pytest.approx(0.5 * r @ r - 0.5 * d @ d, rel=1e-12, abs=1e-12)
        assert p.residual_norm(x) == pytest.approx(float(np.linalg.norm(r)), rel=1e-12)


@pytest.mark.parametrize("backend", ["dense", "gram"])
@pytest.mark.parametrize("m, n", SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_kkt_at_scipy_nnls(m: int, n: int, seed: int, backend: str) -> None:
    A, d = data(m, n, seed)
    x, rnorm = scipy_nnls(A, d)
    p = nnls(A, d, backend=backend)  # type: ignore[arg-type]
    assert (x == 0).any()  # some bounds active, so complementarity is exercised
    assert relative_kkt(p, x) <= 1e-8
    assert p.residual_norm(x) == pytest.approx(rnorm, rel=1e-10)
    # not vacuous: a point off the optimum fails the same check
    assert relative_kkt(p, x + 0.01) > 1e-4


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("m, n", SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_kkt_at_scipy_bvls(m: int, n: int, seed: int, sparse: bool) -> None:
    A, d = data(m, n, seed)
    rng = np.random.default_rng(seed + 10)
    lb, ub = rng.uniform(-0.5, 0.0, n), rng.uniform(0.0, 0.5, n)
    lb[0], ub[1] = -np.inf, np.inf  # one-sided and
    lb[2], ub[2] = -np.inf, np.inf  # free variables
    res = lsq_linear(A, d, bounds=(lb, ub), method="bvls", tol=1e-12)
    p = bounded_least_squares(sp.csr_matrix(A) if sparse else A, d, lb, ub)
    assert ((res.x == lb) | (res.x == ub)).any()
    assert relative_kkt(p, res.x) <= 1e-8
    assert p.residual_norm(res.x) == pytest.approx(float(np.linalg.norm(A @ res.x - d)), rel=1e-12)
    assert relative_kkt(p, np.clip(res.x + 0.01, lb, ub)) > 1e-4


def test_decode_after_solve() -> None:
    # end to end through a qpcore strategy on a finite box (what SMO accepts) over GramQ
    from qpcore_strategies.smo import SMO

    A, d = data(30, 8, seed=4)
    lb, ub = np.full(8, -0.2), np.full(8, 0.2)
    p = bounded_least_squares(A, d, lb, ub, backend="gram")
    result = qpcore.solve(p.qp, SMO(), tol=1e-8)
    x, rnorm = p.decode(result)
    ref = lsq_linear(A, d, bounds=(lb, ub), method="bvls", tol=1e-12)
    np.testing.assert_allclose(x, ref.x, atol=1e-6)
    assert rnorm == pytest.approx(float(np.linalg.norm(A @ ref.x - d)), rel=1e-8)


@pytest.mark.parametrize("call, match", [
    (lambda A, d: nnls(A, d[:-1]), "d: shape mismatch"),
    (lambda A, d: nnls(A, np.where(np.arange(d.size) == 2, np.nan, d)), "d: contains NaN"),
    (lambda A, d: nnls(A, np.where(np.arange(d.size) == 2, np.inf, d)), "d: contains inf"),
    (lambda A, d: nnls(np.where(A > 1, np.nan, A), d), "A: contains NaN or inf"),
    (lambda A, d: nnls(sp.csr_matrix(np.where(A > 1, np.inf, A)), d), "A: contains NaN or inf"),
    (lambda A, d: nnls(A[0], d), "A: expected a 2-D array"),
    (lambda A, d: nnls(A, d, backend="cholesky"),  # type: ignore[arg-type]
     "backend: unknown backend"),
    (lambda A, d: bounded_least_squares(A, d, 1.0, 0.0), "lb > ub"),
    (lambda A, d: bounded_least_squares(A, d, np.zeros(3), 1.0), "lb: shape mismatch"),
    (lambda A, d: bounded_least_squares(A, d, 0.0, np.nan), "ub: contains NaN"),
    (lambda A, d: bounded_least_squares(A, d, np.inf, np.inf), "lb = \\+inf"),
])
def test_bad_input(call: Any, match: str) -> None:
    A, d = data(12, 5)
    with pytest.raises(ProblemError, match=match):
        call(A, d)
