"""Side-by-side benchmarks of qpcore strategies against their anchors (LIBSVM, LIBLINEAR, OSQP ...).

Run ``python -m benchmarks.run --help``; what is measured and why is in
``docs/BENCHMARKS.md``. This package is not installed and not a test suite.

Nothing here imports numpy at package import time: ``benchmarks.run`` sets the BLAS/OpenMP
thread variables before numpy is loaded.
"""
