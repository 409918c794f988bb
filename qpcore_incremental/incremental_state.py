"""The state of the exact incremental SVM: what its path engine keeps, and what reading it gives.

The abstract SVM of Laskov et al. (JMLR 7, 2006, section 2), min ½αᵀQα − cᵀα over 0 ≤ α ≤ C
subject to aᵀα = β (Q_ij = s_i s_j K(x_i, x_j)), is held over the points in the slots of a
:class:`qpcore.backends.dynamic.DynamicKernelQ`: per slot α, the margin function g = Qα − c + a b,
C_i, c_i, a_i, the set code (margin M, error E, reserve R) and the point's id; the margin set M
factored in a :class:`qpcore.linalg.factor.BorderedCholesky`, its rows Q[M, :] in a buffer that grows
with the data.

:class:`PathState` is that state with its bookkeeping (points appended by slot, members in and
out of M, the tolerances that tell rounding from a violation), the dual it solves as a
:class:`qpcore.core.problem.QP` and its certificate, and the snapshot that leave-one-out
restores. The exact steps on it (the adiabatic increment and decrement, the polish, the drift
control and the guard) are :class:`qpcore_incremental.incremental_path.PathEngine`, which extends it.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from numpy.typing import NDArray

from qpcore.backends.dynamic import DynamicKernelQ
from qpcore.backends.operators import Kernel
from qpcore.core.certificate import KKT, kkt
from qpcore.core.problem import QP
from qpcore.linalg.factor import BorderedCholesky, Dependence

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]

__all__ = ["CANDIDATE", "DEAD", "ERROR", "MARGIN", "RESERVE", "PathState"]

#: Set codes of the per-slot status array: a free slot, R, M, E, and the point whose α moves.
DEAD, RESERVE, MARGIN, ERROR, CANDIDATE = -1, 0, 1, 2, 3


class PathState:
    """The state of an abstract SVM dual kept exactly solved (the steps that keep it so are
    :class:`qpcore_incremental.incremental_path.PathEngine`'s).

    Points live in slots of a :class:`qpcore.backends.dynamic.DynamicKernelQ` (a slot is reused after its
    point is removed); per slot it keeps α, g, C_i, c_i, a_i, the set code and the point's id. The
    margin set M is factored (:class:`qpcore.linalg.factor.BorderedCholesky`) and its rows Q[M, :] are
    kept in a buffer.

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    C : float
        Default box bound (each point has its own C_i).
    capacity : int
        Initial number of point slots.
    cache_bytes : int
        Row-cache budget of the kernel operator.
    tol : float
        The certificate's tolerance; the guard (``PathEngine._ensure``) checks half of it.

    Attributes
    ----------
    stats : dict
        ``learned``, ``unlearned``, ``steps`` (path segments), ``refreshes``, ``dependences``,
        ``repairs``, ``ties`` (degenerate vertices resolved at once), ``guards`` (states the
        guard found wrong and re-derived), ``loo_general`` (leave-one-out decrements left to the
        general step).
    """

    def __init__(self, kernel: Kernel, C: float, *, capacity: int, cache_bytes: int, tol: float = 1e-9) -> None:
        self.kernel = kernel
        self.C = float(C)
        self.tol = float(tol)
        self._capacity = int(capacity)
        self._cache_bytes = int(cache_bytes)
        self.stats = {"learned": 0, "unlearned": 0, "steps": 0, "refreshes": 0, "dependences": 0, "repairs": 0, "ties": 0,
                      "guards": 0, "loo_general": 0}
        self._reset()

    # -- state -----------------------------------------------------------------------------------
    def _reset(self) -> None:
        self._op = DynamicKernelQ(self.kernel, capacity=self._capacity, cache_bytes=self._cache_bytes)
        cap = self._op.capacity
        self._alpha = np.zeros(cap)
        self._g = np.zeros(cap)
        self._Cv = np.zeros(cap)
        self._lin = np.zeros(cap)                 # c_i, the linear term
        self._a = np.zeros(cap)                   # a_i, the equality coefficient
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
        self._m_resid = 0.0
        self._drift = 0.0                          # a bound on the rounding g gathered since recomputed
        self._repairing = False
        self._beq = 0.0                            # aᵀα = β
        self._qm_written: set[int] | None = None

    def _sync_capacity(self) -> None:
        """Grow the per-slot arrays and the margin-row buffer's columns with the operator."""
        cap = self._op.capacity
        old = self._alpha.shape[0]
        if cap == old:
            return
        for name, fill in (("_alpha", 0.0), ("_g", 0.0), ("_Cv", 0.0), ("_lin", 0.0), ("_a", 0.0),
                           ("_status", DEAD), ("_id", -1), ("_qmrow", -1)):
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
        dep = self._fac.add(slot, col=row[mem], diag=float(row[slot]), a_i=float(self._a[slot]))
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

    # -- tolerances ------------------------------------------------------------------------------
    def _gtol(self) -> float:
        """|g| below which a point counts as on the margin (for the entry test of a new point)."""
        return 1e-13 * max(1.0, self._qmax * (1.0 + self.C))

    def _vtol(self) -> float:
        """A wrong-signed g beyond this (E with g > 0, R with g < 0) is a violation, not rounding.

        Besides the rounding of the steps (the first term), g = Qα − c + ab carries the kernel
        entries' own error, row_eps·qmax each (:attr:`qpcore.backends.dynamic.DynamicKernelQ.row_eps`: for
        RBF on points far from the origin, far above eps), times ‖α‖₁; M's factor and the
        recomputed g each see it, hence twice, and twice again for the sums' rounding.
        """
        hw = self._op.n_slots
        a1 = float(self._alpha[:hw][self._op.alive].sum())
        return max(1e-11 * max(1.0, self._qmax * self.C), 4.0 * self._op.row_eps * self._qmax * a1)

    # -- points by slot, and appending them ----------------------------------------------------------
    def _slot(self, pid: int) -> int:
        try:
            return self._slot_of[int(pid)]
        except KeyError:
            raise KeyError(f"no point with id {pid}") from None

    def _append_many(self, X: Any, s: FloatArray, Cs: FloatArray, lin: float | FloatArray,
                     a: FloatArray | None = None) -> IndexArray:
        """Append points as reserve points at α = 0 (no g yet): signs s, bounds Cs, linear terms
        ``lin`` (``nan``: ½ Q_ii), equality coefficients ``a`` (default s). Returns their slots."""
        n = int(X.shape[0])
        slots = self._op.append(X, s)
        self._sync_capacity()
        ids = np.arange(self._next_id, self._next_id + n, dtype=np.int64)
        self._next_id += n
        self._id[slots] = ids
        self._slot_of.update(zip(ids.tolist(), slots.tolist()))
        self._Cv[slots] = Cs
        diag = self._op.diag()
        li = np.broadcast_to(np.asarray(lin, dtype=np.float64), (n,))
        self._lin[slots] = np.where(np.isnan(li), 0.5 * diag[slots], li)
        self._a[slots] = s if a is None else a
        self._alpha[slots] = 0.0
        self._status[slots] = RESERVE
        self._qmax = float(diag.max(initial=0.0))
        return slots

    # -- reading the state, and the problem -----------------------------------------------------------
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
        """b, the equality's multiplier in g = Qα − c + a b (the C-SVC's bias: f(x) = Σ α_j y_j K(x_j, x) + b)."""
        return self._b

    def qp(self) -> QP:
        """The dual over the current points as a ``qpcore.QP`` (x = :attr:`alpha`, static KernelQ)."""
        Q, sl = self._op.snapshot()
        n = sl.size
        return QP(Q, -self._lin[sl], np.zeros(n), self._Cv[sl].copy(), self._a[sl][None, :], np.array([self._beq]))

    def objective(self) -> float:
        """The dual objective ½αᵀQα − cᵀα, from the problem."""
        return self.qp().objective(self._alpha[self._op.slots()])

    def certificate(self) -> KKT:
        """``qpcore.kkt(self.qp(), self.alpha)``: computed from the problem alone."""
        return kkt(self.qp(), self._alpha[self._op.slots()])

    # -- snapshots (leave-one-out) ------------------------------------------------------------------
    def _save(self) -> dict[str, Any]:
        hw = self._op.n_slots
        self._qm_written = set()
        return {"alpha": self._alpha[:hw].copy(), "g": self._g[:hw].copy(), "b": self._b, "C": self.C,
                "Cv": self._Cv[:hw].copy(),
                "status": self._status[:hw].copy(), "qmrow": self._qmrow[:hw].copy(), "nq": self._nq,
                "QM": self._QM[:self._nq, :hw].copy(), "qm_slot": self._qm_slot[:self._nq].copy(),
                "fac": copy.deepcopy(self._fac), "changes": self._m_changes}

    def _restore(self, snap: dict[str, Any]) -> None:
        hw = self._op.n_slots
        self._alpha[:hw] = snap["alpha"]
        self._g[:hw] = snap["g"]
        self._b = snap["b"]
        self.C = snap["C"]
        self._Cv[:hw] = snap["Cv"]
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
