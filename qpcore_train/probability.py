"""Class probabilities for kernel SVMs, as LIBSVM defines them (``svm-train -b 1``).

A binary SVM's decision value f becomes P(y = +1 | f) = 1 / (1 + exp(A·f + B)), Platt's sigmoid,
fitted by :func:`fit_sigmoid` to decision values that the model did not see: each point's value
comes from a model trained on the other folds of an internal cross-validation
(:func:`calibrate`, LIBSVM's ``svm_binary_svc_probability``). The fit is Lin, Lin and Weng's
(2007) Newton method with backtracking on the log-likelihood with Platt's smoothed targets.

With more than two classes each one-vs-one pair (i, j) gives r_ij ≈ P(y = i | y ∈ {i, j}), and
:func:`couple` finds the class probabilities p that agree best with all of them: Wu, Lin and
Weng's (2004) second method, min_p Σ_i Σ_{j≠i} (r_ji p_i − r_ij p_j)² over the simplex, solved
as LIBSVM's ``multiclass_probability`` solves it. :func:`proba_from_raw` joins the two for the
decision values of a :class:`qpcore_train.multiclass.MulticlassSVM`.

References
----------
J. Platt, "Probabilistic outputs for support vector machines and comparisons to regularized
likelihood methods", 2000. H.-T. Lin, C.-J. Lin, R. C. Weng, "A note on Platt's probabilistic
outputs for support vector machines", Machine Learning 68, 2007. T.-F. Wu, C.-J. Lin,
R. C. Weng, "Probability estimates for multi-class classification by pairwise coupling",
JMLR 5, 2004.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit

from qpcore.core.problem import ProblemError

if TYPE_CHECKING:
    from qpcore_train.multiclass import MulticlassSVM

__all__ = ["MIN_PROB", "calibrate", "calibrate_rows", "couple", "fit_sigmoid", "proba_from_raw", "sigmoid_proba"]

FloatArray = NDArray[np.float64]

#: Pairwise probabilities are kept in [MIN_PROB, 1 − MIN_PROB] before coupling (LIBSVM's
#: ``min_prob``), so that no pair rules a class out and coupling's system stays regular.
MIN_PROB = 1e-7

#: ``decide(i, j, train, test)``: decision values (positive for class i) of the rows ``test`` from
#: a model of classes i and j trained on the rows ``train`` (both index the calibrated rows).
Decide = Callable[[int, int, NDArray[np.intp], NDArray[np.intp]], FloatArray]


def _nll(f: FloatArray, t: FloatArray) -> float:
    """−log-likelihood of targets t under P(+1) = 1/(1 + e^f): Σ t·f + log(1 + e^−f), overflow-free."""
    return float(np.sum(t * f + np.logaddexp(0.0, -f)))


def fit_sigmoid(dec: Any, y: Any, *, max_iter: int = 100, min_step: float = 1e-10, sigma: float = 1e-12,
                eps: float = 1e-5) -> tuple[float, float]:
    """Platt's sigmoid P(y = +1 | f) = 1 / (1 + exp(A·f + B)) fitted to decision values.

    Minimizes Σ_i t_i·f_i' + log(1 + exp(−f_i')), f_i' = A·dec_i + B, over (A, B), with Platt's
    targets t_i = (N₊ + 1)/(N₊ + 2) for a positive point and 1/(N₋ + 2) for a negative one (a
    prior count that keeps the fit finite on separable values). Newton's method with the
    Hessian shifted by ``sigma`` and a backtracking (Armijo) line search, from A = 0,
    B = log((N₋ + 1)/(N₊ + 1)) (Lin, Lin & Weng 2007, as LIBSVM's ``sigmoid_train``).

    Parameters
    ----------
    dec : array-like of shape (n,)
        Decision values (best: held out, from cross-validation).
    y : array-like of shape (n,)
        Labels, positive for +1 and anything else for −1.
    max_iter : int
        Newton iterations at most.
    min_step : float
        The line search gives up below this step (the last accepted point is kept).
    sigma : float
        Added to the Hessian's diagonal, so that it stays positive definite.
    eps : float
        Stop once both gradient components are below this in absolute value.

    Returns
    -------
    (A, B) : tuple of float
        A < 0 when larger decision values mean +1.

    Raises
    ------
    ProblemError
        For inputs of different lengths, no values, or non-finite values.
    """
    f = np.asarray(dec, dtype=np.float64).ravel()
    pos = np.asarray(y).ravel() > 0
    if f.size != pos.size:
        raise ProblemError(f"fit_sigmoid: {f.size} decision values but {pos.size} labels")
    if f.size == 0 or not np.isfinite(f).all():
        raise ProblemError("fit_sigmoid: needs at least one decision value, all finite")
    n_pos = int(pos.sum())
    n_neg = f.size - n_pos
    t = np.where(pos, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    A, B = 0.0, math.log((n_neg + 1.0) / (n_pos + 1.0))
    fval = _nll(A * f + B, t)
    for _ in range(max_iter):
        z = A * f + B
        p = expit(-z)                   # P(+1) at the current point
        d2 = p * (1.0 - p)
        d1 = t - p
        h11 = sigma + float(f @ (f * d2))
        h22 = sigma + float(d2.sum())
        h21 = float(f @ d2)
        g1 = float(f @ d1)
        g2 = float(d1.sum())
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA = -(h22 * g1 - h21 * g2) / det
        dB = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:
            nA, nB = A + step * dA, B + step * dB
            nf = _nll(nA * f + nB, t)
            if nf < fval + 1e-4 * step * gd:
                A, B, fval = nA, nB, nf
                break
            step /= 2.0
        if step < min_step:
            break                       # no decrease along Newton's direction: keep the last point
    return A, B


def sigmoid_proba(dec: Any, A: Any, B: Any) -> FloatArray:
    """P(y = +1 | f) = 1 / (1 + exp(A·f + B)), without overflow for any f.

    Parameters
    ----------
    dec : array-like
        Decision values.
    A, B : float or array-like
        The sigmoid's parameters (arrays broadcast against ``dec``: one pair per column).

    Returns
    -------
    ndarray
        Same shape as the broadcast of ``dec``, ``A`` and ``B``.
    """
    with np.errstate(over="ignore"):     # A·f beyond float range is ±inf, whose limit expit takes
        z = np.asarray(dec, dtype=np.float64) * np.asarray(A, dtype=np.float64) + np.asarray(B, dtype=np.float64)
    out: FloatArray = np.asarray(expit(-z), dtype=np.float64)
    return out


def couple(r: Any, *, max_iter: int | None = None, eps: float | None = None) -> FloatArray:
    """Class probabilities from pairwise ones (Wu, Lin & Weng 2004, method 2; LIBSVM's
    ``multiclass_probability``).

    For each point, p minimizes pᵀQp over the simplex, Q_tt = Σ_{j≠t} r_jt², Q_tj = −r_jt·r_tj:
    Gauss–Seidel sweeps over the classes from p = 1/k, each renormalized, until
    max_t |(Qp)_t − pᵀQp| < eps (the optimality condition). Every point is iterated on its own;
    the arithmetic is vectorized across points.

    Parameters
    ----------
    r : array-like of shape (n, k, k)
        r[:, i, j] ≈ P(y = i | y ∈ {i, j}), with r_ij + r_ji = 1; the diagonal is ignored.
    max_iter : int, optional
        Sweeps per point; default max(100, k) as LIBSVM.
    eps : float, optional
        Tolerance on the optimality condition; default 0.005/k as LIBSVM.

    Returns
    -------
    ndarray of shape (n, k)
        Rows on the simplex.

    Raises
    ------
    ProblemError
        When ``r`` is not an (n, k, k) array of finite numbers.
    """
    R = np.array(r, dtype=np.float64)
    if R.ndim != 3 or R.shape[1] != R.shape[2] or not np.isfinite(R).all():
        raise ProblemError(f"couple: r must be a finite (n, k, k) array, got shape {R.shape}")
    n, k = R.shape[0], R.shape[1]
    max_iter = max(100, k) if max_iter is None else int(max_iter)
    eps = 0.005 / k if eps is None else float(eps)
    idx = np.arange(k)
    R[:, idx, idx] = 0.0
    Q = -R * R.transpose(0, 2, 1)                   # Q_tj = −r_tj·r_jt off the diagonal
    Q[:, idx, idx] = np.einsum("njt,njt->nt", R, R)  # Q_tt = Σ_j r_jt²
    p = np.full((n, k), 1.0 / k)
    active = np.arange(n)
    for _ in range(max_iter):
        Qa, pa = Q[active], p[active]
        Qp = np.einsum("nij,nj->ni", Qa, pa)
        pQp = np.einsum("ni,ni->n", pa, Qp)
        still = np.abs(Qp - pQp[:, None]).max(axis=1) >= eps
        if not still.any():
            break
        active, Qa, pa, Qp, pQp = active[still], Qa[still], pa[still], Qp[still], pQp[still]
        for t in range(k):
            qtt = Qa[:, t, t]
            diff = (pQp - Qp[:, t]) / qtt
            pa[:, t] += diff
            # keep Qp and pᵀQp current for the renormalized p, without a new product
            pQp = (pQp + diff * (diff * qtt + 2.0 * Qp[:, t])) / (1.0 + diff) ** 2
            scale = 1.0 / (1.0 + diff)
            Qp = (Qp + diff[:, None] * Qa[:, t, :]) * scale[:, None]
            pa *= scale[:, None]
        p[active] = pa
    return p


def proba_from_raw(raw: Any, prob_a: Any, prob_b: Any, pairs: NDArray[np.intp], n_classes: int) -> FloatArray:
    """Class probabilities from one-vs-one decision values (LIBSVM's ``svm_predict_probability``).

    Each pair's sigmoid gives r_ij, kept in [MIN_PROB, 1 − MIN_PROB]; two classes take it as it
    is, more are coupled (:func:`couple`).

    Parameters
    ----------
    raw : array-like of shape (n, n_pairs)
        Decision values, positive for each pair's first class.
    prob_a, prob_b : array-like of shape (n_pairs,)
        The sigmoid of each pair.
    pairs : ndarray of shape (n_pairs, 2)
        Class indices (i, j), i < j (:func:`qpcore_train.multiclass.problems_of`, one-vs-one).
    n_classes : int

    Returns
    -------
    ndarray of shape (n, n_classes)

    Raises
    ------
    ProblemError
        For one-vs-rest pairs or mismatched shapes.
    """
    D = np.asarray(raw, dtype=np.float64)
    P = np.asarray(pairs)
    A = np.asarray(prob_a, dtype=np.float64).ravel()
    B = np.asarray(prob_b, dtype=np.float64).ravel()
    if D.ndim != 2 or not (D.shape[1] == P.shape[0] == A.size == B.size):
        raise ProblemError(f"probabilities: {D.shape} decision values for {P.shape[0]} pairs and "
                           f"{A.size}/{B.size} sigmoids")
    if (P[:, 1] < 0).any():
        raise ProblemError("probabilities are defined for one-vs-one problems (LIBSVM's pairwise coupling), "
                           "not one-vs-rest")
    r = np.clip(sigmoid_proba(D, A, B), MIN_PROB, 1.0 - MIN_PROB)
    if n_classes == 2:
        return np.column_stack([r[:, 0], 1.0 - r[:, 0]])
    R = np.zeros((D.shape[0], n_classes, n_classes))
    R[:, P[:, 0], P[:, 1]] = r
    R[:, P[:, 1], P[:, 0]] = 1.0 - r
    return couple(R)


def calibrate_rows(y_idx: Any, pairs: NDArray[np.intp], decide: Decide, *, folds: int = 5,
                   seed: int = 0) -> tuple[FloatArray, FloatArray]:
    """The sigmoid of each one-vs-one pair from cross-validated decision values, given a way to
    train and evaluate on rows (the engine of :func:`calibrate`).

    For each pair (i, j) in order: its rows in a random order (one generator seeded by ``seed``
    draws every pair's permutation), ``folds`` consecutive folds of it; each fold's decision
    values come from ``decide`` on the other folds, or, as LIBSVM, are +1 (−1) when those hold
    class i (j) only and 0 when they are empty; :func:`fit_sigmoid` on all of them.

    Parameters
    ----------
    y_idx : array-like of shape (n,)
        Class index of each row.
    pairs : ndarray of shape (n_pairs, 2)
        Class indices (i, j) of each pair.
    decide : callable
        ``decide(i, j, train, test)`` (see :data:`Decide`).
    folds : int
        Folds per pair (LIBSVM: 5).
    seed : int
        Seeds the permutations.

    Returns
    -------
    (prob_a, prob_b) : ndarrays of shape (n_pairs,)

    Raises
    ------
    ProblemError
        ``folds`` < 2, or a pair without rows.
    """
    y = np.asarray(y_idx).ravel()
    if folds < 2:
        raise ProblemError(f"calibrate: folds must be at least 2, got {folds}")
    rng = np.random.default_rng(seed)
    prob_a = np.empty(len(pairs))
    prob_b = np.empty(len(pairs))
    for p, (i, j) in enumerate(np.asarray(pairs)):
        i, j = int(i), int(j)
        rows = np.flatnonzero((y == i) | (y == j))
        if rows.size == 0:
            raise ProblemError(f"calibrate: classes {i} and {j} have no rows")
        perm = rows[rng.permutation(rows.size)]
        dec = np.zeros(rows.size)       # in the order of perm
        for f in range(folds):
            lo, hi = f * rows.size // folds, (f + 1) * rows.size // folds
            if lo == hi:
                continue
            train = np.concatenate([perm[:lo], perm[hi:]])
            n_i = int(np.count_nonzero(y[train] == i))
            if n_i and n_i < train.size:
                dec[lo:hi] = decide(i, j, train, perm[lo:hi])
            elif train.size:
                dec[lo:hi] = 1.0 if n_i else -1.0
        prob_a[p], prob_b[p] = fit_sigmoid(dec, y[perm] == i)
    return prob_a, prob_b


def calibrate(X: Any, y_idx: Any, classes: Any, fit_fn: Callable[[Any, NDArray[np.intp]], MulticlassSVM], *,
              folds: int = 5, seed: int = 0, precomputed: bool = False) -> tuple[FloatArray, FloatArray]:
    """Platt's sigmoid of every one-vs-one pair from internal cross-validation (LIBSVM's
    ``svm_binary_svc_probability``, ``svm-train -b 1``).

    For each pair of classes i < j (LIBSVM's order, :func:`qpcore_train.multiclass.problems_of`), the
    pair's rows are split into ``folds`` random folds; each fold's decision values come from a
    model that ``fit_fn`` trains on the rest of the pair's rows (see :func:`calibrate_rows` for
    the order and the one-class special cases), and :func:`fit_sigmoid` fits the pair's sigmoid.

    Parameters
    ----------
    X : ndarray or csr_matrix
        Training points (``precomputed``: the n×n Gram matrix).
    y_idx : array-like of int, shape (n,)
        Class index of each point (0 … n_classes − 1).
    classes : array-like
        The label values (only their number is used).
    fit_fn : callable
        ``fit_fn(X_sub, y_sub)``: a :class:`~qpcore_train.multiclass.MulticlassSVM` trained on the
        rows of classes i and j with the full fit's settings, ``y_sub`` their original class
        indices (values i and j), over two classes with i first, so that its decision value is
        positive for i: e.g. ``u, y01 = np.unique(y_sub, return_inverse=True)`` and
        ``train_multiclass(X_sub, y01, classes[u], C_of(y_sub), ...).model``. (A model over all
        classes is read at its (i, j) column.)
    folds : int
        Folds per pair (LIBSVM: 5).
    seed : int
        Seeds the fold permutations.
    precomputed : bool
        X is a Gram matrix: ``X_sub`` is then K(train, train) and a fold's values take
        K(held out, train).

    Returns
    -------
    (prob_a, prob_b) : ndarrays of shape (n_pairs,)
        Set them on the model (``attrs.evolve(model, prob_a=..., prob_b=...)``) for
        ``predict_proba``.

    Raises
    ------
    ProblemError
        Fewer than two classes, ``folds`` < 2, a class without rows, or what ``fit_fn`` raises.
    """
    y = np.asarray(y_idx, dtype=np.intp).ravel()
    k = int(np.asarray(classes).size)
    if k < 2:
        raise ProblemError(f"calibrate: needs at least two classes, got {k}")
    # LIBSVM's order of the pairs, as qpcore_train.multiclass.problems_of lists them (which imports this module)
    pairs = np.array([(i, j) for i in range(k) for j in range(i + 1, k)], dtype=np.intp)

    def decide(i: int, j: int, train: NDArray[np.intp], test: NDArray[np.intp]) -> FloatArray:
        model = fit_fn(X[train][:, train] if precomputed else X[train], y[train])
        raw = model.raw(X[test][:, train] if precomputed else X[test])
        if model.n_classes == 2:
            return np.asarray(raw[:, 0], dtype=np.float64)
        col = np.flatnonzero((model.pairs[:, 0] == i) & (model.pairs[:, 1] == j))
        return np.asarray(raw[:, int(col[0])], dtype=np.float64)

    return calibrate_rows(y, pairs, decide, folds=folds, seed=seed)
