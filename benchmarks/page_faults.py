"""``python -m benchmarks.page_faults``: runs :mod:`benchmarks.studies.page_faults` (``benchmarks/studies/page_faults.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    runpy.run_module("benchmarks.studies.page_faults", run_name="__main__", alter_sys=True)
