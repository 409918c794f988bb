"""The exact active-set finish (qpcore_strategies.polish): from loose optima of Clarabel, OSQP and PIQP
to KKT residuals at rounding level, block pivoting's recovery from wrong active sets, its
safeguard, and the rule that a finish never makes a point worse."""

from __future__ import annotations

import pathlib
import time
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore import QP
from qpcore_strategies.polish import (ROUNDING_LEVEL, Polish, PolishFinish, _Data, _QPFace, block_principal_pivoting, polish,
                               polish_arrays, residuals)

qpsolvers = pytest.importorskip("qpsolvers")

# OSQP's notice about a future default of its own
pytestmark = pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")

Arrays = tuple[Any, Any, Any, Any, Any, Any, Any, Any, Any]   # Q, c, lb, ub, A, b, C, l, u


# --- problems with a known optimum ------------------------------------------------------------------


def _problem(rng: np.random.Generator, n: int = 30, m: int = 3, k: int = 20, *, rank: int | None = None,
             degenerate: bool = False, duplicate: int = 0, fixed: int = 0, scale: float = 1.0) -> tuple[Arrays, np.ndarray]:
    """(Q, c, lb, ub, A, b, C, l, u) with an optimum x* built in: about a third of the bounds and
    of the rows active, multipliers of the right sign (zero on some active ones when
    ``degenerate``), ``duplicate`` active rows repeated, ``fixed`` variables with lb = ub."""
    r = n if rank is None else rank
    H = rng.standard_normal((n, r))
    Q = scale * H @ H.T / n
    xs = rng.standard_normal(n)
    lb = xs - rng.uniform(0.1, 1.0, n)
    ub = xs + rng.uniform(0.1, 1.0, n)
    ub[rng.random(n) < 0.2] = np.inf
    at_lo = rng.random(n) < 0.2
    at_hi = ~at_lo & np.isfinite(ub) & (rng.random(n) < 0.2)
    xs[at_lo], xs[at_hi] = lb[at_lo], ub[at_hi]
    fix = rng.choice(n, size=fixed, replace=False)
    lb[fix] = ub[fix] = xs[fix]
    A = rng.standard_normal((m, n))
    b = A @ xs
    C = rng.standard_normal((k, n))
    Cx = C @ xs
    l, u = Cx - rng.uniform(0.1, 1.0, k), Cx + rng.uniform(0.1, 1.0, k)
    u[rng.random(k) < 0.2] = np.inf
    row_lo = rng.random(k) < 0.3
    row_hi = ~row_lo & np.isfinite(u) & (rng.random(k) < 0.3)
    l[row_lo], u[row_hi] = Cx[row_lo], Cx[row_hi]

    def size(count: int) -> np.ndarray:
        v = rng.uniform(0.1, 1.0, count) * scale
        if degenerate:
            v[rng.random(count) < 0.4] = 0.0
        return v

    z = np.zeros(n)
    z[at_lo], z[at_hi] = size(int(at_lo.sum())), -size(int(at_hi.sum()))
    z[fix] = rng.standard_normal(fixed) * scale
    y = np.zeros(k)
    y[row_lo], y[row_hi] = size(int(row_lo.sum())), -size(int(row_hi.sum()))
    lam = rng.standard_normal(m) * scale
    c = -Q @ xs + A.T @ lam + C.T @ y + z
    if duplicate:
        active = np.flatnonzero(row_lo | row_hi)[:duplicate]
        C, l, u = np.vstack([C, C[active]]), np.concatenate([l, l[active]]), np.concatenate([u, u[active]])
    return (Q, c, lb, ub, A, b, C, l, u), xs


def _objective(data: Arrays, x: np.ndarray) -> float:
    Q, c = data[0], data[1]
    return float(0.5 * x @ (Q @ x) + c @ x)


def _qpsolvers(data: Arrays) -> tuple[Any, Any]:
    """The problem in qpsolvers' form (G x ≤ h, A x = b, lb ≤ x ≤ ub), and the map from its
    solution to (x, λ, y, z) in qpcore's convention."""
    Q, c, lb, ub, A, b, C, l, u = data
    C = C.toarray() if sp.issparse(C) else np.asarray(C)
    A = A.toarray() if sp.issparse(A) else np.asarray(A)
    eq = np.flatnonzero(l == u)
    up = np.flatnonzero(np.isfinite(u) & (l != u))
    lo = np.flatnonzero(np.isfinite(l) & (l != u))
    G, h = np.vstack([C[up], -C[lo]]), np.concatenate([u[up], -l[lo]])
    E, e = np.vstack([A, C[eq]]), np.concatenate([b, l[eq]])
    problem = qpsolvers.Problem(sp.csc_matrix(Q), c, sp.csc_matrix(G) if G.shape[0] else None,
                                h if G.shape[0] else None, sp.csc_matrix(E) if E.shape[0] else None,
                                e if E.shape[0] else None, lb, ub)
    m, k = A.shape[0], C.shape[0]

    def back(sol: Any) -> tuple[np.ndarray, ...]:
        # qpsolvers: Px + q + Gᵀz + Aᵀy + z_box = 0; qpcore: Qx + c − Aᵀλ − Cᵀy − z = 0
        ye = np.zeros(E.shape[0]) if sol.y is None else np.asarray(sol.y)
        zg = np.zeros(G.shape[0]) if sol.z is None else np.asarray(sol.z)
        y = np.zeros(k)
        y[eq] = -ye[m:]
        y[up] -= zg[:up.size]
        y[lo] += zg[up.size:]
        zbox = np.zeros(len(c)) if sol.z_box is None else np.asarray(sol.z_box)
        return np.asarray(sol.x), -ye[:m], y, -zbox

    return problem, back


SOLVER_LOOSE = {
    "osqp": dict(eps_abs=1e-4, eps_rel=1e-4, polishing=False, max_iter=100_000),
    "clarabel": dict(tol_gap_abs=1e-4, tol_gap_rel=1e-4, tol_feas=1e-4),
}
CLARABEL_TIGHT = dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, tol_ktratio=1e-9)


def _solve(data: Arrays, solver: str, **kw: Any) -> tuple[np.ndarray, ...]:
    problem, back = _qpsolvers(data)
    sol = qpsolvers.solve_problem(problem, solver=solver, **kw)
    assert sol.found, f"{solver} failed"
    out: tuple[np.ndarray, ...] = back(sol)
    return out


def _measure(data: Arrays, x: np.ndarray, lam: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
    return residuals(*data, x, lam, y, z).measure


KINDS: dict[str, dict[str, Any]] = {
    "strictly convex": {},
    "semidefinite": dict(rank=12),
    "degenerate": dict(degenerate=True),
    "duplicated rows": dict(duplicate=4, degenerate=True),
    "fixed variables": dict(fixed=5),
    "scaled up": dict(scale=1e3),
    "scaled down": dict(scale=1e-3),
    "everything": dict(rank=15, degenerate=True, duplicate=3, fixed=4),
}


# --- from loose optima to the exact one -------------------------------------------------------------


@pytest.mark.parametrize("solver", ["osqp", "clarabel"])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_polish_from_a_loose_optimum(solver: str, kind: str, seed: int) -> None:
    """From a solution at eps 1e-4: residuals at rounding level (relative to the data's scale),
    the objective of Clarabel at 1e-11 and of the optimum built in."""
    data, xs = _problem(np.random.default_rng(seed), **KINDS[kind])
    x, lam, y, z = _solve(data, solver, **SOLVER_LOOSE[solver])
    res = polish_arrays(*data, x, (lam, y, z))
    assert res.accepted, res.message
    assert res.residuals.measure <= 1e-10, (res.message, str(res.residuals))
    assert res.residuals.measure <= res.start.measure
    # the returned multipliers are the ones the residuals were measured with
    assert _measure(data, res.x, res.lam, res.y, res.z) == pytest.approx(res.residuals.measure, abs=1e-15)
    f, f_star = _objective(data, res.x), _objective(data, xs)
    xt, *_ = _solve(data, "clarabel", **CLARABEL_TIGHT)
    scale = max(1.0, abs(f_star))
    assert abs(f - f_star) <= 1e-10 * scale
    assert abs(f - _objective(data, xt)) <= 1e-8 * scale
    if kind == "strictly convex":
        assert np.abs(res.x - xs).max() <= 1e-9 * max(1.0, np.abs(xs).max())
    assert res.rounds <= 2 * 10


def test_sparse_and_dense_factorizations_agree() -> None:
    data, xs = _problem(np.random.default_rng(7), n=60, k=40, rank=30, degenerate=True)
    x, lam, y, z = _solve(data, "osqp", **SOLVER_LOOSE["osqp"])
    sparse_data = (sp.csr_matrix(data[0]), *data[1:4], sp.csr_matrix(data[4]), data[5], sp.csr_matrix(data[6]),
                   *data[7:])
    dense = polish_arrays(*data, x, (lam, y, z), method="dense")
    sparse = polish_arrays(*sparse_data, x, (lam, y, z), method="sparse")
    for res in (dense, sparse):
        assert res.accepted and res.residuals.measure <= 1e-10
    assert abs(_objective(data, dense.x) - _objective(data, sparse.x)) <= 1e-11 * max(1.0, abs(_objective(data, xs)))


def test_without_multipliers() -> None:
    """Only a point: the guess from distances, least-squares multipliers."""
    data, xs = _problem(np.random.default_rng(3))
    x, *_ = _solve(data, "clarabel", **SOLVER_LOOSE["clarabel"])
    res = polish_arrays(*data, x)
    assert res.accepted and res.residuals.measure <= 1e-10
    assert np.abs(res.x - xs).max() <= 1e-9 * max(1.0, np.abs(xs).max())


# --- the face's rows at the rounding of their terms --------------------------------------------------

EPS = float(np.finfo(np.float64).eps)


def _badly_scaled(rng: np.random.Generator, n: int = 40, m: int = 4,
                  k: int = 30) -> tuple[Arrays, np.ndarray, np.ndarray, np.ndarray]:
    """(data, x*, λ*, y*): a planted optimum whose rows are scaled by 1e-3 to 1e3, whose
    variables range over 1e-2 to 1e2 and whose active multipliers over 1 to 1e7 (an interior
    point's multipliers on a degenerate LP-like face), a semidefinite Q, three fixed variables."""
    H = rng.standard_normal((n, n // 2))
    Q = H @ H.T / n
    xs = rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2, n)
    lb = xs - rng.uniform(0.1, 1.0, n) * np.abs(xs)
    ub = xs + rng.uniform(0.1, 1.0, n) * np.abs(xs)
    at_lo = rng.random(n) < 0.25
    at_hi = ~at_lo & (rng.random(n) < 0.25)
    fix = rng.choice(n, 3, replace=False)
    xs[at_lo], xs[at_hi] = lb[at_lo], ub[at_hi]
    lb[fix] = ub[fix] = xs[fix]
    A = rng.standard_normal((m, n)) * 10.0 ** rng.uniform(-3, 3, (m, 1))
    b = A @ xs
    C = rng.standard_normal((k, n)) * 10.0 ** rng.uniform(-3, 3, (k, 1))
    C[:, rng.random(n) < 0.5] = 0.0
    Cx = C @ xs
    l = Cx - np.abs(Cx) * rng.uniform(0.1, 1.0, k) - 1.0
    u = Cx + np.abs(Cx) * rng.uniform(0.1, 1.0, k) + 1.0
    row_lo = rng.random(k) < 0.25
    row_hi = ~row_lo & (rng.random(k) < 0.33)
    l[row_lo], u[row_hi] = Cx[row_lo], Cx[row_hi]

    def big(count: int) -> np.ndarray:
        return 10.0 ** rng.uniform(0, 7, count)

    z = np.zeros(n)
    z[at_lo], z[at_hi] = big(int(at_lo.sum())), -big(int(at_hi.sum()))
    z[fix] = rng.standard_normal(3) * 1e6
    y = np.zeros(k)
    y[row_lo], y[row_hi] = big(int(row_lo.sum())), -big(int(row_hi.sum()))
    lam = rng.standard_normal(m) * 1e6
    c = -Q @ xs + A.T @ lam + C.T @ y + z
    return (Q, c, lb, ub, A, b, C, l, u), xs, lam, y


def _active_rows_over_rounding(data: Arrays, x: np.ndarray, y: np.ndarray) -> float:
    """The largest |E_i x − side_i| over the active rows (A x = b, rows with l = u or a nonzero
    multiplier), in units of ε·(Σ_j |E_ij x_j| + |side_i|): the rounding of the row's terms."""
    _, _, _, _, A, b, C, l, u = data
    A, C = (M.toarray() if sp.issparse(M) else np.asarray(M) for M in (A, C))
    active = (y != 0) | (l == u)
    side = np.where(y > 0, l, u)[active]
    E, e = np.vstack([A, C[active]]), np.concatenate([b, side])
    terms = EPS * (np.abs(E) @ np.abs(x) + np.abs(e))
    # a row whose terms are all 0 is met exactly
    return float((np.abs(E @ x - e) / np.maximum(terms, np.finfo(np.float64).tiny)).max(initial=0.0))


def _assert_exact_face(data: Arrays, res: Any, rows_within: float = 4.0) -> None:
    """An accepted face point: its active rows at the rounding of their terms, its fixed
    variables and active bounds exactly on them, bound multipliers of the side x is at."""
    lb, ub = data[2], data[3]
    assert res.accepted and res.converged, res.message
    assert _active_rows_over_rounding(data, res.x, res.y) <= rows_within
    assert (res.x[lb == ub] == lb[lb == ub]).all()
    assert (res.x[res.z > 0] == lb[res.z > 0]).all() and (res.x[res.z < 0] == ub[res.z < 0]).all()


@pytest.mark.parametrize("seed", range(6))
def test_face_rows_at_rounding_on_a_badly_scaled_problem(seed: int) -> None:
    """The start an interior point ends at: the optimum's active set is clear, its rows are off by
    1e-10 relative and its multipliers reach 1e7. The face's refinement once judged the rows by
    a norm over the multipliers too, and a start within 4ε of that norm kept its rows off by
    1e5 times their rounding (1e-7 absolute, times 1e7 in the duality gap)."""
    rng = np.random.default_rng(300 + seed)
    data, xs, lam, y = _badly_scaled(rng)
    x0 = np.clip(xs + 1e-10 * (1.0 + np.abs(xs)) * rng.standard_normal(xs.size), data[2], data[3])
    start = _active_rows_over_rounding(data, x0, y)
    assert start > 1e4                                   # the start's rows are well above rounding
    res = polish_arrays(*data, x0, (lam, y))
    _assert_exact_face(data, res)
    # the dual residual at the rounding of stationarity's terms, the gap at the rounding of its own
    rel_p, rel_d, rel_g = res.residuals.relative
    assert rel_p <= 1e-15 and rel_d <= 1e-14 and rel_g <= 1e-13, str(res.residuals)
    sparse_data = (sp.csr_matrix(data[0]), *data[1:4], sp.csr_matrix(data[4]), data[5], sp.csr_matrix(data[6]),
                   *data[7:])
    _assert_exact_face(sparse_data, polish_arrays(*sparse_data, x0, (lam, y), method="sparse"))


def test_multipliers_of_rows_of_fixed_variables_leave_the_gap() -> None:
    """A row whose variables are all at bounds (x₁ − x₂ = b₀ with x₁ = x₂ = 0 at the optimum) and a
    right-hand side of rounding size, 1e-15: its multiplier is free in [0, 2e6] and the start
    says 1e6, which times the row's residual is a gap of 1e-9. The finish settles it at the end of
    that range nearest 0 (within 1% of the way), the bound multipliers keeping their signs."""
    Q = np.diag([0.0, 0.0, 1.0])
    c = np.array([2e6, 0.0, -1.0])
    lb, ub = np.zeros(3), np.array([np.inf, np.inf, 10.0])
    A, b = np.array([[1.0, -1.0, 0.0]]), np.array([1e-15])
    x0 = np.array([1e-12, 2e-12, 1.0 + 1e-9])
    res = polish_arrays(Q, c, lb, ub, A, b, None, None, None, x0, (np.array([1e6]), np.zeros(0)))
    assert res.accepted and res.converged, res.message
    assert res.x.tolist() == [0.0, 0.0, 1.0]
    assert 0.0 <= res.lam[0] <= 0.011e6                 # was 1e6: the nearest end of [0, 2e6], 1% short
    assert res.z[0] > 0 and res.z[1] >= 0
    assert res.residuals.gap <= 2e-11 and res.residuals.dual <= 1e-9, str(res.residuals)


@pytest.mark.data
@pytest.mark.parametrize("start", ["clarabel", "interior-point"])
def test_qadlittl_face_at_rounding(start: str) -> None:
    """QADLITTL, from Clarabel at 1e-6 and from our interior point method: the finish finds the
    optimum's active set, its rows at the rounding of their terms and the duality gap within
    qpbenchmark's high accuracy (1e-9 absolute; the rows were off by 3e-10, the gap 3e-7 from the
    interior point, 4e-9 from Clarabel)."""
    data = _maros_meszaros("QADLITTL")
    if start == "clarabel":
        x, lam, y, z = _solve(data, "clarabel", tol_gap_abs=1e-6, tol_gap_rel=1e-6, tol_feas=1e-6)
        multipliers: tuple[Any, ...] = (lam, y, z)
    else:
        from qpcore_strategies.interior_point import InteriorPoint

        qp = qpcore.QP(data[0], *data[1:6], C=data[6], l=data[7], u=data[8])
        r = qpcore.solve(qp, InteriorPoint(), tol=1e-9)
        x, multipliers = r.x, (r.kkt.multipliers, r.kkt.y)
    res = polish_arrays(*data, x, multipliers)
    _assert_exact_face(data, res)
    assert res.residuals.primal <= 1e-12 and res.residuals.dual <= 1e-9 and res.residuals.gap <= 1e-9, \
        str(res.residuals)


# --- wrong active sets -----------------------------------------------------------------------------


def _true_state(data: Arrays, xs: np.ndarray) -> np.ndarray:
    Q, c, lb, ub, A, b, C, l, u = data
    value = np.concatenate([xs, C @ xs])
    lo, hi = np.concatenate([lb, l]), np.concatenate([ub, u])
    state = np.zeros(value.size, dtype=np.int8)
    state[np.abs(value - hi) <= 1e-12 * np.maximum(1, np.abs(value))] = 1
    state[np.abs(value - lo) <= 1e-12 * np.maximum(1, np.abs(value))] = -1
    return state


def _face(data: Arrays, x0: np.ndarray) -> tuple[_QPFace, np.ndarray, np.ndarray, np.ndarray]:
    Q, c, lb, ub, A, b, C, l, u = data
    d = _Data(Q=Q, c=c, lb=lb, ub=ub, A=A, b=b, C=C, l=l, u=u)
    face = _QPFace(d, x0, np.zeros(len(b)), np.zeros(len(l)), reg=1e-9, max_refine=30, method="dense", dense_max=600)
    lo, hi = np.concatenate([lb, l]), np.concatenate([ub, u])
    return face, lo, hi, lo == hi


def _flipped(rng: np.random.Generator, data: Arrays, true: np.ndarray, share: float) -> np.ndarray:
    """``true`` with a share of the sides flipped (active ↔ inactive, at a finite side)."""
    lo, hi = np.concatenate([data[2], data[7]]), np.concatenate([data[3], data[8]])
    wrong = true.copy()
    for i in np.flatnonzero((rng.random(true.size) < share) & (lo != hi)):
        wrong[i] = 0 if wrong[i] else (-1 if np.isfinite(lo[i]) else 1)
    return wrong


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["strictly convex", "semidefinite", "degenerate"])
def test_block_pivoting_recovers_from_a_wrong_active_set(seed: int, kind: str) -> None:
    """A third of the sides flipped, with general rows: block moves with the ratio step find the
    optimum's face in a few rounds (plain block exchanges do not: with rows the problem is not a
    P-matrix one, and one missing side sends the face's solution through many others)."""
    rng = np.random.default_rng(100 + seed)
    data, xs = _problem(rng, n=25, m=2, k=15, **KINDS[kind])
    true = _true_state(data, xs)
    wrong = _flipped(rng, data, true, 1 / 3)
    assert (wrong != true).sum() >= 5
    face, lo, hi, pinned = _face(data, xs + 0.01 * rng.standard_normal(xs.size))
    out = block_principal_pivoting(face, wrong, lo, hi, pinned, max_rounds=20, tol_value=1e-10, tol_mult=1e-10,
                                   base=np.concatenate([xs, data[6] @ xs]))
    assert out.converged, out.violators
    assert out.violators[-1] == 0 and out.rounds == len(out.violators) <= 12
    f, f_star = _objective(data, out.solution.x), _objective(data, xs)
    assert abs(f - f_star) <= 1e-10 * max(1.0, abs(f_star))
    if kind == "strictly convex":
        assert np.abs(out.solution.x - xs).max() <= 1e-8 * max(1.0, np.abs(xs).max())


@pytest.mark.parametrize("seed", range(4))
def test_plain_block_pivoting_recovers_on_a_box_qp(seed: int) -> None:
    """Bounds only, strictly convex (a P-matrix problem): plain block exchanges with Murty's
    safeguard, no ratio step, from a third of the sides flipped."""
    rng = np.random.default_rng(200 + seed)
    data, xs = _problem(rng, n=40, m=0, k=0)
    true = _true_state(data, xs)
    wrong = _flipped(rng, data, true, 1 / 3)
    face, lo, hi, pinned = _face(data, xs)
    out = block_principal_pivoting(face, wrong, lo, hi, pinned, max_rounds=100, tol_value=1e-10, tol_mult=1e-10)
    assert out.converged and out.ratio_steps == 0, out.violators
    assert np.abs(out.solution.x - xs).max() <= 1e-8 * max(1.0, np.abs(xs).max())


def test_polish_recovers_from_misleading_multipliers() -> None:
    """The optimum moved a little, with multipliers of random sizes and signs: the first guess is
    wrong by many sides, block pivoting finds the optimum."""
    rng = np.random.default_rng(11)
    data, xs = _problem(rng)
    x0 = xs + 1e-3 * rng.standard_normal(xs.size)
    k = len(data[7])
    mult = (rng.standard_normal(len(data[5])), rng.standard_normal(k), rng.standard_normal(xs.size))
    res = polish_arrays(*data, x0, mult, max_rounds=30)
    assert res.accepted and res.converged, res.violators
    assert res.violators[0] > 3
    assert np.abs(res.x - xs).max() <= 1e-9 * max(1.0, np.abs(xs).max())


# Murty's safeguard: a strictly convex NNLS-shaped problem (Q = MMᵀ + 0.01 I, x ≥ 0) on which plain
# block exchanges from the all-free start cycle between two sets of two violators
_M = np.array([[1.6751111456016605, 0.47351359193198483, -0.5382121824776552, 1.1917317991675267, 0.8265078151222366],
               [-1.2911379036088988, 0.863462029910613, -0.4854027895893783, -1.0920253895152154, 1.9896554436157645],
               [-1.3041282723521213, 0.5540266870963606, 0.4588784163634742, 0.5524350530799985, 1.3342586427358174],
               [-0.23854630014564862, 0.26800376597158193, 1.8066344490880963, 0.5311758575510744, -0.9786570038143206],
               [1.195060499458838, 0.3358977971810749, 1.3598385812411709, 1.9356006184993855, -0.9522849075659109]])
_c = np.array([0.06092896822192344, -0.9537877302286293, -0.2561792537599595, -2.2817522451380174, -1.379296878915115])


def test_murty_safeguard_ends_a_cycle() -> None:
    n = 5
    data = (_M @ _M.T + 0.01 * np.eye(n), _c, np.zeros(n), np.full(n, np.inf), np.zeros((0, n)), np.zeros(0),
            np.zeros((0, n)), np.zeros(0), np.zeros(0))
    start = np.zeros(n, dtype=np.int8)
    face, lo, hi, pinned = _face(data, np.zeros(n))
    plain = block_principal_pivoting(face, start, lo, hi, pinned, max_rounds=50, backup=10**9,
                                     tol_value=1e-12, tol_mult=1e-12)
    assert not plain.converged and plain.single_pivots == 0
    assert len(set(plain.violators[2:])) == 1          # stuck: the same count round after round
    face, lo, hi, pinned = _face(data, np.zeros(n))
    safe = block_principal_pivoting(face, start, lo, hi, pinned, max_rounds=50, backup=3,
                                    tol_value=1e-12, tol_mult=1e-12)
    assert safe.converged and safe.single_pivots >= 1
    xt, *_ = _solve(data, "clarabel", **CLARABEL_TIGHT)
    assert np.abs(safe.solution.x - xt).max() <= 1e-7
    assert residuals(*data, safe.solution.x, np.zeros(0), np.zeros(0), safe.solution.z).measure <= 1e-12


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 8), backup=st.integers(0, 3))
def test_safeguarded_pivoting_ends_on_strictly_convex_box_qps(seed: int, n: int, backup: int) -> None:
    """The guarantee: on a strictly convex QP with bounds only (a P-matrix problem), block moves
    with Murty's safeguard end at the optimum from any start, here within 100 rounds."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    Q = M @ M.T + 1e-2 * np.eye(n)
    lb = np.where(rng.random(n) < 0.8, -rng.random(n), -np.inf)
    ub = np.where(rng.random(n) < 0.8, rng.random(n), np.inf)
    data = (Q, 3 * rng.standard_normal(n), lb, ub, np.zeros((0, n)), np.zeros(0), np.zeros((0, n)), np.zeros(0),
            np.zeros(0))
    start = rng.integers(-1, 2, n).astype(np.int8)
    start[(start < 0) & ~np.isfinite(lb)] = 0
    start[(start > 0) & ~np.isfinite(ub)] = 0
    face, lo, hi, pinned = _face(data, np.zeros(n))
    out = block_principal_pivoting(face, start, lo, hi, pinned, max_rounds=100, backup=backup, tol_value=1e-11,
                                   tol_mult=1e-11)
    assert out.converged, out.violators
    assert residuals(*data, np.clip(out.solution.x, lb, ub), np.zeros(0), np.zeros(0),
                     out.solution.z).measure <= 1e-10


# --- never worse -----------------------------------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), size=st.sampled_from([0.0, 1e-14, 1e-8, 1e-3, 1.0, 100.0]),
       with_multipliers=st.booleans(), kind=st.sampled_from(list(KINDS)))
def test_a_bad_start_never_gets_worse(seed: int, size: float, with_multipliers: bool, kind: str) -> None:
    """Any point, however bad, and any multipliers: the result's residuals are never above the
    input's, and a refused finish hands the input back unchanged."""
    rng = np.random.default_rng(seed)
    data, xs = _problem(rng, n=12, m=2, k=8, **KINDS[kind])
    x0 = xs + size * rng.standard_normal(xs.size)
    mult = ((rng.standard_normal(2), rng.standard_normal(len(data[7])), rng.standard_normal(12))
            if with_multipliers else None)
    res = polish_arrays(*data, x0, mult, max_rounds=3)
    # never worse, but for an exact face of the optimum's active set at the input's rounding level
    rounding = max(10.0 * res.start.measure, ROUNDING_LEVEL)
    if not res.accepted:
        assert np.array_equal(res.x, x0)
        assert res.residuals == res.start
    elif res.residuals.measure >= res.start.measure:
        assert res.converged and res.residuals.measure <= rounding


def test_an_exact_optimum_stays() -> None:
    data, xs = _problem(np.random.default_rng(5))
    exact = polish_arrays(*data, _solve(data, "clarabel", **SOLVER_LOOSE["clarabel"])[0])
    again = polish_arrays(*data, exact.x, (exact.lam, exact.y, exact.z))
    assert again.residuals.measure <= exact.residuals.measure
    assert np.abs(again.x - exact.x).max() <= 1e-12 * max(1.0, np.abs(xs).max())


# --- in qpcore's terms: the QP, the certificate, the stage -------------------------------------------


def _qp(data: Arrays) -> QP:
    Q, c, lb, ub, A, b, C, l, u = data
    return QP(Q, c, lb, ub, A, b, C=C, l=l, u=u)


def test_polish_on_a_qp_certifies() -> None:
    data, xs = _problem(np.random.default_rng(21), degenerate=True, duplicate=2)
    qp = _qp(data)
    x, lam, y, z = _solve(data, "osqp", **SOLVER_LOOSE["osqp"])
    res = polish(qp, x, (lam, y))
    assert res.accepted and res.residuals.measure <= 1e-10
    cert = qpcore.kkt(qp, res.x, multipliers=res.multipliers)
    assert cert.feasible() and cert.measure <= 1e-9, cert
    assert not qpcore.kkt(qp, x).measure <= 1e-9     # the loose point did not certify


def test_polish_stage_and_finish() -> None:
    data, xs = _problem(np.random.default_rng(22))
    qp = _qp(data)
    x, lam, y, z = _solve(data, "clarabel", **SOLVER_LOOSE["clarabel"])
    result = qpcore.solve(qp, Polish(), x0=x, tol=1e-9)
    assert result.status is qpcore.Status.CONVERGED, result.stats
    assert result.objective == pytest.approx(_objective(data, xs), rel=1e-12, abs=1e-12)
    assert result.stats["polish_accepted"] == 1

    state = qpcore.State(x=x.copy(), g=qp.gradient(x), status=np.zeros(qp.n, dtype=np.int8))
    out = PolishFinish().apply(qp, state, (lam, y, z))
    assert out.accepted and np.array_equal(state.x, out.x)
    assert np.allclose(state.g, qp.gradient(out.x), rtol=0, atol=1e-12)
    assert state.counters["polish_rounds"] == out.rounds


# --- Maros–Meszaros, from PIQP at 1e-6 ----------------------------------------------------------------


def _maros_meszaros(name: str) -> Arrays:
    import scipy.io
    from qpcore_formulations.data.files import data_dir

    path = pathlib.Path(data_dir()) / "maros_meszaros" / f"{name}.mat"
    if not path.exists():
        pytest.skip(f"{path} not found")
    mat = scipy.io.loadmat(str(path))
    P = sp.csr_matrix(mat["P"], dtype=np.float64)
    n = P.shape[0]
    M = sp.csr_matrix(mat["A"], dtype=np.float64)
    lo, hi = mat["l"].ravel().astype(np.float64), mat["u"].ravel().astype(np.float64)
    lo[lo <= -1e20], hi[hi >= 1e20] = -np.inf, np.inf
    rows = M.shape[0] - n                 # the last n rows are the bounds
    eq = lo[:rows] == hi[:rows]
    return (P, mat["q"].ravel().astype(np.float64), lo[rows:], hi[rows:], M[:rows][eq], lo[:rows][eq],
            M[:rows][~eq], lo[:rows][~eq], hi[:rows][~eq])


MM_FAST = ["HS21", "HS35", "DUALC1", "GENHS28", "CVXQP1_S", "QADLITTL", "QPCBLEND", "QSCAGR7", "QSHARE2B",
           "VALUES"]


@pytest.mark.data
@pytest.mark.parametrize("name", MM_FAST)
def test_maros_meszaros_from_piqp(name: str) -> None:
    pytest.importorskip("piqp")
    data = _maros_meszaros(name)
    x, lam, y, z = _solve(data, "piqp", eps_abs=1e-6, eps_rel=0.0)
    t0 = time.perf_counter()
    res = polish_arrays(*data, x, (lam, y, z))
    assert time.perf_counter() - t0 < 5.0
    assert res.accepted, res.message
    assert res.residuals.measure <= 1e-10, str(res.residuals)
    f = _objective(data, res.x)
    xt, *_ = _solve(data, "clarabel", **CLARABEL_TIGHT)
    assert abs(f - _objective(data, xt)) <= 1e-7 * max(1.0, abs(f))


def _start(data: Arrays) -> tuple[str, tuple[np.ndarray, ...]]:
    """PIQP's solution at eps 1e-6; where PIQP fails (QISRAEL, QPCBOEI2), ProxQP's, else Clarabel's."""
    problem, back = _qpsolvers(data)
    for solver, kw in (("piqp", dict(eps_abs=1e-6, eps_rel=0.0)), ("proxqp", dict(eps_abs=1e-6, eps_rel=0.0)),
                       ("clarabel", dict(tol_gap_abs=1e-6, tol_gap_rel=1e-6, tol_feas=1e-6))):
        sol = qpsolvers.solve_problem(problem, solver=solver, **kw)
        if sol.found and sol.x is not None:
            return solver, back(sol)
    raise AssertionError("no solver found a start")


@pytest.mark.data
def test_maros_meszaros_all() -> None:
    """All 31 problems from a 1e-6 solution: every one ends at relative residuals ≤ 1e-10 (the
    input kept where the finish does not improve it), and all but QFORPLAN (17 rounds from
    PIQP's point) are polished within the default rounds. Prints the table (``pytest -s``)."""
    pytest.importorskip("piqp")
    from qpcore_formulations.data.files import data_dir

    names = sorted(p.stem for p in (pathlib.Path(data_dir()) / "maros_meszaros").glob("*.mat"))
    assert len(names) == 31
    refused = []
    print(f"\n{'problem':9s} {'start':8s} {'before':>8s} {'after':>8s}  abs (primal dual gap) after    rounds  ms")
    for name in names:
        data = _maros_meszaros(name)
        solver, (x, lam, y, z) = _start(data)
        res = polish_arrays(*data, x, (lam, y, z))
        r = res.residuals
        print(f"{name:9s} {solver:8s} {res.start.measure:8.1e} {r.measure:8.1e}  {r.primal:8.1e} {r.dual:8.1e} "
              f"{r.gap:8.1e}  {res.rounds:3d}  {res.seconds * 1e3:6.1f}")
        assert r.measure <= max(1e-10, res.start.measure)
        if not res.accepted:
            refused.append(name)
    assert set(refused) <= {"QFORPLAN"}
    data = _maros_meszaros("QFORPLAN")
    _, (x, lam, y, z) = _start(data)
    longer = polish_arrays(*data, x, (lam, y, z), max_rounds=20)
    assert longer.accepted and longer.converged and longer.residuals.measure <= 1e-15
