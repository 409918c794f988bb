"""``python -m benchmarks.small_data``: runs :mod:`benchmarks.studies.small_data` (``benchmarks/studies/small_data.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.small_data``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.small_data", run_name="__main__", alter_sys=True)
