"""``python -m benchmarks.incas``: runs :mod:`benchmarks.studies.incas` (``benchmarks/studies/incas.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.incas``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.incas", run_name="__main__", alter_sys=True)
