"""qpcore_formulations.risk (the hinge-loss linear SVM: primal, dual QP, certificate) and the SVMlight writer
qpcore_formulations.data.svmlight.dump_svmlight: bad input, the objectives against brute force, weak duality, the
certificate of a tight solve against LIBLINEAR, and writer round trips."""

from __future__ import annotations

import bz2
import gzip
import pathlib
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import qpcore
from qpcore_formulations.asvm import LinearSVMModel
from qpcore_formulations.data.svmlight import dump_svmlight, load_svmlight
from qpcore_formulations.risk import HingeCertificate, HingeProblem, hinge_svm
from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore_strategies.active_set import DenseActiveSet

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def _data(seed: int, m: int, d: int, *, sparse: bool = False, overlap: float = 0.5,
          per_example: bool = False, C: float = 1.0) -> tuple[Any, np.ndarray, Any]:
    """A random two-class set with some duplicate rows; C scalar or per example."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    if sparse:
        X[rng.random((m, d)) < 0.6] = 0.0
    y = np.where(X @ rng.normal(size=d) + overlap * rng.normal(size=m) > 0, 1.0, -1.0)
    y[:2] = [-1.0, 1.0]
    if m >= 6:
        X[-2:] = X[2:4]                        # duplicates
        y[-2:] = y[2:4]
    Cv: Any = C * rng.uniform(0.2, 5.0, size=m) if per_example else C
    return (sp.csr_matrix(X) if sparse else X), y, Cv


def _brute(X: Any, y: np.ndarray, C: Any, bias: float) -> tuple[np.ndarray, np.ndarray]:
    """The rows h_i = y_i [x_i, bias] and the C vector, densely."""
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=float)
    if bias > 0:
        Xd = np.hstack([Xd, np.full((Xd.shape[0], 1), bias)])
    return y[:, None] * Xd, np.broadcast_to(np.asarray(C, dtype=float), y.shape).copy()


def _F(H: np.ndarray, C: np.ndarray, w: np.ndarray) -> float:
    return float(0.5 * w @ w + C @ np.maximum(0.0, 1.0 - H @ w))


def _D(H: np.ndarray, alpha: np.ndarray) -> float:
    v = H.T @ alpha
    return float(alpha.sum() - 0.5 * v @ v)


# --- bad input ---------------------------------------------------------------------------------

def _good() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(6, 3)), np.array([1.0, -1, 1, -1, 1, -1])


def _with_nan() -> tuple[Any, ...]:
    X, y = _good()
    X[2, 1] = np.nan
    return (X, y)


def _with_inf() -> tuple[Any, ...]:
    X, y = _good()
    X[0, 0] = -np.inf
    return (X, y)


def _sparse_nan() -> tuple[Any, ...]:
    X, y = _good()
    S = sp.csr_matrix(X)
    S.data[3] = np.nan
    return (S, y)


BAD: dict[str, tuple[Any, dict[str, Any], str]] = {
    "nan": (_with_nan, {}, "X: contains NaN"),
    "inf": (_with_inf, {}, "X: contains NaN or inf"),
    "sparse nan": (_sparse_nan, {}, "X: contains NaN"),
    "1-D X": (lambda: (np.ones(6), _good()[1]), {}, "X: expected a 2-D"),
    "text X": (lambda: (np.array([["a", "b"]] * 6), _good()[1]), {}, "X: dtype"),
    "no rows": (lambda: (np.zeros((0, 3)), np.zeros(0)), {}, "X: no rows"),
    "y too short": (lambda: (_good()[0], _good()[1][:5]), {}, "y: shape mismatch"),
    "y 2-D": (lambda: (_good()[0], _good()[1][:, None]), {}, "y: shape mismatch"),
    "one class": (lambda: (_good()[0], np.ones(6)), {}, "exactly two distinct values, got 1"),
    "three classes": (lambda: (_good()[0], np.array([0, 1, 2, 0, 1, 2])), {}, "got 3"),
    "y nan": (lambda: (_good()[0], np.array([1, -1, np.nan, 1, -1, 1])), {}, "y: contains NaN"),
    "C zero": (_good, {"C": 0.0}, "C: must be finite and > 0"),
    "C negative": (_good, {"C": -1.0}, "C: must be finite and > 0"),
    "C nan": (_good, {"C": np.nan}, "C: must be finite and > 0"),
    "C inf": (_good, {"C": np.inf}, "C: must be finite and > 0"),
    "C vector negative": (_good, {"C": [1, 1, -1, 1, 1, 1]}, "C: per-example values must be finite, ≥ 0"),
    "C vector nan": (_good, {"C": [1, 1, np.nan, 1, 1, 1]}, "C: per-example values must be finite, ≥ 0"),
    "C vector all zero": (_good, {"C": np.zeros(6)}, "C: per-example values must be .* not all 0"),
    "C wrong length": (_good, {"C": np.ones(5)}, "C: shape mismatch"),
    "bias negative": (_good, {"bias": -1.0}, "bias: must be finite and ≥ 0"),
    "bias nan": (_good, {"bias": np.nan}, "bias: must be finite and ≥ 0"),
    "bias inf": (_good, {"bias": np.inf}, "bias: must be finite and ≥ 0"),
    "bias text": (_good, {"bias": "1"}, "bias: must be a real number"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_raises_before_work(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    make, kw, message = BAD[case]
    X, y = make()
    built: list[int] = []
    # "before any work": the operator over the data is never built
    original = DiagPlusLowRankQ.__init__

    def spy(self: DiagPlusLowRankQ, *a: Any, **k: Any) -> None:
        built.append(1)
        original(self, *a, **k)

    monkeypatch.setattr(DiagPlusLowRankQ, "__init__", spy)
    with pytest.raises(qpcore.ProblemError, match=message.replace("(", r"\(")):
        hinge_svm(X, y, **kw)
    assert not built


def test_wrong_point_lengths() -> None:
    X, y = _good()
    prob = hinge_svm(X, y)
    with pytest.raises(qpcore.ProblemError, match="w: shape mismatch"):
        prob.primal_objective(np.zeros(3))          # dim is 4 with the bias
    with pytest.raises(qpcore.ProblemError, match="alpha: shape mismatch"):
        prob.dual_objective(np.zeros(5))


# --- the problem's shape -------------------------------------------------------------------------

def test_layout_and_in_place_data() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 4))
    y = np.where(rng.random(30) < 0.5, 3, 7)   # any two labels: the larger is +1
    y[:2] = [3, 7]
    prob = hinge_svm(X, y, 2.0, bias=1.5)
    assert prob.X is X                          # dense C-contiguous float64: used in place
    assert prob.n_features == 4 and prob.dim == 5 and prob.bias == 1.5
    np.testing.assert_array_equal(prob.y, np.where(y == 7, 1.0, -1.0))
    np.testing.assert_array_equal(prob.classes, [3, 7])
    qp = prob.qp
    assert qp.m == 0 and qp.n == 30
    np.testing.assert_array_equal(qp.lb, 0.0)
    np.testing.assert_array_equal(qp.ub, 2.0)
    np.testing.assert_array_equal(qp.c, -1.0)
    assert isinstance(qp.Q, DiagPlusLowRankQ)
    H, _ = _brute(X, prob.y, 2.0, 1.5)
    np.testing.assert_allclose(qp.Q.block(np.arange(30)), H @ H.T, rtol=1e-12, atol=1e-12)
    assert hinge_svm(X, y, bias=0.0).dim == 4
    # a Fortran-ordered or integer array is converted (a copy), sparse input becomes CSR float64
    assert hinge_svm(np.asfortranarray(X), y).X.flags.c_contiguous
    S = sp.random(200, 300, density=0.01, random_state=0, format="coo")
    ys = np.where(np.arange(200) % 2, 1.0, -1.0)
    held = hinge_svm(S, ys).X
    assert sp.issparse(held) and held.format == "csr" and held.dtype == np.float64
    assert isinstance(hinge_svm(S, ys, dense=True).X, np.ndarray)
    assert isinstance(hinge_svm(sp.csr_matrix(X), y).X, np.ndarray)   # small and dense: held dense


def test_C_is_copied() -> None:
    X, y = _good()
    C = np.ones(6)
    prob = hinge_svm(X, y, C)
    C[0] = 100.0
    assert prob.C[0] == 1.0 and prob.qp.ub[0] == 1.0


# --- the objectives against brute force ----------------------------------------------------------

@given(seed=SEEDS, m=st.integers(2, 40), d=st.integers(1, 8), sparse=st.booleans(),
       bias=st.sampled_from([0.0, 1.0, 0.3, 10.0]), per_example=st.booleans(),
       logC=st.floats(-3.0, 3.0))
def test_objectives_match_brute_force(seed: int, m: int, d: int, sparse: bool, bias: float,
                                      per_example: bool, logC: float) -> None:
    X, y, C = _data(seed, m, d, sparse=sparse, per_example=per_example, C=10.0 ** logC)
    prob = hinge_svm(X, y, C, bias=bias, dense=False)
    assert sp.issparse(prob.X) == sparse
    H, Cv = _brute(X, y, C, bias)
    np.testing.assert_array_equal(prob.C, Cv)
    rng = np.random.default_rng(seed + 1)
    w = rng.normal(size=prob.dim)
    alpha = rng.uniform(0.0, 1.0, size=m) * Cv
    scale = 1.0 + float(Cv.sum()) * (1.0 + float(np.abs(H).sum(axis=1).max()) * float(np.abs(w).max()))
    assert prob.primal_objective(w) == pytest.approx(_F(H, Cv, w), rel=1e-12, abs=1e-12 * scale)
    np.testing.assert_allclose(prob.margins(w), H @ w, rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(prob.primal_of(alpha), H.T @ alpha, rtol=1e-12,
                               atol=1e-12 * (1.0 + float((np.abs(H).T @ alpha).max())))
    D = prob.dual_objective(alpha)
    v = H.T @ alpha
    dscale = 1.0 + float(alpha.sum()) + float(v @ v)
    assert D == pytest.approx(_D(H, alpha), rel=1e-12, abs=1e-12 * dscale)
    assert D == pytest.approx(-prob.qp.objective(alpha), rel=1e-10, abs=1e-12 * dscale)


@given(seed=SEEDS, m=st.integers(2, 40), d=st.integers(1, 8), sparse=st.booleans(),
       bias=st.sampled_from([0.0, 1.0, 2.5]), per_example=st.booleans(), logC=st.floats(-3.0, 3.0),
       w_scale=st.sampled_from([0.0, 1e-2, 1.0, 1e2]), at_bounds=st.booleans())
def test_weak_duality(seed: int, m: int, d: int, sparse: bool, bias: float, per_example: bool,
                      logC: float, w_scale: float, at_bounds: bool) -> None:
    """F(w) ≥ D(α) for every w and every α in the box, and the certificate says so."""
    X, y, C = _data(seed, m, d, sparse=sparse, per_example=per_example, C=10.0 ** logC)
    prob = hinge_svm(X, y, C, bias=bias)
    rng = np.random.default_rng(seed + 2)
    w = w_scale * rng.normal(size=prob.dim)
    u = rng.random(m)
    if at_bounds:
        u = np.round(u)
    alpha = u * prob.C
    cert = prob.certify(w, alpha)
    assert isinstance(cert, HingeCertificate)
    v = prob.primal_of(alpha)
    rounding = 1e-12 * (1.0 + float(prob.C.sum()) + float(v @ v) + float(w @ w))
    assert cert.primal >= cert.dual - rounding
    assert cert.gap == pytest.approx(cert.primal - cert.dual)
    assert cert.rel_gap == pytest.approx(cert.gap / abs(cert.primal))
    assert cert.feasible and cert.kkt.primal == 0.0
    # and at the dual's own primal point w(α) the gap is the complementarity Σ C_i hinge_i − ...
    own = prob.certify(v, alpha)
    assert own.primal >= own.dual - rounding


def test_infeasible_alpha_is_reported() -> None:
    X, y = _good()
    prob = hinge_svm(X, y, 1.0)
    cert = prob.certify(np.zeros(prob.dim), np.full(6, 2.0))   # above C = 1
    assert not cert.feasible and cert.kkt.primal == pytest.approx(1.0)


# --- a tight solve: certificate, decode, LIBLINEAR ------------------------------------------------

def _tight(prob: HingeProblem) -> qpcore.Result:
    res = qpcore.solve(prob.qp, DenseActiveSet(), tol=1e-10)
    assert res.converged
    return res


@given(seed=SEEDS, m=st.integers(2, 40), d=st.integers(1, 6), sparse=st.booleans(),
       bias=st.sampled_from([0.0, 1.0, 3.0]), per_example=st.booleans(), logC=st.floats(-3.0, 3.0),
       overlap=st.sampled_from([0.0, 0.5, 5.0]))
def test_certificate_of_an_exact_dual_solution(seed: int, m: int, d: int, sparse: bool, bias: float,
                                               per_example: bool, logC: float, overlap: float) -> None:
    X, y, C = _data(seed, m, d, sparse=sparse, overlap=overlap, per_example=per_example, C=10.0 ** logC)
    prob = hinge_svm(X, y, C, bias=bias)
    res = _tight(prob)
    w = prob.weights(res)                       # no primal point in the state: Hᵀα
    np.testing.assert_allclose(w, prob.primal_of(res.x))
    cert = prob.certificate(res)
    assert cert.feasible
    assert cert.gap >= -1e-12 * (1.0 + abs(cert.primal))
    # the dual's KKT measure tol bounds the gap by tol·Σ(distance to the bounds) ≤ tol·ΣC
    assert cert.gap <= 1e-9 * (1.0 + float(prob.C.sum())) + 1e-11 * abs(cert.primal)
    assert cert.kkt.measure <= 1e-10
    assert cert.dual == pytest.approx(-res.objective, rel=1e-10, abs=1e-12)


def test_weights_prefer_the_strategys_primal_point() -> None:
    X, y = _good()
    prob = hinge_svm(X, y, 1.0)
    res = _tight(prob)
    w_b = np.arange(prob.dim, dtype=float)
    res.state.primal = w_b                       # what a cutting-plane strategy leaves
    got = prob.weights(res)
    np.testing.assert_array_equal(got, w_b)
    got[0] = 99.0                                # a copy
    assert w_b[0] == 0.0
    cert = prob.certificate(res)
    assert cert.primal == pytest.approx(_F(_brute(X, prob.y, 1.0, 1.0)[0], prob.C, w_b))
    res.state.primal = np.zeros(3)
    with pytest.raises(qpcore.ProblemError, match="w: shape mismatch"):
        prob.weights(res)


@pytest.mark.parametrize("bias", [0.0, 1.0, 2.0])
def test_decode(bias: float) -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 3))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.4 * rng.normal(size=50) > 0.2, "yes", "no")
    prob = hinge_svm(X, y, 1.0, bias=bias)
    res = _tight(prob)
    model = prob.decode(res)
    assert isinstance(model, LinearSVMModel)
    w = prob.weights(res)
    np.testing.assert_allclose(model.decision_function(X), prob.margins(w) * prob.y, atol=1e-12)
    assert model.gamma == (-bias * w[3] if bias else 0.0)
    np.testing.assert_array_equal(model.predict(X), np.where(prob.margins(w) * prob.y > 0, "yes", "no"))


def _liblinear(X: Any, y: np.ndarray, C: Any, bias: float) -> np.ndarray:
    """LIBLINEAR's hinge-loss dual CD (tight): w = [coef, intercept/bias] in our layout."""
    from sklearn.svm import LinearSVC

    Cs = float(np.max(C))
    sw = None if np.ndim(C) == 0 else np.asarray(C) / Cs
    mdl = LinearSVC(loss="hinge", dual=True, C=Cs, fit_intercept=bias > 0, intercept_scaling=bias or 1.0,
                    tol=1e-10, max_iter=10**6, random_state=0)
    mdl.fit(X, y, sample_weight=sw)
    w = mdl.coef_.ravel()
    # LIBLINEAR appends the feature `bias` and regularizes its weight w_b: intercept_ = bias·w_b
    return np.concatenate([w, mdl.intercept_ / bias]) if bias > 0 else w


@pytest.mark.anchor
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [0.0, 1.0, 5.0])
@pytest.mark.parametrize("C,per_example", [(1.0, False), (0.01, False), (50.0, False), (1.0, True)])
def test_matches_liblinear(sparse: bool, bias: float, C: float, per_example: bool) -> None:
    X, y, Cv = _data(11, 120, 6, sparse=sparse, overlap=1.0, per_example=per_example, C=C)
    prob = hinge_svm(X, y, Cv, bias=bias)
    res = _tight(prob)
    cert = prob.certificate(res)
    w_ref = _liblinear(X, y, Cv, bias)
    F_ref = prob.primal_objective(w_ref)
    assert cert.primal <= F_ref * (1 + 1e-9)                 # ours is the exact optimum
    assert F_ref == pytest.approx(cert.primal, rel=1e-6)     # LIBLINEAR at tight eps reaches it
    assert cert.rel_gap <= 1e-9


# --- the SVMlight writer -------------------------------------------------------------------------

def _read(path: pathlib.Path, n: int, zero_based: bool) -> tuple[np.ndarray, np.ndarray]:
    X, y = load_svmlight(path, n_features=n, dense=True, zero_based=zero_based)
    return X, y


@pytest.mark.parametrize("zero_based", [False, True])
@pytest.mark.parametrize("kind", ["dense", "csr", "csc", "int"])
def test_writer_round_trip(tmp_path: pathlib.Path, zero_based: bool, kind: str) -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 17)) * 10.0 ** rng.integers(-8, 8, size=(300, 17))
    X[rng.random(X.shape) < 0.5] = 0.0
    X[5] = 0.0                                            # an empty row
    y = np.where(rng.random(300) < 0.5, -1.0, 1.0)
    data: Any = {"dense": X, "csr": sp.csr_matrix(X), "csc": sp.csc_matrix(X),
                 "int": np.round(X).astype(np.int64)}[kind]
    path = tmp_path / "d.svm"
    dump_svmlight(path, data, y, zero_based=zero_based)
    X2, y2 = _read(path, 17, zero_based)
    expect = data.toarray() if sp.issparse(data) else data
    np.testing.assert_array_equal(X2, expect)
    np.testing.assert_array_equal(y2, y)
    lines = path.read_text().splitlines()
    assert len(lines) == 300 and lines[5] in ("+1", "-1")
    first = [int(t.split(":")[0]) for line in lines for t in line.split()[1:]]
    assert min(first) == (0 if zero_based else 1) or zero_based is False and min(first) >= 1


def test_writer_text(tmp_path: pathlib.Path) -> None:
    X = np.array([[0.1, 0.0, 3.0, -2.5e-7], [0.0, 0.0, 0.0, 0.0], [1e300, -0.5, 1e-5, 12.25]])
    path = tmp_path / "t.svm"
    dump_svmlight(path, X, np.array([1.0, -1.0, 1.0]))
    assert path.read_text() == "+1 1:0.1 3:3 4:-2.5e-07\n-1\n+1 1:1e+300 2:-0.5 3:1e-05 4:12.25\n"
    dump_svmlight(path, X[:1], np.array([0.5]), zero_based=True)
    assert path.read_text() == "0.5 0:0.1 2:3 3:-2.5e-07\n"


def test_writer_canonicalizes_sparse(tmp_path: pathlib.Path) -> None:
    # unsorted indices, duplicates (summed), explicit zeros (dropped)
    S = sp.csr_matrix((np.array([2.0, 1.0, 0.0, 4.0, 0.5]), np.array([3, 0, 1, 3, 2]), np.array([0, 4, 5])),
                      shape=(2, 4))
    path = tmp_path / "c.svm"
    dump_svmlight(path, S, np.array([-1.0, 1.0]))
    assert path.read_text() == "-1 1:1 4:6\n+1 3:0.5\n"


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_writer_compresses(tmp_path: pathlib.Path, suffix: str) -> None:
    X, y = _good()
    path = tmp_path / f"c.svm{suffix}"
    dump_svmlight(path, X, y)
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if suffix == ".gz" else bz2.decompress(raw)).decode()
    assert text.count("\n") == 6
    X2, y2 = _read(path, 3, False)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)


@pytest.mark.parametrize("X,y,message", [
    (np.array([[1.0, np.nan]]), np.ones(1), "X: contains NaN"),
    (sp.csr_matrix(np.array([[1.0, np.inf]])), np.ones(1), "X: contains NaN"),
    (np.ones(3), np.ones(3), "X: expected a 2-D"),
    (np.ones((2, 2)), np.ones(3), "y: shape mismatch"),
    (np.ones((2, 2)), np.array([1.0, np.nan]), "y: contains NaN"),
    (np.ones((2, 2), dtype=complex), np.ones(2), "X: dtype"),
])
def test_writer_bad_input(tmp_path: pathlib.Path, X: Any, y: Any, message: str) -> None:
    path = tmp_path / "bad.svm"
    with pytest.raises(ValueError, match=message):
        dump_svmlight(path, X, y)
    assert not path.exists()                                  # checked before the file is opened


@given(values=hnp.arrays(np.float64, st.integers(1, 300),
                         elements=st.floats(allow_nan=False, allow_infinity=False, width=64)),
       zero_based=st.booleans())
def test_writer_any_float_reads_back_exactly(tmp_path_factory: pytest.TempPathFactory, values: np.ndarray,
                                             zero_based: bool) -> None:
    """Every finite float64 (subnormals, extremes, ±0) reads back as the same float64, with at most
    17 significant digits."""
    n = values.size
    X = values.reshape(n, 1)
    labels = np.where(np.arange(n) % 2, 1.0, -1.0)
    path = tmp_path_factory.mktemp("floats") / "f.svm"
    dump_svmlight(path, X, labels, zero_based=zero_based)
    X2, y2 = _read(path, 1, zero_based)
    np.testing.assert_array_equal(X2[:, 0], values)           # -0.0 == 0.0: written as nothing
    np.testing.assert_array_equal(y2, labels)
    for line, v in zip(path.read_text().splitlines(), values.tolist()):
        tokens = line.split()
        if v == 0:
            assert len(tokens) == 1
            continue
        text = tokens[1].split(":")[1]
        assert float(text) == v
        digits = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
        assert len(digits) <= 17 and len(text) <= 24


def test_writer_text_is_mostly_repr(tmp_path: pathlib.Path) -> None:
    """Python's shortest repr for ~99% of random floats (16 digits where repr needs fewer digits
    otherwise), the same layout (positional for 1e-4 ≤ |v| < 1e16)."""
    rng = np.random.default_rng(12)
    values = np.concatenate([rng.random(3000), rng.normal(size=3000) * 10.0 ** rng.integers(-30, 30, size=3000),
                             np.round(rng.random(3000), 4) + 0.5])
    path = tmp_path / "r.svm"
    dump_svmlight(path, values[:, None], np.ones(values.size))
    texts = [line.split(":")[1] for line in path.read_text().splitlines()]
    same = np.mean([t == repr(v) for t, v in zip(texts, values.tolist())])
    assert same >= 0.97
    assert all(float(t) == v for t, v in zip(texts, values.tolist()))


def test_writer_many_rows_in_chunks(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from qpcore_formulations.data import svmlight

    monkeypatch.setattr(svmlight, "_WRITE_NNZ", 64)           # many chunks, some rows alone
    rng = np.random.default_rng(9)
    S = sp.random(500, 40, density=0.2, random_state=2, format="csr")
    S.data = np.round(S.data * 8) / 4                         # few distinct values: formatted once each
    S.data[S.indptr[7]:S.indptr[8]] = 0.0                     # explicit zeros: an empty line
    y = rng.integers(0, 3, size=500).astype(float)
    path = tmp_path / "chunks.svm"
    dump_svmlight(path, S, y)
    X2, y2 = load_svmlight(path, n_features=40, zero_based=False)
    S.eliminate_zeros()
    assert (X2 != S).nnz == 0
    np.testing.assert_array_equal(y2, y)
    lines = path.read_text().splitlines()
    assert len(lines) == 500 and lines[7] in ("0", "+1", "+2")
