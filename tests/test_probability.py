"""qpcore_train.probability: Platt's sigmoid against a general minimizer, pairwise coupling against a
direct solve of its linear system, LIBSVM's fold special cases, MulticlassSVM.predict_proba and
the model file's sigmoids."""

from __future__ import annotations

import warnings
from pathlib import Path

import attrs
import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

from qpcore_train.multiclass import train_multiclass
from qpcore_train.probability import (MIN_PROB, calibrate, calibrate_rows, couple, fit_sigmoid, proba_from_raw,
                                  sigmoid_proba)
from qpcore.backends.operators import Kernel
from qpcore.core.problem import ProblemError
from qpcore_cli.model import ModelFileError, load_model, save_model
from qpcore_strategies.smo import SMO


def _targets(y: np.ndarray) -> np.ndarray:
    n_pos = int((y > 0).sum())
    n_neg = y.size - n_pos
    return np.where(y > 0, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))


def _reference_sigmoid(dec: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The same smoothed log-likelihood minimized by BFGS with its exact gradient."""
    t = _targets(y)

    def f(ab: np.ndarray) -> tuple[float, np.ndarray]:
        z = ab[0] * dec + ab[1]
        p = 1.0 / (1.0 + np.exp(np.clip(z, -700, 700)))
        return float(np.sum(t * z + np.logaddexp(0.0, -z))), np.array([dec @ (t - p), np.sum(t - p)])

    res = scipy.optimize.minimize(f, np.zeros(2), jac=True, method="BFGS", options={"gtol": 1e-10})
    return np.asarray(res.x)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(5, 300), sep=st.floats(0.0, 3.0), frac=st.floats(0.1, 0.9), seed=st.integers(0, 2**31))
def test_fit_sigmoid_minimizes_the_smoothed_likelihood(n: int, sep: float, frac: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < frac, 1, -1)
    dec = sep * y + rng.normal(size=n)
    A, B = fit_sigmoid(dec, y)
    ref = _reference_sigmoid(dec, y)
    np.testing.assert_allclose([A, B], ref, atol=1e-4 * (1 + np.abs(ref).max()))
    assert A <= 0.0 or sep < 0.5          # larger values mean +1 once the classes separate at all


def test_fit_sigmoid_separable_and_one_class() -> None:
    # separable values: Platt's targets keep the fit finite, and it still matches the minimizer
    dec = np.r_[np.linspace(1, 3, 20), np.linspace(-3, -1, 30)]
    y = np.r_[np.ones(20), -np.ones(30)]
    A, B = fit_sigmoid(dec, y)
    assert np.isfinite([A, B]).all() and A < 0
    np.testing.assert_allclose([A, B], _reference_sigmoid(dec, y), atol=1e-3)
    # one class only: B meets the prior, P(+1) = (N+ + 1)/(N+ + 2) at the values' constant 0
    A1, B1 = fit_sigmoid(np.zeros(8), np.ones(8))
    assert sigmoid_proba(0.0, A1, B1) == pytest.approx(9 / 10, abs=1e-4)
    with pytest.raises(ProblemError):
        fit_sigmoid([1.0, 2.0], [1])
    with pytest.raises(ProblemError):
        fit_sigmoid([np.nan], [1])


def test_sigmoid_proba_is_stable() -> None:
    f = np.array([-1e308, -800.0, -1.0, 0.0, 1.0, 800.0, 1e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = sigmoid_proba(f, -2.0, 0.0)
    assert np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()
    np.testing.assert_allclose(p[[0, 1]], 0.0, atol=1e-300)
    np.testing.assert_allclose(p[[5, 6]], 1.0)
    np.testing.assert_allclose(p + sigmoid_proba(-f, -2.0, 0.0), 1.0)   # symmetric
    assert p[4] == pytest.approx(1 / (1 + np.exp(-2.0)))


def _direct_couple(r: np.ndarray) -> np.ndarray:
    """The coupling's optimum from its KKT system [Q e; eᵀ 0][p; b] = [0; 1]."""
    k = r.shape[0]
    Q = -r.T * r
    np.fill_diagonal(Q, 0.0)
    off = r - np.diag(np.diag(r))
    np.fill_diagonal(Q, (off ** 2).sum(axis=0))
    M = np.zeros((k + 1, k + 1))
    M[:k, :k], M[:k, k], M[k, :k] = Q, 1.0, 1.0
    return np.linalg.solve(M, np.r_[np.zeros(k), 1.0])[:k]


def _pairwise(rng: np.random.Generator, n: int, k: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    p = rng.dirichlet(np.ones(k), size=n)
    r = p[:, :, None] / (p[:, :, None] + p[:, None, :])
    iu = np.triu_indices(k, 1)
    noisy = r[:, iu[0], iu[1]]
    if noise > 0:
        noisy = np.clip(noisy + noise * rng.normal(size=noisy.shape), 0.02, 0.98)
    r[:, iu[0], iu[1]] = noisy
    r[:, iu[1], iu[0]] = 1.0 - noisy
    return p, r


@pytest.mark.parametrize("k", [2, 3, 5, 10])
def test_couple_solves_its_linear_system(k: int) -> None:
    rng = np.random.default_rng(k)
    _, r = _pairwise(rng, 60, k, noise=0.15)
    p = couple(r)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    direct = np.array([_direct_couple(r[s]) for s in range(r.shape[0])])
    assert np.abs(p - direct).max() < 5e-3         # LIBSVM's stopping rule, 0.005/k on the optimality gap
    tight = couple(r, eps=1e-12, max_iter=10_000)
    np.testing.assert_allclose(tight, direct, atol=1e-8)


def test_couple_recovers_consistent_probabilities() -> None:
    rng = np.random.default_rng(3)
    p, r = _pairwise(rng, 40, 6, noise=0.0)
    np.testing.assert_allclose(couple(r, eps=1e-12, max_iter=10_000), p, atol=1e-8)
    with pytest.raises(ProblemError):
        couple(np.ones((3, 2, 3)))


def test_proba_from_raw_clips_and_couples() -> None:
    pairs = np.array([[0, 1]])
    out = proba_from_raw(np.array([[1e6], [-1e6], [0.0]]), [-1.0], [0.0], pairs, 2)
    np.testing.assert_allclose(out[:, 0], [1 - MIN_PROB, MIN_PROB, 0.5])
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    pairs3 = np.array([[0, 1], [0, 2], [1, 2]])
    raw = np.random.default_rng(0).normal(size=(7, 3))
    P = proba_from_raw(raw, -np.ones(3), np.zeros(3), pairs3, 3)
    assert P.shape == (7, 3) and np.allclose(P.sum(axis=1), 1.0)
    with pytest.raises(ProblemError):
        proba_from_raw(raw, -np.ones(3), np.zeros(3), np.array([[0, -1], [1, -1], [2, -1]]), 3)


def test_calibrate_rows_folds_and_special_cases() -> None:
    # class 0 has one row: every fold that holds it out trains on class 1 only and gets −1 (LIBSVM);
    # decide is only asked when both classes are in the training part, and never sees a test row
    y = np.r_[0, np.ones(9, dtype=int), 2 * np.ones(6, dtype=int)]
    calls: list[tuple[int, int]] = []

    def decide(i: int, j: int, train: np.ndarray, test: np.ndarray) -> np.ndarray:
        assert set(np.unique(y[train])) == {i, j}
        assert np.intersect1d(train, test).size == 0
        assert set(np.unique(y[test])) <= {i, j}
        calls.append((i, j))
        return np.where(y[test] == i, 1.0, -1.0)

    pairs = np.array([[0, 1], [0, 2], [1, 2]])
    a, b = calibrate_rows(y, pairs, decide, folds=5, seed=1)
    assert calls.count((0, 1)) == 4 and calls.count((0, 2)) == 4 and calls.count((1, 2)) == 5
    assert (a < 0).all() and np.isfinite(b).all()
    a2, b2 = calibrate_rows(y, pairs, decide, folds=5, seed=1)
    np.testing.assert_array_equal(a, a2)               # seeded
    np.testing.assert_array_equal(b, b2)
    with pytest.raises(ProblemError):
        calibrate_rows(y, pairs, decide, folds=1)


def _blobs(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    centers = 2.0 * rng.normal(size=(k, 2))
    return centers[y] + rng.normal(size=(n, 2)), y.astype(np.intp)


@pytest.mark.parametrize("k", [2, 3])
def test_calibrate_and_predict_proba_end_to_end(k: int, tmp_path: Path) -> None:
    X, y = _blobs(150, k)
    classes = np.arange(k) * 10
    kernel = Kernel("rbf", gamma=0.5)

    def fit_fn(Xs: np.ndarray, ys: np.ndarray) -> object:
        u, y01 = np.unique(ys, return_inverse=True)
        return train_multiclass(Xs, y01.astype(np.intp), classes[u], np.ones(ys.size), kernel, SMO(), tol=1e-9).model

    model = train_multiclass(X, y, classes, np.ones(y.size), kernel, SMO()).model
    with pytest.raises(ProblemError):
        model.predict_proba(X)
    a, b = calibrate(X, y, classes, fit_fn, seed=0)   # type: ignore[arg-type]
    assert a.shape == b.shape == (k * (k - 1) // 2,)
    model = attrs.evolve(model, prob_a=a, prob_b=b)
    P = model.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert np.mean(P.argmax(axis=1) == y) > 0.8
    # the precomputed path gives the same sigmoids from the Gram matrix
    G = kernel.block(X, X)
    pre = Kernel("precomputed")

    def fit_pre(Gs: np.ndarray, ys: np.ndarray) -> object:
        u, y01 = np.unique(ys, return_inverse=True)
        return train_multiclass(Gs, y01.astype(np.intp), classes[u], np.ones(ys.size), pre, SMO(), tol=1e-9).model

    ap, bp = calibrate(G, y, classes, fit_pre, seed=0, precomputed=True)   # type: ignore[arg-type]
    np.testing.assert_allclose(ap, a, rtol=1e-5)
    np.testing.assert_allclose(bp, b, rtol=1e-5, atol=1e-6)
    # the model file keeps the sigmoids; files without them still load, without probabilities
    save_model(tmp_path / "m", model)
    back = load_model(tmp_path / "m")
    np.testing.assert_array_equal(back.prob_a, a)        # type: ignore[union-attr]
    np.testing.assert_allclose(back.predict_proba(X), P)  # type: ignore[union-attr]
    save_model(tmp_path / "plain", attrs.evolve(model, prob_a=None, prob_b=None))
    assert load_model(tmp_path / "plain").prob_a is None  # type: ignore[union-attr]
    with np.load(tmp_path / "m") as f:
        arrays = {name: f[name] for name in f.files}
    del arrays["prob_b"]
    np.savez(tmp_path / "half.npz", **arrays)
    with pytest.raises(ModelFileError, match="prob_a"):
        load_model(tmp_path / "half.npz")
