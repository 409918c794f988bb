"""docs/tutorials/incremental.md, executed from the page (its blocks assert what they claim)."""

from __future__ import annotations

import pathlib
import re
from typing import Any

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "tutorials" / "incremental.md"


def test_tutorial_runs_and_its_claims_hold() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) >= 5
    ns: dict[str, Any] = {"__name__": "tutorial_incremental"}
    # the blocks build on each other, as a reader would paste them in order
    exec(compile("\n".join(blocks), str(PAGE), "exec"), ns)  # noqa: S102
    model, loo = ns["model"], ns["loo"]
    assert model.n == 199 and 0 <= loo.errors <= loo.n == 199
    assert ns["more"].x.shape == (300,)
