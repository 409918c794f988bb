"""qpcore.linalg.threads: the thread decision (cores, quota, other processes' load, a user's variables, an
explicit count) and the context that applies it to every BLAS pool and restores them."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg  # noqa: F401 - loads scipy's OpenBLAS, the second pool
from hypothesis import given, settings
from hypothesis import strategies as st

import qpcore
import qpcore.linalg.threads as threads
from qpcore.linalg.threads import THREAD_VARIABLES, blas_threads, cgroup_cpu_limit, decide_threads

threadpoolctl = pytest.importorskip("threadpoolctl")


def _pool_sizes() -> list[int]:
    return [int(p["num_threads"]) for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]


@pytest.fixture
def no_user_variables(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in THREAD_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    yield


def _machine(monkeypatch: pytest.MonkeyPatch, cores: int, foreign: float | None, quota: float | None = None) -> None:
    """A machine of ``cores`` cores in our affinity, others keeping ``foreign`` of them busy."""
    monkeypatch.setattr(threads, "_cpus", lambda: set(range(cores)))
    monkeypatch.setattr(threads, "_quota", lambda: quota)
    monkeypatch.setattr(threads, "foreign_load", lambda: foreign)


# --- the decision ----------------------------------------------------------------------------------

def test_one_core_in_affinity_gives_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, 1, 0.0)
    d = decide_threads(env={})
    assert d.threads == 1 and d.cores == 1 and d.reason.startswith("auto")


def test_busy_core_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, 2, 1.0)           # a `yes` beside us
    assert decide_threads(env={}).threads == 1
    _machine(monkeypatch, 2, 0.4)           # a core 40 % busy stalls a worker: still one thread
    assert decide_threads(env={}).threads == 1
    _machine(monkeypatch, 2, 0.1)           # quiet
    assert decide_threads(env={}).threads == 2
    _machine(monkeypatch, 2, None)          # load unknown: the cores
    d = decide_threads(env={})
    assert d.threads == 2 and "unknown" in d.reason


def test_cgroup_quota_caps_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, 8, 0.0, quota=1.5)
    d = decide_threads(env={})
    assert d.threads == 1 and "quota" in d.reason
    _machine(monkeypatch, 64, 40.0, quota=2.0)     # a container on a busy host: 24 cores left
    assert decide_threads(env={}).threads == 2
    _machine(monkeypatch, 64, 63.0, quota=2.0)
    assert decide_threads(env={}).threads == 1


@pytest.mark.parametrize("var", THREAD_VARIABLES)
def test_user_variable_is_respected(monkeypatch: pytest.MonkeyPatch, var: str) -> None:
    _machine(monkeypatch, 2, 1.0)
    d = decide_threads(env={var: "2"})
    assert d.threads is None and f"{var}=2" in d.reason
    assert decide_threads(env={var: ""}).threads == 1          # set but empty: not a choice


def test_argument_beats_variable_and_load(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, 2, 1.5)
    d = decide_threads(2, env={"OMP_NUM_THREADS": "1"})
    assert d.threads == 2 and "asked" in d.reason
    with pytest.raises(ValueError, match="threads"):
        decide_threads(0)


@settings(max_examples=50, deadline=None)
@given(cores=st.integers(1, 64), foreign=st.one_of(st.none(), st.floats(0, 80)),
       quota=st.one_of(st.none(), st.floats(0.5, 64)), current=st.one_of(st.none(), st.integers(1, 64)))
def test_auto_within_bounds(cores: int, foreign: float | None, quota: float | None, current: int | None) -> None:
    with pytest.MonkeyPatch.context() as mp:
        _machine(mp, cores, foreign, quota)
        d = decide_threads(env={}, current=current)
    assert d.threads is not None and 1 <= d.threads <= cores
    if quota is not None:
        assert d.threads <= max(1, int(quota))
    if current is not None:
        assert d.threads <= current
    if foreign is not None and foreign <= threads.BUSY_SHARE and quota is None and current is None:
        assert d.threads == cores


# --- the load estimate --------------------------------------------------------------------------------

def test_sampler_subtracts_our_own_cpu() -> None:
    t, busy, own, running = [0.0], [0], [0.0], [3]
    # no window yet: two threads of others running now (and ours, the one sampling)
    s = threads._LoadSampler(clock=lambda: t[0], cpu=lambda: own[0], stat=lambda cpus: (busy[0], running[0]),
                             own_running=lambda: 1, tick=100.0)
    share = len(threads._cpus()) / max(len(threads._cpus()), os.cpu_count() or 1)
    assert s.sample() == pytest.approx(2 * share)
    t[0], running[0] = 0.1, 1                   # within the first window that estimate stands
    assert s.sample() == pytest.approx(2 * share)
    t[0], busy[0], own[0] = 1.0, 150, 0.5       # 1.5 core·s busy on our cores, 0.5 of them ours
    assert s.sample() == pytest.approx(1.0)
    t[0], busy[0], own[0] = 1.1, 170, 0.7       # too short a window: the last estimate stands
    assert s.sample() == pytest.approx(1.0)
    t[0], busy[0], own[0], running[0] = 2.0, 250, 1.5, 1   # our own two threads busy, nobody else
    assert s.sample() == pytest.approx(0.0)
    t[0], busy[0], own[0], running[0] = 62.0, 250, 1.5, 2  # a long quiet window, but a load now
    assert s.sample() == pytest.approx(share)


def test_cgroup_limits(tmp_path: Path) -> None:
    proc = tmp_path / "cgroup"
    # v2: the tightest quota on the path up to the root
    (tmp_path / "fs" / "a" / "b").mkdir(parents=True)
    (tmp_path / "fs" / "a" / "cpu.max").write_text("150000 100000\n")
    (tmp_path / "fs" / "a" / "b" / "cpu.max").write_text("max 100000\n")
    proc.write_text("0::/a/b\n")
    assert cgroup_cpu_limit(tmp_path / "fs", proc) == pytest.approx(1.5)
    proc.write_text("0::/\n")
    assert cgroup_cpu_limit(tmp_path / "fs", proc) is None
    # v1: cfs quota over period; -1 is no quota
    v1 = tmp_path / "v1" / "cpu,cpuacct"
    v1.mkdir(parents=True)
    (v1 / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "cpu.cfs_period_us").write_text("100000\n")
    proc.write_text("4:memory:/x\n2:cpu,cpuacct:/\n")
    assert cgroup_cpu_limit(tmp_path / "v1", proc) is None
    (v1 / "cpu.cfs_quota_us").write_text("200000\n")
    assert cgroup_cpu_limit(tmp_path / "v1", proc) == pytest.approx(2.0)
    assert cgroup_cpu_limit(tmp_path / "v1", tmp_path / "missing") is None


# --- the pools -----------------------------------------------------------------------------------------

def test_context_sets_every_pool_and_restores(no_user_variables: None, monkeypatch: pytest.MonkeyPatch) -> None:
    before = threadpoolctl.threadpool_info()
    assert _pool_sizes()                     # numpy's and scipy's OpenBLAS (two libraries in the wheels)
    with blas_threads(1) as d:
        assert d.threads == 1
        assert _pool_sizes() == [1] * len(_pool_sizes())
    assert threadpoolctl.threadpool_info() == before
    _machine(monkeypatch, 1, 0.0)
    with blas_threads() as d:
        assert d.threads == 1 and _pool_sizes() == [1] * len(_pool_sizes())
    assert threadpoolctl.threadpool_info() == before
    with pytest.raises(RuntimeError):
        with blas_threads(1):
            raise RuntimeError("a failing run")
    assert threadpoolctl.threadpool_info() == before


def test_auto_never_raises_an_outer_limit(no_user_variables: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, 4, 0.0)
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        with blas_threads() as d:
            assert d.threads == 1 and "capped" in d.reason
            assert _pool_sizes() == [1] * len(_pool_sizes())


def test_user_variable_leaves_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    _machine(monkeypatch, 1, 1.0)
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    sizes = _pool_sizes()
    with blas_threads() as d:
        assert d.threads is None and "OPENBLAS_NUM_THREADS=2" in d.reason
        assert _pool_sizes() == sizes


def test_without_threadpoolctl_a_noop_with_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)      # import raises ImportError
    monkeypatch.setattr(threads, "_POOLS", [])
    with blas_threads(1) as d:
        assert d.threads is None and "threadpoolctl is not installed" in d.reason
    rng = np.random.default_rng(0)
    qp = qpcore.QP(np.eye(3), rng.standard_normal(3), -np.ones(3), np.ones(3))
    from qpcore_strategies.registry import make

    res = qpcore.solve(qp, make("gpcg"), threads=1)
    assert res.stats["blas_threads"] is None and "threadpoolctl" in res.stats["blas_threads_reason"]


def test_solve_records_and_restores(no_user_variables: None) -> None:
    from qpcore_strategies.registry import make

    rng = np.random.default_rng(1)
    M = rng.standard_normal((40, 30))
    qp = qpcore.QP(M.T @ M, rng.standard_normal(30), -np.ones(30), np.ones(30))
    before = threadpoolctl.threadpool_info()
    seen: list[list[int]] = []

    def record(progress: qpcore.Progress) -> None:
        seen.append(_pool_sizes())

    res = qpcore.solve(qp, make("gpcg"), threads=1, callback=record)
    assert res.stats["blas_threads"] == 1 and res.stats["blas_threads_reason"] == "threads=1 asked"
    assert seen and all(s == [1] * len(s) for s in seen)
    assert threadpoolctl.threadpool_info() == before
    res = qpcore.solve(qp, make("gpcg"))
    assert isinstance(res.stats["blas_threads"], int) and res.stats["blas_threads_reason"].startswith("auto")
    with pytest.raises(qpcore.ProblemError, match="threads"):
        qpcore.solve(qp, make("gpcg"), threads=0)
