"""The Dask study's cluster: scheduler and workers started as processes of their own (or a
LocalCluster, or an address), their memory (peaks per row, the scheduler's), their BLAS, and the
load meter that counts the cluster as our own CPU (see :mod:`benchmarks.studies.dask_scale`).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from benchmarks.harness import LoadMeter, Runs, settle, timed
from benchmarks.harness.measure import REPO, _status_kb
from benchmarks.studies.dask_data import _mod


def default_worker_memory() -> int:
    """min(10 GiB, 42 % of the machine's memory), bytes, per worker."""
    try:
        psutil = _mod("psutil")
        total = int(psutil.virtual_memory().total)
    except ImportError:
        total = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    return int(min(10 * 2**30, 0.42 * total))


NO_SPILL = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": False,
            "distributed.worker.memory.pause": False, "distributed.worker.memory.terminate": 0.98}


ONE_THREAD = {v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")}


@dataclass
class ClusterSpec:
    kind: str = "spawn"            # spawn | local | address
    workers: int = 2
    memory: int = field(default_factory=default_worker_memory)
    address: str | None = None

    def describe(self) -> dict[str, Any]:
        how = {"spawn": "dask scheduler + dask worker as separate processes",
               "local": "distributed.LocalCluster (scheduler inside the client process)",
               "address": f"an existing cluster at {self.address}"}[self.kind]
        return {"kind": self.kind, "how": how, "workers": self.workers, "threads_per_worker": 1,
                "memory_limit_gib": round(self.memory / 2**30, 2), "spill": "off" if self.kind != "address" else "?"}


def _env_config(cfg: dict[str, Any]) -> dict[str, str]:
    return {"DASK_" + k.upper().replace(".", "__").replace("-", "_"): str(v) for k, v in cfg.items()}


@contextlib.contextmanager
def cluster(spec: ClusterSpec) -> Iterator[Any]:
    """A client on a fresh cluster of ``spec.workers`` one-thread worker processes (or on ``address``)."""
    dask, distributed = _mod("dask"), _mod("distributed")
    client: Any = None
    if spec.kind == "address":
        client = distributed.Client(spec.address)
        try:
            yield client
        finally:
            client.close()
        return
    if spec.kind == "local":
        with dask.config.set(NO_SPILL):
            lc = distributed.LocalCluster(n_workers=spec.workers, threads_per_worker=1, processes=True,
                                          memory_limit=spec.memory, dashboard_address=None, silence_logs=40)
            client = distributed.Client(lc)
        try:
            yield client
        finally:
            client.close()
            lc.close()
        return
    with tempfile.TemporaryDirectory(prefix="qpcore_dask_") as tmp:
        sched_file = Path(tmp) / "scheduler.json"
        env = dict(os.environ, **ONE_THREAD, **_env_config(NO_SPILL),
                   PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
        logf = open(Path(tmp) / "cluster.log", "w")
        procs: list[subprocess.Popen[bytes]] = []
        try:
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                 "--no-dashboard", "--scheduler-file", str(sched_file)],
                env=env, cwd=REPO, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True))
            t0 = time.monotonic()
            while not sched_file.is_file() or not sched_file.read_text().strip():
                if procs[0].poll() is not None or time.monotonic() - t0 > 60:
                    raise RuntimeError("the dask scheduler did not start: " + _tail(Path(tmp) / "cluster.log"))
                time.sleep(0.1)
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(sched_file),
                 "--nworkers", str(spec.workers), "--nthreads", "1", "--memory-limit", str(spec.memory),
                 "--no-dashboard", "--host", "127.0.0.1", "--local-directory", tmp],
                env=env, cwd=REPO, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True))
            client = distributed.Client(scheduler_file=str(sched_file))
            client.wait_for_workers(spec.workers, timeout=120)
            yield client
        finally:
            if client is not None:
                client.close()
            for p in reversed(procs):      # workers first, then the scheduler
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
            logf.close()


def _tail(path: Path, n: int = 800) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def process_memory(reset: bool = False, dask_worker: Any = None) -> dict[str, Any]:
    """This process's memory in MB: current RSS, the kernel's high-water mark (VmHWM: since the last
    reset) and ``ru_maxrss``. ``reset`` sets the high-water mark (and ru_maxrss) to the current RSS
    afterwards (``/proc/self/clear_refs``). Run on the workers by ``client.run``."""
    out: dict[str, Any] = {"pid": os.getpid(),
                           "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}
    rss, hwm = _status_kb("VmRSS"), _status_kb("VmHWM")
    out["rss_mb"] = None if rss is None else round(rss / 1024.0, 1)
    out["hwm_mb"] = None if hwm is None else round(hwm / 1024.0, 1)
    if dask_worker is not None:
        spilled = getattr(getattr(dask_worker, "data", None), "spilled_total", None)
        out["spilled_mb"] = round(float(spilled.disk) / 2**20, 1) if spilled is not None else 0.0
    if reset:
        try:
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")
        except OSError:
            pass
    return out


def worker_memory(client: Any, reset: bool = False) -> dict[str, dict[str, Any]]:
    """``process_memory`` on every worker, by worker address."""
    out: dict[str, dict[str, Any]] = client.run(process_memory, reset)
    return out


class WorkerPeaks:
    """Each worker's peak memory over a row, and over each solve: every checkpoint reads the
    high-water mark since the previous one and resets it (``process_memory(reset=True)``), so the
    row's peak is the largest reading (the first covers the data's generation and the build)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.peak: dict[str, float] = {}
        self.last: dict[str, dict[str, Any]] = {}

    def checkpoint(self) -> dict[str, float | None]:
        """The peak of each worker (MB) since the previous checkpoint."""
        self.last = worker_memory(self.client, reset=True)
        out: dict[str, float | None] = {}
        for a, v in self.last.items():
            h = v.get("hwm_mb") if v.get("hwm_mb") is not None else v.get("ru_maxrss_mb")
            out[a] = h
            if h is not None:
                self.peak[a] = max(self.peak.get(a, 0.0), float(h))
        return out


def _blas_info() -> list[dict[str, Any]]:
    try:
        threadpoolctl = _mod("threadpoolctl")
    except ImportError:
        return []
    return [{"api": p.get("internal_api"), "threads": p.get("num_threads")} for p in threadpoolctl.threadpool_info()
            if p.get("user_api") == "blas"]


def cluster_info(client: Any) -> dict[str, Any]:
    """Workers (threads, memory limit, BLAS threads), versions."""
    dask, distributed = _mod("dask"), _mod("distributed")
    info = client.scheduler_info()
    workers = {a: {"nthreads": w.get("nthreads"), "memory_limit_gib": round(float(w.get("memory_limit") or 0) / 2**30, 2)}
               for a, w in info.get("workers", {}).items()}
    try:
        blas = client.run(_blas_info)
    except Exception:  # noqa: BLE001 - a description only
        blas = {}
    for a in workers:
        workers[a]["blas"] = blas.get(a)
    return {"workers": workers, "dask": dask.__version__, "distributed": distributed.__version__,
            "scheduler_pid": _scheduler_pid(client), "client_pid": os.getpid()}


def _scheduler_pid(client: Any) -> int | None:
    try:
        return int(client.run_on_scheduler(os.getpid))
    except Exception:  # noqa: BLE001
        return None


def scheduler_memory(client: Any) -> dict[str, Any] | None:
    try:
        out: dict[str, Any] = client.run_on_scheduler(process_memory)
        return out
    except Exception:  # noqa: BLE001
        return None


def family_cpu() -> float:
    """CPU seconds of this process and all its live descendants (the cluster when we started it),
    plus their reaped children."""
    try:
        psutil = _mod("psutil")
    except ImportError:
        t = os.times()
        return float(t.user + t.system + t.children_user + t.children_system)
    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            c = p.cpu_times()
            total += c.user + c.system + getattr(c, "children_user", 0.0) + getattr(c, "children_system", 0.0)
    return total


class Meter(LoadMeter):
    """The load before each run and the CPU other processes used during it.

    :class:`benchmarks.harness.LoadMeter` counts this process and its reaped children as its own;
    here the Dask workers and scheduler are live descendants doing our work, so they are counted
    as ours too (``family_cpu``). A run is **loaded** when others used more than
    ``OTHERS_MARGIN`` (0.1) of a core during it.
    """

    def __init__(self) -> None:
        super().__init__(cpu=family_cpu)
        self._runs = Runs(repeat=1, meter=self)

    def run(self, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``fn()`` with the load before it and others' CPU during it; an exception becomes an error record."""
        return timed(self._runs, fn)

    def settle(self, seconds: float) -> dict[str, Any]:
        """Wait up to ``seconds`` for a 5 s probe in which others use ≤ 0.1 core."""
        return settle(self._runs, seconds)
