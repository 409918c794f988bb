"""The cutting planes over row chunks on a Dask cluster (qpcore_strategies.cutting_plane over qpcore.backends.chunked), against the
same strategies in process on the same numpy data, on 2 worker processes.

OCAS, the active-set OCAS and BMRM reach the in-process objective (dual f(α) and primal F(w_b)) to
1e-9 with the same status, on dense and sparse chunks, uneven chunk sizes, an empty chunk, a chunk
of one class, per-example weights and offsets; the active set's iterations, refreshes and
verification run on the workers; aggregated and dropped cuts; max_iter ends honestly with the
certificate of the point reached, and a warm start from it finishes the run; the dual point stays on
the workers; a lost cluster carries w_b; the distributed exact line search equals ``line_search``
(random instances with ties, zero rates and breakpoints beyond 1, and crafted ones down each of its
rarer rounds); and on small generated data (duplicated rows, badly scaled columns, random chunkings)
chunked OCAS meets its relative gap and matches the in-process run.
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
from qpcore.backends.chunked import ChunkedRows, ChunkedVector, ClusterError, RowSpace
from qpcore.core.problem import QP
from qpcore_strategies.active_set_ocas import ActiveSetOCAS
from qpcore_strategies.cutting_plane import BMRM, OCAS, CutState, line_search
from qpcore_strategies.line_search import rows_line_search


def _touched(qp: QP, strategy: Any, **kw: Any) -> tuple[qpcore.Result, list[int]]:
    """A run and the examples each iteration's evaluation touched, kept by a callback."""
    touched: list[int] = []
    res = qpcore.solve(qp, strategy, callback=lambda p: touched.append(p.work(CutState).touched_eval), **kw)
    return res, touched


def chunked_line_search(space: RowSpace, r: Any, delta: Any, u: Any, wd: float, dd: float,
                        **kw: Any) -> tuple[float, int]:
    """The one line search over a cluster's chunks: its step and its window rounds."""
    search = rows_line_search(ChunkedRows(space, None), r, delta, u, wd, dd, **kw)   # type: ignore[arg-type]
    return search.t, search.rounds

da = pytest.importorskip("dask.array")
pytest.importorskip("distributed")

# dask's "large graph" notes; and hypothesis's note on the random module, which the Dask client's
# own thread uses while an example is drawn
pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")]

TOL = 1e-10     # TolRel: both runs stop at the optimum (cutting planes end there on small data)
REL = 1e-9


def _data(seed: int, m: int, d: int, *, noise: float = 1.0, sparse: bool = False, scaled: bool = False,
          duplicates: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    if sparse:
        X[rng.random((m, d)) < 0.6] = 0.0
    w = rng.normal(size=d)
    y = np.where(X @ w + noise * rng.normal(size=m) > 0, 1.0, -1.0)
    if scaled:
        X *= 10.0 ** rng.uniform(-3, 3, size=d)
    if duplicates and m >= 4:
        k = m // 4
        X[k:2 * k] = X[:k]
        y[k:2 * k] = y[:k]
        y[3 * k] = -y[0]
        X[3 * k] = X[0]
    if np.all(y == y[0]):
        y[0] = -y[0]
    return X, y


def _dask(X: Any, sizes: tuple[int, ...], sparse: bool = False) -> Any:
    Xd = da.from_array(np.asarray(X), chunks=(sizes, (X.shape[1],)))
    if sparse:
        Xd = Xd.map_blocks(sp.csr_matrix, dtype=float, meta=sp.csr_matrix((0, 0)))
    return Xd


def _pair(X: np.ndarray, y: np.ndarray, sizes: tuple[int, ...], *, sparse: bool = False, C: float = 1.0,
          client: Any = None) -> tuple[HingeProblem, HingeProblem]:
    inproc = hinge_svm(sp.csr_matrix(X) if sparse else X, y, C, dense=False)
    chunked = hinge_svm(_dask(X, sizes, sparse), y, C, client=client)
    return inproc, chunked


def _close(a: float, b: float, rel: float = REL) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def _same(p_in: HingeProblem, r_in: Any, r_ch: Any, rel: float = REL, paths: bool = True) -> None:
    assert r_ch.status is r_in.status, (r_ch.status, r_in.status)
    # one algorithm for both backends: the same path up to the order of summation (``paths``; the
    # active set's window follows the steps, so a rounding-level difference in a reduced solution
    # near the end may send the two runs down different, equally exact paths to the same answer)
    if paths:
        assert abs(r_ch.iterations - r_in.iterations) <= max(2, r_in.iterations // 20), (r_ch.iterations,
                                                                                         r_in.iterations)
    assert _close(r_ch.objective, r_in.objective, rel), (r_ch.objective, r_in.objective)
    F_in = p_in.primal_objective(r_in.state.primal)
    F_ch = p_in.primal_objective(r_ch.state.primal)
    assert _close(F_ch, F_in, rel), (F_ch, F_in)
    # the certificate of the chunked run is the problem's own: α feasible, its gap F(w_b) − D(α)
    assert isinstance(r_ch.x, ChunkedVector)
    assert r_ch.kkt.feasible()
    if paths:
        assert _close(r_ch.kkt.duality_gap, r_in.kkt.duality_gap, rel)
    else:       # two certified gaps, each within what the objectives' agreement allows
        assert max(r_ch.kkt.duality_gap, r_in.kkt.duality_gap) <= rel * max(1.0, abs(F_in))


# --------------------------------------------------------------------------------------------- solves
CASES = {
    # uneven chunk sizes and an empty chunk
    "dense": dict(seed=3, m=500, d=4, sizes=(137, 0, 250, 113), sparse=False),
    # CSR chunks
    "sparse": dict(seed=4, m=400, d=6, sizes=(100, 150, 150), sparse=True),
    # the first chunk holds one class only
    "one_class": dict(seed=5, m=400, d=3, sizes=(60, 200, 140), sparse=False),
}


def _case(name: str) -> tuple[np.ndarray, np.ndarray, tuple[int, ...], bool]:
    c = CASES[name]
    X, y = _data(c["seed"], c["m"], c["d"], sparse=c["sparse"])
    if name == "one_class":
        order = np.argsort(-y, kind="stable")       # the positives first: chunk 0 is all +1
        X, y = X[order], y[order]
        assert np.all(y[:60] == 1.0)
    return X, y, c["sizes"], c["sparse"]


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("variant", [OCAS, ActiveSetOCAS])
def test_same_solution_as_in_process(dask_client: Any, name: str, variant: Any) -> None:
    X, y, sizes, sparse = _case(name)
    p_in, p_ch = _pair(X, y, sizes, sparse=sparse, client=dask_client)
    r_in = qpcore.solve(p_in.qp, variant(), tol=TOL)
    r_ch = qpcore.solve(p_ch.qp, variant(), tol=TOL)
    assert r_in.status is qpcore.Status.CONVERGED
    _same(p_in, r_in, r_ch, paths=variant is OCAS)
    # the dual point is the chunks': α in the box, its objective the result's
    alpha = r_ch.x.to_numpy()
    assert np.all(alpha >= 0) and np.all(alpha <= 1.0)
    assert _close(p_in.qp.objective(alpha), r_ch.objective)
    assert r_ch.stats["round_trips"] > 0


def test_bmrm(dask_client: Any) -> None:
    X, y, sizes, sparse = _case("dense")
    p_in, p_ch = _pair(X, y, sizes, client=dask_client)
    r_in = qpcore.solve(p_in.qp, BMRM(), tol=1e-8)
    r_ch = qpcore.solve(p_ch.qp, BMRM(), tol=1e-8)
    _same(p_in, r_in, r_ch)
    # one pass per iteration: one round trip
    assert r_ch.stats["round_trips"] <= r_ch.iterations + 2


def test_active_set_iterations(dask_client: Any) -> None:
    """Data on which the active set is small: active iterations, refreshes (a chunk taking all its
    rows) and the exact verification run on the workers and give the in-process result."""
    X, y = _data(11, 6000, 5, noise=0.3)
    p_in, p_ch = _pair(X, y, (2500, 2000, 1500), client=dask_client)
    r_in, touched_in = _touched(p_in.qp, ActiveSetOCAS(), tol=TOL)
    r_ch, touched = _touched(p_ch.qp, ActiveSetOCAS(), tol=TOL)
    _same(p_in, r_in, r_ch, paths=False)
    assert min(touched) < 0.5 * X.shape[0], touched          # iterations over the active rows only
    assert r_ch.stats["refreshes"] >= 1 and r_ch.stats["verifications"] >= 1
    # the same sets as in process while the runs agree to rounding (a set is a threshold on keys, so
    # a last-bit difference may move one example across, and eventually the paths part)
    assert all(abs(a - b) <= 2 for a, b in zip(touched_in[:10], touched[:10])), (touched_in[:10], touched[:10])


@pytest.mark.parametrize("variant", [OCAS, ActiveSetOCAS])
def test_per_example_weights_and_offsets(dask_client: Any, variant: Any) -> None:
    """u = C_i and ρ_i = −c_i as chunked vectors (not constants): the kernels' per-example paths,
    the active set's included."""
    X, y = _data(11, 6000, 5, noise=0.3)
    sizes = (2500, 0, 2000, 1500)
    p_in, p_ch = _pair(X, y, sizes, client=dask_client)
    rng = np.random.default_rng(2)
    C = rng.uniform(0.2, 5.0, X.shape[0])
    rho = rng.uniform(0.5, 2.0, X.shape[0])
    space = p_ch.qp.Q.space
    qp_in = QP(Q=p_in.qp.Q, c=-rho, lb=np.zeros(X.shape[0]), ub=C)
    qp_ch = QP.trusted(p_ch.qp.Q, _chunked(dask_client, space, -rho), space.full(0.0),  # type: ignore[arg-type]
                       _chunked(dask_client, space, C), np.zeros((0, X.shape[0])), np.zeros(0))
    r_in = qpcore.solve(qp_in, variant(), tol=TOL)
    r_ch, touched = _touched(qp_ch, variant(), tol=TOL)
    assert r_ch.status is r_in.status is qpcore.Status.CONVERGED
    assert _close(r_ch.objective, r_in.objective)
    assert _close(r_ch.kkt.lower_bound, r_in.kkt.lower_bound)
    alpha = r_ch.x.to_numpy()
    assert np.all(alpha >= 0) and np.all(alpha <= C)
    if variant is ActiveSetOCAS:        # the active rows' own ρ and u were used
        assert min(touched) < X.shape[0] / 2


def test_cut_management(dask_client: Any) -> None:
    """Aggregated cuts (their members mixed on the workers) and dropped cuts."""
    X, y, sizes, _ = _case("dense")
    p_in, p_ch = _pair(X, y, sizes, client=dask_client)
    # 6 cuts in 6 dimensions made the run crawl on whichever path a rounding-level tie (a cut's β
    # exactly 0 or not, decided by the order of summation) sent it: 10 cuts aggregate and drop too
    cfg = OCAS(max_cuts=10, drop_after=5)
    r_in = qpcore.solve(p_in.qp, cfg, tol=1e-8, max_iter=200)
    r_ch = qpcore.solve(p_ch.qp, cfg, tol=1e-8, max_iter=200)
    assert r_ch.stats["aggregated"] > 0 and r_ch.stats["dropped"] > 0
    _same(p_in, r_in, r_ch, rel=1e-8)


def test_max_iter_and_warm_start(dask_client: Any) -> None:
    X, y, sizes, _ = _case("dense")
    p_in, p_ch = _pair(X, y, sizes, client=dask_client)
    r_in = qpcore.solve(p_in.qp, OCAS(), tol=TOL, max_iter=3)
    r_ch = qpcore.solve(p_ch.qp, OCAS(), tol=TOL, max_iter=3)
    assert r_ch.status is qpcore.Status.MAX_ITER and r_ch.iterations == 3
    _same(p_in, r_in, r_ch)
    # honest: the gap is the problem's own, F(w_b) − D(α) > 0 at a point short of the optimum
    cert = p_ch.certificate(r_ch)
    assert cert.gap > 0 and _close(cert.gap, r_ch.kkt.duality_gap, 1e-8)
    assert _close(cert.primal, p_in.primal_objective(r_ch.state.primal))
    # a warm start from the chunked point (w = Hᵀα of it) finishes the run
    r2 = qpcore.solve(p_ch.qp, OCAS(), r_ch, tol=TOL)
    r_full = qpcore.solve(p_in.qp, OCAS(), tol=TOL)
    assert r2.status is qpcore.Status.CONVERGED
    assert _close(p_in.primal_objective(r2.state.primal), p_in.primal_objective(r_full.state.primal))


def test_progress_and_stop(dask_client: Any) -> None:
    X, y, sizes, _ = _case("dense")
    _, p_ch = _pair(X, y, sizes, client=dask_client)
    seen: list[float] = []

    def cb(progress: Any) -> bool:
        seen.append(progress.objective)         # α and g synchronized on the workers
        return progress.iteration >= 2

    res = qpcore.solve(p_ch.qp, OCAS(), tol=TOL, callback=cb)
    assert res.status is qpcore.Status.STOPPED and len(seen) == 2
    assert all(np.isfinite(seen))


def test_cluster_loss_carries_w_b(dask_client: Any, monkeypatch: Any) -> None:
    """A cluster that loses data mid-run: the error carries the best point reached and the iteration."""
    X, y, sizes, _ = _case("dense")
    _, p_ch = _pair(X, y, sizes, client=dask_client)
    primals: list[np.ndarray] = []
    real = ChunkedRows.map_reduce

    def failing(self: ChunkedRows, *args: Any, **kwargs: Any) -> Any:
        if len(primals) == 2:          # iteration 3's first pass
            raise ClusterError("lost")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ChunkedRows, "map_reduce", failing)
    with pytest.raises(ClusterError) as info:
        qpcore.solve(p_ch.qp, OCAS(), tol=TOL, callback=lambda p: primals.append(p.state.primal.copy()))
    assert info.value.iteration == 2
    assert info.value.primal is not None and np.array_equal(info.value.primal, primals[-1])


# --------------------------------------------------------------------------------------------- line search
def _sizes(draw: st.DrawFn, m: int) -> tuple[int, ...]:
    cuts = sorted(draw(st.lists(st.integers(0, m), max_size=5)))
    bounds = [0, *cuts, m]
    return tuple(b - a for a, b in zip(bounds[:-1], bounds[1:]))


def _chunked(client: Any, space: RowSpace, v: np.ndarray) -> ChunkedVector:
    parts = [v[a:b] for a, b in zip(space.offsets[:-1], space.offsets[1:])]
    return ChunkedVector(space, client.scatter(parts, hash=False))


_DYADIC = st.sampled_from([-3.0, -2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0])


@given(data=st.data())
def test_line_search_equals_in_process(dask_client: Any, data: st.DataObject) -> None:
    """Ties, zero rates, breakpoints beyond 1, a slope and a t_max; every round of the search
    (listed chunks, histogram chunks, gathered windows, split windows, ties no split separates).
    On dyadic values every sum is exact and the steps are equal; on random floats equal to rounding."""
    m = data.draw(st.integers(1, 150))
    exact = data.draw(st.booleans())
    if exact:
        r = np.array(data.draw(st.lists(_DYADIC, min_size=m, max_size=m)))
        delta = np.array(data.draw(st.lists(_DYADIC, min_size=m, max_size=m)))
        u = np.array(data.draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=m, max_size=m)))
        wd = data.draw(_DYADIC)
        dd = data.draw(st.sampled_from([0.0, 0.25, 1.0, 4.0]))
        slope = data.draw(st.sampled_from([0.0, -1.0, 0.5]))
    else:
        # breakpoints spread or clustered (distinct values closer than any bin) around 0.3, 5, 1e6
        # or 1e13 (beyond the histogram), some examples starting on the other side, zero rates,
        # φ'(0) from a small to a larger share of the jumps, a curvature from none to large: every
        # split and gather of the rounds
        rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
        spread = data.draw(st.sampled_from([1.0, 0.04, 1e-6, 1e-12]))
        center = data.draw(st.sampled_from([0.3, 5.0, 1e6, 1e13]))
        delta = rng.uniform(0.5, 2.0, m) * rng.choice([-1.0, 1.0], m, p=[0.2, 0.8])
        r = delta * center * (1.0 + spread * rng.normal(size=m))
        delta[rng.random(m) < 0.1] = 0.0
        u = rng.uniform(0.1, 10.0, size=m)
        share = data.draw(st.floats(0.05, 1.2))
        wd = float(u[r > 0] @ delta[r > 0]) - share * float(u @ np.abs(delta))
        dd = data.draw(st.sampled_from([0.0, 1e-6, 1.0, 1e3])) * m
        slope = 0.0
    t_max = data.draw(st.sampled_from([np.inf, np.inf, 0.75, 3.0]))
    space = RowSpace(dask_client, _sizes(data.draw, m))
    caps = dict(list_cap=data.draw(st.sampled_from([0, 2, 8192])),
                window_cap=data.draw(st.sampled_from([0, 3, 1 << 17])),
                sub_bins=data.draw(st.sampled_from([2, 3, 256])),
                max_sub=data.draw(st.sampled_from([0, 2, 6])))
    t_ch, _ = chunked_line_search(space, _chunked(dask_client, space, r), _chunked(dask_client, space, delta),
                                  _chunked(dask_client, space, u), wd, dd, slope=slope, t_max=t_max, **caps)
    t_in, _ = line_search(wd, dd, r, delta, u, slope=slope, t_max=t_max)
    if exact:
        assert t_ch == t_in
    else:
        # the same breakpoint or the same zero of the derivative, up to the order of summation
        assert t_ch == t_in or abs(t_ch - t_in) <= 1e-9 * abs(t_in), (t_ch, t_in)


def _crafted() -> list[tuple[str, np.ndarray, np.ndarray, float, float]]:
    """(name, r, δ, wd, dd) with u = 1 and δ = 1, each steering the search down one of its rarer paths
    (all examples violate at t = 0, so φ'(0) = wd − n)."""
    rng = np.random.default_rng(7)
    out = []
    # the zero of φ' in the linear part of a crowded bin, left of its breakpoints (an empty sub-bin)
    t = rng.uniform(1.01, 1.02, 60)
    out.append(("empty sub-bin", t.copy(), np.ones(60), 60 - 1.005 * 1e4, 1e4))
    # the zero at 60 ties, in a bin with other values: split until the ties are alone in a sub-bin
    t = np.concatenate((np.full(60, 0.3), 0.3 + np.arange(1, 61) * 1e-3))
    out.append(("ties", t, np.ones(120), 120 - 30.5, 0.0))
    # 60 ties and 60 values a few ulps apart: splits until the last one gathers what is left
    t = np.concatenate((np.full(60, 0.3), 0.3 + np.arange(1, 61) * 2e-16))
    out.append(("ulps", t, np.ones(120), 120 - 60.5, 0.0))
    # beyond the histogram (1e13), and up against the largest double with no curvature
    t = 1e13 * rng.uniform(1.0, 2.0, 50)
    out.append(("far", t, np.ones(50), 50 - 25.5, 0.0))
    t = np.concatenate((np.full(3, 1e300), rng.uniform(1.0, 2.0, 10) * 1e307))
    out.append(("largest double", t, np.ones(13), 13 - 11.5, 0.0))
    return out


@pytest.mark.parametrize("case", range(5))
def test_line_search_rounds(dask_client: Any, case: int) -> None:
    """Crafted instances down the rarer paths, with every breakpoint binned and the windows split."""
    name, r, delta, wd, dd = _crafted()[case]
    u = np.ones(r.size)
    space = RowSpace(dask_client, (r.size // 3, 0, r.size - r.size // 3))
    t_ch, rounds = chunked_line_search(space, _chunked(dask_client, space, r), _chunked(dask_client, space, delta),
                                       1.0, wd, dd, list_cap=0, window_cap=3, sub_bins=16, max_sub=8)
    t_in, _ = line_search(wd, dd, r, delta, u)
    assert rounds >= 1, name
    assert t_ch == t_in or abs(t_ch - t_in) <= 1e-12 * abs(t_in), (name, t_ch, t_in)


# --------------------------------------------------------------------------------------------- property
@given(data=st.data())
def test_chunked_ocas_meets_its_gap(dask_client: Any, data: st.DataObject) -> None:
    """Small generated data (duplicated rows, badly scaled columns, random chunkings, sparse or
    dense chunks): chunked OCAS meets its relative gap, certified from the data, and lands where
    the in-process run does."""
    m = data.draw(st.integers(4, 30))
    d = data.draw(st.integers(1, 3))
    sparse = data.draw(st.booleans())
    X, y = _data(data.draw(st.integers(0, 2**32 - 1)), m, d, noise=data.draw(st.sampled_from([0.0, 1.0, 3.0])),
                 sparse=sparse, scaled=data.draw(st.booleans()), duplicates=data.draw(st.booleans()))
    C = data.draw(st.sampled_from([1e-2, 1.0, 1e2]))
    tol = data.draw(st.sampled_from([1e-4, 1e-8]))
    p_in, p_ch = _pair(X, y, _sizes(data.draw, m), sparse=sparse, C=C, client=dask_client)
    r_ch = qpcore.solve(p_ch.qp, OCAS(), tol=tol, max_iter=500)
    r_in = qpcore.solve(p_in.qp, OCAS(), tol=tol, max_iter=500)
    assert r_ch.status is r_in.status
    if r_in.status is qpcore.Status.CONVERGED:
        gap = r_ch.kkt.duality_gap
        assert gap <= tol * abs(r_ch.kkt.lower_bound) * (1 + 1e-9) + 1e-12
        F_ch = p_in.primal_objective(r_ch.state.primal)
        F_in = p_in.primal_objective(r_in.state.primal)
        # both within their gaps of the optimum
        assert abs(F_ch - F_in) <= gap + r_in.kkt.duality_gap + 1e-9 * max(1.0, abs(F_in))
