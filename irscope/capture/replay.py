"""Captures -> replayable jobs: a spec and settings per capture, its spec file, its dump.

prepare      each capture's KernelSpec and Settings, built through jobs.for_kernel from what
             the binder decided (signature, constexprs, divisibility and alignment, options
             that differ from the backend's defaults), then bound again and compared with the
             launch: where the spec cannot say what the launch did, a note says so
write_specs  one spec file per capture under OUT/captures/ (`irscope dump CAPTURE.json` replays it),
             with the kernel's closure as data (closure.py) for the workers
dump_all     each capture dumped like any other kernel, in --jobs worker processes that rebuild
             the kernel from its spec file (parallel.py), else in this process; in gpu mode its
             stages are compared with the kernel the script actually launched
timing_split where the capture's time went (script, interpreter, shape-only ops, dumps)
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from irscope import adapter, artifacts, jobs, stages
from irscope.capture import closure, parallel
from irscope.capture.records import Capture, ScriptRun
from irscope.compare.normalize import normalize
from irscope.compile import compiler
from irscope.compile import dump as dump_job
from irscope.errors import BadInput, CompileFailure
from irscope.kernel import loader
from irscope.kernel.elements import bound_text, function_name
from irscope.kernel.settings import DERIVED_FIELDS, Settings, jsonable, settable_options
from irscope.kernel.spec import ArgSpec, KernelSpec
from irscope.kernel.specfile import spec_document
from irscope.records import Launch, SpecFile


def prepare(run: ScriptRun, request: jobs.Request | Sequence[str]) -> None:
    """Give each capture a KernelSpec and Settings; say where the spec cannot say what the launch did.

    `request`: the command's Request; its option layers apply (its steering does not:
    jobs.for_capture). A list of KEY=VALUE items stands for the script's Request with those as --set.
    """
    if not isinstance(request, jobs.Request):
        request = jobs.Request(Path(run.script)).with_sets(list(request), "--set")
    request = jobs.for_capture(request)
    for cap in run.captures:
        try:
            cap.spec, cap.settings = _spec_for(cap, run, request)
        except BadInput as e:
            cap.problem = str(e)
            continue
        cap.closure, cap.in_process_why = closure.describe(cap.spec.fn)


def _spec_for(cap: Capture, run: ScriptRun, request: jobs.Request) -> tuple[KernelSpec, Settings]:
    """The capture's job (through jobs.for_kernel, as every command's), checked against the launch."""
    jit = cap.jit
    params = adapter.kernel_params(jit)
    named, consts = _elements(cap, run)
    file = Path(jit.fn.__code__.co_filename).resolve()
    attr = _module_attribute(jit) or cap.name
    ref = loader.KernelRef(attr, jit, file, adapter.is_gluon(jit), False)
    cap.elements = {item.partition("=")[0]: item.partition("=")[2] for item in named + consts}
    cap.elements = {p.name: cap.elements[p.name] for p in params if p.name in cap.elements}
    cap.launch_options = _launch_options(cap, run)
    as_launched = Settings(run.target, run.target_reason).overlay(cap.launch_options, "capture")
    job = jobs.for_kernel(ref, as_launched, request, named_args=named, consts=consts)
    spec, settings = job.spec, job.settings

    # the check that makes a capture trustworthy: the spec binds as the launch did (under the
    # launch's own options; --set changes what is compiled afterwards, not what was launched)
    _, signature, constexprs, attrs = compiler.bind(spec, as_launched)
    cap.notes.extend(_binding_differences(cap, signature, constexprs, attrs))
    return spec, settings


def _elements(cap: Capture, run: ScriptRun) -> tuple[list[str], list[str]]:
    """The spec elements (NAME=ELEMENT) of what the binder decided: (named args, constexprs)."""
    aligns = {n: a.get("align") for n, a in (cap.launch.get("args") or {}).items() if isinstance(a, dict)}
    named: list[str] = []
    consts: list[str] = []
    for i, p in enumerate(adapter.kernel_params(cap.jit)):
        ty = cap.signature.get(p.name)
        path = (i,)
        if ty == "constexpr":
            value = cap.constants.get(path, p.default)
            if not p.is_constexpr and type(value) is int and value == 1:
                text = "i32:1"  # an int equal to 1, made a constant by the launch
            elif callable(value) and not type(value).__name__.endswith("Layout"):
                name = function_name(value, cap.jit)
                if name is None:
                    raise BadInput(
                        f"{p.name} is the function {getattr(value, '__name__', value)!r}, which the "
                        f"kernel's module does not name (fn:NAME needs a name the module has)"
                    )
                text = f"fn:{name}"
            else:
                text = _constexpr_text(value) or ArgSpec("constexpr", value=value).text()
            (consts if p.is_constexpr else named).append(f"{p.name}={text}")
        elif isinstance(ty, str) and ty.startswith("*"):
            div = _divisible(cap.attrs.get(path))
            align = 16 if div else min(aligns.get(p.name) or 16, 16)
            # AMD marks pointers into allocations under 2 GiB for buffer ops; one without is ':large'
            ranged = any(list(kv)[:1] == ["tt.pointer_range"] for kv in (cap.attrs.get(path) or []))
            large = run.target.backend == "hip" and adapter.amd_buffer_ops_enabled() and not ranged
            named.append(f"{p.name}={ty}:{align}" + (":large" if large else ""))
        elif isinstance(ty, str) and ty[:1] in "iu" and ty[1:].isdigit() and ty not in ("i1", "u1"):
            named.append(f"{p.name}={ty}:16" if _divisible(cap.attrs.get(path)) else f"{p.name}={ty}")
        elif ty in ("i1", "u1", "fp16", "bf16", "fp32", "fp64"):
            named.append(f"{p.name}={ty}")
        elif (bound := bound_text(ty, path, cap.attrs, cap.constants, cap.jit)) is not None:
            named.append(f"{p.name}={bound}")  # a tensor descriptor or a tuple (nested), as the binder saw it
        else:
            raise BadInput(f"parameter {p.name} is bound as {ty!r}, an argument the spec grammar has no element for")
    return named, consts


def _launch_options(cap: Capture, run: ScriptRun) -> dict[str, Any]:
    """The options the launch had that the backend's defaults do not (settable ones only)."""
    defaults = jsonable(adapter.make_backend(run.target).parse_options(adapter.launch_kwargs(cap.jit, {})).__dict__)
    valid = settable_options(run.target)
    captured = {}
    for k, v in cap.options.items():
        if k in DERIVED_FIELDS or k not in valid or jsonable(v) == defaults.get(k):
            continue
        captured[k] = v  # Settings.overlay makes lists tuples, as Triton's options need
    return captured


def _constexpr_text(value: Any) -> str | None:
    """A Triton dtype as the spec grammar reads it back: tl.float16 (its .name, fp16, is no tl attribute)."""
    import triton.language as tl

    if not isinstance(value, tl.dtype):
        return None
    for name, v in vars(tl).items():
        if isinstance(v, tl.dtype) and not name.startswith("_") and v == value:
            return f"tl.{name}"
    return None


def _divisible(attr_list) -> bool:
    for item in attr_list or []:
        if len(item) == 2 and item[0] == "tt.divisibility" and item[1] == 16:
            return True
    return False


def _module_attribute(jit) -> str | None:
    """The global name the kernel has in its module (what a replay looks it up by)."""
    fn = getattr(jit, "fn", None)
    globs = getattr(fn, "__globals__", None) or {}
    for name, obj in list(globs.items()):
        if obj is jit or adapter.unwrap_kernel(obj) is jit:
            return name
    return None


def _binding_differences(cap: Capture, signature, constexprs, attrs) -> list[str]:
    notes = []
    text = lambda v: ArgSpec("constexpr", value=v).text()
    if dict(signature) != dict(cap.signature):
        diff = [
            f"{k}: {cap.signature.get(k)} -> {signature.get(k)}"
            for k in signature
            if signature.get(k) != cap.signature.get(k)
        ]
        notes.append(f"the spec binds differently from the launch: {'; '.join(diff)}")
    norm = lambda d: {tuple(k): sorted(tuple(x) for x in v) for k, v in (d or {}).items() if v}
    a, b = norm(cap.attrs), norm(attrs)
    if a != b:
        names = [p.name for p in adapter.kernel_params(cap.jit)]
        lost: dict[str, list[str]] = {}
        extra: dict[str, list[str]] = {}
        for path in sorted(set(a) | set(b)):
            who = names[path[0]] if len(path) == 1 and path[0] < len(names) else str(path)
            for k, v in a.get(path, []):
                if (k, v) not in b.get(path, []):
                    lost.setdefault(f"{k}={v}", []).append(who)
            for k, v in b.get(path, []):
                if (k, v) not in a.get(path, []):
                    extra.setdefault(f"{k}={v}", []).append(who)
        for attr, who in lost.items():
            why = " (AMD buffer ops: a tensor under 2 GiB)" if attr.startswith("tt.pointer_range") else ""
            notes.append(
                f"{', '.join(who)}: the launch had {attr}{why}, which no spec element expresses; "
                f"the dump compiles without it"
            )
        for attr, who in extra.items():
            notes.append(f"{', '.join(who)}: the spec adds {attr}, which the launch did not have")
    ca = {tuple(k): text(v) for k, v in cap.constants.items()}
    cb = {tuple(k): text(v) for k, v in constexprs.items()}
    if ca != cb:
        notes.append(f"constexprs differ from the launch: {ca} vs {cb}")
    return notes


def spec_record(cap: Capture, run: ScriptRun) -> Launch:
    """The spec file's `launch` record."""
    rec: Launch = {**cap.launch}
    rec.update(
        {
            "autotune": {"config": cap.config, "winner": cap.winner} if cap.config else None,
            "warmup": cap.warmup,
            "launches": cap.launches,
            "timed_launches": cap.timed_launches,
            "mode": run.mode,
            "script": str(run.script.resolve()),
            "script_args": run.args,
        }
    )
    if cap.cache_hit is not None:
        rec["triton_cache_hit"] = cap.cache_hit
    if cap.generated_by is not None:
        rec["generated_by"] = cap.generated_by
    if cap.notes:
        rec["notes"] = list(cap.notes)
    return rec


def check_captures_folder(out_dir: Path) -> Path:
    """OUT/captures when it is absent or a real folder inside OUT; one BadInput line when it is a symbolic
    link (the spec files would be written wherever it points) or anything but a folder."""
    folder = Path(out_dir) / "captures"
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return folder
    except OSError as e:
        raise BadInput(f"-o {out_dir}: its captures/ is unreadable ({e.strerror or e})") from None
    if stat.S_ISLNK(mode):
        raise BadInput(f"-o {out_dir}: its captures/ is a symbolic link; spec files are written only inside -o")
    if not stat.S_ISDIR(mode):
        raise BadInput(f"-o {out_dir}: its captures/ is not a folder; remove it or choose another -o")
    return folder


def write_specs(run: ScriptRun, out_dir: Path) -> None:
    """One spec file per capture with a spec, under OUT/captures/ (KERNEL-N.json, never overwritten): each a
    new regular file (O_EXCL, O_NOFOLLOW: a planted link or file of that name is passed over, never
    followed), in a captures/ that is a real folder (check_captures_folder)."""
    check_captures_folder(out_dir)
    counts: dict[str, int] = {}
    for cap in run.captures:
        if cap.spec is not None:
            cap.spec_path = write_spec_file(out_dir, cap.spec.kernel, spec_doc(cap, run), counts)


def spec_doc(cap: Capture, run: ScriptRun) -> SpecFile:
    """A prepared capture's spec file document, its closure included (what a worker rebuilds the kernel from)."""
    doc: SpecFile = spec_document(
        cap.spec, run.target.name, jsonable(cap.launch_options), launch=jsonable(spec_record(cap, run))
    )
    doc["args"] = dict(cap.elements)  # the elements build_spec read (they read back the same)
    doc["closure"] = cap.closure  # what a worker rebuilds the kernel from (closure.py); None: not data
    return doc


def write_spec_file(out_dir: Path, kernel: str, doc: SpecFile, counts: dict[str, int]) -> Path:
    """OUT/captures/KERNEL-N.json, a new regular file, N the first free number from counts[kernel] + 1."""
    folder = check_captures_folder(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    folder = check_captures_folder(out_dir)
    n = counts.get(kernel, 0) + 1
    while True:
        path = folder / f"{kernel}-{n}.json"
        try:  # an earlier capture's, or anything planted there: never overwritten nor followed
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            n += 1
            continue
        break
    counts[kernel] = n
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(doc, indent=1) + "\n")
    return path


def dump_all(  # noqa: PLR0913
    run: ScriptRun,
    out_dir: Path,
    with_passes: bool,
    use_cache: bool,
    stop: Any = None,
    jobs: int | None = None,
    advance: Callable[..., None] | None = None,
    with_sass: bool = True,
) -> None:
    """Dump each capture with a spec; a config the autotuner would drop is skipped, a failure kept.

    `jobs` (--jobs; None: the machine's cores): the worker processes that dump the captures whose
    closure is data (parallel.py); the others, and any a worker hands back, are dumped here after.
    `stop` (command.signals_kept()): SIGINT or SIGTERM, during a dump or before one, ends the dumps;
    those finished are kept and `run.dumps_stopped` says how far it got (a dump cut short leaves
    no folder: dump folders are published by rename; the workers are killed). `advance(label)` hears
    each capture finished (the progress a terminal shows)."""
    started = time.perf_counter()

    def finish(cap: Capture, result: Any, failure: CompileFailure | None) -> None:
        record_dump(cap, result, failure)
        if advance is not None:
            advance(f"{cap.name}: {'failed' if cap.failure else 'skipped' if cap.skipped else 'dumped'}")

    todo = [cap for cap in run.captures if cap.spec is not None]
    sent, here = parallel.plan(todo, parallel.default_jobs() if jobs is None else jobs)
    clock = {"workers": 0, "workers_s": 0.0, "in_process_s": 0.0}  # the dump phase's own clock (timing_split)
    if sent and (stop is None or stop.signal is None):
        pool = parallel.start(len(sent), parallel.default_jobs() if jobs is None else jobs)
        clock["workers"] = pool.size
        try:
            with stop.armed() if stop is not None else contextlib.nullcontext():
                here += parallel.dump_in_workers(pool, sent, out_dir, with_passes, use_cache, finish, with_sass)
        except DumpsStopped:
            pass
        finally:
            pool.close()
            clock["workers_s"] = time.perf_counter() - started
    for cap in sorted(here, key=lambda c: c.index):
        if stop is not None and stop.signal is not None:
            break
        one = time.perf_counter()
        try:
            cap.dumped_in = "in-process"
            if advance is not None:
                advance(f"{cap.name}: compiling", 0)
            compiling = stop.armed if stop is not None else None
            _dump_one(cap, out_dir, with_passes, use_cache, compiling, finish, with_sass)
        except DumpsStopped:
            break
        finally:
            cap.dump_s = time.perf_counter() - one
            clock["in_process_s"] += cap.dump_s
    run.timing["dumps_s"] = time.perf_counter() - started
    run.dumps = clock
    if stop is not None and stop.signal is not None:
        finished = sum(1 for cap in todo if cap.result is not None or cap.failure or cap.skipped)
        run.dumps_stopped = f"{stop.name} after {finished} of {len(todo)} dump{'s' if len(todo) != 1 else ''}"
        run.stop_status = 128 + stop.signal


class DumpsStopped(BaseException):
    """Raised by command.signals_kept()'s handlers while a dump runs: ends the dumps, not irscope."""


def _dump_one(
    cap: Capture,
    out_dir: Path,
    with_passes: bool,
    use_cache: bool,
    compiling: Any,
    finish: Any = None,
    with_sass: bool = True,
) -> None:
    """One capture dumped (or skipped, or its failure kept), its manifest given the capture's notes
    (`finish`: record_dump, or dump_all's that also advances the progress); a stop (`compiling`, armed
    around the compile only) raises DumpsStopped."""
    assert cap.settings is not None  # set with its spec; only captures with a spec are dumped
    finish = finish or record_dump
    try:
        result = dump_job.dump(
            cap.spec,
            cap.settings,
            out_dir,
            with_passes,
            use_cache,
            with_sass=with_sass,
            compiling=compiling,
            prebuilt=cap.prebuilt,
        )
    except CompileFailure as e:
        finish(cap, None, e)
        return
    finish(cap, result, None)


def record_dump(cap: Capture, result: Any, failure: CompileFailure | None) -> None:
    """A capture's dump (here or in a worker) or its failure: skipped, failed, or its manifest given
    the capture's notes and compared with the launch."""
    if failure is not None:
        if cap.config and _would_not_launch(failure):
            cap.skipped = f"would not launch: {failure.reason}"  # the autotuner drops such a config (OutOfResources)
        else:
            cap.failure = str(failure)
        return
    cap.result = result
    cap.result.manifest.setdefault("notes", [])
    cap.result.manifest["notes"] = list(cap.result.manifest["notes"]) + [
        n for n in cap.notes if n not in cap.result.manifest["notes"]
    ]
    if cap.generated_by is not None:
        _manifest_field(cap.result, "generated_by", cap.generated_by)
    if cap.asm:
        cap.matches_launch = _compare_with_launch(cap)


def _manifest_field(result: Any, key: str, value: Any) -> None:
    """An optional field added to a dump's manifest, in memory and in its manifest.json."""
    result.manifest[key] = value
    path = Path(result.folder) / "manifest.json"
    try:
        doc = json.loads(path.read_text())
        doc[key] = value
        path.write_text(json.dumps(doc, indent=1) + "\n")
    except (OSError, ValueError):
        pass


def _would_not_launch(e: CompileFailure) -> bool:
    """A failure the autotuner skips a config for: OutOfResources (shared memory, threads) or
    ptxas refusing it (registers)."""
    text = e.reason.lower()
    return e.stage == "resources" or (e.stage == "cubin" and "ptxas" in text and "regist" in text)


def _compare_with_launch(cap: Capture) -> dict[str, bool]:
    """gpu mode: the dump's stages against the kernel the script actually launched.

    Compared after irscope's normalisation (normalize.py): a dump served from irscope's
    cache may carry another path to the same source in its debug locations.
    """
    out = {}
    m, folder = cap.result.manifest, cap.result.folder
    for stage in stages.names(launch_check=True):
        if stage in cap.asm and stage in m["stages"]:
            mine = cast(str, artifacts.read_stage(folder, m, stage))  # the launch-checked stages are text
            out[stage] = normalize(stage, mine).lines == normalize(stage, cap.asm[stage]).lines
    return out


def timing_split(run: ScriptRun) -> dict[str, Any]:
    """Where the capture's wall time went, and the part that dominates: the script's own work (its
    Python and torch on the CPU), Triton's interpreter computing launches on the stand-in GPU (part
    of the script's time), the shape-only torch ops (counted; the stand-in does not time them), the
    specs (binding each capture again) and the dumps (compiles, in workers or here).

    Within the script: `script_parts` (the interpreter, the launch checks' compiles to TTGIR, Inductor's
    own compiles of its kernels, the rest: the script's Python and torch), which add up to script_s.
    Within the dumps: `dumps` (dump_phase) and the slowest dumps, `top_kernels`."""
    script = run.script_s or 0.0
    interpreter = float(run.computed.seconds) if run.computed is not None else 0.0
    shape_only = sum(int(m.group(1)) for note in run.standin_notes if (m := re.match(r"(\d+) torch ops? ", note)))
    checks, inductor = run.launch_check_s, run.inductor_compile_s
    parts = {
        "the script's own work": max(0.0, script - interpreter),
        "the interpreter": interpreter,
        "preparing specs": run.timing.get("specs_s", 0.0),
        "the dumps": run.timing.get("dumps_s", 0.0),
    }
    dominant = max(parts, key=lambda k: parts[k])
    workers = sum(1 for c in run.captures if c.dumped_in == "worker")
    return {
        "script_s": round(script, 2),
        "interpreter_s": round(interpreter, 2),
        "script_own_s": round(parts["the script's own work"], 2),
        "script_parts": {
            "interpreter_s": round(interpreter, 2),
            "launch_checks_s": round(checks, 2),
            "inductor_compiles_s": round(inductor, 2),
            "rest_s": round(max(0.0, script - interpreter - checks - inductor), 2),
        },
        "shape_only_ops": shape_only,
        "specs_s": round(parts["preparing specs"], 2),
        "dumps_s": round(parts["the dumps"], 2),
        "dumped_in_workers": workers,
        "dumped_in_process": sum(1 for c in run.captures if c.dumped_in == "in-process"),
        "dumps": dump_phase(run),
        "top_kernels": top_kernels(run),
        "dominant": dominant,
    }


def _compiled(run: ScriptRun) -> list[Capture]:
    """The captures whose dump was compiled in this run (not served from irscope's cache)."""
    return [c for c in run.captures if c.result is not None and not c.result.cached]


def dump_phase(run: ScriptRun) -> dict[str, Any]:
    """The dumps' part: how many were compiled (`reused`: of those, how many took the script's own compile of
    the kernel, Inductor's, rather than compiling it again), served from irscope's cache, failed or skipped; the
    compile's stages summed over the dumps compiled here (a reused one: its SASS and map only; seconds of work
    across workers, not wall time; `sass` is the wait for nvdisasm after the cubin, `map` the source map); of
    that work, `jit_s` (the stages Triton's JIT runs too, serially, in a GPU run) and `irscope_only_s` (SASS,
    the map and what is outside the compile); what each dump cost outside the compile (binding, stats, writing
    the folder and the cache entry, a worker's round trip); the parent's wait on the workers, and the workers'
    time not spent on a dump (start-up: importing Triton; idle at the end)."""
    stages: dict[str, float] = {}
    compile_s = 0.0
    compiled = _compiled(run)
    for cap in compiled:
        times = cap.result.manifest.get("times_ms") or {}
        if cap.result.served == "reused":  # its stages ran in the script (script_parts): only SASS and the map here
            times = {k: v for k, v in times.items() if k in ("sass", "map")}
            times["total"] = times.get("sass", 0.0)
        for stage, ms in times.items():
            if stage != "total":
                stages[stage] = stages.get(stage, 0.0) + ms / 1e3
        compile_s += (times.get("total", 0.0) + times.get("map", 0.0)) / 1e3
    dumped = [c for c in run.captures if c.dump_s is not None]
    busy = sum(c.dump_s or 0.0 for c in dumped if c.dumped_in == "worker")
    spent = sum(c.dump_s or 0.0 for c in dumped if c.result is not None and not c.result.cached)
    clock = run.dumps or {}
    outside = max(0.0, spent - compile_s)
    # what Triton's JIT spends on the same kernels in a GPU run (its stages, one after another in the
    # script's process), against what only irscope does (SASS, the map, binding and writing the folders)
    jit_s = sum(v for k, v in stages.items() if k not in ("sass", "map"))
    return {
        "jit_s": round(jit_s, 2),
        "irscope_only_s": round(stages.get("sass", 0.0) + stages.get("map", 0.0) + outside, 2),
        "compiled": len(compiled),
        "reused": sum(1 for c in compiled if c.result.served == "reused"),
        "from_cache": sum(1 for c in run.captures if c.result is not None and c.result.cached),
        "failed": sum(1 for c in run.captures if c.failure),
        "skipped": sum(1 for c in run.captures if c.skipped),
        "compile_s": round(compile_s, 2),
        "stages_s": {k: round(v, 2) for k, v in stages.items()},
        "outside_compile_s": round(outside, 2),
        "workers": clock.get("workers", 0),
        "waiting_on_workers_s": round(clock.get("workers_s", 0.0), 2),
        "worker_busy_s": round(busy, 2),
        "worker_idle_s": round(max(0.0, clock.get("workers", 0) * clock.get("workers_s", 0.0) - busy), 2),
        "in_process_s": round(clock.get("in_process_s", 0.0), 2),
    }


def top_kernels(run: ScriptRun, n: int = 5) -> list[dict[str, Any]]:
    """The n slowest dumps (wall seconds of each dump, its compile's and nvdisasm's part), slowest first."""
    out = []
    for cap in sorted((c for c in run.captures if c.dump_s is not None), key=lambda c: -(c.dump_s or 0.0))[:n]:
        times = (cap.result.manifest.get("times_ms") or {}) if cap.result is not None else {}
        cached = cap.result is not None and cap.result.cached
        out.append(
            {
                "kernel": cap.label,
                "folder": str(cap.result.folder) if cap.result is not None else None,
                "served": cap.result.served if cap.result is not None else "skipped" if cap.skipped else "failed",
                "dump_s": round(cap.dump_s or 0.0, 2),
                "compile_s": None if cached or not times else round(times.get("total", 0.0) / 1e3, 2),
                "sass_s": None if cached or not times else round(times.get("sass", 0.0) / 1e3, 2),
            }
        )
    return out
