"""``python -m benchmarks.asvm``: runs :mod:`benchmarks.studies.asvm` (``benchmarks/studies/asvm.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.asvm``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.asvm", run_name="__main__", alter_sys=True)
