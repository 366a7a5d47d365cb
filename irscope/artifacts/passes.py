"""Per-pass IR: split Triton's MLIR dump into one record per pass, and query it.

Triton's pass managers, with MLIR_ENABLE_DUMP=1, print the module *before* every
pass. The IR *after* pass i is therefore the dump before pass i+1 of the same
stage, and for the last pass of a stage the stage's own output (TTIR, TTGIR). The
last MLIR pass of the llir stage is followed by translation to LLVM IR, so its
after-IR is not an MLIR module and is not recorded.

Changes are counted on lines with debug locations removed, so a pass that only
moves `loc(...)` information does not show as a change.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from irscope import artifacts
from irscope.artifacts import PassRecord, lineinfo, sourcemap
from irscope.errors import BadInput
from irscope.records import Manifest
from irscope.stages import BINARY, names

# Two spellings, depending on the printer MLIR picks: "Name (arg) ('op' ...)" on stderr,
# "Name: arg{options} ('op' ...)" in MLIR_DUMP_PATH files.
HEADER = re.compile(
    r"^// -----// IR Dump Before (?P<name>[\w.:<>-]+?)"
    r"(?: \((?P<arg1>[^()']*)\)|: (?P<arg2>.*?))? \('(?P<op>[\w.]+)' operation"
    r"(?:: @(?P<fn>[\w.$]+))?\) //----- //\s*$",
    re.MULTILINE,
)
LOC = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)")


@dataclass
class _Dump:
    stage: str
    name: str
    arg: str
    text: str


def _parse(text: str, stage: str) -> list[_Dump]:
    heads = list(HEADER.finditer(text))
    dumps = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        arg = (m.group("arg1") or m.group("arg2") or "").split("{")[0].strip()
        body = text[m.end() : end]
        # what the pass prints while it runs (the pipeliner's "// -----// SoftwarePipeliner internal IR
        # Dump After: ..." modules) follows the dump before it: not the IR after the previous pass
        inner = body.find("\n// -----//")
        body = body[:inner] if inner >= 0 else body
        dumps.append(_Dump(stage, m.group("name"), arg, body.strip("\n") + "\n"))
    return dumps


def normalized_lines(ir: str) -> list[str]:
    """IR lines without debug locations: #loc definitions dropped, loc(...) stripped."""
    out = []
    for line in ir.splitlines():
        if line.startswith("#loc"):
            continue
        line = LOC.sub("", line).rstrip()
        if line:
            out.append(line)
    return out


def count_changes(before: str, after: str) -> tuple[int, int]:
    if before == after:
        return 0, 0
    a, b = normalized_lines(before), normalized_lines(after)
    if a == b:
        return 0, 0
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def split(dump: str, offsets: dict[str, int], stages: dict) -> tuple[list[PassRecord], list[str | None]]:
    """Records (with change counts) and the IR after each pass, from one compile's dump."""
    raw = dump.encode("utf-8", errors="replace")
    order = sorted(offsets.items(), key=lambda kv: kv[1])
    dumps: list[_Dump] = []
    for i, (stage, start) in enumerate(order):
        end = order[i + 1][1] if i + 1 < len(order) else len(raw)
        dumps.extend(_parse(raw[start:end].decode("utf-8", errors="replace"), stage))
    records, afters = [], []
    for i, d in enumerate(dumps):
        nxt = dumps[i + 1] if i + 1 < len(dumps) else None
        if nxt is not None and nxt.stage == d.stage:
            after = nxt.text
        elif d.stage in names(passes=True) and isinstance(stages.get(d.stage), str):
            after = stages[d.stage]
        else:
            after = None
        added, removed = count_changes(d.text, after) if after is not None else (0, 0)
        safe = re.sub(r"[^\w.-]", "_", d.name)[:60]
        records.append(PassRecord(i + 1, d.stage, d.name, d.arg, added, removed, f"passes/{i + 1:03d}-{safe}.mlir"))
        afters.append(after)
    return records, afters


@dataclass
class FirstMatch:
    where: str  # "frontend" | "pass" | "stage" | "none"
    stage: str = ""
    record: PassRecord | None = None
    sources: list[tuple[str, int]] = field(default_factory=list)  # the Python lines of the matching ops


def first_producer(
    pattern: str, records: list[PassRecord], afters: list[str | None], first_ir: str, stages: dict
) -> FirstMatch:
    """Which pass first produced IR matching `pattern` (a regex)."""
    rx = re.compile(pattern)
    if rx.search(first_ir):
        return FirstMatch("frontend", "frontend", sources=matching_sources(rx, "ttir", first_ir))
    for rec, after in zip(records, afters):
        if after is not None and rx.search(after):
            return FirstMatch("pass", rec.stage, rec, matching_sources(rx, "ttir", after))
    for name, content in stages.items():
        if name in ("source",) or not isinstance(content, str):
            continue
        if rx.search(content):
            return FirstMatch("stage", name, sources=matching_sources(rx, name, content))
    return FirstMatch("none")


def matching_sources(rx: re.Pattern, stage: str, text: str) -> list[tuple[str, int]]:
    """The Python lines (outermost frame: the kernel's line) of the units whose line matches rx."""
    units = sourcemap.stage_units({stage: text}).get(stage, [])
    lines = text.splitlines()
    hits = {u.frames[0] for u in units if u.frames and 0 < u.line <= len(lines) and rx.search(lines[u.line - 1])}
    return sorted(hits)


@dataclass
class LineChange:
    """What one pass did to the ops of one Python line (record None: the frontend's IR)."""

    record: PassRecord | None
    added: Counter
    removed: Counter


def line_history(
    spec: str, kernel_file: str, records: list[PassRecord], afters: list[str | None], first_ir: str
) -> list[LineChange]:
    """For --line SPEC: the frontend's ops of that line, then each pass that added or removed some."""
    file, line = sourcemap.parse_line_spec(spec)

    def ops(text: str) -> Counter:
        return Counter(
            u.op for u in lineinfo.mlir_units(text) if sourcemap.frames_match(u.frames, file, line, kernel_file)
        )

    prev = ops(first_ir)
    out = [LineChange(None, prev, Counter())] if prev else []
    for rec, after in zip(records, afters):
        if after is None:
            continue
        cur = ops(after)
        if cur != prev:
            out.append(LineChange(rec, cur - prev, prev - cur))
        prev = cur
    if not out:
        raise BadInput(
            f"--line {spec}: no op of that line in the frontend's IR or after any pass; "
            f"irscope lines DIR lists the lines with code"
        )
    return out


def load(folder, manifest: Manifest) -> tuple[list[PassRecord], list[str | None], str]:
    """Records, after-texts and the first dumped IR, read back from a dump folder.

    A folder that lost a file since it was dumped is bad input, named with the file: dump it again.
    """
    records = [PassRecord.of(p) for p in manifest.get("passes") or []]
    afters: list[str | None] = []
    for i, rec in enumerate(records):
        text = _read(Path(folder), rec.file, f"manifest.json passes[{i}].file")
        body = text.split("\n", 1)[1] if text.startswith("// irscope:") else text
        afters.append(None if body.startswith("// (not dumped") else body)
    frontend = manifest["stages"].get("frontend")
    first = _read(Path(folder), frontend, "manifest.json stages.frontend") if frontend else ""
    return records, afters, first


def _read(folder: Path, name: str, field: str) -> str:
    return artifacts.read_text(folder, name, field, "the folder is not whole any more: run irscope dump --passes again")


def read_folder(folder: Path) -> Manifest:
    """The manifest of an earlier `irscope dump --passes` folder (BadInput if dumped without --passes)."""
    manifest = artifacts.read_manifest(folder)
    if manifest.get("passes") is None:
        raise BadInput(f"{folder}: dumped without --passes; run irscope dump --passes again")
    return manifest


def check_pattern(pattern: str) -> None:
    """A --first pattern must be a valid regular expression (BadInput otherwise)."""
    try:
        re.compile(pattern)
    except re.error as e:
        raise BadInput(f"--first {pattern!r}: not a valid regular expression: {e}") from None


def stage_texts(folder: Path, manifest: Manifest) -> dict[str, str]:
    """The text stages of a dump folder, by name (binaries left out), for first_producer."""
    return {
        s: _read(Path(folder), f, f"manifest.json stages.{s}") for s, f in manifest["stages"].items() if s not in BINARY
    }
