"""The SVM family (qpcore_formulations.svm_family) against LIBSVM through scikit-learn, and its certificates.

Each formulation is solved by every strategy that accepts it and compared with scikit-learn's
NuSVC, OneClassSVM, SVR and NuSVR at tight tolerances: the objective of LIBSVM's solution mapped
into our QP, decision values, rho, and the support set where it is unique. Property tests draw
small problems (duplicated points, ties, extreme ν and C) and check the KKT certificate from the
problem alone and the objective against the dense reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from sklearn.svm import SVR, NuSVC, NuSVR, OneClassSVM

from qpcore_formulations.svm import csvc
from qpcore_formulations.svm_family import (FamilyProblem, abstract_form, epsilon_svr, nu_svc, nu_svr, one_class, standard,
                                 svdd)
from qpcore.core.certificate import kkt
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.testkit.reference import dense_reference
from qpcore.core.solve import solve
from qpcore_strategies.registry import make

FloatArray = NDArray[np.float64]
STRATEGIES = ("smo", "decomposition", "incas", "active-set", "gpcg")


def _coef(est: Any) -> FloatArray:
    c = est.dual_coef_
    return np.asarray(c.toarray() if hasattr(c, "toarray") else c, dtype=np.float64).ravel()


def _libsvm_x(P: FamilyProblem, est: Any) -> FloatArray:
    """LIBSVM's solution as a point of our QP (ν-SVC: coefficients times r, r from Σα = νl)."""
    x = np.zeros(P.qp.n)
    coef = _coef(est)
    sup = np.asarray(est.support_)
    if P.kind == "one-class":
        x[sup] = coef
    elif P.kind == "nu-svc":
        r = P.params["nu"] * P.l / np.abs(coef).sum()
        x[sup] = np.abs(coef) * r
    else:
        x[sup] = np.maximum(coef, 0.0)
        x[P.l + sup] = np.maximum(-coef, 0.0)
    return x


def _build(kind: str, X: Any, y: Any, kernel: Kernel, *, C: float = 1.0, nu: float = 0.5,
           eps: float = 0.1) -> tuple[FamilyProblem, Any]:
    g = kernel.gamma
    if kind == "nu-svc":
        return nu_svc(X, y, nu, kernel), NuSVC(nu=nu, kernel=kernel.name, gamma=g, tol=1e-12)
    if kind == "one-class":
        return one_class(X, nu, kernel), OneClassSVM(nu=nu, kernel=kernel.name, gamma=g, tol=1e-12)
    if kind == "epsilon-svr":
        return epsilon_svr(X, y, C, eps, kernel), SVR(C=C, epsilon=eps, kernel=kernel.name, gamma=g, tol=1e-12)
    return nu_svr(X, y, C, nu, kernel), NuSVR(C=C, nu=nu, kernel=kernel.name, gamma=g, tol=1e-12)


def _compare(P: FamilyProblem, est: Any, X: Any, y: Any, strategies: tuple[str, ...]) -> None:
    if P.kind == "one-class":
        est.fit(X)
    else:
        est.fit(X, y)
    ref_obj = P.qp.objective(_libsvm_x(P, est))
    d_ref = est.decision_function(X) if P.kind in ("nu-svc", "one-class") else est.predict(X)
    for name in strategies:
        strat = make(name)
        if strat.accepts(P.qp) is not None:
            continue
        res = solve(P.qp, strat, x0=P.x0, tol=1e-8, max_iter=200_000)
        assert res.status.name == "CONVERGED", (name, res.status)
        cert = kkt(P.qp, res.x)
        assert cert.feasible() and cert.measure <= 1e-6, (name, cert.measure)
        obj = P.qp.objective(res.x)
        assert obj <= ref_obj + 1e-6 * max(1.0, abs(ref_obj)), (name, obj, ref_obj)
        assert abs(obj - ref_obj) <= 1e-6 * max(1.0, abs(ref_obj)), (name, obj, ref_obj)
        m = P.decode(res)
        d = m.decision_function(X) if P.kind in ("nu-svc", "one-class") else m.predict(X)
        assert np.abs(d - d_ref).max() <= 1e-4 * max(1.0, float(np.abs(d_ref).max())), name
        assert abs(m.bias - float(np.ravel(est.intercept_)[0])) <= 1e-4 * max(1.0, abs(m.bias)), name
        # the support set where it is unique: points that occur once, with a clearly nonzero
        # coefficient (copies of a point may share their weight in any proportion)
        Xd = np.asarray(X.toarray() if hasattr(X, "toarray") else X)
        _, inv, counts = np.unique(Xd, axis=0, return_inverse=True, return_counts=True)
        single = counts[inv.ravel()] == 1
        coef = _coef(est)
        sup = np.asarray(est.support_)
        clear = (np.abs(coef) > 1e-5 * max(1.0, float(np.abs(coef).max()))) & single[sup]
        assert set(sup[clear].tolist()) <= set(m.support.tolist()), name


def _generated(kind: str, seed: int) -> tuple[FloatArray, FloatArray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(70, 3))
    X = np.vstack([X, X[:10]])                       # duplicated points
    if kind in ("nu-svc",):
        y = np.where(X[:, 0] + 0.7 * rng.normal(size=X.shape[0]) > 0, 1.0, -1.0)
        y[70:] = -y[:10]                             # contradictory labels on the duplicates
    else:
        y = np.sin(2 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=X.shape[0])
    return X, y


@pytest.mark.parametrize("kind", ["nu-svc", "one-class", "epsilon-svr", "nu-svr"])
def test_generated_with_duplicates_against_libsvm(kind: str) -> None:
    X, y = _generated(kind, 3)
    P, est = _build(kind, X, y, Kernel("rbf", gamma=0.5), C=3.0, nu=0.3, eps=0.05)
    _compare(P, est, X, y, STRATEGIES)


@pytest.mark.data
@pytest.mark.parametrize("kind,data", [("nu-svc", "adult"), ("nu-svc", "ijcnn1"), ("one-class", "adult"),
                                       ("one-class", "ijcnn1"), ("epsilon-svr", "abalone"), ("nu-svr", "abalone")])
def test_real_data_against_libsvm(kind: str, data: str) -> None:
    from qpcore_formulations.data.files import load_dataset

    X, y = load_dataset(data)
    n = 400
    X, y = X[:n], y[:n]
    gamma = {"adult": 0.05, "ijcnn1": 1.0, "abalone": 1.0}[data]
    P, est = _build(kind, X, y, Kernel("rbf", gamma=gamma), C=10.0, nu=(0.06 if data == "ijcnn1" else 0.2) if kind == "nu-svc" else 0.5, eps=0.1)
    _compare(P, est, X, y, ("smo", "decomposition", "incas"))


def test_nu_svc_is_the_csvc_at_c_one_over_r() -> None:
    """LIBSVM's scaling: the decoded ν-SVC equals the C-SVC at C = 1/r (Chang and Lin)."""
    X, y = _generated("nu-svc", 5)
    k = Kernel("rbf", gamma=0.5)
    P = nu_svc(X, y, 0.4, k)
    m = P.decode(solve(P.qp, make("smo"), x0=P.x0, tol=1e-10))
    assert m.r is not None and m.r > 0
    Pc = csvc(X, y, 1.0 / m.r, k)
    mc = Pc.decode(solve(Pc.qp, make("smo"), tol=1e-10))
    assert np.abs(m.decision_function(X) - mc.decision_function(X)).max() < 1e-6


def test_svdd_is_the_one_class_svm_for_rbf() -> None:
    """Tax–Duin's SVDD on the abstract form, C = 1/(νl): LIBSVM's one-class decision scaled by νl."""
    X, _ = _generated("one-class", 6)
    k = Kernel("rbf", gamma=0.5)
    nu = 0.2
    Ps = svdd(X, 1.0 / (nu * X.shape[0]), k)
    ms = Ps.decode(solve(Ps.qp, make("smo"), x0=Ps.x0, tol=1e-11))
    oc = OneClassSVM(nu=nu, gamma=0.5, tol=1e-12).fit(X)
    assert np.abs(ms.decision_function(X) * nu * X.shape[0] - oc.decision_function(X)).max() < 1e-5


def test_svdd_poly_ball_decision() -> None:
    """SVDD with a non-RBF kernel: f(x) = ½(R² − ‖φ(x) − a‖²), checked in the explicit feature space."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 2))
    P = svdd(X, 0.1, Kernel("linear"))
    res = solve(P.qp, make("active-set"), x0=P.x0, tol=1e-12)
    m = P.decode(res)
    a = X.T @ res.x                                  # the centre, in the linear kernel's feature space
    d2 = ((X - a) ** 2).sum(axis=1)
    free = (res.x > 1e-9) & (res.x < 0.1 - 1e-9)
    R2 = float(d2[free].mean())
    assert np.abs(m.decision_function(X) - 0.5 * (R2 - d2)).max() < 1e-8


def test_standard_instance_is_the_csvc() -> None:
    X, y = _generated("nu-svc", 7)
    k = Kernel("rbf", gamma=0.5)
    a, b = standard(X, y, 2.0, k), csvc(X, y, 2.0, k)
    ra, rb = solve(a.qp, make("smo"), tol=1e-10), solve(b.qp, make("smo"), tol=1e-10)
    assert abs(a.qp.objective(ra.x) - b.qp.objective(rb.x)) < 1e-9
    assert np.abs(a.decode(ra).decision_function(X) - b.decode(rb).decision_function(X)).max() < 1e-6


def test_bad_input_is_refused_before_any_work() -> None:
    X, y = _generated("nu-svc", 8)
    k = Kernel("rbf", gamma=0.5)
    for nu in (0.0, -0.1, 1.5, float("nan")):
        with pytest.raises(ProblemError, match="nu"):
            nu_svc(X, y, nu, k)
        with pytest.raises(ProblemError, match="nu"):
            one_class(X, nu, k)
    y_skew = np.where(np.arange(X.shape[0]) < 10, 1.0, -1.0)
    with pytest.raises(ProblemError, match="specified nu is infeasible"):
        nu_svc(X, y_skew, 0.5, k)
    with pytest.raises(ProblemError, match="epsilon"):
        epsilon_svr(X, y, 1.0, -0.1, k)
    with pytest.raises(ProblemError, match="at least two"):
        epsilon_svr(X[:1], y[:1], 1.0, 0.1, k)
    with pytest.raises(ProblemError):
        one_class(np.zeros((0, 3)), 0.5, k)
    y_bad = y.copy()
    y_bad[3] = np.nan
    with pytest.raises(ProblemError, match="targets"):
        nu_svr(X, y_bad, 1.0, 0.5, k)
    with pytest.raises(ProblemError, match="C"):
        svdd(X, 1e-4, k)
    with pytest.raises(ProblemError):
        abstract_form(standard(X, y, 1.0, k).qp.Q, np.ones(3), np.ones(3), 0.0, 1.0)


@st.composite
def _family_problem(draw: Any) -> FamilyProblem:
    kind = draw(st.sampled_from(["nu-svc", "one-class", "epsilon-svr", "nu-svr", "svdd"]))
    n = draw(st.integers(4, 18))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * draw(st.sampled_from([1e-3, 1.0, 30.0]))
    if draw(st.booleans()):                           # duplicated points
        X[n // 2:] = X[: n - n // 2]
    kernel = draw(st.sampled_from([Kernel("rbf", gamma=0.7), Kernel("linear"), Kernel("poly", gamma=0.5, coef0=1.0)]))
    nu = draw(st.sampled_from([0.05, 0.3, 0.5, 1.0]))
    C = draw(st.sampled_from([0.01, 1.0, 1e3]))
    if kind == "nu-svc":
        y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
        rng.shuffle(y)
        return nu_svc(X, y, min(nu, 2.0 * (n // 2) / n), kernel)     # feasible for the class balance
    if kind == "one-class":
        return one_class(X, nu, kernel)
    if kind == "svdd":
        return svdd(X, max(C, 1.0 / n), kernel)
    t = rng.normal(size=n) * draw(st.sampled_from([0.0, 1.0, 100.0]))
    if kind == "epsilon-svr":
        return epsilon_svr(X, t, C, draw(st.sampled_from([0.0, 0.1, 10.0])), kernel)
    return nu_svr(X, t, C, nu, kernel)


@settings(max_examples=25, deadline=None)
@given(P=_family_problem(), name=st.sampled_from(STRATEGIES), warm=st.booleans())
def test_every_strategy_certifies_every_formulation(P: FamilyProblem, name: str, warm: bool) -> None:
    strat = make(name)
    if strat.accepts(P.qp) is not None:
        return
    res = solve(P.qp, strat, x0=P.x0 if warm else None, tol=1e-7, max_iter=100_000, time_limit=5.0)
    cert = kkt(P.qp, res.x)
    scale = max(1.0, float(np.abs(P.qp.c).max()), float(P.qp.Q.diag().max()) * float(P.qp.ub.max()))
    if res.status.name == "CONVERGED":
        assert cert.feasible() and cert.measure <= 1e-6 * scale, (name, P.kind, cert.measure)
        ref_x, _ = dense_reference(P.qp)
        obj, best = P.qp.objective(res.x), P.qp.objective(ref_x)
        assert obj <= best + 1e-6 * max(1.0, abs(best)) * scale, (name, P.kind, obj, best)
    elif res.status.name == "INFEASIBLE":
        # the status says what the certificate says (GPCG stalls off the feasible set on poly
        # kernels with entries near 1e10)
        assert not cert.feasible(), (name, P.kind, cert.primal)
    else:
        # a run that stops short says which limit (or what) it met and returns a feasible best point
        assert res.status.name in ("MAX_ITER", "TIME_LIMIT", "STALLED", "NONCONVEX"), (name, P.kind, res.status)
        assert cert.feasible(), (name, P.kind, cert.primal)
