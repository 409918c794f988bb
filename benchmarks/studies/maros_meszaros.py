"""The Maros–Meszaros dense subset: ``qpcore.solve_qp`` against PIQP, ProxQP, OSQP and Clarabel (issue 33, "Bars").

    python -m benchmarks.maros_meszaros                                  # all 31 problems, 1 and 2 threads
    python -m benchmarks.maros_meszaros --problems HS21,QPCBOEI2 --threads 1
    python -m benchmarks.maros_meszaros --solvers ours,piqp --time-limit 20
    python -m benchmarks.maros_meszaros --quick                          # HS21, HS35, QPTEST, one run each

Problems: the 31 files of ``<data>/maros_meszaros/*.mat`` (``qpcore_formulations.data.files.data_dir()``), read as
qpbenchmark's Maros–Meszaros test set reads them (``maros_meszaros.py`` of
github.com/qpsolvers/maros_meszaros_qpbenchmark): ``l ≤ A x ≤ u`` whose last n rows are the
identity (the bounds lb ≤ x ≤ ub; checked here), ±1e20 standing for ±inf; a row with u − l < 1e-10
is an equality A x = b, any other row gives the rows G x ≤ h of its finite sides (x ≤ u as is,
x ≥ l as −x ≤ −l), qpsolvers' form. The matrices are dense, as in qpbenchmark's dense subset.

Solvers: ours is ``qpcore.solve_qp(P, q, G, h, A, b, lb, ub, time_limit=...)`` with its default
settings (``--ours``; ``clarabel-standin`` runs Clarabel through the same adapter, to test the
harness); the anchors run through qpsolvers (the ``bench`` extra) at qpbenchmark's settings of
each accuracy level (``--levels``; :func:`anchor_settings`), each level a separate run as in
qpbenchmark. OSQP and Clarabel, which take sparse matrices only, get CSC copies made outside the
timer (qpbenchmark's ``time_solve_problem`` does the same).

Accuracy, as qpbenchmark defines it (``qpbenchmark/solver_settings.py``, ``results.py``,
``test_set.py``, ``shgeom.py`` of github.com/qpsolvers/qpbenchmark), computed for every solver
from its returned x, y, z, z_box on the problem above (:func:`judge`):

- primal residual  r_p = max(‖Ax − b‖∞, [Gx − h]⁺, [lb − x]⁺, [x − ub]⁺);
- dual residual    r_d = ‖Px + q + Aᵀy + Gᵀz + z_box‖∞;
- duality gap      r_g = |xᵀPx + qᵀx + bᵀy + hᵀz + lbᵀz_box⁻ + ubᵀz_box⁺| (finite bounds only);
- a run *succeeds* at a level when the solver reported success and r_p, r_d, r_g are all
  below that level's tolerance (default 1, low 1e-3, mid 1e-6, high 1e-9);
- the shifted geometric mean of the run times, shift 10 s, counts a run the solver did not
  report solved (or that ran past ``--time-limit``) at the time limit.

Ours runs once per pass and is judged at every level; a status (or an error message) that calls
one of these feasible, bounded, convex problems infeasible, unbounded or nonconvex is a **false
claim**: counted, flagged, and never a success.

Protocol (``benchmarks.harness``): per problem and BLAS thread count (``--threads 1,2``) the
solvers run interleaved (PIQP at the last level, ours, then the others; PIQP again right before
each run of another solver), ``--repeat`` passes (default 3) and the median time reported; a
solver's claim holds only if every one of its runs succeeds, and the residuals shown are the
worst run's. The load is read before every run and other processes' CPU measured during it; a
run during which they used more than 0.1 core is **loaded** and flagged. Results append to
``benchmarks/results/maros_meszaros.jsonl`` (untracked); the page ``maros_meszaros.md`` beside it
(``--docs``: in ``docs/benchmarks/``) is rendered from the latest record of every (problem, threads)
pair (``--quick``: both under ``benchmarks/results/quick/``).
"""

from __future__ import annotations

import sys

from benchmarks.harness import pin_blas_threads, thread_list_from_argv

# OpenBLAS sizes its pool when numpy is first imported: make it as large as the largest thread
# count asked for (threadpoolctl lowers it per run). Only when run as a script.
if __name__ == "__main__":
    pin_blas_threads(max(thread_list_from_argv(sys.argv[1:]) or [2]))

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Iterable  # noqa: E402
from functools import cached_property  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from benchmarks.harness import (  # noqa: E402
    OTHERS_MARGIN,
    RESULTS,
    Runs,
    add_docs_argument,
    Study,
    blas_threads_under,
    clean,
    command_line,
    fmt_seconds,
    interleave,
    log,
    machine_info,
    markdown_table,
    median,
    now_iso,
    page_folder,
    resolve_run_arguments,
    run_study,
    study_parser,
    thread_limit,
)

__all__ = ["ANCHORS", "FALSE_CLAIMS", "LEVELS", "MMProblem", "QUICK", "SHIFT", "SOLVERS", "anchor_runner",
           "anchor_settings", "bars", "false_claim", "judge", "judge_runs", "library_residuals", "load_problem",
           "main", "ours_runner", "parse_args", "problem_names", "render", "residuals", "resolve_ours",
           "shifted_geometric_mean", "success", "summarize"]

FloatArray = NDArray[np.float64]

FORMAT = "maros_meszaros"
QUICK = ("HS21", "HS35", "QPTEST")
SOLVERS = ("ours", "piqp", "proxqp", "osqp", "clarabel")
ANCHORS = SOLVERS[1:]
#: solvers qpsolvers feeds sparse matrices only: their CSC copies are made outside the timer
SPARSE_ONLY = frozenset({"osqp", "clarabel"})
#: qpbenchmark's validation tolerance of each settings (primal = dual = gap; ``test_set.py``)
LEVELS: dict[str, float] = {"default": 1.0, "low": 1e-3, "mid": 1e-6, "high": 1e-9}
SHIFT = 10.0                    # qpbenchmark's shift of the shifted geometric mean (s)
TIME_LIMIT = 1000.0             # qpbenchmark's runtime tolerance for the Maros–Meszaros set (s)
EQ_GAP = 1e-10                  # qpbenchmark: a row with u − l below this is an equality
BIG = 9e19                      # the files write ±inf as ±1e20; qpbenchmark reads |v| > 9e19 as infinite
#: statuses that would be false on these feasible, bounded, convex problems, and the claim each makes
#: (qpcore's ``infeasible`` says the *point* violates the rows, not the problem: a plain failure)
FALSE_CLAIMS = {"primal_infeasible": "infeasible", "dual_infeasible": "unbounded", "unbounded": "unbounded",
                "nonconvex": "nonconvex"}
#: words of an error message that make the same claim (e.g. "no point of the box meets the rows")
_CLAIM_WORDS = {"infeasible": ("infeasib", "no point of", "no feasible"),
                "unbounded": ("unbounded",),
                "nonconvex": ("nonconvex", "non-convex", "not convex", "not psd", "not positive semidefinite")}
#: the issue's bars on ours
BAR = {"mid": 30, "high": 28, "shm_ratio": 10.0}


# ---------------------------------------------------------------------------------------------
# Problems
# ---------------------------------------------------------------------------------------------

def data_folder() -> Path:
    """``<shared data>/maros_meszaros`` (:func:`qpcore_formulations.data.files.data_dir`)."""
    from qpcore_formulations.data.files import data_dir

    return Path(data_dir()) / "maros_meszaros"


def problem_names(folder: Path | None = None) -> list[str]:
    """The problems of the folder (file stems of ``*.mat``), sorted."""
    return sorted(p.stem for p in (folder or data_folder()).glob("*.mat"))


def _vec(v: Any) -> FloatArray:
    return np.asarray(v.toarray() if hasattr(v, "toarray") else v, dtype=np.float64).ravel()


class MMProblem:
    """One Maros–Meszaros problem in qpsolvers' form, with its two-sided rows kept.

    min ½xᵀPx + qᵀx (+ r)  s.t.  G x ≤ h,  A x = b,  lb ≤ x ≤ ub; the same rows as
    l ≤ C x ≤ u (the file's rows without the bounds). Empty G or A are None, as qpsolvers has them.

    Attributes
    ----------
    name : str
    P : ndarray (n, n)
    q : ndarray (n,)
    G, h, A, b : ndarray or None
    lb, ub : ndarray (n,)
        ±inf where unbounded.
    C, l, u : ndarray
        The two-sided rows (k, n), k = the file's rows minus n.
    r : float
        The objective's constant (not part of any residual).
    """

    def __init__(self, name: str, P: FloatArray, q: FloatArray, C: FloatArray, l: FloatArray, u: FloatArray,
                 lb: FloatArray, ub: FloatArray, r: float = 0.0) -> None:
        self.name, self.P, self.q, self.C, self.l, self.u = name, P, q, C, l, u
        self.lb, self.ub, self.r = lb, ub, r
        eq = (u - l) < EQ_GAP
        self.A: FloatArray | None = C[eq] if eq.any() else None
        self.b: FloatArray | None = u[eq].copy() if eq.any() else None
        rows = C[~eq]
        G = np.vstack([rows, -rows])
        h = np.concatenate([u[~eq], -l[~eq]])
        fin = np.isfinite(h)
        self.G: FloatArray | None = G[fin] if fin.any() else None
        self.h: FloatArray | None = h[fin] if fin.any() else None

    @property
    def n(self) -> int:
        """Variables."""
        return int(self.q.size)

    @property
    def m_eq(self) -> int:
        """Equality rows."""
        return 0 if self.A is None else int(self.A.shape[0])

    @property
    def m_ineq(self) -> int:
        """Rows of G."""
        return 0 if self.G is None else int(self.G.shape[0])

    def objective(self, x: FloatArray) -> float:
        """½xᵀPx + qᵀx + r."""
        return float(0.5 * x @ (self.P @ x) + self.q @ x + self.r)

    @cached_property
    def qp_dense(self) -> Any:
        """The ``qpsolvers.Problem`` with dense matrices."""
        import qpsolvers

        return qpsolvers.Problem(self.P, self.q, self.G, self.h, self.A, self.b, self.lb, self.ub)

    @cached_property
    def qp_sparse(self) -> Any:
        """The ``qpsolvers.Problem`` with CSC matrices (for OSQP and Clarabel)."""
        import qpsolvers
        import scipy.sparse as sp

        def csc(M: FloatArray | None) -> Any:
            return None if M is None else sp.csc_matrix(M)

        return qpsolvers.Problem(csc(self.P), self.q, csc(self.G), self.h, csc(self.A), self.b, self.lb, self.ub)


def load_problem(name: str, folder: Path | None = None) -> MMProblem:
    """Read ``<folder>/<name>.mat`` (P, q, r, A, l, u, n, m) into an :class:`MMProblem`.

    Raises
    ------
    ValueError
        When A is not (m, n) or its last n rows are not the identity.
    """
    import scipy.io
    import scipy.sparse as sp

    d = scipy.io.loadmat(str((folder or data_folder()) / f"{name}.mat"))
    n, m = int(_vec(d["n"])[0]), int(_vec(d["m"])[0])
    M = sp.csr_matrix(d["A"], dtype=np.float64)
    if M.shape != (m, n):
        raise ValueError(f"{name}: A is {M.shape}, expected ({m}, {n})")
    if (M[m - n:] - sp.identity(n, format="csr")).count_nonzero():
        raise ValueError(f"{name}: the last n rows of A are not the identity (the bounds)")
    l, u = _vec(d["l"]), _vec(d["u"])
    for v in (l, u):
        v[v > BIG] = np.inf
        v[v < -BIG] = -np.inf
    P = np.asarray(sp.csr_matrix(d["P"], dtype=np.float64).toarray())
    k = m - n
    return MMProblem(name, P, _vec(d["q"]), np.asarray(M[:k].toarray()), l[:k].copy(), u[:k].copy(),
                     l[k:].copy(), u[k:].copy(), r=float(_vec(d["r"])[0]) if "r" in d else 0.0)


# ---------------------------------------------------------------------------------------------
# Accuracy (qpbenchmark's definitions)
# ---------------------------------------------------------------------------------------------

_INF = {"primal": math.inf, "dual": math.inf, "gap": math.inf}


def residuals(prob: MMProblem, x: Any, y: Any = None, z: Any = None, z_box: Any = None) -> dict[str, float]:
    """Primal residual, dual residual and duality gap of (x, y, z, z_box), our own code.

    The definitions are qpbenchmark's (the docstring of ``SolverSettings.set_eps_abs`` in
    qpbenchmark/solver_settings.py, evaluated by qpsolvers' ``Solution``): see the module
    docstring. Multipliers in qpsolvers' convention: y free, z ≥ 0, z_box < 0 at a lower bound
    and > 0 at an upper one. A multiplier missing for rows the problem has makes the dual
    residual and the gap inf; a point with a NaN or inf makes all three inf.

    Returns
    -------
    dict
        ``primal``, ``dual``, ``gap``.
    """
    if x is None:
        return dict(_INF)
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (prob.n,) or not np.all(np.isfinite(x)):
        return dict(_INF)
    parts = [0.0, float(np.max(prob.lb - x)), float(np.max(x - prob.ub))]
    if prob.G is not None and prob.h is not None:
        parts.append(float(np.max(prob.G @ x - prob.h)))
    if prob.A is not None and prob.b is not None:
        parts.append(float(np.max(np.abs(prob.A @ x - prob.b))))
    out = {"primal": max(parts), "dual": math.inf, "gap": math.inf}
    Px = prob.P @ x
    station = Px + prob.q
    gap = float(x @ Px + prob.q @ x)
    for M, rhs, mult in ((prob.A, prob.b, y), (prob.G, prob.h, z)):
        if M is None or rhs is None:
            continue
        if mult is None:
            return out
        mult = np.asarray(mult, dtype=np.float64)
        station = station + M.T @ mult
        gap += float(rhs @ mult)
    if z_box is None:      # every problem here has bounds: qpsolvers then has no dual residual
        return out
    zb = np.asarray(z_box, dtype=np.float64)
    station = station + zb
    lo, hi = np.isfinite(prob.lb), np.isfinite(prob.ub)
    gap += float(prob.lb[lo] @ np.minimum(zb[lo], 0.0) + prob.ub[hi] @ np.maximum(zb[hi], 0.0))
    out["dual"] = float(np.max(np.abs(station))) if station.size else 0.0
    out["gap"] = abs(gap)
    return {k: (v if math.isfinite(v) else math.inf) for k, v in out.items()}


def library_residuals(prob: MMProblem, x: Any, y: Any = None, z: Any = None, z_box: Any = None) -> dict[str, float]:
    """The same three figures from qpsolvers' ``Solution`` (the code qpbenchmark's ``Results`` calls).

    The point is judged whatever the solver's status (``found`` is set for the evaluation); a
    point with a NaN or inf gets inf (qpsolvers' Python ``max`` would drop a NaN).
    """
    import qpsolvers

    if x is None or not np.all(np.isfinite(np.asarray(x, dtype=np.float64))):
        return dict(_INF)
    sol = qpsolvers.Solution(prob.qp_dense, found=True, x=np.asarray(x, dtype=np.float64),
                             y=None if y is None else np.asarray(y, dtype=np.float64),
                             z=None if z is None else np.asarray(z, dtype=np.float64),
                             z_box=None if z_box is None else np.asarray(z_box, dtype=np.float64))
    out = {"primal": float(sol.primal_residual()), "dual": float(sol.dual_residual()), "gap": float(sol.duality_gap())}
    return {k: (v if math.isfinite(v) else math.inf) for k, v in out.items()}


def judge(prob: MMProblem, x: Any, y: Any = None, z: Any = None, z_box: Any = None) -> dict[str, float]:
    """The residuals the benchmark claims: qpsolvers' definitions when it is installed (the
    maintained library, which qpbenchmark itself calls), else :func:`residuals` (the same
    definitions; tests/test_bench_maros_meszaros.py checks they agree)."""
    try:
        import qpsolvers  # noqa: F401
    except ImportError:
        return residuals(prob, x, y, z, z_box)
    return library_residuals(prob, x, y, z, z_box)


def success(found: bool, res: dict[str, float], level: str) -> bool:
    """qpbenchmark's criterion (``Results.build_success_rate_df``): reported solved and every
    residual strictly below the level's tolerance."""
    tol = LEVELS[level]
    return bool(found) and res["primal"] < tol and res["dual"] < tol and res["gap"] < tol


def shifted_geometric_mean(values: Iterable[float], shift: float = SHIFT) -> float:
    """exp(mean(log(v + shift))) − shift (qpbenchmark/shgeom.py; nonnegative values, shift ≥ 1)."""
    v = np.asarray(list(values), dtype=np.float64)
    if v.size == 0:
        return math.nan
    if np.any(v < 0) or shift < 1.0:
        raise ValueError("the shifted geometric mean takes nonnegative values and a shift ≥ 1")
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


def false_claim(status: str | None, message: str | None = None) -> str | None:
    """Which false claim (``infeasible``, ``unbounded``, ``nonconvex``) a status
    (:data:`FALSE_CLAIMS`) or an error message makes about a feasible, bounded, convex
    problem; None for none."""
    if status in FALSE_CLAIMS:
        return FALSE_CLAIMS[status]
    text = (message or "").lower()
    for claim, words in _CLAIM_WORDS.items():
        if any(w in text for w in words):
            return claim
    return None


# ---------------------------------------------------------------------------------------------
# Solvers
# ---------------------------------------------------------------------------------------------

def anchor_settings(solver: str, level: str, time_limit: float | None = None) -> dict[str, Any]:
    """The keyword arguments qpbenchmark passes to ``solver`` through qpsolvers at ``level``.

    ``test_set.py`` (``define_solver_settings``) and ``solver_settings.py`` (``set_eps_abs``,
    ``set_eps_rel``, ``set_time_limit``) of qpbenchmark: below the default level, eps_abs = the
    level's tolerance and eps_rel = 0 on the primal, dual and gap tests, and PIQP and ProxQP check
    the duality gap; a time limit where qpbenchmark sets one (OSQP). Clarabel also gets its
    ``time_limit`` (a harness safety qpbenchmark does not set; it never binds in a run that
    succeeds). PIQP and ProxQP have no time limit.
    """
    kw: dict[str, Any] = {"verbose": False}
    if level != "default":
        eps = LEVELS[level]
        if solver == "clarabel":
            kw.update(tol_feas=eps, tol_gap_abs=eps, tol_gap_rel=0.0)
        elif solver == "osqp":
            kw.update(eps_abs=eps, eps_rel=0.0)
        elif solver in ("piqp", "proxqp"):
            kw.update(eps_abs=eps, eps_rel=0.0, eps_duality_gap_abs=eps, eps_duality_gap_rel=0.0,
                      check_duality_gap=True)
        else:
            raise ValueError(f"unknown anchor {solver!r}")
    if time_limit is not None and solver in ("osqp", "clarabel"):
        kw["time_limit"] = float(time_limit)
    return kw


def _failed(status: str) -> dict[str, Any]:
    return {"found": False, "status": status[:300], "x": None, "y": None, "z": None, "z_box": None}


def anchor_runner(prob: MMProblem, solver: str, level: str, time_limit: float | None) -> Callable[[], dict[str, Any]]:
    """A closure solving ``prob`` once with an anchor through ``qpsolvers.solve_problem``."""
    import qpsolvers

    problem = prob.qp_sparse if solver in SPARSE_ONLY else prob.qp_dense
    kwargs = anchor_settings(solver, level, time_limit)

    def run() -> dict[str, Any]:
        try:
            sol = qpsolvers.solve_problem(problem, solver=solver, **kwargs)
        except Exception as e:  # noqa: BLE001 - qpbenchmark counts a raising solver as not solved
            return _failed(f"error: {type(e).__name__}: {e}")
        return {"found": bool(sol.found), "status": "solved" if sol.found else "not solved",
                "x": sol.x, "y": sol.y, "z": sol.z, "z_box": sol.z_box}
    return run


OursSolve = Callable[..., Any]


def _qpcore_solve_qp(*args: Any, **kwargs: Any) -> Any:
    import qpcore

    solve_qp: OursSolve = getattr(qpcore, "solve_qp")
    return solve_qp(*args, **kwargs)


def clarabel_standin(P: Any, q: FloatArray, G: Any = None, h: Any = None, A: Any = None, b: Any = None,
                     lb: Any = None, ub: Any = None, time_limit: float | None = None, **_: Any) -> Any:
    """A stand-in for ``qpcore.solve_qp`` (to test the harness): Clarabel through qpsolvers at
    tolerances 1e-10, returning x, y, z, z_box, status (``converged`` or ``max_iter``) and no kkt."""
    import qpsolvers
    import scipy.sparse as sp

    def csc(M: Any) -> Any:
        return None if M is None else sp.csc_matrix(M)

    kw: dict[str, Any] = {"verbose": False, "tol_feas": 1e-10, "tol_gap_abs": 1e-10, "tol_gap_rel": 0.0}
    if time_limit is not None:
        kw["time_limit"] = float(time_limit)
    sol = qpsolvers.solve_problem(qpsolvers.Problem(csc(P), q, csc(G), h, csc(A), b, lb, ub), solver="clarabel", **kw)
    return SimpleNamespace(x=sol.x, y=sol.y, z=sol.z, z_box=sol.z_box,
                           status="converged" if sol.found else "max_iter", kkt=None)


#: the implementations ``--ours`` picks from
OURS: dict[str, OursSolve] = {"qpcore": _qpcore_solve_qp, "clarabel-standin": clarabel_standin}


def resolve_ours(name: str) -> OursSolve:
    """The function behind ``--ours`` (``qpcore``: ``qpcore.solve_qp``)."""
    return OURS[name]


def _status_code(status: Any) -> str:
    return str(getattr(status, "code", status))


def _kkt_measure(res: Any) -> float | None:
    k = getattr(res, "kkt", None)
    for attr in ("measure", "gap"):
        v = getattr(k, attr, None)
        if isinstance(v, (int, float, np.floating)):
            return float(v)
    return None


def ours_runner(prob: MMProblem, solve: OursSolve, time_limit: float | None,
                sparse_input: bool = False) -> Callable[[], dict[str, Any]]:
    """A closure calling ``solve(P, q, G, h, A, b, lb, ub, time_limit=...)`` once: default settings.

    A status ``converged`` is a reported solution; any other status, or an exception, is not.
    A status or an error message that calls the problem infeasible, unbounded or nonconvex is
    recorded as ``claim`` (:func:`false_claim`).
    """
    if sparse_input:
        import scipy.sparse as sp

        def csr(M: FloatArray | None) -> Any:
            return None if M is None else sp.csr_matrix(M)

        P, G, A = csr(prob.P), csr(prob.G), csr(prob.A)
    else:
        P, G, A = prob.P, prob.G, prob.A
    kw: dict[str, Any] = {} if time_limit is None else {"time_limit": float(time_limit)}

    def run() -> dict[str, Any]:
        try:
            res = solve(P, prob.q, G, prob.h, A, prob.b, prob.lb, prob.ub, **kw)
        except Exception as e:  # noqa: BLE001 - a failure of ours is a result of the benchmark
            msg = f"{type(e).__name__}: {e}"
            return dict(_failed(f"error: {msg}"), claim=false_claim(None, msg), error_type=type(e).__name__)
        code = _status_code(getattr(res, "status", None))
        return {"found": code == "converged", "status": code, "claim": false_claim(code),
                "x": getattr(res, "x", None), "y": getattr(res, "y", None), "z": getattr(res, "z", None),
                "z_box": getattr(res, "z_box", None), "kkt": _kkt_measure(res)}
    return run


def _measured(fn: Callable[[], dict[str, Any]], threads: int) -> Callable[[], dict[str, Any]]:
    """A run for ``timed``: the solve's wall time under the BLAS thread limit."""
    def run() -> dict[str, Any]:
        with thread_limit(threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            out = fn()
            secs = time.perf_counter() - t
        return dict(out, seconds=secs)
    return run


# ---------------------------------------------------------------------------------------------
# One problem
# ---------------------------------------------------------------------------------------------

def judge_runs(prob: MMProblem, runs: list[dict[str, Any]], levels: Iterable[str],
               time_limit: float | None) -> dict[str, Any]:
    """One solver's runs on one problem: median time, status, worst residuals, success per level.

    A run past ``time_limit`` counts as not solved. The claim (found, success at a level) holds
    only if it holds for every run; the residuals are each the largest over the runs.
    """
    secs = [float(r["seconds"]) for r in runs]
    judged = []
    for r in runs:
        found = bool(r.get("found")) and (time_limit is None or r["seconds"] <= time_limit)
        judged.append((found, judge(prob, r.get("x"), r.get("y"), r.get("z"), r.get("z_box"))))
    worst = {k: max(res[k] for _, res in judged) for k in ("primal", "dual", "gap")}
    med = median(secs)
    mid = min(runs, key=lambda r: abs(r["seconds"] - med) if math.isfinite(r["seconds"]) else math.inf)
    claims = sorted({r["claim"] for r in runs if r.get("claim")})
    out: dict[str, Any] = {
        "runs": len(runs), "times": [round(s, 6) for s in secs], "seconds": med, "min": min(secs), "max": max(secs),
        "found": all(f for f, _ in judged), "status": mid.get("status"),
        "statuses": sorted({str(r.get("status")) for r in runs}), "residuals": worst,
        "success": {lv: all(success(f, res, lv) for f, res in judged) for lv in levels},
        "false_claim": claims[0] if claims else None,
        "loads": [r.get("load") for r in runs], "loaded": any(r.get("load", {}).get("loaded") for r in runs)}
    if any("kkt" in r for r in runs):
        out["kkt"] = mid.get("kkt")
    if mid.get("x") is not None and np.all(np.isfinite(mid["x"])):
        out["objective"] = prob.objective(np.asarray(mid["x"], dtype=np.float64))
    return out


def solver_keys(solvers: Iterable[str], levels: list[str]) -> list[str]:
    """``ours`` and ``<anchor>@<level>``, in run order: PIQP at the last level first (the anchor
    of the interleaving), then ours, then the rest."""
    keys = [s if s == "ours" else f"{s}@{lv}" for s in solvers for lv in ([None] if s == "ours" else levels)]
    anchor = f"piqp@{levels[-1]}"
    return ([anchor] if anchor in keys else []) + [k for k in keys if k != anchor]


def bench_problem(name: str, args: argparse.Namespace, ctx: Runs) -> list[dict[str, Any]]:
    """Every solver on one problem at each thread count: one record per thread count."""
    prob = load_problem(name, args.data)
    solve = resolve_ours(args.ours)
    keys = solver_keys(args.solvers, args.levels)
    anchor = keys[0] if keys and keys[0].startswith("piqp@") else None
    out = []
    for t in args.threads:
        fns: dict[str, Callable[[], dict[str, Any]]] = {}
        for k in keys:
            if k == "ours":
                fn = ours_runner(prob, solve, args.time_limit, args.ours_input == "sparse")
            else:
                s, lv = k.split("@")
                fn = anchor_runner(prob, s, lv, args.time_limit)
            fns[k] = _measured(fn, t)
        runs = interleave(ctx, fns, f"{name} @{t}t", anchor=anchor)
        summ = {k: dict(judge_runs(prob, rs, args.levels if k == "ours" else [k.split("@")[1]], args.time_limit),
                        solver=k.split("@")[0], level=None if k == "ours" else k.split("@")[1])
                for k, rs in runs.items()}
        rec = {"format": FORMAT, "problem": name, "threads": t, "quick": bool(args.quick), "n": prob.n,
               "m_eq": prob.m_eq, "m_ineq": prob.m_ineq, "k": int(prob.C.shape[0]), "levels": list(args.levels),
               "time_limit": args.time_limit, "ours": args.ours, "ours_input": args.ours_input, "anchor": anchor,
               "solvers": summ, "blas_threads": blas_threads_under(t), "time": now_iso()}
        o = summ.get("ours")
        if o is not None:
            r = o["residuals"]
            log(f"[{name} @{t}t] ours: {o['status']}, {fmt_seconds(o['seconds'])} s, r_p {_e(r['primal'])} "
                f"r_d {_e(r['dual'])} gap {_e(r['gap'])}; "
                + ", ".join(f"{lv} {'ok' if o['success'][lv] else 'FAIL'}" for lv in args.levels)
                + (f"; FALSE CLAIM: {o['false_claim']}" if o["false_claim"] else ""))
        out.append(rec)
    return out


# ---------------------------------------------------------------------------------------------
# Summary and page
# ---------------------------------------------------------------------------------------------

def _e(v: Any) -> str:
    if v is None or v == "inf" or (isinstance(v, float) and not math.isfinite(v)):
        return "inf"
    return f"{float(v):.1e}"


def _secs(v: Any) -> float:
    return math.inf if v in (None, "inf") else float(v)


def summarize(records: list[dict[str, Any]], threads: int, time_limit: float | None = None) -> dict[str, Any]:
    """Per solver and level, over the records at one thread count: successes, false claims,
    the shifted geometric mean of the times (a run not reported solved counts at the time
    limit, qpbenchmark's rule) and, for ours, its ratio to PIQP's at each level.

    Returns
    -------
    dict
        ``problems`` (the count), ``rows``: ``{key: {solver, level, solved: {level: count},
        shm, false_claims, loaded}}`` with key ``ours`` or ``<anchor>@<level>``, and ``ratio``:
        ``{level: shm(ours) / shm(piqp@level)}``.
    """
    recs = [r for r in records if r["threads"] == threads]
    limit = time_limit if time_limit is not None else max((r.get("time_limit") or TIME_LIMIT for r in recs),
                                                           default=TIME_LIMIT)
    rows: dict[str, dict[str, Any]] = {}
    for r in recs:
        for k, s in r["solvers"].items():
            row = rows.setdefault(k, {"solver": s["solver"], "level": s["level"], "solved": {}, "times": [],
                                      "false_claims": [], "loaded": False, "problems": 0})
            row["problems"] += 1
            for lv, ok in s["success"].items():
                row["solved"][lv] = row["solved"].get(lv, 0) + int(bool(ok))
            row["times"].append(min(_secs(s["seconds"]), limit) if s["found"] else limit)
            if s.get("false_claim"):
                row["false_claims"].append(f"{r['problem']}: {s['false_claim']}")
            row["loaded"] = row["loaded"] or bool(s.get("loaded"))
    for row in rows.values():
        row["shm"] = shifted_geometric_mean(row.pop("times"))
    ratio = {}
    if "ours" in rows:
        for lv in rows["ours"]["solved"]:
            p = rows.get(f"piqp@{lv}")
            if p is not None and p["problems"] == rows["ours"]["problems"] and p["shm"] > 0:
                ratio[lv] = rows["ours"]["shm"] / p["shm"]
    return {"problems": len({r["problem"] for r in recs}), "rows": rows, "ratio": ratio, "time_limit": limit}


def bars(summary: dict[str, Any], total: int) -> list[str]:
    """The issue's bars on ours, as lines: met or not met; when fewer than ``total`` problems
    were measured, whether a count can still be met by the others (``still reachable`` or
    ``missed``) and where the time ratio stands so far."""
    o = summary["rows"].get("ours")
    if o is None:
        return ["ours was not run"]
    partial = summary["problems"] < total
    tail = f" (partial: {summary['problems']} of {total} problems measured)" if partial else ""

    def verdict(ok: bool) -> str:       # partial: whether the bar can still be met by the rest
        return ("still reachable" if ok else "**missed**") if partial else ("met" if ok else "**not met**")

    out = []
    for lv in ("mid", "high"):
        if lv in o["solved"]:
            n = o["solved"][lv]
            need = BAR[lv] - (total - summary["problems"])
            out.append(f"{lv} ({LEVELS[lv]:g}): {n} of {summary['problems']} solved (bar ≥ {BAR[lv]} of {total}) → "
                       f"{verdict(n >= need)}{tail}")
    fc = o["false_claims"]
    out.append(f"false claims of infeasibility, unboundedness or non-convexity: {len(fc)}"
               + (f" ({'; '.join(fc)})" if fc else "") + f" → {verdict(not fc)}")
    for lv, rt in summary["ratio"].items():
        ok = rt <= BAR["shm_ratio"]
        say = ("within so far" if ok else "above so far") if partial else ("met" if ok else "**not met**")
        out.append(f"shm ours / PIQP at {lv}: {rt:.3g} (bar ≤ {BAR['shm_ratio']:g}) → {say}"
                   + (" — LOADED runs: not a result" if o["loaded"] or summary["rows"][f"piqp@{lv}"]["loaded"] else ""))
    return out


def _latest(lines: list[dict[str, Any]], quick: bool) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """The latest record of every (problem, threads), and the run header of each thread count."""
    recs: dict[tuple[str, int], dict[str, Any]] = {}
    heads: dict[int, dict[str, Any]] = {}
    for d in lines:
        if d.get("format") != FORMAT or bool(d.get("quick")) != quick:
            continue
        if "machine" in d:
            for t in d.get("threads", []):
                heads[int(t)] = d
            continue
        recs[(d["problem"], int(d["threads"]))] = d
    return sorted(recs.values(), key=lambda d: (d["problem"], d["threads"])), heads


def _cell(s: dict[str, Any] | None, levels: list[str]) -> str:
    if s is None:
        return "–"
    marks = "".join("✓" if s["success"].get(lv) else "✗" for lv in levels)
    flag = " **FALSE CLAIM**" if s.get("false_claim") else ""
    return f"{marks} {fmt_seconds(s['seconds'])}{flag}"


def _esc(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(records: list[dict[str, Any]], heads: dict[int, dict[str, Any]], total: int | None = None) -> str:
    """The markdown page: bars, summary per solver, the per-problem table and every solver's runs."""
    levels = list(dict.fromkeys(lv for r in records for lv in r.get("levels", [])))
    total = total if total is not None else len({r["problem"] for r in records})
    L = ["# The Maros–Meszaros dense subset: `qpcore.solve_qp` against PIQP, ProxQP, OSQP and Clarabel", "",
         "Generated by `python -m benchmarks.maros_meszaros` (issue 33, \"Bars\"); do not edit by hand.", ""]
    for t, h in sorted(heads.items()):
        m = h.get("machine", {})
        L.append(f"- {t} BLAS thread{'s' if t > 1 else ''}: `{h.get('command', '')}` (run {h.get('run_id')}); "
                 f"{m.get('cpu')}, {m.get('cores')} cores, numpy {m.get('numpy')}, scipy {m.get('scipy')}, "
                 f"commit {m.get('git', {}).get('commit')}{' (dirty)' if m.get('git', {}).get('dirty') else ''}; "
                 f"solvers {', '.join(f'{k} {v}' for k, v in h.get('versions', {}).items())}")
    L += ["", "Accuracy as qpbenchmark defines it, from each solver's returned x, y, z, z_box on the problem in "
          "qpsolvers' form (G x ≤ h, A x = b, lb ≤ x ≤ ub): primal residual r_p = max(‖Ax − b‖∞, [Gx − h]⁺, "
          "[lb − x]⁺, [x − ub]⁺), dual residual r_d = ‖Px + q + Aᵀy + Gᵀz + z_box‖∞, duality gap "
          "r_g = |xᵀPx + qᵀx + bᵀy + hᵀz + lbᵀz_box⁻ + ubᵀz_box⁺|. A run succeeds at a level when the solver "
          "reported success and all three are below the level's tolerance (mid 1e-6, high 1e-9). Ours runs once "
          "per pass at its default settings and is judged at every level; each anchor runs at qpbenchmark's "
          "settings of each level (see the end). shm = shifted geometric mean of the median times, shift 10 s, "
          "a run not reported solved counted at the time limit. A solver's success on a problem holds only if "
          "every one of its runs succeeded; the residuals shown are the worst run's. **FALSE CLAIM**: ours "
          "called a feasible, bounded, convex problem infeasible, unbounded or nonconvex. **LOADED**: another "
          f"process used more than {OTHERS_MARGIN} core during a run: its times are not a result.", ""]
    for t in sorted({r["threads"] for r in records}):
        summ = summarize(records, t)
        L += [f"## {t} BLAS thread{'s' if t > 1 else ''}", "", "Bars on ours (issue 33):", ""]
        L += [f"- {b}" for b in bars(summ, total)]
        L += ["", f"Summary over {summ['problems']} problems (time limit {summ['time_limit']:g} s):", ""]
        body = []
        for k, row in sorted(summ["rows"].items(), key=lambda kv: (kv[0] != "ours", kv[0])):
            solved = ", ".join(f"{lv} {row['solved'][lv]}" for lv in levels if lv in row["solved"])
            rel = (f"{summ['rows']['ours']['shm'] / row['shm']:.3g}" if k != "ours" and "ours" in summ["rows"]
                   and row["shm"] > 0 else "–")
            body.append([k, solved, f"{row['shm']:.4g}", rel, str(len(row["false_claims"])),
                         "**LOADED**" if row["loaded"] else "ok"])
        L += [markdown_table(["solver", f"solved of {summ['problems']}", "shm (s)", "shm of ours / this",
                              "false claims", "load"], body), ""]
        names = [x for x in SOLVERS if any(k.split("@")[0] == x for r in records if r["threads"] == t
                                           for k in r["solvers"])]
        L += ["Per problem: ✓/✗ = success at " + ", ".join(levels) + " (ours: its one run judged at each level; an "
              "anchor: its run at each level's settings), then the median seconds:", ""]
        body = []
        for r in (r for r in records if r["threads"] == t):
            o = r["solvers"].get("ours")
            res = o["residuals"] if o else None
            cells = []
            for x in names:
                if x == "ours":
                    cells.append(_cell(o, levels))
                else:
                    cells.append(" · ".join(f"{lv} {_cell(r['solvers'].get(f'{x}@{lv}'), [lv])}" for lv in levels))
            body.append([r["problem"], str(r["n"]), f"{r['m_eq']} / {r['m_ineq']}",
                         _esc(o["status"]) if o else "–",
                         " / ".join(_e(res[k]) for k in ("primal", "dual", "gap")) if res else "–"]
                        + cells + ["**LOADED**" if any(s.get("loaded") for s in r["solvers"].values()) else "ok"])
        L += [markdown_table(["problem", "n", "eq / ineq rows", "ours status", "ours r_p / r_d / r_g"] + names
                             + ["load"], body), ""]
    L += ["## Every solver's runs", "",
          "| problem | threads | solver | settings | status | runs | seconds: median (min–max) | r_p | r_d | r_g | "
          + " | ".join(levels) + " | load |", "|" + "---|" * (11 + len(levels))]
    for r in records:
        for k, s in sorted(r["solvers"].items(), key=lambda kv: (kv[0] != "ours", kv[0])):
            res = s["residuals"]
            st = _esc(s["status"]) + (f" **FALSE CLAIM: {s['false_claim']}**" if s.get("false_claim") else "")
            L.append(f"| {r['problem']} | {r['threads']} | {s['solver']} | {s['level'] or 'default (ours)'} | {st} | "
                     f"{s['runs']} | {fmt_seconds(s['seconds'])} ({fmt_seconds(s['min'])}–{fmt_seconds(s['max'])}) | "
                     f"{_e(res['primal'])} | {_e(res['dual'])} | {_e(res['gap'])} | "
                     + " | ".join(("✓" if s["success"][lv] else "✗") if lv in s["success"] else "" for lv in levels)
                     + f" | {'**LOADED**' if s.get('loaded') else 'ok'} |")
    limit = max((float(r.get("time_limit") or TIME_LIMIT) for r in records), default=TIME_LIMIT)
    L += ["", "## Anchor settings (qpbenchmark's, through qpsolvers)", ""]
    for s in ANCHORS:
        L.append(f"- **{s}**: " + "; ".join(f"{lv}: {_esc(anchor_settings(s, lv, limit))}" for lv in levels)
                 + (" (matrices as CSC, converted outside the timer)" if s in SPARSE_ONLY else " (dense matrices)"))
    L += ["", "Time limits: OSQP as qpbenchmark sets it, Clarabel as a safety (`--time-limit`); PIQP and ProxQP have "
          "none. A run past the limit counts as not solved for every solver.", ""]
    return "\n".join(L)


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for name, pkg in (("qpsolvers", "qpsolvers"), ("piqp", "piqp"), ("proxqp", "proxsuite"), ("osqp", "osqp"),
                      ("clarabel", "clarabel")):
        try:
            out[name] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------

def _clean(v: Any) -> Any:
    return clean(v, drop=("x", "y", "z", "z_box"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The study's command line (``study_parser`` plus its own flags)."""
    p = study_parser("python -m benchmarks.maros_meszaros", __doc__, small="quick", threads="1,2")
    p.add_argument("--problems", default="all",
                   help=f"comma-separated problem names, or all (default; quick: {','.join(QUICK)})")
    p.add_argument("--solvers", default=",".join(SOLVERS), help="comma-separated, from %(default)s")
    p.add_argument("--levels", default="mid,high",
                   help=f"accuracy levels, from {','.join(LEVELS)} (default %(default)s): each anchor runs at each")
    p.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                   help="per solve (s): ours, OSQP and Clarabel stop there; any run past it counts as not solved, "
                        "and the shifted geometric mean counts a failure at it (default %(default)g, qpbenchmark's)")
    p.add_argument("--ours", default="qpcore", choices=sorted(OURS),
                   help="qpcore: qpcore.solve_qp (default); clarabel-standin: Clarabel behind the same adapter")
    p.add_argument("--ours-input", default="dense", choices=("dense", "sparse"),
                   help="our matrices: dense arrays as the anchors get (default) or scipy CSR")
    p.add_argument("--data", type=Path, default=None, help="the folder of the .mat files (default <data>/maros_meszaros)")
    p.add_argument("--out", type=Path, default=None, help="the JSON-lines results file "
                   "(default benchmarks/results/maros_meszaros.jsonl; quick under benchmarks/results/quick)")
    add_docs_argument(p)
    a = p.parse_args([] if argv is None else argv)
    resolve_run_arguments(p, a, small=a.quick)
    if a.data is None:
        a.data = data_folder()
    known = problem_names(a.data)
    if a.problems == "all":
        a.problems = list(QUICK) if a.quick else known
    else:
        a.problems = [x for x in a.problems.split(",") if x]
    bad = [x for x in a.problems if x not in known]
    if bad:
        p.error(f"unknown problems {bad}; the folder {a.data} has {', '.join(known)}")
    a.solvers = [s for s in a.solvers.split(",") if s]
    if any(s not in SOLVERS for s in a.solvers) or not a.solvers:
        p.error(f"--solvers: choose from {','.join(SOLVERS)}")
    a.levels = [lv for lv in a.levels.split(",") if lv]
    if any(lv not in LEVELS for lv in a.levels) or not a.levels:
        p.error(f"--levels: choose from {','.join(LEVELS)}")
    if not a.time_limit > 0:
        p.error("--time-limit must be > 0")
    folder = RESULTS / "quick" if a.quick else RESULTS
    a.out = a.out or folder / "maros_meszaros.jsonl"
    a.docs = page_folder(a.docs, a.out.parent)
    a.total = len(known)
    return a


def main(argv: list[str] | None = None) -> int:
    """Run the study (see the module docstring); returns the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    run_id = now_iso()
    command = command_line("maros_meszaros", argv)
    machine = machine_info(max(args.threads))
    log(f"{command}\n{machine['cpu']}, {machine['cores']} cores, load average {machine['loadavg']}")
    if any(blas_threads_under(t) not in (None, t) for t in args.threads):
        log(f"warning: BLAS threads in effect {[blas_threads_under(t) for t in args.threads]} for {args.threads} "
            "asked (run as `python -m benchmarks.maros_meszaros` so the pool is sized before numpy loads)")
    head = {"format": FORMAT, "run_id": run_id, "threads": args.threads, "quick": bool(args.quick),
            "command": command, "machine": machine, "versions": _versions(), "problems": args.problems,
            "solvers": args.solvers, "levels": args.levels, "time_limit": args.time_limit, "ours": args.ours,
            "repeat": args.repeat}

    def write_page(lines: list[dict[str, Any]], a: argparse.Namespace) -> None:
        recs, heads = _latest(lines, bool(a.quick))
        page = render(recs, heads, total=a.total)
        a.docs.mkdir(parents=True, exist_ok=True)
        (a.docs / "maros_meszaros.md").write_text(page, encoding="utf-8")
        for t in sorted({r["threads"] for r in recs}):
            log(f"\n{t} thread(s):\n  " + "\n  ".join(bars(summarize(recs, t), a.total)))
        log(f"\nwrote {a.out} and {a.docs / 'maros_meszaros.md'}")

    run_study(Study(bench_problem, write_page, _clean), args, args.problems,
              stamp={"format": FORMAT, "run_id": run_id}, head=head)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
