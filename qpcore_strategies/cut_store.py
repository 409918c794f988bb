"""The cutting-plane model of the regularized risk: cuts, their Gram matrix, and the reduced problem.

A **cut** at w is R(w') ≥ b − aᵀw' with a = Σ_{i∈V} u_i h_i, b = Σ_{i∈V} u_i ρ_i over the examples V
violating at w. The **reduced problem** over cuts t = 1..k is the qpcore ``QP``
``min ½βᵀGβ − bᵀβ, β ≥ 0, s ≥ 0, Σβ + s = 1`` (G = the cuts' Gram matrix, one new row per cut; the
slack s makes Σβ ≤ 1 one all-ones equality row). The k-vectors a_t, G, b and β are small and live
with the loop; each cut's members (which examples it sums) live with the rows, whatever holds them.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.operators import DenseQ
from qpcore.core.problem import QP

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

__all__ = ["Cuts"]


@attrs.define(eq=False)
class Cuts:
    """The cutting-plane model: cut vectors, offsets, their Gram matrix and weights.

    Attributes
    ----------
    A : ndarray
        (capacity, k) buffer; rows ``:n`` are the cuts a_t.
    b : ndarray
        Offsets b_t.
    G : ndarray
        (capacity, capacity) buffer of the Gram matrix a_sᵀa_t, one new row per cut.
    beta : ndarray
        The reduced problem's weights (length n) and ``slack`` its slack s.
    members : list
        For each cut, which examples it sums, held where the rows are: per block, packed bits over
        the block's examples, or a float vector of fractions for an aggregated cut.
    idle : ndarray
        Iterations each cut has had β_t = 0 in a row.
    ids : ndarray
        Each cut's id, distinct over the model's life: an id names one cut vector (an aggregated
        cut gets a new one), so a reduced solver can keep a factor across iterations
        (:class:`qpcore_strategies.cut_qp.CutQP`).
    """

    A: FloatArray
    b: FloatArray
    G: FloatArray
    beta: FloatArray
    slack: float
    members: list[Any]
    idle: NDArray[np.int64]
    mix: Callable[[float, Any, float, Any], Any]
    n: int = 0
    ids: NDArray[np.int64] = attrs.Factory(lambda: np.zeros(16, dtype=np.int64))
    next_id: int = 0

    @classmethod
    def empty(cls, dim: int, mix: Callable[[float, Any, float, Any], Any], capacity: int = 16) -> Cuts:
        """No cuts yet; buffers for ``capacity`` of them. ``mix(f0, member0, f1, member1)`` forms an
        aggregated cut's member f0·member0 + f1·member1 (where the members are)."""
        return cls(A=np.zeros((capacity, dim)), b=np.zeros(capacity), G=np.zeros((capacity, capacity)),
                   beta=np.zeros(0), slack=1.0, members=[], idle=np.zeros(capacity, dtype=np.int64), mix=mix,
                   ids=np.zeros(capacity, dtype=np.int64))

    def _grow(self) -> None:
        cap = 2 * self.A.shape[0]
        A = np.zeros((cap, self.A.shape[1]))
        A[:self.n] = self.A[:self.n]
        G = np.zeros((cap, cap))
        G[:self.n, :self.n] = self.G[:self.n, :self.n]
        b = np.zeros(cap)
        b[:self.n] = self.b[:self.n]
        idle = np.zeros(cap, dtype=np.int64)
        idle[:self.n] = self.idle[:self.n]
        ids = np.zeros(cap, dtype=np.int64)
        ids[:self.n] = self.ids[:self.n]
        self.A, self.G, self.b, self.idle, self.ids = A, G, b, idle, ids

    def add(self, a: FloatArray, b: float, member: Any) -> None:
        """Append a cut with weight 0; its Gram row is one product with the stored cuts."""
        if self.n == self.A.shape[0]:
            self._grow()
        k = self.n
        self.A[k] = a
        row = self.A[:k + 1] @ a
        self.G[k, :k + 1] = row
        self.G[:k + 1, k] = row
        self.b[k] = b
        self.idle[k] = 0
        self.ids[k] = self._new_id()
        self.members.append(member)
        self.beta = np.append(self.beta, 0.0)
        self.n = k + 1

    def remove(self, keep: BoolArray) -> None:
        """Keep only the cuts where ``keep`` (their weights must be 0 elsewhere)."""
        idx = np.flatnonzero(keep)
        n = idx.size
        self.A[:n] = self.A[idx]
        self.G[:n, :n] = self.G[np.ix_(idx, idx)]
        self.b[:n] = self.b[idx]
        self.idle[:n] = self.idle[idx]
        self.ids[:n] = self.ids[idx]
        self.beta = self.beta[idx]
        self.members = [self.members[i] for i in idx]
        self.n = n

    def aggregate_oldest(self) -> None:
        """Replace the two oldest cuts by their β-weighted mean (w and D stay the same)."""
        b0, b1 = float(self.beta[0]), float(self.beta[1])
        tot = b0 + b1
        f0, f1 = (b0 / tot, b1 / tot) if tot > 0 else (0.5, 0.5)
        self.A[0] = f0 * self.A[0] + f1 * self.A[1]
        self.b[0] = f0 * self.b[0] + f1 * self.b[1]
        self.members[0] = self.mix(f0, self.members[0], f1, self.members[1])
        self.beta[0] = tot
        keep = np.ones(self.n, dtype=bool)
        keep[1] = False
        self.remove(keep)
        k = self.n
        row = self.A[:k] @ self.A[0]
        self.G[0, :k] = row
        self.G[:k, 0] = row
        self.idle[0] = 0
        self.ids[0] = self._new_id()

    def _new_id(self) -> int:
        i = self.next_id
        self.next_id += 1
        return i

    def reduced_qp(self) -> tuple[QP, float]:
        """min ½βᵀGβ − bᵀβ over β, s ≥ 0 with Σβ + s = 1, as a qpcore QP in θ = γβ (the slack last).

        The cuts of m examples have norms up to ~m while w = Σβ_t a_t stays O(1), so β is ~1/m:
        in θ = γβ with γ = max_t ‖a_t‖ the matrix G/γ², the costs b/γ and θ are all O(1) and the
        inner strategy's relative tolerances mean what they say. Returns the QP and γ.
        """
        k = self.n
        diag = np.diagonal(self.G)[:k]
        gamma = float(np.sqrt(diag.max(initial=0.0)))
        if not gamma > 0:
            gamma = 1.0
        M = np.zeros((k + 1, k + 1))
        M[:k, :k] = self.G[:k, :k] / (gamma * gamma)
        Q = DenseQ.trusted(M)
        Q.psd = True        # a Gram matrix
        c = np.zeros(k + 1)
        c[:k] = -self.b[:k] / gamma
        # valid by construction (a Gram matrix, a scaled simplex): built every iteration, not re-checked
        qp = QP.trusted(Q, c, np.zeros(k + 1), np.full(k + 1, gamma), np.ones((1, k + 1)), np.array([gamma]))
        return qp, gamma
