"""Smoke tests of ``benchmarks/generators.py`` and the svmocas plumbing of ``benchmarks/ocas.py``.

The generators: shapes, non-zeros a row, determinism by seed, prefixes. The svmocas output parser
and the time-to-gap rule on a literal sample of its ``-v 1`` output; the binary itself (Debian
``libocas-tools``) is not needed except by the last test, skipped without it.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks import generators as gen

SAMPLE = """\
Input file: /tmp/x.svm
Analysing input data... 7770 EOF.
Setting:
   C              : 1.000000
   bias           : 1
Starting optimization:
   0: tim=0.000212, Q_P=7770.000000, Q_D=0.000000, Q_P-Q_D=7770.000000, 1-Q_D/Q_P=1.000000, nza=   0, err=100.00%, qpf=0
   1: tim=0.001587, Q_P=1079.885518, Q_D=0.650403, Q_P-Q_D=1079.235115, 1-Q_D/Q_P=0.999398, nza=   1, err=6.92%, qpf=1
   2: tim=0.002615, Q_P=300.000000, Q_D=24.423109, Q_P-Q_D=1048.702676, 1-Q_D/Q_P=0.977241, nza=   2, err=6.92%, qpf=1
  10: tim=0.012079, Q_P=293.000000, Q_D=278.647574, Q_P-Q_D=37.491600, 1-Q_D/Q_P=0.118592, nza=   4, err=0.79%, qpf=1
 268: tim=0.555118, Q_P=292.344666, Q_D=292.341743, Q_P-Q_D=0.002922, 1-Q_D/Q_P=0.000010, nza= 237, err=0.59%, qpf=1
Stopping condition: 1-Q_D/Q_P <= TolRel(=0.000010) satisfied.
Timing statistics:
   load_time      : 0.095051[s]
   qp_solver_time : 0.066428[s]
   ocas_time      : 0.555325[s]
   total_time     : 0.650755[s]
Training error: 0.5920%
Result saved to model file: /tmp/m.txt
"""


def test_tall_dense_shape_seed_and_prefix() -> None:
    X, y = gen.tall_dense(3000, 8, seed=5)
    assert X.shape == (3000, 8) and X.dtype == np.float64 and X.flags["C_CONTIGUOUS"]
    assert set(np.unique(y)) == {-1.0, 1.0}
    X2, y2 = gen.tall_dense(3000, 8, seed=5)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    X3, _ = gen.tall_dense(3000, 8, seed=6)
    assert not np.array_equal(X, X3)
    Xp, yp = gen.tall_dense(1234, 8, seed=5)
    assert np.array_equal(Xp, X[:1234]) and np.array_equal(yp, y[:1234])
    # unit variances, real overlap: the classes' means differ, but far from separable
    assert np.allclose(X.std(axis=0), 1.0, atol=0.15)
    assert 0.3 < np.mean(y > 0) < 0.7


def test_tall_dense_prefix_across_chunks() -> None:
    n = gen.CHUNK + 10
    X, y = gen.tall_dense(n, 2, seed=1)
    Xp, yp = gen.tall_dense(gen.CHUNK + 3, 2, seed=1)
    assert np.array_equal(Xp, X[:gen.CHUNK + 3]) and np.array_equal(yp, y[:gen.CHUNK + 3])


def test_sparse_text_shape_nnz_seed_and_prefix() -> None:
    X, y = gen.sparse_text(3000, 5000, nnz_per_row=30, support=200, seed=3)
    assert X.shape == (3000, 5000) and X.format == "csr" and X.dtype == np.float64
    assert X.has_sorted_indices and X.indices.dtype == np.int32
    per_row = np.diff(X.indptr)
    assert per_row.min() >= 1 and abs(per_row.mean() - 30) < 1.5
    assert np.all(X.data > 0)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    assert np.allclose(norms, 1.0)
    assert set(np.unique(y)) == {-1.0, 1.0}
    # Zipf: the most frequent id is in far more rows than a median one
    df = np.bincount(X.indices, minlength=5000)
    assert df[0] > 20 * np.median(df)
    X2, y2 = gen.sparse_text(3000, 5000, nnz_per_row=30, support=200, seed=3)
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)
    Xp, yp = gen.sparse_text(1000, 5000, nnz_per_row=30, support=200, seed=3)
    assert (Xp != X[:1000]).nnz == 0 and np.array_equal(yp, y[:1000])
    X4, _ = gen.sparse_text(1000, 5000, nnz_per_row=30, support=200, seed=4)
    assert X4.nnz != Xp.nnz or (X4 != Xp).nnz > 0


def test_svmocas_parser_and_time_to_gap() -> None:
    from benchmarks.ocas import GAPS, gkey, parse_svmocas, time_to_gaps

    p = parse_svmocas(SAMPLE)
    assert p["iteration"] == [0, 1, 2, 10, 268]
    assert p["tim"][-1] == pytest.approx(0.555118) and p["Q_P"][2] == 300.0 and p["nza"][-1] == 237
    assert p["Q_D"][-1] == pytest.approx(292.341743)
    assert p["timing"]["load_time"] == pytest.approx(0.095051)
    assert p["timing"]["ocas_time"] == pytest.approx(0.555325)
    assert p["stop"].startswith("1-Q_D/Q_P <= TolRel") and p["train_error"] == pytest.approx(0.00592)
    f_star = 292.3
    ttg = time_to_gaps(p["tim"], p["Q_P"], f_star)
    # 300 is 2.6e-2 above, 293 is 2.4e-3, 292.344666 is 1.5e-4: 1e-2 at iteration 10, 1e-3 at 268, 1e-4 never
    assert ttg[gkey(1e-2)] == pytest.approx(0.012079)
    assert ttg[gkey(1e-3)] == pytest.approx(0.555118) and math.isinf(ttg[gkey(GAPS[-1])])
    assert time_to_gaps(p["tim"], p["Q_P"], 292.34)[gkey(1e-4)] == pytest.approx(0.555118)


def test_read_model_pads_and_takes_the_bias_weight(tmp_path: Path) -> None:
    from benchmarks.ocas import read_model

    f = tmp_path / "model.txt"
    f.write_text("0.5\n-1.25\n0.125\n")          # d' = 2 features in the file, then W0
    w = read_model(f, 4)
    assert w.tolist() == [0.5, -1.25, 0.0, 0.0, 0.125]


@pytest.mark.skipif(shutil.which("svmocas") is None, reason="svmocas not installed (apt-get install libocas-tools)")
def test_svmocas_run_objective_parity(tmp_path: Path) -> None:
    from benchmarks.ocas import run_svmocas

    X, y = gen.tall_dense(500, 4, seed=2)
    path = tmp_path / "d.svm"
    with open(path, "w") as fh:
        for xi, yi in zip(X, y):
            fh.write(f"{int(yi):+d} " + " ".join(f"{j + 1}:{v!r}" for j, v in enumerate(xi)) + "\n")
    for bias in (1.0, 2.0):
        r = run_svmocas(str(path), 4, 1.0, bias, 1, 1e-8, 1, 30.0, 60.0)
        assert "error" not in r, r.get("status")
        w = r["w"]
        F = 0.5 * w @ w + np.maximum(0.0, 1.0 - y * (X @ w[:4] + bias * w[4])).sum()
        assert r["final_primal_reported"] == pytest.approx(F, rel=1e-8, abs=1e-6)
        assert r["iterations"] == r["trajectory"]["iteration"][-1] and r["seconds"] > 0
