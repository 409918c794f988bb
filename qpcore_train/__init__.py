"""The training layer: multiclass schemes, calibration, model selection and the lockstep batches,
over the formulations (:mod:`qpcore_formulations`) and the strategies (:mod:`qpcore_strategies`).

The command line and the scikit-learn estimators are thin adapters over it.
"""

__all__: list[str] = []
