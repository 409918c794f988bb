"""Model selection that shares its work: qpcore_train.model_selection and SVMGridSearchCV.

The shared grid search must score every cell as GridSearchCV(SVC()) does on the same folds, its
fold operator must give KernelQ's rows, and its warm starts along C the cold solutions.
"""

from __future__ import annotations

import bz2
import warnings
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC

import qpcore
from qpcore_train.model_selection import FoldQ, SharedKernel, cross_validation, grid_cv, stratified_folds
from qpcore_formulations.data.svmlight import load_svmlight
from qpcore.backends.operators import Kernel, KernelQ
from qpcore.core.problem import QP, ProblemError
from qpcore_sklearn.model_selection import SVMGridSearchCV
from qpcore_sklearn.svm import KernelSVC
from qpcore_strategies.smo import SMO


@pytest.fixture(scope="module")
def adult(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, np.ndarray]:
    """The first 600 rows of the bundled Adult demo file (sparse, labels ±1)."""
    with as_file(files("qpcore") / "data" / "adult_demo.trn.bz2") as src:
        text = bz2.decompress(Path(src).read_bytes()).decode().splitlines()[:600]
    path = tmp_path_factory.mktemp("adult") / "adult600.txt"
    path.write_text("\n".join(text) + "\n")
    X, y = load_svmlight(str(path), n_features=123, zero_based=False)
    return sp.csr_matrix(X), np.asarray(y)


def _scaled_iris() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_iris(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def _compare(ours: SVMGridSearchCV, ref: GridSearchCV, atol: float = 0.002) -> None:
    assert ours.shared_ and ours.fallback_reason_ is None
    a, b = ours.cv_results_, ref.cv_results_
    assert set(a) == set(b)
    assert a["params"] == b["params"]
    np.testing.assert_allclose(a["mean_test_score"], b["mean_test_score"], atol=atol, rtol=0)
    for k in range(ours.n_splits_):
        np.testing.assert_allclose(a[f"split{k}_test_score"], b[f"split{k}_test_score"], atol=3 * atol, rtol=0)
    assert abs(ours.best_score_ - ref.best_score_) <= atol


def test_adult_grid_matches_gridsearchcv(adult: tuple[Any, np.ndarray]) -> None:
    """600 Adult rows, 3×3 grid, 3 folds: every cell's mean score within 0.002 of SVC's."""
    X, y = adult
    d = X.shape[1]
    grid = {"C": [0.1, 1.0, 10.0], "gamma": [0.1 / d, 1.0 / d, 10.0 / d]}
    ours = SVMGridSearchCV(KernelSVC(tol=1e-3), grid, cv=3).fit(X, y)
    ref = GridSearchCV(SVC(tol=1e-3), grid, cv=3).fit(X, y)
    _compare(ours, ref)
    assert ours.kernel_dense_
    assert ours.lockstep_ and "lockstep" in ours.lockstep_note_
    np.testing.assert_array_equal(ours.predict(X[:50]), ours.best_estimator_.predict(X[:50]))
    assert ours.score(X, y) == pytest.approx(ours.best_estimator_.score(X, y))


def test_iris_multiclass_and_scale_gamma() -> None:
    """Three classes one-vs-one, gamma="scale" computed on each fold's training part, a scorer
    on predictions and one on decision values."""
    X, y = _scaled_iris()
    grid: dict[str, list[Any]] = {"C": [0.1, 1.0, 100.0], "gamma": ["scale", 0.05, 1.0]}
    for scoring in (None, "f1_macro"):
        ours = SVMGridSearchCV(KernelSVC(tol=1e-4), grid, cv=3, scoring=scoring).fit(X, y)
        ref = GridSearchCV(SVC(tol=1e-4), grid, cv=3, scoring=scoring).fit(X, y)
        _compare(ours, ref)
        assert ours.best_params_ == ref.best_params_
        assert ours.lockstep_      # the three one-vs-one problems of every fold in one stack


def test_decision_value_scorer_and_balanced_weights(adult: tuple[Any, np.ndarray]) -> None:
    """roc_auc reads decision values; class_weight="balanced" is balanced on each fold."""
    X, y = adult
    grid = {"C": [0.5, 5.0], "gamma": [0.01]}
    ours = SVMGridSearchCV(KernelSVC(tol=1e-4, class_weight="balanced"), grid, cv=3, scoring="roc_auc").fit(X, y)
    ref = GridSearchCV(SVC(tol=1e-4, class_weight="balanced"), grid, cv=3, scoring="roc_auc").fit(X, y)
    _compare(ours, ref)


def test_row_cache_path_same_scores() -> None:
    """Above the dense budget the folds share one row cache; the scores do not change."""
    X, y = _scaled_iris()
    grid = {"C": [1.0, 10.0], "gamma": [0.2]}
    dense = SVMGridSearchCV(KernelSVC(tol=1e-5), grid, cv=3).fit(X, y)
    cached = SVMGridSearchCV(KernelSVC(tol=1e-5), grid, cv=3, kernel_bytes=8 * 150 * 4).fit(X, y)
    assert dense.kernel_dense_ and not cached.kernel_dense_
    assert dense.lockstep_ and not cached.lockstep_ and "kernel_bytes" in cached.lockstep_note_
    np.testing.assert_allclose(cached.cv_results_["mean_test_score"], dense.cv_results_["mean_test_score"])


def test_lockstep_stack_budget_same_scores() -> None:
    """Below the stack's budget the lockstep rounds gather rows from the shared matrix: the path
    says so, and the scores do not change."""
    X, y = _scaled_iris()
    grid = {"C": [1.0, 10.0], "gamma": [0.2]}
    stacked = SVMGridSearchCV(KernelSVC(tol=1e-5), grid, cv=3).fit(X, y)
    gathered = SVMGridSearchCV(KernelSVC(tol=1e-5), grid, cv=3, stack_bytes=1024).fit(X, y)
    assert stacked.lockstep_ and gathered.lockstep_
    assert "own kernel blocks" in stacked.lockstep_note_ and "gathered" in gathered.lockstep_note_
    np.testing.assert_allclose(gathered.cv_results_["mean_test_score"], stacked.cv_results_["mean_test_score"])


def test_fallback_says_why() -> None:
    """An estimator the engine cannot share work for: GridSearchCV's own results, and the reason."""
    X, y = _scaled_iris()
    grid = {"C": [0.1, 1.0]}
    ours = SVMGridSearchCV(LogisticRegression(max_iter=500), grid, cv=3).fit(X, y)
    ref = GridSearchCV(LogisticRegression(max_iter=500), grid, cv=3).fit(X, y)
    assert not ours.shared_ and "LogisticRegression" in str(ours.fallback_reason_)
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"])
    ours = SVMGridSearchCV(KernelSVC(), {"C": [1.0], "warm_start": [False]}, cv=3).fit(X, y)
    assert not ours.shared_ and "warm_start" in str(ours.fallback_reason_)
    # a setting the engine does not honour, set on the estimator itself
    ours = SVMGridSearchCV(KernelSVC(warm_start=True), {"C": [1.0]}, cv=3).fit(X, y)
    assert not ours.shared_ and "warm_start=True" in str(ours.fallback_reason_)


def test_refit_options() -> None:
    X, y = _scaled_iris()
    grid = {"C": [0.1, 10.0]}
    none = SVMGridSearchCV(KernelSVC(), grid, cv=StratifiedKFold(3), refit=False).fit(X, y)
    assert not hasattr(none, "best_estimator_") and none.best_params_ == {"C": 10.0}
    with pytest.raises(AttributeError, match="refit=False"):
        none.predict(X)
    pick_first = SVMGridSearchCV(KernelSVC(), grid, cv=3, refit=lambda res: 0).fit(X, y)
    assert pick_first.best_index_ == 0 and pick_first.best_estimator_.C == 0.1
    with pytest.raises(ValueError, match="one metric"):
        SVMGridSearchCV(KernelSVC(), grid, scoring=["accuracy", "f1_macro"]).fit(X, y)  # type: ignore[arg-type]


def _fold_problem(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, Kernel]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    rows = np.sort(rng.choice(n, size=max(4, n // 2), replace=False))
    s = np.where(rng.random(rows.size) < 0.5, 1.0, -1.0)
    return X, rows, s, Kernel("rbf", gamma=0.3)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(8, 60), seed=st.integers(0, 2**16), dense=st.booleans())
def test_fold_operator_rows_are_kernelq_rows(n: int, seed: int, dense: bool) -> None:
    """FoldQ over the shared matrix (dense or row cache) gives KernelQ's Q[rows, rows] with the
    labels' signs: rows, single rows, blocks, crosses, diagonal and products."""
    X, rows, s, kernel = _fold_problem(n, seed)
    source = SharedKernel(X, kernel, kernel_bytes=(1 << 20) if dense else 0)
    assert (source.dense is not None) == dense
    Q = FoldQ(source, rows, s, cache_bytes=4 * rows.size * 4)
    ref = KernelQ(X[rows], kernel, scale=s, dtype=np.float64)
    m = rows.size
    idx = np.random.default_rng(seed).permutation(m)[: min(m, 5)]
    atol = 4 * float(np.finfo(np.float32).eps)
    np.testing.assert_allclose(Q.rows(idx), ref.rows(idx), atol=atol)
    for i in idx[:3]:
        np.testing.assert_allclose(Q.row(int(i)), ref.row(int(i)), atol=atol)
        np.testing.assert_allclose(Q.row(int(i)), ref.row(int(i)), atol=atol)   # from the cache
    np.testing.assert_allclose(Q.block(idx), ref.block(idx), atol=atol)
    np.testing.assert_allclose(Q.cross(idx, idx[::-1]), ref.cross(idx, idx[::-1]), atol=atol)
    np.testing.assert_allclose(Q.diag(), ref.diag(), atol=atol)
    x = np.where(np.random.default_rng(seed + 1).random(m) < 0.3, 1.0, 0.0)
    np.testing.assert_allclose(Q.matvec(x), ref.matvec(x), atol=atol * max(1.0, x.sum()))


def test_warm_start_reaches_the_cold_solution() -> None:
    """A path over increasing C (each solve seeded from the previous) ends where cold solves end."""
    X, y = _scaled_iris()
    y_idx = np.unique(y, return_inverse=True)[1].astype(np.intp)
    folds = stratified_folds(y_idx, 3, seed=1)
    kern = Kernel("rbf", gamma=0.5)
    Cs = [0.1, 1.0, 10.0, 100.0]
    path = grid_cv(X, y_idx, 3, folds, [kern], Cs, tol=1e-6)
    assert path.converged.all()
    for c, C in enumerate(Cs[1:], start=1):
        cold = grid_cv(X, y_idx, 3, folds, [kern], [C], tol=1e-6)
        np.testing.assert_allclose(path.objective[0, c], cold.objective[0, 0], rtol=1e-6)
        for f in range(len(folds)):
            np.testing.assert_allclose(path.raw[0][c][f], cold.raw[0][0][f], atol=1e-3)


def test_warm_start_is_feasible_and_counted() -> None:
    """The seed of C = 10 from C = 1 is a feasible point: the solve starts from it unmoved."""
    X, rows, s, kernel = _fold_problem(80, 3)
    Q = FoldQ(SharedKernel(X, kernel), rows, s)
    m = rows.size

    def qp(C: float) -> QP:
        return QP(Q, -np.ones(m), np.zeros(m), np.full(m, C), s[None, :], np.zeros(1))

    first = qpcore.solve(qp(1.0), SMO(), tol=1e-6)
    seeded = qpcore.solve(qp(10.0), SMO(), x0=first.x * 10.0, tol=1e-6)
    cold = qpcore.solve(qp(10.0), SMO(), tol=1e-6)
    assert seeded.stats["x0_moved"] == 0.0
    assert seeded.objective == pytest.approx(cold.objective, rel=1e-6)


def test_cross_validation_predictions() -> None:
    """svm-train -v: the prediction of every point from the fold that held it out, one vector
    per C, as fitting KernelSVC on each fold predicts."""
    X, y = _scaled_iris()
    classes, y_idx = np.unique(y, return_inverse=True)
    kern = Kernel("rbf", gamma=0.5)
    preds = cross_validation(X, y_idx, classes, kernel=kern, C=[10.0, 1.0], folds=4, seed=2, strategy="smo",
                             tol=1e-4)
    assert len(preds) == 2
    for C, pred in zip((10.0, 1.0), preds):
        expect = np.empty(y.size, dtype=np.intp)
        for tr, te in stratified_folds(y_idx, 4, seed=2):
            est = KernelSVC(C=C, gamma=0.5, tol=1e-4).fit(X[tr], y_idx[tr])
            expect[te] = est.predict(X[te])
        assert np.mean(pred == expect) >= 0.99
    # the default strategy name is accepted whether or not the registry has "auto" yet
    cross_validation(X, y_idx, classes, kernel=kern, C=1.0, folds=3)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 30), min_size=2, max_size=4), folds=st.integers(2, 6),
       seed=st.integers(0, 100))
def test_stratified_folds_partition(sizes: list[int], folds: int, seed: int) -> None:
    """The test sets partition the points; each class is spread evenly (counts differ by ≤ 1)."""
    y = np.repeat(np.arange(len(sizes)), sizes)
    out = stratified_folds(y, folds, seed)
    k = min(folds, y.size)
    assert len(out) == k
    every = np.sort(np.concatenate([te for _, te in out]))
    np.testing.assert_array_equal(every, np.arange(y.size))
    for tr, te in out:
        assert np.intersect1d(tr, te).size == 0 and tr.size + te.size == y.size
    if k < y.size:
        for c in range(len(sizes)):
            counts = [int(np.sum(y[te] == c)) for _, te in out]
            assert max(counts) - min(counts) <= 1


def test_errors() -> None:
    X, y = _scaled_iris()
    y_idx = np.unique(y, return_inverse=True)[1].astype(np.intp)
    folds = stratified_folds(y_idx, 3)
    with pytest.raises(ProblemError, match="C"):
        grid_cv(X, y_idx, 3, folds, [Kernel("rbf")], [1.0, -1.0])
    with pytest.raises(ProblemError, match="per-fold"):
        grid_cv(X, y_idx, 3, folds, [[Kernel("rbf")]], [1.0])
    with pytest.raises(ProblemError, match="folds"):
        stratified_folds(y_idx, 1)
    with pytest.raises(ProblemError, match="no training points"):
        # a fold whose training part lacks class 2
        grid_cv(X, y_idx, 3, [(np.flatnonzero(y_idx < 2), np.flatnonzero(y_idx == 2))], [Kernel("rbf")], [1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="C"):
            SVMGridSearchCV(KernelSVC(), {"C": [0.0]}, cv=3).fit(X, y)


def test_precomputed_kernel_and_one_vs_rest() -> None:
    """A precomputed Gram matrix is the shared kernel itself (GridSearchCV slices it per fold);
    one-vs-rest and per-class weights score as GridSearchCV(KernelSVC()) does cell by cell."""
    X, y = _scaled_iris()
    K = np.exp(-0.3 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2))
    grid: dict[str, list[Any]] = {"C": [0.5, 5.0]}
    ours = SVMGridSearchCV(KernelSVC(kernel="precomputed", tol=1e-4), grid, cv=3).fit(K, y)
    _compare(ours, GridSearchCV(SVC(kernel="precomputed", tol=1e-4), grid, cv=3).fit(K, y))
    assert ours.score(K[:30], y[:30]) == pytest.approx(ours.best_estimator_.score(K[:30], y[:30]))
    cells: list[dict[str, list[Any]]] = [{"C": [1.0, 10.0], "multiclass": ["ovr"]},
                                         {"C": [0.5], "class_weight": [{0: 2.0}], "decision_function_shape": ["ovo"]}]
    ours = SVMGridSearchCV(KernelSVC(tol=1e-4), cells, cv=3, scoring="f1_macro").fit(X, y)
    _compare(ours, GridSearchCV(KernelSVC(tol=1e-4), cells, cv=3, scoring="f1_macro").fit(X, y), atol=1e-9)
