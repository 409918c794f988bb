"""Inequality rows l ≤ Cx ≤ u: validation, the slack form inside the core, the certificate in the
user's terms and continuous at the bounds, ``qpcore.solve_qp`` and ``qpcore solve qp`` with rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

import qpcore
from qpcore import QP, ProblemError, kkt, solve_qp
from qpcore.core.certificate import BOUND_BAND
from qpcore.backends.sparse import SparseQ
from qpcore_strategies import DenseActiveSet
from qpcore_strategies.gradient_projection import GPCG


def _random_qp(seed: int, n: int = 9, k: int = 6, m: int = 1) -> QP:
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n - 2))
    x_feas = rng.uniform(-0.5, 0.5, n)        # feasible by construction: rows around this point
    C = rng.standard_normal((k, n))
    Cx = C @ x_feas
    A = rng.standard_normal((m, n))
    return QP(M @ M.T, rng.standard_normal(n) * 3, -1.0, 1.0, A, A @ x_feas, C=C,
              l=np.where(rng.random(k) < 0.3, -np.inf, Cx - rng.uniform(0, 0.2, k)),
              u=np.where(rng.random(k) < 0.3, np.inf, Cx + rng.uniform(0, 0.2, k)))


def _clarabel(qp: QP) -> tuple[np.ndarray, float]:
    qpsolvers = pytest.importorskip("qpsolvers")
    if "clarabel" not in qpsolvers.available_solvers:
        pytest.skip("clarabel not installed")
    up, lo = np.isfinite(qp.u), np.isfinite(qp.l)
    G = np.vstack([qp.C[up], -qp.C[lo]])
    h = np.concatenate([qp.u[up], -qp.l[lo]])
    P = qp.Q.M if isinstance(qp.Q, qpcore.DenseQ) else qp.Q.M.toarray()   # type: ignore[attr-defined]
    sol = qpsolvers.Problem(sp.csc_matrix(P), qp.c, sp.csc_matrix(G), h, sp.csc_matrix(qp.A) if qp.m else None,
                            qp.b if qp.m else None, qp.lb, qp.ub)
    out = qpsolvers.solve_problem(sol, solver="clarabel", tol_feas=1e-12, tol_gap_abs=1e-12, tol_gap_rel=1e-12)
    assert out.found
    return out.x, qp.objective(out.x)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(C=[[1.0, 1.0, 1.0]], l=[2.0], u=[1.0]), "l > u at row 0"),
    (dict(C=[[1.0, np.nan, 1.0]], u=[1.0]), "C: contains NaN at row 0, column 1"),
    (dict(C=[[1.0, 1.0]], u=[1.0]), r"^the inequality rows C: expected shape \(k, 3\), got \(1, 2\)$"),
    (dict(C=[[1.0, 1.0, 1.0]], u=[1.0, 2.0]), "u: shape mismatch"),
    (dict(C=[[1.0, 1.0, 1.0]], l=[np.nan]), "l: contains NaN"),
    (dict(C=[[1.0, 1.0, 1.0]], l=[np.inf]), "l = \\+inf"),
    (dict(C=[[1.0, 1.0, 1.0]], l=[5.0]), "row 0 of C x ranges over \\[0.0, 3.0\\]"),
    (dict(C=[[1.0, 1.0, 1.0], [1.0, -1.0, 0.0]], l=[2.5, 0.9], u=[3.0, 1.0]), "feasibility LP"),
    (dict(C=[["a", "b", "c"]], u=[1.0]), "not real numeric"),
])
def test_bad_rows_are_refused_before_any_work(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ProblemError, match=match):
        QP(np.eye(3), np.ones(3), 0.0, 1.0, **kwargs)   # type: ignore[arg-type]


def test_rows_and_equalities_infeasible_together_get_the_lp_verdict() -> None:
    # each constraint alone is satisfiable; x1 + x2 = 1.5 with x1 − x2 ≥ 0.9 and x ≤ 1 is not... it is:
    # x = (1.2, 0.3) breaks x ≤ 1; the LP proves no point exists
    with pytest.raises(ProblemError, match="HiGHS"):
        QP(np.eye(2), np.zeros(2), 0.0, 1.0, [[1.0, 1.0]], [1.5], C=[[1.0, -1.0]], l=[0.9])
    # and the check can be skipped by a caller who knows better, the range checks staying
    QP(np.eye(2), np.zeros(2), 0.0, 1.0, [[1.0, 1.0]], [1.5], C=[[1.0, -1.0]], l=[0.9], check_feasible=False)


def test_rows_default_to_open_bounds_and_sparse_input_is_accepted() -> None:
    qp = QP(sp.csr_matrix(np.eye(3)), np.ones(3), C=sp.csr_matrix([[1.0, 0.0, 1.0]]), u=[1.0])
    assert isinstance(qp.Q, SparseQ) and qp.k == 1 and qp.l[0] == -np.inf and qp.C.shape == (1, 3)


# --------------------------------------------------------------------------- the slack form


def test_slack_form_has_the_same_optimum_and_maps_back() -> None:
    qp = _random_qp(0)
    form = qp.slack_form()
    assert form.qp.n == qp.n + qp.k and form.qp.m == qp.m + qp.k and form.qp.k == 0
    x = np.linspace(-0.3, 0.3, qp.n)
    z = form.lift(x)
    assert np.array_equal(form.restrict(z), x)
    assert form.qp.objective(z) == pytest.approx(qp.objective(x), rel=1e-14)
    assert np.allclose(form.qp.A @ z - form.qp.b, np.concatenate([qp.A @ x - qp.b, np.zeros(qp.k)]))
    assert qp.slack_form() is form          # built once


@pytest.mark.anchor
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("strategy", [DenseActiveSet(), GPCG()], ids=["active-set", "gpcg"])
def test_box_and_equality_strategies_solve_rows_through_the_slack_form(seed: int, strategy: qpcore.Strategy) -> None:
    qp = _random_qp(seed)
    result = qpcore.solve(qp, strategy, tol=1e-8)
    assert result.status is qpcore.Status.CONVERGED, result.status
    assert result.x.shape == (qp.n,) and result.kkt.y.shape == (qp.k,)    # the user's terms, no slacks
    _, f_ref = _clarabel(qp)
    assert result.objective == pytest.approx(f_ref, abs=1e-7 * max(1.0, abs(f_ref)))
    # the reported multipliers make the stationarity hold with the signs of the convention
    y, z = result.kkt.y, result.kkt.z
    r = qp.gradient(result.x) - qp.A.T @ result.kkt.multipliers - qp.C.T @ y - z
    assert np.abs(r).max() < 1e-9
    Cx = qp.C @ result.x
    slack = 1e-7
    assert np.all(y[Cx > qp.l + slack] <= 1e-9) and np.all(y[Cx < qp.u - slack] >= -1e-9)


# --------------------------------------------------------------------------- the certificate


def _portfolio(n: int = 12, seed: int = 3) -> tuple[QP, np.ndarray]:
    """min ½xᵀΣx − μᵀx  s.t.  Σx = 1, x ≥ 0, gᵀx ≥ 0.3 (a sector share), and SLSQP's optimum."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((n, 4))
    Sigma = F @ F.T / 4 + np.diag(rng.uniform(0.01, 0.05, n))
    mu = rng.uniform(0.0, 0.1, n)
    g = (rng.random(n) < 0.4).astype(float)
    qp = QP(Sigma, -mu, 0.0, np.inf, np.ones((1, n)), [1.0], C=g[None, :], l=[0.3])
    res = minimize(lambda x: qp.objective(x), np.full(n, 1.0 / n), jac=lambda x: qp.gradient(x), method="SLSQP",
                   bounds=[(0, None)] * n,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1, "jac": lambda x: np.ones((1, n))},
                                {"type": "ineq", "fun": lambda x: g @ x - 0.3, "jac": lambda x: g[None, :]}],
                   options={"ftol": 1e-15, "maxiter": 500})
    assert res.success
    return qp, np.asarray(res.x)


def test_another_solvers_optimum_certifies() -> None:
    qp, x_slsqp = _portfolio()
    ours = qpcore.solve(qp, DenseActiveSet(), tol=1e-12)
    assert ours.converged
    assert np.abs(x_slsqp - ours.x).max() < 1e-7
    # SLSQP lifts variables a rounding off their bounds: they count at them, so its point certifies
    # to its own accuracy, not to the size of the multipliers of those bounds
    cert = kkt(qp, x_slsqp)
    assert cert.measure < 1e-6 and cert.feasible(1e-9)
    assert cert.measure < 0.01 * np.abs(ours.kkt.z).max()


@pytest.mark.parametrize("noise", [1e-16, 1e-13, 1e-12])
def test_a_point_within_rounding_of_the_optimum_certifies(noise: float) -> None:
    qp, _ = _portfolio()
    ours = qpcore.solve(qp, DenseActiveSet(), tol=1e-12)
    rng = np.random.default_rng(0)
    x = ours.x + noise * rng.uniform(0.0, 1.0, qp.n)      # every variable lifted off its bound
    assert kkt(qp, x).ok(1e-9), kkt(qp, x)


@pytest.mark.parametrize("delta", [1e-7, 1e-5, 1e-3])
def test_a_point_moved_beyond_the_tolerance_does_not_certify(delta: float) -> None:
    qp, _ = _portfolio()
    ours = qpcore.solve(qp, DenseActiveSet(), tol=1e-12)
    at_zero = ours.x <= 0.0
    z = np.abs(ours.kkt.z[at_zero])
    assert at_zero.any() and z.max() > 1e-2
    # lift the variables at 0 by delta, keeping Σx = 1 by taking it off the largest: within the
    # band (BOUND_BAND) their complementarity |z|·delta counts, beyond it their |z|
    x = ours.x.copy()
    x[at_zero] += delta
    x[np.argmax(x)] -= delta * at_zero.sum()
    cert = kkt(qp, x)
    assert cert.feasible() and not cert.ok(1e-9)
    assert cert.measure >= min(z.max() * delta, z.max()) * (1 - 1e-6)


def test_proposed_multipliers_are_verified_not_trusted() -> None:
    qp, _ = _portfolio()
    ours = qpcore.solve(qp, DenseActiveSet(), tol=1e-12)
    good = kkt(qp, ours.x, multipliers=(ours.kkt.multipliers, ours.kkt.y))
    assert good.measure < 1e-12
    bad = kkt(qp, ours.x, multipliers=(ours.kkt.multipliers + 1.0, ours.kkt.y))
    assert bad.measure > 0.5              # wrong multipliers cannot make a point look optimal


# --------------------------------------------------------------------------- solve_qp and the command line


@pytest.mark.anchor
def test_solve_qp_matches_qpsolvers_meaning_and_signs() -> None:
    qpsolvers = pytest.importorskip("qpsolvers")
    if "clarabel" not in qpsolvers.available_solvers:
        pytest.skip("clarabel not installed")
    rng = np.random.default_rng(5)
    n = 10
    M = rng.standard_normal((n, n))
    P, q = M @ M.T, rng.standard_normal(n)
    G, h = rng.standard_normal((4, n)), rng.uniform(0.0, 0.2, 4)
    A, b = rng.standard_normal((2, n)), np.zeros(2)
    lb, ub = -np.ones(n), np.ones(n)
    ours = solve_qp(sp.csc_matrix(P), q, sp.csc_matrix(G), h, A, b, lb, ub, strategy="active-set")
    ref = qpsolvers.solve_problem(qpsolvers.Problem(P, q, G, h, A, b, lb, ub), solver="clarabel",
                                  tol_feas=1e-12, tol_gap_abs=1e-12, tol_gap_rel=1e-12)
    assert ours.found and ref.found
    assert np.allclose(ours.x, ref.x, atol=1e-7)
    for name in ("y", "z", "z_box"):
        assert np.allclose(getattr(ours, name), getattr(ref, name), atol=1e-6), name
    assert np.abs(P @ ours.x + q + G.T @ ours.z + A.T @ ours.y + ours.z_box).max() < 1e-9


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(G=np.ones((1, 3))), "h: required"),
    (dict(h=np.ones(1)), "h: given without G"),
    (dict(A=np.ones((1, 3)), b=[np.nan]), "b: contains NaN"),
    (dict(G=np.ones((2, 3)), h=[1.0, np.nan]), "h: contains NaN"),
    (dict(G=np.ones((2, 4)), h=[1.0, 1.0]), r"^G: expected shape \(rows, 3\), got \(2, 4\)$"),
])
def test_solve_qp_bad_input(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ProblemError, match=match):
        solve_qp(np.eye(3), np.ones(3), **kwargs)   # type: ignore[arg-type]


def test_solve_qp_refuses_a_nonconvex_p_saying_how_far() -> None:
    with pytest.raises(ProblemError, match="not positive semidefinite.*smallest eigenvalue -1"):
        solve_qp(np.diag([1.0, -1.0, 2.0]), np.ones(3))


def test_command_line_takes_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from qpcore_cli import main

    qp = _random_qp(1, m=0)
    path = tmp_path / "p.npz"
    np.savez(path, Q=qp.Q.M, c=qp.c, lb=qp.lb, ub=qp.ub, C=qp.C, l=qp.l, u=qp.u)    # type: ignore[attr-defined]
    out = tmp_path / "r.json"
    assert main(["solve", "qp", "--npz", str(path), "--strategy", "active-set", "--tol", "1e-9", "--quiet",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["status"] == "converged" and len(report["row_multipliers"]) == qp.k
    assert report["objective"] == pytest.approx(_clarabel(qp)[1], abs=1e-7)
    np.savez(path, Q=qp.Q.M, c=qp.c, G=qp.C)     # type: ignore[attr-defined]
    assert main(["solve", "qp", "--npz", str(path), "--quiet"]) == 2
    assert "G and h go together" in capsys.readouterr().err
