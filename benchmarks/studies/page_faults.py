"""First fill of a kernel row cache in a fresh process: numpy's huge pages against 4 KB pages (issue 35).

    python -m benchmarks.page_faults                  # 4,177 rows × 4,177 float32 (abalone's cache), 7 pairs
    python -m benchmarks.page_faults --rows 3000 --repeat 5

Each run is a fresh interpreter (the first touch of memory is what is measured, and a process
that has already touched and freed memory gets it back cheaply) that allocates the slab as the
row cache does, ``np.zeros`` (numpy advises huge pages for it) or
:func:`qpcore.linalg.memory.small_pages_zeros` (4 KB pages), and stores every row once, as an SMO
run storing each kernel row when first computed. The two kinds alternate (numpy, ours, numpy,
ours, ...); the medians and the ranges are printed with the machine's load and its transparent
huge page settings. Nothing of a solver runs: this isolates the memory system's part of a
first fit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import sys, time
import numpy as np
from qpcore.linalg.memory import small_pages_zeros
n, kind = int(sys.argv[1]), sys.argv[2]
row = np.random.default_rng(0).random(n).astype(np.float32)
t = time.perf_counter()
slab = np.zeros((n, n), np.float32) if kind == "numpy" else small_pages_zeros((n, n), np.float32)
for i in range(n):
    slab[i] = row
print(time.perf_counter() - t)
"""


def _thp() -> str:
    out = []
    for name in ("enabled", "defrag"):
        p = Path("/sys/kernel/mm/transparent_hugepage") / name
        out.append(f"{name}: {p.read_text().strip() if p.exists() else 'n/a'}")
    return "; ".join(out)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.page_faults", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=4177, help="rows (and row length) of the float32 slab")
    p.add_argument("--repeat", type=int, default=7, help="fresh processes of each kind (default %(default)s)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(sys.argv[1:] if argv is None else argv)
    times: dict[str, list[float]] = {"numpy": [], "small pages": []}
    load = os.getloadavg()[0]
    for _ in range(a.repeat):
        for kind in times:
            arg = "numpy" if kind == "numpy" else "small"
            out = subprocess.run([sys.executable, "-c", CHILD, str(a.rows), arg], check=True, capture_output=True,
                                 text=True)
            times[kind].append(float(out.stdout.strip()))
    mb = a.rows * a.rows * 4 / 2**20
    print(f"{a.rows} rows × {a.rows} float32 ({mb:.0f} MB), {a.repeat} fresh processes each, interleaved; "
          f"load {load:.2f} → {os.getloadavg()[0]:.2f}; {_thp()}")
    for kind, v in times.items():
        print(f"  {kind:12s} median {1e3 * statistics.median(v):7.1f} ms   range {1e3 * min(v):.1f}–{1e3 * max(v):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
