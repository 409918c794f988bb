"""The active-set OCAS (Xiao and Zhou 2013) as implemented in qpcore_strategies.active_set_ocas.

It reaches the optimum OCAS and an independent reference (OSQP on the primal QP) reach, on generated
problems with rows of any norm, duplicated rows, per-example weights and warm starts; F(w_b) it
reports is F recomputed from all rows at every iteration (the paper's exactness); the active set is
a small part of the rows on text-like data near convergence; the clamp happens and is counted;
|X^s| ≤ |X^a|; every row read is counted; the Dask backend gives the in-process iterates.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore_formulations.risk import HingeProblem, hinge_svm
from qpcore_strategies.active_set_ocas import ActiveSetOCAS
from qpcore_strategies.cutting_plane import OCAS, CutState

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def _data(seed: int, m: int, d: int, *, sparse: bool = False, scale_rows: bool = False, duplicates: bool = False,
          noise: float = 1.0) -> tuple[Any, np.ndarray]:
    """Two classes around a random hyperplane with label noise; rows scaled over 6 decades
    (``scale_rows``: the paper assumes unit rows), duplicated rows (and one with both labels)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    if sparse:
        X[rng.random((m, d)) < 0.6] = 0.0
    w = rng.normal(size=d)
    y = np.where(X @ w + noise * rng.normal(size=m) > 0, 1.0, -1.0)
    if scale_rows:
        X *= 10.0 ** rng.uniform(-3, 3, size=(m, 1))
    if duplicates and m >= 8:
        k = m // 4
        X[k:2 * k] = X[:k]
        y[k:2 * k] = y[:k]
        X[2 * k] = X[3 * k]
        y[2 * k] = -y[3 * k]
    if np.all(y == y[0]):
        y[0] = -y[0]
    return (sp.csr_matrix(X) if sparse else X), y


def _osqp_F(X: Any, y: np.ndarray, C: Any, bias: float) -> float:
    """min ½‖w‖² + Σ C_i ξ_i, ξ_i ≥ 1 − y_i h_iᵀw, ξ ≥ 0 by OSQP (polished): the reference optimum."""
    import osqp

    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    m = Xd.shape[0]
    H = y[:, None] * (np.hstack([Xd, np.full((m, 1), bias)]) if bias > 0 else Xd)
    k = H.shape[1]
    P = sp.block_diag([sp.identity(k), sp.csc_matrix((m, m))], format="csc")
    q = np.concatenate([np.zeros(k), np.broadcast_to(np.asarray(C, dtype=float), (m,))])
    A = sp.vstack([sp.hstack([sp.csc_matrix(H), sp.identity(m)]), sp.hstack([sp.csc_matrix((m, k)), sp.identity(m)])],
                  format="csc")
    lo = np.concatenate([np.ones(m), np.zeros(m)])
    solver = osqp.OSQP()
    solver.setup(P, q, A, lo, np.full(2 * m, np.inf), verbose=False, eps_abs=1e-10, eps_rel=1e-10, polishing=True,
                 max_iter=20_000)
    res = solver.solve()
    w = res.x[:k]
    return float(0.5 * w @ w + np.sum(np.asarray(C) * np.maximum(0.0, 1.0 - H @ w)))


def _traced(qp: qpcore.QP, strategy: Any, prob: HingeProblem | None = None,
            **kw: Any) -> tuple[qpcore.Result, list[dict[str, Any]]]:
    """A run and, per iteration, what the work state holds (and F recomputed from all rows when
    ``prob`` is given)."""
    trace: list[dict[str, Any]] = []

    def record(p: qpcore.Progress) -> None:
        cs = p.work(CutState)
        e = {"F": cs.F_b, "dual": cs.dual, "xa": cs.touched_eval, "xs": cs.touched_search,
             "rows_read": p.counters.get("rows_read"), "exact": cs.primal_exact, "w_b": cs.w_b.copy()}
        if prob is not None:
            e["F_all"] = prob.primal_objective(cs.w_b)
        trace.append(e)

    return qpcore.solve(qp, strategy, callback=record, **kw), trace


# --- the optimum ---------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
@given(seed=SEEDS, m=st.integers(4, 40), d=st.integers(1, 5), sparse=st.booleans(), scale_rows=st.booleans(),
       duplicates=st.booleans(), per_example=st.booleans(), bias=st.sampled_from([1.0, 0.0]),
       C=st.sampled_from([1e-2, 1.0, 1e2]), paper=st.booleans())
def test_reaches_the_reference_optimum(seed: int, m: int, d: int, sparse: bool, scale_rows: bool, duplicates: bool,
                                       per_example: bool, bias: float, C: float, paper: bool) -> None:
    X, y = _data(seed, m, d, sparse=sparse, scale_rows=scale_rows, duplicates=duplicates)
    Cv: Any = C * np.random.default_rng(seed).uniform(0.1, 10.0, size=m) if per_example else C
    prob = hinge_svm(X, y, Cv, bias=bias, dense=False)
    tol = 1e-6
    strategy = ActiveSetOCAS.paper() if paper else ActiveSetOCAS()
    res, trace = _traced(prob.qp, strategy, prob, tol=tol, max_iter=3000)
    assert res.status is qpcore.Status.CONVERGED, (res.status, res.iterations)
    cert = prob.certificate(res)
    assert cert.feasible and cert.rel_gap <= tol + 1e-9
    F_ref = _osqp_F(X, y, Cv, bias)
    # no worse than the reference beyond tol, and the certified lower bound below it (OSQP's point
    # is a primal point: badly scaled rows leave it short of the optimum, never below)
    assert cert.primal - F_ref <= tol * cert.primal + 1e-9 * max(1.0, F_ref)
    assert cert.dual <= F_ref * (1 + 1e-9) + 1e-12
    ocas = qpcore.solve(prob.qp, OCAS(), tol=tol, max_iter=3000)
    assert abs(prob.certificate(ocas).primal - cert.primal) <= tol * cert.primal + 1e-9
    # the exactness claim: F(w_b) as reported is F from all rows, at every iteration
    for e in trace:
        assert e["F"] == pytest.approx(e["F_all"], rel=1e-9, abs=1e-12)
        assert e["exact"] and e["xs"] <= e["xa"] <= m
    assert all(b["F"] <= a["F"] * (1 + 1e-12) + 1e-12 for a, b in zip(trace, trace[1:]))


@given(seed=SEEDS, scale_rows=st.booleans())
def test_warm_start(seed: int, scale_rows: bool) -> None:
    X, y = _data(seed, 80, 4, scale_rows=scale_rows)
    prob = hinge_svm(X, y, 1.0)
    first = qpcore.solve(prob.qp, ActiveSetOCAS(), tol=1e-2)
    res, trace = _traced(prob.qp, ActiveSetOCAS(), prob, x0=first.x, tol=1e-7)
    assert res.converged and prob.certificate(res).rel_gap <= 1e-7 + 1e-9
    assert all(e["F"] == pytest.approx(e["F_all"], rel=1e-9) for e in trace)
    assert res.iterations < first.iterations + 200


# --- the active set ------------------------------------------------------------------------------

def _text(m: int = 6000, p: int = 3000, seed: int = 1) -> HingeProblem:
    """Bag-of-words-like rows (unit norm, a few dozen words of a Zipf vocabulary), labels from a
    sparse model with 5 % flipped."""
    rng = np.random.default_rng(seed)
    nnz = 30
    pmf = 1.0 / np.arange(1, p + 1)
    pmf /= pmf.sum()
    cols = rng.choice(p, size=m * nnz, p=pmf)
    X = sp.csr_matrix((rng.random(m * nnz), cols, np.arange(0, m * nnz + 1, nnz)), shape=(m, p))
    X.sum_duplicates()
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(np.asarray(X.multiply(X).sum(axis=1)))))
    w = np.where(rng.random(p) < 0.05, rng.normal(size=p), 0.0)
    s = X @ w
    y = np.where(s > np.median(s), 1.0, -1.0)
    y[rng.random(m) < 0.05] *= -1
    return hinge_svm(X, y, 1.0)


def test_active_set_is_small_near_convergence_and_rows_are_counted() -> None:
    prob = _text()
    m = prob.qp.n
    tol = 1e-4
    # refresh = 1: the active set itself, never the whole block in its place
    res, trace = _traced(prob.qp, ActiveSetOCAS(refresh=1.0), tol=tol)
    ocas = qpcore.solve(prob.qp, OCAS(), tol=tol)
    assert res.converged and ocas.converged
    F_a, F_o = prob.certificate(res).primal, prob.certificate(ocas).primal
    assert abs(F_a - F_o) <= tol * max(F_a, F_o)
    late = [e["xa"] for e in trace[3 * len(trace) // 4:]]
    assert max(late) < 0.5 * m and min(late) < 0.3 * m
    assert res.stats["touched_eval"] < 0.8 * res.iterations * m
    assert res.stats["touched_search"] < 0.2 * res.stats["touched_eval"]
    # every row read counted: the start (margins, first cut, ‖h_i‖), each active product and the
    # verification's two products
    reads = [e["rows_read"] for e in trace]
    assert all(b >= a for a, b in zip(reads, reads[1:]))
    assert res.stats["rows_read"] >= 3 * m + res.stats["touched_eval"] + 2 * m * res.stats["verifications"]
    assert res.stats["verifications"] >= 1 and trace[-1]["exact"]


def test_the_clamp_happens_and_is_counted() -> None:
    """A first window of 1e-4 cannot hold the first step: the step is clamped to 0.9Λ (never a full
    iteration instead), the window grows, and the run converges with F(w_b) exact throughout."""
    X, y = _data(3, 400, 6, scale_rows=True)
    prob = hinge_svm(X, y, 10.0)
    res, trace = _traced(prob.qp, ActiveSetOCAS(window=1e-4), prob, tol=1e-6, max_iter=2000)
    assert res.converged
    assert res.stats["clamped"] >= 3
    # the first steps moved w_b by 0.9Λ of the window: tiny, and doubling
    first = [float(np.linalg.norm(b["w_b"] - a["w_b"])) for a, b in zip(trace[:4], trace[1:5])]
    assert 0 < first[0] < first[1] < first[2]
    assert all(e["F"] == pytest.approx(e["F_all"], rel=1e-9) for e in trace)
    assert abs(prob.certificate(res).primal - prob.certificate(qpcore.solve(prob.qp, OCAS(), tol=1e-6)).primal) \
        <= 1e-6 * prob.certificate(res).primal


def test_refresh_takes_the_whole_block() -> None:
    """refresh = 1e-9: every iteration takes all rows (|X^a| = m, counted as a refresh) and still
    agrees with OCAS's optimum."""
    X, y = _data(4, 300, 5)
    prob = hinge_svm(X, y, 1.0)
    res, trace = _traced(prob.qp, ActiveSetOCAS(refresh=1e-9), tol=1e-6)
    assert res.converged
    moved = [e for e in trace if e["xa"]]
    assert all(e["xa"] == 300 for e in moved)
    assert res.stats["refreshes"] == len(moved)


def test_paper_preset_and_bad_options() -> None:
    paper = ActiveSetOCAS.paper()
    assert paper.mu == 0.05 and paper.max_cuts == 20
    assert ActiveSetOCAS.paper(window=0.5).window == 0.5
    cases: list[dict[str, Any]] = [{"window": 0.0}, {"grow": 1.0}, {"refresh": 0.0}, {"refresh": 1.5}, {"clamp": 1.0},
                                   {"mu": 0.0}]
    for bad in cases:
        with pytest.raises(qpcore.ProblemError):
            ActiveSetOCAS(**bad)


# --- Dask ----------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("sparse", [False, True])
def test_dask_gives_the_in_process_iterates(dask_client: Any, sparse: bool) -> None:
    da = pytest.importorskip("dask.array")
    X, y = _data(5, 600, 5, scale_rows=True, noise=0.3)
    sizes = (200, 0, 300, 100)
    Xd = da.from_array(X, chunks=(sizes, (X.shape[1],)))
    if sparse:
        Xd = Xd.map_blocks(sp.csr_matrix, dtype=float, meta=sp.csr_matrix((0, 0)))
    p_in = hinge_svm(sp.csr_matrix(X) if sparse else X, y, 1.0, dense=False)
    p_ch = hinge_svm(Xd, y, 1.0, client=dask_client)
    # the first dozen iterations (a cluster's round trips are slow; the paths part after a while)
    r_in, t_in = _traced(p_in.qp, ActiveSetOCAS(), tol=1e-6, max_iter=12)
    r_ch, t_ch = _traced(p_ch.qp, ActiveSetOCAS(), tol=1e-6, max_iter=12)
    assert r_ch.status is r_in.status and len(t_ch) == len(t_in) >= 10
    assert min(e["xa"] for e in t_ch) < 600 // 2          # iterations over the active rows only
    # the same iterates while the runs agree to rounding (a set is a threshold on keys: a last-bit
    # difference may eventually move one example across and the paths part)
    for a, b in zip(t_in, t_ch):
        np.testing.assert_allclose(b["w_b"], a["w_b"], rtol=1e-9, atol=1e-9 * (1 + np.abs(a["w_b"]).max()))
        # X^s is the same whichever rows a chunk took (a chunk past ``refresh`` takes all its rows,
        # which changes |X^a|, not the rows that can cross); a breakpoint within rounding of the
        # window's ends may fall on either side
        assert abs(a["xs"] - b["xs"]) <= 2
    assert abs(r_ch.objective - r_in.objective) <= 1e-8 * max(1.0, abs(r_in.objective))
