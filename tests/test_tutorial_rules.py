"""The tutorial's working-set rules (docs/tutorials/working_set_rules.md), executed from the page.

Each rule is written only against the public ``RuleView``; here it runs with shrinking on in SMO
and in Decomposition and must converge with a KKT certificate and the reference objective, also
on problems with variables outside the equality (``Scores.single``: zero coefficients, or no
equality at all), where a rule that offers only pairs ends ``stalled``. The page's rule that
gives up early ends ``stalled`` alone and is counted apart from SMO's fallback.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import qpcore
from qpcore_formulations.data.files import load_dataset
from qpcore_formulations.svm import csvc
from qpcore.core.problem import ProblemError
from qpcore.testkit.reference import assert_kkt, dense_reference
from qpcore.testkit.testing import svm_duals
from qpcore_strategies.decomposition import Decomposition, SteepestFeasible
from qpcore_strategies.rules import RuleWarning
from qpcore_strategies.smo import SMO

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "tutorials" / "working_set_rules.md"
NAMES = ("RandomViolatingPair", "SecondOrderTopK", "RateCertifyingTopK")


def _load() -> dict[str, Any]:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    ns: dict[str, Any] = {"__name__": "tutorial_rules"}
    # the blocks build on each other, as a reader would paste them in order
    exec(compile("\n".join(blocks), str(PAGE), "exec"), ns)  # noqa: S102
    return ns


NS = _load()
RULES = [NS[name]() for name in NAMES]


def test_each_rule_is_at_most_30_lines() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for name in NAMES:
        block = re.search(rf"@attrs\.frozen\nclass {name}\b.*?```", text, flags=re.S)
        assert block is not None, name
        lines = [ln for ln in block.group(0).splitlines()[:-1] if ln.strip()]
        assert len(lines) <= 30, (name, len(lines))


@st.composite
def svm_duals_with_singles(draw: st.DrawFn) -> qpcore.QP:
    """SVM-shaped duals whose equality row has zeros: some variables (or all: no row) move alone."""
    qp = draw(svm_duals(max_n=16, max_cond=1e3, max_C=10.0, fixed=False))
    n = qp.n
    k = draw(st.integers(1, n))
    alone = draw(st.permutations(range(n)))[:k]
    if k == n:
        return qpcore.QP(qp.Q, qp.c, qp.lb, qp.ub)
    A = qp.A.copy()
    A[0, alone] = 0.0
    return qpcore.QP(qp.Q, qp.c, qp.lb, qp.ub, A, qp.b)   # b = 0: x = 0 stays feasible


def _strategies(rule: Any) -> list[Any]:
    # shrinking on in both: SMO checks every min(n, shrink_every) steps, decomposition every round
    return [SMO(rule=rule, shrinking=True, shrink_every=5), Decomposition(rule=rule, shrinking=True, shrink_ratio=1.0)]


# The tutorial rules are first-order or approximate (a random pair converges slowest of all):
# like SMO's MVP rule their step counts grow with the condition of the free block, so they are
# checked on SMO's documented domain for first-order rules (cond ≤ 1e3, C ≤ 10; see
# tests/strategies/test_smo.py), with the tolerance in units of the gradient.
@pytest.mark.parametrize("rule", RULES, ids=NAMES)
@given(qp=svm_duals(max_n=20, max_cond=1e3, max_C=10.0))
def test_tutorial_rules_converge_with_certificate(rule: Any, qp: qpcore.QP) -> None:
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    _, f_ref = dense_reference(qp)
    for strategy in _strategies(rule):
        res = qpcore.solve(qp, strategy, tol=tol, max_iter=200_000)
        assert_kkt(qp, res, tol)
        scale = max(1.0, abs(f_ref))
        assert res.objective <= f_ref + 1e-6 * scale


@pytest.mark.parametrize("rule", RULES, ids=NAMES)
@given(qp=svm_duals_with_singles())
def test_tutorial_rules_move_single_variables(rule: Any, qp: qpcore.QP) -> None:
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    _, f_ref = dense_reference(qp)
    runs = [s for s in _strategies(rule) if s.accepts(qp) is None]
    assert any(isinstance(s, Decomposition) for s in runs)     # Decomposition takes every such problem
    for strategy in runs:
        res = qpcore.solve(qp, strategy, tol=tol, max_iter=200_000)
        assert_kkt(qp, res, tol)
        assert res.objective <= f_ref + 1e-6 * max(1.0, abs(f_ref))


def test_a_pairs_only_rule_stalls_on_single_variables() -> None:
    """What the tutorial's single_step is for: the pattern without it ends stalled."""

    class PairsOnly:
        kind = "pair"

        def select(self, view: Any, tol: float) -> Any:
            s = view.scores()
            pair = NS["maximal_violating_pair"](s)
            if pair is None or s.v[pair[0]] - s.v[pair[1]] <= tol:
                return None
            return np.array(pair)

    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    qp = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.5)).qp
    A = qp.A.copy()
    A[0, :10] = 0.0
    mixed = qpcore.QP(qp.Q, qp.c, qp.lb, qp.ub, A, qp.b)
    with pytest.warns(RuleWarning, match="PairsOnly"):      # it says None with a single variable violating
        stuck = qpcore.solve(mixed, Decomposition(rule=PairsOnly()), tol=1e-6, max_iter=20_000)
    assert not stuck.converged and stuck.kkt.measure > 1e-3 and "rule_gave_up" in stuck.stats
    for rule in RULES:
        res = qpcore.solve(mixed, Decomposition(rule=rule), tol=1e-6, max_iter=200_000)
        assert_kkt(mixed, res, 1e-6)


def test_a_rule_that_gives_up_early_is_not_credited() -> None:
    """The page's GivesUpAfter: stalled alone, counted apart from SMO's fallback, stalled in decomposition."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    qp = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.5)).qp
    rule = NS["GivesUpAfter"](steps=5)
    with pytest.warns(RuleWarning, match="stops stalled"):
        alone = qpcore.solve(qp, SMO(rule=rule), tol=1e-6)
    assert alone.status.code == "stalled" and alone.kkt.measure > 1e-6
    assert alone.stats["rule_steps"] == 5 and alone.stats["fallback_steps"] == 0
    with pytest.warns(RuleWarning, match="fallback MaximalViolatingPair"):
        helped = qpcore.solve(qp, SMO(rule=rule, fallback="mvp"), tol=1e-6)
    assert_kkt(qp, helped, 1e-6)
    assert helped.stats["rule_steps"] == 5 and helped.stats["fallback_steps"] == helped.iterations - 6
    with pytest.warns(RuleWarning, match="no fallback"):
        decomposed = qpcore.solve(qp, Decomposition(rule=rule), tol=1e-6)
    assert decomposed.status.code == "stalled" and decomposed.stats["rounds"] == 5
    assert "GivesUpAfter" in decomposed.stats["rule_gave_up"]


@pytest.mark.data
@pytest.mark.parametrize("rule", RULES, ids=NAMES)
def test_tutorial_rules_on_adult_shrink_and_agree(rule: Any) -> None:
    X, y = load_dataset("adult")
    prob = csvc(X[:600], y[:600], 1.0, qpcore.Kernel("rbf", gamma=0.05))
    ref = qpcore.solve(prob.qp, SMO(), tol=1e-7)
    for strategy in _strategies(rule):
        res = qpcore.solve(prob.qp, strategy, tol=1e-4, max_iter=500_000)
        assert_kkt(prob.qp, res, 1e-4)
        assert res.stats.get("shrink_events", 0) > 0, type(strategy).__name__
        assert res.objective == pytest.approx(ref.objective, rel=1e-5)


def test_rule_kinds_are_checked_when_built() -> None:
    with pytest.raises(ProblemError, match="set rule"):
        SMO(rule=SteepestFeasible(q=8))

    class NoKind:
        def select(self, view: Any, tol: float) -> None:
            return None

    with pytest.raises(ProblemError, match="kind"):
        Decomposition(rule=NoKind())
    with pytest.raises(ProblemError, match="kind"):
        SMO(rule=NoKind())
    # a pair rule is a set rule of size 2: LIBSVM's rule drives decomposition
    from qpcore_strategies.smo import SecondOrderRule

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.5))
    res = qpcore.solve(prob.qp, Decomposition(rule=SecondOrderRule()), tol=1e-6)
    assert_kkt(prob.qp, res, 1e-6)


def test_view_is_read_only_and_restricted() -> None:
    seen: dict[str, Any] = {}

    class Spy:
        kind = "pair"

        def select(self, view: Any, tol: float) -> Any:
            seen.setdefault("shrunk", False)
            seen["shrunk"] |= view.shrunk
            if view.shrunk:
                assert view.x.shape == (view.n,) and view.row(0).shape == (view.n,)
                assert np.array_equal(view.index, np.sort(view.index))
            with pytest.raises(ValueError):
                view.x[0] = 1.0
            return SMO().rule.select(view, tol)

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=300) > 0, 1.0, -1.0)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.5))
    res = qpcore.solve(prob.qp, SMO(rule=Spy(), shrink_every=20), tol=1e-5)
    assert_kkt(prob.qp, res, 1e-5)
    assert seen["shrunk"]


def test_set_rule_sees_only_unshrunk() -> None:
    sizes: list[int] = []

    class Watch:
        kind = "set"

        def select(self, view: Any, tol: float) -> Any:
            sizes.append(view.n)
            return SteepestFeasible(q=16).select(view, tol)

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 4))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=400) > 0, 1.0, -1.0)
    prob = csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.5))
    res = qpcore.solve(prob.qp, Decomposition(rule=Watch(), shrink_ratio=1.0), tol=1e-5)
    assert_kkt(prob.qp, res, 1e-5)
    # the view shrank with the strategy, and the last look (the full recheck) saw every variable
    assert res.stats["shrink_events"] > 0 and min(sizes) < prob.qp.n and sizes[-1] == prob.qp.n
