"""Models that stay solved: the exact incremental/decremental SVM of Cauwenberghs and Poggio (learn,
unlearn, exact leave-one-out, sliding windows, the regularization path), ν-SVC and one-class.

Not loop strategies: each keeps its own optimal state over qpcore's operators and certifies with
:func:`qpcore.kkt`. Builds on qpcore, and on the strategies for a start (a capped SMO run).
"""

from qpcore_incremental.incremental import IncrementalNuSVC, IncrementalSVM
from qpcore_incremental.incremental_oneclass import IncrementalOneClass

__all__ = ["IncrementalNuSVC", "IncrementalOneClass", "IncrementalSVM"]
