"""Views across Triton releases: notes while an env is made, a capture's table, a bisect's verdict."""

from __future__ import annotations

import json
import sys
from typing import Any

from irscope.releases.bisect import to_doc
from irscope.releases.captures import first_pass
from irscope.views import diff as diff_view
from irscope.views.console import console, esc
from irscope.views.diff import _diff_change, _diff_value


def note(text: str) -> None:
    """A progress line on stderr (an env being made takes seconds to a minute)."""
    sys.stderr.write(f"irscope: {text}\n")
    sys.stderr.flush()


def _env_text(env) -> str:
    return f"{env.release.dist if env.release.dist != 'triton' else 'triton'} {env.triton}"


def _stat_text(delta) -> str:
    change = _diff_change(delta.name, delta.a, delta.b)
    change = change.replace(" (", ", ").rstrip(")") if change else ""
    return f"{delta.name} {_diff_value(delta.name, delta.a)} -> {_diff_value(delta.name, delta.b)}" + (
        f" ({change})" if change else ""
    )


def _why_text(row) -> str:
    fp = first_pass(row)
    if fp is None:
        return ""
    if fp["where"] == "none":
        return "the passes agree"
    parts = [
        f"first differs after {fp['stage']} pass {fp['pass']}"
        if fp["where"] == "pass"
        else "already differs out of the front end"
    ]
    for key, word in (("new_in_b", "new in b"), ("gone_in_b", "gone in b")):
        names = list(dict.fromkeys(fp[key]))
        if names:
            parts.append(f"{word}: " + ", ".join(names[:4]) + (f" +{len(names) - 4} more" if len(names) > 4 else ""))
    return "; ".join(parts)


def capture_table(
    table, by_line: bool = False, limit: int = 4, side_by_side: bool | None = None, context: int = 3
) -> None:
    """One row per captured kernel: its verdict and what changed (or why it failed); then, per changed
    kernel, what it changed by line (--by-line) and the chosen stages' diffs (--stage)."""
    from rich.table import Table

    con = console()
    con.print(
        f"[bold]diff[/bold]  {esc(str(table.folder))}  {len(table.rows)} captured kernel"
        f"{'s' if len(table.rows) != 1 else ''}"
    )
    for name, env in (("a", table.a), ("b", table.b)):
        con.print(f"  {name}  {esc(_env_text(env))}  [dim]{esc(env.python)}  ({env.how})[/dim]")
    t = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("kernel", "capture", "verdict", "what changed"):
        t.add_column(col)
    for row in table.rows:
        if row.failures:
            what = "; ".join(f"{side}: {why}" for side, why in row.failures.items())
        elif row.stats:
            what = "; ".join(_stat_text(d) for d in row.stats[:limit])
            if len(row.stats) > limit:
                what += f"; +{len(row.stats) - limit} more stats"
        elif row.stages:
            what = "stages " + ", ".join(row.stages)
        else:
            what = ""
        why = _why_text(row) if row.changed else ""
        colour = {"same": "green", "stats changed": "yellow", "code changed": "cyan"}.get(row.verdict, "red")
        t.add_row(
            esc(row.kernel),
            esc(row.spec.name),
            f"[{colour}]{row.verdict}[/{colour}]",
            esc(what + (f"\n{why}" if why else "")),
        )
    con.print(t)
    counts: dict[str, int] = {}
    for row in table.rows:
        counts[row.verdict] = counts.get(row.verdict, 0) + 1
    con.print(
        "  "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + (
            ""
            if table.passes or not any(r.changed for r in table.rows)
            else "   [dim](--passes names the first pass that differs)[/dim]"
        )
    )
    for row in table.rows:
        if row.changed and row.result is not None:
            if by_line and row.result.by_line:
                con.print(f"\n[bold]{esc(row.kernel)}[/bold] ({esc(row.spec.name)}) by line")
                diff_view.by_line_summary(row.result)
            if row.result.selected and not row.result.equal:
                con.print(f"\n[bold]{esc(row.kernel)}[/bold] ({esc(row.spec.name)})")
                diff_view.print_stage_diffs(row.result, side_by_side, context)


def _stage_diffs(result, context: int) -> dict[str, str] | None:
    """The --stage stages' unified diffs of one kernel ('' when equal); None without --stage."""
    if result is None or not result.selected:
        return None
    return {
        sd.stage: "\n".join(diff_view.unified_lines(result, sd, context))
        for sd in result.stages
        if sd.stage in result.selected
    }


def capture_json(table, context: int = 3) -> str:
    def env_doc(env) -> dict[str, Any]:
        return {"dist": env.release.dist, "triton": env.triton, "python": env.python, "how": env.how}

    doc = {
        "irscope_release_diff": 1,
        "folder": str(table.folder),
        "a": env_doc(table.a),
        "b": env_doc(table.b),
        "exit_code": table.exit_code,
        "kernels": [
            {
                "kernel": r.kernel,
                "capture": str(r.spec),
                "verdict": r.verdict,
                "stats": [{"name": d.name, "a": d.a, "b": d.b} for d in r.stats],
                "stages": r.stages,
                "failures": r.failures,
                "folders": (
                    {"a": str(r.result.a.folder), "b": str(r.result.b.folder)} if r.result is not None else None
                ),
                "passes": first_pass(r) if r.changed else None,
                "stage_diffs": _stage_diffs(r.result, context),
            }
            for r in table.rows
        ],
    }
    return json.dumps(doc, indent=2, default=str)


def bisect_summary(b) -> None:
    con = console()
    con.print(
        f"[bold]bisect[/bold]  bad when [bold]{esc(b.predicate.text)}[/bold]  over triton {esc(', '.join(b.releases))}"
    )
    for s in sorted(b.steps, key=lambda s: b.releases.index(s.release)):
        colour = {"good": "green", "bad": "red"}.get(s.verdict, "yellow")
        con.print(f"  {s.release:<8} [{colour}]{s.verdict:<7}[/{colour}] {esc(s.figure)}")
    untried = [r for r in b.releases if r not in {s.release for s in b.steps}]
    if untried:
        con.print(f"  [dim]not needed: {esc(', '.join(untried))}[/dim]")
    con.print(f"first bad release: [bold]{b.first_bad}[/bold] (last good: {b.last_good})")
    if b.untested:
        con.print(
            f"  the kernel does not compile on {', '.join(b.untested)} between them (skipped): the "
            f"change may be in any of those"
        )
    d = b.divergence
    if d is not None:
        if d.where == "pass":
            con.print(f"first pass that differs against {b.last_good}: {d.stage} pass [bold]{esc(d.name)}[/bold]")
        elif d.where == "frontend":
            con.print(f"the IR already differs out of the front end (before any pass) against {b.last_good}")
        else:
            con.print(
                f"no pass differs against {b.last_good}: the change is after the MLIR passes "
                f"(LLVM, ptxas or the assembler)"
            )
    elif b.passes_note:
        con.print(f"[dim]{esc(b.passes_note)}[/dim]")


def bisect_json(b) -> str:
    return json.dumps(to_doc(b), indent=2, default=str)
