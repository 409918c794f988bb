"""Printing the problem, its equality structure, a run's state, result and certificate gives a
summary of a line or two (sizes, kinds, counts, a few numbers), never the arrays: a problem can
have millions of variables."""

from __future__ import annotations

import numpy as np
import pytest

from qpcore import QP, Kernel, KernelQ, Result, State, Status, bound_status, kkt
from qpcore.core.problem import Equality

N = 10_000


@pytest.fixture(scope="module")
def big() -> QP:
    """A 10,000-variable C-SVC dual over a kernel operator (rows computed on demand: cheap to build)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, 2))
    y = np.where(rng.random(N) < 0.5, 1.0, -1.0)
    return QP(KernelQ(X, Kernel("rbf", gamma=0.5), y), -np.ones(N), 0.0, 1.0, y, 0.0)


@pytest.fixture(scope="module")
def result(big: QP) -> Result:
    x = np.zeros(N)
    g = big.gradient(x)       # x = 0: no kernel row is computed
    cert = kkt(big, x, g)
    state = State(x=x, g=g, status=bound_status(x, big.lb, big.ub), counters={"steps": 0})
    return Result(x=x, multipliers=cert.multipliers, z=cert.z, status=Status.MAX_ITER, objective=0.0, kkt=cert,
                  iterations=0, stats={"seconds": 0.0}, state=state)


def test_reprs_of_a_large_problem_are_short(big: QP, result: Result) -> None:
    for obj in (big, big.equality, result, result.kkt, result.state):
        text = repr(obj)
        assert len(text) < 300 and "\n" not in text and "array(" not in text and "..." not in text, text


def test_reprs_say_what_matters(big: QP, result: Result) -> None:
    assert repr(big) == ("QP(n=10000, Q=KernelQ, m=1 (1 disjoint ±1 equality group), "
                         "bounds: 10000 finite lb, 10000 finite ub, 0 fixed)")
    assert repr(big.equality) == "Equality(kind='groups', m=1, n=10000, unit=True, singles=0)"
    assert repr(result).startswith("Result(status=max_iter, objective=0, iterations=0, n=10000, kkt=KKT(")
    assert repr(result).endswith("z: 10000), stats: 1 entries)")
    assert repr(result.state) == "State(n=10000, iteration=0, done=False, work=None, counters={'steps': 0})"
    assert str(result.kkt) == repr(result.kkt) and "measure=" in repr(result.kkt)


def test_equality_kinds_and_inequality_rows() -> None:
    assert repr(Equality.of(np.zeros((0, 4)))) == "Equality(kind='none', m=0, n=4)"
    assert repr(Equality.of(np.ones((2, 4)))) == "Equality(kind='general', m=2, n=4)"
    assert repr(Equality.of(np.array([[2.0, 0.0, 0.0, 1.0]]))) == "Equality(kind='groups', m=1, n=4, unit=False, singles=2)"
    qp = QP(np.eye(3), np.ones(3), [0.0, 0.0, 1.0], [1.0, np.inf, 1.0], C=np.ones((2, 3)), l=[-1.0, -2.0], u=[1.0, 2.0])
    assert repr(qp) == ("QP(n=3, Q=DenseQ, m=0 (no equality rows), k=2 inequality rows, "
                        "bounds: 3 finite lb, 2 finite ub, 1 fixed)")
    assert repr(qp.slack_form()).startswith("SlackForm(qp=QP(n=5, Q=DenseQ, m=2 ") and "C=" not in repr(qp.slack_form())
