"""The benchmark harness every study shares (benchmarks.harness): threads, load check, interleaving, records.

No timing is judged here (the machine is shared): the order of runs, the records and their
JSON form are.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness

REPO = Path(__file__).resolve().parent.parent


def test_thread_arguments() -> None:
    assert harness.threads_from_argv(["--rows", "a", "--threads", "1"]) == 1
    assert harness.threads_from_argv(["--threads=3"]) == 3
    assert harness.threads_from_argv([], default=2) == 2
    assert harness.thread_list_from_argv(["--threads", "2,1"]) == [2, 1]
    assert harness.thread_list_from_argv(["--threads", "x"]) == [1, 2]
    assert harness.thread_list_from_argv([]) == [1, 2]


def test_harness_imports_no_numpy() -> None:
    """Studies read --threads through it before numpy (OpenBLAS sizes its pool at import)."""
    code = "import sys, benchmarks.harness; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"


def test_interleave_alternates_anchor_and_ours() -> None:
    order: list[str] = []

    def run(name: str) -> Any:
        def fn() -> dict[str, Any]:
            order.append(name)
            return {"seconds": 0.01, "status": "converged"}
        return fn

    ctx = harness.Runs(repeat=3)
    runs = harness.interleave(ctx, {"anchor": run("anchor"), "ours": run("ours")}, "t", anchor="anchor")
    assert order == ["anchor", "ours", "anchor", "ours", "anchor", "ours"]
    assert [len(v) for v in runs.values()] == [3, 3]
    assert all("anchor_before" in r and "load" in r for r in runs["ours"])
    stats = harness.ratio_stats(runs["ours"], runs["anchor"])
    assert stats["ratio"] == 1.0 and stats["paired_min"] == stats["paired_max"] == 1.0


def test_a_long_or_failed_first_run_is_not_repeated() -> None:
    calls = {"slow": 0, "bad": 0}

    def slow() -> dict[str, Any]:
        calls["slow"] += 1
        return {"seconds": 1000.0}

    def bad() -> dict[str, Any]:
        calls["bad"] += 1
        raise RuntimeError("boom")

    runs = harness.interleave(harness.Runs(repeat=3, long=10.0), {"slow": slow, "bad": bad}, "t")
    assert calls == {"slow": 1, "bad": 1}
    assert runs["bad"][0]["error"] and "RuntimeError: boom" in runs["bad"][0]["status"]


def test_load_meter_counts_a_given_family_as_ours() -> None:
    spent = [0.0]
    meter = harness.LoadMeter(cpu=lambda: spent[0])
    spent[0] = 5.0
    rd = meter.reading()
    assert meter.own() > 0 and set(rd) >= {"load1", "load5", "own", "loaded"}
    assert rd["loaded"] == (rd["load1"] > harness.LOAD_MARGIN + rd["own"])
    ctx = harness.Runs(meter=meter)
    out = harness.timed(ctx, lambda: {"seconds": 0.0})
    assert "others" in out["load"] or math.isnan(out["load"]["load1"])
    assert harness.settle(ctx, 0.0)["waited_s"] == 0.0


def test_records(tmp_path: Path) -> None:
    rec = {"a": np.float64(1.5), "n": np.int64(3), "x": np.arange(3), "inf": float("inf"), "nan": float("nan"),
           "nested": [{"x": 1, "keep": np.array([1.0, 2.0])}]}
    c = harness.clean(rec, drop=("x",))
    assert c == {"a": 1.5, "n": 3, "inf": "inf", "nan": None, "nested": [{"keep": [1.0, 2.0]}]}
    assert harness.clean({"v": -math.inf}, inf_as_text=False) == {"v": None}
    path = tmp_path / "sub" / "r.jsonl"
    harness.append_jsonl(path, c)
    harness.append_jsonl(path, {"b": np.float32(2.0)})
    assert harness.read_jsonl(path) == [c, {"b": 2.0}]
    assert all(json.loads(line) for line in path.read_text().splitlines())
    assert harness.read_jsonl(tmp_path / "none.jsonl") == []
    table = harness.markdown_table(["a", "b"], [["1", "2"]])
    assert table.splitlines() == ["| a | b |", "|---|---|", "| 1 | 2 |"]


def test_in_child() -> None:
    assert harness.in_child(lambda: {"v": 1}, timeout=10) == {"v": 1}
    assert "ZeroDivisionError" in harness.in_child(lambda: {"v": 1 / 0}, timeout=10)["error"]


def test_study_skeleton(tmp_path: Path) -> None:
    """The shared command line and main loop: every row measured interleaved, appended, rendered once."""
    p = harness.study_parser("prog", None, rows=("a", "b"), small="quick", out=tmp_path / "r.jsonl", docs=True)
    p.add_argument("--own", type=int, default=7)
    args = p.parse_args(["--quick", "--rows", "b,a", "--out", str(tmp_path / "o.jsonl")])
    harness.resolve_run_arguments(p, args, small=args.quick)
    assert (args.repeat, args.settle, args.own, args.rows, args.docs) == (1, 0.0, 7, "b,a", None)
    assert harness.page_folder(args.docs, tmp_path) == tmp_path           # no --docs: beside the results
    assert p.parse_args(["--docs"]).docs == harness.DOCS
    assert p.parse_args(["--docs", str(tmp_path)]).docs == tmp_path
    args.repeat = 2
    rendered: list[list[dict[str, Any]]] = []

    def run_row(name: str, a: Any, runs: harness.Runs) -> dict[str, Any]:
        timing = harness.interleave(runs, {"anchor": lambda: {"seconds": 2.0}, "ours": lambda: {"seconds": 1.0}},
                                    name, anchor="anchor")
        return {"row": name, **harness.ratio_stats(timing["ours"], timing["anchor"])}

    done = harness.run_study(harness.Study(run_row, lambda recs, a: rendered.append(recs)), args, ["b", "a"])
    assert [r["row"] for r in done] == ["b", "a"] and all(r["ratio"] == 0.5 for r in done)
    assert [r["row"] for r in harness.read_jsonl(tmp_path / "o.jsonl")] == ["b", "a"]
    assert rendered == [harness.read_jsonl(tmp_path / "o.jsonl")]
    assert not (tmp_path / "r.jsonl").exists()


def test_seed_only_a_missing_default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A default results file that is missing comes from the archive commit; nothing else is touched."""
    from benchmarks.harness import records as core

    have = subprocess.run(["git", "-C", str(core.REPO), "cat-file", "-e", f"{core.ARCHIVE}^{{commit}}"],
                          capture_output=True)
    if have.returncode != 0:
        pytest.skip("the archive commit is not in this clone (shallow?)")
    monkeypatch.setattr(core, "RESULTS", tmp_path)
    assert not core.seed(tmp_path / "unknown.json") and not core.seed(tmp_path / "quick" / "loo.json")
    assert harness.read_jsonl(tmp_path / "small_data.jsonl")             # read: seeded first
    archived = subprocess.run(["git", "-C", str(core.REPO), "show", f"{core.ARCHIVE}:benchmarks/results/loo.json"],
                              capture_output=True, check=True).stdout
    assert core.seed(tmp_path / "loo.json") and (tmp_path / "loo.json").read_bytes() == archived
    (tmp_path / "loo.json").write_text("{}")
    assert not core.seed(tmp_path / "loo.json") and (tmp_path / "loo.json").read_text() == "{}"   # kept
    assert harness.load_store(tmp_path / "ocas.json", "quick")            # the pages' store: docs/ in the archive
    assert harness.load_store(tmp_path / "sub" / "ocas.json", "quick") == {}
