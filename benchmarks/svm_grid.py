"""``python -m benchmarks.svm_grid``: runs :mod:`benchmarks.studies.svm_grid` (``benchmarks/studies/svm_grid.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.svm_grid``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.svm_grid", run_name="__main__", alter_sys=True)
