"""The source map of a dump (map.json): what each Python line became, in every stage.

Built from the locations the compiler already writes (lineinfo.py) once per compile, so every
dump has it (it costs about 1 % of a compile: benchmarks/bench_lines.py). For each Python line
(keyed by its outermost frame, the line of the kernel that called any inlined helper), per stage:
how many units (ops / instructions) it produced, their line numbers in the stage file (so a
report can link both ways), the op histogram and the figures a kernel author asks about:
instruction classes (MMA, global/shared loads and stores, local = spills, barriers, TMA), spill
bytes, PTX registers written, TTGIR convert_layouts and layouts. Inlined callees (a helper's
`tl.dot`, `triton/language/standard.py`) are listed again under the line that called them.
Units with no line are counted under "no_line", never attributed by guess.

map.json (schema "irscope_map": 1):
  {"irscope_map": 1, "kernel_file": PATH, "machine": "sass"|"amdgcn"|"ptx"|null,
   "stages": {stage: {"file", "units", "mapped"}},
   "lines": [{"file", "line", "text", "stages": {stage: FIG}, "callees": [{"file", "line", "text", "stages"}]}],
   "no_line": {stage: FIG}}
  FIG = {"n", "at": [stage-file lines], "ops": {op: n}, "classes"?: {class: n}, "spill_bytes"?,
         "regs"? (PTX registers written), "layouts"? (TTGIR)}
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from irscope import artifacts
from irscope.artifacts import MAP_FILE, lineinfo, schema
from irscope.artifacts.lineinfo import Frames, Unit
from irscope.artifacts.stats import LAYOUT_DEF, SASS_CLASSES
from irscope.errors import BadInput
from irscope.records import Figures, Manifest, MapEntry, MapLine, MapStage, SourceMap
from irscope.stages import MACHINE, MAPPED, language

SCHEMA: Literal[1] = 1
CLASSES = (
    "mma",
    "global_load",
    "global_store",
    "shared_load",
    "shared_store",
    "async_copy",
    "tma",
    "local_load",
    "local_store",
    "barrier",
)

# ------------------------------------------------------------------ instruction classes per stage

_SASS_CLASS = {op: cls for cls, ops in SASS_CLASSES.items() for op in ops}
_LOCAL_WIDTH = re.compile(r"\b(?:LDL|STL|scratch_\w+|ld\.local|st\.local)((?:[._][\w]+)*)")


def _ptx_class(op: str, text: str) -> str | None:
    if op in ("mma.sync", "wgmma.mma_async") or op.startswith("tcgen05.mma"):
        return "mma"
    if op == "cp.async":
        if text.startswith(("cp.async.bulk.tensor", "@")) and "bulk.tensor" in text:
            return "tma"
        return "async_copy" if re.match(r"(?:@!?%\w+\s+)?cp\.async\.c[ag]\.", text) else None
    return {
        "ld.global": "global_load",
        "st.global": "global_store",
        "ld.shared": "shared_load",
        "ldmatrix.sync": "shared_load",
        "st.shared": "shared_store",
        "stmatrix.sync": "shared_store",
        "ld.local": "local_load",
        "st.local": "local_store",
        "bar.sync": "barrier",
        "barrier.sync": "barrier",
        "bar.warp": "barrier",
        "barrier.cta": "barrier",
    }.get(op)


def _amd_class(op: str, text: str) -> str | None:
    if op.startswith(("v_mfma", "v_wmma", "v_smfmac")):
        return "mma"
    if op.startswith(("global_load", "buffer_load")):
        return "async_copy" if "lds" in op or " lds" in text else "global_load"
    if op.startswith(("global_store", "buffer_store")):
        return "global_store"
    if op.startswith(("ds_read", "ds_load")):
        return "shared_load"
    if op.startswith(("ds_write", "ds_store")):
        return "shared_store"
    if op.startswith("scratch_load"):
        return "local_load"
    if op.startswith("scratch_store"):
        return "local_store"
    return "barrier" if op == "s_barrier" else None


def _spill_bytes(text: str) -> int:
    """Bytes per thread one local load/store moves (.64 -> 8; dwordx4 -> 16; default 4)."""
    m = _LOCAL_WIDTH.search(text)
    mods = m.group(1) if m else ""
    for key, n in (
        ("128", 16),
        ("x4", 16),
        ("x3", 12),
        ("64", 8),
        ("x2", 8),
        ("U16", 2),
        ("S16", 2),
        ("short", 2),
        ("U8", 1),
        ("S8", 1),
        ("byte", 1),
    ):
        if key in mods:
            return n
    return 4


_PTX_DEST = re.compile(r"^(?:@!?%\w+\s+)?[\w.:]+\s+(\{[^}]*\}|%\w+)")


def _ptx_regs(text: str, op: str) -> set[str]:
    if op.startswith(("st.", "bar", "cp.", "red.", "mbarrier")) or op in ("ret", "bra", "bra.uni"):
        return set()
    m = _PTX_DEST.match(text)
    return set(re.findall(r"%\w+", m.group(1))) if m else set()


class Opcode(Protocol):
    """What classify reads of a unit: its opcode and its line."""

    @property
    def op(self) -> str: ...

    @property
    def text(self) -> str: ...


def classify(stage: str | None, unit: Opcode) -> str | None:
    if stage == "sass":
        return _SASS_CLASS.get(unit.op)
    if stage == "ptx":
        return _ptx_class(unit.op, unit.text)
    if stage == "amdgcn":
        return _amd_class(unit.op, unit.text)
    return None


# ------------------------------------------------------------------ building the map


class _Figures:
    """The figures of one (line, stage) while the map is built."""

    __slots__ = ("at", "classes", "layouts", "ops", "regs", "spill")

    def __init__(self):
        self.at: list[int] = []
        self.ops: Counter = Counter()
        self.classes: Counter = Counter()
        self.spill = 0
        self.regs: set[str] = set()
        self.layouts: set[str] = set()

    def add(self, stage: str, unit: Unit, layouts: set[str]) -> None:
        self.at.append(unit.line)
        self.ops[unit.op] += 1
        cls = classify(stage, unit)
        if cls:
            self.classes[cls] += 1
            if cls in ("local_load", "local_store"):
                self.spill += _spill_bytes(unit.text)
        if stage == "ptx":
            self.regs |= _ptx_regs(unit.text, unit.op)
        if layouts:
            self.layouts |= {a for a in re.findall(r"#(\w+)", unit.text) if a in layouts}

    def as_dict(self, stage: str) -> Figures:
        out: Figures = {"n": len(self.at), "at": sorted(set(self.at)), "ops": dict(self.ops.most_common())}
        if stage in MACHINE:
            out["classes"] = {c: self.classes[c] for c in CLASSES if self.classes[c]}
            out["spill_bytes"] = self.spill
        if stage == "ptx":
            out["regs"] = len(self.regs)
        if stage == "ttgir":
            out["layouts"] = sorted(self.layouts)
        return out


def stage_units(stages: dict[str, Any], sass_info: list[lineinfo.SassLine] | None = None) -> dict[str, list[Unit]]:
    """Every mapped stage's units, in pipeline order."""
    out: dict[str, list[Unit]] = {}
    for stage in MAPPED:
        text = stages.get(stage)
        if not isinstance(text, str):
            continue
        if stage == "sass" and sass_info is not None:
            out[stage] = lineinfo.sass_units(sass_info, out.get("ptx", []))
        else:
            out[stage] = lineinfo.UNITS[language(stage) or ""](text)  # every MAPPED stage has a language
    return out


def build(
    stages: dict[str, Any],
    kernel_file: str,
    stage_files: dict[str, str],
    sass_info: list[lineinfo.SassLine] | None = None,
) -> SourceMap:
    """The map of one compile (see the module docstring for its shape)."""
    units = stage_units(stages, sass_info)
    layouts = (
        {m.group(1) for m in LAYOUT_DEF.finditer(stages.get("ttgir") or "")}
        if isinstance(stages.get("ttgir"), str)
        else set()
    )
    top: dict[tuple[str, int], dict[str, _Figures]] = {}
    callees: dict[tuple[str, int], dict[tuple[str, int], dict[str, _Figures]]] = {}
    no_line: dict[str, _Figures] = {}
    summary: dict[str, MapStage] = {}
    for stage, us in units.items():
        mapped = 0
        lay = layouts if stage == "ttgir" else set()
        for u in us:
            if not u.frames:
                no_line.setdefault(stage, _Figures()).add(stage, u, lay)
                continue
            mapped += 1
            key = u.frames[0]
            top.setdefault(key, {}).setdefault(stage, _Figures()).add(stage, u, lay)
            if len(u.frames) > 1:
                callees.setdefault(key, {}).setdefault(u.frames[-1], {}).setdefault(stage, _Figures()).add(
                    stage, u, lay
                )
        summary[stage] = {"file": stage_files.get(stage, ""), "units": len(us), "mapped": mapped}
    kernel = _kernel_path(kernel_file, top)
    texts = _SourceText()
    order = sorted(top, key=lambda k: (k[0] != kernel, k[0], k[1]))
    lines: list[MapLine] = []
    for key in order:
        entry: MapLine = {
            "file": key[0],
            "line": key[1],
            "text": texts.line(*key),
            "stages": {s: f.as_dict(s) for s, f in top[key].items()},
        }
        if key in callees:
            entry["callees"] = [
                {
                    "file": c[0],
                    "line": c[1],
                    "text": texts.line(*c),
                    "stages": {s: f.as_dict(s) for s, f in figs.items()},
                }
                for c, figs in sorted(callees[key].items())
            ]
        lines.append(entry)
    machine = next((s for s in MACHINE if s in units), None)
    return {
        "irscope_map": SCHEMA,
        "kernel_file": kernel,
        "machine": machine,
        "stages": summary,
        "lines": lines,
        "no_line": {s: f.as_dict(s) for s, f in no_line.items()},
        "files": {
            name: texts.count(name)
            for name in sorted({k[0] for k in top} | {c[0] for cs in callees.values() for c in cs})
        },
    }


def _kernel_path(kernel_file: str, keys: Iterable[tuple[str, int]]) -> str:
    """The kernel file as the compiler spelled it in its locations (the same file, any spelling)."""
    want = os.path.realpath(kernel_file)
    for path, _ in keys:
        if path == kernel_file or os.path.realpath(path) == want:
            return path
    return kernel_file


class _SourceText:
    """Lines of the source files named in the locations, read once each (a missing file: no text)."""

    def __init__(self):
        self.files: dict[str, list[str]] = {}

    def _lines(self, path: str) -> list[str]:
        if path not in self.files:
            try:
                self.files[path] = Path(path).read_text(errors="replace").splitlines()
            except OSError:
                self.files[path] = []
        return self.files[path]

    def line(self, path: str, n: int) -> str:
        lines = self._lines(path)
        return lines[n - 1].strip() if 0 < n <= len(lines) else ""

    def count(self, path: str) -> int:
        return len(self._lines(path))


# ------------------------------------------------------------------ reading and asking


def load(folder: Path, manifest: Manifest) -> SourceMap:
    """The map of a dump folder; BadInput for a folder dumped before maps existed, damaged, or whose
    manifest names a map outside the folder."""
    name = manifest.get("map") or MAP_FILE
    if name == MAP_FILE and not os.path.lexists(Path(folder) / MAP_FILE):
        raise BadInput(
            f"{folder}: no {MAP_FILE} (dumped by an older irscope, or a compile whose IR could not be "
            f"mapped: see the dump's notes); run irscope dump again"
        )
    path = artifacts.inside(folder, name, "manifest.json map")
    data = schema.parse(path, MAP_FILE, "run irscope dump again")
    if not isinstance(data, dict) or data.get("irscope_map") != SCHEMA:
        got = data.get("irscope_map") if isinstance(data, dict) else type(data).__name__
        raise BadInput(f"{path}: source map schema {got!r}, this irscope reads {SCHEMA}; run irscope dump again")
    schema.validate(data, schema.MAP, path, MAP_FILE, "run irscope dump again")
    return cast(SourceMap, data)  # checked against its schema above


def kernel_file(folder: Path, manifest: Manifest) -> str:
    """The kernel's file as this dump's compiler spelled it in its locations: the map's (a dump restored
    from the cache for a copy of the kernel keeps the first file's path), else the manifest's."""
    try:
        path = artifacts.inside(folder, manifest.get("map") or MAP_FILE, "manifest.json map")
        return str(json.loads(path.read_text())["kernel_file"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError, BadInput):
        return str(manifest["file"])


def parse_line_spec(spec: str) -> tuple[str | None, int]:
    """'33' or 'FILE:33' -> (FILE or None, 33); BadInput otherwise (before anything is read)."""
    file, _, num = spec.rpartition(":")
    if not num.strip().isdigit() or int(num) < 1:
        raise BadInput(f"--line {spec!r}: expected a line number (33) or FILE:LINE (standard.py:43)")
    return (file or None), int(num)


@functools.lru_cache(maxsize=256)
def _same_path(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def _file_matches(want: str, path: str) -> bool:
    return path == want or path.endswith("/" + want.lstrip("./")) or os.path.basename(path) == want


def origin_lines(generated_by: Any) -> dict[str, list[int]]:
    """A generated kernel's map one level up: 'FILE.py:N' of the generator's source (Helion's
    `# src[FILE.py:N]` comments) -> the generated file's lines made from it (the manifest's
    generated_by.src_lines; {} for a hand-written kernel or a malformed entry)."""
    if not isinstance(generated_by, dict) or not isinstance(generated_by.get("src_lines"), dict):
        return {}
    return {
        k: [n for n in v if isinstance(n, int)]
        for k, v in generated_by["src_lines"].items()
        if isinstance(k, str) and isinstance(v, list)
    }


def find_origin_line(source_map: SourceMap, spec: str, origins: dict[str, list[int]]) -> dict[str, Any] | None:
    """--line FILE:N on the generator's source (a Helion kernel's file): the generated lines made
    from it, merged, in every stage — the second level of the map. None when FILE is not the
    generator's source."""
    file, line = parse_line_spec(spec)
    if file is None or not origins:
        return None
    mine = {k.rpartition(":")[0] for k in origins if _file_matches(file, k.rpartition(":")[0])}
    if not mine:
        return None
    origin = sorted(mine)[0]
    generated = sorted(set(origins.get(f"{origin}:{line}", [])))
    kernel = source_map["kernel_file"]
    hits = [e for e in source_map["lines"] if e["file"] == kernel and e["line"] in generated]
    if not hits:
        have = sorted(int(k.rpartition(":")[2]) for k in origins if k.rpartition(":")[0] == origin)
        raise BadInput(
            f"--line {spec}: line {line} of {os.path.basename(origin)} generated no code that reached "
            f"any stage; lines with code: {_ranges(have)}"
        )
    entry = dict(_merge(hits))
    entry.update(
        file=origin,
        line=line,
        text=f"(generated lines {_ranges(generated)} of {os.path.basename(kernel)})",
        generated_lines=generated,
    )
    return entry


def find_line(source_map: SourceMap, spec: str, origins: dict[str, list[int]] | None = None) -> dict[str, Any]:
    """The map's entry for --line SPEC: a line of the kernel, or FILE:LINE (any file, callees
    included: a helper's line sums what it produced under every line that called it; for a
    generated kernel, a line of the generator's source through the lines generated from it).

    BadInput, one line, for a line past the file's end or one that produced no code."""
    through = find_origin_line(source_map, spec, origins or {})
    if through is not None:
        return through
    file, line = parse_line_spec(spec)
    kernel = source_map["kernel_file"]
    counts = source_map.get("files") or {}  # null in a map is read as none
    files = [kernel] if file is None else [f for f in counts if _file_matches(file, f)]
    if file is not None and not files and _file_matches(file, kernel):
        files = [kernel]
    if not files:
        known = ", ".join(os.path.basename(f) for f in counts) or "none"
        raise BadInput(f"--line {spec}: no code came from a file named {file!r}; files with code: {known}")
    path = files[0]
    hits: list[MapEntry] = [e for e in source_map["lines"] if e["file"] in files and e["line"] == line]
    hits += [c for e in source_map["lines"] for c in e.get("callees", []) if c["file"] in files and c["line"] == line]
    if hits:
        return _merge(hits)
    total = counts.get(path, 0)
    name = os.path.basename(path)
    if total and line > total:
        raise BadInput(f"--line {spec}: {name} has {total} lines")
    have = sorted(
        {e["line"] for e in source_map["lines"] if e["file"] == path}
        | {c["line"] for e in source_map["lines"] for c in e.get("callees", []) if c["file"] == path}
    )
    raise BadInput(
        f"--line {spec}: line {line} of {name} produced no code in any stage; lines with code: {_ranges(have)}"
    )


def _ranges(nums: list[int]) -> str:
    out, start = [], None
    for i, n in enumerate(nums):
        if start is None:
            start = n
        if i + 1 == len(nums) or nums[i + 1] != n + 1:
            out.append(str(start) if start == n else f"{start}-{n}")
            start = None
    return ", ".join(out) or "none"


def _merge(entries: Sequence[MapEntry]) -> dict[str, Any]:
    """One entry from several (a helper line reached from several callers): figures added up."""
    if len(entries) == 1:
        return dict(entries[0])
    stages: dict[str, dict[str, Any]] = {}
    for e in entries:
        figs: Mapping[str, Mapping[str, Any]] = e["stages"]  # read by key names in loops below
        for s, fig in figs.items():
            into = stages.setdefault(s, {"n": 0, "at": [], "ops": {}})
            into["n"] += fig["n"]
            into["at"] = sorted(set(into["at"]) | set(fig["at"]))
            for key in ("ops", "classes"):
                if key in fig:
                    d = into.setdefault(key, {})
                    for k, v in fig[key].items():
                        d[k] = d.get(k, 0) + v
            for key in ("spill_bytes", "regs"):
                if key in fig:
                    into[key] = into.get(key, 0) + fig[key]
            if "layouts" in fig:
                into["layouts"] = sorted(set(into.get("layouts", [])) | set(fig["layouts"]))
    first = entries[0]
    return {
        "file": first["file"],
        "line": first["line"],
        "text": first.get("text"),
        "stages": stages,
        "callers": len(entries),
    }


SORT_KEYS = ("instructions", "spills", *CLASSES, "regs", "convert_layouts", "line")


def figures(entry: Mapping[str, Any], machine: str | None) -> dict[str, Any]:
    """The hot-lines row of one entry: machine instructions, classes, spills, registers, layouts."""
    st = entry["stages"]
    m = st.get(machine or "", {})
    classes = m.get("classes", {})
    ttgir = st.get("ttgir", {})
    return {
        "instructions": m.get("n", 0),
        **{c: classes.get(c, 0) for c in CLASSES},
        "spills": m.get("spill_bytes", 0),
        "regs": st.get("ptx", {}).get("regs", 0),
        "convert_layouts": ttgir.get("ops", {}).get("ttg.convert_layout", 0),
        "layouts": ttgir.get("layouts", []),
        "ptx": st.get("ptx", {}).get("n", 0),
        "ttgir_ops": ttgir.get("n", 0),
    }


def check_sort(key: str) -> None:
    if key not in SORT_KEYS:
        raise BadInput(f"--sort {key!r}: sort by one of {', '.join(SORT_KEYS)}")


def hot_lines(source_map: SourceMap, sort: str = "instructions") -> list[dict[str, Any]]:
    """One row per source line (the map's entries), sorted by `sort`, largest first (by line: in order)."""
    check_sort(sort)
    rows = [
        {"file": e["file"], "line": e["line"], "text": e.get("text"), **figures(e, source_map.get("machine"))}
        for e in source_map["lines"]
    ]
    if sort == "line":
        return rows
    return sorted(rows, key=lambda r: (-r[sort], r["file"] != source_map["kernel_file"], r["line"]))


def no_line_row(source_map: SourceMap) -> dict[str, Any]:
    return {
        "file": "",
        "line": 0,
        "text": "(no line)",
        **figures({"stages": source_map.get("no_line") or {}}, source_map.get("machine")),
    }


def check_stage(source_map: SourceMap, stage: str | None) -> None:
    if stage is not None and stage not in source_map["stages"]:
        raise BadInput(f"--stage {stage}: not mapped in this dump; stages: {', '.join(source_map['stages'])}")


def stage_lines(folder: Path, source_map: SourceMap, stage: str, at: list[int]) -> list[tuple[int, str]]:
    """(line number, text) of the given lines of a stage file (what --line --stage prints)."""
    name = source_map["stages"][stage]["file"]
    lines = artifacts.read_text(folder, name, f"map.json stages.{stage}.file", "run irscope dump again").splitlines()
    return [(n, lines[n - 1]) for n in at if 0 < n <= len(lines)]


def frames_match(frames: Frames, file: str | None, line: int, kernel: str) -> bool:
    """Units that belong to --line: the outermost frame (a kernel line), or any frame of FILE:LINE."""
    if not frames:
        return False
    if file is None:
        return frames[0][1] == line and _same_path(frames[0][0], kernel)
    return any(f[1] == line and _file_matches(file, f[0]) for f in frames)
