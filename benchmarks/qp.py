"""``python -m benchmarks.qp``: runs :mod:`benchmarks.studies.qp` (``benchmarks/studies/qp.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.studies.qp``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.studies.qp", run_name="__main__", alter_sys=True)
