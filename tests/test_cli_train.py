"""``qpcore train`` / ``qpcore predict`` and the model file (:mod:`qpcore_cli.train`, :mod:`qpcore_cli.model`)."""

from __future__ import annotations

import bz2
import io
import json
import zipfile
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from qpcore_formulations.data.files import data_dir
from qpcore_formulations.data.svmlight import dump_svmlight, load_svmlight
from qpcore_train.multiclass import MulticlassSVM, problems_of, train_multiclass
from qpcore.backends.operators import Kernel
from qpcore.core.state import Status
from qpcore_cli import main
from qpcore_cli.model import (
    FORMAT_VERSION,
    LinearModel,
    ModelFileError,
    load_model,
    load_model_file,
    save_model,
)
from qpcore_cli.train import (
    EXIT_CODES,
    KERNEL_STRATEGIES,
    LINEAR_STRATEGIES,
    GapReporter,
    exit_code,
    make_strategy,
    worst_status,
)

ALL_STRATEGIES = (*KERNEL_STRATEGIES, *LINEAR_STRATEGIES)


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def assert_one_line_error(code: int, out: str, err: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("qpcore: error: "), err
    assert "Traceback" not in err


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines()


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


def four_classes(n: int, seed: int, labels: tuple[int, ...] = (2, 5, 7, 9), d: int = 6
                 ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    c = rng.integers(0, len(labels), n)
    X = rng.normal(size=(n, d)) + 3.0 * np.eye(len(labels), d)[c]
    return X, np.array(labels)[c]


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 4-class training file (labels 2, 5, 7, 9; 300 rows) and a test file (150 rows)."""
    folder = tmp_path_factory.mktemp("multi")
    X, y = four_classes(300, 0)
    Xt, yt = four_classes(150, 1)
    dump_svmlight(folder / "m.trn", X, y)
    dump_svmlight(folder / "m.tst", Xt, yt)
    return folder / "m.trn", folder / "m.tst"


# --------------------------------------------------------------------------------------------
# train + predict round trips
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ALL_STRATEGIES)
def test_round_trip_each_strategy(capsys: pytest.CaptureFixture[str], adult: tuple[Path, Path], tmp_path: Path,
                                  strategy: str) -> None:
    trn, tst = adult
    model, report, pred, pjson = (tmp_path / n for n in ("a.model", "t.json", "pred.txt", "p.json"))
    code, out, err = run(capsys, "train", trn, model, "--strategy", strategy, "--json", report)
    assert code == 0, out + err
    r = read_json(report)
    assert r["status"] == "converged" and r["exit_status"] == 0 and r["strategy"] == strategy
    assert r["classes"] == ["-1", "1"] and r["n_train"] == 400 and r["feature_index_base"] == 1
    assert r["kind"] == ("linear" if strategy in LINEAR_STRATEGIES else "kernel")
    assert r["train_accuracy"] > 0.77
    assert "train accuracy" in out and "converged" in out
    assert err == ""                  # stderr is not a terminal: no progress
    code, out, err = run(capsys, "predict", tst, model, pred, "--json", pjson)
    assert code == 0, err
    labels = lines_of(pred)
    assert len(labels) == 300 and set(labels) <= {"1", "-1"}   # ints stay ints: '1', not '1.0'
    X, y = load_svmlight(tst, n_features=123, zero_based=False)
    loaded = load_model(model)
    expect = loaded.predict(X[:, :loaded.n_features] if X.shape[1] > loaded.n_features else X)
    assert labels == [str(v) for v in expect]
    p = read_json(pjson)
    assert p["accuracy"] == pytest.approx(np.mean(expect == y)) and p["accuracy"] > 0.7
    assert out.startswith("Accuracy = ")


def test_kernel_predictions_equal_the_python_api(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    trn, tst = multi
    X, y = load_svmlight(trn, zero_based=False)
    Xt, _ = load_svmlight(tst, n_features=X.shape[1], zero_based=False)
    classes, y_idx = np.unique(y.astype(np.int64), return_inverse=True)
    for scheme in ("ovo", "ovr"):
        model = tmp_path / f"{scheme}.model"
        pred = tmp_path / f"{scheme}.txt"
        code, _, err = run(capsys, "train", trn, model, "--multiclass", scheme, "--gamma", "0.2", "-c", "2",
                           "--class-weight", "5:1.5", "-q")
        assert code == 0, err
        assert run(capsys, "predict", tst, model, pred, "-q")[0] == 0
        C = 2.0 * np.where(classes[y_idx] == 5, 1.5, 1.0)
        api = train_multiclass(X, y_idx.astype(np.intp), classes, C, Kernel("rbf", gamma=0.2), make_strategy("smo"),
                               scheme=scheme, max_iter=10_000_000).model
        assert lines_of(pred) == [str(v) for v in api.predict(Xt)]
        loaded = load_model(model)
        assert isinstance(loaded, MulticlassSVM)
        np.testing.assert_array_equal(loaded.D, api.D)
        np.testing.assert_array_equal(loaded.bias, api.bias)
        np.testing.assert_array_equal(loaded.support, api.support)
        assert loaded.classes.dtype == np.int64 and loaded.classes.tolist() == [2, 5, 7, 9]


@pytest.mark.parametrize(("strategy", "scheme", "n_problems"), [("smo", None, 6), ("decomposition", "ovr", 4),
                                                                  ("ocas", None, 4), ("asvm", "ovo", 6)])
def test_multiclass(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path], tmp_path: Path, strategy: str,
                    scheme: str | None, n_problems: int) -> None:
    trn, tst = multi
    model, report, pred, pjson = (tmp_path / n for n in ("m.model", "t.json", "p.txt", "p.json"))
    extra = [] if scheme is None else ["--multiclass", scheme]
    code, _, err = run(capsys, "train", trn, model, "--strategy", strategy, "--json", report, *extra)
    assert code == 0, err
    r = read_json(report)
    assert r["n_problems"] == n_problems and len(r["problems"]) == n_problems
    assert r["scheme"] == (scheme or ("ovr" if strategy in LINEAR_STRATEGIES else "ovo"))
    assert r["problems"][0]["name"] in ("2 vs 5", "2 vs rest")
    assert run(capsys, "predict", tst, model, pred, "--json", pjson)[0] == 0
    assert set(lines_of(pred)) <= {"2", "5", "7", "9"}
    assert read_json(pjson)["accuracy"] > 0.9


def test_decision_values(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path], tmp_path: Path) -> None:
    trn, tst = multi
    model, pred = tmp_path / "m.model", tmp_path / "d.txt"
    assert run(capsys, "train", trn, model, "--strategy", "ocas", "-q")[0] == 0
    assert run(capsys, "predict", tst, model, pred, "--decision")[0] == 0
    text = lines_of(pred)
    assert text[0] == "# label 2/rest 5/rest 7/rest 9/rest"
    table = np.loadtxt(pred)                     # the header is a comment
    assert table.shape == (150, 5)
    labels = np.array([2, 5, 7, 9])
    np.testing.assert_array_equal(table[:, 0], labels[np.argmax(table[:, 1:], axis=1)])
    X, _ = load_svmlight(tst, zero_based=False)
    np.testing.assert_array_equal(table[:, 1:], load_model(model).raw(X))   # %.17g: exact


def test_labels_round_trip_exactly(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    X, y = four_classes(120, 3, labels=(0, 1))
    for labels, expect in (((-1.0, 1.0), {"-1", "1"}), ((0.5, 1.5), {"0.5", "1.5"}), ((3.0, 70000.0), {"3", "70000"})):
        yy = np.where(y == 1, labels[1], labels[0])
        dump_svmlight(tmp_path / "l.trn", X, yy)
        model, pred = tmp_path / "l.model", tmp_path / "l.txt"
        assert run(capsys, "train", tmp_path / "l.trn", model, "-q")[0] == 0
        assert run(capsys, "predict", tmp_path / "l.trn", model, pred)[0] == 0
        assert set(lines_of(pred)) == expect
        kind = "f" if labels[0] == 0.5 else "i"
        assert load_model(model).classes.dtype.kind == kind


def test_zero_based_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    X, y = four_classes(100, 4, labels=(-1, 1))
    dump_svmlight(tmp_path / "z.trn", X, y, zero_based=True)
    model, pred = tmp_path / "z.model", tmp_path / "z.txt"
    assert run(capsys, "train", tmp_path / "z.trn", model, "-q")[0] == 0
    loaded = load_model_file(model)
    assert loaded.header["feature_index_base"] == 0 and loaded.model.n_features == 6
    assert run(capsys, "predict", tmp_path / "z.trn", model, pred, "-q")[0] == 0
    assert lines_of(pred) == [str(v) for v in loaded.model.predict(X)]


def test_feature_widths(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Missing trailing features are zeros; features beyond the model's are zeros in the model
    (svm-predict's semantics: they add to an RBF distance), with a warning."""
    X, y = four_classes(120, 5, labels=(-1, 1))
    dump_svmlight(tmp_path / "w.trn", X, y)
    model = tmp_path / "w.model"
    assert run(capsys, "train", tmp_path / "w.trn", model, "-q")[0] == 0
    loaded = load_model(model)
    assert isinstance(loaded, MulticlassSVM)
    narrow = X.copy()
    narrow[:, -1] = 0.0
    dump_svmlight(tmp_path / "narrow.tst", narrow[:, :-1], y)
    code, _, err = run(capsys, "predict", tmp_path / "narrow.tst", model, tmp_path / "n.txt", "-q")
    assert code == 0 and err == ""
    assert lines_of(tmp_path / "n.txt") == [str(v) for v in loaded.predict(narrow)]
    wide = np.hstack([X, np.full((X.shape[0], 2), 0.7)])
    dump_svmlight(tmp_path / "wide.tst", wide, y)
    code, _, err = run(capsys, "predict", tmp_path / "wide.tst", model, tmp_path / "w.txt", "-q")
    assert code == 0
    assert err.startswith("qpcore: warning: ") and "beyond the model's 6" in err
    padded = MulticlassSVM(classes=loaded.classes, kernel=loaded.kernel, scheme=loaded.scheme, pairs=loaded.pairs,
                           support=loaded.support, support_class=loaded.support_class,
                           sv=np.hstack([np.asarray(loaded.sv.todense()), np.zeros((loaded.sv.shape[0], 2))]),
                           D=loaded.D, bias=loaded.bias)
    assert lines_of(tmp_path / "w.txt") == [str(v) for v in padded.predict(wide)]


@pytest.mark.data
def test_shared_adult_subset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The first 1000 rows of the shared Adult files (zero-based indices), kernel and linear."""
    folder = data_dir()
    for name in ("adult.trn.bz2", "adult.tst.bz2"):
        with bz2.open(folder / name, "rt") as fh:
            head = [next(fh) for _ in range(1000)]
        (tmp_path / name[:-4]).write_text("".join(head))
    for strategy in ("smo", "ocas"):
        model, pjson = tmp_path / f"{strategy}.model", tmp_path / f"{strategy}.json"
        assert run(capsys, "train", tmp_path / "adult.trn", model, "--strategy", strategy, "-q")[0] == 0
        assert load_model_file(model).header["feature_index_base"] == 0
        code, _, err = run(capsys, "predict", tmp_path / "adult.tst", model, tmp_path / "p.txt", "--json", pjson)
        assert code == 0, err
        assert read_json(pjson)["accuracy"] > 0.8


# --------------------------------------------------------------------------------------------
# exit codes
# --------------------------------------------------------------------------------------------


def test_exit_codes_table() -> None:
    codes = list(EXIT_CODES.values())
    assert len(set(codes)) == len(codes) and EXIT_CODES[Status.CONVERGED] == 0 and 2 not in codes
    assert (EXIT_CODES[Status.MAX_ITER], EXIT_CODES[Status.TIME_LIMIT], EXIT_CODES[Status.STALLED],
            EXIT_CODES[Status.UNBOUNDED]) == (3, 4, 5, 6)
    assert set(EXIT_CODES) == set(Status)
    assert worst_status([]) is Status.CONVERGED
    assert worst_status([Status.CONVERGED, Status.MAX_ITER, Status.TIME_LIMIT]) is Status.TIME_LIMIT
    assert worst_status([Status.STALLED, Status.MAX_ITER]) is Status.STALLED
    assert exit_code(worst_status([Status.NONFINITE, Status.MAX_ITER])) == 7


@pytest.mark.parametrize(("strategy", "limit", "code", "status"), [
    ("smo", ["--max-iter", "1"], 3, "max_iter"),
    ("ocas", ["--max-iter", "1"], 3, "max_iter"),
    ("smo", ["--time-limit", "1e-9"], 4, "time_limit"),
])
def test_limits_exit_codes(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path], tmp_path: Path,
                           strategy: str, limit: list[str], code: int, status: str) -> None:
    trn, tst = multi
    model, report = tmp_path / "m.model", tmp_path / "r.json"
    got, out, _ = run(capsys, "train", trn, model, "--strategy", strategy, "--json", report, *limit)
    assert got == code
    r = read_json(report)
    assert r["status"] == status and r["exit_status"] == code and r["converged"] is False
    assert f"{status} (exit {code})" in out
    assert model.exists()           # the best point found is kept
    assert run(capsys, "predict", tst, model, tmp_path / "p.txt", "-q")[0] == 0


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "train", "--help")
    assert code == 0
    for text in ("exit status:", "3    max_iter", "4    time_limit", "5    stalled", "6    unbounded",
                 "--strategy", "--class-weight", "--bias", "--multiclass", "model-format.md"):
        assert text in out
    code, out, _ = run(capsys, "predict", "--help")
    assert code == 0 and "--decision" in out and "exit status" in out


# --------------------------------------------------------------------------------------------
# errors: exit 2, one line
# --------------------------------------------------------------------------------------------


def test_unseen_labels(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path], tmp_path: Path) -> None:
    trn, _ = multi
    model = tmp_path / "m.model"
    assert run(capsys, "train", trn, model, "-q")[0] == 0
    X, y = four_classes(50, 6)
    y[:3] = 3
    y[3] = 11
    dump_svmlight(tmp_path / "u.tst", X, y)
    code, out, err = run(capsys, "predict", tmp_path / "u.tst", model, tmp_path / "u.txt")
    assert_one_line_error(code, out, err)
    assert "label(s) 3, 11 (4 rows)" in err and "never saw" in err and "2, 5, 7, 9" in err
    assert not (tmp_path / "u.txt").exists()
    code, _, err = run(capsys, "predict", tmp_path / "u.tst", model, tmp_path / "u.txt", "--allow-unseen-labels",
                       "--json", tmp_path / "u.json")
    assert code == 0, err
    r = read_json(tmp_path / "u.json")
    assert r["n_unseen"] == 4 and r["unseen_labels"] == ["3", "11"] and r["correct"] <= 46
    code, _, _ = run(capsys, "predict", tmp_path / "u.tst", model, tmp_path / "u.txt", "--unlabeled",
                     "--json", tmp_path / "u.json")
    assert code == 0 and read_json(tmp_path / "u.json")["accuracy"] is None


BAD = [
    ("missing data", ["train", "{dir}/nope", "{dir}/m"]),
    ("C = 0", ["train", "{trn}", "{dir}/m", "-c", "0"]),
    ("C not a number", ["train", "{trn}", "{dir}/m", "--C", "abc"]),
    ("C negative", ["train", "{trn}", "{dir}/m", "-C", "-2"]),
    ("model is a folder", ["train", "{trn}", "{dir}"]),
    ("model folder missing", ["train", "{trn}", "{dir}/no/m"]),
    ("one class", ["train", "{one}", "{dir}/m"]),
    ("bias with a kernel", ["train", "{trn}", "{dir}/m", "--bias", "1"]),
    ("gamma with ocas", ["train", "{trn}", "{dir}/m", "--strategy", "ocas", "--gamma", "1"]),
    ("asvm without bias", ["train", "{trn}", "{dir}/m", "--strategy", "asvm", "--bias", "0"]),
    ("asvm with class weights", ["train", "{trn}", "{dir}/m", "--strategy", "asvm", "--class-weight", "2:3"]),
    ("class weight unknown label", ["train", "{trn}", "{dir}/m", "--class-weight", "4:2"]),
    ("class weight malformed", ["train", "{trn}", "{dir}/m", "--class-weight", "2"]),
    ("class weight zero", ["train", "{trn}", "{dir}/m", "--class-weight", "2:0"]),
    ("unknown strategy", ["train", "{trn}", "{dir}/m", "--strategy", "simplex"]),
    ("predict: missing model", ["predict", "{trn}", "{dir}/nope"]),
    ("predict: data as model", ["predict", "{trn}", "{trn}"]),
    ("predict: missing data", ["predict", "{dir}/nope", "{model}"]),
    ("predict: json and labels on stdout", ["predict", "{trn}", "{model}", "--json", "-"]),
]


@pytest.mark.parametrize(("what", "argv"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_one_line(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path], tmp_path: Path,
                            what: str, argv: list[str]) -> None:
    trn, _ = multi
    X, _ = four_classes(20, 7)
    dump_svmlight(tmp_path / "one.trn", X, np.ones(20))
    model = tmp_path / "good.model"
    save_model(model, LinearModel(classes=np.array([2, 5, 7, 9]), scheme="ovr", pairs=problems_of(4, "ovr"),
                                  W=np.zeros((4, 6)), bias=np.zeros(4)))
    paths = {"dir": tmp_path, "trn": trn, "one": tmp_path / "one.trn", "model": model}
    code, out, err = run(capsys, *(a.format(**paths) for a in argv))
    assert_one_line_error(code, out, err)
    assert out == ""
    assert not (tmp_path / "m").exists()


# --------------------------------------------------------------------------------------------
# the model file
# --------------------------------------------------------------------------------------------


def _rewrite(path: Path, out: Path, header: dict[str, Any] | None = None, drop: str | None = None,
             replace: dict[str, np.ndarray] | None = None) -> None:
    with np.load(path, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    h = json.loads(str(arrays["header"]))
    h.update(header or {})
    arrays["header"] = np.array(json.dumps(h))
    if drop is not None:
        del arrays[drop]
    arrays.update(replace or {})
    with open(out, "wb") as fh:
        np.savez(fh, **arrays)


def test_version_refusal_and_corrupt_files(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path],
                                           tmp_path: Path) -> None:
    trn, tst = multi
    model = tmp_path / "m.model"
    assert run(capsys, "train", trn, model, "-q")[0] == 0
    header = load_model_file(model).header
    assert header["format"] == "qpcore-svm-model" and header["version"] == FORMAT_VERSION == 2
    assert header["type"] == "c-svc" and header["kind"] == "kernel" and header["classes"] == ["2", "5", "7", "9"]
    assert header["class_dtype"] == "int64" and header["training"]["strategy"] == "auto"
    assert zipfile.is_zipfile(model)
    cases = [
        ({"version": 3}, None, None, "format version 3; this qpcore"),
        ({"type": "c-svm"}, None, None, "type 'c-svm' is not one of"),
        ({"type": "svdd"}, None, None, "type 'svdd' has one decision function"),
        ({"type": "epsilon-svr"}, None, None, "type 'epsilon-svr' has one decision function"),
        ({"version": 0}, None, None, "unknown format version 0"),
        ({"format": "libsvm"}, None, None, "not a qpcore model file"),
        ({"kind": "tree"}, None, None, "kind 'tree'"),
        ({"class_dtype": "complex"}, None, None, "class_dtype"),
        ({"scheme": "ovr"}, None, None, "pairs"),
        ({"kernel": {"name": "rbf", "gamma": -1.0, "degree": 3, "coef0": 0.0}}, None, None, "bad kernel"),
        (None, "D", None, "missing array(s) D"),
        (None, None, {"bias": np.zeros(2)}, "array 'bias': shape"),
        (None, None, {"D": np.full((header["n_sv"], 6), np.nan)}, "NaN"),
        (None, None, {"sv_indices": np.full(1, 99, dtype=np.int64)}, "sv_indices"),
    ]
    for i, (h, drop, replace, message) in enumerate(cases):
        bad = tmp_path / f"bad{i}.model"
        _rewrite(model, bad, h, drop, replace)
        with pytest.raises(ModelFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
            load_model(bad)
        code, out, err = run(capsys, "predict", tst, bad, tmp_path / "p.txt")
        assert_one_line_error(code, out, err)
    # an archive with a pickled (object) array is refused without unpickling anything
    with open(tmp_path / "pickled.model", "wb") as fh:
        np.savez(fh, header=np.array([{"format": "qpcore-svm-model"}], dtype=object))
    with pytest.raises(ModelFileError, match="pickled"):
        load_model(tmp_path / "pickled.model")


def test_save_refuses_precomputed_and_writes_atomically(tmp_path: Path) -> None:
    m = MulticlassSVM(classes=np.array([0, 1]), kernel=Kernel("precomputed"), scheme="ovo", pairs=problems_of(2, "ovo"),
                      support=np.arange(2), support_class=np.arange(2), sv=None, D=np.ones((2, 1)),
                      bias=np.zeros(1))
    with pytest.raises(ModelFileError, match="precomputed"):
        save_model(tmp_path / "p.model", m)
    assert list(tmp_path.iterdir()) == []


def _sv_matrix(draw: st.DrawFn, n_sv: int, d: int, sparse: bool) -> Any:
    values = draw(st.lists(st.floats(-5, 5, allow_nan=False, width=64), min_size=n_sv * d, max_size=n_sv * d))
    M = np.array(values, dtype=np.float64).reshape(n_sv, d)
    M[np.abs(M) < 2.0] = 0.0
    return sp.csr_matrix(M) if sparse else M


@st.composite
def models(draw: st.DrawFn) -> Any:
    """Kernel and linear models with int, float or string labels, dense or sparse support vectors."""
    k = draw(st.integers(2, 4))
    kind = draw(st.sampled_from(["int", "float", "str"]))
    if kind == "int":
        labels = np.array(sorted(draw(st.sets(st.integers(-(2**40), 2**40), min_size=k, max_size=k))), dtype=np.int64)
    elif kind == "float":
        labels = np.array(sorted(draw(st.sets(st.floats(-1e6, 1e6, allow_nan=False), min_size=k, max_size=k))))
    else:
        # no control characters: numpy's str arrays drop trailing NULs ("a" and "a\x00" would merge)
        text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=5)
        labels = np.array(sorted(draw(st.sets(text, min_size=k, max_size=k))))
    scheme = draw(st.sampled_from(["ovo", "ovr"]))
    pairs = problems_of(k, scheme)
    P = len(pairs)
    d = draw(st.integers(1, 5))
    floats = st.floats(-3, 3, allow_nan=False)
    bias = np.array(draw(st.lists(floats, min_size=P, max_size=P)))
    if draw(st.booleans()):
        W = np.array(draw(st.lists(floats, min_size=P * d, max_size=P * d))).reshape(P, d)
        return LinearModel(classes=labels, scheme="ovr" if pairs[0][1] < 0 else "ovo", pairs=pairs, W=W, bias=bias,
                           intercept_scaling=draw(st.floats(0, 10)))
    n_sv = draw(st.integers(1, 6))
    name = draw(st.sampled_from(["rbf", "linear", "poly", "sigmoid"]))
    kernel = Kernel(name, gamma=draw(st.floats(1e-3, 2.0)), degree=draw(st.integers(1, 4)),
                    coef0=draw(st.floats(-1, 1)))
    D = np.array(draw(st.lists(floats, min_size=n_sv * P, max_size=n_sv * P))).reshape(n_sv, P)
    support_class = np.sort(np.array(draw(st.lists(st.integers(0, k - 1), min_size=n_sv, max_size=n_sv))))
    return MulticlassSVM(classes=labels, kernel=kernel, scheme="ovr" if pairs[0][1] < 0 else "ovo", pairs=pairs,
                         support=np.arange(n_sv) * 3, support_class=support_class,
                         sv=_sv_matrix(draw, n_sv, d, draw(st.booleans())), D=D, bias=bias)


@given(model=models(), seed=st.integers(0, 2**16))
def test_model_file_round_trip(tmp_path_factory: pytest.TempPathFactory, model: Any, seed: int) -> None:
    path = tmp_path_factory.mktemp("rt") / "model"
    save_model(path, model, feature_index_base=1, training={"note": "property"})
    back = load_model_file(path)
    m = back.model
    assert type(m) is type(model) and back.header["training"] == {"note": "property"}
    assert m.classes.dtype == model.classes.dtype or (model.classes.dtype.kind == "U" and m.classes.dtype.kind == "U")
    np.testing.assert_array_equal(m.classes, model.classes)
    np.testing.assert_array_equal(m.pairs, model.pairs)
    np.testing.assert_array_equal(m.bias, model.bias)
    assert m.scheme == model.scheme
    if isinstance(model, LinearModel):
        np.testing.assert_array_equal(m.W, model.W)
        assert m.intercept_scaling == model.intercept_scaling
    else:
        assert m.kernel == model.kernel
        np.testing.assert_array_equal(m.D, model.D)
        np.testing.assert_array_equal(m.support, model.support)
        np.testing.assert_array_equal(m.support_class, model.support_class)
        assert sp.issparse(m.sv) == sp.issparse(model.sv)
        a = m.sv.toarray() if sp.issparse(m.sv) else m.sv
        b = model.sv.toarray() if sp.issparse(model.sv) else model.sv
        np.testing.assert_array_equal(a, b)
    X = np.random.default_rng(seed).normal(size=(7, m.n_features))
    np.testing.assert_array_equal(m.raw(X), model.raw(X))
    np.testing.assert_array_equal(m.predict(X), model.predict(X))


# --------------------------------------------------------------------------------------------
# progress
# --------------------------------------------------------------------------------------------


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_names_each_problem(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path],
                                     tmp_path: Path) -> None:
    trn, _ = multi
    # not a terminal: quiet unless --verbose
    code, _, err = run(capsys, "train", trn, tmp_path / "m", "--max-iter", "40")
    assert code == 3 and err == ""
    code, _, err = run(capsys, "train", trn, tmp_path / "m", "--max-iter", "40", "--verbose")
    lines = err.splitlines()
    assert lines[0].startswith("pair 1/6: 2 vs 5: max_iter, 40 iterations, gap ") and "(tol 1e-03)" in lines[0]
    assert lines[5].startswith("pair 6/6: 7 vs 9: ")
    code, _, err = run(capsys, "train", trn, tmp_path / "m", "--strategy", "bmrm", "--multiclass", "ovr", "--verbose")
    assert code == 0 and err.splitlines()[3].startswith("class 4/4: 9 vs rest: converged")
    # --quiet wins over --verbose
    code, _, err = run(capsys, "train", trn, tmp_path / "m", "--verbose", "-q")
    assert err == ""


def test_gap_reporter_live_and_relative(multi: tuple[Path, Path]) -> None:
    """Updates show the gap against tol and elapsed time; a terminal gets one redrawn line; the
    cutting planes are shown their relative duality gap (what their tol bounds)."""
    from qpcore_formulations.risk import hinge_svm
    from qpcore.core.solve import solve

    X, y = load_svmlight(multi[0], zero_based=False)
    H = hinge_svm(X, (y == 2).astype(int), 1.0)
    stream = _TTY()
    rep = GapReporter(["class 1/1: 2 vs rest"], 1e-6, relative=True, live=True, stream=stream, interval=0.0)
    res = solve(H.qp, make_strategy("bmrm"), tol=1e-6, max_iter=30, reporter=rep)
    rep.close()
    text = stream.getvalue()
    updates = [t for t in text.split("\r") if "iter" in t and "best" in t]
    assert len(updates) >= 10 and all("tol 1e-06)" in u and " s (total " in u for u in updates)
    gaps = [float(u.split("gap ")[1].split()[0]) for u in updates if "gap -" not in u]
    assert gaps and all(0 <= g < 10 for g in gaps)     # relative, not the KKT measure
    assert "max_iter" in text and text.endswith("\n")
    assert res.status is Status.MAX_ITER
    # a converged problem's line is overwritten by the next on a terminal, then cleared
    stream = _TTY()
    rep = GapReporter(["pair 1/1: a vs b"], 1e-3, live=True, stream=stream)
    H2 = hinge_svm(X, (y == 2).astype(int), 1.0)
    solve(H2.qp, make_strategy("ocas"), tol=1e-3, reporter=rep)
    rep.close()
    assert stream.getvalue().endswith("\r\x1b[K") and "\n" not in stream.getvalue()


def test_train_json_stdout(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path], tmp_path: Path) -> None:
    trn, _ = multi
    code, out, err = run(capsys, "train", trn, tmp_path / "m", "--strategy", "asvm", "--json", "-")
    assert code == 0, err
    r = json.loads(out)
    assert r["command"] == "train" and r["loss"] == "squared_hinge" and r["bias"] == 1.0
    assert r["classes"] == ["2", "5", "7", "9"] and r["class_counts"] and sum(r["class_counts"]) == 300


def test_strategy_options_from_the_registry(capsys: pytest.CaptureFixture[str], multi: tuple[Path, Path],
                                            tmp_path: Path) -> None:
    """train takes each strategy's registry options, records them typed, refuses another strategy's."""
    trn, _ = multi
    out = tmp_path / "r.json"
    code, _, err = run(capsys, "train", trn, tmp_path / "m", "--strategy", "decomposition", "--q", "16", "--rule", "mvp",
                       "--json", out, "-q")
    assert code == 0, err
    r = read_json(out)
    assert (r["strategy"], r["q"], r["rule"], r["status"]) == ("decomposition", 16, "mvp", "converged")
    for argv in (["--strategy", "ocas", "--rule", "mvp"], ["--strategy", "decomposition", "--q", "x"],
                 ["--strategy", "smo", "--inner", "gpcg"]):
        assert_one_line_error(*run(capsys, "train", trn, tmp_path / "m2", *argv, "-q"))
