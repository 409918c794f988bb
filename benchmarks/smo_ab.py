"""SMO now against SMO at an earlier commit: the same run from two checkouts, alternated.

    python -m benchmarks.smo_ab                         # against 3777530 (before issue 14)
    python -m benchmarks.smo_ab --base <rev> --rows adult:8000,ijcnn1:20000 --repeat 3

Each run is a fresh process (csvc on the first N rows of a shared data set, RBF, C = 1, SMO with
LIBSVM's second-order rule and shrinking, tol 1e-3, the final certificate included) that imports
the library from one checkout: the working tree, or a temporary ``git worktree`` of ``--base``.
The two alternate (base, ours, base, ours, ...) at ``--threads`` BLAS threads; the table gives
the medians, their ratio, and whether both ended with the same status, iterations and objective.
Read the load before trusting a ratio (``uptime``): nothing here flags a busy machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GAMMA = {"adult": 0.05, "ijcnn1": 1.0}


def child(root: str, name: str, n: int) -> None:
    """One timed run, importing everything from ``root``; prints one JSON line."""
    sys.path.insert(0, root)
    from problems.datasets import load_dataset
    from problems.svm import csvc
    from qpcore import Kernel, solve
    from strategies.smo import SMO

    import problems.datasets as pd
    if not Path(pd.__file__).resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"imported {pd.__file__}, not from {root}")
    X, y = load_dataset(name)
    X, y = X[:n], y[:n]
    t = time.perf_counter()
    p = csvc(X, y, 1.0, Kernel("rbf", gamma=GAMMA[name]), cache_bytes=200 << 20)
    r = solve(p.qp, SMO(), tol=1e-3)
    print(json.dumps({"seconds": time.perf_counter() - t, "status": r.status.code, "iterations": r.iterations,
                      "objective": r.objective}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.smo_ab", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="3777530", help="the earlier commit (default 3777530)")
    ap.add_argument("--rows", default="adult:8000,ijcnn1:20000", help="DATASET:N,... (default adult:8000,ijcnn1:20000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--child", nargs=3, metavar=("ROOT", "DATASET", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(args.threads), "OMP_NUM_THREADS": str(args.threads),
           "MKL_NUM_THREADS": str(args.threads)}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-f", "--detach", str(base), args.base],
                       check=True, capture_output=True)
        try:
            print(f"load before: {os.getloadavg()[0]:.2f}; base {args.base}, {args.threads} BLAS thread(s)")
            print("| row | base s (median) | ours s (median) | ours / base | same status, iterations, objective |")
            print("|---|---|---|---|---|")
            for spec in args.rows.split(","):
                name, n = spec.split(":")
                runs: dict[str, list[dict[str, float | str | int]]] = {"base": [], "ours": []}
                for _ in range(args.repeat):
                    for side, root in (("base", base), ("ours", REPO)):
                        out = subprocess.run([sys.executable, "-m", "benchmarks.smo_ab", "--child", str(root), name, n],
                                             check=True, capture_output=True, text=True, env=env, cwd=REPO)
                        runs[side].append(json.loads(out.stdout.strip().splitlines()[-1]))
                tb = statistics.median(float(r["seconds"]) for r in runs["base"])
                to = statistics.median(float(r["seconds"]) for r in runs["ours"])
                same = all((a["status"], a["iterations"]) == (b["status"], b["iterations"])
                           and abs(float(a["objective"]) - float(b["objective"])) <= 1e-9 * abs(float(b["objective"]))
                           for a, b in zip(runs["base"], runs["ours"]))
                print(f"| {name} first {n} | {tb:.2f} | {to:.2f} | **{to / tb:.2f}** | {'yes' if same else 'NO'} |")
            print(f"load after: {os.getloadavg()[0]:.2f}")
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
