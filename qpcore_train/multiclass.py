"""Kernel SVMs over more than two classes: one-vs-one (LIBSVM's scheme) or one-vs-rest.

:func:`train_multiclass` builds one binary problem of a label formulation (C-SVC by default,
:mod:`qpcore_formulations.formulation`) per pair of classes (or per class against the rest) and
solves each with any strategy (:func:`qpcore_train.pipeline.fit_problem`), and collects the binary
models into one :class:`MulticlassSVM`: the union of their support vectors, grouped by class as
LIBSVM orders them, and a coefficient matrix D (support vectors × problems) with which every
decision value of a block of points is one kernel block and one matrix product. Two classes are
the one-problem case. The scikit-learn estimator and the command line both build on this module.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

import qpcore
from qpcore_formulations.asvm import asvm_dual
from qpcore_formulations.builtin import C_SVC, NU_SVC
from qpcore_formulations.formulation import Formulation, Predicts, formulation as formulation_of
from qpcore_train.pipeline import MaxIter, fit_problem, iteration_limit
from qpcore_train.probability import proba_from_raw
from qpcore_formulations.risk import hinge_svm
from qpcore_formulations.svm import SubsetKernelQ
from qpcore.backends.operators import Kernel
from qpcore.core.problem import QP, ProblemError
from qpcore.core.solve import Reporter, Strategy
from qpcore.core.state import Result
from qpcore.linalg.threads import THREAD_VARIABLES, blas_threads
from qpcore_train.batched_smo import FACE_EVERY, batched_smo, certify_refresh, stack_dtype, stack_gram, stack_result

__all__ = ["BATCH_ROWS", "BATCH_ROWS_BINARY", "MulticlassSVM", "Trained", "decide", "linear_binary", "problems_of",
           "train_multiclass", "votes"]

FloatArray = NDArray[np.float64]
Scheme = Literal["ovo", "ovr"]
Model = tuple[NDArray[np.intp], FloatArray, float]

#: Largest padded row count (classes × largest class) solved by the batched path: its kernel
#: matrix is computed once, whole (also bounded by ``cache_bytes``).
BATCH_ROWS = 4096
BATCH_ROWS_BINARY = 1024   # the same for two classes (one problem)
REFRESHES = 3       # certificate rounds before a problem is left stalled
#: A batch of at most this many padded rows runs at one BLAS thread, without measuring the
#: machine's load (a decision that reads /proc costs a fraction of such a fit, and a second
#: thread on products this small mostly waits for its core); a larger batch gets a solve's
#: automatic decision (:func:`qpcore.linalg.threads.blas_threads`).
ONE_THREAD_ROWS = 1024


def problems_of(n_classes: int, scheme: Scheme) -> NDArray[np.intp]:
    """The binary problems as rows (i, j): class i (+1) against class j (−1), j = −1 for the rest.

    One-vs-one lists the pairs i < j in LIBSVM's order (0-1, 0-2, …, 1-2, …); two classes are
    always the one pair (0, 1).
    """
    if n_classes == 2 or scheme == "ovo":
        out = [(i, j) for i in range(n_classes) for j in range(i + 1, n_classes)]
    else:
        out = [(i, -1) for i in range(n_classes)]
    return np.array(out, dtype=np.intp).reshape(-1, 2)


def votes(raw: FloatArray, pairs: NDArray[np.intp], n_classes: int) -> NDArray[np.int64]:
    """One-vs-one votes: a positive value votes for the pair's first class, else for the second
    (LIBSVM's rule, so a value of exactly 0 goes to the second)."""
    out = np.zeros((raw.shape[0], n_classes), dtype=np.int64)
    for p, (i, j) in enumerate(pairs):
        win = raw[:, p] > 0
        out[:, i] += win
        out[:, j] += ~win
    return out


def decide(raw: FloatArray, scheme: Scheme, pairs: NDArray[np.intp], n_classes: int) -> NDArray[np.intp]:
    """Class indices from the decision values of the binary problems: the sign for two classes,
    LIBSVM's vote (ties to the lower class index) for one-vs-one, the largest value for
    one-vs-rest. Kernel and linear models alike.

    Parameters
    ----------
    raw : ndarray of shape (n, n_problems)
        Decision values, positive for each problem's first class.
    scheme : {"ovo", "ovr"}
    pairs : ndarray of shape (n_problems, 2)
    n_classes : int

    Returns
    -------
    ndarray of int
    """
    if n_classes == 2:
        return np.where(raw[:, 0] > 0, 0, 1).astype(np.intp)
    best = raw if scheme == "ovr" else votes(raw, pairs, n_classes)
    out: NDArray[np.intp] = np.argmax(best, axis=1).astype(np.intp)
    return out


@attrs.frozen(eq=False)
class MulticlassSVM:
    """A trained kernel SVM over two or more classes.

    Attributes
    ----------
    classes : ndarray
        The original label values, sorted; class k is ``classes[k]``.
    kernel : Kernel
        The kernel (``precomputed``: decision values take K(points, training points)).
    scheme : {"ovo", "ovr"}
        One-vs-one or one-vs-rest.
    pairs : ndarray of shape (n_problems, 2)
        Class indices (i, j) of each binary problem, j = −1 for "the rest" (see
        :func:`problems_of`).
    support : ndarray of int
        Training indices of the support vectors, grouped by class, ascending within a class.
    support_class : ndarray of int
        The class index of each support vector.
    sv : ndarray or csr_matrix or None
        The support vectors themselves (None for a precomputed kernel).
    D : ndarray of shape (n_SV, n_problems)
        α_i y_i of each support vector in each problem (0 where it takes no part).
    bias : ndarray of shape (n_problems,)
        b of each problem: its decision value is Σ_i D_ip K(sv_i, x) + b_p, positive for class i.
    prob_a, prob_b : ndarray of shape (n_problems,) or None
        Platt's sigmoid of each one-vs-one problem, P(class i) = 1/(1 + exp(A·f + B))
        (:func:`qpcore_train.probability.calibrate`); None: no probabilities.
    """

    classes: NDArray[Any]
    kernel: Kernel
    scheme: Scheme
    pairs: NDArray[np.intp]
    support: NDArray[np.intp]
    support_class: NDArray[np.intp]
    sv: Any
    D: FloatArray
    bias: FloatArray
    prob_a: FloatArray | None = None
    prob_b: FloatArray | None = None

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return int(self.classes.size)

    @property
    def n_features(self) -> int:
        """Features of a point (training points for a precomputed kernel)."""
        if self.sv is None:
            return -1
        return int(self.sv.shape[1])

    def raw(self, X: Any, block: int = 2048) -> FloatArray:
        """Decision values of every binary problem, shape (n, n_problems), positive for the
        problem's first class.

        Parameters
        ----------
        X : ndarray or csr_matrix
            Points, one per row (precomputed kernel: K(points, training points)).
        block : int
            Points per kernel block.

        Returns
        -------
        ndarray
        """
        if self.kernel.name == "precomputed":
            K = np.asarray(X[:, self.support].toarray() if sp.issparse(X) else X[:, self.support], dtype=np.float64)
            out: FloatArray = K @ self.D + self.bias
            return out
        out = np.empty((X.shape[0], self.D.shape[1]))
        for s in range(0, X.shape[0], block):
            out[s:s + block] = self.kernel.block(X[s:s + block], self.sv) @ self.D + self.bias
        return out

    def predict_index(self, raw: FloatArray) -> NDArray[np.intp]:
        """Class indices from decision values (see :func:`decide`)."""
        return decide(raw, self.scheme, self.pairs, self.n_classes)

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted labels (values of ``classes``) for the rows of X."""
        out: NDArray[Any] = self.classes[self.predict_index(self.raw(X))]
        return out

    def predict_proba(self, X: Any) -> FloatArray:
        """Class probabilities (n, n_classes), LIBSVM's: each pair's sigmoid, coupled for more
        than two classes (:func:`qpcore_train.probability.proba_from_raw`).

        Parameters
        ----------
        X : ndarray or csr_matrix
            Points, as for :meth:`raw`.

        Returns
        -------
        ndarray of shape (n, n_classes)
            Rows sum to 1; column k is ``classes[k]``.

        Raises
        ------
        ProblemError
            When the model has no sigmoids (``prob_a``/``prob_b`` unset) or is one-vs-rest.
        """
        if self.prob_a is None or self.prob_b is None:
            raise ProblemError("this model has no probabilities: train it with probability calibration "
                               "(qpcore_train.probability.calibrate; qpcore train -b 1, probability=True)")
        return proba_from_raw(self.raw(X), self.prob_a, self.prob_b, self.pairs, self.n_classes)


@attrs.frozen(eq=False)
class Trained:
    """What :func:`train_multiclass` returns.

    Attributes
    ----------
    model : MulticlassSVM
    results : list of Result
        The run of each binary problem, in the order of ``model.pairs``.
    alphas : list of ndarray
        The dual solution of each problem (over its own rows), for warm starts.
    rows : list of ndarray
        The training rows of each problem.
    """

    model: MulticlassSVM
    results: list[Result]
    alphas: list[FloatArray]
    rows: list[NDArray[np.intp]]


def train_multiclass(X: Any, y_idx: NDArray[np.intp], classes: NDArray[Any], C: FloatArray, kernel: Kernel,
                     strategy: Strategy, *, scheme: Scheme = "ovo", tol: float = 1e-3, max_iter: MaxIter = None,
                     time_limit: float | None = None, reporter: Reporter | None = None,
                     cache_bytes: int = 200 << 20, x0: list[FloatArray] | None = None,
                     nu: float | None = None, deadline: float | None = None,
                     batched: bool | None = None, formulation: Formulation | str | None = None,
                     params: Mapping[str, Any] | None = None) -> Trained:
    """Train one binary problem of a label formulation per pair of classes and collect them.

    Parameters
    ----------
    X : ndarray or csr_matrix
        Training points (precomputed kernel: the n×n Gram matrix).
    y_idx : ndarray of int
        Class index of each point (0 … n_classes − 1).
    classes : ndarray
        The label values, ``classes[k]`` for index k.
    C : ndarray
        Per-sample weight (class and sample weights), the builder's ``weight``: a C-SVC's box
        is the formulation's C times it, so with the default parameters (C = 1) it is the box
        itself; points with weight 0 are left out.
    kernel : Kernel
    strategy : Strategy
        Solves every binary dual.
    scheme : {"ovo", "ovr"}
        For more than two classes.
    tol, max_iter, time_limit, reporter :
        Handed to ``qpcore.solve`` for each problem (the limits apply per problem); ``max_iter``
        may be a function of a problem's number of variables
        (:data:`qpcore_train.pipeline.MaxIter`; the batched path asks it for the number of rows).
    cache_bytes : int
        Kernel row cache of each problem.
    x0 : list of ndarray, optional
        Warm starts, one per problem (ignored for a problem whose size differs).
    nu : float, optional
        Train ν-SVCs (:func:`qpcore_formulations.svm_family.nu_svc`, LIBSVM's ``-s 1``) with this ν for every
        pair instead of C-SVCs: the same as ``formulation="nu-svc", params={"nu": nu}``.
    deadline : float, optional
        A ``time.perf_counter()`` instant: each problem's time limit is at most the time left
        until it (a problem started after it gets a token limit and returns its start), so a
        caller can bound the whole sequence of problems, not each one.
    batched : bool, optional
        Solve the one-vs-one C-SVCs together (:func:`qpcore_train.batched_smo.batched_smo`) over one
        kernel matrix of all training rows instead of one by one: LIBSVM's second-order SMO on
        every problem at once, each problem then certified by ``qpcore.kkt`` (and resumed from
        its exact gradient until it meets tol). None (default): when the strategy declares
        LIBSVM's SMO as its lockstep method (``Strategy.lockstep() == "smo-wss2"``: SMO with
        LIBSVM's rule, or auto; the same iterates) and the data is small (classes × largest class ≤
        :data:`BATCH_ROWS`, its kernel matrix within ``cache_bytes``); True: whenever the problem
        allows it (a PSD kernel on points, a formulation whose binary problem is C-SVC's dual,
        one-vs-one, no reporter); False: never. The time limit then bounds the whole batch.
    formulation : Formulation or str, optional
        A label formulation (:mod:`qpcore_formulations.formulation`); default C-SVC (ν-SVC when
        ``nu`` is given).
    params : mapping, optional
        Its parameters (the defaults for those not given; ``nu`` joins them).

    Returns
    -------
    Trained

    Raises
    ------
    ProblemError
        Fewer than two classes with weight > 0, an empty problem, parameters or a pair the
        formulation refuses, or anything its builder refuses;
        :class:`qpcore_train.pipeline.Refused` when the strategy cannot take a problem.
    """
    form = formulation_of(formulation if formulation is not None else (NU_SVC if nu is not None else C_SVC))
    if form.predicts is not Predicts.LABEL:
        raise ProblemError(f"formulation: {form.name} predicts a {form.predicts.value}, not a label: "
                           "qpcore_train.fit.fit_formulation trains it over all rows")
    n_classes = int(classes.size)
    keep = C > 0
    # rows kept per class: the class count here, the batched path's padding below
    kept = np.bincount(y_idx[keep], minlength=n_classes)
    if n_classes < 2 or np.count_nonzero(kept) < 2:
        raise ProblemError(f"y: training needs samples of at least two classes with C > 0, got "
                           f"{np.count_nonzero(kept)} class")
    values = form.params({**(params or {}), **({} if nu is None else {"nu": nu})})
    pairs = problems_of(n_classes, scheme)
    if form.check_pair is not None:
        # every pair before any work, as svm_check_parameter does
        totals = np.bincount(y_idx[keep], weights=C[keep], minlength=n_classes)
        for i, j in pairs:
            ni = float(totals[i])
            nj = float(totals[j]) if j >= 0 else float(totals.sum() - totals[i])
            form.check_pair(values, (ni, nj), (str(classes[i]), str(classes[j]) if j >= 0 else "the rest"))
    models: list[Model] = []
    results: list[Result] = []
    alphas: list[FloatArray] = []
    rows_of: list[NDArray[np.intp]] = []
    if _batchable(batched, strategy, kernel, form, reporter, pairs, kept, cache_bytes):
        limit = time_limit
        if deadline is not None:
            left = max(deadline - time.perf_counter(), 1e-6)
            limit = left if limit is None else min(limit, left)
        width = n_classes * int(kept.max())
        # a thread variable the user set stands (the automatic decision leaves the pools as set)
        one = width <= ONE_THREAD_ROWS and not any(os.environ.get(v, "").strip() for v in THREAD_VARIABLES)
        with blas_threads(1 if one else None) as decision:
            # a standard dual's box is C times the weight
            models, results, alphas, rows_of = _train_batched(X, y_idx, classes, values["C"] * C, kernel, pairs,
                                                              tol=tol,
                                                              max_iter=iteration_limit(max_iter, int(keep.sum())),
                                                              time_limit=limit, x0=x0)
        threads = decision.stats()
        if one and decision.threads == 1:
            threads["blas_threads_reason"] = (f"small batch ({width} padded rows ≤ {ONE_THREAD_ROWS}): one thread, "
                                              "the load not measured")
        for res in results:
            res.stats.update(threads)
    for p, (i, j) in enumerate(pairs if not results else []):
        member = (y_idx == i) | (y_idx == j) if j >= 0 else np.ones(y_idx.size, dtype=bool)
        rows = np.flatnonzero(keep & member)
        labels = np.where(y_idx[rows] == i, 1.0, -1.0)
        if np.unique(labels).size < 2:
            raise ProblemError(f"y: class {classes[i] if (labels > 0).all() else classes[j]} has no samples "
                               "with C > 0 in its problem")
        Xp = X[rows][:, rows] if kernel.name == "precomputed" else X[rows]
        start = x0[p] if x0 is not None and p < len(x0) else None
        limit = time_limit
        if deadline is not None:
            left = max(deadline - time.perf_counter(), 1e-6)
            limit = left if limit is None else min(limit, left)
        m, res = fit_problem(form, Xp, labels, C[rows], kernel, values, strategy, cache_bytes=cache_bytes,
                             x0=start, tol=tol, max_iter=max_iter, time_limit=limit, reporter=reporter)
        models.append((rows[m.support], np.asarray(m.dual_coef, dtype=np.float64), float(m.bias)))
        results.append(res)
        alphas.append(np.asarray(res.x, dtype=np.float64))
        rows_of.append(rows)
    used = np.unique(np.concatenate([m[0] for m in models]))
    support = used[np.lexsort((used, y_idx[used]))]      # by class, then by index (LIBSVM's order)
    pos = np.full(y_idx.size, -1, dtype=np.intp)
    pos[support] = np.arange(support.size)
    D = np.zeros((support.size, len(pairs)))
    for p, (idx, coef, _) in enumerate(models):
        D[pos[idx], p] = coef
    sv = None if kernel.name == "precomputed" else X[support]
    model = MulticlassSVM(classes=classes, kernel=kernel, scheme="ovr" if pairs[0][1] < 0 else "ovo", pairs=pairs,
                          support=support, support_class=y_idx[support].astype(np.intp), sv=sv, D=D,
                          bias=np.array([m[2] for m in models]))
    return Trained(model=model, results=results, alphas=alphas, rows=rows_of)


def _batchable(batched: bool | None, strategy: Strategy, kernel: Kernel, form: Formulation,
               reporter: Reporter | None, pairs: NDArray[np.intp], kept: NDArray[np.intp], cache_bytes: int) -> bool:
    """Whether :func:`train_multiclass` takes the batched path (see its ``batched``); ``kept``
    counts each class's rows of weight > 0."""
    if batched is False or not form.standard_dual or reporter is not None or kernel.name == "precomputed":
        return False
    if kernel.psd is not True or pairs[0][1] < 0:
        return False
    if batched:
        return True
    width = kept.size * int(kept.max())
    # one binary problem gains nothing from batching: only a small one, whose fixed costs matter
    small = width <= (BATCH_ROWS if pairs.shape[0] > 1 else BATCH_ROWS_BINARY) and 8 * width * width <= cache_bytes
    return small and strategy.lockstep() == "smo-wss2"     # declared by the strategy, not probed


def _train_batched(X: Any, y_idx: NDArray[np.intp], classes: NDArray[Any], C: FloatArray, kernel: Kernel,
                   pairs: NDArray[np.intp], *,
                   tol: float, max_iter: int | None, time_limit: float | None,
                   x0: list[FloatArray] | None) -> tuple[list[Model], list[Result], list[FloatArray],
                                                         list[NDArray[np.intp]]]:
    """The one-vs-one C-SVCs solved together over one kernel matrix, each certified alone.

    Layout: the kept rows of each class fill a slot of M rows (M = the largest class; the rest is
    padding, bounds 0 ≤ α ≤ 0), so the kernel of the padded points is a (k, M, k, M) array and
    the variables of pair (i, j) are slots i and j side by side: a kernel row of any problem is
    one fancy index into that array, for all problems at once.
    """
    t0 = time.perf_counter()
    deadline = t0 + time_limit if time_limit is not None else math.inf
    k = int(pairs.max()) + 1
    keep = C > 0
    members = [np.flatnonzero(keep & (y_idx == c)) for c in range(k)]
    counts = np.array([m.size for m in members])
    for i, j in pairs:
        if counts[i] == 0 or counts[j] == 0:
            raise ProblemError(f"y: class {classes[i] if counts[i] == 0 else classes[j]} has no samples with C > 0 "
                               "in its problem")
    M = int(counts.max())
    src = np.zeros(k * M, dtype=np.intp)        # padding repeats a real row: never selected
    valid = np.zeros(k * M, dtype=bool)
    for c, m in enumerate(members):
        src[c * M:c * M + m.size] = m
        valid[c * M:c * M + m.size] = True
    Xpad = X[src]
    # the rounds stream kernel rows and scores: single precision halves that where it is safe
    dtype = stack_dtype(kernel.name, tol)
    K3 = stack_gram(Xpad, kernel, dtype).reshape(k * M, k, M)
    kd = kernel.self_values(Xpad).reshape(k, M)
    Cpad = np.where(valid, C[src], 0.0).reshape(k, M)
    pc = np.asarray(pairs, dtype=np.intp)
    B, N = pc.shape[0], 2 * M
    # local variable t of problem p is padded row at[p, t]; its columns are slots pc[p]
    at = (pc[:, :, None] * M + np.arange(M)).reshape(B, N)
    at_flat = at.ravel()

    memo: list[Any] = [None, None, None]         # the solver passes the same pid until problems finish

    def rows(pid: NDArray[np.intp], t: NDArray[np.intp]) -> FloatArray:
        if memo[0] is not pid:
            memo[:] = [pid, pid * N, pc[pid]]
        if t.ndim == 1:
            one: FloatArray = K3[at_flat[memo[1] + t][:, None], memo[2]].reshape(pid.size, N)
            return one
        many: FloatArray = K3[at[pid[:, None], t][:, :, None], pc[pid][:, None, :]].reshape(pid.size, t.shape[1], N)
        return many

    K2f = K3.ravel()

    def block(pid: NDArray[np.intp], t: NDArray[np.intp]) -> FloatArray:
        g = at[pid[:, None], t]
        # one flat take gathers the (A, m, m) entries faster than a two-array fancy index
        out: FloatArray = K2f.take((g * (k * M))[:, :, None] + g[:, None, :])
        return out

    y = np.tile(np.concatenate((np.ones(M), -np.ones(M))), (B, 1))
    ub = Cpad[pc].reshape(B, N)
    diag = kd[pc].reshape(B, N)
    # each problem's rows ascending (the contract of Trained.rows) and where they sit locally
    glob, loc = [], []
    for i, j in pc:
        g = np.concatenate((members[i], members[j]))
        order = np.argsort(g, kind="stable")
        glob.append(g[order])
        loc.append(np.concatenate((np.arange(counts[i]), M + np.arange(counts[j])))[order])
    alpha0 = None
    if x0 is not None:
        alpha0 = np.zeros((B, N))
        for p in range(min(B, len(x0))):
            start = np.clip(np.asarray(x0[p], dtype=np.float64), 0.0, ub[p, loc[p]]) \
                if x0[p].size == glob[p].size else None
            yl = y[p, loc[p]]
            # a start off yᵀα = 0 would move the equality: such a problem starts from 0
            if start is not None and abs(float(yl @ start)) <= 1e-12 * max(1.0, float(start.sum())):
                alpha0[p, loc[p]] = start
    run = batched_smo(rows, diag, y, ub, tol=tol, alpha=alpha0, max_iter=max_iter, deadline=deadline, dtype=dtype,
                      newton_every=FACE_EVERY, block=block)
    alpha, its, ok_run = run.alpha.copy(), run.iterations.copy(), run.converged.copy()
    qps = []
    for p in range(B):
        yl = y[p, loc[p]]
        n_p = yl.size
        # each certificate evaluates the float64 kernel between its rows and its support vectors
        qps.append(QP.trusted(SubsetKernelQ(X, glob[p], yl, kernel), -np.ones(n_p),
                              np.zeros(n_p), ub[p, loc[p]], yl[None, :], np.zeros(1)))
    cert_run = certify_refresh(qps, loc, rows, diag, y, ub, alpha, its, ok_run, tol=tol, deadline=deadline,
                               dtype=dtype, max_iter=max_iter, refreshes=REFRESHES)
    certs, grads, met, refreshes = cert_run.certs, cert_run.grads, cert_run.met, cert_run.refreshes
    seconds = time.perf_counter() - t0
    why = (f"small data: {B} one-vs-one problem{'s' if B > 1 else ''} of at most {N} rows solved together over one "
           "kernel matrix (pair steps cost Python calls, a round of all problems costs the same calls)")
    models: list[Model] = []
    results: list[Result] = []
    alphas: list[FloatArray] = []
    for p in range(B):
        x, g, cert, qp = alpha[p, loc[p]], grads[p], certs[p], qps[p]
        stats: dict[str, Any] = {"seconds": seconds / B, "batch_seconds": seconds, "strategy": "batched-smo",
                                 "strategy_choice": [(0, "batched-smo", why)],
                                 "batch": B, "rounds": run.rounds, "face_steps": int(run.newton[p]),
                                 "refreshes": refreshes, "rows_computed": qp.Q.stats.rows_computed}
        results.append(stack_result(qp, x, g, cert, steps=int(its[p]), converged=bool(ok_run[p]), met=bool(met[p]),
                                    limit_hit=max_iter is not None and its[p] >= max_iter, stats=stats))
        sv = np.flatnonzero(x > 0)
        yl = y[p, loc[p]]
        models.append((glob[p][sv], x[sv] * yl[sv], -float(cert.multipliers[0])))
        alphas.append(x)
    return models, results, alphas, glob


def linear_binary(X: Any, y01: NDArray[Any], C: float | FloatArray, strategy: Strategy, *, squared_hinge: bool,
                  bias: float = 1.0, tol: float = 1e-4, max_iter: int | None = None, time_limit: float | None = None,
                  reporter: Reporter | None = None, x0: FloatArray | None = None) -> tuple[FloatArray, float, Result]:
    """One linear SVM in LIBLINEAR's form, class 1 of ``y01`` positive: its weights, bias and run.

    min ½(‖w‖² + v²) + Σ C_i loss(y_i(x_iᵀw + β·v)), the intercept b = β·v regularized through the
    constant feature β (LIBLINEAR's ``-B``; β = 0: no intercept). The hinge goes to the cutting
    planes' problem (:func:`qpcore_formulations.risk.hinge_svm`, per-example C_i as its box). The squared
    hinge goes to the ASVM dual of the data scaled by 1/β with ν = 2·max(C)·β² and weights
    s_i = C_i / max(C) (:func:`qpcore_formulations.asvm.asvm_dual` has the constant feature fixed at 1,
    C_i = ν s_i / 2 and the diagonal d_i = 1/(ν s_i) = 1/(2 C_i β²)): the same optimum, with w
    divided by β. Examples with C_i = 0 have no loss and no dual variable: the ASVM dual leaves
    their rows out, the hinge's box pins their α_i to 0.

    Parameters
    ----------
    X : ndarray or csr_matrix
        The rows of this problem.
    y01 : ndarray
        1 for the positive class, 0 for the other.
    C : float or ndarray
        The loss weight, one value or one per example (≥ 0, finite, not all 0).
    strategy : Strategy
        ASVM for the squared hinge; OCAS, ActiveSetOCAS or BMRM for the hinge.
    squared_hinge : bool
    bias : float
        β ≥ 0 (> 0 for the squared hinge).
    tol, max_iter, time_limit, reporter :
        Handed to ``qpcore.solve``.
    x0 : ndarray, optional
        A start for the dual; ignored when its length is not the dual's (a fit with other weights).

    Returns
    -------
    (w, b, Result)

    Raises
    ------
    ProblemError
        A squared hinge with β = 0, or what the problem builders refuse.
    """
    s = float(bias)
    m = int(X.shape[0])
    Cv = np.asarray(C, dtype=np.float64) if np.ndim(C) else np.full(m, float(C))
    if squared_hinge:
        if s <= 0.0:
            raise ProblemError("the squared hinge (ASVM) always has its intercept: bias must be > 0")
        if Cv.shape != (m,) or not (np.isfinite(Cv).all() and (Cv >= 0).all() and Cv.max() > 0):
            raise ProblemError(f"C: must be finite, ≥ 0 and not all 0, one value or ({m},), got shape {Cv.shape}")
        top = float(Cv.max())
        weight = None if float(Cv.min()) == top else Cv / top
        P = asvm_dual(X if s == 1.0 else X * (1.0 / s), y01, nu=2.0 * top * s * s, sample_weight=weight)
        start = x0 if x0 is not None and x0.shape == (P.qp.n,) else None
        res = qpcore.solve(P.qp, strategy, start, tol=tol, max_iter=max_iter, time_limit=time_limit,
                           reporter=reporter)
        m_ = P.decode(res)
        w = np.asarray(m_.w, dtype=np.float64) / s
    else:
        H = hinge_svm(X, y01, Cv, bias=s)
        start = x0 if x0 is not None and x0.shape == (H.qp.n,) else None
        res = qpcore.solve(H.qp, strategy, start, tol=tol, max_iter=max_iter, time_limit=time_limit,
                           reporter=reporter)
        m_ = H.decode(res)
        w = np.asarray(m_.w, dtype=np.float64)
    return w, -float(m_.gamma), res
