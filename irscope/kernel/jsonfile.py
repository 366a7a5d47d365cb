"""JSON files from other people (dump folders' manifest.json and map.json, spec files): parsed so that no
file can raise past one BadInput line, and checked against a small schema of types.

parse_text: not UTF-8, empty, not JSON, nested past the parser (RecursionError), an integer past
Python's int-from-string limit (4,300 digits: ValueError) -> BadInput naming the file.
check / validate: a schema is a type (or tuple of types), NUMBER, a `{key: schema}` dict (keys not
listed are not checked; `Req` marks the ones that must be there), `MapOf`, `ListOf`, `Maybe` (null
allowed), `OneOf` or ANY; the first value of the wrong type is BadInput naming its dotted path
(`stats.occupancy.occupancy is "high", expected a number`). `of` derives a schema from a record's
annotations (irscope/records.py): the schemas of irscope's own files are never written by hand. Stdlib only.
"""

from __future__ import annotations

import functools
import json
import math
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irscope import records
from irscope.errors import BadInput

ANY = object()
NUMBER = object()  # an int or a finite float, not a bool


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


@functools.cache
def of(hint: Any) -> Any:
    """The schema of a record (a TypedDict of irscope/records.py) or of any type in one: required keys are
    Req, `X | None` Maybe, `float` NUMBER, a Literal its values' type (a newer irscope's new value still
    reads), `dict[str, Any]` / `list[Any]` any object / list. Derived once per type, on first use (a cached re-dump
    that reads no folder never pays for it); the schema returned is shared: never change it."""
    if hint is Any:
        return ANY
    if records.is_record(hint):
        return {k: Req(of(t)) if required else of(t) for k, (t, required) in records.fields(hint).items()}
    members = records.union_members(hint)
    if members is not None:
        rest = tuple(m for m in members if m is not type(None))
        inner = of(rest[0]) if len(rest) == 1 else _one_of(rest)
        return Maybe(inner) if len(rest) < len(members) else inner
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        kinds = tuple(dict.fromkeys(type(a) for a in args))
        return kinds[0] if len(kinds) == 1 else kinds
    if origin is list:
        return list if args[0] is Any else ListOf(of(args[0]))
    if origin is dict:
        return dict if args[1] is Any else MapOf(of(args[1]))
    return NUMBER if hint is float else hint


def _one_of(members: tuple) -> Any:
    schemas = tuple(of(m) for m in members)
    if all(s in (str, int, bool) for s in schemas):
        return schemas
    return OneOf(schemas, " or ".join(_type_name(s) for s in schemas))


def _type_name(schema: Any) -> str:
    if schema is NUMBER:
        return "a number"
    if schema is ANY:
        return "any value"
    if isinstance(schema, Maybe):
        return _type_name(schema.schema) + " or null"
    if isinstance(schema, (dict, MapOf)):
        return "an object"
    if isinstance(schema, ListOf):
        return "a list"
    if isinstance(schema, OneOf):
        return schema.what
    names = {
        str: "a string",
        int: "an integer",
        bool: "true or false",
        float: "a number",
        dict: "an object",
        list: "a list",
    }
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
        return (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and (isinstance(value, int) or math.isfinite(value))
        )
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
    except ValueError as e:  # an integer past Python's int-from-string limit (4,300 digits)
        raise BadInput(
            f"{path}: {what} is unreadable: a number too long to read ({str(e).split(';')[0]}); {remedy}"
        ) from None


def load(path: Path, schema: Any, what: str, remedy: str = "dump it again") -> dict[str, Any]:
    """Parse `path` and check it against `schema`: BadInput naming the file and field otherwise."""
    doc = parse(path, what, remedy)
    validate(doc, schema, path, what, remedy)
    return doc


def validate(doc: Any, schema: Any, path: Path | str, what: str, remedy: str = "dump it again") -> None:
    try:
        check(doc, schema)
    except BadInput as e:  # "manifest.json stats.registers is ...", as artifacts.inside names fields
        raise BadInput(f"{path}: {what} {e}; {remedy}") from None
    except RecursionError:  # a value nested deeper than any schema reads (checked leaves only)
        raise BadInput(f"{path}: {what} nests too deeply to read; {remedy}") from None
