"""Deprecated: the formulations now live in :mod:`qpcore_formulations` (data sets in
:mod:`qpcore_formulations.data`), multiclass training, model selection and calibration in
:mod:`qpcore_train`.

A top-level ``problems`` was shadowed by any ``problems.py`` in the working directory; this
package keeps the old imports working for one release.
"""

import warnings

from qpcore._aliases import install

__all__: list[str] = []

warnings.warn("the package 'problems' is deprecated and will be removed in the next release: import qpcore_formulations "
              "or qpcore_train", DeprecationWarning, stacklevel=2)

install({
    "problems.asvm": "qpcore_formulations.asvm",
    "problems.chunked": "qpcore_formulations.chunked",
    "problems.data": "qpcore_formulations.data.files",
    "problems.float_text": "qpcore_formulations.data.float_text",
    "problems.least_squares": "qpcore_formulations.least_squares",
    "problems.model_selection": "qpcore_train.model_selection",
    "problems.multiclass": "qpcore_train.multiclass",
    "problems.probability": "qpcore_train.probability",
    "problems.risk": "qpcore_formulations.risk",
    "problems.svm": "qpcore_formulations.svm",
    "problems.svm_family": "qpcore_formulations.svm_family",
    "problems.svmlight": "qpcore_formulations.data.svmlight",
    "problems.synthetic": "qpcore_formulations.data.synthetic",
})
