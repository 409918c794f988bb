"""The SVM family on one abstract form: ν-SVC, one-class, ε-SVR, ν-SVR and Tax–Duin's SVDD.

Laskov et al. (2006, JMLR 7, section 2) write the SVMs they treat as one problem,

    min over 0 ≤ x ≤ C of ½xᵀKx − cᵀx   subject to aᵀx + b = 0,

and get each SVM by choosing (K, c, a, b, C): the standard classifier is K = yyᵀ∘k, c = e, a = y,
b = 0; Tax and Duin's data description is K = k, c = ½ diag k, a = e, b = −1 (SVDD's dual
max Σα_i k_ii − αᵀkα, halved). :func:`abstract_form` builds that QP from any operator, and the
builders below are its instances, with LIBSVM's formulations as Chang and Lin define them
(LIBSVM's paper, section 2; svm.cpp for rho, r and the scaling):

- :func:`one_class`: Schölkopf's one-class SVM, K = k, c = 0, a = e, b = −νl, C = 1;
- :func:`epsilon_svr`: 2l variables [α; α*] over l kernel rows (:class:`qpcore.backends.doubled.DoubledKernelQ`,
  LIBSVM's SVR_Q), c = [y − ε; −y − ε], a = [e; −e], b = 0;
- :func:`nu_svc` and :func:`nu_svr`: the ν formulations have a second row, so they are two
  disjoint groups (LIBSVM's Solver_NU): Σ_{y=+1} α = Σ_{y=−1} α = νl/2 (box 1) for ν-SVC,
  Σα = Σα* = Cνl/2 (box C) for ν-SVR, with c = 0 and c = [y; −y].

Every builder checks its input before any work and returns a :class:`FamilyProblem`: the QP, the
start LIBSVM would take, and :meth:`FamilyProblem.decode`, which reads rho (and r for ν-SVC,
whose decision LIBSVM divides by r) from the certified multipliers and returns a
:class:`qpcore_formulations.svm.SVMModel` that predicts as its kind does. The standard classifier stays in
:func:`qpcore_formulations.svm.csvc`; :func:`standard` is it, on this form.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from qpcore_formulations.svm import SVMModel, check_C, check_X, two_class_labels
from qpcore.backends.capabilities import QOperator
from qpcore.backends.doubled import DoubledKernelQ
from qpcore.backends.operators import Kernel, KernelQ
from qpcore.core.problem import QP, ProblemError
from qpcore.core.state import Result

__all__ = ["FamilyProblem", "abstract_form", "check_nu", "epsilon_svr", "nu_svc", "nu_svr", "one_class",
           "standard", "svdd"]

FloatArray = NDArray[np.float64]


def abstract_form(Q: QOperator, c: ArrayLike, a: ArrayLike, b: float, C: float | ArrayLike) -> QP:
    """The QP of Laskov et al.'s abstract SVM: min ½xᵀQx − cᵀx, 0 ≤ x ≤ C, aᵀx + b = 0.

    Parameters
    ----------
    Q : QOperator
        The n×n Hessian (K in the paper).
    c : array_like
        The linear term, as the paper writes it (the QP's is −c).
    a : array_like
        The equality row.
    b : float
        Its constant: aᵀx = −b.
    C : float or array_like
        The box, > 0 (one value or one per variable).

    Returns
    -------
    QP

    Raises
    ------
    ProblemError
        Shapes, non-finite values, C ≤ 0, or an equality the box cannot meet.
    """
    n = int(Q.shape[0])
    cv = np.asarray(c, dtype=np.float64)
    av = np.asarray(a, dtype=np.float64)
    if cv.shape != (n,) or av.shape != (n,):
        raise ProblemError(f"c and a: expected ({n},) each, got {cv.shape} and {av.shape}")
    if not (np.isfinite(cv).all() and np.isfinite(av).all() and np.isfinite(b)):
        raise ProblemError("c, a, b: must be finite")
    return QP(Q, -cv, np.zeros(n), check_C(C, n), av[None, :], np.array([-float(b)]))


def check_nu(nu: Any) -> float:
    """ν as LIBSVM takes it: a number in (0, 1], else a ProblemError."""
    try:
        v = float(nu)
    except (TypeError, ValueError):
        raise ProblemError(f"nu: must be a number in (0, 1], got {nu!r}") from None
    if not (np.isfinite(v) and 0.0 < v <= 1.0):
        raise ProblemError(f"nu: must be in (0, 1], got {nu!r}")
    return v


def _check_points(X: Any, what: str) -> Any:
    X = check_X(X)
    if X.shape[0] < 2:
        raise ProblemError(f"X: {what} needs at least two training rows, got {X.shape[0]}")
    return X


def _targets(y: ArrayLike, n: int) -> FloatArray:
    arr = np.asarray(y)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ProblemError(f"y: shape mismatch, expected ({n},) targets for {n} rows, got {arr.shape}")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
                                   or arr.dtype == bool):
        raise ProblemError(f"y: regression targets must be real numbers, got dtype {arr.dtype}")
    out = np.asarray(arr, dtype=np.float64)
    if not np.isfinite(out).all():
        raise ProblemError("y: regression targets contain NaN or inf")
    return out


def _weights(weight: ArrayLike | None, n: int) -> FloatArray:
    """Per-point weights (ones when None): finite, ≥ 0, one per row."""
    if weight is None:
        return np.ones(n)
    w = np.asarray(weight, dtype=np.float64)
    if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any():
        raise ProblemError(f"weight: expected ({n},) finite values ≥ 0, got shape {w.shape}")
    if not (w > 0).any():
        raise ProblemError("weight: every weight is 0")
    return w


def _default_kernel(X: Any, kernel: Kernel | None) -> Kernel:
    return Kernel("rbf", gamma=1.0 / max(1, X.shape[1])) if kernel is None else kernel


def _greedy(total: float, ub: FloatArray) -> FloatArray:
    """LIBSVM's start for a sum constraint: fill the variables in order up to their bounds."""
    csum = np.cumsum(ub)
    before = csum - ub
    return np.clip(total - before, 0.0, ub)


@attrs.frozen(eq=False)
class FamilyProblem:
    """An SVM of the family as a QP, with LIBSVM's start and the decoder of its solution.

    Attributes
    ----------
    kind : str
        ``"c-svc"``, ``"nu-svc"``, ``"one-class"``, ``"epsilon-svr"``, ``"nu-svr"`` or ``"svdd"``.
    qp : QP
        The dual.
    X : ndarray or csr_matrix
        The training points (the Gram matrix for a precomputed kernel).
    kernel : Kernel
    y : ndarray or None
        ±1 labels (classifiers), targets (regressions), None (novelty detectors).
    classes : ndarray
        The two label values [negative, positive] (classifiers), [−1, 1] (novelty detectors),
        empty (regressions).
    x0 : ndarray
        The feasible start LIBSVM takes (greedy fill of each sum; zeros for ε-SVR).
    params : dict
        ν, ε, C as given.
    """

    kind: str
    qp: QP
    X: Any
    kernel: Kernel
    y: FloatArray | None
    classes: NDArray[Any]
    x0: FloatArray
    params: dict[str, float]

    @property
    def l(self) -> int:  # noqa: E743 -- LIBSVM's name for the number of training points
        """Number of training points (half the variables of a regression)."""
        return int(self.X.shape[0])

    def decode(self, result: Result, sv_tol: float = 0.0) -> SVMModel:
        """The model of a solved dual, rho (and r) from the result's equality multipliers.

        With the QP's multipliers λ (free variables have g_i = a_i λ): rho = λ for one row;
        for two groups, r₁ = λ₁ and r₂ = λ₂ are LIBSVM's r1 and r2, rho = (r₁ − r₂)/2 and
        r = (r₁ + r₂)/2 (ν-SVC divides coefficients and rho by r; ν-SVR's ε is −r).

        Parameters
        ----------
        result : Result
            A solve of :attr:`qp`.
        sv_tol : float
            Coefficients of at most this size are not support vectors.

        Returns
        -------
        SVMModel

        A ν-SVC whose r is 0 up to rounding (the classes' reduced convex hulls meet: no margin)
        keeps its coefficients unscaled, where LIBSVM's division would make them infinite; its
        ``r`` says so.
        """
        x = np.asarray(result.x, dtype=np.float64)
        lam = np.asarray(result.multipliers, dtype=np.float64)
        l = self.l
        r: float | None = None
        self_coef = 0.0
        if self.kind in ("c-svc", "nu-svc"):
            assert self.y is not None
            coef = x * self.y
            if self.kind == "nu-svc":
                r = 0.5 * float(lam[0] + lam[1])
                rho = 0.5 * float(lam[0] - lam[1])
                scale = max(1.0, float(np.abs(lam).max(initial=0.0)))
                if r > 1e-12 * scale:
                    coef, rho = coef / r, rho / r
                # else the margin is 0 up to rounding (the classes' reduced hulls meet at this ν):
                # LIBSVM's division would blow the coefficients up; the model stays unscaled,
                # the same decisions' signs, and says so with its r
            else:
                rho = float(lam[0])
        elif self.kind == "one-class":
            coef, rho = x, float(lam[0])
        elif self.kind == "svdd":
            coef, rho, self_coef = x, float(lam[0]), -0.5
        else:
            coef = x[:l] - x[l:]
            rho = float(lam[0]) if self.kind == "epsilon-svr" else 0.5 * float(lam[0] - lam[1])
            if self.kind == "nu-svr":
                r = 0.5 * float(lam[0] + lam[1])
        support = np.flatnonzero(np.abs(coef) > sv_tol)
        sv = self.X[support]
        w = None
        if self.kernel.name == "linear":
            w = np.asarray(sv.T @ coef[support], dtype=np.float64).ravel()
        return SVMModel(support=support, sv=sv, dual_coef=coef[support], bias=-rho, kernel=self.kernel,
                        classes=self.classes, w=w, kind=self.kind, r=r, self_coef=self_coef)


def _stored(X: Any, Q: Any, kernel: Kernel) -> Any:
    """The points the model keeps: the operator's (densified) copy, or the Gram matrix as given."""
    return X if kernel.name == "precomputed" else Q.X


def standard(X: Any, y: ArrayLike, C: float | ArrayLike = 1.0, kernel: Kernel | None = None,
             **kw: Any) -> FamilyProblem:
    """The C-SVC as the abstract form's standard instance: K = yyᵀ∘k, c = e, a = y, b = 0.

    The same QP as :func:`qpcore_formulations.svm.csvc` (which the estimators use); here it shares
    :class:`FamilyProblem` with the other instances. ``kw`` goes to the ``KernelQ``.
    """
    X = _check_points(X, "the C-SVC")
    n = int(X.shape[0])
    ypm, classes = two_class_labels(y, n)
    kernel = _default_kernel(X, kernel)
    Q = KernelQ(X, kernel, scale=ypm, **kw)
    qp = abstract_form(Q, np.ones(n), ypm, 0.0, C)
    return FamilyProblem(kind="c-svc", qp=qp, X=_stored(X, Q, kernel), kernel=kernel, y=ypm, classes=classes,
                         x0=np.zeros(n), params={})


def svdd(X: Any, C: float | ArrayLike = 1.0, kernel: Kernel | None = None, **kw: Any) -> FamilyProblem:
    """Tax and Duin's support vector data description on the abstract form.

    K = k, c = ½ diag k, a = e, b = −1, 0 ≤ α ≤ C: the smallest ball around the points in feature
    space with slack weight C (C ≥ 1/l for a feasible Σα = 1). Its model scores
    f(x) = Σ α_i k(x_i, x) − ½k(x, x) − λ, half of R² − ‖φ(x) − a‖², positive inside. For an RBF
    kernel (k(x, x) = 1) it is Schölkopf's one-class SVM with ν = 1/(Cl), α scaled by νl.

    Raises
    ------
    ProblemError
        Bad data, C ≤ 0, or C·l < 1 (no feasible Σα = 1).
    """
    X = _check_points(X, "SVDD")
    n = int(X.shape[0])
    kernel = _default_kernel(X, kernel)
    Q = KernelQ(X, kernel, **kw)
    Cv = check_C(C, n)
    if Cv.sum() < 1.0 - 1e-12:
        raise ProblemError(f"C: SVDD needs Σ C_i ≥ 1 for Σα = 1, got {Cv.sum():.6g} (C·l < 1)")
    qp = abstract_form(Q, 0.5 * Q.diag(), np.ones(n), -1.0, Cv)
    return FamilyProblem(kind="svdd", qp=qp, X=_stored(X, Q, kernel), kernel=kernel, y=None,
                         classes=np.array([-1, 1]), x0=_greedy(1.0, Cv), params={})


def one_class(X: Any, nu: float = 0.5, kernel: Kernel | None = None, *, weight: ArrayLike | None = None,
              **kw: Any) -> FamilyProblem:
    """Schölkopf's one-class SVM as LIBSVM solves it (``svm-train -s 2``).

    min ½αᵀKα, 0 ≤ α ≤ 1, eᵀα = νl; decision f(x) = Σ α_i k(x_i, x) − rho, +1 (inlier) where
    f(x) > 0. LIBSVM's start: the first ⌊νl⌋ points at 1, the next at the remainder.

    Parameters
    ----------
    X : ndarray or csr_matrix
        The points (for a precomputed kernel: the Gram matrix).
    nu : float
        In (0, 1]: an upper bound on the fraction of outliers, a lower bound on that of support
        vectors.
    kernel : Kernel, optional
        Default RBF with γ = 1/features.
    weight : array_like, optional
        Instance weights as scikit-learn's LIBSVM takes them: point i's box is w_i and the sum
        ν·Σw (weight 0 leaves a point out).
    **kw
        Passed to the ``KernelQ`` (``cache_bytes``, ``dtype``, ``compute_dtype``).

    Returns
    -------
    FamilyProblem

    Raises
    ------
    ProblemError
        Bad data or weights, fewer than two rows, ν outside (0, 1].
    """
    nu = check_nu(nu)
    X = _check_points(X, "the one-class SVM")
    n = int(X.shape[0])
    w = _weights(weight, n)
    kernel = _default_kernel(X, kernel)
    Q = KernelQ(X, kernel, **kw)
    total = nu * float(w.sum())
    qp = QP(Q, np.zeros(n), np.zeros(n), w, np.ones((1, n)), np.array([total]))
    return FamilyProblem(kind="one-class", qp=qp, X=_stored(X, Q, kernel), kernel=kernel, y=None,
                         classes=np.array([-1, 1]), x0=_greedy(total, w), params={"nu": nu})


def nu_svc(X: Any, y: ArrayLike, nu: float = 0.5, kernel: Kernel | None = None, *, weight: ArrayLike | None = None,
           **kw: Any) -> FamilyProblem:
    """The ν-SVC of Schölkopf et al. (2000) as LIBSVM solves it (``svm-train -s 1``).

    min ½αᵀ(yyᵀ∘K)α, 0 ≤ α ≤ 1, Σ_{y=+1} α = Σ_{y=−1} α = νl/2: two disjoint groups (LIBSVM's
    Solver_NU). The decoded model is LIBSVM's: coefficients and rho divided by r, so the margin
    is ±1 and the model equals the C-SVC's at C = 1/r.

    Parameters
    ----------
    X : ndarray or csr_matrix
        Training points (precomputed kernel: the Gram matrix).
    y : array_like
        Two distinct label values.
    nu : float
        In (0, 1], and at most 2·min(n₊, n₋)/l (LIBSVM's "specified nu is infeasible").
    kernel : Kernel, optional
        Default RBF with γ = 1/features.
    weight : array_like, optional
        Instance weights as scikit-learn's LIBSVM takes them: point i's box is w_i and each
        group's sum ν·Σw/2 (then ν is feasible while ν·Σw/2 ≤ each class's total weight).
    **kw
        Passed to the ``KernelQ``.

    Returns
    -------
    FamilyProblem

    Raises
    ------
    ProblemError
        Bad data or labels, ν outside (0, 1], an infeasible ν for the class balance.
    """
    nu = check_nu(nu)
    X = _check_points(X, "the ν-SVC")
    n = int(X.shape[0])
    ypm, classes = two_class_labels(y, n)
    w = _weights(weight, n)
    w_pos, w_neg = float(w[ypm > 0].sum()), float(w[ypm < 0].sum())
    half = nu * (w_pos + w_neg) / 2.0
    if half > min(w_pos, w_neg) * (1.0 + 1e-12):
        what = "rows" if weight is None else "total weight"
        raise ProblemError(f"nu: specified nu is infeasible: ν·l/2 = {half:.6g} exceeds the smaller class "
                           f"({min(w_pos, w_neg):.6g} {what} of {w_pos + w_neg:.6g}); take ν ≤ "
                           f"{2.0 * min(w_pos, w_neg) / (w_pos + w_neg):.6g}")
    kernel = _default_kernel(X, kernel)
    Q = KernelQ(X, kernel, scale=ypm, **kw)
    A = np.vstack([(ypm > 0), (ypm < 0)]).astype(np.float64)
    qp = QP(Q, np.zeros(n), np.zeros(n), w, A, np.array([half, half]))
    x0 = np.zeros(n)
    for grp in (ypm > 0, ypm < 0):
        idx = np.flatnonzero(grp)
        x0[idx] = _greedy(half, w[idx])
    return FamilyProblem(kind="nu-svc", qp=qp, X=_stored(X, Q, kernel), kernel=kernel, y=ypm, classes=classes,
                         x0=x0, params={"nu": nu})


def epsilon_svr(X: Any, y: ArrayLike, C: float | ArrayLike = 1.0, epsilon: float = 0.1,
                kernel: Kernel | None = None, **kw: Any) -> FamilyProblem:
    """ε-support vector regression as LIBSVM solves it (``svm-train -s 3``).

    2l variables [α; α*] over the l kernel rows (:class:`qpcore.backends.doubled.DoubledKernelQ`, which
    serves each signed, doubled row from one cached kernel row): min ½xᵀQx + (ε − y)ᵀα +
    (ε + y)ᵀα*, 0 ≤ x ≤ C, Σα − Σα* = 0. The model predicts Σ (α_i − α*_i) k(x_i, x) − rho.

    Parameters
    ----------
    X : ndarray or csr_matrix
        Training points (precomputed kernel: the Gram matrix).
    y : array_like
        Real targets.
    C : float or array_like
        Box, > 0 (one per point: sample weights times C).
    epsilon : float
        Width of the insensitive tube, ≥ 0.
    kernel : Kernel, optional
        Default RBF with γ = 1/features.
    **kw
        Passed to the operator (``cache_bytes``, ``dtype``, ``compute_dtype``).

    Returns
    -------
    FamilyProblem

    Raises
    ------
    ProblemError
        Bad data, non-finite targets, C ≤ 0, ε < 0.
    """
    X = _check_points(X, "ε-SVR")
    n = int(X.shape[0])
    yt = _targets(y, n)
    eps = float(epsilon)
    if not (np.isfinite(eps) and eps >= 0.0):
        raise ProblemError(f"epsilon: must be finite and ≥ 0, got {epsilon!r}")
    Cv = check_C(C, n)
    kernel = _default_kernel(X, kernel)
    Q = DoubledKernelQ(X, kernel, **kw)
    qp = abstract_form(Q, np.concatenate([yt - eps, -yt - eps]), np.concatenate([np.ones(n), -np.ones(n)]),
                       0.0, np.concatenate([Cv, Cv]))
    return FamilyProblem(kind="epsilon-svr", qp=qp, X=_stored(X, Q.base, kernel), kernel=kernel, y=yt,
                         classes=np.zeros(0), x0=np.zeros(2 * n), params={"epsilon": eps})


def nu_svr(X: Any, y: ArrayLike, C: float = 1.0, nu: float = 0.5, kernel: Kernel | None = None, *,
           weight: ArrayLike | None = None, **kw: Any) -> FamilyProblem:
    """ν-support vector regression (Schölkopf et al. 2000) as LIBSVM solves it (``svm-train -s 4``).

    The ε-SVR operator with c = [−y; y] and two groups: Σα = Σα* = Cνl/2, 0 ≤ x ≤ C. The tube
    width comes out of the solution (the model's ``r`` is −ε).

    Parameters
    ----------
    X : ndarray or csr_matrix
        Training points (precomputed kernel: the Gram matrix).
    y : array_like
        Real targets.
    C : float
        Box, > 0.
    nu : float
        In (0, 1].
    kernel : Kernel, optional
        Default RBF with γ = 1/features.
    weight : array_like, optional
        Instance weights as scikit-learn's LIBSVM takes them: point i's boxes are C·w_i and the
        sums Cν·Σw/2.
    **kw
        Passed to the operator.

    Returns
    -------
    FamilyProblem

    Raises
    ------
    ProblemError
        Bad data, non-finite targets, C ≤ 0 or not one number, ν outside (0, 1].
    """
    nu = check_nu(nu)
    X = _check_points(X, "ν-SVR")
    n = int(X.shape[0])
    yt = _targets(y, n)
    if np.ndim(C):
        raise ProblemError("C: ν-SVR takes one C (its sums are Cνl/2)")
    Cs = float(check_C(C, 1)[0])
    w = _weights(weight, n)
    kernel = _default_kernel(X, kernel)
    Q = DoubledKernelQ(X, kernel, **kw)
    A = np.zeros((2, 2 * n))
    A[0, :n] = 1.0
    A[1, n:] = 1.0
    half = Cs * nu * float(w.sum()) / 2.0
    ub = Cs * w
    qp = QP(Q, np.concatenate([-yt, yt]), np.zeros(2 * n), np.concatenate([ub, ub]), A, np.array([half, half]))
    start = _greedy(half, ub)
    return FamilyProblem(kind="nu-svr", qp=qp, X=_stored(X, Q.base, kernel), kernel=kernel, y=yt,
                         classes=np.zeros(0), x0=np.concatenate([start, start]), params={"nu": nu, "C": Cs})

