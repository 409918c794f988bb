"""The built-in formulations: LIBSVM's five, Tax and Duin's SVDD and the L2-loss kernel SVM.

Each is a :class:`~qpcore_formulations.formulation.Formulation` over the builders of
:mod:`qpcore_formulations.svm` and :mod:`qpcore_formulations.svm_family`, registered in
:data:`~qpcore_formulations.formulation.FORMULATIONS` when ``qpcore_formulations`` is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore_formulations import svm, svm_family
from qpcore_formulations.formulation import (Formulation, FormulationProblem, Parameter, Predicts, check_epsilon,
                                             check_positive, register_formulation)

__all__ = ["C_SVC", "EPSILON_SVR", "L2_SVC", "NU_SVC", "NU_SVR", "ONE_CLASS", "SVDD"]

FloatArray = NDArray[np.float64]

_C = Parameter("C", 1.0, check_positive("C"), "-c", "C > 0, the weight of the loss")
_NU = Parameter("nu", 0.5, svm_family.check_nu, "-n/--nu", "nu in (0, 1]")
_EPSILON = Parameter("epsilon", 0.1, check_epsilon, "-p/--epsilon", "epsilon >= 0, the width of the insensitive tube")


def _ones(weight: FloatArray) -> bool:
    return bool(np.all(weight == 1.0))


def _box(params: Mapping[str, float], weight: FloatArray) -> float | FloatArray:
    """C, or C times each row's weight."""
    return params["C"] if _ones(weight) else params["C"] * weight


def _instance(weight: FloatArray) -> FloatArray | None:
    """LIBSVM's instance weights: None when every weight is 1 (the unweighted builder)."""
    return None if _ones(weight) else weight


def _given(y: FloatArray | None) -> FloatArray:
    if y is None:
        raise ProblemError("y: this formulation needs labels or targets, got none")
    return y


def _count(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _build_csvc(X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel, params: Mapping[str, float], *,
                cache_bytes: int) -> FormulationProblem:
    return svm.csvc(X, _given(y), params["C"] * weight, kernel, cache_bytes=cache_bytes)


def _build_nu_svc(X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel, params: Mapping[str, float], *,
                  cache_bytes: int) -> FormulationProblem:
    return svm_family.nu_svc(X, _given(y), params["nu"], kernel, weight=_instance(weight),
                             cache_bytes=cache_bytes)


def _nu_pair(params: Mapping[str, float], sizes: tuple[float, float], names: tuple[str, str]) -> None:
    """svm_check_parameter's test for every pair: ν·(n_i + n_j)/2 ≤ min(n_i, n_j)."""
    ni, nj = sizes
    if params["nu"] * (ni + nj) / 2.0 > min(ni, nj):
        # sizes are the classes' total weights, their row counts when unweighted
        raise ProblemError(f"nu: specified nu is infeasible for classes {names[0]} and {names[1]}: ν·(n_i + n_j)/2 = "
                           f"{params['nu'] * (ni + nj) / 2.0:.6g} exceeds the smaller class's total weight "
                           f"{_count(min(ni, nj))} (its number of rows when unweighted); take ν ≤ "
                           f"{2.0 * min(ni, nj) / (ni + nj):.6g}")


def _build_one_class(X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel, params: Mapping[str, float],
                     *, cache_bytes: int) -> FormulationProblem:
    return svm_family.one_class(X, params["nu"], kernel, weight=_instance(weight), cache_bytes=cache_bytes)


def _build_epsilon_svr(X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel,
                       params: Mapping[str, float], *, cache_bytes: int) -> FormulationProblem:
    return svm_family.epsilon_svr(X, _given(y), _box(params, weight), params["epsilon"],
                                  kernel, cache_bytes=cache_bytes)


def _build_nu_svr(X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel, params: Mapping[str, float], *,
                  cache_bytes: int) -> FormulationProblem:
    return svm_family.nu_svr(X, _given(y), params["C"], params["nu"], kernel,
                             weight=_instance(weight), cache_bytes=cache_bytes)


def _build_svdd(X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel, params: Mapping[str, float], *,
                cache_bytes: int) -> FormulationProblem:
    return svm_family.svdd(X, _box(params, weight), kernel, cache_bytes=cache_bytes)


def _build_l2_svc(X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel, params: Mapping[str, float], *,
                  cache_bytes: int) -> FormulationProblem:
    return svm.l2_svc(X, _given(y), params["C"] * weight, kernel, cache_bytes=cache_bytes)


#: LIBSVM's C-SVC (``-s 0``): min ½αᵀ(yyᵀ∘K)α − eᵀα, 0 ≤ α ≤ C·w, yᵀα = 0.
C_SVC = register_formulation(Formulation(
    "c-svc", Predicts.LABEL, _build_csvc, (_C,), libsvm_type=0, class_weights=True, linear=True,
    standard_dual=True, summary="C-support vector classification (LIBSVM's -s 0)"))
#: LIBSVM's ν-SVC (``-s 1``).
NU_SVC = register_formulation(Formulation(
    "nu-svc", Predicts.LABEL, _build_nu_svc, (_NU,), libsvm_type=1, check_pair=_nu_pair,
    summary="nu-support vector classification (LIBSVM's -s 1)"))
#: LIBSVM's one-class SVM (``-s 2``).
ONE_CLASS = register_formulation(Formulation(
    "one-class", Predicts.NOVELTY, _build_one_class, (_NU,), libsvm_type=2,
    summary="Schölkopf's one-class SVM (LIBSVM's -s 2): trains on every row, labels ignored"))
#: LIBSVM's ε-SVR (``-s 3``).
EPSILON_SVR = register_formulation(Formulation(
    "epsilon-svr", Predicts.VALUE, _build_epsilon_svr, (_C, _EPSILON), libsvm_type=3,
    summary="epsilon-support vector regression (LIBSVM's -s 3)"))
#: LIBSVM's ν-SVR (``-s 4``).
NU_SVR = register_formulation(Formulation(
    "nu-svr", Predicts.VALUE, _build_nu_svr, (_C, _NU), libsvm_type=4,
    summary="nu-support vector regression (LIBSVM's -s 4)"))
#: Tax and Duin's support vector data description (:func:`qpcore_formulations.svm_family.svdd`).
SVDD = register_formulation(Formulation(
    "svdd", Predicts.NOVELTY, _build_svdd, (_C,),
    summary="Tax and Duin's support vector data description: the smallest ball, slack weight C (C·l ≥ 1)"))
#: The L2-loss (squared hinge) kernel SVM (:func:`qpcore_formulations.svm.l2_svc`).
L2_SVC = register_formulation(Formulation(
    "l2-svc", Predicts.LABEL, _build_l2_svc, (_C,), class_weights=True,
    summary="the L2-loss (squared hinge) kernel SVM: C-SVC's dual with I/(2C) added, no upper bound"))
