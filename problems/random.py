"""Seeded random QP generators: box QPs, SVM duals, nonnegative, degenerate and low-rank problems.

The generators live in :mod:`qpcore.generators` (qpcore is the bottom layer, and
:mod:`qpcore.testing` draws from them without importing ``problems``); this module re-exports them
under their old names, so ``from problems.random import random_box_qp`` keeps working.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from qpcore.generators import (Seed, feasible_point, fix_variables, planted_qp, psd_matrix, random_box_point,
                               random_box_qp, random_degenerate_qp, random_lowrank_qp, random_nonneg_qp,
                               random_one_sided_qp, random_svm_dual)

FloatArray = NDArray[np.float64]

__all__ = ["FloatArray", "Seed", "feasible_point", "fix_variables", "planted_qp", "psd_matrix", "random_box_point",
           "random_box_qp", "random_degenerate_qp", "random_lowrank_qp", "random_nonneg_qp", "random_one_sided_qp",
           "random_svm_dual"]
