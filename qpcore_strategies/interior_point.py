"""A primal–dual interior point method (Mehrotra predictor–corrector) for general convex QPs.

The problem, in the user's own form (the strategy declares ``takes_inequalities``)::

    minimize ½xᵀQx + cᵀx   subject to   lb ≤ x ≤ ub,   A x = b,   l ≤ C x ≤ u

with any mix of finite and infinite bounds. The engine is a function of arrays
(:func:`ipm_solve`, :class:`IPMCore`); :class:`InteriorPoint` is a thin strategy around it, one
IPM iteration per ``step``; its ``x0`` is not used (an interior point method starts from the
centre of the feasible region, not from a vertex or a previous optimum).

**Why an interior point method.** The issue asks for a general strategy for the problems the
dense active set cannot finish (degenerate vertices, hundreds of active constraints). The two
candidates of the literature are a proximal augmented Lagrangian (OSQP, QPALM, ProxQP, PIQP's
outer loop) and a primal–dual interior point method (Mehrotra 1992; Gondzio's HOPDM; OOQP;
Clarabel; PIQP's inner iteration). We take the IPM:

- its iteration count hardly depends on the conditioning or the degeneracy of the problem
  (typically 10–40 Newton steps on the Maros–Meszaros set), while a proximal ALM's outer count
  depends on the penalty's tuning and its inner solver (GPCG or the active set here) must itself
  solve ill-conditioned box QPs: we would rebuild the very difficulty we want to avoid;
- each iteration is one factorization of a quasi-definite matrix, which scipy does well
  (LAPACK's ``sytrf`` dense, SuperLU sparse), and two solves with it; a proximal ALM needs many
  factorizations or many inner iterations when its active set changes;
- the IPM's weakness, the last digits, is what the exact active-set finish (a polish from the
  IPM's point and its multipliers) supplies; the IPM gives it a well-centred point whose
  multipliers identify the active set;
- infeasibility and unboundedness show as diverging iterates, which we turn into a proof (a
  Farkas ray or a recession direction, verified, else the verdict of an LP) before saying so.

**Formulation.** Inequality rows get slacks s = C x, bounded by [l, u]. Every finite bound of x
and s has a slack t > 0 and a multiplier z > 0 (t_l = x − lb, t_u = ub − x, ...), and the
iteration keeps only t and z positive: the rows ``A x = b``, ``C x − s = 0`` and the slacks'
definitions may be violated on the way (an infeasible start, Mehrotra's, whose residuals vanish
with the steps). Fixed variables (lb = ub) are eliminated, rows with l = u join A x = b, rows with
no finite end are dropped, and an empty row that no point satisfies is reported infeasible at
once. The data are equilibrated (Ruiz: the KKT matrix [[Q, Aᵀ, Cᵀ], [A, 0, 0], [C, 0, 0]] scaled to
unit row norms, then the cost scaled), and every output is mapped back to the user's units.

**Linear algebra.** The slacks and the bound multipliers are eliminated analytically: the
barrier terms of s enter as CᵀWC with W = 1/(Σ_s⁻¹ + δ), so each iteration factors the
quasi-definite matrix [[Q + Σ_x + CᵀWC + ρI, Aᵀ], [A, −δI]] (ρ, δ small primal and dual
regularizations: it is then factorizable even for rank-deficient A or free variables in a
singular Q). The matrix is scaled to a unit diagonal where its diagonal is large (the barrier
terms span twenty decades near the end) before it is factored. Dense: LAPACK's Bunch–Kaufman
``dsytrf``. Sparse: the pattern is built once, with a fill-reducing order (SuperLU's COLAMD at the
first factorization) applied to it once, and each iteration writes the values into it (one
``bincount``) and has SuperLU factor in that order, with threshold pivoting that keeps the diagonal
nearly always. ``auto`` picks dense for small or dense KKT matrices (from nonzero counts of the
patterns, CᵀC's estimated from its row pairs before it is formed) and falls back to dense when the
first sparse factor fills beyond 30% of the matrix's entries. Each solve is refined iteratively on the
*unregularized* Newton system, so the regularization does not perturb the steps.

**Stopping.** In the user's units, the way :func:`qpcore.kkt` measures: the rows' and bounds'
violation relative to :func:`qpcore.core.optimality.feasibility_scale`; the projected reduced gradient
of [x; Cx] with the IPM's multipliers, a variable within ``BOUND_BAND`` of a bound counting at it
(the user's point puts such variables on their bounds where that measures no worse); and the
relative duality gap of the IPM's own multipliers. The strategy asks :func:`qpcore.kkt` as well
before it reports convergence (for one equality row the loop's measure is LIBSVM's pair gap). A
run whose residuals reach the rounding level of their own terms (huge multipliers) or that stops
progressing ends as ``stalled`` with the best point met, judged as the certificate judges.

**Infeasibility and unboundedness** are never concluded from a failed step. When the duals
diverge, the primal iterate diverges, or progress stalls, the engine tries to prove what the
iterates suggest: a Farkas certificate read off the diverging duals and verified exactly in the
user's data (a multiplier on a boxed variable absorbs the row residual); a recession direction d
with Qd ≈ 0, cᵀd < 0, A d ≈ 0, C d in the recession cone of [l, u] and d in that of the box.
When the iterates' candidates do not verify, the feasibility LP (HiGHS) and the LP over the
recession cone give their verdict, which the status' explanation quotes. When neither proves
anything the problem has a minimizer (Frank–Wolfe), and a stall ends as ``stalled`` with the best
point.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.linalg import lapack
from scipy.sparse.linalg import splu

from qpcore.backends.capabilities import principal_block
from qpcore.core.certificate import BOUND_BAND, box_terms, kkt
from qpcore.backends.operators import DenseQ
from qpcore.core.optimality import DEFAULT_FEAS_TOL
from qpcore.core.problem import QP
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy

from qpcore.backends.sparse import SparseQ

__all__ = ["IPMCore", "IPMOutcome", "IPMSettings", "InteriorPoint", "ipm_solve"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

#: Outcomes of the engine: the codes of :class:`qpcore.Status` it maps to.
Outcome = Literal["running", "converged", "primal_infeasible", "unbounded", "stalled", "max_iter", "nonfinite"]


# --------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------

@attrs.frozen
class IPMSettings:
    """The engine's settings.

    Attributes
    ----------
    tol : float
        Bound on the projected reduced gradient (absolute, the user's units).
    feas_tol : float
        Bound on the primal violation, relative to the feasibility scale.
    gap_tol : float or None
        Bound on the relative duality gap |f − d| / max(1, |f|); None: ``tol``.
    max_iter : int
        Iterations at most (:func:`ipm_solve` only; the strategy's limit is the loop's).
    linear_solver : {"auto", "dense", "sparse"}
        How the KKT matrix is factored; ``auto`` picks by size and density.
    ruiz_iter : int
        Ruiz equilibration passes (0: none).
    reg : float
        Primal and dual regularization ρ = δ of the factored matrix (scaled units).
    step_fraction : float
        Fraction of the step to the boundary taken.
    refine : int
        Iterative refinement steps at most per solve.
    stall_window : int
        Iterations without halving the error that count as a stall.
    """

    tol: float = 1e-8
    feas_tol: float = DEFAULT_FEAS_TOL
    gap_tol: float | None = None
    max_iter: int = 200
    linear_solver: str = attrs.field(default="auto", validator=attrs.validators.in_(("auto", "dense", "sparse")))
    ruiz_iter: int = 15
    reg: float = 1e-9
    step_fraction: float = 0.99
    refine: int = 20
    stall_window: int = 12


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
class _Presolved:
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


def _presolve(Q: Any, c: FloatArray, lb: FloatArray, ub: FloatArray, A: Any, b: FloatArray, C: Any,
              l: FloatArray, u: FloatArray) -> _Presolved:
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
    return _Presolved(n_user=n, keep=keep, fixed=fixed, x_fixed=xf, Q=Qk, c=ck, lb=lb[keep].copy(), ub=ub[keep].copy(),
                      A=A2, b=np.concatenate([b2[a_rows], l2[ceq_rows]]), C=C2, l=l2[cin_rows], u=u2[cin_rows],
                      a_rows=a_rows, ceq_rows=ceq_rows, cin_rows=cin_rows, const=const, infeasible=infeasible)


# --------------------------------------------------------------------------------------------
# Ruiz equilibration
# --------------------------------------------------------------------------------------------

def _ruiz(Q: Any, c: FloatArray, A: Any, C: Any, passes: int) -> tuple[FloatArray, FloatArray, FloatArray, float]:
    """Scalings D (variables), E_A, E_C (rows) and the cost scale of the KKT matrix
    [[Q, Aᵀ, Cᵀ], [A, 0, 0], [C, 0, 0]]: Ruiz's iteration to unit ∞-norms, then the cost
    scaled so that the mean column norm of Q and ‖c‖∞ are about 1 (OSQP's rule)."""
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


# --------------------------------------------------------------------------------------------
# The quasi-definite KKT matrix [[H + CᵀWC, Aᵀ], [A, −δI]]
# --------------------------------------------------------------------------------------------

class _DenseKKT:
    """Dense: LAPACK's Bunch–Kaufman factorization of the lower triangle."""

    kind = "dense"

    def __init__(self, Q: Any, A: Any, C: Any) -> None:
        n, m = Q.shape[0], A.shape[0]
        self.n, self.N = n, n + m
        Qd = Q.toarray() if _is_sparse(Q) else np.asarray(Q)
        Ad = A.toarray() if _is_sparse(A) else np.asarray(A)
        # a sparse C stays sparse: CᵀWC then costs Σ_k nnz(C_k)², not k·n²
        self.C = _dense_if_small(sp.csr_matrix(C)) if _is_sparse(C) else np.asarray(C)
        base = np.zeros((self.N, self.N), order="F")
        base[:n, :n] = Qd
        base[n:, :n] = Ad
        self.base = base
        self.diag = np.arange(self.N) * (self.N + 1)
        self.lwork = int(lapack.dsytrf_lwork(self.N, lower=1)[0]) if self.N else 1
        self.ldu: FloatArray = np.zeros((0, 0))
        self.ipiv: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.sc: FloatArray = np.ones(self.N)

    def factor(self, dx: FloatArray, wc: FloatArray, delta: float) -> bool:
        if self.N == 0:
            return True
        K = self.base.copy(order="F")
        n = self.n
        if self.C.shape[0]:
            if _is_sparse(self.C):
                K[:n, :n] += (self.C.T @ sp.diags(wc) @ self.C).toarray()
            else:
                K[:n, :n] += (self.C.T * wc) @ self.C
        flat = K.reshape(-1, order="F")
        flat[self.diag[:n]] += dx
        flat[self.diag[n:]] = -delta
        # symmetric diagonal scaling to unit diagonal where it is large: the barrier terms span
        # many decades, and Bunch–Kaufman's pivot choices are not scale invariant
        d = np.abs(flat[self.diag])
        sc = 1.0 / np.sqrt(np.maximum(d, 1.0))
        K *= sc[:, None]
        K *= sc[None, :]
        ldu, ipiv, info = lapack.dsytrf(K, lower=1, lwork=self.lwork, overwrite_a=1)
        if info != 0:
            return False
        self.ldu, self.ipiv, self.sc = ldu, ipiv, sc
        return True

    def solve(self, r: FloatArray) -> FloatArray:
        if self.N == 0:
            return r.copy()
        x, info = lapack.dsytrs(self.ldu, self.ipiv, r * self.sc, lower=1)
        return np.asarray(x * self.sc, dtype=np.float64)


#: The relative residual at which iterative refinement stops, and the merit above which the
#: regularized solve is taken unrefined.
_REFINE_TOL, _INEXACT = 1e-12, 1e-2

#: Variables this close to a bound (relative) are put on it in the user's point.
_SNAP = BOUND_BAND

#: The ceiling of the regularization, raised (×10) from the setting only after a zero pivot.
_MAX_REG = 1e-6

#: SuperLU's threshold for taking the diagonal pivot. A quasi-definite matrix factors with
#: diagonal pivots in any order in exact arithmetic, but with Σ spanning 1e-12..1e12 and small
#: regularizations the static order loses all accuracy (errors of 1e4 measured on QSC205); a
#: weak threshold keeps the diagonal nearly always and the fill the same.
_PIVOT = 0.01


class _SparseKKT:
    """Sparse: the pattern of [[Q + CᵀC + I, Aᵀ], [A, I]] built once, symmetrically permuted
    by a fill-reducing order (SuperLU's COLAMD, computed at the first factorization), its
    values written each iteration by one ``bincount``; SuperLU then factors in that order with
    threshold pivoting that prefers the diagonal (:data:`_PIVOT`)."""

    kind = "sparse"

    def __init__(self, Q: Any, A: Any, C: Any) -> None:
        n, m = Q.shape[0], A.shape[0]
        self.n, self.N = n, n + m
        N = self.N
        Qc = sp.coo_matrix(Q)
        Ac = sp.coo_matrix(A)
        Ccsr = sp.csr_matrix(C)
        # entries: Q, A below and above the diagonal, the whole diagonal, and CᵀC's pairs
        rows_l = [Qc.row, n + Ac.row, Ac.col, np.arange(N)]
        cols_l = [Qc.col, Ac.col, n + Ac.row, np.arange(N)]
        vals_l = [Qc.data, Ac.data, Ac.data, np.zeros(N)]
        # CᵀWC: each row k of C contributes C_ki C_kj W_k at (i, j) for every pair of its columns
        counts = np.diff(Ccsr.indptr)
        pair_rows, pair_i, pair_j, pair_v = [], [], [], []
        for k in np.flatnonzero(counts):
            lo, hi = Ccsr.indptr[k], Ccsr.indptr[k + 1]
            idx, v = Ccsr.indices[lo:hi], Ccsr.data[lo:hi]
            ii, jj = np.meshgrid(idx, idx, indexing="ij")
            pair_i.append(ii.ravel())
            pair_j.append(jj.ravel())
            pair_v.append(np.outer(v, v).ravel())
            pair_rows.append(np.full(idx.size * idx.size, k))
        self.pair_row = np.concatenate(pair_rows) if pair_rows else np.zeros(0, dtype=np.intp)
        self.pair_v = np.concatenate(pair_v) if pair_v else np.zeros(0)
        pi = np.concatenate(pair_i) if pair_i else np.zeros(0, dtype=np.intp)
        pj = np.concatenate(pair_j) if pair_j else np.zeros(0, dtype=np.intp)
        r_all = np.concatenate([*rows_l, pi]).astype(np.int64)
        c_all = np.concatenate([*cols_l, pj]).astype(np.int64)
        key = c_all * N + r_all
        uniq, inv = np.unique(key, return_inverse=True)
        self.nnz = int(uniq.size)
        ent_r, ent_c = (uniq % N).astype(np.int32), (uniq // N).astype(np.int32)
        n_base = sum(v.size for v in vals_l)
        self.base: FloatArray = np.bincount(inv[:n_base], weights=np.concatenate(vals_l), minlength=self.nnz).astype(
            np.float64)
        self.pair_entry = inv[n_base:]
        self.diag_entry = inv[n_base - N:n_base]
        self.ent_r, self.ent_c = ent_r, ent_c
        self.order: IntArray | None = None
        self.perm_data: IntArray = np.zeros(0, dtype=np.intp)
        self.indices: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.indptr: NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self.lu: Any = None
        self.sc: FloatArray = np.ones(N)

    def _values(self, dx: FloatArray, wc: FloatArray, delta: float) -> FloatArray:
        vals = self.base.copy()
        if self.pair_v.size:
            vals += np.bincount(self.pair_entry, weights=self.pair_v * wc[self.pair_row], minlength=self.nnz)
        vals[self.diag_entry[:self.n]] += dx
        vals[self.diag_entry[self.n:]] = -delta
        return vals

    def _set_order(self, order: IntArray) -> None:
        """Fix the symmetric order: entry (i, j) goes to (pos[i], pos[j]) of a csc matrix."""
        N = self.N
        pos = np.empty(N, dtype=np.int64)
        pos[order] = np.arange(N)
        pr, pc = pos[self.ent_r], pos[self.ent_c]
        perm = np.lexsort((pr, pc))
        self.perm_data = perm
        self.indices = pr[perm].astype(np.int32)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(pc, minlength=N))]).astype(np.int32)
        self.order = order

    def factor(self, dx: FloatArray, wc: FloatArray, delta: float) -> bool:
        vals = self._values(dx, wc, delta)
        # the same symmetric scaling to a unit diagonal as the dense factor's
        sc = 1.0 / np.sqrt(np.maximum(np.abs(vals[self.diag_entry]), 1.0))
        vals *= sc[self.ent_r] * sc[self.ent_c]
        self.sc = sc
        try:
            if self.order is None:
                K = sp.csc_matrix((vals, (self.ent_r, self.ent_c)), shape=(self.N, self.N))
                lu = splu(K, permc_spec="COLAMD", diag_pivot_thresh=_PIVOT, options={"SymmetricMode": True})
                self._set_order(np.argsort(lu.perm_c).astype(np.intp))
            K = sp.csc_matrix((vals[self.perm_data], self.indices, self.indptr), shape=(self.N, self.N))
            self.lu = splu(K, permc_spec="NATURAL", diag_pivot_thresh=_PIVOT, options={"SymmetricMode": True})
        except RuntimeError:       # exactly singular pivot
            return False
        return True

    def fill(self) -> int:
        """Entries of the last factor's L and U."""
        return int(self.lu.nnz) if self.lu is not None else 0

    def solve(self, r: FloatArray) -> FloatArray:
        assert self.order is not None
        out = np.empty_like(r)
        out[self.order] = self.lu.solve((r * self.sc)[self.order])
        return out * self.sc


def _pattern(M: Any) -> Any:
    """The nonzero pattern of M as a csr matrix of ones."""
    P = sp.csr_matrix(M, dtype=np.float64, copy=True)
    P.eliminate_zeros()
    P.data[:] = 1.0
    return P


def _kkt_nnz(Q: Any, A: Any, C: Any) -> int:
    """Nonzeros of [[Q + CᵀC + I, Aᵀ], [A, I]], from the patterns (no values)."""
    n, m = Q.shape[0], A.shape[0]
    H = _pattern(Q) + sp.identity(n, format="csr")
    if C.shape[0]:
        Cp = _pattern(C)
        H = H + Cp.T @ Cp
    return int(H.nnz + 2 * _pattern(A).nnz + m)


#: The dense factorization below this size (SuperLU's per-call overhead dominates there) and
#: above this density of the KKT matrix (dense BLAS then beats sparse elimination), never above
#: ``_DENSE_MAX_N`` (memory); a sparse factor that fills beyond ``_DENSE_FILL`` of the dense
#: matrix's entries (random sparsity does) is replaced by the dense one after its first use.
_DENSE_N, _DENSE_DENSITY, _DENSE_MAX_N, _DENSE_FILL = 300, 0.05, 8000, 0.3


def _row_pairs(C: Any) -> float:
    """Σ_k nnz(C_k)²: the entries CᵀC's rows contribute, an upper bound on its nonzeros."""
    if C.shape[0] == 0:
        return 0.0
    counts = np.diff(sp.csr_matrix(C).indptr) if _is_sparse(C) else np.count_nonzero(C, axis=1)
    return float(np.sum(np.asarray(counts, dtype=np.float64) ** 2))


def _choose_kkt(Q: Any, A: Any, C: Any, how: str) -> _DenseKKT | _SparseKKT:
    N = Q.shape[0] + A.shape[0]
    if how == "dense":
        return _DenseKKT(Q, A, C)
    if how == "auto" and N <= _DENSE_MAX_N:
        budget = _DENSE_DENSITY * N * N
        if N <= _DENSE_N or _nnz(Q) + 2 * _nnz(A) > budget:
            return _DenseKKT(Q, A, C)
        # CᵀC's pattern is formed only where its row pairs are few; many pairs (dense rows) fill
        if _row_pairs(C) > 20 * budget or _kkt_nnz(Q, A, C) > budget:
            return _DenseKKT(Q, A, C)
    return _SparseKKT(sp.csr_matrix(Q), sp.csr_matrix(A), sp.csr_matrix(C))


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------

@attrs.frozen
class IPMOutcome:
    """What :func:`ipm_solve` returns.

    Attributes
    ----------
    x : ndarray
        The point (user's variables).
    lam : ndarray
        Multipliers of A x = b.
    y : ndarray
        Multipliers of l ≤ C x ≤ u (≥ 0 where C x = l, ≤ 0 where C x = u).
    z : ndarray
        Bound multipliers g − Aᵀλ − Cᵀy.
    status : str
        ``converged``, ``primal_infeasible``, ``unbounded``, ``stalled``, ``max_iter`` or ``nonfinite``.
    objective : float
        ½xᵀQx + cᵀx.
    iterations : int
        IPM iterations.
    info : dict
        Residuals, the linear solver, and for an infeasible or unbounded verdict its proof.
    """

    x: FloatArray
    lam: FloatArray
    y: FloatArray
    z: FloatArray
    status: str
    objective: float
    iterations: int
    info: dict[str, Any]


def _vec(v: Any, n: int, default: float, name: str) -> FloatArray:
    if v is None:
        return np.full(n, default)
    out = np.asarray(v, dtype=np.float64).reshape(-1)
    if out.size == 1 and n != 1:
        out = np.full(n, float(out[0]))
    if out.shape != (n,):
        raise ValueError(f"{name}: length {out.size}, expected {n}")
    return out


class IPMCore:
    """The interior point engine over arrays (see the module docstring).

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        n×n, symmetric positive semidefinite.
    c, lb, ub : array_like
        Linear term and bounds (±inf allowed; lb = ub fixes a variable).
    A, b : array_like or sparse, optional
        Equality rows A x = b.
    C, l, u : array_like or sparse, optional
        Inequality rows l ≤ C x ≤ u (l = u: an equality; ±inf allowed).
    settings : IPMSettings, optional
    accept : callable, optional
        ``accept(x, g, λ, y)``, asked once the engine's own measures are met: False (an outside
        certificate that measures otherwise) keeps the run going.

    Notes
    -----
    Call :meth:`iterate` until :attr:`outcome` is no longer ``"running"``. The user's point and
    multipliers (:attr:`x`, :attr:`g`, :meth:`multipliers`) are current after each call.
    """

    def __init__(self, Q: Any, c: Any, lb: Any = None, ub: Any = None, A: Any = None, b: Any = None, C: Any = None,
                 l: Any = None, u: Any = None, settings: IPMSettings | None = None,
                 accept: Callable[[FloatArray, FloatArray, FloatArray, FloatArray], bool] | None = None) -> None:
        self.settings = settings or IPMSettings()
        self.accept = accept
        self.refused = 0
        self.gap_tol = self.settings.tol if self.settings.gap_tol is None else self.settings.gap_tol
        c = np.asarray(c, dtype=np.float64).reshape(-1)
        n = c.size
        Qm = sp.csr_matrix(Q, dtype=np.float64) if _is_sparse(Q) else np.asarray(Q, dtype=np.float64).reshape(n, n)
        lb, ub = _vec(lb, n, -np.inf, "lb"), _vec(ub, n, np.inf, "ub")
        Am = _as_2d(A, None, n, "A")
        bm = _vec(b, Am.shape[0], 0.0, "b")
        Cm = _as_2d(C, None, n, "C")
        lm, um = _vec(l, Cm.shape[0], -np.inf, "l"), _vec(u, Cm.shape[0], np.inf, "u")
        # mostly-zero dense data (qpcore.QP keeps A and C dense) is worked on sparse, small sparse
        # data dense (see _dense_if_small)
        Qm, Am, Cm = (_dense_if_small(_sparse_if_sparse(M)) for M in (Qm, Am, Cm))
        self.user = (Qm, c, lb, ub, Am, bm, Cm, lm, um)
        self.abs_A = abs(Am) if _is_sparse(Am) else np.abs(Am)
        self.abs_C = abs(Cm) if _is_sparse(Cm) else np.abs(Cm)
        self.n, self.m, self.k = n, Am.shape[0], Cm.shape[0]
        self.iterations = 0
        self.outcome: Outcome = "running"
        self.reason = ""
        self.info: dict[str, Any] = {}
        self.certificate: dict[str, FloatArray] = {}
        t0 = time.perf_counter()
        pre = _presolve(Qm, c, lb, ub, Am, bm, Cm, lm, um)
        self.pre = pre
        self.x = np.clip(np.zeros(n), lb, ub)
        self.lam, self.y = np.zeros(self.m), np.zeros(self.k)
        self.g = _mv(Qm, self.x) + c
        self.best: tuple[float, FloatArray, FloatArray, FloatArray, FloatArray] | None = None
        if pre.infeasible is not None:
            self._end("primal_infeasible", f"presolve: {pre.infeasible}")
            return
        self._setup()
        self.info["setup_seconds"] = time.perf_counter() - t0
        self._start()
        self._measure()

    # ---------------------------------------------------------------- setup

    def _setup(self) -> None:
        pre, s = self.pre, self.settings
        D, EA, EC, cs = _ruiz(pre.Q, pre.c, pre.A, pre.C, s.ruiz_iter)
        self.D, self.EA, self.EC, self.cs = D, EA, EC, cs
        self.Q = _scale(pre.Q, D * cs, D)
        self.c = cs * D * pre.c
        self.A = _scale(pre.A, EA, D)
        self.b = EA * pre.b
        self.C = _scale(pre.C, EC, D)
        nx, m, k = D.size, self.A.shape[0], self.C.shape[0]
        self.nx, self.mr, self.kr = nx, m, k
        self.lo = np.concatenate([pre.lb / D, EC * pre.l])
        self.hi = np.concatenate([pre.ub / D, EC * pre.u])
        self.has_lo, self.has_hi = np.isfinite(self.lo), np.isfinite(self.hi)
        self.lo_f = np.where(self.has_lo, self.lo, 0.0)
        self.hi_f = np.where(self.has_hi, self.hi, 0.0)
        self.n_comp = int(self.has_lo.sum() + self.has_hi.sum())
        self.kkt = _choose_kkt(self.Q, self.A, self.C, s.linear_solver)
        # the products of every iteration: dense where that is the cheaper (_dense_if_small)
        self.Q, self.A, self.C = (_dense_if_small(_sparse_if_sparse(M)) for M in (self.Q, self.A, self.C))
        self.AT = sp.csr_matrix(self.A.T) if _is_sparse(self.A) else np.ascontiguousarray(self.A.T)
        self.CT = sp.csr_matrix(self.C.T) if _is_sparse(self.C) else np.ascontiguousarray(self.C.T)
        self.info["linear_solver"] = self.kkt.kind
        self.info["kkt_size"] = self.kkt.N
        self.rho = s.reg
        self.delta = s.reg
        self.solve_err = 0.0
        self.fill_checked = False
        self.resid_at = -1
        self.floor_seen = False
        self.restarts = 0
        self.resid: tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray] = ()  # type: ignore[assignment]
        self.alpha = 0.0
        self.small_steps = 0
        self.history: list[float] = []
        self.stat_history: list[float] = []
        self.diagnosed_at = -10 ** 9
        self.diagnoses = 0
        self.x_prev = np.zeros(nx)
        self.norm_b = max(1.0, float(np.abs(self.b).max(initial=0.0)))
        self.norm_c = max(1.0, float(np.abs(self.c).max(initial=0.0)))

    # ---------------------------------------------------------------- linear algebra

    def _apply_true(self, sx: FloatArray, ss: FloatArray, a: FloatArray, bs: FloatArray, cy: FloatArray,
                    dw: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """The unregularized Newton matrix times (a, b, c, d)."""
        r1 = _mv(self.Q, a) + sx * a + _mv(self.AT, cy) + _mv(self.CT, dw)
        r2 = ss * bs - dw
        r3 = _mv(self.A, a)
        r4 = _mv(self.C, a) - bs
        return r1, r2, r3, r4

    def _solve_reg(self, f1: FloatArray, f2: FloatArray, f3: FloatArray, f4: FloatArray, Ds: FloatArray,
                   W: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Solve the regularized system [[H+ρ, 0, Aᵀ, Cᵀ], [0, Σ_s+ρ, 0, −I], [A, 0, −δ, 0],
        [C, −I, 0, −δ]] (a, b, c, d) = f through the reduced quasi-definite factor."""
        nx = self.nx
        # W/D_s = 1/(1 + δD_s) written out: an inactive row has D_s ≈ ρ, and f₂/D_s then
        # b = (f₂ + d)/D_s would cancel huge terms
        g2 = f2 / (1.0 + self.delta * Ds)
        rhs = np.concatenate([f1 + _mv(self.CT, W * f4 + g2), f3])
        sol = self.kkt.solve(rhs)
        a, cy = sol[:nx], sol[nx:]
        ca = _mv(self.C, a)
        dw = W * (ca - f4) - g2
        bs = (ca - f4 + self.delta * f2) / (1.0 + self.delta * Ds)
        return a, bs, cy, dw

    def _newton(self, f1: FloatArray, f2: FloatArray, f3: FloatArray, f4: FloatArray, sx: FloatArray,
                ss: FloatArray, Ds: FloatArray, W: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """The regularized solve refined on the unregularized system; the relative residual it
        reached is kept in ``solve_err``."""
        sol = self._solve_reg(f1, f2, f3, f4, Ds, W)
        # an inexact Newton step suffices far from the solution: the accuracy asked of a solve
        # follows the residuals (Dembo–Eisenstat–Steihaug), and early on it is not even checked
        merit = self.history[-1] if self.history else 0.0     # the start: refined (it may be the solution)
        if merit > _INEXACT:
            self.solve_err = float("nan")
            return sol
        tol = max(_REFINE_TOL, 1e-4 * merit)
        fnorm = 1.0 + max(np.abs(f1).max(initial=0), np.abs(f2).max(initial=0), np.abs(f3).max(initial=0),
                          np.abs(f4).max(initial=0))
        best, best_err, prev = sol, np.inf, np.inf
        for i in range(self.settings.refine + 1):
            r = self._apply_true(sx, ss, *sol)
            e = (f1 - r[0], f2 - r[1], f3 - r[2], f4 - r[3])
            err = max(float(np.abs(v).max(initial=0)) for v in e) / fnorm
            if err < best_err:
                best, best_err = sol, err
            # stop when accurate, at the limit, or when a correction no longer halves the error
            if err <= tol or i == self.settings.refine or (i > 0 and err > 0.7 * prev):
                break
            prev = err
            d = self._solve_reg(*e, Ds, W)
            sol = (sol[0] + d[0], sol[1] + d[1], sol[2] + d[2], sol[3] + d[3])
        self.solve_err = best_err
        return best

    def _factor(self, sx: FloatArray, ss: FloatArray) -> tuple[FloatArray, FloatArray] | None:
        """Factor the regularized matrix at barrier terms (Σ_x, Σ_s); (D_s, W) of the reduction,
        or None when even a large regularization leaves a zero pivot."""
        while True:
            Ds = ss + self.rho
            W = 1.0 / (1.0 / Ds + self.delta)
            if self.kkt.factor(sx + self.rho, W, self.delta):
                kkt = self.kkt
                if (isinstance(kkt, _SparseKKT) and self.settings.linear_solver == "auto" and not self.fill_checked
                        and kkt.N <= _DENSE_MAX_N and kkt.fill() > _DENSE_FILL * kkt.N * kkt.N):
                    self.kkt = _DenseKKT(self.Q, self.A, self.C)
                    self.info["linear_solver"] = "dense"
                    self.info["sparse_fill"] = kkt.fill() / (kkt.N * kkt.N)
                    continue
                self.fill_checked = True
                return Ds, W
            if self.rho >= _MAX_REG:
                return None
            self.rho = self.delta = min(_MAX_REG, 10 * self.rho)

    # ---------------------------------------------------------------- start

    def _start(self) -> None:
        """Mehrotra's starting point, adapted to bounds: minimize ½xᵀQx + cᵀx plus ½ the squared
        distances of x and s = Cx to their finite bounds subject to A x = b (one solve with
        Σ = the number of finite bounds); the bound slacks t and their multipliers z = −t are then
        shifted positive and balanced (Mehrotra 1992, §7). x need not lie in the box: the slacks
        t carry the bounds, and t − (x − lb) → 0 with the other residuals."""
        nx, k = self.nx, self.kr
        has_lo, has_hi = self.has_lo, self.has_hi
        sig = has_lo.astype(float) + has_hi.astype(float)
        sx, ss = sig[:nx], sig[nx:]
        factored = self._factor(sx, ss)
        if factored is None:
            raise np.linalg.LinAlgError("the KKT matrix of the starting point could not be factored")
        Ds, W = factored
        pull = self.lo_f + self.hi_f          # Σ·target: the sum of the finite bounds
        a, bs, cy, dw = self._newton(-self.c + pull[:nx], pull[nx:], self.b.copy(), np.zeros(k), sx, ss, Ds, W)
        p = np.concatenate([a, bs])
        tl = np.where(has_lo, p - self.lo_f, 0.0)
        tu = np.where(has_hi, self.hi_f - p, 0.0)
        t = np.concatenate([tl[has_lo], tu[has_hi]])
        z = -t
        if t.size:
            dt = max(-1.5 * float(t.min()), 0.0)
            dz = max(-1.5 * float(z.min()), 0.0)
            t, z = t + dt, z + dz
            tz = float(t @ z)
            if tz <= 1e-12 * max(1.0, float(t.sum()), float(z.sum())):
                t, z = t + 1.0, z + 1.0
                tz = float(t @ z)
            t = t + 0.5 * tz / float(z.sum())
            z = z + 0.5 * tz / float(t.sum())
            # a floor keeps a slack that was already at its bound from being born at zero
            floor = 1e-2 * max(1.0, float(np.median(t)))
            t, z = np.maximum(t, floor), np.maximum(z, floor)
        nl = int(has_lo.sum())
        self.tl = np.ones(p.size)
        self.tu = np.ones(p.size)
        self.zl = np.zeros(p.size)
        self.zu = np.zeros(p.size)
        self.tl[has_lo], self.tu[has_hi] = t[:nl], t[nl:]
        self.zl[has_lo], self.zu[has_hi] = z[:nl], z[nl:]
        self.p = p
        self.yA = -cy
        self.w = -dw
        self.x_prev = p[:nx].copy()

    def _dual_residual_core(self, p: FloatArray, yA: FloatArray, w: FloatArray) -> FloatArray:
        """Qx + c − Aᵀy − Cᵀw on x, w on s (before the bound multipliers)."""
        x = p[:self.nx]
        rx = _mv(self.Q, x) + self.c - _mv(self.AT, yA) - _mv(self.CT, w)
        return np.concatenate([rx, w])

    def _slack_residuals(self, p: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(x − lb) − t_l and (ub − x) − t_u where the bounds are finite, 0 elsewhere."""
        rl = np.where(self.has_lo, p - self.lo_f - self.tl, 0.0)
        ru = np.where(self.has_hi, self.hi_f - p - self.tu, 0.0)
        return rl, ru

    # ---------------------------------------------------------------- one iteration

    def _step_length(self, t: FloatArray, dt: FloatArray) -> float:
        neg = dt < 0
        if not neg.any():
            return 1.0
        return float(min(1.0, np.min(-t[neg] / dt[neg])))

    def _direction(self, rdual: FloatArray, rA: FloatArray, rC: FloatArray, rl: FloatArray, ru: FloatArray,
                   rcl: FloatArray, rcu: FloatArray, sx: FloatArray, ss: FloatArray, Ds: FloatArray,
                   W: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray, FloatArray,
                                           FloatArray]:
        """The Newton direction for complementarity targets rc (t∘z + Δt∘z + t∘Δz = t∘z + rc)."""
        nx = self.nx
        zl, zu, tl, tu = self.zl, self.zu, self.tl, self.tu
        R = -rdual + (rcl - zl * rl) / tl - (rcu - zu * ru) / tu
        a, bs, cy, dw = self._newton(R[:nx], R[nx:], -rA, -rC, sx, ss, Ds, W)
        dp = np.concatenate([a, bs])
        dtl = np.where(self.has_lo, dp + rl, 0.0)
        dtu = np.where(self.has_hi, -dp + ru, 0.0)
        dzl = (rcl - zl * dtl) / tl
        dzu = (rcu - zu * dtu) / tu
        return dp, dtl, dtu, dzl, dzu, cy, dw

    def _max_step(self, dtl: FloatArray, dtu: FloatArray, dzl: FloatArray, dzu: FloatArray) -> float:
        return min(self._step_length(self.tl, dtl), self._step_length(self.tu, dtu),
                   self._step_length(self.zl, dzl), self._step_length(self.zu, dzu))

    def iterate(self) -> None:
        """One Mehrotra predictor–corrector iteration, then the measures, then (when the run
        looks divergent or stalls) the attempt to prove infeasibility or unboundedness."""
        if self.outcome != "running":
            return
        nx = self.nx
        has_lo, has_hi = self.has_lo, self.has_hi
        p, tl, tu, zl, zu = self.p, self.tl, self.tu, self.zl, self.zu
        x = p[:nx]
        rdual, rA, rC, rl, ru = self._residuals()
        mu = float((tl * zl + tu * zu).sum() / self.n_comp) if self.n_comp else 0.0
        sig = zl / tl + zu / tu
        sx, ss = sig[:nx], sig[nx:]
        factored = self._factor(sx, ss)
        if factored is None:
            self._restore_best()
            self._end("stalled", "the KKT matrix could not be factored, even regularized")
            return
        Ds, W = factored
        # predictor (affine scaling): complementarity target 0
        rcl = np.where(has_lo, -tl * zl, 0.0)
        rcu = np.where(has_hi, -tu * zu, 0.0)
        dp, dtl, dtu, dzl, dzu, cy, dw = self._direction(rdual, rA, rC, rl, ru, rcl, rcu, sx, ss, Ds, W)
        alpha = self._max_step(dtl, dtu, dzl, dzu)
        if self.n_comp:
            mu_aff = float(((tl + alpha * dtl) * (zl + alpha * dzl) + (tu + alpha * dtu) * (zu + alpha * dzu)).sum()
                           / self.n_comp)
            sigma = min(1.0, (mu_aff / mu) ** 3) if mu > 0 else 0.0
            # corrector: centring and the second-order term of the complementarity
            rcl = np.where(has_lo, sigma * mu - tl * zl - dtl * dzl, 0.0)
            rcu = np.where(has_hi, sigma * mu - tu * zu - dtu * dzu, 0.0)
            dp, dtl, dtu, dzl, dzu, cy, dw = self._direction(rdual, rA, rC, rl, ru, rcl, rcu, sx, ss, Ds, W)
            alpha = min(1.0, self.settings.step_fraction * self._max_step(dtl, dtu, dzl, dzu))
        else:
            alpha = 1.0
        self.x_prev = x.copy()
        self.p = p + alpha * dp
        self.tl = np.where(has_lo, tl + alpha * dtl, 1.0)
        self.tu = np.where(has_hi, tu + alpha * dtu, 1.0)
        self.zl = zl + alpha * dzl
        self.zu = zu + alpha * dzu
        self.yA = self.yA - alpha * cy
        self.w = self.w - alpha * dw
        self.alpha = alpha
        self.iterations += 1
        if self.rho > self.settings.reg and self.solve_err < 1e-12:
            # raised after a zero pivot: back toward the setting once solves are accurate again
            self.rho = self.delta = max(self.settings.reg, 0.1 * self.rho)
        if not (np.isfinite(self.p).all() and np.isfinite(self.zl).all() and np.isfinite(self.zu).all()
                and np.isfinite(self.yA).all() and np.isfinite(self.w).all()):
            self._restore_best()
            self._end("nonfinite", "a NaN or inf appeared in the iterates")
            return
        self.small_steps = self.small_steps + 1 if alpha < 1e-8 else 0
        self._measure()
        if self.outcome == "running":
            self._watch()

    # ---------------------------------------------------------------- the user's point and measures

    def _user_point(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """x, λ, y and the IPM's bound multipliers z in the user's units."""
        pre = self.pre
        nx = self.nx
        x = np.empty(self.n)
        x[pre.keep] = self.D * self.p[:nx]
        x[pre.fixed] = pre.x_fixed
        np.clip(x, self.user[2], self.user[3], out=x)
        ya = self.EA * self.yA / self.cs
        wc = self.EC * self.w / self.cs
        lam = np.zeros(self.m)
        y = np.zeros(self.k)
        na = pre.a_rows.size
        lam[pre.a_rows] = ya[:na]
        y[pre.ceq_rows] = ya[na:]
        y[pre.cin_rows] = wc
        zb = np.zeros(self.n)
        zb[pre.keep] = (self.zl[:nx] - self.zu[:nx]) / (self.cs * self.D)
        return x, lam, y, zb

    def _primal(self, x: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        """The largest violation of the user's constraints at x, with A x and C x."""
        _, _, lb, ub, A, b, C, l, u = self.user
        ax = _mv(A, x) if self.m else np.zeros(0)
        cx = _mv(C, x) if self.k else np.zeros(0)
        pres = float(np.maximum(np.maximum(lb - x, x - ub), 0.0).max(initial=0.0))
        if self.m:
            pres = max(pres, float(np.abs(ax - b).max()))
        if self.k:
            pres = max(pres, float(np.maximum(np.maximum(l - cx, cx - u), 0.0).max()))
        return pres, ax, cx

    def _feas_scale(self, x: FloatArray, ax: FloatArray, cx: FloatArray) -> float:
        """The primal violation's scale, :func:`qpcore.core.optimality.feasibility_scale`'s."""
        _, _, _, _, A, b, C, l, u = self.user
        scale = max(1.0, float(np.abs(x).max(initial=0.0)))
        if self.m:
            scale = max(scale, float(np.abs(b).max()), float(_mv(self.abs_A, np.abs(x)).max()))
        if self.k:
            ends = np.concatenate([l[np.isfinite(l)], u[np.isfinite(u)]])
            scale = max(scale, float(np.abs(ends).max(initial=0.0)), float(_mv(self.abs_C, np.abs(x)).max()))
        return scale

    def _evaluate(self, x: FloatArray, lam: FloatArray, y: FloatArray) -> tuple[float, float, float, FloatArray]:
        """(primal violation, its scale, stationarity, gradient) of the user's point x with the
        multipliers (λ, y), measured the way :func:`qpcore.kkt` measures them: the projected
        reduced gradient of [x; Cx] with reduced gradients [g − Aᵀλ − Cᵀy; y], a variable or row
        within ``BOUND_BAND`` of a bound counting at it."""
        Qm, c, lb, ub, A, b, C, l, u = self.user
        pres, ax, cx = self._primal(x)
        scale = self._feas_scale(x, ax, cx)
        g = _mv(Qm, x) + c
        r = g - (_mv(A.T, lam) if self.m else 0.0) - (_mv(C.T, y) if self.k else 0.0)
        v = np.concatenate([x, cx])
        rv = np.concatenate([r, y])
        vlo, vhi = np.concatenate([lb, l]), np.concatenate([ub, u])
        # the certificate's own terms (qpcore.core.certificate.box_terms: bounds identified in the band, their
        # complementarity counted), so the engine stops where the certificate would
        _, stat, _, _ = box_terms(v, rv, vlo, vhi)
        return pres, scale, stat, g

    def _measure(self) -> None:
        """The user's point, its gradient, and the three measures the run stops on."""
        Qm, c, lb, ub, *_ = self.user
        s = self.settings
        x, lam, y, _ = self._user_point()
        merit = self._merit()
        if merit > _INEXACT and self.iterations > 0:
            # far from a solution (1% residuals): the point and its gradient only, no certificate
            self.x, self.g, self.lam, self.y = x, _mv(Qm, x) + c, lam, y
            self.history.append(merit)
            self.stat_history.append(np.inf)
            return
        rel_gap = abs(self._gap()) / max(1.0, abs(self.info.get("objective", 0.0)))
        pres, scale, stat, g = self._evaluate(x, lam, y)

        def error(pres: float, scale: float, stat: float) -> float:
            return float(max(pres / (s.feas_tol * scale), stat / s.tol, rel_gap / self.gap_tol))

        # onto a bound what lies within the certificate's band of it, where that measures no
        # worse: the point then reads as at its bounds in every measure (the pair gap of one-row
        # problems, which has no band, included)
        with np.errstate(invalid="ignore"):
            xs = np.where(np.isfinite(lb) & (x - lb <= _SNAP * np.maximum(1.0, np.abs(lb))), lb, x)
            xs = np.where(np.isfinite(ub) & (ub - xs <= _SNAP * np.maximum(1.0, np.abs(ub))), ub, xs)
        if error(pres, scale, stat) <= 1e3 and not np.array_equal(xs, x):
            snapped = self._evaluate(xs, lam, y)
            if error(*snapped[:3]) <= max(1.0, error(pres, scale, stat)):
                x, (pres, scale, stat, g) = xs, snapped
        self.x, self.g, self.lam, self.y = x, g, lam, y
        f = float(0.5 * x @ (g + c))
        gap = self._gap()
        rel_gap = abs(gap) / max(1.0, abs(f))
        self.info.update(primal=pres, primal_scale=scale, stationarity=stat, gap=gap, relative_gap=rel_gap,
                         objective=f)
        # the best point is judged as the certificate will judge it; stalls by the engine's merit
        err = error(pres, scale, stat)
        if self.best is None or err < self.best[0]:
            self.best = (err, x.copy(), g.copy(), lam.copy(), y.copy())
            self.info.update(best_primal=pres, best_stationarity=stat, best_relative_gap=rel_gap)
        self.history.append(merit)
        self.stat_history.append(max(stat, pres / scale))
        if pres <= s.feas_tol * scale and stat <= s.tol and rel_gap <= self.gap_tol:
            if self.accept is None or self.accept(x, g, lam, y):
                self._end("converged", "optimal to tol")
            else:
                # an outside certificate measures otherwise (a one-row problem's pair gap): go on
                self.refused += 1

    def _residuals(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, FloatArray]:
        """(dual residual, A x − b, C x − s, and the bound slacks' residuals) of the current
        iterate, computed once per iterate."""
        if self.resid_at != self.iterations:
            p, nx = self.p, self.nx
            rdual = self._dual_residual_core(p, self.yA, self.w) - self.zl + self.zu
            rA = _mv(self.A, p[:nx]) - self.b
            rC = _mv(self.C, p[:nx]) - p[nx:]
            self.resid = (rdual, rA, rC, *self._slack_residuals(p))
            self.resid_at = self.iterations
        return self.resid

    def _merit(self) -> float:
        """The engine's own progress measure (scaled units): the largest of the relative dual and
        primal residuals and the mean complementarity; a stall is this not halving."""
        rd, rA, rC, rl, ru = self._residuals()
        rp = np.concatenate([rA, rC, rl, ru])
        mu = float((self.tl * self.zl + self.tu * self.zu).sum() / self.n_comp) if self.n_comp else 0.0
        # floored at rounding: going below it is no progress (a stall is then seen as one)
        return max(float(np.abs(rd).max(initial=0.0)) / self.norm_c, float(np.abs(rp).max(initial=0.0)) / self.norm_b,
                   mu, 1e-14)

    def _gap(self) -> float:
        """f − d in the user's units: d = −½xᵀQx + bᵀy + Σ lo·zl − Σ hi·zu (scaled, then / cs)."""
        if not hasattr(self, "p"):
            return 0.0
        x = self.p[:self.nx]
        qx = _mv(self.Q, x)
        primal = 0.5 * x @ qx + self.c @ x
        dual = -0.5 * x @ qx + self.b @ self.yA + float(self.lo_f @ self.zl - self.hi_f @ self.zu)
        return float((primal - dual) / self.cs)

    def _end(self, outcome: Outcome, reason: str) -> None:
        self.outcome = outcome
        self.reason = reason

    def _restore_best(self) -> None:
        if self.best is not None:
            _, x, g, lam, y = self.best
            self.x, self.g, self.lam, self.y = x, g, lam, y

    def multipliers(self) -> tuple[FloatArray, FloatArray]:
        """(λ, y) of the current point, in the user's units and sign convention."""
        return self.lam, self.y

    def result(self) -> IPMOutcome:
        """The outcome so far: the point, its multipliers, the status and the measures."""
        Qm, c, lb, ub, A, b, C, l, u = self.user
        x, g, lam, y = self.x, self.g, self.lam, self.y
        z = g - (_mv(A.T, lam) if self.m else 0.0) - (_mv(C.T, y) if self.k else 0.0)
        info = dict(self.info)
        info["reason"] = self.reason
        info.update(self.certificate)
        return IPMOutcome(x=x, lam=lam, y=y, z=np.asarray(z, dtype=np.float64), status=self.outcome,
                          objective=float(0.5 * x @ (g + c)), iterations=self.iterations, info=info)

    # ---------------------------------------------------------------- divergence and stalls

    def _at_precision_floor(self) -> bool:
        """Whether the residuals are at the rounding level of their own terms and μ is negligible:
        further iterations cannot improve the point (huge multipliers, e.g. QFORPLAN's)."""
        p, nx = self.p, self.nx
        x = p[:nx]
        qx, aty, ctw = _mv(self.Q, x), _mv(self.AT, self.yA), _mv(self.CT, self.w)
        rd = np.concatenate([qx + self.c - aty - ctw, self.w]) - self.zl + self.zu
        big_d = max(float(np.abs(qx).max(initial=0)), float(np.abs(self.c).max(initial=0)),
                    float(np.abs(aty).max(initial=0)), float(np.abs(ctw).max(initial=0)),
                    float(np.abs(self.zl).max(initial=0)), float(np.abs(self.zu).max(initial=0)), 1.0)
        ax, cx = _mv(self.A, x), _mv(self.C, x)
        rl, ru = self._slack_residuals(p)
        rp = max(float(np.abs(ax - self.b).max(initial=0)), float(np.abs(cx - p[nx:]).max(initial=0)),
                 float(np.abs(rl).max(initial=0)), float(np.abs(ru).max(initial=0)))
        big_p = max(float(np.abs(ax).max(initial=0)), float(np.abs(self.b).max(initial=0)),
                    float(np.abs(cx).max(initial=0)), float(np.abs(p).max(initial=0)), 1.0)
        mu = float((self.tl * self.zl + self.tu * self.zu).sum() / self.n_comp) if self.n_comp else 0.0
        f = abs(float(0.5 * x @ qx + self.c @ x))
        eps = 1e-14
        return (float(np.abs(rd).max(initial=0)) <= eps * big_d and rp <= eps * big_p
                and self.n_comp * mu <= 0.1 * eps * max(1.0, f))

    def _watch(self) -> None:
        """Decide whether the run looks divergent or stalled; if so, try to prove why."""
        s = self.settings
        it = self.iterations
        dual_norm = max(float(np.abs(self.yA).max(initial=0)), float(np.abs(self.w).max(initial=0)),
                        float(np.abs(self.zl).max(initial=0)), float(np.abs(self.zu).max(initial=0)))
        primal_norm = float(np.abs(self.p).max(initial=0))
        h = self.history
        window = s.stall_window
        stats = self.stat_history
        # no progress: neither the engine's merit nor the certificate's measure halved in a window
        recent = min(stats[-window:]) if len(stats) > window else np.inf
        stalled = (len(h) > window and min(h[-window:]) > 0.5 * min(h[:-window])
                   and (not np.isfinite(recent) or recent > 0.5 * min(stats[:-window])))
        # at the rounding level of the residuals, an iteration that no longer halves the
        # certificate's measure ends the run (more would only wander: μ below rounding)
        if it >= 5 and h[-1] < 1e-6 and self._at_precision_floor():
            self.floor_seen = True
        if self.floor_seen and len(stats) > 1 and (stats[-1] > 0.5 * stats[-2] or h[-1] > 100 * min(h)):
            self._restore_best()
            self._end("stalled", "the residuals are at the rounding level of their terms: the point cannot be "
                                 "improved in double precision (the best found)")
            return
        suspect = (dual_norm > 1e10 or primal_norm > 1e10 or self.small_steps >= 3 or stalled)
        if not suspect or it - self.diagnosed_at < window:
            return
        self.diagnosed_at = it
        verdict = self._diagnose()
        if verdict is not None:
            self._restore_best()
            self._end(*verdict)
            return
        self.diagnoses += 1
        if stalled or self.small_steps >= 3:
            # the problem has a minimizer (feasible, no descent ray) and the iterations stall
            if self.diagnoses >= 2 or (min(h[-window:]) >= min(h[:-window])
                                       and (not np.isfinite(recent) or recent >= min(stats[:-window]))):
                if self.restarts == 0 and (self.best is None or self.best[0] > 1e3):
                    # far from any solution: once more from the start, with a stronger
                    # regularization and shorter steps (the best point so far is kept)
                    self._restart()
                    return
                self._restore_best()
                self._end("stalled", "no progress: the problem is feasible and bounded (checked), "
                                     "but the iterations stall; the point is the best found")

    def _restart(self) -> None:
        self.restarts += 1
        self.info["restarts"] = self.restarts
        self.rho = self.delta = max(self.rho, 1e-7)
        self.settings = attrs.evolve(self.settings, reg=self.rho, step_fraction=min(self.settings.step_fraction, 0.95))
        self._start()
        self.history.clear()
        self.stat_history.clear()
        self.diagnosed_at = self.iterations
        self.diagnoses = 0
        self.small_steps = 0
        self.floor_seen = False
        self.resid_at = -1

    def _diagnose(self) -> tuple[Outcome, str] | None:
        """Try to prove infeasibility or unboundedness: a Farkas certificate from the diverging
        duals (verified exactly); else the feasibility LP (HiGHS); for a feasible problem the
        recession LP's ray, or the diverging primal iterates' own direction (both verified)."""
        _, lam, y, _ = self._user_point()
        cert = self._farkas_from(lam, y)
        if cert is not None:
            return "primal_infeasible", cert
        feasible, message = self._feasible_lp()
        self.info["feasibility_lp"] = message
        if feasible is False:
            return "primal_infeasible", f"the feasibility LP (HiGHS) has no solution: {message}"
        if feasible is None:
            return None
        ray_msg = self._ray_lp()
        if ray_msg is not None:
            return "unbounded", ray_msg
        x = self._user_x(self.p[:self.nx])
        for d in (x, x - self._user_x(self.x_prev)):
            ray = self._ray_from(d)
            if ray is not None:
                return "unbounded", ray
        return None

    def _user_x(self, xs: FloatArray) -> FloatArray:
        x = np.empty(self.n)
        x[self.pre.keep] = self.D * xs
        x[self.pre.fixed] = self.pre.x_fixed
        return x

    def _farkas_from(self, lam: FloatArray, y: FloatArray) -> str | None:
        """Verify (λ, y) as a Farkas certificate of the user's constraints; a message when it is one.

        With a = Aᵀλ + Cᵀy, the bound multipliers z = −a where a bound allows that sign; for
        every feasible x, 0 = xᵀ(a + z) − eᵀx ≥ bᵀλ + h(y) + h(z) − eᵀx, so a positive value V with
        e = 0 proves infeasibility (h the support terms: l·y⁺ − u·y⁻, lb·z⁺ − ub·z⁻).
        """
        Qm, c, lb, ub, A, b, C, l, u = self.user
        lam = np.asarray(lam, dtype=np.float64).copy()
        y = np.asarray(y, dtype=np.float64).copy()
        norm = max(float(np.abs(lam).max(initial=0)), float(np.abs(y).max(initial=0)))
        if not norm > 0 or not np.isfinite(norm):
            return None
        lam /= norm
        y /= norm
        # a row's multiplier may only take the sign its finite end allows
        y = np.where(y > 0, np.where(np.isfinite(l), y, 0.0), np.where(np.isfinite(u), y, 0.0))
        a = (_mv(A.T, lam) if self.m else np.zeros(self.n)) + (_mv(C.T, y) if self.k else np.zeros(self.n))
        z = -a
        ok = np.where(z > 0, np.isfinite(lb), np.where(z < 0, np.isfinite(ub), True))
        e = np.where(ok, 0.0, a)
        z = np.where(ok, z, 0.0)
        terms = [b * lam, np.where(y > 0, np.where(np.isfinite(l), l, 0.0) * y, np.where(np.isfinite(u), u, 0.0) * y),
                 np.where(z > 0, np.where(np.isfinite(lb), lb, 0.0) * z, np.where(np.isfinite(ub), ub, 0.0) * z)]
        value = float(sum(float(t.sum()) for t in terms))
        size = float(sum(float(np.abs(t).sum()) for t in terms))
        scale_a = max(1.0, float((_abs_mv(A.T, np.abs(lam)) if self.m else np.zeros(1)).max(initial=0)),
                      float((_abs_mv(C.T, np.abs(y)) if self.k else np.zeros(1)).max(initial=0)))
        resid = float(np.abs(e).max(initial=0.0))
        if resid <= 1e-12 * scale_a and value > 1e-9 * max(1.0, size):
            self.certificate = {"farkas_lam": lam, "farkas_y": y, "farkas_z": z}
            return (f"Farkas certificate: multipliers (λ, y, z) with Aᵀλ + Cᵀy + z = 0 (residual {resid:.1e} on "
                    f"unbounded variables) and bᵀλ + l·y⁺ − u·y⁻ + lb·z⁺ − ub·z⁻ = {value:.3g} > 0")
        return None

    def _ray_from(self, d: FloatArray) -> str | None:
        """Verify d as a descent direction of recession; a message when it is one."""
        Qm, c, lb, ub, A, b, C, l, u = self.user
        norm = float(np.abs(d).max(initial=0.0))
        if not norm > 0 or not np.isfinite(norm):
            return None
        d = d / norm
        d = np.where(np.isfinite(lb), np.maximum(d, 0.0), d)
        d = np.where(np.isfinite(ub), np.minimum(d, 0.0), d)
        return self._check_ray(d)

    def _check_ray(self, d: FloatArray) -> str | None:
        Qm, c, lb, ub, A, b, C, l, u = self.user
        norm = float(np.abs(d).max(initial=0.0))
        if not norm > 0:
            return None
        d = d / norm
        if np.any((d > 0) & np.isfinite(ub)) or np.any((d < 0) & np.isfinite(lb)):
            return None
        cd = float(c @ d)
        qscale = max(1.0, float(np.abs(Qm).max(initial=0.0)) if not _is_sparse(Qm) else float(abs(Qm).max()))
        qd = float(np.abs(_mv(Qm, d)).max(initial=0.0))
        ad = float(np.abs(_mv(A, d)).max(initial=0.0)) if self.m else 0.0
        cdv = _mv(C, d) if self.k else np.zeros(0)
        cone = float(np.maximum(np.where(np.isfinite(l), -cdv, 0.0), np.where(np.isfinite(u), cdv, 0.0))
                     .max(initial=0.0))
        ascale = max(1.0, float(np.abs(A).max(initial=0)) if self.m and not _is_sparse(A) else
                     (float(abs(A).max()) if self.m else 1.0))
        cscale = max(1.0, float(np.abs(C).max(initial=0)) if self.k and not _is_sparse(C) else
                     (float(abs(C).max()) if self.k else 1.0))
        if (cd < -1e-6 * max(1.0, float(np.abs(c).max(initial=0))) and qd <= 1e-9 * qscale and ad <= 1e-9 * ascale
                and cone <= 1e-9 * cscale):
            self.certificate = {"ray": d}
            return (f"a recession direction d (‖d‖∞ = 1) with cᵀd = {cd:.3g} < 0, ‖Qd‖∞ = {qd:.1e}, ‖Ad‖∞ = {ad:.1e}, "
                    f"C d in the rows' recession cone to {cone:.1e}, d in the box's; the problem is feasible "
                    f"(feasibility LP, HiGHS)")
        return None

    def _lp_parts(self) -> tuple[Any, Any, Any, Any, list[tuple[float | None, float | None]]]:
        Qm, c, lb, ub, A, b, C, l, u = self.user
        up, lo = np.isfinite(u), np.isfinite(l)
        if self.k:
            if _is_sparse(C):
                A_ub: Any = sp.vstack([C[up], -C[lo]]).tocsr()
            else:
                A_ub = np.vstack([C[up], -C[lo]])
            b_ub: Any = np.concatenate([u[up], -l[lo]])
        else:
            A_ub = b_ub = None
        bounds = [(None if not np.isfinite(a) else float(a), None if not np.isfinite(z) else float(z))
                  for a, z in zip(lb, ub)]
        return A_ub, b_ub, (A if self.m else None), (b if self.m else None), bounds

    def _feasible_lp(self) -> tuple[bool | None, str]:
        """The feasibility LP's verdict: True (a point exists), False (none), None (no verdict)."""
        if "feasible_lp" in self.info:
            verdict: tuple[bool | None, str] = self.info["feasible_lp"]
            return verdict
        from scipy.optimize import linprog

        A_ub, b_ub, A_eq, b_eq, bounds = self._lp_parts()
        res = linprog(np.zeros(self.n), A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
        out: tuple[bool | None, str] = ((True if res.status == 0 else False if res.status == 2 else None),
                                        str(res.message).strip())
        self.info["feasible_lp"] = out
        return out

    def _ray_lp(self) -> str | None:
        """Minimize cᵀd over the recession cone ∩ {Qd = 0} ∩ [−1, 1]ⁿ (HiGHS); a verified ray's
        message when the minimum is negative."""
        from scipy.optimize import linprog

        Qm, c, lb, ub, A, b, C, l, u = self.user
        if not np.any(c):
            return None
        blocks = [Qm] + ([A] if self.m else [])
        if any(_is_sparse(M) for M in blocks):
            A_eq: Any = sp.vstack([sp.csr_matrix(M) for M in blocks]).tocsr()
        else:
            A_eq = np.vstack(blocks)
        up, lo = np.isfinite(u), np.isfinite(l)
        if self.k and (up.any() or lo.any()):
            A_ub: Any = (sp.vstack([C[up], -C[lo]]).tocsr() if _is_sparse(C) else np.vstack([C[up], -C[lo]]))
            b_ub: Any = np.zeros(int(up.sum() + lo.sum()))
        else:
            A_ub = b_ub = None
        bounds = [(0.0 if np.isfinite(a) else -1.0, 0.0 if np.isfinite(z) else 1.0) for a, z in zip(lb, ub)]
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=np.zeros(A_eq.shape[0]), bounds=bounds, method="highs")
        self.info["ray_lp"] = str(res.message).strip()
        if res.status != 0 or res.fun >= 0:
            return None
        d = np.asarray(res.x, dtype=np.float64)
        return self._check_ray(d)


# --------------------------------------------------------------------------------------------
# The array-level solve
# --------------------------------------------------------------------------------------------

def ipm_solve(Q: Any, c: Any, lb: Any = None, ub: Any = None, A: Any = None, b: Any = None, C: Any = None,
              l: Any = None, u: Any = None, *, settings: IPMSettings | None = None,
              time_limit: float | None = None, **options: Any) -> IPMOutcome:
    """Solve ``min ½xᵀQx + cᵀx  s.t.  lb ≤ x ≤ ub, A x = b, l ≤ C x ≤ u`` by the interior point method.

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        n×n symmetric positive semidefinite.
    c : array_like
        Linear term.
    lb, ub : array_like, optional
        Bounds (default ∓inf).
    A, b : optional
        Equality rows.
    C, l, u : optional
        Inequality rows l ≤ C x ≤ u.
    settings : IPMSettings, optional
        The engine's settings; ``**options`` override its fields (``tol=1e-9``, ...).
    time_limit : float, optional
        Seconds.

    Returns
    -------
    IPMOutcome
    """
    base = settings or IPMSettings()
    if options:
        base = attrs.evolve(base, **options)
    deadline = time.perf_counter() + time_limit if time_limit is not None else math.inf
    core = IPMCore(Q, c, lb, ub, A, b, C, l, u, settings=base)
    while core.outcome == "running":
        if core.iterations >= base.max_iter:
            core._restore_best()
            core._end("max_iter", "iteration limit reached")
            break
        if time.perf_counter() >= deadline:
            core._restore_best()
            core._end("stalled", "time limit reached")
            break
        core.iterate()
    return core.result()




# --------------------------------------------------------------------------------------------
# The strategy
# --------------------------------------------------------------------------------------------

@attrs.define(slots=True, eq=False)
class IPMWork(Work):
    """The interior point run: its engine and the tolerance."""

    core: IPMCore
    tol: float

    def release(self) -> None:
        """No ``resume``: a finished run keeps no factor."""
        return None


_STATUS = {"primal_infeasible": Status.PRIMAL_INFEASIBLE, "unbounded": Status.UNBOUNDED, "stalled": Status.STALLED,
           "max_iter": Status.MAX_ITER, "nonfinite": Status.NONFINITE}


def _q_matrix(Q: Any, n: int) -> Any:
    """Q as a matrix: a ``DenseQ``'s ndarray, a ``SparseQ``'s csr, else the principal block."""
    if isinstance(Q, DenseQ):
        return Q.M
    if isinstance(Q, SparseQ):
        return Q.M
    return principal_block(Q, np.arange(n))


@attrs.frozen
class InteriorPoint(Strategy):
    """Mehrotra predictor–corrector primal–dual interior point method for general convex QPs.

    Works on the user's problem (box, A x = b, l ≤ C x ≤ u) directly; one ``step`` is one IPM
    iteration. See :mod:`qpcore_strategies.interior_point` for the method and why it was chosen.

    Parameters
    ----------
    linear_solver : {"auto", "dense", "sparse"}
        KKT factorization: LAPACK's dense ``sytrf`` or SuperLU; ``auto`` by size and density.
    reg : float
        Primal and dual regularization of the factored matrix (the steps are refined on the
        unregularized system).
    ruiz_iter : int
        Ruiz equilibration passes.
    gap_tol : float or None
        Bound on the relative duality gap; None: the run's tol.
    step_fraction : float
        Fraction of the step to the boundary.
    max_dense_n : int
        Largest n taken when Q is neither a ``DenseQ`` nor a ``SparseQ`` (its matrix is formed).
    """

    takes_inequalities: ClassVar[bool] = True

    linear_solver: str = attrs.field(default="auto", validator=attrs.validators.in_(("auto", "dense", "sparse")))
    reg: float = attrs.field(default=1e-9, validator=attrs.validators.gt(0.0))
    ruiz_iter: int = attrs.field(default=15, validator=attrs.validators.ge(0))
    gap_tol: float | None = None
    step_fraction: float = attrs.field(default=0.99, validator=[attrs.validators.gt(0.0), attrs.validators.lt(1.0)])
    max_dense_n: int = 5000

    def accepts(self, qp: QP) -> str | None:
        """Any problem whose Q is a ``DenseQ`` or a ``SparseQ``; another operator up to ``max_dense_n``."""
        if isinstance(qp.Q, DenseQ) or isinstance(qp.Q, SparseQ):
            return None
        if qp.n > self.max_dense_n:
            return (f"InteriorPoint forms Q as a matrix: {type(qp.Q).__name__} with n = {qp.n} > max_dense_n = "
                    f"{self.max_dense_n}; use GPCG (products only) or a decomposition")
        return None

    def init(self, qp: QP, x0: FloatArray | None, tol: float) -> State:
        """Build the engine (presolve, scaling, the KKT pattern, the starting point); ``x0`` is not
        used (an interior point method starts from the centre, not from a vertex)."""
        self.check(qp)
        settings = IPMSettings(tol=tol, gap_tol=self.gap_tol, linear_solver=self.linear_solver, reg=self.reg,
                               ruiz_iter=self.ruiz_iter, step_fraction=self.step_fraction, max_iter=2 ** 62)
        k = qp.k

        def certified(x: FloatArray, g: FloatArray, lam: FloatArray, y: FloatArray) -> bool:
            # the loop's own certificate (for one equality row it is LIBSVM's pair gap, not the
            # stationarity the engine measures): done only where it agrees
            cert = kkt(qp, x, g, (lam, y if k else None))
            return bool(cert.measure <= tol and cert.feasible())

        core = IPMCore(_q_matrix(qp.Q, qp.n), qp.c, qp.lb, qp.ub, qp.A if qp.m else None, qp.b if qp.m else None,
                       qp.C if k else None, qp.l if k else None, qp.u if k else None, settings=settings,
                       accept=certified)
        state = State(x=core.x.copy(), g=core.g.copy(), status=bound_status(core.x, qp.lb, qp.ub),
                      work=IPMWork(core=core, tol=tol))
        if getattr(qp.Q, "psd", None) is False:
            state.nonconvex = True
        self._sync(core, state)
        return state

    def _sync(self, core: IPMCore, state: State) -> None:
        state.x, state.g = core.x, core.g
        if core.outcome == "converged":
            state.done = True
        elif core.outcome != "running":
            state.stop = _STATUS[core.outcome]

    def step(self, qp: QP, state: State) -> None:
        """One predictor–corrector iteration."""
        core = state.work(IPMWork).core
        core.iterate()
        self._sync(core, state)

    def finish(self, qp: QP, state: State) -> None:
        """A run that ends unconverged (a limit) returns the best point met."""
        core = state.work(IPMWork).core
        if core.outcome == "running":
            core._restore_best()
            state.x, state.g = core.x, core.g
        state.status = bound_status(state.x, qp.lb, qp.ub)

    def multipliers(self, qp: QP, state: State) -> tuple[FloatArray, FloatArray] | None:
        """The IPM's (λ, y) in the user's units and the certificate's sign convention."""
        work = state.work_or_none(IPMWork)
        if work is None:
            return None
        return work.core.multipliers()

    def report(self, state: State) -> dict[str, Any]:
        """The linear solver, the engine's last measures, and the verdict's proof when there is one."""
        work = state.work_or_none(IPMWork)
        if work is None:
            return {}
        core = work.core
        out: dict[str, Any] = {"ipm_outcome": core.outcome, "ipm_reason": core.reason}
        for key in ("linear_solver", "kkt_size", "primal", "stationarity", "relative_gap", "feasibility_lp", "ray_lp"):
            if key in core.info:
                out[f"ipm_{key}"] = core.info[key]
        return out
