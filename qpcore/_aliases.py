"""Old module paths kept importable for one release, each import warning where the module now lives.

A meta-path finder maps an old dotted name to the module that replaced it and hands back that very
module (one object, so ``isinstance`` and monkeypatching still agree); the import warns once with
:class:`DeprecationWarning`. Used by ``qpcore`` for the flat modules that moved into its
sub-packages, and by the old top-level ``strategies`` and ``problems`` packages.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Mapping, Sequence

__all__ = ["install"]


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names of :attr:`aliases` and loads each as the module that replaced it."""

    def __init__(self, aliases: Mapping[str, str]) -> None:
        self.aliases = dict(aliases)
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.aliases:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = self.aliases[spec.name]
        warnings.warn(f"{spec.name} is deprecated and will be removed in the next release: import {new}",
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        # the import machinery stamped the alias's spec on the shared module: give it back its own
        module.__spec__ = self._specs.get(module.__name__, module.__spec__)


def install(aliases: Mapping[str, str]) -> None:
    """Make each old dotted name in ``aliases`` import the module named by its value.

    Parameters
    ----------
    aliases : Mapping[str, str]
        Old module name → the module that replaced it.
    """
    sys.meta_path.insert(0, _AliasFinder(aliases))
