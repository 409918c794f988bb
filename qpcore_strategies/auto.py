"""``strategy="auto"``: one strategy that chooses and switches among SMO, INCAS and decomposition
from what it observes, and takes every other convex QP to the general strategies.

**General QPs.** A problem SMO and decomposition cannot take (inequality rows, general equality
rows, infinite bounds) goes to the interior point method (:class:`qpcore_strategies.interior_point.
InteriorPoint`: its iteration count hardly depends on degeneracy or on how many constraints are
active, where the dense active set pivots once per constraint and GPCG crawls on ill-conditioned
faces) with the exact active-set finish (:mod:`qpcore_strategies.polish`) tried as the IPM closes in:
first once its residuals reach ``polish_from``, then after every hundredfold decrease; a finish
whose point the certificate accepts at ``tol`` ends the run (the IPM's last digits are its
weakness, an exact face solve's strength). The finish is tried once more at the end when the IPM
stops short.

No single method wins everywhere on SVM duals. SMO's two-variable steps are cheap and, at small
C, few: most multipliers go straight from 0 to C and the free set stays small. At large C the
free set grows to hundreds or thousands of variables and pair steps crawl (their linear rate is
set by the conditioning of the free block): there an active-set method, which solves the free
block exactly with an updated factorization, needs far fewer and heavier steps. ``Auto`` starts
with SMO and watches the run: every ``check_every`` steps (and at least n/4) it reads the pair
gap and the size of the free set; when the steps SMO still needs at the gap's pace so far
exceed an estimate of INCAS's cost (nSV · free / ``incas_factor``) and the free set is larger
than SMO's own Newton step takes (``SMO.newton_free``), it restarts with INCAS from the run's start (Scheinberg's pivots, releasing ``release`` violators per
pricing). At tight tolerances (``tight_tol``) INCAS starts at once, except on a mirrored operator
(ε-SVR's doubled one: most support vectors at C around a small free set, each of which INCAS
would pivot through its factor). Below ``finish_below`` SMO runs with the block active-set finish
(:mod:`qpcore_strategies.block_finish`): from a pair gap of 1e-2 one factorization per face
replaces the many steps to a tight tol. Problems SMO cannot take (equality groups with
coefficients other than ±1, variables in no row) go to decomposition, which takes them all.

Each choice and its reason is kept: ``Result.stats["strategy_choice"]`` lists
``(iteration, strategy, reason)``, ``stats["strategy"]`` names the strategy that finished, and a
progress snapshot reads the current one with ``progress.work(AutoWork).current``.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.capabilities import Capability
from qpcore.core.certificate import kkt
from qpcore.core.problem import QP
from qpcore.core.state import State, Work, bound_status
from qpcore.core.strategy import Strategy
from qpcore_strategies.block_finish import BlockFinish
from qpcore_strategies.decomposition import Decomposition
from qpcore_strategies.incas import INCAS
from qpcore_strategies.interior_point import InteriorPoint, IPMWork
from qpcore_strategies.polish import PolishFinish
from qpcore_strategies.smo import SMO, SMOWork

FloatArray = NDArray[np.float64]

__all__ = ["Auto", "AutoWork"]


@attrs.define(slots=True, eq=False)
class AutoWork(Work):
    """Auto's work state: the strategy running now, its own work state, and the choices so far."""

    current: str
    inner: Strategy
    inner_work: Work | None
    tol: float
    x0: FloatArray | None
    choices: list[tuple[int, str, str]] = attrs.Factory(list)
    since_check: int = 0
    observed: int = 0
    first_gap: float = math.inf
    polish_level: float = math.inf       # the IPM residual at which the finish is tried next
    proposal: tuple[FloatArray, FloatArray] | None = None   # the accepted finish's multipliers

    def release(self) -> Work | None:
        """A finished run keeps nothing: none of the inner strategies resumes from its state."""
        return None


@attrs.frozen
class Auto(Strategy):
    """Choose and switch among SMO, INCAS and decomposition from what the run shows.

    Parameters
    ----------
    smo : SMO
        The first strategy: LIBSVM's second-order rule with shrinking, taking its Newton step on
        the free variables after two checks without progress (SMO alone waits for three).
    incas_release : int
        Bound variables INCAS releases per pricing after a switch (``INCAS.release``); INCAS
        shrinks when ``smo`` does.
    check_every : int
        SMO steps between observations: at least this many and n/4, at most n.
    patience : int
        Observations before a switch may be decided.
    incas_factor : float
        INCAS's cost is estimated as nSV · free / ``incas_factor`` SMO steps; SMO's remaining
        steps from the gap's mean decrease per observation. The switch happens when SMO's
        estimate is larger (calibrated on adult, 3,000 rows: C = 1000, γ = 1/d switches, SMO
        needing 110,000 steps; C = 100, γ = 10/d does not, SMO needing 19,000).
    min_free : int or None
        Free variables above which a crawl switches to INCAS; None: ``smo.newton_free`` (below
        it SMO's own Newton step on the free variables ends the crawl).
    max_buffer_bytes : float
        No switch when INCAS's rows of the free set (float64, free × n) would exceed this: each
        pricing reads them all, and beyond the caches INCAS lost to SMO (adult 8,000 rows in
        5 folds, γ = 10/d, C = 100 and 1000 warm-started: 2.2× SMO's time with a 1 GiB cap).
    tight_tol, tight_max_n : float, int
        At tol ≤ ``tight_tol`` on problems of at most ``tight_max_n`` variables INCAS starts
        (adult 3,185 rows, RBF, C = 100, tol 1e-6: INCAS 0.65 s, SMO first 1.36 s), except on a
        mirrored operator (ε-SVR's doubled one, :attr:`~qpcore.backends.capabilities.Capability.MIRRORED`):
        there most support vectors sit at C around a small free set, INCAS pivots each of them
        through its factor one at a time, and SMO with the block finish wins (abalone, C = 10,
        γ = 1, tol 1e-6: 5,000 SMO steps and a few faces against INCAS's 14,756 pivots;
        docs/BENCHMARKS.md).
    block_finish, finish_below : BlockFinish or None, float
        At tol ≤ ``finish_below`` auto's SMO runs with this block active-set finish
        (:class:`qpcore_strategies.block_finish.BlockFinish`, tried from a pair gap of its
        ``start_gap``): the steps from there to a tight tol are the many, and the finish replaces
        them by a few factorizations. Not at looser tols: from 1e-2 to 1e-3 SMO has little left,
        and a finish that does not certify costs its faces. None: never.
    """

    smo: SMO = attrs.field(factory=lambda: SMO(newton_after=2))
    incas_release: int = 8
    check_every: int = 500
    patience: int = 1
    min_free: int | None = None
    max_buffer_bytes: float = float(64 << 20)
    tight_tol: float = 1e-5
    incas_factor: float = 100.0
    tight_max_n: int = 20000
    general: InteriorPoint = attrs.field(factory=InteriorPoint)
    finish_stage: PolishFinish | None = attrs.field(factory=PolishFinish, alias="finish")
    polish_from: float = 1e-5
    block_finish: BlockFinish | None = attrs.field(factory=BlockFinish)
    finish_below: float = 1e-4

    takes_inequalities = True      # the general strategy takes the rows l ≤ Cx ≤ u itself

    def lockstep(self) -> str | None:
        """Its SMO's: small data keeps the SMO that auto starts with."""
        return self.smo.lockstep()

    def lockstep_handoff(self, tol: float) -> bool:
        """At tol ≤ ``tight_tol`` auto alone starts INCAS, and at tol ≤ ``finish_below`` its SMO ends
        with the block finish: where pair steps to tol are many, a lockstep stack hands it the
        problems its step budget did not finish."""
        return tol <= self.tight_tol or (self.block_finish is not None and tol <= self.finish_below)

    def lockstep_switch(self, qp: QP) -> bool:
        """True where INCAS takes ``qp`` (one equality row): auto alone switches a crawling SMO to it."""
        return INCAS().accepts(qp) is None

    def __attrs_post_init__(self) -> None:
        from qpcore.core.problem import ProblemError

        if self.check_every < 1 or self.patience < 1 or self.incas_release < 1:
            raise ProblemError("check_every, patience, incas_release: must be ≥ 1")

    def accepts(self, qp: QP) -> str | None:
        """None when SMO or decomposition takes ``qp`` (finite box, disjoint equality groups),
        else what the general strategy says.

        Parameters
        ----------
        qp : QP
            The problem.

        Returns
        -------
        str or None
        """
        if self._svm_shaped(qp):
            return None
        return self.general.accepts(qp)

    def _svm_shaped(self, qp: QP) -> bool:
        return qp.k == 0 and (self.smo.accepts(qp) is None or Decomposition().accepts(qp) is None)

    # -- delegation -----------------------------------------------------------------------------
    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Start SMO, or decomposition when SMO cannot take the problem.

        Parameters
        ----------
        qp : QP
            The problem.
        x0 : ndarray, optional
            A feasible start.
        tol : float
            Stopping tolerance.

        Returns
        -------
        State
        """
        self.check(qp)
        reason = self.smo.accepts(qp)
        incas = INCAS(release=self.incas_release, shrinking=self.smo.shrinking)
        if not self._svm_shaped(qp):
            inner: Strategy = self.general
            rows = (f"{qp.k} inequality rows" if qp.k else qp.equality.describe() if qp.equality.kind == "general"
                    else "infinite bounds")
            name, why = "interior-point", (f"a general QP ({rows}; n = {qp.n}): the interior point method's "
                                           "iterations do not grow with degeneracy or the active set, and the "
                                           "exact active-set finish adds the last digits")
        elif (reason is None and tol <= self.tight_tol and qp.n <= self.tight_max_n and incas.accepts(qp) is None
              and Capability.MIRRORED not in qp.Q.capabilities):
            inner = incas
            name, why = "incas", (f"start at tol {tol:g} (≤ {self.tight_tol:g}, n = {qp.n}): pair steps need many "
                                  "more steps as tol falls, an active set barely more")
        elif reason is None:
            inner = self.smo
            name, why = "smo", f"start (n = {qp.n}): pair steps are cheapest while the free set is small"
            if self.block_finish is not None and tol <= self.finish_below:
                inner = attrs.evolve(self.smo, finish=self.block_finish)
                why += (f", with the block finish from a pair gap of {self.block_finish.start_gap:g} "
                        f"(tol {tol:g} ≤ {self.finish_below:g}: the steps to a tight tol are the many)")
                if Capability.MIRRORED in qp.Q.capabilities and tol <= self.tight_tol:
                    why += ("; not INCAS on a mirrored operator: its many support vectors at C would each "
                            "pivot through INCAS's factor")
        else:
            inner = Decomposition()
            name, why = "decomposition", f"SMO cannot take the problem ({reason.split(';')[0]})"
        state = inner.init(qp, x0, tol)
        first = state.work_or_none(SMOWork)
        work = AutoWork(current=name, inner=inner, inner_work=state.work_or_none(Work), tol=tol,
                        x0=None if x0 is None else np.array(x0, dtype=np.float64))
        work.choices.append((0, name, why))
        if first is not None:
            work.first_gap = SMO._gap(qp, state, first)
        if name == "interior-point" and self.finish_stage is not None:
            work.polish_level = self.polish_from
        state.set_work(work)
        return state

    def _run(self, state: State, work: AutoWork) -> None:
        state.set_work(work.inner_work)

    def _back(self, state: State, work: AutoWork) -> None:
        work.inner_work = state.work_or_none(Work)
        state.set_work(work)

    def step(self, qp: QP, state: State) -> None:
        """One step of the current strategy, then (for SMO) an observation every ``check_every``.

        Parameters
        ----------
        qp : QP
            The problem.
        state : State
            Mutated in place.
        """
        work = state.work(AutoWork)
        self._run(state, work)
        try:
            work.inner.step(qp, state)
        finally:
            self._back(state, work)
        if work.current == "interior-point" and work.proposal is None:
            self._maybe_polish(qp, state, work, last=state.done or state.stop is not None)
            return
        if work.current != "smo" or state.done or state.stop is not None:
            return
        work.since_check += 1
        if work.since_check >= self._period(qp.n):
            work.since_check = 0
            self._observe(qp, state, work)

    def _ipm_residual(self, work: AutoWork) -> float:
        info = work.inner_work.core.info if isinstance(work.inner_work, IPMWork) else {}
        if "primal" not in info:
            return math.inf
        return float(max(info["primal"] / info["primal_scale"], info["stationarity"], info["relative_gap"]))

    def _maybe_polish(self, qp: QP, state: State, work: AutoWork, last: bool) -> None:
        """Try the finish when the IPM's residual has reached the next level, or once the IPM has
        ended (converged: for the digits its duality gap lacks; stopped short: for a solution).
        The finish's point replaces the IPM's only when the certificate accepts it at tol, or when
        the IPM stopped short and the finish improved its point; a certified one ends the run."""
        if self.finish_stage is None:
            return
        level = self._ipm_residual(work)
        if not (last or level <= work.polish_level):
            return
        work.polish_level = min(work.polish_level, level) * 1e-2
        self._run(state, work)
        try:
            proposal = work.inner.multipliers(qp, state)
        finally:
            self._back(state, work)
        # the last try may pivot longer (far faces, QFORPLAN: a dozen rounds from the IPM's point) and
        # polish its own point once more, from the multipliers the certificate found
        stage = attrs.evolve(self.finish_stage, max_rounds=4 * self.finish_stage.max_rounds) if last else self.finish_stage
        x, found = state.x, None
        for _ in range(2 if last else 1):
            left = state.time_left()
            res = stage.run(qp, x, proposal, time_limit=left if math.isfinite(left) else None)
            state.counters["polish_tries"] = state.counters.get("polish_tries", 0) + 1
            state.counters["polish_rounds"] = state.counters.get("polish_rounds", 0) + res.rounds
            if not res.accepted:
                break
            cert = kkt(qp, res.x, multipliers=res.multipliers)
            if not cert.ok(work.tol):
                # the finish's multipliers are one witness; the certificate's own search may find a better one
                own = kkt(qp, res.x)
                if own.measure < cert.measure:
                    cert = own
            if found is None or cert.measure < found[1].measure:
                found = (res.x, cert)
            if cert.ok(work.tol):
                break
            x, proposal = res.x, (cert.multipliers, cert.y)
        if found is None:
            return
        x, cert = found
        certified = cert.ok(work.tol)
        if not certified:
            if state.done or not last:
                return
            # the IPM stopped short: keep whichever point the certificate rates better
            before = kkt(qp, state.x)
            if not (cert.feasible() and (not before.feasible() or cert.measure < before.measure)):
                return
        state.x = x
        state.g = qp.gradient(x)
        state.status = bound_status(x, qp.lb, qp.ub)
        state.exact = (state.x, state.g)
        work.proposal = (cert.multipliers, cert.y)
        if certified:
            state.done, state.stop = True, None
            work.choices.append((state.iteration, "polish", f"the exact active-set finish certifies at tol "
                                 f"{work.tol:g} from the IPM's point at residual {level:.2g}"))

    def multipliers(self, qp: QP, state: State) -> tuple[FloatArray, FloatArray] | None:
        """The accepted finish's multipliers, else the running strategy's (a proposal the certificate
        verifies)."""
        work = state.work_or_none(AutoWork)
        if work is None:
            return None
        if work.proposal is not None:
            return work.proposal
        self._run(state, work)
        try:
            return work.inner.multipliers(qp, state)
        finally:
            self._back(state, work)

    def _period(self, n: int) -> int:
        # SMO's step count grows with n (LIBSVM: about n/2 steps on adult at C = 1), so a fixed
        # period reads a large problem's normal pace as a crawl (full adult, 32,561 rows: a
        # switch after 10,000 steps cost 3.8× SMO alone)
        return min(n, max(self.check_every, n // 4))

    def _observe(self, qp: QP, state: State, work: AutoWork) -> None:
        inner = work.inner_work
        assert isinstance(inner, SMOWork)
        gap = SMO._gap(qp, state, inner)
        x = state.x
        free = int(np.count_nonzero((x > qp.lb) & (x < qp.ub)))
        work.observed += 1
        if gap <= work.tol or work.observed < self.patience:
            return
        # SMO's pace so far: the gap's mean decrease per period since the start (pair steps
        # converge linearly, at a rate the free block's conditioning sets), and from it the steps
        # it still needs
        rate = (gap / work.first_gap) ** (1.0 / work.observed) if work.first_gap > 0 else 1.0
        period = self._period(qp.n)
        remaining = (math.inf if not rate < 1.0
                     else period * math.log(gap / work.tol) / math.log(1.0 / rate))
        # INCAS's cost in SMO steps, about nSV · free / incas_factor: each pivot prices the bound
        # variables with a pass over the free set's rows (an SMO step is a pass over two rows)
        nsv = int(np.count_nonzero(x != 0.0))
        incas_steps = nsv * free / self.incas_factor
        limit = self.smo.newton_free if self.min_free is None else self.min_free
        if remaining <= incas_steps or free <= limit or INCAS().accepts(qp) is not None:
            return
        if 8.0 * free * qp.n > self.max_buffer_bytes:
            # INCAS prices with a pass over its free set's float64 rows: too slow beyond the caches
            return
        left = "never ends" if math.isinf(remaining) else f"needs about {remaining:.3g} more steps"
        why = (f"pair steps crawl: at the gap's pace so far ({gap:.3g}, ×{rate:.2f} per {period} steps) SMO "
               f"{left}; INCAS about {incas_steps:.3g} step-equivalents ({nsv} support vectors, {free} free)")
        inc = INCAS(release=self.incas_release, shrinking=self.smo.shrinking)
        self._switch(qp, state, work, inc, "incas", why)

    def _switch(self, qp: QP, state: State, work: AutoWork, inner: Strategy, name: str, why: str) -> None:
        # INCAS starts from the run's own start, not from SMO's point: it would enter every free
        # variable of that point into its factor and then drop the surplus one pivot at a time,
        # each drop an O(|S|²) pass over the factor (measured: several times INCAS's own path,
        # which grows S from the violators)
        counters = dict(state.counters)
        new = inner.init(qp, work.x0, work.tol)
        state.x, state.g, state.status = new.x, new.g, new.status
        state.exact = None
        for k, v in new.counters.items():
            counters[k] = counters.get(k, 0) + v
        state.counters = counters
        state.stop = new.stop
        work.inner, work.inner_work, work.current = inner, new.work_or_none(Work), name
        work.choices.append((state.iteration, name, why))

    def sync_gradient(self, qp: QP, state: State) -> None:
        """The current strategy's sync (INCAS keeps g off its free set stale between pricings)."""
        work = state.work(AutoWork)
        self._run(state, work)
        try:
            work.inner.sync_gradient(qp, state)
        finally:
            self._back(state, work)

    def finish(self, qp: QP, state: State) -> None:
        """The current strategy's finish; after an IPM that stopped short (a limit, a stall), the
        exact active-set finish once more."""
        work = state.work(AutoWork)
        if work.proposal is not None:
            return            # the polished point stands
        self._run(state, work)
        try:
            work.inner.finish(qp, state)
        finally:
            self._back(state, work)
        if work.current == "interior-point" and not state.done and work.proposal is None:
            work.polish_level = math.inf
            self._maybe_polish(qp, state, work, last=True)

    def stage(self, state: State) -> str | None:
        """The strategy running now (``Progress.stage``).

        Parameters
        ----------
        state : State
            The run's state.

        Returns
        -------
        str or None
        """
        work = state.work_or_none(AutoWork)
        return None if work is None else work.current

    def report(self, state: State) -> dict[str, Any]:
        """``strategy`` (the one that finished) and ``strategy_choice`` ((iteration, name, reason)), and
        SMO's ``rule_gave_up`` when its rule gave up early.

        Parameters
        ----------
        state : State
            The run's final state.

        Returns
        -------
        dict
        """
        work = state.work_or_none(AutoWork)
        if work is None:
            return {}
        out: dict[str, Any] = {"strategy": work.current, "strategy_choice": list(work.choices)}
        if isinstance(work.inner_work, SMOWork) and work.inner_work.note is not None:
            out["rule_gave_up"] = work.inner_work.note
        return out
