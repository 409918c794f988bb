"""qpcore_sklearn.FormulationSVM: any registered formulation as a scikit-learn estimator (its
parameters the formulation's, its kind what the formulation predicts, trained by
fit_formulation), LIBSVM's formulations giving exactly KernelSVC's family, formulations of each
kind registered from outside, scikit-learn's estimator checks; and the strategy parameter's
refusals in one line."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_outlier_detector, is_regressor
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from qpcore_formulations.formulation import (FORMULATIONS, Formulation, Parameter, Predicts, check_positive,
                                             register_formulation)
from qpcore_sklearn import FormulationSVM, KernelNuSVC, KernelNuSVR, KernelOneClassSVM, KernelSVC, KernelSVR
from qpcore_sklearn.formulation import estimator_class

_WEIGHTS = ("fitting with sample_weight equals repeating samples only at the exact optimum: our solutions "
            "meet tol (1e-3 on the gap), the check wants 1e-7; and gamma='scale' follows the data's variance, "
            "which repetition changes (SVC fails the same check for the same reasons)")


def _expected(est: Any) -> dict[str, str]:
    if est.kernel == "precomputed":
        return {}
    return {"check_sample_weight_equivalence_on_dense_data": _WEIGHTS,
            "check_sample_weight_equivalence_on_sparse_data": _WEIGHTS}


@parametrize_with_checks([FormulationSVM("l2-svc"), FormulationSVM("l2-svc", kernel="precomputed"),
                          FormulationSVM("svdd"), FormulationSVM("epsilon-svr", strategy="decomposition")],
                         expected_failed_checks=_expected)  # type: ignore[untyped-decorator]
def test_sklearn_estimator_checks(estimator: Any, check: Any) -> None:
    check(estimator)


def _data(seed: int = 0, n: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(n) > 0, 3, 7)
    t = X[:, 0] + np.sin(2 * X[:, 1]) + 0.2 * rng.standard_normal(n)
    return X, y, t


_FITTED = ("support_", "n_support_", "dual_coef_", "intercept_", "n_iter_", "status_", "fit_status_")


def _same(ours: Any, theirs: Any, X: Any) -> None:
    for name in _FITTED:
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), err_msg=name)
    for method in ("decision_function", "predict", "predict_proba", "score_samples"):
        if hasattr(theirs, method):
            np.testing.assert_array_equal(getattr(ours, method)(X), getattr(theirs, method)(X), err_msg=method)


def test_libsvm_formulations_are_the_estimators() -> None:
    """FormulationSVM of c-svc, nu-svc, one-class, epsilon-svr and nu-svr is KernelSVC,
    KernelNuSVC, KernelOneClassSVM, KernelSVR and KernelNuSVR to the last bit: one base, one
    training entry."""
    X, y, t = _data()
    Xi, yi = load_iris(return_X_y=True)
    Xi = StandardScaler().fit_transform(Xi)
    w = np.linspace(0.5, 2.0, 150)
    kw: dict[str, Any] = {"C": 3.0, "gamma": 0.3, "class_weight": {0: 2.0}, "probability": True, "random_state": 0}
    _same(FormulationSVM("c-svc", **kw).fit(Xi, yi, sample_weight=w), KernelSVC(**kw).fit(Xi, yi, sample_weight=w),
          Xi)
    _same(FormulationSVM("nu-svc", nu=0.3).fit(Xi, yi), KernelNuSVC(nu=0.3).fit(Xi, yi), Xi)
    _same(FormulationSVM("one-class", nu=0.2).fit(X), KernelOneClassSVM(nu=0.2).fit(X), X)
    _same(FormulationSVM("epsilon-svr", C=2.0, epsilon=0.05).fit(X, t, sample_weight=w[:40]),
          KernelSVR(C=2.0, epsilon=0.05).fit(X, t, sample_weight=w[:40]), X)
    _same(FormulationSVM("nu-svr", C=2.0, nu=0.4, kernel="linear").fit(X, t),
          KernelNuSVR(C=2.0, nu=0.4, kernel="linear").fit(X, t), X)


@pytest.mark.parametrize("name", sorted(FORMULATIONS))
def test_parameters_and_kind_come_from_the_formulation(name: str) -> None:
    form = FORMULATIONS[name]
    est = FormulationSVM(name)
    params = est.get_params()
    assert {p.name: p.default for p in form.parameters}.items() <= params.items()
    assert params["formulation"] == name
    assert is_classifier(est) == (form.predicts is Predicts.LABEL)
    assert is_outlier_detector(est) == (form.predicts is Predicts.NOVELTY)
    assert is_regressor(est) == (form.predicts is Predicts.VALUE)
    assert type(est) is estimator_class(name) is estimator_class(form)
    assert ("class_weight" in params) == (form.predicts is Predicts.LABEL)


@pytest.fixture
def outside() -> Iterator[dict[str, Formulation]]:
    """A novelty and a value formulation registered from outside (the shipped builders under new
    names), removed afterwards."""
    made = {"test-ball": Formulation("test-ball", Predicts.NOVELTY, FORMULATIONS["svdd"].build,
                                     (Parameter("C", 0.5, check_positive("C")),)),
            "test-tube": Formulation("test-tube", Predicts.VALUE, FORMULATIONS["epsilon-svr"].build,
                                     FORMULATIONS["epsilon-svr"].parameters)}
    for f in made.values():
        register_formulation(f, replace=True)
    try:
        yield made
    finally:
        for name in made:
            FORMULATIONS.pop(name, None)


def test_outside_formulations_of_each_kind(outside: dict[str, Formulation]) -> None:
    X, _, t = _data(1)
    ball = FormulationSVM("test-ball", gamma=0.5).fit(X)
    assert is_outlier_detector(ball) and ball.get_params()["C"] == 0.5
    _same(ball, FormulationSVM("svdd", C=0.5, gamma=0.5).fit(X), X)
    np.testing.assert_array_equal(ball.fit_predict(X), ball.predict(X))
    np.testing.assert_allclose(ball.score_samples(X) - ball.offset_, ball.decision_function(X), atol=1e-12)
    tube = FormulationSVM("test-tube", C=2.0, epsilon=0.05).fit(X, t)
    assert is_regressor(tube)
    _same(tube, KernelSVR(C=2.0, epsilon=0.05).fit(X, t), X)
    assert tube.score(X, t) == KernelSVR(C=2.0, epsilon=0.05).fit(X, t).score(X, t)
    # a Formulation object not registered at all, cloned and fitted
    loose = Formulation("test-loose", Predicts.VALUE, FORMULATIONS["nu-svr"].build, FORMULATIONS["nu-svr"].parameters)
    est = clone(FormulationSVM(loose, nu=0.3)).fit(X, t)
    _same(est, KernelNuSVR(nu=0.3).fit(X, t), X)


def test_registered_again_gets_a_new_class(outside: dict[str, Formulation]) -> None:
    first = estimator_class("test-ball")
    register_formulation(Formulation("test-ball", Predicts.NOVELTY, FORMULATIONS["svdd"].build,
                                     (Parameter("C", 0.5, check_positive("C")), Parameter("D", 1.0, float))),
                         replace=True)
    second = estimator_class("test-ball")
    assert second is not first and "D" in second().get_params() and "D" not in first().get_params()


def test_pickled_estimators_come_back() -> None:
    X, y, _ = _data(2)
    est = FormulationSVM("l2-svc", C=0.7).fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    assert type(again) is type(est) and again.get_params() == est.get_params()
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))
    assert repr(est) == "FormulationSVM(C=0.7, formulation='l2-svc')"


@pytest.mark.parametrize(("make", "error", "match"), [
    (lambda: FormulationSVM("nope"), ValueError, "formulation: unknown 'nope'; the formulations are c-svc"),
    (lambda: FormulationSVM(), TypeError, "name a formulation"),
    (lambda: FormulationSVM("l2-svc", nu=0.3), TypeError, "unexpected keyword argument 'nu'; it takes formulation, C,"),
    (lambda: FormulationSVM("l2-svc", C=0.0).fit(*_data()[:2]), ValueError, "C: must be finite and > 0"),
    (lambda: FormulationSVM("nu-svc", class_weight={3: 2.0}).fit(*_data()[:2]), ValueError,
     "class_weight: the nu-svc formulation takes no class weights"),
    (lambda: FormulationSVM("l2-svc").set_params(formulation="c-svc").fit(*_data()[:2]), ValueError,
     "made for 'l2-svc', not 'c-svc'"),
    (lambda: FormulationSVM("epsilon-svr").fit(_data()[0], np.r_[np.nan, _data()[2][1:]]), ValueError, "NaN"),
])
def test_refusals_are_one_clear_line(make: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match) as info:
        make()
    assert "\n" not in str(info.value)


_KERNEL_NAMES = "auto, smo, decomposition, incas, gpcg, active-set, interior-point"


@pytest.mark.parametrize("est", [KernelSVC, KernelNuSVC, KernelOneClassSVM, KernelSVR, KernelNuSVR,
                                 lambda **kw: FormulationSVM("l2-svc", **kw)])
def test_strategy_refusals_say_it_once(est: Any) -> None:
    """The strategy parameter's refusals: the prefix and the list of names once each, the kernel
    strategies only, and an option's error in the registry's own words."""
    X, y, t = _data(3)
    target = t if est in (KernelSVR, KernelNuSVR) else y
    with pytest.raises(ValueError) as info:
        est(strategy="foo").fit(X, target)
    assert str(info.value) == f"strategy: unknown name 'foo'; use one of {_KERNEL_NAMES} or a strategy object"
    with pytest.raises(ValueError) as info:
        est(strategy="smo:foo=1").fit(X, target)
    assert str(info.value) == "strategy 'smo' has no option 'foo' (its options: rule, shrinking, finish)"
    with pytest.raises(ValueError) as info:
        est(strategy="ocas").fit(X, target)
    assert str(info.value).startswith("strategy: ocas solves a linear SVM") and str(info.value).count("use one of") == 1
