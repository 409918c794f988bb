"""The cutting planes' reduced solver (qpcore_strategies.cut_qp.CutQP): on random Gram matrices, rank-deficient
(more cuts than dimensions), with duplicated and nearly parallel cuts, every answer is feasible
exactly and optimal to its tolerance by the Frank–Wolfe gap computed from G here, agrees with the
dense active set on the same problem as a qpcore QP, and stays so when warm-started across
appends, removals and aggregations of the cut model (qpcore_strategies.cut_store.Cuts)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore_strategies import DenseActiveSet
from qpcore_strategies.cut_qp import SLACK, CutQP
from qpcore_strategies.cut_store import Cuts

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def _f(G: np.ndarray, b: np.ndarray, beta: np.ndarray) -> float:
    return float(0.5 * beta @ G @ beta - b @ beta)


def _fw_gap(G: np.ndarray, b: np.ndarray, beta: np.ndarray) -> float:
    """xᵀg − min_i g_i over the cuts and the slack (g = 0): an upper bound on f(β) − min f."""
    g = G @ beta - b
    return float(beta @ g - min(float(g.min(initial=0.0)), 0.0))


def _check(G: np.ndarray, b: np.ndarray, beta: np.ndarray, tol: float) -> None:
    assert beta.shape == b.shape
    assert np.all(np.isfinite(beta))
    assert np.all(beta >= 0.0)
    assert float(beta.sum()) <= 1.0
    scale = max(1.0, float(np.abs(G).max(initial=0.0)), float(np.abs(b).max(initial=0.0)))
    assert _fw_gap(G, b, beta) <= tol + 1e-9 * scale, _fw_gap(G, b, beta)


def _reference(G: np.ndarray, b: np.ndarray) -> float:
    """min f by the dense active set on the problem as a qpcore QP (Σβ + s = 1)."""
    k = b.size
    gamma = max(1.0, float(np.sqrt(np.diagonal(G).max(initial=0.0))))
    M = np.zeros((k + 1, k + 1))
    M[:k, :k] = G / gamma ** 2
    c = np.zeros(k + 1)
    c[:k] = -b / gamma
    qp = qpcore.QP(M, c, np.zeros(k + 1), np.full(k + 1, gamma), np.ones((1, k + 1)), np.array([gamma]))
    res = qpcore.solve(qp, DenseActiveSet(), tol=1e-12)
    return _f(G, b, np.asarray(res.x[:k]) / gamma)


def _cuts(rng: np.random.Generator, k: int, d: int, kind: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """k cut vectors in dimension d and offsets: ``random``, ``duplicates`` (some cuts repeated, some
    the same up to 1e-9), ``zero`` (some cuts 0: parallel to the slack)."""
    A = scale * rng.normal(size=(k, d))
    if kind == "duplicates" and k >= 2:
        src = rng.integers(0, k, size=k // 2)
        dst = rng.integers(0, k, size=k // 2)
        A[dst] = A[src] * (1.0 + 1e-9 * rng.normal(size=(src.size, 1)))
    elif kind == "zero":
        A[rng.random(k) < 0.3] = 0.0
    b = scale * rng.normal(size=k) + scale * np.sqrt(d) * rng.random(k)
    return A, b


KINDS = st.sampled_from(["random", "duplicates", "zero"])
SCALES = st.sampled_from([1e-3, 1.0, 1e3])


@given(seed=SEEDS, k=st.integers(1, 30), d=st.integers(1, 8), kind=KINDS, scale=SCALES)
def test_cold_solve_is_feasible_and_optimal(seed: int, k: int, d: int, kind: str, scale: float) -> None:
    rng = np.random.default_rng(seed)
    A, b = _cuts(rng, k, d, kind, scale)
    G = A @ A.T
    tol = 1e-10 * max(1.0, scale * scale)
    beta = CutQP().solve(G, b, np.arange(k), np.zeros(k), tol)
    _check(G, b, beta, tol)
    ref = _reference(G, b)
    assert _f(G, b, beta) <= ref + tol + 1e-9 * max(1.0, abs(ref))


@st.composite
def histories(draw: st.DrawFn) -> tuple[int, int, str, float, list[tuple[str, int]]]:
    ops = draw(st.lists(st.tuples(st.sampled_from(["add", "add", "drop", "aggregate", "perturb"]),
                                  st.integers(1, 6)), min_size=1, max_size=12))
    return draw(SEEDS), draw(st.integers(1, 8), label="d"), draw(KINDS), draw(SCALES), ops


@given(history=histories())
def test_warm_starts_across_model_changes(history: tuple[int, int, str, float, list[tuple[str, int]]]) -> None:
    """A model changed as the cutting planes change it (cuts appended, unused cuts dropped, the two
    oldest aggregated, a warm start moved off the optimum), solved warm each time by one solver."""
    seed, d, kind, scale, ops = history
    rng = np.random.default_rng(seed)
    cuts = Cuts.empty(d, lambda f0, m0, f1, m1: None, capacity=4)
    solver = CutQP()
    tol = 1e-10 * max(1.0, scale * scale)

    def add(n: int) -> None:
        A, b = _cuts(rng, n, d, kind, scale)
        if kind == "duplicates" and cuts.n:       # repeat a cut already in the model
            A[0] = cuts.A[int(rng.integers(0, cuts.n))]
        for a, off in zip(A, b):
            cuts.add(a, float(off), None)

    add(3)
    for op, n in ops:
        if op == "add":
            add(n)
        elif op == "drop" and cuts.n > 1:
            keep = cuts.beta > 0
            keep[-1] = True
            cuts.remove(keep)
        elif op == "aggregate" and cuts.n >= 3:
            cuts.aggregate_oldest()
        elif op == "perturb":
            # a warm start that is feasible but not optimal (a cut's weight moved to another)
            i, j = rng.integers(0, cuts.n, size=2)
            cuts.beta[j] += cuts.beta[i]
            cuts.beta[i] = 0.0
        k = cuts.n
        G, b = cuts.G[:k, :k], cuts.b[:k]
        beta = solver.solve(G, b, cuts.ids[:k], cuts.beta, tol)
        _check(G, b, beta, tol)
        ref = _reference(G, b)
        assert _f(G, b, beta) <= ref + tol + 1e-9 * max(1.0, abs(ref))
        cuts.beta = beta
        # the factor holds only current cuts (and possibly the slack), no duplicate ids
        free = solver.free
        assert len(set(free.tolist())) == free.size
        assert set(free.tolist()) <= set(cuts.ids[:k].tolist()) | {SLACK}


def test_dependent_cuts_take_the_ray_step() -> None:
    """Three copies of one cut and its negative in one dimension: the free set stays affinely
    independent (dependences are met and resolved), the answer optimal."""
    a = np.array([[1.0], [1.0], [1.0], [-1.0], [2.0]])
    b = np.array([1.0, 1.0, 1.0, 0.5, 2.5])
    G = a @ a.T
    solver = CutQP()
    beta = solver.solve(G, b, np.arange(5), np.full(5, 0.2), 1e-12)
    _check(G, b, beta, 1e-12)
    assert solver.counters["dependences"] > 0
    assert solver.free.size <= 2       # at most d + 1 affinely independent points (with the slack)


def test_infeasible_warm_start_is_projected() -> None:
    """NaN, negative entries and Σβ > 1 in the warm start do not leak into the answer."""
    rng = np.random.default_rng(3)
    A, b = _cuts(rng, 6, 3, "random", 1.0)
    G = A @ A.T
    beta = CutQP().solve(G, b, np.arange(6), np.array([np.nan, -1.0, 2.0, 3.0, 0.0, 0.5]), 1e-12)
    _check(G, b, beta, 1e-12)


def test_pivot_limit_keeps_feasibility() -> None:
    rng = np.random.default_rng(4)
    A, b = _cuts(rng, 20, 10, "random", 1.0)
    G = A @ A.T
    solver = CutQP()
    beta = solver.solve(G, b, np.arange(20), np.zeros(20), 1e-12, max_pivots=1)
    assert np.all(beta >= 0) and float(beta.sum()) <= 1.0
    assert solver.counters["cut_short"] == 1


@pytest.mark.parametrize("variant", ["BMRM", "OCAS"])
def test_default_and_dense_inner_agree(variant: str) -> None:
    """The cutting planes with the kept-factor solver and with the dense active set reach the same
    optimum, and the default counts its pivots as inner iterations."""
    from qpcore_formulations.risk import hinge_svm
    from qpcore_strategies.cutting_plane import BMRM, OCAS

    cls: Any = {"BMRM": BMRM, "OCAS": OCAS}[variant]
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 12))
    y = np.where(X @ rng.normal(size=12) + rng.normal(size=200) > 0, 1.0, -1.0)
    prob = hinge_svm(X, y, 10.0, bias=1.0)
    new = qpcore.solve(prob.qp, cls(), tol=1e-8)
    old = qpcore.solve(prob.qp, cls(inner=DenseActiveSet()), tol=1e-8)
    assert new.converged and old.converged
    assert new.stats["inner_iterations"] > 0
    F_new, F_old = prob.certificate(new).primal, prob.certificate(old).primal
    assert abs(F_new - F_old) <= 1e-7 * F_old


@pytest.mark.parametrize("variant", ["BMRM", "OCAS"])
@pytest.mark.parametrize("sparse", [False, True])
def test_flat_models_at_large_C_converge(variant: str, sparse: bool) -> None:
    """Separable data at C = 1000 in 11 dimensions: more cuts than d + 1, every new cut dependent on
    the free ones, and a model so flat that a violated cut improves the reduced value by ~1e-21.
    The ray step must follow the priced descent (not the sign of gᵀv, rounding noise there): the
    run used to stall at a relative gap of 1e-5."""
    import scipy.sparse as sp

    from qpcore_formulations.risk import hinge_svm
    from qpcore_strategies.cutting_plane import BMRM, OCAS

    cls: Any = {"BMRM": BMRM, "OCAS": OCAS}[variant]
    rng = np.random.default_rng(17)
    X = rng.normal(size=(300, 10))
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
    w = rng.normal(size=10)
    w /= np.linalg.norm(w)
    s = X @ w
    y = np.where(s > 0, 1.0, -1.0)
    X += np.outer(0.5 * y, w)
    X[75:150], y[75:150] = X[:75], y[:75]
    prob = hinge_svm(sp.csr_matrix(X) if sparse else X, y, 1000.0, bias=1.0)
    res = qpcore.solve(prob.qp, cls(), tol=1e-6, max_iter=2000)
    assert res.converged, (res.status, res.iterations)
    assert prob.certificate(res).rel_gap <= 1e-6 + 1e-9
