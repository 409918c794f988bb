"""Formulations: each builds a :class:`qpcore.QP` from data, gives its start, and decodes the certified
solution into a model (the SVM family, least squares, the hinge-loss risk, ASVM's dual), with the
data sets in :mod:`qpcore_formulations.data`. The SVMs are registered by name in
:mod:`qpcore_formulations.formulation` (what each predicts, its parameters, its builder), which the
training layer, the command line and the estimators read. Builds on qpcore alone.
"""

# the modules are the API (qpcore_formulations.svm, qpcore_formulations.data.svmlight, ...); the
# built-in formulations join the registry with the package
from qpcore_formulations import builtin as _builtin  # noqa: F401

__all__: list[str] = []
