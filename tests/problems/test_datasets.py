"""Tests of the data modules: the SVMlight reader (qpcore_formulations.data.svmlight), the shared data (qpcore_formulations.data.files), Platt's
generators (qpcore_formulations.data.synthetic)."""

from __future__ import annotations

import bz2
import gzip
import os
import pathlib
import time

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

import qpcore_formulations.data.files
import qpcore_formulations.data.float_text
import qpcore_formulations.data.svmlight
import qpcore_formulations.data.synthetic
from qpcore_formulations.data import svmlight
from qpcore_formulations.data.files import data_dir, load_dataset
from qpcore_formulations.data.svmlight import DataFormatError, load_svmlight
from qpcore_formulations.data.synthetic import platt_hyperplane, platt_random_labels, platt_sparse_separable

#: where a checkout's real data live (beside the repository)
CHECKOUT_DATA = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture()
def shared() -> pathlib.Path:
    """The real data folder (the ``data`` marker skips the test when there is none)."""
    return data_dir()


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    """Write ``text`` to ``path``, compressed according to its extension."""
    data = text.encode()
    if path.suffix == ".gz":
        data = gzip.compress(data)
    elif path.suffix == ".bz2":
        data = bz2.compress(data)
    path.write_bytes(data)
    return path


def assert_same_csr(X: sp.csr_matrix, Xs: sp.csr_matrix) -> None:
    assert sp.isspmatrix_csr(X)
    assert X.shape == Xs.shape
    Xs = Xs.tocsr()
    Xs.sort_indices()
    np.testing.assert_array_equal(X.indptr, Xs.indptr)
    np.testing.assert_array_equal(X.indices, Xs.indices)
    np.testing.assert_array_equal(X.data, Xs.data)


# --------------------------------------------------------------------------------------------
# The shared real data, against scikit-learn's reader
# --------------------------------------------------------------------------------------------


@pytest.mark.data
@pytest.mark.parametrize(
    ("fname", "n_features", "shape"),
    [
        ("adult.trn.bz2", 123, (32561, 123)),
        ("adult.tst.bz2", 123, (16281, 123)),
        ("ijcnn1.trn.bz2", None, (49990, 22)),
        ("reuters.trn.bz2", None, (7770, 8315)),
    ],
)
def test_shared_files_match_sklearn(
    shared: pathlib.Path, fname: str, n_features: int | None, shape: tuple[int, int]
) -> None:
    path = shared / fname
    X, y = load_svmlight(path, n_features=n_features)
    Xs, ys = load_svmlight_file(str(path), n_features=n_features)
    assert X.shape == shape
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert X.has_sorted_indices
    assert_same_csr(X, Xs)
    np.testing.assert_array_equal(y, ys)
    assert set(np.unique(y)) == {-1.0, 1.0}


@pytest.mark.data
def test_ijcnn1_loads_fast(shared: pathlib.Path) -> None:
    start = time.perf_counter()
    X, _ = load_svmlight(shared / "ijcnn1.trn.bz2")
    assert time.perf_counter() - start < 5.0  # about 0.8 s on a developer machine
    assert X.shape == (49990, 22)


@pytest.mark.data
def test_fast_and_slow_parsers_agree_on_real_file(shared: pathlib.Path) -> None:
    text = svmlight._read_text(shared / "adult.tst.bz2")
    fast = svmlight._parse_fast(text, "auto")
    assert fast is not None
    slow = svmlight._parse_slow(text, "adult.tst", "auto")
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.data
def test_load_dataset_and_data_dir(shared: pathlib.Path) -> None:
    if not os.environ.get("QPCORE_DATA") and CHECKOUT_DATA.is_dir():
        assert shared == CHECKOUT_DATA.resolve()  # a checkout finds the data beside it
    assert (shared / "adult.tst.bz2").is_file()
    X, y = load_dataset("adult", "tst")
    assert X.shape == (16281, 123) and y.shape == (16281,)
    Xd, _ = load_dataset("adult", "tst", dense=True)
    assert isinstance(Xd, np.ndarray)
    np.testing.assert_array_equal(Xd, X.toarray())
    with pytest.raises(ValueError, match="unknown data set"):
        load_dataset("mnist")
    with pytest.raises(FileNotFoundError, match="ijcnn1"):
        load_dataset("ijcnn1", "tst")


def test_data_dir_env(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("QPCORE_DATA", str(tmp_path))
    assert data_dir() == tmp_path
    monkeypatch.setenv("QPCORE_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="QPCORE_DATA"):
        data_dir()


@pytest.fixture()
def installed(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    """``qpcore_formulations.data.files`` as if installed in ``tmp_path/site/lib/site-packages``, no QPCORE_DATA.

    Returns a working folder four levels below ``tmp_path/work`` (the search stays in tmp_path).
    """
    site = tmp_path / "site" / "lib" / "site-packages"
    (site / "qpcore_formulations" / "data").mkdir(parents=True)
    (site.parent / "shared" / "data").mkdir(parents=True)  # site-packages/../shared/data: never used
    monkeypatch.setattr(qpcore_formulations.data.files, "__file__", str(site / "qpcore_formulations" / "data" / "files.py"))
    monkeypatch.delenv("QPCORE_DATA", raising=False)
    cwd = tmp_path / "work" / "a" / "b" / "c" / "d"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    return cwd


def test_data_dir_env_wins(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path, installed: pathlib.Path) -> None:
    (installed / "shared" / "data").mkdir(parents=True)
    env = tmp_path / "elsewhere"
    env.mkdir()
    monkeypatch.setenv("QPCORE_DATA", str(env))
    assert data_dir() == env
    monkeypatch.setenv("QPCORE_DATA", "")  # empty: as if unset
    assert data_dir() == (installed / "shared" / "data").resolve()
    monkeypatch.setenv("QPCORE_DATA", str(tmp_path / "missing"))  # set but wrong: an error, not a fallback
    with pytest.raises(FileNotFoundError, match="QPCORE_DATA="):
        data_dir()


def test_data_dir_from_checkout(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path,
                                installed: pathlib.Path) -> None:
    repo = tmp_path / "checkout" / "repo"
    (repo / "qpcore_formulations" / "data").mkdir(parents=True)
    (repo / "qpcore_formulations" / "data" / "files.py").write_text("")
    (repo / "pyproject.toml").write_text("")
    (tmp_path / "checkout" / "shared" / "data").mkdir(parents=True)
    (installed / "shared" / "data").mkdir(parents=True)
    monkeypatch.setattr(qpcore_formulations.data.files, "__file__", str(repo / "qpcore_formulations" / "data" / "files.py"))
    assert data_dir() == (tmp_path / "checkout" / "shared" / "data").resolve()  # before the working folder


@pytest.mark.parametrize("up", [0, 1, 2, 3])
def test_data_dir_from_working_folder(installed: pathlib.Path, up: int) -> None:
    """Installed: ./shared/data, ../shared/data and up to three levels up; not site-packages/../shared."""
    folder = [installed, *installed.parents][up] / "shared" / "data"
    folder.mkdir(parents=True)
    assert data_dir() == folder.resolve()


def test_data_dir_not_found(installed: pathlib.Path, tmp_path: pathlib.Path) -> None:
    (tmp_path / "work" / "shared" / "data").mkdir(parents=True)  # four levels up: too far
    with pytest.raises(FileNotFoundError) as info:
        data_dir()
    message = str(info.value)
    assert "QPCORE_DATA" in message
    assert str(installed / "shared" / "data") in message
    assert str(installed.parent / "shared" / "data") in message
    assert "site-packages" not in message


def test_load_dataset_names_the_search(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("QPCORE_DATA", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="QPCORE_DATA"):
        load_dataset("adult")


# --------------------------------------------------------------------------------------------
# Format features on small files
# --------------------------------------------------------------------------------------------

SMALL = """\
# a header comment
+1 1:0.5 3:9.8E-02 10:-2
-1.0 2:1e3   4:-.5 # trailing comment

1 qid:7 1:1.5E+01 5:7
-1 # a row with no features
+1.0\t3:2\t4:0.0
"""


@pytest.mark.parametrize("suffix", [".txt", ".gz", ".bz2"])
def test_round_trip_compressions(tmp_path: pathlib.Path, suffix: str) -> None:
    path = write(tmp_path / f"small{suffix}", SMALL)
    X, y = load_svmlight(path)
    np.testing.assert_array_equal(y, [1.0, -1.0, 1.0, -1.0, 1.0])
    expected = np.zeros((5, 10))
    expected[0, [0, 2, 9]] = [0.5, 0.098, -2.0]
    expected[1, [1, 3]] = [1000.0, -0.5]
    expected[2, [0, 4]] = [15.0, 7.0]
    expected[4, [2, 3]] = [2.0, 0.0]
    np.testing.assert_array_equal(X.toarray(), expected)
    assert X.nnz == 9  # the explicit 0.0 is kept, as scikit-learn does
    Xs, ys = load_svmlight_file(str(path))
    assert_same_csr(X, Xs)
    np.testing.assert_array_equal(y, ys)


@pytest.mark.parametrize(
    "text", [SMALL, "1 5:1\n-1\n1 2:1 3:1\n", "1 1:1\n2 5:1 6:1\n-1 1:2\n", "1\n"]
)
def test_fast_path_handles_and_matches_slow_path(text: str) -> None:
    fast = svmlight._parse_fast(text, "auto")
    assert fast is not None  # comments, qid, empty rows, index drops between rows
    slow = svmlight._parse_slow(text, "t", "auto")
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a, b)


def test_compression_detected_by_magic_bytes(tmp_path: pathlib.Path) -> None:
    gz = tmp_path / "data.txt"
    gz.write_bytes(gzip.compress(SMALL.encode()))
    bz = tmp_path / "data"
    bz.write_bytes(bz2.compress(SMALL.encode()))
    X1, y1 = load_svmlight(gz)
    X2, y2 = load_svmlight(str(bz))
    np.testing.assert_array_equal(X1.toarray(), X2.toarray())
    np.testing.assert_array_equal(y1, y2)


def test_corrupt_compressed_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "plain.gz"
    path.write_text(SMALL)
    with pytest.raises(DataFormatError, match=r"plain\.gz.*gzip"):
        load_svmlight(path)


def test_crlf_and_label_forms(tmp_path: pathlib.Path) -> None:
    labels = ["+1", "-1", "1", "-1.0", "+1.0", "2.5E-01", "-3e2", ".5", "7"]
    text = "\r\n".join(f"{lab} 1:1" for lab in labels) + "\r\n"
    X, y = load_svmlight(write(tmp_path / "labels.txt", text))
    np.testing.assert_array_equal(y, [float(lab) for lab in labels])
    assert X.shape == (len(labels), 1)


def test_dense_and_dtype(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path / "small.txt", SMALL)
    X, _ = load_svmlight(path)
    Xd, _ = load_svmlight(path, dense=True, dtype=np.float32)
    assert isinstance(Xd, np.ndarray) and Xd.dtype == np.float32
    np.testing.assert_array_equal(Xd, X.toarray().astype(np.float32))
    X32, _ = load_svmlight(path, dtype=np.float32)
    assert sp.isspmatrix_csr(X32) and X32.dtype == np.float32


def test_n_features(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path / "small.txt", SMALL)
    assert load_svmlight(path)[0].shape == (5, 10)
    assert load_svmlight(path, n_features=10)[0].shape == (5, 10)
    X, _ = load_svmlight(path, n_features=25)
    assert X.shape == (5, 25)
    np.testing.assert_array_equal(X.toarray()[:, :10], load_svmlight(path)[0].toarray())
    assert load_svmlight(path, n_features=25, dense=True)[0].shape == (5, 25)
    with pytest.raises(DataFormatError, match=r"small\.txt:2:.*10.*n_features=9"):
        load_svmlight(path, n_features=9)
    two = write(tmp_path / "two.txt", "1 1:1\n\n-1 2:1 7:2\n")
    with pytest.raises(DataFormatError, match=r"two\.txt:3: .* 7 .*n_features=6: '7:2\.0'"):
        load_svmlight(two, n_features=6)
    with pytest.raises(ValueError, match="n_features"):
        load_svmlight(path, n_features=-1)


def test_zero_based(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path / "zero.txt", "1 0:1 2:3\n-1 1:2\n")
    X, _ = load_svmlight(path)  # auto: a 0 index makes the file zero-based
    np.testing.assert_array_equal(X.toarray(), [[1, 0, 3], [0, 2, 0]])
    X, _ = load_svmlight(path, zero_based=True)
    assert X.shape == (2, 3)
    with pytest.raises(DataFormatError, match=r"zero\.txt:1:.*< 1.*'0:1'"):
        load_svmlight(path, zero_based=False)
    one = write(tmp_path / "one.txt", "1 1:1 3:3\n")
    assert load_svmlight(one)[0].shape == (1, 3)
    assert load_svmlight(one, zero_based=True)[0].shape == (1, 4)
    Xs, _ = load_svmlight_file(str(path))
    assert_same_csr(load_svmlight(path)[0], Xs)


def test_empty_files(tmp_path: pathlib.Path) -> None:
    for name, text in [("empty.txt", ""), ("blank.gz", "\n\n  \n"), ("comments.bz2", "# x\n#y\n")]:
        with pytest.raises(DataFormatError, match=name.replace(".", r"\.")):
            load_svmlight(write(tmp_path / name, text))


GOOD = "+1 1:1 2:2\n\n# comment\n-1 3:0.5\n"  # the next line is line 5


@pytest.mark.parametrize(
    ("line", "token"),
    [
        ("1 3 4:1", "3"),  # feature without ':'
        ("1 2:1 0:1", "0:1"),  # index < 1 (one-based file)
        ("1 -1:2", "-1:2"),  # negative index
        ("1 1.5:2", "1.5:2"),  # non-integer index
        ("1 :2", ":2"),  # empty index
        ("1 2:", "2:"),  # empty value
        ("1 2:abc", "2:abc"),  # non-numeric value
        ("1 2:nan", "2:nan"),  # non-finite value
        ("1 2:1:3", "2:1:3"),  # two colons
        ("1 3:1 2:1", "2:1"),  # decreasing indices
        ("1 3:1 3:2", "3:2"),  # duplicate index
        ("1:2 3:4", "1:2"),  # missing label
        ("abc 1:2", "abc"),  # non-numeric label
        ("inf 1:2", "inf"),  # non-finite label
        ("1 qid:x 1:2", "qid:x"),  # bad qid
        ("1 1:2 qid:3", "qid:3"),  # qid not right after the label
        ("1 1:2é", "1:2é"),  # non-ASCII
    ],
)
@pytest.mark.parametrize("suffix", [".txt", ".bz2"])
def test_malformed_line_reported(
    tmp_path: pathlib.Path, line: str, token: str, suffix: str
) -> None:
    # A second bad line after the first: the first one is reported.
    path = write(tmp_path / f"bad{suffix}", GOOD + line + "\n-1 1:1\n1 x:y\n")
    with pytest.raises(DataFormatError) as info:
        load_svmlight(path, zero_based=False)
    message = str(info.value)
    assert isinstance(info.value, ValueError)
    assert f"bad{suffix}:5:" in message
    assert repr(token) in message


def test_qid_ignored_matches_sklearn(tmp_path: pathlib.Path) -> None:
    text = "3 qid:1 1:0.5 4:1\n2 qid:1 2:1\n1 qid:-2 1:1 3:2\n"
    path = write(tmp_path / "rank.txt", text)
    X, y = load_svmlight(path)
    Xs, ys = load_svmlight_file(str(path))
    assert_same_csr(X, Xs)
    np.testing.assert_array_equal(y, ys)


def test_slow_path_used_for_non_ascii_comments(tmp_path: pathlib.Path) -> None:
    path = write(tmp_path / "utf8.txt", "# résumé\n1 1:2 # naïve\n-1 2:3\n")
    X, y = load_svmlight(path)
    np.testing.assert_array_equal(X.toarray(), [[2, 0], [0, 3]])
    np.testing.assert_array_equal(y, [1, -1])


# --------------------------------------------------------------------------------------------
# Platt's artificial data sets
# --------------------------------------------------------------------------------------------


def test_platt_separable() -> None:
    n = 3000
    X, y = platt_sparse_separable(n, seed=3)
    assert sp.isspmatrix_csr(X) and X.shape == (n, 300) and X.dtype == np.float64
    assert y.shape == (n,) and set(np.unique(y)) == {-1.0, 1.0}
    assert set(np.unique(X.data)) == {1.0}
    assert X.has_sorted_indices
    assert abs(X.nnz / (n * 300) - 0.1) < 0.005
    assert 0.35 < np.mean(y > 0) < 0.65
    w, b = platt_hyperplane(seed=3)
    margins = y * (X @ w - b)
    assert margins.min() >= 1.0  # the generating hyperplane separates with margin 1
    X2, y2 = platt_sparse_separable(n, seed=3)
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)
    X3, _ = platt_sparse_separable(n, seed=4)
    assert (X != X3).nnz > 0


def test_platt_separable_options() -> None:
    X, y = platt_sparse_separable(50, seed=1, d=40, density=0.3)
    assert X.shape == (50, 40)
    w, b = platt_hyperplane(seed=1, d=40, density=0.3)
    assert np.min(y * (X @ w - b)) >= 1.0
    X0, y0 = platt_sparse_separable(0)
    assert X0.shape == (0, 300) and y0.shape == (0,)
    with pytest.raises(ValueError, match="density"):
        platt_sparse_separable(10, density=0.0)
    with pytest.raises(ValueError, match="d must"):
        platt_random_labels(10, d=0)


def test_platt_random_labels() -> None:
    n = 4000
    X, y = platt_random_labels(n, seed=5)
    assert sp.isspmatrix_csr(X) and X.shape == (n, 300)
    assert set(np.unique(X.data)) == {1.0}
    assert abs(X.nnz / (n * 300) - 0.1) < 0.005
    assert abs(np.mean(y > 0) - 0.5) < 0.05
    # Labels carry no signal: per-feature correlation with y is at noise level.
    Xd = X.toarray()
    corr = (Xd - Xd.mean(0)).T @ (y - y.mean()) / n
    assert np.max(np.abs(corr)) < 0.03
    X2, y2 = platt_random_labels(n, seed=5)
    assert (X != X2).nnz == 0 and np.array_equal(y, y2)
    big, _ = platt_random_labels(20_000, seed=0)
    assert big.shape == (20_000, 300)


@pytest.mark.parametrize("module", [qpcore_formulations.data.svmlight, qpcore_formulations.data.float_text, qpcore_formulations.data.files, qpcore_formulations.data.synthetic])
def test_module_does_not_import_sklearn(module: object) -> None:
    path = pathlib.Path(str(getattr(module, "__file__")))
    assert "sklearn" not in path.read_text().replace("scikit-learn", "")
    assert path.parent.parent.name == "qpcore_formulations"


def test_data_modules_export_what_they_hold() -> None:
    for module in (qpcore_formulations.data.svmlight, qpcore_formulations.data.files, qpcore_formulations.data.synthetic):
        assert all(hasattr(module, n) for n in module.__all__)
