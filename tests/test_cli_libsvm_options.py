"""svm-train's and svm-predict's options on ``qpcore train`` / ``qpcore predict`` (issue 26, section 3).

:mod:`qpcore_cli.libsvm_options`, ``-v N`` (:mod:`qpcore_cli.crossval`), ``-b 1``, ``--train-accuracy``
and the γ in the output.
"""

from __future__ import annotations

import bz2
import json
import re
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qpcore_train.multiclass import MulticlassSVM
from qpcore_formulations.data.svmlight import dump_svmlight
from qpcore_cli import main
from qpcore_cli.main import build_parser
from qpcore_cli.libsvm_options import PREDICT_MAPPING, TRAIN_MAPPING, kernel_arg, libsvm_argv
from qpcore_cli.model import load_model_file

ROOT = Path(__file__).resolve().parent.parent


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def one_line_error(code: int, err: str) -> str:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("qpcore: error: "), err
    return err


@pytest.fixture(scope="module")
def adult(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 300 rows of the bundled Adult demo training file (one-based, labels +1/-1)."""
    folder = tmp_path_factory.mktemp("adult")
    with as_file(files("qpcore") / "data" / "adult_demo.trn.bz2") as src:
        text = bz2.decompress(Path(src).read_bytes()).decode().splitlines()[:300]
    path = folder / "adult300.txt"
    path.write_text("\n".join(text) + "\n")
    return path


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three well-separated classes (labels 1, 2, 3), 150 rows, 4 features."""
    rng = np.random.default_rng(3)
    c = rng.integers(0, 3, 150)
    X = rng.normal(size=(150, 4)) + 2.5 * np.eye(3, 4)[c]
    path = tmp_path_factory.mktemp("three") / "three.txt"
    dump_svmlight(path, X, c + 1)
    return path


@pytest.fixture(scope="module")
def regression(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(120, 3))
    t = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.05 * rng.normal(size=120)
    path = tmp_path_factory.mktemp("reg") / "reg.txt"
    dump_svmlight(path, X, t)
    return path


# --------------------------------------------------------------------------------------------
# the argument pre-pass and argument types
# --------------------------------------------------------------------------------------------


def test_weight_options_are_rewritten() -> None:
    argv = ["train", "-s", "0", "-w1", "5", "-w-1", "2", "-w+3=0.5", "-w2.5e0", "1", "data"]
    assert libsvm_argv(argv) == ["train", "-s", "0", "--class-weight=1:5", "--class-weight=-1:2",
                                 "--class-weight=+3:0.5", "--class-weight=2.5e0:1", "data"]
    # only qpcore train's arguments, never after --, and nothing that is not -w<number>
    assert libsvm_argv(["predict", "-w1", "5"]) == ["predict", "-w1", "5"]
    assert libsvm_argv(["train", "--", "-w1", "5"]) == ["train", "--", "-w1", "5"]
    assert libsvm_argv(["train", "-wx", "5"]) == ["train", "-wx", "5"]
    assert libsvm_argv(["train", "d", "-w1"]) == ["train", "d", "--class-weight=1:"]
    assert libsvm_argv(["train", "--class-weight", "-1:2", "--class-weight", "1:3"]) == [
        "train", "--class-weight=-1:2", "--class-weight", "1:3"]


@given(st.lists(st.tuples(st.integers(-1000, 1000), st.floats(1e-3, 1e3), st.booleans()), max_size=5))
def test_weight_options_parse_as_class_weights(weights: list[tuple[int, float, bool]]) -> None:
    """Any -wLABEL W (or -wLABEL=W) sequence reaches argparse as the same --class-weight list."""
    argv = ["train", "-c", "2"]
    for label, w, joined in weights:
        argv += [f"-w{label}={w!r}"] if joined else [f"-w{label}", repr(w)]
    args = build_parser().parse_args(libsvm_argv([*argv, "data.txt"]))
    assert args.class_weight == ([f"{label}:{w!r}" for label, w, _ in weights] or None)
    assert args.data == "data.txt" and args.model_file is None and args.C == 2.0


def test_kernel_numbers() -> None:
    assert [kernel_arg(str(k)) for k in range(4)] == ["linear", "poly", "rbf", "sigmoid"]
    assert kernel_arg("RBF") == "rbf"
    with pytest.raises(Exception, match="precomputed"):
        kernel_arg("4")
    with pytest.raises(Exception, match="unknown kernel"):
        kernel_arg("5")


# --------------------------------------------------------------------------------------------
# svm-train's command line
# --------------------------------------------------------------------------------------------


def test_the_issue_command_line(capsys: pytest.CaptureFixture[str], adult: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The command of issue 26 runs, prints svm-train's line and writes no model."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "train", "-s", "0", "-t", "2", "-g", "0.05", "-c", "10", "-e", "0.001", "-m", "500",
                         "-h", "0", "-w1", "5", "-w-1", "2", "-b", "1", "-v", "5", adult, "--json", tmp_path / "r.json")
    assert code == 0, err
    m = re.fullmatch(r"Cross Validation Accuracy = (\d+(\.\d+)?)%\n", out)
    assert m is not None, out
    assert 50.0 < float(m.group(1)) <= 100.0
    assert list(tmp_path.glob("*.model")) == []
    r = read_json(tmp_path / "r.json")
    assert r["shrinking"] is False and r["class_weight"] == {"1": 5.0, "-1": 2.0} and r["gamma"] == 0.05 and r["cache_mb"] == 500
    assert r["cross_validation"]["folds"] == 5 and r["cross_validation"]["rows"] == 300
    assert abs(r["cross_validation"]["accuracy"] * 100 - float(m.group(1))) < 1e-3
    assert "-b 1 is not used by -v" in err


def test_default_model_name_gamma_and_short_options(capsys: pytest.CaptureFixture[str], adult: Path,
                                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "train", "-t", "1", "-d", "2", "-r", "1", "-c", "0.5", "-q", adult)
    assert code == 0, err
    model = tmp_path / "adult300.txt.model"     # svm-train's default name, in the current folder
    assert model.exists()
    loaded = load_model_file(model)
    assert isinstance(loaded.model, MulticlassSVM)
    d = int(loaded.model.sv.shape[1])
    kernel = loaded.header["kernel"]
    assert kernel["name"] == "poly" and kernel["degree"] == 2 and kernel["coef0"] == 1.0
    assert kernel["gamma"] == pytest.approx(1.0 / d)
    # the γ used is shown, with where it came from
    assert f"poly kernel, gamma {1.0 / d:.6g} (1/n_features), degree 2, coef0 1" in out
    assert loaded.header["training"]["gamma_source"] == "1/n_features"
    # -g 0 is svm-train's "default" too; a given γ is shown as given
    code, out, _ = run(capsys, "train", "-g", "0", adult, tmp_path / "g0.model")
    assert code == 0 and f"rbf kernel, gamma {1.0 / d:.6g} (1/n_features)" in out
    code, out, _ = run(capsys, "train", "-g", "0.25", adult, tmp_path / "g.model")
    assert code == 0 and "rbf kernel, gamma 0.25, C 1" in out


def test_shrinking_switch(capsys: pytest.CaptureFixture[str], adult: Path, tmp_path: Path) -> None:
    js = tmp_path / "r.json"
    for h, want in (("0", False), ("1", True)):
        code, _, err = run(capsys, "train", "-h", h, adult, tmp_path / "m", "--json", js)
        assert code == 0 and err == "", err
        assert read_json(js)["shrinking"] is want
    # a strategy without the option: accepted, and said to be ignored
    code, _, err = run(capsys, "train", "-h", "0", "--strategy", "gpcg", adult, tmp_path / "m", "--json", js)
    assert code == 0 and "-h 0 ignored: --strategy gpcg has no shrinking option" in err
    assert "-h 0 ignored" in " ".join(read_json(js)["notes"])
    one_line_error(*run(capsys, "train", "-h", "0", "--shrinking", adult, tmp_path / "m")[::2])
    one_line_error(*run(capsys, "train", "-h", "2", adult, tmp_path / "m")[::2])


def test_help_and_bad_options(capsys: pytest.CaptureFixture[str], adult: Path, tmp_path: Path) -> None:
    code, out, _ = run(capsys, "train", "--help")
    assert code == 0
    for short, long, _ in TRAIN_MAPPING:
        assert short in out and long in out
    assert "-v is cross-validation" in out and "--verbose" in out and "--train-accuracy" in out
    code, out, _ = run(capsys, "predict", "--help")
    assert code == 0 and all(short in out for short, _, _ in PREDICT_MAPPING)
    err = one_line_error(*run(capsys, "train", "-t", "4", adult, tmp_path / "m")[::2])
    assert "precomputed" in err
    err = one_line_error(*run(capsys, "train", "-v", "1", adult)[::2])
    assert "n must be >= 2" in err
    one_line_error(*run(capsys, "train", "-b", "1", "-s", "3", adult, tmp_path / "m")[::2])
    one_line_error(*run(capsys, "train", "-w1", "5", "-s", "1", adult, tmp_path / "m")[::2])
    one_line_error(*run(capsys, "train", "-w7", "5", adult, tmp_path / "m")[::2])   # no class 7


def test_the_docs_show_the_mapping() -> None:
    # a | inside a table cell is written \| in the page
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8").replace("\\|", "|")
    for short, long, _ in (*TRAIN_MAPPING, *PREDICT_MAPPING):
        assert f"`{short}`" in text and f"`{long}`" in text, short


# --------------------------------------------------------------------------------------------
# cross-validation
# --------------------------------------------------------------------------------------------


def test_cross_validation_engine_agrees_with_the_fold_loop(capsys: pytest.CaptureFixture[str], three: Path,
                                                           tmp_path: Path) -> None:
    """c-svc goes to qpcore_train.model_selection; under --time-limit the folds are trained here, on the same folds."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run(capsys, "train", "-v", "4", "-c", "2", three, "--json", a)[0] == 0
    assert run(capsys, "train", "-v", "4", "-c", "2", three, "--time-limit", "600", "--json", b)[0] == 0
    ca, cb = read_json(a)["cross_validation"], read_json(b)["cross_validation"]
    assert ca["engine"] != cb["engine"]
    assert ca["rows"] == cb["rows"] == 150
    assert abs(ca["accuracy"] - cb["accuracy"]) <= 1.0 / 150 + 1e-12
    assert ca["accuracy"] > 0.8


@pytest.mark.parametrize("svm_type", ["1", "2"])
def test_cross_validation_other_classifiers(capsys: pytest.CaptureFixture[str], adult: Path, svm_type: str) -> None:
    code, out, err = run(capsys, "train", "-s", svm_type, "-n", "0.3", "-v", "3", "-g", "0.05", adult)
    assert code == 0, err
    m = re.fullmatch(r"Cross Validation Accuracy = ([\d.]+)%\n", out)
    assert m is not None, out
    assert float(m.group(1)) > (60.0 if svm_type == "1" else 10.0)


def test_cross_validation_regression(capsys: pytest.CaptureFixture[str], regression: Path, tmp_path: Path) -> None:
    code, out, err = run(capsys, "train", "-s", "3", "-p", "0.05", "-c", "10", "-v", "5", regression,
                         "--json", tmp_path / "r.json")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    mse = float(re.fullmatch(r"Cross Validation Mean squared error = (\S+)", lines[0]).group(1))  # type: ignore[union-attr]
    scc = float(re.fullmatch(r"Cross Validation Squared correlation coefficient = (\S+)",  # type: ignore[union-attr]
                             lines[1]).group(1))
    assert 0 < mse < 0.1 and 0.8 < scc <= 1.0
    cv = read_json(tmp_path / "r.json")["cross_validation"]
    assert cv["mean_squared_error"] == pytest.approx(mse, rel=1e-5)
    assert cv["engine"] == "fold by fold"


# --------------------------------------------------------------------------------------------
# -b 1
# --------------------------------------------------------------------------------------------


def test_probability_round_trip(capsys: pytest.CaptureFixture[str], three: Path, tmp_path: Path) -> None:
    model = tmp_path / "p.model"
    code, out, err = run(capsys, "train", "-b", "1", three, model)
    assert code == 0, err
    assert "Platt's sigmoids fitted (-b 1)" in out
    pred = tmp_path / "pred.txt"
    code, out, err = run(capsys, "predict", "-b", "1", three, model, pred)
    assert code == 0, err
    lines = pred.read_text().splitlines()
    assert lines[0] == "labels 1 2 3"
    rows = [line.split() for line in lines[1:]]
    assert len(rows) == 150
    P = np.array([[float(v) for v in r[1:]] for r in rows])
    labels = np.array([int(r[0]) for r in rows])
    assert np.allclose(P.sum(axis=1), 1.0, atol=1e-4)
    assert np.array_equal(labels, np.argmax(P, axis=1) + 1)
    assert re.search(r"Accuracy = [\d.]+% \(\d+/150\)", out)
    # without -b 1 at training time: svm-predict's refusal, one line
    code, _, _ = run(capsys, "train", three, tmp_path / "plain.model")
    assert code == 0
    err = one_line_error(*run(capsys, "predict", "-b", "1", three, tmp_path / "plain.model", pred)[::2])
    assert "does not support probability estimates" in err


# --------------------------------------------------------------------------------------------
# the training-accuracy pass
# --------------------------------------------------------------------------------------------


def test_train_accuracy_modes(capsys: pytest.CaptureFixture[str], adult: Path, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    js = tmp_path / "r.json"
    code, out, _ = run(capsys, "train", adult, tmp_path / "m", "--train-accuracy", "off", "--json", js)
    assert code == 0 and "train accuracy   - (--train-accuracy off)" in out
    assert read_json(js)["train_accuracy"] is None
    code, out, _ = run(capsys, "train", adult, tmp_path / "m", "--json", js)
    full = read_json(js)["train_accuracy"]
    assert code == 0 and 0.7 < full <= 1.0
    # small limits stand in for 20,000 and 5,000 rows
    monkeypatch.setattr("qpcore_cli.common.AUTO_ROWS", 100)
    monkeypatch.setattr("qpcore_cli.common.SAMPLE_ROWS", 120)
    code, out, _ = run(capsys, "train", adult, tmp_path / "m", "--json", js)
    assert code == 0 and "more than 100 rows" in out and read_json(js)["train_accuracy"] is None
    code, out, _ = run(capsys, "train", adult, tmp_path / "m", "--train-accuracy", "sample", "--json", js)
    r = read_json(js)
    assert code == 0 and "seeded sample of 120 of 300 rows" in out
    assert r["train_evaluation"]["rows"] == 120 and r["train_evaluation"]["sample"] is True
    assert 0.6 < r["train_accuracy"] <= 1.0


@pytest.mark.filterwarnings("ignore:The `probability` parameter was deprecated:FutureWarning")
def test_probabilities_match_libsvm(capsys: pytest.CaptureFixture[str], three: Path, tmp_path: Path) -> None:
    """train -b 1 / predict -b 1 against LIBSVM's own (scikit-learn's SVC(probability=True)) on 3 classes."""
    svm = pytest.importorskip("sklearn.svm")
    from qpcore_formulations.data.svmlight import load_svmlight

    model, pred = tmp_path / "p.model", tmp_path / "pred.txt"
    assert run(capsys, "train", "-b", "1", "-g", "0.5", "-c", "1", "-q", three, model)[0] == 0
    assert run(capsys, "predict", "-b", "1", "-q", three, model, pred)[0] == 0
    lines = pred.read_text().splitlines()
    ours = np.array([[float(v) for v in line.split()[1:]] for line in lines[1:]])
    X, y = load_svmlight(three)
    ref = svm.SVC(C=1.0, gamma=0.5, probability=True, random_state=0).fit(X, y)
    assert [str(int(c)) for c in ref.classes_] == lines[0].split()[1:]
    theirs = ref.predict_proba(X)
    # the internal folds are drawn differently: close, not equal
    assert float(np.mean(np.abs(ours - theirs))) < 0.02
