"""Execute the Python code blocks of the tutorial pages while Sphinx reads them.

For every document under ``tutorials/`` the ``python`` literal blocks (Markdown ```python
fences, or reST ``code-block:: python``) run in order in one fresh namespace, with the working
directory at the repository root. What a block prints is inserted under it as an "Output" block.
An exception becomes a Sphinx warning at the block's source line (``-W`` turns it into a build
failure), and the page's later blocks are skipped.

A block whose first line is ``# not executed`` is shown but not run (none of the tutorials
needs it today). Set ``QPCORE_DOCS_EXEC=0`` to skip execution (a quick look at the layout).
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import traceback
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

#: documents (docnames) whose Python blocks are executed
PREFIXES = ("tutorials/",)
SKIP_MARK = "# not executed"


def _python_blocks(doctree: nodes.document) -> list[nodes.literal_block]:
    out = []
    for node in doctree.findall(nodes.literal_block):
        lang = node.get("language", "")
        if lang in ("python", "python3", "py") and not node.get("qpcore_output"):
            out.append(node)
    return out


def execute_page(app: Sphinx, doctree: nodes.document) -> None:
    docname = app.env.docname
    if not docname.startswith(PREFIXES) or os.environ.get("QPCORE_DOCS_EXEC", "1") == "0":
        return
    root = Path(app.confdir).parent
    ns: dict[str, Any] = {"__name__": f"docs_{docname.replace('/', '_')}"}
    start = time.perf_counter()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for block in _python_blocks(doctree):
            code = block.astext()
            if code.lstrip().startswith(SKIP_MARK):
                continue
            buf = io.StringIO()
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(code, f"{docname} (line {block.line})", "exec"), ns)  # noqa: S102
            except BaseException:  # noqa: BLE001 - every failure is a build warning
                logger.warning("code block failed:\n%s", traceback.format_exc(limit=-4),
                               location=block, type="qpcore_exec", subtype="failure")
                break
            text = buf.getvalue().rstrip("\n")
            if text:
                out = nodes.literal_block(text, text, language="none", classes=["qpcore-output"])
                out["qpcore_output"] = True
                caption = nodes.paragraph("", "", nodes.emphasis("", "Output:"))
                caption["classes"].append("qpcore-output-caption")
                parent, idx = block.parent, block.parent.index(block)
                parent.insert(idx + 1, caption)
                parent.insert(idx + 2, out)
    finally:
        os.chdir(cwd)
    logger.info("qpcore_exec: %s executed in %.1f s", docname, time.perf_counter() - start)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", execute_page)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
