"""Platt's two artificial data sets from the SMO paper (Platt 1998, section 4).

:func:`platt_sparse_separable` draws sparse binary inputs labelled by a random hyperplane with a
margin (the hyperplane is :func:`platt_hyperplane`); :func:`platt_random_labels` draws the same
inputs with labels that carry no signal.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import scipy.sparse as sp  # type: ignore[import-untyped, unused-ignore]
from numpy.typing import NDArray

__all__ = ["platt_hyperplane", "platt_random_labels", "platt_sparse_separable"]

FloatArray = NDArray[np.float64]

_BATCH_ROWS: Final = 8192
_MAX_BATCHES: Final = 10_000


def _check_platt_args(n: int, d: int, density: float) -> None:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    if not 0.0 < density <= 1.0:
        raise ValueError(f"density must be in (0, 1], got {density}")


def _binary_batch(rng: np.random.Generator, rows: int, d: int, density: float) -> Any:
    """``rows`` random binary vectors, each bit on with probability ``density``, as CSR."""
    bits = rng.random((rows, d), dtype=np.float32) < density
    return sp.csr_matrix(bits, dtype=np.float64)


def _stack(parts: list[Any], n: int, d: int) -> Any:
    if not parts:
        return sp.csr_matrix((n, d), dtype=np.float64)
    X = sp.vstack(parts, format="csr")[:n]
    X.sort_indices()
    return X


def platt_hyperplane(
    *, seed: int = 0, d: int = 300, density: float = 0.1
) -> tuple[FloatArray, float]:
    """The labelling hyperplane of :func:`platt_sparse_separable` for the same arguments.

    Parameters
    ----------
    seed : int, default 0
        Seed of ``numpy.random.default_rng``; the weights are its first draw.
    d : int, default 300
        Input dimension.
    density : float, default 0.1
        Probability that an input bit is on.

    Returns
    -------
    w : ndarray of float64, shape (d,)
        Weights drawn uniformly in [-1, 1] (Platt's choice).
    b : float
        Threshold ``density * sum(w)``, the mean of ``w @ x`` over the random inputs, so
        that the two classes are balanced in expectation.
    """
    _check_platt_args(0, d, density)
    w = np.random.default_rng(seed).uniform(-1.0, 1.0, size=d)
    return w, float(density * w.sum())


def platt_sparse_separable(
    n: int, *, seed: int = 0, d: int = 300, density: float = 0.1
) -> tuple[Any, FloatArray]:
    """Platt's linearly separable data set (SMO paper, 1998, section 4).

    Inputs are random binary ``d``-vectors with each bit on with probability ``density``
    (Platt: 300 dimensions, 10% of the bits on).  A weight vector ``w`` uniform in
    ``[-1, 1]^d`` labels them: ``y = sign(w @ x - b)``, and a point with
    ``|w @ x - b| < 1`` is discarded, so the set is separable with functional margin at
    least 1 by ``(w, b)``.  Platt used ``b = 0``; here ``b = density * sum(w)`` (the mean
    of ``w @ x``) so the classes come out roughly balanced.  Points are drawn in batches
    until ``n`` are kept; ``(w, b)`` is given by :func:`platt_hyperplane`.

    Parameters
    ----------
    n : int
        Number of points kept.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.
    d : int, default 300
        Input dimension.
    density : float, default 0.1
        Probability that an input bit is on.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64, shape (n, d)
        Binary inputs (sorted indices).
    y : ndarray of float64, shape (n,)
        Labels in {-1, +1}.

    Raises
    ------
    ValueError
        On bad arguments, or if almost no point clears the margin (tiny ``d * density``).
    """
    _check_platt_args(n, d, density)
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1.0, 1.0, size=d)  # first draw: matches platt_hyperplane
    b = density * float(w.sum())
    parts: list[Any] = []
    labels: list[FloatArray] = []
    kept = 0
    for _ in range(_MAX_BATCHES):
        if kept >= n:
            break
        batch = _binary_batch(rng, _BATCH_ROWS, d, density)
        margin = np.asarray(batch @ w, dtype=np.float64) - b
        keep = np.abs(margin) >= 1.0
        parts.append(batch[keep])
        labels.append(np.where(margin[keep] > 0, 1.0, -1.0))
        kept += int(keep.sum())
    else:
        if kept < n:
            raise ValueError(
                f"only {kept} of {_MAX_BATCHES * _BATCH_ROWS} random points cleared the "
                f"margin; increase d or density"
            )
    y = np.concatenate(labels)[:n] if labels else np.zeros(0, dtype=np.float64)
    return _stack(parts, n, d), y


def platt_random_labels(
    n: int, *, seed: int = 0, d: int = 300, density: float = 0.1
) -> tuple[Any, FloatArray]:
    """Platt's noise data set (SMO paper, 1998, section 4): random inputs, random labels.

    Inputs are random binary ``d``-vectors with each bit on with probability ``density``
    (Platt: 300 dimensions, 10% of the bits on); labels are +1 or -1 with probability 1/2
    each, independent of the inputs.

    Parameters
    ----------
    n : int
        Number of points.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.
    d : int, default 300
        Input dimension.
    density : float, default 0.1
        Probability that an input bit is on.

    Returns
    -------
    X : scipy.sparse.csr_matrix of float64, shape (n, d)
        Binary inputs (sorted indices).
    y : ndarray of float64, shape (n,)
        Labels in {-1, +1}.
    """
    _check_platt_args(n, d, density)
    rng = np.random.default_rng(seed)
    parts = [
        _binary_batch(rng, min(_BATCH_ROWS, n - start), d, density)
        for start in range(0, n, _BATCH_ROWS)
    ]
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return _stack(parts, n, d), y
