"""``auto`` on general QPs: the interior point method with the exact active-set finish, cross-checked
against Clarabel on generated problems (several equality rows, two-sided inequality rows,
degenerate, rank-deficient, badly scaled), and the SVM path left as it was."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import HealthCheck

import qpcore
from qpcore.testkit.generators_general import GeneralQP
from qpcore.testkit.reference import clarabel_reference
from qpcore.testkit.testing import general_problems
from qpcore_strategies.auto import Auto
from qpcore_strategies.smo import SMO

pytest.importorskip("clarabel")


def _scale(problem: GeneralQP, x: np.ndarray) -> float:
    qp = problem.qp("auto")
    return max(1.0, abs(qp.objective(x)))


@pytest.mark.anchor
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(general_problems(max_n=12, max_m=3, max_k=6, max_decades=3))
def test_auto_certifies_general_qps_and_matches_clarabel(problem: GeneralQP) -> None:
    qp = problem.qp("auto")
    result = qpcore.solve(qp, Auto(), tol=1e-8, time_limit=30)
    assert result.status is qpcore.Status.CONVERGED, (result.status, result.kkt, result.stats.get("ipm_reason"))
    choice = [name for _, name, _ in result.stats["strategy_choice"]]
    assert choice[0] == "interior-point" or qp.k == 0
    ref = clarabel_reference(problem)
    # the certificate is the judge; the objective agrees with an outside solver's to its accuracy
    assert result.objective <= ref.objective + 1e-6 * _scale(problem, ref.x)
    if problem.optimum is not None:
        f_star = qp.objective(problem.optimum.x)
        assert result.objective == pytest.approx(f_star, abs=1e-6 * max(1.0, abs(f_star)))


def test_auto_says_why_it_took_the_general_path() -> None:
    rng = np.random.default_rng(1)
    n = 12
    M = rng.standard_normal((n, n))
    qp = qpcore.QP(M @ M.T, rng.standard_normal(n), -np.inf, np.inf, C=rng.standard_normal((4, n)), u=np.ones(4))
    result = qpcore.solve(qp, Auto(), tol=1e-10)
    assert result.converged
    first = result.stats["strategy_choice"][0]
    assert first[1] == "interior-point" and "4 inequality rows" in first[2]


def test_auto_keeps_the_svm_path_for_svm_shaped_problems() -> None:
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(60) > 0, 1.0, -1.0)
    K = (X @ X.T) * np.outer(y, y)
    qp = qpcore.QP(K, -np.ones(60), 0.0, 1.0, y[None, :], [0.0])
    result = qpcore.solve(qp, Auto(), tol=1e-6)
    assert result.converged and result.stats["strategy_choice"][0][1] in ("smo", "incas")
    assert Auto().accepts(qp) is None and SMO().accepts(qp) is None


def test_auto_without_the_finish_still_certifies_with_the_ipm() -> None:
    rng = np.random.default_rng(3)
    n = 10
    M = rng.standard_normal((n, n))
    qp = qpcore.QP(M @ M.T, rng.standard_normal(n), -1.0, 1.0, C=rng.standard_normal((3, n)), l=-np.ones(3),
                   u=np.ones(3))
    result = qpcore.solve(qp, Auto(finish=None), tol=1e-7)
    assert result.converged and "polish_tries" not in result.stats
