"""The benchmark harness every study shares: threads, the load check, interleaved timed runs, JSON lines.

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
- records: :func:`log`, :func:`clean` (JSON-safe values), :func:`append_jsonl` /
  :func:`read_jsonl` (one JSON object a line), :func:`markdown_table`; the machine description,
  medians and time stamps of :mod:`benchmarks.measure`.

Nothing here imports numpy at module import time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchmarks.harness.measure import REPO, PeakMemory, machine_info, median, now_iso

RESULTS = REPO / "benchmarks" / "results"   # raw results and reference caches (untracked: .gitignore)
DOCS = REPO / "docs" / "benchmarks"         # the committed pages, written only when --docs asks
# The last commit whose tree carried the raw results (issue 34 took them out): a missing default
# store is seeded from it, so re-measuring one row still renders a page with every published row.
ARCHIVE = "75f3e2242e79e8aeb3b36adf97ea80ffdad6572b"
ARCHIVED = {"ocas.json": "docs/benchmarks/ocas.json", "incas.json": "docs/benchmarks/incas.json",
            "svm_family.json": "docs/benchmarks/svm_family.json", "svm_grid.json": "docs/benchmarks/svm_grid.json",
            **{name: f"benchmarks/results/{name}" for name in (
                "asvm.jsonl", "busy.jsonl", "dask_scale.json", "grid_search.jsonl", "loo.json",
                "maros_meszaros.jsonl", "ocas_reference.json", "qp.jsonl", "reference.json", "results.jsonl",
                "scaling.jsonl", "small_data.jsonl", "svm_grid_reference.json")}}

__all__ = ["ARCHIVE", "DOCS", "RESULTS", "add_docs_argument", "add_store_arguments", "page_folder",
           "resolve_store_arguments", "seed", "LOAD_MARGIN", "LOAD_TAU", "LoadMeter", "OTHERS_MARGIN", "PeakMemory", "REPO", "Runs", "Timing",
           "add_run_arguments", "append_jsonl", "blas_threads", "blas_threads_under", "busy_seconds", "clean",
           "default_blas_threads", "fmt_exp", "fmt_flag", "fmt_loads", "fmt_ratio", "fmt_seconds",
           "fmt_summary_seconds", "generated_line", "in_child", "interleave", "load_store", "log", "machine_info", "markdown_table",
           "median", "now_iso", "summarize_runs", "pin_blas_threads", "process_cpu", "ratio_stats", "read_jsonl",
           "command_line", "need_sklearn", "resolve_run_arguments", "run_study", "save_row", "settle", "Study", "study_parser", "thread_limit", "thread_list_from_argv", "threads_from_argv",
           "timed"]

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

def clean(v: Any, drop: Iterable[str] = (), inf_as_text: bool = True) -> Any:
    """``v`` made JSON-safe: numpy scalars and arrays as Python values, dict keys as text.

    Parameters
    ----------
    v : object
        A record.
    drop : iterable of str
        Dict keys left out at every depth (points, models: too large for a record).
    inf_as_text : bool
        ±inf as ``"inf"`` / ``"-inf"`` (else None); NaN is always None.
    """
    import numpy as np

    dropped = frozenset(drop)

    def go(x: Any) -> Any:
        if isinstance(x, dict):
            return {str(k): go(y) for k, y in x.items() if k not in dropped}
        if isinstance(x, (list, tuple)):
            return [go(y) for y in x]
        if isinstance(x, np.ndarray):
            return go(x.tolist())
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, float) and not math.isfinite(x):
            return None if math.isnan(x) or not inf_as_text else ("inf" if x > 0 else "-inf")
        return x

    return go(v)


def seed(path: Path) -> bool:
    """Seed a missing default results file (one of :data:`ARCHIVED` in :data:`RESULTS`) from
    :data:`ARCHIVE`; any other path, or a file already there, is left alone.

    Returns whether the file was written. Without git or that commit (a shallow clone) it says so
    and the study starts from an empty store.
    """
    if path.exists() or path.parent.resolve() != RESULTS.resolve() or path.name not in ARCHIVED:
        return False
    import subprocess

    got = subprocess.run(["git", "-C", str(REPO), "show", f"{ARCHIVE}:{ARCHIVED[path.name]}"],
                         capture_output=True, check=False)
    if got.returncode != 0:
        log(f"{path.name}: not seeded from commit {ARCHIVE[:7]} ({got.stderr.decode(errors='replace').strip()})")
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(got.stdout)
    log(f"{path.name}: seeded from commit {ARCHIVE[:7]} (the published results)")
    return True


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one record as a line of ``path`` (created with its folder); numpy scalars as floats."""
    seed(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(record, default=float) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (none when it does not exist; blank lines skipped)."""
    seed(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_store(path: Path, mode: str) -> dict[str, Any]:
    """A study's store: one JSON object with a record per row (its run under ``_run``) and ``_meta``.

    A ``full`` run drops the rows a quick or small run left there: the two are never mixed on one
    page. A missing file is an empty store (a default one is seeded first: :func:`seed`).
    """
    seed(path)
    store: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    if mode == "full":
        store = {k: v for k, v in store.items() if k.startswith("_") or v.get("_run", {}).get("mode") == "full"}
    return store


def save_row(path: Path, store: dict[str, Any], key: str, record: dict[str, Any], meta: dict[str, Any]) -> None:
    """Put one row's record and the store's ``_meta`` in ``store`` and rewrite ``path`` (after every
    row, so an interrupted run keeps what it measured)."""
    store[key] = record
    store["_meta"] = meta
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(store, indent=1) + "\n")


def fmt_exp(v: Any, fmt: str = "+.1e") -> str:
    """A relative difference or gap in a table cell (– when absent)."""
    if v is None or v == "inf":
        return "–"
    return format(float(v), fmt)


def fmt_ratio(v: Any) -> str:
    """A ratio in a table cell, three significant digits."""
    return "–" if v is None else f"{float(v):.3g}"


def fmt_seconds(v: Any) -> str:
    """Seconds in a table cell (``> limit`` for a stopped run)."""
    if v == "inf":
        return "> limit"
    return "–" if v is None else _fmt_s(float(v))


def fmt_summary_seconds(s: dict[str, Any], key: str = "seconds") -> str:
    """median (min–max) of a summary; just the median for one run."""
    if s.get("runs", 0) <= 1 or s.get("min") is None:
        return fmt_seconds(s.get(key))
    return f"{fmt_seconds(s.get(key))} ({fmt_seconds(s.get('min'))}–{fmt_seconds(s.get('max'))})"


def fmt_loads(loads: list[Any]) -> str:
    """The highest load1 / own / others over a row's runs."""
    ls = [ld for ld in loads if ld]
    if not ls:
        return "–"
    oth = [ld["others"] for ld in ls if "others" in ld]
    tail = f" / {max(oth):.2f}" if oth else ""
    return f"{max(ld['load1'] for ld in ls):.2f} / {max(ld['own'] for ld in ls):.2f}{tail}"


def fmt_flag(loaded: Any) -> str:
    """``**loaded**`` or ``ok``: whether a row's ratio may be claimed."""
    return "**loaded**" if loaded else "ok"


def generated_line(study: str, store: str, *, also: str = "") -> str:
    """The line under a page's title: which command wrote it, from which raw results (untracked:
    :data:`RESULTS`, seeded from :data:`ARCHIVE`), where the protocol is (``also``: another place)."""
    more = f" and {also}" if also else ""
    return (f"Generated by `python -m benchmarks.{study} --docs` from `benchmarks/results/{store}` (the raw results, "
            f"not committed; a missing one is seeded from commit {ARCHIVE[:7]}); do not edit by hand. "
            f"Protocol: the module docstring of `benchmarks/studies/{study}.py`{more}.\n")


def markdown_table(head: list[str], body: list[list[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)




# ---------------------------------------------------------------------------------------------
# The study skeleton: one command line, one main loop
# ---------------------------------------------------------------------------------------------

def _thread_counts(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t]


def study_parser(prog: str, doc: str | None, *, rows: Iterable[str] | None = None, small: str | None = None,
                 interleaved: bool = True, threads: int | str | None = None, out: Path | None = None,
                 docs: bool = False) -> argparse.ArgumentParser:
    """The command line every study shares; the study adds its own flags to the parser returned.

    Parameters
    ----------
    prog : str
        ``python -m benchmarks.<study>``.
    doc : str or None
        The study's module docstring (the help text).
    rows : iterable of str, optional
        The default rows: adds ``--rows`` (comma-separated).
    small : str, optional
        The name of the study's small mode (``quick``, ``small``): adds ``--<small>``.
    interleaved : bool
        Whether the study interleaves ours with an anchor (adds ``--long`` and ``--pair-below``).
    threads : int or str, optional
        The default of ``--threads``: one BLAS thread count (an int; the study pins it before numpy
        is imported with :func:`threads_from_argv`) or a comma-separated list of them (a str, read
        as a list of int; :func:`thread_list_from_argv`).
    out : Path, optional
        The default results file (in :data:`RESULTS`, untracked): adds ``--out``.
    docs : bool
        Whether the study renders a page: adds ``--docs [FOLDER]`` (:func:`add_docs_argument`).

    Returns
    -------
    argparse.ArgumentParser
        Parse it with :meth:`parse_args`, then call :func:`resolve_run_arguments`.
    """
    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if rows is not None:
        p.add_argument("--rows", default=",".join(rows), help="comma-separated rows (default: %(default)s)")
    if small is not None:
        p.add_argument(f"--{small}", action="store_true", help=f"the {small} rows only (a smoke run)")
    add_run_arguments(p, small=small or "quick", interleaved=interleaved)
    if isinstance(threads, str):
        p.add_argument("--threads", type=_thread_counts, default=_thread_counts(threads),
                       help=f"our BLAS thread counts, comma-separated (default {threads})")
    elif threads is not None:
        p.add_argument("--threads", type=int, default=threads, help="BLAS threads, both sides (default %(default)s)")
    if out is not None:
        p.add_argument("--out", type=Path, default=out, help="the JSON-lines results file (default: %(default)s)")
    if docs:
        add_docs_argument(p)
    return p


def add_docs_argument(p: Any) -> None:
    """``--docs [FOLDER]``: write the rendered page (and its plots) into FOLDER, ``docs/benchmarks``
    when no folder is given; without the flag the page goes beside the raw results
    (:func:`page_folder`), so a run never rewrites the committed pages unless asked."""
    p.add_argument("--docs", nargs="?", type=Path, const=DOCS, default=None, metavar="FOLDER",
                   help="write the page (and plots) into FOLDER (default docs/benchmarks); without --docs it goes "
                        "beside the raw results (benchmarks/results/, untracked)")


def page_folder(docs: Path | None, results: Path) -> Path:
    """Where a study's page goes: the ``--docs`` folder when given, else the results' folder."""
    return docs if docs is not None else results


def add_store_arguments(p: Any, store: str) -> None:
    """``--out-dir`` (the folder of a study's store ``store``, default :data:`RESULTS`, its
    ``quick/`` for a small run) and ``--docs`` (:func:`add_docs_argument`); resolved by
    :func:`resolve_store_arguments`."""
    p.add_argument("--out-dir", type=Path, default=None,
                   help=f"the folder of {store}, the raw results (default benchmarks/results; a small run "
                        "benchmarks/results/quick); the page goes there too without --docs")
    add_docs_argument(p)


def resolve_store_arguments(a: Any, small: bool) -> None:
    """Complete ``a.out_dir`` and ``a.docs`` (the page's folder) of :func:`add_store_arguments`."""
    if a.out_dir is None:
        a.out_dir = RESULTS / "quick" if small else RESULTS
    a.docs = page_folder(a.docs, a.out_dir)


@dataclass
class Study:
    """What a study says: its rows, how one row is measured, how its records render.

    Attributes
    ----------
    run_row : callable
        ``run_row(name, args, runs) -> record`` measures one row (with :func:`interleave` on ``runs``);
        a row of several records (one per solver) returns their list.
    render : callable
        ``render(records, args)`` writes the page: from every record of the JSON-lines file at the
        end, or from the store (a dict) after every row when ``store`` is set.
    clean : callable
        Applied to each record before it is written (:func:`clean` with the study's choices).
    store : Path, optional
        A JSON store (:func:`load_store`, :func:`save_row`: one record per row name) instead of
        JSON lines at ``args.out``.
    mode : str
        The store's mode (``full``, ``quick``, ...): a full run drops the rows of small ones.
    meta : callable
        The store's ``_meta`` (machine, time), called after each row.
    key : callable
        A row's key in the store (rows may be objects, not names).
    settle : bool
        Whether :func:`run_study` waits for a quiet machine before the first row; False for a study
        that settles itself before each row (after starting its cluster).
    """

    run_row: Callable[[Any, Any, Runs], dict[str, Any] | list[dict[str, Any]]]
    render: Callable[[Any, Any], None]
    clean: Callable[[dict[str, Any]], Any] = lambda r: r
    store: Path | None = None
    mode: str = "full"
    meta: Callable[[], dict[str, Any]] = dict
    key: Callable[[Any], str] = str
    settle: bool = True


def run_study(study: Study, args: Any, rows: Iterable[Any], *, stamp: dict[str, Any] | None = None,
              head: dict[str, Any] | None = None, runs: Runs | None = None) -> list[dict[str, Any]]:
    """The main loop every study shares: settle, measure each row, record it, render.

    ``args`` carries ``repeat``, ``settle``, ``out`` (JSON lines) and optionally ``long`` /
    ``pair_below``; ``runs`` (a study's own :class:`Runs`) is made from them when not given. The
    settle reading is left in ``args.load_at_start``. Each record gains ``stamp`` (default:
    ``run_id`` and the ``machine``'s CPU) and is written as soon as it is measured (an interrupted
    run keeps what it measured): appended to ``args.out`` after ``head`` (a record describing the
    run) and rendered at the end, or saved in ``study.store`` and rendered after every row.
    Returns this run's records.
    """
    if runs is None:
        given = vars(args)   # a study without an anchor has no --long / --pair-below
        runs = Runs(repeat=args.repeat, long=given.get("long", 300.0), pair_below=given.get("pair_below", 60.0))
    if stamp is None:
        stamp = {"run_id": now_iso(), "machine": machine_info(2).get("cpu")}
    store = load_store(study.store, study.mode) if study.store is not None else None
    if head is not None and store is None:
        append_jsonl(args.out, study.clean(head))
    args.load_at_start = settle(runs, args.settle) if study.settle else None
    done = []
    for name in rows:
        got = study.run_row(name, args, runs)
        for one in got if isinstance(got, list) else [got]:
            rec = study.clean(dict(one, **stamp))
            done.append(rec)
            if study.store is not None and store is not None:
                save_row(study.store, store, study.key(name), rec, study.meta())
                study.render(store, args)
            else:
                append_jsonl(args.out, rec)
    if store is None:
        study.render(read_jsonl(args.out), args)
    return done


def command_line(study: str, argv: list[str]) -> str:
    """``python -m benchmarks.<study> <argv>``, quoted for a shell: the page's "reproduce" line."""
    import shlex

    return " ".join(["python", "-m", f"benchmarks.{study}"] + [shlex.quote(a) for a in argv])


def need_sklearn(study: str, anchor: str) -> bool:
    """Whether scikit-learn (the LIBSVM / LIBLINEAR anchors) is installed; says how to get it if not."""
    try:
        import sklearn.svm  # noqa: F401
    except ImportError:
        log(f"benchmarks.{study}: scikit-learn is needed for the {anchor} anchor: pip install '.[bench]'")
        return False
    return True


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
