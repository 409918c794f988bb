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

:data:`FORMULATIONS` holds (from :mod:`qpcore_formulations.builtin`, registered when the package is
imported) LIBSVM's five (``c-svc``, ``nu-svc``, ``one-class``, ``epsilon-svr``,
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
