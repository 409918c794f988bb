"""``--time-limit`` bounds the whole command, not only the solve (issue 26, section 4).

On 6,000 rows of Adult at C = 1000 a solve takes far longer than the one-second limit, so the
deadline falls inside it and the passes after it must be skipped and reported. The bound
asserted is T + 2 s: generous, for a loaded machine; without the deadline the training-accuracy
pass alone runs over 6,000 × thousands of support vectors after the solve's own limit.
"""

from __future__ import annotations

import bz2
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qpcore_formulations.data.files import data_dir
from qpcore_cli import main
from qpcore_cli.common import Deadline, evaluate_rows

T = 1.0


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str, float]:
    t = time.perf_counter()
    code = main([str(a) for a in argv])
    seconds = time.perf_counter() - t
    out, err = capsys.readouterr()
    return code, out, err, seconds


@pytest.fixture(scope="module")
def adult6k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    with bz2.open(data_dir() / "adult.trn.bz2", "rt") as fh:
        head = [next(fh) for _ in range(6000)]
    path = tmp_path_factory.mktemp("adult") / "adult6k.txt"
    path.write_text("".join(head))
    return path


@pytest.mark.data
def test_train_returns_within_the_limit(capsys: pytest.CaptureFixture[str], adult6k: Path, tmp_path: Path) -> None:
    js = tmp_path / "r.json"
    code, out, err, seconds = run(capsys, "train", adult6k, tmp_path / "m", "-c", "1000", "-g", "0.05",
                                  "--train-accuracy", "on", "--time-limit", T, "--json", js)
    assert code == 4, err                        # time_limit
    assert seconds < T + 2.0
    assert "skipped          training accuracy" in out and "(time limit)" in out
    r = json.loads(js.read_text())
    assert r["skipped"] and r["train_accuracy"] is None and r["problems"][0]["status"] == "time_limit"
    assert (tmp_path / "m").exists()             # the best point found is written


@pytest.mark.data
def test_solve_svm_returns_within_the_limit(capsys: pytest.CaptureFixture[str], adult6k: Path,
                                            tmp_path: Path) -> None:
    js = tmp_path / "r.json"
    code, out, err, seconds = run(capsys, "solve", "svm", "--data", adult6k, "--test", adult6k, "-C", "1000",
                                  "--gamma", "0.05", "--train-accuracy", "on", "--time-limit", T, "--json", js, "-q")
    assert code == 0, err
    assert seconds < T + 2.0
    r = json.loads(js.read_text())
    assert r["status"] == "time_limit"
    assert "training accuracy (time limit)" in r["skipped"] and "test accuracy (time limit)" in r["skipped"]
    assert r["train_accuracy"] is None and r["test_accuracy"] is None


@pytest.mark.data
def test_cross_validation_stops_at_the_limit(capsys: pytest.CaptureFixture[str], adult6k: Path) -> None:
    code, out, err, seconds = run(capsys, "train", adult6k, "-v", "5", "-c", "1000", "-g", "0.05", "--time-limit", T)
    assert code == 4, err
    assert seconds < T + 2.0
    assert out.startswith("Cross Validation Accuracy = ") and "(time limit)" in out


def test_evaluate_rows_cuts_at_the_deadline() -> None:
    X = np.zeros((10_000, 2))

    def slow(Z: Any) -> Any:
        time.sleep(1e-4 * Z.shape[0])            # 1 s for all rows
        return np.ones(Z.shape[0])

    outs, done = evaluate_rows(slow, X, Deadline(0.3), first=100, chunk_seconds=0.05)
    assert 0 < done < X.shape[0] and sum(o.size for o in outs) == done
    outs, done = evaluate_rows(slow, X[:500], Deadline(None))
    assert done == 500
    outs, done = evaluate_rows(slow, X, Deadline(1e-9))
    assert done == 0 and outs == []
    d = Deadline(None)
    assert d.solve_limit() is None and d.left() == float("inf")
    d = Deadline(1e-9)
    time.sleep(1e-3)
    assert d.left() == 0.0 and d.solve_limit() == 1e-6
