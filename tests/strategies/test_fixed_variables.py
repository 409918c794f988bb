"""Fixed variables (lb = ub) and zero equality coefficients (a_i = 0) in GPCG and DenseActiveSet.

Both reach the KKT tolerance (``qpcore.testkit.reference.assert_kkt``) and the dense reference's objective
on box QPs and box QPs with one equality row, some variables fixed and some outside the equality;
DenseActiveSet never releases a fixed variable. ASVM is not tested here: its problem class is
u ≥ 0 (lb = 0, ub = inf, no equality), where no variable can be fixed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore.testkit.reference import check_against_reference
from qpcore.testkit.testing import box_equality_qps, box_qps, nonneg_qps, svm_duals
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.gradient_projection import GPCG

STRATEGIES = {"gpcg": GPCG(), "dense": DenseActiveSet()}
FRACTIONS = st.sampled_from([0.1, 0.3, 1.0])


@pytest.mark.parametrize("name", list(STRATEGIES))
@given(qp=FRACTIONS.flatmap(lambda f: box_qps(fixed=f)))
def test_box_with_fixed_variables(name: str, qp: qpcore.QP) -> None:
    check_against_reference(qp, STRATEGIES[name])


@pytest.mark.parametrize("name", list(STRATEGIES))
@given(qp=st.tuples(FRACTIONS, st.sampled_from([0.2, 0.5])).flatmap(
    lambda fz: box_equality_qps(fixed=fz[0], zero_coefficients=fz[1])))
def test_equality_row_with_fixed_and_zero_coefficients(name: str, qp: qpcore.QP) -> None:
    check_against_reference(qp, STRATEGIES[name])


@pytest.mark.parametrize("name", list(STRATEGIES))
@given(qp=st.sampled_from([0.2, 0.5, 1.0]).flatmap(lambda z: box_equality_qps(zero_coefficients=z)))
def test_equality_row_with_zero_coefficients(name: str, qp: qpcore.QP) -> None:
    check_against_reference(qp, STRATEGIES[name])


@pytest.mark.parametrize("name", list(STRATEGIES))
@given(qp=FRACTIONS.flatmap(lambda f: st.one_of(svm_duals(fixed=f), nonneg_qps(fixed=f))))
def test_svm_and_nonnegative_with_fixed_variables(name: str, qp: qpcore.QP) -> None:
    check_against_reference(qp, STRATEGIES[name])


# --- regressions ---------------------------------------------------------------------------------

def _fixed_box(n: int = 30, seed: int = 0) -> tuple[qpcore.QP, np.ndarray]:
    """A box QP whose fixed variables have the largest gradients, of either sign (they would be
    the most violating if they could move)."""
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n))
    Q = M @ M.T / n + 0.1 * np.eye(n)
    c = rng.normal(size=n)
    lb, ub = -np.ones(n), np.ones(n)
    fixed = rng.choice(n, size=n // 3, replace=False)
    lb[fixed] = ub[fixed] = rng.uniform(-1.0, 1.0, size=fixed.size)
    c[fixed] = np.where(np.arange(fixed.size) % 2, 100.0, -100.0)
    return qpcore.QP(Q, c, lb, ub), fixed


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_fixed_variables_converge_quickly(name: str) -> None:
    # GPCG's old projected gradient kept g on fixed variables: it never met tol and ran to its limits
    qp, fixed = _fixed_box()
    assert np.abs(qp.gradient(np.clip(np.zeros(qp.n), qp.lb, qp.ub))[fixed]).max() > 1.0
    res = qpcore.solve(qp, STRATEGIES[name], tol=1e-10, max_iter=500)
    assert res.status is qpcore.Status.CONVERGED
    np.testing.assert_array_equal(res.x[fixed], qp.lb[fixed])


@pytest.mark.parametrize("equality", [False, True])
def test_dense_active_set_never_releases_a_fixed_variable(equality: bool) -> None:
    qp, fixed = _fixed_box(20, seed=3)
    if equality:
        a = np.random.default_rng(4).normal(size=qp.n)
        a[::5] = 0.0                                 # and some variables outside the equality
        qp = qpcore.QP(qp.Q, qp.c, qp.lb, qp.ub, a[None, :], float(a @ qp.ub))
    released: list[int] = []

    def watch(p: qpcore.Progress) -> None:
        released.extend(int(i) for i in fixed if p.state.status[i] == 0)

    # from the upper corner of the box every free variable starts in the working set, so the
    # method must release bounds; the fixed variables' gradients are the largest
    res = qpcore.solve(qp, DenseActiveSet(), qp.ub, tol=1e-10, callback=watch)
    assert res.status is qpcore.Status.CONVERGED
    assert released == []
    assert res.iterations < 10 * qp.n


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_zero_coefficient_variable_moves_alone(name: str) -> None:
    # x2 is outside the equality x0 − x1 = 0: its optimum, 0.5, is interior and reached by itself
    Q = np.diag([1.0, 1.0, 2.0])
    qp = qpcore.QP(Q, np.array([-1.0, -1.0, -1.0]), 0.0, 1.0, np.array([[1.0, -1.0, 0.0]]), 0.0)
    res = qpcore.solve(qp, STRATEGIES[name], tol=1e-12)
    assert res.status is qpcore.Status.CONVERGED
    np.testing.assert_allclose(res.x, [1.0, 1.0, 0.5], atol=1e-12)


def test_all_but_one_variable_fixed() -> None:
    # every variable fixed but one, which the equality then pins too: a single feasible point
    n = 6
    lb, ub = np.full(n, 0.25), np.full(n, 0.25)
    ub[0] = 1.0
    lb[0] = 0.0
    a = np.ones(n)
    qp = qpcore.QP(np.eye(n), -np.ones(n), lb, ub, a[None, :], 1.5)
    for strategy in STRATEGIES.values():
        res = qpcore.solve(qp, strategy, tol=1e-12)
        assert res.status is qpcore.Status.CONVERGED
        np.testing.assert_allclose(res.x, [0.25] * n, atol=1e-12)
