"""The training layer: multiclass schemes, calibration, model selection and the lockstep batches,
over the formulations (:mod:`qpcore_formulations`) and the strategies (:mod:`qpcore_strategies`).

:func:`qpcore_train.fit.fit_formulation` trains any registered formulation
(:mod:`qpcore_formulations.formulation`) through the one pipeline, build → accept → solve → decode
(:mod:`qpcore_train.pipeline`). The command line and the scikit-learn estimators are thin adapters
over it.
"""

__all__: list[str] = []
