"""``python -m benchmarks.dask_scale``: runs :mod:`benchmarks.studies.dask_scale` (``benchmarks/studies/dask_scale.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.dask_scale``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.dask_scale", run_name="__main__", alter_sys=True)
