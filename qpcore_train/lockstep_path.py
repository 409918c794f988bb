"""The binary duals of every fold solved in lockstep along a path of C values (issue 35, part 2).

A cross-validation over C solves, for each C, the same binary duals on every fold: problems of
the same kind over subsets of one kernel matrix. :func:`lockstep_path` stacks them (every fold
and, for more than two classes, every binary problem inside it) and solves each C with
:func:`qpcore_train.batched_smo.batched_smo`, so a round is a fixed number of numpy calls whatever
the number of problems. Along increasing C each problem starts from its solution at the previous
C scaled by the ratio of the C values (feasible, DeCoste and Wagstaff's seed), as the one-by-one
path does.

Kernel rows come from one stack of the problems' own blocks K[rows][:, rows] when it fits
``stack_bytes`` (a row is then one contiguous copy), else from the shared matrix by one flat
``take`` per round (about 8× dearer per row: still a fixed number of calls). Over the stack,
LIBSVM's shrinking is done by building narrower stacks of the variables still in play
(:func:`_shrinking_smo`; each at most :data:`SHRINK_WIDTH` of the last one's width, so they add at
most about half of the stack's memory), and unshrinking by an exact float64 gradient.

Each problem is certified alone (``qpcore.kkt`` at the exact float64 gradient of its own
:class:`~qpcore.core.problem.QP`). A problem whose run met tol but whose certificate did not
(the single-precision scores drift over many steps) resumes in the stack from the exact gradient,
up to :data:`REFRESHES` times; one still short after that is finished alone by the caller's
strategy from the batch's point, and counted (``PathStep.fallbacks``).

At a tol where the strategy's own method is not pair steps (``handoff``, from
``Strategy.lockstep_handoff``: ``auto`` starts INCAS at tol ≤ 1e-5 and ends SMO with the block
finish at tol ≤ 1e-4) a problem takes at most
:data:`HANDOFF_STEPS` pair steps per variable in the stack per C and is then finished alone by the
strategy (``PathStep.handoffs``): the small-C problems end in the stack, where they are cheap,
and the large-C ones, where pair steps run to the hundreds of thousands, go to the active set
(the block finish's faces are factorizations of hundreds of free variables: heavy steps
already, taken one problem at a time).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np
from numpy.typing import NDArray

import qpcore
from qpcore.core.certificate import kkt
from qpcore.core.problem import QP
from qpcore.core.solve import Strategy
from qpcore.core.state import Status
from qpcore_train.batched_smo import batched_smo, certify_refresh, meets

__all__ = ["PathStep", "REFRESHES", "lockstep_path"]

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

REFRESHES = 3   # resumptions from the exact gradient before a problem is finished alone
SHRINK_AFTER = 1000   # rounds on the whole stack before the bound variables that cannot move are set aside
SHRINK_WIDTH = 0.75   # a narrower stack is built only when it is at most this fraction of the width
MAX_PHASES = 20      # returns from a narrowed set before a problem works on all its variables
GRAD_BLOCK = 1024     # rows per float64 block of the exact gradient after a shrunk phase
HANDOFF_STEPS = 1     # pair steps per variable a problem takes in the stack per C before a handoff


@attrs.frozen(eq=False)
class PathStep:
    """One C of :func:`lockstep_path`: every problem's solution and how it was reached.

    Attributes
    ----------
    alphas : list of ndarray
        Each problem's point over its own rows.
    bias : ndarray of shape (B,)
        Each problem's threshold b (−λ of its equality row, from its certificate).
    iterations : ndarray of int, shape (B,)
        Pair steps of each problem (in the stack, then alone).
    certified : ndarray of bool, shape (B,)
        Whether the problem's certificate met tol.
    objective : ndarray of shape (B,)
        Each problem's dual objective.
    seconds : float
        Wall time of this C (the stack, the certificates, the problems finished alone).
    rounds : int
        Rounds of the stack.
    fallbacks : int
        Problems finished alone by the strategy because the stack's point was not certified.
    handoffs : int
        Problems handed to the strategy alone after the stack's step budget (``handoff``).
    stacked : bool
        Whether the rounds read a stack of the problems' own blocks (else rows gathered from K:
        the stack exceeded ``stack_bytes``).
    """

    alphas: list[FloatArray]
    bias: FloatArray
    iterations: NDArray[np.int64]
    certified: NDArray[np.bool_]
    objective: FloatArray
    seconds: float
    rounds: int
    fallbacks: int
    handoffs: int
    stacked: bool


def lockstep_path(K: NDArray[Any], diag: FloatArray, members: Sequence[IndexArray], labels: Sequence[FloatArray],
                  weights: Sequence[FloatArray], C_sorted: FloatArray,
                  make_qp: Callable[[int, FloatArray, NDArray[Any] | None], QP], strategy: Strategy, *, tol: float,
                  max_iter: int | None, time_limit: float | None,
                  stack_bytes: int, dtype: type[np.floating[Any]], handoff: bool = False) -> list[PathStep]:
    """Solve B binary C-SVC duals over one kernel matrix together, for each C in increasing order.

    Problem p is min ½αᵀ(ssᵀ∘K[r, r])α − eᵀα, 0 ≤ α ≤ C·w, sᵀα = 0 with r = ``members[p]``,
    s = ``labels[p]``, w = ``weights[p]``.

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The kernel matrix of all points (the shared one; read, never written).
    diag : ndarray of shape (n,)
        K's diagonal in float64.
    members, labels, weights : sequences of B arrays
        Each problem's points (indices into K), their ±1 labels, their factors on C (> 0).
    C_sorted : ndarray
        The C values, increasing.
    make_qp : callable
        ``make_qp(p, ub, own)``: problem p's float64 QP with upper bounds ``ub`` (its certificate's
        problem, and the strategy's when it is finished alone); ``own`` is its kernel block
        K[r][:, r] in the stack (a view), or None when rows are gathered from K.
    strategy : Strategy
        Finishes alone a problem the stack left uncertified.
    tol : float
        The pair gap each problem stops at (and its certificate's tol).
    max_iter : int, optional
        Pair steps per problem per C.
    time_limit : float, optional
        Seconds per problem per C: the stack of B problems gets B times this.
    stack_bytes : int
        Budget of the stack of the problems' blocks (else rows are gathered from K).
    dtype : numpy floating type
        Of the stack's scores and rows (float32 streams half the bytes; see
        :func:`~qpcore_train.batched_smo.batched_smo`).
    handoff : bool
        Give each problem at most :data:`HANDOFF_STEPS` pair steps per variable in the stack per C;
        one still above tol then is finished alone by ``strategy`` from the stack's point. For a
        strategy whose own method at this tol is not pair steps (``Strategy.lockstep_handoff``:
        ``auto`` starts INCAS at a tight tol and ends SMO with the block finish at tol ≤ 1e-4;
        there SMO's steps on a large-C problem run to the hundreds of thousands).

    Returns
    -------
    list of PathStep
        One per C, in the order of ``C_sorted``.
    """
    B = len(members)
    sizes = np.array([m.size for m in members])
    N = int(sizes.max())
    glob = np.zeros((B, N), dtype=np.intp)
    Y = np.ones((B, N))
    W = np.zeros((B, N))
    Dg = np.ones((B, N))
    for p, (r, s, w) in enumerate(zip(members, labels, weights)):
        glob[p, :r.size] = r
        glob[p, r.size:] = r[0]            # padding repeats a real point: it has ub = 0 and never moves
        Y[p, :r.size] = s
        W[p, :r.size] = w
        Dg[p, :r.size] = diag[r]
    rows, stack = _row_source(K, glob, sizes, stack_bytes, dtype)
    limit = np.iinfo(np.int64).max if max_iter is None else int(max_iter)
    budget = min(limit, HANDOFF_STEPS * N) if handoff else limit
    stack_iter = None if budget == np.iinfo(np.int64).max else budget
    steps: list[PathStep] = []
    alpha: FloatArray | None = None
    C_prev = 0.0
    for C in np.asarray(C_sorted, dtype=np.float64):
        t0 = time.perf_counter()
        deadline = t0 + B * time_limit if time_limit is not None else math.inf
        ub = float(C) * W
        a0 = None if alpha is None else np.minimum(alpha * (float(C) / C_prev), ub)
        if stack is not None:
            alpha, its, ok_run, rounds = _shrinking_smo(stack, Dg, Y, ub, a0, tol=tol, max_iter=stack_iter,
                                                        deadline=deadline, dtype=dtype)
        else:
            run = batched_smo(rows, Dg, Y, ub, tol=tol, alpha=a0, max_iter=stack_iter, deadline=deadline,
                              dtype=dtype)
            alpha, its, ok_run, rounds = run.alpha.copy(), run.iterations.copy(), run.converged.copy(), run.rounds
        # the stack's budget, not the caller's limit, stopped these: the strategy takes them over
        handed = ~ok_run & (its >= budget) if budget < limit else np.zeros(B, dtype=bool)
        qps = [make_qp(p, ub[p, :sizes[p]], None if stack is None else stack[p, :sizes[p], :sizes[p]])
               for p in range(B)]
        slots = [np.arange(int(k)) for k in sizes]
        cert_run = certify_refresh(qps, slots, rows, Dg, Y, ub, alpha, its, ok_run, tol=tol, deadline=deadline,
                                   dtype=dtype, max_iter=max_iter, refreshes=REFRESHES)
        certs, grads, met = cert_run.certs, cert_run.grads, cert_run.met
        rounds += cert_run.rounds
        fallbacks = int((ok_run & ~met).sum())
        for p in np.flatnonzero((ok_run & ~met) | handed).tolist():
            # still refused after the refreshes, or handed over: the strategy alone, from the stack's point
            left = None if time_limit is None else max(0.0, deadline - time.perf_counter())
            res = qpcore.solve(qps[p], strategy, x0=alpha[p, :sizes[p]], tol=tol, max_iter=max_iter,
                               time_limit=left)
            x = np.asarray(res.x, dtype=np.float64)
            alpha[p, :sizes[p]] = x
            grads[p] = qps[p].gradient(x)
            certs[p] = kkt(qps[p], x, grads[p])
            met[p] = meets(certs[p], tol) and res.status == Status.CONVERGED
            its[p] += int(res.iterations)
        xs = [alpha[p, :sizes[p]].copy() for p in range(B)]
        obj = np.array([0.5 * float(xs[p] @ (grads[p] + qps[p].c)) for p in range(B)])
        bias = np.array([-float(certs[p].multipliers[0]) for p in range(B)])
        steps.append(PathStep(alphas=xs, bias=bias, iterations=its, certified=met, objective=obj,
                              seconds=time.perf_counter() - t0, rounds=rounds, fallbacks=fallbacks,
                              handoffs=int(handed.sum()), stacked=stack is not None))
        C_prev = float(C)
    return steps


RowSource = tuple[Callable[[IndexArray, IndexArray], FloatArray], NDArray[Any] | None]


def _stack_rows(S: NDArray[Any]) -> tuple[Callable[[IndexArray, IndexArray], FloatArray],
                                          Callable[[IndexArray, IndexArray], FloatArray]]:
    """``rows`` and ``block`` of a stack (B, N, N) of the problems' own kernel blocks."""

    def rows_s(pid: IndexArray, t: IndexArray) -> FloatArray:
        out: FloatArray = S[pid, t] if t.ndim == 1 else S[pid[:, None], t]
        return out

    def block_s(pid: IndexArray, t: IndexArray) -> FloatArray:
        out: FloatArray = S[pid[:, None, None], t[:, :, None], t[:, None, :]]
        return out

    return rows_s, block_s


def _exact_gradient(S: NDArray[Any], p: int, beta: FloatArray, y: FloatArray) -> FloatArray:
    """G = y∘(K β) − 1 of problem p over all its variables, in float64 (blocks of the stack's rows)."""
    nz = np.flatnonzero(beta)
    Kb = np.zeros(beta.size)
    for s0 in range(0, nz.size, GRAD_BLOCK):
        k = nz[s0:s0 + GRAD_BLOCK]
        Kb += beta[k] @ np.asarray(S[p, k], dtype=np.float64)
    out: FloatArray = y * Kb - 1.0
    return out


def _extremes(beta: FloatArray, F: FloatArray, lo: FloatArray, hi: FloatArray,
              live: NDArray[np.bool_]) -> tuple[NDArray[np.bool_], NDArray[np.bool_], FloatArray, FloatArray]:
    """I_up and I_low of each row (``live`` marks the real slots), the largest score over I_up and
    the smallest over I_low: the pair gap is their difference."""
    up, low = (beta < hi) & live, (beta > lo) & live
    gmax: FloatArray = np.where(up, F, -np.inf).max(axis=1, initial=-np.inf)
    gmin: FloatArray = np.where(low, F, np.inf).min(axis=1, initial=np.inf)
    return up, low, gmax, gmin


def _kept(beta: FloatArray, F: FloatArray, lo: FloatArray, hi: FloatArray,
          live: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """LIBSVM's shrinking rule on a stack: the variables that can still join a violating pair.

    A variable at the top of its box (β = hi, only in I_low) whose score is above the largest of
    I_up, or at the bottom (only in I_up) with one below the smallest of I_low, is set aside;
    ``live`` marks the real slots (padding is never kept).
    """
    up, low, gmax, gmin = _extremes(beta, F, lo, hi, live)
    out: NDArray[np.bool_] = (up & low) | (up & (F >= gmin[:, None])) | (low & (F <= gmax[:, None]))
    return out


def _shrinking_smo(S: NDArray[Any], Dg: FloatArray, Y: FloatArray, ub: FloatArray, a0: FloatArray | None, *,
                   tol: float, max_iter: int | None, deadline: float,
                   dtype: type[np.floating[Any]]) -> tuple[FloatArray, NDArray[np.int64], NDArray[np.bool_], int]:
    """The stack's SMO with LIBSVM's shrinking, done by narrower stacks.

    Every :data:`SHRINK_AFTER` rounds each unfinished problem sets aside the variables
    :func:`_kept` rejects among those it still works on; once the widest problem's set is at
    most :data:`SHRINK_WIDTH` of the stack's width, a narrower stack of those variables' blocks
    is built (a round streams that width, not the whole). A problem that meets tol on a
    narrowed set has its gradient recomputed exactly over all its variables (float64); it is
    done when its gap over all of them is ≤ tol, else it goes on from the variables that rule
    keeps at the exact gradient (LIBSVM's unshrinking). After :data:`MAX_PHASES` such returns a
    problem works on all its variables. Returns α, steps, whether each met tol, and rounds.
    """
    B, N = Y.shape
    limit = np.iinfo(np.int64).max if max_iter is None else int(max_iter)
    pos = Y > 0
    hi = np.where(pos, ub, 0.0)
    lo = np.where(pos, 0.0, -ub)
    alpha = np.zeros((B, N)) if a0 is None else np.array(a0, dtype=np.float64)
    its = np.zeros(B, dtype=np.int64)
    ok = np.zeros(B, dtype=bool)
    returns = np.zeros(B, dtype=np.int64)
    rounds = 0
    # the working stack: problem p's slot t is its variable cols[p, t] (t < cnt[p]); its α and
    # the solver's gradient there are a_w and g_w; a problem sits at row at[p] of the stack
    cur: NDArray[Any] = S
    cols = np.tile(np.arange(N), (B, 1))
    cnt = np.full(B, N)
    at = np.arange(B)
    W = N
    a_w = alpha.copy()
    g_w: FloatArray | None = None
    todo = np.arange(B)
    while todo.size:
        left = limit - int(its[todo].max())
        if left <= 0 or time.perf_counter() >= deadline:
            break
        rows_c, block_c = _stack_rows(cur)
        here = at[todo]
        live = np.arange(W)[None, :] < cnt[todo][:, None]
        rc = todo[:, None]
        c_t = cols[todo]
        run = batched_smo(lambda pid, t: rows_c(here[pid], t), np.where(live, Dg[rc, c_t], 1.0),
                          np.where(live, Y[rc, c_t], 1.0), np.where(live, ub[rc, c_t], 0.0), tol=tol,
                          alpha=a_w[todo], grad=None if g_w is None else g_w[todo], deadline=deadline, dtype=dtype,
                          max_iter=min(left, SHRINK_AFTER), block=lambda pid, t: block_c(here[pid], t))
        rounds += run.rounds
        its[todo] += run.iterations
        a_w[todo] = run.alpha
        if g_w is None:
            g_w = np.zeros((B, W))
        g_w[todo] = run.grad
        for a, p in enumerate(todo.tolist()):
            alpha[p, c_t[a, :cnt[p]]] = run.alpha[a, :cnt[p]]
        # the problems that met tol on their set: done when the set is everything, else
        # unshrink (exact gradient over all variables) and, above tol, go on from LIBSVM's set there
        fresh: dict[int, FloatArray] = {}
        for a in np.flatnonzero(run.converged).tolist():
            p = int(todo[a])
            if cnt[p] == N and W == N:
                ok[p] = True
                continue
            bp = np.where(pos[p], alpha[p], -alpha[p])
            Gp = _exact_gradient(S, p, bp, Y[p])
            _, _, gmax, gmin = _extremes(bp[None, :], (-Y[p] * Gp)[None, :], lo[p][None, :], hi[p][None, :],
                                         (ub[p] > 0)[None, :])
            if gmax[0] - gmin[0] <= tol:
                ok[p] = True
            else:
                fresh[p] = Gp
                returns[p] += 1
        todo = np.flatnonzero(~ok)
        if not todo.size:
            break
        # each unfinished problem's next set, as columns of its problem
        nxt: list[IndexArray] = []
        for p in todo.tolist():
            if p in fresh:
                if returns[p] > MAX_PHASES:
                    nxt.append(np.arange(N))
                    continue
                bp, Fp = np.where(pos[p], alpha[p], -alpha[p]), -Y[p] * fresh[p]
                keep = _kept(bp[None, :], Fp[None, :], lo[p][None, :], hi[p][None, :], (ub[p] > 0)[None, :])[0]
                nxt.append(np.flatnonzero(keep))
            else:
                c = cols[p, :cnt[p]]
                bp = np.where(pos[p, c], a_w[p, :cnt[p]], -a_w[p, :cnt[p]])
                Fp = -Y[p, c] * g_w[p, :cnt[p]]
                keep = _kept(bp[None, :], Fp[None, :], lo[p, c][None, :], hi[p, c][None, :],
                             (ub[p, c] > 0)[None, :])[0]
                nxt.append(c[keep])
        W_new = max(2, max(int(c.size) for c in nxt))
        if not fresh and W_new > SHRINK_WIDTH * W:
            continue          # not narrow enough to pay for a new stack: the same stack goes on
        # a new stack of the sets' blocks (the padding slots repeat column 0 at α = 0, ub = 0)
        W = W_new
        cols_new = np.zeros((B, W), dtype=np.intp)
        cnt_new = np.zeros(B, dtype=np.int64)
        cur = np.zeros((todo.size, W, W), dtype=S.dtype)
        a_new, g_new = np.zeros((B, W)), np.zeros((B, W))
        for a, (p, c) in enumerate(zip(todo.tolist(), nxt)):
            cols_new[p, :c.size] = c
            cnt_new[p] = c.size
            cur[a, :c.size, :c.size] = S[p][np.ix_(c, c)]
            a_new[p, :c.size] = alpha[p, c]
            if p in fresh:
                g_new[p, :c.size] = fresh[p][c]
            else:
                # the solver's gradient of the variables kept, by their slot in the old stack
                slot = np.searchsorted(cols[p, :cnt[p]], c)
                g_new[p, :c.size] = g_w[p, slot]
        cols, cnt, a_w, g_w = cols_new, cnt_new, a_new, g_new
        at = np.zeros(B, dtype=np.intp)
        at[todo] = np.arange(todo.size)
    return alpha, its, ok, rounds


def _row_source(K: NDArray[Any], glob: IndexArray, sizes: NDArray[Any], stack_bytes: int,
                dtype: type[np.floating[Any]]) -> RowSource:
    """The stack's ``rows`` (see :data:`~qpcore_train.batched_smo.RowFn`), and the stack of the
    problems' own blocks itself when it fits ``stack_bytes`` (None: rows gathered from K)."""
    B, N = glob.shape
    n = int(K.shape[0])
    itemsize = np.dtype(dtype).itemsize
    if B * N * N * itemsize <= stack_bytes:
        # each problem's own block, contiguous: a kernel row of every problem is one fancy index
        S = np.zeros((B, N, N), dtype=dtype)
        for p in range(B):
            r = glob[p, :sizes[p]]
            S[p, :r.size, :r.size] = K[np.ix_(r, r)]
        rows_s, _ = _stack_rows(S)
        return rows_s, S
    flat = K.ravel()
    same = K.dtype == np.dtype(dtype)

    def rows_t(pid: IndexArray, t: IndexArray) -> FloatArray:
        # one flat take: a two-array fancy index into K costs about three times as much
        if t.ndim == 1:
            got = flat.take(glob[pid, t][:, None] * n + glob[pid])
        else:
            got = flat.take(glob[pid[:, None], t][:, :, None] * n + glob[pid][:, None, :])
        out: FloatArray = got if same else got.astype(dtype)
        return out

    return rows_t, None
