"""Every benchmark command line the docs show still parses: same flags, same output paths.

The studies share one command-line skeleton (``benchmarks.harness.study_parser``); this reads the
commands from README.md's Benchmarks block and docs/BENCHMARKS.md and parses each with its
study's ``parse_args`` (nothing is run or timed).
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
STUDIES = ("run", "qp", "asvm", "scaling", "ocas", "incas", "dask_scale", "svm_family", "svm_grid", "maros_meszaros")
COMMAND = re.compile(r"python -m benchmarks\.(\w+)([^#;\n`]*)")


def documented() -> list[tuple[str, str]]:
    """(study, arguments) of every ``python -m benchmarks.<study>`` in the docs, for the studies here."""
    out = []
    for doc in ("README.md", "docs/BENCHMARKS.md"):
        for m in COMMAND.finditer((REPO / doc).read_text(encoding="utf-8")):
            if m.group(1) in STUDIES:
                out.append((m.group(1), m.group(2).replace("$t", "1").strip()))
    return sorted(set(out))


def study(name: str) -> ModuleType:
    # some studies pin the BLAS thread variables at import: keep this process's as they were
    env = dict(os.environ)
    try:
        return importlib.import_module(f"benchmarks.{'harness' if name == 'run' else 'studies'}.{name}")
    finally:
        os.environ.clear()
        os.environ.update(env)


def test_the_docs_show_each_converted_study() -> None:
    assert {s for s, _ in documented()} >= {"run", "qp", "asvm", "scaling", "ocas", "incas"}


@pytest.mark.parametrize("name, args", documented())
def test_documented_command_parses(name: str, args: str) -> None:
    a: Any = study(name).parse_args(shlex.split(args))
    assert a.repeat >= 1 and a.settle >= 0
    if "--quick" not in args and "--cv" not in args:   # asvm --cv measures accuracy, not time
        assert a.settle > 0 and a.repeat == (1 if name == "scaling" or "--repeat 1" in args else 3)


def test_runs_write_the_committed_pages_only_when_asked() -> None:
    """Raw results and pages go to benchmarks/results/ (untracked); --docs writes docs/benchmarks/."""
    results, docs = REPO / "benchmarks" / "results", REPO / "docs" / "benchmarks"
    for name in ("run", "qp", "scaling"):
        a: Any = study(name).parse_args(["--quick"])
        assert a.out.parent == results / "quick" and a.docs == results / "quick", name
        full: Any = study(name).parse_args([])
        assert full.out.parent == results and full.docs == results, name
        assert study(name).parse_args(["--docs"]).docs == docs, name
    a = study("asvm").parse_args(["--out", "/tmp/x.jsonl", "--docs", "/tmp"])
    assert (a.out, a.docs, a.rows) == (Path("/tmp/x.jsonl"), Path("/tmp"), "adult,ijcnn1,synth2m")
    for name in ("ocas", "incas", "svm_family", "maros_meszaros"):
        if name == "maros_meszaros" and not study(name).data_folder().is_dir():
            continue                                   # its parser lists the problems of the data folder
        full = study(name).parse_args([])
        where = full.out.parent if name == "maros_meszaros" else full.out_dir
        assert where == full.docs == results, name
        assert study(name).parse_args(["--docs"]).docs == docs, name


def test_the_raw_results_are_not_committed() -> None:
    """No raw result JSON in docs/benchmarks or benchmarks/results: the pages are what is committed."""
    import subprocess

    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "docs/benchmarks", "benchmarks/results"],
                             capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert [f for f in tracked.stdout.split() if f.endswith((".json", ".jsonl"))] == []
