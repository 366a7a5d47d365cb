"""The report as one self-contained HTML file: a Jinja2 template with its CSS and JS inlined.

Renders the models of irscope.report (dump folders, a diff, a sweep); computes nothing. The page
makes no request of any kind (a Content-Security-Policy of default-src 'none' says so to the
browser): the data rides in a JSON script tag, escaped so that no text in an IR can end it.

A dump folder is data from anyone (folders travel between people): every string of it is escaped
for where it lands (Jinja2's autoescape in the template; text nodes and attributes, never markup,
in report.js), and the CSP runs only this page's one script and one style, named by their SHA-256
(csp()), with no 'unsafe-inline': an attribute that escaped its quotes still could not run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from irscope.report import model as report_model
from irscope.report import output, pages
from irscope.views.console import fmt_bytes, fmt_share, plural
from irscope.views.diff import _diff_change, _diff_value, _line_change
from irscope.views.sweep import median_text, static_cell

TEMPLATES = Path(__file__).resolve().parent / "templates"
# what the page's script reads, per page kind (the rest is rendered into the HTML)
SCRIPT_KEYS = {
    "dumps": ("id", "stages", "source_first_line", "map", "profile", "passes", "layouts", "findings", "findings_error")
}


def _script_data(model: dict[str, Any]) -> str:
    """The model's part the script needs, as JSON safe inside <script> (no '<', '>' or '&' left raw)."""
    if model["kind"] == "dumps":
        data: dict[str, Any] = {
            "kind": "dumps",
            "dumps": [{k: d[k] for k in SCRIPT_KEYS["dumps"]} for d in model["dumps"]],
        }
    elif model["kind"] == "diff":
        data = {"kind": "diff", "stages": model["stages"], "findings": model["findings"]}
    else:
        data = {"kind": model["kind"]}
    text = json.dumps(data, separators=(",", ":"), default=str)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _inlined(name: str, end_tag: str) -> str:
    """A shipped template file as it is inlined: newlines as the HTML parser leaves them (the browser
    hashes the parsed text, so a CR would break the hash), and nothing in it that ends its element."""
    text = (TEMPLATES / name).read_text(encoding="utf-8").replace("\r\n", "\n").replace("\r", "\n")
    if end_tag in text.lower():
        raise AssertionError(f"{name} holds {end_tag!r}: it would end its inlined element")
    return text


def csp_hash(text: str) -> str:
    """A CSP source for an inline element whose text is exactly `text`."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def csp(js: str, css: str) -> str:
    """The page's Content-Security-Policy: no request of any kind, only the inlined script and style run
    (by hash: no 'unsafe-inline', so no injected handler, script or style attribute would), no form
    submits, no <base>. (No navigate-to: Chromium no longer knows it and logs a console error.) The JSON
    data's <script type="application/json"> is not executed and needs no hash."""
    return (
        f"default-src 'none'; script-src {csp_hash(js)}; style-src {csp_hash(css)}; "
        "img-src 'none'; form-action 'none'; base-uri 'none'"
    )


def _card_value(v: Any, unit: str) -> Any:
    """A card's figure in the terminal's units ('96.0 KiB', '12%')."""
    if unit == "bytes" and isinstance(v, int):
        return fmt_bytes(v)
    if unit == "share" and isinstance(v, (int, float)):
        return fmt_share(v)
    return v


def _sweep_cell(v: Any, kind: str) -> Any:
    """A sweep table's cell as `irscope sweep` prints it (the page sorts by the raw value in data-v)."""
    if v is None:
        return ""
    if kind == "median_us" and isinstance(v, (int, float)):
        return median_text(v)
    return static_cell(kind, v) if kind else v


def _line(change: list[Any]) -> str:
    """A by-line change as `diff --by-line` prints it ('spills 0 -> 64 B'); a figure it does not know, as is."""
    name, a, b = change
    try:
        return _line_change(name, a, b)
    except (TypeError, ValueError):
        return f"{name} {a} -> {b}"


# the page prints what the terminal prints, through the terminal's own formatters
FILTERS = {
    "card_value": _card_value,
    "sweep_cell": _sweep_cell,
    "stat": lambda v, name: _diff_value(name, v),
    "stat_change": lambda a, b, name: _diff_change(name, a, b),
    "line_change": _line,
    "plural": plural,
}


def render(model: dict[str, Any]) -> str:
    """The page for a model of kind "dumps", "diff" or "sweep"."""
    output.require_jinja2("the HTML report")
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        trim_blocks=False,
        lstrip_blocks=False,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(FILTERS)
    template = env.get_template("report.html.j2")
    # the page's one style and one script: the report's, with the aligned diff's (diff.css, diff.js: its
    # renderer first, so that report.js finds it when it draws the first stage)
    css = _inlined("report.css", "</style") + "\n" + _inlined("diff.css", "</style")
    js = _inlined("diff.js", "</script") + "\n" + _inlined("report.js", "</script")
    return template.render(model=model, data=_script_data(model), css=css, js=js, csp=csp(js, css))


def wrote(path: Path, model: dict[str, Any], size: int) -> str:
    """The one line after writing a page."""
    what = (
        f"{len(model['dumps'])} dump{'s' if len(model['dumps']) != 1 else ''}"
        if model["kind"] == "dumps"
        else model["kind"]
    )
    if model.get("skipped"):
        what += f"; {len(model['skipped'])} damaged left out"
    return f"wrote {path} ({what}, {size / 1024:.0f} KiB)"


def dumps_page(folders: list[Path], with_layouts: bool = True) -> tuple[str, dict[str, Any]]:
    """The page of dump folders and its model (a damaged dump left out is said on stderr)."""
    m = report_model.report_model(list(folders), with_layouts=with_layouts)
    for why in m.get("skipped") or []:
        print(f"irscope: note: left out a damaged dump: {why}", file=sys.stderr)
    return render(m), m


def write_dumps(folders: list[Path], path: Path, with_layouts: bool = True, flag: str = "-o") -> str:
    """`irscope report` and `dump --html`: the page of dump folders, written whole; the line to print."""
    html, m = dumps_page(folders, with_layouts)
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
