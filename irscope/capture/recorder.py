"""The Recorder: the only code in irscope that takes Triton's hook slots while a script runs.

Like Proton's hook manager, one object owns them all, installs them together and puts them back
together (`installed()`):

    knobs.runtime.jit_cache_hook         a kernel is about to be compiled: what the launch binder
                                         decided (signature, constexprs, attributes, options); in
                                         compile-only mode it also skips the compile and the launch
    knobs.runtime.jit_post_compile_hook  the kernel exists: its hash, and (gpu mode) the stages replay checks
    knobs.compilation.listener           whether Triton served it from its on-disk cache
    JITFunction.run                      the launch: its arguments and grid (the launch record)
    Autotuner.run / .warmup              the config each compile belongs to, and the winner
    CompiledKernel.__getitem__           launches of a kernel object .warmup returned
    Inductor's compiles and launches     capture/inductor.py, once torch.compile sets Inductor up

Each compile becomes one Capture (records.py), keyed by Triton's own kernel-cache identity.
"""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from irscope import adapter
from irscope.adapter import runtime as triton_runtime
from irscope.capture.inductor import InductorHooks
from irscope.capture.records import Capture, describe, grid_3d, launch_record
from irscope.kernel.targets import Target
from irscope.records import Launch
from irscope.stages import from_triton, names
from irscope.standin.driver import placeholder_benchmark
from irscope.standin.generators import observe_inductor
from irscope.standin.interpret import benchmarking, in_benchmark

# the stages replay compares with the dump (stages.py: launch_check), by irscope name
LAUNCH_CHECKED = names(launch_check=True)


@dataclass
class _Launch:
    """One launch in progress (per thread: a ContextVar holds it)."""

    jit: Any
    args: tuple
    kwargs: dict[str, Any]
    grid: Any
    warmup: bool
    tuning: Any  # _Tuning of the enclosing autotuner run, if any
    capture: Capture | None = None


@dataclass
class _Tuning:
    """One autotuner run in progress: the captures its configs made."""

    tuner: Any
    captures: list[Capture] = field(default_factory=list)
    trial: Any = None  # the Config being benchmarked (Autotuner._bench), if any


class Recorder:
    """The hooks and wrappers that see every compile and launch while the script runs.

    Launches may come from any thread (the hooks and wrappers are process-wide; the
    launch context is a ContextVar, so per thread): `_lock` keeps two threads compiling
    the same kernel from making two captures of it, and the counts exact.
    """

    def __init__(self, target: Target, compile_only: bool, kernel_globs: list[str], executor: Any = None):
        self.target = target
        self.executor = executor  # standin.interpret.Executor: computes compile-only launches
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
        self.check_compiles = compile_only  # launches are not compiled: launch_check compiles them
        self.launch_errors: dict[int, BaseException | None] = {}  # capture index -> what its launch raises
        self.launch_check_s = 0.0  # seconds spent in launch_check's compiles to TTGIR (part of the script's time)
        self._lock = threading.Lock()
        self.inductor = InductorHooks(self)  # set up with Inductor, if the script uses torch.compile
        # (launches, captures, launches the interpreter computed or None): the progress a terminal shows
        self.on_launch: Callable[[int, int, int | None], None] | None = None
        # (capture, launches so far) after each launch or .warmup of a capture: capture/salvage.py streams it
        self.on_record: Callable[[Capture, int], None] | None = None

    def _guarded(self, hook):
        """A hook whose own failure is irscope's (remembered), not the script's."""

        def run(*args, **kwargs):
            with self._own():
                return hook(*args, **kwargs)

        return run

    @contextlib.contextmanager
    def _own(self) -> Iterator[None]:
        """irscope's own code inside a wrapper of Triton's (not the wrapped call): an exception
        raised here is irscope's, remembered as `internal_error` (the run reports it as an
        irscope error, never as the script's failure), then raised on as the script would see it."""
        try:
            yield
        except Exception as e:
            if self.internal_error is None:
                self.internal_error = e
            raise

    def wanted(self, name: str) -> bool:
        """Whether --kernel's globs (none: every kernel) take this kernel."""
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
                cap = Capture(
                    len(self.captures) + 1,
                    name,
                    jit,
                    r["key"],
                    r["signature"],
                    r["constants"],
                    r["attrs"],
                    r["options"],
                    warmup=r["warmup"],
                )
                self.captures.append(cap)
                self.by_key[ident] = cap
                if ctx is not None and ctx.jit is jit:
                    cap.launch = _record_of(ctx)
        if skip and cap.index not in self.launch_errors:
            with self._lock:
                if cap.index not in self.launch_errors:
                    failed = self.launch_errors[cap.index] = self.launch_check(r)
                    if failed is not None:
                        cap.notes.append(f"raised in the script at the launch, as a GPU would: {_one_line(failed)}")
        if ctx is not None and ctx.jit is jit:
            ctx.capture = cap
            if ctx.tuning is not None and triton_runtime.autotuner_jit(ctx.tuning.tuner) is jit:
                cap.config = cap.config or _config_label(ctx.tuning.tuner, ctx.kwargs, ctx.tuning.trial)
                if cap not in ctx.tuning.captures:
                    ctx.tuning.captures.append(cap)
        return skip

    def on_compiled(self, r: dict[str, Any]) -> None:
        """jit_post_compile_hook: the kernel exists (gpu mode, and .warmup in compile-only mode)."""
        cap = self.by_key.get((id(r["jit"]), r["key"]))
        if cap is None:
            return
        kernel = triton_runtime.compiled_kernel_for(r["jit"], r["device"], r["key"])
        if kernel is None or not hasattr(kernel, "asm"):
            return
        cap.kernel_hash = getattr(kernel, "hash", None)
        if cap.kernel_hash:
            self.by_hash[cap.kernel_hash] = cap
        if not self.compile_only:
            cap.asm = {
                from_triton(k): v
                for k, v in kernel.asm.items()
                if from_triton(k) in LAUNCH_CHECKED and isinstance(v, str)
            }

    def on_listen(self, src, metadata, cache_hit: bool) -> None:
        """knobs.compilation.listener: whether Triton served the compile from its on-disk cache."""
        ctx = self._launch.get()
        if ctx is not None and ctx.capture is not None and getattr(src, "fn", None) is ctx.jit:
            ctx.capture.cache_hit = cache_hit
        else:
            self.inductor.listened(src, cache_hit)  # a compile of Inductor's (CachingAutotuner._precompile_config)

    # -- wrappers around Triton's launch paths

    def wrap_jit_run(self, original):
        """JITFunction.run: the launch context the hooks read, and the launch counts."""
        rec = self

        def run(jit, *args, grid, warmup, **kwargs):
            ctx = _Launch(jit, args, dict(kwargs), grid, warmup, rec._tuning.get())
            token = rec._launch.set(ctx)
            ret = None
            number = 0
            try:
                ret = original(jit, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                rec._launch.reset(token)
            failed = rec.launch_errors.get(ctx.capture.index) if ctx.capture is not None else None
            if failed is not None:  # the compile a GPU launch runs fails: the launch raises, in the script
                raise failed.with_traceback(None)
            with rec._own():
                number = rec._count_jit_launch(ctx, ret, warmup)
            if number and rec.compile_only and rec.executor is not None:
                rec.executor.launch(jit, number, args, kwargs, grid)  # the results the script checks
            return ret

        return run

    def launch_check(self, r: dict[str, Any]) -> BaseException | None:
        """Compile-only: the compile this launch would run on a GPU, as far as TTGIR; the error it
        raises (None: it compiles that far), which the launch then raises in the script.

        Compile-only mode skips the launch's compile, so a kernel that cannot be compiled for the
        target (a block pointer under Triton 3.9, whose make_block_ptr raises) would otherwise let
        the script go on. The front end, TTIR and TTGIR are where such errors arise (Python-level
        and legality ones) and cost ~10% of a compile (0.05 s of 0.6 s for a matmul, 3.6 and 3.9);
        LLIR, PTX and the cubin are left to the dump, which reports a failure there. Run once per
        capture (Triton's kernel-cache key), so a kernel launched a thousand times is checked
        once, and the launch then raises what the check raised, as a GPU's JIT raises at every
        launch of a kernel that does not compile. An error irscope's own check causes (the
        options not read back) is not the compiler's: the launch goes on, the dump decides."""
        if not self.check_compiles:
            return None
        try:
            src = adapter.make_source(r["jit"], r["signature"], r["constants"], r["attrs"])
        except Exception:  # noqa: BLE001  not buildable here: the dump says why
            return None
        started = time.perf_counter()
        try:
            return _compile_to_ttgir(src, self.target, r["options"])
        finally:
            self.launch_check_s += time.perf_counter() - started

    def count_launch(self, cap: Capture, args: tuple, grid: Any) -> int:
        """One more launch of `cap` with these positional kernel arguments: its number in the run; the
        first launch of a capture gives its launch record (grid, argument shapes)."""
        with self._lock:
            self.launches += 1
            cap.launches += 1
            cap.timed_launches += in_benchmark()
            if not cap.launch.get("grid"):
                names = [p.name for p in adapter.kernel_params(cap.jit)]
                cap.launch = describe(dict(zip(names, args)), cap.jit, grid)
            self._said()
            number = self.launches
        self._recorded(cap, number)
        return number

    def _said(self) -> None:
        """The progress hears the counts (under the lock: they are exact)."""
        if self.on_launch is not None:
            stats = getattr(self.executor, "stats", None)
            self.on_launch(self.launches, len(self.captures), stats.computed if stats is not None else None)

    def _count_jit_launch(self, ctx: _Launch, ret: Any, warmup: bool) -> int:
        """After JITFunction.run: the launch counted (its number; 0 for a .warmup), its capture's record."""
        cap = ctx.capture
        if cap is None and ret is not None and getattr(ret, "hash", None) in self.by_hash:
            cap = self.by_hash[ret.hash]  # served from the JIT's in-memory cache
        if warmup:
            self._recorded(cap, self.launches)
            return 0
        with self._lock:
            self.launches += 1
            if cap is not None:
                cap.launches += 1
                cap.timed_launches += in_benchmark()
                if not cap.launch.get("grid"):
                    cap.launch = _record_of(ctx)
                    cap.warmup = False
            self._said()
            number = self.launches
        self._recorded(cap, number)
        return number

    def _recorded(self, cap: Capture | None, number: int) -> None:
        """on_record hears a capture launched (or warmed up); its failure is irscope's, never the script's."""
        if cap is not None and self.on_record is not None:
            with self._own():
                self.on_record(cap, number)

    def wrap_compiled_getitem(self, original):
        """Launches of a kernel object .warmup returned: kernel[grid](*all_args)."""
        rec = self

        def getitem(kernel, grid):
            runner = original(kernel, grid)
            with rec._own():
                key = getattr(kernel, "hash", None)
                cap = rec.by_hash.get(key) if key is not None else None
            if cap is None:
                return runner

            def launch(*args, **kwargs):
                with rec._own():
                    number = rec.count_launch(cap, args, grid_3d(grid))
                ret = runner(*args, **kwargs)
                if rec.compile_only and rec.executor is not None:
                    rec.executor.launch(cap.jit, number, tuple(args), {}, grid)
                return ret

            return launch

        return getitem

    def wrap_autotuner(self, original, final: bool):
        """Autotuner.run (final=True) and .warmup: label each config; mark the winner after a run."""
        rec = self

        def run(tuner, *args, **kwargs):
            outer = rec._tuning.get()
            if outer is not None and outer.tuner is tuner:  # a subclass's run calling the base's
                return original(tuner, *args, **kwargs)
            if rec.compile_only and id(tuner) not in rec._tuners:
                with rec._own():
                    rec._take_tuner(tuner)
            state = _Tuning(tuner)
            token = rec._tuning.set(state)
            try:
                return original(tuner, *args, **kwargs)
            finally:
                rec._tuning.reset(token)
                if final and not rec.compile_only:
                    with rec._own():
                        rec._mark_winner(tuner, state)

        return run

    def _take_tuner(self, tuner) -> None:
        """Compile-only: no timings here, so never read or write the tuner's on-disk cache; keep its
        in-process choices out of later sessions; every trial is one recorded call (a custom
        do_bench or use_cuda_graph's included). Only what Triton's Autotuner defines is read: a
        library's own cache object (FlagGems' ConfigCache: __getitem__, no keys()) is not ours to
        copy or iterate, so it is left as it is."""
        cache = getattr(tuner, "cache", None)
        self._tuners[id(tuner)] = (
            tuner,
            {
                "cache": dict(cache) if isinstance(cache, dict) else _MISSING,
                "cache_results": getattr(tuner, "cache_results", False),
                "do_bench": tuner.__dict__.get("do_bench", _MISSING),
            },
        )
        tuner.cache_results = False
        with contextlib.suppress(Exception):
            tuner.__dict__["do_bench"] = placeholder_benchmark

    @staticmethod
    def _mark_winner(tuner, state: _Tuning) -> None:
        """gpu mode, after Autotuner.run: which of its captures is the config it chose."""
        best = getattr(tuner, "best_config", None)
        if best is not None:
            label = _label(triton_runtime.autotune_config_kwargs(best))
            for cap in state.captures:
                cap.winner = bool(cap.winner) or cap.config == label

    def wrap_bench(self, original):
        """Autotuner._bench: the Config each trial launches (pruning may have made it anew)."""
        rec = self

        def bench(tuner, *args, config, **meta):
            state = rec._tuning.get()
            if state is None or state.tuner is not tuner:
                return original(tuner, *args, config=config, **meta)
            before, state.trial = state.trial, config
            try:
                if rec.compile_only:
                    return original(tuner, *args, config=config, **meta)
                with benchmarking():  # a GPU trial's launches are timed ones, not the script's own
                    return original(tuner, *args, config=config, **meta)
            finally:
                state.trial = before

        return bench

    @contextlib.contextmanager
    def _subclasses_wrapped(self, tuner_cls) -> Iterator[None]:
        """Autotuner subclasses the script defines (FlagGems' LibTuner) that override run, warmup or
        _bench get the same wrappers, so their configs are labelled too; put back on exit."""
        rec, done = self, []
        previous = tuner_cls.__dict__.get("__init_subclass__")

        def init_subclass(cls, **kwargs):
            super(tuner_cls, cls).__init_subclass__(**kwargs)
            with rec._own():
                wrap_subclass(cls)

        def wrap_subclass(cls):
            for name, wrap in (
                ("run", lambda f: rec.wrap_autotuner(f, True)),
                ("warmup", lambda f: rec.wrap_autotuner(f, False)),
                ("_bench", rec.wrap_bench),
            ):
                if name in cls.__dict__:
                    done.append((cls, name, cls.__dict__[name]))
                    setattr(cls, name, wrap(cls.__dict__[name]))

        tuner_cls.__init_subclass__ = classmethod(init_subclass)
        try:
            yield
        finally:
            if previous is None:
                del tuner_cls.__init_subclass__
            else:
                tuner_cls.__init_subclass__ = previous
            for cls, name, fn in done:
                setattr(cls, name, fn)

    def restore_tuners(self) -> None:
        """Give the autotuners compile-only mode touched their caches and settings back."""
        for tuner, saved in self._tuners.values():
            with contextlib.suppress(Exception):
                if saved["cache"] is not _MISSING:
                    tuner.cache = saved["cache"]
                tuner.cache_results = saved["cache_results"]
                if saved["do_bench"] is _MISSING:
                    tuner.__dict__.pop("do_bench", None)
                else:
                    tuner.__dict__["do_bench"] = saved["do_bench"]

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """All of Triton's hook slots and wrapped launch paths taken, and put back on exit."""
        jit_cls = adapter.jit_function_type()
        tuner_cls = triton_runtime.autotuner_type()
        kernel_cls = triton_runtime.compiled_kernel_type()
        with contextlib.ExitStack() as stack:
            stack.enter_context(
                triton_runtime.jit_hooks(
                    self._guarded(self.on_compile), self._guarded(self.on_compiled), self._guarded(self.on_listen)
                )
            )
            stack.enter_context(triton_runtime.patched(jit_cls, "run", self.wrap_jit_run(jit_cls.run)))
            stack.enter_context(triton_runtime.patched(tuner_cls, "run", self.wrap_autotuner(tuner_cls.run, True)))
            stack.enter_context(
                triton_runtime.patched(tuner_cls, "warmup", self.wrap_autotuner(tuner_cls.warmup, False))
            )
            stack.enter_context(triton_runtime.patched(tuner_cls, "_bench", self.wrap_bench(tuner_cls._bench)))
            stack.enter_context(self._subclasses_wrapped(tuner_cls))
            stack.enter_context(
                triton_runtime.patched(kernel_cls, "__getitem__", self.wrap_compiled_getitem(kernel_cls.__getitem__))
            )
            stack.enter_context(observe_inductor(self.inductor.installed))
            try:
                yield
            finally:
                self.restore_tuners()


_MISSING = object()


class _Checked(BaseException):
    """Raised at the first stage after TTGIR of a launch check: it compiled that far."""


_check_lock = threading.Lock()  # one check at a time: the stage wrap patches triton.compile's make_backend


def _compile_to_ttgir(src: Any, target: Target, options: dict[str, Any]) -> BaseException | None:
    """triton.compile(src) for `target`, stopped after its TTGIR stage: the error the front end,
    TTIR or TTGIR raised, or None. Only this thread's compile is stopped (a .warmup in another
    thread compiles on), and the stages are wrapped without Triton's inspection-hook knob, which
    would change other threads' kernel-cache keys; Triton's cache is not read, and nothing reaches
    its index (the compile never finishes)."""
    me = threading.get_ident()
    ran_stage = []

    def wrap(name: str, fn):
        def run(*args):
            if threading.get_ident() != me:
                return fn(*args)
            if from_triton(name) not in _CHECKED_STAGES:
                raise _Checked()
            ran_stage.append(name)
            return fn(*args)

        return run

    opts = {k: tuple(v) if isinstance(v, list) else v for k, v in (options or {}).items()}
    with _check_lock, adapter.stages_of_compiles_wrapped(wrap), adapter.fresh_compile():
        try:
            adapter.compile(src, target, opts)
        except _Checked:
            return None
        except adapter.compile_error_types() as e:  # the front end's (CompilationError and subclasses)
            return e
        except Exception as e:  # noqa: BLE001  a stage's own failure is the compiler's; anything else is not
            return e if ran_stage else None
    return None


_CHECKED_STAGES = frozenset(names(language="mlir"))  # a launch check runs the MLIR stages, not LLVM's on


def _one_line(e: BaseException) -> str:
    text = str(e).strip()
    line = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "") if text else ""
    return f"{type(e).__name__}: {line}"[:300]


def _record_of(ctx: _Launch) -> Launch:
    return launch_record(ctx.jit, ctx.args, ctx.kwargs, ctx.grid, ctx.warmup)


def _kernel_name(jit) -> str:
    fn = getattr(jit, "fn", None)
    return str(getattr(fn, "__name__", None) or getattr(jit, "__name__", "kernel"))


def _label(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in kwargs.items())


def _config_label(tuner, launch_kwargs: dict[str, Any], trial: Any = None) -> str | None:
    """The config this launch is: the one being benchmarked, or the tuner's choice for the final
    launch, or else the config of the tuner's list whose kwargs it carries (the one with the most
    keys). Configs early_config_prune made anew (changed num_stages, say) are labelled as launched."""
    candidates = [c for c in (trial, getattr(tuner, "best_config", None)) if c is not None]
    candidates += list(getattr(tuner, "configs", []) or [])
    best, best_n = None, -1
    for cfg in candidates:
        ck = triton_runtime.autotune_config_kwargs(cfg)
        try:
            hit = all(k in launch_kwargs and launch_kwargs[k] == v for k, v in ck.items())
        except Exception:  # noqa: BLE001  a kwarg that cannot be compared matches nothing
            hit = False
        if hit and len(ck) > best_n:
            best, best_n = ck, len(ck)
    return _label(best) if best is not None else None
