"""Any registered formulation as a scikit-learn estimator, with no estimator written for it.

``FormulationSVM(formulation="l2-svc", C=10.0, kernel="rbf", gamma=0.5)`` is an estimator of the
formulation of that name in :data:`qpcore_formulations.formulation.FORMULATIONS` (one registered
from outside the library with :func:`~qpcore_formulations.formulation.register_formulation` as
well as the shipped ones). Everything about it comes from the formulation:

- its parameters are the formulation's :class:`~qpcore_formulations.formulation.Parameter`\\ s
  (their names, their defaults, their checkers), beside the settings every kernel estimator
  takes (``kernel``, ``gamma``, ``tol``, ``strategy``, ``max_iter``, ...);
- its kind comes from ``Predicts``: a classifier (``ClassifierMixin``, with class weights,
  one-vs-one or one-vs-rest, probabilities) for a label formulation, a novelty detector
  (``OutlierMixin``) for a novelty one, a regressor (``RegressorMixin``) for a value one;
- it trains through :func:`qpcore_train.fit.fit_formulation`, as the command line does, on the
  shared bases of :mod:`qpcore_sklearn.svm_base` (the bases of
  :class:`~qpcore_sklearn.svm.KernelSVC` and its family).

Each formulation gets its own estimator class (:func:`estimator_class`, made once), whose
``__init__`` signature lists exactly its parameters: ``get_params``, ``set_params``, ``clone``,
grid searches and scikit-learn's estimator checks see an ordinary estimator.
``FormulationSVM(formulation=...)`` returns an instance of that class, and every such class is a
subclass of :class:`FormulationSVM`.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, cast

from qpcore.core.problem import ProblemError
from qpcore_formulations.formulation import FORMULATIONS, Formulation, Predicts, formulation as formulation_of
from qpcore_sklearn.svm_base import LabelSVM, NoveltySVM, SVMEstimator, ValueSVM

__all__ = ["SETTINGS", "FormulationSVM", "estimator_class"]

#: The settings every estimator of a formulation takes, with their defaults (KernelSVC's).
SETTINGS: dict[str, Any] = {"kernel": "rbf", "degree": 3, "gamma": "scale", "coef0": 0.0, "tol": 1e-3,
                            "cache_size": 200, "strategy": "auto", "max_iter": -1, "time_limit": None,
                            "warm_start": False, "progress": None}
#: The settings of a classifier beyond :data:`SETTINGS`.
_LABEL_SETTINGS: dict[str, Any] = {"class_weight": None, "multiclass": "ovo", "decision_function_shape": "ovr",
                                   "probability": False, "random_state": None, "predict_from_proba": False}
_BASES: dict[Predicts, type[SVMEstimator]] = {Predicts.LABEL: LabelSVM, Predicts.NOVELTY: NoveltySVM,
                                              Predicts.VALUE: ValueSVM}
_CLASSES: dict[str, type[FormulationSVM]] = {}


def _lookup(formulation: str | Formulation) -> Formulation:
    try:
        return formulation_of(formulation)
    except ProblemError as exc:
        raise ValueError(str(exc)) from None


class FormulationSVM(SVMEstimator):
    """A kernel SVM estimator of any registered formulation.

    ``FormulationSVM(formulation, **parameters)`` returns an instance of the formulation's own
    estimator class (:func:`estimator_class`), a classifier, novelty detector or regressor as
    the formulation predicts.

    Parameters
    ----------
    formulation : str or Formulation
        A registered name (``"l2-svc"``, ``"c-svc"``, ``"svdd"``, ...) or a Formulation.
    **parameters
        The formulation's parameters by name (``C=10.0``; their defaults otherwise); the
        settings of :data:`SETTINGS` (``kernel``, ``degree``, ``gamma``, ``coef0``, ``tol``,
        ``cache_size`` in MB, ``strategy``, ``max_iter`` (−1: LIBSVM's cap), ``time_limit``,
        ``warm_start``, ``progress``), as :class:`~qpcore_sklearn.svm.KernelSVC` takes them; and
        for a label formulation ``class_weight`` (a formulation without class weights refuses
        weights other than 1), ``multiclass``, ``decision_function_shape``, ``probability``,
        ``random_state`` and ``predict_from_proba``, as KernelSVC takes them.

    Attributes
    ----------
    model_ : MulticlassSVM or SVMModel
        The trained model.
    result_ : Result or list of Result
        qpcore's result of each problem, with its KKT certificate.
    support_, support_vectors_, n_support_, dual_coef_, intercept_, coef_, n_iter_, status_, fit_status_, shape_fit_ :
        As :class:`~qpcore_sklearn.svm.KernelSVC` (label formulations) or
        :class:`~qpcore_sklearn.svm_family.KernelOneClassSVM` / ``KernelSVR`` (the others) have them.
    classes_, probA_, probB_ :
        Label formulations.
    offset_ :
        Novelty formulations.

    Raises
    ------
    ValueError
        On construction, for an unknown formulation; TypeError for a parameter it does not take.

    Examples
    --------
    >>> import numpy as np
    >>> from qpcore_sklearn import FormulationSVM
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2)); y = (X[:, 0] > 0).astype(int)
    >>> est = FormulationSVM("l2-svc", C=10.0, kernel="linear").fit(X, y)
    >>> est.score(X, y) > 0.9
    True
    """

    #: The formulation this class was made for.
    _formulation: ClassVar[Formulation]
    formulation: str | Formulation | None

    def __new__(cls, formulation: str | Formulation | None = None, *args: Any, **kwargs: Any) -> FormulationSVM:
        if cls is FormulationSVM:
            if formulation is None:
                raise TypeError(f"FormulationSVM: name a formulation (formulation='l2-svc'); the registered ones "
                                f"are {', '.join(FORMULATIONS)}")
            cls = estimator_class(formulation)
        out: FormulationSVM = super().__new__(cls)
        return out

    def __init__(self, formulation: str | Formulation | None = None, **parameters: Any) -> None:
        # the per-formulation classes replace this __init__ by one with their own signature
        raise TypeError("FormulationSVM: construct it as FormulationSVM(formulation=..., ...)")

    def __reduce__(self) -> tuple[Any, ...]:
        # the class is made at run time: pickles name its formulation (the object when it is not
        # the registered one), and unpickling makes the class again
        own = type(self)._formulation
        key: str | Formulation = own.name if FORMULATIONS.get(own.name) is own else own
        return (_blank, (key,), self.__getstate__())

    def _form(self) -> Formulation:
        own = type(self)._formulation
        if self.formulation is None:
            return own
        form = _lookup(self.formulation)
        if form.name != own.name:
            raise ValueError(f"formulation: this estimator was made for {own.name!r}, not {form.name!r}; "
                             f"FormulationSVM(formulation={form.name!r}, ...) makes one for it")
        return form


def _blank(key: str | Formulation) -> FormulationSVM:
    """An instance of the estimator class of a formulation, for unpickling (its state follows)."""
    out: FormulationSVM = object.__new__(estimator_class(key))
    return out


def _signature(form: Formulation) -> inspect.Signature:
    settings = {**SETTINGS, **(_LABEL_SETTINGS if form.predicts is Predicts.LABEL else {})}
    clash = sorted(set(form.parameter_names) & ({"formulation", *settings}))
    if clash:
        raise ValueError(f"formulation {form.name!r}: its parameter {clash[0]!r} has the name of an estimator setting")
    kw = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature([
        inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("formulation", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
        *(inspect.Parameter(p.name, kw, default=p.default) for p in form.parameters),
        *(inspect.Parameter(name, kw, default=value) for name, value in settings.items())])


def _init_of(form: Formulation, signature: inspect.Signature) -> Any:
    takes = ", ".join(p for p in signature.parameters if p != "self")

    def __init__(self: FormulationSVM, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"FormulationSVM of {form.name!r}: {exc}; it takes {takes}") from None
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            if name != "self":
                setattr(self, name, value)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    __init__.__doc__ = f"The estimator of the {form.name} formulation (see :class:`FormulationSVM`)."
    return __init__


def estimator_class(formulation: str | Formulation) -> type[FormulationSVM]:
    """The estimator class of a formulation (made on first use, then kept).

    Its ``__init__`` takes ``formulation`` (None: this class's), the formulation's parameters with
    their defaults, and the settings (:data:`SETTINGS`, plus a classifier's); its base is
    :class:`~qpcore_sklearn.svm_base.LabelSVM`, :class:`~qpcore_sklearn.svm_base.NoveltySVM` or
    :class:`~qpcore_sklearn.svm_base.ValueSVM` as the formulation predicts, and
    :class:`FormulationSVM`. A formulation registered again under its name (``replace=True``)
    gets a new class.

    Parameters
    ----------
    formulation : str or Formulation
        A registered name or a Formulation.

    Returns
    -------
    type
        A subclass of :class:`FormulationSVM`.

    Raises
    ------
    ValueError
        An unknown name, or a formulation parameter named like a setting.
    """
    form = _lookup(formulation)
    made = _CLASSES.get(form.name)
    if made is not None and made._formulation is form:
        return made
    signature = _signature(form)
    namespace = {"__init__": _init_of(form, signature), "_formulation": form, "__module__": __name__,
                 "__qualname__": f"FormulationSVM[{form.name}]",
                 "__doc__": f"{form.summary or form.name}: the estimator of the {form.name!r} formulation "
                            "(see FormulationSVM)."}
    # the class is named FormulationSVM, so its repr reads FormulationSVM(formulation='...', ...)
    cls = cast("type[FormulationSVM]", type("FormulationSVM", (_BASES[form.predicts], FormulationSVM), namespace))
    _CLASSES[form.name] = cls
    return cls
