"""The model file of ``qpcore train`` / ``qpcore predict``: versioned, documented, no pickles.

A model file is a NumPy ``.npz`` archive (zip; written with ``numpy.savez_compressed`` and read
with ``numpy.load(..., allow_pickle=False)``, so loading one never runs code) holding

- ``header``: a 0-d unicode array, one JSON object: the format name and version, the SVM type
  (a registered formulation, :mod:`qpcore_formulations.formulation`: LIBSVM's five ``c-svc``,
  ``nu-svc``, ``one-class``, ``epsilon-svr``, ``nu-svr``, and ``svdd``, ``l2-svc`` or one registered
  by a plugin), the model kind (``"kernel"`` or ``"linear"``), for classifiers the class labels as strings with their
  dtype and the multiclass scheme, the kernel and its parameters, the feature numbering,
  creation and training details;
- numeric arrays: for a kernel classifier the support vectors (dense ``sv``, or CSR parts
  ``sv_data`` / ``sv_indices`` / ``sv_indptr``), the coefficient matrix ``D``, ``bias``,
  ``pairs``, ``support`` and ``support_class`` (:class:`qpcore_train.multiclass.MulticlassSVM`'s
  fields: every label formulation); for a novelty formulation or a regression (one decision
  function, :class:`qpcore_formulations.svm.SVMModel`) the support vectors, ``D`` with one column,
  ``bias`` and ``support`` (and the header's ``self_coef``, SVDD's weight of K(x, x), when not 0); for a linear model ``W`` (one weight row per binary problem), ``bias`` and
  ``pairs`` (:class:`LinearModel`); optionally, for a kernel classifier trained with probabilities
  (``qpcore train -b 1``), ``prob_a`` and ``prob_b``, the sigmoid of each one-vs-one problem.

The fields, the version policy and the command line's exit codes are documented in
docs/model-format.md. :func:`save_model` writes a file, :func:`load_model` reads the model back,
:func:`load_model_file` the model with its header. Every defect of a file (not an ``.npz``, a
pickled array, an unknown format or version, missing or inconsistent arrays, non-finite
numbers) raises :class:`ModelFileError` with one line naming it. Version 1 files (C-SVC only,
no ``type``) are still read.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import tempfile
import zipfile
from typing import Any, Literal, cast

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore_train.multiclass import MulticlassSVM, decide, problems_of
from qpcore_formulations.builtin import C_SVC
from qpcore_formulations.formulation import FORMULATIONS, Formulation, Predicts, formulation
from qpcore_formulations.svm import SVMModel
from qpcore import __version__
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore_cli.common import CLIError, jsonable

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "LinearModel", "Model", "ModelFile", "ModelFileError", "class_labels",
           "labels_from_strings", "labels_to_strings", "load_model", "load_model_file", "save_model"]

#: The ``format`` field of every model file's header.
FORMAT_NAME = "qpcore-svm-model"
#: The version this module writes; it reads every version up to this one and refuses later ones.
#: Version 1: C-SVC models only (no ``type``); version 2 adds ``type`` and the one-function models.
FORMAT_VERSION = 2

FloatArray = NDArray[np.float64]

# integral float labels below this are exact as int64 and as float64
_INT_EXACT = float(2**53)


class ModelFileError(CLIError, ValueError):
    """A model file that cannot be written or read (one line; the command line exits with 2)."""


# --------------------------------------------------------------------------------------------
# The linear model
# --------------------------------------------------------------------------------------------


@attrs.frozen(eq=False)
class LinearModel:
    """A linear SVM over two or more classes: one hyperplane per binary problem.

    The decision value of problem p is ``X @ W[p] + bias[p]``, positive for its first class
    ``classes[pairs[p, 0]]``; the label is chosen as :class:`qpcore_train.multiclass.MulticlassSVM`
    chooses it (the sign for two classes, LIBSVM's vote for one-vs-one, the largest value for
    one-vs-rest).

    Attributes
    ----------
    classes : ndarray
        The label values, sorted; class k is ``classes[k]``.
    scheme : {"ovo", "ovr"}
        One-vs-one or one-vs-rest (two classes: the one pair, recorded as ``"ovo"``).
    pairs : ndarray of shape (n_problems, 2)
        Class indices (i, j) of each problem, j = −1 for "the rest"
        (:func:`qpcore_train.multiclass.problems_of`).
    W : ndarray of shape (n_problems, n_features)
        The weights of each problem.
    bias : ndarray of shape (n_problems,)
        The intercept of each problem (β·v for the regularized constant feature β).
    intercept_scaling : float
        β, the constant feature the intercept was trained with (0: no intercept); informative.
    """

    classes: NDArray[Any]
    scheme: Literal["ovo", "ovr"]
    pairs: NDArray[np.intp]
    W: FloatArray
    bias: FloatArray
    intercept_scaling: float = 1.0

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return int(self.classes.size)

    @property
    def n_features(self) -> int:
        """Number of features (columns of ``W``)."""
        return int(self.W.shape[1])

    def raw(self, X: Any) -> FloatArray:
        """Decision values of every binary problem, shape (n, n_problems).

        Parameters
        ----------
        X : ndarray or csr_matrix
            Points, one per row, ``n_features`` columns.

        Returns
        -------
        ndarray
        """
        out: FloatArray = np.asarray(X @ self.W.T, dtype=np.float64).reshape(X.shape[0], -1) + self.bias
        return out

    def predict_index(self, raw: FloatArray) -> NDArray[np.intp]:
        """Class indices from decision values (as :meth:`MulticlassSVM.predict_index`).

        Parameters
        ----------
        raw : ndarray of shape (n, n_problems)

        Returns
        -------
        ndarray of int
        """
        return decide(raw, self.scheme, self.pairs, self.n_classes)

    def predict(self, X: Any) -> NDArray[Any]:
        """Predicted labels (values of ``classes``) for the rows of X."""
        out: NDArray[Any] = self.classes[self.predict_index(self.raw(X))]
        return out


#: What a model file holds: a kernel or linear classifier, or one decision function (one-class,
#: regression).
Model = MulticlassSVM | LinearModel | SVMModel


@attrs.frozen(eq=False)
class ModelFile:
    """A model read back from a file, with its header.

    Attributes
    ----------
    model : MulticlassSVM, LinearModel or SVMModel
    header : dict
        The JSON header (see docs/model-format.md).
    """

    model: Model
    header: dict[str, Any]

    @property
    def type(self) -> str:
        """The SVM type, a registered formulation's name (``c-svc`` for a version 1 file)."""
        value = self.header.get("type") if self.header.get("version", 1) >= 2 else None
        return str(value) if value is not None else C_SVC.name

    @property
    def feature_index_base(self) -> int:
        """How the training file numbered its features (0 or 1; 1 when the header does not say)."""
        base = self.header.get("feature_index_base")
        return 0 if base == 0 else 1


# --------------------------------------------------------------------------------------------
# Labels
# --------------------------------------------------------------------------------------------


def class_labels(values: NDArray[Any]) -> NDArray[Any]:
    """Labels read as float64 from a LIBSVM file, as int64 when every one is integral.

    Parameters
    ----------
    values : ndarray
        Label values (any dtype).

    Returns
    -------
    ndarray
        ``values`` as int64 when they are floats that are all integral (and exact), else unchanged:
        ``+1``/``-1`` in a LIBSVM file stay the integers 1 and −1 through training, the model file
        and prediction.
    """
    arr = np.asarray(values)
    if arr.dtype.kind == "f" and arr.size and np.isfinite(arr).all() and (np.abs(arr) < _INT_EXACT).all() \
            and (arr == np.round(arr)).all():
        return arr.astype(np.int64)
    return arr


def _dtype_name(classes: NDArray[Any]) -> str:
    kind = classes.dtype.kind
    if kind == "b":
        return "bool"
    if kind in "iu":
        return "int64"
    if kind == "f":
        return "float64"
    if kind == "U":
        return "str"
    raise ModelFileError(f"classes: dtype {classes.dtype} cannot be stored; labels must be integers, floats, "
                         "booleans or strings")


def labels_to_strings(classes: NDArray[Any]) -> tuple[list[str], str]:
    """The class labels as exact strings, with the name of their dtype.

    Parameters
    ----------
    classes : ndarray
        Label values: integers, floats, booleans or strings.

    Returns
    -------
    (strings, dtype)
        ``str(int)`` for integers, the shortest round-trip text (``repr``) for floats,
        ``"true"``/``"false"`` for booleans, the strings themselves; ``dtype`` is ``"int64"``,
        ``"float64"``, ``"bool"`` or ``"str"``.

    Raises
    ------
    ModelFileError
        For another dtype, a non-finite float or an integer beyond int64.
    """
    arr = np.asarray(classes)
    dtype = _dtype_name(arr)
    if dtype == "int64":
        values = [int(v) for v in arr.tolist()]
        if any(not (-(2**63) <= v < 2**63) for v in values):
            raise ModelFileError("classes: an integer label does not fit in int64")
        return [str(v) for v in values], dtype
    if dtype == "float64":
        floats = [float(v) for v in arr.tolist()]
        if not all(math.isfinite(v) for v in floats):
            raise ModelFileError("classes: labels must be finite")
        return [repr(v) for v in floats], dtype
    if dtype == "bool":
        return ["true" if v else "false" for v in arr.tolist()], dtype
    return [str(v) for v in arr.tolist()], dtype


def labels_from_strings(strings: list[str], dtype: str) -> NDArray[Any]:
    """Inverse of :func:`labels_to_strings`.

    Parameters
    ----------
    strings : list of str
    dtype : {"int64", "float64", "bool", "str"}

    Returns
    -------
    ndarray

    Raises
    ------
    ModelFileError
        For an unknown dtype or a string that is not a label of that dtype.
    """
    try:
        if dtype == "int64":
            return np.array([int(s) for s in strings], dtype=np.int64)
        if dtype == "float64":
            out = np.array([float(s) for s in strings], dtype=np.float64)
            if not np.isfinite(out).all():
                raise ValueError("labels must be finite")
            return out
        if dtype == "bool":
            if any(s not in ("true", "false") for s in strings):
                raise ValueError("boolean labels are 'true' or 'false'")
            return np.array([s == "true" for s in strings], dtype=bool)
        if dtype == "str":
            return np.array(strings, dtype=str)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ModelFileError(f"header: classes are not {dtype} labels: {exc}") from None
    raise ModelFileError(f"header: class_dtype {dtype!r} is not one of int64, float64, bool, str")


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _kernel_arrays(kernel: Kernel, sv: Any, D: NDArray[Any], bias: NDArray[Any], support: NDArray[Any]
                   ) -> tuple[dict[str, NDArray[Any]], dict[str, Any]]:
    """The arrays and header fields every kernel model has: support vectors, D, bias, support."""
    if kernel.name == "precomputed" or sv is None:
        raise ModelFileError("a model with a precomputed kernel cannot be stored in a model file (version "
                             f"{FORMAT_VERSION} holds the support vectors themselves)")
    n_sv = int(D.shape[0])
    arrays: dict[str, NDArray[Any]] = {
        "bias": np.asarray(bias, dtype=np.float64),
        "D": np.asarray(D, dtype=np.float64),
        "support": np.asarray(support, dtype=np.int64),
    }
    if sp.issparse(sv):
        csr = sp.csr_matrix(sv)
        csr.sort_indices()
        dt = csr.dtype if csr.dtype in (np.float32, np.float64) else np.float64
        arrays["sv_data"] = np.asarray(csr.data, dtype=dt)
        arrays["sv_indices"] = np.asarray(csr.indices, dtype=np.int64)
        arrays["sv_indptr"] = np.asarray(csr.indptr, dtype=np.int64)
        storage = "csr"
    else:
        dense = np.asarray(sv)
        dt = dense.dtype if dense.dtype in (np.float32, np.float64) else np.float64
        arrays["sv"] = np.ascontiguousarray(dense, dtype=dt)
        storage = "dense"
    if sv.shape[0] != n_sv:
        raise ModelFileError(f"model: {sv.shape[0]} support vectors but D has {n_sv} rows")
    meta = {"kernel": {"name": kernel.name, "gamma": float(kernel.gamma), "degree": int(kernel.degree),
                       "coef0": float(kernel.coef0)},
            "sv_storage": storage, "n_sv": n_sv, "n_features": int(sv.shape[1])}
    return arrays, meta


def _classifier_type(model: Model, svm_type: str | None) -> str:
    """The type a classifier is stored as: a label formulation (with a linear model, one whose
    linear model it is, C-SVC)."""
    linear = isinstance(model, LinearModel)
    allowed = [f.name for f in FORMULATIONS.values()
               if f.predicts is Predicts.LABEL and (f.linear or not linear)]
    chosen = C_SVC.name if svm_type is None else svm_type
    if chosen not in allowed:
        raise ModelFileError(f"svm_type: a {type(model).__name__} is stored as {' or '.join(allowed)}, "
                             f"got {svm_type!r}")
    return chosen


def _function_types() -> list[str]:
    """The formulations stored as one decision function (novelty and value)."""
    return [f.name for f in FORMULATIONS.values() if f.predicts is not Predicts.LABEL]


def save_model(path: str | os.PathLike[str], model: Model, *, svm_type: str | None = None,
               feature_index_base: int | None = None, training: dict[str, Any] | None = None) -> None:
    """Write ``model`` to ``path`` in the model file format (version :data:`FORMAT_VERSION`).

    The file is written to a temporary name in the same folder and renamed, so a reader never
    sees half a file and a failed write leaves an existing file as it was.

    Parameters
    ----------
    path : str or os.PathLike
        The file (any name; no extension is added).
    model : MulticlassSVM, LinearModel or SVMModel
        A kernel classifier (:func:`qpcore_train.multiclass.train_multiclass`; not a precomputed
        kernel), a linear one, or one decision function (an ``SVMModel`` of a novelty or value
        formulation: one-class, SVDD, the regressions, decoded by :mod:`qpcore_formulations.svm_family`).
    svm_type : str, optional
        The header's ``type`` for a classifier: a label formulation's name, ``c-svc`` (default),
        ``nu-svc`` (a ``MulticlassSVM`` of ν-SVCs, coefficients already divided by r), ``l2-svc``,
        ...; a linear model is a ``c-svc``; an ``SVMModel`` is stored as its ``kind``.
    feature_index_base : {0, 1}, optional
        How the training file numbered its features, so that ``qpcore predict`` reads data the
        same way (recorded as null when not given; read as 1, LIBSVM's numbering).
    training : dict, optional
        Informative details (settings, statuses, times) recorded in the header's ``training``.

    Raises
    ------
    ModelFileError
        For a model the format cannot hold, or a file that cannot be written.
    """
    labels: dict[str, Any] = {}
    if isinstance(model, SVMModel):
        if model.kind not in _function_types() or svm_type not in (None, model.kind):
            raise ModelFileError(f"model: an SVMModel of kind {model.kind!r} is not stored (model files hold "
                                 f"{', '.join(_function_types())} as one decision function)")
        svm_type = model.kind
        arrays, meta = _kernel_arrays(model.kernel, model.sv, np.asarray(model.dual_coef).reshape(-1, 1),
                                      np.array([model.bias]), model.support)
        if model.self_coef:
            meta["self_coef"] = float(model.self_coef)      # SVDD's weight of K(x, x)
        kind = "kernel"
        n_problems = 1
    else:
        if isinstance(model, MulticlassSVM):
            arrays, meta = _kernel_arrays(model.kernel, model.sv, model.D, model.bias, model.support)
            arrays["support_class"] = np.asarray(model.support_class, dtype=np.int64)
            if model.prob_a is not None and model.prob_b is not None:
                arrays["prob_a"] = np.asarray(model.prob_a, dtype=np.float64)
                arrays["prob_b"] = np.asarray(model.prob_b, dtype=np.float64)
            kind = "kernel"
        elif isinstance(model, LinearModel):
            arrays = {"bias": np.asarray(model.bias, dtype=np.float64),
                      "W": np.ascontiguousarray(model.W, dtype=np.float64)}
            meta = {"intercept_scaling": float(model.intercept_scaling), "n_features": int(model.W.shape[1])}
            kind = "linear"
        else:
            raise ModelFileError(f"model: a {type(model).__name__} is not a MulticlassSVM, LinearModel or SVMModel")
        svm_type = _classifier_type(model, svm_type)
        arrays["pairs"] = np.asarray(model.pairs, dtype=np.int64)
        strings, dtype = labels_to_strings(model.classes)
        labels = {"classes": strings, "class_dtype": dtype, "scheme": model.scheme, "n_classes": len(strings)}
        n_problems = int(arrays["pairs"].shape[0])
    if feature_index_base not in (None, 0, 1):
        raise ModelFileError(f"feature_index_base: must be 0, 1 or None, got {feature_index_base!r}")
    header: dict[str, Any] = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "type": svm_type,
        "kind": kind,
        **labels,
        "n_problems": n_problems,
        **meta,
        "feature_index_base": feature_index_base,
        "created": {"by": f"qpcore {__version__}",
                    "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")},
        "training": jsonable(training) if training is not None else None,
    }
    _check(header, arrays, FORMAT_VERSION)   # never write a file that would not load
    text = json.dumps(header, allow_nan=False, sort_keys=False)
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".qpcore-model-", dir=folder)
    except OSError as exc:
        raise ModelFileError(f"cannot write model file {target!r}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            payload: dict[str, Any] = {"header": np.array(text), **arrays}
            np.savez_compressed(fh, **payload)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)   # as an ordinary new file, not mkstemp's 0600
        os.replace(tmp, target)
    except OSError as exc:
        raise ModelFileError(f"cannot write model file {target!r}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------

_KERNEL_ARRAYS = ("pairs", "bias", "D", "support", "support_class")
_LINEAR_ARRAYS = ("pairs", "bias", "W")


def _int_field(header: dict[str, Any], key: str) -> int:
    value = header.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ModelFileError(f"header: {key!r} must be a non-negative integer, got {value!r}")
    return value


def _array(arrays: dict[str, NDArray[Any]], name: str, kind: str, shape: tuple[int, ...]) -> NDArray[Any]:
    a = arrays[name]
    if kind == "f" and a.dtype not in (np.float32, np.float64):
        raise ModelFileError(f"array {name!r}: dtype {a.dtype}, expected float64")
    if kind == "i" and a.dtype.kind not in "iu":
        raise ModelFileError(f"array {name!r}: dtype {a.dtype}, expected int64")
    if a.shape != shape:
        raise ModelFileError(f"array {name!r}: shape {a.shape}, expected {shape}")
    if kind == "f" and not np.isfinite(a).all():
        raise ModelFileError(f"array {name!r}: contains NaN or inf")
    return a


def _kernel_of(header: dict[str, Any]) -> Kernel:
    spec = header.get("kernel")
    if not isinstance(spec, dict):
        raise ModelFileError("header: 'kernel' must be an object with name, gamma, degree, coef0")
    try:
        kernel = Kernel(spec["name"], gamma=float(spec["gamma"]), degree=int(spec["degree"]),
                        coef0=float(spec["coef0"]))
    except (KeyError, TypeError, ValueError, ProblemError) as exc:
        raise ModelFileError(f"header: bad kernel {spec!r}: {exc}") from None
    if kernel.name == "precomputed":
        raise ModelFileError("header: a precomputed kernel is not stored in model files")
    return kernel


def _support_vectors(header: dict[str, Any], arrays: dict[str, NDArray[Any]], n_sv: int, d: int) -> Any:
    storage = header.get("sv_storage")
    if storage == "dense":
        if "sv" not in arrays:
            raise ModelFileError("missing array sv for sv_storage 'dense'")
        return _array(arrays, "sv", "f", (n_sv, d))
    if storage != "csr":
        raise ModelFileError(f"header: sv_storage {storage!r} is not 'dense' or 'csr'")
    missing = [k for k in ("sv_data", "sv_indices", "sv_indptr") if k not in arrays]
    if missing:
        raise ModelFileError(f"missing array(s) {', '.join(missing)} for sv_storage 'csr'")
    data = arrays["sv_data"]
    nnz = int(data.shape[0]) if data.ndim == 1 else -1
    data = _array(arrays, "sv_data", "f", (max(nnz, 0),))
    indices = _array(arrays, "sv_indices", "i", (data.shape[0],))
    indptr = _array(arrays, "sv_indptr", "i", (n_sv + 1,))
    if (indptr[0] != 0 or indptr[-1] != data.shape[0] or (np.diff(indptr) < 0).any()
            or (indices.size and (indices.min() < 0 or indices.max() >= d))):
        raise ModelFileError("arrays sv_indices / sv_indptr do not describe a CSR matrix of "
                             f"shape ({n_sv}, {d})")
    return sp.csr_matrix((data, indices.astype(np.int32 if d < 2**31 else np.int64),
                          indptr.astype(np.int32 if data.shape[0] < 2**31 else np.int64)), shape=(n_sv, d))


def _check_function(header: dict[str, Any], arrays: dict[str, NDArray[Any]], form: Formulation) -> SVMModel:
    """Validate and build a one-function model (a novelty or value formulation's)."""
    svm_type = form.name
    if header.get("kind") != "kernel":
        raise ModelFileError(f"header: type {svm_type!r} is a kernel model, got kind {header.get('kind')!r}")
    if header.get("n_problems", 1) != 1:
        raise ModelFileError(f"header: type {svm_type!r} has one decision function, got n_problems "
                             f"{header.get('n_problems')!r}")
    missing = [k for k in ("bias", "D", "support") if k not in arrays]
    if missing:
        raise ModelFileError(f"missing array(s) {', '.join(missing)} for type {svm_type!r}")
    d = _int_field(header, "n_features")
    n_sv = _int_field(header, "n_sv")
    kernel = _kernel_of(header)
    bias = float(_array(arrays, "bias", "f", (1,))[0])
    coef = np.asarray(_array(arrays, "D", "f", (n_sv, 1)), dtype=np.float64)[:, 0]
    support = _array(arrays, "support", "i", (n_sv,)).astype(np.intp)
    sv = _support_vectors(header, arrays, n_sv, d)
    # the primal weights, as the builders' decoder gives them, for a linear kernel's fast path
    w = np.asarray(sv.T @ coef, dtype=np.float64).ravel() if kernel.name == "linear" else None
    classes = np.array([-1, 1]) if form.predicts is Predicts.NOVELTY else np.zeros(0)
    self_coef = header.get("self_coef", 0.0)
    if not isinstance(self_coef, (int, float)) or isinstance(self_coef, bool) or not math.isfinite(self_coef):
        raise ModelFileError(f"header: self_coef {self_coef!r} is not a finite number")
    return SVMModel(support=support, sv=sv, dual_coef=coef, bias=bias, kernel=kernel, classes=classes, w=w,
                    kind=svm_type, self_coef=float(self_coef))


def _check(header: dict[str, Any], arrays: dict[str, NDArray[Any]], version: int) -> Model:
    """Validate a header and its arrays (a file of format ``version``); build the model."""
    # version 1 stored C-SVCs only and had no type
    svm_type = header.get("type") if version >= 2 else C_SVC.name
    if not isinstance(svm_type, str) or svm_type not in FORMULATIONS:
        raise ModelFileError(f"header: type {svm_type!r} is not one of {', '.join(FORMULATIONS)}")
    form = formulation(svm_type)
    kind = header.get("kind")
    if kind not in ("kernel", "linear"):
        raise ModelFileError(f"header: kind {kind!r} is not 'kernel' or 'linear'")
    if form.predicts is not Predicts.LABEL:
        return _check_function(header, arrays, form)
    if kind == "linear" and not form.linear:
        linear = [f.name for f in FORMULATIONS.values() if f.linear]
        raise ModelFileError(f"header: a linear model has type {' or '.join(repr(t) for t in linear)}, "
                             f"got {svm_type!r}")
    strings = header.get("classes")
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        raise ModelFileError("header: 'classes' must be a list of strings")
    dtype = header.get("class_dtype")
    classes = labels_from_strings(strings, str(dtype))
    n_classes = int(classes.size)
    if n_classes < 2 or np.unique(classes).size != n_classes:
        raise ModelFileError(f"header: classes must be at least two distinct labels, got {strings}")
    if header.get("n_classes", n_classes) != n_classes:
        raise ModelFileError(f"header: n_classes {header.get('n_classes')!r} but {n_classes} classes are listed")
    scheme = header.get("scheme")
    if scheme not in ("ovo", "ovr"):
        raise ModelFileError(f"header: scheme {scheme!r} is not 'ovo' or 'ovr'")
    need = _KERNEL_ARRAYS if kind == "kernel" else _LINEAR_ARRAYS
    missing = [k for k in need if k not in arrays]
    if missing:
        raise ModelFileError(f"missing array(s) {', '.join(missing)} for a {kind} model")
    expected = problems_of(n_classes, cast("Literal['ovo', 'ovr']", scheme))
    n_problems = int(expected.shape[0])
    pairs = _array(arrays, "pairs", "i", (n_problems, 2))
    if not np.array_equal(pairs, expected):
        raise ModelFileError(f"array 'pairs' does not list the {scheme} problems of {n_classes} classes")
    bias = np.asarray(_array(arrays, "bias", "f", (n_problems,)), dtype=np.float64)
    d = _int_field(header, "n_features")
    pairs_ip = expected.astype(np.intp)
    if kind == "linear":
        W = np.asarray(_array(arrays, "W", "f", (n_problems, d)), dtype=np.float64)
        scale = header.get("intercept_scaling", 1.0)
        if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not math.isfinite(scale) or scale < 0:
            raise ModelFileError(f"header: intercept_scaling {scale!r} is not a finite number >= 0")
        return LinearModel(classes=classes, scheme=cast("Literal['ovo', 'ovr']", str(scheme)), pairs=pairs_ip,
                           W=W, bias=bias, intercept_scaling=float(scale))
    n_sv = _int_field(header, "n_sv")
    kernel = _kernel_of(header)
    D = np.asarray(_array(arrays, "D", "f", (n_sv, n_problems)), dtype=np.float64)
    support = _array(arrays, "support", "i", (n_sv,)).astype(np.intp)
    support_class = _array(arrays, "support_class", "i", (n_sv,)).astype(np.intp)
    if n_sv and (support_class.min() < 0 or support_class.max() >= n_classes):
        raise ModelFileError("array 'support_class': a class index out of range")
    sv = _support_vectors(header, arrays, n_sv, d)
    prob_a, prob_b = _sigmoids(arrays, n_problems, str(scheme))
    return MulticlassSVM(classes=classes, kernel=kernel, scheme=cast("Literal['ovo', 'ovr']", str(scheme)),
                         pairs=pairs_ip, support=support, support_class=support_class, sv=sv, D=D, bias=bias,
                         prob_a=prob_a, prob_b=prob_b)


def _sigmoids(arrays: dict[str, NDArray[Any]], n_problems: int, scheme: str) -> tuple[FloatArray | None,
                                                                                         FloatArray | None]:
    """The optional ``prob_a``/``prob_b`` of a kernel classifier: both or neither (files written
    before probabilities have neither)."""
    have = [k for k in ("prob_a", "prob_b") if k in arrays]
    if not have:
        return None, None
    if len(have) == 1:
        raise ModelFileError(f"array {have[0]!r} without its partner: prob_a and prob_b come together")
    if scheme != "ovo":
        raise ModelFileError("arrays 'prob_a'/'prob_b': probabilities are stored for one-vs-one models only")
    a = np.asarray(_array(arrays, "prob_a", "f", (n_problems,)), dtype=np.float64)
    b = np.asarray(_array(arrays, "prob_b", "f", (n_problems,)), dtype=np.float64)
    return a, b


def load_model_file(path: str | os.PathLike[str]) -> ModelFile:
    """Read a model file: validate its format, version, kind and arrays; rebuild the model.

    Parameters
    ----------
    path : str or os.PathLike
        A file written by :func:`save_model` (``qpcore train``).

    Returns
    -------
    ModelFile
        The model and the header.

    Raises
    ------
    ModelFileError
        When the file is missing or unreadable, not a model file, of a later format version than
        :data:`FORMAT_VERSION`, or inconsistent (one line naming the defect).
    """
    name = os.fspath(path)
    if os.path.isdir(name):
        raise ModelFileError(f"model file {name!r} is a directory")
    if not os.path.exists(name):
        raise ModelFileError(f"model file {name!r} not found")
    try:
        with open(name, "rb") as fh:
            magic = fh.read(4)
        if magic != b"PK\x03\x04":
            raise ModelFileError(f"model file {name!r} is not a qpcore model file (not an .npz archive)")
        with np.load(name, allow_pickle=False) as f:
            arrays = {k: np.asarray(f[k]) for k in f.files}
    except ValueError as exc:
        if isinstance(exc, ModelFileError):
            raise
        # numpy refuses object (pickled) arrays without allow_pickle: they are never loaded
        raise ModelFileError(f"model file {name!r} is not a qpcore model file: it holds pickled (object) "
                             "arrays, which are never loaded") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelFileError(f"cannot read model file {name!r}: {getattr(exc, 'strerror', None) or exc}") from None
    if "header" not in arrays:
        raise ModelFileError(f"model file {name!r} is not a qpcore model file (no header)")
    raw = arrays.pop("header")
    if raw.dtype.kind != "U" or raw.shape != ():
        raise ModelFileError(f"model file {name!r}: the header is not a text field")
    try:
        header = json.loads(str(raw))
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"model file {name!r}: the header is not JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        found = header.get("format") if isinstance(header, dict) else None
        raise ModelFileError(f"model file {name!r} is not a qpcore model file (format {found!r}, "
                             f"expected {FORMAT_NAME!r})")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ModelFileError(f"model file {name!r}: unknown format version {version!r}")
    if version > FORMAT_VERSION:
        raise ModelFileError(f"model file {name!r} has format version {version}; this qpcore ({__version__}) "
                             f"reads versions up to {FORMAT_VERSION}: upgrade qpcore or retrain")
    try:
        model = _check(header, arrays, version)
    except ModelFileError as exc:
        raise ModelFileError(f"model file {name!r}: {exc}") from None
    return ModelFile(model=model, header=header)


def load_model(path: str | os.PathLike[str]) -> Model:
    """Read the model of a model file (see :func:`load_model_file`).

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    MulticlassSVM, LinearModel or SVMModel

    Raises
    ------
    ModelFileError
        As :func:`load_model_file`.
    """
    return load_model_file(path).model
