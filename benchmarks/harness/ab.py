"""Before / after: the same solves from two checkouts of qpcore, alternated in fresh processes.

    python -m benchmarks.ab --base a09b887                         # every row, 3 passes, 1 BLAS thread
    python -m benchmarks.ab --base a09b887 --rows smo:adult:8000,gpcg:box:2000 --repeat 3 --threads 2

Each run is a fresh process that imports qpcore, strategies and problems from one checkout (the
working tree, or a temporary ``git worktree`` of ``--base``), builds the row's problem outside
the timer and times ``qpcore.solve`` alone (its final certificate included). Passes alternate
(base, ours, base, ours, ...); the table gives the medians, their ratio ours / base, and whether
both ended with the same status and objective (relative difference). The 1-minute load average
is read before every run; a row during which it exceeded ``--max-load`` is marked **loaded** and
its ratio is not to be claimed.

Rows (``--rows``, comma-separated ``KIND:DATA[:N]``):

- ``smo:adult:8000``, ``smo:ijcnn1:20000``: C-SVC on the first N rows, RBF (γ 0.05 / 1), C = 1,
  SMO with LIBSVM's second-order rule and shrinking, tol 1e-3, 200 MB row cache.
- ``decomp:adult:8000``: the same problem, ``Decomposition()`` with its defaults.
- ``asvm:adult``, ``asvm:ijcnn1``: ``asvm_dual(X, y, nu=2)`` (C = 1), ASVM at tol 1e-6.
- ``ocas:reuters``, ``ocas:adult``: ``hinge_svm(X, y, C=1, bias=1)``, OCAS with the dense active
  set inside, TolRel 1e-5.
- ``gpcg:box:2000``: the box QP of ``benchmarks/qp.py`` (Q = MᵀM/N + 1e-3 I, M 1.5N × N standard
  normal, bounds ±0.1), GPCG at tol 1e-8.
- ``dask-asvm:7m``: 7,000,000 × 32 rows (x ~ N(0, I), labels the sign of a hidden linear model
  with intercept 0.25, 10 % flipped) in 8 chunks persisted on a local cluster of 2 worker
  processes × 1 thread; chunked ASVM (``qpcore_formulations.asvm.asvm_dual`` on the dask arrays, nu = 2) at tol 1e-6.
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
from typing import Any

REPO = Path(__file__).resolve().parents[2]
GAMMA = {"adult": 0.05, "ijcnn1": 1.0}
DEFAULT_ROWS = ("smo:adult:8000,smo:ijcnn1:20000,decomp:adult:8000,asvm:adult,asvm:ijcnn1,ocas:reuters,ocas:adult,"
                "gpcg:box:2000,dask-asvm:7m")


# the package names of a checkout: strategies → qpcore_strategies and problems → qpcore_formulations
# in 0e04592, so a base before it (the default a09b887) is imported by its old names
NEW_NAMES = {"strategies": "qpcore_strategies", "formulations": "qpcore_formulations",
             "datasets": "qpcore_formulations.data.files"}
OLD_NAMES = {"strategies": "strategies", "formulations": "problems", "datasets": "problems.datasets"}


def _module(root: str, kind: str, sub: str = "") -> Any:
    """The module ``kind`` (+ ``.sub``) of the checkout at ``root``, by that checkout's names; it
    must come from ``root`` (not from the editable install of the working tree)."""
    import importlib

    names = NEW_NAMES if (Path(root) / "qpcore_strategies").is_dir() else OLD_NAMES
    mod = importlib.import_module(names[kind] + (f".{sub}" if sub else ""))
    if not Path(mod.__file__ or "").resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"imported {mod.__file__}, not from {root}")
    return mod


def _dataset(root: str, name: str, n: int | None) -> tuple[Any, Any]:
    X, y = _module(root, "datasets").load_dataset(name)
    return (X[:n], y[:n]) if n else (X, y)


def _dask_data(m: int, chunks: int, client: Any) -> tuple[Any, Any]:
    import dask.array as da
    import numpy as np

    size = -(-m // chunks)
    sizes = tuple(min(size, m - k * size) for k in range(chunks))
    w = np.random.default_rng(12345).standard_normal(32)
    w /= np.linalg.norm(w)

    def block(block_info: Any = None) -> Any:
        lo, hi = block_info[None]["array-location"][0]
        rng = np.random.default_rng((7, lo))
        return rng.standard_normal((hi - lo, 32))

    def labels(Xb: Any, block_info: Any = None) -> Any:
        lo = block_info[None]["array-location"][0][0]
        y = np.where(Xb @ w + 0.25 >= 0, 1.0, -1.0)
        flip = np.random.default_rng((7, lo, 1)).random(y.size) < 0.1
        return np.where(flip, -y, y)

    X = da.map_blocks(block, chunks=(sizes, (32,)), dtype=np.float64)
    y = X.map_blocks(labels, drop_axis=1, dtype=np.float64)
    X, y = client.persist([X, y])
    from distributed import wait

    wait([X, y])
    return X, y


def child(root: str, kind: str, data: str, n: int | None) -> None:
    """One timed run importing the library from ``root``; prints one JSON line."""
    sys.path.insert(0, root)
    import numpy as np

    import qpcore
    if not Path(qpcore.__file__).resolve().is_relative_to(Path(root).resolve()):
        raise SystemExit(f"imported {qpcore.__file__}, not from {root}")
    from qpcore import Kernel, solve

    client = None
    if kind in ("smo", "decomp"):
        X, y = _dataset(root, data, n)
        qp = _module(root, "formulations", "svm").csvc(X, y, 1.0, Kernel("rbf", gamma=GAMMA[data]), cache_bytes=200 << 20).qp
        if kind == "smo":
            strategy: Any = _module(root, "strategies", "smo").SMO()
        else:
            strategy = _module(root, "strategies", "decomposition").Decomposition()
        tol = 1e-3
    elif kind == "asvm":
        asvm_dual, ASVM = _module(root, "formulations", "asvm").asvm_dual, _module(root, "strategies", "asvm").ASVM
        X, y = _dataset(root, data, n)
        qp, strategy, tol = asvm_dual(X, y, nu=2.0).qp, ASVM(), 1e-6
    elif kind == "ocas":
        hinge_svm = _module(root, "formulations", "risk").hinge_svm
        DenseActiveSet = _module(root, "strategies", "active_set").DenseActiveSet
        OCAS = _module(root, "strategies", "cutting_plane").OCAS
        X, y = _dataset(root, data, n)
        qp, strategy, tol = hinge_svm(X, y, C=1.0, bias=1.0).qp, OCAS(inner=DenseActiveSet()), 1e-5
    elif kind == "gpcg":
        GPCG = _module(root, "strategies", "gradient_projection").GPCG
        size = n or 2000
        rng = np.random.default_rng(0)
        M = rng.standard_normal((int(1.5 * size), size))
        Q = M.T @ M / size + 1e-3 * np.eye(size)
        qp = qpcore.QP(Q, rng.standard_normal(size), np.full(size, -0.1), np.full(size, 0.1))
        strategy, tol = GPCG(), 1e-8
    elif kind == "dask-asvm":
        import distributed

        asvm_dual, ASVM = _module(root, "formulations", "asvm").asvm_dual, _module(root, "strategies", "asvm").ASVM
        m = int(float(data.rstrip("m")) * 1e6)
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                           env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
        client = distributed.Client(cluster)
        X, y = _dask_data(m, 8, client)
        qp, strategy, tol = asvm_dual(X, y, nu=2.0, client=client).qp, ASVM(), 1e-6
    else:
        raise SystemExit(f"unknown row kind {kind!r}")
    t = time.perf_counter()
    r = solve(qp, strategy, tol=tol)
    seconds = time.perf_counter() - t
    print(json.dumps({"seconds": seconds, "status": r.status.code, "iterations": r.iterations,
                      "objective": float(r.objective)}))
    if client is not None:
        client.close()


def main(argv: list[str] | None = None) -> int:
    """Run the rows from both checkouts, alternated, and print a markdown table."""
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ab", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="a09b887", help="the earlier commit (default a09b887, before issue 24)")
    ap.add_argument("--rows", default=DEFAULT_ROWS, help="KIND:DATA[:N],... (default: every row)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-load", type=float, default=1.5, help="load average above which a row is flagged")
    ap.add_argument("--child", nargs=4, metavar=("ROOT", "KIND", "DATA", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        root, kind, data, n = args.child
        child(root, kind, data, int(n) if n != "-" else None)
        return 0
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(args.threads), "OMP_NUM_THREADS": str(args.threads),
           "MKL_NUM_THREADS": str(args.threads),
           # the base worktree lives in a temporary folder, where the data would not be found
           "QPCORE_DATA": os.environ.get("QPCORE_DATA", str(REPO.parent / "shared" / "data"))}
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "-f", "--detach", str(base), args.base],
                       check=True, capture_output=True)
        try:
            print(f"base {args.base}, ours {head} (working tree), {args.threads} BLAS thread(s), "
                  f"{args.repeat} passes; load before {os.getloadavg()[0]:.2f}", flush=True)
            print("| row | base s (median) | ours s (median) | **ours / base** | status base / ours | "
                  "iterations base / ours | objective rel. diff | max load |", flush=True)
            print("|---|---|---|---|---|---|---|---|", flush=True)
            for spec in args.rows.split(","):
                parts = spec.split(":")
                kind, data, n = parts[0], parts[1], parts[2] if len(parts) > 2 else "-"
                runs: dict[str, list[dict[str, Any]]] = {"base": [], "ours": []}
                loads: list[float] = []
                for _ in range(args.repeat):
                    for side, root in (("base", base), ("ours", REPO)):
                        loads.append(os.getloadavg()[0])
                        # run as a script from the checkout: a cluster's spawned workers re-import it by path
                        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(root), kind,
                                              data, n], capture_output=True, text=True, env=env, cwd=root)
                        if out.returncode != 0:
                            raise SystemExit(f"{spec} ({side}) failed:\n{out.stderr[-3000:]}")
                        runs[side].append(json.loads(out.stdout.strip().splitlines()[-1]))
                tb = statistics.median(float(r["seconds"]) for r in runs["base"])
                to = statistics.median(float(r["seconds"]) for r in runs["ours"])
                fb, fo = float(runs["base"][0]["objective"]), float(runs["ours"][0]["objective"])
                rel = (fo - fb) / max(abs(fb), 1e-300)
                its = f"{runs['base'][0]['iterations']} / {runs['ours'][0]['iterations']}"
                st = f"{runs['base'][0]['status']} / {runs['ours'][0]['status']}"
                flag = " **loaded**" if max(loads) > args.max_load else ""
                print(f"| {spec} | {tb:.3f} | {to:.3f} | **{to / tb:.2f}** | {st} | {its} | {rel:+.1e} | "
                      f"{max(loads):.2f}{flag} |", flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
