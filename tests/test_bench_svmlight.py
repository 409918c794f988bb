"""The SVMlight anchor (benchmarks/anchors/svmlight.py).

The model-file parser, the objective from a model, the data writer and the command line run
always (hand-written files, no binary). The runs of ``svm_learn`` itself skip unless
``bash benchmarks/anchors/setup_svmlight.sh`` has built it; nothing here builds it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks.anchors import svmlight as sl
from qpcore import Kernel

# A hand-written V6.02 RBF model: two support vectors, coefficients α·y = 0.5 and −0.5, b = 0.25,
# a blank -u line as SVMlight writes it ("empty# kernel parameter -u"), a comment after one SV.
MODEL = """SVM-light Version V6.02
2 # kernel type
3 # kernel parameter -d 
0.5 # kernel parameter -g 
1 # kernel parameter -s 
1 # kernel parameter -r 
empty# kernel parameter -u 
4 # highest feature index 
5 # number of training documents 
3 # number of support vectors plus 1 
0.25 # threshold b, each following line is a SV (starting with alpha*y)
0.5 1:1 3:2 #
-0.5 2:1 4:0.5 #row two
"""


def test_parse_model_reads_header_and_support_vectors() -> None:
    m = sl.parse_model(MODEL)
    assert (m.kernel_type, m.degree, m.gamma, m.coef_lin, m.coef_const) == (2, 3, 0.5, 1.0, 1.0)
    assert (m.highest_feature, m.n_train, m.b, m.n_sv) == (4, 5, 0.25, 2)
    np.testing.assert_array_equal(m.coef, [0.5, -0.5])
    np.testing.assert_array_equal(m.sv.toarray(), [[1, 0, 2, 0], [0, 1, 0, 0.5]])
    k = m.kernel()
    assert (k.name, k.gamma) == ("rbf", 0.5)


def test_model_objective_by_hand() -> None:
    m = sl.parse_model(MODEL)
    # ‖x1 − x2‖² = 1 + 1 + 4 + 0.25 = 6.25, K12 = exp(−0.5·6.25); K11 = K22 = 1
    k12 = np.exp(-0.5 * 6.25)
    quad = 0.25 + 0.25 - 2 * 0.25 * k12          # cᵀKc with c = (0.5, −0.5)
    assert sl.model_objective(m) == pytest.approx(0.5 * quad - 1.0, rel=1e-14)
    # block size does not change the value; a linear kernel given explicitly is used instead
    assert sl.model_objective(m, block=1) == pytest.approx(sl.model_objective(m), rel=1e-14)
    lin = 0.5 * (0.25 * 5 + 0.25 * 1.25 - 0) - 1.0   # x1·x1 = 5, x2·x2 = 1.25, x1·x2 = 0
    assert sl.model_objective(m, Kernel("linear")) == pytest.approx(lin, rel=1e-14)


@pytest.mark.parametrize("bad, match", [
    (MODEL.replace("V6.02", "V5.00", 1), "V5.00"),
    (MODEL.replace("3 # number of support", "4 # number of support"), "announces 3"),
    (MODEL.replace("0.5 1:1 3:2", "0.5 3:1 1:2"), "out of order"),
    (MODEL.replace("0.5 1:1 3:2", "0.5 1:1 9:2"), "above 4"),
    (MODEL.replace("0.5 1:1 3:2", "0.5 1:x"), "line 1"),
    ("\n".join(MODEL.splitlines()[:5]), "header lines"),
    ("LIBSVM model\n" + MODEL, "not an SVMlight"),
])
def test_parse_model_rejects_malformed_files(bad: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sl.parse_model(bad)


def test_poly_and_linear_models_map_to_our_kernels() -> None:
    poly = sl.parse_model(MODEL.replace("2 # kernel type", "1 # kernel type").replace("1 # kernel parameter -s",
                                                                                       "0.25 # kernel parameter -s"))
    k = poly.kernel()
    assert (k.name, k.degree, k.gamma, k.coef0) == ("poly", 3, 0.25, 1.0)
    assert sl.parse_model(MODEL.replace("2 # kernel type", "0 # kernel type")).kernel().name == "linear"
    with pytest.raises(ValueError, match="user defined"):
        sl.parse_model(MODEL.replace("2 # kernel type", "4 # kernel type")).kernel()


def test_write_data_format_and_labels() -> None:
    X = sp.csr_matrix(np.array([[0.0, 1.5, 0.0], [0.1, 0.0, -2.0], [0.0, 0.0, 0.0]]))
    out = io.StringIO()
    sl.write_data(out, X, np.array([1.0, -1.0, 1.0]))
    assert out.getvalue() == "+1 2:1.5\n-1 1:0.1 3:-2.0\n+1 \n"
    with pytest.raises(ValueError, match="±1|\\+1 or -1"):
        sl.write_data(io.StringIO(), X, np.array([1.0, 0.0, 1.0]))   # 0 means unlabelled to SVMlight


def test_read_alphas_and_eps_mapping() -> None:
    np.testing.assert_array_equal(sl.read_alphas("0.5\n-2\n0\n1e-3\n", 4, 1.0), [0.5, 1.0, 0.0, 1e-3])
    with pytest.raises(ValueError, match="3 values for 4"):
        sl.read_alphas("1\n2\n3\n", 4, 1.0)
    assert sl.eps_for_tol(1e-3) == 5e-4


def test_command_line_kernels() -> None:
    cmd = sl.svm_learn_command("svm_learn", "d", "m", "a", 100.0, Kernel("rbf", gamma=0.01), eps=5e-7, cache_mb=500)
    assert cmd == ["svm_learn", "-v", "0", "-z", "c", "-t", "2", "-g", "0.01", "-c", "100.0", "-e", "5e-07",
                   "-m", "500", "-a", "a", "d", "m"]
    cmd = sl.svm_learn_command("s", "d", "m", "a", 1.0, Kernel("poly", gamma=0.5, degree=2, coef0=1.0), eps=1e-3,
                               cache_mb=40, qp_size=20, new_vars=10)
    assert cmd[5:13] == ["-t", "1", "-d", "2", "-s", "0.5", "-r", "1.0"] and cmd[-8:-4] == ["-q", "20", "-n", "10"]
    with pytest.raises(ValueError, match="precomputed"):
        sl.kernel_options(Kernel("precomputed"))


def test_binary_lookup_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QPCORE_SVMLIGHT_DIR", str(tmp_path))
    assert sl.svmlight_dir() == tmp_path and sl.find_svm_learn() is None
    assert "setup_svmlight.sh" in sl.missing_message()
    exe = tmp_path / "svm_learn"
    exe.write_text("#!/bin/sh\nexit 3\n")
    exe.chmod(0o755)
    assert sl.find_svm_learn() == exe
    # a binary that fails is reported as an error record, not an exception
    r = sl.run_svmlight(np.eye(3), np.array([1.0, -1.0, 1.0]), 1.0, Kernel("linear"))
    assert r.get("error") and "exit 3" in r["status"] and np.isnan(r["seconds"])
    monkeypatch.delenv("QPCORE_SVMLIGHT_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sl.svmlight_dir() == tmp_path / "xdg" / "qpcore" / "svmlight"


def test_timeout_is_reported_as_stopped(tmp_path: Path) -> None:
    exe = tmp_path / "svm_learn"
    exe.write_text("#!/bin/sh\nexec sleep 30\n")
    exe.chmod(0o755)
    r = sl.run_svmlight(np.eye(2), np.array([1.0, -1.0]), 1.0, Kernel("linear"), timeout=0.3, binary=exe)
    assert r.get("timeout") and r["seconds"] == float("inf") and "stopped" in r["status"] and r["limit"] == 0.3


# --- with the binary ---------------------------------------------------------------------------

needs_binary = pytest.mark.skipif(sl.find_svm_learn() is None,
                                  reason="SVMlight not built: bash benchmarks/anchors/setup_svmlight.sh")


def _svc_objective(X: np.ndarray, y: np.ndarray, C: float, kernel: Kernel, tol: float) -> float:
    from sklearn.svm import SVC

    from qpcore_formulations.svm import csvc

    svc = SVC(C=C, kernel=kernel.name, gamma=kernel.gamma if kernel.name == "rbf" else "scale", tol=tol).fit(X, y)
    alpha = np.zeros(y.size)
    alpha[svc.support_] = np.abs(svc.dual_coef_[0])
    return float(csvc(X, y, C, kernel, cache_bytes=0).qp.objective(alpha))


@needs_binary
@pytest.mark.data
def test_adult_objective_matches_libsvm() -> None:
    pytest.importorskip("sklearn.svm")
    from qpcore_formulations.data.files import load_dataset
    from qpcore_formulations.svm import csvc

    X, y = load_dataset("adult")
    idx = np.random.default_rng(0).permutation(X.shape[0])[:200]
    Xd, yy = X[idx].toarray(), np.where(y[idx] > 0, 1.0, -1.0)
    for kernel, C in ((Kernel("rbf", gamma=0.05), 10.0), (Kernel("linear"), 1.0)):
        r = sl.run_svmlight(Xd, yy, C, kernel, tol=1e-3)
        assert r["status"] == "finished" and r["seconds"] > 0 and r["peak_mb"] > 0
        x = r["x"]
        assert x.shape == (200,) and np.all((x >= 0) & (x <= C)) and r["n_sv"] == np.count_nonzero(x)
        qp = csvc(Xd, yy, C, kernel, cache_bytes=0).qp
        f_alpha = float(qp.objective(x))
        assert abs(float(yy @ x)) <= 1e-8 * C * yy.size          # the equality constraint
        # the model file's support vectors give the same objective as the α file on the rows
        assert r["objective_model"] == pytest.approx(f_alpha, rel=1e-9)
        f_svc = _svc_objective(Xd, yy, C, kernel, 1e-3)
        assert f_alpha == pytest.approx(f_svc, rel=1e-3)   # the brief's bar
        assert f_alpha == pytest.approx(f_svc, rel=1e-5)   # what both reach at tol 1e-3 here


# --- the SVMlight column of benchmarks.incas (tiny synthetic hard rows) -------------------------

@pytest.mark.parametrize("built", [False, pytest.param(True, marks=needs_binary)])
def test_incas_hard_rows_have_an_svmlight_column(built: bool, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sklearn.svm")
    pytest.importorskip("threadpoolctl")
    import json

    from benchmarks.harness import fmt_ratio
    from benchmarks.studies import incas

    if not built:
        monkeypatch.setenv("QPCORE_SVMLIGHT_DIR", str(tmp_path / "absent"))
    rc = incas.main(["--tiny", "--data", "synthetic", "--rows", "hard_small", "--threads", "1", "--repeat", "1",
                     "--solvers", "incas", "--anchor-input", "dense", "--out-dir", str(tmp_path)])
    assert rc == 0
    store = json.loads((tmp_path / "incas.json").read_text())
    page = (tmp_path / "incas.md").read_text()
    rbf = [p for p in store["hard_small"]["problems"] if p["spec"]["kernel"] == "rbf"]
    lin = [p for p in store["hard_small"]["problems"] if p["spec"]["kernel"] == "linear"]
    assert rbf and lin and all("svmlight@1" not in p["results"] for p in lin)   # default --svmlight rbf
    for p in rbf:
        if not built:
            assert "svm_learn absent" in p["unavailable"]["svmlight"]
            assert "setup_svmlight.sh" in page
            continue
        s, a = p["results"]["svmlight@1"], p["results"]["libsvm"]
        assert s["status"] == "finished" and s["threads"] == 1
        assert s["ratio"] == pytest.approx(s["seconds"] / a["seconds"], rel=1e-12)
        assert s["rel_obj"] is not None and 0 <= s["rel_obj"] < 1e-6    # -e tol/2 at tol 1e-6
        inc = next(r for k, r in p["results"].items() if k.startswith("incas@"))
        assert inc["vs_svmlight"] == pytest.approx(inc["seconds"] / s["seconds"], rel=1e-12)
        assert f"{fmt_ratio(inc['vs_svmlight'])}× SVMlight" in page
        assert any(ln.startswith(f"| {p['spec']['key']} | SVMlight V6.02 | 1 | {fmt_ratio(s['ratio'])}")
                   for ln in page.splitlines())
