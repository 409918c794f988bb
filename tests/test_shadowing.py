"""A user's own modules in the working directory shadow nothing of ours.

Python puts the working directory (``python -c``) or the script's folder (``python script.py``) first
on ``sys.path``, so a ``strategies.py`` of hypothesis strategies, a ``problems.py`` or a
``hypothesis.py`` helper next to the user's script is found before any installed module of that
name. The 0.1 top-level packages ``strategies`` and ``problems`` were shadowed that way; their
code now lives in ``qpcore_strategies`` and ``qpcore_formulations``, and nothing of ours imports a
top-level name a user is likely to have. Checked in a fresh interpreter whose first path entry is
a folder of such files, each of which fails loudly when imported: the packages import and a
small fit runs. Without such files the deprecated ``strategies`` still imports, with a warning.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: names a user's folder plausibly holds (none a standard-library module): the old top-level
#: packages, hypothesis itself, and short names our sub-modules use
SHADOWS = ("strategies", "problems", "hypothesis", "testing", "generators", "points", "kernels", "operators",
           "problem", "solve", "data", "model", "common", "svm", "train", "multiclass", "pipeline")

RUN = """
import os, sys
first = os.path.realpath(sys.path[0] or os.getcwd())
assert first == os.path.realpath(os.getcwd()), ("the working directory is not first on sys.path", sys.path[:3])
import qpcore_sklearn, qpcore_cli, qpcore_strategies, qpcore_train.multiclass
import numpy as np
from qpcore_sklearn import KernelSVC
X = np.array([[0.0, 0.0], [0.3, 0.1], [0.1, 0.4], [2.0, 2.0], [2.2, 1.7], [1.8, 2.3]])
y = np.array([0, 0, 0, 1, 1, 1])
clf = KernelSVC(C=10.0, kernel="rbf", gamma=0.5).fit(X, y)
assert clf.predict(X).tolist() == y.tolist(), clf.predict(X)
print("fitted")
"""


def _env() -> dict[str, str]:
    # the checkout after the working directory, as an editable install puts it
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def _shadowing_folder(folder: Path) -> Path:
    for name in SHADOWS:
        (folder / f"{name}.py").write_text(
            f"raise RuntimeError('the user\\'s own {name}.py was imported by a library module')\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("how", ["-c", "script"])
def test_user_modules_in_the_working_directory_break_nothing(tmp_path: Path, how: str) -> None:
    folder = _shadowing_folder(tmp_path)
    if how == "-c":
        command = [sys.executable, "-c", RUN]
    else:
        (folder / "fit_my_model.py").write_text(RUN, encoding="utf-8")
        command = [sys.executable, str(folder / "fit_my_model.py")]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=folder, env=_env(), stdin=subprocess.DEVNULL,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "fitted"


def test_the_shadow_files_do_shadow(tmp_path: Path) -> None:
    """The check has teeth: in that folder a plain ``import strategies`` gets the user's file."""
    folder = _shadowing_folder(tmp_path)
    proc = subprocess.run([sys.executable, "-c", "import strategies"], capture_output=True, text=True, cwd=folder,
                          env=_env(), stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode != 0 and "the user's own strategies.py was imported" in proc.stderr


def test_deprecated_strategies_alias_imports_and_warns(tmp_path: Path) -> None:
    """With no such user file, ``import strategies.smo`` is the deprecated alias: it works, gives
    qpcore_strategies.smo itself, and warns where the module now lives."""
    code = """
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import strategies.smo
import qpcore_strategies.smo
assert strategies.smo is qpcore_strategies.smo
assert strategies.smo.SMO is qpcore_strategies.smo.SMO
for w in caught:
    if issubclass(w.category, DeprecationWarning):
        print(str(w.message))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=_env(),
                          stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 0, proc.stderr
    messages = proc.stdout.strip().splitlines()
    assert any("'strategies' is deprecated" in m and "qpcore_strategies" in m for m in messages), messages
    assert any("strategies.smo is deprecated" in m and "import qpcore_strategies.smo" in m for m in messages), messages
