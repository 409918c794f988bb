"""The layering rule: ``qpcore`` ← ``strategies`` ← ``problems`` ← ``qpcore_cli``.

``qpcore`` imports nothing from ``strategies``, ``problems`` or ``qpcore_cli``; ``strategies``
nothing from ``problems`` or ``qpcore_cli``; ``problems`` nothing from ``qpcore_cli``. None of the
three imports the adapters on top, ``qpcore_sklearn`` and ``qpcore_cvxpy``, or their libraries.  Checked two
ways for every module: importing it in a fresh interpreter leaves no module of a higher layer in
``sys.modules``, and no ``import`` statement in its source (also inside functions, where a lazy
import hides from the first check) names a higher layer.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: package → the packages it must never import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "qpcore": ("strategies", "problems", "qpcore_cli", "qpcore_sklearn", "sklearn", "qpcore_cvxpy", "cvxpy"),
    "strategies": ("problems", "qpcore_cli", "qpcore_sklearn", "sklearn", "qpcore_cvxpy", "cvxpy"),
    "problems": ("qpcore_cli", "qpcore_sklearn", "sklearn", "qpcore_cvxpy", "cvxpy"),
}

#: optional extras no module may import at import time
OPTIONAL = ("dask", "distributed")

#: modules not checked yet, each with the reason
PENDING: dict[str, str] = {}   # modules exempted from the check, with the reason (none)


def _modules(package: str) -> list[tuple[str, Path]]:
    """``(dotted name, source file)`` of the package and of each of its modules, from the checkout."""
    folder = REPO / package
    found = []
    for path in sorted(folder.glob("*.py")):
        name = package if path.stem == "__init__" else f"{package}.{path.stem}"
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
    assert "qpcore.solve" in IDS and "strategies.smo" in IDS and "problems.svm" in IDS


@pytest.mark.parametrize(("package", "module", "path"), CASES, ids=IDS)
def test_import_loads_no_higher_layer(package: str, module: str, path: Path) -> None:
    """Importing the module in a fresh interpreter loads nothing from a higher layer."""
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
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
    "qpcore_cli": ("qpcore_cvxpy", "cvxpy"),
    "qpcore_sklearn": ("qpcore_cvxpy", "cvxpy"),
    "qpcore_cvxpy": ("qpcore_cli", "qpcore_sklearn", "sklearn"),
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
