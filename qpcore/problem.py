"""The one problem every strategy sees: min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, Ax = b."""

from __future__ import annotations

from typing import Any, Literal

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.capabilities import Products, QOperator
from qpcore.operators import DenseQ
from qpcore.validate import ProblemError, as_float_vector

FloatArray = NDArray[np.float64]

__all__ = ["QP", "Equality", "ProblemError", "as_float_vector"]

IndexArray = NDArray[np.intp]
EqualityKind = Literal["none", "groups", "general"]


def _as_operator(Q: Any) -> QOperator:
    if isinstance(Q, QOperator):
        shape = tuple(Q.shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ProblemError(f"Q: not square, shape {shape}; Q must be n×n")
        return Q
    if isinstance(Q, Products):
        raise ProblemError(f"Q: {type(Q).__name__} computes products but does not declare the rest of the operator "
                           "contract (qpcore.QOperator: shape, stats, row, capabilities, row_dtype, row_eps, psd); "
                           "subclass qpcore.capabilities.Operator for the defaults")
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

    def describe(self) -> str:
        """A short phrase for error messages ("2 general rows", "1 ±1 group" ...)."""
        if self.kind == "none":
            return "no equality rows"
        if self.kind == "general":
            return f"{self.m} general equality rows (a variable in several rows)"
        unit = "±1 " if self.unit else ""
        return f"{self.m} disjoint {unit}equality group{'s' if self.m > 1 else ''}"


def _optional_array(value: ArrayLike | None) -> FloatArray:
    # None means "no equality"; the shapes are fixed in __attrs_post_init__ once n is known
    return np.zeros(0) if value is None else np.asarray(value)


@attrs.frozen(eq=False)
class QP:
    """Convex QP ``min ½xᵀQx + cᵀx  s.t.  lb ≤ x ≤ ub,  A x = b``.

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

    Raises
    ------
    ProblemError
        On NaN/inf, shape mismatch, lb > ub, non-square Q, wrong dtypes, or an equality the
        bounds make infeasible.
    """

    Q: QOperator = attrs.field(converter=_as_operator)
    c: FloatArray = attrs.field()
    lb: FloatArray = attrs.field(default=-np.inf)
    ub: FloatArray = attrs.field(default=np.inf)
    A: FloatArray = attrs.field(default=None, converter=_optional_array)
    b: FloatArray = attrs.field(default=None, converter=_optional_array)
    equality: Equality = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        n = int(self.Q.shape[0])
        set_ = object.__setattr__
        set_(self, "c", as_float_vector(self.c, "c", n))
        set_(self, "lb", as_float_vector(self.lb, "lb", n, allow_inf=True))
        set_(self, "ub", as_float_vector(self.ub, "ub", n, allow_inf=True))
        if np.any(self.lb == np.inf) or np.any(self.ub == -np.inf):
            raise ProblemError("lb/ub: lb = +inf or ub = -inf leaves no feasible point; use finite or open bounds")
        bad = np.flatnonzero(self.lb > self.ub)
        if bad.size:
            i = int(bad[0])
            raise ProblemError(f"lb > ub at index {i} ({self.lb[i]} > {self.ub[i]}); swap or fix the bounds")
        if self.A.size == 0:
            A = np.zeros((0, n))
        else:
            A = np.asarray(self.A)
            if A.ndim == 1:
                A = A[None, :]
            if A.ndim != 2 or A.shape[1] != n:
                raise ProblemError(f"A: shape mismatch, expected (m, {n}), got {np.shape(self.A)}")
            A = np.vstack([as_float_vector(row, "A", n) for row in A]) if A.shape[0] else np.zeros((0, n))
        set_(self, "A", A)
        m = A.shape[0]
        b = np.zeros(m) if self.b.size == 0 else as_float_vector(np.atleast_1d(np.asarray(self.b)), "b", m)
        set_(self, "b", b)
        set_(self, "equality", Equality.of(A))
        self._check_equality()

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
                    raise ProblemError(f"A x = b is infeasible for the bounds: {row} ranges over [{lo}, {hi}] "
                                       f"but b = {self.b[k]}; change b or widen the bounds")
            return
        from scipy.optimize import linprog

        bounds = [(None if not np.isfinite(lo) else lo, None if not np.isfinite(hi) else hi)
                  for lo, hi in zip(self.lb, self.ub)]
        res = linprog(np.zeros(self.n), A_eq=self.A, b_eq=self.b, bounds=bounds, method="highs")
        if res.status == 2:
            raise ProblemError("A x = b is infeasible for the bounds (LP feasibility check); change b or the bounds")

    @classmethod
    def trusted(cls, Q: QOperator, c: FloatArray, lb: FloatArray, ub: FloatArray, A: FloatArray,
                b: FloatArray) -> QP:
        """A QP from arrays the caller built valid (float64, right shapes, finite, lb ≤ ub, the
        equality feasible), unchecked.

        For inner loops that build a small subproblem every round by construction (the cutting
        planes' reduced problem), where the checks would cost more than the solve.
        """
        obj = cls.__new__(cls)
        for name, value in (("Q", Q), ("c", c), ("lb", lb), ("ub", ub), ("A", A), ("b", b),
                            ("equality", Equality.of(A))):
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

    def objective(self, x: FloatArray) -> float:
        """Objective ½xᵀQx + cᵀx (one matvec)."""
        return float(0.5 * x @ self.Q.matvec(x) + self.c @ x)

    def gradient(self, x: FloatArray) -> FloatArray:
        """Gradient Qx + c (one matvec)."""
        return self.Q.matvec(x) + self.c
