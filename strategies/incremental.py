"""The exact incremental/decremental SVM of Cauwenberghs and Poggio (NIPS 2000).

The C-SVC dual min ½αᵀQα − eᵀα, 0 ≤ α ≤ C, yᵀα = 0 (Q_ij = y_i y_j K(x_i, x_j)) is kept *solved*
while points are added and removed, by moving one coefficient α_c adiabatically: all other points
keep their KKT conditions on the margin function g_i = (Qα)_i + y_i b − 1 while α_c changes, and
the path is piecewise linear, with break points where a point changes set:

- margin M: 0 ≤ α ≤ C, g = 0 (its α and the bias b move with α_c through the bordered KKT
  system of M, kept factored in a :class:`qpcore.factor.BorderedCholesky`);
- error E: α = C, g ≤ 0;  reserve R: α = 0, g ≥ 0.

Per unit of Δα_c the margin vectors move by β = −K⁻¹[y_c; Q_Mc] (K the bordered matrix of M), every
g by γ = Q_:c + Q_:M β_M + y β_b; the step is the largest one before the first event (a margin
α at a bound, an E or R point's g at 0, the candidate at its target or, when learning, its g at 0).
γ and the ratio tests are vectorized over all points; the margin rows Q[M, :] sit in a buffer that
grows with the data. With no margin vector the bias alone moves (Diehl and Cauwenberghs 2003).

:class:`IncrementalSVM` is the user-facing model: ``learn``, ``unlearn``, ``learn_many``, ``fit``
(a batch solve polished into an exact state), ``leave_one_out``, ``window``, ``c_path``,
``decision_function``/``predict`` and ``certificate`` (:func:`qpcore.kkt` on :meth:`IncrementalSVM.qp`,
from the problem alone).
"""

from __future__ import annotations

import copy
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.dynamic import DynamicKernelQ
from qpcore.factor import BorderedCholesky, Dependence
from qpcore.kkt import KKT, kkt
from qpcore.operators import Kernel
from qpcore.problem import QP, ProblemError
from qpcore.projection import bound_steps

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["Breakpoint", "IncrementalSVM", "LOOResult", "WindowReport"]

# set codes of the status array
DEAD, RESERVE, MARGIN, ERROR, CANDIDATE = -1, 0, 1, 2, 3
_EPS = float(np.finfo(np.float64).eps)


@attrs.frozen
class LOOResult:
    """Exact leave-one-out results.

    Attributes
    ----------
    errors : int
        Number of LOO errors.
    n : int
        Number of points.
    ids : ndarray
        Point ids (the model's order).
    error : ndarray of bool
        Whether each point is a LOO error.
    decision : ndarray
        The LOO decision value f₋ᵢ(xᵢ) where computed; NaN where the decrement stopped early at a
        certain error (yᵢ f₋ᵢ(xᵢ) < 0 already).
    seconds : float
        Wall time.
    """

    errors: int
    n: int
    ids: NDArray[np.int64]
    error: NDArray[np.bool_]
    decision: FloatArray
    seconds: float

    @property
    def error_rate(self) -> float:
        """errors / n."""
        return self.errors / self.n if self.n else 0.0


@attrs.frozen
class Breakpoint:
    """A break point of a regularization path: the C where a set changed.

    Attributes
    ----------
    C : float
        The value of C.
    event : str
        ``"margin->reserve"``, ``"margin->error"``, ``"error->margin"``, ``"reserve->margin"``,
        ``"bias"`` (no margin vector: the bias alone moved) or ``"end"``.
    id : int
        The point that changed set (−1 for ``"end"``).
    n_margin, n_error, n_reserve : int
        Set sizes after the event.
    """

    C: float
    event: str
    id: int
    n_margin: int
    n_error: int
    n_reserve: int


def _entry_event(g: FloatArray, sg: FloatArray, stE: NDArray[np.bool_], stR: NDArray[np.bool_], blocked: set[int],
                 tol_g: float) -> tuple[float, int] | None:
    """The first error or reserve point whose margin value g reaches 0 at rate sg: (step, slot).

    An error point (g ≤ 0) joins M when g rises, a reserve point (g ≥ 0) when it falls; rates
    within ``tol_g`` of 0 are rounding, and ``blocked`` points (just left M at a zero step) wait.
    """
    cand = (stE & (sg > tol_g)) | (stR & (sg < -tol_g))
    if blocked:
        cand[list(blocked)] = False
    idx = np.flatnonzero(cand)
    if idx.size == 0:
        return None
    li = -g[idx] / sg[idx]
    k = int(np.argmin(li))
    return float(li[k]), int(idx[k])


@attrs.frozen
class WindowReport:
    """What :meth:`IncrementalSVM.window` did.

    Attributes
    ----------
    learned, unlearned : int
        Points added and removed.
    online_errors : int
        Points misclassified by the model *before* they were learned (the first is not counted).
    seconds : float
        Wall time.
    """

    learned: int
    unlearned: int
    online_errors: int
    seconds: float

    @property
    def throughput(self) -> float:
        """Points processed (learned) per second."""
        return self.learned / self.seconds if self.seconds > 0 else float("inf")


class IncrementalSVM:
    """A C-SVC kept exactly solved under additions and removals (Cauwenberghs–Poggio).

    Parameters
    ----------
    kernel : Kernel
        The kernel (linear, RBF, polynomial, sigmoid).
    C : float
        Default box bound (a point may carry its own ``C_i``).
    tol : float
        What :meth:`certificate` must meet (the maximal-violating-pair gap); also the scale of the
        internal event tolerances' sanity checks.
    classes : array_like, optional
        The two label values [negative, positive]. Default: ±1 labels as given, or the two
        values seen in the first array passed to ``learn_many``/``fit`` (the larger is positive).
    refresh_every : int
        Recompute g from scratch, refactor the margin factor and re-solve α_M and b every this
        many learn/unlearn calls (drift control).
    capacity : int
        Initial number of point slots.
    cache_bytes : int
        Row-cache budget of the kernel operator.

    Attributes
    ----------
    stats : dict
        ``learned``, ``unlearned``, ``steps`` (path segments), ``refreshes``, ``dependences``,
        ``repairs``.
    """

    def __init__(self, kernel: Kernel, C: float = 1.0, *, tol: float = 1e-9, classes: ArrayLike | None = None,
                 refresh_every: int = 500, capacity: int = 64, cache_bytes: int = 128 << 20) -> None:
        if not isinstance(kernel, Kernel):
            raise ProblemError("kernel: pass a qpcore.Kernel")
        if not (np.isfinite(C) and C > 0):
            raise ProblemError(f"C: must be finite and > 0, got {C!r}")
        self.kernel = kernel
        self.C = float(C)
        self.tol = float(tol)
        self.refresh_every = int(refresh_every)
        self.classes: NDArray[Any] | None = None if classes is None else np.asarray(classes)
        if self.classes is not None and self.classes.shape != (2,):
            raise ProblemError("classes: pass the two label values [negative, positive]")
        self._capacity = int(capacity)
        self._cache_bytes = int(cache_bytes)
        self.stats = {"learned": 0, "unlearned": 0, "steps": 0, "refreshes": 0, "dependences": 0, "repairs": 0}
        self._reset()

    # -- state -----------------------------------------------------------------------------------
    def _reset(self) -> None:
        self._op = DynamicKernelQ(self.kernel, capacity=self._capacity, cache_bytes=self._cache_bytes)
        cap = self._op.capacity
        self._alpha = np.zeros(cap)
        self._g = np.zeros(cap)
        self._Cv = np.zeros(cap)
        self._status = np.full(cap, DEAD, dtype=np.int8)
        self._id = np.full(cap, -1, dtype=np.int64)
        self._qmrow = np.full(cap, -1, dtype=np.intp)
        self._slot_of: dict[int, int] = {}
        self._next_id = 0
        self._b = 0.0
        self._fac = BorderedCholesky(np.zeros(cap), capacity=32)
        # margin rows Q[M, :] over all slots, in any row order (_qmrow maps slot -> row)
        self._QM = np.zeros((16, cap))
        self._qm_slot = np.full(16, -1, dtype=np.intp)
        self._nq = 0
        self._qmax = 0.0
        self._since_refresh = 0
        self._m_changes = 0
        self._qm_written: set[int] | None = None

    def _sync_capacity(self) -> None:
        """Grow the per-slot arrays and the margin-row buffer's columns with the operator."""
        cap = self._op.capacity
        old = self._alpha.shape[0]
        if cap == old:
            return
        for name, fill in (("_alpha", 0.0), ("_g", 0.0), ("_Cv", 0.0), ("_status", DEAD), ("_id", -1),
                           ("_qmrow", -1)):
            a = getattr(self, name)
            new = np.full(cap, fill, dtype=a.dtype)
            new[:old] = a
            setattr(self, name, new)
        QM = np.zeros((self._QM.shape[0], cap))
        QM[:self._nq, :old] = self._QM[:self._nq]
        self._QM = QM

    def _qm_add(self, slot: int, row: FloatArray) -> None:
        hw = self._op.n_slots
        r = self._nq
        if r == self._QM.shape[0]:
            QM = np.zeros((2 * r, self._QM.shape[1]))
            QM[:r] = self._QM[:r]
            self._QM = QM
            qs = np.full(2 * r, -1, dtype=np.intp)
            qs[:r] = self._qm_slot[:r]
            self._qm_slot = qs
        self._QM[r, :hw] = row[:hw]
        self._QM[r, hw:] = 0.0
        self._qm_slot[r] = slot
        self._qmrow[slot] = r
        self._nq = r + 1
        if self._qm_written is not None:
            self._qm_written.add(r)

    def _qm_remove(self, slot: int) -> None:
        r, last = int(self._qmrow[slot]), self._nq - 1
        if r != last:
            hw = self._op.n_slots
            self._QM[r, :hw] = self._QM[last, :hw]
            moved = int(self._qm_slot[last])
            self._qm_slot[r] = moved
            self._qmrow[moved] = r
            if self._qm_written is not None:
                self._qm_written.add(r)
        self._qm_slot[last] = -1
        self._qmrow[slot] = -1
        self._nq = last

    def _add_margin(self, slot: int, row: FloatArray) -> Dependence | None:
        """Put ``slot`` into M (factor and row buffer); a Dependence leaves everything unchanged."""
        mem = self._fac.members
        y = self._op.s_buffer
        dep = self._fac.add(slot, col=row[mem], diag=float(row[slot]), a_i=float(y[slot]))
        if dep is not None:
            self.stats["dependences"] += 1
            return dep
        self._status[slot] = MARGIN
        self._qm_add(slot, row)
        self._m_changes += 1
        return None

    def _remove_margin(self, slot: int, to: int) -> None:
        self._fac.remove(slot)
        self._qm_remove(slot)
        self._status[slot] = to
        if to == RESERVE:
            self._alpha[slot] = 0.0
        elif to == ERROR:
            self._alpha[slot] = self._Cv[slot]
        self._m_changes += 1

    def _encode(self, y: ArrayLike) -> FloatArray:
        arr = np.atleast_1d(np.asarray(y))
        if self.classes is None:
            vals = np.unique(arr)
            if np.issubdtype(arr.dtype, np.number) and set(vals.astype(float).tolist()) <= {-1.0, 1.0}:
                self.classes = np.array([-1, 1], dtype=arr.dtype)
            elif vals.size == 2:
                self.classes = vals
            else:
                raise ProblemError("y: cannot tell the two classes from these labels; pass classes=[neg, pos]")
        neg, pos = self.classes
        is_pos, is_neg = arr == pos, arr == neg
        if not (is_pos | is_neg).all():
            raise ProblemError(f"y: labels must be one of {self.classes.tolist()}")
        return np.where(is_pos, 1.0, -1.0)

    # -- tolerances ------------------------------------------------------------------------------
    def _gtol(self) -> float:
        """|g| below which a point counts as on the margin (for the entry test of a new point)."""
        return 1e-13 * max(1.0, self._qmax * (1.0 + self.C))

    # -- the adiabatic move ------------------------------------------------------------------------
    def _move(self, c: int, s: float, target: float, *, to_margin: bool, loo: bool = False,
              Qc: FloatArray | None = None) -> str:
        """Move α_c by direction s (±1) toward ``target`` keeping every other point's KKT conditions.

        Returns ``"target"`` (α_c reached it), ``"margin"`` (c joined M), ``"reserve"`` (c reached
        g = 0 at α_c = 0, learning only) or ``"loo"`` (g_c < −1: a certain LOO error).
        """
        op = self._op
        hw = op.n_slots
        if Qc is None:
            Qc = np.array(op.row(c))
        y = op.s_buffer[:hw]
        alpha, g, Cv, st = self._alpha, self._g, self._Cv, self._status
        blocked: set[int] = set()
        max_steps = 20 * hw + 1000
        for _ in range(max_steps):
            self.stats["steps"] += 1
            if loo and g[c] < -1.0:
                return "loo"
            m = self._fac.size
            lam = (Cv[c] - alpha[c]) if s > 0 else alpha[c]
            lam = max(float(lam), 0.0)
            event, who = "target", c
            stE = st[:hw] == ERROR
            stR = st[:hw] == RESERVE
            if m == 0:
                # no margin vector: α_c cannot move (yᵀα = 0), the bias alone does, Δb = s·y_c·t,
                # until a point that can compensate α_c reaches g = 0 (or, learning, c itself does)
                lam = np.inf
                yc = float(y[c])
                sg = (s * yc) * y
                dx = np.zeros(0)
                mu = 0.0
                if to_margin:
                    t = max(-float(g[c]), 0.0)
                    lam, event = t, "cmargin"
                tol_g = 0.5
            else:
                mem = self._fac.members
                rows = self._qmrow[mem]
                x, mu = self._fac.solve_kkt(-self._QM[rows, c], -float(y[c]))
                coef = np.zeros(self._nq)
                coef[rows] = x
                # over the whole (contiguous) row buffer: a BLAS GEMV; a column slice would be
                # strided and take numpy's slow loop (measured 6× slower on Adult)
                gam = (coef @ self._QM[:self._nq])[:hw]
                gam += Qc
                gam += mu * y
                sg = s * gam
                dx = s * x
                scale = self._qmax * (1.0 + float(np.abs(x).sum())) + abs(mu)
                tol_g = 1e-12 * max(scale, 1e-300)
                if to_margin and sg[c] > tol_g:
                    t = max(-float(g[c]) / float(sg[c]), 0.0)
                    if t < lam:
                        lam, event = t, "cmargin"
                btol = 1e-13 * (1.0 + float(np.abs(dx).max(initial=0.0)))
                am, Cm = alpha[mem], Cv[mem]
                lm = np.full(mem.size, np.inf)
                up, dn = dx > btol, dx < -btol
                lm[up] = (Cm[up] - am[up]) / dx[up]
                lm[dn] = am[dn] / -dx[dn]
                if mem.size:
                    k = int(np.argmin(lm))
                    if lm[k] < lam:
                        lam, event, who = max(float(lm[k]), 0.0), ("m->E" if up[k] else "m->R"), int(mem[k])
            hit = _entry_event(g, sg, stE, stR, blocked, tol_g)
            if hit is not None and hit[0] < lam:
                lam, event, who = max(hit[0], 0.0), "join", hit[1]
            if not np.isfinite(lam):
                if abs(alpha[c] - target) <= 1e-9 * Cv[c]:
                    # nothing can compensate α_c in yᵀα = 0: what is left of it is rounding residue
                    alpha[c] = target
                    return "target"
                raise RuntimeError("incremental SVM: no event bounds the step (inconsistent state)")
            # the step
            if m == 0:
                self._b += s * float(y[c]) * lam
            else:
                alpha[c] += s * lam
                alpha[mem] = np.clip(alpha[mem] + lam * dx, 0.0, Cv[mem])
                self._b += s * lam * mu
            g[:hw] += lam * sg
            if lam > 0.0:
                blocked.clear()
            # the event
            if event == "target":
                alpha[c] = target
                return "target"
            if event == "cmargin":
                g[c] = 0.0
                if alpha[c] <= 0.0:
                    alpha[c] = 0.0
                    st[c] = RESERVE
                    return "reserve"
                if self._add_margin(c, Qc) is None:
                    return "margin"
                raise RuntimeError("incremental SVM: candidate dependent at its margin event")
            if event in ("m->E", "m->R"):
                g[who] = 0.0
                self._remove_margin(who, ERROR if event == "m->E" else RESERVE)
                if lam == 0.0:
                    blocked.add(who)   # no zero-length in/out cycling of the same point
                continue
            # an E or R point reached g = 0
            g[who] = 0.0
            row = np.asarray(op.row(who))
            dep = self._add_margin(who, row)
            if dep is not None:
                # [Q_i, y_i] depends on M's: γ_i ≡ 0, so i stays at g = 0 in its set (still KKT)
                blocked.add(who)
        raise RuntimeError(f"incremental SVM: no convergence in {max_steps} path segments")

    def _increment(self, c: int, Qc: FloatArray | None = None) -> None:
        """c (α_c at 0 or anywhere below C, not in M) learned: increase α_c until g_c = 0 or α_c = C."""
        if self._g[c] >= -self._gtol():
            if self._alpha[c] == 0.0:
                self._status[c] = RESERVE
                return
        self._status[c] = CANDIDATE
        if self._move(c, 1.0, float(self._Cv[c]), to_margin=True, Qc=Qc) == "target":
            self._status[c] = ERROR

    def _decrement(self, c: int, *, loo: bool = False) -> str:
        """Take c out of M if there, then decrease α_c to 0 (c left as a candidate)."""
        if self._status[c] == MARGIN:
            self._remove_margin(c, CANDIDATE)
        self._status[c] = CANDIDATE
        if self._alpha[c] <= 0.0:
            self._alpha[c] = 0.0
            return "target"
        return self._move(c, -1.0, 0.0, to_margin=False, loo=loo)

    def _tick(self) -> None:
        self._since_refresh += 1
        if self.refresh_every > 0 and self._since_refresh >= self.refresh_every:
            self.refresh()

    # -- public: learning --------------------------------------------------------------------------
    def learn(self, x: ArrayLike, y: Any, C_i: float | None = None) -> int:
        """Add one example and re-solve exactly (the adiabatic increment).

        Parameters
        ----------
        x : array_like
            The point (a row of features).
        y : label
            Its label (one of :attr:`classes`).
        C_i : float, optional
            Its box bound; default :attr:`C`.

        Returns
        -------
        int
            The point's id (stable for the model's life; see :attr:`ids`).
        """
        ypm = float(self._encode(np.atleast_1d(np.asarray(y)))[0])
        Ci = self.C if C_i is None else float(C_i)
        if not (np.isfinite(Ci) and Ci > 0):
            raise ProblemError(f"C_i: must be finite and > 0, got {C_i!r}")
        # a row of a scipy.sparse *array* is 1-D: reshape it into the one-row matrix the operator takes
        xs: Any = x
        row: Any = (sp.csr_matrix(xs.reshape(1, -1) if xs.ndim == 1 else xs) if sp.issparse(xs)
                    else np.atleast_2d(np.asarray(xs, dtype=np.float64)))
        slot = int(self._op.append(row, [ypm])[0])
        self._sync_capacity()
        pid = self._next_id
        self._next_id += 1
        self._id[slot] = pid
        self._slot_of[pid] = slot
        Qc = np.array(self._op.row(slot))
        self._qmax = max(self._qmax, float(Qc[slot]))
        if self._nq:
            self._QM[:self._nq, slot] = Qc[self._qm_slot[:self._nq]]
        self._alpha[slot] = 0.0
        self._Cv[slot] = Ci
        hw = self._op.n_slots
        self._g[slot] = float(Qc @ self._alpha[:hw]) + ypm * self._b - 1.0
        self._status[slot] = CANDIDATE
        self._increment(slot, Qc)
        self.stats["learned"] += 1
        self._tick()
        return pid

    def unlearn(self, pid: int) -> None:
        """Remove example ``pid`` exactly (decrement α to 0, then drop the point)."""
        slot = self._slot(pid)
        self._decrement(slot)
        self._alpha[slot] = 0.0
        if self._nq:
            self._QM[:self._nq, slot] = 0.0
        self._op.remove(slot)
        self._status[slot] = DEAD
        self._g[slot] = 0.0
        self._Cv[slot] = 0.0
        self._id[slot] = -1
        del self._slot_of[pid]
        self.stats["unlearned"] += 1
        self._tick()

    def learn_many(self, X: Any, y: ArrayLike, C_i: ArrayLike | None = None) -> NDArray[np.int64]:
        """Learn the rows of X one at a time (a batch trainer from the current model).

        Returns
        -------
        ndarray
            The ids.
        """
        yy = np.asarray(y)
        self._encode(yy)        # fix the classes from the whole array
        n = int(X.shape[0])
        Cs = np.full(n, self.C) if C_i is None else np.broadcast_to(np.asarray(C_i, dtype=np.float64), (n,))
        ids = np.empty(n, dtype=np.int64)
        for k in range(n):
            ids[k] = self.learn(X[k], yy[k], float(Cs[k]))
        return ids

    def fit(self, X: Any, y: ArrayLike, C_i: ArrayLike | None = None, *, method: str = "batch",
            batch_tol: float = 1e-8) -> IncrementalSVM:
        """Train from scratch on (X, y), replacing the model.

        Parameters
        ----------
        method : {"batch", "incremental"}
            ``"incremental"``: :meth:`learn_many`. ``"batch"`` (faster for large n): solve with
            SMO to ``batch_tol``, then polish into an exact state: M = the free α, factored, α_M
            and b re-solved from the KKT system of M given E at C and R at 0, margin vectors the
            re-solve puts out of bounds moved to that bound, and every E or R point whose g has
            the wrong sign repaired exactly (decremented to 0 and learned again).
        batch_tol : float
            Tolerance of the batch solve.

        Returns
        -------
        self
        """
        self._reset()
        yy = np.asarray(y)
        ypm = self._encode(yy)
        n = int(X.shape[0])
        if method == "incremental":
            self.learn_many(X, yy, C_i)
            return self
        if method != "batch":
            raise ProblemError(f"method: 'batch' or 'incremental', got {method!r}")
        Cs = np.full(n, self.C) if C_i is None else np.broadcast_to(np.asarray(C_i, dtype=np.float64), (n,)).copy()
        if not (np.isfinite(Cs).all() and (Cs > 0).all()):
            raise ProblemError("C_i: must be finite and > 0")
        slots = self._op.append(X, ypm)
        self._sync_capacity()
        ids = np.arange(self._next_id, self._next_id + n, dtype=np.int64)
        self._next_id += n
        self._id[slots] = ids
        self._slot_of.update(zip(ids.tolist(), slots.tolist()))
        self._Cv[slots] = Cs
        self._qmax = float(self._op.diag().max(initial=0.0))
        if (ypm > 0).all() or (ypm < 0).all():
            self._alpha[slots] = 0.0
            self._b = float(ypm[0])
            self._status[slots] = RESERVE
            self.refresh()
            return self
        from qpcore.solve import solve
        from strategies.smo import SMO

        qp = self.qp()
        res = solve(qp, SMO(), tol=batch_tol)
        self._polish(slots, np.asarray(res.x, dtype=np.float64), -float(res.multipliers[0]))
        self.stats["learned"] += n
        return self

    def _polish(self, slots: IndexArray, a: FloatArray, bias: float) -> None:
        """Turn a near-optimal α into an exact CP state (see :meth:`fit`)."""
        Cs = self._Cv[slots]
        a = np.clip(a, 0.0, Cs)
        a[a <= 1e-14 * Cs] = 0.0
        a[a >= Cs * (1.0 - 1e-14)] = Cs[a >= Cs * (1.0 - 1e-14)]
        self._alpha[slots] = a
        self._b = bias
        self._status[slots] = np.where(a <= 0.0, RESERVE, np.where(a >= Cs, ERROR, MARGIN)).astype(np.int8)
        free = slots[self._status[slots] == MARGIN]
        self._status[free] = CANDIDATE
        if free.size:
            rows = self._op.rows(free)
            block = rows[:, free]
            self._fac.a = self._op.s_buffer
            try:
                self._fac.refactor(0.5 * (block + block.T), free)
                for k, sl in enumerate(free.tolist()):
                    self._status[sl] = MARGIN
                    self._qm_add(sl, rows[k])
            except np.linalg.LinAlgError:
                for k, sl in enumerate(free.tolist()):
                    self._admit_free(sl, rows[k])
        # α_M and b from the KKT system of M; margin values out of bounds go to that bound
        for _ in range(10 * free.size + 10):
            bad = self._resolve_margin(strict=True)
            if bad is None:
                break
            sl, to = bad
            self._remove_margin(sl, to)
        self._recompute_g()
        self._repair_violators()
        self.refresh()

    def _admit_free(self, sl: int, row: FloatArray) -> None:
        """Add a free variable to M; on a dependence, step along the null direction (the objective
        and g are constant there) until a variable reaches a bound, which leaves the free set."""
        for _ in range(self._fac.size + 2):
            dep = self._add_margin(sl, row)
            if dep is None:
                return
            mem, v = dep.members, dep.direction
            a, Cm = self._alpha[mem], self._Cv[mem]
            best = (np.inf, -1, 0.0)
            for sgn in (1.0, -1.0):
                t = np.minimum(*bound_steps(a, sgn * v, np.zeros_like(a), Cm))
                k = int(np.argmin(t))
                if t[k] < best[0]:
                    best = (float(t[k]), k, sgn)
            t0, k, sgn = best
            self._alpha[mem] = np.clip(a + t0 * sgn * v, 0.0, Cm)
            j = int(mem[k])
            to = RESERVE if sgn * v[k] < 0 else ERROR
            if j == sl:
                self._alpha[sl] = 0.0 if to == RESERVE else self._Cv[sl]
                self._status[sl] = to
                return
            self._remove_margin(j, to)
        raise RuntimeError("incremental SVM: could not admit a dependent free variable")

    def _resolve_margin(self, strict: bool = False) -> tuple[int, int] | None:
        """Re-solve α_M and b exactly from M's KKT system given α_E = C_E (and α_R = 0).

        Returns the worst margin vector the solution puts out of its bounds (and that bound's
        set), leaving the state unchanged then; None when applied.
        """
        m = self._fac.size
        if m == 0:
            return None
        hw = self._op.n_slots
        mem = self._fac.members
        rows = self._qmrow[mem]
        aE = np.where(self._status[:hw] == ERROR, self._alpha[:hw], 0.0)
        y = self._op.s_buffer[:hw]
        r = 1.0 - self._QM[rows, :hw] @ aE
        x, mu = self._fac.solve_kkt(r, -float(y @ aE))
        Cm = self._Cv[mem]
        slack = 1e-9 * Cm if not strict else 1e-12 * Cm
        over = np.maximum(-x - slack, x - Cm - slack)
        k = int(np.argmax(over))
        if over[k] > 0:
            return int(mem[k]), RESERVE if x[k] < 0 else ERROR
        self._alpha[mem] = np.clip(x, 0.0, Cm)
        self._b = float(mu)
        return None

    def _recompute_g(self) -> None:
        hw = self._op.n_slots
        y = self._op.s_buffer[:hw]
        a = np.where(self._op.alive, self._alpha[:hw], 0.0)
        self._g[:hw] = self._op.matvec(a) + y * self._b - 1.0
        self._g[:hw][self._status[:hw] == MARGIN] = 0.0

    def _repair_violators(self) -> None:
        """Repair exactly the E and R points whose g has the wrong sign beyond rounding."""
        hw = self._op.n_slots
        thr = 1e-11 * max(1.0, self._qmax * self.C)
        for _ in range(hw + 1):
            st, g = self._status[:hw], self._g[:hw]
            bad = np.flatnonzero(((st == ERROR) & (g > thr)) | ((st == RESERVE) & (g < -thr)))
            if bad.size == 0:
                return
            c = int(bad[np.argmax(np.abs(g[bad]))])
            self.stats["repairs"] += 1
            self._decrement(c)
            self._increment(c)

    def refresh(self) -> None:
        """Refactor the margin block, re-solve α_M and b, recompute g from scratch (drift control)."""
        self._since_refresh = 0
        self.stats["refreshes"] += 1
        m = self._fac.size
        if m:
            mem = self._fac.members
            rows = self._qmrow[mem]
            block = self._QM[rows][:, mem]
            self._fac.a = self._op.s_buffer
            try:
                self._fac.refactor(0.5 * (block + block.T), mem)
            except np.linalg.LinAlgError:
                pass
            self._resolve_margin()
        self._recompute_g()

    # -- leave-one-out -----------------------------------------------------------------------------
    def _save(self) -> dict[str, Any]:
        hw = self._op.n_slots
        self._qm_written = set()
        return {"alpha": self._alpha[:hw].copy(), "g": self._g[:hw].copy(), "b": self._b,
                "status": self._status[:hw].copy(), "qmrow": self._qmrow[:hw].copy(), "nq": self._nq,
                "QM": self._QM[:self._nq, :hw].copy(), "qm_slot": self._qm_slot[:self._nq].copy(),
                "fac": copy.deepcopy(self._fac), "changes": self._m_changes}

    def _restore(self, snap: dict[str, Any]) -> None:
        hw = self._op.n_slots
        self._alpha[:hw] = snap["alpha"]
        self._g[:hw] = snap["g"]
        self._b = snap["b"]
        self._status[:hw] = snap["status"]
        if self._m_changes != snap["changes"]:
            nq = snap["nq"]
            assert self._qm_written is not None
            for r in self._qm_written:
                if r < nq:
                    self._QM[r, :hw] = snap["QM"][r]
            self._qm_written.clear()
            self._qm_slot[:nq] = snap["qm_slot"]
            self._qm_slot[nq:] = -1
            self._nq = nq
            self._qmrow[:hw] = snap["qmrow"]
            self._fac = copy.deepcopy(snap["fac"])
            self._m_changes = snap["changes"]

    def leave_one_out(self) -> LOOResult:
        """The exact leave-one-out error (Cauwenberghs–Poggio decremental unlearning).

        Reserve points (α = 0) are LOO-correct without work. For each margin and error vector c,
        α_c is decremented adiabatically to 0 — stopping early once g_c < −1, a certain error, since
        g_c only decreases on the way — and f₋c(x_c) = y_c (g_c + 1) read off at α_c = 0.

        The state is then *restored from a snapshot* (α, b, g, sets, and — only when M changed —
        the factor and the touched margin rows) rather than by relearning c: the snapshot gives the
        solved state back bit for bit, with no drift accumulating over n decrements, and costs a
        few O(n) copies instead of a second adiabatic path.

        Returns
        -------
        LOOResult
        """
        t0 = time.perf_counter()
        sl = self._op.slots()
        hw = self._op.n_slots
        y = self._op.s_buffer
        dec = np.full(hw, np.nan)
        err = np.zeros(hw, dtype=bool)
        res = self._status[sl] == RESERVE
        dec[sl[res]] = y[sl[res]] * (self._g[sl[res]] + 1.0)
        snap = self._save()
        try:
            for c in sl[~res].tolist():
                why = self._decrement(c, loo=True)
                if why == "loo":
                    err[c] = True
                else:
                    f = float(y[c]) * (float(self._g[c]) + 1.0)
                    dec[c] = f
                    err[c] = (f > 0.0) != (y[c] > 0)
                self._restore(snap)
        finally:
            self._qm_written = None
        return LOOResult(errors=int(err[sl].sum()), n=int(sl.size), ids=self._id[sl].copy(), error=err[sl].copy(),
                         decision=dec[sl].copy(), seconds=time.perf_counter() - t0)

    # -- sliding window ----------------------------------------------------------------------------
    def window(self, X_stream: Any, y_stream: ArrayLike, size: int,
               callback: Callable[[IncrementalSVM, int], None] | None = None) -> WindowReport:
        """Run a sliding window over a stream: learn the newest point, unlearn the oldest beyond ``size``.

        Points already in the model count towards the window (oldest first by id).

        Parameters
        ----------
        X_stream, y_stream : the stream's points and labels.
        size : int
            Window length (≥ 1).
        callback : callable, optional
            Called as ``callback(model, k)`` after the k-th point was processed.

        Returns
        -------
        WindowReport
        """
        if size < 1:
            raise ProblemError("size: must be ≥ 1")
        yy = np.asarray(y_stream)
        self._encode(yy)
        live: deque[int] = deque(sorted(self._slot_of))
        t0 = time.perf_counter()
        wrong = unl = 0
        n = int(X_stream.shape[0])
        for k in range(n):
            x = X_stream[k]
            if self._nq or (self._alpha > 0).any():
                wrong += int(self.predict(np.atleast_2d(np.asarray(x.toarray() if hasattr(x, "toarray") else x)))[0]
                             != yy[k])
            live.append(self.learn(x, yy[k]))
            while len(live) > size:
                self.unlearn(live.popleft())
                unl += 1
            if callback is not None:
                callback(self, k)
        return WindowReport(learned=n, unlearned=unl, online_errors=wrong, seconds=time.perf_counter() - t0)

    # -- regularization path -----------------------------------------------------------------------
    def c_path(self, C1: float) -> list[Breakpoint]:
        """Move C exactly from its current value to ``C1`` (up or down), scaling every C_i with it.

        α_E = C_i·(C/C₀) moves with C, the margin α and b through M's factor, and the path breaks
        where a set changes. Leaves the model solved at ``C1`` (:attr:`C` becomes ``C1``).

        Returns
        -------
        list of Breakpoint
            The break points in order, then an ``"end"`` entry at ``C1``.
        """
        C1 = float(C1)
        if not (np.isfinite(C1) and C1 > 0):
            raise ProblemError(f"C1: must be finite and > 0, got {C1!r}")
        op = self._op
        hw = op.n_slots
        y = op.s_buffer[:hw]
        alpha, g, st = self._alpha, self._g, self._status
        C = self.C
        w = self._Cv[:hw] / C                      # C_i = w_i C along the path
        s = 1.0 if C1 > C else -1.0
        out: list[Breakpoint] = []

        def mark(event: str, who: int) -> None:
            stv = st[:hw]
            out.append(Breakpoint(C=C, event=event, id=int(self._id[who]) if who >= 0 else -1,
                                  n_margin=int((stv == MARGIN).sum()), n_error=int((stv == ERROR).sum()),
                                  n_reserve=int((stv == RESERVE).sum())))

        wE = np.where(st[:hw] == ERROR, w, 0.0)
        u = op.matvec(wE)                          # Q_:E w_E, updated as E changes
        blocked: set[int] = set()
        for _ in range(20 * hw + 1000):
            if C == C1:
                break
            self.stats["steps"] += 1
            stE, stR = st[:hw] == ERROR, st[:hw] == RESERVE
            if self._fac.size == 0:
                # no margin vector: shift the bias to the nearest point's g = 0 and let it track it
                alive = (stE | stR) & op.alive
                if not alive.any():
                    break
                cand = np.flatnonzero(alive)
                k = int(cand[np.argmin(np.abs(g[cand]))])
                db = -float(y[k]) * float(g[k])
                self._b += db
                g[:hw] += y * db
                g[k] = 0.0
                if self._add_margin(k, np.asarray(op.row(k))) is not None:
                    raise RuntimeError("c_path: a single point is singular")
                if stE[k]:
                    u -= w[k] * np.asarray(op.row(k))
                    wE[k] = 0.0
                mark("bias", k)
                continue
            mem = self._fac.members
            rows = self._qmrow[mem]
            yw = float(y @ wE)
            x, mu = self._fac.solve_kkt(-u[mem], -yw)
            coef = np.zeros(self._nq)
            coef[rows] = x
            gam = (coef @ self._QM[:self._nq])[:hw] + u + mu * y
            sg = s * gam
            dx = s * x
            lam, event, who = abs(C1 - C), "end", -1
            btol = 1e-13 * (1.0 + float(np.abs(dx).max(initial=0.0)))
            am, wm = alpha[mem], w[mem]
            # a margin α can head for 0 and for the moving ceiling w_k·C at once (C falling faster
            # than α): both limits count, the nearer one wins
            l_dn = np.full(mem.size, np.inf)
            dn = dx < -btol
            l_dn[dn] = am[dn] / -dx[dn]
            l_up = np.full(mem.size, np.inf)
            upr = dx - s * wm                      # d(α_k − w_k C)/dλ
            up = upr > btol
            l_up[up] = (wm[up] * C - am[up]) / upr[up]
            lm = np.minimum(l_dn, l_up)
            k = int(np.argmin(lm))
            if lm[k] < lam:
                lam, who = max(float(lm[k]), 0.0), int(mem[k])
                event = "margin->error" if l_up[k] < l_dn[k] else "margin->reserve"
            tol_g = 1e-12 * (self._qmax * (1.0 + float(np.abs(x).sum()) + float(np.abs(wE).sum())) + abs(mu))
            hit = _entry_event(g, sg, stE, stR, blocked, tol_g)
            if hit is not None and hit[0] < lam:
                lam, who = max(hit[0], 0.0), hit[1]
                event = "error->margin" if stE[who] else "reserve->margin"
            C = C1 if event == "end" else C + s * lam
            alpha[mem] = np.clip(am + lam * dx, 0.0, wm * C)
            e = np.flatnonzero(stE)
            alpha[e] = w[e] * C
            self._b += s * lam * mu
            g[:hw] += lam * sg
            if lam > 0:
                blocked.clear()
            if event == "end":
                break
            g[who] = 0.0
            if event == "margin->error":
                self._remove_margin(who, ERROR)
                alpha[who] = w[who] * C
                u += w[who] * np.asarray(op.row(who))
                wE[who] = w[who]
            elif event == "margin->reserve":
                self._remove_margin(who, RESERVE)
            else:
                row = np.asarray(op.row(who))
                if self._add_margin(who, row) is not None:
                    blocked.add(who)
                    continue
                if event == "error->margin":
                    u -= w[who] * row
                    wE[who] = 0.0
            if lam == 0.0 and event.startswith("margin"):
                blocked.add(who)
            mark(event, who)
        else:
            raise RuntimeError("c_path: no convergence")
        self.C = C1
        self._Cv[:hw] = w * C1
        e = np.flatnonzero(st[:hw] == ERROR)
        alpha[e] = self._Cv[e]
        self.refresh()
        cert = self.certificate()
        if not (cert.feasible() and cert.measure <= max(1e3 * self.tol, 1e-8) * (1.0 + C1)):
            # never hand back a model that looks solved and is not
            raise RuntimeError(f"c_path: the path lost optimality (KKT gap {cert.measure:.3g}, "
                               f"primal {cert.primal:.3g}); refit with fit(X, y) at C = {C1}")
        mark("end", -1)
        return out

    # -- reading the model -------------------------------------------------------------------------
    def _slot(self, pid: int) -> int:
        try:
            return self._slot_of[int(pid)]
        except KeyError:
            raise KeyError(f"no point with id {pid}") from None

    @property
    def n(self) -> int:
        """Number of points held."""
        return self._op.n_alive

    @property
    def ids(self) -> NDArray[np.int64]:
        """Ids of the points, in the order of :meth:`qp`'s variables (ascending slots)."""
        return self._id[self._op.slots()].copy()

    @property
    def alpha(self) -> FloatArray:
        """α over the points (the order of :attr:`ids`)."""
        return self._alpha[self._op.slots()].copy()

    @property
    def bias(self) -> float:
        """b in f(x) = Σ α_j y_j K(x_j, x) + b."""
        return self._b

    @property
    def y(self) -> FloatArray:
        """The ±1 labels (the order of :attr:`ids`)."""
        return self._op.s_buffer[self._op.slots()].copy()

    @property
    def margin_function(self) -> FloatArray:
        """g = Qα + yb − 1 as maintained (the order of :attr:`ids`)."""
        return self._g[self._op.slots()].copy()

    def _set_ids(self, code: int) -> NDArray[np.int64]:
        sl = self._op.slots()
        out: NDArray[np.int64] = self._id[sl[self._status[sl] == code]].copy()
        return out

    @property
    def margin_(self) -> NDArray[np.int64]:
        """Ids of the margin vectors (0 ≤ α ≤ C, g = 0)."""
        return self._set_ids(MARGIN)

    @property
    def error_(self) -> NDArray[np.int64]:
        """Ids of the error vectors (α = C, g ≤ 0)."""
        return self._set_ids(ERROR)

    @property
    def reserve_(self) -> NDArray[np.int64]:
        """Ids of the reserve points (α = 0, g ≥ 0)."""
        return self._set_ids(RESERVE)

    @property
    def support_(self) -> NDArray[np.int64]:
        """Ids of the support vectors (α > 0)."""
        sl = self._op.slots()
        return self._id[sl[self._alpha[sl] > 0]].copy()

    def qp(self) -> QP:
        """The dual over the current points as a ``qpcore.QP`` (x = :attr:`alpha`, static KernelQ)."""
        Q, sl = self._op.snapshot()
        n = sl.size
        y = self._op.s_buffer[sl]
        return QP(Q, -np.ones(n), np.zeros(n), self._Cv[sl].copy(), y[None, :], np.zeros(1))

    def objective(self) -> float:
        """The dual objective ½αᵀQα − eᵀα, from the problem."""
        return self.qp().objective(self.alpha)

    def certificate(self) -> KKT:
        """``qpcore.kkt(self.qp(), self.alpha)``: computed from the problem alone."""
        return kkt(self.qp(), self.alpha)

    def decision_function(self, X: Any, block: int = 4096) -> FloatArray:
        """f(x) = Σ α_j y_j K(x_j, x) + b for the rows of X."""
        sl = self._op.slots()
        sv = sl[self._alpha[sl] > 0]
        coef = self._alpha[sv] * self._op.s_buffer[sv]
        nrow = int(X.shape[0]) if hasattr(X, "shape") and len(X.shape) == 2 else 1
        if nrow == 1 and not hasattr(X, "tocsr"):
            X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        out = np.empty(nrow)
        for s0 in range(0, nrow, block):
            out[s0:s0 + block] = self._op.kernel_with(X[s0:s0 + block], sv) @ coef if sv.size else 0.0
        return out + self._b

    def predict(self, X: Any) -> NDArray[Any]:
        """Labels in the user's classes (positive where f > 0)."""
        if self.classes is None:
            raise ProblemError("the model has seen no labels yet")
        out: NDArray[Any] = np.where(self.decision_function(X) > 0, self.classes[1], self.classes[0])
        return out
