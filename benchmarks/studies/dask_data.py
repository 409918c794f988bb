"""The Dask study's settings and its data: x ~ N(0, I), labels the sign of a hidden linear model
with some flipped, generated block by block (on the workers, or here for the in-process copy); see
:mod:`benchmarks.studies.dask_scale`.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterator

import numpy as np
from numpy.typing import NDArray


FloatArray = NDArray[np.float64]
GEN_BLOCK = 65_536                 # rows of one generator block (defines the data: see DataSpec)
_MODEL_STREAM = 2**31 - 1          # the rng stream of the hidden model
C_DEFAULT = 1.0
BIAS = 1.0                         # the hinge problem's constant feature (svmocas -b 1, LIBLINEAR -B 1)
STRATEGIES = ("asvm", "ocas", "ocas-active", "ocas-active-paper")
DEFAULT_STRATEGIES = ("asvm", "ocas", "ocas-active")
LABEL = {"asvm": "ASVM", "ocas": "OCAS", "ocas-active": "active-set OCAS",
         "ocas-active-paper": "active-set OCAS (paper: μ 0.05, 20 cuts)"}


FAMILY = {"asvm": "asvm", "ocas": "hinge", "ocas-active": "hinge", "ocas-active-paper": "hinge"}
TOL = {"asvm": 1e-6, "ocas": 1e-5, "ocas-active": 1e-5,      # benchmarks/asvm.py --tol, benchmarks/ocas.py --tol
       "ocas-active-paper": 1e-5}


#: the table3 rows: TolRel of their solves (1e-5 must be passed) and the gaps of Xiao and Zhou's Table 3
TOL_TABLE3 = 1e-6
BAR_RATIO = 1.5                    # chunked / in process, ASVM and OCAS (issue 16)
BARRED = ("asvm", "ocas")
BAR_CLIENT_MB = 1024.0             # the client's peak on the scale row
PRESETS = {"7m": ("compare", 7_000_000), "30m": ("scale", 30_000_000)}
KINDS = ("compare", "scale", "table3")
SMALL_ROWS = "200k,200k:scale,200k:table3"
SMALL_CHUNKS = 4


def _mod(name: str) -> Any:
    """An optional package (dask, distributed, psutil, threadpoolctl), imported when first needed."""
    return importlib.import_module(name)


@dataclass(frozen=True)
class DataSpec:
    """What defines a data set (``chunk_rows`` only partitions it: the data do not depend on it)."""

    rows: int
    features: int = 32
    chunk_rows: int = 1_000_000
    seed: int = 16
    flip: float = 0.10             # fraction of labels flipped after the hidden model's sign
    intercept: float = 0.25        # the hidden model's intercept (x ~ N(0, I), ‖w*‖ = 1)

    def key(self) -> str:
        return (f"gauss m={self.rows} d={self.features} flip={self.flip:g} b={self.intercept:g} "
                f"seed={self.seed}")

    def chunks(self) -> tuple[int, ...]:
        full, rest = divmod(self.rows, self.chunk_rows)
        return (self.chunk_rows,) * full + ((rest,) if rest else ())

    def describe(self) -> dict[str, Any]:
        return dict(asdict(self), chunks=len(self.chunks()), data_gb=round(8 * self.rows * self.features / 1e9, 3),
                    key=self.key())


def hidden_model(features: int, seed: int) -> FloatArray:
    """w*, unit norm, from its own stream of the seed."""
    w = np.random.default_rng((seed, _MODEL_STREAM)).standard_normal(features)
    out: FloatArray = w / np.linalg.norm(w)
    return out


def _blocks(lo: int, hi: int) -> Iterator[tuple[int, int, int, int, int]]:
    """Generator blocks k overlapping rows [lo, hi): (k, out_lo, out_hi, block_lo, block_hi)."""
    for k in range(lo // GEN_BLOCK, (hi - 1) // GEN_BLOCK + 1 if hi > lo else lo // GEN_BLOCK):
        a = k * GEN_BLOCK
        s, e = max(a, lo), min(a + GEN_BLOCK, hi)
        yield k, s - lo, e - lo, s - a, e - a


def rows_of(lo: int, hi: int, features: int, seed: int) -> FloatArray:
    """Rows [lo, hi) of X: block k of 65,536 rows is ``default_rng((seed, k)).standard_normal``."""
    out = np.empty((hi - lo, features))
    for k, o0, o1, b0, b1 in _blocks(lo, hi):
        out[o0:o1] = np.random.default_rng((seed, k)).standard_normal((GEN_BLOCK, features))[b0:b1]
    return out


def labels_of(X: FloatArray, lo: int, spec: DataSpec) -> FloatArray:
    """±1 labels of rows [lo, lo + len(X)): sign(x·w* + b), then flips from ``default_rng((seed, k, 1))``."""
    w = hidden_model(spec.features, spec.seed)
    y = np.where(X @ w + spec.intercept >= 0.0, 1.0, -1.0)
    for k, o0, o1, b0, b1 in _blocks(lo, lo + X.shape[0]):
        flips = np.random.default_rng((spec.seed, k, 1)).random(GEN_BLOCK)[b0:b1] < spec.flip
        y[o0:o1][flips] *= -1.0
    out: FloatArray = y
    return out


def _x_chunk(block_info: Any = None, *, spec: DataSpec) -> FloatArray:
    lo, hi = block_info[None]["array-location"][0]
    return rows_of(int(lo), int(hi), spec.features, spec.seed)


def _y_chunk(X: FloatArray, block_info: Any = None, *, spec: DataSpec) -> FloatArray:
    lo, _ = block_info[None]["array-location"][0]
    return labels_of(X, int(lo), spec)


def dask_data(spec: DataSpec) -> tuple[Any, Any]:
    """The lazy dask arrays (X, y) of ``spec``, chunked by ``spec.chunk_rows`` rows."""
    da = _mod("dask.array")

    X = da.map_blocks(_x_chunk, chunks=(spec.chunks(), (spec.features,)), dtype=np.float64,
                      meta=np.empty((0, 0)), spec=spec, name=f"qpcore-bench-X-{_slug(spec)}")
    y = X.map_blocks(_y_chunk, drop_axis=1, dtype=np.float64, meta=np.empty((0,)), spec=spec,
                     name=f"qpcore-bench-y-{_slug(spec)}")
    return X, y


def numpy_data(spec: DataSpec) -> tuple[FloatArray, FloatArray]:
    """The same data generated in this process, without dask (for checks on small sizes)."""
    X = rows_of(0, spec.rows, spec.features, spec.seed)
    return X, labels_of(X, 0, spec)


def _slug(spec: DataSpec) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", spec.key()) + f"-c{spec.chunk_rows}"


def persist(client: Any, spec: DataSpec) -> tuple[Any, Any, dict[str, int]]:
    """Generate (X, y) on the workers and keep them there, the chunks spread evenly: chunk i on
    worker ⌊i·W/n⌋ of the W workers sorted by address (a preference: another worker may take it
    over if that one dies). Left to itself the scheduler put 5 of 7 chunks, 19 of 30, on one worker.
    Returns the persisted arrays, once every chunk is there, and the rows each worker holds."""
    dask, distributed = _mod("dask"), _mod("distributed")
    workers = sorted(client.scheduler_info()["workers"])
    n = len(spec.chunks())

    def place(key: Any) -> list[str]:
        return [workers[int(key[1]) * len(workers) // n]]

    with dask.annotate(workers=place, allow_other_workers=True):
        X, y = dask_data(spec)
    X, y = client.persist([X, y], optimize_graph=False)     # graph optimization would drop the annotations
    fx = distributed.futures_of(X)
    distributed.wait(fx + distributed.futures_of(y))
    where = client.who_has(fx)
    rows = {w: 0 for w in workers}
    sizes = spec.chunks()
    for f in fx:
        for w in where.get(f.key, ()):
            rows[w] = rows.get(w, 0) + sizes[int(f.key[1])]
    return X, y, rows


def gather(client: Any, X: Any, y: Any) -> tuple[FloatArray, FloatArray]:
    """The persisted arrays into this process, chunk by chunk into one preallocated array (no
    concatenation on a worker, no second full copy here)."""
    m, n = (int(s) for s in X.shape)
    Xn, yn = np.empty((m, n)), np.empty(m)
    lo = 0
    for xd, yd, rows in zip(X.to_delayed().ravel(), y.to_delayed().ravel(), X.chunks[0]):
        xf, yf = client.compute([xd, yd])
        Xn[lo:lo + rows] = xf.result()
        yn[lo:lo + rows] = yf.result()
        del xf, yf
        lo += rows
    return Xn, yn
