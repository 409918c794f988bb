"""The one problem every strategy sees: min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, Ax = b."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore.operators import DenseQ, QOperator

FloatArray = NDArray[np.float64]

__all__ = ["QP", "ProblemError", "as_float_vector"]


class ProblemError(ValueError):
    """Raised when a problem's data is invalid, before any work starts."""


def as_float_vector(value: ArrayLike, name: str, n: int | None = None, *, allow_inf: bool = False) -> FloatArray:
    """Convert ``value`` to a 1-D float64 array, validating dtype, shape and finiteness.

    Parameters
    ----------
    value : array_like
        The input.
    name : str
        Field name used in error messages.
    n : int, optional
        Required length.
    allow_inf : bool
        Whether ±inf entries are allowed (bounds); NaN never is.

    Returns
    -------
    ndarray
        A float64 copy-free view where possible.

    Raises
    ------
    ProblemError
        On a non-numeric dtype, wrong shape, NaN or disallowed infinity.
    """
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise ProblemError(f"{name}: not a regular numeric array ({e})") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
                                   or arr.dtype == np.bool_):
        raise ProblemError(f"{name}: dtype {arr.dtype} is not real numeric; pass a float array")
    if arr.ndim == 0 and n is not None:
        arr = np.full(n, float(arr))
    if arr.ndim != 1:
        raise ProblemError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ProblemError(f"{name}: shape mismatch, expected length {n}, got {arr.shape[0]}")
    out = np.ascontiguousarray(arr, dtype=np.float64)
    if np.isnan(out).any():
        raise ProblemError(f"{name}: contains NaN at index {int(np.flatnonzero(np.isnan(out))[0])}; remove or impute it")
    if not allow_inf and not np.isfinite(out).all():
        raise ProblemError(f"{name}: contains inf at index {int(np.flatnonzero(~np.isfinite(out))[0])}; "
                           "all entries must be finite")
    return out


def _as_operator(Q: Any) -> QOperator:
    if hasattr(Q, "matvec") and hasattr(Q, "rows") and hasattr(Q, "diag"):
        shape = tuple(Q.shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ProblemError(f"Q: not square, shape {shape}; Q must be n×n")
        return Q  # type: ignore[no-any-return]
    return DenseQ(Q)


def _equality_feasible_one_row(a: FloatArray, b: float, lb: FloatArray, ub: FloatArray) -> tuple[float, float]:
    # min/max of aᵀx over the box, exact per-term (0·inf counts as 0).
    pos, neg = a > 0, a < 0
    lo = float((a[pos] * lb[pos]).sum() + (a[neg] * ub[neg]).sum())
    hi = float((a[pos] * ub[pos]).sum() + (a[neg] * lb[neg]).sum())
    return lo, hi


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
        self._check_equality()

    def _check_equality(self) -> None:
        m = self.A.shape[0]
        if m == 0:
            return
        if m == 1:
            lo, hi = _equality_feasible_one_row(self.A[0], float(self.b[0]), self.lb, self.ub)
            slack = 1e-12 * max(1.0, abs(float(self.b[0])), abs(lo) if np.isfinite(lo) else 0.0,
                                abs(hi) if np.isfinite(hi) else 0.0)
            if not (lo - slack <= self.b[0] <= hi + slack):
                raise ProblemError(f"A x = b is infeasible for the bounds: aᵀx ranges over [{lo}, {hi}] "
                                   f"but b = {self.b[0]}; change b or widen the bounds")
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
        for name, value in (("Q", Q), ("c", c), ("lb", lb), ("ub", ub), ("A", A), ("b", b)):
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

    def restrict(self, free: NDArray[np.intp], x: FloatArray) -> QP:
        """Subproblem over ``free`` with the other variables fixed at ``x``.

        Returns a dense QP in the variables ``x[free]``: Q_BB, c_B + Q_BN x_N, the same bounds,
        and A_B x_B = b − A_N x_N.
        """
        free = np.asarray(free, dtype=np.intp)
        rows = self.Q.rows(free)
        QBB = np.array(rows[:, free], dtype=np.float64)
        xN = x.copy()
        xN[free] = 0.0
        cB = self.c[free] + rows @ xN
        AB = self.A[:, free]
        bB = self.b - self.A @ xN
        return QP(DenseQ(0.5 * (QBB + QBB.T)), cB, self.lb[free], self.ub[free], AB, bB)
