"""The documentation site (docs/): its API reference is complete and its targets import.

Fast checks without building the site (the build itself, with the tutorials executed and
warnings as errors, is a step of ``.ci/run``):

- every ``.. automodule::`` / ``.. autoclass::`` / ``.. autofunction::`` target in docs/api
  imports (an attribute target resolves);
- every public module of the packages (qpcore and its sub-packages, the strategies, formulations,
  training layer, qpcore_sklearn, qpcore_cvxpy and qpcore_cli (each ``*.py`` not
  starting with ``_``) has an ``.. automodule::`` in docs/api, so a new module cannot be forgotten;
- every page under docs/ is in a toctree, and every tutorial executes at least one Python block;
- the Sphinx extensions of docs/conf.py import.
"""

from __future__ import annotations

import importlib
import importlib.util
import pathlib
import re
import sys

import pytest

pytest.importorskip("sphinx")

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
API = DOCS / "api"
PACKAGES = ("qpcore", "qpcore_strategies", "qpcore_incremental", "qpcore_formulations", "qpcore_train", "qpcore_sklearn",
            "qpcore_cvxpy", "qpcore_cli")
DIRECTIVE = re.compile(r"^\s*\.\.\s+auto(module|class|function|data|exception)::\s*(\S+)", re.M)


def _targets() -> list[tuple[str, str]]:
    out = []
    for page in sorted(API.glob("*.rst")):
        out += [(kind, name) for kind, name in DIRECTIVE.findall(page.read_text(encoding="utf-8"))]
    return out


def _public_modules() -> list[str]:
    mods = []
    for pkg in PACKAGES:
        mods.append(pkg)
        for p in sorted((ROOT / pkg).rglob("*.py")):
            parts = p.relative_to(ROOT).with_suffix("").parts
            if not any(part.startswith("_") for part in parts):
                mods.append(".".join(parts[:-1] if p.stem == "__init__" else parts))
    return mods


def test_api_targets_import() -> None:
    targets = _targets()
    assert targets, "no autodoc directives found in docs/api"
    for kind, name in targets:
        if kind == "module":
            importlib.import_module(name)
            continue
        module, _, attr = name.rpartition(".")
        obj = importlib.import_module(module)
        assert hasattr(obj, attr), f"docs/api: {kind} target {name} does not exist"


def test_every_public_module_is_documented() -> None:
    if importlib.util.find_spec("sklearn") is None:  # qpcore_sklearn needs the sklearn extra
        pytest.skip("scikit-learn not installed")
    documented = {name for kind, name in _targets() if kind == "module"}
    missing = [m for m in _public_modules() if m not in documented]
    assert not missing, (f"public modules missing from docs/api/*.rst (add an '.. automodule::' "
                         f"section to the package's page): {missing}")
    stale = sorted(documented - set(_public_modules()))
    assert not stale, f"docs/api documents modules that no longer exist: {stale}"


def _toctree_entries(page: pathlib.Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    blocks = re.findall(r"```\{toctree\}\n(.*?)```", text, flags=re.S)
    blocks += re.findall(r"\.\. toctree::\n((?:[ \t]+.*\n|\n)*)", text)
    base = page.parent.relative_to(DOCS)
    out = set()
    for block in blocks:
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith(":"):
                out.add((base / line).as_posix())
    return out


def test_every_page_is_in_a_toctree() -> None:
    pages = {p.relative_to(DOCS).with_suffix("").as_posix()
             for p in DOCS.rglob("*") if p.suffix in (".md", ".rst")
             and not p.relative_to(DOCS).parts[0].startswith("_")}
    listed: set[str] = set()
    for p in DOCS.rglob("*"):
        if p.suffix in (".md", ".rst") and not p.relative_to(DOCS).parts[0].startswith("_"):
            listed |= _toctree_entries(p)
    orphans = sorted(pages - listed - {"index"})
    assert not orphans, f"pages in no toctree (Sphinx warns, and -W fails the build): {orphans}"


def test_tutorials_have_executed_code() -> None:
    for page in sorted((DOCS / "tutorials").glob("*.md")):
        if page.stem == "index":
            continue
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
        assert blocks, f"{page.name}: a tutorial without a ```python block (those are what the build executes)"
        for k, block in enumerate(blocks):
            compile(block, f"{page.name} block {k + 1}", "exec")   # at least valid Python


def test_conf_extensions_import() -> None:
    saved = list(sys.path)
    try:
        ns: dict[str, object] = {"__file__": str(DOCS / "conf.py")}
        # conf.py puts the repository root and docs/_ext on sys.path, as Sphinx runs it
        exec(compile((DOCS / "conf.py").read_text(encoding="utf-8"), str(DOCS / "conf.py"), "exec"), ns)  # noqa: S102
        for ext in ns["extensions"]:  # type: ignore[union-attr]
            importlib.import_module(str(ext))
    finally:
        sys.path[:] = saved
