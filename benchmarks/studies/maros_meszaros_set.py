"""The Maros–Meszaros set as qpbenchmark reads it (the .mat files, l ≤ Ax ≤ u) and its measures of
accuracy (primal and dual residuals, duality gap, success at a level, the shifted geometric mean,
false claims); see :mod:`benchmarks.studies.maros_meszaros`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray


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
