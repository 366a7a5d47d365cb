"""The JSON records irscope writes and reads, each typed once: manifest.json (and passes/index.json), map.json,
spec files (with a capture's launch record), the pins' checks kept in a manifest, and profile.json.

Each record is a TypedDict that its writer builds and its readers annotate what they read with. The
checks of a file read from a folder (kernel/jsonfile.py's checker, through `jsonfile.of`) and the JSON
Schema (`json_schema`) are both derived from these annotations: there is no second, hand-written schema.

Required keys (the TypedDict's `__required_keys__`) are the ones every reader may count on, in a file of
any irscope version; the others are `total=False`: this irscope's writer writes them, an older or newer
one may not. Keys a record does not list are not checked (a newer irscope's extra fields still read).
A `float` is any JSON number (an int or a finite float, never a bool), as PEP 484 reads `float`.

Stdlib only, at the lowest layer: every writer and reader may import it.
"""

import types
import typing
from typing import Any, Literal, TypedDict, Union

# ------------------------------------------------------------------ manifest.json

Counts = dict[str, float]  # a histogram: op / class / width -> how many


class _Occupancy(TypedDict):
    occupancy: float
    limited_by: str


class Occupancy(_Occupancy, total=False):
    blocks_per_sm: float  # NVIDIA
    warps_per_sm: float
    waves_per_simd: float  # AMD
    compiler_occupancy: float | None


class _SassMix(TypedDict):
    instructions: float
    classes: Counts
    top: Counts


class SassMix(_SassMix, total=False):
    global_widths: Counts


class _AmdMix(TypedDict):
    instructions: float
    mfma: float
    wmma: float
    lds_load: float
    lds_store: float
    async_copy_to_lds: float
    barrier: float
    scratch_ops: float
    top: Counts


class AmdMix(_AmdMix, total=False):
    global_load: Counts
    global_store: Counts


class Layout(TypedDict, total=False):
    alias: str
    kind: str
    params: str


class TtgirFacts(TypedDict, total=False):
    layouts: list[Layout]
    convert_layout: float
    local_alloc: float
    local_load: float
    local_store: float
    async_copy: float
    tma_load: float
    dot: float
    barrier: float
    loops: float
    num_warps: float


class Stats(TypedDict, total=False):
    """A compile's figures (artifacts/stats.compute): resources, occupancy, each stage's instruction mix."""

    registers: float | None
    spills: float | None
    spill_store_bytes: float | None
    spill_load_bytes: float | None
    shared_bytes: float | None
    num_warps: float | None
    stack_bytes: float | None
    local_bytes: float | None
    named_barriers: float | None
    vgpr_count: float | None
    sgpr_count: float | None
    agpr_count: float | None
    arch_vgprs: float | None
    acc_vgprs: float | None
    vgpr_spill_count: float | None
    sgpr_spill_count: float | None
    lds_static_bytes: float | None
    scratch_bytes: float | None
    compiler_occupancy: float | None
    occupancy: Occupancy | None
    sass: SassMix | None
    ptx: dict[str, float | Counts] | None  # counts, and per-width counts (global_load: {"128": 4})
    amdgcn: AmdMix | None
    ttgir: TtgirFacts | None
    machinery: dict[str, Any]  # partitions, TMA, mbarriers, TMEM, clusters (artifacts/machinery.py)


class _PassEntry(TypedDict):
    index: int
    stage: str
    name: str  # e.g. TritonGPUCoalesce
    arg: str  # e.g. tritongpu-coalesce
    file: str  # passes/NNN-Name.mlir, relative to the dump folder


class PassEntry(_PassEntry, total=False):
    """One MLIR pass of a --passes dump (manifest.json passes, passes/index.json)."""

    added: int  # lines added by the pass (after vs before)
    removed: int


PinKind = Literal["option", "env", "constexpr", "loop", "layout", "partition"]
PinStatus = Literal["ok", "no effect", "changed", "overridden", "not applicable", "unchecked"]


class PinCheck(TypedDict):
    """One pin, or one option a recipe or --set gave, checked in the output (steer/checks.py)."""

    kind: PinKind
    name: str
    value: Any
    source: str  # where it came from: "--set", "recipe NAME", "--pin-loop", ...
    status: PinStatus
    detail: str  # what the output holds


class RecipeRef(TypedDict, total=False):
    """The recipe a dump applied (steer/recipe_model.Recipe.describe)."""

    name: str
    path: str
    variant: str | None
    target: str


class _Manifest(TypedDict):
    irscope: Any  # the format's version (1); a reader takes any
    kernel: str
    target: str
    stages: dict[str, str]  # stage -> its file in the folder


class Manifest(_Manifest, total=False):
    """A dump folder's manifest.json (artifacts.Artifacts.manifest)."""

    file: str
    target_reason: str
    signature: str
    args: dict[str, str]  # parameter -> spec element (replayable)
    triton_version: str
    options: dict[str, Any]  # effective options, as Triton compiled them
    user_options: dict[str, Any]  # what --set and recipes changed
    option_sources: dict[str, Any]
    env: dict[str, Any]
    times_ms: dict[str, float] | None
    metadata: dict[str, Any]
    stats: Stats | None
    notes: list[str] | None
    passes: list[PassEntry] | None  # None: dumped without --passes
    key: str
    recipe: RecipeRef | None
    pins: list[PinCheck] | None
    map: str | None  # map.json, or None when the IR could not be mapped
    files: dict[str, str] | None  # outputs that are no compiler stage -> their file
    generated_by: dict[str, Any]  # a capture's: the kernel generator's record (capture/layers.py)


# ------------------------------------------------------------------ map.json


class _Figures(TypedDict):
    n: float  # units (ops / instructions)


class Figures(_Figures, total=False):
    """What one Python line (or no line) became in one stage."""

    at: list[int]  # their line numbers in the stage file
    ops: Counts
    classes: Counts  # machine stages: mma, global_load, ...
    spill_bytes: float  # machine stages
    regs: float  # ptx: registers written
    layouts: list[str]  # ttgir: the layout aliases its ops use


class _MapEntry(TypedDict):
    file: str
    line: int
    stages: dict[str, Figures]


class MapEntry(_MapEntry, total=False):
    text: str | None


class MapLine(MapEntry, total=False):
    callees: list[MapEntry]  # inlined helpers, listed again under the line that called them


class MapStage(TypedDict, total=False):
    file: str
    units: float
    mapped: float


class _SourceMap(TypedDict):
    irscope_map: Literal[1]
    kernel_file: str
    lines: list[MapLine]


class SourceMap(_SourceMap, total=False):
    """map.json (artifacts/sourcemap.build)."""

    machine: str | None
    stages: dict[str, MapStage]
    no_line: dict[str, Figures] | None
    files: dict[str, float] | None  # each source file named -> its line count


# ------------------------------------------------------------------ spec files and a capture's launch record


class LaunchArg(TypedDict, total=False):
    """One launch argument: a tensor (dtype, shape, strides, offset, align; mock for a .warmup's dtype),
    a scalar (value) or anything else (type)."""

    dtype: str
    shape: list[int]
    strides: list[int]
    offset: int
    align: int
    mock: bool
    value: Any  # a scalar as the launch had it: true/false, an integer, a number (inf, nan too), null
    type: str


class Autotune(TypedDict):
    config: str
    winner: bool | None


class Launch(TypedDict, total=False):
    """A spec file's `launch`: the launch (capture/records.describe) and, from a capture, how it was seen
    (capture/replay.spec_record)."""

    grid: list[int] | None
    args: dict[str, LaunchArg]
    autotune: Autotune | None
    warmup: bool
    launches: int
    timed_launches: int  # of those, made while a benchmark timed it
    mode: str  # "gpu" | "compile-only"
    script: str
    script_args: list[str]
    triton_cache_hit: bool
    generated_by: dict[str, Any]
    notes: list[str]


class _SpecFile(TypedDict):
    irscope_spec: Literal[1]
    file: str
    kernel: str
    args: dict[str, str | int | float]  # parameter -> signature element ("*fp32:16", "i32", a constexpr's value)


class SpecFile(_SpecFile, total=False):
    """A replayable spec (kernel/specfile.spec_document); a capture writes one per kernel."""

    target: str | None
    options: dict[str, Any] | None
    launch: Launch | None
    closure: dict[str, Any] | None  # a capture's: the kernel's closure as data (capture/closure.py)


# ------------------------------------------------------------------ profile.json (irscope profile)

Stalls = dict[str, float]  # stall reason (ncu's short names: long_sb, wait, barrier, ...) -> samples


class _ProfileLine(TypedDict):
    file: str
    line: int
    samples: float
    share: float


class ProfileLine(_ProfileLine, total=False):
    text: str | None
    stalls: Stalls
    executed: float
    bytes: float
    ttgir: Counts  # what the line became (map.json)
    sass_ops: Counts
    passes: list[str]  # with --passes: the passes that added its ops


class _ProfileInstruction(TypedDict):
    offset: int
    sass: str
    samples: float


class ProfileInstruction(_ProfileInstruction, total=False):
    file: str | None
    line: int | None
    stalls: Stalls
    executed: float
    bytes: float


class _ProfileTotals(TypedDict):
    samples: float


class ProfileTotals(_ProfileTotals, total=False):
    stalls: Stalls
    executed: float
    bytes: float
    duration_ns: float | None
    dram_bytes: float | None
    dram_gbps: float | None
    dram_peak_share: float | None
    tensor_tflops: float | None
    tensor_peak_share: float | None
    tensor_flops: float | None
    peak_dram_gbps: float | None
    peak_tensor_tflops: float | None


class Unmapped(TypedDict, total=False):
    samples: float
    executed: float


class _Profile(TypedDict):
    irscope_profile: int
    kernel: str
    tool: str  # what measured it: "ncu 2025.3.1.0" or "proton pcsampling"
    totals: ProfileTotals
    lines: list[ProfileLine]


class Profile(_Profile, total=False):
    """profile.json (profile/command.document, proton_document; artifacts/profiled.write)."""

    device: str  # the GPU's name as the tool read it
    command: str  # the command line that recorded it
    chip: str  # the chip table's key for the device (the peaks' source), "" unknown
    bytes_from: str  # what per-line bytes count: "l2_sectors" (ncu), "" none
    instructions: list[ProfileInstruction]
    unmapped: Unmapped


# ------------------------------------------------------------------ the status channel (compile/status.py)
# One JSON object a line, from irscope's process to the supervisor that forked it (compile/status.py):
# what the process is doing, so that a death by a signal is said as what it ended.


class CompileStatus(TypedDict):
    """A compile's stage begins (compile/compiler.py's stage hook)."""

    kind: Literal["compile"]
    kernel: str
    target: str
    stage: str
    stderr: str | None  # the file (a name in the supervisor's scratch folder) the compiler's stderr goes to


class IdleStatus(TypedDict):
    """A compile, or a captured script, is over: a death from here on is not theirs."""

    kind: Literal["idle"]
    ended: Literal["compile", "script"]


class ScriptStatus(TypedDict):
    """A captured script starts (capture/salvage.py): `run` is what the supervisor needs to dump its captures
    if the script ends the process (base64 of a pickle of plain data: salvage.Header)."""

    kind: Literal["script"]
    script: str
    run: str


class _CaptureStatus(TypedDict):
    kind: Literal["capture"]
    index: int
    name: str


class CaptureStatus(_CaptureStatus, total=False):
    """A capture, as it is recorded: its spec file's document and the job a worker dumps it from (base64 of
    a pickle of plain data: its spec's arguments and settings, its closure), or why it cannot be dumped."""

    spec: SpecFile
    job: str
    not_dumped: str  # why not (its closure or arguments are not data, no spec element expresses it)
    view: str  # base64 of a pickle of what the capture's view shows (config, grid, launches, notes)


Status = CompileStatus | IdleStatus | ScriptStatus | CaptureStatus

RECORDS = {
    "manifest": Manifest,
    "map": SourceMap,
    "spec": SpecFile,
    "profile": Profile,
    "pass": PassEntry,
    "pin": PinCheck,
    "launch": Launch,
}


# ------------------------------------------------------------------ reading the annotations


def is_record(hint: Any) -> bool:
    """A TypedDict class (a record or a record nested in one)."""
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__required_keys__")


def fields(record: Any) -> dict[str, tuple[Any, bool]]:
    """A record's keys, in order: key -> (its type, required)."""
    hints = typing.get_type_hints(record)
    return {k: (hints[k], k in record.__required_keys__) for k in hints}


def union_members(hint: Any) -> tuple[Any, ...] | None:
    """The members of `A | B` or `Optional[A]`; None for anything else."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        return typing.get_args(hint)
    return None


def json_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a record or any type in one, derived from the annotations: a
    record is an object with its required keys (others allowed: readers ignore them), `float` any number,
    `X | None` nullable, a Literal an enum."""
    if hint is Any:
        return {}
    if is_record(hint):
        out: dict[str, Any] = {"type": "object", "title": hint.__name__}
        if hint.__doc__ and not hint.__doc__.startswith(f"{hint.__name__}("):  # TypedDict's generated doc
            out["description"] = " ".join(hint.__doc__.split())
        items = fields(hint)
        out["properties"] = {k: json_schema(t) for k, (t, _) in items.items()}
        out["required"] = [k for k, (_, req) in items.items() if req]
        return out
    members = union_members(hint)
    if members is not None:
        return {"anyOf": [json_schema(m) for m in members]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list or hint is list:
        return {"type": "array", "items": json_schema(args[0])} if args else {"type": "array"}
    if origin is dict or hint is dict:
        if args and args[0] is not str:
            raise TypeError(f"a JSON object's keys are strings, not {args[0]}")
        return {"type": "object", "additionalProperties": json_schema(args[1])} if args else {"type": "object"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
    if hint in simple:
        return {"type": simple[hint]}
    raise TypeError(f"no JSON type for {hint!r}")
