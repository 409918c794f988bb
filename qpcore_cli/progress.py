"""Progress of ``qpcore train``'s binary problems on stderr: the gap against the tolerance, and time.

:class:`GapReporter` shows the problem being solved (:func:`problem_names`: ``pair 3/45: 2 vs 7``),
its iteration, the gap the strategy is judged on against ``--tol`` (the maximal-violating-pair
gap, the projected gradient for ASVM, the relative duality gap for the cutting planes), the
best gap so far, and elapsed time; :func:`gap_reporter` makes one as ``--quiet`` / ``--verbose``
and the terminal say.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray

from qpcore.core.optimality import lagrangian_bound
from qpcore.core.solve import Progress
from qpcore.core.state import Result, Status
from qpcore_cli.common import is_terminal
from qpcore_cli.model import labels_to_strings

__all__ = ["GapReporter", "gap_reporter", "problem_names"]


def problem_names(classes: NDArray[Any], pairs: NDArray[np.intp]) -> list[str]:
    """Names of the binary problems for progress lines: ``pair 3/45: 2 vs 7``, ``class 1/3: 0 vs rest``.

    Parameters
    ----------
    classes : ndarray
        The labels.
    pairs : ndarray of shape (n_problems, 2)

    Returns
    -------
    list of str
    """
    text, _ = labels_to_strings(classes)
    n = len(pairs)
    out = []
    for p, (i, j) in enumerate(pairs):
        if j < 0:
            out.append(f"class {p + 1}/{n}: {text[i]} vs rest")
        else:
            out.append(f"pair {p + 1}/{n}: {text[i]} vs {text[j]}")
    return out


def _fmt_gap(value: float) -> str:
    return f"{value:.2e}" if math.isfinite(value) else "-"


class GapReporter:
    """Progress of a sequence of binary problems: the gap against the tolerance, and elapsed time.

    No bar: the gap of a dual method is not monotone, and a bar drawn from it stays empty while
    the gap rises. Each update shows the problem's name, its iteration, the current gap, the best
    gap so far, the tolerance it must reach, the problem's and the run's elapsed time. On a
    terminal (``live``) one line is redrawn in place and a problem that ends without converging
    leaves its line on screen; otherwise every update and every end is its own line.

    Parameters
    ----------
    names : list of str
        One name per binary problem, in the order they are solved.
    tol : float
        The stopping tolerance.
    relative : bool
        The strategy is judged on the relative duality gap (cutting planes), not the KKT measure.
    live : bool
        Redraw one line (a terminal) instead of printing lines.
    stream : file, optional
        stderr by default.
    interval : float
        Seconds between updates.
    """

    def __init__(self, names: list[str], tol: float, *, relative: bool = False, live: bool = True,
                 stream: TextIO | None = None, interval: float = 0.5) -> None:
        self.names = names
        self.tol = tol
        self.relative = relative
        self.live = live
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.index = 0
        self._best = math.inf
        self._t0 = time.perf_counter()
        self._pending = False

    def _name(self) -> str:
        return self.names[self.index] if self.index < len(self.names) else f"problem {self.index + 1}"

    def _gap(self, progress: Progress) -> float:
        if not self.relative:
            return float(progress.gap)
        w = progress.state.primal
        if w is None:
            return math.inf
        lower = lagrangian_bound(progress.qp, w)
        gap = progress.objective - lower
        return gap / abs(lower) if lower != 0 else math.inf

    def _emit(self, line: str, final: bool) -> None:
        if self.live:
            self.stream.write("\r" + line + "\x1b[K" + ("\n" if final else ""))
            self._pending = not final
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def update(self, progress: Progress) -> None:
        """Show a snapshot of the current problem."""
        gap = self._gap(progress)
        if math.isfinite(gap):
            self._best = min(self._best, gap)
        total = time.perf_counter() - self._t0
        self._emit(f"{self._name()}  iter {progress.iteration}  gap {_fmt_gap(gap)} "
                   f"(best {_fmt_gap(self._best)}, tol {self.tol:.0e})  {progress.elapsed:.1f} s "
                   f"(total {total:.1f} s)", final=False)

    def finish(self, result: Result) -> None:
        """Show how the current problem ended and move on to the next."""
        if self.relative and math.isfinite(result.kkt.duality_gap) and result.kkt.lower_bound != 0:
            gap = result.kkt.duality_gap / abs(result.kkt.lower_bound)
        else:
            gap = result.kkt.measure
        line = (f"{self._name()}: {result.status.code}, {result.iterations} iterations, gap {_fmt_gap(gap)} "
                f"(tol {self.tol:.0e}), {float(result.stats['seconds']):.2f} s")
        # on a terminal a converged problem's line is overwritten by the next one
        self._emit(line, final=not self.live or result.status is not Status.CONVERGED)
        self.index += 1
        self._best = math.inf

    def close(self) -> None:
        """Clear a line left pending on the terminal."""
        if self.live and self._pending:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._pending = False


def gap_reporter(args: argparse.Namespace, names: list[str], tol: float, relative: bool) -> GapReporter | None:
    """The progress display of a run: None with ``--quiet``, or when stderr is not a terminal and
    ``--verbose`` was not given; live (one line redrawn) on a terminal.

    Parameters
    ----------
    args : argparse.Namespace
        ``quiet`` and ``verbose``.
    names : list of str
        The problems' names (:func:`problem_names`).
    tol : float
    relative : bool
        The strategy is judged on the relative duality gap.

    Returns
    -------
    GapReporter or None
    """
    if args.quiet:
        return None
    live = is_terminal(sys.stderr)
    if not live and not args.verbose:
        return None
    return GapReporter(names, tol, relative=relative, live=live)
