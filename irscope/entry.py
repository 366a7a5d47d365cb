"""The `irscope` command (and `python -m irscope`): a repeat the cache's direct mode can serve is answered
here, from the command line alone — no click, no Triton, no kernel file loaded (compile/direct.py) — and
everything else goes to the click CLI (irscope/cli).

Only plain requests are read here: `dump`, `passes` and `lines` of a kernel file (.py) or spec file
(.json) with the kernel-file options (--kernel, --signature, --arg, --const, --target, --set, -o,
--recipe, --variant, the --pin-* options; --load-timeout and --debug change nothing served) and the
view's own flags (dump: --json, --passes; passes: --first, --all, --line; lines: --line, --stage,
--sort, --top, --json). Any other flag or form (--no-cache, dump --stage/--lines/--html, a dump
folder, a script to capture, short options run together) is the CLI's, as is every miss: the direct
mode never guesses. Whether the target may be left out is the record's to say: one is only written
when the target came from the command line, a recipe or a spec file. `report DUMP... [-o FILE]
[--no-layouts]` is answered from its own record (report/repeat.py) when no dump, template, renderer
or Triton changed since it was written.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from irscope.compile import direct
from irscope.errors import IrscopeError
from irscope.report import repeat

_VALUED = {"--kernel": "kernels", "-k": "kernels", "--signature": "signature", "-s": "signature",
           "--arg": "args", "--const": "consts", "--target": "target", "-t": "target", "--set": "sets",
           "--out": "out", "-o": "out", "--recipe": "recipe", "-r": "recipe", "--variant": "variants",
           "--pin-layout": "pin_layouts", "--pin-loop": "pin_loops", "--pin-partition": "pin_partitions",
           "--load-timeout": None}
_MANY = ("kernels", "args", "consts", "sets", "variants", "pin_layouts", "pin_loops", "pin_partitions")
# per command: the view's valued options, its flags (name -> field), and the view's defaults as click has them
_VIEWS = {
    "dump": ({}, {"--json": "json", "--passes": "passes"}, {"json": False}),
    "passes": ({"--first": "first", "--line": "line"}, {"--all": "all"}, {"first": None, "all": False, "line": None}),
    "lines": ({"--line": "line", "--stage": "stage", "--sort": "sort", "--top": "top"}, {"--json": "json"},
              {"line": None, "stage": None, "sort": "instructions", "top": 0, "json": False}),
    # diff of a kernel file's two sides, to a pipe only (on a terminal its layout follows the width)
    "diff": ({"--a": "a", "--b": "b", "--a-target": "a_target", "--b-target": "b_target", "--a-variant": "a_variant",
              "--b-variant": "b_variant", "--stage": "stages", "--context": "context", "-U": "context"},
             {"--passes": "passes", "--by-line": "by_line", "--raw": "raw", "--json": "json",
              "--side-by-side": "side_by_side", "--unified": "unified"},
             {"a": [], "b": [], "a_target": None, "b_target": None, "a_variant": None, "b_variant": None, "stages": [],
              "context": 3, "by_line": False, "raw": False, "json": False, "side_by_side": False, "unified": False}),
}


def main(argv: list[str] | None = None) -> None:
    direct.begin()
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["report"] and repeat.serve_args(args[1:]):
        return
    parsed = _parse(args)
    status = _serve(*parsed) if parsed is not None else None
    if status is not None:
        if status:
            sys.exit(status)
        return
    if parsed is not None and parsed[0]["command"] == "diff":
        _recorded(args, *parsed)
        return
    from irscope.cli import main as cli_main  # click and every command: only when not served here

    cli_main(args)


def _parse(args: list[str]) -> tuple[dict, Path] | None:  # noqa: C901
    """(direct.request_fields, out dir) of a request read here; None for anything else."""
    if len(args) < 2 or args[0] not in _VIEWS:
        return None
    command = args[0]
    view_valued, view_flags, view = _VIEWS[command]
    view = {k: list(v) if isinstance(v, list) else v for k, v in view.items()}
    got: dict = {k: [] for k in _MANY}
    given: set[str] = set()
    file = None
    rest = iter(args[1:])
    for token in rest:
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in _VALUED or name in view_valued:
            if not eq:
                value = next(rest, None)
                if value is None:
                    return None
            key = _VALUED.get(name) or view_valued.get(name)
            if key in _MANY:
                got[key].append(value)
            elif name in view_valued and isinstance(view[key], list):
                view[key].append(value)
            elif key is not None:
                if key in given:
                    return None  # a repeated single option: click's rule (the last wins) is the CLI's
                given.add(key)
                (view if name in view_valued else got)[key] = value
        elif name in view_flags and not eq:
            (got if view_flags[name] == "passes" else view)[view_flags[name]] = True
        elif name == "--debug" and not eq:
            continue
        elif token.startswith("-") or file is not None:
            return None
        else:
            file = token
    if file is None or not file.endswith((".py", ".json")) or not os.path.isfile(file):
        return None
    if file.endswith(".py") and "signature" not in got and not got["args"] and not got["consts"]:
        return None  # a script to capture
    for number in ("top", "context"):
        if number in given:
            if not view[number].isdigit():
                return None  # click's IntRange says what is wrong with it
            view[number] = int(view[number])
    if command == "diff" and (sys.stdout.isatty() or (view["side_by_side"] and view["unified"])):
        return None  # a terminal's width decides the layout; of both flags click's order decides
    if not str(got.get("out", "irscope-out")).strip():
        return None
    if command == "passes":
        got["passes"] = True
    fields = direct.request_fields(command, file, view, **got)
    return fields, Path(fields["out"])


def _serve(fields: dict, out: Path) -> int | None:
    """Answer a repeat from the direct mode: its exit status; None (nothing printed) when it cannot."""
    try:
        doc = direct.lookup(fields)
        if doc is not None and fields["command"] == "diff" and doc.get("summary") is None:
            return None
        served = direct.serve(doc, out) if doc is not None else None
    except Exception:  # noqa: BLE001 - any doubt is the full path's to settle (it says what went wrong)
        return None
    if served is None:
        return None
    results = [direct.cache.DumpResult(folder, manifest, cached=True, key=key, served="direct")
               for folder, manifest, key in served]
    view = fields["view"]
    status = int(doc.get("status") or 0)
    if fields["command"] == "dump" and view["json"]:
        from irscope.views import dump as dump_view

        sys.stdout.write(dump_view.as_json(results) + "\n")
        if any(r.manifest.get("pins") for r in results):
            dump_view.warn_pins_without_effect(results)
    elif doc.get("summary") is not None and not sys.stdout.isatty():
        sys.stdout.write(doc["summary"])
    elif fields["command"] == "dump":
        from irscope.views import dump as dump_view

        dump_view.summary(results)
    else:
        try:
            status = _render(fields["command"], [(r.folder, r.manifest) for r in results], view)
        except IrscopeError as e:  # as cli.main says it (what rendered before it stays printed)
            sys.stdout.flush()
            sys.stderr.write(f"irscope: error: {e}\n")
            return e.exit_code
    sys.stdout.flush()
    return status


def _render(command: str, folders: list[tuple], view: dict) -> int:
    """passes and lines on a terminal: the command's own rendering of the folders served."""
    from irscope import cli

    if command == "passes":
        return cli.passes.show(folders, view["first"], view["all"], view["line"])
    return cli.lines.show(folders, view["line"], view["stage"], view["sort"], view["top"], view["json"])


class _Tee:
    """A text stream that also keeps what was written to it (a diff's output, for its record)."""

    def __init__(self, real) -> None:
        self.real = real
        self.parts: list[str] = []

    def write(self, text: str) -> int:
        n = self.real.write(text)
        self.parts.append(text)
        return n

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def text(self) -> str:
        return "".join(self.parts)

    def __getattr__(self, name: str):
        return getattr(self.real, name)


def _recorded(args: list[str], fields: dict, out: Path) -> None:
    """A diff the direct mode could not serve, through the CLI, and its record: the output as it printed
    (to a pipe) and the exit status (0 equal, 1 different). diff does not hand its dumps back, so the
    sides are the entries the cache noted (cache.NOTED); a run is recorded only when both sides came
    from the cache (a compiling run prints "(compiled)", which a repeat would not) and nothing went to
    stderr (a note, a kernel file's own printing, an error)."""
    from irscope import cli

    stdout, stderr = _Tee(sys.stdout), _Tee(sys.stderr)
    direct.cache.NOTED = []
    sys.stdout, sys.stderr = stdout, stderr
    status = 0
    try:
        cli.main(args)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        raise
    finally:
        sys.stdout, sys.stderr = stdout.real, stderr.real
        noted, direct.cache.NOTED = direct.cache.NOTED, None
        if status in (0, 1) and not stderr.text() and len(noted) == 2 and all(h == "restored" for h, _ in noted):
            try:
                _remember_diff(fields, out, [key for _, key in noted], stdout.text(), status)
            except Exception:  # noqa: BLE001 - no record is only a slower next run
                pass


def _remember_diff(fields: dict, out: Path, keys: list[str], text: str, status: int) -> None:
    from irscope.cli import options

    results = direct.noted(out, keys)
    where = options.recording(options.request_from(fields), results) if results else None
    if where is not None:
        direct.remember_request(fields, *where, results, text, status=status)
