"""What the incremental estimators share (:mod:`qpcore_sklearn.incremental`, :mod:`qpcore_sklearn.incremental_family`).

:class:`IncrementalEstimator` is the scaffolding of an estimator over one of
:mod:`qpcore_incremental`'s exact models (an :class:`qpcore_incremental.incremental.IncrementalModel`):
``fit``, ``partial_fit`` and ``unlearn`` (the points held in arrival order, indices that shift as
with ``numpy.delete``), the fitted attributes read back after every change, the validation of X
for prediction and the kernel blocks a decision function sums, the certificate and the update
counters. The estimators give the hooks: their parameters, their labels, how a first model is
built and which fitted attributes it shows. The parameter checks and helpers they share sit here too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Self

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from qpcore.backends.operators import Kernel
from qpcore.core.certificate import KKT
from qpcore.core.problem import ProblemError
from qpcore_formulations.svm_family import check_nu
from qpcore_incremental.incremental import IncrementalModel
from qpcore_incremental.incremental_state import PathState
from qpcore_sklearn._params import gamma_value, positive

__all__ = ["IncrementalEstimator", "as_dense", "cache_bytes", "check_kernel_params", "check_positions", "make_kernel",
           "nu_value", "stored_points"]

FloatArray = NDArray[np.float64]
IndexArray = NDArray[np.intp]
#: What a model's ``learn_many`` takes after the points: (±1 labels,) for a classifier, () for the one-class.
Labels = tuple[FloatArray, ...]

_KERNELS = ("rbf", "linear", "poly", "sigmoid")
#: How ``validate_data`` reads X everywhere: the model stores rows of float64, CSR when sparse.
VALIDATE_X: dict[str, Any] = {"accept_sparse": "csr", "dtype": np.float64, "order": "C"}
#: Rows of X per kernel block of a decision function.
_BLOCK = 2048


def as_dense(X: Any) -> Any:
    """Sparse input as a dense array: the model stores its points dense anyway, and a row of a
    ``scipy.sparse`` *array* (unlike a matrix) is 1-D, which its point-by-point learning rejects."""
    return X.toarray() if sp.issparse(X) else X


def stored_points(model: PathState, slots: IndexArray) -> FloatArray:
    """The points ``model`` holds in ``slots`` (a copy): the support vectors the estimators keep
    (the engine offers no public reader of its points)."""
    out: FloatArray = np.array(model._op.points[slots], dtype=np.float64)
    return out


def cache_bytes(est: Any) -> int:
    """The estimator's ``cache_size`` (MB) in bytes, as the models take it."""
    return int(float(est.cache_size) * (1 << 20))


def nu_value(nu: Any) -> float:
    """ν as a float in (0, 1]; a ValueError naming it otherwise."""
    try:
        return check_nu(nu)
    except ProblemError as exc:
        raise ValueError(str(exc)) from None


def check_kernel_params(est: Any) -> None:
    """The parameters every incremental estimator shares: kernel, degree, coef0, tol, fit_method,
    cache_size, refresh_every."""
    if est.kernel not in _KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(_KERNELS)}, got {est.kernel!r}")
    positive("tol", est.tol)
    if est.fit_method not in ("batch", "incremental"):
        raise ValueError(f"fit_method must be 'batch' or 'incremental', got {est.fit_method!r}")
    positive("cache_size", est.cache_size, unit=" (MB)")
    if not isinstance(est.refresh_every, (int, np.integer)):
        raise ValueError(f"refresh_every must be an integer, got {est.refresh_every!r}")
    if est.kernel == "poly" and not (isinstance(est.degree, (int, np.integer)) and est.degree >= 1):
        raise ValueError(f"degree must be a positive integer, got {est.degree!r}")
    if not (isinstance(est.coef0, (int, float, np.number)) and np.isfinite(est.coef0)):
        raise ValueError(f"coef0 must be a finite number, got {est.coef0!r}")


def make_kernel(est: Any, X: Any) -> Kernel:
    """The estimator's kernel for a first batch X (``gamma="scale"`` from X), kept as ``_gamma``
    and ``_kernel_obj``."""
    est._gamma = gamma_value(est.gamma, str(est.kernel), X)
    est._kernel_obj = Kernel(est.kernel, gamma=est._gamma, degree=int(est.degree), coef0=float(est.coef0))
    return est._kernel_obj  # type: ignore[no-any-return]


def check_positions(indices: ArrayLike, n: int) -> IndexArray:
    """``indices`` as distinct non-negative positions in a training set of ``n`` points, leaving
    at least one; a ValueError naming ``indices`` otherwise."""
    idx = np.atleast_1d(np.asarray(indices))
    if idx.size == 0:
        return np.zeros(0, dtype=np.intp)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices: pass integer positions in the training set, got {indices!r}")
    if (idx < -n).any() or (idx >= n).any():
        raise ValueError(f"indices: out of range for a training set of {n} points")
    idx = np.where(idx < 0, idx + n, idx).astype(np.intp)
    if np.unique(idx).size != idx.size:
        raise ValueError("indices: repeated positions")
    if idx.size == n:
        raise ValueError("indices: cannot remove every training point (fit again instead)")
    return idx


class IncrementalEstimator(BaseEstimator):  # type: ignore[misc]
    """The scaffolding the incremental estimators share, over one exact model (``_model``).

    :meth:`_fit` and :meth:`_partial_fit` hold the logic of the estimators' ``fit`` and
    ``partial_fit`` (which give the public signatures and documentation); :meth:`unlearn`,
    :meth:`certificate` and :attr:`n_updates_` are public here. After every change
    :meth:`_changed` reads the model back into the fitted attributes, in training-set order (the
    points held, in arrival order).

    The estimators give ``_check_params`` (their parameters, before any work), ``_fit_data`` and
    ``_partial_data`` (X validated, and the labels the model takes), ``_build`` (a first model on
    X) and ``_read_model`` (their fitted attributes).
    """

    _model: IncrementalModel

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    # -- the hooks --------------------------------------------------------------------------------

    def _check_params(self) -> None:
        raise NotImplementedError

    def _fit_data(self, X: Any, y: Any) -> tuple[Any, Labels]:
        """X validated for :meth:`fit` (the training set, complete) and the model's labels."""
        raise NotImplementedError

    def _partial_data(self, X: Any, y: Any, classes: ArrayLike | None, first: bool) -> tuple[Any, Labels]:
        """X validated for :meth:`partial_fit` (``first``: the first call, which fixes the number of
        features) and the model's labels."""
        raise NotImplementedError

    def _build(self, X: Any, labels: Labels, *, strict: bool) -> None:
        """A fresh model on (X, labels), kept by :meth:`_use` (``strict``: from :meth:`fit`, where
        the training set is complete; otherwise the first batch of :meth:`partial_fit`)."""
        raise NotImplementedError

    def _read_model(self, order: IndexArray) -> tuple[IndexArray, FloatArray]:
        """Set the estimator's own fitted attributes from the model (``order``: the model's points
        in training-set order); return the support vectors' positions in the training set, in
        the order shown, and their dual coefficients."""
        raise NotImplementedError

    # -- fitting ----------------------------------------------------------------------------------

    def _fit(self, X: Any, y: Any) -> Self:
        self._check_params()
        X, labels = self._fit_data(X, y)
        self._build(X, labels, strict=True)
        return self

    def _partial_fit(self, X: Any, y: Any, classes: ArrayLike | None = None) -> Self:
        first = not hasattr(self, "_model")
        if first:
            self._check_params()
        X, labels = self._partial_data(X, y, classes, first)
        if first:
            self._build(X, labels, strict=False)
            return self
        model: Any = self._model                      # each model's learn_many takes its own labels
        model.learn_many(as_dense(X), *labels)
        self._changed()
        return self

    def _use(self, model: IncrementalModel) -> None:
        """Keep ``model`` (just built) and read it into the fitted attributes."""
        self._model = model
        self._changed()

    def unlearn(self, indices: ArrayLike) -> Self:
        """Remove training points exactly (the Cauwenberghs–Poggio decrement; the ν estimators also
        move C along its exact path, so that the model stays the one at their ν).

        After the call the model equals a fit on the current training set without these points;
        the remaining points keep their order (later indices shift down, as with ``numpy.delete``).

        Parameters
        ----------
        indices : int or array-like of int
            Positions in the current training set (the indexing of ``support_`` and of
            ``leave_one_out``), distinct; negative values count from the end.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            Indices that are not integers, out of range, repeated, or that would remove every point.
        """
        check_is_fitted(self)
        idx = check_positions(indices, int(self._ids.size))
        if idx.size == 0:
            return self
        for pid in self._ids[idx].tolist():
            self._model.unlearn(int(pid))
        self._changed()
        return self

    def _changed(self) -> None:
        """Read the model into the fitted attributes (training-set order = arrival order)."""
        m = self._model
        ids = m.ids
        order = np.argsort(ids, kind="stable")
        self._ids = ids[order]
        sv, coef = self._read_model(order)
        self.support_ = sv.astype(np.int32)
        self.support_vectors_ = stored_points(m, m._op.slots()[order][sv])
        self.dual_coef_ = coef[None, :]
        self.shape_fit_ = (int(self._ids.size), int(self.n_features_in_))
        self._loo: Any = None

    # -- prediction -------------------------------------------------------------------------------

    def _check_X(self, X: Any) -> Any:
        """X for prediction: the estimator fitted, X validated against the training features."""
        check_is_fitted(self)
        return validate_data(self, X, reset=False, **VALIDATE_X)

    def _kernel_blocks(self, X: Any) -> Iterator[tuple[slice, FloatArray]]:
        """K(X, support vectors) a block of rows at a time, with the rows it covers (none without
        support vectors)."""
        if self.support_.size:
            for s in range(0, X.shape[0], _BLOCK):
                yield slice(s, s + _BLOCK), self._kernel_obj.block(X[s:s + _BLOCK], self.support_vectors_)

    # -- the certificate --------------------------------------------------------------------------

    def certificate(self) -> KKT:
        """The KKT certificate of the current model, computed from the dual problem alone.

        Returns
        -------
        qpcore.core.certificate.KKT
            ``qpcore.kkt`` of the model's dual (the one-class SVM's in its scaled form, Σα = 1,
            0 ≤ α ≤ 1/(νl)) over the current training set at the model's α (an O(n²) kernel
            evaluation); for the classifiers ``.measure`` is the maximal-violating-pair gap.
        """
        check_is_fitted(self)
        return self._model.certificate()

    @property
    def n_updates_(self) -> dict[str, int]:
        """Counters of the incremental model: points ``learned`` and ``unlearned``, path
        ``steps``, ``refreshes``, ``repairs``."""
        check_is_fitted(self)
        return dict(self._model.stats)
