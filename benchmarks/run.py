"""``python -m benchmarks.run``: runs :mod:`benchmarks.harness.run` (``benchmarks/harness/run.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.harness.run``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.harness.run", run_name="__main__", alter_sys=True)
