"""Reading the LIBSVM-format files of ``qpcore train``, ``qpcore predict`` and ``qpcore solve svm``.

Every failure is one :class:`~qpcore_cli.common.CLIError` line. :func:`read_data` reads one file
with a feature numbering (``auto``: zero-based when the file uses index 0, else LIBSVM's
one-based); :func:`load_train_test` reads a training file and a held-out one with one numbering
and one width; :func:`with_width` pads to a width.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from qpcore_cli.common import CLIError
from qpcore_formulations.data.svmlight import DataFormatError, load_svmlight

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["drop_first_column", "load_train_test", "read_data", "read_svmlight_file", "with_width"]


def read_svmlight_file(path: str, role: str, zero_based: bool) -> tuple[Any, NDArray[np.float64]]:
    """Read a LIBSVM file, turning every failure into a one-line :class:`CLIError`.

    Parameters
    ----------
    path : str
        Plain, gzip or bzip2 text.
    role : str
        How messages name it (``training``, ``test``, ``data``).
    zero_based : bool
        Feature numbers start at 0 (else 1).

    Returns
    -------
    X, y
        CSR data and float64 labels.

    Raises
    ------
    CLIError
        A missing, unreadable or malformed file.
    """
    if os.path.isdir(path):
        raise CLIError(f"{role} file {path!r} is a directory")
    if not os.path.exists(path):
        raise CLIError(f"{role} file {path!r} not found")
    try:
        return load_svmlight(path, zero_based=zero_based)
    except DataFormatError as exc:
        raise CLIError(f"{role} file: {exc}") from None
    except OSError as exc:
        raise CLIError(f"cannot read {role} file {path!r}: {exc.strerror or exc}") from None
    except (ValueError, EOFError, MemoryError) as exc:
        raise CLIError(f"cannot read {role} file {path!r}: {exc}") from None


def with_width(X: Any, width: int) -> Any:
    """X padded with empty columns to ``width`` (CSR or dense; X itself when it has that width).

    Parameters
    ----------
    X : csr_matrix or ndarray
    width : int
        At least X's number of columns.

    Returns
    -------
    csr_matrix or ndarray
    """
    if X.shape[1] == width:
        return X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))
    return np.pad(np.asarray(X), ((0, 0), (0, width - X.shape[1])))


def drop_first_column(X: Any) -> Any:
    """The CSR ``X`` without its (empty) column 0: one-based indices read as zero-based.

    Parameters
    ----------
    X : sparse matrix

    Returns
    -------
    csr_matrix
    """
    X = sp.csr_matrix(X)
    return sp.csr_matrix((X.data, X.indices - 1, X.indptr), shape=(X.shape[0], max(0, X.shape[1] - 1)))


def load_train_test(data: str, test: str | None, n_features: int | None, index_base: str
                    ) -> tuple[Any, NDArray[np.float64], Any, NDArray[np.float64] | None, int]:
    """Read the training (and test) file with one numbering and one width.

    Parameters
    ----------
    data, test : str
        Paths (plain, gzip or bzip2); ``test`` may be None.
    n_features : int, optional
        Width; an index beyond it is an error.
    index_base : {"auto", "0", "1"}
        Feature numbering. ``auto``: zero-based if the *training* file uses index 0, else one-based,
        and the test file is read the same way (so the two can never be numbered differently).

    Returns
    -------
    X, y, X_test, y_test, train_width
        Training and test data of equal width, and the training file's own width (its
        largest feature number, or ``n_features``), the LIBSVM base of the default gamma.

    Raises
    ------
    CLIError
        On a missing, unreadable or malformed file, or numberings or widths that do not fit.
    """
    if index_base == "auto":
        X, y = read_svmlight_file(data, "training", zero_based=True)
        zero_based = bool((X.indices == 0).any())
        if not zero_based:
            X = drop_first_column(X)
    else:
        zero_based = index_base == "0"
        X, y = read_svmlight_file(data, "training", zero_based=zero_based)
    X_test = y_test = None
    if test is not None:
        if index_base == "auto" and not zero_based:
            X_test, y_test = read_svmlight_file(test, "test", zero_based=True)
            if (X_test.indices == 0).any():
                raise CLIError(f"test file {test!r} uses feature index 0 but the training file {data!r} does not; "
                               "pass --index-base 0 or 1")
            X_test = drop_first_column(X_test)
        else:
            X_test, y_test = read_svmlight_file(test, "test", zero_based=zero_based)
    train_width = int(X.shape[1]) if n_features is None else n_features
    width = train_width
    for M, path in ((X, data), (X_test, test)):
        if M is not None and M.shape[1] > width:
            if n_features is not None:
                raise CLIError(f"{path!r} has {M.shape[1]} features, more than --n-features {n_features}")
            width = int(M.shape[1])
    X = with_width(X, width)
    if X_test is not None:
        X_test = with_width(X_test, width)
    return X, y, X_test, y_test, train_width


def read_data(path: str, role: str, index_base: str, n_features: int | None = None) -> tuple[Any, Any, int]:
    """Read a LIBSVM-format file as CSR data, float64 labels and its feature numbering.

    Parameters
    ----------
    path : str
        Plain, gzip or bzip2 text.
    role : str
        ``"training"`` or ``"data"`` (for messages).
    index_base : {"auto", "0", "1"}
        ``auto``: zero-based if the file uses index 0, else one-based (LIBSVM's numbering).
    n_features : int, optional
        Pad to this width; a feature beyond it is an error.

    Returns
    -------
    X, y, base
        Data (column k is feature k + base), labels, and the base used (0 or 1).

    Raises
    ------
    CLIError
        On a missing, unreadable or malformed file, or a feature beyond ``n_features``.
    """
    if index_base == "auto":
        X, y = read_svmlight_file(path, role, zero_based=True)
        base = 0 if bool((X.indices == 0).any()) else 1
        if base == 1:
            X = drop_first_column(X)
    else:
        base = int(index_base)
        X, y = read_svmlight_file(path, role, zero_based=base == 0)
    if n_features is not None:
        if X.shape[1] > n_features:
            raise CLIError(f"{role} file {path!r} has {X.shape[1]} features, more than --n-features {n_features}")
        X = with_width(X, n_features)
    return X, y, base
