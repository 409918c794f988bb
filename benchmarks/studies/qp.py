"""GPCG against the fastest accurate peer on dense box QPs and on least squares (issue 14).

    python -m benchmarks.qp --threads 1                 # every row at 1 BLAS thread
    python -m benchmarks.qp --threads 2 --rows spec_2000_k4,nnls_8000x2000
    python -m benchmarks.qp --quick                     # small sizes, one run each (seconds)

Rows. ``spec_N_kK``: the issue's family, Q = U diag(logspace(0, −K)) Uᵀ with U a random orthogonal
matrix (QR of a standard normal matrix), c = 0.05·N(0, 1), bounds [−1, 1] with a random third
[0, 1] (condition 10^K). ``act_N_kK``: the same Q with c = N(0, 1), twenty times larger, so that
most bounds are active at the solution. ``box_N`` (issue 3): Q = MᵀM/N + 1e-3 I with M of 1.5N × N
standard normal, c standard normal, bounds ±0.1; ``box_2000_ill``: M of N/2 × N and a 1e-6 ridge.
``nnls_MxN``: standard normal A, d, x ≥ 0; ``bvls_2000x500``: bounds [−0.05, 0.05].

Peers, each at settings that reach a relative objective of 1e-9 (see ``PEERS``): PIQP's and
ProxQP's dense back-ends and Clarabel through their own Python interfaces (box constraints passed
as such where the solver has them), HiGHS, OSQP, DAQP and quadprog through qpsolvers, scipy's
nnls and lsq_linear(method="bvls") on least squares; on least squares the QP solvers run on the
normal equations, and forming AᵀA and Aᵀd is inside their timer (it is part of what they solve,
as it is in ours when our dense backend is picked).

Protocol (docs/BENCHMARKS.md, issue 14), with the harness of every study, ``benchmarks.harness``:

1. screening: every peer once and GPCG once, in one process on the same arrays; the load
   average is read before every run and other processes' CPU measured during it (``timed``);
2. the reference: the lowest objective of every run and of an untimed tight GPCG solve (tol
   1e-12); rel_obj = (f − f_ref)/|f_ref| with f the QP objective at the point clipped to the box
   (the residual norm ‖Ax − d‖ for least squares); a peer is *accurate* when rel_obj ≤ 1e-9;
3. the accurate peers within 1.5× of the fastest screened time are each interleaved with GPCG
   (peer, ours, peer, ours, ...: ``interleave``) for ``--repeat`` runs; the fastest of them by
   median is the row's peer, and the claim is the ratio of medians with the range of the paired
   ratios (``ratio_stats``). Other peers keep their one screening run (the table says runs = 1);
4. peak resident memory of every run (``PeakMemory``) on both sides.

A run is *loaded* when other processes used more than 0.1 of a core during it; such a row is
flagged in the table and its ratio is not a result. Results append to
``benchmarks/results/qp.jsonl`` (untracked); the page ``qp.md`` beside it (``--docs``: in
``docs/benchmarks/``) is rendered from the latest run of every (row, threads) pair in that file, so the 1- and 2-thread runs share one table.
"""

from __future__ import annotations

import sys

from benchmarks.harness import pin_blas_threads, threads_from_argv


# OpenBLAS sizes its pool when numpy is first imported: set the thread count before that (only
# when run as a script; threadpoolctl enforces it per run as well)
if __name__ == "__main__":
    pin_blas_threads(threads_from_argv(sys.argv[1:]))

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.harness import (  # noqa: E402
    RESULTS,
    PeakMemory,
    Runs,
    Study,
    blas_threads,
    clean,
    interleave,
    machine_info,
    median,
    now_iso,
    page_folder,
    ratio_stats,
    resolve_run_arguments,
    run_study,
    study_parser,
    thread_limit,
    timed,
)

ACCURATE = 1e-9           # the rel_obj a peer must reach to count
CONTENDER = 1.5           # accurate peers within this factor of the fastest screened time are interleaved
REF_TOL = 1e-12           # the untimed reference solve (GPCG, tol relative to max(1, ‖c‖∞))


# --- problems ------------------------------------------------------------------------------------

def spec_row(n: int, log_kappa: float, c_scale: float = 0.05, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    U, R = np.linalg.qr(rng.standard_normal((n, n)))
    U *= np.sign(np.diag(R))                      # Haar-distributed
    eig = np.logspace(0.0, -log_kappa, n)
    Q = (U * eig) @ U.T
    del U, R
    Q = 0.5 * (Q + Q.T)
    c = c_scale * rng.standard_normal(n)
    lb, ub = np.full(n, -1.0), np.ones(n)
    lb[rng.choice(n, n // 3, replace=False)] = 0.0
    return {"kind": "box", "Q": Q, "c": c, "lb": lb, "ub": ub}


def box_row(n: int, ill: bool = False, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    if ill:
        M = rng.standard_normal((n // 2, n))
        Q = M.T @ M / n + 1e-6 * np.eye(n)
    else:
        M = rng.standard_normal((int(1.5 * n), n))
        Q = M.T @ M / n + 1e-3 * np.eye(n)
    del M
    Q = 0.5 * (Q + Q.T)
    c = rng.standard_normal(n)
    return {"kind": "box", "Q": Q, "c": c, "lb": np.full(n, -0.1), "ub": np.full(n, 0.1)}


def ls_row(m: int, n: int, bounds: tuple[float, float] | None, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {"kind": "nnls" if bounds is None else "bvls", "A": rng.standard_normal((m, n)),
            "d": rng.standard_normal(m), "bounds": bounds}


def _spec(n: int, k: float, quick_n: int, c_scale: float = 0.05) -> Callable[[bool], dict[str, Any]]:
    return lambda q: spec_row(quick_n if q else n, k, c_scale)


ROWS: dict[str, Callable[[bool], dict[str, Any]]] = {
    "spec_2000_k2": _spec(2000, 2, 150),
    "spec_2000_k4": _spec(2000, 4, 150),
    "spec_2000_k6": _spec(2000, 6, 150),
    "spec_2000_k8": _spec(2000, 8, 150),
    "spec_500_k4": _spec(500, 4, 80),
    "spec_500_k8": _spec(500, 8, 80),
    "spec_5000_k4": _spec(5000, 4, 200),
    "act_2000_k4": _spec(2000, 4, 150, c_scale=1.0),
    "act_2000_k8": _spec(2000, 8, 150, c_scale=1.0),
    "box_500": lambda q: box_row(100 if q else 500),
    "box_2000": lambda q: box_row(200 if q else 2000),
    "box_2000_ill": lambda q: box_row(200 if q else 2000, ill=True),
    "box_5000": lambda q: box_row(300 if q else 5000),
    "nnls_2000x500": lambda q: ls_row(400 if q else 2000, 100 if q else 500, None),
    "nnls_8000x2000": lambda q: ls_row(800 if q else 8000, 200 if q else 2000, None),
    "bvls_2000x500": lambda q: ls_row(400 if q else 2000, 100 if q else 500, (-0.05, 0.05)),
}

BOX_PEERS = ["piqp", "proxqp", "clarabel", "highs", "osqp", "daqp", "quadprog"]
LS_PEERS = ["lsq_linear_bvls", "scipy_nnls", "piqp", "proxqp", "clarabel", "osqp", "daqp"]

#: peer settings, as documented by each project for high accuracy (shown on the page)
PEERS: dict[str, str] = {
    "piqp": "PIQP 0.7 DenseSolver, eps_abs = 1e-10, eps_rel = 1e-11 (defaults 1e-8, 1e-9), box as x_l ≤ x ≤ x_u",
    "proxqp": "ProxSuite 0.8 proxqp.dense.QP with box_constraints=True, eps_abs = 1e-10, eps_rel = 0",
    "clarabel": "Clarabel 0.11, P upper triangle CSC, box as two nonnegative cones; tol_gap_abs = tol_gap_rel = "
                "tol_feas = 1e-10 (defaults 1e-8)",
    "highs": "HiGHS 1.15 (QP active set) through qpsolvers, default tolerances",
    "osqp": "OSQP 1.1 through qpsolvers, CSC P, eps_abs = eps_rel = 1e-9, polishing on, max_iter 10⁶",
    "daqp": "DAQP 0.11 through qpsolvers (dense active set, exact), defaults",
    "quadprog": "quadprog 0.1 through qpsolvers (Goldfarb–Idnani, dense), defaults",
    "scipy_nnls": "scipy.optimize.nnls (Lawson–Hanson), maxiter = 50 n",
    "lsq_linear_bvls": "scipy.optimize.lsq_linear(method='bvls', tol=1e-12, lsmr_tol=None)",
}

#: peers not run on a row, and why (each measured once on this machine at 1 BLAS thread, or taken
#: from the issue-3 table at 2 threads where named so)
SKIP: dict[tuple[str, str], str] = {}
for _r in ("spec_2000_k2", "spec_2000_k4", "spec_2000_k6", "spec_2000_k8", "act_2000_k4", "act_2000_k8",
           "box_2000", "box_2000_ill"):
    SKIP[(_r, "quadprog")] = "35–84 s per run at n = 2000 (issue-3 table, box_2000 and box_2000_ill)"
    SKIP[(_r, "highs")] = "31 s per run at n = 2000 (spec_2000_k4, rel_obj 8e-13)"
for _r in ("box_2000", "box_2000_ill"):
    SKIP[(_r, "daqp")] = "12–21 s per run (issue-3 table), never a contender"
for _r in ("spec_5000_k4", "box_5000"):
    for _p, _why in (("quadprog", "about 8 min per run (issue-3 table)"),
                     ("highs", "31 s per run already at n = 2000"),
                     ("osqp", "114 s per run (box_5000, issue-3 table)"),
                     ("daqp", "227 s per run (box_5000, issue-3 table)"),
                     ("clarabel", "3.2–3.8 s at n = 2000, 15× that at n = 5000 by its O(n³) factorization"),
                     ("proxqp", "4.5 s at n = 2000 (spec_2000_k4, 4× PIQP); O(n³) per iteration")):
        SKIP[(_r, _p)] = _why
for _r in ("act_2000_k4", "act_2000_k8"):
    SKIP[(_r, "daqp")] = "11–18 s per run at 1 thread (commit 048cb03's run), never a contender"
SKIP[("nnls_8000x2000", "clarabel")] = "6.2 s in one run, 132 s in another at 1 thread; never a contender"
SKIP[("nnls_8000x2000", "lsq_linear_bvls")] = "115 s per run (one run at 1 thread)"


# --- the solvers ---------------------------------------------------------------------------------

def _normal_equations(row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    A, d = row["A"], row["d"]
    n = A.shape[1]
    lo, hi = row["bounds"] if row["bounds"] is not None else (0.0, math.inf)
    Q = A.T @ A
    return Q, -(A.T @ d), np.full(n, lo), np.full(n, hi)


def _box_data(row: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if row["kind"] == "box":
        return row["Q"], row["c"], row["lb"], row["ub"]
    return _normal_equations(row)


def _inf_to_big(v: np.ndarray, big: float = 1e20) -> np.ndarray:
    return np.clip(v, -big, big)


def peer(name: str, row: dict[str, Any]) -> Callable[[], np.ndarray | None]:
    """A closure solving the row with one peer; on box rows its inputs are prepared outside it."""
    import scipy.sparse as sp

    ls = row["kind"] != "box"
    if name == "scipy_nnls":
        from scipy.optimize import nnls as scipy_nnls

        A, d = row["A"], row["d"]
        return lambda: scipy_nnls(A, d, maxiter=50 * A.shape[1])[0]
    if name == "lsq_linear_bvls":
        from scipy.optimize import lsq_linear

        A, d = row["A"], row["d"]
        lo, hi = row["bounds"] if row["bounds"] is not None else (0.0, np.inf)
        return lambda: lsq_linear(A, d, bounds=(lo, hi), method="bvls", tol=1e-12, lsmr_tol=None).x
    prepared = None if ls else _box_data(row)

    def data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return prepared if prepared is not None else _normal_equations(row)

    if name == "piqp":
        import piqp

        def run_piqp() -> np.ndarray | None:
            Q, c, lb, ub = data()
            s = piqp.DenseSolver()
            s.settings.eps_abs, s.settings.eps_rel = 1e-10, 1e-11
            # Q is symmetric: its transpose is the Fortran-ordered view PIQP takes without a copy
            s.setup(Q.T, c, None, None, None, None, None, lb, ub)   # PIQP takes infinite bounds
            s.solve()
            return np.array(s.result.x)
        return run_piqp
    if name == "proxqp":
        from proxsuite import proxqp

        def run_proxqp() -> np.ndarray | None:
            Q, c, lb, ub = data()
            n = c.size
            qp = proxqp.dense.QP(n, 0, 0, True)
            qp.settings.eps_abs, qp.settings.eps_rel = 1e-10, 0.0
            qp.init(Q, c, None, None, None, None, None, lb, _inf_to_big(ub))
            qp.solve()
            return np.array(qp.results.x)
        return run_proxqp
    if name == "clarabel":
        import clarabel

        Pc = None if ls else sp.triu(sp.csc_matrix(prepared[0]), format="csc") if prepared is not None else None

        def run_clarabel() -> np.ndarray | None:
            Q, c, lb, ub = data()
            n = c.size
            P = Pc if Pc is not None else sp.triu(sp.csc_matrix(Q), format="csc")
            fin_u, fin_l = np.flatnonzero(np.isfinite(ub)), np.flatnonzero(np.isfinite(lb))
            eye = sp.identity(n, format="csc")
            G = sp.vstack([eye[fin_u], -eye[fin_l]], format="csc")
            h = np.concatenate([ub[fin_u], -lb[fin_l]])
            st = clarabel.DefaultSettings()
            st.verbose = False
            st.tol_gap_abs = st.tol_gap_rel = st.tol_feas = 1e-10
            sol = clarabel.DefaultSolver(P, c, G, h, [clarabel.NonnegativeConeT(h.size)], st).solve()
            return np.array(sol.x)
        return run_clarabel
    import qpsolvers

    if name == "osqp":
        Pcsc = None if ls else sp.csc_matrix(prepared[0]) if prepared is not None else None

        def run_osqp() -> np.ndarray | None:
            Q, c, lb, ub = data()
            return qpsolvers.solve_qp(Pcsc if Pcsc is not None else sp.csc_matrix(Q), c, lb=lb, ub=ub, solver="osqp",
                                      eps_abs=1e-9, eps_rel=1e-9, max_iter=1_000_000, polishing=True, verbose=False)
        return run_osqp
    if name == "highs":
        Ph = None if ls else sp.csc_matrix(prepared[0]) if prepared is not None else None

        def run_highs() -> np.ndarray | None:
            Q, c, lb, ub = data()
            return qpsolvers.solve_qp(Ph if Ph is not None else sp.csc_matrix(Q), c, lb=lb, ub=ub, solver="highs")
        return run_highs

    def run_dense() -> np.ndarray | None:   # quadprog and DAQP want writable buffers
        Q, c, lb, ub = data()
        return qpsolvers.solve_qp(np.array(Q), c.copy(), lb=lb.copy(), ub=_inf_to_big(ub), solver=name)
    return run_dense


def ours(row: dict[str, Any], tol_rel: float) -> Callable[[], dict[str, Any]]:
    """GPCG from the arrays: building (and validating) the QP is inside the timer."""
    import qpcore
    from qpcore_formulations.least_squares import bounded_least_squares, nnls
    from qpcore_strategies.gradient_projection import GPCG

    def run() -> dict[str, Any]:
        t0 = time.perf_counter()
        if row["kind"] == "box":
            qp = qpcore.QP(row["Q"], row["c"], row["lb"], row["ub"])
        elif row["kind"] == "nnls":
            qp = nnls(row["A"], row["d"]).qp
        else:
            qp = bounded_least_squares(row["A"], row["d"], *row["bounds"]).qp
        t1 = time.perf_counter()
        tol = tol_rel * max(1.0, float(np.abs(qp.c).max()))
        res = qpcore.solve(qp, GPCG(), tol=tol, max_iter=100_000)
        return {"x": res.x, "status": res.status.code, "iterations": res.iterations, "kkt": res.kkt.measure,
                "build_s": t1 - t0, "backend": type(qp.Q).__name__,
                **{k: int(res.stats.get(k, 0)) for k in ("gp_steps", "cg_steps", "newton_steps", "factorizations",
                                                         "face_solves")}}
    return run


def objective(row: dict[str, Any], x: np.ndarray | None) -> float:
    if x is None or not np.all(np.isfinite(x)):
        return math.nan
    if row["kind"] == "box":
        x = np.clip(x, row["lb"], row["ub"])   # an interior-point/ADMM point may sit 1e-10 outside
        return float(0.5 * x @ (row["Q"] @ x) + row["c"] @ x)
    lo, hi = row["bounds"] if row["bounds"] is not None else (0.0, np.inf)
    x = np.clip(x, lo, hi)
    return float(np.linalg.norm(row["A"] @ x - row["d"]))   # least squares: the residual norm


def _measured(fn: Callable[[], Any], threads: int) -> Callable[[], dict[str, Any]]:
    """A run for ``timed``: seconds, peak memory, the point; under the BLAS thread limit."""
    def run() -> dict[str, Any]:
        with thread_limit(threads), PeakMemory() as pm, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            out = fn()
            secs = time.perf_counter() - t
        d = dict(out) if isinstance(out, dict) else {"x": out}
        d.update(seconds=secs, peak_mb=round(pm.peak_mb, 1))
        return d
    return run


# --- one row -------------------------------------------------------------------------------------

def _summary(runs: list[dict[str, Any]], f: Callable[[np.ndarray | None], float]) -> dict[str, Any]:
    secs = [r["seconds"] for r in runs]
    ok = [r for r in runs if math.isfinite(r["seconds"])]
    out: dict[str, Any] = {"runs": len(runs), "times": [round(s, 4) for s in secs],
                           "seconds": median(secs), "min": min(secs), "max": max(secs),
                           "peak_mb": max(r.get("peak_mb", 0.0) for r in runs),
                           "loads": [r["load"] for r in runs], "loaded": any(r["load"]["loaded"] for r in runs)}
    fs = [f(r.get("x")) for r in ok]
    out["f"] = max(fs) if fs else math.nan                 # the worst run's objective is what is claimed
    if "error" in runs[-1]:
        out["error"] = runs[-1].get("status")
    for k in ("status", "iterations", "kkt", "build_s", "backend", "gp_steps", "cg_steps", "newton_steps",
              "factorizations", "face_solves"):
        if k in runs[-1]:
            out[k] = runs[-1][k]
    return out


def bench(key: str, args: argparse.Namespace, ctx: Runs) -> dict[str, Any]:
    t0 = time.perf_counter()
    row = ROWS[key](args.quick)
    gen_s = time.perf_counter() - t0
    ls = row["kind"] != "box"
    n = int(row["Q"].shape[0]) if not ls else int(row["A"].shape[1])
    fits = [p for p in (LS_PEERS if ls else BOX_PEERS) if not (row["kind"] == "bvls" and p == "scipy_nnls")]
    names = [p for p in args.peers.split(",") if p in fits] if args.peers else fits
    f = lambda x: objective(row, x)   # noqa: E731
    solvers = {"gpcg": _measured(ours(row, args.tol), args.threads)}
    skipped: dict[str, str] = {}
    for p in names:
        why = SKIP.get((key, p)) if not args.quick else None
        if why:
            skipped[p] = why
            print(f"[{key}] {p:<16} skipped: {why}", flush=True)
        else:
            solvers[p] = _measured(peer(p, row), args.threads)
    # 1. screening: each peer once, ours once
    runs: dict[str, list[dict[str, Any]]] = {}
    for k, fn in solvers.items():
        r = timed(ctx, fn)
        runs[k] = [r]
        ld = r["load"]
        print(f"[{key}] {k:<16} screen {r['seconds']:8.3f} s  peak {r.get('peak_mb', float('nan')):7.1f} MB  "
              f"load {ld['load1']} others {ld.get('others', '?')}{'  LOADED' if ld['loaded'] else ''}", flush=True)
    # 2. the reference (untimed)
    ref = ours(row, REF_TOL)()
    f_ref = min([f(ref["x"])] + [f(r.get("x")) for rs in runs.values() for r in rs if math.isfinite(f(r.get("x")))])

    def rel(x: np.ndarray | None) -> float:
        v = f(x)
        return (v - f_ref) / abs(f_ref) if math.isfinite(v) and f_ref != 0 else math.nan

    screen = {k: rs[0]["seconds"] for k, rs in runs.items() if k != "gpcg" and math.isfinite(rs[0]["seconds"])}
    accurate = {k: s for k, s in screen.items() if rel(runs[k][0].get("x")) <= ACCURATE}
    # 3. interleave GPCG with each contender
    contenders = sorted((k for k, s in accurate.items() if s <= CONTENDER * min(accurate.values())),
                        key=lambda k: accurate[k]) if accurate else []
    pairs: dict[str, dict[str, Any]] = {}
    paired: dict[str, dict[str, list[dict[str, Any]]]] = {}
    ctx.repeat = args.repeat
    for p in contenders:
        paired[p] = interleave(ctx, {p: solvers[p], "gpcg": solvers["gpcg"]}, key, anchor=p)
        pairs[p] = ratio_stats(paired[p]["gpcg"], paired[p][p])
    best = min(contenders, key=lambda p: median([r["seconds"] for r in paired[p][p]])) if contenders else None
    if best is None:
        for _ in range(args.repeat - 1):
            runs["gpcg"].append(timed(ctx, solvers["gpcg"]))
    screen_s = {k: rs[0]["seconds"] for k, rs in runs.items()}
    # what the table claims: the interleaved runs (GPCG's: those paired with the row's peer); the
    # screening run where a solver was not interleaved
    for p in contenders:
        runs[p] = paired[p][p]
    if best is not None:
        runs["gpcg"] = paired[best]["gpcg"]
    summ = {k: dict(_summary(rs, f), screen_s=screen_s[k]) for k, rs in runs.items()}
    for k, s in summ.items():
        s["rel_obj"] = (s["f"] - f_ref) / abs(f_ref) if math.isfinite(s["f"]) and f_ref != 0 else None
    rec: dict[str, Any] = {"row": key, "threads": args.threads, "quick": args.quick, "n": n,
                           "m": None if not ls else int(row["A"].shape[0]), "kind": row["kind"],
                           "measure": "residual norm" if ls else "objective", "f_ref": f_ref, "gen_s": gen_s,
                           "solvers": summ, "skipped": skipped, "peer": best,
                           "ratio": pairs[best] if best else None,
                           "blas_threads": blas_threads(), "time": now_iso()}
    for k in summ:
        summ[k].pop("f", None)
    if best:
        r = pairs[best]
        print(f"[{key}] fastest 1e-9 peer {best}: ours/{best} = {_f(r['ratio'], '.3f')} "
              f"(paired {_f(r['paired_min'], '.3f')}–{_f(r['paired_max'], '.3f')})", flush=True)
    return rec


# --- the page ------------------------------------------------------------------------------------

def _f(v: Any, spec: str) -> str:
    return "–" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, spec)


def _s(v: Any) -> str:
    return _f(v, ".3f") if v is not None and v < 10 else _f(v, ".1f")


def _loads(s: dict[str, Any]) -> str:
    ls = [f"{ld['load1']:.2f}" for ld in s["loads"]]
    return ",".join(ls)


def render(records: list[dict[str, Any]], machines: dict[int, dict[str, Any]], commands: list[str]) -> str:
    L = ["# GPCG against the fastest accurate peer: dense box QPs and least squares", "",
         "Reproduce (on a quiet machine): " + "; ".join(f"`{c}`" for c in commands) + ".", ""]
    for t, m in sorted(machines.items()):
        L.append(f"- {t} BLAS thread{'s' if t > 1 else ''}: {m.get('cpu')}, numpy {m.get('numpy')}, scipy "
                 f"{m.get('scipy')}, commit {m.get('git', {}).get('commit')}, run {m.get('run_id')}")
    L += ["", "**ratio** = GPCG's median time / the median time of the fastest peer whose rel_obj ≤ 1e-9 "
          "(below 1: GPCG is faster), both interleaved on the same arrays in one process (peer, ours, peer, "
          "ours, …); in brackets the range of the per-pair ratios. rel_obj = (f − f_ref)/|f_ref|, f the QP "
          "objective at the point clipped to the box (residual norm ‖Ax − d‖ for least squares), f_ref the "
          "lowest value of every run and of an untimed GPCG solve at tol 1e-12. GPCG's time includes "
          "building and validating the QP (a dense Q's PSD check is a Cholesky of Q; its share is the "
          "\"build\" column) and its final certificate. Peak = resident memory above the start of the run "
          "(VmHWM). Loads = 1-minute load average read before each run; **LOADED** = another process used "
          "more than 0.1 core during a run: that row's ratio is not a result.", "",
          "| row | n | threads | fastest 1e-9 peer | peer s (median, min–max) | GPCG s (median, min–max) | "
          "**ratio** [paired] | GPCG build s | rel_obj GPCG / peer | peak MB GPCG / peer | GPCG steps "
          "(GP / CG / Newton / factorizations) | loads |", "|" + "---|" * 12]
    for r in records:
        s = r["solvers"]
        o = s["gpcg"]
        p = s.get(r["peer"]) if r["peer"] else None
        flag = " **LOADED**" if o["loaded"] or (p and p["loaded"]) else ""
        ratio = r["ratio"]
        rt = (f"**{ratio['ratio']:.3f}** [{_f(ratio.get('paired_min'), '.3f')}–{_f(ratio.get('paired_max'), '.3f')}]"
              if ratio and ratio.get("ratio") is not None else "no accurate peer")
        L.append(f"| {r['row']} | {r['n'] if r['m'] is None else str(r['m']) + '×' + str(r['n'])} | {r['threads']} | "
                 f"{r['peer'] or '–'} | "
                 f"{(_s(p['seconds']) + ' (' + _s(p['min']) + '–' + _s(p['max']) + ')') if p else '–'} | "
                 f"{_s(o['seconds'])} ({_s(o['min'])}–{_s(o['max'])}) | {rt}{flag} | {_s(o.get('build_s'))} | "
                 f"{_f(o.get('rel_obj'), '+.1e')} / {_f(p.get('rel_obj'), '+.1e') if p else '–'} | "
                 f"{_f(o.get('peak_mb'), '.0f')} / {_f(p.get('peak_mb'), '.0f') if p else '–'} | "
                 f"{o.get('gp_steps')} / {o.get('cg_steps')} / {o.get('newton_steps')} / {o.get('factorizations')} | "
                 f"{_loads(o)} / {_loads(p) if p else ''}{flag} |")
    L += ["", "## Bar: GPCG ≤ 0.2× the fastest 1e-9 peer on spec_2000_k* (every condition number) "
          "and on nnls_8000x2000", ""]
    for t in sorted({r["threads"] for r in records}):
        for group, rows in (("spec_2000_k*", [r for r in records if r["row"].startswith("spec_2000_")]),
                            ("nnls_8000x2000", [r for r in records if r["row"] == "nnls_8000x2000"])):
            rows = [r for r in rows if r["threads"] == t]
            if not rows:
                continue
            rs = [r["ratio"]["ratio"] if r["ratio"] and r["ratio"].get("ratio") is not None else math.inf for r in rows]
            loaded = any(r["solvers"]["gpcg"]["loaded"] or (r["peer"] and r["solvers"][r["peer"]]["loaded"])
                         for r in rows)
            L.append(f"- {t} thread{'s' if t > 1 else ''}, {group}: worst ratio {_f(max(rs), '.3f')} → "
                     f"{'met' if max(rs) <= 0.2 else 'not met'}"
                     f"{' (LOADED runs: not a result)' if loaded else ''}")
    L += ["", "## Every peer", "",
          "Seconds: the median of the interleaved runs for the contenders (runs > 1; GPCG's: the runs paired "
          "with the row's peer), else the one screening run. Peers that did not reach 1e-9 are not candidates "
          "for the ratio.", "",
          "| row | threads | solver | runs | seconds (median) | rel_obj | peak MB | status | loaded |",
          "|" + "---|" * 9]
    for r in records:
        for k, s in sorted(r["solvers"].items(), key=lambda kv: kv[1]["seconds"]):
            L.append(f"| {r['row']} | {r['threads']} | {k} | {s['runs']} | {_s(s['seconds'])} | "
                     f"{_f(s.get('rel_obj'), '+.1e')} | {_f(s.get('peak_mb'), '.0f')} | "
                     f"{s.get('error') or s.get('status') or ''} | {'LOADED' if s['loaded'] else ''} |")
        for k, why in r["skipped"].items():
            L.append(f"| {r['row']} | {r['threads']} | {k} | 0 | skipped: {why} | | | | |")
    L += ["", "## Peer settings", ""] + [f"- **{k}**: {v}" for k, v in PEERS.items()] + [""]
    return "\n".join(L)


def _latest(lines: list[dict[str, Any]], quick: bool) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]],
                                                                list[str]]:
    """The latest record of every (row, threads) in the results file, the machines and commands."""
    recs: dict[tuple[str, int], dict[str, Any]] = {}
    machines: dict[int, dict[str, Any]] = {}
    commands: dict[int, str] = {}
    for d in lines:
        if d.get("format") != "issue14" or bool(d.get("quick")) != quick:
            continue
        if "machine" in d:
            machines[int(d["threads"])] = dict(d["machine"], run_id=d.get("run_id"))
            commands[int(d["threads"])] = d.get("command", "")
            continue
        recs[(d["row"], int(d["threads"]))] = d
    order = list(ROWS)
    out = sorted(recs.values(), key=lambda d: (order.index(d["row"]) if d["row"] in order else 99, d["threads"]))
    return out, machines, [commands[t] for t in sorted(commands)]


def _clean(v: Any) -> Any:
    return clean(v, drop=("x",), inf_as_text=False)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = study_parser("python -m benchmarks.qp", __doc__, rows=ROWS, small="quick", threads=2, docs=True)
    p.add_argument("--peers", default="", help="comma-separated peers (default: every peer that fits the row)")
    p.add_argument("--tol", type=float, default=1e-9, help="GPCG tolerance relative to max(1, ‖c‖∞) (default 1e-9)")
    p.add_argument("--out-dir", default="", help="write qp.jsonl (and qp.md, without --docs) here instead (tests)")
    args = p.parse_args(argv)
    resolve_run_arguments(p, args, small=args.quick)
    bad = [k for k in args.rows.split(",") if k not in ROWS]
    if bad:
        p.error(f"unknown rows {bad}; choose from {list(ROWS)}")
    out_dir = Path(args.out_dir) if args.out_dir else RESULTS / "quick" if args.quick else RESULTS
    args.docs = page_folder(args.docs, out_dir)
    args.out = out_dir / "qp.jsonl"
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run_id = now_iso()
    command = ("python -m benchmarks.qp " + " ".join(sys.argv[1:] if argv is None else argv)).strip()
    head = {"format": "issue14", "run_id": run_id, "threads": args.threads, "quick": args.quick,
            "command": command, "machine": machine_info(args.threads)}

    def write_page(lines: list[dict[str, Any]], a: argparse.Namespace) -> None:
        page = render(*_latest(lines, a.quick))
        a.docs.mkdir(parents=True, exist_ok=True)
        (a.docs / "qp.md").write_text(page, encoding="utf-8")
        print(page)

    run_study(Study(bench, write_page, _clean), args, args.rows.split(","),
              stamp={"format": "issue14", "run_id": run_id}, head=head)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
