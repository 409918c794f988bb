"""Exact incremental one-class and ν-SVM estimators for scikit-learn (Laskov et al. 2006).

:class:`IncrementalOneClassSVM` (``sklearn.svm.OneClassSVM``'s parameters and fitted attributes)
and :class:`IncrementalNuSVC` (``sklearn.svm.NuSVC``'s, two classes) keep their dual *solved*
while points come and go, through :class:`qpcore_incremental.incremental_oneclass.IncrementalOneClass` (ν mode)
and :class:`qpcore_incremental.incremental.IncrementalNuSVC`: ``partial_fit`` adds points by the adiabatic
increment, ``unlearn`` removes them by the decrement, and both then move C exactly along its path
to where the model is LIBSVM's for the fixed ν again (C = 1/(νl) for the one-class SVM; the C
where ν(C) = eᵀα/(Cl) equals ν for the ν-SVC). Every state is the batch optimum over the points
held, and ``leave_one_out`` gives each point's exact leave-one-out decision value without a refit.

As for :class:`~qpcore_sklearn.incremental.IncrementalSVC`, indices refer to the *current*
training set, the points held in the order they arrived (``numpy.delete``'s shift on unlearning);
the scaffolding they share is :class:`qpcore_sklearn.incremental_base.IncrementalEstimator`.
"""

from __future__ import annotations

import time
from typing import Any, Self

import attrs
import numpy as np
from numpy.typing import NDArray
from sklearn.base import OutlierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from qpcore.core.problem import ProblemError
from qpcore_incremental.incremental import IncrementalNuSVC as _NuEngine
from qpcore_incremental.incremental_oneclass import IncrementalOneClass
from qpcore_sklearn.incremental import LeaveOneOut, _BinaryIncremental
from qpcore_sklearn.incremental_base import (
    VALIDATE_X,
    FloatArray,
    IncrementalEstimator,
    IndexArray,
    Labels,
    as_dense,
    cache_bytes,
    check_kernel_params,
    make_kernel,
    nu_value,
)

__all__ = ["IncrementalNuSVC", "IncrementalOneClassSVM", "OneClassLeaveOneOut"]


#: Decision values within this fraction of Σ αᵢ|K(xᵢ, x)| + |rho| (far above the sum's rounding,
#: far below any value a data point gives off the boundary) are reported as 0.
_BOUNDARY = 1e-12


class _OneClassModel(IncrementalOneClass):
    """The ν-mode one-class model plus the leave-one-out decrement carried to α_c = 0 for every point
    (the engine's own stops early at a certain outlier and leaves NaN there)."""

    def loo_decision(self) -> FloatArray:
        """f₋c(x_c) in LIBSVM's scale for every point (the order of :attr:`ids`); NaN for a lone point.

        For each point the C path first takes C to 1/(ν(l − 1)), the C of the model without it
        (room for α_c's share), then α_c is decremented to 0 and f₋c(x_c) = g_c / C read off; the
        solved state is restored from a snapshot after each.
        """
        assert self.nu is not None
        sl = self._op.slots()
        l = int(sl.size)
        out = np.full(l, np.nan)
        if l < 2:
            return out
        C_after = self._C_for(l - 1)
        snap = self._save()
        try:
            for k, c in enumerate(sl.tolist()):
                try:
                    self._c_path(C_after, guard=False)
                    self._decrement(c)
                    out[k] = float(self._g[c]) / self.C
                except RuntimeError:
                    out[k] = np.nan            # the path found no state without this point
                self._restore(snap)
        finally:
            self._qm_written = None
        return out


@attrs.frozen
class OneClassLeaveOneOut:
    """Exact leave-one-out results of an :class:`IncrementalOneClassSVM`, in training-set order.

    Attributes
    ----------
    decision : ndarray of shape (n_samples,)
        f₋ᵢ(xᵢ): the decision value at training point i of the one-class SVM trained (at the same
        ν) on all the other points; positive inside. NaN when i is the only point.
    predictions : ndarray of int, shape (n_samples,)
        +1 (inlier) where the decision value is ≥ 0, else −1 (and for a NaN value), as
        :meth:`IncrementalOneClassSVM.predict`.
    seconds : float
        Wall time of the computation.
    """

    decision: FloatArray
    predictions: NDArray[np.int64]
    seconds: float

    @property
    def n_outliers(self) -> int:
        """The number of points the model without them calls outliers."""
        return int((self.predictions < 0).sum())

    @property
    def outlier_fraction(self) -> float:
        """The leave-one-out outlier fraction (an estimate of the novelty rate on new data)."""
        return self.n_outliers / self.predictions.size if self.predictions.size else 0.0


class IncrementalOneClassSVM(OutlierMixin, IncrementalEstimator):  # type: ignore[misc]
    """Schölkopf's one-class SVM (``sklearn.svm.OneClassSVM``) kept exactly solved under additions
    and removals.

    LIBSVM's dual min ½αᵀKα, 0 ≤ α ≤ 1, eᵀα = νl is kept in the scaled form of the abstract SVM
    (α/(νl): Σα = 1, 0 ≤ α ≤ C = 1/(νl)) by :class:`qpcore_incremental.incremental_oneclass.IncrementalOneClass`:
    a new point is learned by the adiabatic increment at the current C, then the exact C path takes
    C to 1/(νl) for the new l; a removed point's share is first made room for (C to 1/(ν(l − 1)))
    and its α then decremented to 0. Every state is the batch optimum at the fixed ν, so
    ``partial_fit`` in any batches, or ``fit`` followed by ``unlearn``, gives what ``OneClassSVM(nu)``
    fitted on the final training set gives (up to rounding).

    Parameters
    ----------
    kernel : {"rbf", "linear", "poly", "sigmoid"}
        The kernel (a precomputed Gram matrix cannot grow, so it is not offered).
    degree : int
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float
        Kernel coefficient; ``"scale"`` is computed **once**, from the X given to :meth:`fit` or
        from the first batch given to :meth:`partial_fit` (see
        :class:`~qpcore_sklearn.incremental.IncrementalSVC`).
    coef0 : float
        Independent term of the polynomial and sigmoid kernels.
    tol : float
        Accepted and checked as OneClassSVM takes it (> 0). The batch start of :meth:`fit` solves
        to its own tolerance before the polish into an exact state, so the fitted model is exact
        whatever ``tol`` is.
    nu : float
        In (0, 1]: an upper bound on the fraction of training outliers and a lower bound on that
        of support vectors.
    fit_method : {"batch", "incremental"}
        How :meth:`fit` (and the first :meth:`partial_fit`) builds the model: a batch solve
        polished into an exact state, or one adiabatic increment per point.
    cache_size : float
        Kernel row cache, in MB.
    refresh_every : int
        Every this many single-point updates the model refactors its margin block and recomputes
        the margin function from scratch (drift control); ≤ 0 never.

    Attributes
    ----------
    support_ : ndarray of int32
        Indices (into the current training set) of the support vectors, ascending.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The support vectors.
    n_support_ : ndarray of shape (1,)
        The number of support vectors.
    dual_coef_ : ndarray of shape (1, n_SV)
        LIBSVM's α of each support vector (in (0, 1], summing to νl).
    intercept_ : ndarray of shape (1,)
        −rho.
    offset_ : float
        rho: ``decision_function = score_samples − offset_``.
    fit_status_ : int
        0 (every state is solved exactly; a failure raises instead).
    shape_fit_ : tuple of int
        (n_samples, n_features) of the current training set.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When X had feature names.

    Notes
    -----
    Cost: a learn or unlearn is one adiabatic path of α_c plus one C path (each O(n·|M|) per
    segment, M the margin vectors); :meth:`leave_one_out` is one C path and one decrement per
    training point (ν fixes C by l, so no point is free of work), each undone from a snapshot.
    """

    _model: _OneClassModel
    _loo: OneClassLeaveOneOut | None

    def __init__(self, kernel: str = "rbf", degree: int = 3, gamma: str | float = "scale", coef0: float = 0.0,
                 tol: float = 1e-3, nu: float = 0.5, fit_method: str = "batch", cache_size: float = 200,
                 refresh_every: int = 500) -> None:
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.nu = nu
        self.fit_method = fit_method
        self.cache_size = cache_size
        self.refresh_every = refresh_every

    def _check_params(self) -> None:
        nu_value(self.nu)
        check_kernel_params(self)

    def _build(self, X: Any, labels: Labels, *, strict: bool) -> None:
        model = _OneClassModel(make_kernel(self, X), nu=float(self.nu), refresh_every=int(self.refresh_every),
                               cache_bytes=cache_bytes(self))
        model.fit(as_dense(X), method=str(self.fit_method))
        self._use(model)

    # -- fitting ----------------------------------------------------------------------------------

    def _fit_data(self, X: Any, y: Any) -> tuple[Any, Labels]:
        X = validate_data(self, X, **VALIDATE_X)
        if X.shape[0] < 2:
            raise ValueError(f"X: {type(self).__name__} needs at least two training rows, got n_samples = "
                             f"{X.shape[0]}")
        return X, ()

    def _partial_data(self, X: Any, y: Any, classes: Any, first: bool) -> tuple[Any, Labels]:
        return validate_data(self, X, reset=first, **VALIDATE_X), ()

    def fit(self, X: Any, y: Any = None) -> Self:
        """Fit the novelty detector from scratch (the exact one-class optimum on X).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Training points (sparse input is stored dense by the model); at least two.
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        ValueError
            NaN/inf, fewer than two rows, ν outside (0, 1], invalid parameters: before any work.
        """
        return self._fit(X, y)

    def partial_fit(self, X: Any, y: Any = None) -> Self:
        """Add the points of X to the training set, exactly.

        After the call the model is the one-class SVM at ν over every point seen (minus those
        unlearned), whatever the batches were. The first call fixes the number of features and the
        kernel (``gamma="scale"`` from this batch) and may hold a single point (the model of one
        point is defined: α = ν, rho = ν K(x, x)).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            New points.
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        ValueError
            NaN/inf, a feature count different from the first call's, invalid parameters.
        """
        return self._partial_fit(X, y)

    def _read_model(self, order: IndexArray) -> tuple[IndexArray, FloatArray]:
        """OneClassSVM's fitted attributes: LIBSVM's α of the support vectors, ascending."""
        m = self._model
        alpha = m.libsvm_alpha[order]
        sv = np.flatnonzero(alpha > 0)
        self.n_support_ = np.array([sv.size], dtype=np.int32)
        self.offset_ = float(m.rho)
        self.intercept_ = np.array([-self.offset_])
        self.fit_status_ = 0
        return sv, alpha[sv]

    # -- prediction -------------------------------------------------------------------------------

    def decision_function(self, X: Any) -> FloatArray:
        """Signed distance to the boundary: Σ αᵢK(xᵢ, x) − rho, positive for inliers.

        A value within 10⁻¹² of Σ αᵢ|K(xᵢ, x)| + |rho| (the sum's rounding) is returned as 0: the
        margin vectors, which the exact model puts on the boundary, get 0 however X is batched.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        X = self._check_X(X)
        rho = float(self.offset_)
        out = np.full(X.shape[0], -rho)
        mag = np.full(X.shape[0], abs(rho))
        coef = self.dual_coef_[0]
        for rows, K in self._kernel_blocks(X):
            out[rows] += K @ coef
            mag[rows] += np.abs(K) @ coef
        # the margin vectors lie exactly on the boundary, where the sum's rounding (which changes
        # with how X is blocked) would pick the sign: a value within it is the boundary, 0
        out[np.abs(out) <= _BOUNDARY * mag] = 0.0
        return out

    def score_samples(self, X: Any) -> FloatArray:
        """The raw score Σ αᵢK(xᵢ, x): ``decision_function(X) + offset_``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        out: FloatArray = self.decision_function(X) + self.offset_
        return out

    def predict(self, X: Any) -> NDArray[np.int64]:
        """+1 for inliers (decision ≥ 0), −1 for outliers.

        scikit-learn's outlier convention; LIBSVM calls a point exactly on the boundary an outlier,
        which only happens where the model is exact there (the margin vectors, inliers here).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of int of shape (n_samples,)
        """
        return np.where(self.decision_function(X) >= 0, 1, -1).astype(np.int64)

    # -- leave-one-out ----------------------------------------------------------------------------

    def leave_one_out(self) -> OneClassLeaveOneOut:
        """Exact leave-one-out decision values of every training point.

        For each point the model without it (at the same ν: C = 1/(ν(l − 1))) is reached by the C
        path and the adiabatic decrement, f₋ᵢ(xᵢ) read off, and the solved state restored from a
        snapshot. No model is refitted, and the estimator is left exactly as it was.

        Returns
        -------
        OneClassLeaveOneOut
            In the order of the current training set.
        """
        check_is_fitted(self)
        if self._loo is None:
            t0 = time.perf_counter()
            m = self._model
            dec = m.loo_decision()[np.argsort(m.ids, kind="stable")]
            self._loo = OneClassLeaveOneOut(decision=dec, predictions=np.where(dec >= 0, 1, -1).astype(np.int64),
                                            seconds=time.perf_counter() - t0)
        return self._loo

class IncrementalNuSVC(_BinaryIncremental):
    """Binary ν-SVM classifier (``sklearn.svm.NuSVC``) kept exactly solved under additions and removals.

    The C-SVC solution at C solves the ν-SVC for ν(C) = eᵀα/(Cl) (Chang and Lin 2001), so
    :class:`qpcore_incremental.incremental.IncrementalNuSVC` learns or unlearns a point exactly at the
    current C, then moves C along its exact path to where ν(C) equals ν again. Its decision
    function Σ αᵢyᵢK(xᵢ, x) + b is NuSVC's (LIBSVM's ν-SVC divided by its r), so ``partial_fit``
    in any batches, or ``fit`` followed by ``unlearn``, gives what ``NuSVC(nu)`` fitted on the
    final training set gives (up to rounding).

    Parameters
    ----------
    nu : float
        In (0, 1]: an upper bound on the fraction of margin errors and a lower bound on that of
        support vectors; at most 2·min(n₊, n₋)/n (LIBSVM's "specified nu is infeasible").
    kernel : {"rbf", "linear", "poly", "sigmoid"}
        The kernel (a precomputed Gram matrix cannot grow, so it is not offered).
    degree : int
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float
        Kernel coefficient; ``"scale"`` is computed **once**, from the X given to :meth:`fit` or
        from the first batch given to :meth:`partial_fit` (see
        :class:`~qpcore_sklearn.incremental.IncrementalSVC`).
    coef0 : float
        Independent term of the polynomial and sigmoid kernels.
    tol : float
        Stopping tolerance of the batch C-SVC solve with which :meth:`fit` starts (then polished
        into the exact state and moved along the C path): the fitted model is exact either way.
    fit_method : {"batch", "incremental"}
        How :meth:`fit` (and the first :meth:`partial_fit`) builds the model: a batch solve
        polished into an exact state, or one adiabatic increment per point.
    cache_size : float
        Kernel row cache, in MB.
    refresh_every : int
        Every this many single-point updates the model refactors its margin block and recomputes
        the margin function from scratch (drift control); ≤ 0 never.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels; positive decision values mean ``classes_[1]``.
    nu_reached_ : bool
        Whether the points held admit the ν-SVC at ν. :meth:`partial_fit` may hold points that
        do not yet (one class only, ν·l/2 > min(l₊, l₋), or ν below every ν(C): the ν-SVC's w is
        0); until they do, the model attributes below are absent and prediction raises.
    support_ : ndarray of int32
        Indices (into the current training set) of the support vectors, grouped by class, as in
        NuSVC.
    support_vectors_ : ndarray of shape (n_SV, n_features)
        The support vectors.
    n_support_ : ndarray of shape (2,)
        Support vectors per class.
    dual_coef_ : ndarray of shape (1, n_SV)
        NuSVC's coefficients αᵢyᵢ/r (yᵢ = +1 for ``classes_[1]``).
    intercept_ : ndarray of shape (1,)
        NuSVC's −rho/r.
    shape_fit_ : tuple of int
        (n_samples, n_features) of the current training set.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When X had feature names.

    Notes
    -----
    Cost: a learn or unlearn is one adiabatic path plus one C path (each O(n·|M|) per segment);
    :meth:`leave_one_out` is one decrement and one C path per training point, each undone from a
    snapshot.
    """

    _model: _NuEngine

    def __init__(self, nu: float = 0.5, kernel: str = "rbf", degree: int = 3, gamma: str | float = "scale",
                 coef0: float = 0.0, tol: float = 1e-3, fit_method: str = "batch", cache_size: float = 200,
                 refresh_every: int = 500) -> None:
        self.nu = nu
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.fit_method = fit_method
        self.cache_size = cache_size
        self.refresh_every = refresh_every

    def _check_params(self) -> None:
        nu_value(self.nu)
        check_kernel_params(self)

    def _new_model(self, X: Any) -> _NuEngine:
        return _NuEngine(make_kernel(self, X), nu=float(self.nu), classes=np.array([-1.0, 1.0]),
                         refresh_every=int(self.refresh_every), cache_bytes=cache_bytes(self))

    def _build(self, X: Any, labels: Labels, *, strict: bool) -> None:
        """A fresh model on (X, ±1 labels). From :meth:`fit` an infeasible ν is an error (before any
        work), and so is a ν below every ν(C); a first :meth:`partial_fit` batch keeps its points
        and waits for more (:attr:`nu_reached_`)."""
        (ypm,) = labels
        nu = float(self.nu)
        npos, nneg = int((ypm > 0).sum()), int((ypm < 0).sum())
        feasible = nu * ypm.size / 2.0 <= min(npos, nneg)
        if strict and not feasible:
            raise ValueError(f"specified nu is infeasible: nu · n_samples / 2 = {nu} · {ypm.size} / 2 > "
                             f"min(n_{self.classes_[1]}, n_{self.classes_[0]}) = min({npos}, {nneg})")
        model = self._new_model(X)
        X = as_dense(X)
        try:
            if self.fit_method == "batch" and feasible:
                model.fit(X, ypm, batch_tol=float(self.tol))
            else:
                model.learn_many(X, ypm)
        except ProblemError as exc:
            if strict:
                raise ValueError(str(exc)) from None
            # ν below every ν(C) of this first batch: hold its points as learned one by one, the
            # state learn keeps while ν cannot be met (exact by construction)
            model = self._new_model(X)
            model.learn_many(X, ypm)
        if strict and not model.nu_reached:
            raise ValueError(f"nu: {nu} is below every ν(C) of these points: the ν-SVC's solution has w = 0 "
                             "(overlapping classes); choose a larger nu")
        self._use(model)

    _MODEL_ATTRS = ("support_", "support_vectors_", "n_support_", "dual_coef_", "intercept_")

    def _changed(self) -> None:
        super()._changed()
        self.nu_reached_ = bool(self._model.nu_reached)
        if not self.nu_reached_:
            # the C-SVC state the engine holds meanwhile is no ν-SVC: show no model at all
            for name in self._MODEL_ATTRS:
                delattr(self, name)

    def _need_nu(self) -> None:
        check_is_fitted(self)
        if not self.nu_reached_:
            ypm = self._model.y
            raise ValueError(f"nu = {self.nu} is not met by the {ypm.size} points held ({int((ypm > 0).sum())} "
                             f"of {self.classes_[1]!r}, {int((ypm < 0).sum())} of {self.classes_[0]!r}): "
                             "add points of both classes (or choose another nu)")

    def decision_function(self, X: Any) -> FloatArray:
        """Decision values f(x) = Σ αᵢyᵢK(xᵢ, x) + b (NuSVC's).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Positive values mean ``classes_[1]``.

        Raises
        ------
        ValueError
            While ν is not met by the points held (:attr:`nu_reached_` false).
        """
        self._need_nu()
        return super().decision_function(X)

    def leave_one_out(self) -> LeaveOneOut:
        """Exact leave-one-out decision values and labels of every training point.

        For each point, α_c is decremented adiabatically to 0 and the C path restores ν(C) = ν over
        the other points (the ν-SVC without the point at the same ν); f₋ᵢ(xᵢ) is read off and the
        solved state restored from a snapshot. No model is refitted, and the estimator is left
        exactly as it was.

        Returns
        -------
        LeaveOneOut
            In the order of the current training set. A point without which ν is infeasible (no
            ν-SVC exists on the rest) has a NaN decision and counts as not correct.
        """
        self._need_nu()
        return self._loo_from(lambda: self._model.leave_one_out().decision, nan_wrong=True)

    def loo_score(self) -> float:
        """The exact leave-one-out accuracy (the score of :meth:`leave_one_out`).

        Returns
        -------
        float
        """
        return self.leave_one_out().score
