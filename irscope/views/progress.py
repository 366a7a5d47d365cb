"""Progress on stderr while irscope works: the one module every long wait uses (a capture's script and
dumps, a compile with every pass recorded, an environment being made, a sweep, a bench's timing).

The packages never import rich (import-linter's contract): the command hands them a `progress` callable,
this module's Reporter, and they call it as

    with progress("dumping 3 kernels", total=3) as advance:   # total None: a spinner (no count known)
        ...
        advance("matmul_kernel")        # one done, and what is being worked on now
        advance("matmul_kernel", 0)     # what is being worked on now, nothing done yet

Progress is drawn only when stderr is a terminal and the command's stdout is not data (--json): piped or
redirected, nothing is drawn and nothing is written. The bar is transient: it leaves no line behind, and
the command's own output is printed after it. One display at a time: a wait inside another (an environment
made during a bisect step) is said in the outer one's text, not drawn twice.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from irscope.views.console import console

Advance = Callable[..., None]  # advance(detail: str = "", n: int = 1)


def _nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


class Reporter:
    """progress(what, total=None) -> a context giving advance(detail="", n=1); drawn only on a terminal."""

    _outer: Callable[[str], None] | None = None  # the drawn display's description (one Live per process)

    def __init__(self, enabled: bool = True, stream: Any = None) -> None:
        self.stream = stream
        out = stream if stream is not None else sys.stderr
        self.enabled = bool(enabled) and _is_terminal(out)

    def __call__(self, what: str, total: int | None = None) -> contextlib.AbstractContextManager[Advance]:
        if not self.enabled:
            return contextlib.nullcontext(_nothing)
        if Reporter._outer is not None:
            return self._inside(Reporter._outer, what)
        return self._drawn(what, total)

    @staticmethod
    @contextlib.contextmanager
    def _inside(say: Callable[[str], None], what: str) -> Iterator[Advance]:
        """A wait inside a drawn one: said in the outer display's description, not drawn twice."""
        say(what)
        yield lambda detail="", n=1: say(f"{what}: {detail}" if detail else what)

    @contextlib.contextmanager
    def _drawn(self, what: str, total: int | None) -> Iterator[Advance]:
        from rich.markup import escape
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        title = escape(what).replace("{", "{{").replace("}", "}}")  # markup and format text: a name is text
        columns: list[Any] = [SpinnerColumn(), TextColumn(title)]
        if total is not None:
            columns += [BarColumn(), MofNCompleteColumn()]
        columns += [TimeElapsedColumn(), TextColumn("{task.description}")]
        con = console(stderr=True, file=self.stream)
        # a stdout that is not this terminal (piped, a file) keeps its text: only stderr's prints are
        # drawn above the bar
        with Progress(
            *columns,
            console=con,
            transient=True,
            redirect_stdout=_is_terminal(sys.stdout) and self.stream is None,
            redirect_stderr=self.stream is None,
        ) as bar:
            task = bar.add_task("", total=total)

            def advance(detail: str = "", n: int = 1) -> None:
                bar.update(task, advance=n if total is not None else 0, description=escape(detail))

            Reporter._outer = lambda text: bar.update(task, description=escape(text), refresh=True)
            try:
                yield advance
            finally:
                Reporter._outer = None


def reporter(enabled: bool = True) -> Reporter:
    """The Reporter a command hands its package: `enabled` False for --json (stdout is data)."""
    return Reporter(enabled)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
