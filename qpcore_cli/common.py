"""What every ``qpcore`` sub-command shares: errors, argument types, progress, the solve and the report.

Usage errors and bad input files exit with status 2 and one line ``qpcore: error: ...`` on
stderr, never a traceback (:class:`CLIError`).  Progress goes to stderr (a live display with
``rich`` when it is installed and stderr is a terminal, else plain lines; ``--quiet`` silences
it), results to stdout. ``qpcore solve qp|nnls|svm`` and ``qpcore demo`` solve one QP the same
way (:func:`solve_accepted`: a strategy that cannot take it is refused before any work),
report its end the same way (:func:`result_fields`) and finish the same way (:func:`finish`:
the summary lines of :func:`print_lines` unless ``--json -``, then the JSON report); the passes
over training rows after a solve share :func:`evaluation_rows`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

import numpy as np

from qpcore.core.problem import QP
from qpcore.core.solve import PrintReporter, Progress, Reporter, Strategy, solve
from qpcore.core.state import Result, Status
from qpcore_strategies.registry import accepts

__all__ = ["AUTO_ROWS", "PROG", "SAMPLE_ROWS", "CLIError", "Deadline", "Parser", "RichReporter", "check_writable",
           "evaluate_rows", "evaluation_rows", "finish", "finite_float", "integer", "is_terminal", "jsonable",
           "make_reporter", "nonnegative_float", "nonnegative_int", "positive_float", "positive_int", "print_lines",
           "result_fields", "solve_accepted", "write_json"]

#: The program name in usage lines and error messages.
PROG = "qpcore"


class CLIError(Exception):
    """A usage or input error: reported as one line on stderr, exit status 2."""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors become :class:`CLIError` (one line, no usage dump)."""

    def error(self, message: str) -> NoReturn:
        """Raise instead of printing the usage and exiting."""
        raise CLIError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------------------------
# Argument types (each bad value is one clear line)
# --------------------------------------------------------------------------------------------


def finite_float(text: str) -> float:
    """Argument type: a finite number.

    Parameters
    ----------
    text : str
        The option value.

    Returns
    -------
    float

    Raises
    ------
    argparse.ArgumentTypeError
        When ``text`` is not a number or not finite.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """Argument type: a finite number > 0 (see :func:`finite_float`)."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def nonnegative_float(text: str) -> float:
    """Argument type: a finite number >= 0 (see :func:`finite_float`)."""
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def integer(text: str) -> int:
    """Argument type: an integer.

    Parameters
    ----------
    text : str
        The option value.

    Returns
    -------
    int

    Raises
    ------
    argparse.ArgumentTypeError
        When ``text`` is not an integer.
    """
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_int(text: str) -> int:
    """Argument type: an integer >= 1 (see :func:`integer`)."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    """Argument type: an integer >= 0 (see :func:`integer`)."""
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


# --------------------------------------------------------------------------------------------
# A time limit over the whole command
# --------------------------------------------------------------------------------------------


class Deadline:
    """The end of a command's time budget (``--time-limit``), fixed when the command starts.

    Every solve of the command gets the time left (:meth:`solve_limit`), and the passes after
    the solves (training accuracy, held-out accuracy, calibration) ask :meth:`left` before
    they start and between chunks, so the command, not only its solves, ends near the limit.

    Parameters
    ----------
    seconds : float or None
        The budget (None: no limit).
    start : float, optional
        The ``time.perf_counter()`` instant the budget starts from (default: now).
    """

    def __init__(self, seconds: float | None, start: float | None = None) -> None:
        self.seconds = seconds
        self.start = time.perf_counter() if start is None else start
        #: The ``time.perf_counter()`` instant the budget ends (None: no limit).
        self.at: float | None = None if seconds is None else self.start + seconds

    def left(self) -> float:
        """Seconds left (``inf`` without a limit, 0 once it has passed)."""
        if self.at is None:
            return math.inf
        return max(self.at - time.perf_counter(), 0.0)

    def solve_limit(self) -> float | None:
        """The ``time_limit`` of a solve started now: the time left (None without a limit).

        A solve started after the end gets a token limit (a limit must be > 0) and so returns
        its start point at once with status ``time_limit``.
        """
        if self.at is None:
            return None
        return max(self.left(), 1e-6)


def evaluate_rows(fn: Callable[[Any], Any], X: Any, deadline: Deadline, *, first: int = 32,
                  chunk_seconds: float = 0.5) -> tuple[list[Any], int]:
    """Apply ``fn`` to the rows of ``X`` in chunks while the deadline allows.

    Without a limit, one call over every row. Under one, the first chunk has ``first`` rows (few:
    its cost is unknown); each later one is sized from the time per row measured so far to take
    about ``chunk_seconds`` and to end before the deadline, so a pass that would overrun the
    deadline stops short of it instead (a cut pass says how many rows it covered).

    Parameters
    ----------
    fn : callable
        Rows → an array with one entry (or row) per input row.
    X : ndarray or csr_matrix
        The rows.
    deadline : Deadline
    first : int
        Rows in the first chunk.
    chunk_seconds : float
        Target time per later chunk.

    Returns
    -------
    (list, int)
        ``fn``'s outputs, one per chunk in order, and the number of leading rows they cover
        (``X.shape[0]`` when the pass completed).
    """
    n = int(X.shape[0])
    if deadline.at is None:
        return ([fn(X)] if n else []), n
    out: list[Any] = []
    done = 0
    per_row: float | None = None
    while done < n:
        left = deadline.left()
        if left <= 0.0:
            break
        if per_row is None:
            size = first
        else:
            size = int(min(chunk_seconds, left) / max(per_row, 1e-9))
            if size < 1:
                break
        stop = min(n, done + size)
        t = time.perf_counter()
        out.append(fn(X[done:stop]))
        per_row = (time.perf_counter() - t) / (stop - done)
        done = stop
    return out, done


#: ``--train-accuracy auto`` evaluates the training rows up to this many, none above.
AUTO_ROWS = 20_000
#: ``--train-accuracy sample``: rows in the seeded sample.
SAMPLE_ROWS = 5_000


def evaluation_rows(n: int, mode: str, *, off_reason: str = "--train-accuracy off") -> tuple[Any, dict[str, Any]]:
    """The rows a ``--train-accuracy`` pass evaluates, and how it was chosen.

    Parameters
    ----------
    n : int
        Training rows.
    mode : {"auto", "on", "off", "sample"}
        auto: every row up to :data:`AUTO_ROWS`, none above; sample: a seeded sample of
        :data:`SAMPLE_ROWS` rows (every row when there are fewer).
    off_reason : str
        The report's reason when ``mode`` is off.

    Returns
    -------
    (rows, info)
        Ascending row indices (None: the pass is off) and the report's ``train_evaluation``
        start (``mode``, ``rows`` 0, ``of`` n, ``sample``, ``cut``, and ``reason`` when off).
    """
    used = mode if mode != "auto" else ("on" if n <= AUTO_ROWS else "off")
    info: dict[str, Any] = {"mode": mode, "rows": 0, "of": n, "sample": False, "cut": False}
    if used == "off":
        info["reason"] = f"--train-accuracy auto: more than {AUTO_ROWS:,} rows" if mode == "auto" else off_reason
        return None, info
    rows = np.arange(n)
    if used == "sample" and n > SAMPLE_ROWS:
        rows = np.sort(np.random.default_rng(0).choice(n, SAMPLE_ROWS, replace=False))
        info.update(sample=True, seed=0)
    return rows, info


# --------------------------------------------------------------------------------------------
# One solve and its report
# --------------------------------------------------------------------------------------------


def solve_accepted(qp: QP, strategy: Strategy, *, strategy_name: str, what: str, tol: float,
                   max_iter: int | None, time_limit: float | None, reporter: Reporter | None,
                   hint: str = "") -> Result:
    """Solve ``qp`` once the strategy has said it takes it.

    Parameters
    ----------
    qp : QP
    strategy : Strategy
    strategy_name : str
        ``--strategy``'s value, for the refusal.
    what : str
        What the refusal calls the problem (``this problem``, ``the C-SVC dual``).
    tol, max_iter, time_limit, reporter :
        Handed to ``qpcore.solve``.
    hint : str
        Appended to a refusal.

    Returns
    -------
    Result

    Raises
    ------
    CLIError
        When the strategy cannot take the problem (its own reason), before any work.
    """
    reason = accepts(strategy, qp)
    if reason is not None:
        raise CLIError(f"--strategy {strategy_name} cannot take {what}: {reason}{hint}")
    return solve(qp, strategy, tol=tol, max_iter=max_iter, time_limit=time_limit, reporter=reporter)


def result_fields(result: Result, measure: str = "kkt_measure") -> dict[str, Any]:
    """How a solve ended, as every report gives it: status and message, convergence, objective,
    the certificate's measure (and ``gap`` / ``stationarity`` after it when ``measure`` says),
    primal infeasibility, iterations and seconds.

    Parameters
    ----------
    result : Result
    measure : {"kkt_measure", "gap", "stationarity"}
        The certificate's extra figure reported beside ``kkt_measure``: the maximal-violating-pair
        ``gap`` (SVM duals) or the ``stationarity`` (general QPs).

    Returns
    -------
    dict
    """
    fields: dict[str, Any] = {
        "status": result.status.code,
        "status_message": result.status.message,
        "converged": result.status is Status.CONVERGED,
        "objective": result.objective,
    }
    if measure == "gap":
        fields["gap"] = result.kkt.gap
    fields["kkt_measure"] = result.kkt.measure
    if measure == "stationarity":
        fields["stationarity"] = result.kkt.stationarity
    fields.update(primal_infeasibility=result.kkt.primal, iterations=result.iterations,
                  seconds=float(result.stats["seconds"]))
    return fields


def print_lines(lines: Sequence[tuple[str, str]], out: TextIO | None = None) -> None:
    """A summary: aligned ``name  value`` lines (plain ASCII names), to stdout by default."""
    stream = out if out is not None else sys.stdout
    for name, value in lines:
        print(f"{name:<16} {value}", file=stream)
    stream.flush()


def finish(report: dict[str, Any], args: argparse.Namespace, summary: Callable[[dict[str, Any]], None]) -> int:
    """End a sub-command: its summary on stdout unless ``--json -``, then the JSON report when asked.

    Parameters
    ----------
    report : dict
    args : argparse.Namespace
        ``json``: None, ``-`` (stdout, instead of the summary) or a file.
    summary : callable
        Prints the summary of ``report``.

    Returns
    -------
    int
        0.
    """
    if args.json != "-":
        summary(report)
    if args.json is not None:
        write_json(report, args.json)
    return 0


# --------------------------------------------------------------------------------------------
# Progress display
# --------------------------------------------------------------------------------------------


class RichReporter:
    """A live progress display on a terminal, with ``rich``.

    Shows a bar from the first KKT gap seen down to ``tol`` (log scale), the iteration, the
    objective and the gap; on ``finish`` the final status line stays on screen.

    Parameters
    ----------
    tol : float
        The stopping tolerance (the bar's end).
    stream : file, optional
        Where to draw (stderr by default).
    label : str
        Shown before the bar (the strategy).
    interval : float
        Seconds between updates.
    """

    def __init__(self, tol: float, stream: TextIO | None = None, label: str = "solving",
                 interval: float = 0.2) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        self.interval = interval
        self.tol = tol
        self._console: Any = Console(file=stream if stream is not None else sys.stderr)
        self._progress: Any = RichProgress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
            TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=self._console)
        self._task: Any = self._progress.add_task(label, total=1.0, info="starting", start=True)
        self._gap0: float | None = None
        self._started = False

    def _fraction(self, gap: float) -> float:
        g0 = self._gap0
        if g0 is None or not math.isfinite(gap) or gap <= self.tol or g0 <= self.tol:
            return 1.0 if gap <= self.tol else 0.0
        if gap >= g0:
            return 0.0
        return min(1.0, max(0.0, math.log(g0 / gap) / math.log(g0 / self.tol)))

    def update(self, progress: Progress) -> None:
        """Redraw with a new snapshot."""
        if not self._started:
            self._progress.start()
            self._started = True
        gap = progress.gap
        if self._gap0 is None and math.isfinite(gap) and gap > 0:
            self._gap0 = gap
        info = f"iter {progress.iteration:>8d}  obj {progress.objective: .8e}  gap {gap:.2e}"
        if progress.stage:
            info += f"  [{progress.stage}]"
        self._progress.update(self._task, completed=self._fraction(gap), info=info)

    def finish(self, result: Result) -> None:
        """Close the display and print the final status line."""
        info = (f"iter {result.iterations:>8d}  obj {result.objective: .8e}  "
                f"gap {result.kkt.measure:.2e}")
        done = 1.0 if result.status is Status.CONVERGED else self._fraction(result.kkt.measure)
        self._progress.update(self._task, completed=done, info=info)
        if self._started:
            self._progress.stop()
        self._console.print(f"{result.status.code}: {result.status.message}")


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for anything that cannot say)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def make_reporter(quiet: bool, tol: float, label: str = "solving", stream: TextIO | None = None
                  ) -> Reporter | None:
    """The progress reporter for a run.

    Parameters
    ----------
    quiet : bool
        No progress at all.
    tol : float
        The stopping tolerance (for the live display's bar).
    label : str
        Name shown in the live display.
    stream : file, optional
        Where progress goes (stderr by default).

    Returns
    -------
    Reporter or None
        ``None`` when quiet; a :class:`RichReporter` when ``rich`` is importable and the stream
        is a terminal; else a :class:`qpcore.PrintReporter` (a plain line every 0.5 s).
    """
    if quiet:
        return None
    out = stream if stream is not None else sys.stderr
    if is_terminal(out):
        try:
            return RichReporter(tol, out, label)
        except ImportError:
            pass
    return PrintReporter(interval=0.5, stream=out)


# --------------------------------------------------------------------------------------------
# The JSON report
# --------------------------------------------------------------------------------------------


def check_writable(path: str | None, what: str = "--json") -> None:
    """Fail before the solve, not after it, when an output file cannot be written.

    Parameters
    ----------
    path : str or None
        The file (``None``: no output; ``-``: stdout).
    what : str
        How the error names it (``--json``, ``model file``).

    Raises
    ------
    CLIError
        When ``path`` is a folder, its folder does not exist, or it is not writable.
    """
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise CLIError(f"{what} {path!r} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CLIError(f"{what} {path!r}: folder {parent!r} does not exist")
    if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CLIError(f"{what} {path!r}: not writable")


def jsonable(value: Any) -> Any:
    """Plain JSON: numpy scalars to Python, NaN/inf to null (strict JSON has neither).

    Parameters
    ----------
    value : object
        A report or any value in it (dicts and lists are converted recursively).

    Returns
    -------
    object
        The same data in types :func:`json.dumps` writes as strict JSON.
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    if value is None or isinstance(value, str):
        return value
    return str(value)


def write_json(report: dict[str, Any], path: str) -> None:
    """Write ``report`` as one JSON object to ``path`` (``-``: stdout).

    Parameters
    ----------
    report : dict
        The report.
    path : str
        A file name, or ``-`` for stdout.

    Raises
    ------
    CLIError
        When the file cannot be written.
    """
    text = json.dumps(jsonable(report), indent=2, allow_nan=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise CLIError(f"cannot write --json {path!r}: {exc.strerror or exc}") from None
