"""The one loop shared by all strategies: limits, callback, progress, certificate."""

from __future__ import annotations

import functools
import time
from typing import Any, Callable, Literal, ParamSpec, Protocol, TypeVar

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.core.certificate import KKT, kkt
from qpcore.core.optimality import DEFAULT_FEAS_TOL, lagrangian_bound
from qpcore.linalg.projection import bound_start, feasible_start
from qpcore.core.problem import QP, ProblemError
from qpcore.core.validate import as_integer, as_real
from qpcore.core.state import Result, State, Status, Work
from qpcore.core.strategy import Strategy
from qpcore.linalg.threads import blas_threads
from qpcore.backends.vectors import all_finite, is_distributed, max_abs_diff, same_point

FloatArray = NDArray[np.float64]
W = TypeVar("W", bound=Work)

__all__ = ["PrintReporter", "Progress", "Reporter", "Strategy", "iterate", "solve"]


class Progress:
    """A snapshot handed to reporters and callbacks; the strategy's sync, the objective and the gap
    are computed on demand.

    Parameters
    ----------
    qp : QP
        The problem.
    state : State
        The run's state, as the last step left it.
    elapsed : float
        Seconds since the solve started.
    sync : callable, optional
        Brings the state's x and g up to date (the strategy's ``sync_gradient``); called once, on
        the first read of :attr:`state` (or of the objective or gap, which read it).

    Notes
    -----
    A per-iteration recorder reads the strategy's own work state through :meth:`work`, which does
    not sync: for some strategies the sync is costly (the cutting planes accumulate their dual point
    over the data), and a snapshot that only reads the work state leaves the run as it would be
    without a callback.
    """

    __slots__ = ("qp", "elapsed", "stage", "_state", "_sync", "_kkt")

    def __init__(self, qp: QP, state: State, elapsed: float, sync: Callable[[], None] | None = None,
                 stage: str | None = None) -> None:
        self.qp, self.elapsed, self.stage = qp, elapsed, stage
        self._state, self._sync = state, sync
        self._kkt: KKT | None = None

    @property
    def state(self) -> State:
        """The run's state with x and g current (the first read calls the strategy's sync)."""
        if self._sync is not None:
            sync, self._sync = self._sync, None
            sync()
        return self._state

    def work(self, kind: type[W]) -> W:
        """The strategy's work state as the last step left it, checked to be a ``kind``, without the
        sync (:meth:`qpcore.core.state.State.work`).

        Parameters
        ----------
        kind : type
            The strategy's :class:`qpcore.core.state.Work` subclass (e.g. ``CutState``).

        Returns
        -------
        Work
            The live work state (read it; copy what you keep, the next step mutates it).
        """
        return self._state.work(kind)

    @property
    def iteration(self) -> int:
        """Steps taken so far."""
        return self._state.iteration

    @property
    def counters(self) -> dict[str, int]:
        """The strategy's counters as the last step left them (live, without the sync: copy what
        you keep, the next step updates them)."""
        return self._state.counters

    @property
    def objective(self) -> float:
        """½xᵀQx + cᵀx from the strategy's gradient: ½xᵀ(g + c)."""
        s = self.state
        return float(0.5 * s.x @ (s.g + self.qp.c))

    @property
    def gap(self) -> float:
        """The KKT measure at the strategy's gradient (not a certificate)."""
        if self._kkt is None:
            s = self.state
            self._kkt = kkt(self.qp, s.x, s.g)
        return self._kkt.measure


class Reporter(Protocol):
    """Receives progress: ``update`` every ``interval`` seconds, ``finish`` once."""

    interval: float

    def update(self, progress: Progress) -> None:
        """A progress snapshot."""
        ...

    def finish(self, result: Result) -> None:
        """The final result."""
        ...


class PrintReporter:
    """Prints one line per update to a stream (plain text, works everywhere)."""

    def __init__(self, interval: float = 0.5, stream: Any = None) -> None:
        import sys

        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr

    def update(self, progress: Progress) -> None:
        """Print iteration, objective, gap, elapsed."""
        stage = f"  [{progress.stage}]" if progress.stage else ""
        print(f"iter {progress.iteration:>9d}  obj {progress.objective: .10e}  gap {progress.gap:.3e}  "
              f"{progress.elapsed:8.2f}s{stage}", file=self.stream, flush=True)

    def finish(self, result: Result) -> None:
        """Print the status line."""
        print(f"{result.status.code}: {result.status.message}; objective {result.objective:.10e}, "
              f"KKT {result.kkt.measure:.3e}, {result.iterations} iterations", file=self.stream, flush=True)


def _x0_of(x0: FloatArray | Result | ArrayLike | None, n: int) -> FloatArray | None:
    if x0 is None:
        return None
    v: Any = x0.x if isinstance(x0, Result) else x0
    if is_distributed(v):
        # a point on the cluster stays there: its strategy clips it to the bounds chunk by chunk
        if v.shape != (n,):
            raise ProblemError(f"x0: shape mismatch, expected ({n},), got {v.shape}")
        if not all_finite(v):
            raise ProblemError("x0: contains NaN or inf")
        return v  # type: ignore[no-any-return]
    try:
        arr = np.array(x0.x if isinstance(x0, Result) else x0, dtype=np.float64)
    except (TypeError, ValueError):
        raise ProblemError(f"x0: expected a point (an array of {n} numbers) or a Result, got {type(v).__name__}") from None
    if arr.shape != (n,):
        raise ProblemError(f"x0: shape mismatch, expected ({n},), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ProblemError("x0: contains NaN or inf")
    return arr


def iterate(qp: QP, strategy: Strategy, state: State, *, max_iter: int | None = None,
            deadline: float | None = None, observe: Callable[[State], bool] | None = None) -> Status:
    """Step ``strategy`` on ``state`` until it is done, stops, or a limit is hit: the loop under
    :func:`solve`, without its start, reporting or certificate.

    For nested solves (decomposition's subproblems, the cutting planes' reduced QP): build the
    state with ``strategy.init(sub, x0, tol)``, call ``iterate``, read ``state.x`` (call
    ``strategy.finish(sub, state)`` first for a strategy that keeps its point in another form).
    A trace of the inner run goes through ``observe``, not through fields of the library.

    Parameters
    ----------
    qp : QP
        The problem.
    strategy : Strategy
        The method; ``state`` must come from its ``init`` (or ``resume``).
    state : State
        Mutated in place. On ``nonfinite`` its ``x`` is the last finite point of the run (checked
        every 64 steps and at the end) and ``g`` the gradient there.
    max_iter : int, optional
        Bound on ``state.iteration`` (the state's steps, counted from its start).
    deadline : float, optional
        A ``time.perf_counter()`` value; it becomes ``state.deadline`` (which long steps check
        inside). None keeps the state's own (inf unless set).
    observe : callable, optional
        Called with the state after each step; returning True ends the run as ``stopped``.

    Returns
    -------
    Status
        ``converged`` once the strategy set ``state.done``, the strategy's ``state.stop``, or
        ``max_iter``, ``time_limit``, ``nonfinite``, ``stopped``. Not a certificate: only
        :func:`solve` checks the point against the problem.
    """
    if deadline is not None:
        state.deadline = float(deadline)
    limit = max_iter if max_iter is not None else np.iinfo(np.int64).max
    perf = time.perf_counter
    last_finite = state.x.copy()
    while True:
        if state.iteration % 64 == 0 or state.iteration < 8:
            # a cheap periodic check keeps the last finite point to return if NaN/inf appears
            if all_finite(state.x) and all_finite(state.g):
                last_finite = state.x.copy()
            else:
                status = Status.NONFINITE
                break
        if state.stop is not None:
            status = state.stop
            break
        if state.done:
            status = Status.CONVERGED
            break
        if state.iteration >= limit:
            status = Status.MAX_ITER
            break
        if perf() >= state.deadline:
            status = Status.TIME_LIMIT
            break
        strategy.step(qp, state)
        state.iteration += 1
        if observe is not None and observe(state):
            status = Status.STOPPED
            break
    if not all_finite(state.x) or not all_finite(state.g):
        status = Status.NONFINITE
        state.x = last_finite
        state.g = qp.gradient(last_finite)
    return status


P = ParamSpec("P")


def _certificate(qp: QP, x: FloatArray, g: FloatArray, proposal: tuple[FloatArray, FloatArray | None] | None,
                 tol: float) -> KKT:
    """The certificate with the strategy's proposed multipliers (verified), else with the best the
    certificate finds itself; both when the proposal does not certify, keeping the better."""
    if proposal is None:
        return kkt(qp, x, g)
    with_proposal = kkt(qp, x, g, proposal)
    if with_proposal.measure <= tol:
        return with_proposal
    own = kkt(qp, x, g)
    return own if own.measure < with_proposal.measure else with_proposal


def _blas_limited(run: Callable[P, Result]) -> Callable[P, Result]:
    """``run`` with the BLAS pools sized by :func:`qpcore.linalg.threads.blas_threads` (its ``threads``
    keyword) and restored after; the decision goes to ``stats["blas_threads"]`` and its reason."""

    @functools.wraps(run)
    def limited(*args: P.args, **kwargs: P.kwargs) -> Result:
        threads = kwargs.get("threads")
        if threads is not None:
            threads = as_integer(threads, "threads", low=1, or_none=True)
        with blas_threads(threads) as decision:
            result = run(*args, **kwargs)
        result.stats.update(decision.stats())
        return result

    return limited


@_blas_limited
def solve(qp: QP, strategy: Strategy, x0: FloatArray | Result | ArrayLike | None = None, *, tol: float = 1e-3,
          max_iter: int | None = None, time_limit: float | None = None,
          callback: Callable[[Progress], bool | None] | None = None, callback_every: int = 1,
          reporter: Reporter | None = None, certify: bool = True, x0_policy: str = "project",
          feas_tol: float = DEFAULT_FEAS_TOL, resume: Result | None = None,
          keep_state: Literal["resume", "all", "none"] = "resume", threads: int | None = None) -> Result:
    """Run ``strategy`` on ``qp`` until converged or a limit is hit.

    Parameters
    ----------
    qp : QP
        The problem.
    strategy : Strategy
        The method (e.g. ``qpcore_strategies.smo.SMO()``).
    x0 : ndarray or Result, optional
        Warm start: a point, or a previous ``Result`` (its point). An infeasible one is treated
        by ``x0_policy`` before the strategy sees it (:func:`qpcore.linalg.projection.feasible_start`).
    tol : float
        Stopping tolerance on the KKT measure (the MVP gap for an SVM dual).
    max_iter, time_limit : int, float, optional
        Limits; hitting one returns the best point with status ``max_iter``/``time_limit``.
        The time limit is handed to the strategy as ``state.deadline``, which long steps check
        inside their inner loops.
    callback : callable, optional
        Called with a ``Progress`` every ``callback_every`` iterations; returning True stops the
        run with status ``stopped``. This is how a per-iteration trace is kept: the callback
        records what it wants (``progress.elapsed``, values of ``progress.work(Kind)``), e.g.
        ``callback=lambda p: trace.append(p.work(CutState).F_b)``.
    reporter : Reporter, optional
        Receives progress every ``reporter.interval`` seconds.
    certify : bool
        Compute the final KKT certificate and objective with a fresh Q x from the problem
        (True) or from the strategy's gradient (False, cheaper, not a certificate).
    x0_policy : {"project", "raise"}
        What to do with an infeasible x0: project it onto the feasible set (the distance moved is
        ``stats["x0_moved"]``) or raise a ``ProblemError`` naming the violated constraint.
    feas_tol : float
        Feasibility tolerance, relative to :func:`qpcore.core.optimality.feasibility_scale`. A run is
        ``converged`` only when its certificate has KKT measure ≤ tol *and* primal violation
        ≤ feas_tol · scale; a strategy that stops at an infeasible point ends ``infeasible``.
    resume : Result, optional
        Continue from a previous run on the same problem or on a grown one (its variables first,
        new variables appended, e.g. new training points). A strategy whose
        ``resume(qp, state, tol)`` returns a state picks up its own (INCAS keeps its factor); with
        any other (the default returns None) the run starts from the previous point, new
        variables at their bound nearest 0. Exclusive with ``x0``.
    keep_state : {"resume", "all", "none"}
        What ``Result.state`` keeps of the strategy's work state (x, g, bound status and counters
        are always kept). ``"resume"`` (default): what ``resume=`` needs, as each work state says
        in :meth:`qpcore.core.state.Work.release`: INCAS keeps its factor and row buffer (its resume
        extends them); SMO, decomposition, GPCG and the dense active set keep nothing (no row
        buffer, factor or view of Q, and so no kernel row cache, outlives the run through the
        result). ``"all"``: everything, as the last step left it (to inspect a run); ``"none"``:
        no work state.
    threads : int, optional
        BLAS threads for the run (every pool: numpy's and scipy's OpenBLAS), restored after it.
        None (default): the cores free now, unless the user set ``OMP_NUM_THREADS`` or the like
        (:func:`qpcore.linalg.threads.decide_threads`); the decision and its reason are
        ``stats["blas_threads"]`` and ``stats["blas_threads_reason"]`` (None: pools left as found,
        e.g. without threadpoolctl).

    Returns
    -------
    Result
    """
    # every option checked before any work, each refusal one line saying what the option needs
    tol = as_real(tol, "tol", low=0.0, strict=True)
    if max_iter is not None:
        max_iter = as_integer(max_iter, "max_iter", low=0, or_none=True)
    if time_limit is not None:
        time_limit = as_real(time_limit, "time_limit", low=0.0, strict=True, allow_inf=True)
    feas_tol = as_real(feas_tol, "feas_tol", low=0.0, strict=True, allow_inf=True)
    callback_every = as_integer(callback_every, "callback_every", low=1)
    if callback is not None and not callable(callback):
        raise ProblemError(f"callback: expected a callable or None, got {type(callback).__name__}")
    if keep_state not in ("resume", "all", "none"):
        raise ProblemError(f"keep_state: {keep_state!r} is not one of 'resume', 'all', 'none'")
    if x0_policy not in ("project", "raise"):
        raise ProblemError(f"x0_policy: {x0_policy!r} is not one of 'project', 'raise'")
    t0 = time.perf_counter()
    deadline = t0 + time_limit if time_limit is not None else np.inf
    state: State | None = None
    user = qp
    form = qp.slack_form() if qp.k and not strategy.takes_inequalities else None
    if form is not None:
        # the strategy takes the box and equality rows only: it runs on z = [x; Cx], and the
        # result, multipliers and certificate below are the user's again
        qp = form.qp
        if resume is not None and x0 is None:
            x0, resume = resume.x, None
        given = _x0_of(x0, user.n)
        if given is not None and not is_distributed(given):
            x0 = form.lift(given)
    if resume is not None:
        if x0 is not None:
            raise ProblemError("x0 and resume: give one warm start, not both")
        n_old = int(resume.x.shape[0])
        if n_old > qp.n:
            raise ProblemError(f"resume: the previous run has {n_old} variables, more than the problem's {qp.n}")
        state = strategy.resume(qp, resume.state, tol)
        if state is None:
            if is_distributed(resume.x):
                raise ProblemError("resume: a chunked run continues from its point; pass x0=result instead")
            x0 = np.concatenate([resume.x, np.clip(np.zeros(qp.n - n_old), qp.lb[n_old:], qp.ub[n_old:])])
    x0_moved = 0.0
    if state is None:
        start = _x0_of(x0, qp.n)
        if start is not None and not is_distributed(start):
            start, x0_moved = feasible_start(qp, start, x0_policy, feas_tol)
        state = strategy.init(qp, start, tol)
    state.deadline = float(deadline)
    perf = time.perf_counter
    next_report = t0 + reporter.interval if reporter is not None else np.inf

    def observe(st: State) -> bool:
        nonlocal next_report
        now = perf()
        # a strategy that keeps only part of g current between steps (INCAS: g_S only, until its
        # next pricing) brings it up to date when a snapshot's state is first read
        def sync() -> None:
            strategy.sync_gradient(qp, st)

        if now >= next_report:
            assert reporter is not None
            reporter.update(Progress(qp, st, now - t0, sync, strategy.stage(st)))
            next_report = now + reporter.interval
        if callback is not None and st.iteration % callback_every == 0:
            return bool(callback(Progress(qp, st, perf() - t0, sync, strategy.stage(st))))
        return False

    watch = observe if reporter is not None or callback is not None else None
    status = iterate(qp, strategy, state, max_iter=max_iter, observe=watch)
    before = state.x
    strategy.finish(qp, state)
    solve_seconds = perf() - t0
    if not all_finite(state.x) or not all_finite(state.g):
        # the finish hook wrote a non-finite point: return the one the loop ended with
        status = Status.NONFINITE
        if before is not state.x and all_finite(before):
            state.x = before
        else:      # overwritten in place: a feasible start of the problem's own (rows included)
            state.x = bound_start(qp) if qp.m else np.clip(np.zeros(qp.n), qp.lb, qp.ub)
        state.g = qp.gradient(state.x)
    x = state.x
    if certify and state.exact is not None and same_point(state.exact[0], x):
        g = state.exact[1]   # the strategy's own fresh qp.gradient(x) at this very point
    else:
        g = qp.gradient(x) if certify else state.g
    proposal = strategy.multipliers(qp, state)
    if form is not None:
        x, g = form.restrict(x), np.asarray(g[:user.n])
        if proposal is not None:
            proposal = form.split(proposal[0])
    cert = _certificate(user, x, g, proposal, tol)
    objective = float(0.5 * x @ (g + user.c))
    qp = user
    if state.primal is not None and form is None:
        # the strategy's primal point, judged by the problem alone: a lower bound and the gap
        lower = lagrangian_bound(qp, state.primal)
        cert = attrs.evolve(cert, lower_bound=lower, duality_gap=objective - lower)
    if strategy.criterion == "relative_gap":
        gap_met = (cert.duality_gap <= tol * abs(cert.lower_bound) * (1 + 1e-9) + 1e-12
                   or cert.duality_gap <= strategy.tol_abs)
    else:
        gap_met = cert.measure <= tol * (1 + 1e-9) + 1e-12
    stopped_by = status
    if not cert.feasible(feas_tol) and status not in (Status.UNBOUNDED, Status.NONFINITE, Status.PRIMAL_INFEASIBLE):
        # off the feasible set: never a solution, nor a "best point" to stop at, whatever ended the
        # run (a limit, a stall); what ended it stays in stats["stopped_by"]
        status = Status.INFEASIBLE
    elif status is Status.CONVERGED:
        if not gap_met:
            # the strategy's incremental gradient drifted; say so rather than claim convergence
            status = Status.STALLED
        elif state.nonconvex:
            status = Status.NONCONVEX        # a KKT point of a non-convex problem is not certified a minimum
    Qs = qp.Q.stats
    stats: dict[str, Any] = {
        "seconds": solve_seconds,
        "total_seconds": perf() - t0,
        "rows_computed": Qs.rows_computed,
        "cache_hits": Qs.cache_hits,
        "cache_misses": Qs.cache_misses,
        "gradient_drift": (max_abs_diff(g, state.g if form is None else state.g[:user.n]) if certify
                           else float("nan")),
        "x0_moved": x0_moved,
        "stopped_by": stopped_by.code,
        **state.counters,
        **strategy.report(state),
    }
    if keep_state == "none":
        state.set_work(None)
    elif keep_state == "resume":
        state.release()
    result = Result(x=x, multipliers=cert.multipliers, z=cert.z, status=status, objective=objective, kkt=cert,
                    iterations=state.iteration, stats=stats, state=state)
    if reporter is not None:
        reporter.finish(result)
    return result
