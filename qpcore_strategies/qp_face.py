"""The general convex QP's face, for the exact active-set finish: residuals and the face solver.

    minimize ½xᵀQx + cᵀx   subject to   lb ≤ x ≤ ub,   A x = b,   l ≤ C x ≤ u

**Residuals** (:func:`residuals`), in the user's terms and the sign convention of
:func:`qpcore.kkt` (stationarity Qx + c − Aᵀλ − Cᵀy − z = 0; z ≥ 0 at a lower bound, ≤ 0 at an
upper one; y ≥ 0 where C x = l, ≤ 0 where C x = u), as qpbenchmark defines them: the primal
residual (largest violation of the box, of A x = b and of l ≤ C x ≤ u), the dual residual
‖Qx + c − Aᵀλ − Cᵀy − z‖∞ with the multipliers projected on their sign cones (a multiplier of an
infinite bound is 0), and the duality gap |xᵀQx + cᵀx − bᵀλ − Σ bounds·multipliers|. Each is
also given relative to the size of its terms; :attr:`Residuals.measure` is the largest relative
one, which the finish's acceptance test compares.

**The face** (``_QPFace``, a :class:`qpcore_strategies.block_pivoting.Face` whose pairs are the n
variables' bounds, then the k rows of C): with the free variables F and the active rows E (the
equality rows and the active rows of C), one factorization of the KKT matrix
``[[Q_FF + ρI, E_Fᵀ], [E_F, −δI]]`` (symmetrically equilibrated first), refined iteratively
against the unregularized matrix and warm-started at the current point and multipliers. Each
refinement step is then a proximal step of the face problem, so a singular but consistent face
(duplicated rows, a rank-deficient Q_FF, a degenerate vertex) converges to the solution nearest
the start, and an unbounded face moves far along its descent direction, into the constraints
that the next step activates. The refinement ends only when the residual stops falling in
absolute terms, block by block (the active rows in their units, stationarity in the gradient's),
or when every row is at the rounding of its own terms: a normwise test over the whole vector is
dominated by multipliers of 1e7 and calls a warm start solved whose rows are still off by 1e-10
(an interior point's own residual), which those multipliers turn into a duality gap of 1e-7.
Fixed variables and active bounds are set exactly; the multipliers of the bounds are the reduced
gradient at the final point. Dense LAPACK for small or dense systems, scipy's sparse LU (SuperLU)
otherwise.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Literal

import attrs
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

__all__ = ["Residuals", "residuals"]

FloatArray = NDArray[np.float64]
Int8Array = NDArray[np.int8]
IndexArray = NDArray[np.intp]
Matrix = Any            # an ndarray or a scipy.sparse matrix

_EPS = float(np.finfo(np.float64).eps)


# --------------------------------------------------------------------------------------------------
# residuals in the user's terms


@attrs.frozen
class Residuals:
    """Residuals of a point and its multipliers (qpbenchmark's three measures).

    Attributes
    ----------
    primal : float
        Largest violation of lb ≤ x ≤ ub, A x = b and l ≤ C x ≤ u (absolute).
    dual : float
        ‖Qx + c − Aᵀλ − Cᵀy − z‖∞ with the multipliers projected on their sign cones.
    gap : float
        |xᵀQx + cᵀx − bᵀλ − (lᵀy⁺ + uᵀy⁻) − (lbᵀz⁺ + ubᵀz⁻)| with the projected multipliers.
    primal_scale, dual_scale, gap_scale : float
        max(1, the ∞-norms of the terms of each residual): ‖x‖, ‖Ax‖, ‖b‖, ‖Cx‖; ‖Qx‖, ‖c‖,
        ‖Aᵀλ‖, ‖Cᵀy‖, ‖z‖; |xᵀQx|, |cᵀx|, |bᵀλ| and the bound terms.
    """

    primal: float
    dual: float
    gap: float
    primal_scale: float = 1.0
    dual_scale: float = 1.0
    gap_scale: float = 1.0

    @property
    def relative(self) -> tuple[float, float, float]:
        """(primal, dual, gap), each divided by its scale."""
        return (self.primal / self.primal_scale, self.dual / self.dual_scale, self.gap / self.gap_scale)

    @property
    def measure(self) -> float:
        """The largest relative residual (inf when any is not finite): what the finish compares."""
        m = max(self.relative)
        return float(m) if np.isfinite(m) else float("inf")

    def __str__(self) -> str:
        p, d, g = self.relative
        return f"primal {self.primal:.2e} ({p:.1e} rel), dual {self.dual:.2e} ({d:.1e}), gap {self.gap:.2e} ({g:.1e})"


def _cone(v: FloatArray, lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(v⁺ where lo is finite, v⁻ where hi is finite): a multiplier projected on its sign cone."""
    pos = np.where(np.isfinite(lo), np.maximum(v, 0.0), 0.0)
    neg = np.where(np.isfinite(hi), np.minimum(v, 0.0), 0.0)
    return pos, neg


def _bound_term(pos: FloatArray, neg: FloatArray, lo: FloatArray, hi: FloatArray) -> float:
    """loᵀpos + hiᵀneg, with 0·inf = 0 (a projected multiplier vanishes on an infinite bound)."""
    a = float(np.dot(np.where(pos != 0, lo, 0.0), pos))
    b = float(np.dot(np.where(neg != 0, hi, 0.0), neg))
    return a + b


def _norm(v: FloatArray) -> float:
    return float(np.abs(v).max(initial=0.0))


def residuals(Q: Matrix, c: FloatArray, lb: FloatArray, ub: FloatArray, A: Matrix, b: FloatArray, C: Matrix,
              l: FloatArray, u: FloatArray, x: FloatArray, lam: FloatArray, y: FloatArray,
              z: FloatArray) -> Residuals:
    """The residuals of ``x`` with multipliers ``(lam, y, z)`` (see :class:`Residuals`).

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        The Hessian (n × n).
    c, lb, ub : ndarray
        Linear term and bounds (±inf allowed).
    A, b : matrix, ndarray
        Equality rows (m × n) and right-hand side.
    C, l, u : matrix, ndarray
        Inequality rows (k × n) and their bounds (±inf allowed).
    x, lam, y, z : ndarray
        The point, the multipliers of A x = b, of l ≤ C x ≤ u and of the box.

    Returns
    -------
    Residuals
    """
    Qx = np.asarray(Q @ x, dtype=np.float64)
    Ax = np.asarray(A @ x, dtype=np.float64)
    Cx = np.asarray(C @ x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        primal = max(_norm(np.maximum(np.maximum(lb - x, x - ub), 0.0)), _norm(Ax - b),
                     _norm(np.maximum(np.maximum(l - Cx, Cx - u), 0.0)))
    zp, zn = _cone(z, lb, ub)
    yp, yn = _cone(y, l, u)
    ATl = np.asarray(A.T @ lam, dtype=np.float64)
    CTy = np.asarray(C.T @ (yp + yn), dtype=np.float64)
    zz = zp + zn
    dual = _norm(Qx + c - ATl - CTy - zz)
    xQx, cx, bl = float(x @ Qx), float(c @ x), float(b @ lam)
    rows, box = _bound_term(yp, yn, l, u), _bound_term(zp, zn, lb, ub)
    gap = abs(xQx + cx - bl - rows - box)
    return Residuals(primal=primal, dual=dual, gap=gap,
                     primal_scale=max(1.0, _norm(x), _norm(Ax), _norm(b), _norm(Cx)),
                     dual_scale=max(1.0, _norm(Qx), _norm(c), _norm(ATl), _norm(CTy), _norm(zz)),
                     gap_scale=max(1.0, abs(xQx), abs(cx), abs(bl), abs(rows), abs(box)))



# --------------------------------------------------------------------------------------------------
# the general QP's face


@attrs.frozen(eq=False)
class _Data:
    """The problem as arrays (Q, A, C dense or CSR)."""

    Q: Matrix
    c: FloatArray
    lb: FloatArray
    ub: FloatArray
    A: Matrix
    b: FloatArray
    C: Matrix
    l: FloatArray
    u: FloatArray

    @property
    def n(self) -> int:
        return int(self.c.shape[0])

    @property
    def m(self) -> int:
        return int(self.b.shape[0])

    @property
    def k(self) -> int:
        return int(self.l.shape[0])

    @property
    def sparse(self) -> bool:
        return bool(sp.issparse(self.Q) or sp.issparse(self.A) or sp.issparse(self.C))

    def residuals(self, x: FloatArray, lam: FloatArray, y: FloatArray, z: FloatArray) -> Residuals:
        return residuals(self.Q, self.c, self.lb, self.ub, self.A, self.b, self.C, self.l, self.u, x, lam, y, z)

    def gradient(self, x: FloatArray) -> FloatArray:
        return np.asarray(self.Q @ x, dtype=np.float64) + self.c

    def reduced(self, g: FloatArray, lam: FloatArray, y: FloatArray) -> FloatArray:
        """g − Aᵀλ − Cᵀy: the bound multipliers that stationarity asks for."""
        return g - np.asarray(self.A.T @ lam, dtype=np.float64) - np.asarray(self.C.T @ y, dtype=np.float64)


@attrs.frozen(eq=False)
class _Point:
    """A face solution of the general QP (a :class:`qpcore_strategies.block_pivoting.FaceSolution`)."""

    x: FloatArray
    lam: FloatArray
    y: FloatArray
    z: FloatArray
    value: FloatArray
    mult: FloatArray
    refine_residual: float
    state: Int8Array | None = None


def _rows(M: Matrix, idx: IndexArray) -> Matrix:
    return M[idx]


def _cols(M: Matrix, idx: IndexArray) -> Matrix:
    return M[:, idx]


def _equilibrate(K: Matrix, iterations: int = 20) -> FloatArray:
    """Symmetric Ruiz scaling d (D K D has rows of largest entry ≈ 1); 1 on zero rows."""
    N = K.shape[0]
    d = np.ones(N)
    absK = abs(K) if sp.issparse(K) else np.abs(K)
    for _ in range(iterations):
        if sp.issparse(absK):
            scaled = sp.diags(d) @ absK @ sp.diags(d)
            rmax = np.asarray(scaled.max(axis=1).toarray()).ravel()
        else:
            rmax = (absK * d[:, None] * d[None, :]).max(axis=1, initial=0.0)
        rmax = np.where(rmax > 0, rmax, 1.0)
        d = d / np.sqrt(rmax)
        if np.abs(1.0 - rmax).max(initial=0.0) < 0.05:
            break
    return d


class _QPFace:
    """The face solver of the general QP: one factorization per face, refined (see the module)."""

    def __init__(self, data: _Data, x: FloatArray, lam: FloatArray, y: FloatArray, *, reg: float,
                 max_refine: int, method: Literal["auto", "dense", "sparse"], dense_max: int) -> None:
        self.data = data
        self.x, self.lam, self.y = x.copy(), lam.copy(), y.copy()
        self.reg, self.max_refine, self.method, self.dense_max = reg, max_refine, method, dense_max
        self.factorizations = 0
        self.refinements = 0
        self.sparse_factors = 0

    def _kkt(self, F: IndexArray, N: IndexArray, W: IndexArray, xN: FloatArray,
             tW: FloatArray) -> tuple[Matrix, FloatArray, FloatArray]:
        """The unregularized KKT matrix of the face, its right-hand side, and the size of the
        right-hand side's terms (|c_F| + |Q_FN||x_N|, |b| + |E_N||x_N|: the rounding it carries)."""
        d = self.data
        sparse = d.sparse
        QF = _rows(d.Q, F)
        QFF, QFN = _cols(QF, F), _cols(QF, N)
        EF_parts = [_cols(d.A, F), _cols(_rows(d.C, W), F)]
        EN_parts = [_cols(d.A, N), _cols(_rows(d.C, W), N)]
        if sparse:
            EF = sp.vstack([sp.csr_matrix(M) for M in EF_parts], format="csr")
            EN = sp.vstack([sp.csr_matrix(M) for M in EN_parts], format="csr")
            QFF, QFN = sp.csr_matrix(QFF), sp.csr_matrix(QFN)
            K: Matrix = sp.bmat([[QFF, EF.T], [EF, None]], format="csc")
        else:
            EF, EN = np.vstack(EF_parts), np.vstack(EN_parts)
            nE = EF.shape[0]
            K = np.block([[QFF, EF.T], [EF, np.zeros((nE, nE))]])
        r1 = -d.c[F] - np.asarray(QFN @ xN, dtype=np.float64)
        bE = np.concatenate([d.b, tW])
        r2 = bE - np.asarray(EN @ xN, dtype=np.float64)
        axN = np.abs(xN)
        t1 = np.abs(d.c[F]) + np.asarray(abs(QFN) @ axN, dtype=np.float64)
        t2 = np.abs(bE) + np.asarray(abs(EN) @ axN, dtype=np.float64)
        return K, np.concatenate([r1, r2]), np.concatenate([t1, t2])

    def solve(self, state: Int8Array) -> _Point:
        d = self.data
        n, m = d.n, d.m
        vs, rs = state[:n], state[n:]
        F = np.flatnonzero(vs == 0)
        N = np.flatnonzero(vs != 0)
        W = np.flatnonzero(rs != 0)
        xN = np.where(vs[N] < 0, d.lb[N], d.ub[N])
        tW = np.where(rs[W] < 0, d.l[W], d.u[W])
        K, rhs, rhs_terms = self._kkt(F, N, W, xN, tW)
        nF = F.size
        N_all = K.shape[0]
        # warm start: the current point and multipliers (the unknowns are x_F and w = −(λ, y_W))
        sol = np.concatenate([self.x[F], -self.lam, -self.y[W]])
        if N_all:
            sol, res = self._solve_kkt(K, rhs, sol, nF, rhs_terms)
        else:
            res = 0.0
        x = np.empty(n)
        x[N] = xN
        x[F] = sol[:nF]
        lam = -sol[nF:nF + m]
        y = np.zeros(d.k)
        y[W] = -sol[nF + m:]
        g = d.gradient(x)
        z = d.reduced(g, lam, y)
        z[F] = 0.0
        self.x, self.lam, self.y = x, lam, y
        Cx = np.asarray(d.C @ x, dtype=np.float64)
        return _Point(x=x, lam=lam, y=y, z=z, value=np.concatenate([x, Cx]), mult=np.concatenate([z, y]),
                      refine_residual=res, state=np.array(state, dtype=np.int8, copy=True))

    def _solve_kkt(self, K: Matrix, rhs: FloatArray, sol: FloatArray, nF: int,
                   rhs_terms: FloatArray | None = None) -> tuple[FloatArray, float]:
        """Solve K sol = rhs by a regularized factor of D K D and iterative refinement from ``sol``.

        Two phases of refinement against the unregularized matrix. The first is the proximal
        iteration of the module (any progress of the normwise residual continues it): it carries a
        singular face to its solution nearest the start and an unbounded one far along its ray.
        Its measure mixes the face's rows with its multipliers, whose entries can be 1e7 times
        larger, so it calls a warm start solved whose constraint rows are still off by 1e-10 (the
        interior point's own residual). The second phase refines until the residual stops
        decreasing in absolute terms, block by block (the active constraints' rows, in their
        units, and stationarity on the free variables, in the gradient's): a step is taken while
        it halves one block's ∞-norm without raising the other's beyond its rounding level
        (ε times the size of its terms, |K||sol| + the terms of ``rhs``), LAPACK's ``xGERFS``
        rule per block.

        ``rhs_terms`` (default |rhs|) is the size of the terms ``rhs`` was computed from
        (|c_F| + |Q_FN||x_N|, |b_E| + |E_N||x_N|): a right-hand side that cancelled to a rounding
        error carries that error.

        Returns the solution and its residual relative to the rounding level: the larger of the
        two blocks' ∞-norms, each divided by ε times the ∞-norm of its terms (≲ 1 at rounding).
        """
        N_all = K.shape[0]
        use_sparse = self.method == "sparse" or (
            self.method == "auto" and N_all > self.dense_max
            and (K.nnz if sp.issparse(K) else np.count_nonzero(K)) <= 0.1 * N_all * N_all)
        if use_sparse and not sp.issparse(K):
            K = sp.csc_matrix(K)
        elif not use_sparse and sp.issparse(K):
            K = K.toarray()
        dscale = _equilibrate(K)
        signs = np.concatenate([np.ones(nF), -np.ones(N_all - nF)])
        if use_sparse:
            Ks = (sp.diags(dscale) @ K @ sp.diags(dscale)).tocsc()
        else:
            Ks = K * dscale[:, None] * dscale[None, :]
        solve_reg = self._factor(Ks, signs, use_sparse)
        self.factorizations += 1
        rhs_s = dscale * rhs
        us = sol / dscale
        # relative to the sizes met, the start's included (a solution near 0 with a zero
        # right-hand side is met to rounding, not to a ratio of vanishing numbers)
        bscale = _norm(rhs_s) + _norm(us)

        def resid(v: FloatArray) -> tuple[FloatArray, float]:
            r = rhs_s - np.asarray(Ks @ v, dtype=np.float64)
            return r, _norm(r) / max(bscale + _norm(v), np.finfo(float).tiny)

        r, rel = resid(us)
        steps = 0
        while steps < self.max_refine and rel > 4 * _EPS:
            trial = us + solve_reg(r)
            steps += 1
            r_new, rel_new = resid(trial)
            if not rel_new < rel:
                # no progress at all: rounding's level, or an inconsistent face (an unbounded or
                # infeasible one), whose further steps would only drift along its null space
                break
            us, r, rel = trial, r_new, rel_new

        # the second phase, in the unscaled system's absolute terms
        absK = abs(K) if use_sparse else np.abs(K)
        abs_rhs = np.abs(rhs) if rhs_terms is None else np.maximum(rhs_terms, np.abs(rhs))

        def blocks(r_s: FloatArray, v: FloatArray) -> tuple[float, float, float, float, float]:
            ra = np.abs(r_s / dscale)
            terms = np.asarray(absK @ np.abs(v * dscale), dtype=np.float64) + abs_rhs
            # every row at the rounding of its own terms: nothing left to refine (a row whose
            # terms are all 0 has r = 0 exactly)
            omega = _norm(ra / np.maximum(terms, np.finfo(float).tiny))
            return (_norm(ra[nF:]), _norm(ra[:nF]), _EPS * _norm(terms[nF:]), _EPS * _norm(terms[:nF]), omega)

        a_p, a_d, f_p, f_d, omega = blocks(r, us)
        # residuals below ε² times the system's size count as zero (a component converging
        # geometrically to 0 would otherwise halve its residual until the cap)
        negligible = _EPS * max(1.0, f_p, f_d)
        while steps < self.max_refine and omega > 2 * _EPS and max(a_p, a_d) > negligible:
            trial = us + solve_reg(r)
            steps += 1
            r_new, rel_new = resid(trial)
            b_p, b_d, g_p, g_d, omega_new = blocks(r_new, trial)
            # against the smallest residuals so far: noise at the rounding level does not halve
            # them round after round
            if not (b_p <= max(a_p, g_p) and b_d <= max(a_d, g_d)
                    and ((negligible < a_p and b_p <= 0.5 * a_p) or (negligible < a_d and b_d <= 0.5 * a_d))):
                break
            us, r, rel, f_p, f_d, omega = trial, r_new, rel_new, g_p, g_d, omega_new
            a_p, a_d = min(a_p, b_p), min(a_d, b_d)
        self.refinements += steps
        tiny = np.finfo(float).tiny
        return us * dscale, max(a_p / max(f_p, tiny), a_d / max(f_d, tiny))

    def _factor(self, Ks: Matrix, signs: FloatArray, use_sparse: bool) -> Callable[[FloatArray], FloatArray]:
        """The solve with the regularized matrix Ks + reg·diag(signs); a zero pivot (a Q_FF that
        is not semidefinite) is met by a regularization 1e3 times larger once, then refused."""
        for reg in (self.reg, 1e3 * self.reg):
            if use_sparse:
                try:
                    lu = spla.splu((Ks + sp.diags(reg * signs)).tocsc())
                except RuntimeError:
                    continue
                if not np.isfinite(lu.U.diagonal()).all():
                    continue
                self.sparse_factors += 1
                return lambda r: np.asarray(lu.solve(r), dtype=np.float64)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sla.LinAlgWarning)
                fac = sla.lu_factor(Ks + np.diag(reg * signs), check_finite=False)
            pivots = np.abs(np.diag(fac[0]))
            if np.isfinite(pivots).all() and pivots.min(initial=1.0) > 0:
                return lambda r: np.asarray(sla.lu_solve(fac, r, check_finite=False), dtype=np.float64)
        raise np.linalg.LinAlgError("the face's KKT matrix is singular even regularized (Q not semidefinite?)")
