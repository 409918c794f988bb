"""The data modules under their former single name (``from problems.datasets import load_dataset``).

What this module held now lives in :mod:`problems.svmlight` (the LIBSVM/SVMlight reader and
writer, :class:`~problems.svmlight.DataFormatError`), :mod:`problems.float_text` (the writer's
bulk float formatter), :mod:`problems.data` (the shared real data sets: ``data_dir``,
``load_dataset``) and :mod:`problems.synthetic` (Platt's data sets); new code imports from
them. The name stays because the benchmarks import it, also from older checkouts in their
before/after runs.
"""

from problems.data import DATASET_NAMES, data_dir, load_dataset
from problems.svmlight import DataFormatError, dump_svmlight, load_svmlight
from problems.synthetic import platt_hyperplane, platt_random_labels, platt_sparse_separable

__all__ = [
    "DATASET_NAMES",
    "DataFormatError",
    "data_dir",
    "dump_svmlight",
    "load_dataset",
    "load_svmlight",
    "platt_hyperplane",
    "platt_random_labels",
    "platt_sparse_separable",
]
