"""``python -m benchmarks.svm_family``: runs :mod:`benchmarks.studies.svm_family` (``benchmarks/studies/svm_family.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.svm_family``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.svm_family", run_name="__main__", alter_sys=True)
