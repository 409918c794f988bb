"""Records and pages: where results go (:data:`RESULTS`, untracked; :data:`DOCS`, the committed pages),
JSON-safe records, JSON lines and per-study stores (a missing default one seeded from
:data:`ARCHIVE`), the cells and tables every page renders.

Nothing here imports numpy at module import time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness.core import _fmt_s, log
from benchmarks.harness.measure import REPO


__all__ = ["ARCHIVE", "ARCHIVED", "DOCS", "RESULTS", "append_jsonl", "clean", "fmt_exp", "fmt_flag", "fmt_loads",
           "fmt_ratio", "fmt_seconds", "fmt_summary_seconds", "generated_line", "load_store", "markdown_table",
           "read_jsonl", "save_row", "seed"]


RESULTS = REPO / "benchmarks" / "results"   # raw results and reference caches (untracked: .gitignore)
DOCS = REPO / "docs" / "benchmarks"         # the committed pages, written only when --docs asks
# The last commit whose tree carried the raw results (issue 34 took them out): a missing default
# store is seeded from it, so re-measuring one row still renders a page with every published row.
ARCHIVE = "75f3e2242e79e8aeb3b36adf97ea80ffdad6572b"
ARCHIVED = {"ocas.json": "docs/benchmarks/ocas.json", "incas.json": "docs/benchmarks/incas.json",
            "svm_family.json": "docs/benchmarks/svm_family.json", "svm_grid.json": "docs/benchmarks/svm_grid.json",
            **{name: f"benchmarks/results/{name}" for name in (
                "asvm.jsonl", "busy.jsonl", "dask_scale.json", "grid_search.jsonl", "loo.json",
                "maros_meszaros.jsonl", "ocas_reference.json", "qp.jsonl", "reference.json", "results.jsonl",
                "scaling.jsonl", "small_data.jsonl", "svm_grid_reference.json")}}


def clean(v: Any, drop: Iterable[str] = (), inf_as_text: bool = True) -> Any:
    """``v`` made JSON-safe: numpy scalars and arrays as Python values, dict keys as text.

    Parameters
    ----------
    v : object
        A record.
    drop : iterable of str
        Dict keys left out at every depth (points, models: too large for a record).
    inf_as_text : bool
        ±inf as ``"inf"`` / ``"-inf"`` (else None); NaN is always None.
    """
    import numpy as np

    dropped = frozenset(drop)

    def go(x: Any) -> Any:
        if isinstance(x, dict):
            return {str(k): go(y) for k, y in x.items() if k not in dropped}
        if isinstance(x, (list, tuple)):
            return [go(y) for y in x]
        if isinstance(x, np.ndarray):
            return go(x.tolist())
        if isinstance(x, np.generic):
            x = x.item()
        if isinstance(x, float) and not math.isfinite(x):
            return None if math.isnan(x) or not inf_as_text else ("inf" if x > 0 else "-inf")
        return x

    return go(v)


def seed(path: Path) -> bool:
    """Seed a missing default results file (one of :data:`ARCHIVED` in :data:`RESULTS`) from
    :data:`ARCHIVE`; any other path, or a file already there, is left alone.

    Returns whether the file was written. Without git or that commit (a shallow clone) it says so
    and the study starts from an empty store.
    """
    if path.exists() or path.parent.resolve() != RESULTS.resolve() or path.name not in ARCHIVED:
        return False
    import subprocess

    got = subprocess.run(["git", "-C", str(REPO), "show", f"{ARCHIVE}:{ARCHIVED[path.name]}"],
                         capture_output=True, check=False)
    if got.returncode != 0:
        log(f"{path.name}: not seeded from commit {ARCHIVE[:7]} ({got.stderr.decode(errors='replace').strip()})")
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(got.stdout)
    log(f"{path.name}: seeded from commit {ARCHIVE[:7]} (the published results)")
    return True


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one record as a line of ``path`` (created with its folder); numpy scalars as floats."""
    seed(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(record, default=float) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file (none when it does not exist; blank lines skipped)."""
    seed(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_store(path: Path, mode: str) -> dict[str, Any]:
    """A study's store: one JSON object with a record per row (its run under ``_run``) and ``_meta``.

    A ``full`` run drops the rows a quick or small run left there: the two are never mixed on one
    page. A missing file is an empty store (a default one is seeded first: :func:`seed`).
    """
    seed(path)
    store: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    if mode == "full":
        store = {k: v for k, v in store.items() if k.startswith("_") or v.get("_run", {}).get("mode") == "full"}
    return store


def save_row(path: Path, store: dict[str, Any], key: str, record: dict[str, Any], meta: dict[str, Any]) -> None:
    """Put one row's record and the store's ``_meta`` in ``store`` and rewrite ``path`` (after every
    row, so an interrupted run keeps what it measured)."""
    store[key] = record
    store["_meta"] = meta
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(store, indent=1) + "\n")


def fmt_exp(v: Any, fmt: str = "+.1e") -> str:
    """A relative difference or gap in a table cell (– when absent)."""
    if v is None or v == "inf":
        return "–"
    return format(float(v), fmt)


def fmt_ratio(v: Any) -> str:
    """A ratio in a table cell, three significant digits."""
    return "–" if v is None else f"{float(v):.3g}"


def fmt_seconds(v: Any) -> str:
    """Seconds in a table cell (``> limit`` for a stopped run)."""
    if v == "inf":
        return "> limit"
    return "–" if v is None else _fmt_s(float(v))


def fmt_summary_seconds(s: dict[str, Any], key: str = "seconds") -> str:
    """median (min–max) of a summary; just the median for one run."""
    if s.get("runs", 0) <= 1 or s.get("min") is None:
        return fmt_seconds(s.get(key))
    return f"{fmt_seconds(s.get(key))} ({fmt_seconds(s.get('min'))}–{fmt_seconds(s.get('max'))})"


def fmt_loads(loads: list[Any]) -> str:
    """The highest load1 / own / others over a row's runs."""
    ls = [ld for ld in loads if ld]
    if not ls:
        return "–"
    oth = [ld["others"] for ld in ls if "others" in ld]
    tail = f" / {max(oth):.2f}" if oth else ""
    return f"{max(ld['load1'] for ld in ls):.2f} / {max(ld['own'] for ld in ls):.2f}{tail}"


def fmt_flag(loaded: Any) -> str:
    """``**loaded**`` or ``ok``: whether a row's ratio may be claimed."""
    return "**loaded**" if loaded else "ok"


def generated_line(study: str, store: str, *, also: str = "") -> str:
    """The line under a page's title: which command wrote it, from which raw results (untracked:
    :data:`RESULTS`, seeded from :data:`ARCHIVE`), where the protocol is (``also``: another place)."""
    more = f" and {also}" if also else ""
    return (f"Generated by `python -m benchmarks.{study} --docs` from `benchmarks/results/{store}` (the raw results, "
            f"not committed; a missing one is seeded from commit {ARCHIVE[:7]}); do not edit by hand. "
            f"Protocol: the module docstring of `benchmarks/studies/{study}.py`{more}.\n")


def markdown_table(head: list[str], body: list[list[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)
