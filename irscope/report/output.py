"""Writing a page: -o is checked before any work, and the file appears whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from irscope.errors import BadInput


def check_output(path: Path, flag: str = "-o") -> Path:
    """BadInput (one line) unless `path` can be written: its folder exists and is writable, it is no folder."""
    path = Path(path)
    if path.is_dir():
        raise BadInput(f"{flag} {path}: is a folder; give the HTML file to write, e.g. {path / 'report.html'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"{flag} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BadInput(f"{flag} {path}: the folder {parent} is not writable")
    return path


def write_page(path: Path, html: str, flag: str = "-o") -> Path:
    """Write to a temporary file beside `path`, then rename it into place."""
    path = check_output(path, flag)
    fd, tmp = tempfile.mkstemp(prefix=".irscope-tmp-", suffix=".html", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(html)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise BadInput(f"{flag} {path}: could not write it ({e.strerror or e})") from None
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path
