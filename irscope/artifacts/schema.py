"""The schemas a dump folder's JSON (manifest.json, map.json, profile.json) is checked against where it is
read, derived from the records' one typed definition (irscope/records.py) by kernel/jsonfile.of.

A dump folder travels between people and can arrive damaged (truncated, hand-edited, written by a
newer or older irscope, or crafted). Every reader goes through these (artifacts.read_manifest,
sourcemap.load, profiled.read, compare.sides.load_side): a file that is not JSON, is empty, is not UTF-8,
nests past what the parser can take, holds an integer of thousands of digits, or has a field of the wrong
type is one BadInput line naming the file and the field (`manifest.json stats.occupancy.occupancy is
"high", expected a number`), never a TypeError deep in a view. Fields a record does not list are not
checked, so a newer irscope's extra fields still read.
"""

from __future__ import annotations

from typing import Any

from irscope import records
from irscope.kernel.jsonfile import (  # noqa: F401  (the checker, for the readers of dump folders)
    ANY,
    NUMBER,
    ListOf,
    MapOf,
    Maybe,
    OneOf,
    Req,
    check,
    load,
    of,
    parse,
    parse_text,
    validate,
)

RECORDS = {
    "MANIFEST": records.Manifest,
    "PASS": records.PassEntry,
    "MAP": records.SourceMap,
    "PROFILE": records.Profile,
}


def __getattr__(name: str) -> Any:
    """MANIFEST, PASS, MAP, PROFILE: each record's schema, derived on first use (jsonfile.of)."""
    if name in RECORDS:
        return of(RECORDS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
