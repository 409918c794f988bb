"""``python -m benchmarks.ocas``: runs :mod:`benchmarks.studies.ocas` (``benchmarks/studies/ocas.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.ocas``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.ocas", run_name="__main__", alter_sys=True)
