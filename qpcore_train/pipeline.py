"""The one training pipeline of a formulation's problem: build → accept → solve → decode.

:func:`fit_problem` builds a :class:`~qpcore_formulations.formulation.Formulation`'s problem from
data, has the strategy say whether it takes it (:func:`qpcore_strategies.registry.accepts`: a
refusal is a :class:`Refused` naming the formulation and the strategy's own reason, before any
work), solves it from the given start or the problem's own (LIBSVM's), and decodes the result.
The multiclass layer (:func:`qpcore_train.multiclass.train_multiclass`) runs it once per pair of
classes, :func:`qpcore_train.fit.fit_formulation` once over all the rows of a novelty or value
formulation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

import qpcore
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore.core.solve import Reporter, Strategy
from qpcore.core.state import Result
from qpcore_formulations.formulation import Formulation, FormulationProblem
from qpcore_formulations.svm import SVMModel
from qpcore_strategies.registry import accepts
from qpcore_train.mirrored_stack import mirrored_why_not, solve_mirrored

__all__ = ["MaxIter", "Refused", "fit_problem", "iteration_limit", "solve_problem"]

FloatArray = NDArray[np.float64]

#: An iteration limit: a number, None (none), or a function of the problem's number of variables
#: (LIBSVM's cap max(10⁷, 100·n) counts the 2l variables of a regression).
MaxIter: TypeAlias = "int | Callable[[int], int | None] | None"


def iteration_limit(max_iter: MaxIter, n_variables: int) -> int | None:
    """The limit of a problem of ``n_variables`` variables (``max_iter`` itself unless it is a function)."""
    return max_iter(n_variables) if callable(max_iter) else max_iter


class Refused(ProblemError):
    """A strategy that cannot take a formulation's problem (raised before any work).

    Attributes
    ----------
    formulation : str
        The formulation's name.
    reason : str
        The strategy's own reason (naming one that can).
    """

    def __init__(self, formulation: str, reason: str) -> None:
        super().__init__(f"the strategy cannot take the {formulation} dual: {reason}")
        self.formulation = formulation
        self.reason = reason


def solve_problem(problem: FormulationProblem, strategy: Strategy, *, name: str, x0: FloatArray | None = None,
                  tol: float = 1e-3, max_iter: MaxIter = None, time_limit: float | None = None,
                  reporter: Reporter | None = None) -> tuple[SVMModel, Result]:
    """Accept, solve and decode a built problem.

    Parameters
    ----------
    problem : FormulationProblem
        A builder's problem.
    strategy : Strategy
    name : str
        The formulation's name (for a refusal).
    x0 : ndarray, optional
        A start (a warm start); the problem's own when None.
    tol, time_limit, reporter :
        Handed to ``qpcore.solve``.
    max_iter : int, callable or None
        The iteration limit, or a function of the number of variables giving it (:data:`MaxIter`).

    Returns
    -------
    (SVMModel, Result)

    Raises
    ------
    Refused
        When the strategy cannot take the problem.
    """
    reason = accepts(strategy, problem.qp)
    if reason is not None:
        raise Refused(name, reason)
    start = problem.x0 if x0 is None else x0
    res = qpcore.solve(problem.qp, strategy, x0=start, tol=tol, max_iter=iteration_limit(max_iter, problem.qp.n),
                       time_limit=time_limit, reporter=reporter)
    return problem.decode(res), res


def fit_problem(form: Formulation, X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel,
                params: Mapping[str, float], strategy: Strategy, *, cache_bytes: int = 200 << 20,
                x0: FloatArray | None = None, tol: float = 1e-3, max_iter: MaxIter = None,
                time_limit: float | None = None, reporter: Reporter | None = None,
                batched: bool | None = None) -> tuple[SVMModel, Result]:
    """Build one problem of a formulation, then :func:`solve_problem`, or for a mirrored dual
    (ε-SVR) whose kernel matrix fits ``cache_bytes``, with a strategy that declares LIBSVM's SMO as
    its lockstep method, :func:`qpcore_train.mirrored_stack.solve_mirrored`.

    Parameters
    ----------
    form : Formulation
    X : ndarray or csr_matrix
        The rows (their Gram matrix for a precomputed kernel).
    y : ndarray or None
        ±1 labels (a pair of a label formulation), targets (value), None (novelty).
    weight : ndarray
        One factor > 0 per row (ones: unweighted).
    kernel : Kernel
    params : mapping
        The formulation's checked parameters (:meth:`Formulation.params`).
    strategy : Strategy
    cache_bytes : int
        Kernel row cache.
    x0 : ndarray, optional
        A warm start; ignored unless it has one entry per variable.
    tol, max_iter, time_limit, reporter :
        As :func:`solve_problem` takes them.
    batched : bool, optional
        False: never the mirrored stack (the strategy alone).

    Returns
    -------
    (SVMModel, Result)
        The model over these rows (support indexes them) and the run.

    Raises
    ------
    ProblemError
        What the builder refuses; :class:`Refused` when the strategy cannot take the problem.
    """
    problem = form.build(X, y, weight, kernel, params, cache_bytes=cache_bytes)
    start = x0 if x0 is not None and x0.shape == (problem.qp.n,) else None
    first = problem.x0 if start is None else start
    if batched is not False and mirrored_why_not(problem.qp, kernel, strategy, x0=first, tol=tol,
                                                 cache_bytes=cache_bytes, reporter=reporter) is None:
        reason = accepts(strategy, problem.qp)     # the strategy finishes what the stack hands over
        if reason is not None:
            raise Refused(form.name, reason)
        res = solve_mirrored(problem.qp, X, kernel, strategy, x0=first, tol=tol,
                             max_iter=iteration_limit(max_iter, problem.qp.n), time_limit=time_limit)
        return problem.decode(res), res
    return solve_problem(problem, strategy, name=form.name, x0=start, tol=tol, max_iter=max_iter,
                         time_limit=time_limit, reporter=reporter)
