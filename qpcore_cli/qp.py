"""``qpcore solve qp`` and ``qpcore solve nnls``: generic QPs and NNLS from ``.npz`` files."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from qpcore_formulations.least_squares import nnls
from qpcore import __version__
from qpcore.core.problem import QP, ProblemError
from qpcore.core.solve import Strategy
from qpcore.core.state import Result
from qpcore_cli.common import (
    CLIError,
    Deadline,
    check_writable,
    finish,
    make_reporter,
    print_lines,
    result_fields,
    solve_accepted,
)
from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore_cli.registry import STRATEGIES, ProblemKind

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["NNLS_PROBLEM", "QP_PROBLEM", "read_npz", "run_nnls", "run_qp", "solve_report"]


def read_npz(path: str, required: Sequence[str], optional: Sequence[str] = ()) -> dict[str, NDArray[Any]]:
    """Read named arrays from a ``.npz`` file (no pickles), with one clear error per problem.

    Parameters
    ----------
    path : str
        The file.
    required, optional : sequence of str
        Array names that must / may be present.

    Returns
    -------
    dict
        Name → array for every required name and every optional one present.

    Raises
    ------
    CLIError
        When the file is missing, not a readable ``.npz`` of plain arrays, or lacks a required array.
    """
    try:
        with np.load(path, allow_pickle=False) as f:
            names = set(f.files)
            missing = [k for k in required if k not in names]
            if missing:
                raise CLIError(f"--npz {path!r}: missing array(s) {', '.join(missing)} "
                               f"(found: {', '.join(sorted(names)) or 'none'})")
            return {k: np.asarray(f[k]) for k in (*required, *optional) if k in names}
    except CLIError:
        raise
    except FileNotFoundError:
        raise CLIError(f"--npz {path!r}: no such file") from None
    except (OSError, ValueError) as exc:
        raise CLIError(f"--npz {path!r}: not a readable .npz of plain arrays ({exc})") from None


def _add_npz_arguments(names: str) -> Callable[[argparse.ArgumentParser], None]:
    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("--npz", required=True, metavar="FILE", help=f"numpy .npz file with arrays {names}")
    return add


def _add_nnls_arguments(p: argparse.ArgumentParser) -> None:
    _add_npz_arguments("A (m×n), d (m)")(p)
    p.add_argument("--backend", choices=("auto", "dense", "gram"), default="auto",
                   help="Q = AᵀA formed (dense) or applied as Aᵀ(Av) (gram); auto picks by shape")


def solve_report(qp: Any, strategy: Strategy, args: argparse.Namespace, label: str,
                 deadline: Deadline | None = None) -> tuple[Result, dict[str, Any]]:
    """Solve ``qp`` with the CLI's limits and reporter; the report fields every kind shares.

    Parameters
    ----------
    qp : QP
        The problem.
    strategy : Strategy
        A configured strategy.
    args : argparse.Namespace
        ``strategy``, ``tol``, ``max_iter``, ``time_limit`` and ``quiet``.
    label : str
        The name in the progress display.
    deadline : Deadline, optional
        The command's ``--time-limit``, set at its start: the solve gets the time left (default:
        ``args.time_limit`` from now).

    Returns
    -------
    (Result, dict)
        The result and its report (status, objective, KKT measures, counters, settings).
    """
    limit = args.time_limit if deadline is None else deadline.solve_limit()
    result = solve_accepted(qp, strategy, strategy_name=args.strategy, what="this problem", tol=args.tol,
                            max_iter=args.max_iter, time_limit=limit, reporter=make_reporter(args.quiet, args.tol, label))
    spec = STRATEGIES.get(args.strategy)
    report: dict[str, Any] = {
        "strategy": args.strategy,
        **(spec.describe(args) if spec is not None and spec.describe is not None else {}),
        "n": int(qp.n),
        "m_equality": int(qp.m),
        "tol": args.tol,
        "max_iter": args.max_iter,
        "time_limit": args.time_limit,
        **result_fields(result, "stationarity"),
        "stats": result.stats,
        "qpcore_version": __version__,
    }
    return result, report


def _print_generic(report: dict[str, Any], extra: Sequence[tuple[str, str]] = ()) -> None:
    r = report
    lines = [
        ("status", f"{r['status']} ({r['status_message']})"),
        ("objective", f"{r['objective']:.12e}"),
        ("KKT measure", f"{r['kkt_measure']:.3e}   (tol {r['tol']:g}; primal infeasibility {r['primal_infeasibility']:.1e})"),
        ("iterations", f"{r['iterations']}"),
        ("time", f"{r['seconds']:.3f} s solve, {r['total_seconds']:.3f} s with reading and building"),
        *extra,
    ]
    print_lines(lines)


def _finish(report: dict[str, Any], args: argparse.Namespace, extra: Sequence[tuple[str, str]] = ()) -> int:
    return finish(report, args, lambda r: _print_generic(r, extra))


def _solution_field(x: NDArray[np.float64]) -> list[float] | None:
    # the point goes into the JSON report when it is small enough to read
    return [float(v) for v in x] if x.size <= 10_000 else None


def run_qp(args: argparse.Namespace) -> int:
    """``qpcore solve qp``: min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, Ax = b from an .npz file.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``qpcore solve qp`` arguments.

    Returns
    -------
    int
        Exit status 0 (a result was produced; its status is in the report).

    Raises
    ------
    CLIError
        On a bad file or an invalid problem.
    """
    t0 = time.perf_counter()
    deadline = Deadline(args.time_limit, start=t0)
    check_writable(args.json)
    arrays = read_npz(args.npz, ("c",), ("Q", "H", "d", "lb", "ub", "A", "b", "C", "l", "u", "G", "h"))
    if ("A" in arrays) != ("b" in arrays):
        raise CLIError(f"--npz {args.npz!r}: A and b go together; the file has only "
                       f"{'A' if 'A' in arrays else 'b'}")
    if ("G" in arrays) != ("h" in arrays):
        raise CLIError(f"--npz {args.npz!r}: G and h go together (G x <= h); the file has only "
                       f"{'G' if 'G' in arrays else 'h'}")
    if "C" in arrays and "G" in arrays:
        raise CLIError(f"--npz {args.npz!r}: give the inequality rows as C with l and/or u (l <= Cx <= u) "
                       "or as G and h (Gx <= h), not both")
    if ("l" in arrays or "u" in arrays) and "C" not in arrays:
        raise CLIError(f"--npz {args.npz!r}: l and u bound the rows of C, which the file lacks")
    if "C" in arrays and "l" not in arrays and "u" not in arrays:
        raise CLIError(f"--npz {args.npz!r}: C needs l and/or u (l <= Cx <= u)")
    if ("Q" in arrays) == ("H" in arrays):
        raise CLIError(f"--npz {args.npz!r}: give Q (n×n) or H (n×k, with optional d: Q = diag(d) + HH'), "
                       f"{'not both' if 'Q' in arrays else 'found neither'}")
    if "d" in arrays and "H" not in arrays:
        raise CLIError(f"--npz {args.npz!r}: d goes with H (Q = diag(d) + HH')")
    try:
        n = int(np.asarray(arrays["c"]).size)
        Q: Any = arrays.get("Q")
        if Q is None:
            # the low-rank form ASVM (d > 0) and the cutting planes (d = 0) take
            H = np.ascontiguousarray(arrays["H"], dtype=np.float64)
            if H.ndim != 2:
                raise CLIError(f"--npz {args.npz!r}: H must be a 2-d array (n×k), got shape {H.shape}")
            Q = DiagPlusLowRankQ(np.asarray(arrays.get("d", 0.0), dtype=np.float64), H)
        C, lo, hi = arrays.get("C"), arrays.get("l"), arrays.get("u")
        if "G" in arrays:
            C, hi = arrays["G"], arrays["h"]
            lo = np.full(np.atleast_2d(C).shape[0], -np.inf)
        qp = QP(Q, arrays["c"], arrays.get("lb", np.full(n, -np.inf)), arrays.get("ub", np.full(n, np.inf)),
                arrays.get("A"), arrays.get("b"), C=C, l=lo, u=hi)
        strategy = STRATEGIES[args.strategy].factory(args)
        result, report = solve_report(qp, strategy, args, args.strategy, deadline)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    report.update(problem="qp", data=args.npz, total_seconds=time.perf_counter() - t0, x=_solution_field(result.x),
                  row_multipliers=_solution_field(result.kkt.y) if qp.k else None)
    return _finish(report, args)


def run_nnls(args: argparse.Namespace) -> int:
    """``qpcore solve nnls``: min ‖Ax − d‖², x ≥ 0 from an .npz file.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``qpcore solve nnls`` arguments.

    Returns
    -------
    int
        Exit status 0 (a result was produced; its status is in the report).

    Raises
    ------
    CLIError
        On a bad file or an invalid problem.
    """
    t0 = time.perf_counter()
    deadline = Deadline(args.time_limit, start=t0)
    check_writable(args.json)
    arrays = read_npz(args.npz, ("A", "d"))
    try:
        problem = nnls(arrays["A"], arrays["d"], backend=args.backend)
        strategy = STRATEGIES[args.strategy].factory(args)
        result, report = solve_report(problem.qp, strategy, args, args.strategy, deadline)
        x, rnorm = problem.decode(result)
    except ProblemError as exc:
        raise CLIError(str(exc)) from None
    report.update(problem="nnls", data=args.npz, backend=type(problem.qp.Q).__name__,
                  residual_norm=rnorm, n_positive=int(np.count_nonzero(x > 0)),
                  total_seconds=time.perf_counter() - t0, x=_solution_field(x))
    return _finish(report, args, [("residual norm", f"{rnorm:.12e}   (‖Ax − d‖₂)"),
                                  ("positive", f"{report['n_positive']} of {x.size} coefficients")])


#: ``qpcore solve qp``: a convex QP from an .npz file, GPCG by default.
QP_PROBLEM = ProblemKind(
    help="convex QP min 1/2 x'Qx + c'x, lb <= x <= ub, Ax = b, l <= Cx <= u from an .npz file (arrays Q, c, "
         "lb, ub; optional A, b; optional inequality rows C with l and/or u, or G and h for Gx <= h; missing "
         "bounds are infinite; H and optional d instead of Q: Q = diag(d) + HH')",
    add_arguments=_add_npz_arguments("Q (n×n) or H (n×k) and optional d (n), c (n), lb, ub (n, may hold ±inf); "
                                     "optional A (m×n), b (m); optional C (k×n) with l, u (k, may hold ±inf) "
                                     "or G (k×n), h (k)"),
    run=run_qp, default_strategy="gpcg", default_tol=1e-8)

#: ``qpcore solve nnls``: nonnegative least squares from an .npz file, GPCG by default.
NNLS_PROBLEM = ProblemKind(
    help="nonnegative least squares min ||Ax - d||, x >= 0 from an .npz file (arrays A, d)",
    add_arguments=_add_nnls_arguments, run=run_nnls, default_strategy="gpcg", default_tol=1e-8)
