"""A mirrored dual (ε-SVR, ν-SVR) over its kernel matrix, by the batched SMO with face steps (issue 35, part 3).

ε-SVR's and ν-SVR's duals have 2l variables over l points: Q = ssᵀ∘[[K, K], [K, K]] with
s = (+1, …, −1, …) (an operator declaring :attr:`~qpcore.backends.capabilities.Capability.MIRRORED`),
the box 0 ≤ x ≤ C, and either one equality row sᵀx = 0 (ε-SVR) or one per half, Σα = Σα* = Cνl/2
(ν-SVR: two groups, LIBSVM's Solver_NU: a pair step stays within a half). LIBSVM computes a kernel row at every cache miss (l kernel
values, an exponential each for RBF) and takes one pair step per iteration. Where the points'
kernel matrix fits the row cache's budget, :func:`solve_mirrored` computes it once (one product
and one exponential pass over l² entries) and solves the dual with
:func:`~qpcore_train.batched_smo.batched_smo` as a stack of one problem: a pair step's rows are
slices of that matrix, and every :data:`~qpcore_train.batched_smo.FACE_EVERY` rounds a face step
moves the free variables to the minimizer on their face (several hundred pair steps fewer each).

The point is certified alone by ``qpcore.kkt`` at its exact float64 gradient (the problem's own
operator), resumed from that gradient when the single-precision scores misled it
(:func:`~qpcore_train.batched_smo.certify_refresh`). A run still short of tol after
:data:`HANDOFF_STEPS` pair steps per variable (large C, where SMO's steps run to the hundreds of
thousands) is finished by the caller's strategy from its point when the strategy declares another
method for it (``Strategy.lockstep_switch``: ``auto`` switches to INCAS on one equality row; on
ν-SVR's two it would take the same pair steps, so the stack goes on); a point the certificate
refuses is finished by the strategy too.
"""

from __future__ import annotations

import math
import time
from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

import qpcore
from qpcore.backends.capabilities import Capability
from qpcore.backends.operators import Kernel
from qpcore.core.problem import QP
from qpcore.core.solve import Reporter, Strategy
from qpcore.core.state import Result
from qpcore_train.batched_smo import FACE_EVERY, batched_smo, certify_refresh, stack_dtype, stack_gram, stack_result

__all__ = ["HANDOFF_STEPS", "mirrored_why_not", "solve_mirrored"]

FloatArray = NDArray[np.float64]

HANDOFF_STEPS = 2      # pair steps per variable before the strategy takes the run over
REFRESHES = 3          # resumptions from the exact gradient before the strategy finishes the point
DENSE_FRACTION = 0.25  # a sparse X at least this dense is densified for the kernel matrix's product


def _signs(l: int) -> FloatArray:
    return np.concatenate((np.ones(l), -np.ones(l)))


def mirrored_why_not(qp: QP, kernel: Kernel, strategy: Strategy, *, x0: FloatArray | None, tol: float,
                     cache_bytes: int, reporter: Reporter | None) -> str | None:
    """None when :func:`solve_mirrored` takes ``qp``, else why not.

    It takes an operator declaring ``MIRRORED`` with one equality row ±sᵀx = b or one row per half
    (the sums of α and of α*), lower bounds 0 and
    finite upper bounds, a start on the equality, a positive semidefinite kernel on points (not a
    precomputed one), a strategy that declares LIBSVM's SMO as its lockstep method, no reporter,
    and a kernel matrix of the stack's dtype within ``cache_bytes``.
    """
    if reporter is not None:
        return "a reporter follows the solve"
    if strategy.lockstep() != "smo-wss2":
        return f"the strategy {type(strategy).__name__} does not declare LIBSVM's SMO as its lockstep method"
    if Capability.MIRRORED not in qp.Q.capabilities or qp.m not in (1, 2) or qp.k:
        return "not a mirrored dual with one equality row or one per half"
    if kernel.name == "precomputed" or kernel.psd is not True:
        return f"the {kernel.name} kernel is precomputed or not declared positive semidefinite"
    l = qp.n // 2
    s = _signs(l)
    A = qp.A
    halves = np.kron(np.eye(2), np.ones(l))
    if not (np.array_equal(A, s[None, :]) or np.array_equal(A, -s[None, :]) or np.array_equal(A, halves)):
        return "the equality rows are neither ±(1, …, −1, …) nor one per half"
    if np.any(qp.lb != 0.0) or not np.all(np.isfinite(qp.ub)):
        return "the box is not 0 ≤ x ≤ C"
    start = np.zeros(qp.n) if x0 is None else x0
    if np.any(start < 0.0) or np.any(start > qp.ub) or np.abs(A @ start - qp.b).max() > 1e-12 * max(
            1.0, float(np.abs(start).sum())):
        return "the start is off the box or the equality rows"
    need = l * l * np.dtype(stack_dtype(kernel.name, tol)).itemsize
    if need > cache_bytes:
        return f"its kernel matrix ({need / 2**20:.0f} MB) exceeds the cache budget ({cache_bytes / 2**20:.0f} MB)"
    return None


def solve_mirrored(qp: QP, X: Any, kernel: Kernel, strategy: Strategy, *, x0: FloatArray | None, tol: float,
                   max_iter: int | None, time_limit: float | None) -> Result:
    """Solve a mirrored dual that :func:`mirrored_why_not` takes, certified alone.

    Parameters
    ----------
    qp : QP
        The dual (its operator is the certificate's and the strategy's).
    X : ndarray or csr_matrix
        Its l points.
    kernel : Kernel
    strategy : Strategy
        Takes over a run its step budget did not finish, or a point the certificate refuses.
    x0 : ndarray, optional
        A feasible start; zeros when omitted.
    tol, max_iter, time_limit :
        As ``qpcore.solve`` takes them.

    Returns
    -------
    Result
        The certified point; ``stats["strategy"]`` says ``"stacked-smo"``, or the strategy's
        name when it finished the run (``stats["handed_over"]`` says why).
    """
    t0 = time.perf_counter()
    deadline = t0 + time_limit if time_limit is not None else math.inf
    n, l = qp.n, qp.n // 2
    dtype = stack_dtype(kernel.name, tol)
    Xd = X
    if sp.issparse(X) and X.nnz >= DENSE_FRACTION * X.shape[0] * X.shape[1]:
        Xd = X.toarray()
    K = stack_gram(Xd, kernel, dtype)
    point = np.arange(n) % l
    y = _signs(l)[None, :]
    groups = (np.arange(n) >= l)[None, :] if qp.m == 2 else None
    diag = np.tile(kernel.self_values(Xd), 2)[None, :]
    ub = qp.ub[None, :]
    p = qp.c[None, :]

    def rows(pid: NDArray[np.intp], t: NDArray[np.intp]) -> FloatArray:
        # a variable's row over the 2l variables is its point's row twice: (1, 2l) or (1, m, 2l)
        r = K[point[t]]
        out: FloatArray = np.concatenate((r, r), axis=-1)
        return out

    def block(pid: NDArray[np.intp], t: NDArray[np.intp]) -> FloatArray:
        tt = point[t]
        out: FloatArray = K[tt[:, :, None], tt[:, None, :]]
        return out

    limit = np.iinfo(np.int64).max if max_iter is None else int(max_iter)
    # a strategy with another method once pair steps crawl (auto: INCAS, one equality row) takes a
    # run over after the budget; else the stack goes on (the strategy's pair steps would be dearer)
    budget = min(limit, max(1, int(HANDOFF_STEPS * n))) if strategy.lockstep_switch(qp) else limit
    start = None if x0 is None else np.asarray(x0, dtype=np.float64)[None, :]
    grad = None
    if start is not None and start.any():
        # G = s∘(K (α − α*) tiled) + p: one product, not a row per nonzero
        w = start[0, :l] - start[0, l:]
        grad = y * np.tile(K @ w.astype(K.dtype), 2)[None, :] + p
    run = batched_smo(rows, diag, y, ub, p=p, tol=tol, alpha=start, grad=grad, max_iter=budget, deadline=deadline,
                      dtype=dtype, newton_every=FACE_EVERY, block=block, groups=groups)
    alpha, its, ok_run = run.alpha.copy(), run.iterations.copy(), run.converged.copy()
    cert_run = certify_refresh([qp], [np.arange(n)], rows, diag, y, ub, alpha, its, ok_run, tol=tol,
                               deadline=deadline, dtype=dtype, max_iter=budget, refreshes=REFRESHES, lin=p,
                               groups=groups)
    x, g, cert = alpha[0], cert_run.grads[0], cert_run.certs[0]
    steps, met = int(its[0]), bool(cert_run.met[0])
    stats: dict[str, Any] = {"rounds": run.rounds + cert_run.rounds, "face_steps": int(run.newton[0]),
                             "refreshes": cert_run.refreshes, "stack_steps": steps}
    handed = None
    if not ok_run[0] and steps >= budget and budget < limit:
        handed = f"the stack's budget of {budget} pair steps ({HANDOFF_STEPS} per variable) did not reach tol"
    elif ok_run[0] and not met:
        handed = f"the certificate refused the stack's point after {REFRESHES} refreshes"
    if handed is not None and time.perf_counter() < deadline:
        left = None if time_limit is None else max(deadline - time.perf_counter(), 1e-6)
        res = qpcore.solve(qp, strategy, x0=x, tol=tol, max_iter=None if max_iter is None else max(0, limit - steps),
                           time_limit=left)
        res.stats.update({**{f"stack_{k}" if k != "stack_steps" else k: v for k, v in stats.items()},
                          "handed_over": handed, "seconds": time.perf_counter() - t0})
        res.stats["strategy_choice"] = [(0, "stacked-smo", "a mirrored dual whose kernel matrix fits the cache"),
                                        *res.stats.get("strategy_choice", [])]
        return attrs.evolve(res, iterations=int(res.iterations) + steps)
    why = ("a mirrored dual whose kernel matrix fits the cache: computed once, pair steps on its rows with "
           "face steps every " + str(FACE_EVERY) + " rounds")
    stats.update({"seconds": time.perf_counter() - t0, "strategy": "stacked-smo",
                  "strategy_choice": [(0, "stacked-smo", why)]})
    # a run not handed over stopped at the caller's limit or its clock (a handoff the clock
    # prevented is the clock's)
    return stack_result(qp, x, g, cert, steps=steps, converged=bool(ok_run[0]), met=met,
                        limit_hit=steps >= limit and handed is None, stats=stats)

