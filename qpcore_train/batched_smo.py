"""Many small SVM duals solved together: SMO over a stack of padded problems.

A one-vs-one multiclass SVM on small data is many small duals (45 of ~250 variables for the ten
digits); SMO solves each in ~100 pair steps, and a step in Python costs far more than its
arithmetic. :func:`batched_smo` takes one pair step in *every* unfinished problem per round, each
problem's working set chosen by LIBSVM's second-order rule (Fan, Chen and Lin 2005), so that a
round is a fixed number of numpy calls on a (problems × variables) stack whatever the number of
problems. Each problem follows the iterates SMO without shrinking would take on it alone and stops
at its own gap ≤ tol.

The problems are padded to a common size: a padding variable has the bounds 0 ≤ α ≤ 0, so it is
never selected and never moves. Kernel rows come from the caller (:data:`RowFn`), which can lay
the stack over one shared kernel matrix (one-vs-one pairs are pairs of class blocks). This module
returns points, not certificates: the caller certifies each problem with ``qpcore.kkt``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any, Callable

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.backends.operators import Kernel
from qpcore.core.certificate import KKT, kkt
from qpcore.core.state import Result, State, Status, bound_status

__all__ = ["FACE_EVERY", "BatchRun", "BlockFn", "Certified", "RowFn", "batched_smo", "certify_refresh", "meets",
           "stack_dtype", "stack_gram", "stack_result"]

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

#: ``rows(problems, local)``: for each listed problem p (shape (A,)) the kernel row K_{t,·} of its
#: local variable t = ``local[a]`` over its own padded variables, shape (A, N); with ``local`` of
#: shape (A, m), m rows of each problem, shape (A, m, N). The kernel values
#: K, not Q = yyᵀ∘K: the signs are the solver's. A new array in the solver's ``dtype``, which the
#: solver overwrites.
RowFn = Callable[[IndexArray, IndexArray], FloatArray]

#: ``block(problems, local)``: with ``local`` of shape (A, m), the kernel among those m variables of
#: each problem, shape (A, m, m) (optional: else taken from the rows).
BlockFn = Callable[[IndexArray, IndexArray], FloatArray]

TAU = 1e-12          # LIBSVM's guard on the curvature of a pair
CLOCK_EVERY = 32     # rounds between reads of the clock
NEWTON_FREE = 256    # largest free set a face step solves (a dense solve of that order)
FACE_SOLVES = 6      # solves of one face step (each holds the variable that blocked the last)
FACE_RIDGE = 1e-8    # relative ridge of a face step's K_FF (duplicate points, low-rank kernels)
FACE_EVERY = 20      # rounds between face steps of a stack that takes them (multiclass, mirrored duals)


def stack_dtype(kernel_name: str, tol: float) -> type[np.floating[Any]]:
    """The dtype of a stack's rows and scores: float32 where tol allows it (≥ 1e-4) and the kernel's
    entries are at most 1 (RBF; other kernels' entries grow with the data, and so would the
    rounding of the scores), float64 otherwise. The certificates are float64 either way, and a
    refresh resumes from the exact gradient (:func:`certify_refresh`)."""
    return np.float32 if tol >= 1e-4 and kernel_name == "rbf" else np.float64


def stack_gram(X: Any, kernel: Kernel, dtype: type[np.floating[Any]]) -> NDArray[Any]:
    """K(X, X) in ``dtype``, a stack's kernel matrix. In single precision the RBF kernel is computed
    from centred points (the same distances, without the cancellation of large norms) and the
    others in float64.

    Parameters
    ----------
    X : ndarray or csr_matrix
        The points.
    kernel : Kernel
    dtype : numpy floating type

    Returns
    -------
    ndarray of shape (n, n)
    """
    if dtype is np.float64 or sp.issparse(X) or kernel.name != "rbf":
        return kernel.block(X, X).astype(dtype, copy=False)
    Z = np.asarray(X, dtype=np.float64)
    Z = (Z - Z.mean(axis=0)).astype(np.float32)
    g = np.float32(kernel.gamma)     # a float64 scalar would send every pass through float64
    gsq = g * np.einsum("ij,ij->i", Z, Z)
    # −γ‖u − v‖² = 2γ uᵀv − γ‖u‖² − γ‖v‖² as one product of augmented points
    one = np.ones((Z.shape[0], 1), dtype=np.float32)
    left = np.hstack((np.float32(2.0) * g * Z, -gsq[:, None], one))
    right = np.hstack((Z, one, -gsq[:, None]))
    out: NDArray[np.float32] = left @ right.T
    np.minimum(out, np.float32(0.0), out=out)      # rounding can make ‖u−v‖² slightly negative
    np.exp(out, out=out)
    return out


@attrs.frozen(eq=False)
class BatchRun:
    """What :func:`batched_smo` returns.

    Attributes
    ----------
    alpha : ndarray of shape (B, N)
        The point of each problem (0 at padding).
    grad : ndarray of shape (B, N)
        The solver's gradient Qα + p of each problem (incremental; not a certificate).
    iterations : ndarray of int, shape (B,)
        Pair steps each problem took.
    converged : ndarray of bool, shape (B,)
        Whether the problem met its gap ≤ tol at the solver's gradient (False: a limit ended it).
    rounds : int
        Rounds taken (the largest number of steps of any problem).
    newton : ndarray of int, shape (B,)
        Face steps each problem took (``newton_every``).
    """

    alpha: FloatArray
    grad: FloatArray
    iterations: NDArray[np.int64]
    converged: BoolArray
    rounds: int
    newton: NDArray[np.int64]


def _gradient_of(rows: RowFn, y: FloatArray, alpha: FloatArray, p: FloatArray) -> FloatArray:
    """G = (yyᵀ∘K)α + p for every problem, one nonzero α per problem per call of ``rows``."""
    G = p.copy()
    nz = alpha != 0.0
    counts = nz.sum(axis=1)
    order = np.argsort(~nz, axis=1, kind="stable")     # each problem's nonzeros first
    for k in range(int(counts.max(initial=0))):
        pid = np.flatnonzero(counts > k)
        t = order[pid, k]
        w = y[pid, t] * alpha[pid, t]
        G[pid] += y[pid] * (rows(pid, t) * w[:, None])
    return G


def _newton(rows: RowFn, block: BlockFn | None, pid: IndexArray, F: NDArray[Any], beta: FloatArray, lo: FloatArray,
            hi: FloatArray, ridge: float, grp: NDArray[np.bool_] | None = None) -> BoolArray:
    """Steps toward the exact minimizer on each problem's current face, active-set style.

    In β = y∘α the dual is min ½βᵀKβ − yᵀβ, Σβ fixed, lo ≤ β ≤ hi, and F = y − Kβ is minus its
    gradient. With the bound variables held, the step d on the free set solves
    [K_FF e; eᵀ 0][d; μ] = [F_F; 0]. A problem takes it whole when it stays inside the box, and
    then sits at the minimizer on its face: one step instead of SMO's tail of pair steps on a face
    it has already found. Otherwise it steps to the first bound in the way, holds that variable
    there and solves again on the rest (up to ``FACE_SOLVES`` solves, all problems in one batched
    call each). With two groups (``grp`` marks the second) Σβ is fixed in each, and e becomes one
    column per group. β and F are updated in place; returns which problems moved.
    """
    A, N = F.shape
    free = (beta > lo) & (beta < hi)
    nf = free.sum(axis=1)
    moved = np.zeros(A, dtype=bool)
    cand = np.flatnonzero((nf >= 2) & (nf <= NEWTON_FREE))
    if not cand.size:
        return moved
    m = int(nf[cand].max())
    idx = np.argsort(~free[cand], axis=1, kind="stable")[:, :m]       # each problem's free variables first
    act = np.arange(m)[None, :] < nf[cand][:, None]                   # free variables still moving
    # the rows of the free variables are only needed where a step is taken: K_FF alone first
    R: NDArray[Any] | None = None
    c_n = cand.size
    G = 1 if grp is None else 2
    S = np.zeros((c_n, m + G, m + G))
    if block is not None:
        S[:, :m, :m] = block(pid[cand], idx)
    else:
        R = rows(pid[cand], idx)
        S[:, :m, :m] = np.take_along_axis(R, idx[:, None, :], axis=2)
    # S is the KKT matrix of the free variables still moving ("act"); a held variable's row and
    # column are a decoupled unit row (its d = 0), so the same S serves every solve
    v = act.astype(np.float64)
    S[:, :m, :m] *= v[:, :, None] * v[:, None, :]
    ar = np.arange(m)
    S[:, ar, ar] += np.where(act, ridge, 1.0)
    rc = cand[:, None]
    if grp is None:
        S[:, :m, m] = v
        S[:, m, :m] = v
    else:
        second = grp[rc, idx]
        for k, member in enumerate((~second, second)):
            S[:, :m, m + k] = v * member
            S[:, m + k, :m] = v * member
    b0 = beta[rc, idx]
    lo_f, hi_f = lo[rc, idx], hi[rc, idx]
    bf = b0.copy()
    Ff = F[rc, idx].astype(np.float64)
    g = np.arange(c_n)                              # problems still solving
    for _ in range(FACE_SOLVES):
        if G > 1:
            # a group without a moving variable has an empty row: decoupled (its μ = 0)
            for k in range(G):
                S[g, m + k, m + k] = (S[g, :m, m + k] == 0.0).all(axis=1)
        Sg = S if g.size == c_n else S[g]
        rhs = np.zeros((g.size, m + G))
        rhs[:, :m] = Ff[g] * act[g]
        try:
            d = np.linalg.solve(Sg, rhs[:, :, None])[:, :m, 0]
        except np.linalg.LinAlgError:
            break
        d *= act[g]
        finite = np.isfinite(d).all(axis=1)
        d[~finite] = 0.0
        # exactly in Σd = 0 (an ill-conditioned K_FF leaves the solve's last row loose), so the
        # equality does not drift
        if G == 1:
            na = act[g].sum(axis=1)
            d -= (d.sum(axis=1) / np.maximum(na, 1))[:, None] * act[g]
        else:
            for k in range(G):
                member = act[g] & (second[g] if k else ~second[g])
                d -= ((d * member).sum(axis=1) / np.maximum(member.sum(axis=1), 1))[:, None] * member
        # an exact line search along d on the quadratic itself: a direction a near-singular K_FF
        # made inaccurate still only ever lowers the objective (slope −F_Fᵀd < 0, step ≤ the
        # minimizer along d); the exact Newton direction has its minimizer at 1
        Kd = np.matmul(Sg[:, :m, :m], d[:, :, None])[:, :, 0]
        slope = -np.einsum("ij,ij->i", Ff[g], d)
        curv = np.einsum("ij,ij->i", d, Kd)
        descent = finite & (slope < 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            room = np.where(d > 0, (hi_f[g] - bf[g]) / d, np.where(d < 0, (lo_f[g] - bf[g]) / d, np.inf))
            t_line = np.where(curv > 0.0, -slope / curv, np.inf)
        first = room.argmin(axis=1)
        t_max = room[np.arange(g.size), first]
        t = np.where(descent, np.minimum(t_max, t_line), 0.0)
        t[~np.isfinite(t)] = 0.0
        bf[g] += t[:, None] * d
        # the moving variables' F: −K_FF step (a held variable's entry is not read again)
        Ff[g] -= t[:, None] * Kd
        # the variable in the way lands exactly on its bound and is held there
        blocked = descent & (t_max <= t_line) & np.isfinite(t_max)
        hb, fb = g[blocked], first[blocked]
        bf[hb, fb] = np.where(d[blocked, fb] > 0, hi_f[hb, fb], lo_f[hb, fb])
        act[hb, fb] = False
        S[hb, fb, :] = 0.0
        S[hb, :, fb] = 0.0
        S[hb, fb, fb] = 1.0
        g = hb[act[hb].sum(axis=1) >= 2]
        if not g.size:
            break
    delta = bf - b0
    moved_c = np.abs(delta).max(axis=1) > 0.0
    if not moved_c.any():
        return moved
    go = cand[moved_c]
    beta[go[:, None], idx[moved_c]] = bf[moved_c]      # a problem's idx are distinct variables
    # F = y − Kβ changes by −K_{·,F} Δβ_F (the held variables' Δ included: they moved to a bound)
    Rg = R[moved_c] if R is not None else rows(pid[go], idx[moved_c])      # (A_moved, m, N) kernel rows
    F[go] -= np.matmul(delta[moved_c].astype(Rg.dtype)[:, None, :], Rg)[:, 0, :]
    moved[go] = True
    return moved


def batched_smo(rows: RowFn, diag: FloatArray, y: FloatArray, ub: FloatArray, *, p: FloatArray | None = None,
                tol: float = 1e-3, alpha: FloatArray | None = None, grad: FloatArray | None = None,
                max_iter: int | None = None, deadline: float = math.inf, tau: float = TAU,
                dtype: type[np.floating[Any]] = np.float64, newton_every: int = 0,
                block: BlockFn | None = None, groups: NDArray[np.bool_] | None = None) -> BatchRun:
    """Solve B duals min ½αᵀ(yyᵀ∘K_b)α + p_bᵀα, 0 ≤ α ≤ ub_b, y_bᵀα = y_bᵀα⁰_b together.

    Parameters
    ----------
    rows : RowFn
        Kernel rows of the problems (see :data:`RowFn`).
    diag : ndarray of shape (B, N)
        K_tt of every variable.
    y : ndarray of shape (B, N)
        Labels ±1.
    ub : ndarray of shape (B, N)
        Upper bounds ≥ 0 (0 at padding).
    p : ndarray of shape (B, N), optional
        Linear term; −1 everywhere (the C-SVC dual) when omitted.
    tol : float
        Each problem stops when its maximal-violating-pair gap is ≤ tol (LIBSVM's ``-e``).
    alpha : ndarray of shape (B, N), optional
        A feasible start (0 ≤ α ≤ ub); zeros when omitted. The equality's value is the start's.
    grad : ndarray of shape (B, N), optional
        The gradient at ``alpha`` when the caller has it exactly (a refresh after a certificate);
        computed from ``rows`` otherwise.
    max_iter : int, optional
        Steps per problem.
    deadline : float
        A ``time.perf_counter()`` value that ends every unfinished problem.
    tau : float
        Curvature floor of a pair (LIBSVM's TAU).
    dtype : numpy floating type
        Of the stacked work arrays (the scores F and the kernel rows ``rows`` returns): float32
        halves the memory each round streams; its rounding (~1e-7 relative) is far below a tol of
        1e-3, and the caller's certificate and a refresh from the exact gradient catch the rest.
    newton_every : int
        Every this many rounds (0: never), every unfinished problem steps toward the minimizer on
        its current face, active-set style (:func:`_newton`: batched dense solves on the free
        variables): SMO finds the face long before its pair steps converge on it.
    block : BlockFn, optional
        The kernel among a few variables of each problem, for the face steps (taken from
        ``rows`` when omitted).
    groups : ndarray of bool, shape (B, N), optional
        Marks each problem's second group of variables: the sum of y∘α is then fixed in each group
        (ν-SVR's two equality rows, LIBSVM's Solver_NU), a pair step stays within a group (j is
        chosen over both, each variable against its own group's i) and the pair gap is the larger
        of the two groups'.

    Returns
    -------
    BatchRun
        Each problem's point, the solver's gradient there, its steps and whether it met tol.
    """
    B, N = y.shape
    if p is None:
        p = -np.ones((B, N))
    al = np.zeros((B, N)) if alpha is None else np.array(alpha, dtype=np.float64)
    if grad is not None:
        G = np.array(grad, dtype=np.float64)
    elif al.any():
        G = _gradient_of(rows, y, al, p)
    else:
        G = p.copy()
    out_alpha, out_grad = al.copy(), G.copy()
    iterations = np.zeros(B, dtype=np.int64)
    converged = np.zeros(B, dtype=bool)
    newton = np.zeros(B, dtype=np.int64)
    # The run works on β = y∘α ∈ [lo, hi] (lo = −ub, hi = 0 where y = −1; lo = 0, hi = ub where
    # y = +1), on which a pair step is β_i += t, β_j −= t: no label appears in the loop. F is
    # LIBSVM's −y∘∇f: i maximizes it over I_up = {β < hi}, j minimizes it over I_low = {β > lo}.
    # The stacked arrays hold the unfinished problems only, compacted as problems finish.
    pid = np.arange(B, dtype=np.intp)
    ub64 = np.asarray(ub, dtype=np.float64)
    pos = np.asarray(y) > 0
    beta = np.where(pos, al, -al)
    hi = np.where(pos, ub64, 0.0)
    lo = np.where(pos, 0.0, -ub64)
    F = (-y * G).astype(dtype)
    Pu = np.where(beta < hi, 0.0, -np.inf).astype(dtype)     # 0 on I_up, −inf elsewhere
    Pl = np.where(beta > lo, 0.0, np.inf).astype(dtype)      # 0 on I_low, +inf elsewhere
    kd = np.asarray(diag, dtype=np.float64)
    flat_kd = bool(kd.size) and bool(np.all(kd == kd.flat[0]))   # RBF: K_tt = 1 everywhere
    kd0 = float(kd.flat[0]) if kd.size else 1.0
    kdh = (0.5 * kd).astype(dtype)
    # Pu and Pl of a variable after a step, indexed by (still in I_up) and (still in I_low): a
    # lookup by the comparison viewed as 0/1 costs less per round than np.where and a cast
    up_of = np.array([-np.inf, 0.0], dtype=dtype)
    low_of = np.array([np.inf, 0.0], dtype=dtype)
    half_tau = dtype(0.5 * tau)
    limit = np.iinfo(np.int64).max if max_iter is None else int(max_iter)
    perf = time.perf_counter
    it = 0
    A = B
    base = np.arange(A) * N
    sec = None if groups is None else np.asarray(groups, dtype=bool)
    i0 = i1 = np.zeros(A, dtype=np.intp)
    g0 = g1 = np.zeros(A)
    # flat views of the stacked arrays (rebuilt when problems finish): one index per problem
    Fr, Pur, Plr, br, hir, lor = F.ravel(), Pu.ravel(), Pl.ravel(), beta.ravel(), hi.ravel(), lo.ravel()
    while A:
        if newton_every and it and it % newton_every == 0:
            mv = _newton(rows, block, pid, F, beta, lo, hi, FACE_RIDGE * max(1.0, kd0), sec)
            if mv.any():
                newton[pid[mv]] += 1
                # variables the step held at a bound leave I_up or I_low
                Pu[mv] = np.where(beta[mv] < hi[mv], 0.0, -np.inf)
                Pl[mv] = np.where(beta[mv] > lo[mv], 0.0, np.inf)
        vu = F + Pu
        if sec is None:
            i = vu.argmax(axis=1)
            fi = base + i
            gmax = vu.take(fi)
            vl = F + Pl
            gap = gmax - vl.min(axis=1)
        else:
            # each group's own i and gap (the j below decides which group steps)
            vu0, vu1 = np.where(sec, -np.inf, vu), np.where(sec, vu, -np.inf)
            i0, i1 = vu0.argmax(axis=1), vu1.argmax(axis=1)
            g0, g1 = vu0.take(base + i0), vu1.take(base + i1)
            vl = F + Pl
            gap = np.maximum(g0 - np.where(sec, np.inf, vl).min(axis=1), g1 - np.where(sec, vl, np.inf).min(axis=1))
            i, gmax = i0, g0
            fi = base + i
        stop = it >= limit or (it % CLOCK_EVERY == 0 and perf() >= deadline)
        # one reduction, not a mask and all(): a NaN gap fails both tests alike
        if stop or not gap.min() > tol:
            done = ~(gap > tol)
            fin = np.ones(A, dtype=bool) if stop else done
            yf = y[pid[fin]]
            out_alpha[pid[fin]] = yf * beta[fin]
            out_grad[pid[fin]] = -yf * F[fin]        # F = −yG and y = ±1, so G = −yF
            iterations[pid[fin]] = it
            converged[pid[fin]] = done[fin]
            if stop:
                break
            keep = ~fin
            pid, F, Pu, Pl, beta, hi, lo, kd, kdh = (pid[keep], F[keep], Pu[keep], Pl[keep], beta[keep], hi[keep],
                                                     lo[keep], kd[keep], kdh[keep])
            Fr, Pur, Plr, br, hir, lor = F.ravel(), Pu.ravel(), Pl.ravel(), beta.ravel(), hi.ravel(), lo.ravel()
            i, gmax, vl = i[keep], gmax[keep], vl[keep]
            if sec is not None:
                sec, i0, i1, g0, g1 = sec[keep], i0[keep], i1[keep], g0[keep], g1[keep]
            A = pid.size
            base = np.arange(A) * N
            fi = base + i
            if not A:
                break
        # j maximizes b_t² / a_t over I_low with b_t = gmax − F_t > 0 and
        # a_t = K_ii + K_tt − 2K_it (Q_ii + Q_tt − 2y_iy_tQ_it with Q = yyᵀ∘K); a/2 keeps the argmax
        if sec is None:
            Ki = rows(pid, i)
            b = np.subtract(gmax[:, None], vl, dtype=dtype)
        else:
            K0, K1 = rows(pid, i0), rows(pid, i1)
            Ki = np.where(sec, K1, K0)             # each variable against its own group's i
            b = np.subtract(np.where(sec, g1[:, None], g0[:, None]), vl, dtype=dtype)
        np.maximum(b, 0.0, out=b)
        b *= b
        if flat_kd:
            half = np.subtract(kd0, Ki, dtype=dtype)
        else:
            half = np.subtract(kdh, Ki, dtype=dtype)
            half += kdh.take(fi)[:, None] if sec is None else np.where(sec, kdh.take(base + i1)[:, None],
                                                                       kdh.take(base + i0)[:, None])
        np.maximum(half, half_tau, out=half)
        b /= half
        j = b.argmax(axis=1)
        fj = base + j
        if sec is not None:
            js = sec.take(fj)
            i, gmax = np.where(js, i1, i0), np.where(js, g1, g0)
            fi = base + i
            Ki = np.where(js[:, None], K1, K0)
        Kj = rows(pid, j)
        # the step t ≥ 0 (β_i += t, β_j −= t) lowers the objective at the rate gmax − F_j with
        # curvature a_ij, clipped to the box; a clipped end lands exactly on its bound
        if flat_kd:
            # a = max(2(K_tt − K_ij), τ) = 2·max(K_tt − K_ij, τ/2): the clipped half already at
            # hand (doubling is exact, so the same bits)
            a = half.take(fj)
            a *= 2.0
        else:
            a = np.maximum(kd.take(fi) + kd.take(fj) - 2.0 * Ki.take(fj), tau)
        # a flat vector's entries by plain indexing (numpy's quickest gather for a 1-D array)
        hi_i, lo_j, bi, bj = hir[fi], lor[fj], br[fi], br[fj]
        room_i, room_j = hi_i - bi, bj - lo_j
        t = np.minimum(np.minimum((gmax - Fr[fj]) / a, room_i), room_j)
        ni = np.where(t >= room_i, hi_i, bi + t)
        nj = np.where(t >= room_j, lo_j, bj - t)
        br[fi] = ni
        br[fj] = nj
        Plr[fi] = 0.0                  # i moved up: it can come down
        Pur[fj] = 0.0                  # j moved down: it can go up
        Pur[fi] = up_of[(ni < hi_i).view(np.int8)]
        Plr[fj] = low_of[(nj > lo_j).view(np.int8)]
        # F = −yG changes by −y∘(Q_i y_i t − Q_j y_j t) = −(K_i − K_j) t
        Ki -= Kj
        Ki *= t.astype(dtype)[:, None]
        F -= Ki
        it += 1
    return BatchRun(alpha=out_alpha, grad=out_grad, iterations=iterations, converged=converged, rounds=it,
                    newton=newton)


@attrs.frozen(eq=False)
class Certified:
    """What :func:`certify_refresh` returns: each problem's certificate at its exact gradient.

    Attributes
    ----------
    certs : list of KKT
        Each problem's certificate (``qpcore.kkt`` at ``grads[p]``).
    grads : list of ndarray
        Each problem's exact float64 gradient over its own variables.
    met : ndarray of bool, shape (B,)
        Whether the certificate meets tol (and the point is feasible).
    refreshes : int
        Resumptions from the exact gradient.
    rounds : int
        Rounds of those resumptions.
    """

    certs: list[Any]
    grads: list[FloatArray]
    met: BoolArray
    refreshes: int
    rounds: int


def certify_refresh(qps: Sequence[Any], slots: Sequence[IndexArray], rows: RowFn, diag: FloatArray, y: FloatArray,
                    ub: FloatArray, alpha: FloatArray, its: NDArray[np.int64], converged: BoolArray, *, tol: float,
                    deadline: float, dtype: type[np.floating[Any]], max_iter: int | None,
                    refreshes: int = 3, lin: FloatArray | None = None,
                    groups: NDArray[np.bool_] | None = None) -> Certified:
    """Certify each problem of a stack alone; resume in the stack those the rounding misled.

    Problem p's point is ``alpha[p, slots[p]]`` and its float64 problem ``qps[p]``; it is certified by
    ``qpcore.kkt`` at the exact gradient. A problem whose run ``converged`` (gap ≤ tol at the
    solver's incremental gradient) but whose certificate misses tol resumes from the exact
    gradient (:func:`batched_smo` with ``grad``), up to ``refreshes`` times: over many steps the
    single-precision scores drift from the exact gradient. ``lin`` is the stack's linear term ``p``
    (−1 everywhere when omitted, as in :func:`batched_smo`), ``groups`` its groups (as there).
    ``alpha``, ``its`` and ``converged``
    are updated in place.
    """
    B, N = y.shape
    certs: list[Any] = [None] * B
    grads: list[FloatArray] = [np.zeros(0)] * B
    met = np.zeros(B, dtype=bool)
    todo = np.arange(B)
    done, rounds = 0, 0
    while True:
        for p in todo.tolist():
            x = alpha[p, slots[p]]
            grads[p] = qps[p].gradient(x)
            certs[p] = kkt(qps[p], x, grads[p])
            met[p] = meets(certs[p], tol)
        todo = np.flatnonzero(converged & ~met)
        if not todo.size or done >= refreshes or time.perf_counter() >= deadline:
            break
        done += 1
        G = np.zeros((todo.size, N))
        for a, p in enumerate(todo.tolist()):
            G[a, slots[p]] = grads[p]
        sub = todo
        more = batched_smo(lambda pid, t: rows(sub[pid], t), diag[todo], y[todo], ub[todo],
                           p=None if lin is None else lin[todo], groups=None if groups is None else groups[todo],
                           tol=tol,
                           alpha=alpha[todo], grad=G, deadline=deadline, dtype=dtype,
                           max_iter=None if max_iter is None else max(0, max_iter - int(its[todo].max())))
        alpha[todo] = more.alpha
        its[todo] += more.iterations
        converged[todo] = more.converged
        rounds += more.rounds
    return Certified(certs=certs, grads=grads, met=met, refreshes=done, rounds=rounds)


def meets(cert: KKT, tol: float) -> bool:
    """Whether a stack problem's certificate meets tol (a hair of rounding allowed) at a feasible point."""
    return bool(cert.measure <= tol * (1 + 1e-9) + 1e-12 and cert.feasible())


def stack_result(qp: Any, x: FloatArray, g: FloatArray, cert: KKT, *, steps: int, converged: bool, met: bool,
                 limit_hit: bool, stats: dict[str, Any]) -> Result:
    """The ``Result`` of one problem a stack solved: its point, exact gradient and certificate.

    A run that did not converge stopped at the step limit (``limit_hit``) or else at the clock; a
    converged run the certificate refuses is STALLED and an infeasible point INFEASIBLE, whatever
    the run said. ``stats`` gains ``stopped_by``.
    """
    stop = Status.CONVERGED if converged else (Status.MAX_ITER if limit_hit else Status.TIME_LIMIT)
    status = stop
    if not cert.feasible():
        status = Status.INFEASIBLE
    elif stop is Status.CONVERGED and not met:
        status = Status.STALLED
    stats["stopped_by"] = stop.code
    state = State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub), iteration=steps)
    return Result(x=x, multipliers=cert.multipliers, z=cert.z, status=status, objective=float(0.5 * x @ (g + qp.c)),
                  kkt=cert, iterations=steps, stats=stats, state=state)
