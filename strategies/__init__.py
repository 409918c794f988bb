"""Deprecated: the strategies now live in :mod:`qpcore_strategies` (the incremental SVM in
:mod:`qpcore_incremental`, the lockstep SMO in :mod:`qpcore_train`).

A top-level ``strategies`` was shadowed by any ``strategies.py`` in the working directory (the usual
name for hypothesis strategies); this package keeps the old imports working for one release.
"""

import warnings

from qpcore._aliases import install
from qpcore_strategies import *  # noqa: F403
from qpcore_strategies import __all__

warnings.warn("the package 'strategies' is deprecated and will be removed in the next release: import qpcore_strategies",
              DeprecationWarning, stacklevel=2)

install({
    "strategies.active_set": "qpcore_strategies.active_set",
    "strategies.active_set_ocas": "qpcore_strategies.active_set_ocas",
    "strategies.active_set_ocas_kernels": "qpcore_strategies.active_set_ocas_kernels",
    "strategies.active_set_rows": "qpcore_strategies.active_set_rows",
    "strategies.asvm": "qpcore_strategies.asvm",
    "strategies.asvm_kernels": "qpcore_strategies.asvm_kernels",
    "strategies.auto": "qpcore_strategies.auto",
    "strategies.batched_smo": "qpcore_train.batched_smo",
    "strategies.cut_qp": "qpcore_strategies.cut_qp",
    "strategies.cut_store": "qpcore_strategies.cut_store",
    "strategies.cutting_plane": "qpcore_strategies.cutting_plane",
    "strategies.cutting_plane_kernels": "qpcore_strategies.cutting_plane_kernels",
    "strategies.decomposition": "qpcore_strategies.decomposition",
    "strategies.gradient_projection": "qpcore_strategies.gradient_projection",
    "strategies.incas": "qpcore_strategies.incas",
    "strategies.incremental": "qpcore_incremental.incremental",
    "strategies.incremental_loo": "qpcore_incremental.incremental_loo",
    "strategies.incremental_oneclass": "qpcore_incremental.incremental_oneclass",
    "strategies.incremental_path": "qpcore_incremental.incremental_path",
    "strategies.incremental_regpath": "qpcore_incremental.incremental_regpath",
    "strategies.interior_point": "qpcore_strategies.interior_point",
    "strategies.line_search": "qpcore_strategies.line_search",
    "strategies.polish": "qpcore_strategies.polish",
    "strategies.projected_search": "qpcore_strategies.projected_search",
    "strategies.registry": "qpcore_strategies.registry",
    "strategies.smo": "qpcore_strategies.smo",
})
