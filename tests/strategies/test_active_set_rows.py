"""The dense active set's engine for several rows (qpcore_strategies.active_set_rows): the factor updated
per pivot against a fresh factorization, Bland's rule against a textbook cycle, degenerate
vertices with many redundant constraints, the exact multipliers it proposes, and small
Maros–Meszaros problems in slack form."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
from hypothesis import assume, given, note
from hypothesis import strategies as st

import qpcore
import qpcore_strategies.active_set_rows as engine
from qpcore.testkit.generators_general import GeneralQP
from qpcore.testkit.reference import clarabel_reference
from qpcore.testkit.testing import general_problems
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.active_set_rows import RowsFactor, RowsWork

FloatArray = np.ndarray


# --- the factor: updates against a fresh factorization --------------------------------------------

def _fresh(fac: RowsFactor) -> RowsFactor:
    """A new factor of the same members, built from scratch (adds in the same order, S⁻¹ formed)."""
    new = RowsFactor(fac.Q, fac.A, fac.tau)
    for j in fac.members.tolist():
        assert new.add(j, strict=False) is None
    new.build_schur()
    return new


def _kkt_solution(fac: RowsFactor, r: FloatArray) -> tuple[FloatArray, FloatArray, float]:
    """The face system [[Q_FF, A_Fᵀ], [A_F, 0]] solved densely, and its condition number."""
    F = fac.members
    Q, A = fac.Q[np.ix_(F, F)], fac.A[:, F]
    m = A.shape[0]
    K = np.block([[Q, A.T], [A, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([r, np.zeros(m)]))
    return sol[:F.size], sol[F.size:], float(np.linalg.cond(K))


@given(seed=st.integers(0, 2**31), n=st.integers(4, 20), m=st.integers(1, 5), low_rank=st.booleans(),
       ops=st.integers(10, 40))
def test_factor_updates_agree_with_a_fresh_factorization(seed: int, n: int, m: int, low_rank: bool, ops: int) -> None:
    # a random walk of adds, removes and exchanges: after each, R is a Cholesky factor of
    # M = Q_FF + τA_FᵀA_F, a refused variable comes with a null direction of Q and A, and, while
    # A_F has full row rank, the refined face solve agrees with a fresh factorization and with
    # the face system solved densely
    m = min(m, n - 2)
    rng = np.random.default_rng(seed)
    H = rng.standard_normal((n, n // 3 if low_rank else n))
    Q = H @ H.T
    A = rng.standard_normal((m, n))
    fac = RowsFactor(Q, A, tau=1.0)
    for j in range(m):
        fac.add(j)
    fac.build_schur()
    for _ in range(ops):
        F = fac.members.copy()
        out = np.flatnonzero(~fac.inside)
        op = rng.integers(3)
        if op == 0 and out.size:
            j = int(rng.choice(out))
            v = fac.add(j)
            if v is not None:
                S = np.append(F, j)
                assert v[-1] == 1.0
                scale = float(np.abs(v).max())
                assert float(np.abs(Q[np.ix_(S, S)] @ v).max()) <= 1e-6 * scale * float(np.abs(Q).max())
                assert float(np.abs(A[:, S] @ v).max()) <= 1e-6 * scale * float(np.abs(A).max())
        elif op == 1 and F.size > m:
            fac.remove(int(rng.choice(F)))
        elif op == 2 and out.size and F.size:
            fac.exchange(int(rng.choice(F)), int(rng.choice(out)))
        else:
            continue
        k = fac.size
        G = fac.members
        M = Q[np.ix_(G, G)] + fac.tau * A[:, G].T @ A[:, G]
        R = np.triu(fac._R[:k, :k])
        assert float(np.abs(R.T @ R - M).max()) <= 1e-10 * float(np.abs(M).max())
        if not fac.full_rank:
            fac.build_schur()          # what the engine does (after completing the rank)
            continue
        assert np.linalg.matrix_rank(A[:, G]) == m
        r = rng.standard_normal(k)
        p_exact, mu_exact, cond = _kkt_solution(fac, r)
        if cond > 1e8:
            continue                   # the comparison below would measure the conditioning
        p, mu, _, _, ok = fac.refined_solve(r)
        p_new, mu_new, _, _, _ = _fresh(fac).refined_solve(r)
        assert ok
        size = 1.0 + float(np.abs(p_exact).max()) + float(np.abs(mu_exact).max())
        tol = 1e-12 * cond * size
        note(f"k={k} cond={cond:.2e}")
        np.testing.assert_allclose(p, p_exact, atol=tol)
        np.testing.assert_allclose(mu, mu_exact, atol=tol)
        np.testing.assert_allclose(p, p_new, atol=tol)
        np.testing.assert_allclose(mu, mu_new, atol=tol)


def test_factor_refuses_a_duplicate_and_returns_its_null_direction() -> None:
    rng = np.random.default_rng(1)
    H = rng.standard_normal((6, 3))
    Q = H @ H.T
    A = rng.standard_normal((2, 6))
    Q[:, 5], Q[5, :], A[:, 5] = Q[:, 0], Q[0, :], A[:, 0]      # variable 5 duplicates 0
    Q[5, 5] = Q[0, 0]
    fac = RowsFactor(Q, A, tau=1.0)
    for j in range(5):
        assert fac.add(j) is None
    v = fac.add(5)
    assert v is not None
    np.testing.assert_allclose(v, [-1, 0, 0, 0, 0, 1], atol=1e-9)
    assert fac.size == 5


def test_exchange_passes_a_vertex_without_losing_the_schur_complement() -> None:
    # at a vertex (|F| = m, A_F square) every member is needed for the rank: removing one alone
    # loses it, while the exchange for a column that restores it keeps S⁻¹ exact
    rng = np.random.default_rng(2)
    A = rng.standard_normal((3, 5))
    Q = np.zeros((5, 5))
    fac = RowsFactor(Q, A, tau=1.0)
    for j in range(3):
        fac.add(j)
    assert fac.build_schur()
    assert fac.critical(0) and fac.critical(1) and fac.critical(2)
    assert fac.exchange(1, 4)
    assert fac.full_rank
    r = rng.standard_normal(3)
    _, mu, _ = _kkt_solution(fac, r)
    np.testing.assert_allclose(fac.refined_solve(r)[1], mu, rtol=1e-10, atol=1e-12)


# --- degeneracy: Bland's rule after a stall ---------------------------------------------------------

def _beale() -> tuple[qpcore.QP, FloatArray]:
    """Beale's LP as in Chvátal (1983), with its slacks as variables: min −¾x₁ + 20x₂ − ½x₃ + 6x₄
    subject to ¼x₁ − 8x₂ − x₃ + 9x₄ + s₁ = 0, ½x₁ − 12x₂ − ½x₃ + 3x₄ + s₂ = 0, x₃ + s₃ = 1,
    x, s ≥ 0; the start x = 0 is a degenerate vertex (s₁ = s₂ = 0 on their bounds). Optimum −5/4."""
    C = np.array([[0.25, -8.0, -1.0, 9.0], [0.5, -12.0, -0.5, 3.0], [0.0, 0.0, 1.0, 0.0]])
    c = np.array([-0.75, 20.0, -0.5, 6.0, 0.0, 0.0, 0.0])
    A = np.hstack([C, np.eye(3)])
    qp = qpcore.QP(np.zeros((7, 7)), c, lb=np.zeros(7), ub=np.full(7, np.inf), A=A, b=np.array([0.0, 0.0, 1.0]))
    return qp, np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])


def test_bland_rule_ends_the_textbook_cycle(monkeypatch: pytest.MonkeyPatch) -> None:
    # with the textbook rules (Dantzig's entering rule, ties in the ratio test to the lowest
    # index) the simplex method cycles on Beale's example through six degenerate bases and never
    # leaves x = 0; the engine's own tie-break (the largest pivot) happens not to cycle there, so
    # the textbook one is put in its place to reproduce the cycle
    qp, x0 = _beale()
    monkeypatch.setattr(engine, "_largest_pivot", lambda cand, ad, idx: int(cand[np.argmin(idx[cand])]))
    off = qpcore.solve(qp, DenseActiveSet(stall_limit=-1), x0, tol=1e-10, max_iter=300)
    assert off.status is qpcore.Status.MAX_ITER
    assert off.objective == 0.0                       # it never moved
    for limit in (0, 5, 50):
        on = qpcore.solve(qp, DenseActiveSet(stall_limit=limit), x0, tol=1e-10, max_iter=300)
        assert on.status is qpcore.Status.CONVERGED
        assert on.stats["bland_steps"] > 0
        assert abs(on.objective + 1.25) <= 1e-12
    # the engine's own rules
    monkeypatch.undo()
    own = qpcore.solve(qp, DenseActiveSet(), x0, tol=1e-10, max_iter=300)
    assert own.status is qpcore.Status.CONVERGED and abs(own.objective + 1.25) <= 1e-12


def _apex_qp(seed: int, n: int, k: int, quadratic: bool) -> qpcore.QP:
    """min ½xᵀQx + cᵀx over −1 ≤ x ≤ 1 and k rows C x ≤ 0 that all pass through the vertex x = 0
    (k ≫ n: many redundant constraints active there); c points into the cone, so the method
    must leave the degenerate vertex."""
    rng = np.random.default_rng(seed)
    C = rng.integers(-3, 4, size=(k, n)).astype(float)
    d = rng.standard_normal(n)
    C[:, :] -= np.outer(np.maximum(C @ d, 0.0) + 1.0, d) / float(d @ d)   # every row ≤ −1 along d: a cone with interior
    c = -d + 0.1 * rng.standard_normal(n)
    Q = np.diag(rng.uniform(0.0, 1.0, n) * (rng.random(n) < 0.5)) if quadratic else np.zeros((n, n))
    return qpcore.QP(Q, c, lb=-np.ones(n), ub=np.ones(n), C=C, l=np.full(k, -np.inf), u=np.zeros(k))


@pytest.mark.parametrize("quadratic", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_degenerate_vertex_with_many_redundant_constraints(seed: int, quadratic: bool) -> None:
    # the start is the cone's apex, where k = 5n rows are active: with Bland's rule from the first
    # step without a move, and with the default stall limit, the run leaves it and ends at the
    # optimum (against Clarabel), certified by the multipliers the engine proposes
    n, k = 6, 30
    qp = _apex_qp(seed, n, k, quadratic)
    ref = clarabel_reference(qp)
    for limit in (0, 50):
        res = qpcore.solve(qp, DenseActiveSet(stall_limit=limit), np.zeros(n), tol=1e-9)
        assert res.status is qpcore.Status.CONVERGED
        assert res.kkt.measure <= 1e-9
        assert abs(res.objective - ref.objective) <= 1e-7 * (1.0 + abs(ref.objective))
        if limit == 0:
            assert res.stats["bland_steps"] > 0


# --- the multipliers the engine proposes ------------------------------------------------------------

def test_proposed_multipliers_certify_a_degenerate_optimum() -> None:
    # an optimum where more bounds are active than the face needs: the certificate's own estimate
    # has to choose among many multipliers; the face's exact ones certify at once
    qp = _apex_qp(7, 5, 25, quadratic=True)
    strategy = DenseActiveSet()
    res = qpcore.solve(qp, strategy, np.zeros(5), tol=1e-10, keep_state="all")
    assert res.status is qpcore.Status.CONVERGED
    form = qp.slack_form()
    proposal = strategy.multipliers(form.qp, res.state)
    assert proposal is not None
    lam, y = proposal
    assert lam.shape == (form.qp.m,) and y.size == 0
    z = np.concatenate([res.x, qp.C @ res.x])
    cert = qpcore.kkt(form.qp, z, form.qp.gradient(z), (lam, None))
    assert cert.measure <= 1e-10


def test_no_multipliers_proposed_before_a_certified_end() -> None:
    qp, x0 = _beale()
    strategy = DenseActiveSet()
    res = qpcore.solve(qp, strategy, x0, tol=1e-10, max_iter=1, keep_state="all")
    assert res.status is qpcore.Status.MAX_ITER
    assert strategy.multipliers(qp, res.state) is None


# --- Maros–Meszaros problems in slack form ----------------------------------------------------------

def _maros_meszaros(name: str) -> qpcore.QP:
    """A problem of the shared Maros–Meszaros set: l ≤ A x ≤ u with the variable bounds as the last n
    rows (±1e20 = ±inf); rows with l = u become equality rows, the others inequality rows (the
    strategy sees them as slack variables)."""
    from qpcore_formulations.data.files import data_dir

    d = scipy.io.loadmat(str(data_dir() / "maros_meszaros" / f"{name}.mat"))
    P = np.asarray(d["P"].toarray(), dtype=np.float64)
    q = np.asarray(d["q"], dtype=np.float64).ravel()
    A = np.asarray(d["A"].toarray(), dtype=np.float64)
    l, u = (np.asarray(d[k], dtype=np.float64).ravel() for k in ("l", "u"))
    l[l <= -1e20], u[u >= 1e20] = -np.inf, np.inf
    n = P.shape[0]
    rows, lo, hi = A[:-n], l[:-n], u[:-n]
    eq = lo == hi
    return qpcore.QP(0.5 * (P + P.T), q, lb=l[-n:], ub=u[-n:], A=rows[eq], b=lo[eq], C=rows[~eq], l=lo[~eq],
                     u=hi[~eq])


FAST = ["HS21", "HS35", "HS51", "GENHS28", "LOTSCHD", "QPTEST", "S268", "DUALC1", "CVXQP1_S", "QADLITTL",
        "QSCAGR7", "QSHARE2B", "QPCBLEND", "QSC205"]
SLOW = ["QSCFXM1", "QPCBOEI2", "QISRAEL", "QSCTAP1", "QPCSTAIR", "QFORPLAN", "QCAPRI", "QBANDM"]


def _check_maros_meszaros(name: str) -> None:
    qp = _maros_meszaros(name)
    tol = 1e-7
    res = qpcore.solve(qp, DenseActiveSet(), tol=tol, time_limit=60)
    assert res.status is qpcore.Status.CONVERGED, (res.status, res.kkt.measure, res.stats)
    assert res.kkt.ok(tol)
    ref = clarabel_reference(qp, tol=1e-9, fallback_tol=1e-7, check=False)
    if ref.status not in ("Solved", "AlmostSolved"):
        return                         # Clarabel does not finish QISRAEL; the certificate above stands
    # the active set ends at an exact vertex of its working set: the reference is the less
    # accurate of the two, so its own tolerance bounds the difference
    assert abs(res.objective - ref.objective) <= max(1e-6, 10 * ref.tol) * (1.0 + abs(ref.objective))


@pytest.mark.data
@pytest.mark.parametrize("name", FAST)
def test_maros_meszaros_small(name: str) -> None:
    _check_maros_meszaros(name)


@pytest.mark.data
@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_maros_meszaros_degenerate(name: str) -> None:
    _check_maros_meszaros(name)


def test_engine_state_is_released() -> None:
    qp, x0 = _beale()
    res = qpcore.solve(qp, DenseActiveSet(), x0, tol=1e-10)
    assert res.state.work_or_none(RowsWork) is None


# --- general QPs: degenerate, crowded, duplicated rows, scaled over decades ------------------------

@given(problem=general_problems(max_n=12, max_m=3, max_k=8))
def test_general_qps_certify_and_match_the_planted_optimum(problem: GeneralQP) -> None:
    # every feature of the generator: singular Q, zero multipliers on active constraints, optima
    # with more active constraints than variables, duplicated and dependent rows, fixed and free
    # variables, rows and columns scaled over up to six decades
    qp = problem.qp("auto")
    x_ref = problem.optimum.x if problem.optimum is not None else problem.point
    scale = max(1.0, float(np.abs(problem.c).max()), float((np.abs(problem.Q) @ np.abs(x_ref)).max()))
    tol = 1e-9 * scale
    res = qpcore.solve(qp, DenseActiveSet(), tol=tol, max_iter=20_000)
    note(f"{res.status} {res.kkt} {res.stats}")
    assert res.status is qpcore.Status.CONVERGED
    assert res.kkt.ok(tol)
    if problem.optimum is not None:
        xs = problem.optimum.x
        f_star = qp.objective(xs)
        size = 1.0 + float(np.abs(xs) @ (np.abs(problem.Q) @ np.abs(xs))) + float(np.abs(problem.c) @ np.abs(xs))
        # what the certificate allows (convexity: f(x) − f* ≤ gᵀ(x − x*), split over the KKT
        # terms): the stationarity times the distance, the complementarity per constraint, and
        # f ≥ f* up to the multipliers times the primal residual
        d = res.x - xs
        allowed = (res.kkt.measure * (float(np.abs(d).sum()) + float(np.abs(problem.C @ d).sum()))
                   + (problem.n + problem.k) * res.kkt.complementarity
                   + res.kkt.primal * (float(np.abs(res.multipliers).sum()) + float(np.abs(res.kkt.y).sum())
                                       + float(np.abs(res.z).sum())))
        assert abs(res.objective - f_star) <= 1e-9 * size + allowed
