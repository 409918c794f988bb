"""An exact active-set finish ("polish") for convex QPs, by block principal pivoting.

    minimize ½xᵀQx + cᵀx   subject to   lb ≤ x ≤ ub,   A x = b,   l ≤ C x ≤ u

An interior point method, an ADMM code or any loose solver ends near the optimum with every
constraint a little off its bound; what it has nearly found is *which* constraints are active.
The finish takes that guess and does linear algebra:

1. **Guess the active set** from the point and its multipliers, as OSQP's polish does
   (:func:`qpcore_strategies.block_pivoting.guess_active`): a bound or a side of a row is active
   when its multiplier (of the right sign) exceeds its distance, or when the distance is within
   ``active_tol`` (relative); fixed variables (lb = ub) and equality rows (A x = b, and rows with
   l = u) always are. That rule compares a distance with a multiplier, which depends on the
   units: when the first guess does not end clean, a second one puts both on the problem's scale
   (‖x‖∞ against ‖Qx + c‖∞, ‖c‖∞). Without multipliers, least squares on the face of the sides
   within 1e-3 (relative) give them.
2. **Solve the face exactly** (:mod:`qpcore_strategies.qp_face`): one factorization of the face's
   KKT matrix, regularized and equilibrated, refined against the unregularized matrix from the
   current point and multipliers; a singular face converges to its solution nearest the start.
3. **Check and move** (:func:`qpcore_strategies.block_pivoting.block_principal_pivoting`): the
   face point is checked with one product (the inactive sides and the sign of the active sides'
   multipliers), and the violators move in blocks (Júdice and Pires; Kim and Park's safeguard
   with Murty's single pivot), with the ratio step toward the face's solution from a feasible
   point (the input at first) for general rows. ``max_rounds`` caps the rounds of each guess,
   each one factorization.
4. **Accept** the best face point met (by the residuals,
   :func:`qpcore_strategies.qp_face.residuals`) only when its residuals are
   smaller than the input's, or when it is the optimum's active set (no violators left) and its
   residuals are at the input's rounding level (``ROUNDING_LEVEL``, relative, or within 10× of
   the input's): an exact face has exact complementarity, which an interior point's relative
   measure does not show but its absolute duality gap does. Otherwise the input comes back
   unchanged, flagged ``accepted=False``. The finish never makes a point worse beyond rounding.
   A multiplier of the wrong sign within the violators' tolerance is returned as 0 (it shows in
   the dual residual; read by its sign it would be the other side's, that side times it in the
   gap). The multipliers the face leaves free, those of active rows whose variables are all at
   bounds, are settled by a small LP where they weigh in the gap: such a row's residual is the
   data's rounding (a right-hand side of 1e-15), and times a multiplier of 1e6 taken from the
   warm start it was a duality gap of 1e-9 (QBORE3D).

**Termination is unconditional, improvement is checked, never assumed** (why:
:mod:`qpcore_strategies.block_pivoting`). In practice a guess from a point optimal
to 1e-6 is right or a few constraints off, and one to a few factorizations end it. The finish
does not help when the free set is too large to factor, or when the guess is far from the
optimum's active set (sets that keep changing, e.g. QFORPLAN from PIQP at 1e-6 needs 17 rounds:
give it a tighter point, or more rounds).

This module is the finish's driver: :func:`polish` (a :class:`~qpcore.QP`), :func:`polish_arrays`
(arrays), :class:`PolishFinish` (the finish as a stage other strategies run) and :class:`Polish`
(the finish alone, as a strategy). The block loop and the residuals are re-exported here.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, Literal

import attrs
import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.sparse import matrix_of
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import State, Status, Work, bound_status
from qpcore.core.strategy import Strategy
from qpcore.linalg.threads import blas_threads
from qpcore_strategies.block_pivoting import BPPOutcome, Face, FaceSolution, block_principal_pivoting, guess_active
from qpcore_strategies.qp_face import (_EPS, Residuals, _cols, _cone, _Data, _norm, _Point, _QPFace, _rows,
                                       residuals)

__all__ = ["ROUNDING_LEVEL", "BPPOutcome", "Face", "FaceSolution", "Polish", "PolishFinish", "PolishResult", "Residuals",
           "block_principal_pivoting", "guess_active", "polish", "polish_arrays", "residuals"]

#: Relative residuals at or below which an exact face of the optimum's active set is accepted even
#: when the input's are smaller still (both are rounding there; the face's complementarity is exact).
ROUNDING_LEVEL = 1e-12


FloatArray = NDArray[np.float64]
Int8Array = NDArray[np.int8]
Matrix = Any            # an ndarray or a scipy.sparse matrix
Multipliers = tuple[Any, ...]

#: without multipliers, sides within this relative distance are the face of the least-squares estimate
_NEAR = 1e-3
#: problems with n·(n + m + k) up to this many entries are held dense
_DENSIFY = 1 << 18


# --------------------------------------------------------------------------------------------------
# the multipliers estimated and settled, the driver


def _estimate(d: _Data, x: FloatArray, state: Int8Array) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Least-squares multipliers of x on the guessed face: (λ, y_W) minimizing
    ‖(g − Aᵀλ − C_Wᵀy_W)_F‖, and z the reduced gradient on the fixed variables."""
    n = d.n
    g = d.gradient(x)
    F = np.flatnonzero(state[:n] == 0)
    W = np.flatnonzero(state[n:] != 0)
    y = np.zeros(d.k)
    lam = np.zeros(d.m)
    nE = d.m + W.size
    if nE and F.size:
        EF_parts = [_cols(d.A, F), _cols(_rows(d.C, W), F)]
        if d.sparse:
            EFT = sp.vstack([sp.csr_matrix(M) for M in EF_parts], format="csr").T.tocsr()
            mu = np.asarray(spla.lsqr(EFT, g[F], atol=1e-14, btol=1e-14, iter_lim=10 * (nE + F.size))[0])
        else:
            EFT = np.vstack(EF_parts).T
            mu = np.asarray(np.linalg.lstsq(EFT, g[F], rcond=None)[0], dtype=np.float64)
        lam = mu[:d.m].copy()
        y[W] = mu[d.m:]
    z = d.reduced(g, lam, y)
    z[F] = 0.0
    return lam, y, z


#: the most entries of the dense LP that settles the face's free multipliers
_SETTLE_MAX = 1 << 20


def _settle_free_multipliers(d: _Data, x: FloatArray, p: _Point, state: Int8Array, floor: float) -> _Point | None:
    """The multipliers the face leaves free, chosen to take the least part in the duality gap.

    An active row whose variables are all fixed at bounds (none free in the face) does not enter
    the face's stationarity: its multiplier is any value that keeps the bound multipliers of its
    variables of the right sign, and the face solve keeps the warm start's. Its residual, though,
    is the data's rounding (a right-hand side of 1e-15 where the bounds give 0: QBORE3D), and
    times the multiplier (1e6 on a degenerate vertex) it is the duality gap of an otherwise exact
    point: with exact stationarity, moving those multipliers by δ moves the gap by exactly rᵀδ.
    A small LP (HiGHS) minimizes |Σ rᵢ μᵢ| over them with the bound multipliers' signs kept; the
    step toward its solution stops short of the first sign change (the LP's tolerances are not
    the signs'). Tried only when that sum exceeds ``floor``; None when there is no gain.
    """
    n, m = d.n, d.m
    vs, rs = state[:n], state[n:]
    free = vs == 0
    W = np.flatnonzero(rs != 0)
    if d.sparse:
        M: Matrix = sp.vstack([sp.csr_matrix(d.A), sp.csr_matrix(_rows(d.C, W))], format="csr")
    else:
        M = np.vstack([d.A, _rows(d.C, W)])
    if M.shape[0] == 0:
        return None
    side = np.concatenate([d.b, np.where(rs[W] < 0, d.l[W], d.u[W])])
    mu0 = np.concatenate([p.lam, p.y[W]])
    absM = abs(M) if d.sparse else np.abs(M)
    R = np.flatnonzero(np.asarray(absM @ free.astype(np.float64), dtype=np.float64).ravel() == 0)
    if R.size == 0:
        return None
    rR = np.asarray(_rows(M, R) @ x, dtype=np.float64) - side[R]
    if not abs(float(rR @ mu0[R])) > floor:
        return None
    used = np.asarray(_rows(absM, R).sum(axis=0), dtype=np.float64).ravel() > 0
    J = np.flatnonzero(used & (d.lb != d.ub))       # their variables (all fixed by the face), not pinned
    if R.size * (J.size + 1) > _SETTLE_MAX:
        return None
    MRJ = _cols(_rows(M, R), J)
    MRJ = np.asarray(MRJ.toarray() if sp.issparse(MRJ) else MRJ, dtype=np.float64)
    sj = np.where(vs[J] < 0, 1.0, -1.0)             # z ≥ 0 at a lower bound, ≤ 0 at an upper one
    zJ = p.z[J]
    iy = np.flatnonzero(R >= m)                      # inequality rows among R, their own sign
    wy = W[R[iy] - m]
    sy = np.where(rs[wy] < 0, 1.0, -1.0)
    signed_y = d.l[wy] != d.u[wy]
    iy, sy = iy[signed_y], sy[signed_y]
    if (sj * zJ < 0).any() or (sy * mu0[R[iy]] < 0).any():
        return None                                  # not a sign-feasible start: leave it
    # unknowns (δ/S, t), each scaled to 1: min t with |rᵀ(μ₀ + δ)| ≤ t, s_j (z_j − (M_RJᵀδ)_j) ≥ 0,
    # s_i (y_i + δ_i) ≥ 0
    nR = R.size
    scale_r, S = _norm(rR), max(1.0, _norm(mu0[R]), _norm(zJ))
    rr = rR / scale_r
    c0 = float(rr @ mu0[R]) / S
    Y = np.zeros((iy.size, nR))
    Y[np.arange(iy.size), iy] = -sy
    A_ub = np.vstack([np.concatenate([rr, [-1.0]]), np.concatenate([-rr, [-1.0]]),
                      np.hstack([sj[:, None] * MRJ.T, np.zeros((J.size, 1))]),
                      np.hstack([Y, np.zeros((iy.size, 1))])])
    b_ub = np.concatenate([[-c0, c0], sj * zJ / S, sy * mu0[R[iy]] / S])
    cost = np.zeros(nR + 1)
    cost[-1] = 1.0
    from scipy.optimize import linprog
    try:
        lp = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=[(None, None)] * nR + [(0, None)], method="highs")
    except (ValueError, MemoryError):
        return None
    if lp.status != 0 or lp.x is None:
        return None
    delta = np.asarray(lp.x[:nR], dtype=np.float64) * S
    dz = -(MRJ.T @ delta)
    dy = delta[iy]
    with np.errstate(divide="ignore", invalid="ignore"):
        limits = np.concatenate([np.where(sj * dz < 0, -zJ / dz, np.inf), np.where(sy * dy < 0, -mu0[R[iy]] / dy, np.inf)])
    alpha = 0.99 * min(1.0, float(limits.min(initial=np.inf)))
    if not (alpha > 0 and abs(rR @ (mu0[R] + alpha * delta)) < abs(rR @ mu0[R])):
        return None
    mu = mu0.copy()
    mu[R] += alpha * delta
    lam = mu[:m]
    y = p.y.copy()
    y[W] = mu[m:]
    z = d.reduced(d.gradient(x), lam, y)
    z[free] = 0.0
    return attrs.evolve(p, lam=lam, y=y, z=z, mult=np.concatenate([z, y]))


@attrs.frozen(eq=False)
class PolishResult:
    """The outcome of :func:`polish`.

    Attributes
    ----------
    x : ndarray
        The polished point, or the input point when ``accepted`` is False.
    lam, y, z : ndarray
        Its multipliers: of A x = b, of l ≤ C x ≤ u, of the box (the input's, or estimated, when
        not accepted), in :func:`qpcore.kkt`'s sign convention.
    rounds : int
        Faces solved (factorizations of the KKT matrix).
    accepted : bool
        Whether the polished point replaced the input (its residuals were smaller).
    residuals : Residuals
        The returned point's residuals.
    start : Residuals
        The input's residuals (with its multipliers, or estimated ones).
    converged : bool
        Whether block pivoting ended on a face without violators.
    violators : tuple of int
        The number of violators after each round.
    single_pivots : int
        Rounds of the safeguard's single pivots.
    ratio_steps : int
        Rounds that took the primal ratio step (a face solution far beyond the constraints).
    refinements : int
        Iterative refinement steps over all rounds.
    seconds : float
        Time spent.
    message : str
        What happened, in a few words.
    """

    x: FloatArray
    lam: FloatArray
    y: FloatArray
    z: FloatArray
    rounds: int
    accepted: bool
    residuals: Residuals
    start: Residuals
    converged: bool = False
    violators: tuple[int, ...] = ()
    single_pivots: int = 0
    ratio_steps: int = 0
    refinements: int = 0
    seconds: float = 0.0
    message: str = ""

    @property
    def multipliers(self) -> tuple[FloatArray, FloatArray]:
        """(λ, y): what a strategy proposes to the certificate (``Strategy.multipliers``)."""
        return (self.lam, self.y)


def _vector(v: ArrayLike | None, size: int, name: str, fill: float = 0.0) -> FloatArray:
    if v is None:
        return np.full(size, fill)
    out = np.asarray(v, dtype=np.float64).reshape(-1)
    if out.shape != (size,):
        raise ProblemError(f"{name}: expected length {size}, got {out.shape[0]}")
    return out


def _matrix(M: Matrix, n: int, name: str) -> Matrix:
    if M is None:
        return np.zeros((0, n))
    if sp.issparse(M):
        out = sp.csr_matrix(M, dtype=np.float64)
    else:
        out = np.asarray(M, dtype=np.float64)
        if out.ndim == 1:
            out = out[None, :] if out.size else np.zeros((0, n))
    if out.shape[1] != n:
        raise ProblemError(f"{name}: expected {n} columns, got shape {out.shape}")
    return out


def polish_arrays(Q: Matrix, c: ArrayLike, lb: ArrayLike | None, ub: ArrayLike | None, A: Matrix | None,
                  b: ArrayLike | None, C: Matrix | None, l: ArrayLike | None, u: ArrayLike | None, x: ArrayLike,
                  multipliers: Multipliers | None = None, *, max_rounds: int = 10, tol: float = 1e-12,
                  active_tol: float = 1e-9, reg: float = 1e-9, max_refine: int = 30, backup: int = 3,
                  ratio: float = 0.9, band: float = 0.0, method: Literal["auto", "dense", "sparse"] = "auto",
                  dense_max: int = 300, time_limit: float | None = None, threads: int | None = None) -> PolishResult:
    """:func:`polish` over arrays: min ½xᵀQx + cᵀx, lb ≤ x ≤ ub, A x = b, l ≤ C x ≤ u.

    Parameters
    ----------
    Q : ndarray or scipy.sparse matrix
        The symmetric positive semidefinite Hessian (n × n).
    c : array_like
        Linear term.
    lb, ub : array_like, optional
        Bounds (±inf allowed; None: unbounded).
    A, b : matrix, array_like, optional
        Equality rows (None: none).
    C, l, u : matrix, array_like, optional
        Inequality rows and their bounds (None: none; l, u default to ∓inf).
    x : array_like
        The approximate optimum.
    multipliers : tuple, optional
        ``(λ, y)`` or ``(λ, y, z)``, in :func:`qpcore.kkt`'s sign convention (any entry may be
        None). Missing bound multipliers are the reduced gradient Qx + c − Aᵀλ − Cᵀy; without
        any, least-squares estimates on the guessed face.
    max_rounds, tol, active_tol, reg, max_refine, backup, ratio, band, method, dense_max, time_limit, threads
        See :func:`polish`.

    Returns
    -------
    PolishResult
    """
    with blas_threads(threads):
        return _polish(Q, c, lb, ub, A, b, C, l, u, x, multipliers, max_rounds=max_rounds, tol=tol,
                       active_tol=active_tol, reg=reg, max_refine=max_refine, backup=backup, ratio=ratio, band=band,
                       method=method, dense_max=dense_max, time_limit=time_limit)


def _polish(Q: Matrix, c: ArrayLike, lb: ArrayLike | None, ub: ArrayLike | None, A: Matrix | None,
            b: ArrayLike | None, C: Matrix | None, l: ArrayLike | None, u: ArrayLike | None, x: ArrayLike,
            multipliers: Multipliers | None, *, max_rounds: int, tol: float, active_tol: float, reg: float,
            max_refine: int, backup: int, ratio: float, band: float, method: Literal["auto", "dense", "sparse"],
            dense_max: int, time_limit: float | None) -> PolishResult:
    t0 = time.perf_counter()
    c = np.asarray(c, dtype=np.float64).reshape(-1)
    n = c.shape[0]
    Qm: Matrix = sp.csr_matrix(Q, dtype=np.float64) if sp.issparse(Q) else np.asarray(Q, dtype=np.float64)
    if Qm.shape != (n, n):
        raise ProblemError(f"Q: expected shape ({n}, {n}), got {Qm.shape}")
    Am, Cm = _matrix(A, n, "A"), _matrix(C, n, "C")
    m, k = Am.shape[0], Cm.shape[0]
    if n * (n + m + k) <= _DENSIFY:
        # small enough that scipy.sparse's per-call costs outweigh the products it saves
        Qm, Am, Cm = (M.toarray() if sp.issparse(M) else M for M in (Qm, Am, Cm))
    d = _Data(Q=Qm, c=c, lb=_vector(lb, n, "lb", -np.inf), ub=_vector(ub, n, "ub", np.inf), A=Am,
              b=_vector(b, m, "b"), C=Cm, l=_vector(l, k, "l", -np.inf), u=_vector(u, k, "u", np.inf))
    x0 = _vector(x, n, "x")
    if not np.isfinite(x0).all():
        raise ProblemError("x: contains NaN or inf")
    lo = np.concatenate([d.lb, d.l])
    hi = np.concatenate([d.ub, d.u])
    pinned = lo == hi
    Cx0 = np.asarray(Cm @ x0, dtype=np.float64)
    value0 = np.concatenate([x0, Cx0])

    given = multipliers is not None and any(v is not None for v in multipliers)
    if given:
        assert multipliers is not None
        parts = list(multipliers) + [None] * (3 - len(multipliers))
        lam0 = _vector(parts[0], m, "multipliers: λ")
        y0 = _vector(parts[1], k, "multipliers: y")
        z0 = (d.reduced(d.gradient(x0), lam0, y0) if parts[2] is None else _vector(parts[2], n, "multipliers: z"))
        if not (np.isfinite(lam0).all() and np.isfinite(y0).all() and np.isfinite(z0).all()):
            given = False
    g0 = d.gradient(x0)
    if given:
        mult0 = np.concatenate([z0, y0])
    else:
        # no multipliers: least squares on the face of the sides within a loose distance, whose
        # signs and sizes then make the guess as given ones would
        near = guess_active(value0, np.zeros(n + k), lo, hi, pinned, max(active_tol, _NEAR))
        lam0, y0, z0 = _estimate(d, x0, near)
        mult0 = np.concatenate([z0, y0])
    state0 = guess_active(value0, mult0, lo, hi, pinned, active_tol)
    start = d.residuals(x0, lam0, y0, z0)
    guesses = [state0]
    # OSQP's rule compares a distance with a multiplier, which depends on the units; the second
    # guess, tried when the first does not end clean, puts both on the scale of the problem
    # (‖x‖∞ against ‖g‖∞, ‖c‖∞)
    gscale = max(_norm(g0), _norm(c))
    if gscale > 0 and _norm(x0) > 0:
        second = guess_active(value0, mult0, lo, hi, pinned, active_tol, weight=_norm(x0) / gscale)
        if (second != state0).any():
            guesses.append(second)

    def signed(p: _Point) -> tuple[FloatArray, FloatArray]:
        """(z, y) kept only on the side the face holds: a multiplier of the wrong sign (within the
        tolerance of a violator) is 0, showing in the dual residual; the sign cone alone would
        read it as the other side's and add that bound times it to the duality gap."""
        if p.state is None:
            return p.z, p.y
        st = p.state
        keep = np.where(pinned, 1.0, np.where(st < 0, 1.0, np.where(st > 0, -1.0, 0.0)))
        v = np.concatenate([p.z, p.y])
        v = np.where(pinned, v, np.where(keep * v > 0, v, 0.0))
        return v[:n], v[n:]

    def final(p: _Point) -> tuple[FloatArray, Residuals]:
        xc = np.clip(p.x, d.lb, d.ub)
        zs, ys = signed(p)
        return xc, d.residuals(xc, p.lam, ys, zs)

    def score(p: _Point) -> float:
        return final(p)[1].measure

    tp = tol * np.maximum(1.0, np.maximum(np.where(np.isfinite(lo), np.abs(lo), 0.0),
                                          np.where(np.isfinite(hi), np.abs(hi), 0.0)))
    td = tol * max(1.0, _norm(c), _norm(g0 - c))
    deadline = t0 + time_limit if time_limit is not None else float("inf")
    best: BPPOutcome[_Point] | None = None
    rounds = singles = ratios = refinements = 0
    counts: tuple[int, ...] = ()
    failure = ""
    for guess in guesses:
        face = _QPFace(d, x0, lam0, y0, reg=reg, max_refine=max_refine, method=method, dense_max=dense_max)
        try:
            out = block_principal_pivoting(face, guess, lo, hi, pinned, max_rounds=max_rounds, backup=backup,
                                           tol_value=tp, tol_mult=td, score=score, deadline=deadline,
                                           base=value0 if ratio > 0 else None, ratio=ratio, band=band)
        except (np.linalg.LinAlgError, RuntimeError, ValueError, MemoryError) as e:
            # a singular factor SuperLU refuses, or a face too large: this guess gives nothing
            failure = f"; the face solve failed ({type(e).__name__}: {e})"
            rounds += face.factorizations
            refinements += face.refinements
            continue
        rounds += out.rounds
        singles += out.single_pivots
        ratios += out.ratio_steps
        refinements += face.refinements
        counts += out.violators
        if best is None or out.score < best.score or (out.converged and not best.converged):
            best = out
        if out.converged or time.perf_counter() >= deadline:
            break
    seconds = time.perf_counter() - t0
    if best is None:
        return PolishResult(x=x0, lam=lam0, y=y0, z=z0, rounds=rounds, accepted=False, residuals=start, start=start,
                            refinements=refinements, seconds=seconds, message="not polished" + failure)
    xp, res = final(best.solution)
    common = dict(rounds=rounds, converged=best.converged, violators=counts, single_pivots=singles,
                  ratio_steps=ratios, refinements=refinements, seconds=seconds)
    if res.measure < start.measure or (best.converged and res.measure <= max(10.0 * start.measure, ROUNDING_LEVEL)):
        p = best.solution
        settled = _settle_free_multipliers(d, xp, p, best.state, 4 * _EPS * res.gap_scale)
        if settled is not None:
            res_s = final(settled)[1]
            if res_s.gap < res.gap and res_s.dual <= max(res.dual, _EPS * res.dual_scale):
                p, res = settled, res_s
        zs, ys = signed(p)
        zp, zn = _cone(zs, d.lb, d.ub)
        yp, yn = _cone(ys, d.l, d.u)
        how = "the optimum's active set" if best.converged else "the best face met, with violators left"
        return PolishResult(x=xp, lam=p.lam, y=yp + yn, z=zp + zn, accepted=True, residuals=res, start=start,
                            message=f"polished in {rounds} round(s): {how}", **common)  # type: ignore[arg-type]
    return PolishResult(x=x0, lam=lam0, y=y0, z=z0, accepted=False, residuals=start, start=start,
                        message=f"not polished: the best face ({res.measure:.2e}) is no better than the input "
                                f"({start.measure:.2e})", **common)  # type: ignore[arg-type]


def polish(qp: QP, x: ArrayLike, multipliers: Multipliers | None = None, *, max_rounds: int = 10,
           tol: float = 1e-12, active_tol: float = 1e-9, reg: float = 1e-9, max_refine: int = 30,
           backup: int = 3, ratio: float = 0.9, band: float = 0.0,
           method: Literal["auto", "dense", "sparse"] = "auto", dense_max: int = 300,
           time_limit: float | None = None, threads: int | None = None) -> PolishResult:
    """Polish an approximate optimum of ``qp`` by an exact active-set finish (see the module).

    Parameters
    ----------
    qp : QP
        The problem (box, equality rows A x = b, inequality rows l ≤ C x ≤ u). Its Hessian is
        read as a matrix (:func:`qpcore.backends.sparse.matrix_of`: sparse stays sparse).
    x : array_like
        The approximate optimum (from an interior point method or any solver).
    multipliers : tuple, optional
        ``(λ, y)`` or ``(λ, y, z)`` in :func:`qpcore.kkt`'s sign convention (stationarity
        Qx + c − Aᵀλ − Cᵀy − z = 0, z ≥ 0 at a lower bound, y ≥ 0 where C x = l). Without them the
        active set is guessed from the distances alone, with least-squares multipliers.
    max_rounds : int
        The most faces solved, each one factorization (default 10).
    tol : float
        Relative size below which a bound or row violation, or a multiplier of the wrong sign,
        does not count as a violator (default 1e-12).
    active_tol : float
        Relative distance within which a side is guessed active whatever its multiplier.
    reg : float
        The regularization ρ = δ of the equilibrated KKT matrix (the refinement removes it).
    max_refine : int
        The most iterative refinement steps per face.
    backup : int
        Full block exchanges allowed without a new smallest number of violators before single
        pivots (Kim and Park's p̄).
    ratio : float
        A round whose segment from the current feasible point to the face's solution leaves the
        feasible set before this fraction of its length takes the primal ratio step instead of a
        block exchange (default 0.9; 0 never).
    band : float
        In a ratio step, sides met within ``band`` of the rest of the segment after the first
        are activated with it (default 0: only those met together).
    method : {"auto", "dense", "sparse"}
        The factorization: dense LAPACK LU, scipy's SuperLU, or by size and density ("auto":
        sparse above ``dense_max`` unknowns when at most 10% of the KKT matrix is nonzero).
    dense_max : int
        See ``method``.
    time_limit : float, optional
        Seconds after which no further face is solved.
    threads : int, optional
        BLAS threads (:func:`qpcore.linalg.threads.blas_threads`: None decides from the free cores;
        inside ``qpcore.solve`` the run's decision stands).

    Returns
    -------
    PolishResult
        ``accepted`` says whether the polished point replaced the input: it does only when its
        largest relative residual (:attr:`Residuals.measure`) is smaller than the input's.

    Examples
    --------
    >>> import numpy as np
    >>> from qpcore import QP
    >>> from qpcore_strategies.polish import polish
    >>> qp = QP(np.eye(2), [-1.0, -1.0], lb=0.0, ub=0.6, C=[[1.0, 1.0]], l=-np.inf, u=1.0)
    >>> res = polish(qp, [0.4999, 0.5001])
    >>> res.accepted, np.allclose(res.x, [0.5, 0.5])
    (True, True)
    """
    k = qp.k
    return polish_arrays(matrix_of(qp.Q), qp.c, qp.lb, qp.ub, qp.A, qp.b, qp.C if k else None,
                         qp.l if k else None, qp.u if k else None, x, multipliers, max_rounds=max_rounds, tol=tol,
                         active_tol=active_tol, reg=reg, max_refine=max_refine, backup=backup, ratio=ratio,
                         band=band, method=method, dense_max=dense_max, time_limit=time_limit, threads=threads)


# --------------------------------------------------------------------------------------------------
# as a stage of other strategies


@attrs.frozen
class PolishFinish:
    """The finish as a stage another strategy runs (its ``finish=`` option): frozen settings of
    :func:`polish`, applied to a run's state.

    Attributes
    ----------
    max_rounds, tol, active_tol, reg, max_refine, backup, ratio, band
        See :func:`polish`.
    """

    max_rounds: int = 10
    tol: float = 1e-12
    active_tol: float = 1e-9
    reg: float = 1e-9
    max_refine: int = 30
    backup: int = 3
    ratio: float = 0.9
    band: float = 0.0

    def run(self, qp: QP, x: ArrayLike, multipliers: Multipliers | None = None,
            time_limit: float | None = None) -> PolishResult:
        """:func:`polish` with these settings."""
        return polish(qp, x, multipliers, max_rounds=self.max_rounds, tol=self.tol, active_tol=self.active_tol,
                      reg=self.reg, max_refine=self.max_refine, backup=self.backup, ratio=self.ratio, band=self.band,
                      time_limit=time_limit)

    def apply(self, qp: QP, state: State, multipliers: Multipliers | None = None) -> PolishResult:
        """Polish ``state.x`` in place (x, g, status and ``exact``) when the finish is accepted.

        Parameters
        ----------
        qp : QP
            The problem the state belongs to.
        state : State
            A run's state; left as it is when the polished point is not accepted.
        multipliers : tuple, optional
            The strategy's multipliers at ``state.x`` (see :func:`polish`).

        Returns
        -------
        PolishResult
            Also counted in ``state.counters`` (``polish_rounds``, ``polish_accepted``).
        """
        left = state.time_left()
        res = self.run(qp, state.x, multipliers, time_limit=left if np.isfinite(left) else None)
        state.counters["polish_rounds"] = state.counters.get("polish_rounds", 0) + res.rounds
        state.counters["polish_accepted"] = state.counters.get("polish_accepted", 0) + int(res.accepted)
        if res.accepted:
            state.x = res.x
            state.g = qp.gradient(res.x)
            state.status = bound_status(res.x, qp.lb, qp.ub)
            state.exact = (state.x, state.g)
        return res


@attrs.define(slots=True, eq=False)
class _StageWork(Work):
    """The stage's own state: its tolerance and the finish's result (for ``multipliers``)."""

    tol: float
    result: PolishResult | None = None


@attrs.frozen
class Polish(Strategy):
    """The finish alone, as a strategy: polish the start point (``qpcore.solve(qp, Polish(), x0=...)``).

    One step runs :func:`polish` on ``x0`` (multipliers estimated); the run is done when the
    polished point's residuals are within ``tol``, else it stops as stalled. Its multipliers go
    to the certificate as a proposal.

    Attributes
    ----------
    finish_settings : PolishFinish
        The settings (the keyword ``finish`` when built).
    """

    finish_settings: PolishFinish = attrs.field(factory=PolishFinish, alias="finish")
    takes_inequalities: ClassVar[bool] = True

    def init(self, qp: QP, x0: NDArray[np.float64] | None, tol: float) -> State:
        """The state at ``x0`` (or the box's point nearest 0)."""
        self.check(qp)
        x = np.clip(np.zeros(qp.n), qp.lb, qp.ub) if x0 is None else np.array(x0, dtype=np.float64)
        g = qp.gradient(x)
        return State(x=x, g=g, status=bound_status(x, qp.lb, qp.ub), work=_StageWork(tol=tol))

    def step(self, qp: QP, state: State) -> None:
        """Run the finish once; done when its residuals meet tol."""
        work = state.work(_StageWork)
        res = self.finish_settings.apply(qp, state)
        work.result = res
        state.iteration += 1
        if res.residuals.measure <= work.tol:
            state.done = True
        else:
            state.stop = Status.STALLED

    def multipliers(self, qp: QP, state: State) -> tuple[FloatArray, FloatArray] | None:
        """The polished point's (λ, y), when the finish was accepted."""
        work = state.work_or_none(_StageWork)
        if work is None or work.result is None or not work.result.accepted:
            return None
        return work.result.multipliers

    def report(self, state: State) -> dict[str, Any]:
        """The finish's rounds and message."""
        work = state.work_or_none(_StageWork)
        if work is None or work.result is None:
            return {}
        r = work.result
        return {"polish": r.message, "polish_residual": r.residuals.measure, "polish_start": r.start.measure}
