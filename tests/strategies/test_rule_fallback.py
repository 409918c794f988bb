"""A rule that returns None while the gap is above tol (issue 34): the run is never credited to it.

SMO without a fallback stops ``stalled`` at the point reached (its certificate says how far it
is); with a fallback asked for (``SMO(fallback=...)`` or the rule's own ``fallback``) the
fallback's steps are counted apart from the rule's. Either way a ``RuleWarning`` and
``stats["rule_gave_up"]`` say so. The built-in rules never give up early except Platt's, which
asks for the maximal violating pair; decomposition has no fallback.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import qpcore
from qpcore.core.optimality import maximal_violating_pair
from qpcore.core.problem import ProblemError
from qpcore.core.rules import RuleView
from qpcore.core.state import Status
from qpcore_formulations.svm import csvc
from qpcore_strategies.decomposition import Decomposition
from qpcore_strategies.rules import RULES, MaximalViolatingPair, PlattHeuristic, RuleWarning
from qpcore_strategies.smo import SMO

TOL = 1e-3


class GivesUp:
    """Says "optimal" at once, whatever the gap."""

    kind = "pair"

    def select(self, view: RuleView, tol: float) -> Any:
        return None


class GivesUpAfter:
    """The maximal violating pair for ``steps`` steps, then None."""

    kind = "pair"

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def select(self, view: RuleView, tol: float) -> Any:
        if view.iteration >= self.steps:
            return None
        s = view.scores()
        pair = maximal_violating_pair(s)
        if pair is None or not s.v[pair[0]] - s.v[pair[1]] > tol:
            return None
        return np.array(pair)


class AsksForFallback(GivesUpAfter):
    """Declares its own fallback, as PlattHeuristic does."""

    fallback = "mvp"


class SetGivesUp:
    kind = "set"

    def select(self, view: RuleView, tol: float) -> Any:
        return None


def _svm(n: int = 80, seed: int = 0) -> qpcore.QP:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.5)).qp


def _solve(qp: qpcore.QP, strategy: Any) -> qpcore.Result:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuleWarning)
        res = qpcore.solve(qp, strategy, tol=TOL, max_iter=100_000)
    rule_warnings = [w for w in caught if issubclass(w.category, RuleWarning)]
    res.stats["_warnings"] = [str(w.message) for w in rule_warnings]
    return res


@pytest.mark.parametrize("shrinking", [True, False])
def test_without_a_fallback_a_rule_that_gives_up_stops_stalled(shrinking: bool) -> None:
    qp = _svm()
    res = _solve(qp, SMO(rule=GivesUp(), shrinking=shrinking))
    assert res.status is Status.STALLED and res.stats["stopped_by"] == "stalled"
    assert res.stats["rule_steps"] == 0 and res.stats["fallback_steps"] == 0 and res.iterations == 1
    assert res.kkt.measure > TOL                        # the certificate of the point reached
    assert len(res.stats["_warnings"]) == 1 and "GivesUp" in res.stats["_warnings"][0]
    assert "stops stalled" in res.stats["rule_gave_up"] and "fallback='mvp'" in res.stats["rule_gave_up"]

    res = _solve(qp, SMO(rule=GivesUpAfter(7), shrinking=shrinking))
    assert res.status is Status.STALLED
    assert res.stats["rule_steps"] == 7 and res.stats["fallback_steps"] == 0 and res.iterations == 8


@pytest.mark.parametrize("fallback", ["mvp", MaximalViolatingPair(), "wss2"])
def test_a_fallback_asked_for_finishes_and_is_counted_apart(fallback: Any) -> None:
    qp = _svm()
    ref = qpcore.solve(qp, SMO(rule="mvp"), tol=TOL)
    res = _solve(qp, SMO(rule=GivesUpAfter(7), fallback=fallback))
    assert res.converged
    assert res.stats["rule_steps"] == 7
    assert res.stats["fallback_steps"] > 0
    assert res.stats["rule_steps"] + res.stats["fallback_steps"] + 1 == res.iterations   # + the last check
    assert len(res.stats["_warnings"]) == 1 and "the fallback" in res.stats["_warnings"][0]
    assert res.stats["rule_gave_up"] == res.stats["_warnings"][0]
    assert res.objective == pytest.approx(ref.objective, rel=1e-3)
    # a rule that always gives up: every step is the fallback's
    res = _solve(qp, SMO(rule=GivesUp(), fallback=fallback))
    assert res.converged and res.stats["rule_steps"] == 0 and res.stats["fallback_steps"] == res.iterations - 1


def test_a_fallback_that_gives_up_too_stops_stalled() -> None:
    res = _solve(_svm(), SMO(rule=GivesUp(), fallback=GivesUpAfter(3)))
    assert res.status is Status.STALLED and res.kkt.measure > TOL
    assert res.stats["rule_steps"] == 0 and res.stats["fallback_steps"] == 3
    assert len(res.stats["_warnings"]) == 2
    assert res.stats["rule_gave_up"].startswith("SMO: the rule GivesUp ") and "; then SMO: the rule GivesUpAfter" in \
        res.stats["rule_gave_up"]


def test_a_rule_may_ask_for_its_fallback_itself() -> None:
    qp = _svm()
    res = _solve(qp, SMO(rule=AsksForFallback(3)))
    assert res.converged and res.stats["rule_steps"] == 3 and res.stats["fallback_steps"] > 0
    assert len(res.stats["_warnings"]) == 1


def test_fallback_must_be_a_pair_rule() -> None:
    with pytest.raises(ProblemError, match="set rule"):
        SMO(fallback="svmlight")
    with pytest.raises(ProblemError, match="unknown working-set rule"):
        SMO(fallback="simplex")
    assert SMO().fallback is None and SMO(fallback="mvp").fallback == MaximalViolatingPair()


def test_fixed_threshold_rule_that_gives_up() -> None:
    qp = _svm()
    free = qpcore.QP(qp.Q, qp.c, qp.lb, qp.ub)          # no equality row: single-variable steps
    res = _solve(free, SMO(rule=GivesUp()))
    assert res.status is Status.STALLED and res.stats["rule_steps"] == 0 and res.kkt.measure > TOL
    res = _solve(free, SMO(rule=GivesUp(), fallback="mvp"))
    assert res.converged and res.stats["fallback_steps"] == res.iterations - 1


def _hair_inside_bound() -> tuple[qpcore.QP, np.ndarray]:
    """x_0 one ulp above its lower bound, pushed down: the only violating step is an ulp long."""
    Q = 1e-3 * np.eye(2)
    c = np.array([1.0, -1.0])
    lb, ub = np.ones(2), 2.0 * np.ones(2)
    x0 = np.array([np.nextafter(1.0, 2.0), 1.5])
    A = np.ones((1, 2))
    return qpcore.QP(Q, c, lb, ub, A, A @ x0), x0


def test_platt_asks_for_the_maximal_violating_pair() -> None:
    """Platt's passes refuse steps below eps (relative): here it gives up at once with the gap 2."""
    qp, x0 = _hair_inside_bound()
    assert RULES["platt"].make().fallback == "mvp"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuleWarning)
        res = qpcore.solve(qp, SMO(rule="platt"), x0=x0, tol=TOL)
    assert res.converged and res.stats["rule_steps"] == 0 and res.stats["fallback_steps"] == 1
    assert len([w for w in caught if issubclass(w.category, RuleWarning)]) == 1
    assert res.x[0] == 1.0
    # without its fallback nothing moves; the point is certified (x_0 counts as at its bound
    # there), so that run converged on Platt's own (no) steps, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuleWarning)
        res = qpcore.solve(qp, SMO(rule=PlattHeuristic(fallback=None)), x0=x0, tol=TOL)
    assert res.converged and res.stats["fallback_steps"] == 0 and "rule_gave_up" not in res.stats


@pytest.mark.parametrize("rule", ["wss2", "mvp"])
@pytest.mark.parametrize("kind", ["one row", "no row", "x0 hair"])
def test_builtin_rules_never_give_up_early(rule: str, kind: str) -> None:
    x0 = None
    if kind == "one row":
        qp = _svm(120, seed=3)
    elif kind == "no row":
        qp = _svm(120, seed=3)
        qp = qpcore.QP(qp.Q, qp.c, qp.lb, qp.ub)
    else:
        qp, x0 = _hair_inside_bound()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuleWarning)
        for shrinking in (True, False):
            res = qpcore.solve(qp, SMO(rule=rule, shrinking=shrinking, shrink_every=5), x0=x0, tol=1e-6)
            assert res.converged and res.stats["fallback_steps"] == 0
            assert res.stats["rule_steps"] == res.iterations - 1


def test_decomposition_has_no_fallback_and_stops_stalled() -> None:
    qp = _svm()
    for rule in (SetGivesUp(), GivesUp()):
        res = _solve(qp, Decomposition(rule=rule))
        assert res.status is Status.STALLED and res.stats["stopped_by"] == "stalled"
        assert res.stats["rounds"] == 0 and res.kkt.measure > TOL
        assert len(res.stats["_warnings"]) == 1 and "no fallback" in res.stats["rule_gave_up"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuleWarning)
        for name in ("svmlight", "chunking", "osuna", "wss2", "mvp"):
            assert qpcore.solve(qp, Decomposition(rule=name), tol=1e-6).converged


def test_auto_reports_what_its_smo_rule_did() -> None:
    from qpcore_strategies.auto import Auto

    res = _solve(_svm(), Auto(smo=SMO(rule=GivesUpAfter(5))))
    assert res.status is Status.STALLED and res.stats["rule_steps"] == 5
    assert "stops stalled" in res.stats["rule_gave_up"] and len(res.stats["_warnings"]) == 1
