"""KernelSVC / KernelNuSVC with probability=True against scikit-learn's SVC / NuSVC (LIBSVM's
``-b 1``): the same probabilities within 0.02 on average and the same held-out log loss within 2%,
on a subset of adult and on scikit-learn's data sets; the estimator's contract around them.

SVC draws its calibration folds from LIBSVM's own generator, so the two never share folds: on the
~100-row training sets of iris and wine that alone moves SVC's log loss by ~5% between seeds, and
there the comparison is of the means over ten seeds, allowing for their sampling noise.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, NuSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from qpcore_formulations.data.files import load_dataset
from qpcore_sklearn import KernelNuSVC, KernelSVC


@pytest.fixture(autouse=True)
def _quiet_sklearn() -> Iterator[None]:
    with warnings.catch_warnings():
        # scikit-learn 1.9 deprecates SVC's probability=True (it stays until 1.11)
        warnings.simplefilter("ignore", FutureWarning)
        yield


_WEIGHTS = ("fitting with sample_weight equals repeating samples only at the exact optimum (as in "
            "tests/test_sklearn_svc.py; SVC fails it too)")


# predict_proba's contract (shape, sums, argmax agreeing with predict, unfitted errors) on
# sklearn's own checks; predict_from_proba makes the argmax agreement hold by construction
_EXPECTED = {"check_sample_weight_equivalence_on_dense_data": _WEIGHTS,
             "check_sample_weight_equivalence_on_sparse_data": _WEIGHTS,
             "check_class_weight_classifiers": "predict_from_proba predicts the most probable class, and the "
                                               "calibrated probabilities estimate frequencies: they do not carry "
                                               "class_weight's costs (SVC's predict_proba neither)"}


@parametrize_with_checks([KernelSVC(probability=True, random_state=0, predict_from_proba=True)],
                         expected_failed_checks=lambda est: _EXPECTED)  # type: ignore[untyped-decorator]
def test_sklearn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)


def _split(loader: Any, n: int | None = None) -> tuple[np.ndarray, ...]:
    X, y = loader(return_X_y=True)
    if n is not None:
        X, y = X[:n], y[:n]
    X = StandardScaler().fit_transform(X)
    out: tuple[np.ndarray, ...] = tuple(train_test_split(X, y, test_size=0.3, random_state=0, stratify=y))
    return out


def _compare(ours: Any, ref: Any, Xte: Any, yte: np.ndarray, ll_rel: float = 0.02) -> None:
    po, pr = ours.predict_proba(Xte), ref.predict_proba(Xte)
    assert po.shape == pr.shape
    np.testing.assert_allclose(po.sum(axis=1), 1.0)
    assert np.abs(po - pr).mean() <= 0.02
    lo, lr = log_loss(yte, po, labels=ours.classes_), log_loss(yte, pr, labels=ref.classes_)
    assert abs(lo - lr) <= ll_rel * lr, (lo, lr)


def test_adult_subset_matches_svc() -> None:
    X, y = load_dataset("adult", "tst", dense=True)
    Xtr, ytr, Xte, yte = X[:1500], y[:1500], X[1500:3000], y[1500:3000]
    ours = KernelSVC(C=1.0, gamma=0.05, probability=True, random_state=0).fit(Xtr, ytr)
    ref = SVC(C=1.0, gamma=0.05, probability=True, random_state=0).fit(Xtr, ytr)
    _compare(ours, ref, Xte, yte)
    np.testing.assert_allclose(ours.probA_, ref.probA_, rtol=0.05)   # the same sign convention
    assert ours.probA_.shape == ours.probB_.shape == (1,)


@pytest.mark.parametrize(("loader", "n", "C"), [(load_breast_cancer, None, 1.0), (load_digits, 600, 10.0)])
def test_larger_sets_match_svc(loader: Any, n: int | None, C: float) -> None:
    Xtr, Xte, ytr, yte = _split(loader, n)
    ours = KernelSVC(C=C, probability=True, random_state=0).fit(Xtr, ytr)
    ref = SVC(C=C, probability=True, random_state=0).fit(Xtr, ytr)
    _compare(ours, ref, Xte, yte)
    assert ours.probA_.shape == ref.probA_.shape


@pytest.mark.parametrize("loader", [load_iris, load_wine])
def test_small_sets_match_svc_over_seeds(loader: Any) -> None:
    Xtr, Xte, ytr, yte = _split(loader)
    lo, lr = [], []
    for seed in range(10):
        ours = KernelSVC(probability=True, random_state=seed).fit(Xtr, ytr)
        ref = SVC(probability=True, random_state=seed).fit(Xtr, ytr)
        po, pr = ours.predict_proba(Xte), ref.predict_proba(Xte)
        assert np.abs(po - pr).mean() <= 0.02
        lo.append(log_loss(yte, po))
        lr.append(log_loss(yte, pr))
    # within 2% in expectation: the means may differ by the folds' noise besides (two standard errors)
    noise = 2.0 * np.sqrt((np.var(lo, ddof=1) + np.var(lr, ddof=1)) / len(lo))
    assert abs(np.mean(lo) - np.mean(lr)) <= 0.02 * np.mean(lr) + noise, (np.mean(lo), np.mean(lr), noise)


def test_nusvc_matches_nusvc() -> None:
    Xtr, Xte, ytr, yte = _split(load_iris)
    ours = KernelNuSVC(nu=0.3, probability=True, random_state=0).fit(Xtr, ytr)
    ref = NuSVC(nu=0.3, probability=True, random_state=0).fit(Xtr, ytr)
    po, pr = ours.predict_proba(Xte), ref.predict_proba(Xte)
    assert np.abs(po - pr).mean() <= 0.02
    np.testing.assert_allclose(np.log(po), ours.predict_log_proba(Xte))


def test_contract() -> None:
    Xtr, Xte, ytr, _ = _split(load_wine)
    plain = KernelSVC().fit(Xtr, ytr)
    assert not hasattr(plain, "predict_proba")          # as SVC: only with probability=True
    assert plain.probA_.size == 0
    est = KernelSVC(probability=True, random_state=3).fit(Xtr, ytr)
    again = KernelSVC(probability=True, random_state=3).fit(Xtr, ytr)
    np.testing.assert_array_equal(est.predict_proba(Xte), again.predict_proba(Xte))   # seeded folds
    # LIBSVM's vote and the coupled probabilities are two rules; predict_from_proba makes them one
    both = KernelSVC(probability=True, random_state=3, predict_from_proba=True).fit(Xtr, ytr)
    np.testing.assert_array_equal(both.predict(Xte), both.classes_[both.predict_proba(Xte).argmax(axis=1)])
    np.testing.assert_array_equal(both.probA_, est.probA_)
    with pytest.raises(ValueError, match="probability=True"):
        KernelSVC(predict_from_proba=True).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="ovo"):
        KernelSVC(probability=True, multiclass="ovr").fit(Xtr, ytr)


def test_disagreement_is_removed_by_predict_from_proba() -> None:
    # overlapping classes: somewhere the vote and the argmax of the probabilities differ
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 400)
    X = 0.6 * np.eye(3)[y][:, :2] + rng.normal(size=(400, 2))
    est = KernelSVC(probability=True, random_state=0).fit(X, y)
    grid = rng.normal(size=(2000, 2))
    vote = est.predict(grid)
    by_proba = est.classes_[est.predict_proba(grid).argmax(axis=1)]
    assert (vote != by_proba).any()
    est.set_params(predict_from_proba=True)
    np.testing.assert_array_equal(est.predict(grid), by_proba)


def test_weights_precomputed_and_labels() -> None:
    Xtr, Xte, ytr, _ = _split(load_iris)
    labels = np.array(["setosa", "versicolor", "virginica"])[ytr]
    base = KernelSVC(gamma=0.2, probability=True, random_state=1).fit(Xtr, labels)
    # zero-weight rows take no part, in the fit as in the calibration
    extra = np.vstack([Xtr, Xtr[:7] + 5.0])
    w = np.r_[np.ones(len(ytr)), np.zeros(7)]
    weighted = KernelSVC(gamma=0.2, probability=True, random_state=1).fit(extra, np.r_[labels, labels[:7]],
                                                                          sample_weight=w)
    np.testing.assert_allclose(weighted.predict_proba(Xte), base.predict_proba(Xte), atol=1e-6)
    # a precomputed kernel gives the same probabilities
    sq = ((Xtr[:, None, :] - Xtr[None, :, :]) ** 2).sum(-1)
    sqt = ((Xte[:, None, :] - Xtr[None, :, :]) ** 2).sum(-1)
    pre = KernelSVC(kernel="precomputed", probability=True, random_state=1, tol=1e-3)
    pre.fit(np.exp(-0.2 * sq), labels)
    np.testing.assert_allclose(pre.predict_proba(np.exp(-0.2 * sqt)), base.predict_proba(Xte), atol=1e-3)


def test_nusvc_folds_that_cannot_take_nu() -> None:
    # ν at the full data's limit: some calibration folds are less balanced, and train with their largest ν
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(12, dtype=int), np.ones(40, dtype=int)]
    X = rng.normal(size=(52, 2)) + y[:, None]
    est = KernelNuSVC(nu=0.999 * 2 * 12 / 52, probability=True, random_state=0).fit(X, y)
    assert est.probA_[0] < 0
    weighted = KernelNuSVC(nu=0.4, probability=True, random_state=0).fit(X, y, sample_weight=rng.random(52) + 0.5)
    P = weighted.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(weighted.classes_[P.argmax(axis=1)] == y) > 0.7
