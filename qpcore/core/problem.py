"""The one problem every strategy sees: min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, Ax = b, l ≤ Cx ≤ u.

Inequality rows are the user's; a strategy that takes only the box and equality rows sees them
through :meth:`QP.slack_form` (s = Cx as variables bounded by l and u), inside the core.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.capabilities import Products, QOperator
from qpcore.backends.operators import DenseQ
from qpcore.core.validate import InfeasibleProblem, ProblemError, as_float_vector, field

FloatArray = NDArray[np.float64]

__all__ = ["QP", "Equality", "InfeasibleProblem", "ProblemError", "SlackForm", "as_float_vector"]

IndexArray = NDArray[np.intp]
EqualityKind = Literal["none", "groups", "general"]


def _as_operator(Q: Any) -> QOperator:
    if isinstance(Q, QOperator):
        shape = tuple(Q.shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ProblemError(f"{field('Q')}: not square, shape {shape}; Q must be n×n")
        return Q
    import scipy.sparse as sp

    if sp.issparse(Q):
        from qpcore.backends.sparse import SparseQ

        return SparseQ(Q)
    if isinstance(Q, Products):
        raise ProblemError(f"{field('Q')}: {type(Q).__name__} computes products but does not declare the rest of the operator "
                           "contract (qpcore.QOperator: shape, stats, row, capabilities, row_dtype, row_eps, psd); "
                           "subclass qpcore.backends.capabilities.Operator for the defaults")
    return DenseQ(Q)


def _equality_feasible_one_row(a: FloatArray, b: float, lb: FloatArray, ub: FloatArray) -> tuple[float, float]:
    # min/max of aᵀx over the box, exact per-term (0·inf counts as 0).
    pos, neg = a > 0, a < 0
    lo = float((a[pos] * lb[pos]).sum() + (a[neg] * ub[neg]).sum())
    hi = float((a[pos] * ub[pos]).sum() + (a[neg] * lb[neg]).sum())
    return lo, hi


@attrs.frozen(eq=False)
class Equality:
    """The structure of ``A x = b``, recognised once when a :class:`QP` is built.

    Attributes
    ----------
    kind : {"none", "groups", "general"}
        ``"none"``: no rows. ``"groups"``: every column of A has at most one nonzero, so the rows
        split the variables into disjoint groups (one row is always this kind; the SVM family:
        C-SVC has one group, ν-SVC and ν-SVR two). ``"general"``: anything else (dense,
        overlapping rows).
    m : int
        Number of rows.
    group : ndarray of intp
        For ``"groups"``: the row holding each variable's nonzero, −1 where its column is zero
        (the variable is *single*: it can move alone). All −1 for the other kinds.
    coef : ndarray
        For ``"groups"``: each variable's nonzero coefficient (0 where none). Zeros otherwise.
    unit : bool
        ``"groups"`` and every nonzero coefficient is ±1 (what SMO needs).
    """

    kind: EqualityKind
    m: int
    group: IndexArray
    coef: FloatArray
    unit: bool

    @classmethod
    def of(cls, A: FloatArray) -> Equality:
        """Recognise the structure of ``A`` (shape (m, n))."""
        m, n = A.shape
        if m == 0:
            return cls("none", 0, np.full(n, -1, dtype=np.intp), np.zeros(n), False)
        nz = A != 0
        per_col = nz.sum(axis=0)
        if m > 1 and bool((per_col > 1).any()):
            return cls("general", m, np.full(n, -1, dtype=np.intp), np.zeros(n), False)
        inside = per_col == 1
        group = np.where(inside, np.argmax(nz, axis=0), -1).astype(np.intp)
        coef = A.sum(axis=0) if m > 1 else A[0].copy()
        coef = np.where(inside, coef, 0.0)
        unit = bool(np.all(np.abs(coef[inside]) == 1.0))
        return cls("groups", m, group, coef, unit)

    @property
    def group_ids(self) -> IndexArray | None:
        """``group`` when there are several groups, None for at most one (the one-row fast path)."""
        return self.group if self.kind == "groups" and self.m > 1 else None

    def members(self, k: int) -> IndexArray:
        """The variables of group k."""
        out: IndexArray = np.flatnonzero(self.group == k)
        return out

    @property
    def singles(self) -> IndexArray:
        """The variables in no row (kind ``"groups"``; every variable for ``"none"``)."""
        out: IndexArray = np.flatnonzero(self.group < 0)
        return out

    def __repr__(self) -> str:
        # a summary: the arrays have one entry per variable
        n = int(self.group.size)
        if self.kind == "groups":
            singles = int(np.count_nonzero(self.group < 0))
            return f"Equality(kind='groups', m={self.m}, n={n}, unit={self.unit}, singles={singles})"
        return f"Equality(kind={self.kind!r}, m={self.m}, n={n})"

    def describe(self) -> str:
        """A short phrase for error messages ("2 general rows", "1 ±1 group" ...)."""
        if self.kind == "none":
            return "no equality rows"
        if self.kind == "general":
            return f"{self.m} general equality rows (a variable in several rows)"
        unit = "±1 " if self.unit else ""
        return f"{self.m} disjoint {unit}equality group{'s' if self.m > 1 else ''}"


def _optional_array(value: Any) -> FloatArray:
    # None means "no equality"; the shapes are fixed in __attrs_post_init__ once n is known
    if value is None:
        return np.zeros(0)
    import scipy.sparse as sp

    if sp.issparse(value):
        return np.asarray(value.toarray())
    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        # ragged rows: kept as objects, refused with the field's name where it is checked
        return np.asarray(value, dtype=object)


def _row_matrix(value: FloatArray, name: str, n: int, rows: str = "rows") -> FloatArray:
    """A validated (rows, n) float64 matrix from a 1-D row or a 2-D array (0 rows when empty);
    ``name`` is the message's subject (:func:`qpcore.core.validate.field`), ``rows`` the row count's
    letter in it."""
    if value.size == 0 and (value.ndim < 2 or value.shape[-1] in (0, n)):
        return np.zeros((0, n))
    M = value[None, :] if value.ndim == 1 else value
    # the type first: ragged rows arrive as an array of objects, whose shape says nothing
    if M.dtype == object or not (np.issubdtype(M.dtype, np.integer) or np.issubdtype(M.dtype, np.floating)
                                 or M.dtype == np.bool_):
        raise ProblemError(f"{name}: dtype {M.dtype} is not real numeric; pass a float array")
    if M.ndim != 2 or M.shape[1] != n:
        raise ProblemError(f"{name}: expected shape ({rows}, {n}), got {np.shape(value)}")
    out = np.ascontiguousarray(M, dtype=np.float64)
    if not np.isfinite(out).all():
        bad = np.argwhere(~np.isfinite(out))[0]
        what = "NaN" if np.isnan(out[bad[0], bad[1]]) else "inf"
        raise ProblemError(f"{name}: contains {what} at row {int(bad[0])}, column {int(bad[1])}; "
                           "all entries must be finite")
    return out


def _row_ranges(C: FloatArray, lb: FloatArray, ub: FloatArray) -> tuple[FloatArray, FloatArray]:
    """min and max of each row of C x over the box, exact per term (0·inf counts as 0)."""
    pos, neg = np.maximum(C, 0.0), np.minimum(C, 0.0)
    with np.errstate(invalid="ignore"):
        lo_b, hi_b = np.where(np.isfinite(lb), lb, 0.0), np.where(np.isfinite(ub), ub, 0.0)
        lo = pos @ lo_b + neg @ hi_b
        hi = pos @ hi_b + neg @ lo_b
    # an infinite bound met by a nonzero coefficient opens the range on that side
    inf_lo, inf_hi = ~np.isfinite(lb), ~np.isfinite(ub)
    lo = np.where(((C > 0) & inf_lo).any(axis=1) | ((C < 0) & inf_hi).any(axis=1), -np.inf, lo)
    hi = np.where(((C > 0) & inf_hi).any(axis=1) | ((C < 0) & inf_lo).any(axis=1), np.inf, hi)
    return lo, hi


@attrs.frozen(eq=False)
class SlackForm:
    """A problem with inequality rows rewritten over z = [x; s], s = Cx a variable in [l, u].

    ``qp`` has only the box and equality rows ``[[A, 0], [C, −I]] z = [b; 0]``, and the Hessian
    padded with zero rows and columns; its optimum restricted to x is the user problem's optimum,
    its row multipliers are the user's λ and y (the slacks' reduced gradients are y).

    Attributes
    ----------
    qp : QP
        The box-and-equality problem over z (n + k variables, m + k rows).
    n, m, k : int
        The user problem's variables, equality rows and inequality rows.
    """

    qp: QP
    n: int
    m: int
    k: int
    C: FloatArray = attrs.field(repr=False)

    def lift(self, x: FloatArray) -> FloatArray:
        """z = [x; Cx]: the slack-form point of a user point (feasible rows stay feasible)."""
        return np.concatenate([x, self.C @ x])

    def restrict(self, z: FloatArray) -> FloatArray:
        """x, the first n entries of z."""
        return np.asarray(z[:self.n])

    def split(self, multipliers: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(λ, y): the slack form's row multipliers split into the equality and inequality rows'."""
        return np.asarray(multipliers[:self.m]), np.asarray(multipliers[self.m:])


@attrs.frozen(eq=False)
class QP:
    """Convex QP ``min ½xᵀQx + cᵀx  s.t.  lb ≤ x ≤ ub,  A x = b,  l ≤ C x ≤ u``.

    Parameters
    ----------
    Q : QOperator or array_like
        The Hessian, as an operator (``DenseQ``, ``KernelQ``, ...) or a dense square matrix.
    c : array_like
        Linear term, length n.
    lb, ub : array_like or float, optional
        Bounds (may be ±inf); default ``-inf`` and ``+inf``.
    A : array_like, optional
        Equality matrix, shape (m, n) with m small (0 when omitted); a 1-D array is one row.
    b : array_like, optional
        Right-hand side, length m (zeros when omitted).
    C : array_like or scipy.sparse matrix, optional
        Inequality rows, shape (k, n) (0 rows when omitted); a 1-D array is one row. Held dense.
    l, u : array_like, optional
        Their two-sided bounds ``l ≤ C x ≤ u`` (OSQP's convention), length k, ±inf allowed
        (default −inf and +inf); ``l_i = u_i`` makes row i an equality. Strategies that take only
        the box and equality rows see them as slack variables (:meth:`slack_form`); results,
        multipliers and certificates are in these terms.
    check_feasible : bool
        Run the LP feasibility check (HiGHS) for general equality rows and inequality rows on
        construction (default True): an infeasible problem is refused with the LP's verdict before
        any work. False skips it (the row-by-row range checks stay).

    Raises
    ------
    ProblemError
        On NaN/inf, shape mismatch, lb > ub, l > u, non-square Q, wrong dtypes, or rows the bounds
        make infeasible.
    """

    Q: QOperator = attrs.field(converter=_as_operator)
    c: FloatArray = attrs.field()
    lb: FloatArray = attrs.field(default=-np.inf)
    ub: FloatArray = attrs.field(default=np.inf)
    A: FloatArray = attrs.field(default=None, converter=_optional_array)
    b: FloatArray = attrs.field(default=None, converter=_optional_array)
    C: FloatArray = attrs.field(default=None, converter=_optional_array, kw_only=True)
    l: FloatArray = attrs.field(default=None, converter=_optional_array, kw_only=True)
    u: FloatArray = attrs.field(default=None, converter=_optional_array, kw_only=True)
    check_feasible: bool = attrs.field(default=True, kw_only=True, repr=False)
    equality: Equality = attrs.field(init=False)
    _slack: SlackForm | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        n = int(self.Q.shape[0])
        set_ = object.__setattr__
        set_(self, "c", as_float_vector(self.c, field("c"), n))
        set_(self, "lb", as_float_vector(self.lb, field("lb"), n, allow_inf=True))
        set_(self, "ub", as_float_vector(self.ub, field("ub"), n, allow_inf=True))
        if np.any(self.lb == np.inf) or np.any(self.ub == -np.inf):
            raise InfeasibleProblem("the bounds lb/ub: lb = +inf or ub = -inf leaves no feasible point; "
                                    "use finite or open bounds")
        bad = np.flatnonzero(self.lb > self.ub)
        if bad.size:
            i = int(bad[0])
            raise InfeasibleProblem(f"lb > ub at index {i} ({self.lb[i]} > {self.ub[i]}); swap or fix the bounds")
        # A omitted or empty (of any shape) means no equality rows
        A = np.zeros((0, n)) if self.A.size == 0 else _row_matrix(self.A, field("A"), n, "m")
        set_(self, "A", A)
        m = A.shape[0]
        b = np.zeros(m) if self.b.size == 0 else as_float_vector(np.atleast_1d(self.b), field("b"), m)
        set_(self, "b", b)
        set_(self, "equality", Equality.of(A))
        C = _row_matrix(self.C, field("C"), n, "k")
        set_(self, "C", C)
        k = C.shape[0]
        lo = (np.full(k, -np.inf) if self.l.size == 0
              else as_float_vector(np.atleast_1d(self.l), field("l"), k, allow_inf=True))
        hi = (np.full(k, np.inf) if self.u.size == 0
              else as_float_vector(np.atleast_1d(self.u), field("u"), k, allow_inf=True))
        set_(self, "l", lo)
        set_(self, "u", hi)
        set_(self, "_slack", None)
        if k:
            self._check_rows()
        if self.equality.kind != "general" and not k:
            self._check_equality()
        elif self.check_feasible:
            self._check_lp()
        elif self.equality.kind == "groups":
            self._check_equality()

    def __repr__(self) -> str:
        # a summary (sizes, kinds, counts) instead of every array: a problem can have millions of variables
        lb, ub = self.lb, self.ub
        bounds = (f"{int(np.count_nonzero(np.isfinite(lb)))} finite lb, {int(np.count_nonzero(np.isfinite(ub)))} "
                  f"finite ub, {int(np.count_nonzero(lb == ub))} fixed")
        rows = f", k={self.k} inequality rows" if self.k else ""
        return (f"QP(n={self.n}, Q={type(self.Q).__name__}, m={self.m} ({self.equality.describe()}){rows}, "
                f"bounds: {bounds})")

    def _check_rows(self) -> None:
        bad = np.flatnonzero(self.l > self.u)
        if bad.size:
            i = int(bad[0])
            raise InfeasibleProblem(f"l > u at row {i} of C ({self.l[i]} > {self.u[i]}); swap or fix the row's bounds")
        if np.any(self.l == np.inf) or np.any(self.u == -np.inf):
            i = int(np.flatnonzero((self.l == np.inf) | (self.u == -np.inf))[0])
            raise InfeasibleProblem(f"the inequality rows' sides l/u at row {i} of C: l = +inf or u = -inf leaves "
                                    "no feasible point")
        lo, hi = _row_ranges(self.C, self.lb, self.ub)
        scale = 1e-12 * np.maximum(1.0, np.maximum(np.where(np.isfinite(lo), np.abs(lo), 0.0),
                                                   np.where(np.isfinite(hi), np.abs(hi), 0.0)))
        out = np.flatnonzero((hi < self.l - scale) | (lo > self.u + scale))
        if out.size:
            i = int(out[0])
            raise InfeasibleProblem(f"l ≤ C x ≤ u is infeasible for the bounds: row {i} of C x ranges over "
                               f"[{lo[i]}, {hi[i]}] but must lie in [{self.l[i]}, {self.u[i]}]; "
                               "change the row's bounds or widen the variables'")

    def _check_equality(self) -> None:
        m = self.A.shape[0]
        if m == 0:
            return
        if self.equality.kind == "groups":
            # disjoint rows are feasible row by row: each ranges over an interval of its own
            for k in range(m):
                lo, hi = _equality_feasible_one_row(self.A[k], float(self.b[k]), self.lb, self.ub)
                slack = 1e-12 * max(1.0, abs(float(self.b[k])), abs(lo) if np.isfinite(lo) else 0.0,
                                    abs(hi) if np.isfinite(hi) else 0.0)
                if not (lo - slack <= self.b[k] <= hi + slack):
                    row = "aᵀx" if m == 1 else f"row {k} of A x"
                    raise InfeasibleProblem(f"A x = b is infeasible for the bounds: {row} ranges over [{lo}, {hi}] "
                                       f"but b = {self.b[k]}; change b or widen the bounds")
            return
        self._check_lp()

    def _check_lp(self) -> None:
        """The feasibility LP over the box, the equality rows and the inequality rows (HiGHS)."""
        from scipy.optimize import linprog

        bounds = np.column_stack([np.where(np.isfinite(self.lb), self.lb, np.nan),
                                  np.where(np.isfinite(self.ub), self.ub, np.nan)])
        bounds_list = [(None if np.isnan(a) else float(a), None if np.isnan(b) else float(b)) for a, b in bounds]
        up, lo = np.isfinite(self.u), np.isfinite(self.l)
        A_ub = np.vstack([self.C[up], -self.C[lo]]) if self.k else None
        b_ub = np.concatenate([self.u[up], -self.l[lo]]) if self.k else None
        res = linprog(np.zeros(self.n), A_ub=A_ub, b_ub=b_ub, A_eq=self.A if self.m else None,
                      b_eq=self.b if self.m else None, bounds=bounds_list, method="highs")
        # status 2 also carries HiGHS's "model error", which is no verdict: only its word "infeasible" is
        if res.status == 2 and "infeasible" in str(res.message).lower():
            rows = " and l ≤ C x ≤ u" if self.k else ""
            raise InfeasibleProblem(f"A x = b{rows} is infeasible for the bounds (the feasibility LP, solved by HiGHS, "
                               f"has no solution: {res.message.strip()}); change the rows or the bounds")

    @classmethod
    def trusted(cls, Q: QOperator, c: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray,
                b: FloatArray) -> QP:
        """A QP from arrays the caller built valid (float64, right shapes, finite, lb ≤ ub, the
        equality feasible), unchecked.

        For inner loops that build a small subproblem every round by construction (the cutting
        planes' reduced problem), where the checks would cost more than the solve.
        """
        obj = cls.__new__(cls)
        n = int(Q.shape[0])
        for name, value in (("Q", Q), ("c", c), ("lb", lb), ("ub", ub), ("A", A), ("b", b),
                            ("C", np.zeros((0, n))), ("l", np.zeros(0)), ("u", np.zeros(0)),
                            ("check_feasible", False), ("equality", Equality.of(A)), ("_slack", None)):
            object.__setattr__(obj, name, value)
        return obj

    @property
    def n(self) -> int:
        """Number of variables."""
        return int(self.Q.shape[0])

    @property
    def m(self) -> int:
        """Number of equality rows."""
        return int(self.A.shape[0])

    @property
    def k(self) -> int:
        """Number of inequality rows ``l ≤ C x ≤ u``."""
        return int(self.C.shape[0])

    def slack_form(self) -> SlackForm:
        """The problem over z = [x; s] with s = C x a bounded variable: box and equality rows only.

        What a strategy that does not take inequality rows solves (``qpcore.solve`` does the
        rewriting and maps the result back). Built once and kept.

        Returns
        -------
        SlackForm
        """
        if self._slack is not None:
            return self._slack
        from qpcore.backends.operators import DenseQ
        from qpcore.backends.sparse import PaddedQ

        n, m, k = self.n, self.m, self.k
        Q: QOperator
        if isinstance(self.Q, DenseQ) and n + k <= 4000:
            # strategies have fast paths for a dense matrix: pad it
            M = np.zeros((n + k, n + k))
            M[:n, :n] = self.Q.M
            dense = DenseQ.trusted(M)
            dense.psd = self.Q.psd
            Q = dense
        else:
            Q = PaddedQ(self.Q, k)
        A = np.zeros((m + k, n + k))
        A[:m, :n] = self.A
        A[m:, :n] = self.C
        A[m:, n:] = -np.eye(k)
        qp = QP.trusted(Q, np.concatenate([self.c, np.zeros(k)]), np.concatenate([self.lb, self.l]),
                        np.concatenate([self.ub, self.u]), A, np.concatenate([self.b, np.zeros(k)]))
        form = SlackForm(qp=qp, n=n, m=m, k=k, C=self.C)
        object.__setattr__(self, "_slack", form)
        return form

    def objective(self, x: FloatArray) -> float:
        """Objective ½xᵀQx + cᵀx (one matvec)."""
        return float(0.5 * x @ self.Q.matvec(x) + self.c @ x)

    def gradient(self, x: FloatArray) -> FloatArray:
        """Gradient Qx + c (one matvec)."""
        return self.Q.matvec(x) + self.c
