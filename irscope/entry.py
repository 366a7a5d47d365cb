"""The `irscope` command (and `python -m irscope`): a repeat dump the cache's direct mode can serve
is answered here, from the command line alone — no click, no Triton, no kernel file loaded
(compile/direct.py) — and everything else goes to the click CLI (irscope/cli).

Only plain requests are read here: `dump FILE.py` with --kernel, --signature, --arg, --const, an
explicit --target, --set, -o, --json, --passes (and --load-timeout, --debug, which change nothing
served). Any other flag or form (--stage, a recipe, pins, a spec file, a script to capture, no
--target) is the CLI's, as is every miss: the direct mode never guesses.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from irscope.compile import direct

_VALUED = {"--kernel": "kernels", "-k": "kernels", "--signature": "signature", "-s": "signature",
           "--arg": "args", "--const": "consts", "--target": "target", "-t": "target", "--set": "sets",
           "--out": "out", "-o": "out", "--load-timeout": None}
_FLAGS = {"--json": "json", "--passes": "passes", "--debug": None}
_MANY = ("kernels", "args", "consts", "sets")


def main(argv: list[str] | None = None) -> None:
    direct.begin()
    args = list(sys.argv[1:] if argv is None else argv)
    if not _serve(args):
        from irscope.cli import main as cli_main  # click and every command: only when not served here

        cli_main(args)


def _parse(args: list[str]) -> tuple[dict, Path, bool] | None:
    """(fields, out dir, --json) of a plain `dump` request; None for anything else."""
    if len(args) < 2 or args[0] != "dump":
        return None
    got: dict = {k: [] for k in _MANY} | {"signature": None, "target": None, "out": "irscope-out",
                                          "json": False, "passes": False}
    given: set[str] = set()
    file = None
    rest = iter(args[1:])
    for token in rest:
        name, eq, value = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in _VALUED:
            if not eq:
                value = next(rest, None)
                if value is None:
                    return None
            key = _VALUED[name]
            if key in _MANY:
                got[key].append(value)
            elif key is not None:
                if key in given:
                    return None  # a repeated single option: click's rule (the last wins) is the CLI's
                given.add(key)
                got[key] = value
        elif name in _FLAGS and not eq:
            if _FLAGS[name]:
                got[_FLAGS[name]] = True
        elif token.startswith("-") or file is not None:
            return None
        else:
            file = token
    if file is None or not file.endswith(".py") or not got["target"] or not got["target"].strip():
        return None
    if got["signature"] is None and not got["args"] and not got["consts"]:
        return None  # a script to capture
    if not os.path.isfile(file) or not str(got["out"]).strip():
        return None
    fields = direct.dump_fields(file, got["kernels"], got["signature"], got["args"], got["consts"], got["target"],
                         got["sets"], got["out"], got["json"], got["passes"])
    return fields, Path(got["out"]), got["json"]


def _serve(args: list[str]) -> bool:
    """Answer a repeat dump from the direct mode; False (nothing printed) when it cannot."""
    parsed = _parse(args)
    if parsed is None:
        return False
    fields, out, as_json = parsed
    try:
        doc = direct.lookup(fields)
        served = direct.serve(doc, out) if doc is not None else None
    except Exception:  # noqa: BLE001 - any doubt is the full path's to settle (it says what went wrong)
        return False
    if served is None:
        return False
    results = [direct.cache.DumpResult(folder, manifest, cached=True, key=key, served="direct")
               for folder, manifest, key in served]
    if as_json:
        from irscope.views.dump import as_json as render

        sys.stdout.write(render(results) + "\n")
    elif doc.get("summary") is not None and not sys.stdout.isatty():
        sys.stdout.write(doc["summary"])
    else:
        from irscope.views.dump import summary

        summary(results)
    sys.stdout.flush()
    return True
