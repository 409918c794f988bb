"""``python -m benchmarks.loo``: runs :mod:`benchmarks.studies.loo` (``benchmarks/studies/loo.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.loo``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.loo", run_name="__main__", alter_sys=True)
