"""The diff and sweep pages' models, from what compare.diff and the sweep return.

diff_model(DiffResult): stats deltas, per-stage side-by-side hunks (normalised, with the original
line numbers), the passes' divergence and the by-line deltas placed on side a's source.
sweep_model(configs, timing): the table (static columns, timings when timed) and, per axis, the
points of a chart: median time when timed, else the static rank.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from irscope import artifacts
from irscope.artifacts import sourcemap
from irscope.compare import bylines
from irscope.compare.align import token_marks
from irscope.compare.diff import hunks
from irscope.errors import BadInput
from irscope.report.model import first_line
from irscope.sweep.rank import COLUMNS, STATIC_DEFAULT, row, static_best_first

if TYPE_CHECKING:
    from irscope.compare.diff import DiffResult, StageDiff
    from irscope.compare.sides import Side
    from irscope.sweep.configs import Config
    from irscope.sweep.timed import SweepTiming

MAX_ROWS = 4000  # side-by-side rows per stage


def _jsonable(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool, type(None))) else str(v)


def _side(s: Side) -> dict[str, Any]:
    m = s.manifest
    return {
        "label": s.label,
        "folder": str(s.folder),
        "kernel": m.get("kernel"),
        "target": m.get("target"),
        "triton": m.get("triton_version"),
    }


def _direction(a: Any, b: Any) -> str:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return "up" if b > a else "down" if b < a else ""
    return ""


def side_by_side(sd: StageDiff) -> tuple[list[list[Any]], bool]:
    """Rows [tag, a line no, a text, b line no, b text] of the hunks; ["sep"] between hunks; cut or not."""
    la, lb = (sd.a.lines if sd.a else []), (sd.b.lines if sd.b else [])
    oa, ob = (sd.a.origin if sd.a else []), (sd.b.origin if sd.b else [])
    rows: list[list[Any]] = []
    for g, group in enumerate(hunks(sd.opcodes)):
        if g:
            rows.append(["sep"])
        for tag, i1, i2, j1, j2 in group:
            pairs = zip(range(i1, i2), range(j1, j2)) if tag == "equal" else zip_longest(range(i1, i2), range(j1, j2))
            for i, j in pairs:
                rows.append(
                    [
                        tag,
                        oa[i] if i is not None else None,
                        la[i] if i is not None else "",
                        ob[j] if j is not None else None,
                        lb[j] if j is not None else "",
                    ]
                )
        if len(rows) > MAX_ROWS:
            return rows[:MAX_ROWS], True
    return rows, False


FOLD_CONTEXT = 3  # equal lines kept around a change; longer equal runs are folded


def _python_lines(side: Side, stage: str) -> dict[int, list[Any]]:
    """{stage file line: [python line, its text]} from the side's map.json; {} without one."""
    try:
        smap = sourcemap.load(side.folder, side.manifest)
    except BadInput:
        return {}
    out: dict[int, list[Any]] = {}
    for entry in smap.get("lines", []):
        fig: Any = (entry.get("stages") or {}).get(stage) or {}
        for n in fig.get("at", []):
            out.setdefault(n, [entry.get("line"), entry.get("text") or ""])
    return out


def aligned_rows(sd: StageDiff, a: Side, b: Side) -> tuple[list[list[Any]], bool]:
    """The aligned stage, row by row: [kind, a line, a text, b line, b text, a marks, b marks, a python,
    b python]: kind equal | renamed | changed | removed | added | moved; marks: [start, end] character
    ranges of the changed tokens; python: [line, text] from map.json, or null. Equal runs longer than
    2 x FOLD_CONTEXT + 1 are one ["fold", [rows]] row. Cut at MAX_ROWS rows (cut True)."""
    al = sd.alignment
    assert al is not None
    pa, pb = _python_lines(a, sd.stage), _python_lines(b, sd.stage)
    flat: list[list[Any]] = []
    for r in al.rows:
        la = al.a[r.a] if r.a is not None else None
        lb = al.b[r.b] if r.b is not None else None
        ma, mb = token_marks(al, r) if r.kind == "changed" else ([], [])
        flat.append(
            [
                r.kind,
                la.origin if la else None,
                la.text if la else "",
                lb.origin if lb else None,
                lb.text if lb else "",
                [list(x) for x in ma],
                [list(x) for x in mb],
                pa.get(la.origin) if la else None,
                pb.get(lb.origin) if lb else None,
            ]
        )
    rows: list[list[Any]] = []
    run: list[list[Any]] = []

    def close(last: bool) -> None:
        first = not rows
        keep_head = 0 if first else FOLD_CONTEXT
        keep_tail = 0 if last else FOLD_CONTEXT
        if len(run) > keep_head + keep_tail + 1:
            rows.extend(run[:keep_head])
            rows.append(["fold", run[keep_head : len(run) - keep_tail]])
            rows.extend(run[len(run) - keep_tail :])
        else:
            rows.extend(run)
        run.clear()

    for line in flat:
        if line[0] in ("equal", "renamed"):
            run.append(line)
            continue
        if run:
            close(last=False)
        rows.append(line)
    if run:
        close(last=True)
    count = 0
    for k, shown in enumerate(rows):
        count += len(shown[1]) if shown[0] == "fold" else 1
        if count > MAX_ROWS:
            return rows[:k], True
    return rows, False


def _by_line(result: DiffResult) -> dict[str, Any]:
    """Per line of side a's source, what changed; 'available' False (with why) without both maps."""
    a, b = result.a, result.b
    deltas = result.by_line
    try:
        if deltas is None:
            deltas = bylines.by_line(a, b)
        smap = sourcemap.load(a.folder, a.manifest)
    except BadInput as e:
        return {"available": False, "why": str(e)}
    try:
        source = artifacts.read_stage(a.folder, a.manifest, "source") if "source" in a.manifest["stages"] else ""
    except OSError:
        source = ""
    first = first_line(source if isinstance(source, str) else "", smap)
    rows: dict[int, Any] = {}
    other = []
    for d in deltas:
        item = {"line": d.line, "text": d.text, "changes": [[n, _jsonable(x), _jsonable(y)] for n, x, y in d.changes]}
        src = d.line - first + 1
        if d.line and d.file == smap["kernel_file"] and 0 < src <= len(source.splitlines()):
            rows[src] = item
        else:
            other.append(item)
    return {"available": True, "source": source, "first": first, "rows": rows, "other": other}


def diff_model(result: DiffResult) -> dict[str, Any]:
    """The diff page's data."""
    stages = []
    for sd in result.stages:
        aligned = sd.alignment is not None and not sd.equal
        if aligned:
            rows, cut = aligned_rows(sd, result.a, result.b)
        else:
            rows, cut = side_by_side(sd) if not sd.equal else ([], False)
        stages.append(
            {
                "stage": sd.stage,
                "status": sd.status,
                "added": sd.added,
                "removed": sd.removed,
                "rows": rows,
                "cut": cut,
                "aligned": aligned,  # rows are aligned_rows' (the diff's own script, diff.js, draws them)
                "renamed": sd.renamed,
                "moved": sd.moved,
                "words": sd.summary.words() if sd.summary is not None else [],
            }
        )
    passes = None
    if result.passes is not None:
        p = result.passes
        dv = p.divergence
        passes = {
            "a_count": p.a_count,
            "b_count": p.b_count,
            "divergence": (
                "the IR is the same after every pass"
                if dv.where == "none"
                else "the frontend's IR already differs"
                if dv.where == "frontend"
                else f"first differs after {dv.name} ({dv.stage}; pass {dv.a_index} on a, {dv.b_index} on b)"
            ),
            "deltas": [
                [
                    d.stage,
                    d.name,
                    f"+{d.a.added} -{d.a.removed}" if d.a else "did not run",
                    f"+{d.b.added} -{d.b.removed}" if d.b else "did not run",
                ]
                for d in p.deltas
            ],
        }
    return {
        "kind": "diff",
        "title": f"irscope diff: {result.a.label} vs {result.b.label}",
        "a": _side(result.a),
        "b": _side(result.b),
        "equal": result.equal,
        "normalized": result.normalized,
        "sources_differ": result.sources_differ,
        "inputs": [[d.name, _jsonable(d.a), _jsonable(d.b)] for d in result.inputs],
        "stats": [[d.name, _jsonable(d.a), _jsonable(d.b), _direction(d.a, d.b)] for d in result.stats.deltas],
        "stages": stages,
        "passes": passes,
        "by_line": _by_line(result),
    }


def sweep_model(configs: list[Config], timing: SweepTiming | None = None, title: str = "") -> dict[str, Any]:
    """The sweep page's data: the table and, per axis, the chart's points."""
    axes = list(dict.fromkeys(k for c in configs for k in c.values))
    timed_rows = timing.rows if timing else {}
    winner = timing.winner.name if timing and timing.winner else None
    rank = {c.label: i + 1 for i, c in enumerate(static_best_first([c for c in configs if c.usable]))}
    columns = ["#", "config", *axes, "status", *COLUMNS, "static rank"] + (["median us", "vs winner"] if timing else [])
    rows = []
    for c in configs:
        r = row(c)
        cells: list[Any] = [
            c.index,
            c.label,
            *(_jsonable(c.values.get(k)) for k in axes),
            c.status if c.usable else f"{c.status}: {c.reason}",
            *(_jsonable(r[k]) for k in COLUMNS),
            rank.get(c.label),
        ]
        if timing:
            t = timed_rows.get(c.label)
            med = t.median_ms * 1e3 if t and t.median_ms is not None else None
            cells += [
                None if med is None else round(med, 2),
                "winner"
                if c.label == winner
                else None
                if not t or t.vs_winner is None
                else f"{(t.vs_winner - 1) * 100:+.2f}%",
            ]
        rows.append({"cells": cells, "ok": c.usable, "winner": c.label == winner, "spills": c.spills})
    y_name = "median (us)" if timing else f"static rank (1 = best: {STATIC_DEFAULT})"
    charts = []
    for k in axes:
        values = list(dict.fromkeys(_jsonable(c.values.get(k)) for c in configs))
        points = []
        for c in configs:
            t = timed_rows.get(c.label) if timing else None
            y = (t.median_ms * 1e3 if t and t.median_ms is not None else None) if timing else rank.get(c.label)
            if y is not None:
                points.append(
                    {
                        "x": values.index(_jsonable(c.values.get(k))),
                        "y": y,
                        "label": c.label,
                        "winner": c.label == winner,
                    }
                )
        charts.append(
            {"axis": k, "values": [str(v) for v in values], "points": points, "y": y_name, "lower_better": True}
        )
    return {
        "kind": "sweep",
        "title": title or "irscope sweep",
        "columns": columns,
        "rows": rows,
        "charts": charts,
        "timed": timing is not None,
        "notes": list(timing.notes) if timing else [],
    }
