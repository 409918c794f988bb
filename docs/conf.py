"""Sphinx configuration for the qpcore documentation site.

Build (warnings are errors, as in CI)::

    sphinx-build -W --keep-going -b html -d docs/_build/doctrees docs docs/_build/html
    sphinx-build -W --keep-going -b doctest -d docs/_build/doctrees docs docs/_build/doctest

Executed code
-------------
Every ```python block of the tutorial pages (``docs/tutorials/*.md``) is *executed while the
site is built*, by the small local extension ``docs/_ext/qpcore_exec.py``: the blocks of a page
run in order in one fresh namespace (as a reader would paste them), their printed output is
shown under each block, and an exception is reported as a Sphinx warning at the block's line,
so ``-W`` fails the build. No Jupyter kernel and no notebook format are involved, and the pages
stay plain Markdown that GitHub renders and that ``tests/test_tutorial_*.py`` can also run.
The execution happens when a page is read, for any builder; the second command above reuses
the doctrees of the first (``-d``), so the tutorials run once. An incremental build re-reads
(and re-executes) only the pages that changed: add ``-E`` after changing the library itself.
Why not ``sphinx.ext.doctest``'s ``testcode`` blocks or myst-nb: the existing pages are plain
Markdown fences that the test suite also executes (``tests/test_tutorial_rules.py`` and
``tests/test_tutorial_incremental.py`` read them), and this keeps them so, with no kernel.

``sphinx.ext.doctest`` (the second command) runs the ``>>>`` examples of the API reference
(docstrings rendered by autodoc), which the HTML build only displays.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# the flat layout: qpcore, strategies, problems, qpcore_sklearn import from the checkout
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

project = "qpcore"
author = "qpcore developers"
copyright = "qpcore developers"  # noqa: A001
try:
    import qpcore

    release = version = qpcore.__version__
except ImportError:  # pragma: no cover - the build needs qpcore importable
    release = version = "0.1.0"

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "qpcore_exec",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

# Markdown: headings get anchors so that links like ARCHITECTURE.md#layers resolve
myst_heading_anchors = 3

# API reference: autodoc renders the docstrings (numpydoc format), members in source order
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": False}
autodoc_typehints = "none"          # the signatures and numpydoc sections carry the types
autodoc_preserve_defaults = True
numpydoc_show_class_members = False  # no autosummary tables (autodoc lists members already)
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# doctest builder: the API's ``>>>`` examples; the tutorials are executed by qpcore_exec instead
# (an example in a docstring is written in its module's namespace: the public names are imported)
doctest_global_setup = """
import numpy as np
import qpcore
from qpcore import *
from qpcore_strategies import *
from qpcore_sklearn import KernelSVC, LinearSVMClassifier
"""
doctest_test_doctest_blocks = "default"

html_theme = "alabaster"
html_title = f"qpcore {release}"
html_static_path: list[str] = []
html_theme_options = {"description": "Convex QPs with pluggable strategies", "page_width": "1100px"}


# --- docstrings written as plain text ------------------------------------------------------
# The docstrings follow numpydoc's sections but write their mathematics as plain text: |x| for
# absolute values and sizes, Q_:c or w_ for subscripts, "(1) ... (2a) ..." step lists. In reST
# those are substitution references, hyperlink targets and broken enumerations. Before numpydoc
# parses a docstring, this hook escapes "|" and a word-final "_" outside literals, roles and
# code examples, and turns a step list into a line block, so the text renders as written and
# ``-W`` still catches real mistakes (unknown roles, broken sections, failing examples).

import re  # noqa: E402

_PROTECTED = re.compile(r"(``.+?``|:[\w:.-]+:`[^`]*`|`[^`]*`_{0,2})")
_STEP = re.compile(r"^\((\d+[a-z]?)\)\s")


def _escape_text(line: str) -> str:
    parts = _PROTECTED.split(line)
    for k in range(0, len(parts), 2):                 # even parts are outside literals and roles
        parts[k] = re.sub(r"(?<=\w)_(?=\W|$)", r"\\_", parts[k].replace("|", r"\|"))
    return "".join(parts)


def plain_text_docstring(app, what, name, obj, options, lines):  # noqa: ANN001, ARG001
    literal_indent: int | None = None      # inside an indented literal block after "::"
    in_doctest = False
    in_steps = False
    for k, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                continue
            literal_indent = None
        if stripped.startswith(">>>"):
            in_doctest = True
        if in_doctest:
            in_doctest = bool(stripped)
            continue
        if stripped.startswith(".. "):
            continue
        new = _escape_text(line)
        if _STEP.match(new):
            in_steps = True
            new = "| " + new
        elif in_steps:
            if stripped and indent > 0:
                new = "  " + new                # a continuation line of the line block
            else:
                in_steps = False
        lines[k] = new
        if stripped.endswith("::"):
            literal_indent = indent


def skip_member(app, what, name, obj, skip, options):  # noqa: ANN001, ARG001
    # scikit-learn generates set_fit_request / set_score_request ... on every estimator;
    # their docstrings point into sklearn's own glossary
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):  # noqa: ANN001, ANN201
    app.connect("autodoc-process-docstring", plain_text_docstring, priority=400)  # before numpydoc
    app.connect("autodoc-skip-member", skip_member)
