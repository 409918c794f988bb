"""Render benchmark results: the markdown page, convergence plots, and the stdout summary.

The page shows, for every row, the most recent run that measured it (rows measured by an
earlier command stay on the page until measured again).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchmarks.harness import markdown_table, read_jsonl

Record = dict[str, Any]


def read_records(path: Path) -> list[Record]:
    """All JSON lines of a results file (missing file: none)."""
    return read_jsonl(path)


def latest_by_row(records: list[Record]) -> dict[str, list[Record]]:
    """For each row key, the records of the latest run that measured it (rows in first-seen order)."""
    last_run: dict[str, str] = {}
    for r in records:
        last_run[_group(r)] = r["run_id"]    # run ids sort by time; the file is appended in order
    return {k: [r for r in records if _group(r) == k and r["run_id"] == rid] for k, rid in last_run.items()}


def _group(r: Record) -> str:
    """A row at one BLAS thread count: ``ijcnn1_rbf @2t`` (LIBSVM is single-threaded, we are not)."""
    t = r.get("threads")
    return f"{r['key']} @{t}t" if t else str(r["key"])


# ---------------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------------

def _num(v: Any, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return format(v, fmt)


def _rel(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:+.1e}"


def _pair(a: Any, b: Any, fmt: str) -> str:
    return f"{_num(a, fmt)} / {_num(b, fmt)}"


def _anchor_of(recs: list[Record]) -> Record | None:
    for r in recs:
        if r.get("anchor"):
            return r
    return None


def table_rows(groups: dict[str, list[Record]]) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    """(header, rows) of the main table (our strategies) and of the anchor table."""
    head = ["row", "strategy", "time ratio [spread]", "load", "ours s", "anchor s", "rel_obj ours", "rel_obj anchor",
            "KKT gap",
            "iterations ours / LIBSVM", "rows computed", "hit rate", "n_SV ours / LIBSVM", "peak MB ours / LIBSVM"]
    body = []
    ahead = ["row", "anchor", "input", "seconds", "runs", "rel_obj", "KKT gap (ours judging)", "iterations", "n_SV",
             "peak MB", "chosen"]
    abody = []
    for key, recs in groups.items():
        anc = _anchor_of(recs)
        for r in recs:
            if r["solver"] != "qpcore":
                continue
            body.append([
                key, r["strategy"],
                f"{_num(r.get('ratio'), '.2f')} [{_num(r.get('ratio_min'), '.2f')}–{_num(r.get('ratio_max'), '.2f')}]",
                ("LOADED: not claimed" if r.get("loaded_pair") else "quiet") if "loaded_pair" in r else "not recorded",
                _num(r["seconds"], ".2f"),
                _num(r.get("anchor_seconds"), ".2f"), _rel(r.get("rel_obj")), _rel(anc and anc.get("rel_obj")),
                _num(r.get("kkt_gap"), ".2e"), _pair(r.get("iterations"), anc and anc.get("iterations"), "d"),
                _num(r.get("rows_computed"), "d"), _num(r.get("hit_rate"), ".3f"),
                _pair(r.get("n_sv"), anc and anc.get("n_sv"), "d"),
                _pair(r.get("peak_mb"), anc and anc.get("peak_mb"), ".0f"),
            ])
        for r in recs:
            if r["solver"] != "libsvm":
                continue
            abody.append([
                key, r["strategy"], r.get("input", ""), _num(r["seconds"], ".2f"), str(len(r.get("times", []))),
                _rel(r.get("rel_obj")), _num(r.get("kkt_gap"), ".2e"), _num(r.get("iterations"), "d"),
                _num(r.get("n_sv"), "d"), _num(r.get("peak_mb"), ".0f"), "yes" if r.get("anchor") else "",
            ])
    return head, body, ahead, abody


def text_table(head: list[str], body: list[list[str]]) -> str:
    """A plain fixed-width table for the terminal."""
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(head)]
    fmt = "  ".join("{:<%d}" % w for w in widths)
    lines = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in body]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Plot
# ---------------------------------------------------------------------------------------------

def plot_row(key: str, recs: list[Record], out: Path) -> bool:
    """Gap against seconds for our strategies; LIBSVM's final times as vertical lines. False: no matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    tol = None
    for r in recs:
        tol = r.get("tol", tol)
        if r["solver"] == "qpcore" and r.get("trace"):
            t = [p[0] for p in r["trace"]]
            g = [max(p[1], 1e-12) for p in r["trace"]]
            (line,) = ax.plot(t, g, marker=".", markersize=3, linewidth=1.2, label=f"qpcore {r['strategy']} (final {t[-1]:.2f} s)")
            ax.plot(t[-1:], g[-1:], marker="o", color=line.get_color())
    styles = {True: dict(color="black", linestyle="-"), False: dict(color="grey", linestyle=":")}
    for r in recs:
        if r["solver"] == "libsvm":
            ax.axvline(r["seconds"], linewidth=1.2, label=f"LIBSVM {r.get('input', '')} (final, {r['seconds']:.2f} s)",
                       **styles[bool(r.get("anchor"))])
    if tol:
        ax.axhline(tol, color="red", linewidth=0.8, linestyle="--", label=f"tol {tol:g}")
    ax.set_yscale("log")
    ax.set_xlabel("seconds (building the QP + solve)")
    ax.set_ylabel("maximal-violating-pair gap")
    title = recs[0].get("title") or key
    if recs[0].get("subset"):
        title += f" — quick subset of {recs[0]['subset']} rows"
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------

def _machine_line(recs: list[Record]) -> str:
    m = recs[0].get("machine", {})
    git = m.get("git") or {}
    load = m.get("loadavg")
    return (f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores, {m.get('threads', '?')} BLAS/OpenMP threads, "
            f"load average at start {load[0] if load else '?'}; Python {m.get('python')}, numpy {m.get('numpy')}, "
            f"scipy {m.get('scipy')}, scikit-learn {m.get('sklearn')}; commit {git.get('commit')}"
            f"{' (with uncommitted changes)' if git.get('dirty') else ''}")


def _shown(path: Path) -> str:
    from benchmarks.harness.measure import REPO

    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return path.as_posix()


def render(results: Path, docs: Path, *, command: str, plots: bool = True, log: Any = print) -> Path:
    """Write ``docs/README.md`` (tables of the latest run of every row) and one plot per row."""
    groups = latest_by_row(read_records(results))
    head, body, ahead, abody = table_rows(groups)
    docs.mkdir(parents=True, exist_ok=True)
    parts = [
        "# Benchmarks: qpcore against the anchors",
        "",
        "Generated by `python -m benchmarks.run` from "
        f"`{_shown(results)}`; do not edit by hand. What is measured and why: "
        "`docs/BENCHMARKS.md`. Latest command: "
        f"`{command}`.",
        "",
        "Other pages: [GPCG against OSQP, DAQP, quadprog and scipy's nnls / bvls](qp.md)",
        "(`python -m benchmarks.qp`); [INCAS and the incremental SVM against LIBSVM](incas.md)",
        "(`python -m benchmarks.incas`); [ASVM](asvm.md); [scaling](scaling.md); [cutting planes (OCAS,",
        "active-set OCAS, BMRM) against svmocas and LIBLINEAR](ocas.md) (`python -m benchmarks.ocas`).",
        "",
        "## C-SVC dual: SMO against LIBSVM (scikit-learn SVC)",
        "",
        markdown_table(head, body),
        "",
        "- **time ratio** = our median wall time / the anchor's (the faster of LIBSVM on the sparse CSR and on",
        "  the dense array, see below); < 1 means we are faster; [spread] = the lowest and highest of our run",
        "  / the anchor run of the same pass. Runs are interleaved (anchor, ours, anchor, ours, ...), median of 3.",
        "  Each row is measured at 1 BLAS thread (`@1t`) and at 2 (`@2t`); LIBSVM is single-threaded.",
        "- **load**: before every run the load average is recorded, and during it the CPU time other",
        "  processes used (`/proc/stat` minus ours); if any run of the row or of its anchor saw others use more",
        "  than 0.1 of a core, the row says LOADED and its ratio is not claimed. Our time covers building the QP",
        "  (`csvc(...)`, float32 kernel-row cache) and the whole `qpcore.solve`, including its final",
        "  certificate (one fresh Q·α); LIBSVM's covers `SVC.fit`. Reading the file is not timed.",
        "- **rel_obj** = (f − f_ref)/|f_ref| for the dual objective f = ½αᵀQα − eᵀα, both sides' α judged by our",
        "  problem (`qp.objective`); f_ref is the lower of LIBSVM and our wss2 at tol 1e-6",
        "  (`benchmarks/results/reference.json`).",
        "- **KKT gap**: the maximal-violating-pair gap of our final point by `qpcore.kkt` (the stopping",
        "  measure; ≤ tol when converged). **rows computed**: kernel rows evaluated (prefetched blocks",
        "  and the final certificate's Q·α included); **hit rate** = cache hits / (hits + misses) of row requests.",
        "- **peak MB**: resident memory above the level at the start of the run (kernel high-water",
        "  mark `VmHWM`, reset before each run through `/proc/self/clear_refs`).",
        "- Same kernel-cache budget on both sides (`--cache-mb`); LIBSVM runs single-threaded whatever",
        "  the setting, our BLAS (kernel-row GEMMs) uses the configured thread count.",
        "",
        "### The anchor: LIBSVM on sparse and on dense input",
        "",
        markdown_table(ahead, abody),
        "",
        "## Convergence",
        "",
        "KKT gap of our iterate against wall time (recorded every `--trace-interval` seconds by a",
        "qpcore Reporter; the last point is the certified final gap). LIBSVM reports no trace: its",
        "final times are vertical lines (solid: the anchor).",
        "",
    ]
    for key, recs in groups.items():
        png = docs / f"{key.replace(' @', '_').replace('[', '_').replace(']', '').replace(':', '')}_convergence.png"
        if plots and plot_row(key, recs, png):
            parts += [f"![{key}]({png.name})", ""]
        elif plots:
            log("matplotlib is not installed: convergence plots skipped (pip install matplotlib)")
            plots = False
    parts += ["## Machines", ""]
    for key, recs in groups.items():
        parts.append(f"- **{key}** (run {recs[0]['run_id']}): {_machine_line(recs)}")
    parts.append("")
    page = docs / "README.md"
    page.write_text("\n".join(parts))
    return page


def summary(records: list[Record]) -> str:
    """The stdout summary of one run's records."""
    groups: dict[str, list[Record]] = {}
    for r in records:
        groups.setdefault(r["key"], []).append(r)
    head, body, ahead, abody = table_rows(groups)
    return text_table(head, body) + "\n\n" + text_table(ahead, abody)
