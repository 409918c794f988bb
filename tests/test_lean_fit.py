"""The lean small-fit paths (issue 35, part 3) give what the general paths give.

A KernelSVC fit on a finite C-ordered float64 matrix with integer labels skips sklearn's
validation (it would pass them through unchanged): the same fitted attributes as a fit that takes
it, the same bookkeeping (``n_features_in_``, no ``feature_names_in_``), and the other inputs still
meet sklearn's checks and errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import datasets

from qpcore_sklearn import KernelNuSVC, KernelSVC


def _iris() -> tuple[np.ndarray, np.ndarray]:
    X, y = datasets.load_iris(return_X_y=True)
    return np.ascontiguousarray(X, dtype=np.float64), y.astype(np.int64)


@pytest.mark.parametrize("cls", [KernelSVC, KernelNuSVC])
def test_checked_input_fits_as_validated_input(cls: type) -> None:
    X, y = _iris()
    fast = cls().fit(X, y)
    # a Fortran-ordered copy and float labels are not passed through: sklearn validates them
    slow = cls().fit(np.asfortranarray(X), y.astype(np.float64))
    for name in ("dual_coef_", "intercept_", "support_", "n_support_", "support_vectors_", "classes_"):
        a, b = getattr(fast, name), getattr(slow, name)
        assert a.dtype == b.dtype or name == "classes_"
        assert np.array_equal(a, b), name
    assert fast.n_features_in_ == 4 and isinstance(fast.n_features_in_, int)


def test_checked_input_drops_earlier_feature_names() -> None:
    X, y = _iris()
    est = KernelSVC()
    est.feature_names_in_ = np.array(list("abcd"), dtype=object)     # as a fit on a data frame leaves it
    est.fit(X, y)
    assert not hasattr(est, "feature_names_in_")
    assert est.n_features_in_ == 4


def test_other_inputs_keep_sklearn_errors() -> None:
    X, y = _iris()
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        KernelSVC().fit(bad, y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        KernelSVC().fit(X, y[:-1])
    with pytest.raises(ValueError, match="continuous"):
        KernelSVC().fit(X, y + 0.5)
    with pytest.raises(ValueError):
        KernelSVC().fit(X[:, :0], y)
