"""What ``pip install .`` installs: every package of the checkout, and nothing of tests/benchmarks/docs.

The editable install of a developer sees the checkout, so a sub-package left out of the wheel goes
unnoticed until a fresh, non-editable install (CI's) fails to import it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _config() -> dict[str, Any]:
    with (REPO / "pyproject.toml").open("rb") as f:
        return dict(tomllib.load(f)["tool"]["setuptools"])


def _checkout_packages() -> set[str]:
    """Every folder with an __init__.py under the library's top-level packages."""
    tops = [p for p in REPO.iterdir() if p.is_dir() and (p.name.startswith("qpcore") or p.name in ("strategies", "problems"))
            and (p / "__init__.py").is_file()]
    return {".".join(init.parent.relative_to(REPO).parts) for top in tops for init in top.rglob("__init__.py")}


def test_every_package_is_installed() -> None:
    setuptools = pytest.importorskip("setuptools")
    conf = _config()
    packages = conf.get("packages")
    assert isinstance(packages, dict) and "find" in packages, \
        "list the packages through [tool.setuptools.packages.find], not by hand (a new sub-package is then never missed)"
    found = set(setuptools.find_packages(where=str(REPO), include=packages["find"].get("include", ["*"])))
    expected = _checkout_packages()
    assert "qpcore_strategies.rules" in expected and "qpcore.core" in expected
    assert expected <= found, f"not installed: {sorted(expected - found)}"
    assert not {p for p in found if p.split(".")[0] in ("tests", "benchmarks", "docs")}
