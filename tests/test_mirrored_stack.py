"""ε-SVR's and ν-SVR's mirrored duals over their kernel matrix by the batched SMO (qpcore_train.mirrored_stack)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.svm import SVR, NuSVR

import qpcore
import qpcore_train.mirrored_stack as ms
from qpcore.backends.operators import Kernel
from qpcore_formulations.svm_family import epsilon_svr, nu_svr
from qpcore_strategies.auto import Auto
from qpcore_strategies.registry import make
from qpcore_strategies.smo import SMO
from qpcore_train.fit import fit_formulation


def _data(seed: int, n: int, *, duplicates: bool = False, ties: bool = False) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    z = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.2 * rng.standard_normal(n)
    if duplicates:
        X[n // 2:n // 2 + 6] = X[:6]        # the same point, other targets
    if ties:
        z[: n // 3] = np.round(z[: n // 3], 1)
    return X, z


def _fit(X: Any, z: Any, *, C: float = 3.0, eps: float = 0.1, tol: float = 1e-6, batched: bool | None = None,
         strategy: Any = None, weight: Any = None, cache_bytes: int = 64 << 20) -> Any:
    return fit_formulation("epsilon-svr", X, z, Kernel("rbf", gamma=0.5), Auto() if strategy is None else strategy,
                           params={"C": C, "epsilon": eps}, tol=tol, sample_weight=weight, cache_bytes=cache_bytes,
                           batched=batched)


def _reference(X: Any, z: Any, C: Any, eps: float = 0.1) -> float:
    P = epsilon_svr(X, z, C=C, epsilon=eps, kernel=Kernel("rbf", gamma=0.5))
    return float(qpcore.solve(P.qp, SMO(), tol=1e-10).objective)


def test_the_stack_takes_epsilon_svr_and_certifies() -> None:
    """ε-SVR goes through the stack (stats say so), its point is certified at tol by the float64
    problem and its objective is the strategy alone's; the predictions match LIBSVM's."""
    X, z = _data(0, 150)
    got = _fit(X, z)
    alone = _fit(X, z, batched=False)
    res = got.results[0]
    assert res.stats["strategy"] == "stacked-smo" and res.status.code == "converged"
    assert res.kkt.ok(1e-6) and alone.results[0].stats["strategy"] != "stacked-smo"
    assert res.objective == pytest.approx(alone.results[0].objective, rel=1e-9, abs=1e-9)
    assert res.objective == pytest.approx(_reference(X, z, 3.0), rel=1e-9, abs=1e-9)
    svr = SVR(C=3.0, epsilon=0.1, gamma=0.5, tol=1e-6).fit(X, z)
    np.testing.assert_allclose(got.model.decision_function(X) if hasattr(got.model, "decision_function")
                               else got.model.predict(X), svr.predict(X), atol=1e-4)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 60), C=st.sampled_from([0.05, 1.0, 30.0, 1000.0]),
       eps=st.sampled_from([0.0, 0.05, 0.5]), shape=st.sampled_from(["plain", "duplicates", "ties", "weights"]),
       tol=st.sampled_from([1e-3, 1e-6]))
def test_every_stack_run_is_certified(seed: int, n: int, C: float, eps: float, shape: str, tol: float) -> None:
    """Generated regressions (duplicated points with other targets, tied targets, sample weights,
    ε = 0, C from 0.05 to 1000; single precision at tol 1e-3): the result is certified at tol by
    the float64 problem, by the stack or after a handoff, at the optimum to tol's precision."""
    X, z = _data(seed, n, duplicates=shape == "duplicates" and n >= 14, ties=shape == "ties")
    w = np.random.default_rng(seed).uniform(0.2, 3.0, n) if shape == "weights" else None
    got = _fit(X, z, C=C, eps=eps, tol=tol, weight=w)
    res = got.results[0]
    assert res.status.code == "converged" and res.kkt.ok(tol)
    assert "stacked-smo" in [c[1] for c in res.stats["strategy_choice"]]
    ref = _reference(X, z, C * (np.ones(n) if w is None else w), eps)
    scale = max(1.0, abs(ref))
    # a pair gap of tol bounds the objective's excess by about tol times the box's mass
    assert ref - 1e-9 * scale <= res.objective <= ref + tol * C * n * 2 + 1e-9 * scale


def test_a_run_past_the_budget_is_handed_over() -> None:
    """A run the step budget does not finish goes to the strategy from its point: still certified,
    the stack's steps counted in the iterations, the reason in the stats."""
    X, z = _data(3, 120)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ms, "HANDOFF_STEPS", 0.02)
        got = _fit(X, z, C=100.0, tol=1e-8)
    res = got.results[0]
    assert "budget" in res.stats["handed_over"] and res.kkt.ok(1e-8)
    assert res.stats["strategy_choice"][0][1] == "stacked-smo" and res.iterations >= res.stats["stack_steps"] > 0
    assert res.objective == pytest.approx(_reference(X, z, 100.0), rel=1e-9)


def test_a_limit_is_reported_not_certified() -> None:
    """A caller's iteration limit below the budget ends the stack: reported, not handed over."""
    X, z = _data(4, 80)
    got = fit_formulation("epsilon-svr", X, z, Kernel("rbf", gamma=0.5), Auto(), params={"C": 100.0}, tol=1e-9,
                          max_iter=5)
    res = got.results[0]
    assert res.stats["strategy"] == "stacked-smo" and res.status.code == "max_iter" and res.iterations == 5
    assert "handed_over" not in res.stats


@pytest.mark.parametrize("case", ["budget", "batched", "strategy", "precomputed"])
def test_when_the_stack_is_not_taken(case: str) -> None:
    """A kernel matrix over the cache budget, batched=False, a strategy without SMO's lockstep
    method and a precomputed kernel each leave the problem to the strategy alone."""
    X, z = _data(5, 60)
    if case == "precomputed":
        G = Kernel("rbf", gamma=0.5).block(X, X)
        got = fit_formulation("epsilon-svr", G, z, Kernel("precomputed"), Auto(), params={"C": 3.0}, tol=1e-6)
    else:
        got = _fit(X, z, cache_bytes=1000 if case == "budget" else 64 << 20, batched=False if case == "batched" else None,
                   strategy=make("incas") if case == "strategy" else None)
    res = got.results[0]
    assert res.stats.get("strategy") != "stacked-smo" and res.kkt.ok(1e-6)
    P = epsilon_svr(X, z, C=3.0, epsilon=0.1, kernel=Kernel("rbf", gamma=0.5))
    why = ms.mirrored_why_not(P.qp, Kernel("rbf", gamma=0.5), Auto(), x0=None, tol=1e-6, cache_bytes=1000,
                              reporter=None)
    assert why is not None and "exceeds the cache budget" in why


def test_a_warm_start_is_used() -> None:
    """A feasible start (an earlier solution) is where the stack starts: far fewer steps."""
    X, z = _data(6, 100)
    cold = _fit(X, z, C=10.0)
    warm = fit_formulation("epsilon-svr", X, z, Kernel("rbf", gamma=0.5), Auto(), params={"C": 10.0, "epsilon": 0.1},
                           tol=1e-6, x0=cold.alphas)
    assert warm.results[0].stats["strategy"] == "stacked-smo" and warm.results[0].kkt.ok(1e-6)
    assert warm.results[0].iterations < cold.results[0].iterations / 5


def _nu_reference(X: Any, z: Any, C: float, nu: float) -> float:
    P = nu_svr(X, z, C=C, nu=nu, kernel=Kernel("rbf", gamma=0.5))
    return float(qpcore.solve(P.qp, SMO(), tol=1e-10).objective)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(8, 60), C=st.sampled_from([0.05, 1.0, 30.0, 1000.0]),
       nu=st.sampled_from([0.05, 0.5, 1.0]), shape=st.sampled_from(["plain", "duplicates", "ties"]),
       tol=st.sampled_from([1e-3, 1e-6]))
def test_nu_svr_two_groups_certified(seed: int, n: int, C: float, nu: float, shape: str, tol: float) -> None:
    """ν-SVR's two groups (a pair step within a half, the gap the larger of the halves'): every
    generated problem (ν from 0.05 to 1, all variables at C when ν = 1) certified at tol by the
    float64 problem, in the stack, at the optimum to tol's precision."""
    X, z = _data(seed, n, duplicates=shape == "duplicates" and n >= 14, ties=shape == "ties")
    got = fit_formulation("nu-svr", X, z, Kernel("rbf", gamma=0.5), Auto(), params={"C": C, "nu": nu}, tol=tol,
                          cache_bytes=64 << 20)
    res = got.results[0]
    assert res.stats["strategy"] == "stacked-smo" and res.status.code == "converged" and res.kkt.ok(tol)
    ref = _nu_reference(X, z, C, nu)
    scale = max(1.0, abs(ref))
    assert ref - 1e-9 * scale <= res.objective <= ref + tol * C * n * 2 + 1e-9 * scale


def test_nu_svr_matches_libsvm_and_is_not_handed_over() -> None:
    """ν-SVR in the stack: LIBSVM's predictions; past a tiny budget it is not handed over (auto
    declares no other method for two equality rows: the stack goes on)."""
    X, z = _data(8, 150)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ms, "HANDOFF_STEPS", 0.02)
        got = fit_formulation("nu-svr", X, z, Kernel("rbf", gamma=0.5), Auto(), params={"C": 3.0, "nu": 0.4},
                              tol=1e-7)
    res = got.results[0]
    assert res.stats["strategy"] == "stacked-smo" and "handed_over" not in res.stats and res.kkt.ok(1e-7)
    assert res.objective == pytest.approx(_nu_reference(X, z, 3.0, 0.4), rel=1e-9)
    ref = NuSVR(C=3.0, nu=0.4, gamma=0.5, tol=1e-7).fit(X, z)
    np.testing.assert_allclose(got.model.predict(X), ref.predict(X), atol=1e-4)


def test_the_handoff_is_declared_by_the_strategy() -> None:
    """auto declares another method (INCAS) for ε-SVR's one row, not for ν-SVR's two; SMO for neither."""
    X, z = _data(9, 30)
    eps = epsilon_svr(X, z, C=1.0, kernel=Kernel("rbf", gamma=0.5)).qp
    nu = nu_svr(X, z, C=1.0, nu=0.5, kernel=Kernel("rbf", gamma=0.5)).qp
    assert Auto().lockstep_switch(eps) and not Auto().lockstep_switch(nu)
    assert not SMO().lockstep_switch(eps)


def test_grouped_stack_equals_each_problem_alone() -> None:
    """Three ν-SVR duals of different sizes in one grouped stack: without face steps each takes the
    iterates it takes alone, bit for bit, as problems finish and the stack compacts; with them (a
    padded batched solve rounds differently in the last bits) each ends at its own optimum."""
    from qpcore_train.batched_smo import batched_smo

    sizes = [30, 22, 40]
    N = 2 * max(sizes)
    B = len(sizes)
    Ks, Y, P, UB, A0, GR = [], np.ones((B, N)), np.zeros((B, N)), np.zeros((B, N)), np.zeros((B, N)), np.zeros((B, N), bool)
    for p, l in enumerate(sizes):
        X, z = _data(20 + p, l)
        K = Kernel("rbf", gamma=0.5).block(X, X)
        prob = nu_svr(X, z, C=2.0, nu=0.3 + 0.2 * p, kernel=Kernel("rbf", gamma=0.5))
        pad = np.zeros((N, N))
        pt = np.arange(2 * l) % l
        pad[:2 * l, :2 * l] = K[pt][:, pt]
        Ks.append(pad)
        Y[p, :2 * l] = np.concatenate((np.ones(l), -np.ones(l)))
        P[p, :2 * l] = prob.qp.c
        UB[p, :2 * l] = prob.qp.ub
        A0[p, :2 * l] = prob.x0
        GR[p, l:2 * l] = True
    S = np.stack(Ks)

    def run(idx: list[int], every: int) -> Any:
        sub = S[idx]
        return batched_smo(lambda pid, t: sub[pid, t] if t.ndim == 1 else sub[pid[:, None], t], np.ones((len(idx), N)),
                           Y[idx], UB[idx], p=P[idx], tol=1e-9, alpha=A0[idx], newton_every=every, groups=GR[idx])

    together, faced = run([0, 1, 2], 0), run([0, 1, 2], 7)
    assert together.converged.all() and faced.converged.all() and len(set(together.iterations.tolist())) > 1
    assert faced.newton.min() > 0
    for p in range(B):
        alone = run([p], 0)
        np.testing.assert_array_equal(together.alpha[p], alone.alpha[0])
        assert together.iterations[p] == alone.iterations[0]
        # ν-SVR's optimum is unique in β = α − α* only (α and α* can both move along a null direction)
        l = sizes[p]
        np.testing.assert_allclose(faced.alpha[p, :l] - faced.alpha[p, l:2 * l],
                                   alone.alpha[0, :l] - alone.alpha[0, l:2 * l], atol=1e-7)
        # each half's sum is where it started
        np.testing.assert_allclose([together.alpha[p, :l].sum(), together.alpha[p, l:2 * l].sum()],
                                   [A0[p, :l].sum(), A0[p, l:2 * l].sum()], rtol=1e-12)
