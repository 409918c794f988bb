"""Several equality rows (issue 24): general rows and disjoint groups solved, certified and checked
against independent references.

Problems come from :func:`qpcore.testkit.generators.planted_rows_qp` (the optimum planted, so its objective
is known exactly) with 2–5 general rows or 2–3 disjoint groups, degenerate on purpose: dependent
rows, a row whose variables are all fixed, duplicated variables, fixed variables, infinite bounds,
ill-conditioned and singular (PSD) Q, no strict complementarity, infeasible warm starts. Each run
must end ``converged`` with the certificate (``qpcore.kkt``, computed from the problem alone) met
to tol, and its objective must match the planted optimum and an interior-point solve by Clarabel
(an independent solver, when installed). Both DenseActiveSet and GPCG take either kind of rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import qpcore
from qpcore.testkit.generators import planted_rows_qp
from qpcore.backends.capabilities import Operator, OperatorStats
from qpcore.testkit.reference import dense_reference
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.gradient_projection import GPCG

FloatArray = np.ndarray


def clarabel_objective(qp: qpcore.QP) -> float | None:
    """The optimal objective by Clarabel (interior point, tolerances 1e-12), or None when Clarabel
    is not installed or does not report ``Solved``."""
    try:
        import clarabel
        import scipy.sparse as sp
    except ImportError:
        return None
    Q = np.asarray(qp.Q.rows(np.arange(qp.n)), dtype=np.float64)
    lb, ub, n = qp.lb, qp.ub, qp.n
    fixed = lb == ub
    has_l, has_u = np.isfinite(lb) & ~fixed, np.isfinite(ub) & ~fixed
    eye = sp.eye(n, format="csc")
    # rows: A x = b and x_i = lb_i for fixed variables (zero cone), then −x ≥ −... as s = b − Ax ≥ 0
    G = sp.vstack([sp.csc_matrix(qp.A), eye[fixed], -eye[has_l], eye[has_u]]).tocsc()
    h = np.concatenate([qp.b, lb[fixed], -lb[has_l], ub[has_u]])
    cones = [clarabel.ZeroConeT(qp.m + int(fixed.sum())), clarabel.NonnegativeConeT(int(has_l.sum() + has_u.sum()))]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-12
    settings.max_iter = 500
    sol = clarabel.DefaultSolver(sp.triu(sp.csc_matrix(Q)).tocsc(), qp.c, G, h, cones, settings).solve()
    if str(sol.status) != "Solved":
        return None
    x = np.clip(np.array(sol.x), lb, ub)
    return float(0.5 * x @ Q @ x + qp.c @ x)


@st.composite
def rows_problems(draw: st.DrawFn, kind: str | None = None, max_n: int = 30) -> tuple[qpcore.QP, FloatArray, Any]:
    """(qp, x*, x0): a planted problem with several rows and a warm start (None, or an
    infeasible point: outside the box and off the rows)."""
    kind = kind or draw(st.sampled_from(["general", "groups"]))
    n = draw(st.integers(8, max_n))
    m = draw(st.integers(2, 5 if kind == "general" else 3))
    rank = draw(st.one_of(st.none(), st.integers(0, n - 1)))
    params = dict(kind=kind, cond=draw(st.sampled_from([1.0, 1e3, 1e6])), rank=rank,
                  p_bound=draw(st.sampled_from([0.2, 0.5, 0.8])),
                  infinite=draw(st.sampled_from([0.0, 0.15, 0.4])),
                  dependent=draw(st.booleans()), zero_row=draw(st.booleans()),
                  duplicates=draw(st.integers(0, 2)), fixed=draw(st.sampled_from([0.0, 0.1, 0.3])),
                  degenerate=draw(st.sampled_from([0.0, 0.5])))
    seed = draw(st.integers(0, 2**31))
    note(f"planted_rows_qp({n}, {m}, seed={seed}, **{params})")
    qp, xs = planted_rows_qp(n, m, seed=seed, **params)
    x0 = None
    if draw(st.booleans()):
        x0 = np.random.default_rng(seed + 1).standard_normal(n) * 3.0
    return qp, xs, x0


def _scale(qp: qpcore.QP, x: FloatArray) -> float:
    """The size of the objective's terms at x (f is known to rounding of that)."""
    Q = np.asarray(qp.Q.rows(np.arange(qp.n)))
    return 1.0 + 0.5 * float(np.abs(x) @ np.abs(Q) @ np.abs(x)) + float(np.abs(qp.c) @ np.abs(x))


def _check(qp: qpcore.QP, xs: FloatArray, x0: FloatArray | None, strategy: Any) -> qpcore.Result:
    tol = 1e-8 * max(1.0, float(np.abs(qp.c).max()))
    res = qpcore.solve(qp, strategy, x0, tol=tol, max_iter=50_000)
    note(f"{res.status} measure {res.kkt.measure:.3g} primal {res.kkt.primal:.3g} stats {res.stats}")
    assert res.status is qpcore.Status.CONVERGED
    assert res.kkt.ok(tol)
    f_star, s = qp.objective(xs), _scale(qp, xs)
    # convexity: f(x) ≥ f* for a feasible x; the certificate bounds how far above it may be
    assert res.objective >= f_star - 1e-9 * s
    assert res.objective <= f_star + 1e-7 * s
    f_ref = clarabel_objective(qp)
    if f_ref is not None:
        assert abs(res.objective - f_ref) <= 1e-6 * s, (res.objective, f_ref)
    if x0 is not None and not (np.all(x0 >= qp.lb) and np.all(x0 <= qp.ub)):
        assert res.stats["x0_moved"] > 0.0
    return res


@given(rows_problems(kind="general"))
def test_dense_active_set_general_rows(case: tuple[qpcore.QP, FloatArray, Any]) -> None:
    qp, xs, x0 = case
    assert qp.equality.kind == "general"
    _check(qp, xs, x0, DenseActiveSet())


@given(rows_problems(kind="groups"))
def test_dense_active_set_disjoint_groups(case: tuple[qpcore.QP, FloatArray, Any]) -> None:
    qp, xs, x0 = case
    assert qp.equality.kind == "groups" and qp.m >= 2
    _check(qp, xs, x0, DenseActiveSet())


@given(rows_problems(kind="groups"))
def test_gpcg_disjoint_groups(case: tuple[qpcore.QP, FloatArray, Any]) -> None:
    # the projection separates into one-row projections per group: GPCG's searches, CG on the
    # face (each group's row projected out) and the pair fallback (within a group) all apply
    qp, xs, x0 = case
    _check(qp, xs, x0, GPCG())


@given(rows_problems(kind="general", max_n=24))
def test_gpcg_general_rows(case: tuple[qpcore.QP, FloatArray, Any]) -> None:
    # general rows: the projection is the exact dual Newton method (qpcore.linalg.projection.project_rows),
    # CG runs on an orthonormal basis of the rows' null space on the face, the stuck-cycle fallback
    # is the steepest feasible descent direction of a small LP
    qp, xs, x0 = case
    _check(qp, xs, x0, GPCG())


def test_gpcg_issue_example() -> None:
    qp = _issue_example()
    res = qpcore.solve(qp, GPCG(), tol=1e-9)
    assert res.status is qpcore.Status.CONVERGED and res.kkt.ok(1e-9)
    assert res.objective == pytest.approx(dense_reference(qp)[1], abs=1e-8)


def _issue_example() -> qpcore.QP:
    # issue 24's two-row QP: 30 variables, dense PSD Q, a budget row and a partial-sum row, 0 ≤ x ≤ 1
    rng = np.random.default_rng(24)
    n = 30
    M = rng.standard_normal((n, n))
    Q = M @ M.T / n
    A = np.zeros((2, n))
    A[0] = 1.0
    A[1, :10] = 1.0
    return qpcore.QP(Q, rng.standard_normal(n), 0.0, 1.0, A, np.array([1.0, 0.4]))


def test_issue_example_budget_and_partial_sum() -> None:
    qp = _issue_example()
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-10)
    assert res.status is qpcore.Status.CONVERGED
    assert res.kkt.ok(1e-10)
    np.testing.assert_allclose(qp.A @ res.x, qp.b, atol=1e-13)
    x_ref, f_ref = dense_reference(qp)
    s = _scale(qp, x_ref)
    assert abs(res.objective - f_ref) <= 1e-10 * s
    f_cl = clarabel_objective(qp)
    if f_cl is not None:
        assert abs(res.objective - f_cl) <= 1e-7 * s
    # the face's factor follows the free set: updated, never rebuilt
    assert res.stats["factor_updates"] > 0 and res.stats["refactors"] == 0
    assert res.multipliers.shape == (2,)


def test_unbounded_direction_in_the_null_space_of_the_rows() -> None:
    # x0 + x1 = 0, x2 free: Q is zero along (1, −1, 0) and c descends along it with no bound
    Q = np.diag([0.0, 0.0, 1.0])
    Q[0, 1] = Q[1, 0] = 0.0
    A = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    qp = qpcore.QP(Q, np.array([-1.0, 1.0, 0.0]), -np.inf, np.inf, A, np.array([0.0, 0.5]))
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-9)
    assert res.status is qpcore.Status.UNBOUNDED


def test_singular_q_regular_on_the_rows_and_duplicated_variables() -> None:
    # Q = 0 on a duplicated pair (columns 0 and 1 identical everywhere): the objective is flat along
    # e0 − e1, the optimum is a segment, the rows pin everything else
    Q = np.zeros((4, 4))
    Q[2, 2] = Q[3, 3] = 1.0
    A = np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    c = np.array([1.0, 1.0, 0.0, 0.0])
    qp = qpcore.QP(Q, c, 0.0, 2.0, A, np.array([1.5, 1.0]))
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-10)
    assert res.status is qpcore.Status.CONVERGED and res.kkt.ok(1e-10)
    assert res.objective == pytest.approx(dense_reference(qp)[1], abs=1e-10)


class UncheckedQ(Operator):
    """A dense symmetric matrix behind the operator protocol, with no PSD check on construction."""

    def __init__(self, M: FloatArray) -> None:
        self.M = np.asarray(M, dtype=np.float64)
        self.stats = OperatorStats()

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.M.shape[0]), int(self.M.shape[1]))

    def diag(self) -> FloatArray:
        return np.diag(self.M).copy()

    def matvec(self, x: FloatArray) -> FloatArray:
        out: FloatArray = self.M @ x
        return out

    def rows(self, idx: Any) -> FloatArray:
        out: FloatArray = self.M[np.asarray(idx, dtype=np.intp)]
        return out

    def row(self, i: int) -> FloatArray:
        out: FloatArray = self.M[i]
        return out


def test_negative_curvature_with_rows_is_never_converged() -> None:
    rng = np.random.default_rng(3)
    n = 10
    M = rng.standard_normal((n, n))
    Q = M @ M.T / n - 0.5 * np.eye(n)              # indefinite
    A = rng.standard_normal((3, n))
    x0 = rng.uniform(0.2, 0.8, n)
    qp = qpcore.QP(UncheckedQ(Q), rng.standard_normal(n), 0.0, 1.0, A, A @ x0)
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-9, max_iter=10_000)
    # a stationary point of a non-convex problem is reported as such, never as converged
    assert res.status is qpcore.Status.NONCONVEX
    assert res.kkt.ok(1e-9)


def test_infeasible_warm_start_is_projected() -> None:
    qp = _issue_example()
    x0 = np.full(qp.n, 5.0)                      # outside the box and off both rows
    res = qpcore.solve(qp, DenseActiveSet(), x0, tol=1e-10)
    assert res.status is qpcore.Status.CONVERGED
    assert res.stats["x0_moved"] > 3.0
    assert res.objective == pytest.approx(dense_reference(qp)[1], abs=1e-9)
