"""``python -m benchmarks.ab``: runs :mod:`benchmarks.harness.ab` (``benchmarks/harness/ab.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.harness.ab``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.harness.ab", run_name="__main__", alter_sys=True)
