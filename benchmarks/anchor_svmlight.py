"""``python -m benchmarks.anchor_svmlight``: runs :mod:`benchmarks.anchors.svmlight` (``benchmarks/anchors/svmlight.py``), where its protocol is described."""

import runpy

if __name__ == "__main__":
    # as ``python -m benchmarks.anchors.svmlight``: the module's own start-up (thread pinning) runs as under __main__
    runpy.run_module("benchmarks.anchors.svmlight", run_name="__main__", alter_sys=True)
