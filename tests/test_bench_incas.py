"""The plumbing of ``python -m benchmarks.incas`` on tiny synthetic data (no data folder needed).

Checks that the page's ratios and objective gaps are the ones computed from the runs recorded in
the JSON store (never fixed numbers), that a stopped child is reported as such, and the load rule.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn.svm")
pytest.importorskip("threadpoolctl")

from benchmarks.harness import fmt_exp, fmt_ratio, in_child  # noqa: E402
from benchmarks.studies import incas  # noqa: E402

ROWS = "hard_small,weak,incremental,loo,window"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("incas")
    rc = incas.main(["--tiny", "--data", "synthetic", "--rows", ROWS, "--threads", "1", "--repeat", "1",
                     "--anchor-input", "dense", "--out-dir", str(out)])
    assert rc == 0
    store = json.loads((out / "incas.json").read_text())
    page = (out / "incas.md").read_text()
    return store, page


def _row_lines(page: str, *cells: str) -> list[str]:
    return [ln for ln in page.splitlines() if ln.startswith("|") and all(f"| {c} |" in ln for c in cells)]


def test_batch_rows_ratios_and_gaps_come_from_the_runs(tiny_run: tuple[dict[str, Any], str]) -> None:
    store, page = tiny_run
    checked = 0
    for row in ("hard_small", "weak"):
        for prob in store[row]["problems"]:
            res = prob["results"]
            anchor = res["libsvm"]
            assert anchor["runs"] >= 1 and anchor["seconds"] > 0
            f_ref = prob["f_ref"]
            objs = [r["objective"] for r in res.values() if r.get("objective") is not None]
            assert objs and f_ref <= min(objs)          # the reference is the lowest seen (or lower)
            for key, r in res.items():
                if r.get("objective") is not None:
                    assert r["rel_obj"] == pytest.approx((r["objective"] - f_ref) / abs(f_ref), abs=1e-15)
                    assert r["rel_obj"] >= 0
                if key == "libsvm" or r.get("ratio") is None:
                    continue
                assert r["ratio"] == pytest.approx(r["seconds"] / anchor["seconds"], rel=1e-12)
                assert r["threads"] == 1 and r["loads"][0]["load1"] >= 0
                lines = _row_lines(page, prob["spec"]["key"], incas.solver_label(r["solver"]), "1")
                assert lines, (prob["spec"]["key"], key)
                assert any(fmt_ratio(r["ratio"]) in ln and fmt_exp(r["rel_obj"]) in ln
                           and fmt_exp(anchor["rel_obj"]) in ln for ln in lines)
                checked += 1
    assert checked >= 4      # SMO and decomposition on every problem at least
    assert "Bar (issue 12)" in page and "loaded" in page.lower()


def test_incremental_loo_window_rows(tiny_run: tuple[dict[str, Any], str]) -> None:
    store, page = tiny_run
    inc = store["incremental"]
    lib = inc["libsvm_retrain"]["seconds"]
    assert lib > 0 and inc["warm_decomposition"]["1"]["seconds"] > 0
    loo = store["loo"]
    assert loo["brute_force"]["errors"] is not None and f"| {loo['brute_force']['errors']} |" in page
    win = store["window"]
    assert win["libsvm"]["rows_per_s"] == pytest.approx(1.0 / win["libsvm"]["per_fit_median"])
    if "learn" in inc:                                   # the incremental SVM is importable
        s = inc["learn"]["1"]
        assert s["ratio_libsvm"] == pytest.approx(lib / s["per_add_median"])
        assert f"LIBSVM {fmt_ratio(s['ratio_libsvm'])}×" in page
        assert abs(inc["check"]["rel_diff"]) < 1e-6
        o = loo["ours"]["1"]
        assert o["speedup"] == pytest.approx(loo["brute_force"]["seconds"] / o["seconds"])
        assert f"{fmt_ratio(o['speedup'])}×" in page
        w = win["ours"]["1"]
        assert w["ratio_libsvm"] == pytest.approx(w["rows_per_s"] * win["libsvm"]["per_fit_median"])
        assert w["checks"] and all(abs(c["rel_diff"]) < 1e-6 for c in w["checks"])
    else:
        assert "not available" in page


def test_stopped_child_and_errors_are_reported() -> None:
    t0 = time.perf_counter()
    def slow() -> dict[str, Any]:
        time.sleep(30)
        return {}

    out = in_child(slow, timeout=0.3)
    assert out.get("timeout") is True and time.perf_counter() - t0 < 5
    assert in_child(lambda: {"v": 1}, timeout=10) == {"v": 1}
    assert "ZeroDivisionError" in in_child(lambda: {"v": 1 / 0}, timeout=10)["error"]


def test_load_rule() -> None:
    from benchmarks import harness

    meter = harness.LoadMeter()
    t_end = time.perf_counter() + 0.2
    while time.perf_counter() < t_end:    # burn a little CPU: our own share grows above 0
        pass
    rd = meter.reading()
    assert meter.own() > 0 and not math.isnan(rd["load1"])
    assert rd["loaded"] == (rd["load1"] > harness.LOAD_MARGIN + rd["own"])


def test_quick_sizes_fit_the_data() -> None:
    for sz in (incas.QUICK, incas.FULL):
        assert sz.inc_base + sz.inc_add <= 32561 and sz.win_total <= 32561 and sz.hard_large <= 32561
    assert Path(incas.__file__).name == "incas.py"


def test_stopped_anchor_gives_a_ratio_bound(tmp_path: Path) -> None:
    # every LIBSVM fit "exceeds" a 1e-9 s limit: reported stopped, our ratio a bound ours / limit
    rc = incas.main(["--tiny", "--data", "synthetic", "--rows", "weak", "--threads", "1", "--solvers", "decomp:512",
                     "--anchor-timeout", "1e-9", "--anchor-input", "dense", "--out-dir", str(tmp_path)])
    assert rc == 0
    store = json.loads((tmp_path / "incas.json").read_text())
    page = (tmp_path / "incas.md").read_text()
    for prob in store["weak"]["problems"]:
        a = prob["results"]["libsvm"]
        assert a["status"].startswith("> 1e-09 s") and a["objective"] is None
        r = prob["results"]["decomp:512@1"]
        assert r["ratio"] is None and r["ratio_below"] == pytest.approx(r["seconds"] / 1e-9)
        assert f"< {fmt_ratio(r['ratio_below'])}" in page
