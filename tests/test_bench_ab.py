"""benchmarks.ab: every row kind runs from a checkout, and both checkouts' answers are compared."""

from __future__ import annotations

import json
import subprocess

import pytest

from benchmarks.harness import ab


@pytest.mark.data
@pytest.mark.parametrize("kind, data, n", [("smo", "adult", 300), ("decomp", "adult", 300), ("asvm", "adult", 500),
                                           ("ocas", "adult", 500), ("gpcg", "box", 60)])
def test_child_reports_one_run(kind: str, data: str, n: int, capsys: pytest.CaptureFixture[str]) -> None:
    ab.child(str(ab.REPO), kind, data, n)
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["status"] == "converged" and out["iterations"] > 0 and out["objective"] < 0


@pytest.mark.data
def test_against_the_base_commit(capsys: pytest.CaptureFixture[str]) -> None:
    """The small rows from the base commit (before the general core) and from the working tree: same answers."""
    have = subprocess.run(["git", "-C", str(ab.REPO), "cat-file", "-e", "a09b887^{commit}"], capture_output=True)
    if have.returncode != 0:
        pytest.skip("the base commit is not in this clone (shallow?)")
    assert ab.main(["--rows", "smo:adult:300,gpcg:box:60", "--repeat", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| smo:") or line.startswith("| gpcg:")]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[4] == "converged / converged"
        assert abs(float(cells[6])) < 1e-9
