"""``python -m benchmarks.busy``: runs :mod:`benchmarks.harness.busy` (``benchmarks/harness/busy.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.harness.busy``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.harness.busy", run_name="__main__", alter_sys=True)
