"""The incremental rows of the INCAS study (qpcore_incremental.IncrementalSVM against LIBSVM refits):
one example added to a solved model, exact leave-one-out, the sliding window.
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from benchmarks.harness import in_child, interleave, log, median, now_iso, ratio_stats, summarize_runs, thread_limit
from benchmarks.studies.incas_rows import (
    BAR, REF_TOL, Ctx, Sizes, Source, Spec, arrays, available, eval_qp, judge, run_anchor, run_ours,
)


def inc_new(spec: Spec, ctx: Ctx) -> Any:
    from qpcore_incremental.incremental import IncrementalSVM

    return IncrementalSVM(spec.qkernel(), C=spec.C, cache_bytes=ctx.cache_mb << 20)


def inc_rows(model: Any, first_row: int) -> np.ndarray:
    """The data rows of the model's variables (the order of ``model.ids`` / ``model.alpha``), when
    the model holds consecutive rows first_row, first_row + 1, ... learned in that order: ids grow
    with learning, so the rank of an id is its row's offset."""
    ids = np.asarray(model.ids)
    return first_row + np.argsort(np.argsort(ids, kind="stable"), kind="stable")


def inc_judge(model: Any, Xd: np.ndarray, y: np.ndarray, first_row: int, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """The model's α judged by our own problem over its rows, against a tight batch solve of it."""
    rows = inc_rows(model, first_row)
    if not np.array_equal(np.asarray(model.y), y[rows]):
        return {"error": "the model's labels do not match the rows it should hold"}
    qp = eval_qp(Xd[rows], y[rows], spec)
    jd = judge(qp, np.asarray(model.alpha, dtype=np.float64))
    memo = (spec.key, int(rows.min()), int(rows.max()), rows.size)   # the same rows in every stream: solve once
    if memo not in ctx.batch_memo:
        xr = run_ours(Xd[rows], y[rows], spec, "decomp:512", 1, ctx, tol=REF_TOL)["x"]
        ctx.batch_memo[memo] = judge(qp, xr)["objective"]
    f_b = ctx.batch_memo[memo]
    return {"objective": jd["objective"], "kkt_gap": jd["kkt_gap"], "batch": f_b,
            "rel_diff": (jd["objective"] - f_b) / abs(f_b)}


def bench_incremental(src: Source, sz: Sizes, ctx: Ctx) -> dict[str, Any]:
    spec = Spec("incremental", sz.inc_base, "rbf", 0.05, 1.0)
    n0, m = sz.inc_base, sz.inc_add
    Xs, Xd, y = src.take(n0 + m)
    kind = ctx.anchor_input
    sample = sorted({int(round(v)) for v in np.linspace(0, m - 1, sz.inc_sample)})
    log(f"[incremental] base {n0} rows, {m} additions, retrains timed for additions {sample}")
    inc_ok, inc_why = available("incremental")

    # (b) our warm-started decomposition: the previous model solved (untimed), then the grown
    # problem resumed from it; (a) LIBSVM retrained on the grown set at tol 1e-3
    prev: dict[int, Any] = {}
    for k in sample:
        r = run_ours(arrays(Xs[:n0 + k], Xd[:n0 + k], kind), y[:n0 + k], spec, "decomp:512", max(ctx.threads), ctx,
                     keep_result=True)
        try:    # only the point is needed (decomposition has no resume state): drop the rest
            import attrs

            prev[k] = attrs.evolve(r["result"], state=None, stats={})
        except Exception:  # noqa: BLE001
            prev[k] = r["result"]
    # (c) INCAS's incremental mode: solve(grown, INCAS(), resume=previous INCAS result) keeps its
    # factor (the previous state is not modified, so the same one serves every repeat)
    prev_incas: dict[int, Any] = {}
    if available("incas")[0]:
        for k in sample:
            try:
                r = run_ours(arrays(Xs[:n0 + k], Xd[:n0 + k], kind), y[:n0 + k], spec, "incas", max(ctx.threads), ctx,
                             keep_result=True)
                prev_incas[k] = r["result"]
            except Exception as e:  # noqa: BLE001 - under development: report, go on
                log(f"[incremental] INCAS on the base set failed: {e}")
                prev_incas.clear()
                break
    fns: dict[str, Callable[[], dict[str, Any]]] = {}
    for k in sample:
        Xg, yg = arrays(Xs[:n0 + k + 1], Xd[:n0 + k + 1], kind), y[:n0 + k + 1]
        fns[f"libsvm tol 1e-3 #{k}"] = partial(run_anchor, Xg, yg, spec, ctx, tol=1e-3)
        for t in ctx.threads:
            fns[f"warm decomp #{k}@{t}"] = partial(run_ours, Xg, yg, spec, "decomp:512", t, ctx, resume=prev[k])
            if k in prev_incas:
                fns[f"INCAS resume #{k}@{t}"] = partial(run_ours, Xg, yg, spec, "incas", t, ctx, resume=prev_incas[k])
    base_model: Any = None
    if inc_ok:
        base_model = inc_new(spec, ctx)
        t0 = time.perf_counter()
        base_model.fit(arrays(Xs[:n0], Xd[:n0], kind), y[:n0])
        log(f"[incremental] base model fitted in {time.perf_counter() - t0:.1f} s (untimed)")
        for t in ctx.threads:
            fns[f"learn x{m}@{t}"] = partial(_learn_stream, base_model, Xs, Xd, y, n0, m, kind, t, spec, ctx)
    runs = interleave(ctx, fns, "incremental")

    def med_of(prefix: str) -> tuple[float, list[float]]:
        ts = [r["seconds"] for k, rs in runs.items() if k.startswith(prefix) for r in rs]
        return (median(ts) if ts else float("nan")), ts

    lib_med, lib_ts = med_of("libsvm")
    out: dict[str, Any] = {"spec": spec.__dict__ | {"key": spec.key}, "base": n0, "additions": m, "sample": sample,
                           "anchor_input": kind, "time": now_iso(), "unavailable": {} if inc_ok else
                           {"incremental": inc_why},
                           "libsvm_retrain": {"seconds": lib_med, "min": min(lib_ts), "max": max(lib_ts),
                                              "runs": len(lib_ts), "tol": 1e-3,
                                              "loaded": any(r["load"]["loaded"] for k, rs in runs.items()
                                                            if k.startswith("libsvm") for r in rs),
                                              "loads": [r["load"] for k, rs in runs.items() if k.startswith("libsvm")
                                                        for r in rs]}}
    def warm_of(prefix: str) -> dict[str, Any]:
        w: dict[str, Any] = {}
        for t in ctx.threads:
            rs = [r for k, v in runs.items() if k.startswith(prefix) and k.endswith(f"@{t}") for r in v]
            ts = [r["seconds"] for r in rs]
            if ts:
                w[str(t)] = {"seconds": median(ts), "min": min(ts), "max": max(ts), "runs": len(ts),
                             "statuses": sorted({r["status"] for r in rs}),
                             "loaded": any(r["load"]["loaded"] for r in rs), "loads": [r["load"] for r in rs]}
        return w

    warm = warm_of("warm decomp")
    out["warm_decomposition"] = warm
    out["incas_resume"] = warm_of("INCAS resume")
    if inc_ok:
        learn: dict[str, Any] = {}
        for t in ctx.threads:
            rs = runs[f"learn x{m}@{t}"]
            per = [r["per_add_median"] for r in rs]
            learn[str(t)] = {"per_add_median": median(per), "min": min(per), "max": max(per), "streams": len(rs),
                             "loaded": any(r["load"]["loaded"] for r in rs), "loads": [r["load"] for r in rs],
                             "ratio_libsvm": lib_med / median(per),
                             "ratio_warm_decomposition": warm[str(t)]["seconds"] / median(per)}
            if str(t) in out["incas_resume"]:
                learn[str(t)]["ratio_incas_resume"] = out["incas_resume"][str(t)]["seconds"] / median(per)
            learn[str(t)]["bar"] = bool(learn[str(t)]["ratio_libsvm"] >= BAR["incremental"])
        last = runs[f"learn x{m}@{ctx.threads[0]}"][-1]
        out["learn"] = learn
        c = last.get("check") or {}
        out["check"] = {"objective_incremental": c.get("objective"), "kkt_gap_incremental": c.get("kkt_gap"),
                        "objective_batch": c.get("batch"), "batch": f"decomposition q=512 at tol {REF_TOL:g}",
                        "rel_diff": c.get("rel_diff"), "error": c.get("error")}
    return out


def _learn_stream(model: Any, Xs: Any, Xd: np.ndarray, y: np.ndarray, n0: int, m: int, kind: str,
                  threads: int, spec: Spec, ctx: Ctx) -> dict[str, Any]:
    """The solved base model learns the m next rows one at a time, each learn timed; then (untimed)
    it is checked against a batch solve and the m rows are unlearned again, back to the base model
    for the next stream (a deep copy would copy the model's preallocated kernel cache)."""
    Xin = arrays(Xs, Xd, kind)
    per: list[float] = []
    ids: list[int] = []
    with thread_limit(threads):
        t_all = time.perf_counter()
        for i in range(n0, n0 + m):
            xi = Xin[i:i + 1] if sp.issparse(Xin) else Xin[i]
            t0 = time.perf_counter()
            ids.append(model.learn(xi, float(y[i])))
            per.append(time.perf_counter() - t0)
        total = time.perf_counter() - t_all
        check = inc_judge(model, Xd, y, 0, spec, ctx)
        for pid in reversed(ids):
            model.unlearn(pid)
    return {"seconds": median(per), "per_add_median": median(per), "per_add": per, "total": total,
            "status": "learned", "check": check}


def brute_force_loo(Xin: Any, y: np.ndarray, spec: Spec, ctx: Ctx, tol: float = 1e-3) -> dict[str, Any]:
    """LOO as a LIBSVM user does it: fit once; a non-SV's LOO prediction is the full model's; each
    SV is predicted by a model retrained without it. Runs in a child (timeout ``anchor_timeout``)."""

    def work() -> dict[str, Any]:
        from sklearn.svm import SVC

        t0 = time.perf_counter()
        full = SVC(**spec.svc_params(), tol=tol, cache_size=ctx.cache_mb, shrinking=True).fit(Xin, y)
        f = np.asarray(full.decision_function(Xin), dtype=np.float64)
        sv = np.asarray(full.support_)
        keep = np.ones(len(y), dtype=bool)
        for i in sv:
            keep[i] = False
            clf = SVC(**spec.svc_params(), tol=tol, cache_size=ctx.cache_mb, shrinking=True).fit(Xin[keep], y[keep])
            f[i] = float(clf.decision_function(Xin[i:i + 1])[0])
            keep[i] = True
        seconds = time.perf_counter() - t0
        errors = int(np.count_nonzero(np.where(f > 0, 1.0, -1.0) != y))
        return {"seconds": seconds, "errors": errors, "refits": int(sv.size), "status": "done", "decision": f}

    out = in_child(work, ctx.anchor_timeout + 30.0)
    if out.get("timeout") or out.get("seconds", 0.0) > ctx.anchor_timeout:
        return {"seconds": float("inf"), "status": f"> {ctx.anchor_timeout:g} s (stopped)", "timeout": True}
    if "error" in out:
        return {"seconds": float("nan"), "status": "error: " + out["error"]}
    return out


def _loo_errors(res: Any, y: np.ndarray) -> tuple[int, np.ndarray | None]:
    """Error count from whatever leave_one_out() returns: a count, predictions, decision values,
    or an object with ``errors`` / ``decision`` / ``predictions``."""
    if isinstance(res, (int, np.integer)):
        return int(res), None
    for name in ("errors", "n_errors"):
        v = getattr(res, name, None)
        if isinstance(v, (int, np.integer)):
            dec = getattr(res, "decision", None)
            return int(v), None if dec is None else np.asarray(dec, dtype=np.float64)
    for name in ("decision", "decision_values", "values"):
        v = getattr(res, name, None)
        if v is not None:
            d = np.asarray(v, dtype=np.float64)
            return int(np.count_nonzero(np.where(d > 0, 1.0, -1.0) != y)), d
    arr = np.asarray(res, dtype=np.float64)
    if set(np.unique(arr)) <= {-1.0, 1.0}:
        return int(np.count_nonzero(arr != y)), None
    return int(np.count_nonzero(np.where(arr > 0, 1.0, -1.0) != y)), arr


def run_our_loo(Xin: Any, y: np.ndarray, spec: Spec, ctx: Ctx, threads: int) -> dict[str, Any]:
    with thread_limit(threads):
        t0 = time.perf_counter()
        model = inc_new(spec, ctx)
        model.fit(Xin, y)
        res = model.leave_one_out()
        seconds = time.perf_counter() - t0
    errors, dec = _loo_errors(res, y)
    flags = None
    if getattr(res, "error", None) is not None and getattr(res, "ids", None) is not None:
        flags = np.zeros(len(y), dtype=bool)     # by data row: fit gives ids in row order
        flags[np.argsort(np.argsort(np.asarray(res.ids), kind="stable"), kind="stable")] = np.asarray(res.error)
    return {"seconds": seconds, "errors": errors, "status": "done", "decision": dec, "error_flags": flags,
            "loo_only_seconds": float(getattr(res, "seconds", float("nan")))}


def bench_loo(src: Source, sz: Sizes, ctx: Ctx) -> dict[str, Any]:
    spec = Spec("loo", sz.loo, "rbf", 0.05, 1.0, tol=1e-3)
    Xs, Xd, y = src.take(sz.loo)
    Xin = arrays(Xs, Xd, ctx.anchor_input)
    ok, why = available("incremental")
    fns: dict[str, Callable[[], dict[str, Any]]] = {"libsvm brute force": lambda: brute_force_loo(Xin, y, spec, ctx)}
    if ok:
        for t in ctx.threads:
            fns[f"exact LOO@{t}"] = partial(run_our_loo, Xin, y, spec, ctx, t)
    runs = interleave(ctx, fns, "loo")
    br = runs["libsvm brute force"]
    bs = summarize_runs(br)
    bs.pop("x", None)
    bs["errors"] = br[0].get("errors")
    bs["refits"] = br[0].get("refits")
    out: dict[str, Any] = {"spec": spec.__dict__ | {"key": spec.key}, "anchor_input": ctx.anchor_input,
                           "brute_force": bs, "time": now_iso(), "unavailable": {} if ok else {"incremental": why}}
    if ok:
        ours: dict[str, Any] = {}
        for t in ctx.threads:
            rs = runs[f"exact LOO@{t}"]
            s = summarize_runs(rs)
            s.pop("x", None)
            s.update(ratio_stats(rs, br) if len(br) == len(rs) else ratio_stats(rs, br))
            s["errors"] = rs[0]["errors"]
            fo, db = rs[0].get("error_flags"), br[0].get("decision")
            if fo is not None and db is not None:
                s["disagree"] = int(np.count_nonzero(fo != (np.where(np.asarray(db) > 0, 1.0, -1.0) != y)))
            s["loo_only_seconds"] = median([r.get("loo_only_seconds", float("nan")) for r in rs])
            s["speedup"] = 1.0 / s["ratio"] if s.get("ratio") else None
            s["bar"] = bool(s["speedup"] is not None and s["speedup"] >= BAR["loo"] and s["errors"] == bs["errors"])
            ours[str(t)] = s
        out["ours"] = ours
    return out


def _window_stream(src: Source, sz: Sizes, spec: Spec, ctx: Ctx, threads: int) -> dict[str, Any]:
    """Fit the first window (untimed), then ``IncrementalSVM.window`` over the rest of the stream
    (learn the next row, unlearn the oldest). Every ``win_check``-th model is checked against a
    batch solve inside the helper's callback; that time is measured and taken out of the helper's."""
    Xs, Xd, y = src.take(sz.win_total)
    Xin = arrays(Xs, Xd, ctx.anchor_input)
    model = inc_new(spec, ctx)
    checks: list[dict[str, Any]] = []
    spent = [0.0]

    def callback(mdl: Any, k: int) -> None:
        if (k + 1) % sz.win_check == 0:
            t0 = time.perf_counter()
            c = inc_judge(mdl, Xd, y, k + 1, spec, ctx)
            c["step"] = k + 1
            checks.append(c)
            spent[0] += time.perf_counter() - t0

    with thread_limit(threads):
        model.fit(Xin[:sz.win], y[:sz.win])
        rep = model.window(Xin[sz.win:], y[sz.win:], sz.win, callback=callback)
    seconds = rep.seconds - spent[0]
    return {"seconds": seconds, "rows_per_s": rep.learned / seconds, "steps": rep.learned, "checks": checks,
            "online_errors": rep.online_errors, "helper_seconds": rep.seconds, "check_seconds": spent[0],
            "status": f"{rep.learned} learned, {rep.unlearned} unlearned"}


def bench_window(src: Source, sz: Sizes, ctx: Ctx) -> dict[str, Any]:
    spec = Spec("window", sz.win, "rbf", 0.05, 1.0)
    Xs, Xd, y = src.take(sz.win_total)
    kind = ctx.anchor_input
    ok, why = available("incremental")
    cps = list(range(sz.win + sz.win_check - 1, sz.win_total, sz.win_check))   # last row of checked windows
    fns: dict[str, Callable[[], dict[str, Any]]] = {}
    # the anchor: LIBSVM retrained (tol 1e-3) on each checked window; its throughput is 1 row per fit
    fns["libsvm retrain"] = lambda: _anchor_windows(Xs, Xd, y, cps, sz, spec, ctx, kind)
    if ok:
        for t in ctx.threads:
            fns[f"window@{t}"] = partial(_window_stream, src, sz, spec, ctx, t)
    runs = interleave(ctx, fns, "window")
    lib = runs["libsvm retrain"]
    per_fit = median([r["seconds"] for r in lib])
    out: dict[str, Any] = {"spec": spec.__dict__ | {"key": spec.key, "total": sz.win_total, "check": sz.win_check},
                           "anchor_input": kind, "time": now_iso(), "unavailable": {} if ok else {"incremental": why},
                           "libsvm": {"per_fit_median": per_fit, "rows_per_s": 1.0 / per_fit, "fits": len(cps),
                                      "runs": len(lib), "loaded": any(r["load"]["loaded"] for r in lib),
                                      "loads": [r["load"] for r in lib], "tol": 1e-3}}
    if ok:
        ours: dict[str, Any] = {}
        for t in ctx.threads:
            rs = runs[f"window@{t}"]
            rps = [r["rows_per_s"] for r in rs]
            diffs = [abs(c["rel_diff"]) if "rel_diff" in c else math.inf for r in rs for c in r["checks"]]
            ours[str(t)] = {"rows_per_s": median(rps), "min": min(rps), "max": max(rps), "runs": len(rs),
                            "online_errors": rs[0].get("online_errors"),
                            "ratio_libsvm": median(rps) / (1.0 / per_fit),
                            "checks": rs[0]["checks"], "max_abs_rel_diff": max(diffs) if diffs else None,
                            "loaded": any(r["load"]["loaded"] for r in rs), "loads": [r["load"] for r in rs]}
        out["ours"] = ours
    return out


def _anchor_windows(Xs: Any, Xd: np.ndarray, y: np.ndarray, cps: list[int], sz: Sizes, spec: Spec, ctx: Ctx,
                    kind: str) -> dict[str, Any]:
    ts: list[float] = []
    for i in cps:
        lo = i + 1 - sz.win
        r = run_anchor(arrays(Xs[lo:i + 1], Xd[lo:i + 1], kind), y[lo:i + 1], spec, ctx, tol=1e-3)
        ts.append(r["seconds"])
    return {"seconds": median(ts), "fits": ts, "status": f"{len(ts)} fits"}
