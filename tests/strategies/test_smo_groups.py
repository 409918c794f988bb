"""SMO on ill-conditioned duals: the free-subspace Newton step ends the pair steps' crawl.

ν-SVC with barely overlapping classes (LIBSVM's Solver_NU) is the reported case: the margin scale r
is tiny, the free block is ill-conditioned, and pair steps (ours and LIBSVM's alike: NuSVC at
tol 1e-12 counts 1,689,692 iterations on the first case below) shrink the gap by a hair per step.
"""

from __future__ import annotations

import numpy as np
import pytest

import qpcore
from qpcore_formulations.svm import csvc
from qpcore_formulations.svm_family import nu_svc
from qpcore.backends.operators import Kernel
from qpcore.testkit.reference import assert_kkt, dense_reference
from qpcore_strategies.smo import SMO


def two_class(n: int, seed: int, shift: float = 1.2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = 1.0, -1.0
    X = rng.standard_normal((n, 2))
    X[:, 0] += shift * (y > 0)
    return X, y


def _nu_svc(seed: int) -> qpcore.QP:
    X, y = two_class(80, seed)
    return nu_svc(X, y, 0.2, Kernel("rbf", gamma=0.5)).qp


@pytest.mark.parametrize("seed", [20, 3])
def test_nu_svc_barely_overlapping_converges_at_tol_1e12(seed: int) -> None:
    qp = _nu_svc(seed)
    res = qpcore.solve(qp, SMO(), tol=1e-12, max_iter=20_000)
    assert res.status is qpcore.Status.CONVERGED
    assert res.iterations < 10_000
    assert res.stats["newton_steps"] > 0
    assert res.kkt.ok(1e-12)
    # each group keeps its sum ν·l/2 = 8 (the Newton step projects its direction onto the rows)
    grp = qp.equality.group_ids
    assert grp is not None
    for k in (0, 1):
        assert res.x[grp == k].sum() == pytest.approx(8.0, abs=1e-12)
    assert_kkt(qp, res, 1e-10)                 # a fresh gradient's certificate, not SMO's own
    _, f_ref = dense_reference(qp)
    assert res.objective == pytest.approx(f_ref, rel=1e-8, abs=1e-15)


def test_pair_steps_alone_crawl_on_it() -> None:
    # the cause: without the Newton step the gap is still above 1e-4 after 5000 pair steps
    res = qpcore.solve(_nu_svc(20), SMO(newton_free=0), tol=1e-12, max_iter=5000)
    assert res.status is qpcore.Status.MAX_ITER
    assert "newton_steps" not in res.stats


def test_c_svc_that_converges_keeps_libsvm_iterates() -> None:
    # no crawl, no Newton step: the run is the pair steps' alone, step for step
    X, y = two_class(60, 1, shift=3.0)
    qp = csvc(X, y, 1.0, Kernel("rbf", gamma=0.5)).qp
    on = qpcore.solve(qp, SMO(), tol=1e-8)
    off = qpcore.solve(qp, SMO(newton_free=0), tol=1e-8)
    assert on.status is off.status is qpcore.Status.CONVERGED
    assert "newton_steps" not in on.stats
    assert on.iterations == off.iterations
    np.testing.assert_array_equal(on.x, off.x)


def test_c_svc_large_c_crawl_ends_too() -> None:
    # one group: C-SVC with a large C on overlapping classes crawls the same way
    X, y = two_class(60, 7)
    qp = csvc(X, y, 1e4, Kernel("rbf", gamma=0.5)).qp
    res = qpcore.solve(qp, SMO(), tol=1e-10, max_iter=20_000)
    assert res.status is qpcore.Status.CONVERGED
    assert res.kkt.ok(1e-10)
    assert abs(float(res.x @ qp.equality.coef)) < 1e-8
