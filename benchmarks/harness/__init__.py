"""The benchmark harness: what every study shares, and the commands that are not one study.

Re-exported here (``from benchmarks.harness import ...``):

- :mod:`~benchmarks.harness.core`: threads (read before numpy starts, limited per run), the load
  check, timed and interleaved runs, the ratio of medians, anchors in a forked child;
- :mod:`~benchmarks.harness.records`: where results and pages go, records, JSON lines and stores
  (seeded from the archive commit), the cells and tables of every page;
- :mod:`~benchmarks.harness.study`: the study skeleton (one command line, one main loop);
- from :mod:`~benchmarks.harness.measure`: peak memory, the machine description, medians, time stamps.

Also here: :mod:`~benchmarks.harness.report` (the page and plots of ``python -m benchmarks.run``),
:mod:`~benchmarks.harness.generators` (the large synthetic data sets), and the commands
:mod:`~benchmarks.harness.run` (SVM rows against LIBSVM), :mod:`~benchmarks.harness.ab` (before /
after from two checkouts) and :mod:`~benchmarks.harness.busy` (one core busy).

Nothing here imports numpy at package import time (a study pins the BLAS threads first).
"""

from benchmarks.harness import core, records, study
from benchmarks.harness.core import *  # noqa: F401,F403
from benchmarks.harness.measure import REPO, PeakMemory, machine_info, median, now_iso
from benchmarks.harness.records import *  # noqa: F401,F403
from benchmarks.harness.study import *  # noqa: F401,F403

__all__ = [*core.__all__, *records.__all__, *study.__all__, "PeakMemory", "REPO", "machine_info", "median",
           "now_iso"]
