"""Writing a page: -o is checked before any work, and the file appears whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from irscope.errors import BadInput
from irscope.kernel.inputs import check_output_file


def check_output(path: Path, flag: str = "-o") -> Path:
    """BadInput (one line) unless `path` is a regular file or a new one in a writable folder."""
    return check_output_file(path, flag, "report.html")


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
