"""The formulation registry (:mod:`qpcore_formulations.formulation`), the training layer over it
(:mod:`qpcore_train.fit`), the diagonal-shift operator (:mod:`qpcore.backends.shifted`) and the
shipped L2-loss SVM ``l2-svc``, checked against its primal solved independently and through the
command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize

from qpcore.backends.capabilities import Capability, cross_block, principal_block
from qpcore.backends.operators import DenseQ, Kernel, KernelQ
from qpcore.backends.shifted import CachedDiagonalShiftQ, DiagonalShiftQ, shift_diagonal
from qpcore.core.problem import ProblemError
from qpcore_cli import main
from qpcore_cli.model import load_model_file
from qpcore_formulations.data.svmlight import dump_svmlight, load_svmlight
from qpcore_formulations.builtin import C_SVC, L2_SVC
from qpcore_formulations.formulation import (
    FORMULATIONS,
    Formulation,
    Predicts,
    formulation,
    libsvm_formulation,
    register_formulation,
)
from qpcore_formulations.svm import csvc, l2_svc
from qpcore_strategies.registry import make
from qpcore_train.fit import fit_formulation
from qpcore_train.multiclass import MulticlassSVM, train_multiclass
from qpcore_train.pipeline import Refused


def blobs(n: int, seed: int, k: int = 2, sep: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return np.round(rng.normal(size=(n, 3)) + sep * np.eye(k, 3)[y], 4), (2 * y - 1 if k == 2 else y + 1)


# --------------------------------------------------------------------------------------------
# the registry
# --------------------------------------------------------------------------------------------


def test_registry_holds_libsvms_types_and_names_them() -> None:
    assert list(FORMULATIONS)[:5] == ["c-svc", "nu-svc", "one-class", "epsilon-svr", "nu-svr"]
    assert {"svdd", "l2-svc"} <= set(FORMULATIONS)
    assert [libsvm_formulation(k).name for k in range(5)] == list(FORMULATIONS)[:5]   # type: ignore[union-attr]
    assert libsvm_formulation(5) is None and formulation(C_SVC) is C_SVC
    with pytest.raises(ProblemError, match=r"unknown 'c-svm'; the formulations are c-svc, nu-svc, one-class") as exc:
        formulation("c-svm")
    assert "\n" not in str(exc.value)
    with pytest.raises(ProblemError, match="registered already"):
        register_formulation(Formulation("c-svc", Predicts.LABEL, C_SVC.build))
    with pytest.raises(ProblemError, match="LIBSVM type 0 is 'c-svc'"):
        register_formulation(Formulation("other-svc", Predicts.LABEL, C_SVC.build, libsvm_type=0))
    with pytest.raises(ProblemError, match="one lower-case word"):
        Formulation("L2 SVC", Predicts.LABEL, C_SVC.build)
    assert "other-svc" not in FORMULATIONS


def test_parameters_are_checked_and_defaulted() -> None:
    nu_svr = formulation("nu-svr")
    assert nu_svr.params() == {"C": 1.0, "nu": 0.5} and nu_svr.params({"nu": None, "C": 3}) == {"C": 3.0, "nu": 0.5}
    with pytest.raises(ProblemError, match=r"nu: must be in \(0, 1\]"):
        nu_svr.params({"nu": 1.5})
    with pytest.raises(ProblemError, match="C: must be finite and > 0"):
        nu_svr.params({"C": -1})
    with pytest.raises(ProblemError, match="epsilon: the nu-svr formulation takes C, nu, not epsilon"):
        nu_svr.params({"epsilon": 0.1})
    with pytest.raises(ProblemError, match="epsilon: must be finite and ≥ 0"):
        formulation("epsilon-svr").params({"epsilon": -0.1})


def test_empty_x_says_so_before_any_work() -> None:
    for build in (csvc, l2_svc):
        with pytest.raises(ProblemError, match=r"^X: no training rows \(an empty data set\)") as exc:
            build(np.zeros((0, 3)), [])
        assert "\n" not in str(exc.value)
    with pytest.raises(ProblemError, match="X: no training rows"):
        fit_formulation("one-class", np.zeros((0, 2)), None, Kernel("rbf", gamma=1.0), make("smo"))


def test_fit_formulation_dispatches_on_what_it_predicts() -> None:
    X, y = blobs(50, 4, k=3)
    k = Kernel("rbf", gamma=0.5)
    fit = fit_formulation("c-svc", X, y, k, make("smo"), params={"C": 2.0}, tol=1e-6)
    ref = train_multiclass(X, (y - 1).astype(np.intp), np.array([1, 2, 3]), np.full(50, 2.0), k, make("smo"), tol=1e-6)
    assert isinstance(fit.model, MulticlassSVM) and fit.params == {"C": 2.0}
    assert np.array_equal(fit.model.D, ref.model.D) and [r.iterations for r in fit.results] == \
        [r.iterations for r in ref.results]
    one = fit_formulation("one-class", X, None, k, make("smo"), params={"nu": 0.3}, sample_weight=np.r_[0, np.ones(49)])
    assert one.model.kind == "one-class" and 0 not in one.model.support and one.rows[0].size == 49
    seen: list[int] = []
    svr = fit_formulation("epsilon-svr", X, X[:, 0], k, make("smo"), max_iter=lambda n: seen.append(n) or 5)
    assert seen == [100] and svr.results[0].iterations == 5       # LIBSVM's cap counts the 2l variables
    with pytest.raises(Refused, match="cannot take the nu-svr dual") as exc:
        fit_formulation("nu-svr", X, X[:, 0], k, make("incas"))
    assert exc.value.formulation == "nu-svr"
    with pytest.raises(ProblemError, match="class_weight: the nu-svc formulation takes no class weights"):
        fit_formulation("nu-svc", X, y, k, make("smo"), class_weight=[1.0, 2.0, 1.0])


# --------------------------------------------------------------------------------------------
# Q = B + diag(d)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cached", [True, False])
def test_diagonal_shift_is_b_plus_diag(cached: bool) -> None:
    rng = np.random.default_rng(1)
    X, s, d = rng.normal(size=(12, 3)), np.where(rng.random(12) > 0.5, 1.0, -1.0), rng.random(12)
    base: Any = KernelQ(X, Kernel("rbf", gamma=0.3), scale=s) if cached else DenseQ(np.cov(rng.normal(size=(12, 30))))
    M = principal_block(base, np.arange(12)) + np.diag(d)
    Q = shift_diagonal(base, d)
    assert type(Q) is (CachedDiagonalShiftQ if cached else DiagonalShiftQ)
    assert (Capability.ROW_CACHE in Q.capabilities) is cached and Capability.CROSS in Q.capabilities
    assert Q.psd is True and shift_diagonal(base, -d).psd is None
    x, idx, cols = rng.normal(size=12), np.array([3, 0, 7]), np.array([7, 1, 3, 3])
    np.testing.assert_allclose(Q.matvec(x), M @ x)
    np.testing.assert_allclose(Q.diag(), np.diag(M))
    np.testing.assert_allclose(Q.rows(idx), M[idx])
    np.testing.assert_allclose(Q.row(5), M[5])
    np.testing.assert_allclose(principal_block(Q, idx), M[np.ix_(idx, idx)])
    np.testing.assert_allclose(cross_block(Q, idx, cols), M[np.ix_(idx, cols)])
    np.testing.assert_allclose(cross_block(Q, idx), M[idx])
    np.testing.assert_allclose(base.row(5), principal_block(base, np.arange(12))[5])   # the base is untouched
    with pytest.raises(ProblemError, match="12 finite diagonal entries"):
        shift_diagonal(base, np.ones(3))


# --------------------------------------------------------------------------------------------
# the L2-loss SVM
# --------------------------------------------------------------------------------------------


def test_l2_svc_solves_its_primal_with_per_sample_c() -> None:
    X, y = blobs(70, 2)
    C = np.where(y > 0, 0.5, 2.0)          # class weights: C of each row
    fit = fit_formulation("l2-svc", X, y, Kernel("linear"), make("smo"), params={"C": 0.5},
                          class_weight=[4.0, 1.0], tol=1e-10)
    m = fit.model
    assert isinstance(m, MulticlassSVM)
    w, b = m.sv.T @ m.D[:, 0], float(m.bias[0])
    t = np.where(y == m.classes[0], 1.0, -1.0)

    def primal(v: np.ndarray) -> tuple[float, np.ndarray]:
        xi = np.maximum(0.0, 1.0 - t * (X @ v[:3] + v[3]))
        return 0.5 * v[:3] @ v[:3] + C @ xi**2, np.append(v[:3] - 2 * X.T @ (C * t * xi), -2 * np.sum(C * t * xi))

    ref = minimize(primal, np.zeros(4), jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-16})
    np.testing.assert_allclose(np.append(w, b), ref.x, atol=2e-5)
    assert primal(np.append(w, b))[0] == pytest.approx(-fit.results[0].objective, rel=1e-8)


def test_l2_svc_box_is_never_active_and_every_strategy_agrees() -> None:
    X, y = blobs(80, 3, sep=0.8)
    p = l2_svc(X, y, 5.0, Kernel("rbf", gamma=0.5))
    assert p.kind == "l2-svc" and p.x0 is None and np.isfinite(p.qp.ub).all()
    raw = []
    for name in ("smo", "decomposition", "incas", "gpcg", "active-set", "auto"):
        fit = fit_formulation(L2_SVC, X, y, Kernel("rbf", gamma=0.5), make(name), params={"C": 5.0}, tol=1e-9)
        assert fit.results[0].status.code == "converged", name
        assert (fit.alphas[0] < 0.5 * p.qp.ub).all()
        raw.append(fit.model.raw(X)[:, 0])     # type: ignore[union-attr]
    np.testing.assert_allclose(np.array(raw), np.tile(raw[0], (len(raw), 1)), atol=1e-5)


def test_l2_svc_through_the_command_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (X, y), (Xt, yt) = blobs(90, 5, k=3, sep=2.5), blobs(40, 6, k=3, sep=2.5)
    trn, tst, model = tmp_path / "trn", tmp_path / "tst", tmp_path / "m"
    dump_svmlight(trn, X, y)
    dump_svmlight(tst, Xt, yt)
    assert main(["train", "-s", "l2-svc", "-c", "2", "-w3", "2", "-g", "0.5", "-b", "1", str(trn), str(model)]) == 0
    out = capsys.readouterr().out
    assert "l2-svc, rbf kernel, gamma 0.5, C 2" in out and "Platt's sigmoids fitted" in out
    assert load_model_file(model).type == "l2-svc"
    assert main(["predict", "-b", "1", str(tst), str(model), str(tmp_path / "p")]) == 0
    lines = (tmp_path / "p").read_text().splitlines()
    assert lines[0] == "labels 1 2 3" and np.mean(np.array([int(v.split()[0]) for v in lines[1:]]) == yt) > 0.8
    Xr, _ = load_svmlight(trn)
    fit = fit_formulation("l2-svc", Xr, y, Kernel("rbf", gamma=0.5), make("auto"), params={"C": 2.0},
                          class_weight=[1.0, 1.0, 2.0], max_iter=10_000_000)
    np.testing.assert_array_equal(load_model_file(model).model.raw(Xr), fit.model.raw(Xr))  # type: ignore[union-attr]
    assert main(["train", "-s", "l2-svc", "-v", "3", "-q", str(trn)]) == 0
    assert "Cross Validation Accuracy" in capsys.readouterr().out
    assert main(["train", "-s", "l2-svc", "-n", "0.3", str(trn), str(model)]) == 2
    assert "-n/--nu applies to --type nu-svc, one-class, nu-svr, not to --type l2-svc" in capsys.readouterr().err
