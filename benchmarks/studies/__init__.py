"""The studies: one module per benchmark, each a specification over :mod:`benchmarks.harness`.

Each runs as ``python -m benchmarks.<name>`` (a forwarding module beside this package) or as
``python -m benchmarks.studies.<name>``. Nothing here imports numpy at package import time.
"""
