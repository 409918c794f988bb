"""dense_reference, the oracle of the property tests, checked against an independent solver (OSQP).

Every problem family of qpcore.testkit.testing (box, box + equality, SVM duals, nonnegative, degenerate,
planted, low-rank), with fixed variables and zero equality coefficients turned on, is solved by
dense_reference and by OSQP at tight tolerances (eps 1e-10, polished). The checks:

- dense_reference's point is feasible (in the box exactly, A x = b to rounding) and satisfies
  the KKT conditions to 1e-11 of the gradient's scale (its documented accuracy);
- its objective is no worse than OSQP's answer projected onto the feasible set (a feasible
  point, so this holds whatever OSQP's status): f_ref ≤ f(P(x_osqp)) + 1e-11·s, where
  s = 1 + ½|x|ᵀ|Q||x| + |c|ᵀ|x| is the size of the objective's terms (f itself rounds at ~1e-16·s);
- where OSQP reports "solved" and its own KKT residuals (recomputed here: primal, and dual with its
  multipliers) are below 1e-9 (about 99 % of the draws), the objectives agree to 1e-8·s (OSQP's
  accuracy; seen: 1e-10·s). Where OSQP is not accurate (ill-conditioned Q, iteration limit), only
  the one-sided check applies; the statistics (``--hypothesis-show-statistics``) count both cases;
- on planted problems, the objective matches the known optimum.

The lower side needs no solver: a feasible point cannot be below the optimum, so feasibility plus
the one-sided check pin f_ref to [f*, f* + 1e-11·s + OSQP's error].
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from qpcore import QP, kkt
from qpcore.linalg.projection import project_box_equality
from qpcore.testkit.reference import dense_reference, gradient_scale
from qpcore.testkit.testing import box_equality_qps, box_qps, lowrank_qps, nonneg_qps, planted_qps, svm_duals

osqp = pytest.importorskip("osqp")
sp = pytest.importorskip("scipy.sparse")

FloatArray = np.ndarray

KKT_REL = 1e-11        # dense_reference's KKT measure, relative to gradient_scale (seen: 2e-14)
BETTER_REL = 1e-11     # f_ref ≤ f(P(x_osqp)) + BETTER_REL·s (seen: 4e-14)
AGREE_REL = 1e-8       # |f_ref − f_osqp| ≤ AGREE_REL·s where OSQP is accurate (seen: 1e-10)
OSQP_ACCURATE = 1e-9   # OSQP's recomputed primal and dual residuals, scaled


def _tagged(name: str, strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[str, QP, FloatArray | None]]:
    if name == "planted":
        return strategy.map(lambda pair: (name, pair[0], pair[1]))
    return strategy.map(lambda qp: (name, qp, None))


PROBLEMS = st.one_of(
    _tagged("box", box_qps(fixed=True)),
    _tagged("box_equality", box_equality_qps(fixed=True, zero_coefficients=True)),
    _tagged("svm_dual", svm_duals(fixed=True)),
    _tagged("nonneg", nonneg_qps(fixed=True)),
    _tagged("planted", planted_qps(fixed=True)),
    _tagged("lowrank", lowrank_qps()),
)


def _dense_Q(qp: QP) -> FloatArray:
    Q = np.array(qp.Q.rows(np.arange(qp.n)), dtype=np.float64)
    return 0.5 * (Q + Q.T)


def _osqp(qp: QP, Q: FloatArray) -> Any:
    """OSQP at tight tolerances: the box as identity rows, the equality as a row with l = u."""
    cons = sp.csc_matrix(np.vstack([np.eye(qp.n), qp.A]))
    lo = np.concatenate([qp.lb, qp.b])
    hi = np.concatenate([qp.ub, qp.b])
    solver = osqp.OSQP()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        solver.setup(sp.csc_matrix(np.triu(Q)), qp.c, cons, lo, hi, eps_abs=1e-10, eps_rel=1e-10,
                     eps_prim_inf=1e-14, eps_dual_inf=1e-14, max_iter=200_000, polishing=True,
                     polish_refine_iter=10, check_termination=25, verbose=False)
        return solver.solve(raise_error=False)


def _osqp_residuals(qp: QP, Q: FloatArray, x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """OSQP's primal and dual residuals, recomputed (not its own report), scaled."""
    primal = max(float(np.maximum(qp.lb - x, x - qp.ub).max(initial=0.0)),
                 float(np.abs(qp.A @ x - qp.b).max(initial=0.0))) / (1.0 + float(np.abs(x).max()))
    Qx = Q @ x
    stat = Qx + qp.c + y[:qp.n] + qp.A.T @ y[qp.n:]
    dual = float(np.abs(stat).max()) / (1.0 + float(np.abs(qp.c).max()) + float(np.abs(Qx).max()))
    return primal, dual


def _project(qp: QP, x: FloatArray) -> FloatArray:
    """The Euclidean projection onto the feasible set (box, at most one row)."""
    if qp.m == 0:
        out: FloatArray = np.clip(x, qp.lb, qp.ub)
        return out
    return project_box_equality(x, qp.lb, qp.ub, qp.A[0], float(qp.b[0]))[0]


@pytest.mark.anchor
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::PendingDeprecationWarning")
@given(PROBLEMS)
def test_dense_reference_against_osqp(case: tuple[str, QP, FloatArray | None]) -> None:
    family, qp, x_star = case
    event(f"family: {family}")
    if np.any(qp.lb == qp.ub):
        event("has fixed variables")
    if qp.m and np.any(qp.A[0] == 0):
        event("has zero equality coefficients")
    x, f = dense_reference(qp)
    Q = _dense_Q(qp)
    # the size of the objective's terms: what rounding errors in f are relative to
    s = 1.0 + 0.5 * float(np.abs(x) @ (np.abs(Q) @ np.abs(x))) + float(np.abs(qp.c) @ np.abs(x))
    assert abs(f - qp.objective(x)) <= 1e-12 * s  # (the operator's matvec rounds differently)

    # feasible: in the box exactly, A x = b to rounding
    assert np.all((qp.lb <= x) & (x <= qp.ub))
    eq_scale = 1.0 + float(np.abs(qp.b).max(initial=0.0)) + float((np.abs(qp.A) @ np.abs(x)).max(initial=0.0))
    assert float(np.abs(qp.A @ x - qp.b).max(initial=0.0)) <= 1e-12 * eq_scale
    # KKT to the documented accuracy
    cert = kkt(qp, x)
    assert cert.measure <= KKT_REL * gradient_scale(qp, x), (cert.measure, gradient_scale(qp, x))

    if x_star is not None:
        # planted: the known optimum (fixed variables sit at x*'s values, so it stays optimal)
        assert f <= qp.objective(x_star) + BETTER_REL * s
        assert f == pytest.approx(qp.objective(x_star), rel=1e-9, abs=1e-9 * s)

    res = _osqp(qp, Q)
    xo = np.asarray(res.x, dtype=np.float64) if res.x is not None else np.full(qp.n, np.nan)
    if not np.isfinite(xo).all():
        event("osqp: no point")
        return
    fo = qp.objective(_project(qp, xo))
    note(f"{family}: n={qp.n} f_ref={f!r} f_osqp={fo!r} (status {res.info.status!r}, polish {res.info.status_polish})")
    # whatever OSQP's status, its projected point is feasible: dense_reference is no worse
    assert f <= fo + BETTER_REL * s, (f, fo, (f - fo) / s)
    primal, dual = _osqp_residuals(qp, Q, xo, np.asarray(res.y, dtype=np.float64))
    if res.info.status == "solved" and primal <= OSQP_ACCURATE and dual <= OSQP_ACCURATE:
        event("osqp: solved and accurate (objectives compared both ways)")
        assert abs(f - fo) <= AGREE_REL * s, (f, fo, (f - fo) / s)
    else:
        event("osqp: not accurate (one-sided check only)")
