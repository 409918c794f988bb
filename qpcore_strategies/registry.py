"""The one registry of strategies: names, descriptions, options, factories, and what each accepts.

Every place that turns a name into a strategy reads this table: :func:`strategies.by_name`, the
``--strategy`` of ``qpcore solve`` and ``qpcore train``, the scikit-learn estimators and the
benchmarks. A name therefore means the same strategy with the same defaults everywhere.

A strategy is named by a *spec*: its name, optionally followed by ``:`` and options,
``decomposition:q=512,rule=mvp``; a bare value after the colon sets the strategy's main option
(``decomposition:512`` is ``q=512``). Older spellings are aliases (:data:`ALIASES`): ``decomp:Q``,
``chunk:M``, ``wss2``/``mvp``/``platt`` (SMO with that rule), ``asocas``.

Whether a strategy can take a problem is the strategy's own answer (:func:`accepts`): ``None``
when it accepts, else a reason that names a strategy that can.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import attrs

from qpcore.core.problem import QP, ProblemError
from qpcore.core.solve import Strategy
from qpcore_strategies.active_set import DenseActiveSet
from qpcore_strategies.asvm import ASVM
from qpcore_strategies.auto import Auto
from qpcore_strategies.active_set_ocas import ActiveSetOCAS
from qpcore_strategies.cutting_plane import BMRM, OCAS
from qpcore_strategies.decomposition import Decomposition
from qpcore_strategies.gradient_projection import GPCG
from qpcore_strategies.incas import INCAS
from qpcore_strategies.interior_point import InteriorPoint
from qpcore_strategies.rules.names import PAIR_RULES, SET_RULES, make_rule, rule_help
from qpcore_strategies.block_finish import BlockFinish
from qpcore_strategies.smo import SMO

__all__ = ["ALIASES", "KERNEL_STRATEGIES", "LINEAR_STRATEGIES", "PAIR_RULES", "REGISTRY", "SET_RULES", "Entry", "Family",
           "Option", "UnknownStrategy", "accepts", "entry", "make", "parse_spec", "settings"]

Family = Literal["kernel", "linear"]
OptionType = type[int] | type[float] | type[bool] | type[str]


def _convert(option: Option, value: Any) -> Any:
    """``value`` (a Python value or its text from a spec or a command line) as the option's type."""
    if value is None:
        if option.default is None:
            return None
        raise ProblemError(f"{option.name}: a value is required")
    try:
        if option.type is bool:
            if isinstance(value, str):
                text = value.strip().lower()
                if text not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                    raise ValueError(value)
                out: Any = text in ("true", "1", "yes", "on")
            else:
                out = bool(value)
        elif option.type is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            out = int(value)
        elif option.type is float:
            out = float(value)
        else:
            out = str(value)
    except (TypeError, ValueError):
        raise ProblemError(f"{option.name}: expected {option.type.__name__}, got {value!r}") from None
    if option.choices is not None and out not in option.choices:
        raise ProblemError(f"{option.name}: {out!r} is not one of {', '.join(option.choices)}")
    return out


@attrs.frozen
class Option:
    """One setting of a strategy, as a spec, the command line and the estimators offer it.

    Attributes
    ----------
    name : str
        The keyword (``q``, ``rule``); ``--q``, ``--rule`` on the command line (``_`` as ``-``).
    type : type
        ``int``, ``float``, ``bool`` or ``str``.
    default : object
        The value when not given (None: the strategy's own choice, e.g. ``max_cuts``).
    help : str
        One line.
    choices : tuple of str, optional
        The values a ``str`` option takes.
    """

    name: str
    type: OptionType
    default: Any
    help: str
    choices: tuple[str, ...] | None = None

    def convert(self, value: Any) -> Any:
        """``value`` (or its text) checked and converted to the option's type.

        Raises
        ------
        ProblemError
            When it does not convert or is not one of the choices.
        """
        return _convert(self, value)


@attrs.frozen
class Entry:
    """A strategy in the registry.

    Attributes
    ----------
    name : str
        Its name (``smo``, ``decomposition``, ...).
    description : str
        One line: the method and the problems it takes.
    family : {"kernel", "linear"}
        ``kernel``: solves the kernel C-SVC dual (``qpcore train``'s kernel models, ``KernelSVC``);
        ``linear``: solves a linear SVM's dual over Q = diag(d) + HHᵀ (ASVM, cutting planes).
    options : tuple of Option
        Its settings.
    factory : callable
        Keyword options (every option, converted) → the configured strategy.
    main : str, optional
        The option a bare value in a spec sets (``decomposition:512``).
    """

    name: str
    description: str
    family: Family
    options: tuple[Option, ...]
    factory: Callable[..., Strategy]
    main: str | None = None

    def option(self, name: str) -> Option:
        """The option called ``name`` (``-`` read as ``_``).

        Raises
        ------
        ProblemError
            When the strategy has no such option.
        """
        key = name.replace("-", "_")
        for opt in self.options:
            if opt.name == key:
                return opt
        known = ", ".join(o.name for o in self.options) or "none"
        raise ProblemError(f"strategy {self.name!r} has no option {name!r} (its options: {known})")

    def settings(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Every option's value: the given ones converted, the defaults for the rest.

        Raises
        ------
        ProblemError
            For an unknown option or a value that does not convert.
        """
        given = {self.option(k).name: v for k, v in (options or {}).items()}
        return {o.name: o.convert(given[o.name]) if o.name in given else o.default for o in self.options}

    def make(self, options: Mapping[str, Any] | None = None) -> Strategy:
        """The strategy configured with ``options`` (defaults for the others).

        Raises
        ------
        ProblemError
            For an unknown option, a bad value, or settings the strategy refuses.
        """
        try:
            return self.factory(**self.settings(options))
        except (TypeError, ValueError) as exc:
            raise ProblemError(f"strategy {self.name!r}: {exc}") from None

    def accepts(self, qp: QP, options: Mapping[str, Any] | None = None) -> str | None:
        """Whether the strategy, configured with ``options``, takes ``qp`` (:func:`accepts`).

        Returns
        -------
        str or None
            None when it does, else its reason (naming a strategy that can).
        """
        return accepts(self.make(options), qp)


# --------------------------------------------------------------------------------------------
# The entries
# --------------------------------------------------------------------------------------------

# PAIR_RULES and SET_RULES (the rules' names by kind) come from the one table of rule names,
# qpcore_strategies.rules.RULES, which SMO and decomposition read as well

_SHRINKING = Option("shrinking", bool, True, "shrink the active set (variables stuck at a bound)")


def _inner(name: str) -> Strategy | None:
    """An inner strategy by spec; ``auto`` → None (the outer strategy chooses from the problem)."""
    return None if name == "auto" else make(name)


def _smo(rule: str, shrinking: bool, finish: str = "none") -> Strategy:
    if finish == "block":
        # the opt-in block active-set finish, with its defaults
        return SMO(rule=rule, shrinking=shrinking, finish=BlockFinish())
    return SMO(rule=rule, shrinking=shrinking)


def _decomposition(rule: str, q: int, inner: str, shrinking: bool) -> Strategy:
    chosen = make_rule(rule, ("set", "pair"), size=q)     # q sets a set rule's size (chunking's M)
    inner_strategy = _inner(inner)
    if inner_strategy is None:
        return Decomposition(rule=chosen, shrinking=shrinking)
    return Decomposition(rule=chosen, inner=inner_strategy, shrinking=shrinking)


def _cutting(cls: Callable[..., Strategy]) -> Callable[..., Strategy]:
    def build(inner: str, max_cuts: int | None) -> Strategy:
        # auto: the cut model's own warm-started solver (qpcore_strategies.cut_qp)
        return cls(inner=_inner(inner), max_cuts=max_cuts)
    return build


_CUT_OPTIONS = (Option("inner", str, "auto", "strategy for the reduced problem over the cuts (auto: the "
                                             "kept-factor active set of qpcore_strategies.cut_qp)"),
                Option("max_cuts", int, None, "cuts kept at most (default: the strategy's own)"))


def _active_ocas(inner: str, max_cuts: int | None, mu: float, window: float, grow: float, refresh: float) -> Strategy:
    base = _cutting(ActiveSetOCAS)(inner, max_cuts)
    assert isinstance(base, ActiveSetOCAS)
    return attrs.evolve(base, mu=mu, window=window, grow=grow, refresh=refresh)


_ACTIVE_OCAS_OPTIONS = (*_CUT_OPTIONS,
                        Option("mu", float, 0.1, "where the cut lies between w_b and w_t (the paper: 0.05, max_cuts 20)"),
                        Option("window", float, 1.0, "the first step window (Λ over ‖w_t − w_b‖)"),
                        Option("grow", float, 1.5, "the next window as a multiple of the last cut point"),
                        Option("refresh", float, 0.25, "a block whose active set exceeds this fraction takes all its rows"))

#: Name → entry, in the order help texts list them.
REGISTRY: dict[str, Entry] = {e.name: e for e in (
    Entry("auto", "chooses from what the run shows: SMO while the free set is small, INCAS once pair steps crawl "
                  "over a large free set, decomposition where SMO cannot take the problem (choices and reasons "
                  "in Result.stats)", "kernel",
          (Option("release", int, 8, "bound variables INCAS releases per pricing after a switch"),
           Option("patience", int, 1, "observations without the gap halving before a switch"), _SHRINKING),
          lambda release, patience, shrinking: Auto(smo=SMO(newton_after=2, shrinking=shrinking),
                                                    incas_release=release, patience=patience)),
    Entry("smo", "sequential minimal optimization (Platt; LIBSVM's second-order rule by default): finite box, "
                 "no equality or disjoint ±1 equality groups (C-SVC, ν-SVC duals)", "kernel",
          (Option("rule", str, "wss2", f"pair rule: {rule_help('pair')}", PAIR_RULES), _SHRINKING,
           Option("finish", str, "none", "block: the block active-set finish once the gap is 1e-2 "
                                         "(qpcore_strategies.block_finish); none: SMO alone", ("none", "block"))), _smo,
          main="rule"),
    Entry("decomposition", "Osuna decomposition: working sets of q variables, each subproblem solved by an inner "
                           "strategy (finite box, no equality or disjoint equality groups)", "kernel",
          (Option("rule", str, "svmlight", f"working-set rule: {rule_help('set')}, or a pair rule "
                                           f"({', '.join(PAIR_RULES)})", SET_RULES + PAIR_RULES),
           Option("q", int, 64, "working-set size (chunking: violators added per round)"),
           Option("inner", str, "auto", "subproblem strategy (auto: SMO for ±1 rows, else the dense active set)"),
           _SHRINKING), _decomposition, main="q"),
    Entry("incas", "Scheinberg's active set, one variable at a time over a bordered Cholesky factor (finite box, "
                   "≤ 1 equality row); at its best at tight tolerances and large C", "kernel",
          (_SHRINKING, Option("release", int, 8, "bound variables released into S per pricing (1: the paper's one at a time)")),
          lambda shrinking, release: INCAS(shrinking=shrinking, release=release)),
    Entry("gpcg", "Moré–Toraldo gradient projection + conjugate gradients (box, any equality rows)", "kernel",
          (Option("face_solver", str, "auto", "solver on the free face", ("auto", "cg", "cholesky")),),
          lambda face_solver: GPCG(face_solver=face_solver)),
    Entry("active-set", "dense primal active-set method (box, any equality rows; n ≤ max_n, Q held dense)", "kernel",
          (Option("max_n", int, 4000, "largest problem it takes (Q is held as a dense n×n matrix)"),),
          lambda max_n: DenseActiveSet(max_n=max_n), main="max_n"),
    Entry("interior-point", "Mehrotra predictor–corrector primal–dual interior point method: any convex QP (box, "
                            "equality and inequality rows), Q as a dense or sparse matrix; proves infeasibility and "
                            "unboundedness before claiming them", "kernel",
          (Option("linear_solver", str, "auto", "KKT factorization: LAPACK's dense LDLᵀ, SuperLU, or by size and "
                                                "density (auto)", ("auto", "dense", "sparse")),
           Option("reg", float, 1e-9, "primal and dual regularization of the factored KKT matrix (steps refined on "
                                      "the unregularized system)"),
           Option("ruiz_iter", int, 15, "Ruiz equilibration passes over the KKT data (0: none)"),
           Option("step_fraction", float, 0.99, "fraction of the step to the boundary taken"),
           Option("gap_tol", float, None, "bound on the relative duality gap (default: the run's tol)")),
          lambda linear_solver, reg, ruiz_iter, step_fraction, gap_tol: InteriorPoint(
              linear_solver=linear_solver, reg=reg, ruiz_iter=ruiz_iter, step_fraction=step_fraction, gap_tol=gap_tol)),
    Entry("asvm", "Mangasarian–Musicant's active-set SVM: Q = diag(d) + HHᵀ with d > 0 over u ≥ 0 (the L2-loss "
                  "linear SVM dual)", "linear",
          (Option("max_rank", int, 20000, "largest k (columns of H) for the k×k Sherman–Morrison–Woodbury system"),),
          lambda max_rank: ASVM(max_rank=max_rank)),
    Entry("ocas", "optimized cutting planes (Franc–Sonnenburg): Q = HHᵀ over 0 ≤ α ≤ C, no equality (the hinge-loss "
                  "linear SVM dual)", "linear", _CUT_OPTIONS, _cutting(OCAS)),
    Entry("ocas-active", "the active-set OCAS of Xiao and Zhou: OCAS whose evaluation and line search touch only the "
                         "examples that can cross the hinge's kink within the step's window (as ocas)",
          "linear", _ACTIVE_OCAS_OPTIONS, _active_ocas),
    Entry("bmrm", "bundle method for regularized risk minimization, plain cutting planes (as ocas)", "linear",
          _CUT_OPTIONS, _cutting(BMRM)),
)}

#: Older or shorter spellings → (name, fixed options).
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "decomp": ("decomposition", {}),
    "chunk": ("decomposition", {"rule": "chunking"}),
    "osuna": ("decomposition", {"rule": "osuna"}),
    "wss2": ("smo", {"rule": "wss2"}),
    "mvp": ("smo", {"rule": "mvp"}),
    "platt": ("smo", {"rule": "platt"}),
    "asocas": ("ocas-active", {}),
    "active_set": ("active-set", {}),
    "dense-active-set": ("active-set", {}),
    "ocas_active": ("ocas-active", {}),
    "ipm": ("interior-point", {}),
    "interior_point": ("interior-point", {}),
}

#: Names of the strategies for kernel SVM duals (``qpcore train``'s kernel models, ``KernelSVC``).
KERNEL_STRATEGIES = tuple(n for n, e in REGISTRY.items() if e.family == "kernel")
#: Names of the strategies for linear SVMs: ASVM on the squared hinge, cutting planes on the hinge.
LINEAR_STRATEGIES = tuple(n for n, e in REGISTRY.items() if e.family == "linear")


class UnknownStrategy(ProblemError):
    """A spec whose name is neither a strategy nor an alias (the message lists the names).

    Attributes
    ----------
    spec : str
        The spec as given, so a caller with a narrower list of names (the kernel estimators) can
        say it in its own words.
    """

    def __init__(self, spec: str) -> None:
        super().__init__(f"strategy: unknown name {spec!r}; use one of {', '.join(REGISTRY)}")
        self.spec = spec


def entry(name: str) -> Entry:
    """The entry of a strategy name or alias.

    Raises
    ------
    ProblemError
        For an unknown name (the message lists the names).
    """
    return parse_spec(name)[0]


def parse_spec(spec: str) -> tuple[Entry, dict[str, Any]]:
    """A spec ``name[:value | :key=value,...]`` → its entry and the options it sets (as text).

    Parameters
    ----------
    spec : str
        ``smo``, ``smo:mvp``, ``decomposition:q=512,inner=gpcg``, ``decomp:512``, ``chunk:64``.

    Returns
    -------
    (Entry, dict)

    Raises
    ------
    UnknownStrategy
        For an unknown name (a ProblemError).
    ProblemError
        For a malformed option list.
    """
    name, _, rest = spec.strip().partition(":")
    fixed: dict[str, Any] = {}
    if name in ALIASES:
        name, fixed = ALIASES[name][0], dict(ALIASES[name][1])
    if name not in REGISTRY:
        raise UnknownStrategy(spec)
    e = REGISTRY[name]
    options: dict[str, Any] = dict(fixed)
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            if e.main is None:
                raise ProblemError(f"strategy spec {spec!r}: {name} takes options as key=value")
            key, value = e.main, part
        options[e.option(key.strip()).name] = value.strip()
    return e, options


def make(spec: str | Strategy, **options: Any) -> Strategy:
    """The strategy of a spec (a name with options) or a strategy object unchanged.

    Parameters
    ----------
    spec : str or Strategy
        See :func:`parse_spec`; a strategy object is returned as is (no options allowed then).
    **options
        More options, by keyword (they override the spec's).

    Returns
    -------
    Strategy

    Raises
    ------
    ProblemError
        For an unknown name or option, or a bad value.
    """
    if not isinstance(spec, str):
        if options:
            raise ProblemError("strategy: options go with a strategy name, not an object")
        return spec
    e, given = parse_spec(spec)
    return e.make({**given, **options})


def settings(spec: str, **options: Any) -> dict[str, Any]:
    """The full settings a spec stands for: ``{"strategy": name, option: value, ...}``.

    Raises
    ------
    ProblemError
        As :func:`make`.
    """
    e, given = parse_spec(spec)
    return {"strategy": e.name, **e.settings({**given, **options})}


def accepts(strategy: Strategy, qp: QP) -> str | None:
    """Whether ``strategy`` takes ``qp``: None when it does, else its reason (naming one that can).

    Parameters
    ----------
    strategy : Strategy
        A configured strategy.
    qp : QP
        The problem.

    Returns
    -------
    str or None
    """
    try:
        strategy.check(qp)          # its declared answer, and the operator's capabilities
    except ProblemError as exc:
        return str(exc)
    return None
