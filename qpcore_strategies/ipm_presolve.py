"""The interior point method's data, made ready: presolve and Ruiz equilibration.

The engine (:class:`qpcore_strategies.ipm_core.IPMCore`) takes the problem in the user's form::

    minimize ½xᵀQx + cᵀx   subject to   lb ≤ x ≤ ub,   A x = b,   l ≤ C x ≤ u

with each matrix a dense ndarray or a scipy.sparse matrix; the few operations it needs of them
(products, row and column maxima, scalings, column and row selections) are written here once for
both kinds. Before the iterations:

- :func:`presolve` eliminates the fixed variables (lb = ub), moves the rows with l = u into
  A x = b, drops the rows with no finite end and the empty rows, and reports an empty row that no
  point satisfies (its own Farkas certificate);
- :func:`ruiz` equilibrates the KKT matrix [[Q, Aᵀ, Cᵀ], [A, 0, 0], [C, 0, 0]] to unit row norms,
  then scales the cost; the engine maps every output back to the user's units.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

__all__ = ["Presolved", "presolve", "ruiz"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


# --------------------------------------------------------------------------------------------
# Matrices: dense ndarray or scipy.sparse, the same few operations
# --------------------------------------------------------------------------------------------

def _is_sparse(M: Any) -> bool:
    return bool(sp.issparse(M))


def _nnz(M: Any) -> int:
    return int(M.nnz) if _is_sparse(M) else int(np.count_nonzero(M))


def _as_2d(M: Any, rows: int | None, n: int, name: str) -> Any:
    """A (rows, n) float64 matrix: csr when sparse, ndarray otherwise; (0, n) for None."""
    if M is None:
        return np.zeros((0, n))
    if _is_sparse(M):
        out = sp.csr_matrix(M, dtype=np.float64)
    else:
        out = np.atleast_2d(np.asarray(M, dtype=np.float64))
        if out.size == 0:
            out = np.zeros((0, n))
    if out.shape[1] != n or (rows is not None and out.shape[0] != rows):
        raise ValueError(f"{name}: shape {out.shape} does not match n = {n}")
    return out


def _abs_max_cols(M: Any) -> FloatArray:
    if M.shape[0] == 0:
        return np.zeros(M.shape[1])
    if _is_sparse(M):
        out = np.zeros(M.shape[1])
        np.maximum.at(out, M.indices, np.abs(M.data))
        return out
    return np.asarray(np.abs(M).max(axis=0), dtype=np.float64)


def _abs_max_rows(M: Any) -> FloatArray:
    if M.shape[1] == 0 or M.shape[0] == 0:
        return np.zeros(M.shape[0])
    if _is_sparse(M):
        out = np.zeros(M.shape[0])
        np.maximum.at(out, _row_index(M), np.abs(M.data))
        return out
    return np.asarray(np.abs(M).max(axis=1), dtype=np.float64)


def _row_index(M: Any) -> IntArray:
    """The row of each stored entry of a csr matrix."""
    return np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))


def _scale(M: Any, r: FloatArray, c: FloatArray) -> Any:
    """diag(r) M diag(c) (a csr matrix stays csr, scaled entry by entry)."""
    if _is_sparse(M):
        out = sp.csr_matrix(M, copy=True)
        out.data *= r[_row_index(out)] * c[out.indices]
        return out
    return np.asarray(M * r[:, None] * c[None, :])


def _sparse_if_sparse(M: Any) -> Any:
    """A dense matrix beyond ``_TINY`` entries with at most a tenth of them nonzero as csr."""
    if _is_sparse(M) or M.size <= _TINY or np.count_nonzero(M) >= 0.1 * M.size:
        return M
    return sp.csr_matrix(M)


def _dense_if_small(M: Any) -> Any:
    """A sparse matrix as an ndarray where a dense product is the cheaper: at most ``_TINY``
    entries, or at most ``_SMALL`` with a tenth of them nonzero."""
    size = M.shape[0] * M.shape[1]
    if not _is_sparse(M) or size > _SMALL or (size > _TINY and M.nnz < 0.1 * size):
        return M
    return np.asarray(M.toarray())


#: Sizes (entries) below which products are cheaper dense: numpy's dense product costs
#: microseconds, scipy.sparse's call overhead tens of them.
_TINY, _SMALL = 20_000, 250_000


def _cols(M: Any, idx: IntArray) -> Any:
    return M[:, idx] if not _is_sparse(M) else sp.csr_matrix(M[:, idx])


def _rows(M: Any, idx: IntArray) -> Any:
    return M[idx] if not _is_sparse(M) else sp.csr_matrix(M[idx])


def _mv(M: Any, v: FloatArray) -> FloatArray:
    return np.asarray(M @ v, dtype=np.float64).reshape(-1)


def _abs_mv(M: Any, v: FloatArray) -> FloatArray:
    return _mv(abs(M) if _is_sparse(M) else np.abs(M), v)


# --------------------------------------------------------------------------------------------
# Presolve: fixed variables out, equality rows of C into A, empty and free rows dropped
# --------------------------------------------------------------------------------------------

@attrs.define(slots=True, eq=False)
class Presolved:
    """The problem :func:`presolve` leaves: the kept variables' data and the maps back to the user's.

    Attributes
    ----------
    n_user : int
        Variables of the user's problem.
    keep, fixed : ndarray of int
        The kept (non-fixed) and the fixed variables.
    x_fixed : ndarray
        The fixed variables' values.
    Q, c, lb, ub : matrix, ndarray
        The kept variables' objective and bounds (the fixed variables' terms moved into c).
    A, b : matrix, ndarray
        The kept rows of A, then the rows of C with l = u.
    C, l, u : matrix, ndarray
        The rows of C with l < u and a finite end.
    a_rows, ceq_rows, cin_rows : ndarray of int
        The rows of the user's A behind A's first rows, of the user's C behind A's last rows, and
        of the user's C behind C.
    const : float
        The objective of the fixed variables.
    infeasible : str or None
        A row that no point satisfies (0 = b ≠ 0), found here.
    """

    n_user: int
    keep: IntArray             # kept (non-fixed) variables
    fixed: IntArray
    x_fixed: FloatArray
    Q: Any
    c: FloatArray
    lb: FloatArray
    ub: FloatArray
    A: Any                     # kept rows of A, then the rows of C with l = u
    b: FloatArray
    C: Any                     # the rows of C with l < u and a finite end
    l: FloatArray
    u: FloatArray
    a_rows: IntArray           # rows of the user's A behind A's first rows
    ceq_rows: IntArray         # rows of the user's C behind A's last rows
    cin_rows: IntArray         # rows of the user's C behind C
    const: float               # objective of the fixed variables
    infeasible: str | None     # a row that no point satisfies (0 = b ≠ 0), found here


def presolve(Q: Any, c: FloatArray, lb: FloatArray, ub: FloatArray, A: Any, b: FloatArray, C: Any,
             l: FloatArray, u: FloatArray) -> Presolved:
    """Fixed variables out, equality rows of C into A, empty and free rows dropped.

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        n×n.
    c, lb, ub : ndarray
        Linear term and bounds (lb = ub fixes a variable).
    A, b : matrix, ndarray
        Equality rows ((0, n) for none).
    C, l, u : matrix, ndarray
        Inequality rows l ≤ C x ≤ u ((0, n) for none).

    Returns
    -------
    Presolved
    """
    n = c.shape[0]
    fixed_mask = lb == ub
    keep = np.flatnonzero(~fixed_mask)
    fixed = np.flatnonzero(fixed_mask)
    xf = lb[fixed].copy()
    Qk = Q[keep][:, keep] if not _is_sparse(Q) else sp.csr_matrix(Q[keep][:, keep])
    ck = c[keep].copy()
    const = 0.0
    b2, l2, u2 = b.copy(), l.copy(), u.copy()
    if fixed.size:
        Qkf = Q[keep][:, fixed] if not _is_sparse(Q) else Q[keep][:, fixed]
        ck += _mv(Qkf, xf)
        Qff = Q[fixed][:, fixed]
        const = float(0.5 * xf @ _mv(Qff, xf) + c[fixed] @ xf)
        if A.shape[0]:
            b2 = b2 - _mv(_cols(A, fixed), xf)
        if C.shape[0]:
            shift = _mv(_cols(C, fixed), xf)
            l2, u2 = l2 - shift, u2 - shift
    Ak, Ck = _cols(A, keep), _cols(C, keep)
    infeasible: str | None = None

    def row_nnz(M: Any) -> IntArray:
        if M.shape[0] == 0:
            return np.zeros(0, dtype=np.intp)
        if _is_sparse(M):
            Mc = sp.csr_matrix(M)
            Mc.eliminate_zeros()
            return np.asarray(np.diff(Mc.indptr), dtype=np.intp)
        return np.asarray(np.count_nonzero(M, axis=1), dtype=np.intp)

    # empty rows: 0 = b_k, or l_k ≤ 0 ≤ u_k; a violated one is its own Farkas certificate
    a_nnz, c_nnz = row_nnz(Ak), row_nnz(Ck)
    tiny = 1e-12
    for k in np.flatnonzero(a_nnz == 0):
        if abs(b2[k]) > tiny * max(1.0, abs(b[k])):
            infeasible = f"row {k} of A x = b reads 0 = {b2[k]:.3g} once the fixed variables are substituted"
    for k in np.flatnonzero(c_nnz == 0):
        if l2[k] > tiny * max(1.0, abs(l[k])) or u2[k] < -tiny * max(1.0, abs(u[k])):
            infeasible = f"row {k} of C x reads {l2[k]:.3g} ≤ 0 ≤ {u2[k]:.3g} once the fixed variables are substituted"
    a_rows = np.flatnonzero(a_nnz > 0)
    eq = (l2 == u2) & (c_nnz > 0)
    ineq = (l2 < u2) & (c_nnz > 0) & (np.isfinite(l2) | np.isfinite(u2))
    ceq_rows, cin_rows = np.flatnonzero(eq), np.flatnonzero(ineq)
    if _is_sparse(Ak) or _is_sparse(Ck):
        A2 = sp.csr_matrix(sp.vstack([sp.csr_matrix(_rows(Ak, a_rows)), sp.csr_matrix(_rows(Ck, ceq_rows))]))
        A2 = A2 if A2.shape[0] else sp.csr_matrix((0, keep.size))
        C2: Any = sp.csr_matrix(_rows(Ck, cin_rows)) if cin_rows.size else sp.csr_matrix((0, keep.size))
    else:
        A2 = np.vstack([Ak[a_rows], Ck[ceq_rows]]) if (a_rows.size + ceq_rows.size) else np.zeros((0, keep.size))
        C2 = Ck[cin_rows] if cin_rows.size else np.zeros((0, keep.size))
    return Presolved(n_user=n, keep=keep, fixed=fixed, x_fixed=xf, Q=Qk, c=ck, lb=lb[keep].copy(), ub=ub[keep].copy(),
                      A=A2, b=np.concatenate([b2[a_rows], l2[ceq_rows]]), C=C2, l=l2[cin_rows], u=u2[cin_rows],
                      a_rows=a_rows, ceq_rows=ceq_rows, cin_rows=cin_rows, const=const, infeasible=infeasible)


# --------------------------------------------------------------------------------------------
# Ruiz equilibration
# --------------------------------------------------------------------------------------------

def ruiz(Q: Any, c: FloatArray, A: Any, C: Any, passes: int) -> tuple[FloatArray, FloatArray, FloatArray, float]:
    """Scalings D (variables), E_A, E_C (rows) and the cost scale of the KKT matrix
    [[Q, Aᵀ, Cᵀ], [A, 0, 0], [C, 0, 0]]: Ruiz's iteration to unit ∞-norms, then the cost
    scaled so that the mean column norm of Q and ‖c‖∞ are about 1 (OSQP's rule).

    Parameters
    ----------
    Q, c, A, C : matrix, ndarray
        The presolved data.
    passes : int
        Ruiz passes at most (0: none).

    Returns
    -------
    D, EA, EC : ndarray
        The scalings of the variables and of the rows of A and C.
    cs : float
        The cost scale.
    """
    n, m, k = Q.shape[0], A.shape[0], C.shape[0]
    D, EA, EC = np.ones(n), np.ones(m), np.ones(k)
    Qs, As, Cs = Q, A, C
    for _ in range(passes):
        col = np.maximum.reduce([_abs_max_cols(Qs), _abs_max_cols(As), _abs_max_cols(Cs)]) if n else np.zeros(0)
        ra, rc = _abs_max_rows(As), _abs_max_rows(Cs)
        dd = 1.0 / np.sqrt(np.clip(col, 1e-4, 1e4))
        dd[col == 0] = 1.0
        da = 1.0 / np.sqrt(np.clip(ra, 1e-4, 1e4))
        dc = 1.0 / np.sqrt(np.clip(rc, 1e-4, 1e4))
        D, EA, EC = D * dd, EA * da, EC * dc
        Qs, As, Cs = _scale(Qs, dd, dd), _scale(As, da, dd), _scale(Cs, dc, dd)
        if max(np.abs(1 - dd).max(initial=0), np.abs(1 - da).max(initial=0), np.abs(1 - dc).max(initial=0)) < 1e-3:
            break
    qn = _abs_max_cols(Qs)
    cost = max(float(qn.mean()) if n else 0.0, float(np.abs(D * c).max(initial=0.0)))
    cs = 1.0 / min(max(cost, 1e-4), 1e4) if cost > 0 else 1.0
    return D, EA, EC, cs
