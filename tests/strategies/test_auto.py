"""``strategy="auto"``: its choices are certified like any strategy's, and made for the reasons it says."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qpcore
from qpcore_formulations.svm import csvc
from qpcore_formulations.svm_family import nu_svc
from qpcore.backends.operators import Kernel
from qpcore.testkit.reference import assert_kkt, dense_reference
from qpcore.testkit.testing import svm_duals, warm_starts
from qpcore_strategies.auto import Auto, AutoWork
from qpcore_strategies.registry import make
from qpcore_strategies.smo import SMO


def _blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = 1.0, -1.0
    X = rng.standard_normal((n, 3))
    X[:, 0] += 0.8 * y
    return X, y


@settings(max_examples=40, deadline=None)
@given(qp=svm_duals(max_n=30), data=st.data())
def test_svm_duals_certified(qp: qpcore.QP, data: st.DataObject) -> None:
    # a switch on every crawl (check_every small, no free-set floor) so both paths are exercised
    x0 = data.draw(warm_starts(qp))
    tol = data.draw(st.sampled_from([1e-4, 1e-6]))
    res = qpcore.solve(qp, Auto(check_every=5, min_free=0), x0, tol=tol, max_iter=200_000)
    assert_kkt(qp, res, tol)
    _, f_ref = dense_reference(qp)
    assert res.objective == pytest.approx(f_ref, rel=10 * tol, abs=10 * tol)
    assert res.stats["strategy"] in ("smo", "incas")
    # tight tolerances start with INCAS, the others with SMO
    assert res.stats["strategy_choice"][0][1] == ("incas" if tol <= 1e-5 else "smo")


def test_crawl_switches_to_incas_with_its_reason() -> None:
    X, y = _blobs(400, 1)
    qp = csvc(X, y, 1000.0, Kernel("rbf", gamma=2.0)).qp
    res = qpcore.solve(qp, Auto(check_every=100, min_free=50), tol=1e-5 * 2)
    assert_kkt(qp, res, 2e-5)
    names = [c[1] for c in res.stats["strategy_choice"]]
    assert names == ["smo", "incas"], res.stats["strategy_choice"]
    assert "crawl" in res.stats["strategy_choice"][1][2]
    assert res.stats["strategy"] == "incas"
    # the same optimum as SMO alone
    ref = qpcore.solve(qp, SMO(), tol=1e-6)
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)


def test_tight_tolerance_starts_with_incas() -> None:
    X, y = _blobs(300, 6)
    qp = csvc(X, y, 100.0, Kernel("rbf", gamma=1.0)).qp
    res = qpcore.solve(qp, make("auto"), tol=1e-7)
    assert_kkt(qp, res, 1e-7)
    assert [c[1] for c in res.stats["strategy_choice"]] == ["incas"]
    assert "tol 1e-07" in res.stats["strategy_choice"][0][2]


def test_small_c_stays_with_smo() -> None:
    X, y = _blobs(400, 2)
    qp = csvc(X, y, 0.1, Kernel("rbf", gamma=0.5)).qp
    res = qpcore.solve(qp, make("auto"), tol=1e-3)
    assert_kkt(qp, res, 1e-3)
    assert res.stats["strategy_choice"] == [res.stats["strategy_choice"][0]]
    assert res.stats["strategy"] == "smo"


def test_two_groups_never_go_to_incas() -> None:
    # ν-SVC's two equality rows: INCAS keeps one row, so a crawl stays with SMO (and its Newton step)
    X, y = _blobs(200, 3)
    qp = nu_svc(X, y, 0.3, Kernel("rbf", gamma=2.0)).qp
    res = qpcore.solve(qp, Auto(check_every=20, min_free=0), tol=1e-8)
    assert_kkt(qp, res, 1e-8)
    assert res.stats["strategy"] == "smo"
    assert res.stats["strategy_choice"] == [res.stats["strategy_choice"][0]]


def test_rows_smo_cannot_take_go_to_decomposition() -> None:
    rng = np.random.default_rng(4)
    B = rng.standard_normal((12, 12))
    a = rng.uniform(0.5, 2.0, 12)          # one row, coefficients other than ±1
    qp = qpcore.QP(Q=B @ B.T + np.eye(12), c=-np.ones(12), lb=np.zeros(12), ub=np.full(12, 3.0),
                   A=a[None, :], b=np.array([a[:6].sum()]))
    res = qpcore.solve(qp, Auto(), tol=1e-8)
    assert_kkt(qp, res, 1e-8)
    assert res.stats["strategy"] == "decomposition"
    assert "SMO cannot take" in res.stats["strategy_choice"][0][2]


def test_progress_reads_the_current_strategy() -> None:
    X, y = _blobs(300, 5)
    qp = csvc(X, y, 1000.0, Kernel("rbf", gamma=2.0)).qp
    seen: list[str] = []
    staged: list[str | None] = []

    def watch(p: qpcore.Progress) -> None:
        seen.append(p.work(AutoWork).current)
        staged.append(p.stage)

    qpcore.solve(qp, Auto(check_every=100, min_free=50), tol=2e-5, callback=watch, callback_every=50)
    assert seen[0] == "smo" and seen[-1] == "incas"
    assert staged == seen                      # the progress display's stage is the running strategy
    lines = io.StringIO()
    qpcore.solve(qp, Auto(check_every=100, min_free=50), tol=2e-5,
                 reporter=qpcore.PrintReporter(interval=0.0, stream=lines))
    assert "[smo]" in lines.getvalue() and "[incas]" in lines.getvalue()


def test_bad_options_fail_at_once() -> None:
    with pytest.raises(qpcore.ProblemError):
        Auto(check_every=0)
    with pytest.raises(qpcore.ProblemError):
        make("auto:release=0")


def test_tight_tolerance_on_a_mirrored_operator_takes_smo_with_the_block_finish() -> None:
    # ε-SVR's doubled operator declares MIRRORED: at a tight tol auto keeps SMO (not INCAS) and
    # gives it the block finish; the run certifies with the dense reference's objective
    from qpcore.testkit.reference import dense_reference
    from qpcore_formulations.svm_family import epsilon_svr

    rng = np.random.default_rng(5)
    X = rng.normal(size=(150, 3))
    t = np.sin(X[:, 0]) + 0.1 * rng.normal(size=150)
    qp = epsilon_svr(X, t, C=10.0, epsilon=0.1, kernel=Kernel("rbf", gamma=0.5)).qp
    res = qpcore.solve(qp, Auto(), tol=1e-7)
    assert_kkt(qp, res, 1e-7)
    first = res.stats["strategy_choice"][0]
    assert first[1] == "smo" and "block finish" in first[2] and "mirrored" in first[2]
    assert res.stats["block_finish_tries"] >= 1
    fr = dense_reference(qp)[1]
    assert abs(res.objective - fr) <= 1e-8 * max(1.0, abs(fr))


def test_block_finish_only_below_finish_below() -> None:
    from qpcore_formulations.svm_family import nu_svr

    rng = np.random.default_rng(6)
    X = rng.normal(size=(120, 3))
    t = np.cos(X[:, 1]) + 0.1 * rng.normal(size=120)
    qp = nu_svr(X, t, C=5.0, nu=0.4, kernel=Kernel("rbf", gamma=0.5)).qp
    loose = qpcore.solve(qp, Auto(), tol=1e-3)
    assert "block_finish_tries" not in loose.stats and "block finish" not in loose.stats["strategy_choice"][0][2]
    tight = qpcore.solve(qp, Auto(), tol=1e-6)
    assert_kkt(qp, tight, 1e-6)
    assert "block finish" in tight.stats["strategy_choice"][0][2]
    never = qpcore.solve(qp, Auto(block_finish=None), tol=1e-6)
    assert "block_finish_tries" not in never.stats
    assert abs(tight.objective - never.objective) <= 1e-6 * max(1.0, abs(never.objective))
