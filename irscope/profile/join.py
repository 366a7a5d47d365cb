"""The join: each measured SASS instruction to its Python line, the TTGIR ops of that line, and
the pass that made them, through the dump folder's own listing and map.json.

map.json's `lines[].stages.sass.at` are 1-based line numbers in the dump's KERNEL.sass, whose
instruction lines carry their offset (`/*0010*/`). ncu reports absolute addresses; minus the
function's first address they are those offsets. The join holds only when the two listings are the
same instructions, offset by offset: the profiled binary is the dumped one. When they differ (a
kernel recompiled between the dump and the run, another specialization) it refuses rather than
attribute one binary's samples to another's lines.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irscope.errors import BadInput
from irscope.profile.ncu import SourcePage
from irscope.records import MapLine, SourceMap

_OFFSET_LINE = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*$")
MAX_INSTRUCTIONS_KEPT = 4000  # per-instruction rows in profile.json (every one, for any real kernel)


@dataclass
class Listing:
    """The dump's SASS: offset -> (1-based line in KERNEL.sass, the instruction's text)."""

    by_offset: dict[int, tuple[int, str]]


def read_listing(text: str) -> Listing:
    out: dict[int, tuple[int, str]] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if m := _OFFSET_LINE.match(line):
            out[int(m.group(1), 16)] = (n, " ".join(m.group(2).split()))
    return Listing(out)


def opcode(text: str) -> str:
    """The predicate and the mnemonic with its modifiers ('@!P0 LDG.E.128'): what both listings spell alike.
    Operands are not compared: ncu writes branch targets as addresses, drops .reuse and orders some
    operands (LDGSTS) otherwise than nvdisasm."""
    words = text.split()
    head = words[:2] if words and words[0].startswith("@") else words[:1]
    return " ".join(head).replace(".reuse", "")


def _same(a: str, b: str) -> bool:
    return opcode(a) == opcode(b)


def check_same_binary(page: SourcePage, listing: Listing, where: str) -> None:
    """Refuse when the profiled instructions are not the dumped ones (named by the first difference)."""
    start = page.start
    if len(page.instructions) != len(listing.by_offset):
        raise BadInput(
            f"{where}: the profiled kernel has {len(page.instructions)} SASS instructions, the dump's "
            f"listing {len(listing.by_offset)}: not the same binary (dump and profile it in one run)"
        )
    for ins in page.instructions:
        offset = ins.address - start
        dumped = listing.by_offset.get(offset)
        if dumped is None or not _same(dumped[1], ins.sass):
            got = dumped[1] if dumped else "nothing"
            raise BadInput(
                f"{where}: at offset {offset:#06x} ncu ran {ins.sass!r} but the dump has {got!r}: "
                "not the same binary (dump and profile it in one run)"
            )


def _line_of_sass_line(source_map: SourceMap) -> dict[int, MapLine]:
    """1-based KERNEL.sass line -> the map's line entry that claims it (the first, if two do)."""
    out: dict[int, MapLine] = {}
    for entry in source_map["lines"]:
        sass: Mapping[str, Any] = entry["stages"].get("sass") or {}
        for n in sass.get("at", []):
            out.setdefault(n, entry)
    return out


def _ttgir_ops(source_map: SourceMap):
    """The TTGIR ops of a map entry; where the entry has none but an entry of the same file name and line
    has (a Triton cache hit compiled from a copy of the file elsewhere spells the IR's path otherwise than
    nvdisasm's), that entry's."""
    by_base: dict[tuple[str, int], dict[str, int]] = {}
    for e in source_map["lines"]:
        ttgir: Mapping[str, Any] = e["stages"].get("ttgir") or {}
        ops = ttgir.get("ops")
        if ops:
            by_base.setdefault((Path(e["file"]).name, e["line"]), dict(ops))

    def of(entry: dict[str, Any]) -> dict[str, int]:
        own = (entry.get("stages", {}).get("ttgir") or {}).get("ops")
        return dict(own) if own else dict(by_base.get((Path(entry["file"]).name, entry["line"]), {}))

    return of


def _add(into: dict[str, float], stalls: dict[str, float]) -> None:
    for k, v in stalls.items():
        into[k] = into.get(k, 0) + v


def join_ncu(
    page: SourcePage,
    listing: Listing,
    source_map: SourceMap,
    where: str,
    histories: dict[tuple[str, int], list[str]] | None = None,
) -> dict[str, Any]:
    """The profile document's lines, instructions, unmapped share and per-instruction totals."""
    check_same_binary(page, listing, where)
    claims = _line_of_sass_line(source_map)
    ttgir_of = _ttgir_ops(source_map)
    start = page.start
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    instructions = []
    unmapped = {"samples": 0.0, "executed": 0.0}
    total: dict[str, Any] = {"samples": 0.0, "stalls": {}, "executed": 0.0, "bytes": 0.0}
    for ins in page.instructions:
        offset = ins.address - start
        entry = claims.get(listing.by_offset[offset][0])
        total["samples"] += ins.samples
        total["executed"] += ins.executed
        total["bytes"] += ins.bytes
        _add(total["stalls"], ins.stalls)
        row = {
            "offset": offset,
            "sass": ins.sass,
            "file": None,
            "line": None,
            "samples": ins.samples,
            "stalls": ins.stalls,
            "executed": ins.executed,
            "bytes": ins.bytes,
        }
        if entry is None:
            unmapped["samples"] += ins.samples
            unmapped["executed"] += ins.executed
        else:
            key = (entry["file"], entry["line"])
            row.update(file=key[0], line=key[1])
            line = rows.get(key)
            if line is None:
                line = rows[key] = {
                    "file": key[0],
                    "line": key[1],
                    "text": entry.get("text"),
                    "samples": 0.0,
                    "share": 0.0,
                    "stalls": {},
                    "executed": 0.0,
                    "bytes": 0.0,
                    "ttgir": ttgir_of(entry),
                    "sass_ops": {},
                    "passes": list((histories or {}).get(key, [])),
                }
            line["samples"] += ins.samples
            line["executed"] += ins.executed
            line["bytes"] += ins.bytes
            _add(line["stalls"], ins.stalls)
            op = opcode(ins.sass).split()[-1].split(".")[0]
            line["sass_ops"][op] = line["sass_ops"].get(op, 0) + 1
        instructions.append(row)
    lines = finish_lines(list(rows.values()), total["samples"])
    return {"lines": lines, "instructions": instructions[:MAX_INSTRUCTIONS_KEPT], "unmapped": unmapped, "totals": total}


def finish_lines(lines: list[dict[str, Any]], samples: float) -> list[dict[str, Any]]:
    """Shares of the kernel's samples; hottest first (then by file and line, for a stable order)."""
    for line in lines:
        line["share"] = line["samples"] / samples if samples else 0.0
        line["stalls"] = dict(sorted(line["stalls"].items(), key=lambda kv: -kv[1]))
    return sorted(lines, key=lambda x: (-x["samples"], x["file"], x["line"]))


def map_entries(source_map: SourceMap) -> dict[tuple[str, int], MapLine]:
    return {(e["file"], e["line"]): e for e in source_map["lines"]}


def join_lines(
    per_line: dict[tuple[str, int], dict[str, Any]],
    source_map: SourceMap,
    histories: dict[tuple[str, int], list[str]] | None = None,
) -> dict[str, Any]:
    """Proton's fallback: samples come per (file, line) already; the map adds text and TTGIR ops."""
    entries = map_entries(source_map)
    by_base = {(Path(f).name, n): e for (f, n), e in entries.items()}
    lines = []
    total: dict[str, Any] = {"samples": 0.0, "stalls": {}, "executed": 0.0, "bytes": 0.0}
    for (file, n), fig in per_line.items():
        entry: Mapping[str, Any] = entries.get((file, n)) or by_base.get((Path(file).name, n)) or {}
        stages = entry.get("stages", {})
        total["samples"] += fig["samples"]
        _add(total["stalls"], fig["stalls"])
        lines.append(
            {
                "file": entry.get("file", file),
                "line": n,
                "text": entry.get("text"),
                "samples": fig["samples"],
                "share": 0.0,
                "stalls": dict(fig["stalls"]),
                "ttgir": dict((stages.get("ttgir") or {}).get("ops", {})),
                "sass_ops": dict(Counter((stages.get("sass") or {}).get("ops", {}))),
                "passes": list((histories or {}).get((entry.get("file", file), n), [])),
            }
        )
    return {"lines": finish_lines(lines, total["samples"]), "totals": total}
