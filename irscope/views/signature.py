"""The signature command's views: each kernel's parameters and a ready --signature template.

Everything here formats the rows kernel.spec.signature_template made; nothing is loaded here.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from irscope.views.console import console, esc


def template(rows: list[dict]) -> str:
    """The --signature text of the rows' elements, in parameter order."""
    return ", ".join(r["element"] for r in rows)


def listing(file: Path, shown: list) -> None:
    """Per kernel: a table of its parameters, then the dump command with the template."""
    from rich.table import Table

    con = console()
    for ref, rows in shown:
        con.print(f"[bold]{esc(ref.name)}[/bold]  {esc(file)}")
        t = Table(box=None, header_style="bold", pad_edge=False)
        for col in ("  #", "parameter", "kind", "default", "template"):
            t.add_column(col)
        for i, r in enumerate(rows):
            t.add_row(
                f"  {i}",
                esc(r["name"]),
                "constexpr" if r["constexpr"] else "argument",
                esc(r["default"]) if r["has_default"] else "",
                esc(r["element"]),
            )
        con.print(t)
        con.print(
            "  pointers are shown as *fp32:16: put each tensor's dtype (*fp16:16, *bf16:16, ...); "
            "ints as i32: i32:16 when a launch passes a multiple of 16, i32:1 when it passes 1",
            soft_wrap=True,
        )
        con.print(
            f'  irscope dump {esc(file)} --kernel {esc(ref.name)} --signature "{esc(template(rows))}"', soft_wrap=True
        )
        con.print()


def as_json(file: Path, shown: list) -> str:
    """{"kernels": [{"name", "file", "params": [...], "signature"}]}."""
    return json.dumps(
        {
            "kernels": [
                {"name": ref.name, "file": str(file), "params": rows, "signature": template(rows)}
                for ref, rows in shown
            ]
        },
        indent=2,
    )


def print_json(file: Path, shown: list) -> None:
    click.echo(as_json(file, shown))
