"""The diff's views: the summary (inputs, stats, stages, passes), each chosen stage's diff (unified
or side by side) and the --json document (irscope_diff 1).

Everything here formats a compare.diff.DiffResult it is given: the line opcodes of each stage
and their hunks (compare.diff.hunks) were computed by the comparison.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irscope.compare.command import findings_diff
from irscope.compare.diff import hunk_ranges, hunks
from irscope.views import safe
from irscope.views.bench import bench_json, bench_summary
from irscope.views.console import colour, console, esc, fmt_bytes, fmt_share, paged, widths
from irscope.views.explain import _safe

if TYPE_CHECKING:
    from rich.console import Console

    from irscope.compare.diff import DiffResult, StageDiff
    from irscope.timing.bench import BenchReport

DIFF_JSON_VERSION = 1
_STATUS_WORDS = {"equal": "equal", "changed": "changed", "only_a": "only in a", "only_b": "only in b"}


def _diff_value(name: str, v: Any) -> str:
    """One stat or input value, as a person reads it."""
    if v is None:
        return "-"
    if name == "ttgir.layouts":
        return f"{len(v)} layout{'s' if len(v) != 1 else ''}"
    if isinstance(v, dict):
        unit = "" if name.endswith("widths") else "b"
        return widths(v, unit) if all(isinstance(n, int) for n in v.values()) else json.dumps(v)
    if name == "occupancy.occupancy" and isinstance(v, (int, float)):
        return fmt_share(v)
    if name.endswith("_bytes") and isinstance(v, int) and not isinstance(v, bool):
        return fmt_bytes(v)
    if isinstance(v, (list, tuple)):
        text = ", ".join(str(x) for x in v)
    else:
        text = str(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _diff_change(name: str, a: Any, b: Any) -> str:
    num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    if not (num(a) and num(b)):
        return ""
    if name == "occupancy.occupancy":
        return f"{(b - a) * 100:+.0f} pts"
    d = b - a
    if name.endswith("_bytes") and isinstance(d, int):
        text = ("+" if d >= 0 else "-") + fmt_bytes(abs(d))
    else:
        text = f"{d:+d}" if isinstance(d, int) else f"{d:+.3g}"
    if not a:
        return text
    pct = d / a * 100
    return text + (f" ({pct:+.0f}%)" if abs(pct) >= 1 else f" ({pct:+.1f}%)")


def _side_line(side) -> str:
    m = side.manifest
    how = "" if side.cached is None else ("  (from cache)" if side.cached else "  (compiled)")
    where = "" if side.label == str(side.folder) else f"  {side.folder}"
    return f"{side.label}  [dim]{m['target']}{where}{how}[/dim]"


def diff_summary(result: DiffResult, out: Console | None = None) -> None:  # noqa: C901
    """Stats that changed, stages that differ, passes that behaved differently."""
    from rich.table import Table

    con = out or console()
    a, b = result.a, result.b
    fa, fb = result.files
    if fa == fb:
        con.print(
            f"[bold]diff[/bold]  {esc(a.manifest['kernel'])}  {esc(fa)}"
            + ("  [yellow](the source changed)[/yellow]" if result.sources_differ else "")
        )
    else:
        con.print(
            f"[bold]diff[/bold]  {esc(a.manifest['kernel'])}  [yellow]from two files"
            f"{', sources differ' if result.sources_differ else ', same source'}[/yellow]: "
            f"a {esc(fa)}, b {esc(fb)}"
        )
    con.print(f"  a  {_side_line(a)}")
    con.print(f"  b  {_side_line(b)}")
    user = set(a.manifest.get("user_options") or {}) | set(b.manifest.get("user_options") or {})
    # options of one backend only (cross-target) are noise here; what the user set always shows
    shown = [d for d in result.inputs if (d.a is not None and d.b is not None) or d.name.split(".", 1)[-1] in user]
    if shown:
        t = Table(box=None, pad_edge=False, header_style="bold")
        for col in ("  input", "a", "b"):
            t.add_column(col)
        for d in shown:
            t.add_row(f"  {d.name}", esc(_diff_value(d.name, d.a)), esc(_diff_value(d.name, d.b)))
        con.print(t)
    if len(shown) < len(result.inputs):
        con.print(f"  [dim]{len(result.inputs) - len(shown)} options of one backend only (--json lists them)[/dim]")

    con.print()
    if result.stats.changed:
        both = [d for d in result.stats.deltas if d.a is not None and d.b is not None]
        one = len(result.stats.deltas) - len(both)
        con.print(
            f"[bold]stats[/bold]  {len(both)} changed"
            + (f", {one} on one side only (--json lists them)" if one else "")
        )
        t = Table(box=None, pad_edge=False, header_style="bold")
        for col, just in (("  stat", "left"), ("a", "right"), ("b", "right"), ("change", "right")):
            t.add_column(col, justify="left" if just == "left" else "right")
        for d in both:
            t.add_row(
                f"  {d.name}",
                esc(_diff_value(d.name, d.a)),
                esc(_diff_value(d.name, d.b)),
                _diff_change(d.name, d.a, d.b),
            )
        if both:
            con.print(t)
        for d in both:
            if d.name == "ttgir.layouts":  # which layouts went and came, by value (alias names aside)
                la, lb = d.a or [], d.b or []
                for lay in la:
                    if lay not in lb:
                        con.print(f"    [red]- {esc(lay)}[/red]")
                for lay in lb:
                    if lay not in la:
                        con.print(f"    [green]+ {esc(lay)}[/green]")
    else:
        con.print("[bold]stats[/bold]  no change")

    differ = _stages_summary(con, result)
    if result.passes is not None:
        _passes_summary(con, result.passes)
    findings_summary(con, result)

    con.print()
    if result.equal:
        scope = f" in {', '.join(result.selected)}" if result.selected else ""
        con.print(f"[green]no differences{scope}[/green]" + (" after normalisation" if result.normalized else ""))
    elif not result.selected and differ:
        con.print(f"[dim]see a stage's changes with --stage {differ[0].stage}[/dim]")


def findings_summary(con, result: DiffResult) -> None:
    """The findings (irscope explain) that went away (-) or appeared (+) from a to b, then those on both (=)."""
    fd = findings_diff(result)
    con.print()
    if fd.error:
        con.print("[bold]findings[/bold]  could not be computed (irscope explain --debug on a side's folder says why)")
        return
    if not (fd.appeared or fd.went_away or fd.both):
        con.print("[bold]findings[/bold]  none on either side")
        return
    head = f"{len(fd.went_away)} went away, {len(fd.appeared)} appeared, {len(fd.both)} on both sides"
    con.print(f"[bold]findings[/bold]  {head} [dim](why, and the fix: irscope explain on a side's folder)[/dim]")
    rows = [("red", "-", f) for f in fd.went_away] + [("green", "+", f) for f in fd.appeared]
    rows += [("dim", "=", b) for _, b in fd.both]
    for style, mark, f in rows:
        at = f"line {f.where.line:<4}" if f.where.line else "no line  "
        con.print(f"  [{style}]{mark} {at} {_safe(f.kind)} ({_safe(f.cause)}): {_safe(f.what)}[/{style}]")


def findings_json(result: DiffResult) -> dict[str, Any] | None:
    """diff --json's "findings": {"appeared": [FINDING], "went_away": [FINDING], "both": [{"a", "b"}]}
    (FINDING as irscope explain --json writes it); null when the finding engine failed on a side."""
    fd = findings_diff(result)
    if fd.error:
        return None
    return {
        "appeared": [f.to_json() for f in fd.appeared],
        "went_away": [f.to_json() for f in fd.went_away],
        "both": [{"a": a.to_json(), "b": b.to_json()} for a, b in fd.both],
    }


def _stages_summary(con, result: DiffResult) -> list:
    """The stages table, then each differing stage's change in words (compare/summary.py)."""
    from rich.table import Table

    con.print()
    how = "aligned, names paired; --raw for the compiler's own text" if result.normalized else "raw text"
    differ = [s for s in result.stages if not s.equal]
    con.print(f"[bold]stages[/bold]  {len(differ)} of {len(result.stages)} differ [dim]({how})[/dim]")
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (
        ("  stage", "left"),
        ("", "left"),
        ("+lines", "right"),
        ("-lines", "right"),
        ("lines a", "right"),
        ("lines b", "right"),
        ("renamed", "right"),
        ("moved", "right"),
    ):
        t.add_column(col, justify="left" if just == "left" else "right")
    for s in result.stages:
        style = "" if s.equal else "yellow"
        word = _STATUS_WORDS[s.status]
        t.add_row(
            f"  {s.stage}",
            f"[{style}]{word}[/{style}]" if style else word,
            str(s.added) if s.added else "",
            str(s.removed) if s.removed else "",
            "-" if s.a is None else str(len(s.a.lines)),
            "-" if s.b is None else str(len(s.b.lines)),
            str(s.renamed) if s.renamed else "",
            str(s.moved) if s.moved else "",
        )
    con.print(t)
    if result.normalized and differ:
        con.print(
            "[dim]  lines matched by structure with value names paired: renamed = equal up to the renaming "
            "and the substitutions said below; moved = an instruction the scheduler put elsewhere (MLIR: a "
            "constant)[/dim]"
        )
    for s in differ:
        words = s.summary.words() if s.summary is not None else []
        said = [
            w
            for w in words
            if not w.endswith(("renaming of their values", "the substitutions above", "otherwise equal"))
        ]
        if said:
            con.print(f"  [bold]{s.stage}[/bold]")
            for w in said:
                con.print(f"    {esc(w)}")

    return differ


def _passes_summary(con, p, limit: int = 25) -> None:
    from rich.table import Table

    con.print()
    con.print(f"[bold]passes[/bold]  a: {p.a_count} MLIR passes, b: {p.b_count}; {len(p.deltas)} behaved differently")
    d = p.divergence
    if d.where == "frontend":
        con.print("  the IR differs already out of the frontend, before any pass")
    elif d.where == "pass":
        idx = " / ".join(f"#{i}" if i is not None else "-" for i in (d.a_index, d.b_index))
        con.print(f"  the IR first differs after pass [bold]{esc(d.name)}[/bold] ({d.stage}, {idx})")
    else:
        con.print("  the IR is the same after every pass (after normalisation)")
    if not p.deltas:
        return
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col, just in (("  stage", "left"), ("pass", "left"), ("a", "right"), ("b", "right")):
        t.add_column(col, justify="left" if just == "left" else "right")
    rec = lambda r: "not run" if r is None else (f"+{r.added} -{r.removed}" if r.changed else "no change")
    for delta in p.deltas[:limit]:
        t.add_row(f"  {delta.stage}", esc(delta.name), rec(delta.a), rec(delta.b))
    con.print(t)
    if len(p.deltas) > limit:
        con.print(f"  [dim]... and {len(p.deltas) - limit} more (--json lists all)[/dim]")


def _origin(norm, i: int) -> int:
    if norm is None or not norm.origin:
        return 0
    return norm.origin[min(i, len(norm.origin) - 1)]


def _stage_path(side, stage: str) -> str:
    f = side.manifest["stages"].get(stage)
    return str(side.folder / f) if f else f"{side.folder} (no {stage})"


def unified_lines(result: DiffResult, sd: StageDiff, context: int = 3) -> list[str]:
    """One stage's diff in unified format (the lines compared, i.e. normalised unless --raw)."""
    if sd.equal:
        return []
    a_lines = sd.a.lines if sd.a is not None else []
    b_lines = sd.b.lines if sd.b is not None else []
    out = [
        f"--- a/{sd.stage}  {_stage_path(result.a, sd.stage)}  ({result.a.label})",
        f"+++ b/{sd.stage}  {_stage_path(result.b, sd.stage)}  ({result.b.label})",
    ]
    for group in hunks(sd.opcodes, context):
        i1, j1 = group[0][1], group[0][3]
        where = f" file lines {_origin(sd.a, i1) or '-'} / {_origin(sd.b, j1) or '-'}"
        out.append(f"@@ {hunk_ranges(group)} @@{where}")
        for t, x1, x2, y1, y2 in group:
            if t == "equal":
                out.extend(" " + line for line in a_lines[x1:x2])
                continue
            if t == "moved":  # equal up to the renaming, elsewhere on the other side: not a change
                out.extend("~" + line for line in a_lines[x1:x2])
                out.extend("~" + line for line in b_lines[y1:y2])
                continue
            if t in ("replace", "delete"):
                out.extend("-" + line for line in a_lines[x1:x2])
            if t in ("replace", "insert"):
                out.extend("+" + line for line in b_lines[y1:y2])
    return out


def print_unified(result: DiffResult, sd: StageDiff, context: int = 3, out=None) -> None:
    """unified_lines to `out` (stdout): plain when piped, coloured on a terminal."""
    lines = unified_lines(result, sd, context)
    stream = out or sys.stdout
    if not colour(stream):
        if lines:
            stream.write("\n".join(safe.lines(lines)) + "\n")
        return
    from rich.text import Text

    con = console(file=out)
    styles = {"-": "red", "+": "green", "@": "cyan", "~": "dim"}
    text = Text()
    for k, line in enumerate(lines):
        style = "bold" if k < 2 else styles.get(line[:1], "")
        text.append(line + "\n", style=style)
    con.print(text, soft_wrap=True, end="")


def print_side_by_side(result: DiffResult, sd: StageDiff, context: int = 3, out=None) -> None:
    """Two columns, a left and b right; marks like sdiff: | changed, < only a, > only b; ~ (dim) equal up to
    the renaming, or moved by the scheduler."""
    from rich.table import Table
    from rich.text import Text

    if sd.equal:
        return
    con = console(file=out)
    a_lines = sd.a.lines if sd.a is not None else []
    b_lines = sd.b.lines if sd.b is not None else []
    t = Table(box=None, pad_edge=False, expand=True, show_header=True, header_style="bold")
    t.add_column("", justify="right", no_wrap=True, style="dim")
    t.add_column(f"a/{sd.stage}  ({result.a.label})", ratio=1, overflow="fold")
    t.add_column("", width=1, no_wrap=True)
    t.add_column("", justify="right", no_wrap=True, style="dim")
    t.add_column(f"b/{sd.stage}  ({result.b.label})", ratio=1, overflow="fold")
    for k, group in enumerate(hunks(sd.opcodes, context)):
        if k:
            t.add_row("", Text("⋯", style="dim"), "", "", Text("⋯", style="dim"))
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                for xa, yb in zip(range(x1, x2), range(y1, y2)):
                    same = a_lines[xa] == b_lines[yb]  # else equal up to the renaming: dim
                    t.add_row(
                        str(_origin(sd.a, xa)),
                        Text(a_lines[xa], style="" if same else "dim"),
                        " " if same else Text("~", style="dim"),
                        str(_origin(sd.b, yb)),
                        Text(b_lines[yb], style="" if same else "dim"),
                    )
                continue
            if tag == "moved":
                for xa in range(x1, x2):
                    t.add_row(str(_origin(sd.a, xa)), Text(a_lines[xa], style="dim"), Text("~", style="dim"), "", "")
                for yb in range(y1, y2):
                    t.add_row("", "", Text("~", style="dim"), str(_origin(sd.b, yb)), Text(b_lines[yb], style="dim"))
                continue
            left, right = list(range(x1, x2)), list(range(y1, y2))
            for r in range(max(len(left), len(right))):
                x = left[r] if r < len(left) else None
                y = right[r] if r < len(right) else None
                mark = "|" if x is not None and y is not None else ("<" if y is None else ">")
                t.add_row(
                    "" if x is None else str(_origin(sd.a, x)),
                    Text("" if x is None else a_lines[x], style="red"),
                    Text(mark, style="yellow"),
                    "" if y is None else str(_origin(sd.b, y)),
                    Text("" if y is None else b_lines[y], style="green"),
                )
    con.print(t)


def print_stage_diffs(result: DiffResult, side_by_side: bool | None = None, context: int = 3, out=None) -> None:
    """The chosen stages' diffs to `out` (stdout); side by side on a wide terminal unless told otherwise."""
    stream = out or sys.stdout
    if side_by_side is None:
        side_by_side = stream.isatty() and shutil.get_terminal_size().columns >= 160
    for name in result.selected:
        sd = result.stage(name)
        assert sd is not None, "every selected stage has its diff"
        stream.flush()
        if sd.equal:
            if not result.equal:  # else the summary said so already
                console(file=out).print(f"[dim]{name}: no differences[/dim]")
        elif side_by_side:
            print_side_by_side(result, sd, context, out)
        else:
            print_unified(result, sd, context, out)


def diff_json(result: DiffResult, context: int = 3) -> str:
    """The schema (irscope_diff 1; keys are stable, new keys may be added):

    {"irscope_diff": 1, "equal": bool, "normalized": bool, "kernel": str, "file": str,
     "a"/"b": {"label", "folder", "target", "signature", "triton_version", "user_options", "cached"},
     "inputs": {name: {"a", "b"}},           what went in differently (target, options.*, ...)
     "stats":  {name: {"a", "b"}},           stats that changed (dotted names into manifest stats)
     "stages": {stage: {"status", "added", "removed", "lines_a", "lines_b", "renamed", "moved", "diff",
                        "summary", "alignment"}},
                                             diff: unified text for --stage stages, else null
                                             summary (null with --raw): {"words": [str], "ops": {kind: {"removed",
                                             "added", "changed"}}, "classes": {class: b - a}, "allocs": [str],
                                             "loops": [{"op", "prologue", "body", "epilogue"}: each [a, b]],
                                             "registers": {class: [a, b]}, "barriers": [a, b]}
                                             alignment (changed stages, not --raw): {"pairs": [[a line, b line,
                                             "equal"|"renamed"|"changed"|"moved"]], "removed": [a line],
                                             "added": [b line], "renamed": {"FUNCTION KIND": {a name: b name}},
                                             "substituted": [{"kind", "a", "b", "lines"}]}: a type or constant
                                             substituted consistently (compare/substitute.py); a pair that
                                             differs by it alone is "renamed"
                                             lines are the stage file's own (1-based); a SASS/AMDGCN register
                                             is named by its write ("R12#3": its third write in the function)
     "passes": null | {"a_count", "b_count", "first_divergence": {"where", "stage", "pass", "a_index",
               "b_index"}, "differ": [{"stage", "pass", "a", "b"}]},  a/b: {"index", "added", "removed"} | null
     "files": {"a", "b"},                    the kernel file of each side (dumps of one kernel from two files)
     "sources_differ": bool,                 the kernel's source text differs between the sides
     "by_line": [{"file", "line", "text", "changes": {figure: {"a", "b"}}, "classes": {class: {"a", "b"}}}],
                                             only with --by-line; figure: an opcode, spills, ptx registers, ...;
                                             line 0 / file "": units with no line
     "findings": {"appeared": [FINDING], "went_away": [FINDING], "both": [{"a": FINDING, "b": FINDING}]} | null}
                                             irscope explain's findings on each side, matched by kind, line and
                                             cause (FINDING as explain --json has it); null: could not be computed
    """

    def side(s):
        m = s.manifest
        return {
            "label": s.label,
            "folder": str(s.folder),
            "target": m.get("target"),
            "signature": m.get("signature"),
            "triton_version": m.get("triton_version"),
            "user_options": m.get("user_options") or {},
            "cached": s.cached,
        }

    stages = {}
    for s in result.stages:
        stages[s.stage] = {
            "status": s.status,
            "added": s.added,
            "removed": s.removed,
            "lines_a": None if s.a is None else len(s.a.lines),
            "lines_b": None if s.b is None else len(s.b.lines),
            "renamed": s.renamed,
            "moved": s.moved,
            "diff": "\n".join(unified_lines(result, s, context)) + "\n"
            if s.stage in result.selected and not s.equal
            else ("" if s.stage in result.selected else None),
            "summary": summary_json(s),
            "alignment": alignment_json(s) if not s.equal else None,
        }
    passes = None
    if result.passes is not None:
        p = result.passes
        rec = lambda r: None if r is None else {"index": r.index, "added": r.added, "removed": r.removed}
        d = p.divergence
        passes = {
            "a_count": p.a_count,
            "b_count": p.b_count,
            "first_divergence": {
                "where": d.where,
                "stage": d.stage or None,
                "pass": d.name or None,
                "a_index": d.a_index,
                "b_index": d.b_index,
            },
            "differ": [{"stage": x.stage, "pass": x.name, "a": rec(x.a), "b": rec(x.b)} for x in p.deltas],
        }
    doc = {
        "irscope_diff": DIFF_JSON_VERSION,
        "equal": result.equal,
        "normalized": result.normalized,
        "kernel": result.a.manifest["kernel"],
        "file": result.a.manifest.get("file"),
        "a": side(result.a),
        "b": side(result.b),
        "inputs": {d.name: {"a": d.a, "b": d.b} for d in result.inputs},
        "stats": {d.name: {"a": d.a, "b": d.b} for d in result.stats.deltas},
        "stages": stages,
        "passes": passes,
        "files": dict(zip("ab", result.files)),
        "sources_differ": result.sources_differ,
        "findings": findings_json(result),
    }
    if result.by_line is not None:
        doc["by_line"] = [
            {
                "file": d.file,
                "line": d.line,
                "text": d.text,
                "changes": {n: {"a": x, "b": y} for n, x, y in d.changes},
                "classes": {n: {"a": x, "b": y} for n, x, y in d.classes},
            }
            for d in result.by_line
        ]
    return json.dumps(doc, indent=1, default=str)


def summary_json(sd: StageDiff) -> dict[str, Any] | None:
    sm = sd.summary
    if sm is None:
        return None
    return {
        "words": sm.words(),
        "ops": {d.kind: {"removed": d.removed, "added": d.added, "changed": d.changed} for d in sm.ops},
        "classes": sm.classes,
        "allocs": sm.allocs,
        "loops": [
            {"op": lp.header, "prologue": list(lp.prologue), "body": list(lp.body), "epilogue": list(lp.epilogue)}
            for lp in sm.loops
        ],
        "registers": {k: list(v) for k, v in sm.registers.items()},
        "barriers": list(sm.barriers),
    }


def alignment_json(sd: StageDiff) -> dict[str, Any] | None:
    """The alignment for tools: pairs, added, removed (file lines) and the renaming."""
    al = sd.alignment
    if al is None:
        return None
    pairs, added, removed = [], [], []
    for r in al.rows:
        if r.a is not None and r.b is not None:
            pairs.append([al.a[r.a].origin, al.b[r.b].origin, r.kind])
        elif r.kind == "moved" and r.a is not None and r.to is not None:
            pairs.append([al.a[r.a].origin, al.b[r.to].origin, "moved"])
        elif r.kind in ("removed",) and r.a is not None:
            removed.append(al.a[r.a].origin)
        elif r.kind == "added" and r.b is not None:
            added.append(al.b[r.b].origin)
    substituted = [{"kind": x.kind, "a": x.a, "b": x.b, "lines": x.lines} for x in al.substituted]
    return {"pairs": pairs, "removed": removed, "added": added, "renamed": al.renaming, "substituted": substituted}


def diff_json_with_timing(result: DiffResult, context: int = 3, timed: BenchReport | None = None) -> str:
    """diff --json (with --time: the bench document under "timing")."""
    doc = json.loads(diff_json(result, context))
    if timed is not None:
        doc["timing"] = json.loads(bench_json(timed))
    return json.dumps(doc, indent=1)


def _line_change(name: str, a, b) -> str:
    if name == "layouts":
        gone, new = [x for x in a if x not in b], [x for x in b if x not in a]
        return "layouts " + " ".join([f"-#{x}" for x in gone] + [f"+#{x}" for x in new])
    if name == "spills":
        return f"spills {a} -> {b} B"
    if name in ("instructions", "ptx registers", "convert_layouts"):
        return f"{name} {a} -> {b}"
    return f"{b - a:+d} {name} ({a} -> {b})"


def by_line_summary(result: DiffResult, limit: int = 40, out=None) -> None:
    """Per Python line: the figures that changed between a and b (diff --by-line), to `out` (stdout)."""
    con = console(file=out)
    deltas = result.by_line or []
    con.print()
    con.print(
        f"[bold]by line[/bold]  {len(deltas)} source lines changed"
        + ("  [yellow](the sources differ: lines are matched by number)[/yellow]" if result.sources_differ else "")
    )
    for d in deltas[:limit]:
        where = "(no line)" if not d.line else f"{d.file.rsplit('/', 1)[-1]}:{d.line}"
        con.print(f"  [bold]{where}[/bold]  [dim]{esc((d.text or '')[:60])}[/dim]")
        con.print("      " + esc(", ".join(_line_change(n, a, b) for n, a, b in d.changes)))
    if len(deltas) > limit:
        con.print(f"  [dim]{len(deltas) - limit} more lines (--json lists them)[/dim]")


@dataclass(frozen=True)
class DiffView:
    """How a diff is shown: diff's --side-by-side/--unified, -U, --json and --html."""

    side_by_side: bool | None = None  # None: side by side on a terminal of 160 columns or more
    context: int = 3
    as_json: bool = False
    html: Path | None = None  # also write the page here (its line goes to stderr with --json)


def render(result: DiffResult, view: DiffView, timed: BenchReport | None = None, out=None) -> int:
    """A diff's output into `out` (None: stdout): the --json document, or the summary, by line, the chosen
    stages' diffs (and the timing of the old diff --time). Returns the exit status: 0 equal, 1 different.
    (The --html page is the command's: cli/diff_options.show, the one place a diff is shown.)"""
    if view.as_json:
        print(diff_json_with_timing(result, view.context, timed), file=out or sys.stdout, flush=True)
        return 0 if result.equal else 1
    with paged(out) as out:  # on a terminal, through the pager (the stages' diffs run long)
        diff_summary(result, out=console(file=out))
        if result.by_line is not None:
            by_line_summary(result, out=out)
        if result.selected:
            print_stage_diffs(result, view.side_by_side, view.context, out=out)
        if timed is not None:
            bench_summary(timed)
    return 0 if result.equal else 1
