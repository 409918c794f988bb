"""No import cycle in ``qpcore`` and the packages built on it, and the module paths that moved.

The module import graph is built from the source (``ast``): an edge for every ``import`` of a
module of these packages (sub-packages included), also inside functions (a lazy import hides a cycle from the
interpreter, not from the reader), but not under ``if TYPE_CHECKING:`` (annotations only).
``from package import name`` is an edge to the submodule when ``name`` is one, else to the
package. The graph must be acyclic: a cycle means two modules that can only be understood (and
fixed) together, which is what the seam between the loop and the backends avoids.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("qpcore", "qpcore_strategies", "qpcore_incremental", "qpcore_formulations", "qpcore_train")


def _modules() -> dict[str, Path]:
    """Dotted name → source file of every module of :data:`PACKAGES`, sub-packages included."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((REPO / pkg).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            out[".".join(parts[:-1] if path.stem == "__init__" else parts)] = path
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that ``name`` imports (outside ``if TYPE_CHECKING:``)."""
    found: set[str] = set()
    package = name if path.stem == "__init__" else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.add(sub if sub in known else base)
        else:
            visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    """module → the modules of the three packages it imports."""
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a list of modules (the first repeated at the end), or None."""
    state: dict[str, int] = {}          # 1: on the current path, 2: done
    path: list[str] = []

    def dfs(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = dfs(w)
                if found:
                    return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = dfs(v)
            if found:
                return found
    return None


def test_the_graph_sees_every_package() -> None:
    graph = import_graph()
    assert "qpcore.core.solve" in graph and "qpcore_strategies.asvm" in graph and "qpcore_formulations.risk" in graph
    # a few edges the layering relies on, so an empty graph cannot pass
    assert "qpcore.core.certificate" in graph["qpcore.core.solve"]
    assert "qpcore.backends.rowspace" in graph["qpcore_strategies.asvm"]
    assert "qpcore.core.certificate" in graph["qpcore.backends.chunked"]


def test_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_loop_and_the_certificate_do_not_import_the_backend() -> None:
    graph = import_graph()
    for module in ("qpcore.core.solve", "qpcore.core.certificate", "qpcore.core.optimality", "qpcore.backends.vectors", "qpcore.backends.rowspace"):
        assert "qpcore.backends.chunked" not in graph[module], module


@pytest.mark.parametrize("graph,cycle", [
    ({"a": {"b"}, "b": {"a"}}, ["a", "b", "a"]),
    ({"a": {"b"}, "b": {"c"}, "c": {"b"}}, ["b", "c", "b"]),
    ({"a": {"b", "c"}, "b": {"c"}, "c": set()}, None),
])
def test_find_cycle(graph: dict[str, set[str]], cycle: list[str] | None) -> None:
    assert find_cycle(graph) == cycle


def test_lazy_imports_count(tmp_path: Path) -> None:
    # an import inside a function is an edge; one under TYPE_CHECKING is not
    (tmp_path / "m.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import qpcore.core.certificate\n"
                                   "def f():\n    from qpcore.core import solve\n    return solve\n")
    known = {"qpcore.core.certificate": tmp_path, "qpcore.core.solve": tmp_path, "qpcore.core": tmp_path}
    assert _imports("pkg.m", tmp_path / "m.py", known) == {"qpcore.core.solve"}


def test_certificate_module_and_kkt_function() -> None:
    """The certificate's module is ``qpcore.core.certificate``; ``qpcore.kkt`` is the function, and
    no module path ``qpcore.kkt`` shadows it (an import of it would rebind the attribute)."""
    import qpcore
    import qpcore.core.certificate as c

    assert isinstance(c, types.ModuleType) and c.__name__ == "qpcore.core.certificate"
    assert callable(qpcore.kkt) and not isinstance(qpcore.kkt, types.ModuleType)
    assert qpcore.kkt is c.kkt and qpcore.KKT is c.KKT
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("qpcore.kkt")
    assert qpcore.kkt is c.kkt


@pytest.mark.parametrize(("old", "new"), [("qpcore.operators", "qpcore.backends.operators"),
                                          ("qpcore.problem", "qpcore.core.problem")])
def test_old_module_path_warns_and_is_the_same_module(old: str, new: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import qpcore

    # a fresh import: the finder warns when it loads the alias, not on later lookups in sys.modules
    monkeypatch.delitem(sys.modules, old, raising=False)
    monkeypatch.delattr(qpcore, old.rpartition(".")[2], raising=False)
    with pytest.warns(DeprecationWarning, match=rf"{re.escape(old)} is deprecated.*import {re.escape(new)}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__ is not None and module.__spec__.name == new
