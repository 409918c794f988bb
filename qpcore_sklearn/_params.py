"""Checks of the parameters the estimators share (C, tol, cache_size, gamma), one home for all."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp


def positive(name: str, value: Any, *, unit: str = "") -> float:
    """``value`` as a float when it is a finite real number > 0; a ValueError naming it otherwise."""
    if not (isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            and np.isfinite(value) and float(value) > 0):
        raise ValueError(f"{name} must be a finite number > 0{unit}, got {value!r}")
    return float(value)


def gamma_value(gamma: Any, kernel: str, X: Any) -> float:
    """The kernel coefficient: ``"scale"`` is 1 / (n_features · X.var()) (1 when X is constant),
    ``"auto"`` 1 / n_features, else the number itself (> 0); 1 for kernels without one."""
    if kernel in ("linear", "precomputed"):
        return 1.0
    if isinstance(gamma, str):
        if gamma == "auto":
            return 1.0 / float(X.shape[1])
        if gamma == "scale":
            var = float((X.multiply(X)).mean() - X.mean() ** 2) if sp.issparse(X) else float(X.var())
            return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
        raise ValueError(f"gamma must be 'scale', 'auto' or a float > 0, got {gamma!r}")
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise ValueError(f"gamma must be 'scale', 'auto' or a float > 0, got {gamma!r}") from None
    if not (np.isfinite(g) and g > 0):
        raise ValueError(f"gamma must be 'scale', 'auto' or a float > 0, got {gamma!r}")
    return g
