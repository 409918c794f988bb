"""README.md stays true: every Python snippet runs as written from the repository root, every
``qpcore`` command line parses, every ``python -m`` module exists, every link into the repository
resolves, and nothing points outside the repository."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def _commands() -> list[str]:
    """The shell commands of the bash blocks (continuations joined, comments dropped)."""
    out = []
    for block in _blocks("bash"):
        text = block.replace("\\\n", " ")
        for line in text.splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith("#"):
                out.extend(part.strip() for part in re.split(r"&&|;", line) if part.strip())
    return out


PYTHON = _blocks("python")


def test_readme_has_snippets() -> None:
    assert len(PYTHON) >= 3 and any(c.startswith("qpcore ") for c in _commands())


@pytest.mark.parametrize("code", PYTHON, ids=[f"python-{k}" for k in range(len(PYTHON))])
def test_python_snippet_runs_as_written(code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if "sklearn" in code:
        pytest.importorskip("sklearn")
    monkeypatch.chdir(REPO)
    exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})


def test_qpcore_commands_parse() -> None:
    """Each ``qpcore ...`` line is a valid invocation of the parser (options and sub-commands
    that exist); files it names exist in the repository or are written by an earlier line."""
    from qpcore_cli.main import build_parser

    parser = build_parser()
    written: set[str] = set()
    for cmd in _commands():
        if not cmd.startswith("qpcore "):
            continue
        argv = shlex.split(cmd)[1:]
        if "--help" in argv or "--version" in argv:
            continue
        args = parser.parse_args(argv)
        for a in argv:
            if a.startswith("qpcore/") or a.startswith("docs/"):
                assert (REPO / a).exists() or a in written, f"README names a missing file {a!r} in {cmd!r}"
        # outputs of train (the model) and of --json become inputs of later lines
        written.update(v for k, v in vars(args).items() if isinstance(v, str) and k in ("model", "json", "output"))


def test_python_m_modules_exist() -> None:
    for cmd in _commands():
        m = re.match(r"python -m (\S+)", cmd)
        if m and m.group(1) not in ("pytest", "pip", "sphinx"):
            assert importlib.util.find_spec(m.group(1)) is not None, f"README runs a missing module {m.group(1)}"


def test_links_resolve_and_stay_inside() -> None:
    assert "../" not in README, "README points outside the repository"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if re.match(r"[a-z]+://", target):
            continue
        assert (REPO / target).exists(), f"README links to a missing {target!r}"
    for path in re.findall(r"`((?:docs|qpcore|benchmarks|tests)/[^`\s]+)`", README):
        assert (REPO / path).exists() or any(REPO.glob(path)), f"README names a missing {path!r}"


def test_every_package_in_the_layout_exists() -> None:
    layout = README.split("## Layout", 1)[-1]
    for name in re.findall(r"^    (\w+)/", layout, flags=re.M):
        assert (REPO / name).is_dir(), f"README's layout lists {name}/ which does not exist"
    assert os.path.exists(REPO / ".ci" / "run")
