"""Factors of a free block, updated one variable at a time.

Active-set methods (INCAS, the incremental SVM of Cauwenberghs and Poggio) solve, at every step,
the KKT system of the free block S with the equality row a:

    ⎡ Q_SS   a_S ⎤ ⎡ x ⎤   ⎡ r ⎤
    ⎣ a_Sᵀ   0   ⎦ ⎣ μ ⎦ = ⎣ t ⎦ ,

and S changes by one variable per step. :class:`BorderedCholesky` keeps an upper Cholesky factor
R of M = Q_SS + τ a_S a_Sᵀ (RᵀR = M) and solves the bordered system through it. The shift τ a aᵀ
(the augmented-Lagrangian trick) changes nothing on the solution, because aᵀx = t is imposed, but
it makes M positive definite exactly when the bordered matrix is nonsingular: Q_SS itself may be
singular (a linear kernel with more margin vectors than features, two points on opposite sides of
the bias) while the KKT matrix is not. What stays singular is a genuine dependence, v ≠ 0 with
Q_SS v = 0 and a_Sᵀ v = 0 (duplicate points with the same label): ``add`` detects it, refuses
the variable and returns v, along which the objective is linear, so the caller can take a ray
step to the first bound instead (INCAS and Cauwenberghs–Poggio both do).

Appending is one triangular solve (O(|S|²)); deleting is a column deletion from R re-triangularized
by Givens rotations (``scipy.linalg.qr_delete`` on the trailing block, O(|S|²)); a solve is two
triangular solves. Nothing is ever refactorized unless the caller asks (:meth:`refactor`).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np
import scipy.linalg as sla
from scipy.linalg import blas as _blas
from numpy.typing import ArrayLike, NDArray

from qpcore.core.problem import ProblemError

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["BorderedCholesky", "Dependence", "Factor", "cholesky_delete"]

_dtrsv: Any = _blas.dtrsv


@runtime_checkable
class Factor(Protocol):
    """A factorization of a principal block of Q (or of its KKT matrix) that follows the block.

    Implementation: :class:`BorderedCholesky` (one variable at a time, INCAS and the incremental
    SVM). ASVM keeps its k×k system itself (:func:`qpcore.backends.lowrank.factor_identity_plus`).
    """

    @property
    def size(self) -> int:
        """Number of variables in the block."""
        ...

    def add(self, idx: Any) -> object:
        """Add variables to the block."""
        ...

    def remove(self, idx: Any) -> None:
        """Remove variables from the block."""
        ...

    def solve(self, r: Any) -> FloatArray:
        """Solve with the block's matrix for a right-hand side over the block."""
        ...


def cholesky_delete(R: FloatArray, k: int, n: int) -> None:
    """Delete row and column k from the upper Cholesky factor held in ``R[:n, :n]``, in place.

    Deleting column k leaves the trailing block upper Hessenberg; the QR downdate of that block
    (Q = I, so the block is its own R) re-triangularizes it by Givens rotations without touching
    the rows above: O(n²). The factor of the n − 1 remaining members ends in ``R[:n-1, :n-1]``;
    row and column n − 1 are zeroed.

    Parameters
    ----------
    R : ndarray
        The factor's buffer (at least n × n).
    k : int
        The position to delete (0 ≤ k < n).
    n : int
        The factor's current order.
    """
    if k < n - 1:
        T = np.array(R[k:n, k:n])
        _, Rt = sla.qr_delete(np.eye(n - k), T, 0, which="col", overwrite_qr=True, check_finite=False)
        R[:k, k:n - 1] = R[:k, k + 1:n]
        R[k:n - 1, k:n - 1] = Rt[:n - k - 1]
    R[n - 1, :n] = 0.0
    R[:n, n - 1] = 0.0


@attrs.frozen
class Dependence:
    """A variable that would make the bordered KKT matrix singular, and the null direction.

    Attributes
    ----------
    index : int
        The variable refused.
    members : ndarray of intp
        The block's members, in factor order, followed by ``index``.
    direction : ndarray
        v over ``members`` with v[-1] = 1: Q v ≈ 0 and aᵀv ≈ 0 on the block plus the variable,
        so the objective is linear along v.
    residual : float
        The pivot ρ² found (≤ the singularity threshold).
    """

    index: int
    members: IndexArray
    direction: FloatArray
    residual: float


class BorderedCholesky:
    """Cholesky factor of the bordered KKT matrix of a free block, one-variable updates.

    Parameters
    ----------
    a : array_like, optional
        The equality row over all variables (the labels for an SVM); ``None`` for no equality
        (then ``solve_kkt`` solves Q_SS x = r and μ = 0).
    Q : QOperator, optional
        Where ``add(i)`` reads a column when the caller does not pass one (``Q.row(i)``, which a
        kernel operator serves from its cache).
    tau : float, optional
        The shift τ of M = Q_SS + τ a_S a_Sᵀ. Default: set by the first added variable with
        a_i ≠ 0 to Q_ii / a_i² (the scale of Q), or 1 when that is 0.
    capacity : int
        Initial room (grows by doubling).
    singular_tol : float
        A new pivot ρ² ≤ singular_tol · M_ii means the variable depends on the block (in M's
        metric): ``add`` returns a :class:`Dependence` instead of adding it.

    Attributes
    ----------
    counters : dict
        ``adds``, ``removes``, ``dependences``, ``refactors``.
    """

    def __init__(self, a: ArrayLike | None = None, Q: Any = None, *, tau: float | None = None, capacity: int = 64,
                 singular_tol: float = 1e-11, equality: bool | None = None) -> None:
        self.a: FloatArray | None = None if a is None else np.asarray(a, dtype=np.float64)
        # with equality=True and no a, each add passes its a_i (data that grow as the block does)
        self.equality = (a is not None) if equality is None else bool(equality)
        self.Q = Q
        if tau is not None and not (np.isfinite(tau) and tau > 0):
            raise ProblemError("tau: must be finite and > 0")
        self.tau: float | None = tau
        self.singular_tol = float(singular_tol)
        cap = max(4, int(capacity))
        # F-ordered with the identity beyond S: a triangular solve runs on the whole buffer
        # (a contiguous array, no copy), and the padding solves to zeros
        self._R: FloatArray = np.asfortranarray(np.eye(cap))
        self._u: FloatArray = np.zeros(cap)       # Rᵀu = a_S, so a_Sᵀ M⁻¹ a_S = ‖u‖²
        self._aS: FloatArray = np.zeros(cap)
        self._idx: IndexArray = np.zeros(cap, dtype=np.intp)
        self._n = 0
        self.counters = {"adds": 0, "removes": 0, "dependences": 0, "refactors": 0}

    # -- views ----------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """|S|."""
        return self._n

    @property
    def members(self) -> IndexArray:
        """S in factor order (a copy)."""
        return self._idx[:self._n].copy()

    @property
    def R(self) -> FloatArray:
        """The upper factor, RᵀR = Q_SS + τ a_S a_Sᵀ (a view)."""
        return self._R[:self._n, :self._n]

    def position(self, i: int) -> int:
        """Where variable i sits in factor order (ValueError if absent)."""
        hit = np.flatnonzero(self._idx[:self._n] == i)
        if hit.size == 0:
            raise ValueError(f"variable {i} is not in the factor")
        return int(hit[0])

    def bordered(self) -> bool:
        """Whether the equality row is present and nonzero on S (μ is then determined)."""
        return self.equality and self._n > 0 and float(self._u[:self._n] @ self._u[:self._n]) > 0.0

    def block(self) -> FloatArray:
        """Q_SS recovered from the factor (RᵀR − τ a aᵀ), for tests and diagnostics."""
        R = self.R
        M: FloatArray = R.T @ R
        if self.equality and self.tau is not None:
            aS = self._aS[:self._n]
            M -= self.tau * np.outer(aS, aS)
        return M

    # -- updates --------------------------------------------------------------------------------
    def _tri(self, v: FloatArray, trans: bool) -> FloatArray:
        """R⁻ᵀv (trans) or R⁻¹v over S, through the padded buffer."""
        n, cap = self._n, self._R.shape[0]
        if n == cap:
            w = v
        else:
            w = np.zeros(cap)
            w[:n] = v
        # BLAS trsv straight on the F-ordered buffer: solve_triangular's argument checks cost
        # more than the solve itself below a few hundred members
        out = _dtrsv(self._R, np.asarray(w, dtype=np.float64), lower=0, trans=1 if trans else 0)
        res: FloatArray = np.asarray(out[:n])
        return res

    def _grow(self, cap: int | None = None) -> None:
        """Move to a buffer of ``cap`` (default 1.5× larger); also used to shrink it."""
        if cap is None:
            cap = max(self._R.shape[0] + 4, (3 * self._R.shape[0]) // 2)
        R = np.asfortranarray(np.eye(cap))
        R[:self._n, :self._n] = self.R
        self._R = R
        for name in ("_u", "_aS"):
            old = getattr(self, name)
            new = np.zeros(cap)
            new[:self._n] = old[:self._n]
            setattr(self, name, new)
        idx = np.zeros(cap, dtype=np.intp)
        idx[:self._n] = self._idx[:self._n]
        self._idx = idx

    def _a_of(self, i: int, a_i: float | None) -> float:
        if not self.equality:
            return 0.0
        if a_i is not None:
            return float(a_i)
        if self.a is None:
            raise ValueError(f"add: variable {i} needs a_i (the factor was built without the row a)")
        return float(self.a[i])

    def add(self, idx: Any, col: ArrayLike | None = None, diag: float | None = None,
            a_i: float | None = None) -> Dependence | None:
        """Append variable ``idx`` to S in O(|S|²).

        Parameters
        ----------
        idx : int
            The variable.
        col : array_like, optional
            Q[S, idx] in factor order (``members``); read from ``Q.row(idx)`` when omitted.
        diag : float, optional
            Q[idx, idx]; read from the same row when omitted.
        a_i : float, optional
            The variable's entry of the equality row, when ``a`` does not cover it (a grown
            problem); default ``a[idx]``.

        Returns
        -------
        None, or a :class:`Dependence` when the variable makes the KKT matrix singular (then S
        is unchanged).
        """
        i = int(idx)
        n = self._n
        if col is None or diag is None:
            if self.Q is None:
                raise ValueError("add: pass col and diag, or build the factor with Q")
            row = np.asarray(self.Q.row(i), dtype=np.float64).ravel()
            col_arr = row[self._idx[:n]]
            q_ii = float(row[i])
        else:
            col_arr = np.asarray(col, dtype=np.float64).ravel()
            q_ii = float(diag)
        if col_arr.shape != (n,):
            raise ProblemError(f"col: shape mismatch, expected ({n},), got {col_arr.shape}")
        ai = self._a_of(i, a_i)
        if self.equality and self.tau is None and ai != 0.0:
            self.tau = q_ii / (ai * ai) if q_ii > 0 else 1.0
        tau = self.tau if self.tau is not None else 0.0
        aS = self._aS[:n]
        m = col_arr + (tau * ai) * aS if ai != 0.0 else col_arr.copy()
        mu = q_ii + tau * ai * ai
        r = self._tri(m, True) if n else m
        rho2 = mu - float(r @ r)
        if not rho2 > self.singular_tol * max(mu, 0.0) or mu <= 0.0:
            self.counters["dependences"] += 1
            v = np.empty(n + 1)
            v[:n] = -self._tri(r, False) if n else r
            v[n] = 1.0
            members = np.append(self._idx[:n], i).astype(np.intp)
            return Dependence(index=i, members=members, direction=v, residual=rho2)
        if n + 1 > self._R.shape[0]:
            self._grow()
        rho = float(np.sqrt(rho2))
        self._R[:n, n] = r
        self._R[n, :n] = 0.0
        self._R[n, n] = rho
        self._u[n] = (ai - float(r @ self._u[:n])) / rho
        self._aS[n] = ai
        self._idx[n] = i
        self._n = n + 1
        self.counters["adds"] += 1
        return None

    def add_block(self, idx: ArrayLike, cols: ArrayLike, block: ArrayLike, a_new: ArrayLike | None = None) -> bool:
        """Append several variables at once (one triangular solve with k right-hand sides).

        All or nothing: when the block would make the KKT matrix singular (a pivot of the
        k×k Schur complement at or below ``singular_tol``), nothing is appended and False is
        returned; :meth:`add`, one variable at a time, then finds the dependence.

        Parameters
        ----------
        idx : array_like of int
            The k variables, none in S.
        cols : array_like, shape (|S|, k)
            Q[S, idx] with S in factor order (``members``).
        block : array_like, shape (k, k)
            Q[idx, idx].
        a_new : array_like, optional
            The variables' entries of the equality row; default ``a[idx]``.

        Returns
        -------
        bool
            Whether the variables were appended.
        """
        ids = np.asarray(idx, dtype=np.intp).ravel()
        k, n = ids.size, self._n
        Cm = np.asarray(cols, dtype=np.float64).reshape(n, k)
        B = np.asarray(block, dtype=np.float64).reshape(k, k)
        if k == 0:
            return True
        if self.equality:
            an = (np.asarray(a_new, dtype=np.float64).ravel() if a_new is not None
                  else np.array([self._a_of(int(i), None) for i in ids]))
        else:
            an = np.zeros(k)
        if self.equality and self.tau is None:
            nz = np.flatnonzero(an)
            if nz.size:
                j = int(nz[0])
                self.tau = float(B[j, j] / an[j] ** 2) if B[j, j] > 0 else 1.0
        tau = self.tau if self.tau is not None else 0.0
        Mc = Cm + tau * np.outer(self._aS[:n], an) if n else Cm
        Mnn = B + tau * np.outer(an, an)
        # one trsv per column on the padded buffer, as add does: a trsm with k right-hand sides
        # wakes scipy's BLAS threads, which then spin against numpy's pool in the caller's
        # products (INCAS at 2 threads: 3× its 1-thread time)
        R12 = np.empty((n, k))
        for c in range(k):
            R12[:, c] = self._tri(Mc[:, c], True) if n else 0.0
        S = Mnn - R12.T @ R12
        S = 0.5 * (S + S.T)
        try:
            R22 = sla.cholesky(S, lower=False, check_finite=False)
        except np.linalg.LinAlgError:
            return False
        dg = np.diag(Mnn)
        if not (np.all(dg > 0.0) and np.all(np.diag(R22) ** 2 > self.singular_tol * dg)):
            return False
        while n + k > self._R.shape[0]:
            self._grow()
        self._R[:n, n:n + k] = R12
        self._R[n:n + k, :n] = 0.0
        self._R[n:n + k, n:n + k] = R22
        if self.equality:
            rhs = an - (R12.T @ self._u[:n] if n else 0.0)
            self._u[n:n + k] = sla.solve_triangular(R22, rhs, trans="T", lower=False, check_finite=False)
        self._aS[n:n + k] = an
        self._idx[n:n + k] = ids
        self._n = n + k
        self.counters["adds"] += k
        return True

    def remove(self, idx: Any) -> None:
        """Delete variable ``idx`` from S in O(|S|²) (Givens rotations on the trailing block)."""
        k = self.position(int(idx))
        n = self._n
        cholesky_delete(self._R, k, n)
        if k < n - 1:
            self._idx[k:n - 1] = self._idx[k + 1:n]
            self._aS[k:n - 1] = self._aS[k + 1:n]
        self._R[n - 1, n - 1] = 1.0         # the identity padding beyond S
        self._n = n - 1
        self.counters["removes"] += 1
        if self._R.shape[0] > 64 and 3 * self._n < self._R.shape[0]:
            # solves run over the whole padded buffer: keep it within 3× of |S|
            self._grow(max(64, (3 * self._n) // 2))
        if self._n and self.equality:
            self._u[:self._n] = self._tri(self._aS[:self._n], True)

    def _aS_of(self, idx: IndexArray) -> FloatArray:
        """a over ``idx`` from the entries given on ``add`` (members only)."""
        known = dict(zip(self._idx[:self._n].tolist(), self._aS[:self._n].tolist()))
        missing = [int(i) for i in idx if int(i) not in known]
        if missing:
            raise ValueError(f"refactor: a_i unknown for {missing[:5]} (the factor has no row a)")
        return np.array([known[int(i)] for i in idx], dtype=np.float64)

    def refactor(self, block: ArrayLike, members: ArrayLike | None = None) -> None:
        """Factor Q_SS afresh from ``block`` (for S = ``members``, default: the current S).

        For a periodic accuracy refresh or a bulk start; raises ``numpy.linalg.LinAlgError`` when
        the bordered matrix is singular.
        """
        idx = self.members if members is None else np.asarray(members, dtype=np.intp)
        B = np.asarray(block, dtype=np.float64)
        n = idx.size
        if B.shape != (n, n):
            raise ProblemError(f"block: shape mismatch, expected ({n}, {n}), got {B.shape}")
        while n > self._R.shape[0]:
            self._grow()
        if self.equality and self.a is None:
            aS = self._aS_of(idx)
        else:
            aS = self.a[idx] if self.a is not None else np.zeros(n)
        if self.equality and self.tau is None and n:
            nz = np.flatnonzero(aS)
            self.tau = float(B[nz[0], nz[0]] / aS[nz[0]] ** 2) if nz.size and B[nz[0], nz[0]] > 0 else 1.0
        M = B + (self.tau or 0.0) * np.outer(aS, aS)
        R = sla.cholesky(M, lower=False, check_finite=False) if n else M
        self._R[:] = np.eye(self._R.shape[0])
        self._R[:n, :n] = R
        self._idx[:n] = idx
        self._aS[:n] = aS
        self._n = n
        if n and self.equality:
            self._u[:n] = self._tri(aS, True)
        self.counters["refactors"] += 1

    # -- solves ---------------------------------------------------------------------------------
    def solve_kkt(self, r: ArrayLike, t: float = 0.0) -> tuple[FloatArray, float]:
        """Solve [[Q_SS, a_S], [a_Sᵀ, 0]] [x; μ] = [r; t] in O(|S|²).

        Parameters
        ----------
        r : array_like
            Right-hand side over S, in factor order.
        t : float
            Right-hand side of the equality row.

        Returns
        -------
        (x, μ)
            Without an equality row (or with a_S = 0), x = Q_SS⁻¹ r and μ = 0.
        """
        n = self._n
        rv = np.asarray(r, dtype=np.float64).ravel()
        if rv.shape != (n,):
            raise ProblemError(f"r: shape mismatch, expected ({n},), got {rv.shape}")
        if n == 0:
            return np.zeros(0), 0.0
        if not self.bordered():
            return self._tri(self._tri(rv, True), False), 0.0
        assert self.tau is not None
        aS = self._aS[:n]
        u = self._u[:n]
        # with aᵀx = t imposed, (Q + τaaᵀ)x + aμ = r + τ a t has the same solution (x, μ)
        z = self._tri(rv + (self.tau * t) * aS, True)
        mu = (float(u @ z) - t) / float(u @ u)
        return self._tri(z - mu * u, False), mu

    def matvec(self, d: ArrayLike) -> FloatArray:
        """Q_SS d for d over S in factor order, from the factor (Rᵀ(Rd) − τ a_S(a_Sᵀd)), O(|S|²).

        Lets a strategy keep the gradient of the free block current without touching Q's rows.
        """
        n = self._n
        dv = np.asarray(d, dtype=np.float64).ravel()
        if dv.shape != (n,):
            raise ProblemError(f"d: shape mismatch, expected ({n},), got {dv.shape}")
        if n == 0:
            return np.zeros(0)
        # numpy's GEMV on the (strided, uncopied) view rather than scipy's TRMV: twice the flops,
        # but the caller's other products run in numpy's BLAS, and two OpenBLAS thread pools
        # taking turns made each call 30× slower at 2 threads (Adult 3,185, RBF γ = 0.025,
        # C = 100: INCAS 0.95 s at 1 thread, 8.1 s at 2)
        R = self._R[:n, :n]
        res: FloatArray = R.T @ (R @ dv)
        if self.equality and self.tau is not None:
            aS = self._aS[:n]
            res -= (self.tau * float(aS @ dv)) * aS
        return res

    def solve(self, r: Any) -> FloatArray:
        """x of :meth:`solve_kkt` with t = 0 (the Factor protocol's solve)."""
        return self.solve_kkt(r, 0.0)[0]
