"""BLAS threads sized to the cores actually free: one decision per solve, applied to every pool.

numpy and scipy wheels each bundle an OpenBLAS with its own worker threads, sized at import to
every core of the machine. A worker that waits for the next call spins; a worker whose core is
taken by another process waits for a time slice at every synchronization. On a busy machine a
solve whose loop makes many mid-sized BLAS calls therefore runs several times slower at two
threads than at one, while single-threaded solvers barely notice. :func:`blas_threads` decides
how many threads the run may use and sets both pools (and any other BLAS threadpoolctl finds)
to that count for the duration of the run, restoring them afterwards.

The decision (:func:`decide_threads`), in order of precedence:

1. an explicit ``threads`` argument;
2. a thread variable the user set (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``, ...): the
   libraries read it when loaded and the pools are left as they are;
3. otherwise the usable cores: those of the process's CPU affinity, capped by a cgroup CPU quota
   (containers), less the cores other processes keep busy (:func:`foreign_load`). A pool is
   never raised above its current size, so an outer ``threadpool_limits`` (or a joblib worker's
   limit) is respected.

threadpoolctl is optional (scikit-learn and the ``dask`` and ``bench`` extras bring it); without
it the pools are left as found and the reason says so.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = ["THREAD_VARIABLES", "ThreadDecision", "blas_threads", "cgroup_cpu_limit", "decide_threads",
           "foreign_load", "usable_cores"]

#: Environment variables through which a user sets BLAS/OpenMP thread counts; any one of them set
#: (non-empty) means the user chose, and the automatic decision leaves the pools alone.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "GOTO_NUM_THREADS")

#: A core counts as busy when other processes use more than this share of it: a worker thread that
#: must wait for a time slice stalls every call, so a partly busy core is worse than none.
BUSY_SHARE = 0.25
#: The shortest window over which /proc/stat's tick counts (1/100 s per core) say something.
MIN_WINDOW = 0.25
#: Beyond this, a window's average is too old to describe the present alone (see foreign_load).
STALE_WINDOW = 10.0


@attrs.frozen
class ThreadDecision:
    """How many BLAS threads a run uses and why.

    Attributes
    ----------
    threads : int or None
        The thread count applied to the BLAS pools, None when they were left as found (a user's
        thread variable, threadpoolctl absent, no BLAS library found).
    reason : str
        Why, in words (what ``Result.stats["blas_threads_reason"]`` shows).
    cores : int
        Usable cores: CPU affinity capped by the cgroup quota.
    foreign : float or None
        Cores other processes were keeping busy (estimate), None when not measured.
    """

    threads: int | None
    reason: str
    cores: int
    foreign: float | None = None

    def stats(self) -> dict[str, Any]:
        """The entries a solve records: ``blas_threads`` and ``blas_threads_reason``.

        Returns
        -------
        dict
        """
        return {"blas_threads": self.threads, "blas_threads_reason": self.reason}


# ------------------------------------------------------------------------------------------- cores
_LINUX = sys.platform.startswith("linux")


def _cpus() -> set[int]:
    """The CPUs this process may run on (every core where affinity is not exposed)."""
    if _LINUX:
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


def _affinity() -> int:
    return max(1, len(_cpus()))


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def cgroup_cpu_limit(root: Path = Path("/sys/fs/cgroup"), proc_cgroup: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPU quota of this process's cgroup in cores (v2 ``cpu.max``, v1 ``cfs_quota_us``).

    The tightest quota on the path from the process's cgroup up to the hierarchy's root counts
    (a container's limit may sit on an ancestor; inside a container the path may not exist under
    its own mount, whose root is then the container's cgroup).

    Parameters
    ----------
    root : Path
        Where the cgroup hierarchies are mounted.
    proc_cgroup : Path
        The process's cgroup membership file.

    Returns
    -------
    float or None
        Cores (quota / period), None when there is no quota or no cgroup information.
    """
    text = _read(proc_cgroup)
    if text is None:
        return None
    limits: list[float] = []
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        if controllers == "":          # v2 unified hierarchy
            mounts, files = [root], ("cpu.max",)
        elif "cpu" in controllers.split(","):
            mounts, files = [root / controllers, root / "cpu", root / "cpu,cpuacct"], ("cpu.cfs_quota_us",)
        else:
            continue
        rel_path = Path(rel.strip().lstrip("/"))
        for mount in dict.fromkeys(mounts):
            d = mount / rel_path
            while True:
                limit = _quota_in(d, files[0])
                if limit is not None:
                    limits.append(limit)
                if d == mount or mount not in d.parents:
                    break
                d = d.parent
    return min(limits) if limits else None


def _quota_in(d: Path, name: str) -> float | None:
    if name == "cpu.max":
        text = _read(d / name)
        if text is None:
            return None
        fields = text.split()
        if len(fields) != 2 or fields[0] == "max":
            return None
        quota, period = float(fields[0]), float(fields[1])
    else:
        q, p = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
        if q is None or p is None:
            return None
        quota, period = float(q), float(p)
    return quota / period if quota > 0 and period > 0 else None


_QUOTA: list[float | None] = []


def _quota() -> float | None:
    """:func:`cgroup_cpu_limit`, read once per process (a container's quota is set at its start)."""
    if not _QUOTA:
        _QUOTA.append(cgroup_cpu_limit())
    return _QUOTA[0]


def usable_cores() -> tuple[int, str]:
    """Cores this process may run on: its CPU affinity, capped by a cgroup CPU quota.

    Returns
    -------
    cores : int
        At least 1. A fractional quota counts its whole cores (threads beyond it are throttled).
    how : str
        Where the count comes from, in words.
    """
    aff = _affinity()
    quota = _quota()
    if quota is not None and quota < aff:
        return max(1, int(quota)), f"cgroup quota {quota:g} cores (affinity {aff})"
    return aff, f"{aff} cores in affinity"


# ---------------------------------------------------------------------------------- foreign load
def _proc_stat(cpus: set[int]) -> tuple[int, int] | None:
    """Busy ticks (not idle, not waiting for I/O) since boot on the given CPUs, and the number of
    threads running or runnable right now on the machine (/proc/stat)."""
    text = _read(Path("/proc/stat"))
    if text is None:
        return None
    total, running = 0, 0
    for line in text.splitlines():
        if line.startswith("procs_running"):
            running = int(line.split()[1])
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        if int(name[3:]) not in cpus or len(fields) < 8:
            continue
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
        total += user + nice + system + irq + softirq + steal
    return total, running


def _own_running() -> int:
    """This process's threads running or runnable now (the caller's at least)."""
    count = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 1
    for tid in tasks:
        text = _read(Path("/proc/self/task") / tid / "stat")
        if text is not None and text.rsplit(")", 1)[-1].split()[:1] == ["R"]:
            count += 1
    return max(1, count)


class _LoadSampler:
    """Other processes' CPU use on our cores, from /proc/stat's busy ticks less this process's own
    CPU time, averaged over the window since the last sample.

    Samples are taken at import, before and after every run: the window before a run is the time
    since the previous one ended, which describes the machine as the run starts. A window too
    short for the tick resolution keeps the previous estimate and lets the window grow. With no
    window yet, and beside a window older than :data:`STALE_WINDOW` (whose average may hide a
    load that began a moment ago), the threads of other processes running at this instant count.

    Parameters
    ----------
    clock, cpu : callable
        Wall time and this process's CPU time, in seconds.
    stat : callable, optional
        ``stat(cpus)`` -> (busy ticks on those CPUs, threads running now), None where unknown.
    own_running : callable, optional
        This process's threads running now.
    tick : float, optional
        Ticks per second of ``stat``'s counts.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, cpu: Callable[[], float] = time.process_time,
                 stat: Callable[[set[int]], tuple[int, int] | None] | None = None,
                 own_running: Callable[[], int] | None = None, tick: float | None = None) -> None:
        self.lock = threading.Lock()
        self.clock, self.cpu = clock, cpu
        self.stat = stat if stat is not None else _proc_stat
        self.own_running = own_running if own_running is not None else _own_running
        self.tick = tick if tick is not None else float(os.sysconf("SC_CLK_TCK")) if _LINUX else 100.0
        self.ref: tuple[float, int, float, frozenset[int]] | None = None
        self.last: float | None = None
        self.sample()

    def _instant(self, cpus: set[int], running: int) -> float:
        # running threads of others, spread over the machine's cores, on our share of them
        others = max(0, running - self.own_running())
        return others * len(cpus) / max(len(cpus), os.cpu_count() or 1)

    def sample(self) -> float | None:
        """Update the estimate; returns it (cores busy with other processes), None if unknown."""
        ref = self.ref
        if ref is not None and self.clock() - ref[0] < MIN_WINDOW:
            return self.last        # too soon to tell more (and cheap: back-to-back small solves)
        cpus = _cpus()
        st = self.stat(cpus)
        if st is None:
            return None
        busy, running = st
        now, own = self.clock(), self.cpu()
        with self.lock:
            ref = self.ref
            if ref is None or ref[3] != frozenset(cpus):
                # no window yet: what runs now stands until there is one
                self.ref, self.last = (now, busy, own, frozenset(cpus)), self._instant(cpus, running)
                return self.last
            window = now - ref[0]
            if window < MIN_WINDOW:
                return self.last
            foreign = max(0.0, ((busy - ref[1]) / self.tick - (own - ref[2])) / window)
            if window > STALE_WINDOW:
                foreign = max(foreign, self._instant(cpus, running))
            self.ref = (now, busy, own, frozenset(cpus))
            self.last = foreign
            return foreign


def _loadavg_share(n_cpus: int) -> float | None:
    """The 1-minute load average, scaled to our share of the machine's cores (None on Windows)."""
    if sys.platform == "win32":
        return None
    try:
        one = os.getloadavg()[0]
    except OSError:
        return None
    return one * n_cpus / max(n_cpus, os.cpu_count() or 1)


_SAMPLER = _LoadSampler()


def foreign_load() -> float | None:
    """Cores of our affinity that other processes keep busy, estimated now.

    From /proc/stat (Linux) over the window since the previous sample (taken at import, and
    before and after every :func:`blas_threads` run), this process's own CPU time subtracted, so
    that our own threads never count as load. With no window yet (a process that solves right
    after importing), and beside a window older than a few seconds, the threads of other
    processes running at this instant count too. Without /proc (macOS) the 1-minute load average
    stands in (it lags a new load by a minute).

    Returns
    -------
    float or None
        Cores (0 on a quiet machine), None where neither is available (Windows).
    """
    foreign = _SAMPLER.sample()
    if foreign is None:
        foreign = _loadavg_share(len(_cpus()))
    return foreign


# ---------------------------------------------------------------------------------------- pools
_POOLS: list[Any] = []          # [threadpoolctl's BLAS controllers] or [None] once known absent


def _pools() -> Any:
    """threadpoolctl's controller of the loaded BLAS libraries (cached), None without threadpoolctl.

    Built after numpy and scipy.linalg are imported, so that both OpenBLAS libraries are loaded
    when it scans the process.
    """
    if not _POOLS:
        importlib.import_module("numpy")
        importlib.import_module("scipy.linalg")
        try:
            tpc: Any = importlib.import_module("threadpoolctl")
        except ImportError:
            _POOLS.append(None)
        else:
            _POOLS.append(tpc.ThreadpoolController().select(user_api="blas"))
    return _POOLS[0]


def _user_variable(env: Mapping[str, str]) -> str | None:
    for var in THREAD_VARIABLES:
        if env.get(var, "").strip():
            return f"{var}={env[var].strip()}"
    return None


def decide_threads(threads: int | None = None, *, env: Mapping[str, str] | None = None,
                   current: int | None = None) -> ThreadDecision:
    """How many BLAS threads a run should use (the module's docstring gives the rules).

    Parameters
    ----------
    threads : int, optional
        An explicit count (≥ 1); None decides automatically.
    env : mapping, optional
        The environment to read thread variables from (``os.environ`` by default).
    current : int, optional
        The pools' current size (the largest); an automatic decision never exceeds it. None: not
        capped.

    Returns
    -------
    ThreadDecision

    Raises
    ------
    ValueError
        If ``threads`` is given and < 1.
    """
    cores, how = usable_cores()
    aff = _affinity()
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads: must be ≥ 1, got {threads}")
        return ThreadDecision(int(threads), f"threads={threads} asked", cores)
    user = _user_variable(os.environ if env is None else env)
    if user is not None:
        return ThreadDecision(None, f"{user} set by the user: pools left as set", cores)
    foreign = foreign_load()
    busy = 0 if foreign is None else max(0, math.ceil(foreign - BUSY_SHARE))
    # others' load is measured on the cores of our affinity; a quota caps what is left of them
    n = max(1, min(cores, aff - busy))
    load = "load unknown" if foreign is None else f"{foreign:.2f} cores busy elsewhere"
    reason = f"auto: {how}, {load}"
    if current is not None and current < n:
        n = current
        reason += f"; capped by the pools' current size {current}"
    return ThreadDecision(n, reason, cores, foreign)


@contextlib.contextmanager
def blas_threads(threads: int | None = None) -> Iterator[ThreadDecision]:
    """Run a block with the BLAS pools at the decided thread count, restored afterwards.

    Every BLAS library threadpoolctl finds (numpy's and scipy's OpenBLAS are two) is set, so that
    no pool keeps more workers than there are free cores. Pools already at the count are not
    touched. Limits are process-wide: runs in concurrent threads of one process share them.

    Parameters
    ----------
    threads : int, optional
        An explicit count; None decides automatically (:func:`decide_threads`).

    Yields
    ------
    ThreadDecision
        What was decided and applied, with the reason (``threads`` None: left as found).

    Raises
    ------
    ValueError
        If ``threads`` is given and < 1.
    """
    pools = _pools()
    if pools is None:
        cores = usable_cores()[0]
        if threads is not None and threads < 1:
            raise ValueError(f"threads: must be ≥ 1, got {threads}")
        yield ThreadDecision(None, "threadpoolctl is not installed: BLAS pools left as found", cores)
        return
    libs = list(pools.lib_controllers)
    sizes = [int(lc.num_threads) for lc in libs]
    if not libs:
        yield ThreadDecision(None, "no BLAS library found: nothing to limit", usable_cores()[0])
        return
    decision = decide_threads(threads, current=max(sizes))
    changed: list[tuple[Any, int]] = []
    try:
        if decision.threads is not None:
            for lc, size in zip(libs, sizes):
                # an automatic count lowers a pool, never raises it (an outer limit stands)
                want = decision.threads if threads is not None else min(decision.threads, size)
                if want != size:
                    lc.set_num_threads(want)
                    changed.append((lc, size))
        yield decision
    finally:
        for lc, size in reversed(changed):
            lc.set_num_threads(size)
        _SAMPLER.sample()
