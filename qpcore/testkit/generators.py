"""Seeded random QP generators: box QPs, SVM duals, nonnegative, degenerate and low-rank problems.

Every generator takes ``seed`` (anything ``numpy.random.default_rng`` accepts) and returns a
:class:`qpcore.QP` (over a :class:`qpcore.DenseQ`, or a :class:`qpcore.backends.lowrank.DiagPlusLowRankQ`
for :func:`random_lowrank_qp`), so the same seed gives the same problem. They are meant for tests
(the hypothesis strategies in :mod:`qpcore.testkit.testing` draw their seeds and parameters) and for small
benchmarks. This module needs only numpy and scipy and lives in qpcore, the bottom layer, so that
:mod:`qpcore.testkit.testing` imports nothing from the layers above it.

Several generators *plant* the optimum: they pick a point x*, which variables sit at which bound,
and multipliers of the right sign, then set ``c`` so that x* satisfies the KKT conditions. Such a
problem is bounded whatever the rank of Q, and its optimum is known
(:func:`planted_qp` returns it).

Fixed variables: the dense generators take ``fixed`` (a fraction of the variables, or ``True`` for
a quarter of them), which sets ``lb = ub`` for that many variables, at their value in a feasible
point of the original problem (the planted optimum where there is one, which then stays optimal),
so the equality stays feasible. :func:`qpcore.testkit.points.fix_variables` does the same to any
QP with at most one equality row, and :func:`qpcore.testkit.points.feasible_point` draws such a
point (both import from here too).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.operators import DenseQ
from qpcore.core.problem import QP, ProblemError
from qpcore.core.validate import as_integer, as_real
# the random points and the fixing of variables live in qpcore.testkit.points: its public names
# import from here too (the ``as`` form), its private helpers serve the ``fixed`` option below
from qpcore.testkit.points import Seed as Seed
from qpcore.testkit.points import _box_point, _check_fraction, _fix_at, _fixed_fraction
from qpcore.testkit.points import feasible_point as feasible_point
from qpcore.testkit.points import fix_variables as fix_variables
from qpcore.testkit.points import meet_row as meet_row
from qpcore.testkit.points import random_box_point as random_box_point

FloatArray = NDArray[np.float64]

__all__ = ["Seed", "planted_qp", "planted_rows_qp", "psd_matrix", "random_box_qp", "random_degenerate_qp",
           "random_lowrank_qp", "random_nonneg_qp", "random_one_sided_qp", "random_svm_dual"]


def _check_n(n: int, minimum: int = 1) -> int:
    return as_integer(n, "n", low=minimum)


def _check_cond(cond: float) -> float:
    return as_real(cond, "cond", low=1.0)


def _check_rank(rank: int | None, n: int) -> int:
    if rank is None:
        return n
    value = as_integer(rank, "rank", low=0)
    if value > n:
        raise ProblemError(f"rank: expected an integer in [0, {n}], got {rank!r}")
    return value


def psd_matrix(n: int, *, seed: Seed, cond: float = 1.0, rank: int | None = None) -> FloatArray:
    """A random symmetric positive (semi)definite matrix with a prescribed spectrum.

    Q = U diag(λ) Uᵀ with U Haar-distributed orthogonal and the ``rank`` nonzero eigenvalues
    log-spaced from 1 down to 1/``cond``; the others are exactly zero.

    Parameters
    ----------
    n : int
        Size.
    seed : int or numpy.random.Generator
        Random seed.
    cond : float
        Ratio of the largest to the smallest nonzero eigenvalue (≥ 1).
    rank : int, optional
        Number of nonzero eigenvalues (default n: positive definite).

    Returns
    -------
    ndarray
        An exactly symmetric n×n float64 matrix with largest eigenvalue 1 (0 when ``rank`` is 0).
    """
    n = _check_n(n)
    cond = _check_cond(cond)
    r = _check_rank(rank, n)
    rng = np.random.default_rng(seed)
    Z, R = np.linalg.qr(rng.standard_normal((n, n)))
    U = Z * np.where(np.diag(R) < 0, -1.0, 1.0)  # sign fix makes U Haar-distributed
    lam = np.zeros(n)
    lam[:r] = np.logspace(0.0, -np.log10(cond), r) if r > 1 else 1.0
    Q = np.asarray((U * lam) @ U.T, dtype=np.float64)
    out: FloatArray = 0.5 * (Q + Q.T)
    return out


def _bounds(lb: ArrayLike, ub: ArrayLike, n: int) -> tuple[FloatArray, FloatArray]:
    lo = np.broadcast_to(np.asarray(lb, dtype=np.float64), (n,)).copy()
    hi = np.broadcast_to(np.asarray(ub, dtype=np.float64), (n,)).copy()
    return lo, hi


def _plant(Q: FloatArray, lb: FloatArray, ub: FloatArray, rng: np.random.Generator, *, p_bound: float,
           degenerate: float, y: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
    """Choose an optimum x* and multipliers, return (c, x*) with Qx* + c − λy − z = 0.

    Variables at a bound get a multiplier of the right sign (z ≥ 0 at lb, z ≤ 0 at ub), zero with
    probability ``degenerate``; free ones get z = 0. With ``y`` (±1, SVM form, 0 ≤ x ≤ ub), the
    variables are paired across the two classes and share a value so that yᵀx* = 0 exactly.
    """
    n = lb.shape[0]
    has_lb, has_ub = np.isfinite(lb), np.isfinite(ub)
    at_bound = rng.random(n) < p_bound
    # which bound, among the finite ones; a variable with no finite bound is free
    pick_lower = np.where(has_lb & has_ub, rng.random(n) < 0.5, has_lb)
    at_lower = at_bound & pick_lower & has_lb
    at_upper = at_bound & ~pick_lower & has_ub
    if y is not None:
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        k = min(pos.size, neg.size)
        # partner j of i gets i's status; the excess of the larger class sits at its lower bound (0)
        at_lower[pos[k:]] = True
        at_upper[pos[k:]] = False
        at_lower[neg[k:]] = True
        at_upper[neg[k:]] = False
        at_lower[neg[:k]] = at_lower[pos[:k]]
        at_upper[neg[:k]] = at_upper[pos[:k]]
    free = ~(at_lower | at_upper)
    x = np.zeros(n)
    width = np.where(has_lb & has_ub, ub - lb, 1.0)
    t = rng.uniform(0.1, 0.9, n)
    off = 0.1 + np.abs(rng.standard_normal(n))
    x = np.where(has_lb & has_ub, lb + t * width,
                 np.where(has_lb, lb + off, np.where(has_ub, ub - off, rng.standard_normal(n))))
    x = np.where(at_lower, lb, np.where(at_upper, ub, x))
    if y is not None:
        x[neg[:k]] = x[pos[:k]]
    mag = rng.uniform(0.1, 1.0, n) * (rng.random(n) >= degenerate)
    z = np.where(at_lower, mag, np.where(at_upper, -mag, 0.0))
    z[free] = 0.0
    c = z - Q @ x
    if y is not None:
        c += rng.standard_normal() * y
    return c, x


def planted_qp(n: int, *, seed: Seed, cond: float = 1.0, rank: int | None = None, lb: ArrayLike = -1.0,
               ub: ArrayLike = 1.0, p_bound: float = 0.5, degenerate: float = 0.0,
               svm_form: bool = False, fixed: float | bool = False) -> tuple[QP, FloatArray]:
    """A QP built around a known optimum: returns the problem and an optimal point.

    Parameters
    ----------
    n : int
        Number of variables (≥ 2 with ``svm_form``).
    seed : int or numpy.random.Generator
        Random seed.
    cond, rank : float, int, optional
        Spectrum of Q, as in :func:`psd_matrix`.
    lb, ub : array_like or float
        Bounds, may be ±inf (a variable with neither bound finite is free at the optimum).
        With ``svm_form`` they are ignored except ``ub``, the box [0, C].
    p_bound : float
        Probability that a variable sits at a bound at the optimum.
    degenerate : float
        Probability that a variable at a bound has a zero multiplier (the gradient vanishes there
        too: no strict complementarity).
    svm_form : bool
        Add the SVM equality yᵀx = 0 with random ±1 labels (both present) and 0 ≤ x ≤ ub.
    fixed : float or bool
        Fix ``max(1, round(fixed·n))`` random variables (none for 0 or False, the default; True: a
        quarter; 1: all) at their value in x* (which stays optimal): lb = ub there.

    Returns
    -------
    (QP, ndarray)
        The problem and x*, optimal for it (the optimum is unique only when Q is definite).
    """
    n = _check_n(n, 2 if svm_form else 1)
    p_bound = _check_fraction(p_bound, "p_bound")
    degenerate = _check_fraction(degenerate, "degenerate")
    fraction = _fixed_fraction(fixed)
    rng = np.random.default_rng(seed)
    Q = psd_matrix(n, seed=rng, cond=cond, rank=rank)
    if svm_form:
        lo, hi = _bounds(0.0, ub, n)
        if not (np.isfinite(hi).all() and (hi > 0).all()):
            raise ValueError(f"ub: the SVM box needs a finite C > 0, got {ub!r}")
        y = _labels(rng, n)
        c, x = _plant(Q, lo, hi, rng, p_bound=p_bound, degenerate=degenerate, y=y)
        qp = QP(DenseQ(Q), c, lo, hi, y[None, :], np.zeros(1))
    else:
        lo, hi = _bounds(lb, ub, n)
        c, x = _plant(Q, lo, hi, rng, p_bound=p_bound, degenerate=degenerate)
        qp = QP(DenseQ(Q), c, lo, hi)
    return _fix_at(qp, x, fraction, rng), x


def random_box_qp(n: int, *, seed: Seed, cond: float = 1.0, rank: int | None = None, lb: ArrayLike = -1.0,
                  ub: ArrayLike = 1.0, fixed: float | bool = False) -> QP:
    """A box-constrained QP ``min ½xᵀQx + cᵀx, lb ≤ x ≤ ub`` with a random Q of given spectrum.

    Q comes from :func:`psd_matrix` (positive definite with condition number ``cond``; positive
    semidefinite when ``rank < n``) and c is standard normal, so with the default box [−1, 1] a
    mix of variables ends at a bound and strictly inside. When a bound is infinite and Q is
    singular, a random c could make the problem unbounded; c is then planted instead
    (:func:`planted_qp`).

    Parameters
    ----------
    n : int
        Number of variables.
    seed : int or numpy.random.Generator
        Random seed.
    cond : float
        Condition number of Q (of its nonzero spectrum when rank-deficient).
    rank : int, optional
        Rank of Q (default n).
    lb, ub : array_like or float
        Bounds.
    fixed : float or bool
        Fix ``max(1, round(fixed·n))`` random variables (none for 0 or False, the default; True: a
        quarter; 1: all) at their value in a random point of the box (some at a bound): lb = ub
        there.

    Returns
    -------
    QP
    """
    n = _check_n(n)
    lo, hi = _bounds(lb, ub, n)
    r = _check_rank(rank, n)
    fraction = _fixed_fraction(fixed)
    if r < n and not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return planted_qp(n, seed=seed, cond=cond, rank=r, lb=lo, ub=hi, fixed=fraction)[0]
    rng = np.random.default_rng(seed)
    Q = psd_matrix(n, seed=rng, cond=cond, rank=r)
    qp = QP(DenseQ(Q), rng.standard_normal(n), lo, hi)
    if fraction <= 0.0:
        return qp
    return _fix_at(qp, _box_point(lo, hi, rng, 0.3), fraction, rng)


def random_one_sided_qp(n: int, *, seed: Seed, cond: float = 1.0, rank: int | None = None,
                        side: Literal["lower", "upper", "mixed"] = "mixed", degenerate: float = 0.0,
                        fixed: float | bool = False) -> QP:
    """A box QP in which every variable has exactly one finite bound (the other side infinite).

    Bounds are uniform in [−1, 1]; ``side`` says which one is finite (per variable at random for
    "mixed"). The optimum is planted, so the problem is bounded even when Q is singular.

    Parameters
    ----------
    n : int
        Number of variables.
    seed : int or numpy.random.Generator
        Random seed.
    cond, rank : float, int, optional
        Spectrum of Q, as in :func:`psd_matrix`.
    side : {"lower", "upper", "mixed"}
        Which bound is finite.
    degenerate : float
        Probability that an active bound has a zero multiplier.
    fixed : float or bool
        Fix ``max(1, round(fixed·n))`` random variables (none for 0 or False, the default; True: a
        quarter; 1: all) at their value in the planted optimum: lb = ub there.

    Returns
    -------
    QP
    """
    n = _check_n(n)
    if side not in ("lower", "upper", "mixed"):
        raise ValueError(f"side: must be 'lower', 'upper' or 'mixed', got {side!r}")
    rng = np.random.default_rng(seed)
    bound = rng.uniform(-1.0, 1.0, n)
    lower = np.full(n, side == "lower") if side != "mixed" else rng.random(n) < 0.5
    lo = np.where(lower, bound, -np.inf)
    hi = np.where(lower, np.inf, bound)
    return planted_qp(n, seed=rng, cond=cond, rank=rank, lb=lo, ub=hi, degenerate=degenerate, fixed=fixed)[0]


def random_nonneg_qp(n: int, *, seed: Seed, cond: float = 1.0, rank: int | None = None,
                     degenerate: float = 0.0, fixed: float | bool = False) -> QP:
    """A nonnegativity-constrained QP ``min ½xᵀQx + cᵀx, x ≥ 0`` (lb = 0, ub = inf), NNLS-shaped.

    The optimum is planted (about half the variables at 0), so the problem is bounded even when Q
    is singular.

    Parameters
    ----------
    n : int
        Number of variables.
    seed : int or numpy.random.Generator
        Random seed.
    cond, rank : float, int, optional
        Spectrum of Q, as in :func:`psd_matrix`.
    degenerate : float
        Probability that a variable at 0 also has a zero gradient there.
    fixed : float or bool
        Fix ``max(1, round(fixed·n))`` random variables (none for 0 or False, the default; True: a
        quarter; 1: all) at their value in the planted optimum: lb = ub there.

    Returns
    -------
    QP
    """
    return planted_qp(n, seed=seed, cond=cond, rank=rank, lb=0.0, ub=np.inf, degenerate=degenerate, fixed=fixed)[0]


def random_degenerate_qp(n: int, *, seed: Seed, cond: float = 1.0, rank: int | None = None,
                         degenerate: float = 0.5, svm_form: bool = False, C: float = 1.0,
                         fixed: float | bool = False) -> QP:
    """A degenerate QP: variables at a bound with zero gradient there at the optimum.

    The optimum is constructed first (about half the variables at a bound, and of those a
    fraction ``degenerate`` with a zero multiplier), then c is set so that it is optimal. Such
    problems defeat rules that read "at a bound" as "has a nonzero multiplier".

    Parameters
    ----------
    n : int
        Number of variables (≥ 2 with ``svm_form``).
    seed : int or numpy.random.Generator
        Random seed.
    cond, rank : float, int, optional
        Spectrum of Q, as in :func:`psd_matrix`.
    degenerate : float
        Probability that a variable at a bound has a zero multiplier.
    svm_form : bool
        Box [0, C] with the equality yᵀx = 0 (random ±1 labels), else the box [−1, 1].
    C : float
        Upper bound in SVM form.
    fixed : float or bool
        Fix ``max(1, round(fixed·n))`` random variables (none for 0 or False, the default; True: a
        quarter; 1: all) at their value in the planted optimum: lb = ub there.

    Returns
    -------
    QP
    """
    if svm_form:
        return planted_qp(n, seed=seed, cond=cond, rank=rank, ub=C, degenerate=degenerate, svm_form=True,
                          fixed=fixed)[0]
    return planted_qp(n, seed=seed, cond=cond, rank=rank, degenerate=degenerate, fixed=fixed)[0]


def _labels(rng: np.random.Generator, n: int) -> FloatArray:
    """±1 labels with both classes present, in random order."""
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y[:2] = (1.0, -1.0)
    return y[rng.permutation(n)]


def _cond(K: FloatArray) -> float:
    w = np.linalg.eigvalsh(K)
    return float(w[-1] / w[0]) if w[0] > 0 else np.inf


def _rbf_gamma_for_cond(D2: FloatArray, cond: float) -> float:
    """γ such that cond(exp(−γ D2)) ≈ ``cond``, by bisection on log γ.

    The RBF Gram matrix goes from 11ᵀ (infinitely ill-conditioned) as γ → 0 to I as γ → ∞, so the
    condition number falls as γ grows.
    """
    lo, hi = -12.0, 6.0
    target = np.log(cond)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        k = _cond(np.exp(-(10.0 ** mid) * D2))
        if np.log(k) > target:
            lo = mid
        else:
            hi = mid
    return float(10.0 ** hi)


def random_svm_dual(n: int, *, seed: Seed, C: float = 1.0, cond: float | None = None, duplicates: int = 0,
                    kernel: Literal["rbf", "linear"] = "rbf", d: int = 5, gamma: float | None = None,
                    fixed: float | bool = False) -> QP:
    """A C-SVC dual ``min ½αᵀQα − eᵀα, 0 ≤ α ≤ C, yᵀα = 0`` from random points.

    Points are standard normal in d dimensions, the two classes (±1, both present) shifted apart
    along the first axis so that they overlap partly; Q = yyᵀ ∘ K.

    Parameters
    ----------
    n : int
        Number of points (≥ 2).
    seed : int or numpy.random.Generator
        Random seed.
    C : float
        Box bound (> 0).
    cond : float, optional
        Approximate condition number of K over the distinct points. RBF: γ is chosen by bisection
        to hit it (``gamma`` then ignored). Linear: the feature scales are log-spaced so that the
        nonzero spectrum spreads over about this ratio (K has rank ≤ d regardless).
    duplicates : int
        How many of the n points are copies of others (same label): duplicate rows of Q,
        a singular Q and a non-unique optimum.
    kernel : {"rbf", "linear"}
        Kernel.
    d : int
        Dimension of the points.
    gamma : float, optional
        RBF width (default 1/d) when ``cond`` is not given.
    fixed : float or bool
        Fix ``max(1, round(fixed·n))`` random variables (none for 0 or False, the default; True: a
        quarter; 1: all) at their value in a random feasible point (pairs of opposite labels share a
        value in {0, C} or between, so yᵀx = 0): lb = ub there.

    Returns
    -------
    QP
    """
    n = _check_n(n, 2)
    C = float(C)
    if not (np.isfinite(C) and C > 0):
        raise ValueError(f"C: must be finite and > 0, got {C!r}")
    if int(duplicates) != duplicates or not 0 <= duplicates <= n - 2:
        raise ValueError(f"duplicates: must be an integer in [0, {n - 2}], got {duplicates!r}")
    if kernel not in ("rbf", "linear"):
        raise ValueError(f"kernel: must be 'rbf' or 'linear', got {kernel!r}")
    d = _check_n(d)
    rng = np.random.default_rng(seed)
    n0 = n - int(duplicates)
    y0 = _labels(rng, n0)
    X = rng.standard_normal((n0, d))
    X[:, 0] += 0.75 * y0
    # a point's copies share its index, so duplicate rows of K are bit-for-bit identical
    ids = np.concatenate([np.arange(n0), rng.integers(0, n0, size=n - n0)])[rng.permutation(n)]
    if kernel == "linear":
        if cond is not None:
            X *= np.logspace(0.0, -0.5 * np.log10(_check_cond(cond)), d)
        G = X @ X.T
        K0 = 0.5 * (G + G.T)
    else:
        sq = np.einsum("ij,ij->i", X, X)
        D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (X @ X.T), 0.0)
        D2 = 0.5 * (D2 + D2.T)
        np.fill_diagonal(D2, 0.0)
        if cond is not None:
            g = _rbf_gamma_for_cond(D2, _check_cond(cond))
        else:
            g = 1.0 / d if gamma is None else float(gamma)
            if not (np.isfinite(g) and g > 0):
                raise ValueError(f"gamma: must be finite and > 0, got {gamma!r}")
        K0 = np.exp(-g * D2)
    K = K0[np.ix_(ids, ids)]
    y = y0[ids]
    Q = np.outer(y, y) * K
    qp = QP(DenseQ(Q), -np.ones(n), np.zeros(n), np.full(n, C), y[None, :], np.zeros(1))
    fraction = _fixed_fraction(fixed)
    if fraction <= 0.0:
        return qp
    return _fix_at(qp, _svm_point(y, C, rng), fraction, rng)


def _svm_point(y: FloatArray, C: float, rng: np.random.Generator) -> FloatArray:
    """A random point of {0 ≤ x ≤ C, yᵀx = 0}: the classes paired off at random, each pair at a
    shared value (0, C or uniform between), the larger class's excess at 0 (yᵀx = 0 exactly)."""
    pos, neg = rng.permutation(np.flatnonzero(y > 0)), rng.permutation(np.flatnonzero(y < 0))
    k = min(pos.size, neg.size)
    u = rng.random(k)
    v = np.where(u < 0.3, 0.0, np.where(u < 0.6, C, rng.uniform(0.0, C, k)))
    x = np.zeros(y.size)
    x[pos[:k]] = v
    x[neg[:k]] = v
    return x



def random_lowrank_qp(m: int, k: int, *, seed: Seed, nu: float = 1.0, svm_form: bool = True,
                      duplicate_rows: int = 0, duplicate_cols: int = 0, constant_col: bool = False,
                      col_spread: float = 0.0, sparse: bool = False) -> QP:
    """A nonnegativity QP whose Q = diag(d) + HHᵀ is a :class:`qpcore.backends.lowrank.DiagPlusLowRankQ`.

    ``svm_form``: the ASVM dual of two overlapping Gaussian classes (d = 1/ν, H = D[A, −e], c = −e),
    else d varies over [0.5, 2]/ν, H is a plain m×k matrix and c is standard normal (bounded,
    because d > 0).

    Parameters
    ----------
    m, k : int
        Rows (variables) and columns of H (for ``svm_form`` the data has k − 1 columns plus the bias).
    seed : int or numpy.random.Generator
        Random seed.
    nu : float
        1/d's scale (large ν: Q close to the singular HHᵀ).
    duplicate_rows, duplicate_cols : int
        Rows of the data copied onto others (duplicate points), columns copied (a singular H).
    constant_col : bool
        Make one data column constant (collinear with the bias column in the SVM form).
    col_spread : float
        Scale the columns by 10^u, u uniform in [−spread, spread] (ill-conditioned H).
    sparse : bool
        Hold the data as CSR with about half of its entries zero.

    Returns
    -------
    QP
    """
    import scipy.sparse as sps

    from qpcore.backends.lowrank import DiagPlusLowRankQ

    _check_n(m)
    rng = np.random.default_rng(seed)
    p = max(1, k - 1) if svm_form else max(1, k)
    F = rng.standard_normal((m, p))
    y = _labels(rng, m)
    if svm_form:
        F += 0.5 * y[:, None]
    if col_spread:
        F *= 10.0 ** rng.uniform(-col_spread, col_spread, p)
    for _ in range(min(duplicate_cols, p - 1)):
        a, b = rng.choice(p, 2, replace=False)
        F[:, b] = F[:, a]
    if constant_col:
        F[:, rng.integers(p)] = 1.0
    for _ in range(min(duplicate_rows, m - 1)):
        a, b = rng.choice(m, 2, replace=False)
        F[b] = F[a]
        y[b] = y[a] if rng.random() < 0.5 else -y[a]   # a contradicting duplicate half of the time
    data: Any = sps.csr_matrix(F * (rng.random(F.shape) < 0.5)) if sparse else F
    if svm_form:
        Q = DiagPlusLowRankQ(1.0 / nu, data, row_scale=y, bias=-1.0)
        c = -np.ones(m)
    else:
        Q = DiagPlusLowRankQ(rng.uniform(0.5, 2.0, m) / nu, data)
        c = rng.standard_normal(m)
    return QP(Q=Q, c=c, lb=np.zeros(m), ub=np.full(m, np.inf))


def planted_rows_qp(n: int, m: int, *, seed: Seed, kind: Literal["general", "groups"] = "general",
                    cond: float = 1.0, rank: int | None = None, p_bound: float = 0.4, infinite: float = 0.15,
                    dependent: bool = False, zero_row: bool = False, duplicates: int = 0,
                    fixed: float = 0.0, degenerate: float = 0.0) -> tuple[QP, FloatArray]:
    """A QP with m ≥ 2 equality rows built around a known optimum: returns the problem and x*.

    Q from :func:`psd_matrix` (``cond``, ``rank``); bounds in [−2, 2] with a fraction
    ``infinite`` of them infinite; x* feasible with about ``p_bound`` of the variables on a
    finite bound; multipliers λ of the rows and z of the bounds of the right sign (zero with
    probability ``degenerate``: no strict complementarity), and c = −Qx* + Aᵀλ + z, so x* is
    optimal (and the problem bounded whatever the rank of Q).

    Parameters
    ----------
    n, m : int
        Variables and rows (m ≥ 2, n ≥ m + 2).
    seed : int or numpy.random.Generator
        Random seed.
    kind : {"general", "groups"}
        Dense rows of mixed signs (each variable in every row, a tenth of the entries zero), or
        disjoint groups (each variable in at most one row, coefficients ±1, 0.5 or 2, some in none).
    cond, rank : float, int, optional
        Spectrum of Q, as in :func:`psd_matrix`.
    p_bound, infinite, degenerate : float
        As above.
    dependent : bool
        General rows: the last row is a combination of the first two (A keeps rank m − 1).
    zero_row : bool
        General rows: the first row touches only variables fixed at x* (lb = ub), so it vanishes
        once they are fixed.
    duplicates : int
        Pairs of identical variables (same column of Q and A, same c, same bounds, same x*).
    fixed : float
        Fraction of the variables fixed at x* (lb = ub).

    Returns
    -------
    (QP, ndarray)
        The problem (over a ``DenseQ``) and x*, an optimum.
    """
    n = _check_n(n, 4)
    if m < 2 or n < m + 2:
        raise ValueError(f"m: need 2 ≤ m ≤ n − 2, got m = {m}, n = {n}")
    rng = np.random.default_rng(seed)
    Q = psd_matrix(n, seed=rng, cond=cond, rank=rank)
    lb = -rng.uniform(0.2, 2.0, n)
    ub = rng.uniform(0.2, 2.0, n)
    lb[rng.random(n) < infinite] = -np.inf
    ub[rng.random(n) < infinite] = np.inf
    if kind == "groups":
        group = rng.integers(-1, m, n)
        group[:m] = np.arange(m)              # every group has a member
        A = np.zeros((m, n))
        inside = np.flatnonzero(group >= 0)
        A[group[inside], inside] = rng.choice([-1.0, 1.0, 0.5, 2.0], size=inside.size)
    else:
        A = rng.standard_normal((m, n)) * (rng.random((m, n)) >= 0.1)
        if dependent:
            A[-1] = 0.5 * A[0] - 1.5 * A[1]
    fix = rng.random(n) < fixed
    others = np.arange(n)
    if zero_row and kind == "general":
        touch = rng.choice(n, size=max(2, n // 6), replace=False)
        A[0] = 0.0
        A[0, touch] = rng.standard_normal(touch.size)
        fix[touch] = True
        others = np.setdiff1d(others, touch)
    pairs = []
    if duplicates:
        perm = rng.permutation(others)
        for k in range(min(duplicates, perm.size // 2)):
            i, j = int(perm[2 * k]), int(perm[2 * k + 1])
            pairs.append((i, j))
            # the same variable twice: Q's row and column, the rows' column and the bounds
            Q[j, :] = Q[i, :]
            Q[:, j] = Q[:, i]
            Q[j, j] = Q[i, i]
            A[:, j] = A[:, i]
            lb[j], ub[j] = lb[i], ub[i]
            fix[j] = fix[i]
    has_lb, has_ub = np.isfinite(lb), np.isfinite(ub)
    at_bound = rng.random(n) < p_bound
    pick_lower = np.where(has_lb & has_ub, rng.random(n) < 0.5, has_lb)
    at_lower = at_bound & pick_lower & has_lb
    at_upper = at_bound & ~pick_lower & has_ub
    width = np.where(has_lb & has_ub, ub - np.where(has_lb, lb, 0.0), 1.0)
    inner = np.where(has_lb & has_ub, lb + rng.uniform(0.1, 0.9, n) * width,
                     np.where(has_lb, lb + 0.5, np.where(has_ub, ub - 0.5, rng.standard_normal(n))))
    x = np.where(at_lower, lb, np.where(at_upper, ub, inner))
    mag = rng.uniform(0.1, 1.0, n) * (rng.random(n) >= degenerate)
    z = np.where(at_lower, mag, np.where(at_upper, -mag, 0.0))
    for i, j in pairs:
        x[j], z[j] = x[i], z[i]
    lam = rng.standard_normal(m)
    c = -Q @ x + A.T @ lam + z
    for i, j in pairs:
        c[j] = c[i]
    lb[fix], ub[fix] = x[fix], x[fix]
    return QP(DenseQ(Q), c, lb, ub, A, A @ x), x
