"""qpcore_sklearn.linear.LinearSVMClassifier: scikit-learn's estimator checks, cross-checks against
LIBLINEAR (sklearn.svm.LinearSVC), properties, warnings and bad input."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

pytest.importorskip("sklearn")

from sklearn.datasets import load_breast_cancer, load_digits  # noqa: E402
from sklearn.exceptions import ConvergenceWarning, NotFittedError  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import qpcore  # noqa: E402
from qpcore_sklearn.linear import LinearSVMClassifier  # noqa: E402


# --------------------------------------------------------------------------------------------- helpers
def primal_objective(clf: Any, X: Any, y: Any, k: int = 0, sample_C: Any = None) -> float:
    """LIBLINEAR's primal objective of binary problem k of a fitted LinearSVMClassifier or LinearSVC.

    ½(‖w‖² + (b/s)²) + Σ C_i loss_i, w = coef_[k], b = intercept_[k], s = intercept_scaling (no b
    term without an intercept), the (squared) hinge of y_i(x_iᵀw + b) with y_i = +1 for classes_[1]
    (two classes) or classes_[k] (one-vs-rest). Both estimators regularize the intercept through
    the constant feature s, so this is the function both minimize.
    """
    classes = clf.classes_
    positive = classes[1] if classes.size == 2 else classes[k]
    ypm = np.where(np.asarray(y) == positive, 1.0, -1.0)
    w = np.asarray(clf.coef_[k], dtype=np.float64)
    b = float(np.atleast_1d(clf.intercept_)[k])   # LinearSVC: a plain 0.0 without an intercept
    Xw = np.asarray(X @ w, dtype=np.float64).ravel()
    xi = np.maximum(0.0, 1.0 - ypm * (Xw + b))
    loss = xi * xi if clf.loss == "squared_hinge" else xi
    C = np.full(ypm.size, float(clf.C)) if sample_C is None else np.asarray(sample_C, dtype=np.float64)
    reg = w @ w + ((b / float(clf.intercept_scaling)) ** 2 if clf.fit_intercept else 0.0)
    return float(0.5 * reg + C @ loss)


def liblinear(**params: Any) -> LinearSVC:
    """LinearSVC solved tightly (its dual coordinate descent), so its objective is ≥ the optimum
    by a hair only: the reference our objective must not exceed by more than our tolerance."""
    return LinearSVC(dual=True, tol=1e-8, max_iter=200_000, random_state=0, **params)


@pytest.fixture(scope="module")
def breast_cancer() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def weighted_C(C: float, y: Any, classes: Any, k: int, class_weight: Any = None, sample_weight: Any = None) -> Any:
    """C_i of binary problem k as LIBLINEAR weights it: C · sample_weight_i · class weight, each
    example by its own class with two classes, one-vs-rest class k by its weight and the rest by 1."""
    from sklearn.utils.class_weight import compute_class_weight

    y = np.asarray(y)
    out = np.full(y.size, float(C)) if sample_weight is None else float(C) * np.asarray(sample_weight, dtype=float)
    if class_weight is not None:
        cw = compute_class_weight(class_weight, classes=classes, y=y, sample_weight=sample_weight)
        idx = np.searchsorted(classes, y)
        out = out * (cw[idx] if classes.size == 2 else np.where(idx == k, cw[k], 1.0))
    return out


# --------------------------------------------------------------------------------------------- sklearn's checks
# every check applies to both losses, check_class_weight_classifiers and the sample-weight checks
# (check_sample_weight_equivalence_on_dense/sparse_data, check_all_zero_sample_weights_error,
# check_classifiers_one_label_sample_weights, ...) included
@parametrize_with_checks([LinearSVMClassifier(), LinearSVMClassifier(loss="hinge")])  # type: ignore[untyped-decorator]
def test_sklearn_compatible(estimator: LinearSVMClassifier, check: Any) -> None:
    check(estimator)


# --------------------------------------------------------------------------------------------- against LIBLINEAR
# The formulations: LIBLINEAR (-B s, sklearn's intercept_scaling) appends the constant feature s to
# every example and regularizes its weight v, the intercept being b = s·v:
#     min ½(‖w‖² + v²) + C Σ loss(y_i(x_iᵀw + s·v)).
# loss="hinge" is exactly qpcore_formulations.risk.hinge_svm(X, y, C, bias=s) (OCAS & co. solve it); for
# loss="squared_hinge" the ASVM primal min ν/2‖ξ‖² + ½(‖w̄‖² + γ²) on X/s with ν = 2Cs² is the same
# problem after w̄ = s·w, γ = −s·v. So both sides minimize the same strictly convex function, and
# `primal_objective` above compares them. The tolerances differ in kind: ours is the relative duality
# gap (cutting planes) or the dual projected gradient (ASVM), LIBLINEAR's its dual projected gradient.
@pytest.mark.anchor
@pytest.mark.parametrize("loss,solver", [("squared_hinge", "asvm"), ("hinge", "ocas"), ("hinge", "ocas-active"),
                                         ("hinge", "bmrm")])
@pytest.mark.parametrize("C", [0.1, 1.0])
def test_breast_cancer_matches_liblinear(breast_cancer: tuple[np.ndarray, np.ndarray], loss: str, solver: str,
                                         C: float) -> None:
    X, y = breast_cancer
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    tol = 1e-7
    ours = LinearSVMClassifier(C=C, loss=loss, solver=solver, tol=tol, max_iter=5000).fit(Xtr, ytr)
    ref = liblinear(C=C, loss=loss).fit(Xtr, ytr)
    assert ours.status_ == "converged"
    assert ours.coef_.shape == ref.coef_.shape == (1, X.shape[1])
    assert ours.intercept_.shape == ref.intercept_.shape == (1,)
    f_ours, f_ref = primal_objective(ours, Xtr, ytr), primal_objective(ref, Xtr, ytr)
    # ours is within tol (relative gap) of the optimum, LIBLINEAR's is ≥ the optimum
    assert f_ours <= f_ref * (1 + 10 * tol) + 1e-9
    assert f_ours == pytest.approx(f_ref, rel=1e-4)
    assert abs(ours.score(Xte, yte) - ref.score(Xte, yte)) <= 0.002
    assert abs(ours.score(Xtr, ytr) - ref.score(Xtr, ytr)) <= 0.002


@pytest.mark.anchor
@pytest.mark.parametrize("loss,params", [("squared_hinge", {"intercept_scaling": 10.0}),
                                         ("squared_hinge", {"intercept_scaling": 0.3}),
                                         ("hinge", {"intercept_scaling": 5.0}),
                                         ("hinge", {"fit_intercept": False}),
                                         ("hinge", {"class_weight": {0: 3.0, 1: 0.5}}),
                                         ("hinge", {"class_weight": "balanced"})])
def test_intercept_and_class_weight_match_liblinear(breast_cancer: tuple[np.ndarray, np.ndarray], loss: str,
                                                    params: dict[str, Any]) -> None:
    X, y = breast_cancer
    ours = LinearSVMClassifier(C=0.5, loss=loss, tol=1e-7, max_iter=5000, **params).fit(X, y)
    ref = liblinear(C=0.5, loss=loss, **params).fit(X, y)
    assert ours.status_ == "converged"
    sample_C = None
    if "class_weight" in params:
        # binary LIBLINEAR weights each example by its own class: C_i = C·class_weight[y_i], as we do
        from sklearn.utils.class_weight import compute_class_weight
        cw = compute_class_weight(params["class_weight"], classes=np.unique(y), y=y)
        sample_C = 0.5 * cw[np.searchsorted(np.unique(y), y)]
    f_ours = primal_objective(ours, X, y, sample_C=sample_C)
    f_ref = primal_objective(ref, X, y, sample_C=sample_C)
    assert f_ours <= f_ref * (1 + 1e-6) + 1e-9
    assert f_ours == pytest.approx(f_ref, rel=1e-4)
    if not params.get("fit_intercept", True):
        assert ours.intercept_.tolist() == [0.0]
    assert abs(ours.score(X, y) - ref.score(X, y)) <= 0.002


@pytest.mark.anchor
@pytest.mark.parametrize("loss,C", [("squared_hinge", 1.0), ("hinge", 0.1)])
def test_digits_one_vs_rest_matches_liblinear(digits: tuple[np.ndarray, np.ndarray], loss: str, C: float) -> None:
    X, y = digits
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    tol = 1e-5
    ours = LinearSVMClassifier(C=C, loss=loss, tol=tol, max_iter=5000).fit(Xtr, ytr)
    ref = liblinear(C=C, loss=loss).fit(Xtr, ytr)
    assert ours.status_ == "converged"
    assert ours.coef_.shape == ref.coef_.shape == (10, 64)
    assert ours.intercept_.shape == (10,)
    assert isinstance(ours.result_, list) and len(ours.result_) == 10
    assert ours.decision_function(Xte).shape == (Xte.shape[0], 10)
    # one-vs-rest on both sides: the same ten binary problems, compared one by one
    for k in range(10):
        f_ours, f_ref = primal_objective(ours, Xtr, ytr, k), primal_objective(ref, Xtr, ytr, k)
        assert f_ours <= f_ref * (1 + 2 * tol) + 1e-9
        assert f_ours == pytest.approx(f_ref, rel=1e-3)
    assert abs(ours.score(Xte, yte) - ref.score(Xte, yte)) <= 0.002
    assert abs(ours.score(Xtr, ytr) - ref.score(Xtr, ytr)) <= 0.002


# --------------------------------------------------------------------------------------------- weights vs LIBLINEAR
# class_weight and sample_weight in both losses: C_i = C · sample_weight_i · class weight (weighted_C)
# is the same on both sides, so both minimize the same weighted primal and `primal_objective` with
# sample_C = weighted_C(...) compares them. The squared hinge's weights are ASVM's diagonal
# d_i = 1/(2 C_i s²) (qpcore_formulations.asvm), the hinge's the cutting planes' box.
_WEIGHTINGS = ["dict", "balanced", "sample", "sample+dict", "sample+balanced", "sample spread", "sample zeros"]


def _weights(kind: str, y: Any, seed: int = 0) -> tuple[Any, Any]:
    """(class_weight, sample_weight) of a weighting kind."""
    rng = np.random.default_rng(seed)
    labels = np.unique(y)
    cw = {c: w for c, w in zip(labels, np.linspace(0.3, 3.0, labels.size)[::-1])}
    sw = rng.uniform(0.0, 3.0, np.asarray(y).size)
    if kind == "dict":
        return cw, None
    if kind == "balanced":
        return "balanced", None
    if kind == "sample":
        return None, sw
    if kind == "sample+dict":
        return cw, sw
    if kind == "sample+balanced":        # "balanced" counts the examples by their sample weights
        return "balanced", sw
    if kind == "sample spread":          # weights over four decades
        return None, 10.0 ** rng.uniform(-2.0, 2.0, sw.size)
    sw[rng.random(sw.size) < 0.3] = 0.0  # "sample zeros": 30% of the examples drop out
    return None, sw


def _check_weighted(ours: LinearSVMClassifier, ref: LinearSVC, X: Any, y: Any, cw: Any, sw: Any, tol: float,
                    rel: float = 1e-4) -> list[float]:
    """Every binary problem: our weighted primal ≤ LIBLINEAR's × (1 + 10·tol); the ratios."""
    assert ours.status_ == "converged"
    assert ours.coef_.shape == ref.coef_.shape
    ratios = []
    for k in range(ours.coef_.shape[0]):
        C_i = weighted_C(ours.C, y, ours.classes_, k, cw, sw)
        f_ours = primal_objective(ours, X, y, k, sample_C=C_i)
        f_ref = primal_objective(ref, X, y, k, sample_C=C_i)
        assert f_ours <= f_ref * (1 + 10 * tol) + 1e-9, (k, f_ours, f_ref)
        assert f_ours == pytest.approx(f_ref, rel=rel)
        ratios.append(f_ours / f_ref)
    return ratios


@pytest.mark.anchor
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("kind", _WEIGHTINGS)
def test_weights_match_liblinear_binary(breast_cancer: tuple[np.ndarray, np.ndarray], loss: str, kind: str) -> None:
    X, y = breast_cancer
    cw, sw = _weights(kind, y)
    tol = 1e-7
    ours = LinearSVMClassifier(C=0.5, loss=loss, tol=tol, max_iter=5000, class_weight=cw).fit(X, y, sample_weight=sw)
    ref = liblinear(C=0.5, loss=loss, class_weight=cw).fit(X, y, sample_weight=sw)
    _check_weighted(ours, ref, X, y, cw, sw, tol)
    assert abs(ours.score(X, y) - ref.score(X, y)) <= 0.004


@pytest.mark.anchor
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("kind", ["dict", "balanced", "sample+dict", "sample+balanced", "sample zeros"])
def test_weights_match_liblinear_one_vs_rest(loss: str, kind: str) -> None:
    """Generated data, four unbalanced classes: LIBLINEAR's one-vs-rest weighting, problem by problem."""
    rng = np.random.default_rng(7)
    sizes = np.array([120, 60, 30, 15])
    y = np.repeat(np.arange(4), sizes)
    X = rng.standard_normal((y.size, 5)) + 1.2 * rng.standard_normal((4, 5))[y]
    cw, sw = _weights(kind, y, seed=3)
    tol = 1e-6
    ours = LinearSVMClassifier(C=0.3, loss=loss, tol=tol, max_iter=5000, class_weight=cw).fit(X, y, sample_weight=sw)
    ref = liblinear(C=0.3, loss=loss, class_weight=cw).fit(X, y, sample_weight=sw)
    _check_weighted(ours, ref, X, y, cw, sw, tol, rel=1e-3)


@pytest.mark.anchor
@pytest.mark.data
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
@pytest.mark.parametrize("kind", ["dict", "balanced", "sample", "sample+balanced"])
def test_adult_weights_match_liblinear(loss: str, kind: str) -> None:
    """Adult (sparse one-hot rows, 24% positive), a 4000-row subset, with each weighting."""
    from qpcore_formulations.data.files import load_dataset

    X, y = load_dataset("adult")
    X, y = X[:4000], y[:4000]
    cw, sw = _weights(kind, y, seed=11)
    tol = 1e-6
    ours = LinearSVMClassifier(C=0.1, loss=loss, tol=tol, max_iter=5000, class_weight=cw).fit(X, y, sample_weight=sw)
    ref = liblinear(C=0.1, loss=loss, class_weight=cw).fit(X, y, sample_weight=sw)
    _check_weighted(ours, ref, X, y, cw, sw, tol)


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_sample_weight_zero_and_integer_are_removal_and_repetition(breast_cancer: tuple[np.ndarray, np.ndarray],
                                                                   loss: str) -> None:
    X, y = breast_cancer
    rng = np.random.default_rng(5)
    sw = rng.integers(0, 4, y.size)
    tol = 1e-8
    a = LinearSVMClassifier(C=0.5, loss=loss, tol=tol, max_iter=10_000).fit(X, y, sample_weight=sw)
    idx = np.repeat(np.arange(y.size), sw)
    b = LinearSVMClassifier(C=0.5, loss=loss, tol=tol, max_iter=10_000).fit(X[idx], y[idx])
    f_a = primal_objective(a, X, y, sample_C=0.5 * sw)
    f_b = primal_objective(b, X[idx], y[idx])
    assert f_a == pytest.approx(f_b, rel=1e-6)
    if loss == "squared_hinge":      # strictly convex in (w, v): the same point
        np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-5, atol=1e-6)
    # the squared hinge's dual leaves the rows of weight 0 out
    if loss == "squared_hinge":
        assert isinstance(a.result_, qpcore.Result) and a.result_.x.shape == (int((sw > 0).sum()),)


def test_class_weight_and_sample_weight_multiply(breast_cancer: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = breast_cancer
    sw = np.where(y == 0, 2.5, 0.4)
    a = LinearSVMClassifier(tol=1e-9, class_weight={0: 2.5, 1: 0.4}).fit(X, y)
    b = LinearSVMClassifier(tol=1e-9).fit(X, y, sample_weight=sw)
    c = LinearSVMClassifier(tol=1e-9, C=2.0, class_weight={0: 2.5, 1: 0.4}).fit(X, y, sample_weight=np.full(y.size, 0.5))
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(a.coef_, c.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("sw,match", [
    (np.array([1.0, -1.0, 1.0, 1.0]), "sample_weight: has negative entries"),
    (np.array([1.0, np.nan, 1.0, 1.0]), "sample_weight: contains NaN or inf"),
    (np.array([1.0, np.inf, 1.0, 1.0]), "sample_weight: contains NaN or inf"),
    (np.zeros(4), "sample_weight: all weights are zero"),
    (np.ones(3), r"sample_weight: shape mismatch"),
    (np.ones((4, 1)), r"sample_weight: shape mismatch"),
    (np.array([1.0, 0.0, 1.0, 0.0]), "one class"),
    (np.array(["a", "b", "c", "d"]), "sample_weight: must be real numbers"),
])
@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_bad_sample_weight_raises_before_work(sw: Any, match: str, loss: str, monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[int] = []
    monkeypatch.setattr(qpcore, "solve", lambda *a, **k: called.append(1))
    with pytest.raises(ValueError, match=match):
        LinearSVMClassifier(loss=loss).fit(_X, _Y, sample_weight=sw)
    assert not called


# --------------------------------------------------------------------------------------------- properties
@st.composite
def _binary_data(draw: Any) -> tuple[np.ndarray, np.ndarray]:
    m = draw(st.integers(6, 30))
    d = draw(st.integers(1, 4))
    X = draw(hnp.arrays(np.float64, (m, d), elements=st.floats(-5, 5, allow_nan=False, width=32)))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=m, max_size=m)))
    y[0], y[1] = 0, 1          # both classes present
    return X, y


@given(data=_binary_data(), loss=st.sampled_from(["squared_hinge", "hinge"]))
def test_property_decision_function_and_relabelling(data: tuple[np.ndarray, np.ndarray], loss: str) -> None:
    X, y = data
    a = LinearSVMClassifier(C=1.0, loss=loss, tol=1e-9, max_iter=5000).fit(X, y)
    dec = a.decision_function(X)
    assert dec.shape == (X.shape[0],)
    np.testing.assert_allclose(dec, (X @ a.coef_.T + a.intercept_).ravel(), rtol=1e-12, atol=1e-12)
    assert np.array_equal(a.predict(X), np.where(dec > 0, a.classes_[1], a.classes_[0]))
    # rename the classes in the reverse order: the positive class becomes the negative one; the
    # problem is symmetric under y → −y, so the model is mirrored and the predictions are renamed
    names = np.array(["zulu", "alpha"])       # 0 → "zulu" (now positive), 1 → "alpha"
    b = LinearSVMClassifier(C=1.0, loss=loss, tol=1e-9, max_iter=5000).fit(X, names[y])
    assert b.classes_.tolist() == ["alpha", "zulu"]
    scale = 1.0 + float(np.abs(a.coef_).max() + abs(a.intercept_[0]))
    np.testing.assert_allclose(b.coef_, -a.coef_, atol=1e-4 * scale)
    np.testing.assert_allclose(b.intercept_, -a.intercept_, atol=1e-4 * scale)
    clear = np.abs(dec) > 1e-3 * scale       # away from the hyperplane (ties depend on rounding)
    assert np.array_equal(b.predict(X)[clear], names[a.predict(X)][clear])


@given(seed=st.integers(0, 2**32 - 1), k=st.integers(3, 5))
def test_property_one_vs_rest_relabelling(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    m = 12 * k
    y = np.arange(m) % k
    X = rng.standard_normal((m, 3)) + 1.5 * rng.standard_normal((k, 3))[y]
    a = LinearSVMClassifier(tol=1e-9).fit(X, y)
    dec = a.decision_function(X)
    np.testing.assert_allclose(dec, X @ a.coef_.T + a.intercept_, rtol=1e-12, atol=1e-12)
    # a permutation of the label values permutes the binary problems (rows of coef_), nothing else
    perm = rng.permutation(k)
    b = LinearSVMClassifier(tol=1e-9).fit(X, perm[y])
    inv = np.argsort(perm)                   # row j of b is the problem of the old class inv[j]
    np.testing.assert_allclose(b.coef_, a.coef_[inv], rtol=1e-5, atol=1e-6)
    top2 = np.sort(dec, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-4
    assert np.array_equal(b.predict(X)[clear], perm[a.predict(X)][clear])


# --------------------------------------------------------------------------------------------- behaviour
def test_string_labels_sparse_and_result(breast_cancer: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = breast_cancer
    names = np.array(["malignant", "benign"])[y]
    dense = LinearSVMClassifier(loss="hinge", tol=1e-6).fit(X, names)
    sparse = LinearSVMClassifier(loss="hinge", tol=1e-6).fit(sp.csr_matrix(X), names)
    assert dense.classes_.tolist() == ["benign", "malignant"]
    assert set(dense.predict(X)) <= {"benign", "malignant"}
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)), dense.decision_function(X),
                               rtol=1e-6, atol=1e-8)
    assert isinstance(dense.result_, qpcore.Result) and dense.result_.converged
    assert dense.status_ == "converged" and dense.n_iter_ == dense.result_.iterations >= 1


def test_max_iter_warns_and_keeps_best_point(breast_cancer: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = breast_cancer
    for solver in ("ocas", "ocas-active", "bmrm"):
        with pytest.warns(ConvergenceWarning, match="max_iter"):
            clf = LinearSVMClassifier(loss="hinge", solver=solver, tol=1e-12, max_iter=3).fit(X, y)
        assert clf.status_ == "max_iter" and clf.n_iter_ == 3
        # the best point so far: below F(0) = C·m, the start
        assert primal_objective(clf, X, y) < 1.0 * X.shape[0]
        assert clf.score(X, y) > 0.8
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        clf = LinearSVMClassifier(tol=1e-14, max_iter=1).fit(X, y)
    assert clf.status_ == "max_iter"


def test_time_limit_warns(digits: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = digits
    with pytest.warns(ConvergenceWarning, match="time_limit"):
        clf = LinearSVMClassifier(loss="hinge", tol=1e-12, max_iter=100_000, time_limit=0.05).fit(X, y)
    assert clf.status_ == "time_limit"
    assert clf.coef_.shape == (10, 64) and np.isfinite(clf.coef_).all()


def test_converged_fit_does_not_warn(breast_cancer: tuple[np.ndarray, np.ndarray]) -> None:
    X, y = breast_cancer
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LinearSVMClassifier().fit(X, y)
        LinearSVMClassifier(loss="hinge").fit(X, y)


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_warm_start(breast_cancer: tuple[np.ndarray, np.ndarray], loss: str) -> None:
    X, y = breast_cancer
    cold = LinearSVMClassifier(C=1.0, loss=loss, tol=1e-7).fit(X, y)
    clf = LinearSVMClassifier(C=0.8, loss=loss, tol=1e-7, warm_start=True).fit(X, y)
    clf.set_params(C=1.0).fit(X, y)
    assert clf.status_ == "converged"
    assert primal_objective(clf, X, y) == pytest.approx(primal_objective(cold, X, y), rel=1e-5)


def test_verbose_prints(breast_cancer: tuple[np.ndarray, np.ndarray], capsys: pytest.CaptureFixture[str]) -> None:
    X, y = breast_cancer
    LinearSVMClassifier(verbose=1).fit(X, y)
    out = capsys.readouterr()
    assert "converged" in out.out + out.err


# --------------------------------------------------------------------------------------------- bad input
_X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [1.0, 3.0]])
_Y = np.array([0, 1, 0, 1])


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nonfinite_X_raises(value: float) -> None:
    X = _X.copy()
    X[1, 0] = value
    for loss in ("squared_hinge", "hinge"):
        with pytest.raises(ValueError, match="NaN|infinity"):
            LinearSVMClassifier(loss=loss).fit(X, _Y)


def test_one_class_raises() -> None:
    with pytest.raises(ValueError, match="one class"):
        LinearSVMClassifier().fit(_X, np.zeros(4))


@pytest.mark.parametrize("C", [0.0, -1.0, np.nan, np.inf, "1", None, True])
def test_bad_C_raises(C: Any) -> None:
    with pytest.raises(ValueError, match="C: must be"):
        LinearSVMClassifier(C=C).fit(_X, _Y)


@pytest.mark.parametrize("params,match", [
    ({"loss": "log"}, "loss: must be"),
    ({"solver": "smo"}, "solver: must be"),
    ({"loss": "hinge", "solver": "asvm"}, "solver='asvm' solves loss='squared_hinge'"),
    ({"loss": "squared_hinge", "solver": "ocas"}, "solver='ocas' solves loss='hinge'"),
    ({"loss": "squared_hinge", "solver": "bmrm"}, "solver='bmrm' solves loss='hinge'"),
    ({"tol": 0.0}, "tol: must be"),
    ({"max_iter": 0}, "max_iter: must be"),
    ({"max_iter": 2.5}, "max_iter: must be"),
    ({"time_limit": -1.0}, "time_limit: must be"),
    ({"intercept_scaling": 0.0}, "intercept_scaling: must be"),
    ({"multi_class": "crammer_singer"}, "multi_class: only 'ovr'"),
    ({"class_weight": "auto", "loss": "hinge"}, "class_weight: must be"),
    ({"class_weight": {0: -1.0, 1: 1.0}, "loss": "hinge"}, "class_weight: the weights must be"),
    ({"class_weight": {0: -1.0, 1: 1.0}}, "class_weight: the weights must be"),
    ({"class_weight": {0: np.nan, 1: 1.0}}, "class_weight: the weights must be"),
    ({"class_weight": {0: 0.0, 1: 0.0}}, "no example of positive weight"),
    ({"fit_intercept": False}, "fit_intercept=False is not available with loss='squared_hinge'"),
])
def test_bad_params_raise(params: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LinearSVMClassifier(**params).fit(_X, _Y)


def test_problem_error_is_a_value_error() -> None:
    # the library's own checks (behind ours) raise ProblemError; scikit-learn expects ValueError
    assert issubclass(qpcore.ProblemError, ValueError)


def test_predict_before_fit_and_wrong_width() -> None:
    with pytest.raises(NotFittedError):
        LinearSVMClassifier().predict(_X)
    clf = LinearSVMClassifier().fit(_X, _Y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(np.ones((2, 3)))


@pytest.mark.anchor
@pytest.mark.data
@pytest.mark.parametrize("loss,solver", [("squared_hinge", "asvm"), ("hinge", "ocas"), ("hinge", "ocas-active")])
def test_adult_matches_liblinear(loss: str, solver: str) -> None:
    """Adult (the issue's third set): one-hot sparse features, train and test split as shipped."""
    from qpcore_formulations.data.files import load_dataset

    X, y = load_dataset("adult")
    Xt, yt = load_dataset("adult", "tst")
    X, y = X[:8000], y[:8000]
    tol = 1e-6
    ours = LinearSVMClassifier(C=0.1, loss=loss, solver=solver, tol=tol, max_iter=5000).fit(X, y)
    ref = liblinear(C=0.1, loss=loss).fit(X, y)
    assert ours.status_ == "converged"
    f_ours, f_ref = primal_objective(ours, X, y), primal_objective(ref, X, y)
    assert f_ours <= f_ref * (1 + 10 * tol) + 1e-9
    assert abs(ours.score(Xt, yt) - ref.score(Xt, yt)) <= 0.002
