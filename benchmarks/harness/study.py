"""The study skeleton: one command line (``study_parser``, ``--docs``, ``--out-dir``), one main loop
(:func:`run_study`: settle, measure each row, record it, render), the reproduce line.

Nothing here imports numpy at module import time.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness.core import Runs, add_run_arguments, log, settle
from benchmarks.harness.measure import machine_info, now_iso
from benchmarks.harness.records import DOCS, RESULTS, append_jsonl, load_store, read_jsonl, save_row


__all__ = ["add_docs_argument", "add_store_arguments", "command_line", "need_sklearn", "page_folder",
           "resolve_store_arguments", "run_study", "Study", "study_parser"]


def _thread_counts(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t]


def study_parser(prog: str, doc: str | None, *, rows: Iterable[str] | None = None, small: str | None = None,
                 interleaved: bool = True, threads: int | str | None = None, out: Path | None = None,
                 docs: bool = False) -> argparse.ArgumentParser:
    """The command line every study shares; the study adds its own flags to the parser returned.

    Parameters
    ----------
    prog : str
        ``python -m benchmarks.<study>``.
    doc : str or None
        The study's module docstring (the help text).
    rows : iterable of str, optional
        The default rows: adds ``--rows`` (comma-separated).
    small : str, optional
        The name of the study's small mode (``quick``, ``small``): adds ``--<small>``.
    interleaved : bool
        Whether the study interleaves ours with an anchor (adds ``--long`` and ``--pair-below``).
    threads : int or str, optional
        The default of ``--threads``: one BLAS thread count (an int; the study pins it before numpy
        is imported with :func:`threads_from_argv`) or a comma-separated list of them (a str, read
        as a list of int; :func:`thread_list_from_argv`).
    out : Path, optional
        The default results file (in :data:`RESULTS`, untracked): adds ``--out``.
    docs : bool
        Whether the study renders a page: adds ``--docs [FOLDER]`` (:func:`add_docs_argument`).

    Returns
    -------
    argparse.ArgumentParser
        Parse it with :meth:`parse_args`, then call :func:`resolve_run_arguments`.
    """
    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if rows is not None:
        p.add_argument("--rows", default=",".join(rows), help="comma-separated rows (default: %(default)s)")
    if small is not None:
        p.add_argument(f"--{small}", action="store_true", help=f"the {small} rows only (a smoke run)")
    add_run_arguments(p, small=small or "quick", interleaved=interleaved)
    if isinstance(threads, str):
        p.add_argument("--threads", type=_thread_counts, default=_thread_counts(threads),
                       help=f"our BLAS thread counts, comma-separated (default {threads})")
    elif threads is not None:
        p.add_argument("--threads", type=int, default=threads, help="BLAS threads, both sides (default %(default)s)")
    if out is not None:
        p.add_argument("--out", type=Path, default=out, help="the JSON-lines results file (default: %(default)s)")
    if docs:
        add_docs_argument(p)
    return p


def add_docs_argument(p: Any) -> None:
    """``--docs [FOLDER]``: write the rendered page (and its plots) into FOLDER, ``docs/benchmarks``
    when no folder is given; without the flag the page goes beside the raw results
    (:func:`page_folder`), so a run never rewrites the committed pages unless asked."""
    p.add_argument("--docs", nargs="?", type=Path, const=DOCS, default=None, metavar="FOLDER",
                   help="write the page (and plots) into FOLDER (default docs/benchmarks); without --docs it goes "
                        "beside the raw results (benchmarks/results/, untracked)")


def page_folder(docs: Path | None, results: Path) -> Path:
    """Where a study's page goes: the ``--docs`` folder when given, else the results' folder."""
    return docs if docs is not None else results


def add_store_arguments(p: Any, store: str) -> None:
    """``--out-dir`` (the folder of a study's store ``store``, default :data:`RESULTS`, its
    ``quick/`` for a small run) and ``--docs`` (:func:`add_docs_argument`); resolved by
    :func:`resolve_store_arguments`."""
    p.add_argument("--out-dir", type=Path, default=None,
                   help=f"the folder of {store}, the raw results (default benchmarks/results; a small run "
                        "benchmarks/results/quick); the page goes there too without --docs")
    add_docs_argument(p)


def resolve_store_arguments(a: Any, small: bool) -> None:
    """Complete ``a.out_dir`` and ``a.docs`` (the page's folder) of :func:`add_store_arguments`."""
    if a.out_dir is None:
        a.out_dir = RESULTS / "quick" if small else RESULTS
    a.docs = page_folder(a.docs, a.out_dir)


@dataclass
class Study:
    """What a study says: its rows, how one row is measured, how its records render.

    Attributes
    ----------
    run_row : callable
        ``run_row(name, args, runs) -> record`` measures one row (with :func:`interleave` on ``runs``);
        a row of several records (one per solver) returns their list.
    render : callable
        ``render(records, args)`` writes the page: from every record of the JSON-lines file at the
        end, or from the store (a dict) after every row when ``store`` is set.
    clean : callable
        Applied to each record before it is written (:func:`clean` with the study's choices).
    store : Path, optional
        A JSON store (:func:`load_store`, :func:`save_row`: one record per row name) instead of
        JSON lines at ``args.out``.
    mode : str
        The store's mode (``full``, ``quick``, ...): a full run drops the rows of small ones.
    meta : callable
        The store's ``_meta`` (machine, time), called after each row.
    key : callable
        A row's key in the store (rows may be objects, not names).
    settle : bool
        Whether :func:`run_study` waits for a quiet machine before the first row; False for a study
        that settles itself before each row (after starting its cluster).
    """

    run_row: Callable[[Any, Any, Runs], dict[str, Any] | list[dict[str, Any]]]
    render: Callable[[Any, Any], None]
    clean: Callable[[dict[str, Any]], Any] = lambda r: r
    store: Path | None = None
    mode: str = "full"
    meta: Callable[[], dict[str, Any]] = dict
    key: Callable[[Any], str] = str
    settle: bool = True


def run_study(study: Study, args: Any, rows: Iterable[Any], *, stamp: dict[str, Any] | None = None,
              head: dict[str, Any] | None = None, runs: Runs | None = None) -> list[dict[str, Any]]:
    """The main loop every study shares: settle, measure each row, record it, render.

    ``args`` carries ``repeat``, ``settle``, ``out`` (JSON lines) and optionally ``long`` /
    ``pair_below``; ``runs`` (a study's own :class:`Runs`) is made from them when not given. The
    settle reading is left in ``args.load_at_start``. Each record gains ``stamp`` (default:
    ``run_id`` and the ``machine``'s CPU) and is written as soon as it is measured (an interrupted
    run keeps what it measured): appended to ``args.out`` after ``head`` (a record describing the
    run) and rendered at the end, or saved in ``study.store`` and rendered after every row.
    Returns this run's records.
    """
    if runs is None:
        given = vars(args)   # a study without an anchor has no --long / --pair-below
        runs = Runs(repeat=args.repeat, long=given.get("long", 300.0), pair_below=given.get("pair_below", 60.0))
    if stamp is None:
        stamp = {"run_id": now_iso(), "machine": machine_info(2).get("cpu")}
    store = load_store(study.store, study.mode) if study.store is not None else None
    if head is not None and store is None:
        append_jsonl(args.out, study.clean(head))
    args.load_at_start = settle(runs, args.settle) if study.settle else None
    done = []
    for name in rows:
        got = study.run_row(name, args, runs)
        for one in got if isinstance(got, list) else [got]:
            rec = study.clean(dict(one, **stamp))
            done.append(rec)
            if study.store is not None and store is not None:
                save_row(study.store, store, study.key(name), rec, study.meta())
                study.render(store, args)
            else:
                append_jsonl(args.out, rec)
    if store is None:
        study.render(read_jsonl(args.out), args)
    return done


def command_line(study: str, argv: list[str]) -> str:
    """``python -m benchmarks.<study> <argv>``, quoted for a shell: the page's "reproduce" line."""
    import shlex

    return " ".join(["python", "-m", f"benchmarks.{study}"] + [shlex.quote(a) for a in argv])


def need_sklearn(study: str, anchor: str) -> bool:
    """Whether scikit-learn (the LIBSVM / LIBLINEAR anchors) is installed; says how to get it if not."""
    try:
        import sklearn.svm  # noqa: F401
    except ImportError:
        log(f"benchmarks.{study}: scikit-learn is needed for the {anchor} anchor: pip install '.[bench]'")
        return False
    return True
