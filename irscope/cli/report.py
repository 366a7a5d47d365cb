"""`irscope report DUMP_DIR... -o report.html`: the dumps as one self-contained HTML page.

Registered by cli/__init__.py (`main.add_command(report)`); the page's data comes from
irscope.report, its rendering from views/report.py. A page written is recorded (irscope/direct/report.py) so
that irscope.entry answers the same request, with nothing changed, without building it again.
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("report")
@click.argument("dumps", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(path_type=Path),
    default=Path("report.html"),
    show_default=True,
    help="The HTML file to write (written whole, or not at all).",
)
@click.option("--no-layouts", is_flag=True, help="Skip the layout pictures (they ask Triton, in a child process).")
def report(dumps: tuple[Path, ...], output: Path, no_layouts: bool) -> None:
    """Write one self-contained HTML report of dump folders (or folders of dumps, such as a capture's -o):
    Python source and any two stages side by side with line links, per-pass diffs, resources,
    instruction mix, hot lines and TTGIR layouts drawn."""
    from irscope.cli.options import recorder
    from irscope.errors import IrscopeError
    from irscope.report.output import check_output, write_page
    from irscope.views import report as view

    try:
        check_output(output)
        before = recorder().report_before(dumps, output, no_layouts)  # stamped before the page reads the folders
        html, model = view.dumps_page(list(dumps), with_layouts=not no_layouts)
        write_page(output, html)
        line = view.wrote(output, model, len(html.encode()))
        if not model.get("skipped"):
            recorder().remember_report(before, html, line)
    except IrscopeError as e:  # as cli.main says it, also when the command runs on its own
        click.echo(f"irscope: error: {e}", err=True)
        raise SystemExit(e.exit_code) from None
    click.echo(line)
