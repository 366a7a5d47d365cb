"""The frontier comparison: two capture folders (`irscope capture SCRIPT -o DIR`), one implementation of
an op each (torch.compile's kernels against a hand-written one, say), on the figures that decide it.

    load_side   a capture folder read as data: each DIR/captures/*.json and the dump of that capture
                (the DIR/<kernel>/<target-hash>/ folder whose manifest has its kernel, file, target,
                specialization and launch options); every file read is a regular file inside DIR
    frontier    both sides, each kernel with what made it, its direction (forward, backward,
                inference) and its figures, totals per direction and in all

Per kernel: launches (from the capture's record of the script run: the script's own, not those an
autotuner or do_bench timed; a candidate config its autotuner did not choose has none), the launch grid, and the bytes a
program's threads load and store from global memory as the code is written: the PTX's global
load/store instructions × their widths (stats.ptx_mix: bits per thread per instruction) × the
program's threads (num_warps × warp size). That is static — once through the code, loops not
counted, every thread counted even where a mask or predicate idles it — not DRAM traffic. Then the
dump's registers, spills, shared memory and occupancy, as stats computed them.

Nothing here prints; views/frontier renders a Frontier.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any, TypeGuard

from irscope.artifacts import MANIFEST, inside
from irscope.errors import BadInput

DIRECTIONS = ("forward", "backward", "inference")
BYTES_NOTE = (
    "static: per program, once through the code (loops not counted, masked threads counted): "
    "global load/store instructions x widths x the program's threads; not DRAM traffic"
)
_NAME_DIRECTION = (
    ("forward", re.compile(r"(?:^|_)(?:forward|fwd)(?:_|$)")),
    ("backward", re.compile(r"(?:^|_)(?:backward|bwd)(?:_|$)")),
)


@dataclass
class Kernel:
    """One captured kernel × config, with its dump's figures (None where its dump is missing)."""

    spec: str  # captures/<kernel>-<n>.json, inside the side's folder
    name: str
    config: str | None
    made_by: dict[str, Any]  # {"layer": "inductor" | "aoti", "category", "aten_ops"} | {"layer": "hand-written"}
    direction: str | None  # forward | backward | inference | None (cannot say)
    direction_from: str | None  # "inductor graph" | "kernel name"
    launches: int  # the run's own (timed_launches left out)
    grid: list[int] | None
    programs: int | None  # the grid's product
    timed_launches: int = 0  # made while an autotuner or do_bench timed it
    chosen: bool | None = None  # an autotune candidate: did its autotuner choose it (None: not measured)
    num_warps: int | None = None
    threads: int | None = None  # num_warps x warp size
    load_widths: dict[str, int] = field(default_factory=dict)  # bits per thread -> instructions
    store_widths: dict[str, int] = field(default_factory=dict)
    load_bytes: int | None = None  # per program, static (BYTES_NOTE)
    store_bytes: int | None = None
    registers: int | None = None
    spills: int | None = None
    shared_bytes: int | None = None
    occupancy: float | None = None
    loops: int | None = None  # TTGIR loops: where the code runs more than once through
    dump: str | None = None  # its dump folder, relative to the side's folder
    problem: str | None = None  # why there are no figures


@dataclass
class Totals:
    """Sums (kernels, launches, bytes, spills) and extremes (the most registers and shared memory,
    the lowest occupancy) over a set of kernels; a figure missing on any kernel leaves its total None."""

    kernels: int
    launches: int
    load_bytes: int | None
    store_bytes: int | None
    registers_max: int | None
    spills: int | None
    shared_bytes_max: int | None
    occupancy_min: float | None


@dataclass
class FrontierSide:
    name: str  # "a" | "b"
    folder: Path
    scripts: list[str]  # the script(s) the captures came from
    kernels: list[Kernel]
    by_direction: dict[str, Totals]
    total: Totals


@dataclass
class Frontier:
    a: FrontierSide
    b: FrontierSide
    directions: list[str]  # directions both sides have: the rows compared
    paired: bool  # every kernel of both sides has a direction both have

    bytes_note: str = BYTES_NOTE


def is_capture_folder(folder: Path) -> bool:
    """A folder `irscope capture SCRIPT -o` wrote: it holds captures/."""
    return Path(folder).is_dir() and (Path(folder) / "captures").is_dir()


def frontier(dir_a: Path, dir_b: Path, kernels: tuple[str, ...] = ()) -> Frontier:
    """Both capture folders read and compared; `kernels` (names or globs) keeps only those kernels."""
    a, b = load_side("a", Path(dir_a), kernels), load_side("b", Path(dir_b), kernels)
    common = [d for d in DIRECTIONS if d in a.by_direction and d in b.by_direction]
    paired = bool(common) and all(k.direction in common for k in a.kernels + b.kernels)
    return Frontier(a, b, common, paired)


def load_side(name: str, folder: Path, kernels: tuple[str, ...] = ()) -> FrontierSide:
    if not is_capture_folder(folder):
        raise BadInput(
            f"{folder}: not a capture folder (no captures/); capture a script first "
            f"(irscope capture SCRIPT.py -o {folder})"
        )
    dumps = _dumps(folder)
    out: list[Kernel] = []
    scripts: list[str] = []
    for path in sorted((folder / "captures").glob("*.json")):
        rel = f"captures/{path.name}"
        doc = _json(folder, rel, "a capture's spec file")
        if not isinstance(doc, dict) or "irscope_spec" not in doc or not isinstance(doc.get("kernel"), str):
            raise BadInput(f"{folder}: {rel} is not an irscope capture spec file")
        if kernels and not any(fnmatch(doc["kernel"], k) for k in kernels):
            continue
        launch = _object(doc, "launch")
        script = launch.get("script")
        if isinstance(script, str) and script not in scripts:
            scripts.append(script)
        out.append(_kernel(folder, rel, doc, launch, dumps))
    out.sort(key=lambda k: (DIRECTIONS.index(k.direction) if k.direction in DIRECTIONS else len(DIRECTIONS), k.spec))
    if not out:
        raise BadInput(f"{folder}: no captures/*.json" + (f" of {', '.join(kernels)}" if kernels else ""))
    by_direction = {
        d: totals([k for k in out if k.direction == d]) for d in DIRECTIONS if any(k.direction == d for k in out)
    }
    return FrontierSide(name, folder, scripts, out, by_direction, totals(out))


def totals(kernels: list[Kernel]) -> Totals:
    def every(attr: str) -> list[Any] | None:
        values = [getattr(k, attr) for k in kernels]
        return None if any(v is None for v in values) else values

    loads, stores, regs = every("load_bytes"), every("store_bytes"), every("registers")
    spills, shared, occ = every("spills"), every("shared_bytes"), every("occupancy")
    run = [k for k in kernels if k.chosen is not False]  # candidates not chosen never run in the model
    return Totals(
        len(run),
        sum(k.launches for k in run),
        None if loads is None else sum(loads),
        None if stores is None else sum(stores),
        None if regs is None else max(regs, default=None),
        None if spills is None else sum(spills),
        None if shared is None else max(shared, default=None),
        None if occ is None else min(occ, default=None),
    )


INDUCTOR_LAYERS = ("inductor", "aoti")  # kernels Inductor generated: a category and ATen ops each


def _kernel(
    folder: Path, rel: str, doc: dict[str, Any], launch: dict[str, Any], dumps: list[tuple[str, dict[str, Any]]]
) -> Kernel:
    name = doc["kernel"]
    gen = launch.get("generated_by") if isinstance(launch.get("generated_by"), dict) else None
    if gen is not None and gen.get("layer") in INDUCTOR_LAYERS:  # torch.compile's or AOTInductor's
        made_by = {
            "layer": str(gen["layer"]),
            "category": gen.get("category"),
            "aten_ops": [str(o) for o in gen.get("aten_ops") or []],
        }
        graph = _object(gen, "graph")
        direction = graph.get("kind") if graph.get("kind") in DIRECTIONS else None
        direction_from = "inductor graph" if direction else None
    else:
        made_by = {"layer": str(gen["layer"])} if gen is not None and gen.get("layer") else {"layer": "hand-written"}
        direction = next((d for d, pattern in _NAME_DIRECTION if pattern.search(name.lower())), None)
        direction_from = "kernel name" if direction else None
    autotune = _object(launch, "autotune")
    grid = launch.get("grid")
    grid = [int(g) for g in grid] if isinstance(grid, list) and all(isinstance(g, int) for g in grid) else None
    programs = grid[0] * grid[1] * grid[2] if grid and len(grid) == 3 else None
    launches, timed = _count(launch.get("launches")), _count(launch.get("timed_launches"))
    chosen = autotune.get("winner") if isinstance(autotune.get("winner"), bool) else None
    k = Kernel(
        rel,
        name,
        autotune.get("config"),
        made_by,
        direction,
        direction_from,
        max(launches - timed, 0),
        grid,
        programs,
        timed_launches=timed,
        chosen=chosen,
    )
    found = [(d, m) for d, m in dumps if _same_compile(doc, m)]
    if len(found) > 1:  # the specialization's text decides (an element may be spelt two ways: tl.float32, tl.fp32)
        found = [(d, m) for d, m in found if doc.get("args") == m.get("args")]
    if not found:
        k.problem = "no dump of this capture in the folder (it was skipped, or failed to compile)"
        return k
    if len(found) > 1:
        k.problem = f"{len(found)} dumps in the folder could be this capture's: " + ", ".join(d for d, _ in found)
        return k
    k.dump, manifest = found[0]
    _figures(k, manifest)
    return k


def _same_compile(spec: dict[str, Any], manifest: dict[str, Any]) -> bool:
    """The dump may be this capture's: its kernel, file and target, and every launch option the
    spec file names, as the manifest has them."""
    if any(spec.get(key) != manifest.get(key) for key in ("kernel", "file", "target")):
        return False
    options = _object(manifest, "options")
    spec_options = _object(spec, "options")
    return all(options.get(key) == value for key, value in spec_options.items())


def _figures(k: Kernel, manifest: dict[str, Any]) -> None:
    stats = _object(manifest, "stats")
    options = _object(manifest, "options")
    num_warps = options.get("num_warps", stats.get("num_warps"))
    warp = options.get("warp_size") or 32
    if _int(num_warps) and _int(warp):
        k.num_warps, k.threads = num_warps, num_warps * warp
    mix = stats.get("ptx") if isinstance(stats.get("ptx"), dict) else stats.get("amdgcn")
    if isinstance(mix, dict) and isinstance(mix.get("global_load"), dict) and isinstance(mix.get("global_store"), dict):
        k.load_widths, k.store_widths = _widths(mix["global_load"]), _widths(mix["global_store"])
        if k.threads is not None:
            k.load_bytes = static_bytes(k.load_widths, k.threads)
            k.store_bytes = static_bytes(k.store_widths, k.threads)
    k.registers = stats.get("registers") if _int(stats.get("registers")) else None
    k.spills = stats.get("spills") if _int(stats.get("spills")) else None
    k.shared_bytes = stats.get("shared_bytes") if _int(stats.get("shared_bytes")) else None
    occ = _object(stats, "occupancy")
    value = occ.get("occupancy")
    k.occupancy = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    ttgir = _object(stats, "ttgir")
    k.loops = ttgir.get("loops") if _int(ttgir.get("loops")) else None


def _object(d: dict[str, Any], key: str) -> dict[str, Any]:
    """d[key] when it is a JSON object, else {} (a file of another irscope, or edited by hand)."""
    value = d.get(key)
    return value if isinstance(value, dict) else {}


def static_bytes(widths: dict[str, int], threads: int) -> int:
    """Bytes the program's threads move, once through the code: instructions × bits per thread / 8 × threads."""
    return sum(int(bits) * count for bits, count in widths.items()) * threads // 8


def _widths(d: dict[Any, Any]) -> dict[str, int]:
    try:
        return {str(int(bits)): int(n) for bits, n in d.items()}
    except (TypeError, ValueError):
        return {}


def _int(v: Any) -> TypeGuard[int]:  # an int count (never a bool), 0 or more
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _dumps(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """Every dump folder directly under the capture folder (<kernel>/<target-hash>/manifest.json)."""
    out = []
    for path in sorted(folder.glob(f"*/*/{MANIFEST}")):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        manifest = _json(folder, rel.as_posix(), "a dump's manifest")
        if isinstance(manifest, dict) and "irscope" in manifest and isinstance(manifest.get("stats"), dict):
            out.append((rel.parent.as_posix(), manifest))
    return out


def _json(folder: Path, rel: str, what: str) -> Any:
    path = inside(folder, rel, rel, remedy="capture the script again")
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInput(f"{folder}: {rel} ({what}) is unreadable: {e}") from None


def _count(value: Any) -> int:
    """A launch count from a (possibly damaged) capture record: a non-negative int, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
