"""Writing a page: -o is checked before any work, and the file appears whole or not at all."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from irscope.artifacts import write_whole
from irscope.errors import BadInput
from irscope.kernel.inputs import check_output_file


def check_output(path: Path, flag: str = "-o") -> Path:
    """BadInput (one line) unless `path` is a regular file or a new one in a writable folder, and the page
    can be rendered (Jinja2, the `report` extra, is installed)."""
    require_jinja2(f"{flag} {path}")
    return check_output_file(path, flag, "report.html")


def require_jinja2(what: str) -> None:
    """BadInput (one line) naming the extra to install where Jinja2, which renders the page, is missing."""
    if importlib.util.find_spec("jinja2") is None:
        raise BadInput(f"{what}: the HTML report needs Jinja2, which is not installed: pip install 'irscope[report]'")


def write_page(path: Path, html: str, flag: str = "-o") -> Path:
    """Write the page whole (artifacts.write_whole: a temporary file beside `path`, renamed into place)."""
    path = check_output(path, flag)
    try:
        write_whole(path, html.encode("utf-8"), 0o644)
    except OSError as e:
        raise BadInput(f"{flag} {path}: could not write it ({e.strerror or e})") from None
    return path
