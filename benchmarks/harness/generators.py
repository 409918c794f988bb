"""Seeded data generators for the cutting-plane benchmark (issue 13, ``benchmarks/ocas.py``).

Both are generated chunk by chunk (``CHUNK`` rows at a time, chunk k drawn from
``np.random.default_rng([seed, k])``), so memory stays bounded by the output plus one chunk, and
**a smaller data set is a prefix of a larger one with the same seed and parameters**
(``tall_dense(10**5)`` equals the first 10⁵ rows of ``tall_dense(2 * 10**6)``): the benchmark's
subsets and crossover rows are prefixes.

- :func:`tall_dense`: two Gaussian classes with a shared (correlated) covariance, means ±μ at the
  Mahalanobis separation of a Bayes error ``bayes_error`` (default 10 %), then ``flip`` (10 %) of
  the labels flipped: about 18 % of the points are on the wrong side of the best hyperplane, so
  the hinge optimum has many margin violators. Float64, C-contiguous, 8·m·d bytes
  (2,000,000 × 32: 512 MB).
- :func:`sparse_text`: a bag-of-words matrix: each row draws Poisson(λ) tokens from a Zipf–Mandelbrot
  distribution over ``n_features`` ids (id = frequency rank), λ set so that a row has
  ``nnz_per_row`` *distinct* features on average after repeated tokens are merged; the value of a
  feature is tf-idf-like, (1 + log tf) · idf, with idf = −log(document frequency) (the expected one
  of the generator, not of the sample, so prefixes agree), rows L2-normalized. Labels: the sign of
  a sparse ground-truth linear model (``support`` features of rank ≥ ``skip_top``, N(0, 1)
  weights; the most frequent ids carry no signal, like stop words) with ``flip`` of the labels
  flipped. CSR float64 with int32 indices, ~12 bytes a non-zero (1,000,000 × 50,000 with 50 a row:
  ~600 MB). Fully vectorized: no Python loop over rows.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

CHUNK = 65536          # rows generated at a time (fixed: it defines the data, see the module docstring)
_MODEL_STREAM = 2**31 - 1   # the rng stream of the fixed parts (covariance, mean, ground-truth model)

FloatArray = NDArray[np.float64]


# ---------------------------------------------------------------------------------------------
# Tall dense: two overlapping Gaussian classes
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DenseSpec:
    """Parameters of :func:`tall_dense` (all of them define the data)."""

    rows: int = 2_000_000
    features: int = 32
    bayes_error: float = 0.10     # error of the Bayes rule before the flips
    flip: float = 0.10            # fraction of labels flipped afterwards
    seed: int = 13

    def key(self) -> str:
        return (f"dense m={self.rows} d={self.features} bayes={self.bayes_error:g} flip={self.flip:g} "
                f"seed={self.seed}")


def _dense_model(spec: DenseSpec) -> tuple[FloatArray, FloatArray]:
    """(L, μ): the covariance factor (Σ = L Lᵀ, unit variances) and the class mean offset."""
    from scipy.special import ndtri

    d = spec.features
    rng = np.random.default_rng([spec.seed, _MODEL_STREAM])
    A = np.eye(d) + rng.standard_normal((d, d)) / math.sqrt(d)       # correlated features
    L = A / np.sqrt((A * A).sum(axis=1))[:, None]                    # rows of unit norm: Var x_j = 1
    # μ along a random direction u, scaled so that the Mahalanobis half-distance ‖L⁻¹μ‖ = Φ⁻¹(1 − err):
    # the Bayes rule for ±μ with shared Σ then errs with probability Φ(−‖L⁻¹μ‖) = err
    u = rng.standard_normal(d)
    z = np.linalg.solve(L, u)
    mu = u * (float(ndtri(1.0 - spec.bayes_error)) / float(np.linalg.norm(z)))
    return L, mu


def tall_dense(rows: int = 2_000_000, features: int = 32, *, bayes_error: float = 0.10, flip: float = 0.10,
               seed: int = 13) -> tuple[FloatArray, FloatArray]:
    """Two Gaussian classes with shared covariance and flipped labels: (X, y), X float64 (rows, features)
    C-contiguous, y ±1.0.

    Chunk k of ``CHUNK`` rows comes from ``default_rng([seed, k])``: z ~ N(0, I), the class c = ±1 with
    probability ½, x = L z + c μ, then the label is c flipped with probability ``flip``.
    Memory: the output plus one chunk.
    """
    spec = DenseSpec(rows, features, bayes_error, flip, seed)
    if rows < 1 or features < 1:
        raise ValueError("rows and features must be positive")
    L, mu = _dense_model(spec)
    X = np.empty((rows, features), dtype=np.float64)
    y = np.empty(rows, dtype=np.float64)
    for k, lo in enumerate(range(0, rows, CHUNK)):
        hi = min(rows, lo + CHUNK)
        rng = np.random.default_rng([seed, k])
        z = rng.standard_normal((CHUNK, features))          # always a full chunk: prefixes agree
        c = np.where(rng.random(CHUNK) < 0.5, -1.0, 1.0)
        flipped = rng.random(CHUNK) < flip
        n = hi - lo
        np.matmul(z[:n], L.T, out=X[lo:hi])
        X[lo:hi] += c[:n, None] * mu
        y[lo:hi] = np.where(flipped[:n], -c[:n], c[:n])
    return X, y


# ---------------------------------------------------------------------------------------------
# Sparse text-like
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TextSpec:
    """Parameters of :func:`sparse_text` (all of them define the data)."""

    rows: int = 1_000_000
    features: int = 50_000
    nnz_per_row: float = 50.0     # mean distinct features a row (after repeated tokens are merged)
    zipf_s: float = 1.0           # Zipf–Mandelbrot exponent: p_r ∝ (r + zipf_q)^(−s), r = 1..features
    zipf_q: float = 2.7
    support: int = 2500           # non-zeros of the ground-truth model
    skip_top: int = 100           # the most frequent ids (stop words) carry no weight
    flip: float = 0.05
    seed: int = 13

    def key(self) -> str:
        return (f"text m={self.rows} d={self.features} nnz/row={self.nnz_per_row:g} zipf=({self.zipf_s:g},"
                f"{self.zipf_q:g}) support={self.support} skip_top={self.skip_top} flip={self.flip:g} seed={self.seed}")


@dataclass(frozen=True)
class TextModel:
    """The fixed parts of a text generator: token distribution, λ, idf, ground-truth weights."""

    cdf: FloatArray       # cumulative token probabilities (by id)
    lam: float            # Poisson mean of the tokens a row
    idf: FloatArray       # −log(expected document frequency) by id
    w: FloatArray         # ground-truth weights (dense, mostly zero)


def zipf_pmf(features: int, s: float = 1.0, q: float = 2.7) -> FloatArray:
    """Zipf–Mandelbrot probabilities p_r ∝ (r + q)^(−s) of ranks r = 1..features (id r − 1)."""
    p = (np.arange(1, features + 1, dtype=np.float64) + q) ** (-s)
    return np.asarray(p / p.sum(), dtype=np.float64)


def _tokens_for(pmf: FloatArray, distinct: float) -> float:
    """λ such that a row of Poisson(λ) tokens has ``distinct`` distinct ids on average:
    E[# distinct] = Σ_r (1 − exp(−λ p_r)) (Poisson thinning), increasing in λ; bisection."""
    if distinct >= pmf.size:
        raise ValueError(f"nnz_per_row {distinct} must be below the number of features {pmf.size}")
    lo, hi = distinct, distinct
    while float(np.sum(-np.expm1(-hi * pmf))) < distinct:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if float(np.sum(-np.expm1(-mid * pmf))) < distinct:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def text_model(spec: TextSpec) -> TextModel:
    pmf = zipf_pmf(spec.features, spec.zipf_s, spec.zipf_q)
    lam = _tokens_for(pmf, spec.nnz_per_row)
    df = -np.expm1(-lam * pmf)                      # P(id r appears in a row)
    idf = -np.log(df)
    rng = np.random.default_rng([spec.seed, _MODEL_STREAM])
    hi = spec.features
    if spec.support > hi - spec.skip_top:
        raise ValueError("support larger than the features below skip_top")
    ids = spec.skip_top + rng.choice(hi - spec.skip_top, size=spec.support, replace=False)
    w = np.zeros(spec.features)
    w[ids] = rng.standard_normal(spec.support)
    cdf = np.cumsum(pmf)
    cdf[-1] = 1.0
    return TextModel(cdf=cdf, lam=lam, idf=idf, w=w)


def _text_chunk(spec: TextSpec, model: TextModel, k: int) -> tuple[FloatArray, NDArray[np.int32],
                                                                      NDArray[np.int64], FloatArray]:
    """Chunk k (CHUNK rows): (data, indices, per-row counts, labels), rows in order, ids sorted in a row."""
    rng = np.random.default_rng([spec.seed, k])
    d = spec.features
    lengths = np.maximum(rng.poisson(model.lam, size=CHUNK), 1)
    total = int(lengths.sum())
    ids = np.searchsorted(model.cdf, rng.random(total), side="right")
    np.minimum(ids, d - 1, out=ids)
    rows = np.repeat(np.arange(CHUNK, dtype=np.int64), lengths)
    keys, tf = np.unique(rows * d + ids, return_counts=True)   # sorted by (row, id); tf = repeats
    r = keys // d
    c = (keys - r * d).astype(np.int32)
    v = (1.0 + np.log(tf.astype(np.float64))) * model.idf[c]
    counts = np.bincount(r, minlength=CHUNK).astype(np.int64)
    norms = np.sqrt(np.bincount(r, weights=v * v, minlength=CHUNK))
    v /= norms[r]
    score = np.bincount(r, weights=v * model.w[c], minlength=CHUNK)
    u = rng.random(CHUNK)
    flipped = rng.random(CHUNK) < spec.flip
    y = np.where(score > 0, 1.0, np.where(score < 0, -1.0, np.where(u < 0.5, -1.0, 1.0)))
    y = np.where(flipped, -y, y)
    return v, c, counts, y


def sparse_text(rows: int = 1_000_000, features: int = 50_000, *, nnz_per_row: float = 50.0, zipf_s: float = 1.0,
                zipf_q: float = 2.7, support: int = 2500, skip_top: int = 100, flip: float = 0.05,
                seed: int = 13) -> tuple[Any, FloatArray]:
    """A bag-of-words-like CSR matrix (float64 values, int32 indices, sorted) and ±1 labels.

    See the module docstring. The CSR arrays are allocated once at an upper bound of their size
    (the expected non-zeros plus ten standard deviations) and grown only if that is exceeded;
    peak memory is the output plus one chunk (about 200 bytes × ``CHUNK`` × ``nnz_per_row``).
    """
    spec = TextSpec(rows, features, nnz_per_row, zipf_s, zipf_q, support, skip_top, flip, seed)
    if rows < 1:
        raise ValueError("rows must be positive")
    model = text_model(spec)
    cap = int(rows * nnz_per_row + 10.0 * math.sqrt(rows * max(nnz_per_row, 1.0)) + 64)
    data = np.empty(cap, dtype=np.float64)
    indices = np.empty(cap, dtype=np.int32)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    y = np.empty(rows, dtype=np.float64)
    nnz = 0
    for k, lo in enumerate(range(0, rows, CHUNK)):
        hi = min(rows, lo + CHUNK)
        v, c, counts, yk = _text_chunk(spec, model, k)
        n = hi - lo
        m = int(counts[:n].sum())
        if nnz + m > data.size:                       # past the bound: grow (one copy)
            new = max(nnz + m, int(1.25 * data.size))
            data = np.resize(data, new)
            indices = np.resize(indices, new)
        data[nnz:nnz + m] = v[:m]
        indices[nnz:nnz + m] = c[:m]
        indptr[lo + 1:hi + 1] = nnz + np.cumsum(counts[:n])
        y[lo:hi] = yk[:n]
        nnz += m
    idx_dtype = np.int32 if nnz < 2**31 - 1 else np.int64
    X = sp.csr_matrix((data[:nnz], indices[:nnz].astype(idx_dtype, copy=False), indptr.astype(idx_dtype)),
                      shape=(rows, features))
    X.has_sorted_indices = True
    return X, y


def spec_dict(spec: DenseSpec | TextSpec) -> dict[str, Any]:
    return asdict(spec)


__all__ = ["CHUNK", "DenseSpec", "TextSpec", "tall_dense", "sparse_text", "zipf_pmf", "text_model"]
