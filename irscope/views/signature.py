"""The signature command's views: each kernel's parameters, a --signature template and a filled example
that runs as pasted.

Everything here formats the rows kernel.spec.signature_template made; nothing is loaded here.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from irscope.views.console import console, esc


def template(rows: list[dict]) -> str:
    """The --signature text of the rows' elements, in parameter order."""
    return ", ".join(r["element"] for r in rows)


def example(rows: list[dict]) -> str:
    """The filled --signature text (each row's example), in parameter order: it compiles as pasted."""
    return ", ".join(r["example"] for r in rows)


def example_command(file: Path, name: str, rows: list[dict]) -> str:
    """`irscope dump FILE --kernel K --signature "..."` with the filled example, quoted for a POSIX shell."""
    return (
        f"irscope dump {shlex.quote(str(file))} --kernel {shlex.quote(name)} --signature {shlex.quote(example(rows))}"
    )


def listing(file: Path, shown: list) -> None:
    """Per kernel: a table of its parameters, then the dump command with the template."""
    from rich.table import Table

    con = console()
    for ref, rows in shown:
        con.print(f"[bold]{esc(ref.name)}[/bold]  {esc(file)}")
        t = Table(box=None, header_style="bold", pad_edge=False)
        for col in ("  #", "parameter", "kind", "default", "template", "example"):
            t.add_column(col)
        for i, r in enumerate(rows):
            t.add_row(
                f"  {i}",
                esc(r["name"]),
                "constexpr" if r["constexpr"] else "argument",
                esc(r["default"]) if r["has_default"] else "",
                esc(r["element"]),
                esc(r["example"]),
            )
        con.print(t)
        con.print(
            "  template: pointers are shown as *fp32:16: put each tensor's dtype (*fp16:16, *bf16:16, ...); "
            "ints as i32: i32:16 when a launch passes a multiple of 16, i32:1 when it passes 1"
            + ("; <NAME>: the constexpr's value" if any(r["element"].startswith("<") for r in rows) else ""),
            soft_wrap=True,
        )
        con.print(
            f'  irscope dump {esc(file)} --kernel {esc(ref.name)} --signature "{esc(template(rows))}"', soft_wrap=True
        )
        con.print(
            "  example (runs as pasted: strides i32:16, a tensor's last stride i32:1, sizes i32:16, "
            "constexprs their default or a power of two):",
            soft_wrap=True,
        )
        con.print(f"  {esc(example_command(file, ref.name, rows))}", soft_wrap=True)
        con.print()


def as_json(file: Path, shown: list) -> str:
    """{"kernels": [{"name", "file", "params": [...], "signature", "example", "example_command"}]}."""
    return json.dumps(
        {
            "kernels": [
                {
                    "name": ref.name,
                    "file": str(file),
                    "params": rows,
                    "signature": template(rows),
                    "example": example(rows),
                    "example_command": example_command(file, ref.name, rows),
                }
                for ref, rows in shown
            ]
        },
        indent=2,
    )


def print_json(file: Path, shown: list) -> None:
    click.echo(as_json(file, shown))
