"""INCAS: KKT property tests on generated problems, dense references, singular free blocks,
LIBSVM cross-check, incremental mode (resume on a grown problem), honest statuses."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import qpcore
from qpcore_formulations.data.files import load_dataset
from qpcore_formulations.svm import csvc
from qpcore.testkit.reference import assert_kkt, check_against_reference, dense_reference
from qpcore.testkit.testing import box_equality_qps, svm_duals, warm_starts
from qpcore_strategies.incas import INCAS, INCASWork


def _finite(qp: qpcore.QP) -> bool:
    return bool(np.isfinite(qp.lb).all() and np.isfinite(qp.ub).all())


@given(qp=svm_duals(max_n=30), shrinking=st.booleans(), rel=st.sampled_from([1e-6, 1e-8]))
def test_svm_duals_match_reference(qp: qpcore.QP, shrinking: bool, rel: float) -> None:
    check_against_reference(qp, INCAS(shrinking=shrinking, shrink_every=3), rel)


@given(qp=box_equality_qps(max_n=30), rel=st.sampled_from([1e-6, 1e-8]))
def test_box_equality_qps_match_reference(qp: qpcore.QP, rel: float) -> None:
    # general a (mixed signs and scales, some a_i = 0), lb, ub, fixed variables; INCAS needs a
    # finite box, so the one-sided draws are left out
    assume(_finite(qp))
    check_against_reference(qp, INCAS(shrinking=True, shrink_every=3), rel)


@given(qp=svm_duals(max_n=30), rel=st.sampled_from([1e-6, 1e-8]))
def test_no_equality_matches_reference(qp: qpcore.QP, rel: float) -> None:
    free = qpcore.QP(qp.Q, qp.c, qp.lb, qp.ub)   # the fixed-threshold SVM: no equality row
    check_against_reference(free, INCAS(shrinking=True, shrink_every=3), rel)


@given(qp=svm_duals(max_n=24, fixed=False), data=st.data())
def test_feasible_warm_starts(qp: qpcore.QP, data: st.DataObject) -> None:
    # interior variables of the start enter S one by one (dependences walk to a bound first)
    x0 = data.draw(warm_starts(qp, feasible=True))
    tol = 1e-8 * max(1.0, float(np.abs(qp.c).max()))
    res = qpcore.solve(qp, INCAS(), x0, tol=tol)
    assert_kkt(qp, res, tol)
    _, f_ref = dense_reference(qp)
    assert res.objective <= f_ref + 1e-7 * max(1.0, abs(f_ref))


def _singular_svm(rng: np.random.Generator, n: int, d: int, C: float, kernel: str) -> qpcore.QP:
    """Duplicates with the same label, the same point with both labels, n > d + 1 for linear."""
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    k = n // 4
    X[k:2 * k] = X[:k]                       # duplicates, same labels
    y[k:2 * k] = y[:k]
    X[2 * k:2 * k + 2] = X[3 * k:3 * k + 2]  # contradictions: same x, opposite labels
    y[2 * k:2 * k + 2] = -y[3 * k:3 * k + 2]
    kern = qpcore.Kernel("linear") if kernel == "linear" else qpcore.Kernel("rbf", gamma=0.5)
    return csvc(X, y, C, kern, dtype=np.float64).qp


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(8, 40), d=st.integers(1, 4),
       logC=st.floats(-3.0, 3.0), kernel=st.sampled_from(["linear", "rbf"]), rel=st.sampled_from([1e-6, 1e-8]))
def test_singular_free_blocks(seed: int, n: int, d: int, logC: float, kernel: str, rel: float) -> None:
    qp = _singular_svm(np.random.default_rng(seed), n, d, 10.0 ** logC, kernel)
    res = check_against_reference(qp, INCAS(shrinking=True, shrink_every=4), rel)
    assert res.stats["refactors"] <= res.stats["released"]


def test_dependences_are_met_and_resolved() -> None:
    qp = _singular_svm(np.random.default_rng(7), 60, 2, 1e3, "linear")
    res = check_against_reference(qp, INCAS())
    assert res.stats["dependences"] > 0
    # the free set stays nonsingular: at most d + 1 free vectors for a linear kernel in d dims
    assert np.count_nonzero((res.x > 0) & (res.x < 1e3)) <= 3


def test_nonconvex_kernel_stops_honestly() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    y = np.where(rng.random(60) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    prob = csvc(X, y, 1.0, qpcore.Kernel("sigmoid", gamma=2.0, coef0=1.0), dtype=np.float64)
    res = qpcore.solve(prob.qp, INCAS(), tol=1e-6)
    assert res.status in (qpcore.Status.NONCONVEX, qpcore.Status.STALLED)
    assert res.state.nonconvex
    assert res.kkt.feasible()
    assert res.objective < 0


def _grown_svm(n: int, n0: int, seed: int = 0, C: float = 10.0) -> tuple[qpcore.QP, qpcore.QP]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n) > 0.3, 1.0, -1.0)
    k = qpcore.Kernel("rbf", gamma=0.3)
    # float32 row storage: INCAS computes its rows (and the new columns) in float64 itself
    return csvc(X[:n0], y[:n0], C, k).qp, csvc(X, y, C, k).qp


def test_incremental_resume_reaches_batch_optimum() -> None:
    qp0, qp = _grown_svm(400, 340)
    res0 = qpcore.solve(qp0, INCAS(), tol=1e-9)
    assert res0.converged
    batch = qpcore.solve(qp, INCAS(), tol=1e-9)
    assert batch.converged
    x_before = res0.x.copy()
    inc = qpcore.solve(qp, INCAS(), resume=res0, tol=1e-9)
    assert_kkt(qp, inc, 1e-9)
    assert inc.objective == pytest.approx(batch.objective, rel=1e-9)
    assert inc.stats["refactors"] == 0 and inc.state.work(INCASWork).fac.counters["refactors"] == 0
    assert inc.iterations < batch.iterations
    assert inc.stats["cross_entries"] > 0          # resumed (the new columns of S), not restarted
    # only the new variables' rows and the new columns of S were computed, never full old rows
    assert inc.stats["rows_requested"] < batch.stats["rows_requested"]
    np.testing.assert_array_equal(res0.x, x_before)   # the old result is not touched


@pytest.mark.parametrize("max_iter", [None, 120])
def test_incremental_resume_from_shrunk_or_stopped_state(max_iter: int | None) -> None:
    # shrinking every few steps leaves the old run with permuted buffer columns and stale
    # gradients of shrunk variables; a stopped run is not at a face optimum
    qp0, qp = _grown_svm(300, 250, seed=4)
    strat = INCAS(shrinking=True, shrink_every=3, release=1)   # the paper's pivots: 120 stop it early
    res0 = qpcore.solve(qp0, strat, tol=1e-8, max_iter=max_iter)
    assert res0.stats["shrink_events"] > 0 or max_iter is not None
    assert res0.converged == (max_iter is None)
    inc = qpcore.solve(qp, strat, resume=res0, tol=1e-8)
    assert_kkt(qp, inc, 1e-8)
    batch = qpcore.solve(qp, INCAS(), tol=1e-8)
    assert inc.objective == pytest.approx(batch.objective, rel=1e-8)


def test_resume_falls_back_when_not_incas() -> None:
    from qpcore_strategies.smo import SMO

    qp0, qp = _grown_svm(120, 100)
    old = qpcore.solve(qp0, SMO(), tol=1e-6)
    assert INCAS().resume(qp, old.state, 1e-6) is None
    res = qpcore.solve(qp, INCAS(), resume=old, tol=1e-6)
    assert_kkt(qp, res, 1e-6)
    # a changed old part (another C) is refused too
    prev = qpcore.solve(qp0, INCAS(), tol=1e-6)
    other = qpcore.QP(qp.Q, qp.c, qp.lb, 2.0 * qp.ub, qp.A, qp.b)
    assert INCAS().resume(other, prev.state, 1e-6) is None


def test_limits_return_feasible_best_point_with_honest_status() -> None:
    _, qp = _grown_svm(600, 10, seed=2, C=100.0)
    part = qpcore.solve(qp, INCAS(), tol=1e-9, max_iter=25)
    assert part.status is qpcore.Status.MAX_ITER and part.iterations == 25
    assert part.kkt.feasible() and part.kkt.measure > 1e-9
    assert part.objective < 0
    t = qpcore.solve(qp, INCAS(), tol=1e-12, time_limit=0.02)
    assert t.status in (qpcore.Status.TIME_LIMIT, qpcore.Status.CONVERGED)
    assert t.kkt.feasible()
    # the stopped run warm-starts to the optimum
    full = qpcore.solve(qp, INCAS(), part, tol=1e-8)
    assert_kkt(qp, full, 1e-8)


def test_bad_input_raises_before_work() -> None:
    Q = qpcore.DenseQ(np.eye(3))
    with pytest.raises(qpcore.ProblemError, match="finite bounds"):
        qpcore.solve(qpcore.QP(Q, -np.ones(3), np.zeros(3), np.full(3, np.inf)), INCAS())
    two = qpcore.QP(Q, -np.ones(3), np.zeros(3), np.ones(3), np.array([[1.0, -1.0, 0.0], [0.0, 1.0, -1.0]]), np.zeros(2))
    with pytest.raises(qpcore.ProblemError, match="one equality row"):
        qpcore.solve(two, INCAS())
    assert Q.stats.cache_hits == 0   # no row was asked for
    with pytest.raises(qpcore.ProblemError):
        INCAS(shrink_every=0)


@pytest.mark.data
def test_adult_against_libsvm() -> None:
    from sklearn.svm import SVC

    X, y = load_dataset("adult")
    idx = np.sort(np.random.default_rng(0).choice(X.shape[0], 600, replace=False))
    Xd, yy = X[idx].toarray(), y[idx]
    for kernel in (qpcore.Kernel("rbf", gamma=0.05), qpcore.Kernel("linear")):
        prob = csvc(Xd, yy, 1.0, kernel)
        res = qpcore.solve(prob.qp, INCAS(), tol=1e-8)
        assert_kkt(prob.qp, res, 1e-8)
        svc = SVC(C=1.0, kernel=kernel.name, gamma=kernel.gamma, tol=1e-8, cache_size=200).fit(Xd, yy)
        alpha = np.zeros(yy.size)
        alpha[svc.support_] = np.abs(svc.dual_coef_[0])
        f_svc = prob.qp.objective(alpha)
        # INCAS is exact on its final face: never worse than LIBSVM's point beyond 1e-8 relative
        assert res.objective <= f_svc + 1e-8 * abs(f_svc)
        assert res.objective == pytest.approx(f_svc, rel=1e-6)


def test_progress_snapshots_see_an_up_to_date_gradient() -> None:
    # Step 1 keeps only g_S current; the loop's sync_gradient must refresh it for reporters
    _, qp = _grown_svm(200, 100, seed=4, C=10.0)
    gaps: list[float] = []

    def cb(p: qpcore.Progress) -> None:
        w = p.state.work(INCASWork)
        assert np.allclose(p.state.g[w.perm[:w.nact]], qp.gradient(p.state.x)[w.perm[:w.nact]], atol=1e-8)
        gaps.append(p.gap)

    res = qpcore.solve(qp, INCAS(), tol=1e-6, callback=cb)
    assert res.converged and len(gaps) == res.iterations
