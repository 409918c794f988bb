"""Non-negative and bound-constrained linear least squares as qpcore QPs.

``min ½‖Ax − d‖²  s.t.  lb ≤ x ≤ ub`` expands to ``½xᵀ(AᵀA)x − (Aᵀd)ᵀx + ½‖d‖²``, so the QP is
Q = AᵀA, c = −Aᵀd, and the QP objective is ½‖Ax − d‖² − ½‖d‖² (the constant is dropped).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.capabilities import QOperator
from qpcore.backends.gram import GramQ, as_float_matrix
from qpcore.backends.operators import DenseQ
from qpcore.core.problem import QP, ProblemError, as_float_vector
from qpcore.core.state import Result

__all__ = ["DENSE_MAX_N", "TALL_GRAM_MN", "LeastSquaresProblem", "bounded_least_squares", "nnls"]

FloatArray = NDArray[np.float64]
Backend = Literal["auto", "dense", "gram"]

DENSE_MAX_N = 4000  # AᵀA at n = 4000 is 128 MB; past that the n² memory is the bigger cost
TALL_GRAM_MN = 4_000_000  # A of 32 MB and more with m ≥ 3n: applied as Aᵀ(Av), not formed


@attrs.frozen(eq=False)
class LeastSquaresProblem:
    """A least-squares problem and the QP that encodes it.

    Attributes
    ----------
    qp : QP
        ``min ½xᵀQx + cᵀx`` with Q = AᵀA, c = −Aᵀd and the bounds; its objective equals
        ½‖Ax − d‖² − ½‖d‖².
    A : ndarray or scipy.sparse.csr_matrix
        The validated float64 design matrix, shape (m, n).
    d : ndarray
        The validated float64 target, length m.
    """

    qp: QP
    A: Any
    d: FloatArray

    def residual_norm(self, x: ArrayLike) -> float:
        """‖Ax − d‖₂ at ``x`` (length n)."""
        xv = as_float_vector(x, "x", self.qp.n)
        return float(np.linalg.norm(np.asarray(self.A @ xv, dtype=np.float64) - self.d))

    def decode(self, result: Result) -> tuple[FloatArray, float]:
        """The solution of a ``qpcore.solve`` run and its residual norm ‖Ax − d‖₂."""
        x = np.asarray(result.x, dtype=np.float64)
        return x, self.residual_norm(x)


def _choose_backend(A: Any, backend: str) -> QOperator:
    if backend not in ("auto", "dense", "gram"):
        raise ProblemError(f"backend: unknown backend {backend!r}; use 'auto', 'dense' or 'gram'")
    m, n = (int(k) for k in A.shape)
    if backend == "auto":
        # with m ≥ n/2 a dense Qv (n² flops) is no dearer than Aᵀ(Av) (2mn) and rows become
        # lookups instead of 2mn each, repaying the one-off mn² GEMM; n caps the n² memory
        dense = not sp.issparse(A) and n <= DENSE_MAX_N and m >= n / 2
        # … except tall and large: the GEMM costs about 50 passes over A there (m n² flops at
        # BLAS-3 speed against 2mn memory-bound ones), more than GPCG's whole solve with m ≥ 3n
        # (standard normal 8000×2000: 1.0 s to form, 0.65 s for the whole solve through GramQ)
        if m >= 3 * n and m * n >= TALL_GRAM_MN:
            dense = False
        backend = "dense" if dense else "gram"
    if backend == "gram":
        return GramQ(A)
    if sp.issparse(A):
        G = np.asarray((A.T @ A).toarray(), dtype=np.float64)
    else:
        G = A.T @ A
    # BLAS may round the two triangles differently; symmetrizing keeps DenseQ's check exact
    return DenseQ(0.5 * (G + G.T))


def bounded_least_squares(A: Any, d: ArrayLike, lb: ArrayLike, ub: ArrayLike, *,
                          backend: Backend = "auto") -> LeastSquaresProblem:
    """Bound-constrained least squares ``min ½‖Ax − d‖²  s.t.  lb ≤ x ≤ ub`` as a QP.

    Parameters
    ----------
    A : array_like or scipy.sparse matrix/array
        Design matrix, shape (m, n), finite and real.
    d : array_like
        Target, length m, finite.
    lb, ub : array_like or float
        Bounds, length n or scalars; ±inf allowed, lb ≤ ub.
    backend : {"auto", "dense", "gram"}
        How Q = AᵀA is held: ``"dense"`` forms it once (``DenseQ``), ``"gram"`` applies it as
        Aᵀ(Av) (``GramQ``). ``"auto"`` forms it when A is dense, n ≤ 4000 and m ≥ n/2, unless A
        is tall and large (m ≥ 3n and m·n ≥ 4·10⁶, where forming costs more than the solve), and
        uses ``GramQ`` otherwise (sparse or wide A, where AᵀA would be denser or larger than A).

    Returns
    -------
    LeastSquaresProblem
        The QP (Q = AᵀA, c = −Aᵀd; objective ½‖Ax − d‖² − ½‖d‖²) with A and d.

    Raises
    ------
    ProblemError
        On NaN/inf, a wrong dtype, len(d) ≠ m, bounds of the wrong length, lb > ub, or an
        unknown backend.
    """
    Am = as_float_matrix(A, "A")
    m, n = (int(k) for k in Am.shape)
    dv = as_float_vector(d, "d", m)
    Q = _choose_backend(Am, backend)
    c = -np.asarray(Am.T @ dv, dtype=np.float64)
    # converted here for typing; QP itself checks lb ≤ ub and the infinite-bound cases
    lo = as_float_vector(lb, "lb", n, allow_inf=True)
    hi = as_float_vector(ub, "ub", n, allow_inf=True)
    return LeastSquaresProblem(qp=QP(Q, c, lo, hi), A=Am, d=dv)


def nnls(A: Any, d: ArrayLike, *, backend: Backend = "auto") -> LeastSquaresProblem:
    """Non-negative least squares ``min ½‖Ax − d‖²  s.t.  x ≥ 0`` as a QP.

    Parameters
    ----------
    A : array_like or scipy.sparse matrix/array
        Design matrix, shape (m, n), finite and real.
    d : array_like
        Target, length m, finite.
    backend : {"auto", "dense", "gram"}
        As in ``bounded_least_squares``.

    Returns
    -------
    LeastSquaresProblem
        The QP (Q = AᵀA, c = −Aᵀd, lb = 0, ub = +inf; objective ½‖Ax − d‖² − ½‖d‖²).

    Raises
    ------
    ProblemError
        On NaN/inf, a wrong dtype, len(d) ≠ m, or an unknown backend.
    """
    return bounded_least_squares(A, d, 0.0, np.inf, backend=backend)
