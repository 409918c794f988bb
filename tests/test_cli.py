"""The ``qpcore`` command line (:mod:`qpcore_cli`): demo, ``solve svm``, JSON report, one-line errors,
extensibility."""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from qpcore import PrintReporter
from qpcore_cli import PROBLEMS, STRATEGIES, RichReporter, StrategySpec, main, make_reporter

REPO = Path(__file__).resolve().parent.parent

#: fields every ``solve svm --json`` report carries
REPORT_FIELDS = {
    "problem", "n_train", "n_features", "n_test", "strategy", "strategy_used", "shrinking", "C", "kernel", "gamma",
    "degree", "coef0", "tol", "cache_mb", "max_iter", "time_limit", "status", "status_message", "converged",
    "objective", "gap", "kkt_measure", "iterations", "seconds", "build_seconds", "total_seconds",
    "rows_computed", "cache_hits", "n_sv", "n_bsv", "bias", "train_accuracy", "test_accuracy", "data", "test",
}


def write_libsvm(path: Path, X: np.ndarray, y: np.ndarray, base: int = 1) -> Path:
    """Write ``X, y`` in LIBSVM format (zeros omitted), features numbered from ``base``."""
    lines = []
    for row, label in zip(X, y):
        feats = " ".join(f"{j + base}:{v:.6g}" for j, v in enumerate(row) if v != 0)
        lines.append(f"{label:g} {feats}".rstrip())
    path.write_text("\n".join(lines) + "\n")
    return path


def blobs(n: int, seed: int, labels: tuple[float, float] = (-1.0, 1.0), d: int = 5
          ) -> tuple[np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes in d dimensions (Bayes accuracy about 95%)."""
    rng = np.random.default_rng(seed)
    s = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    shift = np.zeros(d)
    shift[:2] = (1.2, 0.8)
    X = rng.normal(size=(n, d)) + s[:, None] * shift
    y = np.where(s > 0, labels[1], labels[0])
    return X, y


@pytest.fixture()
def svm_files(tmp_path: Path) -> tuple[Path, Path]:
    """A 240-row training file and a 120-row test file."""
    X, y = blobs(240, seed=0)
    Xt, yt = blobs(120, seed=1)
    return write_libsvm(tmp_path / "train.txt", X, y), write_libsvm(tmp_path / "test.txt", Xt, yt)


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


# --------------------------------------------------------------------------------------------
# demo
# --------------------------------------------------------------------------------------------


def test_demo(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_json = tmp_path / "demo.json"
    code, out, err = run_main(capsys, "demo", "--json", str(out_json))
    assert code == 0, err
    for word in ("status", "objective", "KKT gap", "iterations", "time", "support vectors", "test accuracy"):
        assert word in out
    assert "converged" in err  # the progress reporter's final line goes to stderr
    r = read_json(out_json)
    assert r["status"] == "converged" and r["converged"] is True
    assert (r["n_train"], r["n_test"], r["n_features"]) == (3000, 2000, 123)
    assert (r["kernel"], r["gamma"], r["C"], r["tol"], r["strategy"]) == ("rbf", 0.05, 1.0, 1e-3, "auto")
    assert r["gap"] <= 1e-3
    # LIBSVM (scikit-learn 1.9, same settings): objective -1012.46, 1189 SVs, test accuracy 84.85 %
    assert r["objective"] == pytest.approx(-1012.46, rel=1e-3)
    assert 1100 <= r["n_sv"] <= 1300
    assert r["test_accuracy"] > 0.83 and r["train_accuracy"] > 0.84
    assert r["seconds"] < 30


def test_demo_quiet_json_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "demo", "--quiet", "--json", "-")
    assert code == 0
    assert err == ""
    r = json.loads(out)  # stdout holds the JSON object and nothing else
    assert r["status"] == "converged"


# --------------------------------------------------------------------------------------------
# solve svm
# --------------------------------------------------------------------------------------------


def test_solve_svm_json(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path], tmp_path: Path) -> None:
    train, test = svm_files
    out_json = tmp_path / "r.json"
    code, out, err = run_main(capsys, "solve", "svm", "--data", str(train), "--test", str(test),
                              "--json", str(out_json), "--quiet")
    assert code == 0, err
    assert err == ""
    assert "test accuracy" in out
    r = read_json(out_json)
    assert REPORT_FIELDS <= set(r)
    assert r["problem"] == "svm" and r["strategy"] == "auto" and r["shrinking"] is True
    # auto says what it ran and why (SMO from the start on this small, easy problem)
    assert r["strategy_used"] == "smo" and r["strategy_choice"][0][1] == "smo"
    assert r["status"] == "converged" and r["converged"] is True
    assert r["n_train"] == 240 and r["n_test"] == 120 and r["n_features"] == 5
    assert r["kernel"] == "rbf" and r["gamma"] == pytest.approx(1 / 5) and r["C"] == 1.0
    assert r["degree"] is None and r["coef0"] is None  # unused by rbf
    assert r["gap"] <= 1e-3 and r["kkt_measure"] <= 1e-3
    assert r["objective"] < 0
    assert r["iterations"] > 0 and r["seconds"] > 0 and r["total_seconds"] >= r["seconds"]
    assert r["rows_computed"] > 0 and r["cache_hits"] >= 0
    assert 0 < r["n_bsv"] <= r["n_sv"] <= 240
    assert math.isfinite(r["bias"])
    assert r["train_accuracy"] > 0.85 and r["test_accuracy"] > 0.85
    assert r["data"] == str(train) and r["test"] == str(test)


def test_solve_svm_matches_libsvm(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path],
                                  tmp_path: Path) -> None:
    """Same dual objective, bias and support as LIBSVM (scikit-learn) at the same tolerance."""
    svm = pytest.importorskip("sklearn.svm")
    from qpcore_formulations.data.svmlight import load_svmlight

    from qpcore import Kernel

    train, _ = svm_files
    out_json = tmp_path / "r.json"
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(train), "--gamma", "0.5", "-C", "2",
                            "--json", str(out_json), "-q")
    assert code == 0, err
    r = read_json(out_json)
    X, y = load_svmlight(train, dense=True)
    ref = svm.SVC(C=2.0, kernel="rbf", gamma=0.5, tol=1e-3).fit(X, y)
    a = np.zeros(len(y))
    a[ref.support_] = np.abs(ref.dual_coef_[0])
    Q = np.outer(y, y) * Kernel("rbf", gamma=0.5).block(X, X)
    f_ref = 0.5 * a @ Q @ a - a.sum()
    assert r["objective"] == pytest.approx(f_ref, rel=1e-3)
    assert r["bias"] == pytest.approx(float(ref.intercept_[0]), abs=2e-2)
    assert abs(r["n_sv"] - int(ref.n_support_.sum())) <= 5


@pytest.mark.parametrize("kernel_args", [
    ["--kernel", "linear"],
    ["--kernel", "poly", "--degree", "2", "--gamma", "0.2", "--coef0", "1"],
    ["--kernel", "sigmoid", "--gamma", "0.01", "--coef0", "-0.5"],
])
def test_solve_svm_kernels(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path], tmp_path: Path,
                           kernel_args: list[str]) -> None:
    train, test = svm_files
    out_json = tmp_path / "r.json"
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(train), "--test", str(test), *kernel_args,
                            "--json", str(out_json), "-q")
    assert code == 0, err
    r = read_json(out_json)
    assert r["kernel"] == kernel_args[1]
    assert r["status"] == "converged" and r["gap"] <= 1e-3
    if r["kernel"] == "linear":
        assert r["gamma"] is None and r["degree"] is None and r["coef0"] is None
    if r["kernel"] == "poly":
        assert (r["gamma"], r["degree"], r["coef0"]) == (0.2, 2, 1.0)
    if r["kernel"] == "sigmoid":
        assert (r["gamma"], r["degree"], r["coef0"]) == (0.01, None, -0.5)
    if r["kernel"] != "sigmoid":  # a sigmoid "kernel" is not PSD: no accuracy promise
        assert r["test_accuracy"] > 0.85


@pytest.mark.parametrize("rule", ["wss2", "mvp", "platt"])
def test_solve_svm_rules(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path], tmp_path: Path,
                         rule: str) -> None:
    train, _ = svm_files
    out_json = tmp_path / "r.json"
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(train), "--strategy", "smo", "--rule", rule,
                            "--no-shrinking",
                            "--cache-mb", "1", "--json", str(out_json), "-q")
    assert code == 0, err
    r = read_json(out_json)
    assert r["rule"] == rule and r["shrinking"] is False and r["cache_mb"] == 1.0
    assert r["status"] == "converged" and r["gap"] <= 1e-3


def test_solve_svm_limits(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path], tmp_path: Path) -> None:
    train, _ = svm_files
    out_json = tmp_path / "r.json"
    code, out, _ = run_main(capsys, "solve", "svm", "--data", str(train), "--max-iter", "3", "--tol", "1e-6",
                            "--time-limit", "100", "--json", str(out_json), "-q")
    assert code == 0  # a result was produced; its status says it is not optimal
    r = read_json(out_json)
    assert r["status"] == "max_iter" and r["converged"] is False and r["iterations"] == 3
    assert (r["max_iter"], r["time_limit"], r["tol"]) == (3, 100.0, 1e-6)
    assert "max_iter" in out


def test_solve_svm_original_labels(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Labels other than ±1 (here 3 and 7): accuracy compares the model's predictions in those labels."""
    X, y = blobs(200, seed=2, labels=(3.0, 7.0))
    Xt, yt = blobs(100, seed=3, labels=(3.0, 7.0))
    out_json = tmp_path / "r.json"
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(write_libsvm(tmp_path / "a", X, y)),
                            "--test", str(write_libsvm(tmp_path / "b", Xt, yt)), "--json", str(out_json), "-q")
    assert code == 0, err
    r = read_json(out_json)
    assert r["train_accuracy"] > 0.85 and r["test_accuracy"] > 0.85


def test_solve_svm_index_base(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A zero-based file (as the shared Adult files) reads like the same data one-based."""
    X, y = blobs(150, seed=4)
    one, zero = tmp_path / "one.json", tmp_path / "zero.json"
    for base, out in ((1, one), (0, zero)):
        f = write_libsvm(tmp_path / f"d{base}.txt", X, y, base=base)
        code, _, err = run_main(capsys, "solve", "svm", "--data", str(f), "--json", str(out), "-q")
        assert code == 0, err
    r1, r0 = read_json(one), read_json(zero)
    assert r1["n_features"] == r0["n_features"] == 5
    assert r1["objective"] == pytest.approx(r0["objective"], rel=1e-12)
    f1 = write_libsvm(tmp_path / "e1.txt", X, y, base=1)
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(f1), "--index-base", "0", "-q")
    assert code == 0, err  # read zero-based: an empty column 0, six features


def test_solve_svm_widths(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A test file using a feature the training file lacks; --n-features pads both."""
    X, y = blobs(120, seed=5)
    Xt, yt = blobs(60, seed=6)
    Xt = np.hstack([Xt, np.full((60, 1), 0.5)])
    train, test = write_libsvm(tmp_path / "a", X, y), write_libsvm(tmp_path / "b", Xt, yt)
    out_json = tmp_path / "r.json"
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(train), "--test", str(test),
                            "--json", str(out_json), "-q")
    assert code == 0, err
    r = read_json(out_json)
    assert r["n_features"] == 6 and r["gamma"] == pytest.approx(1 / 5)  # gamma from the training file, as LIBSVM
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(train), "--test", str(test), "--n-features", "10",
                            "--json", str(out_json), "-q")
    assert code == 0, err
    r = read_json(out_json)
    assert r["n_features"] == 10 and r["gamma"] == pytest.approx(1 / 10)


# --------------------------------------------------------------------------------------------
# errors: status 2, one line on stderr, no traceback
# --------------------------------------------------------------------------------------------


@pytest.fixture()
def bad_files(tmp_path: Path) -> dict[str, Path]:
    files = {
        "malformed": "+1 1:0.5 2:1\n-1 1:abc\n",
        "one_class": "+1 1:0.5\n+1 2:1\n",
        "three_classes": "1 1:1\n2 2:1\n3 1:1 2:1\n",
        "empty": "",
        "unsorted": "+1 2:1 1:1\n-1 1:1\n",
        "zero_index": "+1 0:1\n-1 1:1\n",
        "nonfinite": "+1 1:nan\n-1 1:1\n",
    }
    out = {name: tmp_path / f"{name}.txt" for name in files}
    for name, text in files.items():
        out[name].write_text(text)
    out["corrupt_bz2"] = tmp_path / "corrupt.bz2"
    out["corrupt_bz2"].write_bytes(b"BZh91AY&SY garbage")
    out["folder"] = tmp_path
    out["missing"] = tmp_path / "missing.txt"
    return out


BAD_ARGS: list[tuple[str, list[str]]] = [
    ("no command", []),
    ("unknown command", ["train"]),
    ("no problem", ["solve"]),
    ("unknown problem", ["solve", "lp"]),
    ("no data", ["solve", "svm"]),
    ("missing file", ["solve", "svm", "--data", "{missing}"]),
    ("folder", ["solve", "svm", "--data", "{folder}"]),
    ("malformed line", ["solve", "svm", "--data", "{malformed}"]),
    ("unsorted indices", ["solve", "svm", "--data", "{unsorted}"]),
    ("non-finite value", ["solve", "svm", "--data", "{nonfinite}"]),
    ("empty file", ["solve", "svm", "--data", "{empty}"]),
    ("corrupt bz2", ["solve", "svm", "--data", "{corrupt_bz2}"]),
    ("one class", ["solve", "svm", "--data", "{one_class}"]),
    ("three classes", ["solve", "svm", "--data", "{three_classes}"]),
    ("index 0 in a one-based file", ["solve", "svm", "--data", "{zero_index}", "--index-base", "1"]),
    ("missing test file", ["solve", "svm", "--data", "{train}", "--test", "{missing}"]),
    ("malformed test file", ["solve", "svm", "--data", "{train}", "--test", "{malformed}"]),
    ("test index 0, training one-based", ["solve", "svm", "--data", "{train}", "--test", "{zero_index}"]),
    ("C = 0", ["solve", "svm", "--data", "{train}", "-C", "0"]),
    ("C < 0", ["solve", "svm", "--data", "{train}", "-C", "-1"]),
    ("C nan", ["solve", "svm", "--data", "{train}", "-C", "nan"]),
    ("C not a number", ["solve", "svm", "--data", "{train}", "-C", "abc"]),
    ("gamma = 0", ["solve", "svm", "--data", "{train}", "--gamma", "0"]),
    ("gamma inf", ["solve", "svm", "--data", "{train}", "--gamma", "inf"]),
    ("degree 0", ["solve", "svm", "--data", "{train}", "--kernel", "poly", "--degree", "0"]),
    ("tol = 0", ["solve", "svm", "--data", "{train}", "--tol", "0"]),
    ("max-iter < 0", ["solve", "svm", "--data", "{train}", "--max-iter", "-1"]),
    ("max-iter not an integer", ["solve", "svm", "--data", "{train}", "--max-iter", "2.5"]),
    ("time-limit = 0", ["solve", "svm", "--data", "{train}", "--time-limit", "0"]),
    ("cache-mb < 0", ["solve", "svm", "--data", "{train}", "--cache-mb", "-1"]),
    ("n-features 0", ["solve", "svm", "--data", "{train}", "--n-features", "0"]),
    ("n-features too small", ["solve", "svm", "--data", "{train}", "--n-features", "3"]),
    ("unknown kernel", ["solve", "svm", "--data", "{train}", "--kernel", "laplace"]),
    ("unknown strategy", ["solve", "svm", "--data", "{train}", "--strategy", "simplex"]),
    ("unknown rule", ["solve", "svm", "--data", "{train}", "--strategy", "smo", "--rule", "best"]),
    ("unknown option", ["solve", "svm", "--data", "{train}", "--frobnicate"]),
    ("json into a missing folder", ["solve", "svm", "--data", "{train}", "--json", "{folder}/no/such/r.json"]),
    ("json is a folder", ["solve", "svm", "--data", "{train}", "--json", "{folder}"]),
    ("demo with an argument", ["demo", "--gamma", "1"]),
]


@pytest.mark.parametrize(("what", "argv"), BAD_ARGS, ids=[b[0] for b in BAD_ARGS])
def test_errors_one_line(capsys: pytest.CaptureFixture[str], bad_files: dict[str, Path],
                         svm_files: tuple[Path, Path], what: str, argv: list[str]) -> None:
    paths = {k: str(v) for k, v in bad_files.items()} | {"train": str(svm_files[0])}
    code, out, err = run_main(capsys, *(a.format(**paths) for a in argv))
    assert code == 2, (what, err)
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("qpcore: error: ")
    assert "Traceback" not in err
    assert out == ""


def test_error_names_the_line(capsys: pytest.CaptureFixture[str], bad_files: dict[str, Path]) -> None:
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(bad_files["malformed"]))
    assert code == 2
    assert f"{bad_files['malformed']}:2" in err and "1:abc" in err


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--help"], ["solve", "--help"], ["solve", "svm", "--help"], ["demo", "--help"]):
        code, out, _ = run_main(capsys, *argv)
        assert code == 0 and "usage: qpcore" in out
    code, out, _ = run_main(capsys, "solve", "svm", "--help")
    for opt in ("--data", "--test", "--n-features", "--kernel", "--gamma", "--degree", "--coef0", "-C",
                "--strategy", "--rule", "--tol", "--cache-mb", "--max-iter", "--time-limit", "--json", "--quiet"):
        assert opt in out
    code, out, _ = run_main(capsys, "--version")
    assert code == 0 and out.startswith("qpcore ")


# --------------------------------------------------------------------------------------------
# subprocess: python -m qpcore_cli and the console script
# --------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "2")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def test_python_m_qpcore_cli(svm_files: tuple[Path, Path], tmp_path: Path) -> None:
    train, test = svm_files
    out_json = tmp_path / "r.json"
    proc = subprocess.run([sys.executable, "-m", "qpcore_cli", "solve", "svm", "--data", str(train), "--test",
                           str(test), "--json", str(out_json)], capture_output=True, text=True, env=_env(),
                          stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert read_json(out_json)["status"] == "converged"
    assert "converged" in proc.stderr  # plain progress lines: stderr is not a terminal here
    proc = subprocess.run([sys.executable, "-m", "qpcore_cli", "solve", "svm", "--data", str(tmp_path / "nope")],
                          capture_output=True, text=True, env=_env(), stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("qpcore: error: ")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def _console_script() -> Path | None:
    name = "qpcore.exe" if os.name == "nt" else "qpcore"
    script = Path(sys.executable).parent / name
    return script if script.is_file() else None


@pytest.mark.skipif(_console_script() is None, reason="qpcore is not installed in this environment (pip install .)")
def test_console_script_demo() -> None:
    script = _console_script()
    assert script is not None
    proc = subprocess.run([str(script), "demo"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=300, env={**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")})
    assert proc.returncode == 0, proc.stderr
    assert "converged" in proc.stdout and "test accuracy" in proc.stdout
    proc = subprocess.run([str(script), "solve", "svm", "-C", "0", "--data", "x"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("qpcore: error: argument -C")


# --------------------------------------------------------------------------------------------
# progress display and extensibility
# --------------------------------------------------------------------------------------------


class _TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_make_reporter() -> None:
    assert make_reporter(True, 1e-3) is None
    assert isinstance(make_reporter(False, 1e-3, stream=io.StringIO()), PrintReporter)


def test_rich_reporter_on_a_terminal(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path]) -> None:
    pytest.importorskip("rich")
    from qpcore_formulations.data.svmlight import load_svmlight
    from qpcore_formulations.svm import csvc
    from qpcore_strategies.smo import SMO

    import qpcore

    stream = _TTY()
    reporter = make_reporter(False, 1e-3, "SMO", stream=stream)
    assert isinstance(reporter, RichReporter)
    reporter.interval = 0.0  # an update every iteration
    X, y = load_svmlight(svm_files[0])
    problem = csvc(X, y, C=1.0, kernel=qpcore.Kernel("rbf", gamma=0.2))
    result = qpcore.solve(problem.qp, SMO(), tol=1e-3, reporter=reporter)
    assert result.converged
    text = stream.getvalue()
    assert "SMO" in text and "gap" in text and "converged" in text


def test_strategy_registry(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                           svm_files: tuple[Path, Path], tmp_path: Path) -> None:
    """A registered strategy joins --strategy for the problems it serves, with its own options."""
    from qpcore_strategies.smo import SMO

    made: list[argparse.Namespace] = []

    def factory(args: argparse.Namespace) -> Any:
        made.append(args)
        return SMO(rule="mvp", shrinking=False)

    def options(group: Any) -> None:
        group.add_argument("--my-knob", type=int, default=7)

    monkeypatch.setitem(STRATEGIES, "mine", StrategySpec(
        factory=factory, help="a test strategy", problems=frozenset({"svm"}), add_arguments=options,
        describe=lambda args: {"my_knob": args.my_knob}))
    out_json = tmp_path / "r.json"
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(svm_files[0]), "--strategy", "mine",
                            "--my-knob", "3", "--json", str(out_json), "-q")
    assert code == 0, err
    assert len(made) == 1 and made[0].my_knob == 3
    r = read_json(out_json)
    assert r["strategy"] == "mine" and r["my_knob"] == 3 and r["status"] == "converged"
    assert "svm" in PROBLEMS and "smo" in STRATEGIES


# --- solve qp / solve nnls from .npz files ----------------------------------------------------

QP_FIELDS = {"problem", "strategy", "n", "m_equality", "tol", "status", "status_message", "converged", "objective",
             "kkt_measure", "stationarity", "primal_infeasibility", "iterations", "seconds", "total_seconds",
             "data", "x"}


def test_solve_qp_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import qpcore
    from qpcore.testkit.reference import dense_reference

    rng = np.random.default_rng(4)
    n = 40
    M = rng.normal(size=(60, n))
    Q, c = M.T @ M / n, rng.normal(size=n)
    lb, ub = np.full(n, -0.2), np.where(np.arange(n) % 2 == 0, 0.3, np.inf)
    path = tmp_path / "p.npz"
    np.savez(path, Q=Q, c=c, lb=lb, ub=ub, A=np.ones((1, n)), b=np.array([0.5]))
    out = tmp_path / "r.json"
    code, _, err = run_main(capsys, "solve", "qp", "--npz", str(path), "--json", str(out), "-q")
    assert code == 0, err
    r = read_json(out)
    assert QP_FIELDS <= set(r) and r["problem"] == "qp" and r["strategy"] == "gpcg" and r["status"] == "converged"
    qp = qpcore.QP(Q, c, lb, ub, np.ones((1, n)), np.array([0.5]))
    _, f_ref = dense_reference(qp)
    assert r["objective"] == pytest.approx(f_ref, rel=1e-9)
    assert qp.objective(np.array(r["x"])) == pytest.approx(f_ref, rel=1e-9)
    assert r["kkt_measure"] <= 1e-8 and r["m_equality"] == 1


def test_solve_qp_summary_and_defaults(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "p.npz"
    np.savez(path, Q=np.diag([1.0, 2.0]), c=np.array([-1.0, 4.0]))  # no bounds: unconstrained
    code, out, err = run_main(capsys, "solve", "qp", "--npz", str(path), "-q")
    assert code == 0, err
    assert "converged" in out and "-4.500000000000e+00" in out  # f* = −½·1 − ½·4²/2


def test_solve_nnls_matches_scipy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from scipy.optimize import nnls as scipy_nnls

    rng = np.random.default_rng(8)
    A, d = rng.normal(size=(120, 40)), rng.normal(size=120)
    path = tmp_path / "ls.npz"
    np.savez(path, A=A, d=d)
    for backend, name in (("dense", "DenseQ"), ("gram", "GramQ")):
        out = tmp_path / f"{backend}.json"
        code, _, err = run_main(capsys, "solve", "nnls", "--npz", str(path), "--backend", backend,
                                "--json", str(out), "-q")
        assert code == 0, err
        r = read_json(out)
        assert r["problem"] == "nnls" and r["backend"] == name and r["status"] == "converged"
        x_ref, r_ref = scipy_nnls(A, d)
        assert r["residual_norm"] == pytest.approx(r_ref, rel=1e-9)
        np.testing.assert_allclose(r["x"], x_ref, atol=1e-8)
        assert r["n_positive"] == int(np.count_nonzero(x_ref > 0))


@pytest.mark.parametrize("arrays, message", [
    ({"Q": np.eye(2)}, "missing array(s) c"),
    ({"Q": np.eye(2), "c": np.ones(3)}, "shape mismatch"),
    ({"Q": np.array([[1.0, 2.0], [0.0, 1.0]]), "c": np.ones(2)}, "not symmetric"),
    ({"Q": np.eye(2), "c": np.array([1.0, np.nan])}, "NaN"),
    ({"Q": np.eye(2), "c": np.ones(2), "lb": np.ones(2), "ub": np.zeros(2)}, "lb"),
    ({"Q": np.eye(2), "c": np.ones(2), "A": np.ones((1, 2))}, "A and b go together"),
    ({"Q": np.eye(2), "c": np.ones(2), "lb": np.zeros(2), "ub": np.ones(2), "A": np.ones((1, 2)),
      "b": np.array([5.0])}, "infeasible"),
])
def test_solve_qp_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path, arrays: dict[str, np.ndarray],
                            message: str) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    code, out, err = run_main(capsys, "solve", "qp", "--npz", str(path), "-q")
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_solve_nnls_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "none.npz"
    code, _, err = run_main(capsys, "solve", "nnls", "--npz", str(missing), "-q")
    assert code == 2 and "no such file" in err
    not_npz = tmp_path / "text.npz"
    not_npz.write_text("hello")
    code, _, err = run_main(capsys, "solve", "nnls", "--npz", str(not_npz), "-q")
    assert code == 2 and "not a readable .npz" in err
    shapes = tmp_path / "s.npz"
    np.savez(shapes, A=np.ones((5, 3)), d=np.ones(4))
    code, _, err = run_main(capsys, "solve", "nnls", "--npz", str(shapes), "-q")
    assert code == 2 and "d" in err and err.count("\n") == 1


def test_gpcg_serves_svm(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path], tmp_path: Path) -> None:
    out_g, out_s = tmp_path / "g.json", tmp_path / "s.json"
    for strategy, out in (("gpcg", out_g), ("smo", out_s)):
        code, _, err = run_main(capsys, "solve", "svm", "--data", str(svm_files[0]), "--strategy", strategy,
                                "--tol", "1e-6", "--json", str(out), "-q")
        assert code == 0, err
    g, s = read_json(out_g), read_json(out_s)
    assert g["status"] == "converged" and g["objective"] == pytest.approx(s["objective"], rel=1e-6)


def test_incas_serves_svm_and_refuses_infinite_bounds(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path],
                                                      tmp_path: Path) -> None:
    out_i, out_s = tmp_path / "i.json", tmp_path / "s.json"
    for strategy, out in (("incas", out_i), ("smo", out_s)):
        code, _, err = run_main(capsys, "solve", "svm", "--data", str(svm_files[0]), "--strategy", strategy,
                                "--tol", "1e-6", "--json", str(out), "-q")
        assert code == 0, err
    i, s = read_json(out_i), read_json(out_s)
    assert i["status"] == "converged" and i["objective"] <= s["objective"] + 1e-6 * abs(s["objective"])
    npz = tmp_path / "open_box.npz"
    np.savez(npz, Q=np.eye(3), c=-np.ones(3), lb=np.zeros(3), ub=np.full(3, np.inf))
    code, _, err = run_main(capsys, "solve", "qp", "--npz", str(npz), "--strategy", "incas", "-q")
    assert code == 2 and "finite" in err and err.count("\n") == 1


# --- the one registry of strategies: every strategy on every problem kind -------------------------


def test_every_registry_strategy_is_offered(capsys: pytest.CaptureFixture[str]) -> None:
    from qpcore_strategies.registry import REGISTRY

    for kind in ("svm", "qp", "nnls"):
        code, out, _ = run_main(capsys, "solve", kind, "--help")
        assert code == 0
        for name in REGISTRY:
            assert name in out, (kind, name)
        for flag in ("--rule", "--q", "--inner", "--shrinking", "--no-shrinking", "--max-n"):
            assert flag in out, (kind, flag)


def test_registry_options_on_the_command_line(capsys: pytest.CaptureFixture[str], svm_files: tuple[Path, Path],
                                              tmp_path: Path) -> None:
    out_d, out_s = tmp_path / "d.json", tmp_path / "s.json"
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(svm_files[0]), "--strategy", "decomposition",
                            "--rule", "mvp", "--q", "8", "--no-shrinking", "--tol", "1e-6", "--json", str(out_d), "-q")
    assert code == 0, err
    code, _, err = run_main(capsys, "solve", "svm", "--data", str(svm_files[0]), "--tol", "1e-6",
                            "--json", str(out_s), "-q")
    assert code == 0, err
    d, s = read_json(out_d), read_json(out_s)
    assert (d["strategy"], d["rule"], d["q"], d["inner"], d["shrinking"]) == ("decomposition", "mvp", 8, "auto", False)
    assert d["status"] == "converged" and d["objective"] == pytest.approx(s["objective"], rel=1e-6)
    # an option of another strategy, and a bad value: one line, exit 2
    for argv in (["--strategy", "gpcg", "--rule", "mvp"], ["--strategy", "smo", "--rule", "chunking"],
                 ["--strategy", "decomposition", "--q", "many"]):
        code, out, err = run_main(capsys, "solve", "svm", "--data", str(svm_files[0]), *argv, "-q")
        assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("qpcore: error: "), (argv, err)


@pytest.mark.parametrize("strategy", ["asvm", "ocas", "ocas-active", "bmrm"])
def test_linear_strategy_refuses_the_csvc_dual_with_its_reason(capsys: pytest.CaptureFixture[str],
                                                               svm_files: tuple[Path, Path], strategy: str) -> None:
    code, out, err = run_main(capsys, "solve", "svm", "--data", str(svm_files[0]), "--strategy", strategy, "-q")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"--strategy {strategy} cannot take the C-SVC dual" in err and "qpcore train" in err


def test_solve_qp_in_low_rank_form(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """H (and d) instead of Q: the form ASVM (d > 0, u ≥ 0) and the cutting planes (d = 0, 0 ≤ α ≤ C) take."""
    from qpcore.testkit.reference import dense_reference

    import qpcore

    rng = np.random.default_rng(7)
    n, k = 30, 4
    H = rng.normal(size=(n, k))
    asvm_npz, hinge_npz = tmp_path / "asvm.npz", tmp_path / "hinge.npz"
    np.savez(asvm_npz, H=H, d=np.full(n, 0.5), c=-np.ones(n), lb=np.zeros(n), ub=np.full(n, np.inf))
    np.savez(hinge_npz, H=H, c=-np.ones(n), lb=np.zeros(n), ub=np.full(n, 0.1))
    cases = [(asvm_npz, "asvm", np.diag(np.full(n, 0.5)) + H @ H.T, np.full(n, np.inf)),
             (hinge_npz, "ocas", H @ H.T, np.full(n, 0.1))]
    for path, strategy, Q, ub in cases:
        out = tmp_path / f"{strategy}.json"
        code, _, err = run_main(capsys, "solve", "qp", "--npz", str(path), "--strategy", strategy, "--tol", "1e-8",
                                "--json", str(out), "-q")
        assert code == 0, err
        r = read_json(out)
        _, f_ref = dense_reference(qpcore.QP(Q, -np.ones(n), np.zeros(n), ub))
        assert r["status"] == "converged" and r["objective"] == pytest.approx(f_ref, rel=1e-5, abs=1e-7), strategy
    # the low-rank problem is no business of SMO (an unbounded box): its own reason, exit 2
    code, _, err = run_main(capsys, "solve", "qp", "--npz", str(asvm_npz), "--strategy", "smo", "-q")
    assert code == 2 and "cannot take this problem" in err and "finite" in err and err.count("\n") == 1
    bad = tmp_path / "both.npz"
    np.savez(bad, Q=np.eye(2), H=np.ones((2, 1)), c=np.zeros(2))
    code, _, err = run_main(capsys, "solve", "qp", "--npz", str(bad), "-q")
    assert code == 2 and "not both" in err
