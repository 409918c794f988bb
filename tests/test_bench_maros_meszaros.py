"""``python -m benchmarks.maros_meszaros`` on HS21, HS35 and QPTEST, one run each: the loader, the
residuals against a hand-computed case and against qpsolvers' ``Solution``, the success rule
(a known-good solution counts, a perturbed one does not), the shifted geometric mean, false
claims, and the page."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.studies import maros_meszaros as mm

pytestmark = pytest.mark.data

SMALL = ("HS21", "HS35", "QPTEST")


def _hand_problem() -> mm.MMProblem:
    """x1 + x2 = 1 (l = u), x1 − x2 ≤ 2 (l = −inf), 0 ≤ x1, x2 ≤ 0.5."""
    inf = math.inf
    return mm.MMProblem("hand", np.diag([2.0, 4.0]), np.array([1.0, -1.0]), np.array([[1.0, 1.0], [1.0, -1.0]]),
                        np.array([1.0, -inf]), np.array([1.0, 2.0]), np.array([0.0, -inf]), np.array([inf, 0.5]))


def test_loader_splits_rows_into_equalities_inequalities_and_bounds() -> None:
    p = mm.load_problem("HS21")
    # 10 x1 − x2 ≥ 10 becomes −10 x1 + x2 ≤ −10; the identity rows are the bounds
    assert p.A is None and p.G is not None and p.h is not None
    np.testing.assert_array_equal(p.G, [[-10.0, 1.0]])
    np.testing.assert_array_equal(p.h, [-10.0])
    np.testing.assert_array_equal(p.lb, [2.0, -50.0])
    np.testing.assert_array_equal(p.ub, [50.0, 50.0])
    assert p.objective(np.array([2.0, 0.0])) == pytest.approx(-99.96, abs=1e-12)   # HS21's known optimum
    q = mm.load_problem("QPTEST")
    # 2 x1 + x2 ≥ 2 (no upper side) and −x1 + 2 x2 ≤ 6 (no lower side): one G row each
    assert q.G is not None and q.h is not None
    np.testing.assert_array_equal(q.G, [[-1.0, 2.0], [-2.0, -1.0]])
    np.testing.assert_array_equal(q.h, [6.0, -2.0])
    assert q.ub[1] == math.inf and q.lb[0] == 0.0
    g = mm.load_problem("GENHS28")
    assert g.m_eq == 8 and g.G is None and g.C.shape == (8, 10)
    assert len(mm.problem_names()) == 31


def test_residuals_match_a_hand_computed_case() -> None:
    p = _hand_problem()
    assert p.A is not None and p.G is not None
    np.testing.assert_array_equal(p.G, [[1.0, -1.0]])           # the −inf side gives no row
    x, y, z, zb = np.array([1.5, -0.25]), np.array([0.5]), np.array([0.25]), np.array([-0.1, 0.2])
    # primal: |x1 + x2 − 1| = 0.25; x1 − x2 − 2 = −0.25 and the bounds hold
    # dual:   Px + q = (4, −2); + Aᵀy (0.5, 0.5) + Gᵀz (0.25, −0.25) + z_box (−0.1, 0.2) = (4.65, −1.55)
    # gap:    xᵀPx 4.75 + qᵀx 1.75 + bᵀy 0.5 + hᵀz 0.5 + lb₁·min(−0.1, 0) 0 + ub₂·max(0.2, 0) 0.1 = 7.6
    want = {"primal": 0.25, "dual": 4.65, "gap": 7.6}
    # qpsolvers' definitions too where the bench extra is installed (the test extra has no qpsolvers)
    library = importlib.util.find_spec("qpsolvers") is not None
    for fn in (mm.residuals, mm.library_residuals) if library else (mm.residuals,):
        got = fn(p, x, y, z, zb)
        assert got == pytest.approx(want, rel=1e-14), fn.__name__
    assert mm.residuals(p, x, None, z, zb)["dual"] == math.inf     # rows without multipliers: no dual residual
    assert mm.residuals(p, np.array([np.nan, 0.0]), y, z, zb) == {"primal": math.inf, "dual": math.inf, "gap": math.inf}
    if library:
        assert mm.library_residuals(p, np.array([np.nan, 0.0]), y, z, zb)["primal"] == math.inf


def _piqp_high(p: mm.MMProblem) -> dict[str, Any]:
    pytest.importorskip("qpsolvers")
    pytest.importorskip("piqp")
    out = mm.anchor_runner(p, "piqp", "high", None)()
    assert out["found"], out["status"]
    return out


@pytest.mark.parametrize("name", SMALL)
def test_a_known_good_solution_succeeds_and_a_perturbed_one_does_not(name: str) -> None:
    p = mm.load_problem(name)
    s = _piqp_high(p)
    mult = (s["y"], s["z"], s["z_box"])
    res = mm.judge(p, s["x"], *mult)
    assert mm.success(True, res, "mid") and mm.success(True, res, "high")
    assert not mm.success(False, res, "mid")                     # not reported solved: not a success
    # our code and qpsolvers' agree on the real problem
    own = mm.residuals(p, s["x"], *mult)
    for k in ("primal", "dual", "gap"):
        assert own[k] == pytest.approx(res[k], rel=1e-9, abs=1e-15)
    moved = mm.judge(p, s["x"] + 1e-3, *mult)
    assert not mm.success(True, moved, "mid") and not mm.success(True, moved, "high")
    assert max(moved.values()) > 1e-6


def test_shifted_geometric_mean_and_the_time_limit_rule() -> None:
    assert mm.shifted_geometric_mean([0.0, 0.0]) == pytest.approx(0.0, abs=1e-12)
    assert mm.shifted_geometric_mean([3.0]) == pytest.approx(3.0)
    assert mm.shifted_geometric_mean([10.0, 0.0]) == pytest.approx(math.sqrt(200.0) - 10.0)
    p = _hand_problem()
    x, y, z, zb = np.array([0.5, 0.5]), np.array([0.0]), np.array([0.0]), np.array([0.0, 0.0])
    runs = [{"seconds": 0.5, "found": True, "status": "converged", "x": x, "y": y, "z": z, "z_box": zb},
            {"seconds": 2.0, "found": True, "status": "converged", "x": x, "y": y, "z": z, "z_box": zb}]
    assert mm.judge_runs(p, runs, ["mid"], None)["found"]
    late = mm.judge_runs(p, runs, ["mid"], 1.0)                  # the second run ran past the limit
    assert not late["found"] and not late["success"]["mid"] and late["seconds"] == pytest.approx(1.25)


def test_anchor_settings_are_qpbenchmarks() -> None:
    assert mm.anchor_settings("piqp", "high") == {"verbose": False, "eps_abs": 1e-9, "eps_rel": 0.0,
                                                  "eps_duality_gap_abs": 1e-9, "eps_duality_gap_rel": 0.0,
                                                  "check_duality_gap": True}
    assert mm.anchor_settings("osqp", "mid", 20.0) == {"verbose": False, "eps_abs": 1e-6, "eps_rel": 0.0,
                                                       "time_limit": 20.0}
    assert mm.anchor_settings("clarabel", "mid")["tol_feas"] == 1e-6
    assert "time_limit" not in mm.anchor_settings("proxqp", "mid", 20.0)


def test_false_claims_are_read_from_statuses_and_messages() -> None:
    assert mm.false_claim("primal_infeasible") == "infeasible"
    assert mm.false_claim("unbounded") == "unbounded" and mm.false_claim("nonconvex") == "nonconvex"
    assert mm.false_claim("infeasible") is None                  # qpcore: the point is infeasible, not the problem
    assert mm.false_claim(None, "ProblemError: A x = b: no point of the box meets the rows") == "infeasible"
    assert mm.false_claim(None, "ProblemError: Q is not PSD: smallest eigenvalue -1.3e-05") == "nonconvex"
    assert mm.false_claim("max_iter") is None
    assert mm.false_claim(None, "LinAlgError: SVD did not converge") is None


def _run(tmp: Path, *extra: str) -> tuple[list[dict[str, Any]], str]:
    pytest.importorskip("qpsolvers")
    rc = mm.main(["--quick", "--threads", "1", "--out", str(tmp / "mm.jsonl"), "--docs", str(tmp), *extra])
    assert rc == 0
    lines = [json.loads(x) for x in (tmp / "mm.jsonl").read_text().splitlines()]
    return [d for d in lines if "problem" in d], (tmp / "maros_meszaros.md").read_text()


def _anchors() -> str:
    qpsolvers = pytest.importorskip("qpsolvers")
    return ",".join(s for s in mm.ANCHORS if s in qpsolvers.available_solvers)


def test_quick_run_with_the_clarabel_standin(tmp_path: Path) -> None:
    anchors = _anchors()
    if "clarabel" not in anchors:
        pytest.skip("the stand-in needs Clarabel")
    recs, page = _run(tmp_path, "--ours", "clarabel-standin", "--solvers", "ours," + anchors)
    assert [r["problem"] for r in recs] == list(SMALL)
    for r in recs:
        o = r["solvers"]["ours"]
        assert o["status"] == "converged" and o["found"] and o["false_claim"] is None
        assert o["success"] == {"mid": True, "high": True}
        assert max(o["residuals"].values()) < 1e-9
        for k, s in r["solvers"].items():
            assert s["runs"] >= 1 and s["seconds"] > 0
            assert all("load1" in ld and "loaded" in ld for ld in s["loads"])
            if k != "ours":
                assert list(s["success"]) == [s["level"]]
        if "piqp" in anchors:
            assert r["anchor"] == "piqp@high" and {"piqp@mid", "piqp@high"} <= set(r["solvers"])
        assert f"| {r['problem']} |" in page
    assert "3 of 3 solved (bar ≥ 30 of 31)" in page and "partial: 3 of 31" in page
    summ = mm.summarize(recs, 1)
    assert summ["rows"]["ours"]["solved"] == {"mid": 3, "high": 3}
    if "piqp" in anchors:
        assert set(summ["ratio"]) == {"mid", "high"} and all(v > 0 for v in summ["ratio"].values())
    for s in mm.ANCHORS:
        assert f"**{s}**" in page


def test_a_false_claim_is_counted_and_flagged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qpcore.core.validate import ProblemError

    def liar(*args: Any, **kwargs: Any) -> Any:
        raise ProblemError("A x = b: no point of the box meets the rows")

    monkeypatch.setitem(mm.OURS, "liar", liar)
    recs, page = _run(tmp_path, "--ours", "liar", "--solvers", "ours", "--problems", "HS21")
    o = recs[0]["solvers"]["ours"]
    assert o["false_claim"] == "infeasible" and not o["found"] and o["success"] == {"mid": False, "high": False}
    assert "FALSE CLAIM" in page
    assert "non-convexity: 1 (HS21: infeasible) → **missed**" in page


def _fake(problem: str, ours_ok: tuple[bool, bool], ours_s: float, piqp_s: float) -> dict[str, Any]:
    def solver(name: str, level: str | None, secs: float, ok: dict[str, bool]) -> dict[str, Any]:
        return {"solver": name, "level": level, "seconds": secs, "found": any(ok.values()), "success": ok,
                "false_claim": None, "loaded": False}

    return {"problem": problem, "threads": 1, "time_limit": 100.0, "solvers": {
        "ours": solver("ours", None, ours_s, {"mid": ours_ok[0], "high": ours_ok[1]}),
        "piqp@mid": solver("piqp", "mid", piqp_s, {"mid": True}),
        "piqp@high": solver("piqp", "high", piqp_s, {"high": True})}}


def test_bars_on_the_whole_set() -> None:
    # 31 problems: ours fails mid on one and high on three more; a failure counts at the time limit
    oks = [(False, False)] + [(True, False)] * 3 + [(True, True)] * 27
    recs = [_fake(f"P{i}", ok, 0.2, 0.1) for i, ok in enumerate(oks)]
    summ = mm.summarize(recs, 1)
    assert summ["rows"]["ours"]["solved"] == {"mid": 30, "high": 27}
    times = [100.0] + [0.2] * 30                                  # the unsolved run at the limit
    want = mm.shifted_geometric_mean(times) / mm.shifted_geometric_mean([0.1] * 31)
    assert summ["ratio"]["mid"] == pytest.approx(want)
    lines = mm.bars(summ, 31)
    assert lines[0].startswith("mid (1e-06): 30 of 31 solved") and lines[0].endswith("→ met")
    assert lines[1].startswith("high (1e-09): 27 of 31 solved") and lines[1].endswith("→ **not met**")
    assert lines[2].endswith("→ met")
    assert ("→ met" if want <= 10 else "→ **not met**") in lines[3]
