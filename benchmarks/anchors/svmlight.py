"""SVMlight V6.02 (Joachims) as a benchmark anchor: run ``svm_learn``, read its model, judge it.

    bash benchmarks/anchors/setup_svmlight.sh        # once per machine: builds svm_learn into the cache
    python -m benchmarks.anchor_svmlight --rows 3185 --gamma 0.01 -C 100 --tol 1e-6   # one run, printed

Scheinberg compared INCAS with SVMlight, so the INCAS study (:mod:`benchmarks.incas`) runs it
beside LIBSVM. SVMlight is not in the repository (its licence forbids redistribution): the
set-up script builds it from the C sources in the ``svmlight`` 0.4 sdist; :func:`find_svm_learn`
looks in ``$QPCORE_SVMLIGHT_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/qpcore/svmlight``.

One run (:func:`run_svmlight`):

- the training rows are written to a file in SVMlight's format (labels ±1; the file is written
  before the clock starts);
- ``svm_learn -v 0 -z c -t K ... -c C -e ε -m MB -a alphas data model`` runs as a subprocess; the
  time is the wall time of the subprocess alone: SVMlight's parsing of the data file, its
  optimization and its writing of the model and α files (both small). ``-v 0`` because at
  ``-v 1`` it prints and flushes a dot every iteration;
- its point is read twice: α in training order from the ``-a`` file (``%.18g``, mapped to rows;
  the benchmarks judge it with our float64 problem like LIBSVM's α) and the model file (b and each
  support vector as α·y followed by its features), from which :func:`model_objective` computes
  the dual objective ½αᵀQα − eᵀα with our kernel among the support vectors alone.

Tolerance: SVMlight's ``-e ε`` stops when every example satisfies its KKT condition within ε for
the threshold b it keeps (α > 0: y(wᵀx − b) ≤ 1 + ε; α < C: y(wᵀx − b) ≥ 1 − ε). Written with the
dual gradient G = Qα − e this puts every −yᵢGᵢ of LIBSVM's "up" set below −b + ε and every one of
its "low" set above −b − ε, so LIBSVM's stopping quantity m(α) − M(α) is at most 2ε. LIBSVM's tol
bounds m(α) − M(α) itself: :func:`eps_for_tol` maps tol to ε = tol / 2, the same guarantee.

SVMlight stores feature values and its kernel cache in float32, so on data that are not small
integers its kernel differs from our float64 one in the 7th digit.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from qpcore.backends.operators import KernelName

FloatArray = NDArray[np.float64]

VERSION = "V6.02"
SETUP = "bash benchmarks/anchors/setup_svmlight.sh"

# SVMlight's kernel types (-t) by our kernel names; poly and sigmoid use -s for γ and -r for coef0
_KERNEL_TYPE: dict[KernelName, int] = {"linear": 0, "poly": 1, "rbf": 2, "sigmoid": 3}
_KERNEL_NAME: dict[int, KernelName] = {v: k for k, v in _KERNEL_TYPE.items()}


# ---------------------------------------------------------------------------------------------
# Where the binary is
# ---------------------------------------------------------------------------------------------

def svmlight_dir() -> Path:
    """The folder the set-up script builds into: ``$QPCORE_SVMLIGHT_DIR``, else
    ``${XDG_CACHE_HOME:-~/.cache}/qpcore/svmlight``."""
    env = os.environ.get("QPCORE_SVMLIGHT_DIR")
    if env:
        return Path(env).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "qpcore" / "svmlight"


def find_svm_learn() -> Path | None:
    """The ``svm_learn`` executable built by the set-up script, or None when absent."""
    path = svmlight_dir() / "svm_learn"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def missing_message() -> str:
    """What to say when the binary is absent."""
    return f"SVMlight not built ({svmlight_dir() / 'svm_learn'} absent; run `{SETUP}`)"


def eps_for_tol(tol: float) -> float:
    """SVMlight's ``-e`` giving LIBSVM's guarantee at ``tol``: m(α) − M(α) ≤ 2ε, so ε = tol / 2."""
    return tol / 2.0


# ---------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------

def write_data(out: TextIO, X: Any, y: Any) -> None:
    """Rows of X with labels ±1 in SVMlight's (= LIBSVM's) format: ``±1 j:v ...``, j from 1, increasing.

    Zeros are left out; values are written with ``repr`` (shortest exact decimal). A label 0 would
    mean "unlabelled" to SVMlight (transduction), so y must be ±1.
    """
    yv = np.asarray(y, dtype=np.float64).ravel()
    if not np.all(np.abs(yv) == 1.0):
        raise ValueError("labels must be +1 or -1")
    A = sp.csr_matrix(X, dtype=np.float64)
    A.eliminate_zeros()
    A.sort_indices()
    if A.shape[0] != yv.size:
        raise ValueError(f"{A.shape[0]} rows but {yv.size} labels")
    ip, ind, val = A.indptr, A.indices, A.data
    lines = []
    for i in range(A.shape[0]):
        s, e = ip[i], ip[i + 1]
        feats = " ".join(f"{j + 1}:{v!r}" for j, v in zip(ind[s:e].tolist(), val[s:e].tolist()))
        lines.append(("+1 " if yv[i] > 0 else "-1 ") + feats)
    out.write("\n".join(lines) + "\n")


@dataclass(frozen=True)
class SVMlightModel:
    """What an SVMlight model file says (classification; the decision is Σ coef·K(sv, x) − b).

    Attributes
    ----------
    kernel_type : int
        0 linear, 1 polynomial (s·uᵀv + r)^d, 2 RBF exp(−g‖u − v‖²), 3 sigmoid tanh(s·uᵀv + r).
    degree, gamma, coef_lin, coef_const : int, float, float, float
        The -d, -g, -s and -r parameters.
    highest_feature, n_train : int
        Highest feature index of the training data, number of training rows.
    b : float
        The threshold.
    coef : ndarray, shape (n_sv,)
        α·y of each support vector, in the file's order.
    sv : scipy.sparse.csr_matrix, shape (n_sv, highest_feature)
        The support vectors (feature j of the file in column j − 1).
    """

    kernel_type: int
    degree: int
    gamma: float
    coef_lin: float
    coef_const: float
    highest_feature: int
    n_train: int
    b: float
    coef: FloatArray
    sv: Any

    @property
    def n_sv(self) -> int:
        """Number of support vectors."""
        return int(self.coef.size)

    def kernel(self) -> Any:
        """The model's kernel as a :class:`qpcore.Kernel`."""
        from qpcore import Kernel

        name = _KERNEL_NAME.get(self.kernel_type)
        if name is None:
            raise ValueError(f"SVMlight kernel type {self.kernel_type} (user defined) has no qpcore equivalent")
        if name == "linear":
            return Kernel("linear")
        if name == "rbf":
            return Kernel("rbf", gamma=self.gamma)
        return Kernel(name, gamma=self.coef_lin, degree=self.degree, coef0=self.coef_const)


_HEADER = ("version", "kernel type", "-d", "-g", "-s", "-r", "-u", "highest feature index",
           "number of training documents", "number of support vectors plus 1", "threshold b")


def parse_model(text: str) -> SVMlightModel:
    """Read an SVMlight model file's text (the 11 header lines, then one line per support vector:
    α·y, then ``j:v`` pairs, then ``#`` and an optional comment).

    Raises
    ------
    ValueError
        On anything that is not an SVMlight model of this layout (wrong version, too few lines,
        a malformed pair, a count that does not match).
    """
    lines = text.splitlines()
    if len(lines) < len(_HEADER):
        raise ValueError(f"an SVMlight model has at least {len(_HEADER)} header lines, got {len(lines)}")
    if not lines[0].startswith("SVM-light Version"):
        raise ValueError(f"not an SVMlight model file (first line {lines[0]!r})")
    if lines[0].split()[-1] != VERSION:
        raise ValueError(f"model of SVMlight {lines[0].split()[-1]}, expected {VERSION}")

    def field(k: int) -> str:
        head = lines[k].split("#", 1)[0].strip()
        if k != 6 and not head:
            raise ValueError(f"header line {k + 1} ({_HEADER[k]}) is empty")
        return head

    try:
        kernel_type, degree = int(field(1)), int(field(2))
        gamma, coef_lin, coef_const = float(field(3)), float(field(4)), float(field(5))
        highest, n_train, n_plus_1 = int(field(7)), int(field(8)), int(field(9))
        b = float(field(10))
    except ValueError as e:
        raise ValueError(f"malformed SVMlight model header: {e}") from None
    body = [ln for ln in lines[len(_HEADER):] if ln.strip()]
    if len(body) != n_plus_1 - 1:
        raise ValueError(f"the header announces {n_plus_1 - 1} support vectors, the file has {len(body)}")
    coef = np.empty(len(body))
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    for r, ln in enumerate(body):
        parts = ln.split("#", 1)[0].split()
        try:
            coef[r] = float(parts[0])
            last = 0
            for pair in parts[1:]:
                j_text, v_text = pair.split(":", 1)
                if j_text in ("qid", "sid", "cost"):
                    continue
                j = int(j_text)
                if j <= last or j > highest:
                    raise ValueError(f"feature index {j} out of order or above {highest}")
                last = j
                indices.append(j - 1)
                data.append(float(v_text))
        except (ValueError, IndexError) as e:
            raise ValueError(f"support vector line {r + 1}: {e}") from None
        indptr.append(len(indices))
    sv = sp.csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64),
                        np.asarray(indptr, dtype=np.int64)), shape=(len(body), max(highest, 1)))
    return SVMlightModel(kernel_type=kernel_type, degree=degree, gamma=gamma, coef_lin=coef_lin,
                         coef_const=coef_const, highest_feature=highest, n_train=n_train, b=b, coef=coef, sv=sv)


def model_objective(model: SVMlightModel, kernel: Any = None, block: int = 2048) -> float:
    """The dual objective ½αᵀQα − eᵀα of a model, from its support vectors alone.

    With cᵢ = αᵢyᵢ (the model's coefficients) and yᵢ² = 1, αᵀQα = cᵀKc over the support vectors
    and eᵀα = Σ|cᵢ|. K is evaluated by our kernel (``kernel``, default the model's) in row blocks
    of ``block`` so that memory stays ``block × n_sv``.
    """
    k = model.kernel() if kernel is None else kernel
    c = model.coef
    if c.size == 0:
        return 0.0
    quad = 0.0
    for s in range(0, c.size, block):
        rows = model.sv[s:s + block]
        quad += float(c[s:s + block] @ (k.block(rows, model.sv) @ c))
    return 0.5 * quad - float(np.abs(c).sum())


def read_alphas(text: str, n: int, C: float) -> FloatArray:
    """α in training order from an ``-a`` file (one α·y a line), clipped to [0, C]."""
    vals = np.array([float(t) for t in text.split()], dtype=np.float64)
    if vals.size != n:
        raise ValueError(f"the alpha file has {vals.size} values for {n} training rows")
    return np.clip(np.abs(vals), 0.0, C)


# ---------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------

def kernel_options(kernel: Any) -> list[str]:
    """svm_learn's kernel options for a :class:`qpcore.Kernel` (linear, rbf, poly, sigmoid)."""
    t = _KERNEL_TYPE.get(kernel.name)
    if t is None:
        raise ValueError(f"SVMlight has no {kernel.name!r} kernel")
    if kernel.name == "linear":
        return ["-t", "0"]
    if kernel.name == "rbf":
        return ["-t", "2", "-g", repr(float(kernel.gamma))]
    return ["-t", str(t), "-d", str(int(kernel.degree)), "-s", repr(float(kernel.gamma)),
            "-r", repr(float(kernel.coef0))]


def svm_learn_command(binary: Path | str, data: Path | str, model: Path | str, alphas: Path | str, C: float,
                      kernel: Any, *, eps: float, cache_mb: int, qp_size: int | None = None,
                      new_vars: int | None = None) -> list[str]:
    """The ``svm_learn`` command line of one run (classification, biased hyperplane, shrinking and
    the final optimality check on, as SVMlight defaults; -q/-n only when given)."""
    cmd = [str(binary), "-v", "0", "-z", "c", *kernel_options(kernel), "-c", repr(float(C)),
           "-e", repr(float(eps)), "-m", str(int(cache_mb))]
    if qp_size is not None:
        cmd += ["-q", str(int(qp_size))]
    if new_vars is not None:
        cmd += ["-n", str(int(new_vars))]
    return cmd + ["-a", str(alphas), str(data), str(model)]


def _timed_subprocess(cmd: list[str], log: TextIO, timeout: float | None) -> tuple[float, int, bool, float]:
    """Run cmd (stdin closed: SVMlight waits for a key after an error), its output into ``log``.

    Returns (wall seconds from spawn to reaping, exit code, killed on timeout, peak RSS MiB of
    the child). ``os.wait4`` reaps the child itself to get its own resource usage.
    """
    killed = threading.Event()
    lock = threading.Lock()
    reaped = False
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def stop() -> None:
        # os.kill, not proc.kill: Popen's kill polls and could reap the child before wait4 does;
        # the lock keeps the pid ours (it cannot be reused before wait4 reaps it)
        with lock:
            if not reaped:
                killed.set()
                os.kill(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, stop) if timeout is not None else None
    if timer is not None:
        timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        with lock:
            reaped = True
    finally:
        if timer is not None:
            timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return seconds, proc.returncode, killed.is_set(), usage.ru_maxrss / 1024.0


def run_svmlight(X: Any, y: Any, C: float, kernel: Any, *, tol: float = 1e-3, eps: float | None = None,
                 cache_mb: int = 200, qp_size: int | None = None, new_vars: int | None = None,
                 timeout: float | None = None, binary: Path | str | None = None,
                 model_objective_too: bool = True) -> dict[str, Any]:
    """Train SVMlight on (X, y) once; the record the benchmarks keep of an anchor run.

    Parameters
    ----------
    X : array or sparse matrix, shape (n, d)
    y : array, shape (n,), values ±1
    C : float
    kernel : qpcore.Kernel
        linear, rbf, poly or sigmoid.
    tol : float
        LIBSVM's tolerance; SVMlight gets ``-e eps_for_tol(tol)`` unless ``eps`` is given.
    eps : float, optional
        SVMlight's ``-e`` itself.
    cache_mb : int
        ``-m``, SVMlight's kernel cache in MB.
    qp_size, new_vars : int, optional
        ``-q`` and ``-n`` (SVMlight's defaults 10 and q when absent).
    timeout : float, optional
        Seconds after which the subprocess is killed (the record then says so).
    binary : path, optional
        The executable (default :func:`find_svm_learn`).
    model_objective_too : bool
        Also compute the objective from the model file's support vectors (``objective_model``).

    Returns
    -------
    dict
        ``seconds`` (the subprocess's wall time; inf when stopped, nan on error), ``x`` (α in
        training order), ``n_sv``, ``n_at_bound``, ``b``, ``objective_model``, ``eps``, ``peak_mb``
        (the child's peak RSS), ``status`` ("finished": at ``-v 0`` SVMlight reports no status;
        the caller judges the point), ``command``; ``timeout``/``limit`` or ``error`` when it failed.
    """
    exe = Path(binary) if binary is not None else find_svm_learn()
    if exe is None:
        raise FileNotFoundError(missing_message())
    e = eps_for_tol(tol) if eps is None else float(eps)
    yv = np.asarray(y, dtype=np.float64).ravel()
    n = yv.size
    with tempfile.TemporaryDirectory(prefix="qpcore-svmlight-") as tmp:
        d = Path(tmp)
        data, model, alphas, log = d / "train.dat", d / "model", d / "alphas", d / "stdout"
        with open(data, "w") as f:
            write_data(f, X, yv)
        cmd = svm_learn_command(exe, data, model, alphas, C, kernel, eps=e, cache_mb=cache_mb, qp_size=qp_size,
                                new_vars=new_vars)
        with open(log, "w") as lf:
            seconds, code, killed, peak = _timed_subprocess(cmd, lf, timeout)
        shown = " ".join([exe.name] + cmd[1:-4] + ["-a", "ALPHAS", "DATA", "MODEL"])   # no temporary paths
        if killed:
            return {"seconds": float("inf"), "status": f"> {timeout:g} s (stopped)", "timeout": True,
                    "limit": timeout, "command": shown, "eps": e}
        out_text = log.read_text(errors="replace")
        if code != 0 or not model.is_file() or not alphas.is_file():
            tail = " ".join(out_text.split()[-30:])
            return {"seconds": float("nan"), "status": f"error: exit {code}: {tail}"[:300], "error": True,
                    "command": shown, "eps": e}
        m = parse_model(model.read_text())
        x = read_alphas(alphas.read_text(), n, C)
    at_bound = int(np.count_nonzero(np.abs(m.coef) >= C * (1.0 - 1e-12)))
    rec: dict[str, Any] = {"seconds": seconds, "x": x, "n_sv": m.n_sv, "n_at_bound": at_bound, "b": m.b,
                           "eps": e, "peak_mb": peak, "status": "finished", "command": shown}
    if model_objective_too:
        rec["objective_model"] = model_objective(m, kernel)
    return rec


# ---------------------------------------------------------------------------------------------
# CLI: one run on a subset, printed (a check, not a benchmark: nothing is stored)
# ---------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.anchor_svmlight", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="adult", help="a shared data set (default adult)")
    p.add_argument("--rows", type=int, default=3185, help="the first rows of the seeded order (default 3185)")
    p.add_argument("--seed", type=int, default=12, help="the seed of the order (default 12, as benchmarks.incas)")
    p.add_argument("--kernel", default="rbf", choices=("linear", "rbf", "poly", "sigmoid"))
    p.add_argument("--gamma", type=float, default=0.01)
    p.add_argument("--degree", type=int, default=3)
    p.add_argument("--coef0", type=float, default=0.0)
    p.add_argument("-C", type=float, default=100.0)
    p.add_argument("--tol", type=float, default=1e-6, help="LIBSVM's tol; SVMlight gets -e tol/2")
    p.add_argument("--cache-mb", type=int, default=1000)
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    if find_svm_learn() is None:
        print(missing_message(), file=sys.stderr)
        return 2
    from benchmarks.studies.svm import judge
    from qpcore_formulations.data.files import load_dataset
    from qpcore_formulations.svm import csvc
    from qpcore import Kernel

    X, y = load_dataset(a.data)
    order = np.random.default_rng(a.seed).permutation(X.shape[0])[:a.rows]
    Xs = sp.csr_matrix(X, dtype=np.float64)[order]
    ys = np.where(np.asarray(y)[order] > 0, 1.0, -1.0)
    k = (Kernel("linear") if a.kernel == "linear" else Kernel("rbf", gamma=a.gamma) if a.kernel == "rbf"
         else Kernel(a.kernel, gamma=a.gamma, degree=a.degree, coef0=a.coef0))
    r = run_svmlight(Xs, ys, a.C, k, tol=a.tol, cache_mb=a.cache_mb)
    print(f"{r['command']}: {r['status']}, {r['seconds']:.3g} s (subprocess wall time)")
    if "x" in r:
        qp = csvc(Xs, ys, a.C, k, cache_bytes=0, dtype=np.float64).qp
        jd = judge(qp, r["x"])
        print(f"n_SV {r['n_sv']} ({r['n_at_bound']} at C); objective from the α file {jd['objective']:.12g}, "
              f"from the model file {r['objective_model']:.12g}; our KKT gap {jd['kkt_gap']:.2e}")
    return 0


__all__ = ["SVMlightModel", "eps_for_tol", "find_svm_learn", "kernel_options", "missing_message",
           "model_objective", "parse_model", "read_alphas", "run_svmlight", "svm_learn_command", "svmlight_dir",
           "write_data"]

if __name__ == "__main__":
    sys.exit(main())
