"""Cross-validation and grid search over C and the kernel that share their work.

The folds of a cross-validation are subsets of one data set, so the kernel of one parameter
setting serves every fold and every C: :class:`SharedKernel` computes it once over the whole
training data (the dense matrix in single precision when it fits ``kernel_bytes``, else one row
cache over all points), and each fold's binary dual reads its rows through :class:`FoldQ`, a view
of the sub-block K[tr, tr] scaled by the labels that gathers the rows asked for (no copy of the
block). Along increasing C within a fold each solve starts from the previous solution scaled
by the ratio of the C values, which stays feasible (alpha seeding). Held-out decision values come from the block
K[te, SV].

:func:`grid_cv` is the general engine (a grid of kernels × C values over given folds, any
strategy, one-vs-one or one-vs-rest for more than two classes); :func:`cross_validation` is
svm-train's ``-v`` on it (LIBSVM's stratified random folds, predicted classes per C);
:func:`stratified_folds` makes those folds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

import qpcore
from qpcore_train.multiclass import Scheme, decide, problems_of
from qpcore_formulations.svm import check_X
from qpcore.backends.capabilities import Capability, Operator, OperatorStats
from qpcore.backends.operators import Kernel, KernelQ
from qpcore.core.problem import QP, ProblemError
from qpcore.backends.rowcache import RowCache
from qpcore.core.solve import Reporter, Strategy
from qpcore.core.state import Result, Status
from qpcore_strategies.registry import make
from qpcore_train.batched_smo import stack_dtype
from qpcore_train.lockstep_path import lockstep_path

__all__ = ["FoldQ", "GridCV", "SharedKernel", "cross_validation", "grid_cv", "stratified_folds"]

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
Fold = tuple[IndexArray, IndexArray]

#: Default byte budget of a dense kernel matrix (single precision: n ≈ 16,000 points).
KERNEL_BYTES = 1 << 30


class SharedKernel:
    """The kernel matrix of one data set, computed once and read by every fold's problem.

    Dense (``n² · 4`` bytes within ``kernel_bytes``): the whole matrix in single precision, as
    the solvers' row caches store rows. Otherwise a :class:`qpcore.backends.operators.KernelQ` over all
    points whose row cache (``kernel_bytes``) the folds share: a row computed for one fold serves
    the others.

    Parameters
    ----------
    X : ndarray or csr_matrix
        All points (precomputed kernel: the n×n Gram matrix itself, kept as given).
    kernel : Kernel
        The kernel.
    kernel_bytes : int
        Budget of the dense matrix, and of the row cache when it does not fit.
    block : int
        Rows per kernel block while the dense matrix is computed.
    """

    def __init__(self, X: Any, kernel: Kernel, *, kernel_bytes: int = KERNEL_BYTES, block: int = 2048) -> None:
        n = int(X.shape[0])
        self.n = n
        self.kernel = kernel
        self.dense: NDArray[Any] | None = None
        self.cached: KernelQ | None = None
        if kernel.name == "precomputed":
            K = X.toarray() if sp.issparse(X) else np.asarray(X)
            self.dense = np.ascontiguousarray(K, dtype=np.float64)
            self.dtype: np.dtype[Any] = np.dtype(np.float64)
        elif n * n * 4 <= kernel_bytes:
            self.dtype = np.dtype(np.float32)
            K32 = np.empty((n, n), dtype=np.float32)
            for s in range(0, n, block):
                K32[s:s + block] = kernel.block(X[s:s + block], X)
            self.dense = K32
        else:
            self.dtype = np.dtype(np.float32)
            self.cached = KernelQ(X, kernel, cache_bytes=int(kernel_bytes), dtype=np.float32)
        if self.dense is not None:
            self._diag = np.asarray(np.diagonal(self.dense), dtype=np.float64).copy()
        else:
            self._diag = kernel.self_values(X)
        self.eps = float(np.finfo(self.dtype).eps)

    @property
    def nbytes(self) -> int:
        """Bytes of the dense matrix (0 with the row cache)."""
        return 0 if self.dense is None else int(self.dense.nbytes)

    def diag(self, idx: IndexArray) -> FloatArray:
        """K(x_i, x_i) for the points ``idx``."""
        out: FloatArray = self._diag[idx]
        return out

    def rows(self, idx: IndexArray, cols: IndexArray) -> NDArray[Any]:
        """K[idx][:, cols], a fresh array the caller may modify (rows go through the shared cache)."""
        if self.dense is not None:
            if idx.size == 1:
                one: NDArray[Any] = self.dense[int(idx[0])].take(cols)[None, :]
                return one
            return self.dense[np.ix_(idx, cols)]
        assert self.cached is not None
        return np.asarray(self.cached.rows(idx))[:, cols]

    def cross(self, idx: IndexArray, cols: IndexArray) -> NDArray[Any]:
        """K[idx][:, cols] without caching anything (held-out points against support vectors)."""
        if self.dense is not None:
            return self.dense[np.ix_(idx, cols)]
        assert self.cached is not None
        return np.asarray(self.cached.cross(idx, cols))


class FoldQ(Operator):
    """Q = diag(s) K[rows][:, rows] diag(s), a view of a :class:`SharedKernel`: the dual of one
    binary problem of one fold.

    Rows are gathered from the shared matrix when asked for (never the whole block) and the most
    recent ones kept in a row cache of ``cache_bytes``.

    Parameters
    ----------
    source : SharedKernel
        The kernel of all points.
    rows : ndarray of int
        The problem's points (indices into the source).
    s : ndarray
        The ±1 labels of those points.
    cache_bytes : int
        Budget of the scaled-row cache.
    own : ndarray of shape (n, n), optional
        The block K[rows][:, rows] itself, contiguous (a lockstep stack's slice): rows are then
        slices of it, not gathers from the shared matrix (about twenty times cheaper).
    """

    capabilities: ClassVar[frozenset[Capability]] = frozenset({Capability.BLOCK, Capability.CROSS})

    def __init__(self, source: SharedKernel, rows: IndexArray, s: FloatArray, *, cache_bytes: int = 64 << 20,
                 own: NDArray[Any] | None = None) -> None:
        self.source = source
        self.own = own
        self.idx = np.asarray(rows, dtype=np.intp)
        self.s = np.asarray(s, dtype=np.float64)
        self._s_row = self.s.astype(source.dtype)
        n = int(self.idx.size)
        self._n = n
        self._every = np.arange(n)
        self.stats = OperatorStats()
        self._cache = RowCache(cache_bytes, n, source.dtype, n, self.stats)
        self._diag = source.diag(self.idx)
        self._row_dtype = source.dtype
        self._psd = source.kernel.psd

    @property
    def shape(self) -> tuple[int, int]:
        """(n, n)."""
        return (self._n, self._n)

    @property
    def row_dtype(self) -> np.dtype[Any]:  # type: ignore[override]
        """The shared matrix's dtype (float32 unless the kernel was given precomputed)."""
        return self._row_dtype

    @property
    def row_eps(self) -> float:  # type: ignore[override]
        """The eps of the row dtype: entries are the shared matrix's, only sign-flipped."""
        return self.source.eps

    @property
    def psd(self) -> bool | None:
        """The kernel's: True for linear, RBF and polynomial with coef0 ≥ 0."""
        return self._psd

    def diag(self) -> FloatArray:
        """The diagonal of Q (s_i² = 1)."""
        return self._diag.copy()

    def _kernel(self, i: IndexArray, j: IndexArray) -> NDArray[Any]:
        """K[rows[i]][:, rows[j]], a fresh array."""
        if self.own is not None:
            R: NDArray[Any] = self.own[i] if j is self._every else self.own[np.ix_(i, j)]
            return R
        return self.source.rows(self.idx[i], self.idx[j])

    def _scaled(self, i: IndexArray, j: IndexArray) -> NDArray[Any]:
        R = self._kernel(i, j)
        R *= self._s_row[i][:, None]
        R *= self._s_row[j][None, :]
        return R

    def row(self, i: int) -> NDArray[Any]:
        """Q[i, :] (read-only)."""
        i = int(i)
        got = self._cache.get(i)
        if got is not None:
            return got
        self.stats.rows_computed += 1
        r: NDArray[Any] = self.own[i].copy() if self.own is not None else self.source.rows(self.idx[i:i + 1],
                                                                                             self.idx)[0]
        if self.s[i] < 0:
            np.negative(r, out=r)
        r *= self._s_row
        self._cache.put(i, r)
        r.flags.writeable = False
        return r

    def rows(self, idx: ArrayLike) -> NDArray[Any]:
        """Q[idx, :]."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        if i.size <= 2:
            return np.stack([self.row(int(k)) for k in i]) if i.size else np.empty((0, self._n), self._row_dtype)
        self.stats.rows_computed += int(i.size)
        return self._scaled(i, self._every)

    def block(self, idx: ArrayLike) -> FloatArray:
        """The principal block Q[idx][:, idx], float64."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        return np.asarray(self._scaled(i, i), dtype=np.float64)

    def cross(self, idx: ArrayLike, cols: ArrayLike | None = None) -> NDArray[Any]:
        """Q[idx][:, cols] (all columns when ``cols`` is None), nothing cached."""
        i = np.atleast_1d(np.asarray(idx, dtype=np.intp))
        j = self._every if cols is None else np.atleast_1d(np.asarray(cols, dtype=np.intp))
        return self._scaled(i, j)

    def matvec(self, x: FloatArray, block: int = 512) -> FloatArray:
        """Q x from the rows of the nonzero entries of x (Q is symmetric), in float64."""
        x = np.asarray(x, dtype=np.float64)
        out = np.zeros(self._n)
        nz = np.flatnonzero(x)
        every = self._every
        for s in range(0, nz.size, block):
            k = nz[s:s + block]
            out += np.asarray(self._scaled(k, every), dtype=np.float64).T @ x[k]
        return out


def stratified_folds(y_idx: ArrayLike, folds: int, seed: int = 0) -> list[Fold]:
    """LIBSVM's cross-validation folds: each class shuffled and dealt evenly over the folds.

    Parameters
    ----------
    y_idx : array_like of int
        Class index of each point.
    folds : int
        Number of folds, ≥ 2 (more than the points: one point per fold, leave-one-out).
    seed : int
        Seed of the shuffle.

    Returns
    -------
    list of (train, test)
        Index arrays, ascending, the test sets a partition of the points.

    Raises
    ------
    ProblemError
        Fewer than two folds.
    """
    y = np.asarray(y_idx, dtype=np.intp)
    n = int(y.size)
    if folds < 2:
        raise ProblemError(f"folds: cross-validation needs at least 2 folds, got {folds}")
    folds = min(int(folds), n)
    rng = np.random.default_rng(seed)
    fold_of = np.empty(n, dtype=np.intp)
    if folds == n:
        fold_of[rng.permutation(n)] = np.arange(n)
    else:
        for c in np.unique(y):
            members = np.flatnonzero(y == c)
            rng.shuffle(members)
            fold_of[members] = (np.arange(members.size) * folds) // members.size
    out: list[Fold] = []
    for f in range(folds):
        test = fold_of == f
        out.append((np.flatnonzero(~test).astype(np.intp), np.flatnonzero(test).astype(np.intp)))
    return out


@attrs.frozen(eq=False)
class GridCV:
    """What :func:`grid_cv` returns: held-out decision values of every (kernel, C, fold) cell.

    Attributes
    ----------
    C : ndarray
        The C values, in the order given.
    folds : list of (train, test)
        The folds.
    pairs : ndarray of shape (n_problems, 2)
        The binary problems (see :func:`qpcore_train.multiclass.problems_of`).
    scheme : {"ovo", "ovr"}
    n_classes : int
    raw : list
        ``raw[g][c][f]``: decision values (n_test, n_problems) of kernel g, C index c, fold f on the
        fold's test points, positive for each problem's first class.
    fit_seconds : ndarray of shape (n_kernels, n_C, n_folds)
        Solve time of each cell plus its share of the kernel matrix's time.
    score_seconds : ndarray of shape (n_kernels, n_C, n_folds)
        Time of each cell's held-out decision values.
    iterations : ndarray of shape (n_kernels, n_C, n_folds)
        Solver iterations of each cell, summed over its binary problems.
    converged : ndarray of bool, shape (n_kernels, n_C, n_folds)
        Whether every binary problem of the cell converged.
    objective : ndarray of shape (n_kernels, n_C, n_folds)
        Dual objective of each cell, summed over its binary problems.
    dense_kernel : bool
        Whether the kernel was held as a dense matrix (else a shared row cache).
    lockstep : bool
        Whether every kernel's problems were solved in lockstep (:mod:`qpcore_train.lockstep_path`).
    lockstep_note : str
        Why the lockstep path was or was not taken (for each kernel that differed, the reason).
    fallbacks : int
        Problems the lockstep path left uncertified and the strategy finished alone.
    handoffs : int
        Problems (one per C) the lockstep stack handed to the strategy alone after its step budget
        (``Strategy.lockstep_handoff``: ``auto`` at tol ≤ 1e-4).
    """

    C: FloatArray
    folds: list[Fold]
    pairs: NDArray[np.intp]
    scheme: Scheme
    n_classes: int
    raw: list[list[list[FloatArray]]]
    fit_seconds: FloatArray
    score_seconds: FloatArray
    iterations: NDArray[np.int64]
    converged: NDArray[np.bool_]
    objective: FloatArray
    dense_kernel: bool
    lockstep: bool = False
    lockstep_note: str = ""
    fallbacks: int = 0
    handoffs: int = 0

    def predicted(self, g: int, c: int, f: int) -> IndexArray:
        """Predicted class indices of fold f's test points for kernel g and C index c."""
        return decide(self.raw[g][c][f], self.scheme, self.pairs, self.n_classes)


#: What one fold's path gives per C: decision values, fit and score seconds, iterations,
#: convergence, objective.
_PathOut = tuple[list[FloatArray], list[float], list[float], list[int], list[bool], list[float]]


def _fold_problems(y_idx: IndexArray, weight: FloatArray, train: IndexArray,
                   pairs: NDArray[np.intp]) -> list[tuple[IndexArray, FloatArray]]:
    """The binary problems of one fold: each one's training points (weight > 0) and ±1 labels."""
    keep = train[weight[train] > 0]
    out: list[tuple[IndexArray, FloatArray]] = []
    for i, j in pairs:
        member = (y_idx[keep] == i) | (y_idx[keep] == j) if j >= 0 else np.ones(keep.size, dtype=bool)
        rows = keep[member]
        s = np.where(y_idx[rows] == i, 1.0, -1.0)
        if np.unique(s).size < 2:
            raise ProblemError(f"fold: class {i if (s > 0).all() else j} has no training points with C > 0 in a "
                               "fold; use fewer folds")
        out.append((rows, s))
    return out


def _held_out(source: SharedKernel, test: IndexArray, coefs: list[tuple[IndexArray, FloatArray]],
              bias: FloatArray) -> FloatArray:
    """Decision values (n_test, n_problems) of a fold's test points: K[te, SV] times the coefficients."""
    used = np.unique(np.concatenate([g for g, _ in coefs])) if coefs else np.zeros(0, dtype=np.intp)
    D = np.zeros((used.size, len(coefs)))
    for p, (g, coef) in enumerate(coefs):
        D[np.searchsorted(used, g), p] = coef
    if not used.size:
        return np.tile(bias, (test.size, 1))
    out: FloatArray = np.asarray(source.cross(test, used), dtype=np.float64) @ D + bias
    return out


def _fold_path(source: SharedKernel, y_idx: IndexArray, weight: FloatArray, train: IndexArray, test: IndexArray,
               C_sorted: FloatArray, pairs: NDArray[np.intp], strategy: Strategy, *, tol: float,
               max_iter: int | None, time_limit: float | None, reporter: Reporter | None,
               cache_bytes: int) -> _PathOut:
    """One fold over increasing C: every binary problem warm-started from its solution at the
    previous C; the held-out decision values, times, iterations, convergence and objective per C."""
    ops: list[tuple[IndexArray, FloatArray, QP]] = []
    per_problem = cache_bytes // max(1, len(pairs))     # every problem of the fold lives along the path
    for rows, s in _fold_problems(y_idx, weight, train, pairs):
        Q = FoldQ(source, rows, s, cache_bytes=per_problem)
        n = rows.size
        ops.append((rows, s, QP(Q, -np.ones(n), np.zeros(n), np.ones(n), s[None, :], np.zeros(1))))
    raws: list[FloatArray] = []
    fits: list[float] = []
    scores: list[float] = []
    iters: list[int] = []
    oks: list[bool] = []
    objs: list[float] = []
    prev: list[FloatArray | None] = [None] * len(pairs)
    C_prev = 0.0
    for C in C_sorted:
        t0 = time.perf_counter()
        coefs: list[tuple[IndexArray, FloatArray]] = []
        bias = np.empty(len(pairs))
        n_iter = 0
        ok = True
        obj = 0.0
        for p, (rows, s, qp0) in enumerate(ops):
            # the same operator and constraints, a box grown by C / C_prev: the previous α scaled
            # by that ratio stays feasible (yᵀα = 0, bounds met), keeps the bounded support
            # vectors at the bound, and starts closer than α itself (DeCoste and Wagstaff's seed)
            qp = QP(qp0.Q, qp0.c, qp0.lb, float(C) * weight[rows], qp0.A, qp0.b)
            a0 = prev[p]
            x0 = None if a0 is None else np.minimum(a0 * (float(C) / C_prev), qp.ub)
            res: Result = qpcore.solve(qp, strategy, x0=x0, tol=tol, max_iter=max_iter, time_limit=time_limit,
                                       reporter=reporter)
            alpha = np.asarray(res.x, dtype=np.float64)
            prev[p] = alpha
            sv = np.flatnonzero(alpha > 0)
            coefs.append((rows[sv], alpha[sv] * s[sv]))
            bias[p] = -float(res.multipliers[0])
            n_iter += int(res.iterations)
            obj += float(res.objective)
            ok = ok and res.status == Status.CONVERGED
        C_prev = float(C)
        t1 = time.perf_counter()
        raws.append(_held_out(source, test, coefs, bias))
        fits.append(t1 - t0)
        scores.append(time.perf_counter() - t1)
        iters.append(n_iter)
        oks.append(ok)
        objs.append(obj)
    return raws, fits, scores, iters, oks, objs


def _lockstep_why_not(batched: bool | None, strategy: Strategy, source: SharedKernel,
                      reporter: Reporter | None) -> str | None:
    """None when the lockstep path takes this kernel's problems, else the reason it does not."""
    if batched is False:
        return "batched=False"
    if reporter is not None:
        return "a reporter follows each solve"
    if source.dense is None:
        return "the kernel matrix exceeds kernel_bytes (its rows come from a shared cache)"
    if source.kernel.psd is not True:
        return f"the {source.kernel.name} kernel is not declared positive semidefinite"
    if batched is None and strategy.lockstep() != "smo-wss2":
        return f"the strategy {type(strategy).__name__} does not declare LIBSVM's SMO as its lockstep method"
    return None


def _lockstep_paths(source: SharedKernel, y_idx: IndexArray, weight: FloatArray, folds: Sequence[Fold],
                    cells: Sequence[int], C_sorted: FloatArray, pairs: NDArray[np.intp], strategy: Strategy, *,
                    tol: float, max_iter: int | None, time_limit: float | None,
                    stack_bytes: int, cache_bytes: int) -> tuple[dict[int, _PathOut], tuple[int, int], str]:
    """The folds ``cells`` of one kernel, every binary problem of each, along C in one lockstep
    stack; per fold the same values as :func:`_fold_path`, and the count of problems finished alone.
    A C's time is shared equally among the folds."""
    assert source.dense is not None
    probs: list[tuple[int, IndexArray, FloatArray]] = []
    for f in cells:
        probs.extend((f, rows, s) for rows, s in _fold_problems(y_idx, weight[f], folds[f][0], pairs))
    def make_qp(p: int, ub: FloatArray, own: NDArray[Any] | None) -> QP:
        _, rows, s = probs[p]
        n = rows.size
        # the stack's block serves the rows (a slice each); without it a small row cache
        Q = FoldQ(source, rows, s, cache_bytes=0 if own is not None else cache_bytes, own=own)
        return QP(Q, -np.ones(n), np.zeros(n), ub, s[None, :], np.zeros(1))

    # single precision only over a single-precision shared matrix (a precomputed one is float64)
    dtype = stack_dtype(source.kernel.name, tol) if source.dtype == np.float32 else np.float64
    steps = lockstep_path(source.dense, source.diag(np.arange(source.n)), [r for _, r, _ in probs],
                          [s for _, _, s in probs], [weight[f][r] for f, r, _ in probs], C_sorted, make_qp, strategy,
                          tol=tol, max_iter=max_iter, time_limit=time_limit, stack_bytes=stack_bytes, dtype=dtype,
                          handoff=strategy.lockstep_handoff(tol))
    out: dict[int, _PathOut] = {f: ([], [], [], [], [], []) for f in cells}
    npairs = len(pairs)
    for st in steps:
        share = st.seconds / len(cells)
        for q, f in enumerate(cells):
            t1 = time.perf_counter()
            mine = range(q * npairs, (q + 1) * npairs)
            coefs = []
            for p in mine:
                a = st.alphas[p]
                sv = np.flatnonzero(a > 0)
                coefs.append((probs[p][1][sv], a[sv] * probs[p][2][sv]))
            raw, fits, scores, iters, oks, objs = out[f]
            raw.append(_held_out(source, folds[f][1], coefs, st.bias[list(mine)]))
            fits.append(share)
            scores.append(time.perf_counter() - t1)
            iters.append(int(st.iterations[list(mine)].sum()))
            oks.append(bool(st.certified[list(mine)].all()))
            objs.append(float(st.objective[list(mine)].sum()))
    how = "a stack of the problems' own kernel blocks" if steps[0].stacked else \
        "rows gathered from the shared matrix (the stack exceeds stack_bytes)"
    return out, (sum(st.fallbacks for st in steps), sum(st.handoffs for st in steps)), how


def grid_cv(X: Any, y_idx: ArrayLike, n_classes: int, folds: Sequence[Fold],
            kernels: Sequence[Kernel | Sequence[Kernel]], C: float | Sequence[float], *,
            strategy: str | Strategy = "smo", tol: float = 1e-3, weight: ArrayLike | None = None,
            scheme: Scheme = "ovo", max_iter: int | None = None, time_limit: float | None = None,
            reporter: Reporter | None = None, kernel_bytes: int = KERNEL_BYTES,
            cache_bytes: int = 64 << 20, batched: bool | None = None, stack_bytes: int | None = None) -> GridCV:
    """Cross-validate a grid of kernels × C values, each kernel's matrix computed once.

    For each distinct kernel the matrix over all points is computed once (:class:`SharedKernel`)
    and serves every fold and every C that uses it; within a fold the C values are solved in
    increasing order, each binary problem warm-started from its solution at the previous C
    scaled by the ratio of the two C values (feasible: the box grows by that ratio).

    When the strategy declares LIBSVM's SMO as its lockstep method (``Strategy.lockstep()``, as
    ``"auto"`` and ``"smo"`` do) and the kernel matrix is dense, every fold's binary problems of one
    kernel are solved together, one C after the other, in one lockstep stack
    (:func:`qpcore_train.lockstep_path.lockstep_path`): a round of pair steps of all of them costs
    a fixed number of numpy calls. Each problem is certified alone; one the stack leaves
    uncertified is finished alone by the strategy (``GridCV.fallbacks``). At a tol where the strategy
    declares another method (``Strategy.lockstep_handoff``: ``auto`` at tol ≤ 1e-4, where alone it
    ends SMO with the block finish, or starts INCAS at tol ≤ 1e-5),
    a problem gets one pair step per variable in the stack and is then handed to the strategy
    alone (``GridCV.handoffs``).

    Parameters
    ----------
    X : ndarray or csr_matrix
        All points (precomputed kernel: the n×n Gram matrix).
    y_idx : array_like of int
        Class index of each point, 0 … n_classes − 1.
    n_classes : int
        Number of classes (≥ 2).
    folds : sequence of (train, test)
        Index arrays of each fold.
    kernels : sequence of Kernel or of sequences of Kernel
        The grid's kernels; an entry may instead give one kernel per fold (a γ computed from
        each fold's training data, scikit-learn's ``gamma="scale"``).
    C : float or sequence of float
        The C values (any order; each > 0).
    strategy : str or Strategy
        Solver of every binary dual: a registry spec (``"smo"``, ``"auto"``, ...) or an object.
    tol, max_iter, time_limit, reporter :
        Handed to ``qpcore.solve`` for each binary problem.
    weight : array_like, optional
        Per-point factor on C (class weights times sample weights), shape (n,) or one row per
        fold (n_folds, n) (class weights balanced on each fold's training part); points of
        weight 0 are left out of training. Ones when omitted.
    scheme : {"ovo", "ovr"}
        Binary problems for more than two classes.
    kernel_bytes : int
        Budget of a dense kernel matrix (single precision); above it the folds share one row
        cache of this size.
    cache_bytes : int
        Row cache of one fold's binary problems' views, together.
    batched : bool, optional
        None (default): the lockstep path when the strategy declares it and the kernel is dense;
        True: whenever the kernel is dense and positive semidefinite (any strategy finishes the
        stragglers); False: each problem alone with the strategy.
    stack_bytes : int, optional
        Budget of the lockstep stack of the problems' own kernel blocks (default ``kernel_bytes``);
        above it the stack gathers rows from the shared matrix (slower per round, no more memory).

    Returns
    -------
    GridCV

    Raises
    ------
    ProblemError
        Bad data, a C ≤ 0, a per-fold kernel list of the wrong length, or a fold whose training
        part lacks a class.
    """
    X = check_X(X)
    y = np.asarray(y_idx, dtype=np.intp)
    n = int(X.shape[0])
    if y.shape != (n,):
        raise ProblemError(f"y: expected ({n},) class indices, got shape {y.shape}")
    Cs = np.atleast_1d(np.asarray(C, dtype=np.float64))
    if Cs.size == 0 or not np.isfinite(Cs).all() or (Cs <= 0).any():
        raise ProblemError(f"C: every value must be finite and > 0, got {C!r}")
    strat = make(strategy)
    fold_list = [(np.asarray(tr, dtype=np.intp), np.asarray(te, dtype=np.intp)) for tr, te in folds]
    nf = len(fold_list)
    w = np.ones((nf, n)) if weight is None else np.asarray(weight, dtype=np.float64)
    w = np.broadcast_to(w, (nf, n)) if w.shape == (n,) else w
    if w.shape != (nf, n) or not np.isfinite(w).all() or (w < 0).any():
        raise ProblemError(f"weight: expected ({n},) or ({nf}, {n}) finite factors ≥ 0")
    per_fold: list[list[Kernel]] = []
    for entry in kernels:
        ks = [entry] * nf if isinstance(entry, Kernel) else list(entry)
        if len(ks) != nf:
            raise ProblemError(f"kernels: a per-fold entry needs {nf} kernels, got {len(ks)}")
        per_fold.append(ks)
    pairs = problems_of(int(n_classes), scheme)
    order = np.argsort(Cs, kind="stable")
    ng, nc = len(per_fold), Cs.size
    empty = np.zeros((0, pairs.shape[0]))
    raw: list[list[list[FloatArray]]] = [[[empty] * nf for _ in range(nc)] for _ in range(ng)]
    fit = np.zeros((ng, nc, nf))
    score = np.zeros((ng, nc, nf))
    iters = np.zeros((ng, nc, nf), dtype=np.int64)
    conv = np.ones((ng, nc, nf), dtype=bool)
    objective = np.zeros((ng, nc, nf))
    dense = True
    lock_all, fallbacks, handoffs = True, 0, 0
    notes: list[str] = []
    # the distinct kernels in first-use order, each with the (grid point, fold) cells it serves
    uses: dict[Kernel, list[tuple[int, int]]] = {}
    for g, ks in enumerate(per_fold):
        for f, k in enumerate(ks):
            uses.setdefault(k, []).append((g, f))
    for kernel, cells in uses.items():
        t0 = time.perf_counter()
        source = SharedKernel(X, kernel, kernel_bytes=kernel_bytes)
        dense = dense and source.dense is not None
        share = (time.perf_counter() - t0) / (len(cells) * nc)
        why = _lockstep_why_not(batched, strat, source, reporter)
        if why is None:
            folds_of = sorted({f for _, f in cells})
            paths, fb, how = _lockstep_paths(source, y, w, fold_list, folds_of, Cs[order], pairs, strat, tol=tol,
                                        max_iter=max_iter, time_limit=time_limit, cache_bytes=cache_bytes,
                                        stack_bytes=kernel_bytes if stack_bytes is None else int(stack_bytes))
            fallbacks += fb[0]
            handoffs += fb[1]
            why_note: str = f"every fold's problems in lockstep per C, over {how}"
        else:
            lock_all = False
            paths = {}
            why_note = f"each problem alone: {why}"
        if why_note not in notes:
            notes.append(why_note)
        for g, f in cells:
            if why is None:
                r, fs, ss, its, oks, objs = paths[f]
            else:
                tr, te = fold_list[f]
                r, fs, ss, its, oks, objs = _fold_path(source, y, w[f], tr, te, Cs[order], pairs, strat, tol=tol,
                                                  max_iter=max_iter, time_limit=time_limit, reporter=reporter,
                                                  cache_bytes=cache_bytes)
            for q, c in enumerate(order):
                raw[g][c][f] = r[q]
                fit[g, c, f] = fs[q] + share
                score[g, c, f] = ss[q]
                iters[g, c, f] = its[q]
                conv[g, c, f] = oks[q]
                objective[g, c, f] = objs[q]
        del source
    return GridCV(C=Cs, folds=fold_list, pairs=pairs, scheme="ovr" if pairs[0][1] < 0 else "ovo",
                  n_classes=int(n_classes), raw=raw, fit_seconds=fit, score_seconds=score, iterations=iters,
                  converged=conv, objective=objective, dense_kernel=dense, lockstep=lock_all,
                  lockstep_note="; ".join(notes) + (f"; {fallbacks} problem(s) the certificate refused in the stack "
                                                    "were finished alone by the strategy" if fallbacks else "")
                  + (f"; {handoffs} problem(s) the stack's step budget did not finish were handed to the strategy "
                     f"alone (it declares another method at tol {tol:g})" if handoffs else ""),
                  fallbacks=fallbacks, handoffs=handoffs)


def _class_factor(class_weight: Mapping[Any, float] | ArrayLike | None, classes: NDArray[Any]) -> FloatArray:
    """Per-class factor on C from a mapping label → weight or an array over the classes."""
    k = int(classes.size)
    if class_weight is None:
        return np.ones(k)
    if isinstance(class_weight, Mapping):
        out = np.ones(k)
        for label, value in class_weight.items():
            hit = np.flatnonzero(classes == label)
            if hit.size == 0:
                raise ProblemError(f"class_weight: label {label!r} is not among the classes {classes.tolist()}")
            out[hit[0]] = float(value)
        return out
    arr = np.asarray(class_weight, dtype=np.float64)
    if arr.shape != (k,):
        raise ProblemError(f"class_weight: expected a mapping or ({k},) weights, got shape {arr.shape}")
    return arr


def cross_validation(X: Any, y_idx: ArrayLike, classes: ArrayLike, *, kernel: Kernel,
                     C: float | Sequence[float], folds: int = 5, seed: int = 0, strategy: str | Strategy = "auto",
                     tol: float = 1e-3, cache_bytes: int = KERNEL_BYTES,
                     class_weight: Mapping[Any, float] | ArrayLike | None = None, scheme: Scheme = "ovo",
                     max_iter: int | None = None, reporter: Reporter | None = None) -> list[IndexArray]:
    """svm-train's ``-v``: k-fold cross-validation of a C-SVC, the predicted class of every point.

    The folds are LIBSVM's (:func:`stratified_folds`); the kernel matrix is computed once for all
    folds and C values (:func:`grid_cv`).

    Parameters
    ----------
    X : ndarray or csr_matrix
        Training points (precomputed kernel: the n×n Gram matrix).
    y_idx : array_like of int
        Class index of each point.
    classes : array_like
        The label values, ``classes[k]`` for index k.
    kernel : Kernel
        The kernel.
    C : float or sequence of float
        One C or several (one prediction vector each, in the order given).
    folds : int
        Number of folds.
    seed : int
        Seed of the fold assignment.
    strategy : str or Strategy
        Solver of the binary duals; ``"auto"`` falls back to ``"smo"`` where the registry lacks it.
    tol : float
        Stopping tolerance.
    cache_bytes : int
        Memory for the kernel: the dense matrix when it fits, else a shared row cache.
    class_weight : mapping or array_like, optional
        Factor on C per class (label → weight, or one per class).
    scheme : {"ovo", "ovr"}
        Binary problems for more than two classes.
    max_iter : int, optional
        Iteration limit of each binary problem.
    reporter : Reporter, optional
        Progress of each solve.

    Returns
    -------
    list of ndarray
        For each C, the predicted class index of every point (from the fold where it was held out).

    Raises
    ------
    ProblemError
        Bad data, C ≤ 0, fewer than two classes, or a fold that lacks a class.
    """
    y = np.asarray(y_idx, dtype=np.intp)
    cls = np.asarray(classes)
    if cls.size < 2 or np.unique(y).size < 2:
        raise ProblemError("y: cross-validation needs at least two classes")
    factor = _class_factor(class_weight, cls)
    fold_list = stratified_folds(y, folds, seed)
    if isinstance(strategy, str) and strategy == "auto":
        try:
            strat: str | Strategy = make("auto")
        except ProblemError:    # the registry before the automatic strategy exists
            strat = "smo"
    else:
        strat = strategy
    cv = grid_cv(X, y, int(cls.size), fold_list, [kernel], C, strategy=strat, tol=tol, weight=factor[y],
                 scheme=scheme, max_iter=max_iter, reporter=reporter, kernel_bytes=cache_bytes)
    out: list[IndexArray] = []
    for c in range(cv.C.size):
        pred = np.empty(y.size, dtype=np.intp)
        for f, (_, te) in enumerate(fold_list):
            pred[te] = cv.predicted(0, c, f)
        out.append(pred)
    return out
