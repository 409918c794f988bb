"""The plumbing of ``python -m benchmarks.qp --quick``: small rows, the peers that are installed
(CI has OSQP and scipy only; the others are skipped, not required), and a page whose ratios and
objective gaps are those of the runs recorded in the results file."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.studies import qp as bench

_MODULES = {"piqp": "piqp", "proxqp": "proxsuite", "clarabel": "clarabel", "osqp": "qpsolvers",
            "daqp": "daqp", "highs": "highspy"}


def _installed(peer: str) -> bool:
    mod = _MODULES.get(peer)
    if mod is None:
        return True                                   # scipy's solvers
    if importlib.util.find_spec(mod) is None:
        return False
    return peer != "daqp" or importlib.util.find_spec("qpsolvers") is not None


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], str]:
    out = tmp_path_factory.mktemp("qp")
    peers = [p for p in ("piqp", "proxqp", "clarabel", "osqp", "scipy_nnls", "lsq_linear_bvls") if _installed(p)]
    rc = bench.main(["--quick", "--rows", "spec_2000_k8,act_2000_k4,nnls_2000x500", "--threads", "1",
                     "--peers", ",".join(peers), "--out-dir", str(out)])
    assert rc == 0
    lines = [json.loads(x) for x in (out / "qp.jsonl").read_text().splitlines()]
    return [d for d in lines if "row" in d], (out / "qp.md").read_text()


def test_rows_are_recorded_with_loads_and_memory(quick_run: tuple[list[dict[str, Any]], str]) -> None:
    recs, page = quick_run
    assert [r["row"] for r in recs] == ["spec_2000_k8", "act_2000_k4", "nnls_2000x500"]
    for r in recs:
        ours = r["solvers"]["gpcg"]
        assert ours["status"] == "converged"
        assert ours["rel_obj"] is not None and ours["rel_obj"] <= 1e-9
        for s in r["solvers"].values():
            assert s["runs"] >= 1 and s["seconds"] > 0 and s["peak_mb"] >= 0
            assert all("load1" in ld and "loaded" in ld for ld in s["loads"])
        assert f"| {r['row']} |" in page


def test_ratio_is_against_the_fastest_accurate_peer(quick_run: tuple[list[dict[str, Any]], str]) -> None:
    recs, page = quick_run
    for r in recs:
        if r["peer"] is None:
            assert "no accurate peer" in page
            continue
        peer = r["solvers"][r["peer"]]
        assert peer["rel_obj"] <= bench.ACCURATE
        ours = r["solvers"]["gpcg"]
        assert r["ratio"]["ratio"] == pytest.approx(ours["seconds"] / peer["seconds"], rel=1e-9)
        faster = [k for k, s in r["solvers"].items() if k != "gpcg" and s["runs"] > 1
                  and s["rel_obj"] is not None and s["rel_obj"] <= bench.ACCURATE and s["seconds"] < peer["seconds"]]
        assert not faster
        assert f"**{r['ratio']['ratio']:.3f}**" in page


def test_the_issue_family_has_the_stated_spectrum() -> None:
    row = bench.spec_row(60, 4.0)
    import numpy as np

    w = np.linalg.eigvalsh(row["Q"])
    assert w[0] == pytest.approx(1e-4, rel=1e-6) and w[-1] == pytest.approx(1.0, rel=1e-9)
    assert np.count_nonzero(row["lb"] == 0.0) == 20 and np.all(row["ub"] == 1.0)


def test_page_lists_every_peer_setting() -> None:
    page = bench.render([], {}, ["python -m benchmarks.qp --threads 1"])
    for name in bench.PEERS:
        assert f"**{name}**" in page
    assert Path(bench.__file__).name == "qp.py"
