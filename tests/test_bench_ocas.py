"""Smoke tests of ``benchmarks/harness/generators.py`` and the svmocas plumbing of ``benchmarks/studies/ocas.py``.

The generators: shapes, non-zeros a row, determinism by seed, prefixes. The svmocas output parser
and the time-to-gap rule on a literal sample of its ``-v 1`` output; the binary itself (Debian
``libocas-tools``) is not needed except by its own test, skipped without it. Issue 27's pieces:
gap parsing, rows keyed by C, Table 3 read off a synthetic trace (points, medians, AS / OCAS ratios,
bars, rendering), the trace's fields from a real run, the paper's variant, Dask's table3 rows.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.harness import generators as gen

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
    from benchmarks.studies.ocas_gaps import GAPS, gkey, time_to_gaps
    from benchmarks.anchors.svmocas import parse_svmocas

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
    from benchmarks.anchors.svmocas import read_model

    f = tmp_path / "model.txt"
    f.write_text("0.5\n-1.25\n0.125\n")          # d' = 2 features in the file, then W0
    w = read_model(f, 4)
    assert w.tolist() == [0.5, -1.25, 0.0, 0.0, 0.125]


@pytest.mark.skipif(shutil.which("svmocas") is None, reason="svmocas not installed (apt-get install libocas-tools)")
def test_svmocas_run_objective_parity(tmp_path: Path) -> None:
    from benchmarks.anchors.svmocas import run_svmocas

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


# ---------------------------------------------------------------------------------------------
# Issue 27: gaps, C-keyed rows, Table 3
# ---------------------------------------------------------------------------------------------

def _trace(primal: list[float], *, rows_read: bool = True) -> list[dict[str, object]]:
    """A synthetic per-iteration trace (the fields ``_trace_entry`` records): iteration k at k/10 s,
    T1 = 0.01·k, T2 = 0.02·k, |X^a| = 100 − 10k, |X^s| = 50 − 5k, rows read 1000·k."""
    return [{"iteration": k, "seconds": k / 10, "primal": f, "dual": 0.0, "cuts": k, "eval_s": 0.01 * k,
             "search_s": 0.02 * k, "touched_eval": 100 - 10 * k, "touched_search": 50 - 5 * k,
             "rows_read": 1000 * k if rows_read else None} for k, f in enumerate(primal, start=1)]


def test_gap_parsing_and_defaults() -> None:
    from benchmarks.studies.ocas_gaps import default_gaps, gtext, parse_gaps

    assert [gtext(g) for g in (1e-2, 1e-5, 5e-3)] == ["1e-2", "1e-5", "5e-3"]
    assert parse_gaps("1e-4,1e-2,1e-3,1e-2") == (1e-2, 1e-3, 1e-4)
    with pytest.raises(ValueError):
        parse_gaps("1e-2,2")
    with pytest.raises(ValueError):
        parse_gaps("")
    assert default_gaps(1e-5) == (1e-2, 1e-3, 1e-4)
    assert default_gaps(1e-6) == (1e-2, 1e-3, 1e-4, 1e-5)
    assert default_gaps(1e-4) == (1e-2, 1e-3, 1e-4)


def test_rows_keyed_by_C() -> None:
    from benchmarks.studies.ocas_rows import parse_C, split_key, store_key
    from benchmarks.studies.ocas_page import plot_name, row_keys, title

    assert store_key("reuters", 1.0) == "reuters" and store_key("reuters", 10.0) == "reuters@C=10"
    for name, C in (("reuters", 1.0), ("adult", 10.0), ("text1m", 0.1)):
        assert split_key(store_key(name, C)) == (name, C)
    assert parse_C("1,10,1") == (1.0, 10.0)
    with pytest.raises(ValueError):
        parse_C("1,-1")
    store: dict[str, dict[str, object]] = {"_meta": {}, "reuters@C=10": {}, "dense2m": {}, "reuters": {},
                                           "adult@C=10": {}, "crossover": {}, "unknown": {}}
    assert row_keys(store) == ["reuters", "reuters@C=10", "adult@C=10", "dense2m", "crossover"]
    assert title("reuters@C=10") == "reuters.trn (C = 10)" and title("reuters") == "reuters.trn (C = 1)"
    assert plot_name("reuters") == "ocas_reuters.png" and plot_name("reuters@C=10") == "ocas_reuters_C10.png"


def test_reference_key_includes_C() -> None:
    from benchmarks.studies.ocas_rows import Row

    X, y = gen.tall_dense(50, 3, seed=1)
    a, b = (Row("d", X, y, C, 1.0, "src", "data") for C in (1.0, 10.0))
    assert a.key != b.key and a.data_key == b.data_key     # one svmocas file, two references


def test_table3_points_from_a_trace() -> None:
    from benchmarks.studies.ocas_gaps import gkey, table3_points

    f_star = 100.0
    # relative gaps 0.5, 0.05, 0.005, 0.0005, 0.00005, 0.000005
    tr = _trace([150.0, 105.0, 100.5, 100.05, 100.005, 100.0005])
    pts = table3_points(tr, f_star, (1e-2, 1e-3, 1e-4, 1e-5, 1e-7))
    p2 = pts[gkey(1e-2)]
    assert p2 is not None and p2["iteration"] == 3 and p2["seconds"] == pytest.approx(0.3)
    assert p2["eval_s"] == pytest.approx(0.03) and p2["search_s"] == pytest.approx(0.06)
    assert p2["rows_read"] == 3000
    assert p2["mean_touched_eval"] == pytest.approx((90 + 80 + 70) / 3)
    assert p2["mean_touched_search"] == pytest.approx((45 + 40 + 35) / 3)
    p5 = pts[gkey(1e-5)]
    assert p5 is not None and p5["iteration"] == 6 and p5["rows_read"] == 6000
    assert pts[gkey(1e-7)] is None
    # a strategy without the counter: None, the rest still read
    q = table3_points(_trace([150.0, 100.5], rows_read=False), f_star, (1e-2,))[gkey(1e-2)]
    assert q is not None and q["rows_read"] is None and q["iteration"] == 2
    assert all(v is None for v in table3_points([], f_star, (1e-2,)).values())


def test_table3_summary_and_compare_bars() -> None:
    from benchmarks.studies.ocas_gaps import BAR_T3, gkey, table3_compare, table3_points, table3_summary

    gaps = (1e-2, 1e-4)
    f_star = 100.0
    oc_tr = _trace([150.0, 105.0, 100.5, 100.05, 100.005])
    as_tr = [dict(p, eval_s=0.5 * 0.01 * k, search_s=0.2 * 0.02 * k, seconds=0.8 * k / 10)
             for k, p in enumerate(oc_tr, start=1)]
    oc = table3_summary([table3_points(oc_tr, f_star, gaps)] * 3, gaps)
    asx = table3_summary([table3_points(as_tr, f_star, gaps), table3_points(as_tr[:2], f_star, gaps)], gaps)
    assert oc[gkey(1e-4)]["reached"] == 3 and asx[gkey(1e-4)]["reached"] == 1 and asx[gkey(1e-4)]["runs"] == 2
    d = table3_compare(asx, oc, gaps, barred=True)
    at = d[gkey(BAR_T3["gap"])]
    assert at["t1_ratio"] == pytest.approx(0.5) and at["t2_ratio"] == pytest.approx(0.2)
    assert at["total_ratio"] == pytest.approx(0.8) and at["rows_read_ratio"] == pytest.approx(1.0)
    assert at["bars"] == {"t1": True, "t2": True, "total": True}
    assert "bars" not in d[gkey(1e-2)]                      # bars only at 1e-4
    assert "bars" not in table3_compare(asx, oc, gaps, barred=False)[gkey(1e-4)]
    slow = table3_compare(oc, asx, gaps, barred=True)[gkey(1e-4)]    # the other way round: every bar fails
    assert slow["bars"] == {"t1": False, "t2": False, "total": False}
    none = table3_summary([table3_points(_trace([150.0, 100.5], rows_read=False), f_star, gaps)], gaps)
    assert none[gkey(1e-2)]["rows_read"] is None
    assert table3_compare(none, none, gaps, barred=True)[gkey(1e-2)]["rows_read_ratio"] is None


def test_table3_renders() -> None:
    from benchmarks.studies.ocas_page import _render_table3
    from benchmarks.studies.ocas_gaps import table3_compare, table3_points, table3_summary

    gaps = (1e-2, 1e-4)
    s = table3_summary([table3_points(_trace([150.0, 100.5, 100.005]), 100.0, gaps)], gaps)
    t3 = {"asocas": {"1": table3_compare(s, s, gaps, barred=True)}}
    L: list[str] = []
    _render_table3(L, "reuters", t3, {}, gaps)
    text = "\n".join(L)
    assert "T1 ≤ 0.6" in text and "active-set OCAS / OCAS, 1 thread" in text
    rows = [x for x in L if x.startswith("| 1e-4 ")]
    assert len(rows) == 1 and "| 1 |" in rows[0] and "not met" in rows[0]   # ratio 1: T1, T2 and time bars fail


def test_asocas_paper_settings() -> None:
    from benchmarks.studies.ocas_rows import PAPER_MAX_CUTS, PAPER_MU, make_strategy
    from qpcore_strategies.active_set_ocas import ActiveSetOCAS

    s = make_strategy("asocas-paper")
    assert isinstance(s, ActiveSetOCAS) and s.mu == PAPER_MU == 0.05 and s.max_cuts == PAPER_MAX_CUTS == 20


def test_run_ours_trace_has_table3_fields() -> None:
    from benchmarks.studies.ocas_rows import Row, build_problem, run_ours
    from benchmarks.studies.ocas_gaps import gkey, table3_points

    X, y = gen.sparse_text(300, 400, nnz_per_row=10, support=50, seed=2)
    row = Row("t", X, y, 1.0, 1.0, "gen", "gen")
    prob = build_problem(row)
    r = run_ours(prob, "ocas", 1, 1e-4, 30.0)
    tr = r["trace"]
    assert tr and all(k in tr[-1] for k in ("eval_s", "search_s", "touched_eval", "touched_search", "rows_read"))
    assert tr[-1]["eval_s"] >= tr[0]["eval_s"] >= 0.0 and tr[-1]["touched_eval"] <= 300
    pts = table3_points(tr, float(tr[-1]["primal"]), (1e-2,))
    assert pts[gkey(1e-2)] is not None


def test_dask_rows_table3_kind() -> None:
    from benchmarks.studies.dask_scale import parse_rows

    rows = parse_rows("200k,1m:table3,30m:table3", features=32, chunk_rows=None, seed=16, flip=0.1)
    assert [r.kind for r in rows] == ["table3", "table3", "compare"]
    assert rows[1].data.rows == 30_000_000 and rows[1].key == "table3 30000000"
    with pytest.raises(ValueError):
        parse_rows("2m:bogus", features=32, chunk_rows=None, seed=16, flip=0.1)
