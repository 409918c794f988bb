"""The one-class SVM kept exactly solved under additions and removals (Laskov et al. 2006, section 2).

:class:`IncrementalOneClass` is the abstract form's one-class instance (Q = K, a = 1, Σα = 1) on
the path engine (:class:`qpcore_incremental.incremental_path.PathEngine`) and its regularization path
(:class:`qpcore_incremental.incremental_regpath.RegularizationPath`): Schölkopf's one-class SVM or Tax and
Duin's SVDD, in ν mode (C = 1/(νl) kept as points come and go, equal to LIBSVM's one-class) or
with a fixed C. The classifiers (:class:`qpcore_incremental.incremental.IncrementalSVM`,
:class:`qpcore_incremental.incremental.IncrementalNuSVC`) sit on the same engine, and what the models
share (the refresh count, the window's loop, the kernel expansion, the leave-one-out result) is
:class:`qpcore_incremental.incremental.IncrementalModel`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore_incremental.incremental import IncrementalModel, LOOResult, WindowReport, check_kernel, check_window
from qpcore_incremental.incremental_path import RESERVE
from qpcore_incremental.incremental_regpath import Breakpoint

FloatArray = NDArray[np.float64]

__all__ = ["IncrementalOneClass"]


class IncrementalOneClass(IncrementalModel):
    """A one-class SVM kept exactly solved under additions and removals (Laskov et al. 2006, section 2).

    The abstract form with Q = K, a = 1 and Σα = 1 (β = 1), 0 ≤ α ≤ C, and the linear term
    c = 0 (``form="ocsvm"``: Schölkopf's one-class SVM, LIBSVM's ``-s 2``) or c = ½ diag K
    (``form="svdd"``: Tax and Duin's data description, the SVDD dual max Σα_i K_ii − αᵀKα halved;
    the same as the one-class SVM for a kernel with a constant diagonal, such as the RBF). With
    C = 1/(ν l) the state is LIBSVM's one-class solution scaled by 1/(ν l): α_libsvm = α/C and
    rho = −b/C, b the equality's multiplier; the decision function (Σ α_j K(x_j, x) − c(x) + b)/C
    is positive inside.

    ``nu`` mode (pass ``nu``): C = 1/(ν l) is kept as points come and go (by the exact C path
    after each learn and before each unlearn), so that the state equals scikit-learn's
    ``OneClassSVM(nu=nu)`` on the same points. ``C`` mode (pass ``C``): C is fixed; with fewer
    than ⌈1/C⌉ points no feasible state exists, so the first points are buffered (:attr:`ready`
    false, no model) and solved in one batch once l·C ≥ 1.

    Parameters
    ----------
    kernel : Kernel
        The kernel.
    nu : float, optional
        ν in (0, 1] (``nu`` mode).
    C : float, optional
        The box bound (``C`` mode); exactly one of ``nu`` and ``C``.
    form : {"ocsvm", "svdd"}
        The linear term (see above).
    tol, refresh_every, capacity, cache_bytes
        As :class:`IncrementalSVM`.
    """

    def __init__(self, kernel: Kernel, nu: float | None = None, C: float | None = None, *, form: str = "ocsvm",
                 tol: float = 1e-9, refresh_every: int = 500, capacity: int = 64,
                 cache_bytes: int = 128 << 20) -> None:
        check_kernel(kernel)
        if (nu is None) == (C is None):
            raise ProblemError("pass exactly one of nu and C")
        if nu is not None and not (np.isfinite(nu) and 0.0 < nu <= 1.0):
            raise ProblemError(f"nu: must be in (0, 1], got {nu!r}")
        if C is not None and not (np.isfinite(C) and C > 0):
            raise ProblemError(f"C: must be finite and > 0, got {C!r}")
        if form not in ("ocsvm", "svdd"):
            raise ProblemError(f"form: 'ocsvm' or 'svdd', got {form!r}")
        self.nu: float | None = None if nu is None else float(nu)
        self.form = form
        super().__init__(kernel, 1.0 if C is None else float(C), tol=tol, refresh_every=refresh_every,
                         capacity=capacity, cache_bytes=cache_bytes)

    def _reset(self) -> None:
        super()._reset()
        self._beq = 1.0
        self.ready = False

    @property
    def _lin_value(self) -> float:
        return float("nan") if self.form == "svdd" else 0.0

    def _C_for(self, l: int) -> float:
        assert self.nu is not None
        return 1.0 / (self.nu * l)

    def _start(self) -> None:
        """Solve the buffered points in one batch (SMO, then the polish into an exact state)."""
        sl = self._op.slots()
        if self.nu is not None:
            self.C = self._C_for(int(sl.size))
        self._Cv[sl] = self.C
        self._alpha[sl] = 0.0
        self._status[sl] = RESERVE
        x0 = np.full(sl.size, 1.0 / sl.size)          # feasible: Σ = 1, each 1/l ≤ C
        self._batch(sl, 1e-10, x0)
        self.ready = True

    # -- public: learning --------------------------------------------------------------------------
    def learn(self, x: ArrayLike) -> int:
        """Add one point and re-solve exactly; returns its id.

        ``nu`` mode: the point is learned at the current C (the adiabatic increment), then the
        C path takes C to 1/(ν l) for the new l. ``C`` mode: learned at C, or buffered while
        l·C < 1 (then solved in one batch when l·C reaches 1).
        """
        row = self._row(x)
        if not self.ready:
            pid = self._add_point(row, 1.0, self.C, self._lin_value, 1.0, learn=False)
            if self.nu is not None or self.n * self.C >= 1.0 - 1e-12:
                self._start()
                self._ensure("learn")
            self.stats["learned"] += 1
            return pid
        pid = self._add_point(row, 1.0, self.C, self._lin_value, 1.0)
        self.stats["learned"] += 1
        if self.nu is not None:
            self._c_path(self._C_for(self.n), check=False)    # checked once, below
        self._tick()
        self._ensure("learn")
        return pid

    def learn_many(self, X: Any) -> NDArray[np.int64]:
        """Learn the rows of X one at a time; returns their ids."""
        n = int(X.shape[0])
        ids = np.empty(n, dtype=np.int64)
        for k in range(n):
            ids[k] = self.learn(X[k])
        return ids

    def unlearn(self, pid: int) -> None:
        """Remove point ``pid`` exactly (``nu`` mode: the C path first takes C to 1/(ν(l − 1)), which
        leaves the others room for its share; then α is decremented to 0 and the point dropped).

        Raises
        ------
        ProblemError
            ``C`` mode, when the points left could not hold Σα = 1 ((l − 1)·C < 1).
        """
        slot = self._slot(pid)
        left = self.n - 1
        if not self.ready or left == 0:
            self._drop(slot)
            if left == 0:
                self._reset()
            return
        if self.nu is None and left * self.C < 1.0 - 1e-12:
            raise ProblemError(f"unlearn: {left} points at C = {self.C} cannot hold Σα = 1 (need l·C ≥ 1)")
        if self.nu is not None:
            self._c_path(self._C_for(left))
        self._remove_point(slot)
        self.stats["unlearned"] += 1
        self._tick()
        self._ensure("unlearn")

    def _drop(self, slot: int) -> None:
        self._alpha[slot] = 0.0
        self._status[slot] = RESERVE
        self._remove_point(slot)

    def fit(self, X: Any, *, method: str = "batch") -> IncrementalOneClass:
        """Train from scratch on the rows of X (``"batch"``: SMO then the polish; ``"incremental"``:
        :meth:`learn_many`). ``C`` mode raises ``ProblemError`` when l·C < 1."""
        self._reset()
        n = int(X.shape[0])
        if n == 0:
            raise ProblemError("X: no points")
        if self.nu is None and n * self.C < 1.0 - 1e-12:
            raise ProblemError(f"X: {n} points at C = {self.C} cannot hold Σα = 1 (need l·C ≥ 1)")
        if method == "incremental":
            self.learn_many(X)
            return self
        if method != "batch":
            raise ProblemError(f"method: 'batch' or 'incremental', got {method!r}")
        if not sp.issparse(X):
            X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        self._append_many(X, np.ones(n), np.full(n, self.C), self._lin_value, np.ones(n))
        self._start()
        self.stats["learned"] += n
        self._ensure("fit")
        return self

    # -- leave-one-out, window, paths ----------------------------------------------------------------
    def leave_one_out(self) -> LOOResult:
        """The exact leave-one-out outliers: a point is an error when the model without it (``nu``
        mode: at C = 1/(ν(l − 1))) puts it outside (decision ≤ 0, LIBSVM's −1).

        ``C`` mode: reserve points (α = 0, inside) keep the model and cost nothing; for the others
        α_c is decremented adiabatically to 0, stopping early once its g < 0 (certainly outside,
        as g only falls on the way). ``nu`` mode: every point, after the C path to 1/(ν(l − 1)).
        The state is restored from a snapshot after each point.
        """
        self._need_model()
        t0 = time.perf_counter()
        sl = self._op.slots()
        l = int(sl.size)
        if self.nu is not None:
            gv = self._loo_values(0.0, every=True, C_after=self._C_for(l - 1) if l > 1 else None)
            scale = self._C_for(l - 1) if l > 1 else self.C
        else:
            gv = self._loo_values(0.0)
            scale = self.C
        dec = np.where(np.isneginf(gv), np.nan, gv / scale)
        err = np.isneginf(gv) | (gv <= 0.0)
        return self._loo_result(sl, err, dec, t0)

    def window(self, X_stream: Any, size: int,
               callback: Callable[[IncrementalOneClass, int], None] | None = None) -> WindowReport:
        """A sliding window over a stream: learn the newest point, unlearn the oldest beyond ``size``.

        ``online_errors`` counts the points the model (once ready) called outliers before
        learning them.
        """
        check_window(size)

        def step(k: int, x: Any) -> tuple[int, bool]:
            out = self.ready and bool(self.predict(self._dense_row(x))[0] < 0)
            return self.learn(x), out

        return self._slide(X_stream, size, step, callback)

    def c_path(self, C1: float) -> list[Breakpoint]:
        """Move C exactly to ``C1`` (``C`` mode; l·C1 ≥ 1). In ``nu`` mode use :meth:`nu_path`."""
        self._need_model()
        if self.nu is not None:
            raise ProblemError("c_path: in nu mode C follows ν; use nu_path(nu)")
        C1 = float(C1)
        if not (np.isfinite(C1) and C1 > 0 and self.n * C1 >= 1.0 - 1e-12):
            raise ProblemError(f"C1: must be finite with l·C1 ≥ 1, got {C1!r} for l = {self.n}")
        return self._c_path(C1)

    def nu_path(self, nu: float) -> list[Breakpoint]:
        """Move ν exactly (the C path to C = 1/(ν l)); the model enters (or stays in) ``nu`` mode."""
        self._need_model()
        nu = float(nu)
        if not (0.0 < nu <= 1.0):
            raise ProblemError(f"nu: must be in (0, 1], got {nu!r}")
        out = self._c_path(1.0 / (nu * self.n))
        self.nu = nu
        return out

    # -- reading the model -------------------------------------------------------------------------
    def _need_model(self) -> None:
        if not self.ready:
            raise ProblemError(f"no model yet: {self.n} points at C = {self.C} cannot hold Σα = 1 (need l·C ≥ 1)")

    @property
    def libsvm_alpha(self) -> FloatArray:
        """LIBSVM's one-class α = α/C (in [0, 1], Σ = ν l when C = 1/(ν l))."""
        return self.alpha / self.C

    @property
    def rho(self) -> float:
        """LIBSVM's rho = −b/C (``form="ocsvm"``; scikit-learn's ``offset_``)."""
        return -self._b / self.C

    def _self_term(self, X: Any) -> FloatArray:
        if self.form == "ocsvm":
            return np.zeros(int(X.shape[0]))
        out: FloatArray = 0.5 * np.asarray(self.kernel.self_values(X), dtype=np.float64)
        return out

    def score_samples(self, X: Any, block: int = 4096) -> FloatArray:
        """(Σ α_j K(x_j, x) − c(x))/C: scikit-learn's ``score_samples`` (``form="ocsvm"``)."""
        self._need_model()
        X = self._as_rows(X)
        res: FloatArray = (self._expansion(X, block) - self._self_term(X)) / self.C
        return res

    def decision_function(self, X: Any) -> FloatArray:
        """(Σ α_j K(x_j, x) − c(x) + b)/C: positive inside (scikit-learn's ``decision_function``)."""
        out: FloatArray = self.score_samples(X) + self._b / self.C
        return out

    def predict(self, X: Any) -> NDArray[np.int64]:
        """+1 (inlier) where the decision function is positive, else −1 (LIBSVM's rule)."""
        out: NDArray[np.int64] = np.where(self.decision_function(X) > 0, 1, -1).astype(np.int64)
        return out
