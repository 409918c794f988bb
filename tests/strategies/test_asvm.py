"""ASVM: KKT property tests on diagonal-plus-low-rank nonnegativity QPs, agreement with GPCG and a
dense reference, the ASVM dual against LIBLINEAR's L2-loss SVM, singular H, bad input, limits."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore_formulations.asvm import asvm_dual
from qpcore_formulations.data.files import load_dataset
from qpcore.testkit.generators import random_lowrank_qp
from qpcore.backends.lowrank import DiagPlusLowRankQ
from qpcore.testkit.reference import check_against_reference, dense_reference, gradient_scale
from qpcore.testkit.testing import lowrank_qps, nonneg_qps
from qpcore_strategies.asvm import ASVM
from qpcore_strategies.gradient_projection import GPCG

SAFEGUARDS = ("face_solves", "decrease_fails", "face_optimal", "face_moves", "projection_steps")


# --- property tests ----------------------------------------------------------------------------

@given(qp=lowrank_qps())
def test_kkt_and_dense_reference(qp: qpcore.QP) -> None:
    res = check_against_reference(qp, ASVM(), 1e-9)
    assert res.status is qpcore.Status.CONVERGED
    assert all(k in res.stats for k in SAFEGUARDS)


@given(qp=lowrank_qps(svm_form=True), tol=st.sampled_from([1e-3, 1e-6]))
def test_agrees_with_gpcg(qp: qpcore.QP, tol: float) -> None:
    x_ref, f_ref = dense_reference(qp)
    # an absolute tol below the rounding floor of g (about eps·diag(Q)·|u|, large for big ν and
    # spread columns) cannot be certified by either method
    tol = max(tol, 1e-9 * gradient_scale(qp, x_ref))
    a = qpcore.solve(qp, ASVM(), tol=tol)
    b = qpcore.solve(qp, GPCG(), tol=tol, max_iter=20_000)
    assert a.converged and b.converged
    assert a.kkt.measure <= tol
    # both certified to tol: their objectives differ by at most the certificates' bound
    slack = tol * float(np.abs(a.x - x_ref).sum() + np.abs(b.x - x_ref).sum()) + 1e-9 * max(1.0, abs(f_ref))
    assert abs(a.objective - b.objective) <= slack


@given(qp=lowrank_qps(svm_form=True), x0=st.sampled_from(["ones", "big", "random"]))
def test_warm_starts(qp: qpcore.QP, x0: str) -> None:
    rng = np.random.default_rng(0)
    start = {"ones": np.ones(qp.n), "big": np.full(qp.n, 1e3), "random": rng.exponential(size=qp.n)}[x0]
    x_ref, f_ref = dense_reference(qp)
    tol = 1e-9 * gradient_scale(qp, x_ref)
    res = qpcore.solve(qp, ASVM(), start, tol=tol)
    assert res.converged and res.kkt.measure <= tol
    assert res.objective <= f_ref + 1e-8 * max(1.0, abs(f_ref)) + tol * float(np.abs(res.x - x_ref).sum())


# --- per-example weights: the diagonal D = diag(1/(ν s_i)) --------------------------------------

@st.composite
def weighted_duals(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """(A, y, ν, s): an ASVM data set with per-example weights spread over 1e-4..1e4, duplicated
    rows (same or contradicting label, their own weights) and weights exactly 0."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    m = draw(st.integers(4, 40))
    n = draw(st.integers(1, 5))
    A = rng.standard_normal((m, n)) * 10.0 ** rng.uniform(-1, 1, n)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    y[:2] = (1.0, -1.0)
    dup = draw(st.integers(0, m // 2))
    if dup:
        src = rng.integers(0, m, dup)
        A = np.vstack([A, A[src]])
        y = np.r_[y, np.where(rng.random(dup) < 0.3, -y[src], y[src])]   # some contradict their twin
    s = 10.0 ** rng.uniform(-4, 4, y.size) if draw(st.booleans()) else rng.uniform(0.5, 2.0, y.size)
    zeros = draw(st.sampled_from([0.0, 0.2, 0.6]))
    s[rng.random(y.size) < zeros] = 0.0
    s[:2] = np.maximum(s[:2], 1e-4)                  # never all 0
    nu = float(10.0 ** draw(st.floats(-2, 2)))
    return A, y, nu, s


@given(data=weighted_duals())
def test_weighted_dual_kkt_and_strong_duality(data: tuple[np.ndarray, np.ndarray, float, np.ndarray]) -> None:
    A, y, nu, s = data
    P = asvm_dual(A, y, nu=nu, sample_weight=s)
    keep = np.flatnonzero(s > 0)
    # the rows of weight 0 are left out (d_i = ∞ forces u_i = 0), the others carry d_i = 1/(ν s_i)
    assert P.qp.n == keep.size
    assert P.rows is None if keep.size == s.size else (P.rows is not None and np.array_equal(P.rows, keep))
    Q = P.qp.Q
    assert isinstance(Q, DiagPlusLowRankQ)
    np.testing.assert_allclose(Q.d, 1.0 / (nu * s[keep]), rtol=1e-15)
    # KKT of the dual, recomputed from a dense Q by check_against_reference (with its objective bound)
    res = check_against_reference(P.qp, ASVM(), 1e-9)
    u = res.x
    Qd = np.diag(1.0 / (nu * s[keep])) + (H := y[keep, None] * np.c_[A[keep], -np.ones(keep.size)]) @ H.T
    g = Qd @ u - 1.0
    scale = gradient_scale(P.qp, u)
    assert (u >= 0).all() and np.abs(np.where(u > 0, g, np.minimum(g, 0.0))).max() <= 2e-9 * scale
    # strong duality with the weighted primal ν/2 Σ s_i ξ_i² + ½(‖w‖² + γ²) over ALL examples (the
    # dropped ones add 0 there): this is what ties D's formula to the weights
    w, gamma = P.primal(u)
    xi = np.maximum(0.0, 1.0 - y * (A @ w - gamma))
    primal = 0.5 * nu * float(s @ (xi * xi)) + 0.5 * float(w @ w + gamma * gamma)
    assert primal == pytest.approx(P.primal_objective(w, gamma), rel=1e-12, abs=1e-300)
    gap_allowed = 1e-7 * max(1.0, abs(res.objective)) + 2e-9 * scale * float(u.sum() + 1.0) * 10.0
    assert primal + res.objective <= gap_allowed
    assert primal + res.objective >= -gap_allowed


def test_weighted_dual_integer_weights_are_repetition() -> None:
    # s_i = k copies of example i, and 0 = removed: the same (w, γ)
    rng = np.random.default_rng(4)
    A = rng.standard_normal((60, 3))
    y = np.where(A @ [1.0, -1.0, 0.5] + 0.5 * rng.standard_normal(60) > 0, 1, -1)
    s = rng.integers(0, 4, 60)
    P = asvm_dual(A, y, nu=3.0, sample_weight=s)
    idx = np.repeat(np.arange(60), s)
    R = asvm_dual(A[idx], y[idx], nu=3.0)
    a, b = P.decode(qpcore.solve(P.qp, ASVM(), tol=1e-11)), R.decode(qpcore.solve(R.qp, ASVM(), tol=1e-11))
    np.testing.assert_allclose(a.w, b.w, rtol=1e-8, atol=1e-10)
    assert a.gamma == pytest.approx(b.gamma, rel=1e-8, abs=1e-10)
    # the scalar ν is the special case s = 1
    ones = asvm_dual(A, y, nu=3.0, sample_weight=np.ones(60))
    plain = asvm_dual(A, y, nu=3.0)
    np.testing.assert_array_equal(ones.qp.Q.diag(), plain.qp.Q.diag())


@pytest.mark.parametrize("sw,match", [
    (np.r_[1.0, -1.0, np.ones(8)], "negative"), (np.r_[np.nan, np.ones(9)], "NaN"),
    (np.r_[np.inf, np.ones(9)], "NaN or inf"), (np.zeros(10), "all weights are zero"),
    (np.ones(9), "shape mismatch"), (np.r_[1e-320, np.ones(9)], "overflows"),
])
def test_asvm_dual_bad_weights(sw: np.ndarray, match: str, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[int] = []
    original = DiagPlusLowRankQ.__init__

    def spy(self: DiagPlusLowRankQ, *a: object, **k: object) -> None:
        built.append(1)
        original(self, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(DiagPlusLowRankQ, "__init__", spy)
    with pytest.raises(qpcore.ProblemError, match=f"sample_weight: .*{match}"):
        asvm_dual(np.ones((10, 2)), np.r_[np.ones(5), -np.ones(5)], nu=1.0, sample_weight=sw)
    assert not built         # refused before any work


def test_safeguards_fire() -> None:
    # far-off warm starts force the objective test (2a), the face moves (4a) and projections (4b)
    fired = dict.fromkeys(SAFEGUARDS, 0)
    for seed in range(12):
        qp = random_lowrank_qp(60, 4, seed=seed, nu=10.0, svm_form=bool(seed % 2))
        x0 = np.random.default_rng(seed).exponential(size=qp.n) * 10.0 ** (seed % 4)
        res = qpcore.solve(qp, ASVM(), x0, tol=1e-9)
        assert res.converged
        for k in SAFEGUARDS:
            fired[k] += res.stats[k]
    assert all(v > 0 for v in fired.values()), fired


@given(qp=nonneg_qps(max_n=12))
def test_rejects_other_operators(qp: qpcore.QP) -> None:
    with pytest.raises(qpcore.ProblemError, match="DiagPlusLowRankQ"):
        qpcore.solve(qp, ASVM())


# --- singular and ill-conditioned H: an honest status ------------------------------------------

@pytest.mark.parametrize("nu", [1e-2, 1.0, 1e4, 1e8])
def test_duplicate_and_constant_columns(nu: float) -> None:
    qp = random_lowrank_qp(50, 6, seed=3, nu=nu, duplicate_cols=2, constant_col=True, duplicate_rows=10,
                           col_spread=3.0)
    x_ref, _ = dense_reference(qp)
    # cond(Q) reaches 1e14 here, beyond dense_reference's range (1e8): its point is still good, but
    # its reported value is not, so the bound is checked against the objective at its point
    f_ref = qp.objective(x_ref)
    tol = 1e-9 * gradient_scale(qp, x_ref)
    res = qpcore.solve(qp, ASVM(), tol=tol)
    if res.converged:
        # convexity: f(x) − f* ≤ Σ z_i (x_i − x*_i), and the certificate bounds |z_i| by tol
        allowed = res.kkt.stationarity * float(np.abs(res.x - x_ref).sum()) + 1e-9 * max(1.0, abs(f_ref))
        assert res.objective <= f_ref + allowed
    else:   # allowed only as an honest status with its certificate above tol
        assert res.status in (qpcore.Status.STALLED, qpcore.Status.MAX_ITER)
        assert res.kkt.measure > tol
    assert (res.x >= 0).all()


def test_smw_fallback_is_used_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    import qpcore.backends.lowrank as lr

    def broken(*args: object, **kwargs: object) -> None:
        raise np.linalg.LinAlgError("forced")

    monkeypatch.setattr(lr.sla, "cho_factor", broken)  # type: ignore[attr-defined]
    qp = random_lowrank_qp(40, 5, seed=1, nu=3.0)
    res = qpcore.solve(qp, ASVM(), tol=1e-8)
    assert res.converged
    # every factorization fell back to the floored eigendecomposition, each after a rebuild
    assert res.stats["gram_fallbacks"] == res.stats["gram_rebuilds"] >= 1


def test_limits_are_honest() -> None:
    qp = random_lowrank_qp(400, 6, seed=0, nu=100.0)
    res = qpcore.solve(qp, ASVM(), tol=1e-12, max_iter=1)
    assert res.status is qpcore.Status.MAX_ITER
    assert (res.x >= 0).all()
    assert res.kkt.measure > 1e-12
    assert res.objective == pytest.approx(qp.objective(res.x), rel=1e-12)


def test_time_limit_is_honored() -> None:
    # one step is a few passes over 200,000 rows; the run needs about 25 of them
    qp = random_lowrank_qp(200_000, 30, seed=0, nu=1e4)
    res = qpcore.solve(qp, ASVM(), tol=1e-12, time_limit=0.3)
    assert res.status is qpcore.Status.TIME_LIMIT
    assert res.stats["seconds"] <= 0.3 * 1.1 + 0.1
    assert (res.x >= 0).all() and res.kkt.measure > 1e-12


# --- the problem's checks ----------------------------------------------------------------------

def test_bad_problem_shapes() -> None:
    qp = random_lowrank_qp(10, 3, seed=0)
    Q = qp.Q
    with pytest.raises(qpcore.ProblemError, match="u ≥ 0"):
        qpcore.solve(qpcore.QP(Q=Q, c=qp.c, lb=-np.ones(10), ub=np.full(10, np.inf)), ASVM())
    with pytest.raises(qpcore.ProblemError, match="equality"):
        qpcore.solve(qpcore.QP(Q=Q, c=qp.c, lb=np.zeros(10), ub=np.full(10, np.inf), A=np.ones((1, 10)), b=[1.0]),
                     ASVM())
    with pytest.raises(qpcore.ProblemError, match="max_rank"):
        qpcore.solve(qp, ASVM(max_rank=2))
    zero_d = DiagPlusLowRankQ(0.0, np.ones((10, 2)))
    with pytest.raises(qpcore.ProblemError, match="d must be > 0"):
        qpcore.solve(qpcore.QP(Q=zero_d, c=-np.ones(10), lb=np.zeros(10), ub=np.full(10, np.inf)), ASVM())


# --- the ASVM dual against LIBLINEAR -----------------------------------------------------------

def _liblinear_primal(X: object, y: np.ndarray, C: float) -> float:
    from sklearn.svm import LinearSVC

    mdl = LinearSVC(loss="squared_hinge", dual=True, C=C, intercept_scaling=1.0, tol=1e-10, max_iter=200_000,
                    random_state=0).fit(X, y)
    w, b = mdl.coef_.ravel(), float(mdl.intercept_[0])
    xi = np.maximum(0.0, 1.0 - y * (np.asarray(X @ w).ravel() + b))
    return float(0.5 * (w @ w + b * b) + C * xi @ xi)


@pytest.mark.data
@pytest.mark.parametrize("name,m,C", [("adult", 2000, 1.0), ("adult", 2000, 0.05), ("ijcnn1", 4000, 1.0),
                                      ("ijcnn1", 4000, 20.0)])
def test_agrees_with_liblinear(name: str, m: int, C: float) -> None:
    X, y = load_dataset(name)
    X = sp.csr_matrix(X[:m])
    y = y[:m]
    for dense in (True, False):
        P = asvm_dual(X, y, nu=2 * C, dense=dense)
        res = qpcore.solve(P.qp, ASVM(), tol=1e-8)
        assert res.converged
        w, gamma = P.primal(res.x)
        ours = P.primal_objective(w, gamma)
        assert ours == pytest.approx(-res.objective, rel=1e-9)   # strong duality at the optimum
        ref = _liblinear_primal(X, np.where(y == y.max(), 1.0, -1.0), C)
        assert ours <= ref * (1 + 1e-6)
        assert ours == pytest.approx(ref, rel=1e-6)
        model = P.decode(res)
        assert set(np.unique(model.predict(X))) <= set(np.unique(y))


def test_model_decodes_labels_and_decision() -> None:
    rng = np.random.default_rng(0)
    X = np.vstack([rng.standard_normal((50, 3)) + 2, rng.standard_normal((50, 3)) - 2])
    y = np.array(["spam"] * 50 + ["ham"] * 50)
    P = asvm_dual(X, y, nu=10.0)
    model = P.decode(qpcore.solve(P.qp, ASVM(), tol=1e-9))
    assert (model.predict(X) == y).mean() > 0.95
    d = model.decision_function(X)
    assert np.allclose(d, X @ model.w - model.gamma)
    with pytest.raises(qpcore.ProblemError, match="columns"):
        model.decision_function(np.ones((2, 4)))


@pytest.mark.parametrize("bad,match", [
    (dict(nu=0.0), "nu"), (dict(nu=-1.0), "nu"), (dict(nu=float("nan")), "nu"),
    (dict(y=np.r_[np.ones(5), -np.ones(4), 2.0]), "two distinct"),
    (dict(y=np.ones(10)), "two distinct"),
    (dict(y=np.ones(7)), "shape mismatch"),
    (dict(A=np.full((10, 2), np.nan)), "NaN"),
    (dict(A=sp.csr_matrix(np.full((10, 2), np.inf))), "NaN"),
    (dict(A=np.ones(10)), "2-D"),
])
def test_asvm_dual_bad_input(bad: dict[str, object], match: str) -> None:
    args: dict[str, object] = dict(A=np.ones((10, 2)), y=np.r_[np.ones(5), -np.ones(5)], nu=1.0)
    args.update(bad)
    with pytest.raises(qpcore.ProblemError, match=match):
        asvm_dual(args["A"], args["y"], nu=args["nu"])  # type: ignore[arg-type]


def test_rounding_floor_ends_honestly() -> None:
    # found by hypothesis: ν large and spread columns put the rounding floor of g near 1.7e-6;
    # at tol 1e-6 the iterates toggled one degenerate variable between two faces with f moving by
    # an ulp, which the stall test used to read as progress (an endless loop)
    from pathlib import Path

    d = np.load(Path(__file__).parent / "data" / "asvm_rounding_floor.npz")
    m = d["d"].size
    qp = qpcore.QP(Q=DiagPlusLowRankQ(d["d"], d["F"], row_scale=d["s"], bias=-1.0), c=-np.ones(m),
                   lb=np.zeros(m), ub=np.full(m, np.inf))
    res = qpcore.solve(qp, ASVM(), tol=1e-6, max_iter=500)
    assert res.status in (qpcore.Status.CONVERGED, qpcore.Status.STALLED)
    assert res.converged == (res.kkt.measure <= 1e-6)
    ref = qpcore.solve(qp, GPCG(), tol=1e-6, max_iter=20_000)
    assert res.objective == pytest.approx(ref.objective, rel=1e-12)
