"""The factor of the active-set face system with several rows, updated one variable at a time.

The dense active set's engine for several rows (:mod:`qpcore_strategies.active_set_rows`) solves,
at every step, the face's KKT system [[Q_FF, A_Fᵀ], [A_F, 0]] for a free set F that changes one
variable per pivot. :class:`RowsFactor` solves it by the range-space method on
M = Q_FF + τ A_FᵀA_F (the augmented-Lagrangian shift of
:class:`qpcore.linalg.factor.BorderedCholesky`, with m rows: A_F p = 0 is imposed, so the shift
changes no solution, and M is positive definite exactly when the face has a unique minimizer,
whatever the rank of Q_FF): an upper Cholesky factor R of M, and the inverse of the Schur
complement S = A_F M⁻¹ A_Fᵀ (m×m). A face solve is four triangular solves and products with A_F
and S⁻¹, O(|F|² + |F|m + m²), and its multipliers are exact while A_F has full row rank (the
engine's working set keeps it so).

Both follow F one variable at a time: a variable enters R by one triangular solve and S⁻¹ by a
rank-one (Sherman–Morrison) update; it leaves R by Givens rotations of the trailing block and S⁻¹
by a rank-one downdate (S loses y yᵀ/w_p, y = A_F M⁻¹ e_p); all O(|F|² + |F|m + m²). Nothing is
refactorized per pivot: the engine takes a fresh factorization (:meth:`RowsFactor.refactor`)
every ``refactor_every`` updates (the downdates accumulate rounding), and whenever a solve's
residual (:meth:`RowsFactor.refined_solve`) shows the factor has drifted. An exchange
(:meth:`RowsFactor.exchange`: one variable in, another out) updates S⁻¹ before it downdates it,
so it never passes a singular matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.linalg.factor import cholesky_delete

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

__all__ = ["RowsFactor"]


class RowsFactor:
    """Factor of the face system for a free set F that changes one variable at a time.

    An upper Cholesky factor R of M = Q_FF + τ A_FᵀA_F and, while A_F has full row rank, the
    inverse of S = A_F M⁻¹ A_Fᵀ; both updated per added or removed variable (see the module
    docstring).

    Parameters
    ----------
    Q : ndarray
        The dense symmetric Q (n×n).
    A : ndarray
        The rows (m×n), independent on the variables that will enter.
    tau : float
        The shift τ > 0.
    singular_tol : float
        A new pivot ρ² ≤ singular_tol · M_jj means the variable depends on F (``add`` refuses it);
        a small pivot is checked further by the Rayleigh quotient of its null direction.
    Qs : scipy.sparse.csr_matrix, optional
        Q as CSR, for products when Q is sparse.
    """

    def __init__(self, Q: FloatArray, A: FloatArray, tau: float, singular_tol: float = 1e-11,
                 Qs: sp.csr_matrix | None = None) -> None:
        self.Q, self.A, self.tau, self.singular_tol = Q, A, float(tau), float(singular_tol)
        self.Qs = Qs
        self.n, self.m = Q.shape[0], A.shape[0]
        cap = 16
        self._R: FloatArray = np.zeros((cap, cap))
        self._AT: FloatArray = np.zeros((cap, self.m))    # A_Fᵀ, rows in factor order
        self._diag: FloatArray = np.zeros(cap)             # M's diagonal over F, in factor order
        self._idx: IndexArray = np.zeros(cap, dtype=np.intp)
        self._k = 0
        self.Sinv: FloatArray | None = np.zeros((0, 0)) if self.m == 0 else None
        self.inside: BoolArray = np.zeros(self.n, dtype=bool)
        self.updates = 0                                  # since the last fresh factorization
        self._u: FloatArray = np.zeros(self.m)            # the row U gained by the last add
        self.counters = {"adds": 0, "removes": 0, "dependences": 0, "refactors": 0, "rank_losses": 0}

    @property
    def size(self) -> int:
        """|F|."""
        return self._k

    @property
    def members(self) -> IndexArray:
        """F in factor order (a view: copy before mutating the factor)."""
        return self._idx[:self._k]

    @property
    def full_rank(self) -> bool:
        """Whether A_F has full row rank and S⁻¹ is held (face solves need it)."""
        return self.Sinv is not None

    def _grow(self) -> None:
        cap = 2 * self._R.shape[0]
        R = np.zeros((cap, cap))
        R[:self._k, :self._k] = self._R[:self._k, :self._k]
        AT = np.zeros((cap, self.m))
        AT[:self._k] = self._AT[:self._k]
        diag = np.zeros(cap)
        diag[:self._k] = self._diag[:self._k]
        self._diag = diag
        idx = np.zeros(cap, dtype=np.intp)
        idx[:self._k] = self._idx[:self._k]
        self._R, self._AT, self._idx = R, AT, idx

    def _tri(self, v: FloatArray, trans: bool) -> FloatArray:
        k = self._k
        out: FloatArray = sla.solve_triangular(self._R[:k, :k], v, trans=1 if trans else 0, lower=False,
                                               check_finite=False)
        return out

    def _mproduct(self, v: FloatArray) -> FloatArray:
        """M v over F, from Q and A themselves (not from the factor)."""
        k = self._k
        F = self._idx[:k]
        AT = self._AT[:k]
        if self.Qs is not None:
            full = np.zeros(self.n)
            full[F] = v
            Qv: FloatArray = (self.Qs @ full)[F]
        else:
            Qv = self.Q[np.ix_(F, F)] @ v
        out: FloatArray = Qv + self.tau * (AT @ (AT.T @ v))
        return out

    def _minv(self, v: FloatArray) -> FloatArray:
        """M⁻¹ v (two triangular solves)."""
        return self._tri(self._tri(v, True), False)

    def add(self, j: int, schur: bool = True, strict: bool = True) -> FloatArray | None:
        """Append variable j: one triangular solve for R, a rank-one update of S⁻¹; O(|F|² + |F|m + m²).

        Parameters
        ----------
        j : int
            A variable not in F.
        schur : bool
            Whether to update S⁻¹ (:meth:`exchange` does it itself, with the leaving variable).
        strict : bool
            Whether a small pivot is also judged by its Rayleigh quotient; :meth:`exchange`
            knows the new set to be independent (only a pivot at rounding level refuses it).

        Returns
        -------
        ndarray or None
            None once added; when j makes M singular, F is left unchanged and the null direction
            v over ``members`` followed by j is returned (v[-1] = 1; Q v ≈ 0 and A v ≈ 0 there).
        """
        k = self._k
        F = self._idx[:k]
        Aj = self.A[:, j]
        AT = self._AT[:k]
        h = self.Q[j, F] + self.tau * (AT @ Aj)
        mjj = float(self.Q[j, j] + self.tau * float(Aj @ Aj))
        r = self._tri(h, True) if k else h
        w = self._tri(r, False) if k else r          # M_F⁻¹ h: v = [−w; 1] is the candidate null direction
        rho2 = mjj - float(r @ r)
        tol = self.singular_tol if strict else 1e-14
        dependent = not rho2 > tol * max(mjj, 0.0) or mjj <= 0.0
        if strict and not dependent and k and rho2 <= 1e-4 * mjj:
            # a small pivot: the rounding of R (its conditioning squared by the shift) may hide an
            # exact dependence, so judge by the Rayleigh quotient of v = [−w; 1] on M over F + j,
            # with w refined once against M itself (a quotient at rounding level relative to M's
            # scale means M is singular there)
            Mw = self._mproduct(w)
            w = w + self._minv(h - Mw)
            rho2 = min(rho2, mjj - float(h @ w))
            # in the metric of M's diagonal (Jacobi scaling), so that the columns' units, which
            # the Cholesky factor does not mind, do not decide either
            dependent = rho2 <= 1e-10 * (mjj + float(self._diag[:k] @ (w * w)))
        if dependent:
            self.counters["dependences"] += 1
            v = np.empty(k + 1)
            v[:k] = -w
            v[k] = 1.0
            return v
        rho = float(np.sqrt(rho2))
        if self.Sinv is not None and self.m:
            # U = R⁻ᵀA_Fᵀ gains the row u = (a_j − A_F R⁻¹ r)/ρ, so S = UᵀU gains u uᵀ
            u = (Aj - (AT.T @ self._tri(r, False) if k else 0.0)) / rho
            self._u = u
            if schur:
                Su = self.Sinv @ u
                self.Sinv -= np.outer(Su, Su / (1.0 + float(u @ Su)))
        if k + 1 > self._R.shape[0]:
            self._grow()
        self._R[:k, k] = r
        self._R[k, :k] = 0.0
        self._R[k, k] = rho
        self._AT[k] = Aj
        self._diag[k] = mjj
        self._idx[k] = j
        self._k = k + 1
        self.inside[j] = True
        self.counters["adds"] += 1
        self.updates += 1
        return None

    def _removal(self, j: int) -> tuple[int, FloatArray, float]:
        """Position of j, and the downdate S loses when it leaves: y = A_F M⁻¹ e_p and w_p."""
        k = self._k
        p = int(np.flatnonzero(self._idx[:k] == j)[0])
        if self.Sinv is None or not self.m:
            return p, np.zeros(self.m), 1.0
        e = np.zeros(k)
        e[p] = 1.0
        w = self._minv(e)
        return p, self._AT[:k].T @ w, float(w[p])

    def _delete(self, j: int, p: int) -> None:
        k = self._k
        cholesky_delete(self._R, p, k)
        if p < k - 1:
            self._idx[p:k - 1] = self._idx[p + 1:k]
            self._AT[p:k - 1] = self._AT[p + 1:k]
            self._diag[p:k - 1] = self._diag[p + 1:k]
        self._k = k - 1
        self.inside[j] = False
        self.counters["removes"] += 1
        self.updates += 1

    def _downdate(self, y: FloatArray, wp: float) -> None:
        """S⁻¹ for S − y yᵀ/w_p; S⁻¹ is dropped when that loses positive definiteness (rank)."""
        if self.Sinv is None or not self.m:
            return
        Sy = self.Sinv @ y
        den = wp - float(y @ Sy)
        if not den > 1e-11 * wp:
            self.Sinv = None
            self.counters["rank_losses"] += 1
            return
        if den < 1e-6 * wp:
            # the difference cancels: the update would carry the cancellation's error into every
            # later solve, so S⁻¹ is rebuilt instead (the caller sees full_rank False)
            self.Sinv = None
            return
        self.Sinv += np.outer(Sy, Sy / den)

    def critical(self, j: int) -> bool:
        """Whether A_F loses its full row rank without member j (its column is needed for it).

        Parameters
        ----------
        j : int
            A member of F.

        Returns
        -------
        bool
        """
        if self.Sinv is None or not self.m:
            return False
        _, y, wp = self._removal(j)
        return not wp - float(y @ (self.Sinv @ y)) > 1e-8 * wp

    def remove(self, j: int) -> None:
        """Delete variable j from F: Givens rotations of R's trailing block, a rank-one downdate of S⁻¹.

        Parameters
        ----------
        j : int
            A member of F.
        """
        p, y, wp = self._removal(j)
        self._delete(j, p)
        self._downdate(y, wp)

    def exchange(self, i: int, j: int) -> bool:
        """Remove member i and add variable j, keeping S⁻¹ through the exchange.

        S is updated by j before it is downdated by i, so it never passes the singular S of
        F − i when i's column is needed for the rank and j's column restores it.

        Returns
        -------
        bool
            Whether j entered (it may be refused as dependent after all; i leaves either way).
        """
        p, y, wp = self._removal(i)
        self._delete(i, p)
        entered = self.add(j, schur=False, strict=False) is None
        Sinv, u = self.Sinv, self._u
        if Sinv is None or not self.m:
            return entered
        if not entered:
            self._downdate(y, wp)
            return entered
        # S + u uᵀ − y yᵀ/w_p by Woodbury with both columns at once: the 2×2 core stays regular
        # where the one-at-a-time downdate would divide by a difference of large numbers (at a
        # vertex S − y yᵀ/w_p is singular and its denominator is 0 up to rounding)
        W = np.column_stack([u, y])
        SW = Sinv @ W
        core = W.T @ SW
        core[0, 0] += 1.0
        core[1, 1] -= wp
        det = float(core[0, 0] * core[1, 1] - core[0, 1] * core[1, 0])
        if not abs(det) > 1e-6 * float(np.abs(core).max()) ** 2:
            self.Sinv = None               # nearly singular: rebuilt by the caller (full_rank False)
            return entered
        self.Sinv = Sinv - SW @ np.linalg.solve(core, SW.T)
        return entered

    def solve(self, r1: FloatArray, r2: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """The face system Q_FF p + A_Fᵀμ = r1, A_F p = r2 (r2 = 0 when None); needs ``full_rank``.

        Through M: p = M⁻¹(r1 − A_Fᵀν) with S ν = A_F M⁻¹ r1 − r2, μ = ν + τ r2.

        Parameters
        ----------
        r1 : ndarray
            Right-hand side over F, in factor order.
        r2 : ndarray, optional
            Right-hand side of the rows.

        Returns
        -------
        (p, mu)
        """
        k = self._k
        assert self.Sinv is not None
        if k == 0:
            return np.zeros(0), np.zeros(self.m)
        AT = self._AT[:k]
        z1 = self._minv(r1)
        if not self.m:
            return z1, np.zeros(0)
        rhs = AT.T @ z1
        if r2 is not None:
            rhs -= r2
        nu = self.Sinv @ rhs
        p = z1 - self._minv(AT @ nu)
        mu = nu if r2 is None else nu + self.tau * r2
        return p, mu

    def product(self, v: FloatArray) -> FloatArray:
        """Q[:, F] v over all n variables (O(nnz) when Q is sparse)."""
        F = self._idx[:self._k]
        if self.Qs is not None:
            full = np.zeros(self.n)
            full[F] = v
            out: FloatArray = self.Qs @ full
            return out
        out = v @ self.Q[F]
        return out

    def refined_solve(self, r1: FloatArray, r2: FloatArray | None = None,
                      max_steps: int = 5) -> tuple[FloatArray, FloatArray, FloatArray, int, bool]:
        """:meth:`solve`, refined iteratively with residuals computed from Q and A themselves.

        The factor (its conditioning squared by the shift, S⁻¹ updated by rank-one terms) is a good
        preconditioner of the face system but not an exact one; each refinement step solves for
        the residual again, until it reaches rounding or stops halving.

        Parameters
        ----------
        r1, r2 : ndarray
            As in :meth:`solve`.
        max_steps : int
            Refinement steps at most.

        Returns
        -------
        p, mu : ndarray
            The solution.
        Qp : ndarray
            Q[:, F] p over all n variables.
        steps : int
            Refinement steps taken.
        ok : bool
            Whether the residual is within 1e-9 of the size of its terms (else the factor no
            longer solves the face: refactorize).
        """
        F = self._idx[:self._k]
        p, mu = self.solve(r1, r2)
        if F.size == 0:
            return p, mu, np.zeros(self.n), 0, True
        AT = self._AT[:self._k]
        Qp = self.product(p)
        scale = float(np.abs(r1).max(initial=0.0)) + (0.0 if r2 is None else float(np.abs(r2).max(initial=0.0)))
        amax = float(np.abs(AT).max(initial=0.0))
        best = np.inf
        ok = False
        steps = 0
        while True:
            ATmu = AT @ mu
            res1 = r1 - Qp[F] - ATmu
            Ap = AT.T @ p
            res2 = -Ap if r2 is None else r2 - Ap
            # the residual's rounding: the sizes of the terms it is made of
            size = (scale + float(np.abs(Qp[F]).max(initial=0.0)) + float(np.abs(ATmu).max(initial=0.0))
                    + amax * float(np.abs(p).max(initial=0.0)))
            err = max(float(np.abs(res1).max(initial=0.0)), float(np.abs(res2).max(initial=0.0)))
            ok = err <= 1e-9 * size
            if err <= 1e-15 * size or not err < 0.5 * best or steps >= max_steps:
                return p, mu, Qp, steps, ok
            best = err
            dp, dmu = self.solve(res1, res2)
            p, mu = p + dp, mu + dmu
            Qp = Qp + self.product(dp)
            steps += 1

    def refactor(self) -> IndexArray:
        """A fresh factorization of the current F (R by Cholesky, S⁻¹ from U = R⁻ᵀA_Fᵀ).

        Members that turn out dependent are dropped (returned); S⁻¹ is None when A_F lacks full
        row rank.

        Returns
        -------
        ndarray of intp
            The members dropped.
        """
        self.counters["refactors"] += 1
        self.updates = 0
        F = self._idx[:self._k].copy()
        dropped: list[int] = []
        M = self.Q[np.ix_(F, F)] + self.tau * (self._AT[:self._k] @ self._AT[:self._k].T)
        try:
            L = np.linalg.cholesky(M)
            d = np.diag(L) ** 2
            if not bool((d > self.singular_tol * np.maximum(np.diag(M), 1e-300)).all()):
                raise np.linalg.LinAlgError("a dependent member")
            k = F.size
            self._R[:k, :k] = L.T
        except np.linalg.LinAlgError:
            # rebuild member by member, dropping those that depend on the earlier ones
            for j in F.tolist():
                self.inside[j] = False
            self._k = 0
            self.Sinv = np.zeros((0, 0)) if self.m == 0 else None
            for j in F.tolist():
                if self.add(j) is not None:
                    dropped.append(j)
        self.build_schur()
        self.updates = 0
        return np.asarray(dropped, dtype=np.intp)

    def build_schur(self) -> bool:
        """S⁻¹ from scratch (O(|F|²m + |F|m²)); False (and S⁻¹ None) when A_F lacks full row rank."""
        k, m = self._k, self.m
        if m == 0:
            self.Sinv = np.zeros((0, 0))
            return True
        self.Sinv = None
        if k < m:
            return False
        U = self._tri(self._AT[:k], True)
        S = U.T @ U
        try:
            L = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            return False
        d = np.diag(L)
        if not float(d.min()) > 1e-7 * float(d.max()):
            return False
        Linv = sla.solve_triangular(L, np.eye(m), lower=True, check_finite=False)
        self.Sinv = Linv.T @ Linv
        return True
