"""The exact incremental/decremental SVM of Cauwenberghs and Poggio (NIPS 2000): the model.

:class:`IncrementalSVM` is a C-SVC dual kept *solved* while points are added and removed:
``learn``, ``unlearn``, ``learn_many``, ``fit`` (a batch solve polished into an exact state),
``leave_one_out``, ``window``, ``c_path``, ``decision_function``/``predict`` and ``certificate``
(:func:`qpcore.kkt` on :meth:`IncrementalSVM.qp`, from the problem alone). What it shares with the
ν-SVC and the one-class model (:mod:`qpcore_incremental.incremental_oneclass`) is
:class:`IncrementalModel`. The state it keeps
and the exact steps on it (the margin, error and reserve sets, the margin factor, the adiabatic
increment and decrement) are :class:`qpcore_incremental.incremental_path.PathEngine`, and the paths in C
and ν :class:`qpcore_incremental.incremental_regpath.RegularizationPath`, which it extends.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any, Self

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore_incremental.incremental_path import ERROR, MARGIN, RESERVE
from qpcore_incremental.incremental_regpath import Breakpoint, NuNotReached, RegularizationPath

FloatArray = NDArray[np.float64]

__all__ = ["Breakpoint", "IncrementalModel", "IncrementalNuSVC", "IncrementalSVM", "LOOResult", "WindowReport",
           "check_kernel"]


@attrs.frozen
class LOOResult:
    """Exact leave-one-out results.

    Attributes
    ----------
    errors : int
        Number of LOO errors.
    n : int
        Number of points.
    ids : ndarray
        Point ids (the model's order).
    error : ndarray of bool
        Whether each point is a LOO error.
    decision : ndarray
        The LOO decision value f₋ᵢ(xᵢ) where computed; NaN where the decrement stopped early at a
        certain error (yᵢ f₋ᵢ(xᵢ) < 0 already).
    seconds : float
        Wall time.
    """

    errors: int
    n: int
    ids: NDArray[np.int64]
    error: NDArray[np.bool_]
    decision: FloatArray
    seconds: float

    @property
    def error_rate(self) -> float:
        """errors / n."""
        return self.errors / self.n if self.n else 0.0


@attrs.frozen
class WindowReport:
    """What :meth:`IncrementalSVM.window` did.

    Attributes
    ----------
    learned, unlearned : int
        Points added and removed.
    online_errors : int
        Points misclassified by the model *before* they were learned (the first is not counted).
    seconds : float
        Wall time.
    """

    learned: int
    unlearned: int
    online_errors: int
    seconds: float

    @property
    def throughput(self) -> float:
        """Points processed (learned) per second."""
        return self.learned / self.seconds if self.seconds > 0 else float("inf")


def check_kernel(kernel: Any) -> None:
    """A ProblemError unless ``kernel`` is a :class:`qpcore.Kernel` (the models' first check)."""
    if not isinstance(kernel, Kernel):
        raise ProblemError("kernel: pass a qpcore.Kernel")


def check_window(size: int) -> None:
    """A ProblemError unless the window length ``size`` is at least 1."""
    if size < 1:
        raise ProblemError("size: must be ≥ 1")


class IncrementalModel(RegularizationPath):
    """What the incremental models share: :class:`IncrementalSVM` (and so :class:`IncrementalNuSVC`)
    and :class:`qpcore_incremental.incremental_oneclass.IncrementalOneClass`.

    The drift control's count (a refresh every ``refresh_every`` learn/unlearn calls), a point as
    the operator's one-row matrix, the sliding window's loop, the support vectors, the kernel
    expansion Σ α_j s_j K(x_j, x) and the leave-one-out result. The models give ``learn``,
    ``unlearn``, ``window`` and the decision function on top.

    Parameters
    ----------
    kernel : Kernel
        The kernel (checked by the model first, :func:`check_kernel`).
    C : float
        The box bound the model starts at.
    tol, refresh_every, capacity, cache_bytes
        As :class:`IncrementalSVM`.
    """

    def __init__(self, kernel: Kernel, C: float, *, tol: float, refresh_every: int, capacity: int,
                 cache_bytes: int) -> None:
        self.refresh_every = int(refresh_every)
        super().__init__(kernel, C, capacity=capacity, cache_bytes=cache_bytes, tol=tol)

    def unlearn(self, pid: int) -> None:
        """Remove point ``pid`` exactly (each model says how)."""
        raise NotImplementedError

    def _tick(self) -> None:
        self._since_refresh += 1
        if self.refresh_every > 0 and self._since_refresh >= self.refresh_every:
            self.refresh()

    @staticmethod
    def _row(x: Any) -> Any:
        """One point as the one-row matrix the operator takes (a row of a scipy.sparse *array* is 1-D)."""
        xs: Any = x
        if sp.issparse(xs):
            return sp.csr_matrix(xs.reshape(1, -1) if xs.ndim == 1 else xs)
        return np.atleast_2d(np.asarray(xs, dtype=np.float64))

    @staticmethod
    def _dense_row(x: Any) -> Any:
        """One point of a stream as a dense one-row array (for the prediction before learning it)."""
        return np.atleast_2d(np.asarray(x.toarray() if sp.issparse(x) else x))

    def _slide(self, X_stream: Any, size: int, step: Callable[[int, Any], tuple[int, bool]],
               callback: Callable[[Self, int], None] | None) -> WindowReport:
        """The sliding window's loop: ``step(k, x)`` learns the k-th point of the stream and says
        whether the model before it got the point wrong; the oldest points beyond ``size`` are
        unlearned (points already held count, oldest first by id)."""
        live: deque[int] = deque(sorted(self._slot_of))
        t0 = time.perf_counter()
        wrong = unl = 0
        n = int(X_stream.shape[0])
        for k in range(n):
            pid, miss = step(k, X_stream[k])
            wrong += int(miss)
            live.append(pid)
            while len(live) > size:
                self.unlearn(live.popleft())
                unl += 1
            if callback is not None:
                callback(self, k)
        return WindowReport(learned=n, unlearned=unl, online_errors=wrong, seconds=time.perf_counter() - t0)

    @property
    def support_(self) -> NDArray[np.int64]:
        """Ids of the support vectors (α > 0)."""
        sl = self._op.slots()
        return self._id[sl[self._alpha[sl] > 0]].copy()

    @staticmethod
    def _as_rows(X: Any) -> Any:
        """X as the operator takes it: sparse as given, else a 2-D float array."""
        return X if sp.issparse(X) else np.atleast_2d(np.asarray(X, dtype=np.float64))

    def _expansion(self, X: Any, block: int) -> FloatArray:
        """Σ α_j s_j K(x_j, x) over the support vectors, for the rows of X (from :meth:`_as_rows`),
        ``block`` rows at a time (s_j = 1 for the one-class model)."""
        sl = self._op.slots()
        sv = sl[self._alpha[sl] > 0]
        coef = self._alpha[sv] * self._op.s_buffer[sv]
        nrow = int(X.shape[0])
        out = np.empty(nrow)
        for s0 in range(0, nrow, block):
            out[s0:s0 + block] = self._op.kernel_with(X[s0:s0 + block], sv) @ coef if sv.size else 0.0
        return out

    def _loo_result(self, sl: NDArray[np.intp], err: NDArray[np.bool_], dec: FloatArray, t0: float) -> LOOResult:
        """The leave-one-out result over the points in slots ``sl`` (timed from ``t0``)."""
        return LOOResult(errors=int(err.sum()), n=int(sl.size), ids=self._id[sl].copy(), error=err,
                         decision=dec, seconds=time.perf_counter() - t0)


class IncrementalSVM(IncrementalModel):
    """A C-SVC kept exactly solved under additions and removals (Cauwenberghs–Poggio).

    Parameters
    ----------
    kernel : Kernel
        The kernel (linear, RBF, polynomial, sigmoid).
    C : float
        Default box bound (a point may carry its own ``C_i``).
    tol : float
        What :meth:`certificate` must meet (the maximal-violating-pair gap); also the scale of the
        internal event tolerances' sanity checks.
    classes : array_like, optional
        The two label values [negative, positive]. Default: ±1 labels as given, or the two
        values seen in the first array passed to ``learn_many``/``fit`` (the larger is positive).
    refresh_every : int
        Recompute g from scratch, refactor the margin factor and re-solve α_M and b every this
        many learn/unlearn calls (drift control).
    capacity : int
        Initial number of point slots.
    cache_bytes : int
        Row-cache budget of the kernel operator.

    Attributes
    ----------
    stats : dict
        ``learned``, ``unlearned``, ``steps`` (path segments), ``refreshes``, ``dependences``,
        ``repairs``.
    """
    def __init__(self, kernel: Kernel, C: float = 1.0, *, tol: float = 1e-9, classes: ArrayLike | None = None,
                 refresh_every: int = 500, capacity: int = 64, cache_bytes: int = 128 << 20) -> None:
        check_kernel(kernel)
        if not (np.isfinite(C) and C > 0):
            raise ProblemError(f"C: must be finite and > 0, got {C!r}")
        self.classes: NDArray[Any] | None = None if classes is None else np.asarray(classes)
        if self.classes is not None and self.classes.shape != (2,):
            raise ProblemError("classes: pass the two label values [negative, positive]")
        super().__init__(kernel, C, tol=tol, refresh_every=refresh_every, capacity=capacity, cache_bytes=cache_bytes)

    def _encode(self, y: ArrayLike) -> FloatArray:
        arr = np.atleast_1d(np.asarray(y))
        if self.classes is None:
            vals = np.unique(arr)
            if np.issubdtype(arr.dtype, np.number) and set(vals.astype(float).tolist()) <= {-1.0, 1.0}:
                self.classes = np.array([-1, 1], dtype=arr.dtype)
            elif vals.size == 2:
                self.classes = vals
            else:
                raise ProblemError("y: cannot tell the two classes from these labels; pass classes=[neg, pos]")
        neg, pos = self.classes
        is_pos, is_neg = arr == pos, arr == neg
        if not (is_pos | is_neg).all():
            raise ProblemError(f"y: labels must be one of {self.classes.tolist()}")
        return np.where(is_pos, 1.0, -1.0)

    # -- public: learning --------------------------------------------------------------------------
    def learn(self, x: ArrayLike, y: Any, C_i: float | None = None) -> int:
        """Add one example and re-solve exactly (the adiabatic increment).

        Parameters
        ----------
        x : array_like
            The point (a row of features).
        y : label
            Its label (one of :attr:`classes`).
        C_i : float, optional
            Its box bound; default :attr:`C`.

        Returns
        -------
        int
            The point's id (stable for the model's life; see :attr:`ids`).
        """
        ypm = float(self._encode(np.atleast_1d(np.asarray(y)))[0])
        Ci = self.C if C_i is None else float(C_i)
        if not (np.isfinite(Ci) and Ci > 0):
            raise ProblemError(f"C_i: must be finite and > 0, got {C_i!r}")
        pid = self._add_point(self._row(x), ypm, Ci)
        self.stats["learned"] += 1
        self._tick()
        self._ensure("learn")
        return pid

    def unlearn(self, pid: int) -> None:
        """Remove example ``pid`` exactly (decrement α to 0, then drop the point)."""
        slot = self._slot(pid)
        self._remove_point(slot)
        self.stats["unlearned"] += 1
        self._tick()
        self._ensure("unlearn")

    def learn_many(self, X: Any, y: ArrayLike, C_i: ArrayLike | None = None) -> NDArray[np.int64]:
        """Learn the rows of X one at a time (a batch trainer from the current model).

        Returns
        -------
        ndarray
            The ids.
        """
        yy = np.asarray(y)
        self._encode(yy)        # fix the classes from the whole array
        n = int(X.shape[0])
        Cs = np.full(n, self.C) if C_i is None else np.broadcast_to(np.asarray(C_i, dtype=np.float64), (n,))
        ids = np.empty(n, dtype=np.int64)
        for k in range(n):
            ids[k] = self.learn(X[k], yy[k], None if C_i is None else float(Cs[k]))
        return ids

    def fit(self, X: Any, y: ArrayLike, C_i: ArrayLike | None = None, *, method: str = "batch",
            batch_tol: float = 1e-3) -> IncrementalSVM:
        """Train from scratch on (X, y), replacing the model.

        Parameters
        ----------
        method : {"batch", "incremental"}
            ``"incremental"``: :meth:`learn_many`. ``"batch"`` (faster for large n): solve with
            SMO to ``batch_tol``, then polish into an exact state: M = the free α, factored, α_M
            and b re-solved from the KKT system of M given E at C and R at 0, margin vectors the
            re-solve puts out of bounds moved to that bound, and every E or R point whose g has
            the wrong sign repaired exactly (decremented to 0 and learned again).
        batch_tol : float
            Tolerance of the batch solve, relative to the gradient's scale max(1, max Q_ii · max C_i).
            The polish makes any near-optimal point exact (a point SMO left on the wrong side is
            repaired by its exact decrement and increment), so a loose batch solve costs a few
            repairs where a tight one costs SMO's slow tail. The batch solve is capped in
            iterations; should its point be too rough for the polish, the points are learned one
            by one instead.

        Returns
        -------
        self
        """
        self._reset()
        yy = np.asarray(y)
        ypm = self._encode(yy)
        n = int(X.shape[0])
        if method == "incremental":
            self.learn_many(X, yy, C_i)
            return self
        if method != "batch":
            raise ProblemError(f"method: 'batch' or 'incremental', got {method!r}")
        Cs = np.full(n, self.C) if C_i is None else np.broadcast_to(np.asarray(C_i, dtype=np.float64), (n,)).copy()
        if not (np.isfinite(Cs).all() and (Cs > 0).all()):
            raise ProblemError("C_i: must be finite and > 0")
        slots = self._append_many(X, ypm, Cs, 1.0)
        if (ypm > 0).all() or (ypm < 0).all():
            self._b = float(ypm[0])
            self.refresh()
            return self
        self._batch(slots, batch_tol)
        self.stats["learned"] += n
        if self._violation() > self._guard_tol():
            # the polish could not make that point exact: learn the points one by one instead,
            # which is exact by construction and bounded
            self.stats["learned"] -= n
            self._reset()
            self.learn_many(X, yy, Cs)
        self._ensure("fit")
        return self

    # -- leave-one-out -----------------------------------------------------------------------------
    def leave_one_out(self) -> LOOResult:
        """The exact leave-one-out error (Cauwenberghs–Poggio decremental unlearning).

        Reserve points (α = 0) are LOO-correct without work. For each margin and error vector c,
        α_c is decremented adiabatically to 0 — stopping early once g_c < −1, a certain error, since
        g_c only decreases on the way — and f₋c(x_c) = y_c (g_c + 1) read off at α_c = 0.

        The decrements run through the inverse of the solved state's margin KKT matrix, bordered
        by the few columns each path changes (:class:`qpcore_incremental.incremental_loo.LOODecrements`):
        a path segment costs O(n) in the number of columns, not O(|M|·n), and the margin factor
        is never written, so the state is *restored from a snapshot* (α, b, g, sets: a few O(n)
        copies) bit for bit, with no drift over n decrements. Degenerate vertices and points
        dependent on M take the general step from the restored state.

        Returns
        -------
        LOOResult
        """
        t0 = time.perf_counter()
        sl = self._op.slots()
        y = self._op.s_buffer[sl]
        gv = self._loo_values(-1.0)
        stopped = np.isneginf(gv)
        dec = np.where(stopped, np.nan, y * (gv + 1.0))
        err = stopped | ((dec > 0.0) != (y > 0))
        return self._loo_result(sl, err, dec, t0)

    # -- sliding window ----------------------------------------------------------------------------
    def window(self, X_stream: Any, y_stream: ArrayLike, size: int,
               callback: Callable[[IncrementalSVM, int], None] | None = None) -> WindowReport:
        """Run a sliding window over a stream: learn the newest point, unlearn the oldest beyond ``size``.

        Points already in the model count towards the window (oldest first by id).

        Parameters
        ----------
        X_stream, y_stream : the stream's points and labels.
        size : int
            Window length (≥ 1).
        callback : callable, optional
            Called as ``callback(model, k)`` after the k-th point was processed.

        Returns
        -------
        WindowReport
        """
        check_window(size)
        yy = np.asarray(y_stream)
        self._encode(yy)

        def step(k: int, x: Any) -> tuple[int, bool]:
            # a point counts as wrong when the model before it (once there is one) mislabels it
            miss = bool(self._nq or (self._alpha > 0).any()) and bool(self.predict(self._dense_row(x))[0] != yy[k])
            return self.learn(x, yy[k]), miss

        return self._slide(X_stream, size, step, callback)

    # -- regularization path -----------------------------------------------------------------------
    def c_path(self, C1: float) -> list[Breakpoint]:
        """Move C exactly from its current value to ``C1`` (up or down), scaling every C_i with it.

        α_E = C_i·(C/C₀) moves with C, the margin α and b through M's factor, and the path breaks
        where a set changes. Leaves the model solved at ``C1`` (:attr:`C` becomes ``C1``).

        Returns
        -------
        list of Breakpoint
            The break points in order, then an ``"end"`` entry at ``C1``.
        """
        C1 = float(C1)
        if not (np.isfinite(C1) and C1 > 0):
            raise ProblemError(f"C1: must be finite and > 0, got {C1!r}")
        return self._c_path(C1)

    def current_nu(self) -> float:
        """ν(C) = eᵀα/(C l): the ν of the ν-SVC this C-SVC solution solves (Chang and Lin 2001)."""
        return self._nu_now()

    def nu_path(self, nu: float) -> list[Breakpoint]:
        """Walk the C path exactly until ν(C) = eᵀα/(C l) equals ``nu``.

        On a segment of the path α is affine in C, so the C where ν(C) meets ``nu`` is found
        exactly there (C = (S₀ − C₀·dS)/(ν l − dS), dS = d(eᵀα)/dC). ν(C) does not increase
        with C, so the walk goes up when ν(C) > ``nu`` and down otherwise. The model is then the
        ν-SVC solution for ``nu`` scaled by C (LIBSVM's α = α/C, r = 1/C).

        Returns
        -------
        list of Breakpoint
            As :meth:`c_path`; the last entry is at the C found (:attr:`C`).

        Raises
        ------
        ProblemError
            ``nu`` outside (0, 1], or infeasible for the class balance (ν l / 2 > min(l₊, l₋),
            LIBSVM's "specified nu is infeasible"), or below every ν(C) (the path reaches no C);
            the model is then restored as it was.
        """
        nu = float(nu)
        if not (0.0 < nu <= 1.0):
            raise ProblemError(f"nu: must be in (0, 1], got {nu!r}")
        y = self.y
        npos, nneg = int((y > 0).sum()), int((y < 0).sum())
        if nu * y.size / 2.0 > min(npos, nneg):
            raise ProblemError(f"nu: specified nu is infeasible ({nu} · {y.size} / 2 > min({npos}, {nneg}))")
        out: list[Breakpoint] = []
        snap = self._save()
        try:
            for _ in range(4):
                now = self._nu_now()
                if abs(now - nu) <= 1e-12 * nu:
                    break
                far = self.C * 1e10 if now > nu else self.C * 1e-10
                try:
                    out += self._c_path(far, nu)
                    break
                except NuNotReached:
                    # the walk ended at its far end, or lost digits of ν(C) = eᵀα/(C l) on the way
                    # from a very large C: walk on from where it stopped
                    pass
            else:
                raise ProblemError(f"nu: {nu} is out of reach of ν(C) for these points (below every ν(C): "
                                   f"the C path went to C = {self.C:.3g}, ν = {self._nu_now():.6g})")
        except BaseException:
            self._restore(snap)                # the model as it was
            raise
        finally:
            self._qm_written = None
        return out

    # -- reading the model -------------------------------------------------------------------------
    @property
    def y(self) -> FloatArray:
        """The ±1 labels (the order of :attr:`ids`)."""
        return self._op.s_buffer[self._op.slots()].copy()

    @property
    def margin_function(self) -> FloatArray:
        """g = Qα + yb − 1 as maintained (the order of :attr:`ids`)."""
        return self._g[self._op.slots()].copy()

    def _set_ids(self, code: int) -> NDArray[np.int64]:
        sl = self._op.slots()
        out: NDArray[np.int64] = self._id[sl[self._status[sl] == code]].copy()
        return out

    @property
    def margin_(self) -> NDArray[np.int64]:
        """Ids of the margin vectors (0 ≤ α ≤ C, g = 0)."""
        return self._set_ids(MARGIN)

    @property
    def error_(self) -> NDArray[np.int64]:
        """Ids of the error vectors (α = C, g ≤ 0)."""
        return self._set_ids(ERROR)

    @property
    def reserve_(self) -> NDArray[np.int64]:
        """Ids of the reserve points (α = 0, g ≥ 0)."""
        return self._set_ids(RESERVE)

    def decision_function(self, X: Any, block: int = 4096) -> FloatArray:
        """f(x) = Σ α_j y_j K(x_j, x) + b for the rows of X."""
        return self._expansion(self._as_rows(X), block) + self._b

    def predict(self, X: Any) -> NDArray[Any]:
        """Labels in the user's classes (positive where f > 0)."""
        if self.classes is None:
            raise ProblemError("the model has seen no labels yet")
        out: NDArray[Any] = np.where(self.decision_function(X) > 0, self.classes[1], self.classes[0])
        return out


class IncrementalNuSVC(IncrementalSVM):
    """A ν-SVC kept exactly solved under additions and removals: the C-SVC with ν(C) held at ν.

    The C-SVC solution at C solves the ν-SVC for ν(C) = eᵀα(C)/(C l) (Chang and Lin 2001), so
    after each learn or unlearn (exact at the current C) the C path moves C exactly to where ν(C)
    equals :attr:`nu` again (:meth:`IncrementalSVM.nu_path`). In LIBSVM's scaling the model is
    α_libsvm = α/C ∈ [0, 1] with Σα_libsvm = ν l, r = 1/C, rho = −b/C; its decision function
    Σ α_j y_j K(x_j, x) + b is scikit-learn's ``NuSVC`` one (``dual_coef_`` = α y, ``intercept_`` = b).

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    nu : float
        ν in (0, 1].
    tol, classes, refresh_every, capacity, cache_bytes
        As :class:`IncrementalSVM`.
    C0 : float
        The C the first points are learned at, before ν can be met.

    Attributes
    ----------
    nu_reached : bool
        Whether the state is the ν-SVC's: false while ν is infeasible for the points held (one
        class only, or ν l / 2 > min(l₊, l₋)) or below every ν(C) (overlapping classes: the
        ν-SVC's w is 0 and r = 0); the state is then the C-SVC's at :attr:`C`.
    """

    def __init__(self, kernel: Kernel, nu: float = 0.5, *, tol: float = 1e-9, classes: ArrayLike | None = None,
                 C0: float = 1.0, refresh_every: int = 500, capacity: int = 64,
                 cache_bytes: int = 128 << 20) -> None:
        if not (np.isfinite(nu) and 0.0 < nu <= 1.0):
            raise ProblemError(f"nu: must be in (0, 1], got {nu!r}")
        super().__init__(kernel, C0, tol=tol, classes=classes, refresh_every=refresh_every, capacity=capacity,
                         cache_bytes=cache_bytes)
        self.nu = float(nu)
        self.nu_reached = False

    def feasible(self) -> bool:
        """Whether ν is feasible for the points held: ν l / 2 ≤ min(l₊, l₋)."""
        y = self.y
        return bool(y.size) and self.nu * y.size / 2.0 <= min(int((y > 0).sum()), int((y < 0).sum()))

    def _sync_nu(self) -> None:
        self.nu_reached = self.feasible()
        if not self.nu_reached:
            return
        try:
            super().nu_path(self.nu)
        except ProblemError:
            # ν below every ν(C) of these points: the ν-SVC's solution has w = 0 (r = 0) and no C
            # counterpart; the C-SVC state the path started from stays until more points arrive
            self.nu_reached = False

    def learn(self, x: ArrayLike, y: Any, C_i: float | None = None) -> int:
        """Add one example, re-solve exactly at the current C, then restore ν(C) = ν by the C path."""
        if C_i is not None and float(C_i) != self.C:
            raise ProblemError("C_i: a ν-SVC has no per-point C")
        pid = super().learn(x, y)
        self._sync_nu()
        return pid

    def unlearn(self, pid: int) -> None:
        """Remove example ``pid`` exactly, then restore ν(C) = ν by the C path."""
        super().unlearn(pid)
        self._sync_nu()

    def fit(self, X: Any, y: ArrayLike, C_i: ArrayLike | None = None, *, method: str = "batch",
            batch_tol: float = 1e-3) -> IncrementalNuSVC:
        """Train from scratch: the C-SVC at the current C (see :meth:`IncrementalSVM.fit`), then the
        C path to ν(C) = ν. Raises ``ProblemError`` when ν is infeasible for the class balance."""
        if C_i is not None:
            raise ProblemError("C_i: a ν-SVC has no per-point C")
        yy = np.asarray(y)
        if method == "incremental":
            self._reset()
            self._encode(yy)
            for k in range(int(X.shape[0])):
                IncrementalSVM.learn(self, X[k], yy[k])
        else:
            super().fit(X, yy, method=method, batch_tol=batch_tol)
        if not self.feasible():
            ypm = self.y
            raise ProblemError(f"nu: specified nu is infeasible ({self.nu} · {ypm.size} / 2 > "
                               f"min({int((ypm > 0).sum())}, {int((ypm < 0).sum())}))")
        self._sync_nu()
        if not self.nu_reached:
            raise ProblemError(f"nu: {self.nu} is below every ν(C) of these points: the ν-SVC's solution "
                               "has w = 0 (overlapping classes); choose a larger nu")
        return self

    def nu_path(self, nu: float) -> list[Breakpoint]:
        """Change ν exactly (the C path to ν(C) = ``nu``); :attr:`nu` becomes ``nu``."""
        out = super().nu_path(nu)
        self.nu = float(nu)
        self.nu_reached = True
        return out

    def c_path(self, C1: float) -> list[Breakpoint]:
        """Not for a ν-SVC, whose C follows ν: use :meth:`nu_path`."""
        raise ProblemError("c_path: a ν-SVC's C follows ν; use nu_path(nu)")

    def leave_one_out(self) -> LOOResult:
        """The exact leave-one-out error of the ν-SVC at :attr:`nu`.

        For each point, α_c is decremented to 0 and the C path restores ν(C) = ν over the other
        l − 1 points (the batch ν-SVC without the point); f₋c(x_c) is read off and the state
        restored from a snapshot. Points without which ν is infeasible get NaN (not an error).
        """
        t0 = time.perf_counter()
        sl = self._op.slots()
        y = self._op.s_buffer[sl]
        gv = self._loo_values(-1.0, nu=self.nu, every=True)
        dec = y * (gv + 1.0)
        err = ~np.isnan(dec) & ((dec > 0.0) != (y > 0))
        return self._loo_result(sl, err, dec, t0)

    @property
    def dual_coef_(self) -> FloatArray:
        """α_i y_i (the order of :attr:`ids`): scikit-learn's ``NuSVC.dual_coef_`` over all points."""
        return self.alpha * self.y

    @property
    def intercept_(self) -> float:
        """b: scikit-learn's ``NuSVC.intercept_``."""
        return self._b

    @property
    def libsvm_alpha(self) -> FloatArray:
        """LIBSVM's ν-SVC α = α/C, in [0, 1] with Σ = ν l."""
        return self.alpha / self.C

    @property
    def r(self) -> float:
        """LIBSVM's r = 1/C (the margin's scale)."""
        return 1.0 / self.C

    @property
    def rho(self) -> float:
        """LIBSVM's rho = −b/C (before its rescaling by r)."""
        return -self._b / self.C
