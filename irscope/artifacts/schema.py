"""The one schema of a dump folder's JSON (manifest.json, map.json), checked where it is read.

A dump folder travels between people and can arrive damaged (truncated, hand-edited, written by a
newer or older irscope, or crafted). Every reader goes through `load` (artifacts.read_manifest,
sourcemap.load, compare.sides.load_side): a file that is not JSON, is empty, is not UTF-8, nests past
what the parser can take, holds an integer of thousands of digits, or has a field of the wrong type
for what irscope reads is one BadInput line naming the file and the field (`manifest.json
stats.occupancy.occupancy is "high", expected a number`), never a TypeError deep in a view.

The checker is a few lines of stdlib: a schema is a type (or tuple of types), NUMBER, a `{key:
schema}` dict (keys not listed are not checked; `Req` marks the ones that must be there), `MapOf`,
`ListOf`, `Maybe` (null allowed) or ANY. It checks the fields irscope reads, nothing else, so a newer
irscope's extra fields still read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irscope.errors import BadInput

ANY = object()
NUMBER = object()    # an int or a finite float, not a bool


@dataclass(frozen=True)
class Req:
    schema: Any


@dataclass(frozen=True)
class Maybe:
    schema: Any


@dataclass(frozen=True)
class MapOf:
    schema: Any


@dataclass(frozen=True)
class ListOf:
    schema: Any


@dataclass(frozen=True)
class OneOf:
    options: tuple
    what: str


def _type_name(schema: Any) -> str:
    if schema is NUMBER:
        return "a number"
    if isinstance(schema, Maybe):
        return _type_name(schema.schema) + " or null"
    if isinstance(schema, (dict, MapOf)):
        return "an object"
    if isinstance(schema, ListOf):
        return "a list"
    if isinstance(schema, OneOf):
        return schema.what
    names = {str: "a string", int: "an integer", bool: "true or false", float: "a number", dict: "an object",
             list: "a list"}
    types = schema if isinstance(schema, tuple) else (schema,)
    return " or ".join(names.get(t, t.__name__) for t in types)


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _ok(value: Any, schema: Any) -> bool:
    if schema is ANY:
        return True
    if schema is NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and \
            (isinstance(value, int) or math.isfinite(value))
    if isinstance(schema, (dict, MapOf)):
        return isinstance(value, dict)
    if isinstance(schema, ListOf):
        return isinstance(value, list)
    if isinstance(schema, OneOf):
        return any(_ok(value, s) for s in schema.options)
    types = schema if isinstance(schema, tuple) else (schema,)
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def check(value: Any, schema: Any, where: str = "") -> None:
    """BadInput naming `where` (a dotted path; "" is the document itself) for the first value of the
    wrong type, or a required field that is missing."""
    if isinstance(schema, Maybe):
        if value is None:
            return
        schema = schema.schema
    if isinstance(schema, OneOf):
        for option in schema.options:
            if _ok(value, option):
                check(value, option, where)
                return
    if not _ok(value, schema):
        raise BadInput(f"{where or 'the document'} is {_shown(value)}, expected {_type_name(schema)}")
    join = (lambda k: f"{where}.{k}") if where else str
    if isinstance(schema, dict):
        for key, sub in schema.items():
            required = isinstance(sub, Req)
            sub = sub.schema if required else sub
            if key not in value:
                if required:
                    raise BadInput(f"{where + ' ' if where else ''}lacks {key!r} ({_type_name(sub)})")
                continue
            check(value[key], sub, join(key))
    elif isinstance(schema, MapOf):
        for key, sub in value.items():
            check(sub, schema.schema, join(key))
    elif isinstance(schema, ListOf):
        for i, sub in enumerate(value):
            check(sub, schema.schema, f"{where}[{i}]")


# ------------------------------------------------------------------ manifest.json

COUNTS = MapOf(NUMBER)
NUMBER_TREE = MapOf(OneOf((NUMBER, COUNTS), "a number or an object of numbers"))
LAYOUT = {"alias": str, "kind": str, "params": str}

STATS = {
    **{k: Maybe(NUMBER) for k in ("registers", "spills", "spill_store_bytes", "spill_load_bytes", "shared_bytes",
                                  "num_warps", "stack_bytes", "local_bytes", "named_barriers", "vgpr_count",
                                  "sgpr_count", "agpr_count", "arch_vgprs", "acc_vgprs", "vgpr_spill_count",
                                  "sgpr_spill_count", "lds_static_bytes", "scratch_bytes", "compiler_occupancy")},
    # what the report's cards and charts index (report/model.py resources, charts) is required
    "occupancy": Maybe({"occupancy": Req(NUMBER), "limited_by": Req(str), "blocks_per_sm": NUMBER,
                        "warps_per_sm": NUMBER, "waves_per_simd": NUMBER, "compiler_occupancy": Maybe(NUMBER)}),
    "sass": Maybe({"instructions": Req(NUMBER), "classes": Req(COUNTS), "top": Req(COUNTS), "global_widths": COUNTS}),
    "ptx": Maybe(NUMBER_TREE),
    "amdgcn": Maybe({**{k: Req(NUMBER) for k in ("instructions", "mfma", "wmma", "lds_load", "lds_store",
                                                 "async_copy_to_lds", "barrier", "scratch_ops")},
                     "global_load": COUNTS, "global_store": COUNTS, "top": Req(COUNTS)}),
    "ttgir": Maybe({"layouts": ListOf(LAYOUT), **{k: NUMBER for k in (
        "convert_layout", "local_alloc", "local_load", "local_store", "async_copy", "tma_load", "dot", "barrier",
        "loops", "num_warps")}}),
}

PASS = {"index": Req(int), "stage": Req(str), "name": Req(str), "arg": Req(str), "added": int, "removed": int,
        "file": Req(str)}

MANIFEST = {
    "irscope": Req(ANY),
    "kernel": Req(str),
    "target": Req(str),
    "stages": Req(MapOf(str)),
    "file": str,
    "target_reason": str,
    "signature": str,
    "args": MapOf(str),
    "triton_version": str,
    "options": dict,
    "user_options": dict,
    "option_sources": dict,
    "env": dict,
    "times_ms": Maybe(MapOf(NUMBER)),
    "metadata": dict,
    "stats": Maybe(STATS),
    "notes": Maybe(ListOf(str)),
    "passes": Maybe(ListOf(PASS)),
    "key": str,
    "recipe": Maybe(dict),
    "pins": Maybe(ListOf(dict)),
    "map": Maybe(str),
    "files": Maybe(MapOf(str)),
}

# ------------------------------------------------------------------ map.json

FIG = {"n": Req(NUMBER), "at": ListOf(int), "ops": COUNTS, "classes": COUNTS, "spill_bytes": NUMBER,
       "regs": NUMBER, "layouts": list}
LINE = {"file": Req(str), "line": Req(int), "text": Maybe(str), "stages": Req(MapOf(FIG)),
        "callees": ListOf({"file": Req(str), "line": Req(int), "text": Maybe(str), "stages": Req(MapOf(FIG))})}
MAP = {
    "irscope_map": Req(ANY),
    "kernel_file": Req(str),
    "machine": Maybe(str),
    "stages": MapOf({"file": str, "units": NUMBER, "mapped": NUMBER}),
    "lines": Req(ListOf(LINE)),
    "no_line": Maybe(MapOf(FIG)),
    "files": Maybe(MapOf(NUMBER)),
}


# ------------------------------------------------------------------ reading

def parse(path: Path, what: str, remedy: str = "dump it again") -> Any:
    """The JSON in `path`; one BadInput line for anything that is not a readable JSON document."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise BadInput(f"{path}: {what} is unreadable ({e.strerror or e}); {remedy}") from None
    return parse_text(raw, path, what, remedy)


def parse_text(raw: bytes | str, path: Path | str, what: str, remedy: str = "dump it again") -> Any:
    """As parse, for bytes already read (`path` only names them)."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BadInput(f"{path}: {what} is unreadable: not UTF-8 text (byte {e.start}); {remedy}") from None
    if not raw.strip():
        raise BadInput(f"{path}: {what} is unreadable: empty; {remedy}")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: {what} is unreadable: not valid JSON (line {e.lineno}: {e.msg}); {remedy}") from None
    except RecursionError:
        raise BadInput(f"{path}: {what} is unreadable: nested too deeply; {remedy}") from None
    except ValueError as e:   # an integer past Python's int-from-string limit (4,300 digits)
        raise BadInput(f"{path}: {what} is unreadable: a number too long to read ({str(e).split(';')[0]}); "
                       f"{remedy}") from None


def load(path: Path, schema: Any, what: str, remedy: str = "dump it again") -> dict[str, Any]:
    """Parse `path` and check it against `schema`: BadInput naming the file and field otherwise."""
    doc = parse(path, what, remedy)
    validate(doc, schema, path, what, remedy)
    return doc


def validate(doc: Any, schema: Any, path: Path | str, what: str, remedy: str = "dump it again") -> None:
    try:
        check(doc, schema)
    except BadInput as e:   # "manifest.json stats.registers is ...", as artifacts.inside names fields
        raise BadInput(f"{path}: {what} {e}; {remedy}") from None
    except RecursionError:   # a value nested deeper than any schema reads (checked leaves only)
        raise BadInput(f"{path}: {what} nests too deeply to read; {remedy}") from None
