"""The equality structure (``QP.equality``) and the certificate with several rows.

Disjoint groups are measured group by group (LIBSVM's Solver_NU), general rows by the projected
reduced gradient with the best multipliers; both are checked at independent reference optima
(``qpcore.testkit.reference.dense_reference``, which shares nothing with ``qpcore.kkt``) and at points
moved off them along a feasible descent direction.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore.core.optimality import group_gaps, maximal_violating_pair, measure, scores_of
from qpcore.testkit.reference import dense_reference


def _group_qp(seed: int, n: int, groups: int, singles: int, unit: bool = True) -> qpcore.QP:
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, max(2, n // 2)))
    Q = M @ M.T + 1e-3 * np.eye(n)
    c = rng.standard_normal(n)
    ub = rng.uniform(0.5, 2.0, n)
    member = rng.integers(0, groups, n)
    member[:singles] = -1
    member[singles:singles + groups] = np.arange(groups)       # every group has a member
    A = np.zeros((groups, n))
    coef = rng.choice([-1.0, 1.0], n) if unit else rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
    for i in range(n):
        if member[i] >= 0:
            A[member[i], i] = coef[i]
    xf = rng.uniform(0.0, 1.0, n) * ub
    return qpcore.QP(Q, c, 0.0, ub, A, A @ xf)


def _general_qp(seed: int, n: int, m: int) -> tuple[qpcore.QP, np.ndarray]:
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    Q = M @ M.T / n + 1e-2 * np.eye(n)
    A = rng.standard_normal((m, n))
    xf = rng.uniform(-1.0, 1.0, n)
    return qpcore.QP(Q, rng.standard_normal(n), -1.0, 1.0, A, A @ xf), xf


def test_structure_is_recognised() -> None:
    n = 6
    Q = np.eye(n)
    assert qpcore.QP(Q, np.ones(n)).equality.kind == "none"
    one = qpcore.QP(Q, np.ones(n), 0, 1, np.array([1.0, -1, 1, -1, 1, 0]), 0.0).equality
    assert (one.kind, one.m, one.unit) == ("groups", 1, True)
    assert one.singles.tolist() == [5]
    two = qpcore.QP(Q, np.ones(n), 0, 1, [[1, 1, 1, 0, 0, 0], [0, 0, 0, -1, 2, 0]], [1, 0.5]).equality
    assert (two.kind, two.unit) == ("groups", False)
    assert two.group.tolist() == [0, 0, 0, 1, 1, -1]
    assert two.coef.tolist() == [1, 1, 1, -1, 2, 0]
    assert two.members(1).tolist() == [3, 4]
    general = qpcore.QP(Q, np.ones(n), 0, 1, [[1, 1, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0]], [1, 1]).equality
    assert general.kind == "general"
    assert "general" in general.describe()


def test_an_infeasible_group_is_named() -> None:
    with pytest.raises(qpcore.ProblemError, match="row 1"):
        qpcore.QP(np.eye(4), np.zeros(4), 0, 1, [[1, 1, 0, 0], [0, 0, 1, 1]], [1.0, 3.0])


@given(seed=st.integers(0, 2**31), n=st.integers(6, 24), groups=st.integers(2, 3), singles=st.integers(0, 3),
       unit=st.booleans())
def test_groups_certified_at_the_reference_and_not_off_it(seed: int, n: int, groups: int, singles: int,
                                                          unit: bool) -> None:
    qp = _group_qp(seed, n, groups, singles, unit)
    x, _ = dense_reference(qp)
    cert = qpcore.kkt(qp, x)
    scale = 1.0 + float(np.abs(qp.gradient(x)).max())
    assert cert.paired and cert.multipliers.shape == (groups,)
    assert cert.measure <= 1e-8 * scale
    assert cert.primal <= 1e-9 * cert.primal_scale
    # move along the steepest pair of the worst group of a point off the optimum: measured, in one group
    rng = np.random.default_rng(seed)
    y = np.clip(x + 0.3 * rng.standard_normal(n), qp.lb, qp.ub)
    s = scores_of(qp, y, qp.gradient(y))
    pair = maximal_violating_pair(s)
    if pair is not None:
        i, j = pair
        assert qp.equality.group[i] == qp.equality.group[j]
        assert s.v[i] - s.v[j] == pytest.approx(float(group_gaps(s).max()))
    assert measure(s) >= 0.0


@given(seed=st.integers(0, 2**31), n=st.integers(4, 20), m=st.integers(2, 5))
def test_general_rows_certified_at_the_reference(seed: int, n: int, m: int) -> None:
    m = min(m, n - 1)
    qp, xf = _general_qp(seed, n, m)
    x, f = dense_reference(qp)
    cert = qpcore.kkt(qp, x)
    scale = 1.0 + float(np.abs(qp.gradient(x)).max())
    assert not cert.paired and cert.multipliers.shape == (m,)
    assert cert.measure <= 1e-8 * scale
    # the feasible point the right-hand side was made from: measured as not optimal when it is not
    if qp.objective(xf) > f + 1e-6 * scale * (1.0 + abs(f)):
        assert qpcore.kkt(qp, xf).measure > 1e-9


def test_general_rows_at_a_vertex_and_at_a_feasible_point_off_it() -> None:
    # two rows, the optimum a vertex (no free variable: the multipliers are not fixed by least
    # squares); a feasible point with three free variables is measured as not optimal
    Q = np.diag([1.0, 1.0, 1.0, 1.0])
    c = np.array([-5.0, 3.0, 4.0, 0.0])
    A = np.array([[1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 1.0, -1.0]])
    qp = qpcore.QP(Q, c, 0.0, 1.0, A, [1.0, 0.0])
    x, _ = dense_reference(qp)
    assert qpcore.kkt(qp, x).measure <= 1e-9
    worse = np.array([0.5, 0.0, 0.5, 0.5])          # feasible, not optimal
    assert qpcore.kkt(qp, worse).primal == 0.0
    assert qp.objective(worse) > qp.objective(x) + 0.1
    assert qpcore.kkt(qp, worse).measure > 1e-3
