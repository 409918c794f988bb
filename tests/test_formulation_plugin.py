"""A formulation from outside the library: the L2-loss (squared hinge) kernel SVM, in this file.

Its dual is C-SVC's with Q = yyᵀ∘K + I/(2C) and no upper bound (α ≥ 0, yᵀα = 0). One builder
and one registry entry make it trainable through ``qpcore train --type``, the model file and
``qpcore predict``, with no edit to them; its solution is checked against the primal's, solved
independently (L-BFGS on min ½‖w‖² + C Σ max(0, 1 − t(xᵀw + b))²).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize

from qpcore.backends.operators import Kernel, KernelQ
from qpcore.backends.shifted import shift_diagonal
from qpcore.core.problem import QP
from qpcore_cli import main
from qpcore_cli.model import load_model_file, save_model
from qpcore_formulations.data.svmlight import dump_svmlight, load_svmlight
from qpcore_formulations.formulation import Formulation, Parameter, Predicts, check_positive, register_formulation
from qpcore_formulations.svm import SVMProblem
from qpcore_strategies.registry import make
from qpcore_train.fit import fit_formulation

NAME = "plugin-l2-svc"


def build(X: Any, y: Any, weight: Any, kernel: Kernel, params: Any, *, cache_bytes: int) -> SVMProblem:
    """min ½αᵀ(yyᵀ∘K + diag(1/(2C_i)))α − eᵀα, α ≥ 0, yᵀα = 0; the model is C-SVC's."""
    C, n = params["C"] * weight, y.size
    K = KernelQ(X, kernel, scale=y, cache_bytes=cache_bytes)
    qp = QP(shift_diagonal(K, 0.5 / C), -np.ones(n), np.zeros(n), np.full(n, np.inf), y[None, :], np.zeros(1))
    return SVMProblem(qp=qp, X=K.X, y=y, classes=np.array([-1.0, 1.0]), kernel=kernel, kind=NAME)


register_formulation(Formulation(NAME, Predicts.LABEL, build, (Parameter("C", 1.0, check_positive("C"), "-c"),),
                                 class_weights=True, summary="the L2-loss SVM of a test"), replace=True)


def blobs(n: int, seed: int, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return np.round(rng.normal(size=(n, 3)) + 2.5 * np.eye(k, 3)[y], 4), 2 * y - 1 if k == 2 else y + 1


@pytest.mark.parametrize("C", [0.1, 3.0])
def test_the_dual_solves_the_primal(C: float) -> None:
    X, y = blobs(60, 0)
    fit = fit_formulation(NAME, X, y, Kernel("linear"), make("auto"), params={"C": C}, tol=1e-10)
    m = fit.model
    w, b = np.asarray(m.sv.T @ m.D[:, 0]).ravel(), float(m.bias[0])
    t = np.where(y == m.classes[0], 1.0, -1.0)       # the pair's first class is positive

    def primal(v: np.ndarray) -> tuple[float, np.ndarray]:
        xi = np.maximum(0.0, 1.0 - t * (X @ v[:3] + v[3]))
        grad = np.append(v[:3] - 2 * C * X.T @ (t * xi), -2 * C * np.sum(t * xi))
        return 0.5 * v[:3] @ v[:3] + C * xi @ xi, grad

    ref = minimize(primal, np.zeros(4), jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-16})
    np.testing.assert_allclose(np.append(w, b), ref.x, atol=2e-5)
    # strong duality: the primal value of the decoded model is the dual's optimum
    assert primal(np.append(w, b))[0] == pytest.approx(-fit.results[0].objective, rel=1e-8)


def test_command_line_model_file_and_predict(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (X, y), (Xt, yt) = blobs(90, 1, k=3), blobs(40, 2, k=3)
    trn, tst, model, out = (tmp_path / n for n in ("trn", "tst", "m.model", "p.txt"))
    dump_svmlight(trn, X, y)
    dump_svmlight(tst, Xt, yt)
    assert main(["train", "--type", NAME, "-c", "2", "-g", "0.5", "-q", str(trn), str(model)]) == 0
    assert load_model_file(model).type == NAME
    assert main(["predict", str(tst), str(model), str(out), "-q"]) == 0
    cli = np.array(out.read_text().split(), dtype=int)
    Xr, _ = load_svmlight(trn)
    fit = fit_formulation(NAME, Xr, y, Kernel("rbf", gamma=0.5), make("auto"), params={"C": 2.0},
                          max_iter=max(10_000_000, 900))
    np.testing.assert_array_equal(cli, fit.model.predict(load_svmlight(tst)[0]))
    assert np.mean(cli == yt) > 0.8
    # the model written here and read by qpcore predict
    save_model(tmp_path / "own.model", fit.model, svm_type=NAME, feature_index_base=1)
    assert main(["predict", str(tst), str(tmp_path / "own.model"), str(tmp_path / "q.txt"), "-q"]) == 0
    assert (tmp_path / "q.txt").read_text() == out.read_text()
    capsys.readouterr()


@pytest.mark.parametrize("name", [NAME, "l2-svc"])
def test_scikit_learn_estimator_of_the_formulation(name: str) -> None:
    """The formulation of this file (and the shipped l2-svc) as a scikit-learn estimator with no
    estimator written for it: qpcore_sklearn.FormulationSVM, whose parameters are the
    formulation's and whose kind (a classifier) is what it predicts, gives fit_formulation's model;
    predict, decision_function, score, get_params/clone, pickling and a grid search over C."""
    pytest.importorskip("sklearn")
    import pickle

    from sklearn.base import clone, is_classifier

    from qpcore_sklearn import FormulationSVM
    from qpcore_sklearn.model_selection import SVMGridSearchCV
    from qpcore_train.multiclass import MulticlassSVM

    X, y = blobs(60, 3)
    est = FormulationSVM(name, C=2.0, gamma=0.5, tol=1e-8)
    assert is_classifier(est) and isinstance(est, FormulationSVM)
    params = est.get_params()
    assert params["formulation"] == name and params["C"] == 2.0 and "nu" not in params
    assert est.fit(X, y) is est
    fit = fit_formulation(name, X, y, Kernel("rbf", gamma=0.5), make("auto"), params={"C": 2.0}, tol=1e-8)
    assert isinstance(fit.model, MulticlassSVM)
    # SVC's sign for two classes: positive for classes_[1], the pair's second class
    np.testing.assert_array_equal(est.decision_function(X), -fit.model.raw(X)[:, 0])
    np.testing.assert_array_equal(est.predict(X), fit.model.predict(X))
    assert est.score(X, y) == np.mean(est.predict(X) == y) > 0.9
    assert est.status_ == ["converged"] and est.result_.kkt.measure <= 1e-8
    np.testing.assert_array_equal(est.classes_, [-1, 1])
    twin = clone(est)
    assert type(twin) is type(est) and twin.get_params() == params and not hasattr(twin, "model_")
    np.testing.assert_array_equal(twin.fit(X, y).decision_function(X), est.decision_function(X))
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.decision_function(X), est.decision_function(X))
    # three classes: one problem per pair through the multiclass layer, LIBSVM's vote
    X3, y3 = blobs(90, 1, k=3)
    multi = FormulationSVM(name, C=2.0, gamma=0.5).fit(X3, y3)
    fit3 = fit_formulation(name, X3, y3, Kernel("rbf", gamma=0.5), make("auto"), params={"C": 2.0})
    np.testing.assert_array_equal(multi.predict(X3), fit3.model.predict(X3))
    assert multi.decision_function(X3).shape == (90, 3) and multi.dual_coef_.shape[0] == 2
    # a grid search over the formulation's C (scikit-learn's, cell by cell: not KernelSVC)
    grid = SVMGridSearchCV(FormulationSVM(name, gamma=0.5), {"C": [0.5, 2.0]}, cv=3).fit(X3, y3)
    assert not grid.shared_ and grid.best_params_["C"] in (0.5, 2.0) and grid.score(X3, y3) > 0.8
