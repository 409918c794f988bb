"""Kernel functions: :class:`Kernel` (linear, RBF, polynomial, sigmoid, precomputed) and the kernel
math on blocks of points (:func:`squared_norms`, :func:`dot_block`).

What a kernel computes between points, apart from the operators that hold kernel matrices
(:class:`qpcore.backends.operators.KernelQ` and the others build on :class:`Kernel`). Importable
from :mod:`qpcore.backends.operators` too, where it lived first.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.core.validate import ProblemError, as_integer, as_real

FloatArray = NDArray[np.float64]

__all__ = ["Kernel", "KernelName", "dot_block", "squared_norms"]

KernelName = Literal["linear", "rbf", "poly", "sigmoid", "precomputed"]


@attrs.frozen
class Kernel:
    """A kernel function K(u, v).

    Parameters
    ----------
    name : {"linear", "rbf", "poly", "sigmoid", "precomputed"}
        linear uᵀv; rbf exp(−γ‖u − v‖²); poly (γuᵀv + coef0)^degree; sigmoid tanh(γuᵀv + coef0);
        precomputed: the data matrix is the Gram matrix itself.
    gamma, degree, coef0 : float, int, float
        Kernel parameters, as in LIBSVM: gamma finite (> 0 for rbf, poly and sigmoid), degree an
        integer (≥ 1 for poly), coef0 finite.

    Raises
    ------
    ProblemError
        On an unknown name or a parameter outside its range, one line naming it.
    """

    name: KernelName = "rbf"
    gamma: float = 1.0
    degree: int = 3
    coef0: float = 0.0

    def __attrs_post_init__(self) -> None:
        if self.name not in ("linear", "rbf", "poly", "sigmoid", "precomputed"):
            raise ProblemError(f"kernel: unknown kernel {self.name!r}; use linear, rbf, poly, sigmoid or precomputed")
        # the values are kept as given; a parameter the kernel does not use is still checked for its
        # type, so that a typo is refused rather than ignored
        scaled = self.name in ("rbf", "poly", "sigmoid")
        as_real(self.gamma, "gamma", low=0.0 if scaled else None, strict=True)
        as_integer(self.degree, "degree", low=1 if self.name == "poly" else None)
        as_real(self.coef0, "coef0")

    @property
    def psd(self) -> bool | None:
        """True for kernels that are positive semidefinite for every data set (linear, RBF,
        polynomial with coef0 ≥ 0); None where it depends on the data (sigmoid, precomputed)."""
        if self.name in ("linear", "rbf"):
            return True
        if self.name == "poly" and self.coef0 >= 0:
            return True
        return None

    def apply(self, dot: FloatArray, sq_a: FloatArray | None, sq_b: FloatArray | None) -> FloatArray:
        """Turn a block of inner products into kernel values, in place.

        ``sq_a``/``sq_b`` are the squared norms of the row and column points (RBF only).
        """
        if self.name == "rbf":
            assert sq_a is not None and sq_b is not None
            g = self.gamma
            dot *= 2.0 * g
            dot -= g * sq_b[None, :]
            dot -= g * sq_a[:, None]
            np.minimum(dot, 0.0, out=dot)  # rounding can make ‖u−v‖² slightly negative
            np.exp(dot, out=dot)
        elif self.name == "poly":
            dot *= self.gamma
            dot += self.coef0
            np.power(dot, int(self.degree), out=dot)
        elif self.name == "sigmoid":
            dot *= self.gamma
            dot += self.coef0
            np.tanh(dot, out=dot)
        return dot

    def block(self, Xa: Any, Xb: Any) -> FloatArray:
        """Kernel matrix K(Xa, Xb) (rows of Xa against rows of Xb), dense float64."""
        if self.name == "precomputed":
            raise ValueError("a precomputed kernel has no points to evaluate; pass the Gram block itself")
        dot = dot_block(Xa, Xb)
        sq_a = sq_b = None
        if self.name == "rbf":
            sq_a, sq_b = squared_norms(Xa), squared_norms(Xb)
        return self.apply(dot, sq_a, sq_b)

    def self_values(self, X: Any) -> FloatArray:
        """K(x, x) for each row x of X (ones for RBF), without the pairwise block."""
        if self.name == "precomputed":
            raise ValueError("a precomputed kernel has no points to evaluate")
        n = int(X.shape[0])
        if self.name == "rbf":
            return np.ones(n)
        sq = squared_norms(X)
        return self.apply(sq[:, None].copy(), None, None).ravel()


def squared_norms(X: Any) -> FloatArray:
    """Row squared norms of a dense or sparse matrix."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    Xd = np.asarray(X, dtype=np.float64)
    out: FloatArray = np.einsum("ij,ij->i", Xd, Xd)
    return out


def dot_block(Xa: Any, Xb: Any) -> FloatArray:
    """Dense Xa @ Xbᵀ for dense or CSR operands, through BLAS or scipy's sparse kernels."""
    if sp.issparse(Xa):
        if sp.issparse(Xb):
            # sparse × dense is a C loop in scipy; densifying the smaller side keeps it one call.
            if Xa.shape[0] <= Xb.shape[0]:
                return np.ascontiguousarray(np.asarray(Xb @ Xa.toarray().T).T, dtype=np.float64)
            return np.ascontiguousarray(np.asarray(Xa @ Xb.toarray().T), dtype=np.float64)
        return np.ascontiguousarray(np.asarray(Xa @ np.asarray(Xb).T), dtype=np.float64)
    if sp.issparse(Xb):
        return np.ascontiguousarray(np.asarray(Xb @ np.asarray(Xa).T).T, dtype=np.float64)
    return np.asarray(Xa, dtype=np.float64) @ np.asarray(Xb, dtype=np.float64).T
