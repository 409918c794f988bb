"""Checks of the parameters the estimators share (C, tol, cache_size, gamma, kernel, max_iter,
strategy), one home for all."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from qpcore.core.problem import ProblemError
from qpcore.core.solve import Strategy
from qpcore_strategies.registry import KERNEL_STRATEGIES, UnknownStrategy, make, parse_spec

#: The kernels the estimators take (``"precomputed"``: fit takes the Gram matrix).
KERNELS = ("rbf", "linear", "poly", "sigmoid", "precomputed")

#: Strategy names accepted by the kernel estimators (the registry's kernel strategies).
STRATEGY_NAMES = KERNEL_STRATEGIES


def positive(name: str, value: Any, *, unit: str = "") -> float:
    """``value`` as a float when it is a finite real number > 0; a ValueError naming it otherwise."""
    if not (isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
            and np.isfinite(value) and float(value) > 0):
        raise ValueError(f"{name} must be a finite number > 0{unit}, got {value!r}")
    return float(value)


def check_kernel(kernel: Any) -> None:
    """A ValueError unless ``kernel`` is one of :data:`KERNELS`."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be rbf, linear, poly, sigmoid or precomputed, got {kernel!r}")


def check_max_iter(max_iter: Any) -> None:
    """A ValueError unless ``max_iter`` is a positive integer or −1 (LIBSVM's cap)."""
    if not (isinstance(max_iter, (int, np.integer)) and (max_iter == -1 or max_iter > 0)):
        raise ValueError(f"max_iter must be a positive integer or -1, got {max_iter!r}")


def libsvm_cap(n_variables: int) -> int:
    """LIBSVM's iteration cap of a problem, max(10⁷, 100·variables): a problem that rounding keeps
    from ever meeting tol (a polynomial kernel on unscaled data) ends with a warning, not a hang."""
    return max(10_000_000, 100 * n_variables)


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


def make_strategy(strategy: str | Strategy) -> Strategy:
    """The strategy for a name of :data:`STRATEGY_NAMES`, or the object itself.

    Names are read by the one registry (:mod:`qpcore_strategies.registry`), as ``qpcore train`` reads
    them, options included: ``"decomposition:q=512"``.

    Parameters
    ----------
    strategy : str or Strategy
        ``"auto"`` (SMO, then INCAS once pair steps crawl), ``"smo"`` (LIBSVM's second-order rule,
        shrinking), ``"decomposition"`` (working sets of
        q variables, SVMlight's rule), ``"incas"`` (Scheinberg's active set), ``"gpcg"``
        (Moré–Toraldo), ``"active-set"`` (dense, small problems), a spec with options
        (``"decomposition:q=512,rule=mvp"``), or a strategy object (e.g. ``SMO(rule="platt")``,
        ``Decomposition(rule=SteepestFeasible(q=512))``).

    Returns
    -------
    Strategy

    Raises
    ------
    ValueError
        For an unknown name or option, a linear strategy, or an object that is not a strategy:
        one line, naming the kernel strategies when the name is the problem.
    """
    if isinstance(strategy, str):
        names = f"use one of {', '.join(STRATEGY_NAMES)} or a strategy object"
        try:
            entry, _ = parse_spec(strategy)
        except UnknownStrategy as exc:
            # the registry's own list names every strategy, linear ones too: this one names ours
            raise ValueError(f"strategy: unknown name {exc.spec!r}; {names}") from None
        except ProblemError as exc:
            raise ValueError(_strategy_message(exc)) from None
        if entry.family != "kernel":
            raise ValueError(f"strategy: {entry.name} solves a linear SVM (LinearSVMClassifier), not a kernel SVM's "
                             f"dual; {names}")
        try:
            return make(strategy)
        except ProblemError as exc:
            raise ValueError(_strategy_message(exc)) from None
    if not isinstance(strategy, Strategy):
        raise ValueError(f"strategy: {strategy!r} is neither a name nor a qpcore Strategy")
    return strategy


def _strategy_message(exc: ProblemError) -> str:
    """The registry's message, which names the strategy already, with one ``strategy`` prefix."""
    text = str(exc)
    return text if text.startswith("strategy") else f"strategy: {text}"
