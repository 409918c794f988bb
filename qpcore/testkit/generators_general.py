"""Seeded generators of general convex QPs: several equality rows and two-sided inequality rows.

The problems have the form ::

    minimize   ½ xᵀQx + cᵀx
    subject to lb ≤ x ≤ ub,   A x = b,   l ≤ C x ≤ u

and are **feasible by construction**: a point x̂ is drawn first, then the rows and the bounds
around it (b = A x̂; each inequality row active at x̂, an equality l = u = (C x̂)_j, or inactive
with room on both sides). With ``planted=True`` (the default) x̂ is also the optimum: multipliers
of the right signs are drawn for the constraints active at x̂ (zero with probability
``degenerate``: no strict complementarity), and ::

    c = −Q x̂ + Aᵀλ + Cᵀy + z

so that x̂ satisfies the KKT conditions in qpcore's sign convention (stationarity
``Qx + c − Aᵀλ − Cᵀy − z = 0``; z ≥ 0 at a lower bound, ≤ 0 at an upper one, 0 for a free
variable; y ≥ 0 on a row with C x = l, ≤ 0 on one with C x = u, 0 on an inactive row, any sign
when l = u). A planted problem is bounded whatever the rank of Q, and tests can check an answer
against the known optimum without a reference solver.

What can be drawn (:func:`planted_general_qp`): overlapping equality rows (each variable in
several rows), duplicated rows (exact copies, or negated), rank-deficient rows (a row a
combination of two others), the same for the inequality rows; one-sided, two-sided, free and
equality inequality rows; fixed variables (lb = ub), free variables (no finite bound); more
constraints active at the optimum than there are variables (``crowded``); Q positive
semidefinite of any rank and condition number (:func:`qpcore.testkit.generators.psd_matrix`); rows and
columns scaled over many decades (``row_decades``, ``col_decades``: the problem in x' = x / D with
the rows multiplied by r, all of it recomputed so that the construction stays exact to rounding).

The result is a :class:`GeneralQP` (the arrays, the drawn point and, when planted, the
:class:`Optimum`), which builds a :class:`qpcore.QP` with :meth:`GeneralQP.qp`: with its
inequality rows as ``C``, ``l``, ``u`` where :class:`qpcore.QP` takes them, else in slack form
(variables [x; s], rows ``[[A, 0], [C, −I]] [x; s] = [b; 0]``, s bounded by l and u).
numpy and scipy only, like :mod:`qpcore.testkit.generators`.
"""

from __future__ import annotations

from typing import Literal

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.testkit.generators import Seed, psd_matrix
from qpcore.backends.operators import DenseQ
from qpcore.core.problem import QP, ProblemError
from qpcore.core.validate import as_integer
from qpcore.testkit.points import _check_fraction

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
Form = Literal["auto", "rows", "slack"]

__all__ = ["Form", "GeneralQP", "Optimum", "planted_general_qp"]


@attrs.frozen(eq=False)
class Optimum:
    """A known optimal point and multipliers in qpcore's sign convention.

    Attributes
    ----------
    x : ndarray
        The optimal point (length n).
    lam : ndarray
        Multipliers of A x = b (length m), any sign.
    y : ndarray
        Multipliers of l ≤ C x ≤ u (length k): ≥ 0 where C x = l, ≤ 0 where C x = u, 0 on
        inactive rows, any sign where l = u.
    z : ndarray
        Bound multipliers (length n): ≥ 0 at lb, ≤ 0 at ub, 0 for variables off their bounds,
        any sign for fixed variables.
    """

    x: FloatArray
    lam: FloatArray
    y: FloatArray
    z: FloatArray


@attrs.frozen(eq=False)
class GeneralQP:
    """The arrays of a general convex QP, the feasible point it was drawn around, and its optimum.

    ``min ½xᵀQx + cᵀx  s.t.  lb ≤ x ≤ ub,  A x = b,  l ≤ C x ≤ u`` (Q dense, PSD).

    Attributes
    ----------
    Q, c, lb, ub, A, b, C, l, u : ndarray
        The problem (A of shape (m, n), C of shape (k, n); bounds may be ±inf).
    point : ndarray
        A feasible point (the one the rows and bounds were drawn around).
    optimum : Optimum or None
        The planted optimum (``point`` with its multipliers), None when c was drawn at random.
    features : dict of str to int
        What the draw contains, counted: ``fixed``, ``free`` (variables with no finite bound),
        ``active_bounds``,
        ``active_rows`` (inequality rows active at ``point``, equality rows l = u included),
        ``equality_rows`` (l = u), ``free_rows`` (l = −inf, u = inf), ``duplicate_rows``,
        ``dependent_rows`` (of A), ``duplicate_ineq``, ``dependent_ineq`` (of C), ``degenerate``
        (active constraints with a zero multiplier, planted only), ``active`` (m plus all active
        bounds and inequality rows: more than n when the optimum is over-determined).
    """

    Q: FloatArray
    c: FloatArray
    lb: FloatArray
    ub: FloatArray
    A: FloatArray
    b: FloatArray
    C: FloatArray
    l: FloatArray
    u: FloatArray
    point: FloatArray
    optimum: Optimum | None = None
    features: dict[str, int] = attrs.field(factory=dict)

    @property
    def n(self) -> int:
        """Number of variables."""
        return int(self.c.shape[0])

    @property
    def m(self) -> int:
        """Number of equality rows."""
        return int(self.A.shape[0])

    @property
    def k(self) -> int:
        """Number of inequality rows."""
        return int(self.C.shape[0])

    def objective(self, x: FloatArray) -> float:
        """½xᵀQx + cᵀx."""
        return float(0.5 * x @ (self.Q @ x) + self.c @ x)

    def violation(self, x: FloatArray) -> float:
        """The largest violation of the bounds, of A x = b and of l ≤ C x ≤ u (∞-norm, absolute)."""
        v = float(np.maximum(np.maximum(self.lb - x, x - self.ub), 0.0).max(initial=0.0))
        if self.m:
            v = max(v, float(np.abs(self.A @ x - self.b).max()))
        if self.k:
            Cx = self.C @ x
            v = max(v, float(np.maximum(np.maximum(self.l - Cx, Cx - self.u), 0.0).max()))
        return v

    def violation_scale(self, x: FloatArray) -> float:
        """The size of the terms that rounding in :meth:`violation` is relative to:
        max(1, ‖x‖∞, ‖b‖∞, max_i Σ_j |A_ij x_j|, the finite ends of l and u, max_i Σ_j |C_ij x_j|)."""
        s = max(1.0, float(np.abs(x).max(initial=0.0)))
        if self.m:
            s = max(s, float(np.abs(self.b).max()), float((np.abs(self.A) @ np.abs(x)).max()))
        if self.k:
            ends = np.concatenate([self.l[np.isfinite(self.l)], self.u[np.isfinite(self.u)]])
            s = max(s, float(np.abs(ends).max(initial=0.0)), float((np.abs(self.C) @ np.abs(x)).max()))
        return s

    def qp(self, form: Form = "auto") -> QP:
        """The problem as a :class:`qpcore.QP` over a :class:`qpcore.DenseQ`.

        Parameters
        ----------
        form : {"auto", "rows", "slack"}
            ``"rows"`` and ``"auto"``: the inequality rows as ``C``, ``l``, ``u``; ``"slack"``: the
            core's slack form (:meth:`qpcore.QP.slack_form`: over [x; s] with s = C x a variable
            bounded by l and u). Without inequality rows every form is the same problem.

        Returns
        -------
        QP
        """
        if form not in ("auto", "rows", "slack"):
            raise ValueError(f"form: choose 'auto', 'rows' or 'slack', got {form!r}")
        if self.k == 0:
            return QP(DenseQ(self.Q), self.c, self.lb, self.ub, self.A, self.b)
        qp = QP(DenseQ(self.Q), self.c, self.lb, self.ub, self.A, self.b, C=self.C, l=self.l, u=self.u)
        return qp.slack_form().qp if form == "slack" else qp

    def in_form(self, x: FloatArray, form: Form = "auto") -> FloatArray:
        """A point x of this problem as a point of ``self.qp(form)``: x itself, or [x; C x] in slack form."""
        if self.k == 0 or form != "slack":
            return np.asarray(x, dtype=np.float64)
        return np.concatenate([x, self.C @ x])


def _check_count(value: int, name: str, low: int, high: int) -> int:
    count = as_integer(value, name, low=low)
    if count > high:
        raise ProblemError(f"{name}: expected an integer in [{low}, {high}], got {value!r}")
    return count


def _rows(count: int, duplicates: int, dependent: int, n: int, rng: np.random.Generator,
          name: str) -> tuple[FloatArray, NDArray[np.intp], FloatArray]:
    """``count`` rows: base rows (dense Gaussian, each with a random share of zeros but never all
    zero), then ``duplicates`` copies of base rows times ±1 (exact) and ``dependent`` random
    combinations of two base rows; shuffled. Returns the rows, the base row each copy comes from
    (−1 for base and dependent rows) and its factor (±1; 0 where not a copy)."""
    base = count - duplicates - dependent
    if count and base < 1:
        raise ValueError(f"{name}: duplicates + dependent rows must leave at least one independent row "
                         f"({duplicates} + {dependent} of {count})")
    R = rng.standard_normal((count, n))
    density = rng.uniform(0.3, 1.0, base)
    for i in range(base):
        keep = rng.random(n) < density[i]
        keep[rng.integers(n)] = True
        R[i] *= keep
    source = np.full(count, -1, dtype=np.intp)
    factor = np.zeros(count)
    for i in range(base, base + duplicates):
        source[i] = int(rng.integers(base))
        factor[i] = float(rng.choice([-1.0, 1.0]))
        R[i] = factor[i] * R[source[i]]
    for i in range(base + duplicates, count):
        if base >= 2:
            p, q = rng.choice(base, size=2, replace=False)
            R[i] = rng.standard_normal() * R[p] + rng.standard_normal() * R[q]
        else:
            R[i] = (0.5 + rng.random()) * R[0]
    perm = rng.permutation(count)
    inverse = np.argsort(perm)
    source = np.where(source[perm] >= 0, inverse[np.maximum(source[perm], 0)], -1).astype(np.intp)
    return R[perm], source, factor[perm]


# status codes of variables and inequality rows at the drawn point
_INNER, _LOWER, _UPPER, _FIXED, _FREE = 0, 1, 2, 3, 4


def _signed(status: NDArray[np.intp], rng: np.random.Generator, degenerate: float) -> FloatArray:
    """Multipliers by status: U(0.1, 1) at a lower side, its negative at an upper side, N(0, 1)
    where fixed (l = u, lb = ub), 0 elsewhere; each active one 0 with probability ``degenerate``."""
    mag = rng.uniform(0.1, 1.0, status.size)
    out = np.where(status == _LOWER, mag, np.where(status == _UPPER, -mag, 0.0))
    out = np.where(status == _FIXED, rng.standard_normal(status.size), out)
    zero = rng.random(status.size) < degenerate
    return np.where(zero, 0.0, out)


def planted_general_qp(n: int, m: int = 2, k: int = 4, *, seed: Seed, cond: float = 1.0, rank: int | None = None,
                       p_bound: float = 0.3, p_active: float = 0.5, degenerate: float = 0.0, free: float = 0.1,
                       fixed: float = 0.0, infinite: float = 0.2, equalities: float = 0.1, duplicate_rows: int = 0,
                       dependent_rows: int = 0, duplicate_ineq: int = 0, dependent_ineq: int = 0,
                       crowded: bool = False, row_decades: float = 0.0, col_decades: float = 0.0,
                       planted: bool = True) -> GeneralQP:
    """A general convex QP drawn around a feasible point, by default its known optimum.

    Parameters
    ----------
    n : int
        Number of variables (≥ 1).
    m : int
        Number of equality rows A x = b (dense Gaussian rows, a random share of zeros in each, so
        that they overlap).
    k : int
        Number of inequality rows l ≤ C x ≤ u (more with ``crowded``).
    seed : int or numpy.random.Generator
        Random seed.
    cond, rank : float, int, optional
        Spectrum of Q before scaling, as in :func:`qpcore.testkit.generators.psd_matrix` (largest
        eigenvalue 1; ``rank`` < n: PSD and singular).
    p_bound : float
        Probability that a variable is at one of its bounds at the point.
    p_active : float
        Probability that an inequality row (not an equality) is active at the point, at its
        lower or upper side.
    degenerate : float
        Probability that an active bound or row has a zero multiplier (planted only).
    free : float
        Probability that a variable has no finite bound.
    fixed : float
        Probability that a variable is fixed (lb = ub) at its value in the point.
    infinite : float
        Probability that a side of a bound or row that is not active is infinite (a one-sided
        bound or row; both sides of an inactive row: a free row).
    equalities : float
        Probability that an inequality row is an equality l = u.
    duplicate_rows, dependent_rows : int
        Rows of A that are copies (±1 times) of others, or combinations of two others (A keeps
        rank m − dependent − duplicate at most).
    duplicate_ineq, dependent_ineq : int
        The same for C. A copy keeps its source's status (the side flips with a negative factor),
        so two rows are active together.
    crowded : bool
        Append active inequality rows until more constraints are active at the point than there
        are variables (m + active bounds + active rows > n): a degenerate vertex.
    row_decades, col_decades : float
        Scale row i of A and C by 10^e_i and variable j by 10^f_j (the problem in x'_j =
        x_j / 10^f_j), e and f uniform over a span of this many decades centered on 0.
    planted : bool
        Plant the optimum at the point (c from the KKT conditions). False draws c at random
        (needs Q positive definite, ``rank`` None or n, so the problem stays bounded); the point
        is then only feasible and ``optimum`` is None.

    Returns
    -------
    GeneralQP
        Its :meth:`GeneralQP.qp` is a valid :class:`qpcore.QP`.
    """
    n = _check_count(n, "n", 1, 1 << 30)
    m = _check_count(m, "m", 0, 1 << 30)
    k = _check_count(k, "k", 0, 1 << 30)
    duplicate_rows = _check_count(duplicate_rows, "duplicate_rows", 0, m)
    dependent_rows = _check_count(dependent_rows, "dependent_rows", 0, m)
    duplicate_ineq = _check_count(duplicate_ineq, "duplicate_ineq", 0, k)
    dependent_ineq = _check_count(dependent_ineq, "dependent_ineq", 0, k)
    p_bound, p_active = _check_fraction(p_bound, "p_bound"), _check_fraction(p_active, "p_active")
    degenerate, infinite = _check_fraction(degenerate, "degenerate"), _check_fraction(infinite, "infinite")
    free, fixed = _check_fraction(free, "free"), _check_fraction(fixed, "fixed")
    equalities = _check_fraction(equalities, "equalities")
    if free + fixed + p_bound > 1.0 + 1e-12:
        raise ValueError(f"free + fixed + p_bound: must be at most 1, got {free + fixed + p_bound!r}")
    for name, span in (("row_decades", row_decades), ("col_decades", col_decades)):
        if not (np.isfinite(span) and 0.0 <= span <= 30.0):
            raise ValueError(f"{name}: must lie in [0, 30], got {span!r}")
    if not planted and rank is not None and rank < n:
        raise ValueError("planted=False draws c at random, which needs Q positive definite (rank None or n)")
    rng = np.random.default_rng(seed)
    Q = psd_matrix(n, seed=rng, cond=cond, rank=rank)

    # the point and the bounds around it
    x = rng.standard_normal(n)
    p = np.array([fixed, free, 0.5 * p_bound, 0.5 * p_bound, max(0.0, 1.0 - fixed - free - p_bound)])
    status = rng.choice([_FIXED, _FREE, _LOWER, _UPPER, _INNER], size=n, p=p / p.sum()).astype(np.intp)
    lb = np.where(rng.random(n) < infinite, -np.inf, x - rng.uniform(0.1, 2.0, n))
    ub = np.where(rng.random(n) < infinite, np.inf, x + rng.uniform(0.1, 2.0, n))
    lb = np.where((status == _LOWER) | (status == _FIXED), x, np.where(status == _FREE, -np.inf, lb))
    ub = np.where((status == _UPPER) | (status == _FIXED), x, np.where(status == _FREE, np.inf, ub))

    # the rows: A, then C with each row's status (copies keep their source's, flipped by a −1)
    A, _, _ = _rows(m, duplicate_rows, dependent_rows, n, rng, "A")
    C, source, factor = _rows(k, duplicate_ineq, dependent_ineq, n, rng, "C")
    u_row = rng.random(k)
    row_status = np.where(u_row < equalities, _FIXED,
                          np.where(u_row < equalities + (1.0 - equalities) * p_active,
                                   np.where(rng.random(k) < 0.5, _LOWER, _UPPER), _INNER)).astype(np.intp)
    flip = {_LOWER: _UPPER, _UPPER: _LOWER}
    for i in np.flatnonzero(source >= 0):
        st = int(row_status[source[i]])
        row_status[i] = flip.get(st, st) if factor[i] < 0 else st
    if crowded:
        active = m + int(np.sum(status != _INNER) - np.sum(status == _FREE)) + int(np.sum(row_status != _INNER))
        extra = max(0, n + 1 - active) + int(rng.integers(0, 3))
        if extra:
            C = np.vstack([C, rng.standard_normal((extra, n))])
            row_status = np.concatenate([row_status, np.where(rng.random(extra) < 0.5, _LOWER, _UPPER)]).astype(np.intp)
            source = np.concatenate([source, np.full(extra, -1, dtype=np.intp)])
    k = C.shape[0]
    gap_l = np.where(rng.random(k) < infinite, np.inf, rng.uniform(0.1, 2.0, k))
    gap_u = np.where(rng.random(k) < infinite, np.inf, rng.uniform(0.1, 2.0, k))
    gap_l = np.where((row_status == _LOWER) | (row_status == _FIXED), 0.0, gap_l)
    gap_u = np.where((row_status == _UPPER) | (row_status == _FIXED), 0.0, gap_u)

    lam = rng.standard_normal(m)
    y = _signed(row_status, rng, degenerate)
    z = _signed(np.where(status == _FREE, _INNER, status).astype(np.intp), rng, degenerate)
    c0 = rng.standard_normal(n)

    # scaling: the problem in x' = x / D with the rows times r (A, b, λ) and s (C, l, u, y); the
    # bounds and the rows' right-hand sides are recomputed from the scaled point, so that
    # "active" stays exact whatever the scales
    D = 10.0 ** rng.uniform(-0.5 * col_decades, 0.5 * col_decades, n)
    r = 10.0 ** rng.uniform(-0.5 * row_decades, 0.5 * row_decades, m)
    s = 10.0 ** rng.uniform(-0.5 * row_decades, 0.5 * row_decades, k)
    Qs = D[:, None] * Q * D[None, :]
    Qs = 0.5 * (Qs + Qs.T)
    xs = x / D
    lbs, ubs = lb / D, ub / D      # = xs exactly where a bound is active (the same division)
    As = r[:, None] * A * D[None, :]
    Cs = s[:, None] * C * D[None, :]
    b = As @ xs
    v = Cs @ xs
    l = v - s * gap_l
    u = v + s * gap_u
    lam_s, y_s, z_s = lam / r, y / s, z * D
    if planted:
        c = -(Qs @ xs) + As.T @ lam_s + Cs.T @ y_s + z_s
        optimum: Optimum | None = Optimum(x=xs, lam=lam_s, y=y_s, z=z_s)
    else:
        c = D * c0
        optimum = None

    active_bounds = int(np.sum((status == _LOWER) | (status == _UPPER) | (status == _FIXED)))
    active_rows = int(np.sum(row_status != _INNER))
    zero_mult = int(np.sum((z == 0) & (status != _INNER) & (status != _FREE))) + int(np.sum((y == 0) & (row_status != _INNER)))
    features = {
        "fixed": int(np.sum(status == _FIXED)), "free": int(np.sum(np.isinf(lbs) & np.isinf(ubs))),
        "active_bounds": active_bounds, "active_rows": active_rows,
        "equality_rows": int(np.sum(row_status == _FIXED)),
        "free_rows": int(np.sum(np.isinf(l) & np.isinf(u))),
        "duplicate_rows": duplicate_rows, "dependent_rows": dependent_rows,
        "duplicate_ineq": duplicate_ineq, "dependent_ineq": dependent_ineq,
        "degenerate": zero_mult if planted else 0,
        "active": m + active_bounds + active_rows,
    }
    return GeneralQP(Q=Qs, c=c, lb=lbs, ub=ubs, A=As, b=b, C=Cs, l=l, u=u, point=xs, optimum=optimum,
                     features=features)
