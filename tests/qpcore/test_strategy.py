"""The declared contracts: the Strategy base class, typed work states, operator capabilities,
the iteration API under solve, and what a Result keeps."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import qpcore
from qpcore import QP, Capability, DenseQ, ProblemError, State, Status, Strategy, Work, bound_status
from qpcore.backends.capabilities import Operator, OperatorStats
from qpcore.backends.operators import Kernel, KernelQ
from qpcore.backends.rowcache import RowCache
from qpcore.core.solve import iterate


@attrs.define
class HalfWork(Work):
    """The toy strategy's work state."""

    tol: float
    buffer: np.ndarray | None = None

    def release(self) -> HalfWork:
        self.buffer = None
        return self


@attrs.frozen
class Halver(Strategy):
    """Moves x halfway to the box projection of −c (Q = I): converges geometrically."""

    requires = frozenset({Capability.BLOCK})

    def init(self, qp: QP, x0: np.ndarray | None, tol: float) -> State:
        self.check(qp)
        x = np.clip(np.zeros(qp.n) if x0 is None else x0, qp.lb, qp.ub)
        state = State(x=x, g=qp.gradient(x), status=bound_status(x, qp.lb, qp.ub),
                      work=HalfWork(tol=tol, buffer=np.zeros(1000)))
        self._judge(qp, state)
        return state

    def _judge(self, qp: QP, state: State) -> None:
        state.done = qpcore.kkt(qp, state.x, state.g).measure <= state.work(HalfWork).tol

    def step(self, qp: QP, state: State) -> None:
        target = np.clip(-qp.c, qp.lb, qp.ub)
        state.x = 0.5 * (state.x + target)
        state.g = qp.gradient(state.x)
        self._judge(qp, state)


@attrs.frozen
class BoxOnly(Halver):
    """Refuses equality rows, naming another strategy."""

    requires = frozenset()

    def accepts(self, qp: QP) -> str | None:
        return "BoxOnly takes box constraints only; for equality rows use GPCG" if qp.m else None


def _box(n: int = 4) -> QP:
    return QP(np.eye(n), np.linspace(-2.0, 2.0, n), -1.0, 1.0)


def test_accepts_defaults_to_none_and_solve_runs() -> None:
    qp = _box()
    assert Halver().accepts(qp) is None
    res = qpcore.solve(qp, Halver(), tol=1e-8)
    assert res.status is Status.CONVERGED
    np.testing.assert_allclose(res.x, np.clip(-qp.c, -1.0, 1.0), atol=1e-7)


def test_init_refuses_with_the_reason_accepts_gives() -> None:
    qp = QP(np.eye(3), np.zeros(3), -1.0, 1.0, [[1.0, 1.0, 1.0]], [0.0])
    assert BoxOnly().accepts(qp) == "BoxOnly takes box constraints only; for equality rows use GPCG"
    with pytest.raises(ProblemError, match="^BoxOnly takes box constraints only; for equality rows use GPCG$"):
        qpcore.solve(qp, BoxOnly())


def test_missing_capability_is_named() -> None:
    class Products(Operator):
        def __init__(self, M: np.ndarray) -> None:
            self.M, self.stats = M, OperatorStats()

        @property
        def shape(self) -> tuple[int, int]:
            return (int(self.M.shape[0]), int(self.M.shape[1]))

        def diag(self) -> np.ndarray:
            return np.diag(self.M).copy()

        def matvec(self, x: np.ndarray) -> np.ndarray:
            return self.M @ x

        def rows(self, idx: object) -> np.ndarray:
            return self.M[np.asarray(idx, dtype=np.intp)]

        def row(self, i: int) -> np.ndarray:
            return self.M[i]

    qp = QP(Products(np.eye(3)), np.ones(3), -1.0, 1.0)
    with pytest.raises(ProblemError, match=r"^the Hessian Q: Halver needs an operator with BLOCK; Products does not declare it "
                                           r"\(its capabilities: none\)$"):
        qpcore.solve(qp, Halver())
    qpcore.check_operator(DenseQ(np.eye(2)), frozenset({Capability.BLOCK, Capability.CROSS}), "X")   # declared
    with pytest.raises(ProblemError, match=r"needs an operator with PREFETCH, ROW_CACHE; DenseQ does not declare them"):
        qpcore.check_operator(DenseQ(np.eye(2)), frozenset({Capability.ROW_CACHE, Capability.PREFETCH}), "X")


def test_every_operator_declares_its_row_precision() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    exact = KernelQ(X, Kernel("rbf", gamma=0.5))
    single = KernelQ(X, Kernel("rbf", gamma=0.5), dtype=np.float32, compute_dtype=np.float32)
    assert exact.row_dtype == np.float64 and exact.row_eps == np.finfo(np.float64).eps
    assert single.row_dtype == np.float32 and single.row_eps >= np.finfo(np.float32).eps
    assert Capability.PREFETCH in exact.capabilities and Capability.ROW_CACHE in exact.capabilities
    d = DenseQ(np.eye(3))
    assert d.row_dtype == np.float64 and d.row_eps == np.finfo(np.float64).eps
    assert Capability.ROW_CACHE not in d.capabilities


def test_work_is_type_checked() -> None:
    state = State(x=np.zeros(2), g=np.zeros(2), status=np.zeros(2, dtype=np.int8), work=HalfWork(tol=1.0))
    assert state.work(HalfWork).tol == 1.0

    @attrs.define
    class OtherWork(Work):
        pass

    with pytest.raises(TypeError, match="holds a HalfWork, not a OtherWork"):
        state.work(OtherWork)
    assert state.work_or_none(OtherWork) is None
    state.set_work(None)
    with pytest.raises(TypeError, match="holds no work state"):
        state.work(HalfWork)


def test_iterate_is_the_loop_without_the_certificate() -> None:
    qp = _box(6)
    s = Halver()
    state = s.init(qp, None, 1e-10)
    seen: list[int] = []
    status = iterate(qp, s, state, max_iter=3, observe=lambda st: seen.append(st.iteration) is not None)
    assert status is Status.MAX_ITER and state.iteration == 3 and seen == [1, 2, 3]
    assert iterate(qp, s, state, observe=lambda st: st.iteration >= 5) is Status.STOPPED and state.iteration == 5
    assert iterate(qp, s, state) is Status.CONVERGED and state.done
    late = s.init(qp, None, 1e-10)
    assert iterate(qp, s, late, deadline=0.0) is Status.TIME_LIMIT and late.iteration == 0


def test_result_keeps_what_resume_needs_unless_asked() -> None:
    qp = _box()
    kept = qpcore.solve(qp, Halver(), tol=1e-8)
    assert kept.state.work(HalfWork).buffer is None          # released: resume needs no buffer
    everything = qpcore.solve(qp, Halver(), tol=1e-8, keep_state="all")
    assert everything.state.work(HalfWork).buffer is not None
    bare = qpcore.solve(qp, Halver(), tol=1e-8, keep_state="none")
    assert bare.state.work_or_none(HalfWork) is None and bare.converged
    with pytest.raises(ProblemError, match="keep_state"):
        qpcore.solve(qp, Halver(), keep_state="some")  # type: ignore[arg-type]


def test_row_cache_is_an_lru_within_its_budget() -> None:
    stats = OperatorStats()
    rc = RowCache(3 * 4 * 8, 4, np.float64, 10, stats)       # three rows of four float64
    assert rc.slots == 3
    for i in range(3):
        rc.put(i, np.full(4, float(i)))
    assert rc.get(0) is not None                               # 0 now most recent, 1 least
    rc.put(3, np.full(4, 3.0))
    assert [i in rc for i in range(4)] == [True, False, True, True]
    assert rc.get(1) is None and (stats.cache_hits, stats.cache_misses) == (1, 1)
    rc.resize(2, 10)                                           # narrower rows: more slots, kept rows cut
    assert rc.slots == 6 and len(rc) == 3
    np.testing.assert_array_equal(rc.peek(3), [3.0, 3.0])
    assert RowCache(0, 4, np.float64, 10, stats).slots == 0
    assert RowCache(1, 4, np.float64, 10, stats).slots == 1    # a positive budget keeps one row
