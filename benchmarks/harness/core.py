"""The timing core every study shares: threads, the load check, interleaved timed runs.

A study (``benchmarks.run``, ``qp``, ``asvm``, ``ocas``, ``incas``, ``scaling``, ``dask_scale``)
says what it solves and how it renders; how a run is timed and recorded lives here, once:

- threads: :func:`threads_from_argv` reads ``--threads`` before numpy is imported and
  :func:`pin_blas_threads` sizes the BLAS/OpenMP pools from it (OpenBLAS sizes its pool at
  import; threadpoolctl can lower it per run, never raise it); :func:`thread_limit` per run,
  :func:`blas_threads` for the record;
- the load check: :class:`LoadMeter` (the 1-minute load average and our own share of it) and
  :func:`timed`, which also measures the CPU other processes used during the run and flags the
  run ``loaded`` when they took more than :data:`OTHERS_MARGIN` of a core;
- interleaving: :func:`interleave` runs the anchor and ours in alternation (anchor, ours, anchor,
  ours, ...), each at least ``repeat`` times unless its first run was long; :func:`ratio_stats`
  gives the ratio of medians and the range of the pairwise ratios;
- anchors that cannot be stopped from inside: :func:`in_child` (a forked child with a timeout);
  :func:`summarize_runs` (median, min, max, loads of a solver's runs); :func:`log`.

Records, stores and table cells are in :mod:`benchmarks.harness.records`, the study skeleton
(command line, main loop) in :mod:`benchmarks.harness.study`.

Nothing here imports numpy at module import time.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from benchmarks.harness.measure import median

__all__ = ["LOAD_MARGIN", "LOAD_TAU", "OTHERS_MARGIN", "add_run_arguments", "blas_threads", "blas_threads_under",
           "busy_seconds", "default_blas_threads", "in_child", "interleave", "LoadMeter", "log",
           "pin_blas_threads", "process_cpu", "ratio_stats", "resolve_run_arguments", "Runs", "settle",
           "summarize_runs", "thread_limit", "thread_list_from_argv", "threads_from_argv", "timed", "Timing"]


LOAD_MARGIN = 0.3              # foreign load tolerated above our own contribution
OTHERS_MARGIN = 0.1            # cores other processes may use during a run before it is flagged
LOAD_TAU = 60.0                # time constant of the kernel's 1-minute load average (s)

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def log(msg: str) -> None:
    """A progress line on stdout, flushed (runs take minutes; the reader follows along)."""
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------------------------

def _threads_text(argv: list[str]) -> str | None:
    text = None
    for k, a in enumerate(argv):
        if a == "--threads" and k + 1 < len(argv):
            text = argv[k + 1]
        elif a.startswith("--threads="):
            text = a.split("=", 1)[1]
    return text


def threads_from_argv(argv: list[str], default: int = 2) -> int:
    """The value of ``--threads N`` / ``--threads=N`` in ``argv``, else ``default``."""
    text = _threads_text(argv)
    return default if text is None else int(text)


def thread_list_from_argv(argv: list[str], default: str = "1,2") -> list[int]:
    """The list of ``--threads 1,2`` in ``argv`` (``default`` when absent or malformed)."""
    text = _threads_text(argv) or default
    try:
        return [int(t) for t in text.split(",") if t]
    except ValueError:
        return [int(t) for t in default.split(",") if t]


def pin_blas_threads(threads: int) -> None:
    """Set the BLAS/OpenMP thread variables; call before numpy is first imported."""
    for var in _THREAD_VARS:
        os.environ[var] = str(threads)


def default_blas_threads(threads: int) -> None:
    """Set the BLAS/OpenMP thread variables the environment leaves unset (before numpy is imported)."""
    for var in _THREAD_VARS[:3]:
        os.environ.setdefault(var, str(threads))


def thread_limit(threads: int) -> Any:
    """A context limiting the BLAS pools to ``threads`` (a no-op without threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=threads)


def blas_threads() -> int | None:
    """The BLAS thread count in effect (what threadpoolctl reports), None when unknown."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    ts = [int(p["num_threads"]) for p in threadpool_info() if p.get("user_api") == "blas"]
    return max(ts) if ts else None


def blas_threads_under(threads: int) -> int | None:
    """The BLAS thread count in effect under :func:`thread_limit`."""
    with thread_limit(threads):
        return blas_threads()


# ---------------------------------------------------------------------------------------------
# The load check
# ---------------------------------------------------------------------------------------------

def process_cpu() -> float:
    """CPU seconds of this process and its reaped children (``os.times()``)."""
    t = os.times()
    return float(t.user + t.system + t.children_user + t.children_system)


class LoadMeter:
    """The 1-minute load average, and how much of it is our own process.

    Linux's load average is an exponential average (time constant 60 s) of the number of running
    threads. Our own contribution is estimated the same way from our CPU time (``os.times()``:
    this process's threads plus reaped children, i.e. the anchor runs), sampled at every reading:
    between two samples the process is taken to have used CPU at a constant rate. A reading is
    ``loaded`` when load1 > LOAD_MARGIN + own, i.e. something else used more than 0.3 of a core;
    :func:`timed` replaces that flag by the direct measure of other processes' CPU during the run.
    (With one thread busy all the time own ≈ 1, which is the plain "flag load1 > 1.3" rule.)

    Parameters
    ----------
    cpu : callable, optional
        CPU seconds that count as ours (default: this process and its reaped children; a study
        whose helpers are live processes, as Dask workers, passes their family's total).
    """

    def __init__(self, cpu: Callable[[], float] | None = None) -> None:
        self.cpu: Callable[[], float] = cpu if cpu is not None else process_cpu
        self.samples: list[tuple[float, float]] = [(time.monotonic(), self.cpu())]

    def own(self) -> float:
        """Our estimated share of the 1-minute load average."""
        now, cpu = time.monotonic(), self.cpu()
        self.samples.append((now, cpu))
        self.samples = [s for s in self.samples if now - s[0] < 20 * LOAD_TAU] or self.samples[-1:]
        est = 0.0
        for (t0, c0), (t1, c1) in zip(self.samples, self.samples[1:]):
            if t1 > t0:
                # a family's total may drop when one of its processes ends: no negative rates
                rate = max(0.0, c1 - c0) / (t1 - t0)
                est += rate * (math.exp(-(now - t1) / LOAD_TAU) - math.exp(-(now - t0) / LOAD_TAU))
        return est

    def reading(self) -> dict[str, Any]:
        """``load1``, ``load5``, ``own`` and whether the machine looks ``loaded``."""
        own = self.own()
        load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
        return {"load1": round(load[0], 2), "load5": round(load[1], 2), "own": round(own, 2),
                "loaded": bool(load[0] > LOAD_MARGIN + own)}


def busy_seconds() -> float | None:
    """CPU seconds all processes have used (user, nice, system, irq, softirq, steal), /proc/stat."""
    try:
        with open("/proc/stat") as fh:
            f = fh.readline().split()
    except OSError:
        return None
    if not f or f[0] != "cpu":
        return None
    v = [int(x) for x in f[1:9]] + [0] * max(0, 8 - len(f[1:9]))
    user, nice, system, _idle, _iowait, irq, softirq, steal = v[:8]
    return (user + nice + system + irq + softirq + steal) / float(os.sysconf("SC_CLK_TCK"))


class Timing(Protocol):
    """What :func:`timed` and :func:`interleave` read from a study's settings."""

    meter: LoadMeter
    repeat: int
    long: float
    pair_below: float


@dataclass
class Runs:
    """The settings every study's timed runs share (a :class:`Timing`); studies add their own.

    Attributes
    ----------
    repeat : int
        Runs of each solver (the median is reported).
    long : float
        A first run longer than this (s) is not repeated.
    pair_below : float
        Below this (s) the anchor runs again before each of ours (anchor, ours, anchor, ours).
    threads : list of int
        Our BLAS thread counts.
    time_limit : float
        Each of our solves (s).
    anchor_timeout : float
        An anchor run in a child process is killed after this (s).
    meter : LoadMeter
        The load check.
    """

    repeat: int = 3
    long: float = 300.0
    pair_below: float = 60.0
    threads: list[int] = field(default_factory=lambda: [1, 2])
    time_limit: float = 600.0
    anchor_timeout: float = 600.0
    meter: LoadMeter = field(default_factory=LoadMeter)


def _fmt_s(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if math.isinf(v):
        return "stopped"
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def timed(ctx: Timing, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Read the load right before the run, run it, and measure what *other* processes used meanwhile.

    The 1-minute load average is recorded as asked, but on a VM it idles at 0.3–0.5 with nothing
    running (kernel threads in uninterruptible sleep count), and it lags a run by a minute; the
    direct measure is the machine's busy CPU time during the run minus our own (this process and
    its reaped children, i.e. an anchor child): ``others`` in cores. A run is ``loaded`` when
    others > OTHERS_MARGIN.
    """
    load = ctx.meter.reading()
    b0, c0, w0 = busy_seconds(), ctx.meter.cpu(), time.monotonic()
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - a solver under development may fail: report it, go on
        out = {"seconds": float("nan"), "status": f"error: {type(e).__name__}: {e}"[:300], "error": True,
               "error_type": type(e).__name__}
    b1, c1, w1 = busy_seconds(), ctx.meter.cpu(), time.monotonic()
    if b0 is not None and b1 is not None and w1 > w0:
        # both clocks tick in 1/CLK_TCK s (10 ms): allow three ticks of quantization, or a 0.1 s
        # run would be flagged for 10 ms of rounding
        others = max(0.0, ((b1 - b0) - (c1 - c0) - 3.0 / os.sysconf("SC_CLK_TCK")) / (w1 - w0))
        load = dict(load, others=round(others, 3), loaded=bool(others > OTHERS_MARGIN))
    out["load"] = load
    return out


def add_run_arguments(p: Any, *, small: str = "quick", interleaved: bool = True) -> None:
    """The flags of the harness's settings on a study's parser: ``--repeat``, ``--settle`` and,
    for a study that interleaves with an anchor, ``--long`` and ``--pair-below``.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The study's parser.
    small : str
        The study's name for its small mode (``quick``, ``small``), for the help texts.
    interleaved : bool
        Whether the anchor and ours run interleaved (:func:`interleave`).

    See Also
    --------
    resolve_run_arguments : the defaults that depend on the mode.
    """
    p.add_argument("--repeat", type=int, default=None, help=f"runs of each, median reported (default 3; {small} 1)")
    if interleaved:
        p.add_argument("--long", type=float, default=300.0, help="a first run longer than this (s) is not repeated")
        p.add_argument("--pair-below", type=float, default=60.0,
                       help="an anchor faster than this (s) runs again before each of our runs (anchor, ours, "
                            "anchor, ours); a slower one once per pass (default 60)")
    p.add_argument("--settle", type=float, default=None,
                   help="before the first timed run wait up to this many seconds for other processes' CPU to fall "
                        f"below {OTHERS_MARGIN} core (default 120, {small} 0)")


def resolve_run_arguments(p: Any, a: Any, small: bool) -> None:
    """The defaults of :func:`add_run_arguments` that depend on the mode, and their checks.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The study's parser (for ``p.error``).
    a : argparse.Namespace
        Its parsed arguments, completed in place.
    small : bool
        A small (quick, tiny) run: one repeat, no wait for a quiet machine.
    """
    if a.repeat is None:
        a.repeat = 1 if small else 3
    if a.repeat < 1:
        p.error("--repeat must be ≥ 1")
    if a.settle is None:
        a.settle = 0.0 if small else 120.0


def _idle() -> dict[str, Any]:
    time.sleep(5.0)
    return {}


def settle(ctx: Timing, seconds: float, say: Callable[[str], None] | None = log) -> dict[str, Any]:
    """Wait up to ``seconds`` for a 5 s idle probe in which other processes use ≤ OTHERS_MARGIN core.

    Returns the last probe's load reading with ``waited_s`` (told to ``say`` after a wait); a
    reading without waiting when ``seconds`` ≤ 0. Studies call it before their first timed run
    (the 1-minute average remembers a minute of earlier work).
    """
    if seconds <= 0:
        return dict(ctx.meter.reading(), waited_s=0.0)
    t0 = time.perf_counter()
    rd = timed(ctx, _idle)["load"]
    while rd["loaded"] and time.perf_counter() - t0 < seconds:
        rd = timed(ctx, _idle)["load"]
    out = dict(rd, waited_s=round(time.perf_counter() - t0, 1))
    if say is not None:
        say(f"load {rd['load1']} (own {rd['own']}, others {rd.get('others', '?')}) after waiting "
            f"{out['waited_s']:.0f} s (--settle {seconds:g})"
            + ("; still LOADED: other work is running" if rd["loaded"] else ""))
    return out


def interleave(ctx: Timing, solvers: dict[str, Callable[[], dict[str, Any]]], tag: str,
               anchor: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Passes over the solvers in order (the anchor first); pass 1 decides each one's run count.

    With ``anchor`` named and its first run shorter than ``ctx.pair_below`` s, the anchor runs again
    right before each further run of ours (anchor, ours, anchor, ours, ...); otherwise once a pass.
    Each of our runs records the anchor run just before it (``anchor_before``), its pair. A solver
    whose first run was stopped, failed or took longer than ``ctx.long`` s runs once.
    """
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in solvers}
    want: dict[str, int] = {}

    def once(k: str) -> dict[str, Any]:
        r = timed(ctx, solvers[k])
        runs[k].append(r)
        ld = r["load"]
        log(f"[{tag}] {k:<22} run {len(runs[k])}: {_fmt_s(r['seconds']):>8} s  {r.get('status', '')}"
            f"  load {ld['load1']} (own {ld['own']}, others {ld.get('others', '?')}){'  LOADED' if ld['loaded'] else ''}")
        return r

    for p in range(ctx.repeat):
        fresh_anchor = False
        for k in solvers:
            if p > 0 and len(runs[k]) >= want[k]:
                continue
            if anchor is not None and k != anchor and runs[anchor]:
                first = runs[anchor][0]["seconds"]
                if not fresh_anchor and math.isfinite(first) and first < ctx.pair_below:
                    once(anchor)
                fresh_anchor = False
            r = once(k)
            if k == anchor:
                fresh_anchor = True
            elif anchor is not None and runs[anchor]:
                r["anchor_before"] = runs[anchor][-1]["seconds"]
            if p == 0:
                long = (not math.isfinite(r["seconds"])) or r["seconds"] > ctx.long   # stopped, failed or long
                want[k] = 1 if long else ctx.repeat
    return runs


def ratio_stats(ours: list[dict[str, Any]], anchor: list[dict[str, Any]]) -> dict[str, Any]:
    """Ratio of medians (ours / anchor) and the range of the per-pair ratios (each of our runs
    against the anchor run just before it, else pass by pass)."""
    om = median([r["seconds"] for r in ours])
    am = median([r["seconds"] for r in anchor])
    pairs = ([(o["seconds"], o["anchor_before"]) for o in ours] if all("anchor_before" in o for o in ours)
             else [(o["seconds"], a["seconds"]) for o, a in zip(ours, anchor)])
    paired = [x / a for x, a in pairs if math.isfinite(x) and math.isfinite(a) and a > 0]
    out: dict[str, Any] = {"ratio": om / am if math.isfinite(am) and am > 0 else None,
                           "paired_min": min(paired) if paired else None,
                           "paired_max": max(paired) if paired else None}
    if not math.isfinite(am):   # the anchor was stopped: ours / its time limit bounds the ratio
        lim = min(r.get("limit", r["seconds"]) for r in anchor)
        out["ratio_below"] = om / lim if math.isfinite(om) and math.isfinite(lim) else None
    return out


def in_child(fn: Callable[[], dict[str, Any]], timeout: float) -> dict[str, Any]:
    """Run ``fn`` in a forked child (inherits the arrays, nothing pickled but the result); kill it
    after ``timeout`` s. Returns fn's dict, or {"timeout": True} / {"error": ...}.

    Anchors that cannot be stopped from inside (a LIBSVM or LIBLINEAR call) run this way.
    """
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def target() -> None:
        try:
            send.send(("ok", fn()))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            send.send(("error", f"{type(e).__name__}: {e}"))

    proc = ctx.Process(target=target, daemon=True)
    t0 = time.perf_counter()
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            proc.kill()
            proc.join()
            return {"timeout": True, "wall": time.perf_counter() - t0}
        kind, out = recv.recv()
    except EOFError:
        kind, out = "error", f"child died (exit code {proc.exitcode})"
    finally:
        recv.close()
    proc.join()
    if kind != "ok":
        return {"error": out}
    return dict(out)


# ---------------------------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# The study skeleton: one command line, one main loop
# ---------------------------------------------------------------------------------------------


def summarize_runs(runs: list[dict[str, Any]], keep: tuple[str, ...] = ("x",)) -> dict[str, Any]:
    """Median, min, max of the run times; loads; the median run's status, counts and ``keep`` keys
    (its point ``x`` by default, kept for judging)."""
    secs = [r["seconds"] for r in runs]
    ok = [r for r in runs if math.isfinite(r["seconds"])]
    med = median(secs) if secs else float("nan")
    mid = min(ok, key=lambda r: abs(r["seconds"] - med)) if ok else (runs[0] if runs else {})
    out = {"runs": len(runs), "times": [round(s, 4) if math.isfinite(s) else None for s in secs],
           "seconds": med, "min": min(secs) if secs else None, "max": max(secs) if secs else None,
           "loads": [r.get("load") for r in runs], "loaded": any(r.get("load", {}).get("loaded") for r in runs),
           "status": mid.get("status"), "iterations": mid.get("iterations"), "n_sv": mid.get("n_sv"),
           "peak_mb": max((r.get("peak_mb", 0.0) for r in runs), default=None),
           "blas_threads": mid.get("blas_threads")}
    out.update({k: mid.get(k) for k in keep})
    return out
