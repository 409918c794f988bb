"""Smoke tests of ``benchmarks/studies/dask_scale.py`` (issue 16) on tiny sizes, on the session's 2-worker cluster.

The generator: the dask array built chunk by chunk on the workers is the in-process array, whatever
the chunking, and a smaller row count is a prefix. The benchmark's functions end to end in a
``--small``-like mode (20,000 × 8, 4 chunks, one pass): the chunked solves reach the in-process
objectives, the traffic counters are filled, and the page renders; and the command line once,
against the same cluster (``--scheduler``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("distributed")

from benchmarks.studies import dask_data as dd  # noqa: E402
from benchmarks.studies import dask_page as dp  # noqa: E402
from benchmarks.studies import dask_scale as ds  # noqa: E402

ROWS, FEATURES, CHUNKS = 20_000, 8, 4
#: the benchmark's tolerances, the cutting planes' loosened (each of their iterations is a few round
#: trips to the workers: fewer iterations keep the test short)
TOL = {"asvm": 1e-6, "ocas": 1e-3, "ocas-active": 1e-3, "ocas-active-paper": 1e-3}
#: |f_chunked − f_in| / |f_in| allowed: ASVM stops at a KKT tolerance of 1e-6, the cutting planes at
#: a relative primal–dual gap of 1e-3 (both sides follow the same method, so they land much closer)
REL_OBJ = {"asvm": 1e-8, "ocas": 1e-3, "ocas-active": 1e-3, "ocas-active-paper": 1e-3}


_AVAILABLE: dict[int, dict[str, str | None]] = {}


def _engines(client: Any) -> tuple[str, ...]:
    """Every strategy the benchmark runs, after checking that its chunked engine runs on a tiny
    problem (a failure there names the engine, not a line of the benchmark)."""
    if id(client) not in _AVAILABLE:
        _AVAILABLE[id(client)] = ds.engines_available(client)
    broken = {s: why for s, why in _AVAILABLE[id(client)].items() if why}
    assert not broken, f"a chunked engine failed on a tiny problem: {broken}"
    return dd.STRATEGIES


def _rows(text: str) -> list[ds.RowSpec]:
    return ds.parse_rows(text, features=FEATURES, chunk_rows=None, seed=16, flip=0.1, chunks=CHUNKS)


def test_generator_matches_numpy_whatever_the_chunking(dask_client: Any) -> None:
    spec = dd.DataSpec(rows=ROWS, features=FEATURES, chunk_rows=ROWS // CHUNKS)
    Xn, yn = dd.numpy_data(spec)
    assert Xn.shape == (ROWS, FEATURES) and Xn.flags["C_CONTIGUOUS"]
    for chunk_rows in (ROWS // CHUNKS, 7_000, dd.GEN_BLOCK):
        X, y = dd.dask_data(dd.DataSpec(rows=ROWS, features=FEATURES, chunk_rows=chunk_rows))
        Xd, yd = dask_client.compute([X, y], sync=True)
        assert np.array_equal(Xd, Xn) and np.array_equal(yd, yn)
    Xp, yp = dd.numpy_data(dd.DataSpec(rows=12_345, features=FEATURES))
    assert np.array_equal(Xp, Xn[:12_345]) and np.array_equal(yp, yn[:12_345])
    # labels: ±1, both classes, about 10 % disagree with the hidden model (not separable)
    assert set(np.unique(yn)) == {-1.0, 1.0}
    clean = np.where(Xn @ dd.hidden_model(FEATURES, 16) + spec.intercept >= 0, 1.0, -1.0)
    assert 0.08 < np.mean(clean != yn) < 0.12


def test_rows_and_chunks() -> None:
    rows = ds.parse_rows("7m,30m", features=32, chunk_rows=None, seed=16, flip=0.1)
    # about 1M rows a chunk, as many chunks on each of the 2 workers
    assert [(r.kind, r.data.rows, r.data.chunks()) for r in rows] == [("scale", 30_000_000, (1_000_000,) * 30),
                                                                      ("compare", 7_000_000, (875_000,) * 8)]
    seven = ds.parse_rows("7m", features=32, chunk_rows=1_000_000, seed=16, flip=0.1)
    assert seven[0].data.chunks() == (1_000_000,) * 7
    small = _rows("20k,20k:scale")
    assert [r.kind for r in small] == ["scale", "compare"]
    assert all(sum(r.data.chunks()) == ROWS and len(r.data.chunks()) == CHUNKS for r in small)
    with pytest.raises(ValueError):
        _rows("7x")


def test_small_benchmark_end_to_end(dask_client: Any, tmp_path: Path) -> None:
    strategies = _engines(dask_client)
    ctx = ds.Ctx(repeat=1, time_limit=120.0, tol=dict(TOL))
    store: dict[str, Any] = {}
    # the scale row runs the same solves for other figures: ASVM and OCAS are enough there
    scale_strategies = tuple(s for s in strategies if s not in ("ocas-active", "ocas-active-paper"))
    for row in _rows("20k,20k:scale"):
        if row.kind == "scale":
            store[row.key] = ds._clean(ds.bench_scale(row, scale_strategies, ctx, dask_client))
        else:
            store[row.key] = ds._clean(ds.bench_compare(row, strategies, ctx, dask_client))
    json.dumps(store)                                     # the store is plain JSON
    comp, scale = store[f"compare {ROWS}"], store[f"scale {ROWS}"]
    for s in strategies:
        c = comp["qpcore_strategies"][s]
        for side in (*c["in"].values(), c["dask"]):
            assert side["statuses"] == ["converged"], (s, side["statuses"])
        assert abs(c["rel_diff"]) <= REL_OBJ[s], (s, c["rel_diff"])
        assert c["judge_diff"] <= 1e-10          # the cluster evaluates the same objective as the client
        assert c["ratios"]["in@2t"]["ratio"] > 0 and c["ratios"]["in@1t"]["ratio"] > 0
        if s not in scale_strategies:
            continue
        d = scale["qpcore_strategies"][s]["dask"]
        assert scale["qpcore_strategies"][s]["converged"]
        # the same data on both rows: the scale row's chunked objective is the compare row's
        assert math.isclose(d["objective"], c["dask"]["objective"], rel_tol=REL_OBJ[s])
        per = d["per_iteration"]
        assert per["reductions"] >= 1 and per["tasks"] >= CHUNKS
        assert per["bytes_gathered"] > 0 and d["counters"]["bytes_gathered"] > 0
        assert all(v > 0 for v in d["worker_peak_max_mb"].values())
    # the chunks are spread evenly over the 2 workers
    assert sorted(comp["rows_per_worker"].values()) == [ROWS // 2, ROWS // 2]
    assert scale["client"]["ru_maxrss_mb"] > 0 and len(scale["workers_end"]) == 2
    assert all(v > 0 for v in scale["workers_peak_mb"].values()) and len(comp["workers_peak_mb"]) == 2
    page = tmp_path / "dask.md"
    dp.render(store, page)
    text = page.read_text()
    assert "## Chunked against in process" in text and "## At scale" in text
    for s in strategies:
        assert text.count(f"| {dd.LABEL[s]} |") == 1 + (s in scale_strategies)


def test_command_line_small(dask_client: Any, tmp_path: Path) -> None:
    strategy = _engines(dask_client)[0]
    address = dask_client.scheduler.address
    assert ds.main(["--small", "--rows", "20k", "--features", str(FEATURES), "--strategies", strategy,
                    "--scheduler", address, "--out-dir", str(tmp_path)]) == 0
    store = json.loads((tmp_path / "dask_scale.json").read_text())
    rec = store[f"compare {ROWS}"]
    assert rec["_run"]["mode"] == "small" and rec["_run"]["cluster"]["kind"] == "address"
    assert rec["qpcore_strategies"][strategy]["dask"]["statuses"] == ["converged"]
    assert "python -m benchmarks.dask_scale --small" in (tmp_path / "dask.md").read_text()
