"""Compile one spec under one settings, the way Triton's JIT would, and keep every stage.

The whole pipeline is one ordered table, PIPELINE (step name -> function), as Triton's own
backends lay out theirs in `add_stages`: read it to know the order, add a step there. Each step
takes the Compile in progress and adds to it:

    bind        spec + settings -> Triton's (options, signature, constexprs, attrs), through
                Triton's own launch binder (adapter.bind)
    stages      triton.compile with every stage wrapped (the one hook point: adapter.stage_hook):
                per-stage time, the stage that failed, the ptxas -v report, the per-pass IR dump
                offsets, and SASS started the moment the cubin exists. With IR pins (Settings.pins,
                a steer.pins.Pins) the compile stops after each stage a pin edits, the IR is
                rewritten and compiled onward from that file, so the later passes see the edit
    sass        wait for nvdisasm (cubin -> SASS with the nvdisasm shipped in the triton wheel)
    artifacts   every stage's text, times, Triton's metadata -> Artifacts
    stats       resources and instruction mix (stats.py)
    resources   what a real launch checks on load (shared memory vs the chip's limit)
    pins        every pin and option checked against the output (the plan's checks)
    passes      with --passes: the MLIR dump split into one record per pass (passes.py)
    lines       the source map (map.json): what each Python line became in every stage (sourcemap.py)

kernel/ and compile/ never import steer: Settings.pins brings its own plan (kernel.settings.PinSet).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from irscope import adapter, errors
from irscope.adapter.native_output import capture_native_output
from irscope.artifacts import Artifacts, lineinfo, sourcemap
from irscope.artifacts import passes as passes_mod
from irscope.artifacts import stats as stats_mod
from irscope.compile import cache, failures, status
from irscope.errors import BadInput, CompileFailure
from irscope.kernel import hardware
from irscope.kernel.settings import Settings, jsonable
from irscope.kernel.spec import KernelSpec, check_binding, check_descriptors
from irscope.stages import from_triton
from irscope.version import __version__

# ---------------------------------------------------------------- bind


def bind(spec: KernelSpec, settings: Settings):
    """(options, signature, constexprs, attrs) exactly as a launch would produce them."""
    kwargs = adapter.launch_kwargs(spec.fn, settings.options)
    check_descriptors(spec, settings.target.backend)
    check_num_ctas(settings)
    try:
        options, signature, constexprs, attrs = adapter.bind(spec.fn, settings.target, spec.launch_args(), kwargs)
    except (ValueError, AssertionError, KeyError, TypeError) as e:
        raise BadInput(
            f"{spec.kernel}: options rejected by Triton's {settings.target.backend} backend: "
            f"{str(e) or type(e).__name__}"
        ) from e
    check_binding(spec, signature, constexprs, attrs)
    spec.notes.extend(adapter.default_option_notes(settings.options))
    return options, signature, constexprs, attrs


def check_num_ctas(settings: Settings) -> None:
    """num_ctas (the CTAs of one thread-block cluster, NVIDIA) is a power of two up to the chip's cluster
    limit: anything else fails deep in the TTGIR passes as "PassManager::run failed"."""
    n = settings.options.get("num_ctas")
    if settings.target.backend != "cuda" or not isinstance(n, int) or isinstance(n, bool) or n == 1:
        return
    chip = hardware.CHIPS.get(settings.target.chip or "") or (
        hardware.for_target(settings.target.name) if settings.target.name in hardware.TARGET_CHIP else None
    )
    limit = chip.max_cluster_ctas if chip else 16
    where = f"{chip.name} ({settings.target.name})" if chip else settings.target.name
    if n < 1 or n & (n - 1) or n > limit:
        allowed = ", ".join(str(1 << i) for i in range(limit.bit_length()))
        raise BadInput(
            f"num_ctas={n}: the CTAs of one cluster are a power of two up to the chip's cluster limit; "
            f"on {where}: {allowed}" + ("" if limit > 1 else " (no thread-block clusters before sm_90)")
        )


def cache_key(spec: KernelSpec, settings: Settings, options, with_passes: bool, with_sass: bool = True) -> str:
    """Everything that decides the output: kernel code, spec, effective options, target, env knobs, pins.

    Where an option came from (--set, a recipe, a capture) is not in the key: the same options
    from another source share the entry, and dump.dump restamps the sources on a hit. The kernel
    file's path is in it: every stage's locations (TTIR's loc(...), PTX's .file, the source map's
    kernel_file) name the file compiled, so the same code in another file is another dump.
    """
    payload = {
        "file": os.path.realpath(spec.file),
        "irscope": __version__,
        "irscope_code": cache.code_fingerprint(),
        "triton": adapter.triton_version(),
        "kernel": spec.kernel,
        "fn": adapter.kernel_cache_key(spec.fn),
        "spec": spec.canonical(),
        "target": settings.target.name,
        "options": jsonable(options.__dict__),
        "env": adapter.cache_invalidating_env(),
        "knobs": settings.env,
        "pins": settings.pins.canonical() if settings.pins else None,
        "passes": with_passes,
        "sass": with_sass,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


# ---------------------------------------------------------------- compile


class _StageRecorder:
    """Wraps each Triton stage function: timing, current stage, ptxas log, early SASS."""

    def __init__(self, workdir: str, with_sass: bool = True):
        self.with_sass = with_sass
        self.current: str | None = None
        self.times: dict[str, float] = {}
        self.ptxas_log = ""
        self.dump_position: Callable[[], int] | None = None
        self.dump_offsets: dict[str, int] = {}
        self.workdir = workdir
        self.sass_proc: subprocess.Popen | None = None
        self.sass_info: list[lineinfo.SassLine] | None = None  # each SASS instruction's source and PTX line
        self.first_stage_at: float | None = None
        # compiling in segments (pins): stop after this stage; keep each stage's text and the metadata
        self.stop_after: str | None = None
        self.capture_frontend = False
        self.texts: dict[str, str | bytes] = {}
        self.metadata: dict[str, Any] = {}
        self.on_stage: Callable[[str], None] = lambda stage: None  # the status channel hears each stage begin

    def wrap(self, name: str, fn: Callable) -> Callable:
        def run(src, metadata):
            self.current = name
            self.on_stage(name)
            if self.first_stage_at is None:
                self.first_stage_at = time.perf_counter()
            if self.capture_frontend:
                self.capture_frontend = False
                self.texts["source"] = str(src)
            if self.dump_position is not None:
                self.dump_offsets[name] = self.dump_position()
            start = time.perf_counter()
            if name == "cubin":
                out, self.ptxas_log = adapter.run_with_ptxas_log(fn, src, metadata)
                if self.with_sass:
                    self._start_sass(out)
            else:
                out = fn(src, metadata)
            self.times[name] = (time.perf_counter() - start) * 1e3
            if self.stop_after is not None:
                self.texts[name] = out if isinstance(out, bytes) else str(out)
                if name == self.stop_after:
                    self.metadata.update(metadata)
                    raise _StopAfterStage(name)
            return out

        return run

    def _start_sass(self, cubin: bytes) -> None:
        path = os.path.join(self.workdir, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        self.sass_start = time.perf_counter()
        self.sass_proc = subprocess.Popen(
            [adapter.nvdisasm_path(), "-c", "-g", "-gp", path],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def finish_sass(self) -> str | None:
        if self.sass_proc is None:
            return None
        out, err = self.sass_proc.communicate()
        done = time.perf_counter()
        self.times["sass"] = (done - self.sass_start) * 1e3

        if self.sass_proc.returncode != 0:
            raise CompileFailure("sass", f"nvdisasm failed: {err.strip()}")
        out, self.sass_info = lineinfo.split_sass(out)  # -g -gp line info goes to the map, not the .sass
        return out


@dataclass
class Prebuilt:
    """A compile the script already ran in irscope's process (Inductor compiling its kernels, recorded by
    CompileRecorder): Triton's hash of it, every stage's output, its metadata, the stage times, ptxas' report
    and what the compiler printed. A dump whose own bind gives the same compile identity takes these instead of
    compiling again: everything Triton's cache key holds (adapter.compile_identity, written canonically), so
    the stages are the ones Triton's JIT built for that launch; SASS, stats and the map are made as usual."""

    identity: str  # adapter.compile_identity of the compile (its src, target, options, environment)
    hash: str  # Triton's hash of it
    asm: dict[str, Any]  # Triton's CompiledKernel.asm: stage name -> text (bytes for the cubin)
    metadata: dict[str, Any]
    times_ms: dict[str, float]  # frontend, ttir, ..., cubin as the script's compile took them
    ptxas_log: str
    compile_log: str


class CompileRecorder:
    """Records the one Triton compile that runs inside `watching()` (in this process) as irscope's dump
    records one: stage times, ptxas' -v report, what the native compiler printed (caught, then written
    back to the descriptors it was meant for). `prebuilt(kernel)`: the Prebuilt of that compile, or None
    when no compile or more than one ran its stages there (a cache hit runs none)."""

    def __init__(self) -> None:
        self.rec = _StageRecorder("", with_sass=False)
        self.starts: list[float] = []  # each make_backend call (a compile's first step; others call it too)
        self.runs: dict[str, int] = {}  # how often each stage ran: once each, or it is not one compile
        self.compile_log = ""

    def _wrap(self, name: str, fn: Callable) -> Callable:
        inner = self.rec.wrap(name, fn)

        def run(src, metadata):
            self.runs[name] = self.runs.get(name, 0) + 1
            return inner(src, metadata)

        return run

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        with capture_native_output() as native:
            try:
                with adapter.stages_of_compiles_wrapped(self._wrap, lambda: self.starts.append(time.perf_counter())):
                    yield
            finally:
                self.compile_log = _compiler_messages(native, False)
        for fd, text in ((1, native.stdout), (2, native.stderr)):  # what the script's output would have had
            if text:
                os.write(fd, text.encode(errors="replace"))

    def prebuilt(self, kernel: Any) -> Prebuilt | None:
        times = dict(self.rec.times)
        asm = getattr(kernel, "asm", None)
        first = self.rec.first_stage_at

        if (
            not self.runs
            or max(self.runs.values()) != 1
            or first is None
            or not asm
            or not getattr(kernel, "hash", None)
        ):
            return None
        began = [t for t in self.starts if t <= first]  # the compile's own start: the last make_backend before it
        times["frontend"] = (first - began[-1]) * 1e3 if began else 0.0
        times["total"] = sum(times.values())  # the front end and the stages (no SASS: the dump makes it)
        metadata = _metadata_dict(kernel.metadata)
        src = getattr(kernel, "src", None)
        identity = adapter.compile_identity(src, metadata.get("target"), metadata) if src is not None else None
        if identity is None:
            return None
        return Prebuilt(identity, kernel.hash, dict(asm), metadata, times, self.rec.ptxas_log, self.compile_log)


class _Reused:
    """What the steps after `stages` read of Triton's CompiledKernel, from a Prebuilt."""

    def __init__(self, p: Prebuilt) -> None:
        self.asm, self.metadata, self.hash = p.asm, p.metadata, p.hash


class _Printed:
    """What the steps after `stages` read of the native output, from a Prebuilt's compile log."""

    def __init__(self, text: str) -> None:
        self.stderr, self.stdout, self.text = text, "", text


class _StopAfterStage(Exception):
    """Ends a compile right after the stage a pin edits (raised by the stage wrapper)."""


def _compile_edited(src, settings: Settings, options, rec: _StageRecorder, plan) -> Any:
    """Compile up to each stage a pin edits, rewrite that IR, compile onward from the edited file.

    triton.compile on a .ttir/.ttgir file runs only the stages after the file's own
    (adapter: recipes and pins), so the later passes see the edit. The stages before
    it are kept from the earlier segment (rec.texts), with its metadata (rec.metadata).
    """
    rec.capture_frontend = True
    for stage, rewrite in plan.edits:
        rec.stop_after = stage
        try:
            with adapter.fresh_compile():  # a cache hit (fresh=False) would skip the stage to edit
                adapter.compile(src, settings.target, options.__dict__)
        except _StopAfterStage:
            pass
        else:
            raise RuntimeError(f"Triton's pipeline for this kernel has no {stage} stage to pin")
        text = rec.texts[stage]
        assert isinstance(text, str), f"{stage} is IR text"
        rec.texts[stage] = text = rewrite(text)
        src = os.path.join(rec.workdir, f"{plan.spec.kernel}.{stage}")
        with open(src, "w") as f:
            f.write(text)
    rec.stop_after = None
    return adapter.compile(src, settings.target, options.__dict__)


@dataclass
class Compile:
    """One compile in progress: what each PIPELINE step reads and adds."""

    spec: KernelSpec
    settings: Settings
    with_passes: bool = False
    with_sass: bool = True
    fresh: bool = True
    bound: tuple | None = None  # bind's (options, signature, constexprs, attrs)
    plan: Any = None  # the pins' stage edits and output checks
    rec: _StageRecorder | None = None
    kernel: Any = None  # Triton's CompiledKernel
    native: Any = None  # what the compiler printed (NativeOutput)
    started: float = 0.0
    total_ms: float = 0.0
    sass: str | None = None
    art: Artifacts | None = None
    prebuilt: Prebuilt | None = None  # the script's own compile of this kernel (CompileRecorder), if any
    reused: bool = False  # the stages are the prebuilt's (its compile identity is this compile's)

    # what the steps after the one that sets each read (PIPELINE's order sets them first)
    @property
    def binding(self) -> tuple:
        assert self.bound is not None, "bind runs first"
        return self.bound

    @property
    def recorder(self) -> _StageRecorder:
        assert self.rec is not None, "compile_spec sets it before the first step"
        return self.rec

    @property
    def artifacts(self) -> Artifacts:
        assert self.art is not None, "the artifacts step sets it"
        return self.art


class _NoPins:
    """The plan of a compile without pins (Settings.pins is None): no edits, nothing to check."""

    edits: ClassVar[list] = []

    def check(self, art) -> list[dict]:
        return []

    def describe(self) -> str:
        return ""


def _bind_step(c: Compile) -> None:
    c.bound = c.bound or bind(c.spec, c.settings)
    pins = c.settings.pins
    c.plan = pins.plan(c.spec, c.settings) if pins is not None else _NoPins()


@contextlib.contextmanager
def _reported(c: Compile, native) -> Iterator[Callable[[str], None]]:
    """The status channel (compile/status.py) hears the compile's stages as they begin (the front end first),
    and its end: a process that dies in between died in that stage. Nothing is sent when unsupervised."""
    if not status.attached():
        yield lambda stage: None
        return

    def stage(name: str) -> None:
        status.send(
            {
                "kind": "compile",
                "kernel": c.spec.kernel,
                "target": c.settings.target.name,
                "stage": name,
                "stderr": native.err_name,
            }
        )

    stage("frontend")
    try:
        yield stage
    finally:
        status.send({"kind": "idle", "ended": "compile"})


def _stages_step(c: Compile) -> None:
    """triton.compile with each stage hooked; a failure names the stage and the compiler's reason."""
    options, signature, constexprs, attrs = c.binding
    src = adapter.make_source(c.spec.fn, signature, constexprs, attrs)
    env = dict(c.settings.env)
    if c.with_passes:
        env.update(adapter.pass_dump_env())
    rec = c.recorder
    c.started = time.perf_counter()
    if c.prebuilt is not None and not c.with_passes and not c.plan.edits:
        with adapter.environment(env):
            same = adapter.compile_identity(src, c.settings.target, options.__dict__) == c.prebuilt.identity
        if same:
            _reuse(c, c.prebuilt)
            return
    with capture_native_output(status.scratch()) as native, _reported(c, native) as rec.on_stage:
        c.native = native
        if c.with_passes:
            rec.dump_position = native.stderr_size
        try:
            bypass = adapter.fresh_compile() if c.fresh else contextlib.nullcontext()
            with adapter.environment(env), bypass, adapter.stage_hook(rec.wrap):
                if c.plan.edits:
                    c.kernel = _compile_edited(src, c.settings, options, rec, c.plan)
                else:
                    c.kernel = adapter.compile(src, c.settings.target, options.__dict__)
        except BadInput:  # a pin that does not fit this kernel (steer/): nothing is written
            raise
        except adapter.compile_error_types() as e:
            failure: CompileFailure | None = failures.frontend_failure(c.spec, e)
        except Exception as e:  # noqa: BLE001 - any failure inside a stage is that stage's failure, named
            if isinstance(e, OSError) and e.errno in errors.WRITE_ERRNOS:
                raise  # Triton's cache refused a write (a full disk): the machine's fault, not the stage's
            failure = failures.stage_failure(c.spec, rec.current or "frontend", e)
        else:
            failure = None
    if failure is not None:
        if rec.sass_proc:
            rec.sass_proc.kill()
        failure.reason = failures.with_diagnostics(failure.reason, native.text)
        if c.plan.edits:
            failure.reason += f" (compiling onward from the pinned IR: {c.plan.describe()})"
        raise CompileFailure(failure.stage, failure.reason, c.spec.kernel)


def _reuse(c: Compile, p: Prebuilt) -> None:
    """The stages step from the script's own compile of this kernel (same compile identity): its outputs, times,
    ptxas report and compiler messages; SASS is started from its cubin as a compile starts it."""
    rec = c.recorder
    c.kernel, c.native, c.reused = _Reused(p), _Printed(p.compile_log), True
    rec.times = {k: v for k, v in p.times_ms.items() if k not in ("frontend", "total")}
    rec.ptxas_log = p.ptxas_log
    if c.with_sass and isinstance(p.asm.get("cubin"), bytes):
        rec._start_sass(p.asm["cubin"])


def _sass_step(c: Compile) -> None:
    c.sass = c.recorder.finish_sass()
    c.total_ms = (time.perf_counter() - c.started) * 1e3
    if c.reused and c.prebuilt is not None:  # the compile's own time, then the wait for nvdisasm here
        c.total_ms += c.prebuilt.times_ms.get("total", 0.0)


def _artifacts_step(c: Compile) -> None:
    spec, settings, rec = c.spec, c.settings, c.recorder
    options = c.binding[0]
    stages: dict[str, str | bytes] = {"source": adapter.kernel_source(spec.fn)}
    compiled, extras = adapter.split_outputs(c.kernel.asm)
    for name, content in {**rec.texts, **compiled}.items():  # rec.texts: the stages before a pinned one
        stages[from_triton(name)] = content
    if c.sass is not None:
        stages["sass"] = c.sass
    times = {"frontend": ((rec.first_stage_at or c.started) - c.started) * 1e3}
    if c.reused and c.prebuilt is not None:
        times["frontend"] = c.prebuilt.times_ms.get("frontend", 0.0)
    times.update(rec.times)
    times["total"] = c.total_ms
    c.art = Artifacts(
        kernel=spec.kernel,
        file=spec.file,
        target=settings.target.name,
        target_reason=settings.target_reason,
        signature=spec.signature_text(),
        args=spec.canonical(),
        options=jsonable(options.__dict__),
        user_options=jsonable(settings.options),
        option_sources=dict(settings.sources),
        env=dict(settings.env),
        stages=stages,
        extras=extras,
        times_ms={k: round(v, 2) for k, v in times.items()},
        metadata=jsonable({**rec.metadata, **_metadata_dict(c.kernel.metadata)}),
        triton_version=adapter.triton_version(),
        ptxas_log=rec.ptxas_log,
        compile_log=_compiler_messages(c.native, c.with_passes),
        notes=list(spec.notes),
        key=cache_key(spec, settings, options, c.with_passes, c.with_sass),
        compiled=c.kernel,
    )


def _resources_step(c: Compile) -> None:
    check_resources(c.artifacts, c.settings)


def _stats_step(c: Compile) -> None:
    c.artifacts.stats = stats_mod.compute(c.artifacts, c.settings.target)


def _pins_step(c: Compile) -> None:
    art = c.artifacts
    art.pins = c.plan.check(art)
    art.recipe = c.settings.pins.recipe if c.settings.pins else None


def _passes_step(c: Compile) -> None:
    if c.with_passes:
        art = c.artifacts
        art.passes, art.pass_texts = passes_mod.split(c.native.stderr, c.recorder.dump_offsets, art.stages)


def _lines_step(c: Compile) -> None:
    """The source map, in every dump (it costs a few % of a compile: benchmarks/bench_lines.py). The map is
    an addition: IR it cannot read leaves a note and no map.json, never a failed dump."""
    start = time.perf_counter()
    art = c.artifacts
    try:
        art.source_map = sourcemap.build(art.stages, str(c.spec.file), art.stage_files(), c.recorder.sass_info)
    except (ValueError, IndexError, KeyError, TypeError) as e:
        art.notes.append(f"no source map (irscope lines): {type(e).__name__}: {e}")
    art.times_ms["map"] = round((time.perf_counter() - start) * 1e3, 2)


PIPELINE: dict[str, Callable[[Compile], None]] = {
    "bind": _bind_step,
    "stages": _stages_step,
    "sass": _sass_step,
    "artifacts": _artifacts_step,
    "stats": _stats_step,
    "resources": _resources_step,
    "pins": _pins_step,
    "passes": _passes_step,
    "lines": _lines_step,
}


def compile_spec(
    spec: KernelSpec,
    settings: Settings,
    with_passes: bool = False,
    bound=None,
    fresh: bool = True,
    with_sass: bool = True,
    prebuilt: Prebuilt | None = None,
) -> Artifacts:
    """Run PIPELINE; `bound` is bind()'s result when the caller already has it.

    `prebuilt`: the script's own compile of this kernel (a capture's, CompileRecorder): taken instead of
    compiling when this compile's identity (adapter.compile_identity) is its (never with passes or pins);
    `Artifacts.reused`.

    fresh=False lets Triton's own cache serve the binary (for launching a kernel that was just
    dumped: no ptxas report, no SASS, no per-stage times then). with_sass=False skips the
    nvdisasm run (about 0.3-0.5 s a kernel, whatever its size): a sweep ranks on ptxas' report
    and the PTX, and a dump of the winner disassembles it.
    """
    c = Compile(spec, settings, with_passes, with_sass, fresh, bound, prebuilt=prebuilt)
    with tempfile.TemporaryDirectory(prefix="irscope-") as work:
        c.rec = _StageRecorder(work, with_sass)
        for step in PIPELINE.values():
            step(c)
    c.artifacts.reused = c.reused
    return c.artifacts


def load_binary(spec: KernelSpec, settings: Settings):
    """The compiled kernel alone, from Triton's cache when a dump put it there (for launching).

    The same bind, source, options and environment as compile_spec, without its records (stage
    times, SASS, stats). A kernel with IR pins goes through compile_spec: its binary comes
    from the edited IR, which only that path rebuilds.
    """
    if settings.pins is not None and settings.pins.plan(spec, settings).edits:
        return compile_spec(spec, settings, fresh=False, with_sass=False).compiled
    options, signature, constexprs, attrs = bind(spec, settings)
    src = adapter.make_source(spec.fn, signature, constexprs, attrs)
    with capture_native_output(), adapter.environment(dict(settings.env)):
        return adapter.compile(src, settings.target, options.__dict__)


def _metadata_dict(metadata) -> dict[str, Any]:
    if hasattr(metadata, "_asdict"):
        return dict(metadata._asdict())
    return dict(metadata)


# threads per block on every target irscope knows: NVIDIA sm_80+ and AMD CDNA/RDNA alike. Triton's
# backends accept any power-of-two num_warps (parse_options), so a block that cannot launch compiles.
MAX_THREADS_PER_BLOCK = 1024


def check_resources(art: Artifacts, settings: Settings) -> None:
    """What Triton checks when it loads the binary on a GPU (OutOfResources), done here."""
    hw = settings.target.hardware
    warps = int(art.metadata.get("num_warps") or 0)
    warp_size = int(art.metadata.get("warp_size") or settings.target.warp_size)
    if warps * warp_size > MAX_THREADS_PER_BLOCK:
        raise CompileFailure(
            "resources",
            f"num_warps {warps} makes {warps * warp_size} threads per block ({warps} x {warp_size}) but "
            f"{hw.family} allows {MAX_THREADS_PER_BLOCK} (num_warps {MAX_THREADS_PER_BLOCK // warp_size} at most); "
            f"a launch would fail (lower num_warps)",
            art.kernel,
        )
    shared = int(art.metadata.get("shared") or 0)
    if shared > hw.max_shared_per_block:
        word = "LDS" if settings.target.backend == "hip" else "shared memory"
        raise CompileFailure(
            "resources",
            f"needs {shared} bytes of {word} per block but {hw.family} allows {hw.max_shared_per_block}; "
            f"a launch would fail with OutOfResources (lower num_stages or the block sizes)",
            art.kernel,
        )


def _compiler_messages(native, with_passes: bool) -> str:
    """What the compiler printed, less the IR dumps (those are in passes/)."""
    parts = [_strip_ir_dumps(native.stderr) if with_passes else native.stderr, _strip_ir_dumps(native.stdout)]
    return "".join(p for p in parts if p.strip())


def _strip_ir_dumps(text: str) -> str:
    """Drop '// -----// IR Dump ...' blocks (module text up to the next blank line)."""
    if "IR Dump" not in text:
        return text
    keep, skipping = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("// -----//"):
            skipping = True
            continue
        if skipping and line.strip() and not line.startswith(("module", " ", "}", "#", ")", "{")):
            skipping = False
        if not skipping:
            keep.append(line)
    return "".join(keep)
