"""The ``--threads N`` argument, read before numpy is imported (OpenBLAS sizes its pool then)."""

from __future__ import annotations


def threads_from_argv(argv: list[str], default: int = 2) -> int:
    """The value of ``--threads N`` / ``--threads=N`` in ``argv``, else ``default``."""
    for k, a in enumerate(argv):
        if a == "--threads" and k + 1 < len(argv):
            return int(argv[k + 1])
        if a.startswith("--threads="):
            return int(a.split("=", 1)[1])
    return default
