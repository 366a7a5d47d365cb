"""What a capture records: one Capture per kernel compiled, one ScriptRun per script run, and the
launch record of a spec file (grid, tensors' shapes, dtypes, strides, offsets and alignment, scalars).

The Recorder (recorder.py) fills Captures while the script runs, replay.py gives each a spec and
settings, a spec file and a dump, and the view (views/capture.py) shows them: this module is the
data they pass along, and the functions that describe a launch's arguments as plain data.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscope import adapter
from irscope.adapter import runtime as triton_runtime
from irscope.kernel.settings import Settings
from irscope.kernel.targets import Target
from irscope.records import Launch, LaunchArg


@dataclass
class Capture:
    """One kernel × specialization × options the script compiled (Triton's kernel-cache identity)."""

    index: int
    name: str  # the kernel's function name
    jit: Any  # the JITFunction
    key: str  # Triton's kernel-cache key for the launch
    signature: dict[str, Any]  # what the binder decided (JITFunction._pack_args)
    constants: dict[tuple, Any]
    attrs: dict[tuple, Any]
    options: dict[str, Any]  # the backend options' fields, as the launch had them
    warmup: bool = False  # compiled by .warmup (no launch of its own)
    config: str | None = None  # @triton.autotune config label
    winner: bool | None = None  # the autotuner's choice (None: not measured, compile-only)
    launch: Launch = field(default_factory=Launch)  # grid, tensor shapes, scalar values
    launches: int = 0
    timed_launches: int = 0  # of those, made while a benchmark timed it (autotuner trials, do_bench)
    cache_hit: bool | None = None  # served from Triton's on-disk cache (gpu mode)
    kernel_hash: str | None = None
    asm: dict[str, str] = field(default_factory=dict)  # gpu mode: the launched kernel's text stages
    generated_by: dict[str, Any] | None = None  # a kernel generator's record (capture/layers.py)
    # filled by replay.prepare():
    spec: Any = None
    settings: Settings | None = None
    problem: str | None = None  # why there is no spec (not expressible in the spec grammar)
    notes: list[str] = field(default_factory=list)
    spec_path: Path | None = None
    result: Any = None  # dump.DumpResult
    failure: str | None = None
    skipped: str | None = None  # a config a launch would reject (OutOfResources)
    matches_launch: dict[str, bool] | None = None
    launch_options: dict[str, Any] = field(default_factory=dict)  # the options that differ from defaults
    elements: dict[str, str] = field(default_factory=dict)  # param -> spec element text
    closure: dict[str, Any] | None = None  # the kernel's closure as data (capture/closure.py), in its spec file
    dumped_in: str | None = None  # "worker" (rebuilt from its spec file) | "in-process"
    in_process_why: str | None = None  # why it was not dumped in a worker (closure.py's doubt, --jobs 1, ...)
    dump_s: float | None = None  # wall seconds its dump took (in the worker, or here), the compile's included
    prebuilt: Any = None  # compiler.Prebuilt: the script's own compile of it (Inductor's), which its dump may take

    @property
    def label(self) -> str:
        return f"{self.name} [{self.config}]" if self.config else self.name


@dataclass
class ScriptRun:
    """One run of a script under the recorder: what it captured, and how it ended."""

    script: Path
    args: list[str]
    target: Target
    target_reason: str
    mode: str  # "gpu" | "compile-only"
    captures: list[Capture]
    launches: int  # launches seen (recorded ones in compile-only mode)
    stopped: str | None = None  # why the script ended early, one line
    filtered_out: list[str] = field(default_factory=list)  # kernels --kernel left out
    script_log: Path | None = None
    threads_left: list[str] = field(default_factory=list)  # threads it started, still running at its end
    computed: Any = None  # standin.interpret.Computed: which launches the interpreter computed
    standin_notes: list[str] = field(default_factory=list)  # what the stand-in GPU did not do (shape-only ops)
    stopped_traceback: str | None = None  # the script's own exception, formatted (shown with --debug)
    dumps_stopped: str | None = None  # "SIGTERM after 25 of 48 dumps": a signal ended the dumps (replay.dump_all)
    stop_status: int | None = None  # the exit status that signal asks for (128 + its number)
    script_s: float | None = None  # wall seconds the script (or call) ran, the interpreter's included
    timing: dict[str, Any] = field(default_factory=dict)  # where the time went (replay.timing_split)
    launch_check_s: float = 0.0  # of script_s: the launch checks' compiles to TTGIR (compile-only mode)
    inductor_compile_s: float = 0.0  # of script_s: Inductor's own compiles of its kernels (its precompile)
    dumps: dict[str, Any] = field(default_factory=dict)  # the dump phase's own clock (replay.dump_all)


def launch_record(jit: Any, args: tuple, kwargs: dict[str, Any], grid: Any, warmup: bool) -> Launch:
    """The launch record of a call `jit[grid](*args, **kwargs)` (a .warmup has no grid)."""
    bound = bind(jit, args, kwargs)
    grid3 = None
    if not warmup and grid is not None:
        try:
            grid3 = grid_3d(grid(bound) if callable(grid) else grid)
        except Exception:  # noqa: BLE001  a grid function that fails on a record is no grid
            grid3 = None
    return describe(bound, jit, grid3)


def grid_3d(grid: Any) -> list[int] | None:
    """A launch grid as three ints ([16] -> [16, 1, 1]); None when it is not a sequence of ints."""
    try:
        g = [int(x) for x in grid]
    except (TypeError, ValueError):
        return None
    return (g + [1, 1, 1])[:3]


def bind(jit: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Parameter -> value as the launch bound them (defaults applied), like Triton's binder."""
    sig = triton_runtime.kernel_signature(jit)
    try:
        ba = sig.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
        ba.apply_defaults()
        return dict(ba.arguments)
    except TypeError:
        names = [p.name for p in adapter.kernel_params(jit)]
        return dict(zip(names, args))


def describe(bound: dict[str, Any], jit: Any, grid: list[int] | None) -> Launch:
    """The launch record of a spec file: grid, tensors (shape, dtype, strides, offset, alignment), scalars."""
    constexpr = {p.name for p in adapter.kernel_params(jit) if p.is_constexpr}
    args: dict[str, LaunchArg] = {}
    for name, v in bound.items():
        if name in constexpr:
            continue
        if hasattr(v, "data_ptr") and hasattr(v, "dtype"):
            args[name] = tensor_record(v)
        elif isinstance(v, (bool, int, float)) or v is None:
            args[name] = {"value": v}
        else:
            args[name] = {"type": type(v).__name__}
    return {"grid": grid, "args": args}


def tensor_record(t: Any) -> LaunchArg:
    """dtype, shape, strides, storage offset and pointer alignment of a tensor argument."""
    rec: LaunchArg = {"dtype": str(t.dtype).replace("torch.", "")}
    if type(t).__name__ == "MockTensor":  # .warmup(torch.float32, ...): a dtype, no tensor
        rec["mock"], rec["align"] = True, 16
        return rec
    with contextlib.suppress(Exception):
        rec["shape"] = [int(s) for s in t.shape]
    with contextlib.suppress(Exception):
        rec["strides"] = [int(s) for s in t.stride()]
    with contextlib.suppress(Exception):
        rec["offset"] = int(t.storage_offset())
    with contextlib.suppress(Exception):
        rec["align"] = alignment(int(t.data_ptr()))
    return rec


def alignment(address: int) -> int:
    """The largest power of two (up to 16, all Triton asks) dividing the address."""
    if address % 16 == 0:
        return 16
    a = 1
    while address % (a * 2) == 0:
        a *= 2
    return a
