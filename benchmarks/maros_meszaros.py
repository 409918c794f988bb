"""``python -m benchmarks.maros_meszaros``: runs :mod:`benchmarks.studies.maros_meszaros` (``benchmarks/studies/maros_meszaros.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.maros_meszaros``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.maros_meszaros", run_name="__main__", alter_sys=True)
