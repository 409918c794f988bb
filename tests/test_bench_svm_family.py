"""The plumbing of ``python -m benchmarks.svm_family`` at quick sizes on generated data (seconds).

Checks the JSON store's rows (every formulation at both tolerances, the strategies that apply,
``best``, the bar), that ratios and rel_obj are the ones computed from the recorded runs, that
LIBSVM's α mapped into our variables is feasible and as good as ours at tol 1e-6 (the mapping of
each formulation), and that the page shows them. Nothing is timed for a claim.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn.svm")
pytest.importorskip("threadpoolctl")

from benchmarks.studies import svm_family, svm_family_page, svm_family_rows  # noqa: E402
from benchmarks.harness import fmt_ratio  # noqa: E402

ONE_ROW = ("one-class", "epsilon-svr")     # INCAS takes these (one equality row)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("svm_family")
    rc = svm_family.main(["--quick", "--data", "synthetic", "--threads", "1", "--repeat", "1", "--out-dir", str(out)])
    assert rc == 0
    return json.loads((out / "svm_family.json").read_text()), (out / "svm_family.md").read_text()


def test_every_row_at_both_tolerances(quick_run: tuple[dict[str, Any], str]) -> None:
    store, page = quick_run
    assert set(svm_family_rows.ROW_NAMES) <= set(store) and "_meta" in store
    for row in svm_family_rows.BATCH_ROWS:
        probs = store[row]["problems"]
        assert [p["tol"] for p in probs] == [1e-3, 1e-6]
        assert store[row]["_run"]["mode"] == "quick"
        check = store[row]["_run"]["anchor_check"]          # LIBSVM's input: the faster of the two
        assert check["chosen"] == min(("dense", "sparse"), key=lambda k: check[f"{k}_s"])
        assert all(p["anchor_input"] == check["chosen"] for p in probs)
        for p in probs:
            res = p["results"]
            kind = p["spec"]["kind"]
            want = {"libsvm", "smo@1", "decomposition@1", "best@1"} | ({"incas@1"} if kind in ONE_ROW else set())
            assert set(res) == want, (row, set(res))
            if kind not in ONE_ROW:
                assert "equality" in p["unavailable"]["incas"]
            assert f"## {svm_family_page.TITLES[row]}" in page


def test_ratios_and_rel_obj_come_from_the_runs(quick_run: tuple[dict[str, Any], str]) -> None:
    store, _ = quick_run
    for row in svm_family_rows.BATCH_ROWS:
        for p in store[row]["problems"]:
            res, f_ref = p["results"], p["f_ref"]
            anchor = res["libsvm"]
            assert anchor["seconds"] > 0 and anchor["status"] == "converged"
            objs = [r["objective"] for r in res.values()] + ([p["f_tight"]] if p["f_tight"] is not None else [])
            assert f_ref == min(objs)
            for key, r in res.items():
                assert r["rel_obj"] == pytest.approx((r["objective"] - f_ref) / abs(f_ref), abs=1e-15)
                assert r["rel_obj"] >= 0.0
                if key != "libsvm":
                    assert r["ratio"] == pytest.approx(r["seconds"] / anchor["seconds"], rel=1e-12)
                    assert r["status"] == "converged" and r["threads"] == 1
                if p["tol"] == 1e-6:
                    # both sides near the optimum: LIBSVM's α mapped into our variables is feasible
                    # and as good as ours, which checks each formulation's mapping
                    assert r["rel_obj"] <= 1e-6, (row, key)
                    assert r["primal_infeas"] <= 1e-8 * max(1.0, abs(f_ref)), (row, key)


def test_best_is_the_fastest_good_one_and_the_bar_follows(quick_run: tuple[dict[str, Any], str]) -> None:
    store, page = quick_run
    for row in svm_family_rows.BATCH_ROWS:
        for p in store[row]["problems"]:
            res = p["results"]
            best = res["best@1"]
            ours = [r for k, r in res.items() if k not in ("libsvm", "best@1")]
            good = [r for r in ours if r["rel_obj"] <= svm_family.BAR["rel_obj"]] or ours
            fastest = min(good, key=lambda r: r["seconds"])
            assert best["best_of"] == fastest["solver"] and best["seconds"] == fastest["seconds"]
            assert best["bar"] == (best["ratio"] <= svm_family.BAR["ratio"]
                                   and best["rel_obj"] <= svm_family.BAR["rel_obj"])
            flag = "**met**" if best["bar"] else "not met"
            assert any(f"| {p['tol']:g} | 1 | {svm_family_rows.solver_label(best['best_of'])} | "
                       f"{svm_family_page._ratio_cell(best)} |" in ln and ln.endswith(f"| {flag} |")
                       for ln in page.splitlines()), (row, p["tol"])
    assert "## Summary: the bar" in page


def test_incremental_row_runs_or_says_why_not(quick_run: tuple[dict[str, Any], str]) -> None:
    store, page = quick_run
    inc = store["incremental"]
    lib = inc["libsvm_refit"]
    assert lib["seconds"] > 0 and lib["rows"] == inc["base"] + 1
    if "learn" in inc:
        s = inc["learn"]["1"]
        assert s["speedup"] == pytest.approx(lib["seconds"] / s["seconds"])
        assert abs(inc["check"]["rel_diff"]) <= 1e-6
        assert f"{fmt_ratio(s['speedup'])}×" in page
    else:
        why = inc["unavailable"]["incremental"]
        assert why and why in page


def test_libsvm_alpha_maps_nu_svr_onto_the_two_sums() -> None:
    """ν-SVR: LIBSVM's coef fixes α − α* only; the mapped point meets Σα = Σα* = Cνl/2 and keeps α − α*."""
    import numpy as np

    class Fitted:
        support_ = np.array([0, 2, 3])
        dual_coef_ = np.array([[1.5, -2.0, 0.5]])

    spec = svm_family.Spec("nu_svr", "nu-svr", "abalone", 4, 1.0, C=2.0, nu=0.75)
    x = svm_family.libsvm_alpha(spec, Fitted(), np.zeros(4))
    np.testing.assert_allclose(x[:4] - x[4:], [1.5, 0.0, -2.0, 0.5])
    assert x[:4].sum() == pytest.approx(2.0 * 0.75 * 4 / 2) and x[4:].sum() == pytest.approx(x[:4].sum())
    assert x.min() >= 0.0 and x.max() <= 2.0


@pytest.mark.data
def test_quick_abalone_row_on_the_shared_data(tmp_path: Path) -> None:
    rc = svm_family.main(["--quick", "--rows", "epsilon_svr", "--tols", "1e-6", "--solvers", "smo", "--threads", "1",
                          "--repeat", "1", "--out-dir", str(tmp_path)])
    assert rc == 0
    p = json.loads((tmp_path / "svm_family.json").read_text())["epsilon_svr"]["problems"][0]
    assert p["spec"]["data"] == "abalone" and p["spec"]["n"] == svm_family.QUICK.abalone
    assert p["results"]["smo@1"]["rel_obj"] <= 1e-6 and p["results"]["libsvm"]["rel_obj"] <= 1e-6
