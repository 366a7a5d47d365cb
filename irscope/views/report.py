"""The report as one self-contained HTML file: a Jinja2 template with its CSS and JS inlined.

Renders the models of irscope.report (dump folders, a diff, a sweep); computes nothing. The page
makes no request of any kind (a Content-Security-Policy of default-src 'none' says so to the
browser): the data rides in a JSON script tag, escaped so that no text in an IR can end it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from irscope.report import model as report_model
from irscope.report import output, pages

TEMPLATES = Path(__file__).resolve().parent / "templates"
# what the page's script reads, per page kind (the rest is rendered into the HTML)
SCRIPT_KEYS = {"dumps": ("id", "stages", "source_first_line", "map", "passes", "layouts")}


def _script_data(model: dict[str, Any]) -> str:
    """The model's part the script needs, as JSON safe inside <script> (no '<', '>' or '&' left raw)."""
    if model["kind"] == "dumps":
        data: dict[str, Any] = {"kind": "dumps", "dumps": [{k: d[k] for k in SCRIPT_KEYS["dumps"]}
                                                          for d in model["dumps"]]}
    elif model["kind"] == "diff":
        data = {"kind": "diff", "stages": model["stages"]}
    else:
        data = {"kind": model["kind"]}
    text = json.dumps(data, separators=(",", ":"), default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def render(model: dict[str, Any]) -> str:
    """The page for a model of kind "dumps", "diff" or "sweep"."""
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             trim_blocks=False, lstrip_blocks=False, undefined=jinja2.StrictUndefined)
    template = env.get_template("report.html.j2")
    return template.render(model=model, data=_script_data(model),
                           css=(TEMPLATES / "report.css").read_text(), js=(TEMPLATES / "report.js").read_text())


def wrote(path: Path, model: dict[str, Any], size: int) -> str:
    """The one line after writing a page."""
    what = (f"{len(model['dumps'])} dump{'s' if len(model['dumps']) != 1 else ''}" if model["kind"] == "dumps"
            else model["kind"])
    return f"wrote {path} ({what}, {size / 1024:.0f} KiB)"


def write_dumps(folders: list[Path], path: Path, with_layouts: bool = True, flag: str = "-o") -> str:
    """`irscope report` and `dump --html`: the page of dump folders, written whole; the line to print."""
    m = report_model.report_model(list(folders), with_layouts=with_layouts)
    html = render(m)
    output.write_page(path, html, flag)
    return wrote(path, m, len(html.encode()))


def write_diff(result: Any, path: Path, flag: str = "--html") -> str:
    """`diff --html`: the page of a compare.diff.DiffResult."""
    m = pages.diff_model(result)
    html = render(m)
    output.write_page(path, html, flag)
    return wrote(path, m, len(html.encode()))


def write_sweep(configs: list[Any], timing: Any, path: Path, title: str = "", flag: str = "--html") -> str:
    """`sweep --html`: the page of a sweep's configs (and its sweep.timed.SweepTiming, when timed)."""
    m = pages.sweep_model(configs, timing, title)
    html = render(m)
    output.write_page(path, html, flag)
    return wrote(path, m, len(html.encode()))
