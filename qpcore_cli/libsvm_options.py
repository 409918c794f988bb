"""The options of ``qpcore train`` and ``qpcore predict``: LIBSVM's short ones beside the long ones.

A LIBSVM user types ``qpcore train -s 0 -t 2 -g 0.05 -c 10 -e 0.001 -m 500 -h 0 -w1 5 -b 1 -v 5
data [model]`` as they would ``svm-train``; every short option has svm-train's meaning and default
(:data:`TRAIN_MAPPING` lists them, and ``qpcore train --help`` and docs/cli.md show the table),
and each has a long name too. Two letters changed meaning for this: ``-v`` is svm-train's
cross-validation (``--verbose`` has no short form any more) and ``-h`` is svm-train's shrinking
switch (``--help`` has no short form on ``qpcore train``). svm-train's ``-wLABEL W`` (``-w1 5``,
``-w-1 2``) is not an argparse option: :func:`libsvm_argv` turns it into ``--class-weight LABEL:W``
before parsing. ``qpcore predict`` takes svm-predict's ``-b 0|1`` and ``-q``.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence

from qpcore_cli.common import (
    AUTO_ROWS,
    SAMPLE_ROWS,
    finite_float,
    nonnegative_float,
    nonnegative_int,
    positive_float,
    positive_int,
)
from qpcore_cli.registry import add_entry_options
from qpcore_formulations.formulation import FORMULATIONS, libsvm_formulation
from qpcore_strategies.registry import KERNEL_STRATEGIES, LINEAR_STRATEGIES, REGISTRY

__all__ = ["AUTO_ROWS", "KERNELS", "PARAMETER_OPTIONS", "PREDICT_MAPPING", "SAMPLE_ROWS", "TRAIN_ACCURACY_MODES",
           "TRAIN_MAPPING",
           "add_predict_arguments", "add_train_arguments", "default_model_file", "kernel_arg", "libsvm_argv", "mapping_text", "svm_type_arg",
           "zero_one"]

#: svm-train's kernel numbers (``-t``): 0 linear, 1 poly, 2 rbf, 3 sigmoid, 4 precomputed.
KERNELS = ("linear", "poly", "rbf", "sigmoid", "precomputed")

#: ``--train-accuracy`` modes: auto (on up to :data:`~qpcore_cli.common.AUTO_ROWS` rows), on, off, sample
#: (:func:`qpcore_cli.common.evaluation_rows`).
TRAIN_ACCURACY_MODES = ("auto", "on", "off", "sample")

#: The options that set a formulation's parameter, by parameter name (any other parameter of a
#: registered formulation is ``--NAME``).
PARAMETER_OPTIONS = {"C": ("-c", "-C", "--C"), "nu": ("-n", "--nu"), "epsilon": ("-p", "--epsilon")}


def _types_text() -> str:
    """``0 c-svc (default), 1 nu-svc, ...; also svdd, l2-svc``: the registry's types."""
    numbered = sorted((f.libsvm_type, f.name) for f in FORMULATIONS.values() if f.libsvm_type is not None)
    text = ", ".join(f"{k} {name}{' (default)' if k == 0 else ''}" for k, name in numbered)
    others = [f.name for f in FORMULATIONS.values() if f.libsvm_type is None]
    return text + (f"; by name also {', '.join(others)}" if others else "")


def _taking(name: str) -> str:
    """The formulations that take the parameter ``name``, comma-separated."""
    return ", ".join(f.name for f in FORMULATIONS.values() if name in f.parameter_names)


#: svm-train's options and ours: (short, long, meaning and default).
TRAIN_MAPPING: tuple[tuple[str, str, str], ...] = (
    ("-s TYPE", "--type", _types_text()),
    ("-t KERNEL", "--kernel", "0 linear, 1 poly, 2 rbf (default), 3 sigmoid; 4 precomputed is refused"),
    ("-d D", "--degree", "poly degree (default 3)"),
    ("-g G", "--gamma", "rbf/poly/sigmoid gamma (default, and -g 0: 1/n_features)"),
    ("-r R", "--coef0", "poly/sigmoid coef0 (default 0)"),
    ("-c C", "--C", f"C of {_taking('C')} (default 1)"),
    ("-n NU", "--nu", f"nu of {_taking('nu')} (default 0.5)"),
    ("-p EPS", "--epsilon", f"epsilon of {_taking('epsilon')} (default 0.1)"),
    ("-m MB", "--cache-mb", "kernel row cache in MB (default 200; svm-train's is 100)"),
    ("-e TOL", "--tol", "stopping tolerance (default 0.001)"),
    ("-h 0|1", "--shrinking/--no-shrinking", "shrinking (default 1) where the strategy has it, else ignored "
                                             "(said on stderr)"),
    ("-b 0|1", "--probability", "1: fit Platt's sigmoids for probability estimates (default 0)"),
    ("-wLABEL W", "--class-weight LABEL:W", "C of class LABEL times W (default 1; repeatable)"),
    ("-v N", "--cross-validation N", "N-fold cross-validation: prints the accuracy (regression: MSE and "
                                     "squared correlation); no model written"),
    ("-q", "--quiet", "no progress display"),
)

#: svm-predict's options and ours.
PREDICT_MAPPING: tuple[tuple[str, str, str], ...] = (
    ("-b 0|1", "--probability", "1: write 'labels ...' then each row's class probabilities (default 0)"),
    ("-q", "--quiet", "no accuracy line"),
)

_WEIGHT = re.compile(r"^-w(?P<label>[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)(=(?P<value>.*))?$")


def mapping_text(title: str, rows: Sequence[tuple[str, str, str]]) -> str:
    """The option table of a ``--help`` epilog: one ``short  long  meaning`` line per option.

    Parameters
    ----------
    title : str
        The first line.
    rows : sequence of (short, long, meaning)

    Returns
    -------
    str
    """
    width = max(len(s) for s, _, _ in rows)
    lwidth = max(len(lng) for _, lng, _ in rows)
    return "\n".join([title, *(f"  {s:<{width}}  {lng:<{lwidth}}  {m}" for s, lng, m in rows)])


def libsvm_argv(argv: Sequence[str]) -> list[str]:
    """Rewrite svm-train's ``-wLABEL W`` as ``--class-weight LABEL:W`` in a ``qpcore train`` command.

    argparse cannot take an option whose name holds its first value (``-w1 5``, ``-w-1 2``), so
    the arguments are rewritten before parsing; only those after the ``train`` command, and
    never after ``--``. ``--class-weight -1:2`` is joined into one token too (argparse would
    take the negative label for an option).

    Parameters
    ----------
    argv : sequence of str
        The command line without the program name.

    Returns
    -------
    list of str
        The same arguments, with each ``-wLABEL W`` (or ``-wLABEL=W``) replaced by
        ``--class-weight=LABEL:W``.
    """
    args = list(argv)
    start = next((k for k, a in enumerate(args) if not a.startswith("-")), None)
    if start is None or args[start] != "train":
        return args
    out = args[:start + 1]
    k = start + 1
    while k < len(args):
        a = args[k]
        if a == "--":
            out += args[k:]
            break
        if a == "--class-weight" and k + 1 < len(args) and args[k + 1].startswith("-"):
            # --class-weight -1:2: argparse would take the negative label for an option
            out.append(f"--class-weight={args[k + 1]}")
            k += 2
            continue
        m = _WEIGHT.match(a)
        if m is None:
            out.append(a)
            k += 1
            continue
        value = m.group("value")
        if value is None:
            if k + 1 >= len(args):
                out.append(f"--class-weight={m.group('label')}:")   # the parser names the missing weight
                break
            value = args[k + 1]
            k += 1
        # one token: argparse would take a separate "-1:2" for an option, not a value
        out.append(f"--class-weight={m.group('label')}:{value}")
        k += 1
    return out


def default_model_file(data: str) -> str:
    """svm-train's default model name: the data file's base name + ``.model``, in the current folder.

    Parameters
    ----------
    data : str
        The training file.

    Returns
    -------
    str
    """
    return os.path.basename(data) + ".model"


def svm_type_arg(text: str) -> str:
    """Argument type of ``--type`` / ``-s``: a registered formulation by name, or LIBSVM's by
    svm-train's number (:mod:`qpcore_formulations.formulation`).

    Parameters
    ----------
    text : str
        ``c-svc``, ``nu-svc``, ``one-class``, ``epsilon-svr``, ``nu-svr`` or 0 to 4, or the name
        of any other registered formulation (``svdd``, ``l2-svc``, ...).

    Returns
    -------
    str
        The formulation's name.

    Raises
    ------
    argparse.ArgumentTypeError
        For anything else.
    """
    value = text.strip().lower()
    if value in FORMULATIONS:
        return value
    found = libsvm_formulation(int(value)) if value.isdigit() else None
    if found is not None:
        return found.name
    shown = ", ".join(f.name + (f" ({f.libsvm_type})" if f.libsvm_type is not None else "")
                      for f in FORMULATIONS.values())
    raise argparse.ArgumentTypeError(f"unknown SVM type {text!r}; the types are {shown}")


def kernel_arg(text: str) -> str:
    """Argument type of ``--kernel`` / ``-t``: a kernel by name or by svm-train's number.

    Parameters
    ----------
    text : str
        ``linear``, ``poly``, ``rbf``, ``sigmoid``, or 0 to 3 (4, precomputed, is refused here:
        a model file holds support vectors, not kernel values).

    Returns
    -------
    str
        The kernel's name.

    Raises
    ------
    argparse.ArgumentTypeError
        For precomputed kernels and anything else.
    """
    value = text.strip().lower()
    if value.isdigit() and int(value) < len(KERNELS):
        value = KERNELS[int(value)]
    if value == "precomputed":
        raise argparse.ArgumentTypeError(
            "precomputed kernels (svm-train's -t 4) are not supported by qpcore train: the model file holds "
            "support vectors, not kernel values (qpcore_sklearn.KernelSVC(kernel='precomputed') takes them)")
    if value in KERNELS:
        return value
    raise argparse.ArgumentTypeError(f"unknown kernel {text!r}; the kernels are "
                                     f"{', '.join(f'{n} ({k})' for k, n in enumerate(KERNELS[:4]))}")


def zero_one(text: str) -> int:
    """Argument type of svm-train's switches (``-h``, ``-b``): 0 or 1.

    Parameters
    ----------
    text : str

    Returns
    -------
    int

    Raises
    ------
    argparse.ArgumentTypeError
        For anything else.
    """
    if text.strip() in ("0", "1"):
        return int(text)
    raise argparse.ArgumentTypeError(f"must be 0 or 1, got {text!r}")


def _folds(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"n-fold cross validation: n must be >= 2, got {text!r}")
    return value


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``qpcore train``'s arguments (except ``--json`` / ``--quiet``) to its parser.

    The parser must be made with ``add_help=False``: ``-h`` is svm-train's shrinking switch,
    and ``--help`` is added here.

    Parameters
    ----------
    p : argparse.ArgumentParser
    """
    p.add_argument("--help", action="help", help="show this help message and exit")
    p.add_argument("data", metavar="DATA",
                   help="training file, LIBSVM/SVMlight format (plain, .gz or .bz2): two or more classes, "
                        "real targets for a regression, labels ignored by one-class")
    p.add_argument("model_file", metavar="MODEL", nargs="?",
                   help="the model file to write (docs/model-format.md; default: DATA's base name + '.model' in "
                        "the current folder, as svm-train)")
    model = p.add_argument_group("model")
    model.add_argument("-s", "--type", dest="svm_type", type=svm_type_arg, metavar="TYPE",
                       help="SVM type (svm-train's -s), a registered formulation: " + "; ".join(
                           f"{f.name}{f' or {f.libsvm_type}' if f.libsvm_type is not None else ''}"
                           f"{' (default)' if f.libsvm_type == 0 else ''}: {f.summary}" for f in FORMULATIONS.values()))
    model.add_argument(*PARAMETER_OPTIONS["C"], dest="C", type=positive_float,
                       help=f"C > 0, the weight of the loss (default 1; {_taking('C')})")
    model.add_argument(*PARAMETER_OPTIONS["nu"], type=finite_float, metavar="NU",
                       help=f"nu in (0, 1] of {_taking('nu')} (default 0.5, as svm-train)")
    model.add_argument(*PARAMETER_OPTIONS["epsilon"], type=finite_float, metavar="EPS",
                       help="epsilon >= 0, the width of epsilon-svr's insensitive tube (default 0.1, as svm-train)")
    # the parameters of the other registered formulations (a plugin's) as --NAME
    for name, param in {p.name: p for f in FORMULATIONS.values() for p in f.parameters}.items():
        if name not in PARAMETER_OPTIONS:
            model.add_argument(f"--{name}", dest=name, type=finite_float, metavar=name.upper(),
                               help=f"{param.help or name} (default {param.default:g}; {_taking(name)})")
    model.add_argument("-t", "--kernel", type=kernel_arg, metavar="KERNEL",
                       help="kernel of a kernel strategy: linear or 0, poly or 1, rbf or 2 (default), sigmoid or 3 "
                            "(svm-train's 4, precomputed, is refused)")
    model.add_argument("-g", "--gamma", type=nonnegative_float, metavar="G",
                       help="rbf/poly/sigmoid gamma (default, and 0 as in svm-train: 1/n_features)")
    model.add_argument("-d", "--degree", type=positive_int, metavar="D", help="poly degree (default 3)")
    model.add_argument("-r", "--coef0", type=finite_float, metavar="R", help="poly/sigmoid coef0 (default 0)")
    model.add_argument("--bias", type=nonnegative_float, metavar="B",
                       help="linear strategies: the constant feature B appended to every example, its weight "
                            "regularized, intercept = B*v (LIBLINEAR's -B; default 1; 0: no intercept, "
                            "hinge strategies only)")
    model.add_argument("--multiclass", choices=("ovo", "ovr"),
                       help="more than two classes: one-vs-one (default for kernels, as LIBSVM) or one-vs-rest "
                            "(default for linear strategies, as LIBLINEAR)")
    model.add_argument("--class-weight", action="append", metavar="LABEL:W",
                       help="multiply C by W for the examples of class LABEL (repeatable; svm-train's -wLABEL W, "
                            "e.g. -w1 5 -w-1 2)")
    model.add_argument("-b", "--probability", type=zero_one, default=0, metavar="0|1",
                       help="1: fit Platt's sigmoids on 5-fold cross-validated decision values (LIBSVM's -b 1) "
                            "so that 'qpcore predict -b 1' gives class probabilities (default 0)")
    solver = p.add_argument_group("solver")
    solver.add_argument("--strategy", choices=(*KERNEL_STRATEGIES, *LINEAR_STRATEGIES), default="auto",
                        help="kernel models: auto (default: SMO, switching to INCAS when pair steps crawl), smo "
                             "(LIBSVM's second-order rule), decomposition, incas, gpcg, active-set; linear models: asvm (L2 loss), ocas, ocas-active, bmrm (hinge loss)")
    solver.add_argument("-e", "--tol", type=positive_float, default=1e-3, metavar="T",
                        help="stopping tolerance (default 1e-3): the maximal-violating-pair gap for kernel "
                             "strategies (svm-train's -e), the projected gradient for asvm, the relative "
                             "duality gap for the cutting planes")
    solver.add_argument("-m", "--cache-mb", type=nonnegative_float, default=200.0, metavar="M",
                        help="kernel row cache per binary problem, MiB (default 200; svm-train's -m, whose "
                             "default is 100)")
    solver.add_argument("-h", dest="libsvm_shrinking", type=zero_one, metavar="0|1",
                        help="svm-train's shrinking switch: sets --shrinking/--no-shrinking of a strategy that has "
                             "it; accepted and ignored (with a note on stderr) for one that has not")
    solver.add_argument("--max-iter", type=nonnegative_int, metavar="K",
                        help="iteration limit per binary problem (default: max(10^7, 100 n) for kernel "
                             "strategies, as LIBSVM; 1000 for linear ones, as LIBLINEAR)")
    solver.add_argument("--time-limit", type=positive_float, metavar="S",
                        help="time limit of the whole command, s, from its start: each binary problem gets the "
                             "time left, and what comes after the solves (training accuracy, probability "
                             "calibration) is cut or skipped near the end, as the output says")
    add_entry_options(p.add_argument_group("strategy options (each strategy's own default when not given)"),
                      [REGISTRY[n] for n in (*KERNEL_STRATEGIES, *LINEAR_STRATEGIES)])
    data = p.add_argument_group("data")
    data.add_argument("--n-features", type=positive_int, metavar="N",
                      help="number of features (default: the largest feature number in DATA)")
    data.add_argument("--index-base", choices=("auto", "0", "1"), default="auto",
                      help="feature numbering: auto (default: zero-based if DATA uses index 0), 0, or 1; "
                           "recorded in the model, so predict reads data the same way")
    run = p.add_argument_group("evaluation and output")
    run.add_argument("-v", "--cross-validation", dest="folds", type=_folds, metavar="N",
                     help="N-fold cross-validation (svm-train's -v): prints 'Cross Validation Accuracy = ...%%' "
                          "(a regression: mean squared error and squared correlation coefficient); no model "
                          "is written")
    run.add_argument("--train-accuracy", choices=TRAIN_ACCURACY_MODES, default="auto",
                     help=f"the pass over the training data after the solve: auto (default: on up to {AUTO_ROWS:,} "
                          f"rows, off above), on, off, or sample (a seeded sample of {SAMPLE_ROWS:,} rows)")
    run.add_argument("--verbose", action="store_true",
                     help="progress lines on stderr even when it is not a terminal (no short form: -v is "
                          "svm-train's cross-validation)")


def add_predict_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``qpcore predict``'s arguments (except ``--json`` / ``--quiet``) to its parser.

    Parameters
    ----------
    p : argparse.ArgumentParser
    """
    p.add_argument("data", metavar="DATA", help="file to predict, LIBSVM format (plain, .gz or .bz2)")
    p.add_argument("model_file", metavar="MODEL", help="a model file written by 'qpcore train'")
    p.add_argument("output", metavar="OUTPUT", nargs="?",
                   help="where to write one predicted label per line (default: stdout)")
    p.add_argument("-b", "--probability", type=zero_one, default=0, metavar="0|1",
                   help="1: a first line 'labels A B ...' then, per row, the predicted label and each class's "
                        "probability (svm-predict's -b 1; the model must be trained with -b 1)")
    p.add_argument("--decision", action="store_true",
                   help="after each label, the decision value of every binary problem (positive for the "
                        "problem's first class; a first line '# label A/B ...' names the columns)")
    p.add_argument("--allow-unseen-labels", action="store_true",
                   help="count rows whose label the model never saw as errors instead of refusing the file")
    p.add_argument("--unlabeled", action="store_true",
                   help="DATA's labels are placeholders: no accuracy, no label check")
