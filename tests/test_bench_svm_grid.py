"""The plumbing of ``python -m benchmarks.svm_grid`` in quick mode on 300-row subsets (seconds).

Runs the quick grid (2×2 cells) on the first 300 rows of adult and ijcnn1 (a generated stand-in
when the shared data are absent) and checks the JSON store: every cell with LIBSVM and ours,
ratios and rel_obj computed from the recorded runs, rel_obj small, ``auto``'s choice recorded,
the per-row sums and flags, the reference cache, and the page. Nothing is timed for a claim.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn.svm")
pytest.importorskip("threadpoolctl")

from benchmarks.studies import svm_grid  # noqa: E402
from benchmarks.harness import fmt_ratio  # noqa: E402

N = 300
ROWS = ("adult3k", "ijcnn1_3k")


def _data_kind() -> str:
    try:
        from qpcore_formulations.data.files import data_dir

        d = data_dir()
    except FileNotFoundError:
        return "synthetic"
    return "real" if all((d / f"{s}.trn.bz2").is_file() for s in ("adult", "ijcnn1")) else "synthetic"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    out = tmp_path_factory.mktemp("svm_grid")
    argv = ["--quick", "--n", str(N), "--data", _data_kind(), "--threads", "1", "--out-dir", str(out),
            "--ref-dir", str(out)]
    assert svm_grid.main(argv) == 0
    return json.loads((out / "svm_grid.json").read_text()), (out / "svm_grid.md").read_text(), out


def test_parse_cells() -> None:
    assert len(svm_grid.parse_cells(None)) == 15
    assert svm_grid.parse_cells("C=1000,g=1") == [(1000.0, 1.0)]
    assert svm_grid.parse_cells("C=100|1000") == [(C, g) for C in (100.0, 1000.0) for g in svm_grid.GAMMA_FACTORS]
    assert svm_grid.parse_cells("g=10; C=1,g=1") == sorted({(C, 10.0) for C in svm_grid.C_GRID} | {(1.0, 1.0)})
    assert svm_grid.parse_cells(svm_grid.QUICK_CELLS) == [(1.0, 1.0), (1.0, 10.0), (1000.0, 1.0), (1000.0, 10.0)]
    with pytest.raises(ValueError):
        svm_grid.parse_cells("C=1,gamma=2")


def test_every_cell_has_both_sides(quick_run: tuple[dict[str, Any], str, Path]) -> None:
    store, page, _ = quick_run
    assert set(ROWS) <= set(store) and "_meta" in store
    for row in ROWS:
        rec = store[row]
        assert rec["_run"]["mode"] == "quick" and rec["n"] == N
        check = rec["anchor_check"]          # LIBSVM's input: the faster of the two
        assert rec["anchor_input"] == check["chosen"] == min(("dense", "sparse"), key=lambda k: check[f"{k}_s"])
        assert [c["key"] for c in rec["cells"]] == ["C=1,g=1", "C=1,g=10", "C=1000,g=1", "C=1000,g=10"]
        for c in rec["cells"]:
            assert set(c["results"]) == {"libsvm", "auto@1"}
            assert c["gamma"] == pytest.approx(c["g"] / rec["d"])
            a, s = c["results"]["libsvm"], c["results"]["auto@1"]
            assert a["status"] == "converged" and a["seconds"] > 0 and a["iterations"] > 0
            assert s["status"] == "converged" and not s["stopped"]
            assert s["limit"] == pytest.approx(max(20.0 * a["times"][0], 5.0), rel=1e-3)
            assert s["strategy"] in ("smo", "incas", "decomposition")
            assert s["choices"][0][1] == "smo" and s["choices"][-1][1] == s["strategy"]
            assert (s["switch_at"] is None) == (len(s["choices"]) == 1)
        assert f"## {row}: the first {N:,} rows" in page


def test_ratios_and_rel_obj_come_from_the_runs(quick_run: tuple[dict[str, Any], str, Path]) -> None:
    store, _, _ = quick_run
    for row in ROWS:
        for c in store[row]["cells"]:
            res, f_ref = c["results"], c["f_ref"]
            objs = [r["objective"] for r in res.values()] + ([c["f_tight"]] if c["f_tight"] is not None else [])
            assert c["f_tight"] is not None and f_ref == min(objs)
            for key, r in res.items():
                assert r["rel_obj"] == pytest.approx((r["objective"] - f_ref) / abs(f_ref), abs=1e-15)
                # tol 1e-3 on both sides: near the optimum (the bar asks 1e-6 of the full rows)
                assert 0.0 <= r["rel_obj"] <= 1e-4, (row, c["key"], key)
                assert r["kkt_gap"] <= 1e-2 * max(1.0, c["C"]), (row, c["key"], key)
                if key != "libsvm":
                    assert r["ratio"] == pytest.approx(r["seconds"] / res["libsvm"]["seconds"], rel=1e-12)


def test_row_summary_sums_the_cells(quick_run: tuple[dict[str, Any], str, Path]) -> None:
    store, page, _ = quick_run
    for row in ROWS:
        rec = store[row]
        s = rec["summary"]["auto@1"]
        cells = rec["cells"]
        so = sum(c["results"]["auto@1"]["seconds"] for c in cells)
        sa = sum(c["results"]["libsvm"]["seconds"] for c in cells)
        assert s["cells"] == 4 and s["sum_ratio"] == pytest.approx(so / sa)
        ratios = {c["key"]: c["results"]["auto@1"]["ratio"] for c in cells}
        assert s["max_ratio"] == max(ratios.values()) and ratios[s["max_ratio_cell"]] == s["max_ratio"]
        rel_ok = all(c["results"]["auto@1"]["rel_obj"] <= svm_grid.BAR["rel_obj"] for c in cells)
        assert s["rel_ok"] == rel_ok and s["rel_above"] == [c["key"] for c in cells
                                                         if c["results"]["auto@1"]["rel_obj"] > svm_grid.BAR["rel_obj"]]
        assert s["bar_sum"] == ("met" if s["sum_ratio"] <= svm_grid.BAR["sum"] and rel_ok else "not met")
        assert s["bar_max"] == ("met" if s["max_ratio"] <= svm_grid.BAR["max"] and rel_ok else "not met")
        assert s["loaded"] == any(r["loaded"] for c in cells for r in c["results"].values())
        assert any(ln.startswith(f"| {row} | 1 | auto | 4 | {fmt_ratio(s['sum_ratio'])} |") for ln in page.splitlines())
    assert "## Summary: the bar" in page and "quick-mode results" in page


def test_reference_is_cached_per_cell(quick_run: tuple[dict[str, Any], str, Path]) -> None:
    store, _, out = quick_run
    cache = json.loads((out / "svm_grid_reference.json").read_text())
    assert len(cache) == 4 * len(ROWS)
    tights = sorted(c["f_tight"] for row in ROWS for c in store[row]["cells"])
    assert tights == sorted(e["f_tight"] for e in cache.values())
    assert all(e["status"] == "converged" and e["config"]["tols"] == list(svm_grid.REF_TOLS) for e in cache.values())


def test_row_summary_flags() -> None:
    """Incomplete grids, stopped cells and a rel_obj above the bar are never *met*."""

    def cell(key: str, ours: float, anchor: float, rel: float, stopped: bool = False) -> dict[str, Any]:
        run = {"seconds": ours, "ratio": ours / anchor, "rel_obj": rel, "stopped": stopped, "loaded": False}
        return {"key": key, "results": {"libsvm": {"seconds": anchor, "loaded": False}, "x@1": run}}

    good = [cell("a", 0.1, 1.0, 0.0), cell("b", 0.5, 1.0, 1e-7)]
    s = svm_grid.row_summary(good, grid=2)["x@1"]
    assert s["sum_ratio"] == pytest.approx(0.3) and s["max_ratio"] == pytest.approx(0.5)
    assert s["bar_sum"] == s["bar_max"] == "met"
    assert svm_grid.row_summary(good, grid=3)["x@1"]["bar_sum"] == "incomplete"
    assert svm_grid.row_summary(good + [cell("c", 0.1, 1.0, 1e-5)], grid=3)["x@1"]["bar_sum"] == "not met"
    s = svm_grid.row_summary(good + [cell("c", 0.1, 1.0, 1e-5), cell("d", 0.1, 1.0, 2e-6)], grid=4)["x@1"]
    assert s["rel_above"] == ["c", "d"] and s["rel_above_libsvm"] == ["c", "d"]   # LIBSVM's rel_obj: None
    s = svm_grid.row_summary(good + [cell("c", 0.1, 1.0, 0.0, stopped=True)], grid=3)["x@1"]
    assert s["bar_max"] == "not met" and s["stopped"] == ["c"]
    s = svm_grid.row_summary([cell("a", 3.0, 1.0, 0.0), cell("b", 0.1, 10.0, 0.0)], grid=2)["x@1"]
    assert s["bar_sum"] == "met" and s["bar_max"] == "not met" and s["max_ratio_cell"] == "a"
    assert not math.isnan(s["sum_ratio"])


def test_runs_write_the_committed_pages_only_when_asked() -> None:
    from benchmarks.harness import REPO

    results = REPO / "benchmarks" / "results"
    a: Any = svm_grid.parse_args(["--quick"])
    assert a.out_dir == a.ref_dir == a.docs == results / "quick"
    assert (a.n, a.repeat, a.settle, a.rows, len(a.cell_list)) == (svm_grid.QUICK_N, 1, 0.0, list(ROWS), 4)
    full: Any = svm_grid.parse_args(["--rows", "adult10k", "--cells", "C=1000,g=1", "--strategies", "auto,smo"])
    assert full.out_dir == full.ref_dir == full.docs == results       # raw results and page: untracked
    assert svm_grid.parse_args(["--docs"]).docs == REPO / "docs" / "benchmarks"
    assert (full.n, full.repeat, full.threads, full.rows) == (None, 3, [1, 2], ["adult10k"])
    assert full.cell_list == [(1000.0, 1.0)] and full.strategies == ["auto", "smo"]
