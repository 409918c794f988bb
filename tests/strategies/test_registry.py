"""The one registry of strategies (qpcore_strategies.registry) and composition that keeps its word.

Names and options mean the same strategy everywhere (by_name, the command line, the estimators,
the benchmarks); Decomposition takes SMO's rule names and picks an inner strategy that accepts
every subproblem of a problem it accepts.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import given, settings

import qpcore
from qpcore_formulations.svm import csvc
from qpcore.core.problem import ProblemError
from qpcore.testkit.reference import assert_kkt
from qpcore.testkit.testing import box_equality_qps
from qpcore_strategies import by_name
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.active_set_ocas import ActiveSetOCAS
from qpcore_strategies.decomposition import Chunking, Decomposition, OsunaSwap, SteepestFeasible
from qpcore_strategies.gradient_projection import GPCG
from qpcore_strategies.registry import (
    KERNEL_STRATEGIES,
    LINEAR_STRATEGIES,
    REGISTRY,
    accepts,
    entry,
    make,
    parse_spec,
    settings as spec_settings,
)
from qpcore_strategies.smo import SMO, MaximalViolatingPair, PlattHeuristic, SecondOrderRule


def _svm(n: int = 60, seed: int = 0) -> qpcore.QP:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return csvc(X, y, 1.0, qpcore.Kernel("rbf", gamma=0.5)).qp


def test_every_entry_builds_with_its_defaults() -> None:
    assert set(KERNEL_STRATEGIES) | set(LINEAR_STRATEGIES) == set(REGISTRY)
    for name in ("decomposition", "smo", "incas", "gpcg", "active-set", "asvm", "ocas", "ocas-active", "bmrm"):
        e = REGISTRY[name]
        assert e.description and e.name == name
        strategy = e.make()
        assert type(strategy) is type(by_name(name))
        for o in e.options:
            assert o.help and o.type in (int, float, bool, str)
            assert o.default is None or isinstance(o.default, o.type), (name, o.name)


def test_specs_aliases_and_options() -> None:
    d = make("decomposition:q=128,rule=mvp,shrinking=false")
    assert isinstance(d, Decomposition) and isinstance(d.rule, MaximalViolatingPair) and not d.shrinking
    assert make("decomp:512").rule == SteepestFeasible(q=512)          # the benchmarks' spelling
    assert make("chunk:32").rule == Chunking(M=32)
    assert make("osuna:8").rule == OsunaSwap(q=8)
    assert isinstance(make("mvp").rule, MaximalViolatingPair)          # SMO with that rule
    assert isinstance(make("smo:platt").rule, PlattHeuristic)
    assert isinstance(make("asocas"), ActiveSetOCAS)
    assert isinstance(make("decomposition", inner="gpcg").inner, GPCG)
    assert make("active-set:100") == DenseActiveSet(max_n=100)
    assert isinstance(make("ocas", inner="gpcg").inner, GPCG)
    strategy = SMO()
    assert make(strategy) is strategy
    assert spec_settings("decomp:256") == {"strategy": "decomposition", "rule": "svmlight", "q": 256,
                                           "inner": "auto", "shrinking": True}
    assert parse_spec("smo:rule=wss2")[1] == {"rule": "wss2"}
    assert entry("asocas").name == "ocas-active"
    for bad, match in (("simplex", "unknown name"), ("smo:q=3", "no option"), ("smo:rule=chunking", "not one of"),
                       ("decomposition:q=x", "expected int"), ("gpcg:5", "key=value"),
                       ("decomposition:q=3", "even")):
        with pytest.raises(ProblemError, match=match):
            make(bad)


def test_accepts_gives_the_strategy_reason() -> None:
    qp = _svm()
    for name in KERNEL_STRATEGIES:
        assert accepts(make(name), qp) is None, name
    box = qpcore.QP(np.eye(3), -np.ones(3), np.zeros(3), np.full(3, np.inf))
    reason = accepts(SMO(), box)
    assert reason is not None and "finite" in reason
    assert accepts(GPCG(), box) is None
    for name in LINEAR_STRATEGIES:
        reason = accepts(make(name), qp)
        assert reason is not None and len(reason) > 20, name
        assert REGISTRY[name].accepts(qp) == reason
    assert REGISTRY["smo"].accepts(box, {"rule": "mvp"}) is not None and REGISTRY["gpcg"].accepts(box) is None


# --- composition: names mean the same thing, defaults accept what the composite accepts ---------


def test_decomposition_takes_smo_rule_names() -> None:
    qp = _svm()
    ref = qpcore.solve(qp, SMO(), tol=1e-7)
    for name, cls in (("mvp", MaximalViolatingPair), ("wss2", SecondOrderRule), ("platt", PlattHeuristic)):
        d = Decomposition(rule=name)
        assert isinstance(d.rule, cls) and d.rule == SMO(rule=name).rule
        res = qpcore.solve(qp, d, tol=1e-6)
        assert_kkt(qp, res, 1e-6)
        assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    for name, cls in (("svmlight", SteepestFeasible), ("chunking", Chunking), ("osuna", OsunaSwap)):
        assert isinstance(Decomposition(rule=name).rule, cls)
    with pytest.raises(ProblemError, match="unknown working-set rule"):
        Decomposition(rule="simplex")


def test_decomposition_default_inner_is_chosen_from_the_problem() -> None:
    assert Decomposition().inner is None
    fields = {f.name: f for f in attrs.fields(Decomposition)}
    assert fields["inner"].default is None
    # a general row (mixed signs and scales): SMO could not take the subproblems
    rng = np.random.default_rng(1)
    n = 12
    M = rng.normal(size=(n, n))
    a = rng.uniform(0.1, 10.0, size=n) * np.where(rng.random(n) < 0.5, -1.0, 1.0)
    a[:3] = 0.0                                  # and variables outside the equality
    qp = qpcore.QP(M @ M.T + np.eye(n), rng.normal(size=n), -np.ones(n), np.ones(n), a[None, :], np.array([0.5]))
    res = qpcore.solve(qp, Decomposition(), tol=1e-8)
    assert_kkt(qp, res, 1e-8)
    with pytest.raises(ProblemError, match="±1"):          # what the old default did, inside the run
        qpcore.solve(qp, Decomposition(inner=SMO(shrinking=False)), tol=1e-8)


@settings(max_examples=40, deadline=None)
@given(qp=box_equality_qps(max_n=16, max_cond=1e4))
def test_decomposition_solves_or_refuses_at_init(qp: qpcore.QP) -> None:
    """Decomposition() on general one-row box QPs: certified, or refused at init with its reason."""
    strategy: Any = Decomposition()
    reason = accepts(strategy, qp)
    if reason is not None:
        assert "decomposition" in reason.lower() or "Decomposition" in reason
        with pytest.raises(ProblemError):
            qpcore.solve(qp, strategy, tol=1e-6)
        return
    tol = 1e-6 * max(1.0, float(np.abs(qp.c).max()))
    res = qpcore.solve(qp, strategy, tol=tol, max_iter=100_000)
    assert_kkt(qp, res, tol)
