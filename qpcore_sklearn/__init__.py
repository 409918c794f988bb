"""scikit-learn estimators over qpcore's strategies (the optional ``sklearn`` extra).

Like the command line, this package sits on top of ``qpcore``, ``qpcore_strategies``,
``qpcore_formulations`` and ``qpcore_train``;
none of them imports it, and scikit-learn is never a runtime dependency of the library.

- :class:`KernelSVC`: a kernel SVM classifier (LIBSVM's parameters, SVC's fitted attributes),
  multiclass one-vs-one (or one-vs-rest), any strategy: SMO with any rule, decomposition,
  INCAS, GPCG.
- :class:`KernelNuSVC`, :class:`KernelOneClassSVM`, :class:`KernelSVR`, :class:`KernelNuSVR`: the rest
  of LIBSVM's family (``NuSVC``, ``OneClassSVM``, ``SVR``, ``NuSVR``'s parameters and fitted
  attributes), any strategy that takes the problem.
- :class:`FormulationSVM`: any formulation of the registry
  (:data:`qpcore_formulations.formulation.FORMULATIONS`, one registered from outside the library
  too) as an estimator, with no estimator written for it: its parameters are the formulation's,
  its kind (classifier, novelty detector, regressor) what the formulation predicts. The
  estimators above are the same shared bases (:mod:`qpcore_sklearn.svm_base`) over LIBSVM's
  formulations, all trained by :func:`qpcore_train.fit.fit_formulation`.
- :class:`LinearSVMClassifier`: a linear SVM classifier: squared hinge through ASVM, hinge through
  OCAS, the active-set OCAS or BMRM.
- :class:`IncrementalSVC`: the exact incremental/decremental SVM of Cauwenberghs and Poggio:
  ``partial_fit`` that equals a batch fit, ``unlearn``, exact leave-one-out.
- :class:`IncrementalOneClassSVM`, :class:`IncrementalNuSVC`: the same for the one-class SVM and the
  ν-SVC at a fixed ν (``OneClassSVM``'s and ``NuSVC``'s parameters and fitted attributes).
- :class:`SVMGridSearchCV`: ``GridSearchCV``'s interface, each kernel computed once for every fold
  and C, warm starts along C.
"""

from __future__ import annotations

from qpcore_sklearn.formulation import FormulationSVM
from qpcore_sklearn.incremental import IncrementalSVC
from qpcore_sklearn.incremental_family import IncrementalNuSVC, IncrementalOneClassSVM
from qpcore_sklearn.linear import LinearSVMClassifier
from qpcore_sklearn.model_selection import SVMGridSearchCV
from qpcore_sklearn.svm import KernelSVC
from qpcore_sklearn.svm_family import KernelNuSVC, KernelNuSVR, KernelOneClassSVM, KernelSVR

__all__ = ["FormulationSVM", "IncrementalNuSVC", "IncrementalOneClassSVM", "IncrementalSVC", "KernelNuSVC", "KernelNuSVR",
           "KernelOneClassSVM", "KernelSVC", "KernelSVR", "LinearSVMClassifier", "SVMGridSearchCV"]
