"""The block active-set finish (qpcore_strategies.block_finish) on every SVM dual of the family.

Each run ends certified by qpcore.kkt at tol, with the objective of plain SMO and of the dense
reference, and reports its stats; a capped pivoting (max_rounds=1 from a wrong start) and a free
set above max_free fall back to SMO, which finishes the run and says so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qpcore
from qpcore.core.state import Status
from qpcore.backends.operators import DenseQ
from qpcore.linalg.projection import bound_start, feasible_start
from qpcore.testkit.reference import dense_reference
from qpcore.testkit.testing import svm_duals, warm_starts
from qpcore_formulations import svm_family as fam
from qpcore_formulations.svm import csvc
from qpcore_strategies.block_finish import BlockFinish, block_finish
from qpcore_strategies.decomposition import Decomposition
from qpcore_strategies.smo import SMO


def _data(seed: int, n: int = 80) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.7 * rng.normal(size=n) > 0, 1.0, -1.0)
    t = np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)
    return X, y, t


def _abstract(seed: int) -> qpcore.QP:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    a = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    return fam.abstract_form(DenseQ(K * np.outer(a, a)), rng.random(60) + 0.5, a, 0.0, 3.0)


def _problem(kind: str, seed: int) -> qpcore.QP:
    X, y, t = _data(seed)
    if kind == "c-svc":
        return csvc(X, y, C=10.0).qp            # KernelQ, float32 rows: refined with matvec
    if kind == "nu-svc":
        return fam.nu_svc(X, y, nu=0.3).qp       # two groups
    if kind == "one-class":
        return fam.one_class(X, nu=0.2).qp
    if kind == "epsilon-svr":
        return fam.epsilon_svr(X, t, C=10.0, epsilon=0.1).qp   # DoubledKernelQ, 2l variables
    if kind == "nu-svr":
        return fam.nu_svr(X, t, C=10.0, nu=0.4).qp
    return _abstract(seed)                       # DenseQ


KINDS = ["c-svc", "nu-svc", "one-class", "epsilon-svr", "nu-svr", "abstract"]


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(b))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tol", [1e-6, 1e-9])
def test_smo_with_block_finish_certifies(kind: str, tol: float) -> None:
    qp = _problem(kind, 1)
    plain = qpcore.solve(qp, SMO(), tol=tol)
    res = qpcore.solve(qp, SMO(finish=BlockFinish()), tol=tol)
    assert res.status is Status.CONVERGED
    assert qpcore.kkt(qp, res.x).ok(tol)
    ref = plain.objective if kind != "abstract" else dense_reference(qp)[1]
    assert _rel(res.objective, ref) <= 1e-8
    st = res.stats
    assert st["block_finish_tries"] >= 1
    for key in ("block_finish_rounds", "block_finish_moves", "block_finish_pivots", "block_finish_ratio_steps",
                "block_finish_fallbacks"):
        assert key in st
    assert "certified by the block finish" in st["block_finish"]
    assert st["block_finish_fallbacks"] <= st["block_finish_tries"] - 1


@pytest.mark.parametrize("kind", ["nu-svc", "abstract"])
def test_against_dense_reference(kind: str) -> None:
    qp = _problem(kind, 2)
    res = qpcore.solve(qp, SMO(finish=BlockFinish()), tol=1e-9)
    assert res.status is Status.CONVERGED and "certified" in res.stats["block_finish"]
    assert _rel(res.objective, dense_reference(qp)[1]) <= 1e-8


def test_default_smo_unchanged() -> None:
    qp = _problem("nu-svr", 3)
    a = qpcore.solve(qp, SMO(), tol=1e-6)
    b = qpcore.solve(qp, SMO(finish=None), tol=1e-6)
    assert a.iterations == b.iterations and a.objective == b.objective
    assert not any(k.startswith("block_finish") for k in a.stats)


@pytest.mark.parametrize("kind", KINDS)
def test_forced_cycle_falls_back_to_smo(kind: str) -> None:
    """One face from the (wrong) bound start: no violator-free face, SMO goes on and says so."""
    qp = _problem(kind, 4)
    x0 = bound_start(qp)
    out = block_finish(qp, x0, qp.gradient(x0), 1e-9, max_rounds=1, backup=0)
    assert not out.certified and out.x is None and out.rounds == 1
    assert out.fallback.startswith("no violator-free face within max_rounds=1")
    stage = BlockFinish(start_gap=np.inf, max_rounds=1, backup=0, tries=1)
    res = qpcore.solve(qp, SMO(finish=stage), tol=1e-8)
    assert res.status is Status.CONVERGED and qpcore.kkt(qp, res.x).ok(1e-8)
    assert res.stats["block_finish_tries"] == res.stats["block_finish_fallbacks"] == 1
    assert res.stats["block_finish"].startswith("block finish fell back")
    assert _rel(res.objective, qpcore.solve(qp, SMO(), tol=1e-8).objective) <= 1e-7


def test_pivoting_cap_is_the_termination_guarantee() -> None:
    """From a far start the sets keep changing: at most max_rounds faces, then an honest fallback."""
    qp = _problem("nu-svr", 4)
    x0 = bound_start(qp)
    out = block_finish(qp, x0, qp.gradient(x0), 1e-9, max_rounds=7)
    assert out.rounds <= 7 and len(out.violators) == out.rounds
    assert out.certified or out.fallback


@pytest.mark.parametrize("kind", ["c-svc", "nu-svr"])
def test_free_set_too_large_falls_back(kind: str) -> None:
    qp = _problem(kind, 5)
    res = qpcore.solve(qp, SMO(finish=BlockFinish(max_free=1)), tol=1e-8)
    assert res.status is Status.CONVERGED and qpcore.kkt(qp, res.x).ok(1e-8)
    assert res.stats["block_finish_fallbacks"] == res.stats["block_finish_tries"] >= 1
    assert "max_free=1" in res.stats["block_finish"]
    plain = qpcore.solve(qp, SMO(), tol=1e-8)
    assert _rel(res.objective, plain.objective) <= 1e-7


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qp=svm_duals(max_n=30))
def test_hypothesis_svm_duals_from_a_loose_point(qp: qpcore.QP) -> None:
    """From SMO at a loose gap: certified at 1e-9 with the reference's objective, or an honest fallback."""
    tol = 1e-9
    loose = qpcore.solve(qp, SMO(), tol=1e-2)
    out = block_finish(qp, loose.x, qp.gradient(loose.x), tol)
    if out.certified:
        assert out.x is not None
        assert qpcore.kkt(qp, out.x).ok(tol)
        xr, fr = dense_reference(qp)
        scale = 1.0 + 0.5 * abs(float(out.x @ qp.Q.matvec(out.x))) + float(np.abs(qp.c) @ np.abs(out.x))
        assert abs(qp.objective(out.x) - fr) <= 1e-8 * scale
    else:
        assert out.fallback
    res = qpcore.solve(qp, SMO(finish=BlockFinish()), tol=tol)
    assert res.status is Status.CONVERGED and qpcore.kkt(qp, res.x).ok(tol)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tol", [1e-6, 1e-9])
def test_decomposition_with_block_finish(kind: str, tol: float) -> None:
    qp = _problem(kind, 1)
    plain = qpcore.solve(qp, Decomposition(), tol=tol)
    res = qpcore.solve(qp, Decomposition(finish=BlockFinish()), tol=tol)
    assert res.status is Status.CONVERGED and qpcore.kkt(qp, res.x).ok(tol)
    assert _rel(res.objective, plain.objective) <= 1e-8
    assert res.stats["block_finish_tries"] >= 1 and "block_finish" in res.stats


def test_decomposition_general_coefficients_against_reference() -> None:
    """The abstract form with a row of any nonzero coefficients (Decomposition's shape, not SMO's)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    a = rng.uniform(0.5, 2.0, 60) * np.where(rng.random(60) < 0.5, 1.0, -1.0)
    qp = fam.abstract_form(DenseQ(K * np.outer(a, a)), rng.random(60) + 0.5, a, 0.0, 3.0)
    res = qpcore.solve(qp, Decomposition(finish=BlockFinish()), tol=1e-9)
    assert res.status is Status.CONVERGED and "certified" in res.stats["block_finish"]
    assert _rel(res.objective, dense_reference(qp)[1]) <= 1e-8


def test_decomposition_falls_back_when_too_large() -> None:
    qp = _problem("epsilon-svr", 6)
    res = qpcore.solve(qp, Decomposition(finish=BlockFinish(max_free=1, tries=1)), tol=1e-8)
    assert res.status is Status.CONVERGED and qpcore.kkt(qp, res.x).ok(1e-8)
    assert res.stats["block_finish_fallbacks"] == 1 and "max_free=1" in res.stats["block_finish"]


def test_registry_spec() -> None:
    from qpcore_strategies.registry import make
    s = make("smo:finish=block")
    assert isinstance(s, SMO) and isinstance(s.finish_stage, BlockFinish)
    assert make("smo").finish_stage is None
    res = qpcore.solve(_problem("one-class", 7), s, tol=1e-8)
    assert res.status is Status.CONVERGED and "block_finish_tries" in res.stats


def _check_outcome(qp: qpcore.QP, out: Any, tol: float, max_rounds: int) -> None:
    # the violators per round are known when the pivoting ran to its end (not on a cycle or a refusal)
    assert out.rounds <= max_rounds and len(out.violators) in (0, out.rounds)
    if not out.certified:
        assert out.fallback and out.x is None
        return
    assert out.x is not None
    assert qpcore.kkt(qp, out.x).ok(tol)
    fr = dense_reference(qp)[1]
    scale = 1.0 + 0.5 * abs(float(out.x @ qp.Q.matvec(out.x))) + float(np.abs(qp.c) @ np.abs(out.x))
    assert abs(qp.objective(out.x) - fr) <= 1e-8 * scale


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), qp=svm_duals(max_n=25))
def test_hypothesis_wrong_starts_end_certified_or_fall_back(data: st.DataObject, qp: qpcore.QP) -> None:
    """From feasible warm starts (vertices, interior points), an empty free set (the bound start)
    and everything free (the feasible point nearest the box's middle): within max_rounds faces,
    certified with the reference's objective, or an honest fallback."""
    tol = 1e-9
    starts = [data.draw(warm_starts(qp, feasible=True)), bound_start(qp),
              feasible_start(qp, 0.5 * (qp.lb + qp.ub))[0]]
    for x in starts:
        x = feasible_start(qp, x)[0]
        _check_outcome(qp, block_finish(qp, x, qp.gradient(x), tol, max_rounds=30), tol, 30)


@pytest.mark.parametrize("kind", ["c-svc", "epsilon-svr", "abstract"])
def test_kept_factor_matches_fresh_factors(kind: str) -> None:
    """One row: the factor kept across faces (add_block, removals) gives the fresh LU's point."""
    qp = _problem(kind, 8)
    loose = qpcore.solve(qp, SMO(), tol=1e-2)
    g = qp.gradient(loose.x)
    kept = block_finish(qp, loose.x, g, 1e-9, keep_factor=True)
    fresh = block_finish(qp, loose.x, g, 1e-9, keep_factor=False)
    assert kept.certified and fresh.certified and kept.x is not None and fresh.x is not None
    assert kept.factor_updates >= 1 and fresh.factor_updates == 0
    assert _rel(qp.objective(kept.x), qp.objective(fresh.x)) <= 1e-12
    assert np.abs(kept.x - fresh.x).max() <= 1e-8 * max(1.0, float(np.abs(qp.ub).max()))


def test_a_cycle_is_detected_and_handed_back() -> None:
    """From the bound start of this linear-kernel dual (duplicate points) the pivoting loops over
    a few faces: detected at a face's third visit, well before the cap, and handed back."""
    from qpcore.testkit.generators import random_svm_dual
    qp = random_svm_dual(25, seed=2, C=1.0, duplicates=2, kernel="linear")
    x = bound_start(qp)
    out = block_finish(qp, x, qp.gradient(x), 1e-9, max_rounds=30)
    assert not out.certified and out.x is None
    assert out.fallback.startswith("the pivoting cycles") and out.rounds < 30


def test_a_past_deadline_solves_at_most_one_face() -> None:
    # the run's time limit bounds the finish: with the deadline gone, one face and the caller's point
    from qpcore_formulations.svm import csvc
    from qpcore_strategies.block_finish import block_finish

    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=60) > 0, 1.0, -1.0)
    qp = csvc(X, y, 10.0, qpcore.Kernel("rbf", gamma=0.5)).qp
    x = np.zeros(qp.n)
    res = block_finish(qp, x, qp.gradient(x), 1e-9, deadline=0.0)
    assert not res.certified and res.rounds == 1 and "time limit" in str(res.fallback)
    assert block_finish(qp, x, qp.gradient(x), 1e-9).certified          # with time: several faces, certified


def test_mirrored_pairs_both_free_are_not_a_singular_face() -> None:
    """ε-SVR from α = α* (every pair free on both sides: a face singular along e_i + e_(i+l)):
    each face holds one member of such a pair at 0, so no face goes to least squares, and the
    run certifies with the reference's objective or hands back honestly."""
    X, _, t = _data(11)
    qp = fam.epsilon_svr(X, t, C=10.0, epsilon=0.1).qp
    x = np.full(qp.n, 2.0)                 # Σα − Σα* = 0: feasible, all free
    out = block_finish(qp, x, qp.gradient(x), 1e-8, max_rounds=30)
    assert out.mirrored > 0 and out.least_squares == 0
    _check_outcome(qp, out, 1e-8, 30)
    loose = qpcore.solve(qp, SMO(), tol=1e-2)
    out = block_finish(qp, loose.x, qp.gradient(loose.x), 1e-8)
    assert out.certified and out.least_squares == 0


def test_runaway_exchanges_stop_early() -> None:
    """A face whose solutions put ever more variables outside the box (block exchanges running
    away from a far guess) is stopped once the violators pass max_growth × the first count."""
    from qpcore_strategies.block_pivoting import block_principal_pivoting

    class Runaway:
        def __init__(self) -> None:
            self.calls = 0

        def solve(self, state: Any) -> Any:
            self.calls += 1
            k = min(state.size, 10 * 3 ** self.calls)
            v = np.full(state.size, 0.5)
            v[:k] = 2.0                      # above hi = 1
            return type("S", (), {"value": v, "mult": np.zeros(state.size)})()

    n = 2000
    face = Runaway()
    out = block_principal_pivoting(face, np.zeros(n, dtype=np.int8), np.zeros(n), np.ones(n), np.zeros(n, bool),
                                   max_rounds=20, max_growth=4.0)
    assert out.diverged and not out.converged
    assert out.violators == (30, 60, 180) and face.calls == 3    # 180 > 4 · 30 + 16
    again = block_principal_pivoting(Runaway(), np.zeros(n, dtype=np.int8), np.zeros(n), np.ones(n),
                                     np.zeros(n, bool), max_rounds=5)
    assert not again.diverged and again.rounds == 5      # no cap on growth by default
