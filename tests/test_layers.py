"""The layering rule, bottom up.

``qpcore`` (the problem, loop, certificate, backends, linear algebra and test kit) imports nothing
above it. ``qpcore_formulations`` and ``qpcore_strategies`` build on qpcore alone;
``qpcore_incremental`` on qpcore and the strategies (its models start from SMO); ``qpcore_train`` (multiclass, calibration, model
selection, the lockstep batches) on all of these; the adapters (``qpcore_cli``, ``qpcore_sklearn``,
``qpcore_cvxpy``) sit on top, and no layer below imports them or their libraries. Checked two ways
for every module: importing it in a fresh interpreter leaves no module of a forbidden package in
``sys.modules``, and no ``import`` statement in its source (also inside functions, where a lazy
import hides from the first check) names one.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent

#: package → the packages it must never import
_ADAPTERS = ("qpcore_cli", "qpcore_sklearn", "sklearn", "qpcore_cvxpy", "cvxpy")
_OLD = ("strategies", "problems")   # the deprecated 0.1 names: nothing of ours imports them
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "qpcore": ("qpcore_strategies", "qpcore_incremental", "qpcore_formulations", "qpcore_train", *_OLD, *_ADAPTERS),
    "qpcore_formulations": ("qpcore_strategies", "qpcore_incremental", "qpcore_train", *_OLD, *_ADAPTERS),
    "qpcore_strategies": ("qpcore_formulations", "qpcore_incremental", "qpcore_train", *_OLD, *_ADAPTERS),
    # the incremental models start from a capped SMO run: above the strategies, beside the formulations
    "qpcore_incremental": ("qpcore_formulations", "qpcore_train", *_OLD, *_ADAPTERS),
    "qpcore_train": (*_OLD, *_ADAPTERS),
}

#: optional extras no module may import at import time
OPTIONAL = ("dask", "distributed")

#: modules not checked yet, each with the reason
PENDING: dict[str, str] = {}   # modules exempted from the check, with the reason (none)


def _modules(package: str) -> list[tuple[str, Path]]:
    """``(dotted name, source file)`` of the package and of each of its modules, from the checkout."""
    folder = REPO / package
    found = []
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if path.stem == "__init__" else parts)
        if path.stem != "__main__" and name not in PENDING:
            found.append((name, path))
    return found


CASES = [(pkg, name, path) for pkg in FORBIDDEN for name, path in _modules(pkg)]
IDS = [name for _, name, _ in CASES]


def _is_within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_every_layer_has_modules() -> None:
    for pkg in FORBIDDEN:
        assert _modules(pkg), f"no modules found in {REPO / pkg}"
    assert "qpcore.core.solve" in IDS and "qpcore_strategies.smo" in IDS and "qpcore_formulations.svm" in IDS
    assert "qpcore_train.multiclass" in IDS and "qpcore.backends.operators" in IDS


#: one interpreter imports the libraries every layer may use, then forks a child per module, which
#: imports that module alone and reports ``sys.modules``: a fresh import each, without paying an
#: interpreter's start-up and numpy's and scipy's imports two hundred times
_FORKER = """
import json, os, sys
import numpy, scipy, scipy.sparse, scipy.linalg, attrs
out = {}
for name in sys.argv[1:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            __import__(name)
            text = json.dumps(sorted(sys.modules))
        except BaseException as exc:
            text = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        with os.fdopen(w, "w") as f:
            f.write(text)
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out[name] = json.loads(f.read())
    os.waitpid(pid, 0)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def loaded_by() -> dict[str, Any]:
    """Module → the modules loaded by importing it into a fresh interpreter (or ``{"error": ...}``)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", _FORKER, *IDS], capture_output=True, text=True, cwd=REPO, env=env,
                          stdin=subprocess.DEVNULL, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(("package", "module", "path"), CASES, ids=IDS)
def test_import_loads_no_higher_layer(package: str, module: str, path: Path, loaded_by: dict[str, Any]) -> None:
    """Importing the module in a fresh interpreter loads nothing from a higher layer."""
    loaded = loaded_by[module]
    assert not isinstance(loaded, dict), f"importing {module} failed: {loaded}"
    bad = [m for m in loaded if _is_within(m, FORBIDDEN[package])]
    assert bad == [], f"importing {module} loads {bad}"
    # dask is an optional extra: imported only when chunked data are built, never by an import
    extra = [m for m in loaded if _is_within(m, OPTIONAL)]
    assert extra == [], f"importing {module} loads the optional {extra}"


def _imported_names(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every absolute import in the file, at any depth."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
            names.append((node.lineno, node.module))
    return names


@pytest.mark.parametrize(("package", "module", "path"), CASES, ids=IDS)
def test_source_names_no_higher_layer(package: str, module: str, path: Path) -> None:
    """No import statement in the module, also none inside a function, names a higher layer."""
    bad = [f"{path.name}:{line}: {name}" for line, name in _imported_names(path) if _is_within(name, FORBIDDEN[package])]
    assert bad == [], f"{module} imports from a higher layer: {bad}"


#: the adapters on top: package → the packages beside it that it must never import (source check)
ADAPTERS: dict[str, tuple[str, ...]] = {
    "qpcore_cli": ("qpcore_cvxpy", "cvxpy", *_OLD),
    "qpcore_sklearn": ("qpcore_cvxpy", "cvxpy", *_OLD),
    "qpcore_cvxpy": ("qpcore_cli", "qpcore_sklearn", "sklearn", *_OLD),
}


def test_adapters_import_no_other_adapter() -> None:
    """qpcore_cvxpy may import qpcore, strategies and problems; nothing imports it."""
    bad = [f"{path.name}:{line}: {name}" for pkg, banned in ADAPTERS.items() for _, path in _modules(pkg)
           for line, name in _imported_names(path) if _is_within(name, banned)]
    assert bad == [], f"an adapter imports another: {bad}"


def test_old_command_line_is_gone() -> None:
    """The command line lives in qpcore_cli; qpcore has neither cli.py nor __main__.py."""
    assert not (REPO / "qpcore" / "cli.py").exists()
    assert not (REPO / "qpcore" / "__main__.py").exists()
    assert (REPO / "qpcore_cli" / "__main__.py").is_file()
