"""Leave-one-out through M₀'s KKT inverse (qpcore_incremental.incremental_loo) against the general step and
against refits: the same values, the state restored exactly, the margin factor never written."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

import qpcore_incremental.incremental_loo as loo_mod
from qpcore.backends.operators import Kernel
from qpcore_incremental.incremental import IncrementalSVM
from qpcore_incremental.incremental_oneclass import IncrementalOneClass


@st.composite
def svm_data(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, Kernel, float]:
    """Two classes with duplicates and contradicting labels (ties, dependences), a kernel, C in [1e-2, 1e3]."""
    n = draw(st.integers(6, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[0], y[1] = 1.0, -1.0
    X = rng.standard_normal((n, draw(st.integers(1, 4))))
    X[:, 0] += 0.8 * y
    for _ in range(draw(st.integers(0, n // 3))):
        i, j = rng.integers(2, n, size=2)
        X[j], y[j] = X[i], y[i]
    for _ in range(draw(st.integers(0, 2))):
        i, j = rng.integers(2, n, size=2)
        X[j], y[j] = X[i], -y[i]
    kernel = Kernel("rbf", gamma=draw(st.sampled_from([0.1, 0.5, 2.0]))) if draw(st.booleans()) else Kernel("linear")
    return X, y, kernel, 10.0 ** draw(st.floats(-2.0, 3.0))


def general_loo(m: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """leave_one_out() with every point on the general step (no K₀⁻¹ built)."""
    with monkeypatch.context() as mp:
        mp.setattr(loo_mod.LOODecrements, "build", classmethod(lambda cls, eng, **kw: None))
        return m.leave_one_out()


def assert_same_loo(a: Any, b: Any, where: Any = None) -> None:
    """Same verdicts and decision values (over ``where``, a mask over the points; default all)."""
    w = np.ones(a.n, dtype=bool) if where is None else np.asarray(where)
    np.testing.assert_array_equal(np.isnan(a.decision[w]), np.isnan(b.decision[w]))
    both = w & ~np.isnan(a.decision)
    scale = max(1.0, float(np.abs(a.decision[both]).max(initial=0.0)))
    np.testing.assert_allclose(a.decision[both], b.decision[both], rtol=0, atol=1e-7 * scale)
    np.testing.assert_array_equal(a.error[w], b.error[w])


def unique_bias(m: IncrementalSVM) -> np.ndarray:
    """Points whose leave-one-out state, as the general step reaches it, has a margin vector strictly
    inside its box: b and so f₋ᵢ(xᵢ) are then unique. (With none — every other support vector at
    a bound, as balanced error sets at a small C make it — any b of an interval is optimal, and
    two exact paths may end at different ones.)"""
    sl = m._op.slots()
    out = np.zeros(sl.size, dtype=bool)
    snap = m._save()
    try:
        for k, c in enumerate(sl.tolist()):
            m._decrement(c)
            mem = m._fac.members
            a, Cm = m._alpha[mem], m._Cv[mem]
            out[k] = bool(((a > 1e-9 * Cm) & (a < Cm * (1.0 - 1e-9))).any())
            m._restore(snap)
    finally:
        m._qm_written = None
    return out


def blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n, 3))
    X[:, 0] += 0.7 * y
    return X, y


@pytest.mark.parametrize("C", [10.0, 100.0])
def test_large_C_equals_refits_and_never_touches_the_factor(C: float) -> None:
    # at large C most support vectors are margin vectors: the regime the K₀⁻¹ decrements are for
    X, y = blobs(70, int(C))
    kernel = Kernel("rbf", gamma=0.5)
    m = IncrementalSVM(kernel, C).fit(X, y)
    assert len(m.margin_) >= 10
    counters = dict(m._fac.counters)
    res = m.leave_one_out()
    assert m.stats["loo_general"] == 0            # every point took the K₀⁻¹ decrement
    assert m._fac.counters == counters            # M's factor was neither updated nor refactored
    assert m.certificate().ok(m.tol)
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        mi = IncrementalSVM(kernel, C).fit(X[keep], y[keep])
        f = float(mi.decision_function(X[i:i + 1])[0])
        assert res.error[i] == ((f > 0) != (y[i] > 0))
        if not np.isnan(res.decision[i]):
            assert res.decision[i] == pytest.approx(f, rel=1e-7, abs=1e-7)


def test_ties_and_duplicates_fall_back_to_the_general_step(monkeypatch: pytest.MonkeyPatch) -> None:
    # duplicated points: a twin reaching g = 0 depends on M, and degenerate vertices need the
    # general step's tie resolution; those points are handed to it from the restored state
    X, y = blobs(40, 0)
    X = np.vstack([X, X[:15]])
    y = np.concatenate([y, y[:15]])
    m = IncrementalSVM(Kernel("rbf", gamma=0.5), 10.0)
    m.learn_many(X, y)
    ref = general_loo(m, monkeypatch)
    alpha = m.alpha
    fast = m.leave_one_out()
    assert m.stats["loo_general"] > 0
    np.testing.assert_array_equal(m.alpha, alpha)
    assert_same_loo(fast, ref, unique_bias(m) | (alpha == 0))


def test_one_class_c_mode_same_values(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 2))
    m = IncrementalOneClass(Kernel("rbf", gamma=0.5), C=0.1)
    m.learn_many(X)
    ref = general_loo(m, monkeypatch)
    fast = m.leave_one_out()
    np.testing.assert_array_equal(fast.error, ref.error)
    both = ~np.isnan(fast.decision)
    np.testing.assert_allclose(fast.decision[both], ref.decision[both], rtol=0, atol=1e-9)


def test_benchmark_quick_run_reports_the_runs_ratio(tmp_path: Any) -> None:
    pytest.importorskip("sklearn.svm")
    import json

    from benchmarks.studies import loo as bench

    out = tmp_path / "loo.json"
    assert bench.main(["--quick", "--data", "synthetic", "--C", "10", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())["results"][0]
    assert rec["C"] == 10.0 and rec["n"] == 200
    assert rec["speedup"] == pytest.approx(rec["brute_seconds"] / rec["ours_seconds"], rel=1e-12)
    assert rec["errors_ours"] == rec["errors_brute"] or rec["judged_differently"] > 0
    assert rec["clear_disagreements"] == 0
