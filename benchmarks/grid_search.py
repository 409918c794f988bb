"""``python -m benchmarks.grid_search``: runs :mod:`benchmarks.studies.grid_search` (``benchmarks/studies/grid_search.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.grid_search``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.grid_search", run_name="__main__", alter_sys=True)
