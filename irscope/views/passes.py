"""The passes command's views: per dump folder a header line, then the table of MLIR passes (those
that changed the IR, or all), or the one line that says which pass first produced a pattern.

Everything here formats what artifacts.passes read back or found (PassRecords, a FirstMatch).
"""

from __future__ import annotations

from pathlib import Path

import click

from irscope.artifacts import PassRecord
from irscope.artifacts.passes import FirstMatch, LineChange
from irscope.views import safe
from irscope.views.console import console


def header(folder: Path, manifest: dict, records: list[PassRecord], out=None) -> None:
    """'KERNEL on TARGET: N MLIR passes, M changed the IR  (FOLDER/passes)'."""
    console(file=out).print(
        f"[bold]{manifest['kernel']}[/bold] on {manifest['target']}: {len(records)} MLIR passes, "
        f"{sum(r.changed for r in records)} changed the IR  ({folder}/passes)",
        emoji=False,
    )


def first_match(pattern: str, hit: FirstMatch, folder: Path, out=None) -> None:
    """Where --first's pattern first appears: after a pass, already in the frontend, in a stage, or nowhere."""
    pattern = f"'{pattern}'"  # as the user gave it (repr would double its backslashes)
    if hit.sources:
        names = ", ".join(f"{Path(f).name}:{n}" for f, n in hit.sources[:12])
        pattern += f" (from {names}{', ...' if len(hit.sources) > 12 else ''})"
    if hit.where == "pass":
        rec = hit.record
        assert rec is not None, "a hit after a pass names its record"
        click.echo(
            safe.text(
                f"{pattern} first appears after pass {rec.index} {rec.name} ({rec.arg}) "
                f"in stage {rec.stage}: {folder / rec.file}"
            ),
            file=out,
        )
    elif hit.where == "frontend":
        click.echo(safe.text(f"{pattern} is already in the frontend's IR, before any pass"), file=out)
    elif hit.where == "stage":
        click.echo(safe.text(f"{pattern} appears in no MLIR pass output; first in stage {hit.stage}"), file=out)
    else:
        click.echo(safe.text(f"{pattern} appears in no pass output and no stage"), file=out)


def table(records: list[PassRecord], show_all: bool = False, out=None) -> None:
    """One row per pass that changed the IR (every pass with show_all): #, stage, pass, +lines, -lines."""
    from rich.table import Table

    t = Table(box=None, header_style="bold")
    for col in ("#", "stage", "pass", "+lines", "-lines"):
        t.add_column(col, justify="right" if col in ("#", "+lines", "-lines") else "left")
    for rec in records:
        if show_all or rec.changed:
            t.add_row(str(rec.index), rec.stage, f"{rec.name} [dim]({rec.arg})[/dim]", str(rec.added), str(rec.removed))
    console(file=out).print(t)


def _ops(counts) -> str:
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(counts.items()))


def line_history(spec: str, changes: list[LineChange], out=None) -> None:
    """Line SPEC's ops in the frontend, then per pass that changed them: + ops it produced, - ops it removed."""
    con = console(file=out)
    con.print(f"line {spec}, pass by pass:")
    for ch in changes:
        if ch.record is None:
            con.print(f"  [bold]frontend[/bold]  {_ops(ch.added)}")
            continue
        rec = ch.record
        con.print(f"  {rec.index:3} {rec.stage:5} [bold]{rec.name}[/bold] [dim]({rec.arg})[/dim]")
        if ch.added:
            con.print(f"        [green]+ {_ops(ch.added)}[/green]")
        if ch.removed:
            con.print(f"        [red]- {_ops(ch.removed)}[/red]")
