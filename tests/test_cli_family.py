"""``qpcore train --type`` over LIBSVM's five SVM types, ``qpcore predict``'s regression lines and
the model file's version 2 (:mod:`qpcore_cli.train`, :mod:`qpcore_cli.model`)."""

from __future__ import annotations

import bz2
import json
import math
import re
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
import scipy.sparse as sp

from qpcore_formulations.data.files import data_dir
from qpcore_train.multiclass import MulticlassSVM, train_multiclass
from qpcore_formulations.svm import SVMModel
from qpcore_formulations.data.svmlight import dump_svmlight, load_svmlight
from qpcore.backends.operators import Kernel
from qpcore_cli import main
from qpcore_cli.model import FORMAT_VERSION, LinearModel, ModelFileError, load_model, load_model_file, save_model
from qpcore_cli.train import KERNEL_STRATEGIES, make_strategy, regression_metrics, svm_type_arg
from qpcore_formulations.formulation import formulation
from qpcore_train.fit import fit_formulation

TYPES = ("c-svc", "nu-svc", "one-class", "epsilon-svr", "nu-svr")
REGRESSIONS = ("epsilon-svr", "nu-svr")


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def decisions(path: Path) -> tuple[list[str], np.ndarray]:
    """The header and the decision column of ``predict --decision`` output."""
    lines = path.read_text().splitlines()
    return lines[:1], np.array([float(line.split()[-1]) for line in lines[1:]])


def blobs(n: int, seed: int, d: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points, ±1 labels (noisy halves) and real targets (a smooth function plus noise)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 4)
    y = np.where(X[:, 0] + 0.4 * rng.normal(size=n) > 0, 1, -1)
    t = np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y, t


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Generated files: classification (±1) and regression (real targets), train and test."""
    folder = tmp_path_factory.mktemp("family")
    X, y, t = blobs(70, 0)
    Xt, yt, tt = blobs(40, 1)
    paths = {"c.trn": (X, y), "c.tst": (Xt, yt), "r.trn": (X, t), "r.tst": (Xt, tt)}
    for name, (A, b) in paths.items():
        dump_svmlight(folder / name, A, b)
    return {name: folder / name for name in paths}


def _files(kind: str, small: dict[str, Path]) -> tuple[Path, Path]:
    prefix = "r" if kind in REGRESSIONS else "c"
    return small[f"{prefix}.trn"], small[f"{prefix}.tst"]


# --------------------------------------------------------------------------------------------
# each type end to end, and the model round trip
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("svm_type", TYPES)
def test_each_type_trains_and_predicts(capsys: pytest.CaptureFixture[str], small: dict[str, Path], tmp_path: Path,
                                       svm_type: str) -> None:
    trn, tst = _files(svm_type, small)
    model, tj, pred, pj = (tmp_path / n for n in ("m.model", "t.json", "p.txt", "p.json"))
    code, out, err = run(capsys, "train", trn, model, "--type", svm_type, "--gamma", "0.5", "--json", tj)
    assert code == 0, err
    report = read_json(tj)
    assert report["type"] == svm_type and report["status"] == "converged" and report["n_sv"] > 0
    loaded = load_model_file(model)
    assert loaded.header["version"] == FORMAT_VERSION == 2 and loaded.type == svm_type
    assert loaded.header["training"]["type"] == svm_type
    code, out, err = run(capsys, "predict", tst, model, pred, "--json", pj)
    assert code == 0, err
    p = read_json(pj)
    assert p["type"] == svm_type
    predictions = pred.read_text().splitlines()
    assert len(predictions) == 40
    if svm_type in REGRESSIONS:
        assert "accuracy" not in out.lower()
        mse = re.search(r"^Mean squared error = (\S+) \(regression\)$", out, re.M)
        scc = re.search(r"^Squared correlation coefficient = (\S+) \(regression\)$", out, re.M)
        assert mse is not None and scc is not None, out
        values = np.array([float(v) for v in predictions])
        truth = np.array([float(line.split()[0]) for line in small["r.tst"].read_text().splitlines()])
        ref_mse, ref_scc = regression_metrics(values, truth)
        assert float(mse.group(1)) == pytest.approx(ref_mse, rel=1e-5)
        assert float(scc.group(1)) == pytest.approx(ref_scc, rel=1e-5)
        assert p["mean_squared_error"] == ref_mse and p["squared_correlation"] == ref_scc
        assert ref_mse < np.var(truth) and ref_scc > 0.5      # it learned something
    else:
        assert set(predictions) <= {"1", "-1"}
        assert re.search(r"^Accuracy = \S+% \(\d+/40\)$", out, re.M), out
        assert p["accuracy"] is not None and 0.0 <= p["accuracy"] <= 1.0
        if svm_type != "one-class":
            assert p["accuracy"] > 0.75
    # what predict printed is what the loaded model says, to the last bit (%.17g)
    code, _, err = run(capsys, "predict", tst, model, tmp_path / "d.txt", "--decision", "-q")
    assert code == 0, err
    head, values = decisions(tmp_path / "d.txt")
    Xt, _ = load_svmlight(tst)
    m = loaded.model
    expected = m.decision_function(Xt) if isinstance(m, SVMModel) else m.raw(Xt)[:, 0]
    assert np.array_equal(values, expected)
    assert head == (["# value decision"] if svm_type in REGRESSIONS else
                    ["# label decision"] if svm_type == "one-class" else ["# label -1/1"])


@pytest.mark.parametrize("svm_type", ("one-class", "epsilon-svr", "nu-svr", "svdd"))
@pytest.mark.parametrize("sparse", (False, True))
def test_function_model_round_trip(tmp_path: Path, svm_type: str, sparse: bool) -> None:
    X, _, t = blobs(50, 2)
    Xs: Any = sp.csr_matrix(np.where(np.abs(X) < 0.5, 0.0, X)) if sparse else X
    kernel = Kernel("rbf", gamma=0.7)
    given = {"C": 2.0, "nu": 0.3, "epsilon": 0.05}
    params = {k: v for k, v in given.items() if k in formulation(svm_type).parameter_names}
    fitted = fit_formulation(svm_type, Xs, t, kernel, make_strategy("smo"), params=params, tol=1e-8)
    m, res = fitted.model, fitted.results[0]
    assert isinstance(m, SVMModel)
    assert res.status.code == "converged" and m.kind == svm_type
    if sparse:      # the operator keeps dense rows here: store the support vectors as CSR
        m = attrs.evolve(m, sv=sp.csr_matrix(m.sv))
    save_model(tmp_path / "m", m, feature_index_base=1)
    assert load_model_file(tmp_path / "m").header["sv_storage"] == ("csr" if sparse else "dense")
    back = load_model(tmp_path / "m")
    assert isinstance(back, SVMModel) and back.kind == svm_type
    assert np.array_equal(back.support, m.support) and np.array_equal(back.dual_coef, m.dual_coef)
    assert back.bias == m.bias and back.kernel == m.kernel
    Xt, _, _ = blobs(30, 3)
    assert np.array_equal(back.decision_function(Xt), m.decision_function(Xt))
    assert np.array_equal(back.predict(Xt), m.predict(Xt))
    # an SVMModel is stored as its own kind, never as another type
    with pytest.raises(ModelFileError, match="not stored|kind"):
        save_model(tmp_path / "x", m, svm_type="c-svc")


def test_nu_svc_round_trip_keeps_type(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    c = rng.integers(0, 3, 90)
    X = rng.normal(size=(90, 2)) + 2.5 * np.eye(3, 2)[c]
    trained = train_multiclass(X, c.astype(np.intp), np.array([1, 2, 3]), np.ones(90), Kernel("rbf", gamma=0.5),
                               make_strategy("smo"), tol=1e-8, nu=0.3)
    save_model(tmp_path / "nu", trained.model, svm_type="nu-svc")
    loaded = load_model_file(tmp_path / "nu")
    assert loaded.type == "nu-svc" and loaded.header["scheme"] == "ovo"
    assert isinstance(loaded.model, MulticlassSVM)
    assert np.array_equal(loaded.model.raw(X), trained.model.raw(X))
    with pytest.raises(ModelFileError, match="svm_type"):
        save_model(tmp_path / "bad", trained.model, svm_type="epsilon-svr")


# --------------------------------------------------------------------------------------------
# against LIBSVM through scikit-learn, at -e 1e-6
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("svm_type", "options"), [
    ("nu-svc", ["-n", "0.4"]),
    ("one-class", ["-n", "0.3"]),
    ("epsilon-svr", ["-c", "2", "-p", "0.2"]),
    ("nu-svr", ["-c", "2", "-n", "0.4"]),
])
def test_agrees_with_libsvm(capsys: pytest.CaptureFixture[str], small: dict[str, Path], tmp_path: Path,
                            svm_type: str, options: list[str]) -> None:
    svm = pytest.importorskip("sklearn.svm")
    X, y, t = blobs(70, 0)
    Xt, _, _ = blobs(40, 1)
    trn, tst = _files(svm_type, small)
    model = tmp_path / "m"
    code, _, err = run(capsys, "train", trn, model, "-s", TYPES.index(svm_type), "--gamma", "0.5", "--tol", "1e-6",
                       *options, "-q")
    assert code == 0, err
    assert run(capsys, "predict", tst, model, tmp_path / "d.txt", "--decision", "-q")[0] == 0
    ours = decisions(tmp_path / "d.txt")[1]
    kw = {"kernel": "rbf", "gamma": 0.5, "tol": 1e-6}
    if svm_type == "nu-svc":
        # our pair (−1, 1) is positive for its first class; scikit-learn's for classes_[1]
        ref = -svm.NuSVC(nu=0.4, **kw).fit(X, y).decision_function(Xt)
    elif svm_type == "one-class":
        ref = svm.OneClassSVM(nu=0.3, **kw).fit(X).decision_function(Xt)
    elif svm_type == "epsilon-svr":
        ref = svm.SVR(C=2.0, epsilon=0.2, **kw).fit(X, t).predict(Xt)
    else:
        ref = svm.NuSVR(C=2.0, nu=0.4, **kw).fit(X, t).predict(Xt)
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-4)


# --------------------------------------------------------------------------------------------
# real data: the Adult demo (classifiers, one-class) and a slice of abalone (regressions)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The first 400 / 300 rows of the bundled Adult demo files (one-based, labels +1/-1)."""
    folder = tmp_path_factory.mktemp("adult")
    out = []
    for name, rows in (("adult_demo.trn.bz2", 400), ("adult_demo.tst.bz2", 300)):
        with as_file(files("qpcore") / "data" / name) as src:
            text = bz2.decompress(Path(src).read_bytes()).decode().splitlines()[:rows]
        path = folder / name.replace(".bz2", "")
        path.write_text("\n".join(text) + "\n")
        out.append(path)
    return out[0], out[1]


@pytest.mark.parametrize(("svm_type", "strategy"), [("nu-svc", "smo"), ("nu-svc", "decomposition"),
                                                    ("one-class", "smo"), ("one-class", "incas")])
def test_adult_demo(capsys: pytest.CaptureFixture[str], adult: tuple[Path, Path], tmp_path: Path, svm_type: str,
                    strategy: str) -> None:
    trn, tst = adult
    model, pj = tmp_path / "m", tmp_path / "p.json"
    code, out, err = run(capsys, "train", trn, model, "-s", svm_type, "-n", "0.3", "--gamma", "0.05",
                         "--strategy", strategy)
    assert code == 0, err
    assert f"{svm_type}, rbf kernel, gamma 0.05, nu 0.3, {strategy}" in out
    code, out, err = run(capsys, "predict", tst, model, tmp_path / "p.txt", "--json", pj)
    assert code == 0, err
    acc = read_json(pj)["accuracy"]
    # the ν-SVC classifies; the one-class model is scored against the ±1 labels, as svm-predict does
    assert acc > (0.78 if svm_type == "nu-svc" else 0.3)
    assert "Accuracy = " in out


@pytest.mark.data
@pytest.mark.parametrize("svm_type", REGRESSIONS)
def test_abalone_slice(capsys: pytest.CaptureFixture[str], tmp_path: Path, svm_type: str) -> None:
    """500 rows of LIBSVM's abalone_scale to train, the next 300 to test; the test MSE equals LIBSVM's."""
    svm = pytest.importorskip("sklearn.svm")
    with bz2.open(data_dir() / "abalone.trn.bz2", "rt") as fh:
        head = [next(fh) for _ in range(800)]
    (tmp_path / "a.trn").write_text("".join(head[:500]))
    (tmp_path / "a.tst").write_text("".join(head[500:]))
    model, pj = tmp_path / "m", tmp_path / "p.json"
    extra = ["-p", "0.1"] if svm_type == "epsilon-svr" else ["-n", "0.5"]
    code, _, err = run(capsys, "train", tmp_path / "a.trn", model, "-s", svm_type, "-c", "10", "--gamma", "1",
                       "--tol", "1e-6", *extra, "-q")
    assert code == 0, err
    code, out, err = run(capsys, "predict", tmp_path / "a.tst", model, tmp_path / "p.txt", "--json", pj)
    assert code == 0, err
    assert "Mean squared error = " in out and "Squared correlation coefficient = " in out
    report = read_json(pj)
    X, y = load_svmlight(tmp_path / "a.trn")
    Xt, yt = load_svmlight(tmp_path / "a.tst", n_features=X.shape[1])
    est = (svm.SVR(C=10.0, epsilon=0.1, gamma=1.0, tol=1e-6) if svm_type == "epsilon-svr"
           else svm.NuSVR(C=10.0, nu=0.5, gamma=1.0, tol=1e-6))
    ref = est.fit(X, y).predict(Xt)
    np.testing.assert_allclose([float(v) for v in (tmp_path / "p.txt").read_text().split()], ref, atol=1e-4)
    assert report["mean_squared_error"] == pytest.approx(float(np.mean((ref - yt) ** 2)), rel=1e-4)
    assert 0.3 < report["squared_correlation"] < 1.0


# --------------------------------------------------------------------------------------------
# svm-predict's metrics, type names, strategies
# --------------------------------------------------------------------------------------------


def test_regression_metrics_are_svm_predicts() -> None:
    rng = np.random.default_rng(5)
    t = rng.normal(size=30)
    p = t + 0.3 * rng.normal(size=30)
    mse, scc = regression_metrics(p, t)
    assert mse == pytest.approx(float(np.mean((p - t) ** 2)), rel=1e-14)
    assert scc == pytest.approx(float(np.corrcoef(p, t)[0, 1] ** 2), rel=1e-12)
    # a constant prediction: svm-predict divides 0 by 0 (nan), a constant target too
    assert math.isnan(regression_metrics(np.ones(4), np.arange(4.0))[1])
    assert regression_metrics(np.arange(3.0), np.arange(3.0)) == (0.0, 1.0)


def test_type_names_and_numbers() -> None:
    assert [svm_type_arg(str(k)) for k in range(5)] == list(TYPES)
    assert [svm_type_arg(name.upper()) for name in TYPES] == list(TYPES)
    for bad in ("5", "-1", "svr", "c_svc"):
        with pytest.raises(Exception, match="unknown SVM type"):
            svm_type_arg(bad)


@pytest.mark.parametrize("strategy", KERNEL_STRATEGIES)
@pytest.mark.parametrize("svm_type", ("nu-svc", "one-class", "epsilon-svr", "nu-svr"))
def test_every_kernel_strategy_or_its_reason(capsys: pytest.CaptureFixture[str], small: dict[str, Path],
                                             tmp_path: Path, svm_type: str, strategy: str) -> None:
    """A strategy that takes the problem agrees with SMO; one that cannot says why (exit 2)."""
    trn, tst = _files(svm_type, small)
    ref, model = tmp_path / "ref", tmp_path / "m"
    base = ["-s", svm_type, "--gamma", "0.5", "--tol", "1e-6", "-q"]
    assert run(capsys, "train", trn, ref, *base)[0] == 0
    code, _, err = run(capsys, "train", trn, model, *base, "--strategy", strategy)
    if strategy == "incas" and svm_type in ("nu-svc", "nu-svr"):
        assert code == 2 and "INCAS handles at most one equality row" in err and err.count("\n") == 1
        assert not model.exists()
        return
    assert code == 0, err
    run(capsys, "predict", tst, ref, tmp_path / "r.txt", "--decision", "-q")
    run(capsys, "predict", tst, model, tmp_path / "s.txt", "--decision", "-q")
    np.testing.assert_allclose(decisions(tmp_path / "s.txt")[1], decisions(tmp_path / "r.txt")[1], atol=1e-4)


# --------------------------------------------------------------------------------------------
# predict's edge cases for one-function models
# --------------------------------------------------------------------------------------------


def test_one_class_without_pm1_labels_and_wider_data(capsys: pytest.CaptureFixture[str], small: dict[str, Path],
                                                     tmp_path: Path) -> None:
    model = tmp_path / "oc"
    assert run(capsys, "train", small["r.trn"], model, "-s", "one-class", "-q")[0] == 0   # real labels ignored
    code, out, err = run(capsys, "predict", small["r.tst"], model, tmp_path / "p.txt", "--json", tmp_path / "p.json")
    assert code == 0 and "Accuracy" not in out and "labels other than +1/-1" in err
    assert read_json(tmp_path / "p.json")["accuracy"] is None
    # a linear-kernel regression: features beyond the model's are zeros in it and change nothing
    X, _, t = blobs(40, 6)
    dump_svmlight(tmp_path / "l.trn", X, t)
    dump_svmlight(tmp_path / "w.tst", np.hstack([X, np.full((40, 2), 3.0)]), t)
    lin = tmp_path / "lin"
    assert run(capsys, "train", tmp_path / "l.trn", lin, "-s", "3", "--kernel", "linear", "-q")[0] == 0
    assert run(capsys, "predict", tmp_path / "l.trn", lin, tmp_path / "a.txt", "-q")[0] == 0
    code, _, err = run(capsys, "predict", tmp_path / "w.tst", lin, tmp_path / "b.txt", "-q")
    assert code == 0 and "beyond the model's 3" in err
    assert np.allclose(np.loadtxt(tmp_path / "a.txt"), np.loadtxt(tmp_path / "b.txt"), rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------------------------
# version 1 files
# --------------------------------------------------------------------------------------------

FIXTURES = Path(__file__).parent / "data"
# points and decision values the version-1 kernel fixture gave when qpcore_cli.model version 1 wrote it
V1_POINTS = np.array([[0.0, 0.0], [2.0, 0.1], [0.2, 1.9], [1.0, 1.0]])
V1_RAW = np.array([[0.9080471726400974, 1.1212758053911998, 0.4448454078931433],
                   [-1.2005036222692929, -0.05046441595805545, 1.1660448178556693],
                   [0.7315191672815937, -0.8030655267803949, -0.994358686611719],
                   [0.008452343161547027, 0.10461165689275273, 0.1814859468377022]])


def test_version_1_files_still_load(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    kern = load_model_file(FIXTURES / "model_v1_kernel.npz")
    assert kern.header["version"] == 1 and "type" not in kern.header and kern.type == "c-svc"
    assert kern.model.classes.tolist() == [-1, 1, 3]
    assert isinstance(kern.model, MulticlassSVM)
    np.testing.assert_allclose(kern.model.raw(V1_POINTS), V1_RAW, rtol=1e-12, atol=1e-14)
    lin = load_model_file(FIXTURES / "model_v1_linear.npz")
    assert lin.type == "c-svc" and lin.feature_index_base == 0
    assert isinstance(lin.model, LinearModel)
    np.testing.assert_allclose(lin.model.raw(V1_POINTS)[:, 0], [0.25, 1.125, -2.025, -0.5])
    # and through the command line
    dump_svmlight(tmp_path / "v.tst", V1_POINTS, np.array([-1, 1, 3, -1]))
    code, out, err = run(capsys, "predict", tmp_path / "v.tst", FIXTURES / "model_v1_kernel.npz", tmp_path / "p.txt")
    assert code == 0, err
    assert (tmp_path / "p.txt").read_text().split() == ["-1", "1", "3", "-1"] and "(4/4)" in out


# --------------------------------------------------------------------------------------------
# bad input: exit 2, one line, the builder's message, no model written
# --------------------------------------------------------------------------------------------

BAD = [
    ("nu zero", "c.trn", ["-s", "1", "-n", "0"], "nu: must be in (0, 1]"),
    ("nu above one", "c.trn", ["-s", "one-class", "--nu", "1.5"], "nu: must be in (0, 1]"),
    ("nu infeasible", "skew", ["-s", "nu-svc", "-n", "0.9"], "specified nu is infeasible"),
    ("epsilon negative", "r.trn", ["-s", "epsilon-svr", "-p", "-0.1"], "epsilon: must be finite and ≥ 0"),
    ("one row one-class", "one", ["-s", "one-class"], "needs at least two training rows"),
    ("one row svr", "one", ["-s", "epsilon-svr"], "needs at least two training rows"),
    ("one row nu-svr", "one", ["-s", "nu-svr"], "needs at least two training rows"),
    ("nan target", "nan", ["-s", "epsilon-svr"], "not finite"),
    ("unknown type", "c.trn", ["-s", "5"], "unknown SVM type '5'"),
    ("linear strategy", "c.trn", ["-s", "one-class", "--strategy", "ocas"], "needs a kernel strategy"),
    ("epsilon for c-svc", "c.trn", ["-p", "0.2"], "-p/--epsilon applies to --type epsilon-svr"),
    ("nu for epsilon-svr", "r.trn", ["-s", "3", "-n", "0.2"], "-n/--nu applies to --type nu-svc"),
    ("C for one-class", "c.trn", ["-s", "2", "-c", "3"], "-c applies to --type c-svc, epsilon-svr, nu-svr"),
    ("class weight nu-svc", "c.trn", ["-s", "1", "--class-weight", "1:2"], "--class-weight applies to --type c-svc"),
    ("multiclass svr", "r.trn", ["-s", "4", "--multiclass", "ovr"], "--multiclass applies to --type c-svc, nu-svc"),
    ("incas nu-svr", "r.trn", ["-s", "nu-svr", "--strategy", "incas"], "--strategy incas cannot take the nu-svr dual"),
]


@pytest.mark.parametrize(("what", "data", "argv", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input(capsys: pytest.CaptureFixture[str], small: dict[str, Path], tmp_path: Path, what: str,
                   data: str, argv: list[str], message: str) -> None:
    (tmp_path / "one").write_text("1.5 1:0.5 2:1\n")
    (tmp_path / "nan").write_text("1.5 1:0.5\nnan 1:0.2\n")
    (tmp_path / "skew").write_text("".join(f"{1 if i < 3 else -1} 1:{i}\n" for i in range(20)))
    path = small[data] if data in small else tmp_path / data
    model = tmp_path / "m"
    code, out, err = run(capsys, "train", path, model, *argv)
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("qpcore: error: ") and "Traceback" not in err
    assert message in err, err
    assert not model.exists()


def test_limits_keep_the_model_and_help_lists_the_options(capsys: pytest.CaptureFixture[str],
                                                          small: dict[str, Path], tmp_path: Path) -> None:
    model, report = tmp_path / "m", tmp_path / "t.json"
    code, out, _ = run(capsys, "train", small["r.trn"], model, "-s", "epsilon-svr", "--max-iter", "1",
                       "--json", report)
    assert code == 3 and "max_iter (exit 3)" in out and model.exists()
    assert read_json(report)["problems"][0]["status"] == "max_iter"
    assert run(capsys, "predict", small["r.tst"], model, tmp_path / "p.txt", "-q")[0] == 0
    code, out, _ = run(capsys, "train", "--help")
    assert code == 0
    for text in ("-s TYPE, --type TYPE", "-n NU, --nu NU", "-p EPS, --epsilon EPS", "epsilon-svr or 3"):
        assert text in out, text
