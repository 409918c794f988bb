"""``python -m benchmarks.scaling``: runs :mod:`benchmarks.studies.scaling` (``benchmarks/studies/scaling.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.scaling``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.scaling", run_name="__main__", alter_sys=True)
