"""The shared real data sets: where they are (:func:`data_dir`) and how to load one (:func:`load_dataset`).

The real data sets of the tests and benchmarks (``adult``, ``ijcnn1``, ``reuters``, in LIBSVM
format, bzip2-compressed) are not part of the repository; they live in a shared folder found by
:func:`data_dir` and are read by :func:`qpcore_formulations.data.svmlight.load_svmlight`.
"""

from __future__ import annotations

import os
import pathlib
from typing import Any, Final, Literal, overload

import numpy as np
from numpy.typing import DTypeLike, NDArray

from qpcore_formulations.data.svmlight import ZeroBased, load_svmlight

__all__ = ["DATASET_NAMES", "data_dir", "load_dataset"]

FloatArray = NDArray[np.float64]

#: Names accepted by :func:`load_dataset`.
DATASET_NAMES: Final = ("adult", "ijcnn1", "reuters", "abalone")

# how many folders above the working directory data_dir() looks for shared/data
_SEARCH_LEVELS: Final = 3


def _repository_root() -> pathlib.Path | None:
    """The checkout holding this package, or None when it runs from an installed copy."""
    root = pathlib.Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "qpcore_formulations" / "data" / "files.py").is_file():
        return root
    return None


def data_dir() -> pathlib.Path:
    """The shared data folder (the real data sets, see :func:`load_dataset`).

    Searched in this order, the first existing folder wins:

    1. ``$QPCORE_DATA``, if that variable is set and not empty (then it must be a folder);
    2. ``<repository root>/../shared/data`` when running from a checkout (the root is the folder
       holding ``pyproject.toml`` and the ``qpcore_formulations`` package);
    3. ``shared/data`` in the current working directory and in each of its first three
       parents (so ``./shared/data``, ``../shared/data``, ...), which finds the data from an
       installed package too.

    Returns
    -------
    pathlib.Path
        The folder (as given in ``$QPCORE_DATA``, else resolved).

    Raises
    ------
    FileNotFoundError
        If ``$QPCORE_DATA`` is set but not a folder, or no candidate folder exists; the message
        names every place tried and says to set ``QPCORE_DATA``.
    """
    env = os.environ.get("QPCORE_DATA")
    if env:
        path = pathlib.Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"QPCORE_DATA={env!r} is not a folder; point it at the shared data folder"
            )
        return path
    candidates: list[pathlib.Path] = []
    root = _repository_root()
    if root is not None:
        candidates.append((root.parent / "shared" / "data").resolve())
    cwd = pathlib.Path.cwd().resolve()
    for folder in [cwd, *cwd.parents][: _SEARCH_LEVELS + 1]:
        candidates.append(folder / "shared" / "data")
    tried: list[pathlib.Path] = []
    for path in candidates:
        if path in tried:
            continue
        if path.is_dir():
            return path.resolve()
        tried.append(path)
    raise FileNotFoundError(
        "shared data folder not found; tried "
        + ", ".join(str(p) for p in tried)
        + ". Set QPCORE_DATA to the folder holding the data sets "
        "(or put shared/data beside the repository)"
    )


@overload
def load_dataset(
    name: str,
    split: str = ...,
    *,
    n_features: int | None = ...,
    dense: Literal[False] = ...,
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[Any, FloatArray]: ...


@overload
def load_dataset(
    name: str,
    split: str = ...,
    *,
    n_features: int | None = ...,
    dense: Literal[True],
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[NDArray[Any], FloatArray]: ...


@overload
def load_dataset(
    name: str,
    split: str = ...,
    *,
    n_features: int | None = ...,
    dense: bool,
    dtype: DTypeLike = ...,
    zero_based: ZeroBased = ...,
) -> tuple[Any, FloatArray]: ...


def load_dataset(
    name: str,
    split: str = "trn",
    *,
    n_features: int | None = None,
    dense: bool = False,
    dtype: DTypeLike = np.float64,
    zero_based: ZeroBased = "auto",
) -> tuple[Any, FloatArray]:
    """Load one of the shared real data sets, ``{name}.{split}.bz2`` in :func:`data_dir`.

    Parameters
    ----------
    name : {"adult", "ijcnn1", "reuters", "abalone"}
        The data set (abalone: LIBSVM's abalone_scale, real regression targets).
    split : str, default "trn"
        ``"trn"`` or, for adult, ``"tst"``.
    n_features, dense, dtype, zero_based
        As in :func:`load_svmlight`; for adult ``n_features`` defaults to 123 so both
        splits have the same width.

    Returns
    -------
    X : scipy.sparse.csr_matrix or ndarray
        The inputs.
    y : ndarray of float64
        The labels (+1/-1), or abalone's targets.

    Raises
    ------
    ValueError
        If ``name`` is unknown.
    FileNotFoundError
        If the data folder or the file is missing.
    """
    if name not in DATASET_NAMES:
        raise ValueError(f"unknown data set {name!r}; expected one of {DATASET_NAMES}")
    path = data_dir() / f"{name}.{split}.bz2"
    if not path.is_file():
        have = sorted(p.name for p in path.parent.glob(f"{name}.*.bz2"))
        raise FileNotFoundError(f"{path} not found (available for {name!r}: {have})")
    if name == "adult" and n_features is None:
        n_features = 123
    return load_svmlight(
        path, n_features=n_features, dense=dense, dtype=dtype, zero_based=zero_based
    )
