"""The diff and sweep pages' models, from what compare.diff and the sweep return.

diff_model(DiffResult): stats deltas, per-stage side-by-side hunks (normalised, with the original
line numbers), the passes' divergence and the by-line deltas placed on side a's source.
sweep_model(configs, timing): the table (static columns, timings when timed) and, per axis, the
points of a chart: median time when timed, else the static rank.
"""

from __future__ import annotations

from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irscope import artifacts
from irscope.artifacts import sourcemap
from irscope.compare import bylines
from irscope.compare.align import token_marks
from irscope.compare.command import findings_diff
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


def _value(v: Any) -> Any:
    """A stat's value as the view formats it (views/diff: {128: 4} as '4x128b', a list of layouts as
    '2 layouts'): numbers, text, and lists and dicts of them, kept; anything else as text."""
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {k if isinstance(k, (int, str)) else str(k): _value(x) for k, x in v.items()}
    return _jsonable(v)


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
        item = {"line": d.line, "text": d.text, "changes": [[n, _value(x), _value(y)] for n, x, y in d.changes]}
        src = d.line - first + 1
        if d.line and d.file == smap["kernel_file"] and 0 < src <= len(source.splitlines()):
            rows[src] = item
        else:
            other.append(item)
    return {"available": True, "source": source, "first": first, "rows": rows, "other": other}


TITLE_ITEMS = 4  # differences named in a diff page's title; more are counted


def _what(name: str, v: Any) -> str:
    """One input of one side, as a title says it: 'num_stages=3', 'cuda:90', 'Triton 3.6.0'."""
    if name == "target":
        return str(v)
    if name == "triton_version":
        return f"Triton {v}"
    if name == "file":
        return Path(str(v)).name
    key = name.split(".", 1)[-1]
    return f"no {key}" if v is None else f"{key}={v}"


def shown_inputs(a: Side, b: Side, inputs: list[Any]) -> list[Any]:
    """The inputs a person compares: options of one backend only (a cross-target diff) left out unless
    the user set them, as the terminal's summary leaves them out."""
    user = set(a.manifest.get("user_options") or {}) | set(b.manifest.get("user_options") or {})
    return [d for d in inputs if (d.a is not None and d.b is not None) or d.name.split(".", 1)[-1] in user]


def title_inputs(a: Side, b: Side, inputs: list[Any]) -> list[tuple[str, Any, Any]]:
    """What went in differently, as the title names it: what was chosen (the target, the file, Triton,
    the environment, options the user set; not the options that follow from the target's defaults, when
    something chosen differs), with the kernel's arguments one by one where the signatures differ
    (BLOCK_M=128 vs BLOCK_M=64, not two signatures)."""
    user = set(a.manifest.get("user_options") or {}) | set(b.manifest.get("user_options") or {})
    shown = shown_inputs(a, b, inputs)
    chosen = [d for d in shown if not d.name.startswith("options.") or d.name.split(".", 1)[1] in user]
    out: list[tuple[str, Any, Any]] = []
    args_a, args_b = a.manifest.get("args") or {}, b.manifest.get("args") or {}
    for d in chosen or shown:
        if d.name == "signature" and args_a and args_b:
            keys = dict.fromkeys([*args_a, *args_b])
            out += [(k, args_a.get(k), args_b.get(k)) for k in keys if args_a.get(k) != args_b.get(k)]
        else:
            out.append((d.name, d.a, d.b))
    return out


def diff_title(result: DiffResult) -> str:
    """'matmul_kernel: num_stages=3 vs num_stages=4': what differs between the sides, from their
    manifests (a diff of two folders, as one made from Python is, has folder names for labels)."""
    a, b = result.a, result.b
    diffs = title_inputs(a, b, result.inputs)
    if diffs:
        shown = diffs[:TITLE_ITEMS]
        more = f" (and {len(diffs) - TITLE_ITEMS} more)" if len(diffs) > TITLE_ITEMS else ""
        what = ", ".join(_what(n, x) for n, x, _ in shown) + " vs " + ", ".join(_what(n, y) for n, _, y in shown)
        what += more
    else:
        la, lb = (Path(s.label).name if s.label == str(s.folder) else s.label for s in (a, b))
        what = f"{la} vs {lb}" + (" (the same inputs)" if not result.sources_differ else " (the source differs)")
    ka, kb = a.manifest.get("kernel"), b.manifest.get("kernel")
    return (f"{ka}: " if ka == kb else f"{ka} vs {kb}: ") + what


def findings_changes(result: DiffResult) -> dict[str, Any]:
    """The findings that went away, appeared or stayed (compare.command.findings_diff), short: the block above
    the diff page's tabs (irscope explain on a side's folder says the rest)."""
    fd = findings_diff(result)
    short = lambda f: {"kind": f.kind, "cause": f.cause, "line": f.where.line, "what": f.what}
    return {
        "error": fd.error,
        "went_away": [short(f) for f in fd.went_away],
        "appeared": [short(f) for f in fd.appeared],
        "both": [short(b) for _, b in fd.both],
    }


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
        "title": diff_title(result),
        "a": _side(result.a),
        "b": _side(result.b),
        "equal": result.equal,
        "normalized": result.normalized,
        "sources_differ": result.sources_differ,
        "inputs": [[d.name, _value(d.a), _value(d.b)] for d in shown_inputs(result.a, result.b, result.inputs)],
        "inputs_left_out": len(result.inputs) - len(shown_inputs(result.a, result.b, result.inputs)),
        "stats": [[d.name, _value(d.a), _value(d.b), _direction(d.a, d.b)] for d in result.stats.deltas],
        "stages": stages,
        "passes": passes,
        "by_line": _by_line(result),
        "findings": findings_changes(result),
    }


def sweep_model(configs: list[Config], timing: SweepTiming | None = None, title: str = "") -> dict[str, Any]:
    """The sweep page's data: the table and, per axis, the chart's points."""
    axes = list(dict.fromkeys(k for c in configs for k in c.values))
    timed_rows = timing.rows if timing else {}
    winner = timing.winner.name if timing and timing.winner else None
    rank = {c.label: i + 1 for i, c in enumerate(static_best_first([c for c in configs if c.usable]))}

    def _best_key(c: Config) -> tuple[Any, ...]:
        t = timed_rows.get(c.label) if timing else None
        med = t.median_ms if t and t.median_ms is not None else None
        return (c.label != winner, med is None, med or 0.0, rank.get(c.label) is None, rank.get(c.label) or 0, c.index)

    columns = ["#", "config", *axes, "status", *COLUMNS, "static rank"] + (["median", "vs winner"] if timing else [])
    keyed: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
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
        keyed.append((_best_key(c), {"cells": cells, "ok": c.usable, "winner": c.label == winner, "spills": c.spills}))
    rows = [r for _, r in sorted(keyed, key=lambda kr: kr[0])]  # best first
    y_name = "median (us)" if timing else f"static rank (1 = best: {STATIC_DEFAULT})"
    charts = []
    for k in axes:
        values = list(dict.fromkeys(_jsonable(c.values.get(k)) for c in configs))
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            values.sort()  # a numeric axis reads left to right, small to large
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
        # what the configs differ in, after whose sweep it is: "matmul_kernel on cuda:90 · num_warps × num_stages"
        "title": (title or "irscope sweep") + (" · " + " × ".join(str(k) for k in axes) if axes else ""),
        "columns": columns,
        # how each column's cells are printed (views/sweep.static_cell's columns, the median in us)
        "kinds": ["", "", *("" for _ in axes), "", *COLUMNS, ""] + (["median_us", ""] if timing else []),
        "rows": rows,
        "charts": charts,
        "timed": timing is not None,
        "notes": list(timing.notes) if timing else [],
    }
