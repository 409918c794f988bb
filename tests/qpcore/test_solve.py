"""The shared solve loop: limits, callback, warm start, reporter, honest certificates, nonfinite points."""

from __future__ import annotations

import time
from typing import Any

import attrs
import numpy as np
import pytest

import qpcore
from qpcore.testkit.generators import random_box_qp
from qpcore import QP, Progress, ProblemError, Result, State, Status, Strategy, Work, bound_status, kkt, solve
from qpcore.testkit.reference import assert_kkt, dense_reference


@attrs.define
class StepWork(Work):
    """ProjectedGradient's work state: the step length and the tolerance."""

    step: float
    tol: float


@attrs.frozen
class ProjectedGradient(Strategy):
    """Projected gradient with step 1/L for box QPs (no equality): a minimal Strategy."""

    def accepts(self, qp: QP) -> str | None:
        return "ProjectedGradient handles box QPs only; use GPCG for equality rows" if qp.m else None

    def init(self, qp: QP, x0: np.ndarray | None, tol: float) -> State:
        self.check(qp)
        x = np.clip(np.zeros(qp.n) if x0 is None else x0, qp.lb, qp.ub)
        L = float(np.abs(qp.Q.rows(np.arange(qp.n))).sum(axis=1).max())  # Gershgorin bound on λ_max
        state = State(x=x, g=qp.gradient(x), status=bound_status(x, qp.lb, qp.ub),
                      work=StepWork(step=1.0 / max(L, 1e-300), tol=tol))
        self.judge(qp, state)
        return state

    def judge(self, qp: QP, state: State) -> None:
        state.done = kkt(qp, state.x, state.g).measure <= state.work(StepWork).tol

    def step(self, qp: QP, state: State) -> None:
        x_new = np.clip(state.x - state.work(StepWork).step * state.g, qp.lb, qp.ub)
        state.g += qp.Q.matvec(x_new - state.x)  # incremental gradient
        state.x[:] = x_new
        state.status[:] = bound_status(state.x, qp.lb, qp.ub)
        state.counters["steps"] = state.counters.get("steps", 0) + 1
        self.judge(qp, state)


@attrs.frozen
class Sleeper(ProjectedGradient):
    """Sleeps every step and never converges."""

    def judge(self, qp: QP, state: State) -> None:
        pass

    def step(self, qp: QP, state: State) -> None:
        time.sleep(0.005)


@attrs.frozen
class Liar(ProjectedGradient):
    """Reports convergence at once, with a zero gradient it made up."""

    def init(self, qp: QP, x0: np.ndarray | None, tol: float) -> State:
        state = super().init(qp, x0, tol)
        state.g = np.zeros(qp.n)
        state.done = True
        return state

    def step(self, qp: QP, state: State) -> None:
        pass


@attrs.frozen
class Exploder(ProjectedGradient):
    """Takes two good steps, then produces NaN."""

    def step(self, qp: QP, state: State) -> None:
        if state.iteration >= 2:
            state.x[0] = np.nan
            state.g[:] = np.nan
        else:
            super().step(qp, state)


@attrs.frozen
class Quitter(ProjectedGradient):
    """Gives up after one step by setting ``state.stop``."""

    def step(self, qp: QP, state: State) -> None:
        super().step(qp, state)
        state.stop = Status.STALLED


class Recorder:
    """A Reporter that keeps what it is given."""

    def __init__(self, interval: float = 0.0) -> None:
        self.interval = interval
        self.updates: list[tuple[int, float, float]] = []
        self.finished: list[Result] = []

    def update(self, progress: Progress) -> None:
        self.updates.append((progress.iteration, progress.objective, progress.gap))

    def finish(self, result: Result) -> None:
        self.finished.append(result)


@pytest.fixture
def easy() -> QP:
    return random_box_qp(15, seed=1, cond=10.0)


@pytest.fixture
def hard() -> QP:
    return random_box_qp(30, seed=2, cond=1e6)


def test_tiny_strategy_is_a_strategy() -> None:
    assert isinstance(ProjectedGradient(), Strategy)


def test_converges_with_an_honest_certificate(easy: QP) -> None:
    res = solve(easy, ProjectedGradient(), tol=1e-8)
    assert res.status is Status.CONVERGED and res.converged
    assert_kkt(easy, res, 1e-8)
    fresh = kkt(easy, res.x)
    assert res.kkt.measure == fresh.measure
    assert res.objective == pytest.approx(easy.objective(res.x), rel=1e-14, abs=1e-14)
    assert res.objective == pytest.approx(dense_reference(easy)[1], rel=1e-8)
    np.testing.assert_array_equal(res.z, fresh.z)
    assert res.iterations == res.state.iteration > 0
    assert res.stats["steps"] == res.iterations
    for key in ("seconds", "total_seconds", "rows_computed", "cache_hits", "cache_misses", "gradient_drift"):
        assert key in res.stats
    assert res.stats["gradient_drift"] < 1e-10


@pytest.mark.parametrize("max_iter", [0, 1, 5])
def test_max_iter(hard: QP, max_iter: int) -> None:
    res = solve(hard, ProjectedGradient(), tol=1e-10, max_iter=max_iter)
    assert res.status is Status.MAX_ITER and not res.converged
    assert res.iterations == max_iter
    fresh = kkt(hard, res.x)
    assert res.kkt.measure == fresh.measure > 1e-10
    assert res.objective == pytest.approx(hard.objective(res.x))
    with pytest.raises(AssertionError, match="max_iter"):
        assert_kkt(hard, res, 1e-10)


def test_time_limit(easy: QP) -> None:
    t0 = time.perf_counter()
    res = solve(easy, Sleeper(), tol=1e-6, time_limit=0.05)
    elapsed = time.perf_counter() - t0
    assert res.status is Status.TIME_LIMIT and not res.converged
    assert 0.05 <= elapsed < 1.0
    assert res.iterations >= 1
    assert res.kkt.measure == kkt(easy, res.x).measure


def test_converged_wins_over_a_zero_iteration_limit(easy: QP) -> None:
    first = solve(easy, ProjectedGradient(), tol=1e-8)
    res = solve(easy, ProjectedGradient(), first, tol=1e-8, max_iter=0)
    assert res.status is Status.CONVERGED and res.iterations == 0


def test_a_lying_strategy_is_not_believed(hard: QP) -> None:
    res = solve(hard, Liar(), tol=1e-6)
    assert res.status is not Status.CONVERGED
    assert res.status is Status.STALLED
    assert res.kkt.measure == kkt(hard, res.x).measure > 1e-6
    assert res.stats["gradient_drift"] > 0
    with pytest.raises(AssertionError, match="stalled"):
        assert_kkt(hard, res, 1e-6)


def test_certify_false_reports_the_strategy_gradient(hard: QP) -> None:
    res = solve(hard, Liar(), tol=1e-6, certify=False)
    # not a certificate: without certify the strategy's word is taken, and assert_kkt still catches it
    assert res.status is Status.CONVERGED
    with pytest.raises(AssertionError, match="KKT measure"):
        assert_kkt(hard, res, 1e-6)


def test_callback_stops(hard: QP) -> None:
    seen: list[int] = []

    def cb(p: Progress) -> bool:
        seen.append(p.iteration)
        assert np.isfinite(p.objective) and p.gap >= 0 and p.elapsed >= 0
        return p.iteration >= 3

    res = solve(hard, ProjectedGradient(), tol=1e-12, callback=cb)
    assert res.status is Status.STOPPED and not res.converged
    assert res.iterations == 3 and seen == [1, 2, 3]
    assert res.kkt.measure == kkt(hard, res.x).measure


def test_callback_every_and_none_continues(hard: QP) -> None:
    seen: list[int] = []

    def cb(p: Progress) -> None:
        seen.append(p.iteration)

    res = solve(hard, ProjectedGradient(), tol=1e-12, max_iter=9, callback=cb, callback_every=3)
    assert res.status is Status.MAX_ITER and seen == [3, 6, 9]


@attrs.frozen
class LazyGradient(ProjectedGradient):
    """Counts its ``sync_gradient`` calls in its work state (a strategy whose sync is costly)."""

    def sync_gradient(self, qp: QP, state: State) -> None:
        state.counters["syncs"] = state.counters.get("syncs", 0) + 1


def test_progress_syncs_only_when_its_state_is_read(hard: QP) -> None:
    """A recorder that reads the work state (``progress.work``) costs no sync; reading the state,
    the objective or the gap syncs once per snapshot."""
    steps: list[float] = []
    res = solve(hard, LazyGradient(), tol=1e-12, max_iter=6,
                callback=lambda p: steps.append(p.work(StepWork).step))
    assert len(steps) == 6 and "syncs" not in res.stats

    def reads_all(p: Progress) -> None:
        assert p.state.x is p.state.x and np.isfinite(p.objective) and p.gap >= 0

    res = solve(hard, LazyGradient(), tol=1e-12, max_iter=6, callback=reads_all)
    assert res.stats["syncs"] == 6

    class OtherWork(Work):
        pass

    with pytest.raises(TypeError, match="holds a StepWork, not a OtherWork"):
        solve(hard, LazyGradient(), tol=1e-12, max_iter=1, callback=lambda p: p.work(OtherWork) is None)


def test_progress_objective_matches_problem(hard: QP) -> None:
    objs: list[float] = []

    def cb(p: Progress) -> bool:
        objs.append(p.objective)
        assert p.objective == pytest.approx(hard.objective(p.state.x), rel=1e-10, abs=1e-12)
        return False

    solve(hard, ProjectedGradient(), tol=1e-12, max_iter=20, callback=cb)
    assert all(b <= a + 1e-12 for a, b in zip(objs, objs[1:]))  # projected gradient descends


def test_warm_start_from_result(hard: QP) -> None:
    cold = solve(hard, ProjectedGradient(), tol=1e-12, max_iter=20)
    assert cold.status is Status.MAX_ITER
    x_cold = cold.x.copy()
    warm = solve(hard, ProjectedGradient(), cold, tol=1e-12, max_iter=1)
    assert warm.iterations == 1
    assert warm.objective <= cold.objective + 1e-12
    # the warm start copies the point: the first result is left as it was
    np.testing.assert_array_equal(cold.x, x_cold)
    again = solve(hard, ProjectedGradient(), cold.x, tol=1e-12, max_iter=1)
    np.testing.assert_allclose(again.x, warm.x)


def test_warm_start_from_converged_result_takes_no_steps(easy: QP) -> None:
    first = solve(easy, ProjectedGradient(), tol=1e-6)
    second = solve(easy, ProjectedGradient(), first, tol=1e-6)
    assert second.converged and second.iterations == 0
    np.testing.assert_allclose(second.x, first.x)


@pytest.mark.parametrize(("x0", "word"), [(np.zeros(3), "shape mismatch"), (np.full(15, np.nan), "NaN")])
def test_bad_warm_start(easy: QP, x0: np.ndarray, word: str) -> None:
    with pytest.raises(ProblemError, match=rf"^x0:.*{word}"):
        solve(easy, ProjectedGradient(), x0)


@pytest.mark.parametrize(("kwargs", "field"), [({"tol": 0.0}, "tol"), ({"tol": np.nan}, "tol"),
                                               ({"max_iter": -1}, "max_iter"), ({"time_limit": 0.0}, "time_limit"),
                                               ({"time_limit": -1.0}, "time_limit")])
def test_bad_limits(easy: QP, kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ProblemError, match=rf"^{field}:"):
        solve(easy, ProjectedGradient(), **kwargs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tol": "foo"}, "tol: expected a positive finite number, got 'foo'"),
    ({"tol": np.float64(-1.0)}, "tol: expected a positive finite number, got -1.0"),
    ({"tol": None}, "tol: expected a positive finite number, got None"),
    ({"tol": np.inf}, "tol: expected a positive finite number, got inf"),
    ({"feas_tol": "1e-6"}, "feas_tol: expected a positive number, got '1e-6'"),
    ({"feas_tol": 0.0}, "feas_tol: expected a positive number, got 0.0"),
    ({"max_iter": "ten"}, "max_iter: expected an integer ≥ 0 or None, got 'ten'"),
    ({"max_iter": 2.5}, "max_iter: expected an integer ≥ 0 or None, got 2.5"),
    ({"max_iter": True}, "max_iter: expected an integer ≥ 0 or None, got True"),
    ({"time_limit": "1s"}, "time_limit: expected a positive number, got '1s'"),
    ({"time_limit": np.nan}, "time_limit: expected a positive number, got nan"),
    ({"callback_every": 0}, "callback_every: expected an integer ≥ 1, got 0"),
    ({"callback": 3}, "callback: expected a callable or None, got int"),
    ({"threads": "all"}, "threads: expected an integer ≥ 1 or None, got 'all'"),
    ({"threads": 0}, "threads: expected an integer ≥ 1 or None, got 0"),
])
def test_numeric_options_say_what_they_need(easy: QP, kwargs: dict[str, Any], message: str) -> None:
    """A bad option is one line naming it, what it needs and what it got: a ProblemError (a
    ValueError), never numpy's TypeError from deep inside."""
    with pytest.raises(ProblemError) as info:
        solve(easy, ProjectedGradient(), **kwargs)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)


def test_integral_options_in_any_numeric_type(easy: QP) -> None:
    """numpy scalars and integral floats are numbers too: the run is the one of the plain ints."""
    plain = solve(easy, ProjectedGradient(), tol=1e-6, max_iter=7)
    other = solve(easy, ProjectedGradient(), tol=np.float64(1e-6), max_iter=np.int64(7))
    floats = solve(easy, ProjectedGradient(), tol=1e-6, max_iter=7.0, time_limit=np.inf, feas_tol=np.inf)
    assert plain.iterations == other.iterations == floats.iterations
    np.testing.assert_array_equal(plain.x, floats.x)


@pytest.mark.parametrize("x0", ["foo", [1.0, "a"], object()])
def test_non_numeric_warm_start(easy: QP, x0: Any) -> None:
    with pytest.raises(ProblemError, match=r"^x0: expected a point \(an array of 15 numbers\) or a Result, got "):
        solve(easy, ProjectedGradient(), x0)


def test_reporter_receives_updates_and_one_finish(hard: QP) -> None:
    rep = Recorder(interval=0.0)
    res = solve(hard, ProjectedGradient(), tol=1e-12, max_iter=10, reporter=rep)
    assert len(rep.updates) == 10  # interval 0: after every step
    assert [u[0] for u in rep.updates] == list(range(1, 11))
    assert rep.finished == [res]


def test_reporter_interval_limits_updates(easy: QP) -> None:
    rep = Recorder(interval=3600.0)
    res = solve(easy, ProjectedGradient(), tol=1e-8, reporter=rep)
    assert rep.updates == [] and rep.finished == [res]


def test_print_reporter(easy: QP) -> None:
    import io

    buf = io.StringIO()
    solve(easy, ProjectedGradient(), tol=1e-6, reporter=qpcore.PrintReporter(interval=0.0, stream=buf))
    text = buf.getvalue()
    assert "iter" in text and "converged" in text


def test_strategy_stop_status(easy: QP) -> None:
    res = solve(easy, Quitter(), tol=1e-12)
    assert res.status is Status.STALLED and res.iterations == 1


def test_nonfinite_point_reported(easy: QP) -> None:
    res = solve(easy, Exploder(), tol=1e-12, max_iter=10)
    assert res.status is Status.NONFINITE
    assert not res.converged
    with pytest.raises(AssertionError, match="nonfinite"):
        assert_kkt(easy, res, 1e-6)


def test_nonfinite_returns_last_finite_point(easy: QP) -> None:
    res = solve(easy, Exploder(), tol=1e-12, max_iter=10)
    assert res.status is Status.NONFINITE
    assert np.isfinite(res.x).all()
    assert res.iterations <= 3


def test_status_messages() -> None:
    for s in Status:
        assert str(s) == s.code and s.message
    assert Status.MAX_ITER.code == "max_iter"


def test_resume_on_a_grown_problem_without_a_resume_method() -> None:
    # a strategy without ``resume`` starts from the old point, new variables at their bound nearest 0
    rng = np.random.default_rng(5)
    M = rng.normal(size=(12, 12))
    Q = M @ M.T + np.eye(12)
    c = rng.normal(size=12)
    small = QP(Q[:8, :8], c[:8], -np.ones(8), np.ones(8))
    grown = QP(Q, c, np.r_[-np.ones(8), 0.5 * np.ones(4)], 2 * np.ones(12))
    r0 = solve(small, ProjectedGradient(), tol=1e-9, max_iter=100000)
    assert r0.converged
    r1 = solve(grown, ProjectedGradient(), resume=r0, tol=1e-9, max_iter=100000)
    assert r1.converged
    assert_kkt(grown, r1, 1e-8)
    np.testing.assert_allclose(r1.objective, dense_reference(grown)[1], rtol=1e-9, atol=1e-12)
    with pytest.raises(ProblemError, match="resume"):
        solve(grown, ProjectedGradient(), x0=np.zeros(12), resume=r0)
    with pytest.raises(ProblemError, match="resume"):
        solve(small, ProjectedGradient(), resume=r1)
