"""qpcore.testkit.testing, qpcore.testkit.reference and qpcore.testkit.generators: generated
problems are valid (also with fixed variables and zero equality coefficients), warm starts are what
they claim, assert_kkt catches wrong points, dense_reference is accurate."""

from __future__ import annotations

import subprocess
import sys
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

import qpcore
import qpcore.testkit.generators
import qpcore.testkit.reference
import qpcore.testkit.testing
import qpcore.testkit.generators_general
from qpcore.testkit.generators import (planted_qp, psd_matrix, random_box_qp, random_degenerate_qp, random_nonneg_qp,
                             random_one_sided_qp, random_svm_dual)
from qpcore import QP, DenseQ, Kernel, KernelQ, Result, State, Status, kkt
from qpcore.testkit.generators import feasible_point, fix_variables, random_box_point
from qpcore.testkit.reference import assert_kkt, dense_reference
from qpcore.testkit.testing import box_equality_qps, box_qps, nonneg_qps, planted_qps, qps, svm_duals, warm_starts


def min_eig(qp: QP) -> tuple[float, float]:
    Q = qp.Q.rows(np.arange(qp.n))
    w = np.linalg.eigvalsh(Q)
    return float(w[0]), float(w[-1])


def check_valid(qp: QP) -> None:
    assert isinstance(qp, QP)
    assert 1 <= qp.n <= 40
    lo, hi = min_eig(qp)
    assert lo >= -1e-10 * max(1.0, hi)  # convex
    assert np.all(qp.lb <= qp.ub)


def fake_result(qp: QP, x: np.ndarray, status: Status = Status.CONVERGED) -> Result:
    """A Result whose own certificate claims perfection, to check that assert_kkt ignores it."""
    cert = kkt(qp, x, g=np.zeros(qp.n))
    state = State(x=x, g=np.zeros(qp.n), status=qpcore.bound_status(x, qp.lb, qp.ub))
    return Result(x=x, multipliers=cert.multipliers, z=cert.z, status=status, objective=0.0, kkt=cert,
                  iterations=0, stats={}, state=state)


def test_import_qpcore_does_not_import_testing_or_hypothesis() -> None:
    code = ("import sys, qpcore; bad = [m for m in ('qpcore.testkit.testing', 'hypothesis') if m in sys.modules]; "
            "sys.exit(str(bad) if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_qpcore_testing_imports_nothing_from_problems_or_strategies() -> None:
    # qpcore is the bottom layer: its test kit draws from qpcore.testkit.generators
    code = ("import sys, qpcore.testkit.testing, qpcore.testkit.reference; "
            "bad = [m for m in sys.modules if m.startswith(('qpcore_formulations', 'qpcore_strategies'))]; "
            "sys.exit(str(bad) if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_qpcore_reference_needs_no_hypothesis() -> None:
    # the reference solve and the KKT assertion serve scripts and benchmarks without the test extra
    code = ("import sys, qpcore.testkit.reference; bad = [m for m in ('qpcore.testkit.testing', 'hypothesis') if m in sys.modules]; "
            "sys.exit(str(bad) if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_kit_modules_do_not_share_names() -> None:
    # each public name has one home: the strategies in qpcore.testkit.testing, the checks in qpcore.testkit.reference
    assert not set(qpcore.testkit.testing.__all__) & set(qpcore.testkit.reference.__all__)
    assert {"assert_kkt", "dense_reference"} <= set(qpcore.testkit.reference.__all__)
    assert not hasattr(qpcore.testkit.testing, "dense_reference")


def test_test_kit_modules_export_what_they_name() -> None:
    for module in (qpcore.testkit.generators, qpcore.testkit.testing, qpcore.testkit.reference):
        assert all(hasattr(module, n) for n in module.__all__)


# --- the hypothesis strategies -----------------------------------------------------------------

@given(qps())
def test_generated_problems_are_valid_and_bounded(qp: QP) -> None:
    check_valid(qp)
    x, f = dense_reference(qp)  # raises if the problem were unbounded
    assert np.isfinite(f)
    k = kkt(qp, x)
    assert k.primal <= 1e-9 * max(1.0, float(np.abs(x).max()))


@given(svm_duals(fixed=False))
def test_svm_duals_have_svm_form(qp: QP) -> None:
    check_valid(qp)
    assert qp.m == 1 and qp.n >= 2
    y = qp.A[0]
    assert set(np.unique(y)) == {-1.0, 1.0}
    np.testing.assert_array_equal(qp.b, [0.0])
    assert np.all(qp.lb == 0.0)
    C = qp.ub[0]
    assert np.all(qp.ub == C) and 1e-3 * (1 - 1e-12) <= C <= 1e3 * (1 + 1e-12)


@given(nonneg_qps(fixed=False))
def test_nonneg_qps_shape(qp: QP) -> None:
    check_valid(qp)
    assert qp.m == 0 and np.all(qp.lb == 0.0) and np.all(qp.ub == np.inf)


@given(box_qps(one_sided=False, degenerate=False, max_cond=10.0, rank_deficient=False))
def test_box_qps_options_restrict_the_draw(qp: QP) -> None:
    check_valid(qp)
    assert qp.m == 0 and np.isfinite(qp.lb).all() and np.isfinite(qp.ub).all()
    lo, hi = min_eig(qp)
    assert hi / lo <= 10.0 * (1 + 1e-8)


@given(box_qps(min_cond=1e6, max_cond=1e8, rank_deficient=False, one_sided=False, degenerate=False))
def test_box_qps_ill_conditioned(qp: QP) -> None:
    lo, hi = min_eig(qp)
    assert 1e6 * (1 - 1e-3) <= hi / lo <= 1e8 * (1 + 1e-3)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_strategies_reject_bad_options() -> None:
    with pytest.raises(ValueError, match="cond"):
        box_qps(min_cond=10.0, max_cond=1.0).example()
    with pytest.raises(ValueError, match="kernels"):
        svm_duals(kernels=("poly",)).example()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n"):
        nonneg_qps(min_n=5, max_n=2).example()


# --- fixed variables and zero equality coefficients (opt-in) ------------------------------------

def eq_scale(qp: QP, x: np.ndarray) -> float:
    """The size of A x's terms (for judging A x − b)."""
    return 1.0 + float(np.abs(qp.b).max(initial=0.0)) + float((np.abs(qp.A) @ np.abs(x)).max(initial=0.0))


def n_fixed(fraction: float, n: int) -> int:
    return 0 if fraction == 0 else min(n, max(1, round(fraction * n)))


@given(qps(fixed=True, zero_coefficients=True))
def test_generated_problems_with_fixed_and_zero_coefficients_are_valid_and_bounded(qp: QP) -> None:
    check_valid(qp)
    x, f = dense_reference(qp)
    assert np.isfinite(f)
    assert kkt(qp, x).primal <= 1e-9 * max(1.0, float(np.abs(x).max()))
    x0 = feasible_point(qp, seed=0)  # the equality is feasible for the new bounds
    assert np.all((qp.lb <= x0) & (x0 <= qp.ub))
    assert float(np.abs(qp.A @ x0 - qp.b).max(initial=0.0)) <= 1e-12 * eq_scale(qp, x0)


MAKERS: dict[str, Callable[[int, float], QP]] = {
    "box": lambda s, f: random_box_qp(12, seed=s, cond=1e3, fixed=f),
    "box_singular_open": lambda s, f: random_box_qp(12, seed=s, rank=4, lb=0.0, ub=np.inf, fixed=f),
    "one_sided": lambda s, f: random_one_sided_qp(12, seed=s, fixed=f),
    "nonneg": lambda s, f: random_nonneg_qp(12, seed=s, fixed=f),
    "degenerate_svm": lambda s, f: random_degenerate_qp(12, seed=s, svm_form=True, C=1e3, fixed=f),
    "svm_dual": lambda s, f: random_svm_dual(12, seed=s, C=1e3, duplicates=3, fixed=f),
    "planted_svm": lambda s, f: planted_qp(12, seed=s, svm_form=True, ub=7.0, fixed=f)[0],
}


@pytest.mark.parametrize("fraction", [0.1, 0.5, 1.0, True])
@pytest.mark.parametrize("kind", list(MAKERS))
def test_generators_fix_variables_inside_the_original_box(kind: str, fraction: float) -> None:
    for seed in range(5):
        plain, qp = MAKERS[kind](seed, 0.0), MAKERS[kind](seed, fraction)
        # the same problem (the rng is used for the fixing only after it is built) ...
        np.testing.assert_array_equal(plain.Q.rows(np.arange(12)), qp.Q.rows(np.arange(12)))
        np.testing.assert_array_equal(plain.c, qp.c)
        np.testing.assert_array_equal(plain.A, qp.A)
        np.testing.assert_array_equal(plain.b, qp.b)
        # ... with lb = ub inside the original box on the requested number of variables
        fixed = (qp.lb == qp.ub) & (plain.lb < plain.ub)
        changed = (qp.lb != plain.lb) | (qp.ub != plain.ub)
        assert not np.any(changed & ~fixed)
        want = n_fixed(0.25 if fraction is True else fraction, 12)
        # with an equality, rounding may make the generator release one of them
        assert want - (2 if qp.m else 0) <= int(fixed.sum()) <= want
        assert np.all((plain.lb[fixed] <= qp.lb[fixed]) & (qp.ub[fixed] <= plain.ub[fixed]))
        if qp.m:
            assert set(np.unique(qp.A[0])) == {-1.0, 1.0} and qp.b[0] == 0.0  # still SVM form
        x, f = dense_reference(qp)
        assert kkt(qp, x).primal <= 1e-9 * max(1.0, float(np.abs(x).max()))


@pytest.mark.parametrize("fraction", [0.3, 1.0])
def test_planted_optimum_stays_optimal_with_fixed_variables(fraction: float) -> None:
    for seed in range(6):
        svm = seed % 2 == 1
        qp, x_star = planted_qp(15, seed=seed, svm_form=svm, ub=3.0, degenerate=0.5, fixed=fraction)
        plain, x_plain = planted_qp(15, seed=seed, svm_form=svm, ub=3.0, degenerate=0.5)
        np.testing.assert_array_equal(x_star, x_plain)
        fixed = qp.lb == qp.ub
        np.testing.assert_array_equal(qp.lb[fixed], x_star[fixed])
        k = kkt(qp, x_star)
        assert k.measure <= 1e-10 and k.primal <= 1e-12
        assert dense_reference(qp)[1] == pytest.approx(qp.objective(x_star), rel=1e-9, abs=1e-9)


@given(planted_qps(max_n=20, fixed=True))
def test_planted_qps_with_fixed_variables_keep_their_optimum(pair: tuple[QP, np.ndarray]) -> None:
    qp, x_star = pair
    k = kkt(qp, x_star)
    assert k.primal <= 1e-12 * max(1.0, float(np.abs(x_star).max()))
    assert k.measure <= 1e-8 * (1 + float(np.abs(qp.c).max()))
    assert np.all(qp.lb[qp.lb == qp.ub] == x_star[qp.lb == qp.ub])


@given(box_qps(fixed=0.3), nonneg_qps(fixed=0.5), svm_duals(fixed=0.3))
def test_fixed_fraction_is_honoured(box: QP, nonneg: QP, svm: QP) -> None:
    for qp, fraction in ((box, 0.3), (nonneg, 0.5)):
        check_valid(qp)
        assert int(np.sum(qp.lb == qp.ub)) >= n_fixed(fraction, qp.n)  # a bound may also coincide
    check_valid(svm)
    assert set(np.unique(svm.A[0])) == {-1.0, 1.0} and svm.b[0] == 0.0
    assert int(np.sum(svm.lb == svm.ub)) >= n_fixed(0.3, svm.n) - 1
    assert np.all(svm.lb >= 0.0)


@given(box_equality_qps(zero_coefficients=0.5, fixed=0.3))
def test_box_equality_zero_coefficients_and_fixed(qp: QP) -> None:
    check_valid(qp)
    a = qp.A[0]
    assert int(np.sum(a == 0)) == min(qp.n - 1, n_fixed(0.5, qp.n)) and a.any()
    assert int(np.sum(qp.lb == qp.ub)) >= n_fixed(0.3, qp.n) - 1
    x0 = feasible_point(qp, seed=1)
    assert float(np.abs(qp.A @ x0 - qp.b).max()) <= 1e-12 * eq_scale(qp, x0)


@given(box_equality_qps(max_n=12, zero_coefficients=False))
def test_box_equality_coefficients_nonzero_when_off(qp: QP) -> None:
    # zero_coefficients=False: every variable is in the row
    assert np.all(qp.A[0] != 0)


def test_harder_features_are_drawn_by_default() -> None:
    # fixed variables and zero coefficients are on by default: hypothesis finds a problem with both
    qp = find(box_equality_qps(max_n=12), lambda q: bool(np.any(q.lb == q.ub)) and bool(np.any(q.A[0] == 0)),
              settings=settings(database=None, max_examples=200))
    assert np.any(qp.lb == qp.ub) and np.any(qp.A[0] == 0)
    qp2 = find(svm_duals(max_n=12), lambda q: bool(np.any(q.lb == q.ub)), settings=settings(database=None))
    assert np.any(qp2.lb == qp2.ub)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_fixed_options_reject_bad_values() -> None:
    with pytest.raises(ValueError, match="fixed"):
        random_box_qp(5, seed=0, fixed=1.5)
    with pytest.raises(ValueError, match="fixed"):
        box_qps(fixed=-0.1).example()
    with pytest.raises(ValueError, match="zero_coefficients"):
        box_equality_qps(zero_coefficients=2.0).example()


def test_fix_variables_all_and_several_rows() -> None:
    # every variable of an SVM dual with a large C: the sums of the fixed values can round off
    # zero by more than QP's slack, and the generator then frees one
    for seed in range(20):
        qp = random_svm_dual(30, seed=seed, C=1e3)
        fixed = fix_variables(qp, 1.0, seed=seed)
        assert int(np.sum(fixed.lb == fixed.ub)) >= 29
        x, f = dense_reference(fixed)
        assert kkt(fixed, x).primal <= 1e-9 * max(1.0, float(np.abs(x).max()))
    # two rows: feasible_point goes through an LP
    rng = np.random.default_rng(0)
    A = rng.standard_normal((2, 8))
    x_in = rng.uniform(-1, 1, 8)
    qp = QP(np.eye(8), np.zeros(8), -1.0, 1.0, A, A @ x_in)
    x0 = feasible_point(qp, seed=3)
    assert np.all(np.abs(x0) <= 1.0) and np.abs(A @ x0 - qp.b).max() <= 1e-9
    assert int(np.sum(fix_variables(qp, 0.25, seed=3).lb == fix_variables(qp, 0.25, seed=3).ub)) == 2
    np.testing.assert_array_equal(fix_variables(qp, False, seed=3).lb, qp.lb)


def test_random_box_point() -> None:
    lb = np.array([0.0, -np.inf, -1.0, 2.0, -np.inf])
    ub = np.array([1.0, 0.0, np.inf, 2.0, np.inf])
    for p in (0.0, 0.5, 1.0):
        x = random_box_point(lb, ub, seed=7, p_bound=p)
        assert np.all((lb <= x) & (x <= ub)) and np.isfinite(x).all()
    x = random_box_point(lb, ub, seed=7, p_bound=1.0)
    assert x[0] in (0.0, 1.0) and x[1] == 0.0 and x[2] == -1.0 and x[3] == 2.0
    with pytest.raises(ValueError, match="lb"):
        random_box_point([1.0], [0.0], seed=0)


# --- warm starts -------------------------------------------------------------------------------

def outside(qp: QP, x: np.ndarray) -> bool:
    return bool(np.any((x < qp.lb) | (x > qp.ub)))


def off_equality(qp: QP, x: np.ndarray) -> bool:
    return bool(qp.m) and float(np.abs(qp.A @ x - qp.b).max()) > 1e-9 * eq_scale(qp, x)


@given(qps(fixed=True, zero_coefficients=True), st.data())
def test_warm_starts_feasible_and_infeasible(qp: QP, data: st.DataObject) -> None:
    x0 = data.draw(warm_starts(qp), label="x0")
    assert x0.shape == (qp.n,) and x0.dtype == np.float64 and np.isfinite(x0).all()
    xf = data.draw(warm_starts(qp, feasible=True), label="feasible")
    assert not outside(qp, xf)
    assert float(np.abs(qp.A @ xf - qp.b).max(initial=0.0)) <= 1e-12 * eq_scale(qp, xf)
    xi = data.draw(warm_starts(qp, feasible=False), label="infeasible")
    assert outside(qp, xi) or off_equality(qp, xi)


@given(qps(fixed=True, zero_coefficients=True), st.sampled_from(["bounds", "equality", "both"]), st.data())
def test_warm_starts_violate_what_they_say(qp: QP, kind: Any, data: st.DataObject) -> None:
    if kind != "bounds" and not (qp.m and ((qp.A[0] != 0) & (qp.lb < qp.ub)).any()):
        with pytest.raises(ValueError, match="cannot be violated"):
            data.draw(warm_starts(qp, violate=kind))
        return
    x0 = data.draw(warm_starts(qp, violate=kind), label="x0")
    assert np.isfinite(x0).all()
    if kind == "equality":
        assert not outside(qp, x0) and off_equality(qp, x0)
        return
    assert outside(qp, x0)
    if kind == "both":
        assert off_equality(qp, x0)
    elif qp.m and int(np.sum(qp.A[0] != 0)) >= 2:
        # the variables not pushed out restore the equality
        assert float(np.abs(qp.A @ x0 - qp.b).max()) <= 1e-10 * eq_scale(qp, x0)
    if qp.m == 0:
        # pushed past a bound by at most 10 box widths (a unit for a half-open box or a point)
        width = np.where(np.isfinite(qp.lb) & np.isfinite(qp.ub) & (qp.ub > qp.lb), qp.ub - qp.lb, 1.0)
        excess = np.maximum(qp.lb - x0, x0 - qp.ub)
        assert np.all(excess <= 10.0 * width * (1 + 1e-12))


def test_warm_starts_draw_every_kind() -> None:
    qp = random_svm_dual(10, seed=2, C=5.0)
    kinds: dict[str, Callable[[np.ndarray], bool]] = {
        "feasible": lambda x: not outside(qp, x) and not off_equality(qp, x),
        "bounds": lambda x: outside(qp, x) and not off_equality(qp, x),
        "equality": lambda x: not outside(qp, x) and off_equality(qp, x),
        "both": lambda x: outside(qp, x) and off_equality(qp, x),
    }
    for predicate in kinds.values():
        find(warm_starts(qp), predicate)
    box = random_box_qp(6, seed=0)
    with pytest.raises(ValueError, match="cannot be violated"):
        find(warm_starts(box, violate="equality"), lambda x: True)
    with pytest.raises(ValueError, match="no constraint"):
        find(warm_starts(QP(np.eye(3), np.zeros(3)), feasible=False), lambda x: True)
    with pytest.raises(ValueError, match="feasible=True"):
        find(warm_starts(qp, True, violate="bounds"), lambda x: True)


@given(planted_qps(max_n=20))
def test_dense_reference_finds_planted_optimum(pair: tuple[QP, np.ndarray]) -> None:
    qp, x_star = pair
    x, f = dense_reference(qp)
    f_star = qp.objective(x_star)
    assert f == pytest.approx(f_star, rel=1e-9, abs=1e-9)
    k = kkt(qp, x)
    assert k.measure <= 1e-8 * (1 + float(np.abs(qp.c).max()))


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::PendingDeprecationWarning")
def test_dense_reference_matches_osqp() -> None:
    osqp = pytest.importorskip("osqp")
    import scipy.sparse as sp

    for seed in range(4):
        qp = random_svm_dual(25, seed=seed, C=10.0, duplicates=3) if seed % 2 else random_box_qp(25, seed=seed, cond=1e4)
        Q = qp.Q.rows(np.arange(qp.n))
        cons = sp.csc_matrix(np.vstack([np.eye(qp.n), qp.A]))
        lo = np.concatenate([qp.lb, qp.b])
        hi = np.concatenate([qp.ub, qp.b])
        m = osqp.OSQP()
        m.setup(sp.csc_matrix(np.triu(Q)), qp.c, cons, lo, hi, eps_abs=1e-11, eps_rel=1e-11, max_iter=100000,
                polish=True, verbose=False)
        xo = np.clip(m.solve().x, qp.lb, qp.ub)
        x, f = dense_reference(qp)
        assert f == pytest.approx(qp.objective(xo), rel=1e-8, abs=1e-10)
        assert f <= qp.objective(xo) + 1e-12 * (1 + abs(f))


# SVM duals on which Mehrotra's predictor-corrector cycled (complementarity stuck near 1e-2, the
# first one found by hypothesis in svm_duals(max_n=24, max_cond=1e6)); objectives from OSQP
# (eps 1e-11, polished), which agree to 1e-14
STALLED_SVM_DUALS = [
    (dict(n=17, seed=17, C=1000.0, kernel="rbf", d=4), -48.0837913053695),
    (dict(n=4, seed=246, C=1000.0, cond=275.59176546811443, kernel="linear", d=7), -0.1650599180143179),
    (dict(n=35, seed=153, C=1e-3, duplicates=19, kernel="linear", d=2), -0.031454087034401675),
    (dict(n=31, seed=136, C=212.50126295919063, duplicates=8, kernel="rbf", d=3), -134.4757881473031),
]


@pytest.mark.parametrize(("params", "f_star"), STALLED_SVM_DUALS)
def test_dense_reference_where_mehrotra_cycled(params: Any, f_star: float) -> None:
    qp = random_svm_dual(**params)
    x, f = dense_reference(qp)
    assert f == pytest.approx(f_star, rel=1e-9)
    assert f == pytest.approx(qp.objective(x))
    k = kkt(qp, x)
    assert k.measure <= 1e-9 and k.primal <= 1e-12 * max(1.0, float(np.abs(x).max()))


@pytest.mark.parametrize(("params", "f_star"), STALLED_SVM_DUALS)
def test_dense_reference_active_set_alone(params: Any, f_star: float) -> None:
    # max_iter=0: the interior-point method does nothing, the active-set method starts mid-box
    x, f = dense_reference(random_svm_dual(**params), max_iter=0)
    assert f == pytest.approx(f_star, rel=1e-9)


@given(planted_qps(max_n=20))
def test_dense_reference_active_set_alone_finds_planted_optimum(pair: tuple[QP, np.ndarray]) -> None:
    qp, x_star = pair
    x, f = dense_reference(qp, max_iter=0)
    assert f == pytest.approx(qp.objective(x_star), rel=1e-9, abs=1e-9)
    k = kkt(qp, x)
    assert k.measure <= 1e-8 * (1 + float(np.abs(qp.c).max()))
    assert k.primal <= 1e-12 * max(1.0, float(np.abs(x).max()))


def test_dense_reference_on_kernel_operator_and_fixed_variables() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(size=(12, 3))
    y = np.where(np.arange(12) % 2 == 0, 1.0, -1.0)
    ub = np.ones(12)
    ub[[2, 5]] = 0.0  # lb = ub = 0: fixed
    qp = QP(KernelQ(X, Kernel("rbf", gamma=0.5), scale=y), -np.ones(12), 0.0, ub, y, 0.0)
    x, f = dense_reference(qp)
    assert x[2] == 0.0 and x[5] == 0.0
    assert kkt(qp, x).measure <= 1e-9
    assert f == pytest.approx(qp.objective(x))


def test_dense_reference_raises_on_unbounded() -> None:
    qp = QP(np.zeros((2, 2)), [-1.0, 0.0], 0.0, np.inf)
    with pytest.raises(RuntimeError, match="unbounded"):
        dense_reference(qp)


# --- assert_kkt --------------------------------------------------------------------------------

def test_assert_kkt_passes_at_the_optimum() -> None:
    qp, x_star = planted_qp(10, seed=0, svm_form=True, ub=2.0)
    assert_kkt(qp, fake_result(qp, x_star), 1e-10)


def test_assert_kkt_fails_on_a_wrong_point_whatever_the_result_claims() -> None:
    qp, x_star = planted_qp(10, seed=0, svm_form=True, ub=2.0)
    res = fake_result(qp, np.zeros(10))
    assert res.kkt.measure == 0.0  # the result's own (made-up) certificate is perfect
    with pytest.raises(AssertionError, match=r"maximal-violating-pair gap\) 5\.4\d*e\+00 > tol .*maximal violating pair i="):
        assert_kkt(qp, res, 1e-6)


def test_assert_kkt_names_the_worst_variable_of_a_box_qp() -> None:
    qp = QP(np.eye(3), [-0.5, 2.0, -3.0], -1.0, 1.0)
    with pytest.raises(AssertionError, match=r"projected-gradient norm\) 3\.500e\+00.*worst variable i=2"):
        assert_kkt(qp, fake_result(qp, np.array([0.5, -1.0, -0.5])), 1e-6)


def test_assert_kkt_tolerance_has_tiny_slack() -> None:
    qp = QP(np.eye(1), [0.0], -1.0, 1.0)
    x = np.array([1e-3])  # measure exactly 1e-3
    assert_kkt(qp, fake_result(qp, x), 1e-3)
    with pytest.raises(AssertionError, match="KKT measure"):
        assert_kkt(qp, fake_result(qp, x), 0.999e-3)


def test_assert_kkt_requires_convergence() -> None:
    qp, x_star = planted_qp(6, seed=1)
    with pytest.raises(AssertionError, match=r"status is 'max_iter'"):
        assert_kkt(qp, fake_result(qp, x_star, Status.MAX_ITER), 1e-6)


def test_assert_kkt_primal_infeasibility() -> None:
    qp, x_star = planted_qp(6, seed=1, svm_form=True, ub=1.0)
    x = x_star.copy()
    x[0] = -0.5
    with pytest.raises(AssertionError, match=r"primal infeasibility 5\.000e-01.*bound at i=0"):
        assert_kkt(qp, fake_result(qp, x), 1e6)
    with pytest.raises(AssertionError, match=r"A x = b"):
        x = np.zeros(6)
        i = int(np.flatnonzero(qp.A[0] > 0)[0])
        x[i] = 0.5  # inside the box, off the equality
        assert_kkt(qp, fake_result(qp, x), 1e6)


def test_assert_kkt_nonfinite_and_shape() -> None:
    qp = QP(np.eye(2), [0.0, 0.0])
    with pytest.raises(AssertionError, match="not finite"):
        assert_kkt(qp, fake_result(qp, np.array([np.nan, 0.0])), 1.0)
    with pytest.raises(AssertionError, match="shape"):
        assert_kkt(qp, fake_result(QP(np.eye(3), np.zeros(3)), np.zeros(3)), 1.0)


# --- the generators ----------------------------------------------------------------------------

@pytest.mark.parametrize("cond", [1.0, 1e3, 1e8])
def test_psd_matrix_spectrum(cond: float) -> None:
    w = np.linalg.eigvalsh(psd_matrix(20, seed=0, cond=cond))
    assert w[-1] == pytest.approx(1.0) and w[0] == pytest.approx(1.0 / cond, rel=1e-6)
    r = np.linalg.eigvalsh(psd_matrix(20, seed=0, cond=cond, rank=7))
    assert np.sum(r > 1e-12) == 7 and abs(r[0]) < 1e-12


def test_generators_are_deterministic() -> None:
    makers: list[Callable[[int], QP]] = [
        lambda s: random_box_qp(8, seed=s), lambda s: random_svm_dual(8, seed=s, duplicates=2),
        lambda s: random_nonneg_qp(8, seed=s), lambda s: random_one_sided_qp(8, seed=s),
        lambda s: random_degenerate_qp(8, seed=s, svm_form=True)]
    for make in makers:
        a, b, c = make(3), make(3), make(4)
        np.testing.assert_array_equal(a.Q.rows(np.arange(8)), b.Q.rows(np.arange(8)))
        np.testing.assert_array_equal(a.c, b.c)
        assert not np.array_equal(a.Q.rows(np.arange(8)), c.Q.rows(np.arange(8)))


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_svm_dual_form_and_duplicates(kernel: Any) -> None:
    qp = random_svm_dual(20, seed=5, C=3.0, duplicates=6, kernel=kernel)
    assert isinstance(qp.Q, DenseQ)
    y = qp.A[0]
    np.testing.assert_array_equal(qp.c, -np.ones(20))
    assert set(y) == {-1.0, 1.0} and np.all(qp.ub == 3.0) and np.all(qp.lb == 0.0)
    Q = qp.Q.rows(np.arange(20))
    K = Q * np.outer(y, y)
    assert np.all(np.diag(K) >= 0)
    # six copies: at most 14 distinct rows, bit-for-bit identical
    assert np.unique(K, axis=0).shape[0] <= 14


def test_svm_dual_rbf_condition_number() -> None:
    for cond in (1e2, 1e6):
        qp = random_svm_dual(25, seed=1, cond=cond)
        w = np.linalg.eigvalsh(qp.Q.rows(np.arange(25)))
        assert w[-1] / w[0] == pytest.approx(cond, rel=0.05)


def test_svm_dual_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="duplicates"):
        random_svm_dual(5, seed=0, duplicates=4)
    with pytest.raises(ValueError, match="C"):
        random_svm_dual(5, seed=0, C=0.0)
    with pytest.raises(ValueError, match="kernel"):
        random_svm_dual(5, seed=0, kernel="poly")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cond"):
        random_box_qp(5, seed=0, cond=0.5)
    with pytest.raises(ValueError, match="rank"):
        random_box_qp(5, seed=0, rank=6)


def test_nonneg_and_one_sided_bounds() -> None:
    qp = random_nonneg_qp(10, seed=0, rank=3)
    assert np.all(qp.lb == 0) and np.all(qp.ub == np.inf)
    sides: list[Any] = ["lower", "upper", "mixed"]
    for side in sides:
        qp = random_one_sided_qp(12, seed=2, side=side, rank=4)
        assert np.all(np.isfinite(qp.lb) != np.isfinite(qp.ub))
        if side == "lower":
            assert np.all(qp.ub == np.inf)
        if side == "upper":
            assert np.all(qp.lb == -np.inf)


@given(st.integers(0, 2**32 - 1), st.booleans())
def test_degenerate_optimum_has_zero_multipliers_at_bounds(seed: int, svm_form: bool) -> None:
    qp, x = planted_qp(15, seed=seed, degenerate=1.0, svm_form=svm_form, ub=1.0, p_bound=0.7)
    k = kkt(qp, x)
    at_bound = (x <= qp.lb) | (x >= qp.ub)
    assert at_bound.any()
    assert np.abs(k.z[at_bound]).max() <= 1e-10
    assert k.measure <= 1e-10 and k.primal <= 1e-12


def test_singular_box_qp_with_open_side_is_bounded() -> None:
    qp = random_box_qp(12, seed=0, rank=3, lb=0.0, ub=np.inf)
    x, f = dense_reference(qp)
    assert np.isfinite(f) and kkt(qp, x).measure <= 1e-9


@pytest.mark.parametrize(("call", "message"), [
    (lambda: qpcore.testkit.generators.random_box_qp(n="foo", seed=0), "n: expected an integer ≥ 1, got 'foo'"),
    (lambda: qpcore.testkit.generators.random_box_qp(n=5, cond="x", seed=0), "cond: expected a finite number ≥ 1, got 'x'"),
    (lambda: qpcore.testkit.generators_general.planted_general_qp(n=6, fixed=2.0, seed=0), "fixed: expected a number in [0, 1], got 2.0"),
])
def test_generators_refuse_bad_arguments_in_one_line(call: Any, message: str) -> None:
    with pytest.raises(qpcore.ProblemError) as info:
        call()
    assert str(info.value) == message
