"""Formulations: each builds a :class:`qpcore.QP` from data, gives its start, and decodes the certified
solution into a model (the SVM family, least squares, the hinge-loss risk, ASVM's dual), with the
data sets in :mod:`qpcore_formulations.data`. Builds on qpcore alone.
"""

# the modules are the API (qpcore_formulations.svm, qpcore_formulations.data.svmlight, ...)
__all__: list[str] = []
