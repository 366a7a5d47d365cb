"""The two kinds of failure irscope reports, and their exit codes.

BadInput   -> exit 2: the user asked for something that cannot be (a file, a name,
              a signature element, an option). One line that says what to fix.
CompileFailure -> exit 1: the input was well formed but the compiler refused it;
              the message names the stage and the compiler's reason.
"""

from __future__ import annotations

import difflib
import errno
from collections.abc import Iterable

# what a write that the machine refused fails with (a full disk, a quota, a read-only -o, a file-size limit):
# the place's fault, never the input's or the compiler's, said in one line with the file
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG)


def not_written(e: OSError, out: object = None) -> str:
    """One line for a refused write: the file where the system names it, else the places being written
    (the output folder, irscope's cache, Triton's cache), and the system's reason."""
    where = e.filename or f"{out or 'the output'} or a cache (irscope's, Triton's)"
    return f"could not write {where}: {e.strerror}"


class IrscopeError(Exception):
    exit_code = 2


class BadInput(IrscopeError):
    """Input the user must fix. Rendered as one line, exit code 2."""

    exit_code = 2


class CompileFailure(IrscopeError):
    """The compiler failed at `stage`; `reason` is its own diagnostic, trimmed."""

    exit_code = 1

    def __init__(self, stage: str, reason: str, kernel: str = ""):
        self.stage = stage
        self.reason = reason.strip()
        self.kernel = kernel
        where = f"{kernel}: " if kernel else ""
        super().__init__(f"{where}compile failed in stage '{stage}': {self.reason}")


class CaptureHookError(Exception):
    """An exception raised inside irscope's own capture hooks while a script ran: an irscope bug,
    never the script's failure (not an IrscopeError: main() reports it as an internal error,
    "in its capture hook"). Raised from the original exception, whose traceback --debug shows."""

    def __init__(self, original: BaseException):
        self.original = original
        super().__init__(f"{type(original).__name__}: {original}")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean X?)' for the closest choices, or '' when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.5)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"
