"""The recorder: what irscope.entry hands the click CLI (click's `obj`) so that a full run leaves the record
a repeat of the same command line is served from (record.py, serve.py).

A Recorder is made from the argv as typed, with the import path, the environment and the working folder
as the process started (the loader puts the kernel's folder first on the path; a compile sets Triton's
variables for its duration). The commands hand it what they did, after click parsed that argv: the dumps'
results (the request's kernel file and recipe tell what else was read), the view's options, the output
as it printed to a pipe and the exit status. The output is rendered into a stream the recorder gives
the command's render function (an io.StringIO), and written out from there: sys.stdout is never
swapped. `Recorder(None)` records nothing (the Python API, a CLI not started at irscope.entry).

A run is recorded only where a repeat can be served from the record alone: every dump's target came
from the command line, a recipe or a spec file (never this machine's GPU), the kernel file's import was
observed (kernel.loader), a plain kernel file or a spec file of one (not a captured script's, which
loads on the stand-in GPU unless a GPU is local), and the cache was used (not --no-cache).
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from irscope.artifacts import MANIFEST
from irscope.compile import cache
from irscope.direct import record, report

if TYPE_CHECKING:
    from irscope.records import SpecFile

# where a target can come from that does not depend on this machine (kernel.targets, jobs.choose_target):
# the flag (--target, a diff side's --a-target), a recipe, a spec file; "local GPU" and "default (no GPU
# here)" ask the driver, which a record cannot
_FIXED_TARGET = ("requested", "--", "recipe ", "from ")


class Recorder:
    """One command line's recorder (the module docstring); `Recorder(None)` records nothing."""

    def __init__(self, argv: list[str] | None) -> None:
        self.argv = None if argv is None else list(argv)
        self.path = list(sys.path)
        self.env = dict(os.environ)
        try:
            self.cwd: str | None = os.getcwd()
        except OSError:
            self.cwd = None
        self._key: str | None = None

    @property
    def active(self) -> bool:
        return self.argv is not None and self.cwd is not None

    def key(self) -> str | None:
        """The record's key (record.key), computed once; None when nothing is recorded."""
        if not self.active:
            return None
        if self._key is None:
            self._key = record.key(self.argv or [], self.path, self.env, self.cwd or "")
        return self._key

    # ------------------------------------------------------------ the commands' calls

    def rendered(
        self,
        command: str,
        request: Any,
        out_dir: Path,
        results: list,
        view: dict[str, Any],
        render: Callable[[list, TextIO | None], int],
        use_cache: bool = True,
    ) -> int:
        """render(results, stream) — the command's output into `stream` (None: stdout), its exit status —
        and the record of it (passes, lines): the output as it prints to a pipe, rendered from the
        folders as a repeat finds them. A run that cannot be recorded is only rendered."""
        where = self._recording(request, results) if use_cache else None
        if where is None:
            return render(results, None)
        results = on_disk(results)
        status, text = printed(lambda out: render(results, out))
        self._remember(command, out_dir, view, where, results, text, status)
        return status

    def remember_dump(self, request: Any, out_dir: Path, results: list, as_json: bool, use_cache: bool = True) -> None:
        """A dump's record: its summary as it prints to a pipe, rendered here from the folders (--json is
        rendered by the repeat, as it names how the dump was served)."""
        where = self._recording(request, results) if use_cache else None
        if where is None:
            return
        results = on_disk(results)
        summary = None
        if not as_json:
            from irscope.views import dump as dump_view
            from irscope.views.console import console

            buf = io.StringIO()
            dump_view.summary(results, out=console(file=buf))
            summary = buf.getvalue()
        self._remember("dump", out_dir, {"json": as_json}, where, results, summary, 0)

    def diffed(
        self, request: Any, out_dir: Path, sides: list, render: Callable[[TextIO | None], int], use_cache: bool = True
    ) -> int:
        """render(stream) — a two-compiles diff's output, its exit status (0 equal, 1 different) — and its
        record: to a pipe only (on a terminal its layout follows the width), and only when both sides
        came from the cache (a compiling run prints "(compiled)", which a repeat would not). `sides`:
        compare.sides.Side, each with its cache key."""
        results = [cache.DumpResult(s.folder, s.manifest, True, s.key) for s in sides]
        fit = use_cache and all(s.cached and s.key for s in sides) and not sys.stdout.isatty()
        where = self._recording(request, results) if fit else None
        if where is None:
            return render(None)
        try:
            results = on_disk(results)
        except (OSError, ValueError):
            return render(None)
        status, text = printed(render)
        if status in (0, 1):
            self._remember("diff", out_dir, {}, where, results, text, status, pipe_only=True)
        return status

    def report_before(self, dumps: list | tuple, output: Path, no_layouts: bool) -> dict[str, Any] | None:
        """What a report's record needs from before the page is built (its folders stamped); None when
        nothing is recorded."""
        if not self.active:
            return None
        req = report.request(dumps, output, no_layouts)
        return {"request": req, "state": report.state(req, self.path)}

    def remember_report(self, before: dict[str, Any] | None, html: str, line: str) -> None:
        """A report that wrote `html` and printed `line` (report.remember)."""
        key = self.key()
        if before is not None and key is not None:
            report.remember(key, before["request"], before["state"], html, line)

    # ------------------------------------------------------------ the record

    def _recording(self, request: Any, results: list) -> tuple | None:
        """(kernel file, the other files it read, the paths that must stay absent) for a run the direct
        mode can serve again; None for one it cannot."""
        if not self.active or not recordable(results):
            return None
        from irscope import jobs

        spec_doc = jobs.read_spec_document(request.file) if request.is_spec_file else None
        file = kernel_file(request, spec_doc)
        if file is None:
            return None
        inputs: list[Path] = [request.file] if spec_doc is not None else []
        absent: list[Path] = []
        if request.recipe:
            found, absent = recipe_files(request.recipe)
            inputs += found
        return file, inputs, absent

    def _remember(
        self,
        command: str,
        out_dir: Path,
        view: dict[str, Any],
        where: tuple,
        results: list,
        text: str | None,
        status: int,
        pipe_only: bool = False,
    ) -> None:
        from irscope import adapter
        from irscope.kernel import loader

        key = self.key()
        file, inputs, absent = where
        seen = loader.OBSERVED[str(file.resolve())]
        deps = record.depends(
            file, seen.files, seen.env, adapter.cache_invalidating_env(), self.path, self.env, inputs, absent
        )
        if key is None or deps is None:
            return
        entries = [{"key": r.key, "edit": {k: r.manifest.get(k) for k in record.EDITED}} for r in results]
        record.write(
            key,
            {
                "command": command,
                "out": str(out_dir),
                "view": view,
                "pipe_only": pipe_only,
                "entries": entries,
                **deps,
                "summary": text,
                "status": status,
            },
        )


def printed(render: Callable[[TextIO | None], int], out: TextIO | None = None) -> tuple[int, str]:
    """render(stream)'s exit status and what it prints to a pipe. To a pipe it renders into a buffer,
    written to `out` (sys.stdout) afterwards, also the part before a failure, as the full path prints
    it; on a terminal it renders there, then once more into the buffer."""
    out = sys.stdout if out is None else out
    buf = io.StringIO()
    if out.isatty():
        status = render(out)
        render(buf)
        return status, buf.getvalue()
    try:
        status = render(buf)
    finally:
        out.write(buf.getvalue())
        out.flush()
    return status, buf.getvalue()


def kernel_file(request: Any, spec_doc: SpecFile | None) -> Path | None:
    """The kernel file whose import the record watched: FILE, or the file a spec file names; None when
    the request is not one the direct mode serves: the Python API's loaded kernels, a file that is
    neither .py nor a spec file, a spec file of a captured script, or a kernel file whose import was
    not observed."""
    from irscope.kernel import loader

    if getattr(request, "loaded", ()):
        return None
    if spec_doc is not None:
        if (spec_doc.get("launch") or {}).get("script") or not isinstance(spec_doc.get("file"), str):
            return None
        file = Path(spec_doc["file"])
    elif request.file.suffix == ".py":
        file = request.file
    else:
        return None
    return file if str(file.resolve()) in loader.OBSERVED else None


def recordable(results: list) -> bool:
    """Every dump's target came from the command line, a recipe or a spec file (not the local GPU)."""
    return bool(results) and all(str(r.manifest.get("target_reason", "")).startswith(_FIXED_TARGET) for r in results)


def on_disk(results: list) -> list:
    """The dumps as a repeat will find them: each manifest read back from its folder."""
    return [cache.DumpResult(r.folder, json.loads((r.folder / MANIFEST).read_text()), True, r.key) for r in results]


def recipe_files(name: str) -> tuple[list[Path], list[Path]]:
    """The recipe file --recipe found, and the paths that would have been found first had they existed (a
    recipe name looked up in $IRSCOPE_RECIPES' folders, then irscope's recipes/)."""
    from irscope.steer import recipes

    found = recipes.find(name)
    absent = []
    if found != Path(name):
        for folder in recipes.recipe_dirs():
            candidate = folder / f"{name}.toml"
            if candidate == found:
                break
            absent.append(candidate)
    return [found], absent
