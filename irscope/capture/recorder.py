"""Capture: run an unmodified script and dump every kernel it compiles.

`irscope dump SCRIPT [-- ARGS]` (no --signature/--arg/--const) runs SCRIPT as
`__main__` and records each kernel Triton compiles while it runs — plain launches,
every @triton.autotune config, .warmup, kernels reached through library calls —
with what Triton's launch binder decided for it (the specialization, constexprs and
options, through Triton's jit_cache_hook), the launch grid and the shapes, dtypes,
strides and alignment of its tensor arguments. Each capture becomes a spec file
(replayable: `irscope dump CAPTURE.json --set num_warps=8`) and is dumped like any
other kernel.

Two modes:
  gpu           the local GPU is the target: the script runs for real; compiles are
                recorded through Triton's hooks (Triton's own cache hits included),
                and for autotuned kernels the config the autotuner chose is marked.
  compile-only  no GPU here, or --target is another chip: the script runs on a
                stand-in GPU (fakegpu.py): tensors live on the CPU, kernels are bound
                for the requested target, launches are recorded and not run. Results
                are not computed, so a script's own checks may fail after its
                launches; what was captured is kept.

The pipeline: run_script (Recorder: hooks and wrappers) -> Capture records ->
prepare (spec + settings per capture, checked against the binder's decision) ->
write_specs + dump -> render (summary, --json, --stage).
"""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import json
import os
import runpy
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from irscope import jobs
from irscope.core import adapter, loader
from irscope.core.settings import (
    DERIVED_FIELDS,
    Settings,
    jsonable,
    parse_assignments,
    settable_options,
)
from irscope.core.targets import Target, local_gpu_target
from irscope.errors import BadInput, CompileFailure
from irscope.jobs import Request

TEXT_STAGES = ("ttir", "ttgir", "llir", "ptx", "amdgcn")


@dataclass
class Capture:
    """One kernel × specialization × options the script compiled (Triton's kernel-cache identity)."""

    index: int
    name: str                          # the kernel's function name
    jit: Any                           # the JITFunction
    key: str                           # Triton's kernel-cache key for the launch
    signature: dict[str, Any]          # what the binder decided (JITFunction._pack_args)
    constants: dict[tuple, Any]
    attrs: dict[tuple, Any]
    options: dict[str, Any]            # the backend options' fields, as the launch had them
    warmup: bool = False               # compiled by .warmup (no launch of its own)
    config: str | None = None          # @triton.autotune config label
    winner: bool | None = None         # the autotuner's choice (None: not measured, compile-only)
    launch: dict[str, Any] = field(default_factory=dict)   # grid, tensor shapes, scalar values
    launches: int = 0
    cache_hit: bool | None = None      # served from Triton's on-disk cache (gpu mode)
    kernel_hash: str | None = None
    asm: dict[str, str] = field(default_factory=dict)       # gpu mode: the launched kernel's text stages
    # filled by prepare():
    spec: Any = None
    settings: Settings | None = None
    problem: str | None = None         # why there is no spec (not expressible in the spec grammar)
    notes: list[str] = field(default_factory=list)
    spec_path: Path | None = None
    result: Any = None                 # dump.DumpResult
    failure: str | None = None
    skipped: str | None = None         # a config a launch would reject (OutOfResources)
    matches_launch: dict[str, bool] | None = None
    launch_options: dict[str, Any] = field(default_factory=dict)   # the options that differ from defaults
    elements: dict[str, str] = field(default_factory=dict)         # param -> spec element text

    @property
    def label(self) -> str:
        return f"{self.name} [{self.config}]" if self.config else self.name


@dataclass
class ScriptRun:
    script: Path
    args: list[str]
    target: Target
    target_reason: str
    mode: str                          # "gpu" | "compile-only"
    captures: list[Capture]
    launches: int                      # launches seen (recorded ones in compile-only mode)
    stopped: str | None = None         # why the script ended early, one line
    filtered_out: list[str] = field(default_factory=list)   # kernels --kernel left out
    script_log: Path | None = None
    threads_left: list[str] = field(default_factory=list)   # threads it started, still running at its end


# ---------------------------------------------------------------- recording


@dataclass
class _Launch:
    jit: Any
    args: tuple
    kwargs: dict[str, Any]
    grid: Any
    warmup: bool
    tuning: Any                        # _Tuning of the enclosing autotuner run, if any
    capture: Capture | None = None


@dataclass
class _Tuning:
    tuner: Any
    captures: list[Capture] = field(default_factory=list)


class Recorder:
    """The hooks and wrappers that see every compile and launch while the script runs.

    Launches may come from any thread (the hooks and wrappers are process-wide; the
    launch context is a ContextVar, so per thread): `_lock` keeps two threads compiling
    the same kernel from making two captures of it, and the counts exact.
    """

    def __init__(self, target: Target, compile_only: bool, kernel_globs: list[str]):
        self.target = target
        self.compile_only = compile_only
        self.globs = list(kernel_globs)
        self.captures: list[Capture] = []
        self.by_key: dict[tuple[int, str], Capture] = {}
        self.by_hash: dict[str, Capture] = {}
        self.filtered_out: list[str] = []
        self.launches = 0
        self._launch: contextvars.ContextVar[_Launch | None] = contextvars.ContextVar("irscope_launch", default=None)
        self._tuning: contextvars.ContextVar[_Tuning | None] = contextvars.ContextVar("irscope_tuning", default=None)
        self._tuners: dict[int, tuple[Any, dict[str, Any]]] = {}
        self.internal_error: BaseException | None = None
        self._lock = threading.Lock()

    def _guarded(self, hook):
        """A hook whose own failure is irscope's (remembered), not the script's."""
        def run(*args, **kwargs):
            try:
                return hook(*args, **kwargs)
            except Exception as e:
                if self.internal_error is None:
                    self.internal_error = e
                raise

        return run

    def wanted(self, name: str) -> bool:
        return not self.globs or any(fnmatch.fnmatchcase(name, g) for g in self.globs)

    # -- Triton's hooks

    def on_compile(self, r: dict[str, Any]) -> bool:
        """jit_cache_hook: a kernel is about to be compiled. True skips the compile and the launch."""
        jit = r["jit"]
        name = _kernel_name(jit)
        skip = self.compile_only and not r["warmup"]
        if not self.wanted(name):
            if name not in self.filtered_out:
                self.filtered_out.append(name)
            return skip
        ctx = self._launch.get()
        ident = (id(jit), r["key"])
        with self._lock:
            cap = self.by_key.get(ident)
            if cap is None:
                cap = Capture(len(self.captures) + 1, name, jit, r["key"], r["signature"], r["constants"], r["attrs"],
                              r["options"], warmup=r["warmup"])
                self.captures.append(cap)
                self.by_key[ident] = cap
                if ctx is not None and ctx.jit is jit:
                    cap.launch = _launch_record(ctx, jit)
        if ctx is not None and ctx.jit is jit:
            ctx.capture = cap
            if ctx.tuning is not None and adapter.autotuner_jit(ctx.tuning.tuner) is jit:
                cap.config = cap.config or _config_label(ctx.tuning.tuner, ctx.kwargs)
                if cap not in ctx.tuning.captures:
                    ctx.tuning.captures.append(cap)
        return skip

    def on_compiled(self, r: dict[str, Any]) -> None:
        """jit_post_compile_hook: the kernel exists (gpu mode, and .warmup in compile-only mode)."""
        cap = self.by_key.get((id(r["jit"]), r["key"]))
        if cap is None:
            return
        kernel = adapter.compiled_kernel_for(r["jit"], r["device"], r["key"])
        if kernel is None or not hasattr(kernel, "asm"):
            return
        cap.kernel_hash = getattr(kernel, "hash", None)
        if cap.kernel_hash:
            self.by_hash[cap.kernel_hash] = cap
        if not self.compile_only:
            cap.asm = {k: v for k, v in kernel.asm.items() if k in TEXT_STAGES and isinstance(v, str)}

    def on_listen(self, src, metadata, cache_hit: bool) -> None:
        """knobs.compilation.listener: whether Triton served the compile from its on-disk cache."""
        ctx = self._launch.get()
        if ctx is not None and ctx.capture is not None and getattr(src, "fn", None) is ctx.jit:
            ctx.capture.cache_hit = cache_hit

    # -- wrappers around Triton's launch paths

    def wrap_jit_run(self, original):
        rec = self

        def run(jit, *args, grid, warmup, **kwargs):
            ctx = _Launch(jit, args, dict(kwargs), grid, warmup, rec._tuning.get())
            token = rec._launch.set(ctx)
            ret = None
            try:
                ret = original(jit, *args, grid=grid, warmup=warmup, **kwargs)
                return ret
            finally:
                rec._launch.reset(token)
                cap = ctx.capture
                if cap is None and ret is not None and getattr(ret, "hash", None) in rec.by_hash:
                    cap = rec.by_hash[ret.hash]  # served from the JIT's in-memory cache
                if not warmup:
                    with rec._lock:
                        rec.launches += 1
                        if cap is not None:
                            cap.launches += 1
                            if not cap.launch.get("grid"):
                                cap.launch = _launch_record(ctx, jit)
                                cap.warmup = False

        return run

    def wrap_compiled_getitem(self, original):
        """Launches of a kernel object .warmup returned: kernel[grid](*all_args)."""
        rec = self

        def getitem(kernel, grid):
            runner = original(kernel, grid)
            cap = rec.by_hash.get(getattr(kernel, "hash", None))
            if cap is None:
                return runner

            def launch(*args, **kwargs):
                with rec._lock:
                    rec.launches += 1
                    cap.launches += 1
                    if not cap.launch.get("grid"):
                        names = [p.name for p in adapter.kernel_params(cap.jit)]
                        cap.launch = _describe(dict(zip(names, args)), cap.jit, _grid3(grid))
                return runner(*args, **kwargs)

            return launch

        return getitem

    def wrap_autotuner(self, original, final: bool):
        """Autotuner.run (final=True) and .warmup: label each config; mark the winner after a run."""
        rec = self

        def run(tuner, *args, **kwargs):
            if rec.compile_only and id(tuner) not in rec._tuners:
                # no timings here: never read or write the tuner's on-disk cache; keep its
                # in-process choices out of later sessions
                rec._tuners[id(tuner)] = (tuner, {"cache": dict(getattr(tuner, "cache", {}) or {}),
                                                  "cache_results": getattr(tuner, "cache_results", False),
                                                  "do_bench": tuner.__dict__.get("do_bench", _MISSING)})
                tuner.cache_results = False
            state = _Tuning(tuner)
            token = rec._tuning.set(state)
            try:
                return original(tuner, *args, **kwargs)
            finally:
                rec._tuning.reset(token)
                best = getattr(tuner, "best_config", None) if final else None
                if best is not None and not rec.compile_only:
                    label = _label(adapter.autotune_config_kwargs(best))
                    for cap in state.captures:
                        cap.winner = bool(cap.winner) or cap.config == label

        return run

    def restore_tuners(self) -> None:
        for tuner, saved in self._tuners.values():
            with contextlib.suppress(Exception):
                tuner.cache = saved["cache"]
                tuner.cache_results = saved["cache_results"]
                if saved["do_bench"] is _MISSING:
                    tuner.__dict__.pop("do_bench", None)
                else:
                    tuner.__dict__["do_bench"] = saved["do_bench"]

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        jit_cls = adapter.jit_function_type()
        tuner_cls = adapter.autotuner_type()
        kernel_cls = adapter.compiled_kernel_type()
        with contextlib.ExitStack() as stack:
            stack.enter_context(adapter.jit_hooks(self._guarded(self.on_compile), self._guarded(self.on_compiled),
                                                  self._guarded(self.on_listen)))
            stack.enter_context(adapter.patched(jit_cls, "run", self.wrap_jit_run(jit_cls.run)))
            stack.enter_context(adapter.patched(tuner_cls, "run", self.wrap_autotuner(tuner_cls.run, True)))
            stack.enter_context(adapter.patched(tuner_cls, "warmup", self.wrap_autotuner(tuner_cls.warmup, False)))
            stack.enter_context(adapter.patched(kernel_cls, "__getitem__",
                                                self.wrap_compiled_getitem(kernel_cls.__getitem__)))
            try:
                yield
            finally:
                self.restore_tuners()


_MISSING = object()


def _kernel_name(jit) -> str:
    fn = getattr(jit, "fn", None)
    return getattr(fn, "__name__", None) or getattr(jit, "__name__", "kernel")


def _label(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in kwargs.items())


def _config_label(tuner, launch_kwargs: dict[str, Any]) -> str | None:
    """The tuner's config whose kwargs this launch carries (the one with the most keys)."""
    best, best_n = None, -1
    for cfg in getattr(tuner, "configs", []) or []:
        ck = adapter.autotune_config_kwargs(cfg)
        try:
            hit = all(k in launch_kwargs and launch_kwargs[k] == v for k, v in ck.items())
        except Exception:
            hit = False
        if hit and len(ck) > best_n:
            best, best_n = ck, len(ck)
    return _label(best) if best is not None else None


def _grid3(grid) -> list[int] | None:
    try:
        g = [int(x) for x in grid]
    except (TypeError, ValueError):
        return None
    return (g + [1, 1, 1])[:3]


def _launch_record(ctx: _Launch, jit) -> dict[str, Any]:
    bound = _bind(jit, ctx.args, ctx.kwargs)
    grid = None
    if not ctx.warmup and ctx.grid is not None:
        try:
            grid = _grid3(ctx.grid(bound) if callable(ctx.grid) else ctx.grid)
        except Exception:
            grid = None
    return _describe(bound, jit, grid)


def _bind(jit, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Parameter -> value as the launch bound them (defaults applied), like Triton's binder."""
    sig = adapter.kernel_signature(jit)
    try:
        ba = sig.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
        ba.apply_defaults()
        return dict(ba.arguments)
    except TypeError:
        names = [p.name for p in adapter.kernel_params(jit)]
        return dict(zip(names, args))


def _describe(bound: dict[str, Any], jit, grid) -> dict[str, Any]:
    """The launch record of a spec file: grid, tensors (shape, dtype, strides, offset, alignment), scalars."""
    constexpr = {p.name for p in adapter.kernel_params(jit) if p.is_constexpr}
    args: dict[str, Any] = {}
    for name, v in bound.items():
        if name in constexpr:
            continue
        if hasattr(v, "data_ptr") and hasattr(v, "dtype"):
            args[name] = _tensor_record(v)
        elif isinstance(v, (bool, int, float)) or v is None:
            args[name] = {"value": v}
        else:
            args[name] = {"type": type(v).__name__}
    return {"grid": grid, "args": args}


def _tensor_record(t) -> dict[str, Any]:
    rec: dict[str, Any] = {"dtype": str(t.dtype).replace("torch.", "")}
    if type(t).__name__ == "MockTensor":  # .warmup(torch.float32, ...): a dtype, no tensor
        rec.update(mock=True, align=16)
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


# ---------------------------------------------------------------- running the script


def choose_mode(target_text: str | None, compile_only: bool) -> tuple[Target, str, str]:
    """(target, why it was chosen, mode): a real run only on the local GPU's own target."""
    local = local_gpu_target()
    tgt, reason = jobs.choose_target(target_text)
    real = local is not None and local == tgt and not compile_only
    return tgt, reason, "gpu" if real else "compile-only"


@contextlib.contextmanager
def _script_output(log: Path | None, keep_stdout_clean: bool) -> Iterator[None]:
    """Where the script's output goes: a log file (stdout and stderr), or stderr when
    irscope's own stdout must stay machine-readable (--json, --stage), or as it is."""
    if log is None and not keep_stdout_clean:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    sink = open(log, "w") if log is not None else None
    target_fd = sink.fileno() if sink is not None else 2
    saved = {fd: os.dup(fd) for fd in ((1, 2) if sink is not None else (1,))}
    py_out, py_err = sys.stdout, sys.stderr
    try:
        for fd in saved:
            os.dup2(target_fd, fd)
        if sink is not None:
            sys.stdout = sys.stderr = sink
        else:
            sys.stdout = sys.stderr
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdout, sys.stderr = py_out, py_err
        for fd, dup in saved.items():
            os.dup2(dup, fd)
            os.close(dup)
        if sink is not None:
            sink.close()


def run_script(script: Path, args: list[str], target: Target, target_reason: str, mode: str,
               kernel_globs: list[str], script_log: Path | None = None, quiet: bool = False,
               stand_in: bool | None = None) -> ScriptRun:
    """Run the script as __main__ with the recorder installed; the captures, and why it stopped if it did.

    `stand_in` (tests only) overrides whether the stand-in GPU is used: True with
    mode "gpu" compiles through Triton's JIT as a real run does, without a GPU.
    """
    from irscope.capture import standin as fakegpu

    script = loader.check_python_file(Path(script), "a Python script")
    rec = Recorder(target, mode == "compile-only", kernel_globs)
    use_stand_in = mode == "compile-only" if stand_in is None else stand_in
    stopped: str | None = None
    raised = False
    saved_argv, saved_path, saved_cwd = list(sys.argv), list(sys.path), os.getcwd()
    script = script.resolve()  # a script that changes directory must not move it, or the output
    folder = str(script.parent)
    threads_before = set(threading.enumerate())
    with contextlib.ExitStack() as stack:
        if use_stand_in:
            stack.enter_context(fakegpu.machine(target))
        stack.enter_context(rec.installed())
        stack.enter_context(_script_output(script_log, quiet))
        sys.argv = [str(script), *args]
        if folder not in sys.path:
            sys.path.insert(0, folder)
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as e:
            if e.code not in (0, None):
                stopped, raised = f"exited with status {e.code}", True
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # the script's own failure: reported, never an irscope crash
            stopped, raised = f"{_where(e, script)}{type(e).__name__}: {_first_line(e)}", True
        finally:
            sys.argv[:] = saved_argv
            sys.path[:] = saved_path
            os.chdir(saved_cwd)
            threads_left = [t.name for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    if rec.internal_error is not None:  # irscope's own hook failed: an irscope bug, never the script's
        raise rec.internal_error
    run = ScriptRun(script, list(args), target, target_reason, mode, rec.captures, rec.launches, stopped,
                    rec.filtered_out, script_log, threads_left)
    if not run.captures:
        if kernel_globs and rec.filtered_out:
            raise BadInput(f"{script}: no kernel the script launched matches --kernel {' '.join(kernel_globs)}; "
                           f"it launched: {', '.join(rec.filtered_out)}")
        if raised:
            raise BadInput(f"{script}: the script {_stop_phrase(stopped)} before it launched a Triton kernel")
        if threads_left:
            raise BadInput(f"{script}: ran to the end without launching a Triton kernel, but "
                           f"{_threads_note(threads_left)}")
        raise BadInput(f"{script}: ran to the end without launching a Triton kernel; to compile its kernels without "
                       f"running it, give a specialization (--signature, or --arg/--const)")
    return run


def _threads_note(names: list[str]) -> str:
    """Threads the script started that outlived it: irscope's hooks are gone once the script
    returns (Python would still wait for them; irscope does not, as an idle executor's
    workers would never end), so a kernel they launch later is not captured. Said, not dropped."""
    n = len(names)
    return (f"{n} thread{'s' if n != 1 else ''} it started {'were' if n != 1 else 'was'} still running when it ended "
            f"({', '.join(names)}): kernels launched from {'them' if n != 1 else 'it'} after that are not captured "
            f"(join threads, and shut executors down, before the script ends)")


def _stop_phrase(stopped: str | None) -> str:
    if stopped and stopped.startswith("exited"):
        return stopped
    return f"raised {stopped}"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"


def _where(e: BaseException, script: Path) -> str:
    """'script.py:42: ' for the deepest frame in the script itself."""
    try:
        target = script.resolve()
        for frame in reversed(traceback.extract_tb(e.__traceback__)):
            if Path(frame.filename).resolve() == target:
                return f"{script.name}:{frame.lineno}: "
    except OSError:
        pass
    return ""


# ---------------------------------------------------------------- captures -> specs


def prepare(run: ScriptRun, sets: list[str]) -> None:
    """Give each capture a KernelSpec and Settings; say where the spec cannot say what the launch did."""
    request = Request(Path(run.script)).with_sets(list(sets), "--set")
    for cap in run.captures:
        try:
            cap.spec, cap.settings = _spec_for(cap, run, request)
        except BadInput as e:
            cap.problem = str(e)


def _spec_for(cap: Capture, run: ScriptRun, request: Request):
    from irscope.core import compiler
    from irscope.core.spec import ArgSpec

    jit = cap.jit
    params = adapter.kernel_params(jit)
    aligns = {n: a.get("align") for n, a in (cap.launch.get("args") or {}).items() if isinstance(a, dict)}
    named, consts = [], []
    for i, p in enumerate(params):
        ty = cap.signature.get(p.name)
        path = (i,)
        if ty == "constexpr":
            value = cap.constants.get(path, p.default)
            if not p.is_constexpr and type(value) is int and value == 1:
                text = "i32:1"          # an int equal to 1, made a constant by the launch
            elif callable(value) and not type(value).__name__.endswith("Layout"):
                raise BadInput(f"{p.name} is the function {getattr(value, '__name__', value)!r}: "
                               f"a constexpr the spec grammar cannot name")
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
        else:
            raise BadInput(f"parameter {p.name} is bound as {ty!r} (a tensor descriptor, tuple or other "
                           f"argument the spec grammar has no element for)")
    file = Path(jit.fn.__code__.co_filename).resolve()
    attr = _module_attribute(jit) or cap.name
    ref = loader.KernelRef(attr, jit, file, adapter.is_gluon(jit), False)
    cap.elements = {item.partition("=")[0]: item.partition("=")[2] for item in named + consts}
    cap.elements = {p.name: cap.elements[p.name] for p in params if p.name in cap.elements}

    # options: what the launch had that the backend's defaults do not
    defaults = jsonable(adapter.make_backend(run.target).parse_options(adapter.launch_kwargs(jit, {})).__dict__)
    valid = settable_options(run.target)
    captured = {}
    for k, v in cap.options.items():
        if k in DERIVED_FIELDS or k not in valid or jsonable(v) == defaults.get(k):
            continue
        captured[k] = _tuples(v) if isinstance(defaults.get(k), list) else v
    cap.launch_options = captured
    as_launched = Settings(run.target, run.target_reason).overlay(captured, "capture")
    job = jobs.for_kernel(ref, as_launched, request, named_args=named, consts=consts)
    spec, settings = job.spec, job.settings

    # the check that makes a capture trustworthy: the spec binds as the launch did (under the
    # launch's own options; --set changes what is compiled afterwards, not what was launched)
    _, signature, constexprs, attrs = compiler.bind(spec, as_launched)
    cap.notes.extend(_binding_differences(cap, signature, constexprs, attrs))
    return spec, settings


def _constexpr_text(value: Any) -> str | None:
    """A Triton dtype as the spec grammar reads it back: tl.float16 (its .name, fp16, is no tl attribute)."""
    import triton.language as tl

    if not isinstance(value, tl.dtype):
        return None
    for name, v in vars(tl).items():
        if isinstance(v, tl.dtype) and not name.startswith("_") and v == value:
            return f"tl.{name}"
    return None


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


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
    from irscope.core.spec import ArgSpec

    notes = []
    text = lambda v: ArgSpec("constexpr", value=v).text()
    if dict(signature) != dict(cap.signature):
        diff = [f"{k}: {cap.signature.get(k)} -> {signature.get(k)}" for k in signature
                if signature.get(k) != cap.signature.get(k)]
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
            notes.append(f"{', '.join(who)}: the launch had {attr}{why}, which no spec element expresses; "
                         f"the dump compiles without it")
        for attr, who in extra.items():
            notes.append(f"{', '.join(who)}: the spec adds {attr}, which the launch did not have")
    ca = {tuple(k): text(v) for k, v in cap.constants.items()}
    cb = {tuple(k): text(v) for k, v in constexprs.items()}
    if ca != cb:
        notes.append(f"constexprs differ from the launch: {ca} vs {cb}")
    return notes


# ---------------------------------------------------------------- spec files and dumps


def spec_record(cap: Capture, run: ScriptRun) -> dict[str, Any]:
    """The spec file's `launch` record."""
    rec = dict(cap.launch)
    rec.update({
        "autotune": {"config": cap.config, "winner": cap.winner} if cap.config else None,
        "warmup": cap.warmup,
        "launches": cap.launches,
        "mode": run.mode,
        "script": str(run.script.resolve()),
        "script_args": run.args,
    })
    if cap.cache_hit is not None:
        rec["triton_cache_hit"] = cap.cache_hit
    if cap.notes:
        rec["notes"] = list(cap.notes)
    return rec


def write_specs(run: ScriptRun, out_dir: Path) -> None:
    from irscope.core.specfile import spec_document

    folder = Path(out_dir) / "captures"
    counts: dict[str, int] = {}
    for cap in run.captures:
        if cap.spec is None:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        n = counts.get(cap.spec.kernel, 0) + 1
        while (folder / f"{cap.spec.kernel}-{n}.json").exists():  # an earlier capture's: never overwritten
            n += 1
        counts[cap.spec.kernel] = n
        path = folder / f"{cap.spec.kernel}-{n}.json"
        doc = spec_document(cap.spec, run.target.name, jsonable(cap.launch_options),
                            launch=jsonable(spec_record(cap, run)))
        doc["args"] = dict(cap.elements)  # the elements build_spec read (they read back the same)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        cap.spec_path = path


def dump_all(run: ScriptRun, out_dir: Path, with_passes: bool, use_cache: bool) -> None:
    from irscope.core import dump as dump_job

    for cap in run.captures:
        if cap.spec is None:
            continue
        try:
            cap.result = dump_job.dump(cap.spec, cap.settings, out_dir, with_passes, use_cache)
        except CompileFailure as e:
            if e.stage == "resources" and cap.config:
                cap.skipped = e.reason  # the autotuner drops such a config (OutOfResources)
            else:
                cap.failure = str(e)
            continue
        cap.result.manifest.setdefault("notes", [])
        cap.result.manifest["notes"] = list(cap.result.manifest["notes"]) + [
            n for n in cap.notes if n not in cap.result.manifest["notes"]]
        if cap.asm:
            cap.matches_launch = _compare_with_launch(cap)


def _compare_with_launch(cap: Capture) -> dict[str, bool]:
    """gpu mode: the dump's stages against the kernel the script actually launched.

    Compared after irscope's normalisation (normalize.py): a dump served from irscope's
    cache may carry another path to the same source in its debug locations.
    """
    from irscope.compare.normalize import normalize

    out = {}
    m, folder = cap.result.manifest, cap.result.folder
    for stage in ("ttgir", "ptx", "amdgcn"):
        if stage in cap.asm and stage in m["stages"]:
            mine = (folder / m["stages"][stage]).read_text()
            out[stage] = normalize(stage, mine).lines == normalize(stage, cap.asm[stage]).lines
    return out


# ---------------------------------------------------------------- the command


def dump_command(file: Path, script_args: list[str], kernel_globs: list[str], target: str | None, sets: list[str],
                 out_dir: Path, no_cache: bool, stage: str | None, with_passes: bool, as_json: bool,
                 script_log: Path | None, compile_only: bool) -> int:
    """irscope dump SCRIPT [-- ARGS]: run, capture, write specs, dump, render. Returns the exit status."""
    import click

    from irscope.views import render

    tgt, reason, mode = choose_mode(target, compile_only)
    out_dir = Path(out_dir).resolve()  # the script may change directory
    _check_before_running(tgt, sets, out_dir, stage, script_log)
    run = run_script(Path(file), list(script_args), tgt, reason, mode, list(kernel_globs), script_log,
                     quiet=bool(stage or as_json))
    if run.stopped:
        why = ("in compile-only mode kernels do not run, so results the script checks are not computed"
               if run.mode == "compile-only" else "the captures up to there are kept")
        click.echo(f"irscope: the script stopped: {run.stopped} ({why}); "
                   f"{len(run.captures)} kernel{'s' if len(run.captures) != 1 else ''} captured", err=True)
    if run.threads_left:
        click.echo(f"irscope: warning: {_threads_note(run.threads_left)}", err=True)
    prepare(run, list(sets))
    write_specs(run, out_dir)
    dump_all(run, out_dir, with_passes, not no_cache)
    results = [c.result for c in run.captures if c.result is not None]

    if stage:
        shown = [r for r in results if stage in r.manifest["stages"]]
        if not shown:
            raise BadInput(f"stage {stage!r} does not exist for the captured kernels on {tgt.name}")
        render.print_stage(shown, stage)
    elif as_json:
        click.echo(as_json_doc(run, render.as_json(results)))
    else:
        summary(run, out_dir)
    for cap in run.captures:
        if cap.failure:
            click.echo(f"irscope: error: capture {cap.index} ({cap.label}): {cap.failure}", err=True)
    if not results:
        if not any(c.failure for c in run.captures):
            problems = [c.problem for c in run.captures if getattr(c, "problem", None)]
            raise BadInput(f"{file}: none of the {len(run.captures)} captured kernels can be dumped"
                           + (f": {problems[0]}" if problems else ""))
        return 1
    return 1 if any(c.failure for c in run.captures) else 0


def _check_before_running(tgt: Target, sets: list[str], out_dir: Path, stage: str | None,
                          script_log: Path | None) -> None:
    """What can be refused before the script runs is refused then: nothing written, one line."""
    options = parse_assignments(list(sets), tgt)
    try:
        adapter.make_backend(tgt).parse_options(dict(options))
    except (ValueError, AssertionError, TypeError) as e:
        raise BadInput(f"--set: rejected by Triton's {tgt.backend} backend: {str(e) or type(e).__name__}") from None
    vendor_stages = {"cuda": ("ptx", "cubin", "sass"), "hip": ("amdgcn", "hsaco")}
    other = "hip" if tgt.backend == "cuda" else "cuda"
    if stage in vendor_stages[other]:
        raise BadInput(f"--stage {stage}: {tgt.name} has no {stage} stage (its last stages: "
                       f"{', '.join(vendor_stages[tgt.backend])})")
    if out_dir.exists() and not out_dir.is_dir():
        raise BadInput(f"-o {out_dir}: is a file, not a folder")
    if script_log is not None and not Path(script_log).resolve().parent.is_dir():
        raise BadInput(f"--script-log {script_log}: its folder does not exist")


def _capture_dict(cap: Capture) -> dict[str, Any]:
    return {
        "index": cap.index,
        "kernel": cap.name,
        "config": cap.config,
        "winner": cap.winner,
        "warmup": cap.warmup,
        "launches": cap.launches,
        "grid": cap.launch.get("grid"),
        "spec": str(cap.spec_path) if cap.spec_path else None,
        "signature": cap.spec.signature_text() if cap.spec is not None else None,
        "options": jsonable(cap.launch_options),
        "triton_cache_hit": cap.cache_hit,
        "matches_launch": cap.matches_launch,
        "notes": list(cap.notes),
        "not_replayable": cap.problem,
        "skipped": cap.skipped,
        "failed": cap.failure,
        "folder": str(cap.result.folder) if cap.result is not None else None,
    }


def as_json_doc(run: ScriptRun, kernels_json: str) -> str:
    doc = json.loads(kernels_json)
    by_folder = {str(c.result.folder): c for c in run.captures if c.result is not None}
    for k in doc["kernels"]:
        cap = by_folder.get(k["folder"])
        if cap is not None:
            k["capture"] = _capture_dict(cap)
    doc["capture"] = {
        "script": str(run.script),
        "args": run.args,
        "mode": run.mode,
        "target": run.target.name,
        "target_reason": run.target_reason,
        "launches": run.launches,
        "stopped": run.stopped,
        "threads_left": run.threads_left,
        "script_log": str(run.script_log) if run.script_log else None,
        "specs": [str(c.spec_path) for c in run.captures if c.spec_path],
        "captures": [_capture_dict(c) for c in run.captures],
    }
    return json.dumps(doc, indent=1, default=str)


def summary(run: ScriptRun, out_dir: Path) -> None:
    from rich.markup import escape

    from irscope.views import render

    con = render.console()
    how = ("ran on the local GPU" if run.mode == "gpu"
           else "compile-only: launches recorded, not run")
    n = len(run.captures)
    con.print(f"[bold]capture[/bold]  {escape(str(run.script))}{' ' + escape(' '.join(run.args)) if run.args else ''}"
              f"  ->  {n} kernel{'s' if n != 1 else ''} from {run.launches} launch"
              f"{'es' if run.launches != 1 else ''} on {run.target.name} ({how})")
    if run.script_log:
        con.print(f"  script output in {escape(str(run.script_log))}")
    con.print()
    for cap in run.captures:
        bits = []
        if cap.config:
            won = {True: "  [green](chosen by the autotuner)[/green]", False: "  (not chosen)",
                   None: "  [dim](no timing in compile-only mode)[/dim]"}[cap.winner]
            bits.append(f"config {escape(cap.config)}{won}")
        grid = cap.launch.get("grid")
        if grid:
            bits.append(f"grid {tuple(grid)}")
        elif cap.warmup:
            bits.append(".warmup")
        if cap.cache_hit:
            bits.append("from Triton's cache")
        con.print(f"[bold cyan]capture {cap.index}/{n}[/bold cyan]  {escape(cap.name)}  " + "  ·  ".join(bits))
        tensors = [f"{name} {tuple(a['shape'])} {a['dtype']}" + (f" align {a['align']}" if a.get("align", 16) < 16 else "")
                   for name, a in (cap.launch.get("args") or {}).items() if isinstance(a, dict) and "shape" in a]
        if tensors:
            con.print(f"  tensors    {escape(', '.join(tensors))}")
        if cap.spec_path:
            con.print(f"  spec       {escape(str(cap.spec_path))}")
        if cap.problem:
            con.print(f"  [yellow]not dumped[/yellow] {escape(cap.problem)}")
        if cap.skipped:
            con.print(f"  [yellow]skipped[/yellow]    {escape(cap.skipped)} (the autotuner drops this config)")
        if cap.failure:
            con.print(f"  [red]failed[/red]     {escape(cap.failure)}")
        if cap.matches_launch:
            same = [s for s, ok in cap.matches_launch.items() if ok]
            diff = [s for s, ok in cap.matches_launch.items() if not ok]
            con.print(f"  launched   {'identical ' + ', '.join(same) if same else ''}"
                      f"{'; [red]differs[/red] in ' + ', '.join(diff) if diff else ''}")
        if cap.result is not None:
            render.summary([cap.result], out=con)
        else:
            con.print()
