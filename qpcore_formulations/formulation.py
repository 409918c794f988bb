"""A formulation is an object: its name, what it predicts, its parameters and its builder, in one registry.

Every SVM qpcore trains is a :class:`Formulation`: a name (``c-svc``), svm-train's type number
where LIBSVM has one (``-s 0``), what its model predicts (:class:`Predicts`: a label, a novelty
sign or a value), its parameters (:class:`Parameter`: name, default, checker, the command
line's flag), whether per-class weights scale it, and its builder. The builder of a *label*
formulation makes the binary problem of one pair of classes (the multiclass layer,
:func:`qpcore_train.multiclass.train_multiclass`, calls it once per pair); the builder of a
*novelty* or *value* formulation makes one problem over all the rows. Either way it returns a
:class:`FormulationProblem`: the QP, a start, and the decoder of a solution into a
:class:`qpcore_formulations.svm.SVMModel`.

:data:`FORMULATIONS` holds LIBSVM's five (``c-svc``, ``nu-svc``, ``one-class``, ``epsilon-svr``,
``nu-svr``), Tax and Duin's ``svdd`` and the L2-loss (squared hinge) ``l2-svc``; a formulation
written elsewhere joins them with :func:`register_formulation`, and the training layer
(:func:`qpcore_train.fit.fit_formulation`), ``qpcore train --type``, the model file and the
scikit-learn estimators then take it by name (:func:`formulation`).

A builder is called as ``build(X, y, weight, kernel, params, cache_bytes=...)``:

- ``X``: the rows (for a precomputed kernel their Gram matrix), at least one;
- ``y``: ±1 labels of a pair (label formulations), the targets (value formulations), None
  (novelty formulations);
- ``weight``: one factor > 0 per row (class weight times sample weight; all ones when none was
  given): C-type formulations multiply their box by it, ν-type ones take it as LIBSVM's instance
  weight;
- ``kernel``: a :class:`qpcore.backends.operators.Kernel`;
- ``params``: every parameter of the formulation, checked (:meth:`Formulation.params`);
- ``cache_bytes``: the kernel row cache.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import numpy as np
from numpy.typing import NDArray

from qpcore.backends.operators import Kernel
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import Result
from qpcore_formulations import svm, svm_family

if TYPE_CHECKING:
    from qpcore_formulations.svm import SVMModel

__all__ = ["C_SVC", "EPSILON_SVR", "FORMULATIONS", "L2_SVC", "NU_SVC", "NU_SVR", "ONE_CLASS", "SVDD", "Builder",
           "Formulation", "FormulationProblem", "PairCheck", "Parameter", "Predicts", "check_epsilon", "check_positive",
           "formulation", "libsvm_formulation", "register_formulation"]

FloatArray = NDArray[np.float64]


class Predicts(enum.Enum):
    """What a formulation's model predicts."""

    #: A class: binary problems per pair of classes, the multiclass layer's vote.
    LABEL = "label"
    #: +1 inside, −1 outside (one-class, SVDD): one problem over all rows.
    NOVELTY = "novelty"
    #: A real value (the regressions): one problem over all rows.
    VALUE = "value"


class FormulationProblem(Protocol):
    """What a builder returns: the QP, its start, the decoder (:class:`~qpcore_formulations.svm.SVMProblem`
    and :class:`~qpcore_formulations.svm_family.FamilyProblem` are ones)."""

    @property
    def qp(self) -> QP:
        """The problem to solve."""
        ...

    @property
    def x0(self) -> FloatArray | None:
        """The feasible start to solve from (None: the strategy's own, α = 0)."""
        ...

    def decode(self, result: Result, sv_tol: float = 0.0) -> SVMModel:
        """The model of a solution of :attr:`qp`."""
        ...


class Builder(Protocol):
    """``build(X, y, weight, kernel, params, cache_bytes=...)`` (see the module's docstring)."""

    def __call__(self, X: Any, y: FloatArray | None, weight: FloatArray, kernel: Kernel,
                 params: Mapping[str, float], *, cache_bytes: int) -> FormulationProblem:
        ...


#: ``check_pair(params, sizes, names)`` of a label formulation: refuse a pair of classes before
#: any work (ProblemError), from the two classes' weight totals (their row counts when
#: unweighted) and names.
PairCheck = Callable[[Mapping[str, float], tuple[float, float], tuple[str, str]], None]


@attrs.frozen
class Parameter:
    """One parameter of a formulation.

    Attributes
    ----------
    name : str
        Its name (``C``, ``nu``, ``epsilon``): the key of ``params``, the estimators' argument,
        the command line's ``--name``.
    default : float
        svm-train's default.
    check : callable
        ``check(value) -> float``: the value as a float, or a ProblemError (one line naming it).
    flag : str
        How the command line's messages name its option (``-c``, ``-n/--nu``).
    help : str
        One line for ``--help``.
    """

    name: str
    default: float
    check: Callable[[Any], float]
    flag: str = ""
    help: str = ""


def check_positive(name: str) -> Callable[[Any], float]:
    """A checker of a finite number > 0 (C): ``"C: must be finite and > 0, got ..."`` otherwise."""
    def check(value: Any) -> float:
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise ProblemError(f"{name}: must be a finite number > 0, got {value!r}") from None
        if not (math.isfinite(v) and v > 0.0):
            raise ProblemError(f"{name}: must be finite and > 0, got {value!r}")
        return v
    return check


def check_epsilon(value: Any) -> float:
    """ε of ε-SVR: a finite number ≥ 0, else a ProblemError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ProblemError(f"epsilon: must be finite and ≥ 0, got {value!r}") from None
    if not (math.isfinite(v) and v >= 0.0):
        raise ProblemError(f"epsilon: must be finite and ≥ 0, got {value!r}")
    return v


@attrs.frozen(eq=False)
class Formulation:
    """An SVM formulation: how to build its QP from data and what its model predicts.

    Attributes
    ----------
    name : str
        Its name in the registry, the model file's ``type`` and ``qpcore train --type``.
    predicts : Predicts
        Label (binary problems per pair of classes), novelty or value (one problem over all rows).
    build : Builder
        The builder (see the module's docstring).
    parameters : tuple of Parameter
        Its parameters, in the order reports list them.
    libsvm_type : int or None
        svm-train's ``-s`` number (0 to 4), None for a formulation LIBSVM lacks.
    class_weights : bool
        Per-class weights scale its loss (svm-train's ``-wLABEL``); a label formulation without
        them (ν-SVC) refuses class weights other than 1.
    linear : bool
        A linear strategy (``qpcore train --strategy asvm|ocas|...``) trains it as a linear model
        too (C-SVC only).
    standard_dual : bool
        Its binary problem is C-SVC's dual with the box C times the row's weight, so the engines
        written for that dual take it: the lockstep batched SMO
        (:func:`qpcore_train.batched_smo.batched_smo`) and the shared-kernel cross-validation
        (:func:`qpcore_train.model_selection.cross_validation`).
    check_pair : PairCheck or None
        A label formulation's check of every pair of classes before any work (ν-SVC's
        feasibility of ν).
    summary : str
        One line: what it is.
    """

    name: str = attrs.field()
    predicts: Predicts
    build: Builder
    parameters: tuple[Parameter, ...] = ()
    libsvm_type: int | None = None
    class_weights: bool = False
    linear: bool = False
    standard_dual: bool = False
    check_pair: PairCheck | None = None
    summary: str = ""

    @name.validator
    def _check_name(self, attribute: Any, value: Any) -> None:
        if not isinstance(value, str) or not value or value != value.strip().lower() or " " in value:
            raise ProblemError(f"name: a formulation's name is one lower-case word (like 'l2-svc'), got {value!r}")

    @property
    def parameter_names(self) -> tuple[str, ...]:
        """The names of its parameters, in order."""
        return tuple(p.name for p in self.parameters)

    def params(self, given: Mapping[str, Any] | None = None) -> dict[str, float]:
        """Every parameter's value: the given ones checked, the defaults for the rest.

        Parameters
        ----------
        given : mapping, optional
            Name → value; a value of None counts as not given.

        Returns
        -------
        dict
            One float per parameter, in :attr:`parameters`' order.

        Raises
        ------
        ProblemError
            A value its checker refuses, or a name the formulation does not take.
        """
        values = {k: v for k, v in (given or {}).items() if v is not None}
        extra = [k for k in values if k not in self.parameter_names]
        if extra:
            takes = ", ".join(self.parameter_names) or "no parameter"
            raise ProblemError(f"{extra[0]}: the {self.name} formulation takes {takes}, not {extra[0]}")
        return {p.name: p.check(values[p.name]) if p.name in values else float(p.default) for p in self.parameters}


#: The formulations by name, in the order ``--help`` and messages list them.
FORMULATIONS: dict[str, Formulation] = {}


def register_formulation(f: Formulation, *, replace: bool = False) -> Formulation:
    """Add a formulation to :data:`FORMULATIONS`: the training layer, ``qpcore train --type``, the
    model file and the estimators then take it by name.

    Parameters
    ----------
    f : Formulation
    replace : bool
        Replace a formulation of the same name (else that is an error).

    Returns
    -------
    Formulation
        ``f``.

    Raises
    ------
    ProblemError
        Not a Formulation, a name taken, or a LIBSVM number another formulation has.
    """
    if not isinstance(f, Formulation):
        raise ProblemError(f"register_formulation: expected a Formulation, got {type(f).__name__}")
    if f.name in FORMULATIONS and not replace:
        raise ProblemError(f"formulation {f.name!r} is registered already (pass replace=True to replace it)")
    if f.libsvm_type is not None:
        other = next((g.name for g in FORMULATIONS.values() if g.libsvm_type == f.libsvm_type and g.name != f.name),
                     None)
        if other is not None:
            raise ProblemError(f"formulation {f.name!r}: LIBSVM type {f.libsvm_type} is {other!r}'s")
    FORMULATIONS[f.name] = f
    return f


def formulation(name: str | Formulation) -> Formulation:
    """The registered formulation of that name (a Formulation is returned as it is).

    Raises
    ------
    ProblemError
        For a name not registered: one line listing the names.
    """
    if isinstance(name, Formulation):
        return name
    found = FORMULATIONS.get(name) if isinstance(name, str) else None
    if found is None:
        raise ProblemError(f"formulation: unknown {name!r}; the formulations are {', '.join(FORMULATIONS)}")
    return found


def libsvm_formulation(number: int) -> Formulation | None:
    """The formulation of svm-train's ``-s number``, or None."""
    return next((f for f in FORMULATIONS.values() if f.libsvm_type == number), None)


# --------------------------------------------------------------------------------------------
# The built-in formulations
# --------------------------------------------------------------------------------------------

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
        raise ProblemError(f"nu: specified nu is infeasible for classes {names[0]} ({_count(ni)} rows) and "
                           f"{names[1]} ({_count(nj)} rows); take ν ≤ {2.0 * min(ni, nj) / (ni + nj):.6g}")


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
