"""Dense products through scipy's BLAS: one OpenBLAS thread pool for the dense strategies.

numpy and scipy wheels each bundle their own OpenBLAS, each with its own worker threads, and
after a call those workers spin for a while waiting for the next one. A loop that alternates
numpy products with scipy factorizations (GPCG's Newton steps, the Schur complements) therefore
has two pools spinning on the same cores: at 2 threads on a 2-core machine such a solve ran 2–4×
slower than at 1 thread. Dense code that also factorizes through ``scipy.linalg`` (GPCG on a
``DenseQ``) does its large products here instead, so that a solve keeps one pool busy. Code that
never calls scipy's BLAS (SMO, the kernel decomposition, ``DenseQ.matvec``) keeps numpy's.
How many threads the busy pool may use is decided once per solve (:mod:`qpcore.linalg.threads`: the
cores free at the time, both pools set alike), since a worker that waits for a core another
process holds stalls every call.

The functions take C- or Fortran-ordered arrays without copying them (a C-ordered matrix is the
Fortran-ordered transpose).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import blas as _blas

FloatArray = NDArray[np.float64]

__all__ = ["gemm", "gemv"]


def _fortran(A: FloatArray) -> tuple[FloatArray, bool]:
    """(F, t): a Fortran-ordered float64 array F with A = Fᵀ if t else F."""
    if A.dtype == np.float64 and A.flags.f_contiguous:
        return A, False
    if A.dtype == np.float64 and A.flags.c_contiguous:
        return A.T, True
    return np.asfortranarray(A, dtype=np.float64), False


def gemv(A: FloatArray, x: FloatArray, trans: bool = False) -> FloatArray:
    """``A @ x`` (``A.T @ x`` with ``trans``) in float64 through scipy's dgemv.

    Parameters
    ----------
    A : ndarray, shape (m, n)
        Any memory order; C- and Fortran-ordered arrays are not copied.
    x : ndarray
        Of length n (m with ``trans``).
    trans : bool
        Multiply by the transpose.

    Returns
    -------
    ndarray
        The product, a new array.
    """
    if A.shape[0] == 0 or A.shape[1] == 0:
        return np.zeros(A.shape[1] if trans else A.shape[0])
    F, t = _fortran(A)
    out: FloatArray = _blas.dgemv(1.0, F, np.asarray(x, dtype=np.float64), trans=int(t != trans))
    return out


def gemm(A: FloatArray, B: FloatArray, trans_a: bool = False) -> FloatArray:
    """``A @ B`` (``A.T @ B`` with ``trans_a``) in float64 through scipy's dgemm.

    Parameters
    ----------
    A, B : ndarray
        2-D, any memory order; C- and Fortran-ordered arrays are not copied.
    trans_a : bool
        Multiply by the transpose of A.

    Returns
    -------
    ndarray
        The product (Fortran-ordered).
    """
    rows = A.shape[1] if trans_a else A.shape[0]
    inner = A.shape[0] if trans_a else A.shape[1]
    if rows == 0 or B.shape[1] == 0 or inner == 0:
        return np.zeros((rows, B.shape[1]), order="F")
    Fa, ta = _fortran(A)
    Fb, tb = _fortran(B)
    out: FloatArray = _blas.dgemm(1.0, Fa, Fb, trans_a=int(ta != trans_a), trans_b=int(tb))
    return out
