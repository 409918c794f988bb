"""The benchmark harness: what every study shares, and the commands that are not one study.

- :mod:`benchmarks.harness.core`: threads, the load check, interleaved timed runs, records and
  stores, table cells, the study skeleton (re-exported here: ``from benchmarks.harness import ...``);
- :mod:`~benchmarks.harness.measure`: peak memory, traces, the machine description;
- :mod:`~benchmarks.harness.report`: the page and plots of ``python -m benchmarks.run``;
- :mod:`~benchmarks.harness.generators`: the large synthetic data sets (dense, text);
- commands: :mod:`~benchmarks.harness.run` (SVM rows against LIBSVM), :mod:`~benchmarks.harness.ab`
  (before / after from two checkouts), :mod:`~benchmarks.harness.busy` (one core busy).

Nothing here imports numpy at package import time (a study pins the BLAS threads first).
"""

from benchmarks.harness.core import *  # noqa: F401,F403
from benchmarks.harness.core import __all__  # noqa: F401
