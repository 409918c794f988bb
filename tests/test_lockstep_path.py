"""The lockstep path of cross-validation (qpcore_train.lockstep_path): every fold's binary duals in
one stack per C, each certified alone; against the same problems solved one by one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris

import qpcore
import qpcore_train.lockstep_path as lp
from qpcore.backends.operators import Kernel
from qpcore.core.problem import QP
from qpcore_strategies.auto import Auto
from qpcore_strategies.smo import SMO
from qpcore_train.model_selection import FoldQ, SharedKernel, grid_cv, stratified_folds

FloatArray = np.ndarray


def _problems(seed: int, n: int, B: int, *, duplicates: bool = False,
              contradictory: bool = False) -> tuple[SharedKernel, list[Any], list[Any], list[Any]]:
    """B binary problems over subsets of one RBF kernel (sizes differ, so the stack pads)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
    if duplicates:
        X[n // 2:n // 2 + 5] = X[:5]
        y[n // 2:n // 2 + 5] = -y[:5] if contradictory else y[:5]
    source = SharedKernel(X, Kernel("rbf", gamma=0.7))
    members, labels, weights = [], [], []
    for p in range(B):
        r = np.sort(rng.choice(n, size=n - 7 * p, replace=False)).astype(np.intp)
        if np.unique(y[r]).size < 2:
            r[:2] = [int(np.argmax(y)), int(np.argmin(y))]
            r = np.unique(r)
        members.append(r)
        labels.append(y[r])
        weights.append(rng.uniform(0.5, 2.0, r.size))
    return source, members, labels, weights


def _maker(source: SharedKernel, members: list[Any], labels: list[Any], shift: float = 0.0) -> Any:
    def make_qp(p: int, ub: FloatArray, own: Any) -> QP:
        n = members[p].size
        Q = FoldQ(source, members[p], labels[p], own=own)
        return QP(Q, -np.ones(n) * (1.0 + shift), np.zeros(n), ub, labels[p][None, :], np.zeros(1))
    return make_qp


def _run(source: SharedKernel, members: list[Any], labels: list[Any], weights: list[Any], Cs: list[float], *,
         tol: float, stack_bytes: int, dtype: Any = np.float64, max_iter: int | None = None,
         shift: float = 0.0, strategy: Any = None, handoff: bool = False) -> list[lp.PathStep]:
    assert source.dense is not None
    return lp.lockstep_path(source.dense, source.diag(np.arange(source.n)), members, labels, weights,
                            np.asarray(Cs), _maker(source, members, labels, shift),
                            SMO() if strategy is None else strategy, tol=tol, max_iter=max_iter, time_limit=None,
                            stack_bytes=stack_bytes, dtype=dtype, handoff=handoff)


def test_stack_equals_each_problem_alone() -> None:
    """Without the stack of blocks (rows gathered), a problem's iterates in the stack are the ones
    it takes alone: the same points, bit for bit, and each certified."""
    source, members, labels, weights = _problems(0, 60, 4)
    Cs = [0.5, 5.0, 50.0]
    together = _run(source, members, labels, weights, Cs, tol=1e-6, stack_bytes=0)
    for p in range(len(members)):
        alone = _run(source, members[p:p + 1], labels[p:p + 1], weights[p:p + 1], Cs, tol=1e-6, stack_bytes=0)
        for c in range(len(Cs)):
            assert not together[c].stacked
            np.testing.assert_array_equal(together[c].alphas[p], alone[c].alphas[0])
            assert together[c].iterations[p] == alone[c].iterations[0]
            assert together[c].certified[p] and alone[c].certified[0]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(25, 70), Cs=st.lists(st.sampled_from([0.01, 0.3, 3.0, 100.0]),
                                                                        min_size=1, max_size=3, unique=True),
       shape=st.sampled_from(["plain", "duplicates", "contradictory"]))
def test_shrinking_stack_certified_at_the_reference(seed: int, n: int, Cs: list[float], shape: str) -> None:
    """The stack of blocks with shrinking forced early and often (after 3 rounds, at any
    narrowing): every problem of every C certified at tol, at the objective of SMO alone at
    1e-9 (duplicated points and contradictory labels included)."""
    source, members, labels, weights = _problems(seed, n, 3, duplicates=shape != "plain",
                                                 contradictory=shape == "contradictory")
    Cs = sorted(Cs)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lp, "SHRINK_AFTER", 3)
        mp.setattr(lp, "SHRINK_WIDTH", 0.99)
        steps = _run(source, members, labels, weights, Cs, tol=1e-6, stack_bytes=1 << 30)
    make_qp = _maker(source, members, labels)
    for c, C in enumerate(Cs):
        step = steps[c]
        assert step.stacked and step.certified.all() and step.fallbacks == 0
        for p in range(len(members)):
            qp = make_qp(p, C * weights[p], None)
            x = step.alphas[p]
            assert qpcore.kkt(qp, x, qp.gradient(x)).ok(1e-6)
            ref = qpcore.solve(qp, SMO(), tol=1e-9)
            assert step.objective[p] == pytest.approx(ref.objective, rel=1e-5, abs=1e-7)


def test_float32_stack_at_a_loose_tol() -> None:
    """The single-precision stack (tol 1e-3) still ends certified in float64, shrinking or not."""
    source, members, labels, weights = _problems(3, 90, 3)
    for stack_bytes in (0, 1 << 30):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(lp, "SHRINK_AFTER", 5)
            steps = _run(source, members, labels, weights, [1.0, 30.0, 1000.0], tol=1e-3, stack_bytes=stack_bytes,
                         dtype=np.float32)
        assert all(s.certified.all() for s in steps)


def test_refused_point_is_finished_alone() -> None:
    """A point the certificate refuses after the refreshes goes to the strategy alone and is counted.
    The certificate's problem here differs from the stack's (c = −1.02 e), so every point is refused."""
    source, members, labels, weights = _problems(5, 50, 2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lp, "REFRESHES", 0)
        steps = _run(source, members, labels, weights, [1.0], tol=1e-6, stack_bytes=1 << 30, shift=0.02)
    assert steps[0].fallbacks == 2 and steps[0].certified.all()
    make_qp = _maker(source, members, labels, shift=0.02)
    for p in range(2):
        ref = qpcore.solve(make_qp(p, 1.0 * weights[p], None), SMO(), tol=1e-9)
        assert steps[0].objective[p] == pytest.approx(ref.objective, rel=1e-5)


def test_limit_is_reported_not_certified() -> None:
    """A step limit ends the stack: the problems are reported uncertified, not called converged."""
    source, members, labels, weights = _problems(7, 60, 3)
    steps = _run(source, members, labels, weights, [100.0], tol=1e-8, stack_bytes=1 << 30, max_iter=3)
    assert not steps[0].certified.any()
    assert (steps[0].iterations <= 3).all()


def test_handoff_after_the_step_budget() -> None:
    """With ``handoff`` a problem gets HANDOFF_STEPS pair steps per variable in the stack; those
    still above tol are finished by the strategy alone (auto: INCAS at this tol), counted apart
    from the refusals, and end certified at SMO's optimum. A caller's limit below the budget is
    still a limit (reported, not handed over)."""
    source, members, labels, weights = _problems(11, 70, 3, duplicates=True)
    Cs = [0.3, 30.0, 3000.0]
    for stack_bytes in (0, 1 << 30):
        plain = _run(source, members, labels, weights, Cs, tol=1e-8, stack_bytes=stack_bytes)
        steps = _run(source, members, labels, weights, Cs, tol=1e-8, stack_bytes=stack_bytes, strategy=Auto(),
                     handoff=True)
        assert sum(s.handoffs for s in steps) > 0 and all(s.fallbacks == 0 for s in steps)
        assert sum(p.handoffs for p in plain) == 0
        make_qp = _maker(source, members, labels)
        for c, C in enumerate(Cs):
            assert steps[c].certified.all()
            np.testing.assert_allclose(steps[c].objective, plain[c].objective, rtol=1e-7)
            for p in range(len(members)):
                x = steps[c].alphas[p]
                qp = make_qp(p, C * weights[p], None)
                assert qpcore.kkt(qp, x, qp.gradient(x)).ok(1e-8)
    limited = _run(source, members, labels, weights, [3000.0], tol=1e-8, stack_bytes=1 << 30, max_iter=3,
                   strategy=Auto(), handoff=True)
    assert limited[0].handoffs == 0 and not limited[0].certified.any()


def test_handoff_is_declared_by_the_strategy() -> None:
    """auto declares the handoff at its tight tol (where it starts INCAS alone) and where its SMO
    ends with the block finish (tol ≤ 1e-4), not at LIBSVM's 1e-3 nor without the finish; SMO
    never (its own method is the stack's)."""
    assert Auto().lockstep_handoff(1e-6) and Auto().lockstep_handoff(1e-4)
    assert not Auto().lockstep_handoff(1e-3) and not Auto(block_finish=None).lockstep_handoff(1e-4)
    assert not SMO().lockstep_handoff(1e-9)


def test_grid_cv_hands_over_at_a_tight_tol() -> None:
    """grid_cv with auto at tol 1e-7: the large-C problems are handed over, the objectives and
    held-out decisions are those of each problem alone."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((160, 4))
    y_idx = (X[:, 0] + X[:, 1] * X[:, 2] + 0.6 * rng.standard_normal(160) > 0).astype(np.intp)
    folds = stratified_folds(y_idx, 3, seed=1)
    kern = Kernel("rbf", gamma=0.5)
    Cs = [0.1, 10.0, 1000.0]
    lock = grid_cv(X, y_idx, 2, folds, [kern], Cs, tol=1e-7, strategy="auto")
    alone = grid_cv(X, y_idx, 2, folds, [kern], Cs, tol=1e-7, strategy="auto", batched=False)
    assert lock.lockstep and lock.handoffs > 0 and "handed to the strategy" in lock.lockstep_note
    assert lock.converged.all() and alone.converged.all()
    np.testing.assert_allclose(lock.objective, alone.objective, rtol=1e-6)
    for c in range(len(Cs)):
        for f in range(len(folds)):
            np.testing.assert_allclose(lock.raw[0][c][f], alone.raw[0][c][f], atol=1e-4)


def test_grid_cv_lockstep_equals_one_by_one() -> None:
    """grid_cv in lockstep and each problem alone (batched=False): the same objectives to tol's
    precision and the same held-out decisions, three classes one-vs-one."""
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y_idx = np.unique(y, return_inverse=True)[1].astype(np.intp)
    folds = stratified_folds(y_idx, 4, seed=2)
    kern = Kernel("rbf", gamma=0.4)
    Cs = [0.1, 3.0, 300.0]
    lock = grid_cv(X, y_idx, 3, folds, [kern], Cs, tol=1e-7)
    alone = grid_cv(X, y_idx, 3, folds, [kern], Cs, tol=1e-7, batched=False)
    assert lock.lockstep and "lockstep" in lock.lockstep_note
    assert not alone.lockstep and "batched=False" in alone.lockstep_note
    assert lock.converged.all() and alone.converged.all()
    np.testing.assert_allclose(lock.objective, alone.objective, rtol=1e-6)
    for c in range(len(Cs)):
        for f in range(len(folds)):
            np.testing.assert_allclose(lock.raw[0][c][f], alone.raw[0][c][f], atol=1e-4)
            np.testing.assert_array_equal(lock.predicted(0, c, f), alone.predicted(0, c, f))
