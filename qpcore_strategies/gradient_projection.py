"""Moré–Toraldo gradient projection with conjugate gradients (GPCG): the strategy, its cycles and phases.

The search primitives it is built from (the projected search, products under a deadline, the CG
run on a face, the face factor of the Newton steps) live in :mod:`qpcore_strategies.projected_search`;
its direct steps (the face's minimizer by a dense solve, cut at the first bound: the primal
active-set step) and the moves out of a stuck cycle (variables settled onto their bounds, the
maximal violating pair, the steepest feasible direction) in :mod:`qpcore_strategies.gpcg_direct`.

Moré & Toraldo, "On the solution of large quadratic programming problems with bound
constraints", SIAM J. Optim. 1 (1991). An outer **cycle** is a gradient-projection phase that
identifies the face, then conjugate-gradient phases on that face, each followed by a projected
search along its step, repeated while the binding set equals the active set.

The feasible set is the box ``lb ≤ x ≤ ub`` (any mix of finite and infinite bounds, fixed
variables ``lb_i = ub_i`` included), optionally with equality rows ``A x = b``: one row (the
SVM-dual shape; zero coefficients ``a_i = 0`` are variables that move alone), projected by
:func:`qpcore.linalg.projection.project_box_equality`; disjoint groups (ν-SVC's two rows), projected
group by group (:func:`qpcore.linalg.projection.project_groups`), with one multiplier per group and
the pair fallback within a group; or general rows, projected by the exact dual Newton method
(:func:`qpcore.linalg.projection.project_rows`), measured like the certificate (best multipliers) and
with the steepest feasible descent direction of a small LP as the fallback of a stuck cycle. CG
runs on the face restricted to the null space of the rows there. Only ``matvec``, ``diag`` and
small principal blocks of the operator are used, so it runs on ``DenseQ``, ``KernelQ`` and
``GramQ`` alike.

**Where it is the right choice.** GPCG needs only products with Q, and each cycle changes many
bounds at once: it is the strategy for box QPs whose Q is available as a fast matvec (dense, a
Gram or low-rank operator, a PDE-like sparse Q) with many variables changing bounds, general
equality rows, and tight tolerances (the dense box QPs of ``benchmarks.qp``). On kernel SVM duals
each product costs a pass over every kernel row, and the face's conditioning grows with C, so
SMO, decomposition and INCAS are far faster there (sklearn's digits, C = 10: about 1000× LIBSVM);
the ``"auto"`` strategy never picks it.

**Bounded steps.** One cycle can cost hundreds of products with Q, so one ``step`` is a bounded
piece of it, and the cycle resumes in the next step:

- a gradient-projection step: one projected search along the projected gradient (the phase
  continues in the next step until the active set settles, the decrease falls below ``eta2`` of
  the phase's best, or ``max_gp`` searches);
- a CG step: at most ``cg_per_step`` CG iterations on the current face. The CG run (its step,
  residual and direction) is kept in :class:`GPCGWork` and resumed by the next step; when the run
  ends, the same step takes the projected search along its step (or a direct face solve).

So ``max_iter`` bounds the work (a step costs at most ``cg_per_step`` products plus one
projected search and one gradient refresh), and inside a step every product, CG iteration and
search round checks the run's deadline (``state.deadline``): on a time limit the step returns at
once with ``x`` and ``g`` from the last accepted move. Products with a ``KernelQ``, which cost one
kernel row per nonzero of the vector, are split into slices of 1024 rows with a clock check
between them, so a time limit holds even when one product takes seconds.

**Faces of a dense Q.** With a ``DenseQ`` and no equality row (``face_solver="auto"``) the CG
phase is replaced by Newton steps on the face, −Q_FF⁻¹ g_F through a Cholesky factor of the free
block, each followed by the exact projected search (so a step may stop at bounds and shrink the
face, as in a primal active-set method that adds many bounds at once). The factor is kept across
faces: a face a few variables away from the factored one is solved through the Schur complement
of the difference (plus one step of iterative refinement), and a new factor is taken only when
that would cost more. The gradient-projection phase then runs until the face has nearly settled
(``newton_settle``). On a dense Q a CG iteration reads all of Q, and the ill-conditioned faces of
``benchmarks.qp`` (condition up to 1e8) took hundreds of them; the Newton step is exact.

**Honest ends.** Convergence is claimed only after the measure (:func:`qpcore.core.optimality.measure`)
meets tol at a freshly computed gradient. Negative curvature met in CG or in the
gradient-projection phase (``pᵀQp < 0`` beyond the PSD check's relative tolerance: Q is not
PSD, possible with an operator that is not checked on construction; a Q that passed the check is
never called nonconvex) sets ``state.nonconvex``; the method then follows
that direction to the boundary and goes on to a stationary point, which ``qpcore.solve``
reports as ``nonconvex``, never ``converged``. A cycle that cannot move x tries a direct face
solve, then the maximal violating pair (or the most violating single variable); ``stall``
cycles in a row whose decrease is at rounding level end the run as ``stalled``.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import principal_block
from qpcore.backends.operators import DenseQ, psd_tolerance
from qpcore.core.certificate import kkt
from qpcore.core.optimality import measure, projected_gradient, scores_of
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy
from qpcore_strategies.gpcg_direct import cut_step, face_direction, pair_direction, settle
from qpcore_strategies.projected_search import (SearchResult, _CGRun, _Deadline, _eq_point, _FaceFactor, _groups,
                                                _hit_times, _lstsq, _product, _row_basis, _row_sums, _snap,
                                                projected_search)

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

__all__ = ["GPCG", "GPCGWork", "SearchResult", "projected_search"]   # the search re-exported for callers

@attrs.define(slots=True, eq=False)
class GPCGWork(Work):
    """GPCG's work state (``state.work(GPCGWork)``): the tolerance and where the current cycle stands.

    Attributes
    ----------
    tol : float
        The requested tolerance.
    phase : {"gp", "cg"}
        What the next step does: a gradient-projection search, or CG on the current face.
    gp_searches, gp_best : int, float
        Searches and largest decrease of the current gradient-projection phase (no searches
        yet with ``phase == "gp"``: the next step begins a cycle).
    cg : object or None
        The CG run in progress (resumed by the next step), None between runs.
    cg_phases, spent : int
        CG phases in this cycle; CG iterations since the last face solve in this cycle.
    face, face_spent : ndarray of bool or None, int
        The free set of the last CG run, and CG iterations spent on that very face (across
        cycles) since the last face solve.
    direct : bool
        Whether this cycle's CG phases have been replaced by steps of the primal active-set
        method (see :meth:`GPCG.step`).
    cycle_x : ndarray or None
        ``x`` when the cycle began (the very object: x has not moved while ``state.x is cycle_x``).
    cycle_decrease : float
        The objective's decrease in this cycle.
    flat : int
        Cycles in a row with a decrease at rounding level and no halving of the measure.
    best_measure : float
        The smallest measure seen at the end of a cycle.
    qscale : float
        max |diag Q|, the scale of the negative-curvature test (nan until needed).
    chol : object or None
        The Cholesky factor of a face block (and its Schur complement for the current face) from
        the last Newton steps.
    """

    tol: float
    phase: str = "gp"
    gp_searches: int = 0
    gp_best: float = 0.0
    cg: _CGRun | None = None
    cg_phases: int = 0
    spent: int = 0
    face: BoolArray | None = None
    face_spent: int = 0
    direct: bool = False
    cycle_x: FloatArray | None = None
    cycle_decrease: float = 0.0
    flat: int = 0
    best_measure: float = float("inf")
    qscale: float = float("nan")
    chol: _FaceFactor | None = None

    def release(self) -> None:
        """GPCG has no ``resume``: a finished run keeps neither the CG run nor the face factor."""
        return None


def _measure(qp: QP, x: FloatArray, g: FloatArray) -> float:
    """The stopping measure at (x, g), what the certificate reports: :func:`qpcore.core.optimality.measure`,
    or for general rows the certificate's own (the projected reduced gradient with the best λ)."""
    if qp.equality.kind == "general":
        return kkt(qp, x, g).measure
    return measure(scores_of(qp, x, g))


@attrs.frozen
class GPCG(Strategy):
    """Gradient projection + conjugate gradients (Moré–Toraldo 1991), in bounded steps.

    For box constraints (fixed variables included), with or without equality rows (one row with
    zero coefficients included, disjoint groups, general rows). One ``step`` is one gradient-projection search or at most
    ``cg_per_step`` CG iterations (see the module docstring). Counters in ``Result.stats``:
    ``gp_steps`` (projected-gradient searches), ``cg_steps`` (CG iterations), ``cg_searches``
    (projected searches along CG steps), ``boundary_moves`` (moves along a direction of zero or
    negative curvature), ``face_solves`` (direct face minimizations, the fallback when CG is
    stuck), ``settled`` (snaps of variables stuck a rounding error inside a bound),
    ``pair_steps`` (searches along the maximal violating pair when a whole cycle could not move)
    and ``negative_curvature`` (directions with pᵀQp < 0 met).

    Parameters
    ----------
    mu : float
        Sufficient-decrease constant of the projected searches.
    eta1 : float
        CG stops when an iteration's decrease falls below eta1 of the largest one.
    eta2 : float
        Gradient projection stops when a step's decrease falls below eta2 of the largest one.
    max_gp : int
        Cap on the gradient-projection searches of one phase.
    max_cg : int
        Cap on the CG iterations of one CG phase (and on CG phases per cycle).
    segments : int
        Breakpoints examined per round of the exact projected search (box case).
    max_face_solve : int
        When CG keeps running into bounds on one face, or a whole cycle cannot move x, the face
        problem is solved directly through its principal block if it has at most this many
        variables.
    cg_per_step : int
        CG iterations per step; a longer CG phase resumes in the next step. With the single
        search of a gradient-projection step, this bounds the products of one step, so
        ``max_iter`` bounds the work.
    stall : int
        Cycles in a row whose decrease is at rounding level (≤ 1e-12 of Σ|x_i|(|g_i| + |c_i|))
        without halving the measure, after which the run ends as ``stalled``.
    face_solver : {"auto", "cg", "cholesky"}
        How a cycle's second phase minimizes on the face. ``"cg"``: conjugate gradients
        (Moré–Toraldo). ``"cholesky"``: a Newton step on the face through a Cholesky factor of
        the free block Q_FF, followed by the exact projected search along it (box constraints
        only; with an equality row CG is used). ``"auto"`` (default): Cholesky when Q is a
        ``DenseQ`` and there is no equality row, CG otherwise. On a dense Q a CG iteration reads
        all of Q while a factor of a face of k variables costs about k/20 such products (BLAS-3
        against memory-bound), and ill-conditioned faces need hundreds of CG iterations where
        the Newton step is exact; measured on the dense families of ``benchmarks.qp``.
    direct_max : int
        Largest face the Cholesky mode factors; a larger face is handled by CG.
    newton_settle, newton_eta2 : float
        In the Cholesky mode the gradient-projection phase ends when a search changes the bound
        status of at most ``newton_settle``·n variables, or its decrease falls below
        ``newton_eta2`` of the phase's best (in place of ``eta2`` and an unchanged active set):
        measured on ``benchmarks.qp``'s dense families, where stopping at the first weak search
        made the faces given to the factorization several times larger.
    """

    mu: float = 0.01
    eta1: float = 0.1
    eta2: float = 0.25
    max_gp: int = 50
    max_cg: int = 500
    segments: int = 64
    max_face_solve: int = 2000
    cg_per_step: int = 10
    stall: int = 50
    face_solver: str = "auto"
    direct_max: int = 8000
    newton_settle: float = 0.01
    newton_eta2: float = 0.001

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Check the problem shape and start from the projection of x0 (or 0) onto the feasible set.

        Parameters
        ----------
        qp : QP
            The problem (box constraints, with or without equality rows).
        x0 : ndarray, optional
            A start (``qpcore.solve`` hands over a feasible one); 0 when None.
        tol : float
            The tolerance on the measure.

        Returns
        -------
        State
        """
        self.check(qp)
        if self.cg_per_step < 1 or self.max_cg < 1 or self.max_gp < 1:
            raise ProblemError("GPCG: cg_per_step, max_cg and max_gp must be ≥ 1")
        if self.face_solver not in ("auto", "cg", "cholesky"):
            raise ProblemError(f"GPCG: face_solver must be 'auto', 'cg' or 'cholesky', got {self.face_solver!r}")
        v = np.zeros(qp.n) if x0 is None else np.asarray(x0, dtype=np.float64)
        x = _eq_point(qp, v) if qp.m else np.clip(v, qp.lb, qp.ub)
        g = _product(qp, x) + qp.c          # on a dense Q through the BLAS pool of the factorizations
        state = State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub), work=GPCGWork(tol=tol))
        state.exact = (x, g)
        state.counters.update(gp_steps=0, cg_steps=0, cg_searches=0, boundary_moves=0, face_solves=0, settled=0,
                              pair_steps=0, negative_curvature=0, newton_steps=0, factorizations=0,
                              factor_updates=0)
        self._judge(qp, state)
        return state

    def _judge(self, qp: QP, state: State) -> None:
        """Set ``state.done`` when the measure meets tol at an exact gradient.

        The strategy's running gradient is checked first (O(n)); when it meets tol and was not
        computed afresh at this very x, one product confirms it (and becomes ``state.g``).
        """
        tol = state.work(GPCGWork).tol
        if _measure(qp, state.x, state.g) > tol:
            return
        ex = state.exact
        if ex is not None and ex[0] is state.x and ex[1] is state.g:
            state.done = True
            return
        try:
            self._refresh(qp, state)
        except _Deadline:
            return
        state.done = _measure(qp, state.x, state.g) <= tol

    def step(self, qp: QP, state: State) -> None:
        """One bounded piece of a cycle: a gradient-projection search, or up to ``cg_per_step``
        CG iterations (with the projected search that ends a CG phase).

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            Mutated in place; on the deadline it is left at the last accepted move.
        """
        work = state.work(GPCGWork)
        try:
            if work.phase == "gp":
                self._gp_step(qp, state, work)
            else:
                self._cg_step(qp, state, work)
        except _Deadline:
            return      # x and g are those of the last accepted move; the loop ends on the time limit
        if state.stop is None:
            self._judge(qp, state)

    # -- the two kinds of step ------------------------------------------------------------------

    def _gp_step(self, qp: QP, state: State, work: GPCGWork) -> None:
        """One projected search along the projected gradient (Moré–Toraldo's first phase)."""
        if work.gp_searches == 0:          # a new cycle
            work.cycle_x, work.cycle_decrease, work.cg_phases, work.spent = state.x, 0.0, 0, 0
        x, g = state.x, state.g
        free = (x > qp.lb) & (x < qp.ub)
        pg = projected_gradient(x, self._reduced(qp, free, g), qp.lb, qp.ub)
        if not pg.any():
            self._end_gp(work)
            return
        Qpg = _product(qp, pg, state.deadline)
        curv = float(pg @ Qpg)
        if curv < 0.0 and curv < -self._curvature_tol(qp, work, pg, Qpg):
            self._negative(state)
        alpha = float(pg @ pg) / curv if curv > 0 else 1.0   # the Cauchy step
        active = bound_status(x, qp.lb, qp.ub)
        res = projected_search(qp, x, g, -pg if qp.m == 0 else -g, alpha, mu=self.mu, segments=self.segments,
                               Qd=-Qpg if qp.m == 0 else None, deadline=state.deadline)
        state.counters["gp_steps"] += 1
        work.gp_searches += 1
        if res.decrease == np.inf:
            state.stop = Status.UNBOUNDED
            return
        if res.decrease <= 0.0:
            self._end_gp(work)
            return
        self._apply(qp, state, res)
        work.gp_best = max(work.gp_best, res.decrease)
        changed = int(np.count_nonzero(active != bound_status(state.x, qp.lb, qp.ub)))
        if self._newton_mode(qp):
            # a Newton step costs a factor (or its update) whatever the face, so the phase runs
            # until the face has nearly settled rather than stopping at the first weak search
            stop = changed <= self.newton_settle * qp.n or res.decrease <= self.newton_eta2 * work.gp_best
        else:
            stop = changed == 0 or res.decrease <= self.eta2 * work.gp_best
        if stop or work.gp_searches >= self.max_gp:
            self._end_gp(work)

    def _cg_step(self, qp: QP, state: State, work: GPCGWork) -> None:
        """Start or resume a CG run on the current face; end it with its projected search."""
        run = work.cg
        if run is not None and run.x is not state.x:
            run = work.cg = None            # defensive: a run belongs to the point it started from
        if run is None:
            if work.cg_phases >= self.max_cg:
                self._end_cycle(qp, state, work)
                return
            if self._newton_mode(qp):
                moved = self._newton_step(qp, state, work)
                if moved is not None:
                    work.cg_phases += 1
                    self._after_phase(qp, state, work, moved)
                    return
            free = (state.x > qp.lb) & (state.x < qp.ub)
            nfree = int(np.count_nonzero(free))
            if work.face is None or not np.array_equal(free, work.face):
                work.face, work.face_spent = free, 0
            # CG phases that keep running into bounds (this cycle), or that keep returning to
            # one face cycle after cycle (CG cut short by eta1 on an ill-conditioned face), have
            # spent more products than the face's dimension: a direct face solve (|F|³ flops ≤
            # |F| products with Q) is cheaper
            if work.direct or (0 < nfree <= self.max_face_solve and max(work.spent, work.face_spent) > nfree):
                # … and once in this cycle, the primal active-set method takes over: face solve,
                # cut at the first bound, face solve on the smaller face, until a face's minimizer
                work.cg_phases += 1
                work.spent = work.face_spent = 0
                direct = self._direct_step(qp, state)
                work.direct = direct == "blocked"
                if not work.direct:
                    self._after_phase(qp, state, work, direct == "min")
                return
            run = self._start_cg(qp, state)
            if run is None:
                self._end_cycle(qp, state, work)
                return
            work.cg = run
        outcome = self._iterate(qp, state, work, run)
        if outcome is None:
            return                          # the step's budget is spent: the run resumes next step
        work.cg = None
        work.cg_phases += 1
        work.spent += run.iters
        work.face_spent += run.iters
        moved = self._finish_cg(qp, state, run, outcome)
        if state.stop is None:
            self._after_phase(qp, state, work, moved)

    # -- phases and cycles ----------------------------------------------------------------------

    @staticmethod
    def _end_gp(work: GPCGWork) -> None:
        work.phase, work.gp_searches, work.gp_best, work.cg = "cg", 0, 0.0, None

    def _after_phase(self, qp: QP, state: State, work: GPCGWork, moved: bool) -> None:
        """Another CG phase while x moved and the binding set is the active set; else the cycle ends."""
        if state.stop is not None:
            return
        if (moved and work.cg_phases < self.max_cg and self._binding_is_active(qp, state)
                and _measure(qp, state.x, state.g) > work.tol):
            return                          # phase stays "cg": the next step starts a run on the new face
        self._end_cycle(qp, state, work)

    def _end_cycle(self, qp: QP, state: State, work: GPCGWork) -> None:
        """Refresh g (one product per cycle: the gradient cannot drift); a cycle that could not move
        x gets the fallbacks; rounding-level cycles are counted for the stall test."""
        work.phase, work.gp_searches, work.gp_best, work.cg, work.direct = "gp", 0, 0.0, None, False
        self._refresh(qp, state)
        m = _measure(qp, state.x, state.g)
        if m <= work.tol:
            work.flat = 0
            return
        size = float(np.abs(state.x) @ (np.abs(state.g) + np.abs(qp.c)))
        stuck = state.x is work.cycle_x
        if stuck or work.cycle_decrease <= 1e-12 * size:
            # the cycle could not move x, or moved it by rounding only: gradient projection and CG
            # are stuck on an ill-conditioned or singular face, or on variables a rounding error
            # inside a bound (b at the edge of its range leaves them 1e-13 of room). Those
            # variables go onto their bound; else one direct minimization on the face, while it
            # is small enough to factor; else one search along the maximal violating pair, which
            # descends whenever the measure is positive
            if settle(qp, state) or self._face_solve(qp, state) or self._pair_step(qp, state):
                self._refresh(qp, state)
                m = _measure(qp, state.x, state.g)
                if m <= work.tol:
                    work.flat = 0
                    return
            elif stuck:
                if state.stop is None:
                    state.stop = Status.STALLED   # nothing moves x: the point is the best found
                return
        if work.cycle_decrease <= 1e-12 * size and not m <= 0.5 * work.best_measure:
            work.flat += 1
            if work.flat >= self.stall:
                state.stop = Status.STALLED   # creeping at rounding level: the point is the best found
        else:
            work.flat = 0
        work.best_measure = min(work.best_measure, m)

    def _refresh(self, qp: QP, state: State) -> None:
        """g = Qx + c afresh (deadline-aware), recorded as exact; the bound status with it."""
        g = _product(qp, state.x, state.deadline)
        g += qp.c
        state.g = g
        state.exact = (state.x, g)
        state.status = bound_status(state.x, qp.lb, qp.ub)

    def _apply(self, qp: QP, state: State, res: SearchResult) -> None:
        assert res.Qs is not None
        state.g = state.g + res.Qs   # the snap below moves x by ulps: g is refreshed every cycle
        state.x = _snap(qp, res.x.copy())
        state.work(GPCGWork).cycle_decrease += res.decrease

    # -- pieces ---------------------------------------------------------------------------------

    @staticmethod
    def _reduced(qp: QP, free: BoolArray, g: FloatArray) -> FloatArray:
        """g − Aᵀλ, λ making it orthogonal to each row (group) on the free set; g without rows."""
        if qp.m == 0:
            return g
        if qp.equality.kind == "general":
            lam = _lstsq(qp.A[:, free].T, g[free]) if free.any() else np.zeros(qp.m)
            res: FloatArray = g - qp.A.T @ lam
            return res
        bins, a, m = _groups(qp)
        af = a * free
        nrm = _row_sums(bins, m, af * af)
        lam = np.divide(_row_sums(bins, m, af * g), nrm, out=np.zeros(m), where=nrm > 0)
        out: FloatArray = g - np.append(lam, 0.0)[bins] * a
        return out

    def _binding_is_active(self, qp: QP, state: State) -> bool:
        """Whether every variable at a bound is held there by the reduced gradient (Moré–Toraldo's
        switch); fixed variables are held whatever their gradient."""
        x, g = state.x, state.g
        movable = qp.lb < qp.ub
        at_lb, at_ub = x <= qp.lb, x >= qp.ub
        r = self._reduced(qp, ~(at_lb | at_ub), g)
        return bool(np.all(r[at_lb & movable] >= 0) and np.all(r[at_ub & movable] <= 0))

    @staticmethod
    def _curvature_tol(qp: QP, work: GPCGWork, p: FloatArray, Qp: FloatArray) -> float:
        """How negative pᵀQp may be before Q counts as nonconvex: the PSD check's relative tolerance
        (:func:`qpcore.backends.operators.psd_tolerance`, one home for it) · ‖Q‖ (estimated) · ‖p‖², so a Q
        that check would accept is never called nonconvex here; unlimited for a Q that passed it on
        construction (``psd`` True): negative curvature within it is the rounding of its data
        (VALUES: −1.2e-6 of λ_max), and the check's verdict stands."""
        if qp.Q.psd is True:
            return float("inf")
        if np.isnan(work.qscale):
            work.qscale = float(np.abs(qp.Q.diag()).max(initial=0.0))
        pmax = float(np.abs(p).max(initial=0.0))
        est = float(np.abs(Qp).max(initial=0.0)) / pmax if pmax > 0 else 0.0
        return psd_tolerance(qp.Q) * max(work.qscale, est) * float(p @ p)

    @staticmethod
    def _negative(state: State) -> None:
        """Negative curvature met: Q is not PSD, so no stationary point is certified a minimizer."""
        state.nonconvex = True
        state.counters["negative_curvature"] += 1

    def _start_cg(self, qp: QP, state: State) -> _CGRun | None:
        """A CG run on the face of the current x (None when the face has no free variable)."""
        x, g = state.x, state.g
        free = (x > qp.lb) & (x < qp.ub)
        nfree = int(np.count_nonzero(free))
        if nfree == 0:
            return None
        af: FloatArray | None = None
        unit: FloatArray | None = None
        if qp.m:
            # the rows (groups) on the free set: disjoint supports, so normalizing each makes
            # them orthonormal
            coef = qp.equality.coef
            if qp.equality.kind == "general":
                # an orthonormal basis of the rows on the free set (dependent ones dropped)
                af = _row_basis(qp.A, np.flatnonzero(free))
            else:
                rows = qp.A * free
                norms = np.sqrt((rows * rows).sum(axis=1))
                touched = norms > 0
                af = rows[touched] / norms[touched, None] if touched.any() else None
            # face optimality in the units of the measure: with an equality row it is in g/a, so
            # a residual r_i = a_i(g_i/a_i − λ) is read divided by |a_i|
            unit = np.where(coef != 0, np.abs(coef), 1.0)
        z = np.zeros(x.size)
        # in exact arithmetic CG ends within dim(face) iterations; running past that means
        # rounding on an ill-conditioned face, where a direct face solve is the better step
        run = _CGRun(x=x, free=free, af=af, unit=unit, d=z, r=z, p=z, rr=0.0,
                     limit=min(self.max_cg, nfree - (0 if af is None else af.shape[0]) + 1))
        run.r = -run.proj(g)
        run.p = run.r.copy()
        run.rr = float(run.r @ run.r)
        return run

    def _iterate(self, qp: QP, state: State, work: GPCGWork, run: _CGRun) -> str | None:
        """Up to ``cg_per_step`` CG iterations; the outcome ("done", "limit", "curvature"), or
        None when the run goes on in the next step."""
        tol = work.tol
        for _ in range(self.cg_per_step):
            if run.iters >= run.limit:
                return "limit"
            if run.unit is None:
                if np.sqrt(run.rr) <= 0.1 * tol:      # the face is optimal well within tol
                    return "done"
            elif float(np.abs(run.r / run.unit).max(initial=0.0)) <= 0.1 * tol:
                return "done"
            if state.out_of_time():
                return None
            Qp = run.proj(_product(qp, run.p, state.deadline))
            pQp = float(run.p @ Qp)
            state.counters["cg_steps"] += 1
            run.iters += 1
            if pQp <= 1e-14 * run.rr:
                # zero (or, by rounding, negative) curvature: a flat or descending ray; below
                # rounding, negative curvature: Q is not PSD
                if pQp < 0.0 and pQp < -self._curvature_tol(qp, work, run.p, Qp):
                    self._negative(state)
                return "curvature"
            step = run.rr / pQp
            run.d += step * run.p
            dec = 0.5 * step * run.rr           # the face quadratic's decrease in this iteration
            run.best = max(run.best, dec)
            run.r -= step * Qp
            rr_new = float(run.r @ run.r)
            run.p *= rr_new / run.rr
            run.p += run.r
            if run.af is not None:
                # keep p on the face: rounding drift along a would corrupt pᵀQp (Q p is projected)
                run.p -= run.af.T @ (run.af @ run.p)
            run.rr = rr_new
            if dec <= self.eta1 * run.best:
                return "done"
        return None

    def _finish_cg(self, qp: QP, state: State, run: _CGRun, outcome: str) -> bool:
        """The projected search along the CG step (or a face solve, or a boundary move); True if x moved."""
        if outcome == "curvature":
            state.counters["boundary_moves"] += 1
            before = state.x
            if not self._to_boundary(qp, state, run.d, run.p):
                state.stop = Status.UNBOUNDED
                return False
            return state.x is not before
        if outcome == "limit" and run.limit < self.max_cg and self._face_solve(qp, state):
            return True
        if not run.d.any():
            return False
        res = projected_search(qp, state.x, state.g, run.d, 1.0, mu=self.mu, segments=self.segments,
                               deadline=state.deadline)
        state.counters["cg_searches"] += 1
        if res.decrease == np.inf:
            state.stop = Status.UNBOUNDED
            return False
        if res.decrease <= 0.0:
            return False
        self._apply(qp, state, res)
        return True

    def _newton_mode(self, qp: QP) -> bool:
        """Whether faces are minimized by Newton steps through a Cholesky factor (see ``face_solver``)."""
        if self.face_solver == "cg" or qp.m:
            return False
        return self.face_solver == "cholesky" or isinstance(qp.Q, DenseQ)

    def _newton_step(self, qp: QP, state: State, work: GPCGWork) -> bool | None:
        """The face's Newton step −Q_FF⁻¹ g_F, then the exact projected search along it (which may
        stop at a bound and so shrink the face); True if x moved, None when the face is empty or
        too large to factor (CG takes over)."""
        x, g = state.x, state.g
        F = np.flatnonzero((x > qp.lb) & (x < qp.ub))
        if F.size == 0 or F.size > self.direct_max:
            return None
        if 1e-10 * float(F.size) ** 3 > state.time_left():
            return None                     # a factorization that would overrun the time limit
        sol = self._face_newton(qp, state, work, F, g[F])
        state.counters["newton_steps"] += 1
        d = np.zeros(x.size)
        d[F] = sol
        return self._search_apply(qp, state, d)

    def _search_apply(self, qp: QP, state: State, d: FloatArray) -> bool:
        """The exact projected search along d from x, applied when it decreases q; an unbounded
        ray ends the run. True if x moved."""
        if not d.any():
            return False
        res = projected_search(qp, state.x, state.g, d, 1.0, mu=self.mu, segments=self.segments,
                               deadline=state.deadline)
        if res.decrease == np.inf:
            state.stop = Status.UNBOUNDED
            return False
        if not res.decrease > 0.0:
            return False
        self._apply(qp, state, res)
        return True

    def _face_newton(self, qp: QP, state: State, work: GPCGWork, F: NDArray[np.intp], gF: FloatArray) -> FloatArray:
        """−Q_FF⁻¹ g_F through the face factor: the last factor and a Schur complement while the
        face is a few variables away from the factored one, else a new Cholesky factor; least
        squares when Q_FF is not positive definite (a semidefinite Q), as in the face solve."""
        if work.chol is not None:
            # a face a few variables away from the factored one: a Schur complement, not a new factor
            sol = work.chol.solve(F, -gF)
            if sol is not None:
                state.counters["factor_updates"] += 1
                return sol
        try:
            work.chol = _FaceFactor(qp.Q, F)
        except np.linalg.LinAlgError:
            work.chol = None
            state.counters["face_solves"] += 1
            out: FloatArray = _lstsq(np.asarray(principal_block(qp.Q, F), dtype=np.float64), -gF)
            return out
        state.counters["factorizations"] += 1
        first = work.chol.solve(F, -gF, fresh=True)
        assert first is not None
        return first

    def _face_solve(self, qp: QP, state: State) -> bool:
        """The face's minimizing step followed by a projected search along it; True if x moved."""
        d = face_direction(qp, state, self.max_face_solve)
        if d is None or not d.any():
            return False
        res = projected_search(qp, state.x, state.g, d, 1.0, mu=self.mu, segments=self.segments,
                               deadline=state.deadline)
        if not 0.0 < res.decrease < np.inf:
            return False
        self._apply(qp, state, res)
        return True

    def _direct_step(self, qp: QP, state: State) -> str:
        """One step of the primal active-set method on the face: its minimizing step, cut at the
        first bound it meets. Returns "min" (the face's minimizer reached), "blocked" (a bound
        met: the face shrank) or "none" (no move)."""
        d = face_direction(qp, state, self.max_face_solve)
        if d is None or not d.any():
            return "none"
        res = cut_step(qp, state, d)
        if res is None:
            return "none"
        self._apply(qp, state, res)
        return "min" if res.alpha >= 1.0 else "blocked"

    def _pair_step(self, qp: QP, state: State) -> bool:
        """A search along the maximal violating pair ``e_i/a_i − e_j/a_j`` or along the most
        violating single variable, whichever descends faster per unit step; True if x moved. General
        rows have no pairs: the steepest feasible descent direction of the linearization instead."""
        d = pair_direction(qp, state.x, state.g)
        moved = d is not None and self._search_apply(qp, state, d)
        state.counters["pair_steps"] += int(moved)
        return moved

    def _to_boundary(self, qp: QP, state: State, d: FloatArray, p: FloatArray) -> bool:
        """Take the CG step so far, then follow ±p (zero or negative curvature) to the first bound.

        Returns False when that ray descends without ever meeting a bound (unbounded below).
        """
        x, g = state.x, state.g
        if d.any():
            res = projected_search(qp, x, g, d, 1.0, mu=self.mu, segments=self.segments, deadline=state.deadline)
            if res.decrease == np.inf:
                return False
            if res.decrease > 0.0:
                self._apply(qp, state, res)
                x, g = state.x, state.g
        direction = p if float(g @ p) <= 0 else -p
        if float(_hit_times(qp, x, direction).min(initial=np.inf)) <= 0.0:
            return True                    # the step along d put a coordinate of p on its bound: a new face
        slope = -float(g @ direction)
        if slope <= 1e-12 * float(np.abs(g).max(initial=0.0)) * float(np.abs(direction).max(initial=0.0)):
            if not state.nonconvex:
                return True                # flat to rounding: nothing to gain along this ray
        res = projected_search(qp, x, g, direction, 1.0, mu=self.mu, segments=self.segments, deadline=state.deadline)
        if res.decrease == np.inf:
            return False
        if res.decrease > 0.0:
            self._apply(qp, state, res)
        return True
