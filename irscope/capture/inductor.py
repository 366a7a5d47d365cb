"""The Triton kernels torch.compile (Inductor) generates, captured like any kernel's.

Inductor never launches through JITFunction.run: each generated kernel is a CachingAutotuner
(torch/_inductor/runtime/triton_heuristics.py) around a JITFunction, and
CachingAutotuner._precompile_config compiles one config with
`triton.compile(ASTSource(fn, signature, constants, attrs), target=..., options=...)`; a launch
calls the CompiledKernel's runner (CompiledKernel.run: an instance of the active driver's
launcher_cls). Once Inductor is set up (standin/generators.py: observe_inductor; in both modes,
with Inductor in-process and off its caches), `InductorHooks` takes:

    compile_fx.fx_codegen_and_compile    the graph being lowered: forward / backward / inference
                                         and Inductor's graph id (AOT autograd's graph_kwargs)
    GraphLowering.compile_to_module      the generated wrapper .py of that graph (its
                                         "# Source node to ATen node mapping" comments)
    PythonWrapperCodegen._format_kernel_definition
                                         each kernel's definition with its comments, as text: a C++
                                         wrapper's (AOTInductor's, whose kernels Inductor compiles and
                                         launches once by running these as Python) and an FX
                                         wrapper's are never a file
    CachingAutotuner._precompile_config  each config compiled: a Capture with what
                                         triton.compile was given (signature, constexprs by
                                         parameter, attrs, options), labelled with the config
                                         when the kernel has several or is a template; gpu mode:
                                         the binary's text stages (replay checks its dump against
                                         them) and whether Triton's disk cache served it
    launcher_cls.__call__                a launch: grid and arguments recorded (the first one is
                                         the capture's launch record). On the stand-in the
                                         driver's _Launcher (keyed by metadata), whose launch is
                                         then computed by Triton's interpreter on the CPU tensors;
                                         on a GPU the real driver's (CudaLauncher), keyed by the
                                         kernel's CUfunction handle, which runs it
  stand-in only:
    CachingAutotuner.bench, Benchmarker.benchmark_gpu
                                         Inductor's timings (its autotuner's, and max-autotune's
                                         choice between templates and extern kernels): one call,
                                         recorded, not computed, and a placeholder time: the
                                         stand-in's timings are not real, so its choice is not a GPU's
  gpu mode only:
    CachingAutotuner.run                 once a kernel with several configs is down to one
                                         launcher, that config (the one Inductor launched) is
                                         marked as the winner, as the Triton autotuner's choice is

A private API this torch lacks is skipped and said in the notes (torch 2.11 and 2.13 have them all).

After each graph, each of its captures gets `generated_by`: {"layer": "inductor" (or "aoti": lowered
by AOTInductor, with "aoti": {"entry", "package", "package_written"}: the function the script called
and the .pt2 it asked for, or the path the call returned; standin/generators.py's AotiCall), "category"
(pointwise, reduction, persistent_reduction, template, ...: the heuristic its decorator names),
"kernel_name", "aten_ops" (the "Original ATen: [...]" comment Inductor wrote above the kernel),
"source_nodes" (its "Source node to ATen node mapping"), "graph" {"kind", "id"}, "generated_file"
(the kernel's own .py, which is the dump's source file), "wrapper_file"}.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from irscope import adapter
from irscope.adapter import runtime as triton_runtime
from irscope.capture.inductor_origins import config_label, generated_by
from irscope.capture.records import Capture
from irscope.compile import compiler
from irscope.stages import from_triton, names
from irscope.standin import driver as standin_driver
from irscope.standin import generators
from irscope.standin.driver import PLACEHOLDER_MS
from irscope.standin.interpret import benchmarking

LAUNCH_CHECKED = names(launch_check=True)  # the stages replay compares with the dump (gpu mode)


class InductorHooks:
    """Inductor's compiles and launches, recorded into the Recorder's captures (see the module doc)."""

    def __init__(self, recorder: Any):
        self.rec = recorder
        self._graph: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
            "irscope_inductor_graph", default=None
        )
        self._by_metadata: dict[int, tuple[Any, Capture]] = {}  # id(CompiledKernel.metadata) -> capture
        self._pending: list[tuple[Capture, Any, dict[str, Any] | None]] = []
        self._binaries: weakref.WeakSet = weakref.WeakSet()
        self._wrappers: list[tuple[str, dict[str, Any]]] = []  # every graph's wrapper .py, with its graph
        self._by_function: dict[Any, Capture] = {}  # a real driver's CUfunction handle -> capture
        self._unbound: list[tuple[Any, Capture]] = []  # (binary, capture) not yet launched (gpu mode)
        self._by_tuner: dict[int, tuple[Any, list[tuple[Any, Capture]]]] = {}  # its configs' captures
        self._decided: set[int] = set()  # autotuners whose launched config is marked (gpu mode)
        self._listened: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
            "irscope_inductor_listen", default=None
        )
        self.missing: list[str] = []  # Inductor's private APIs this torch lacks (said in the notes)
        self.on_standin = False  # set up on the stand-in GPU (else: a real GPU run)
        self.graphs = 0  # graphs Inductor lowered
        self.aoti_graphs = 0  # of those, lowered by AOTInductor
        self._aoti: list[tuple[Capture, Any]] = []  # AOTI's captures and their AotiCall (package known at its end)
        self.benchmarked = 0  # Inductor timings answered with the placeholder
        self.compile_s = 0.0  # seconds in Inductor's own compiles of its kernels (_precompile_config), in the script

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import torch._inductor.compile_fx as compile_fx
        from torch._inductor.graph import GraphLowering
        from torch._inductor.runtime import triton_heuristics as th

        tuner = th.CachingAutotuner
        launcher = _active_launcher_cls()
        self.on_standin = launcher is standin_driver._Launcher
        with contextlib.ExitStack() as stack:
            # private APIs of Inductor: each one checked, and a missing one said in the notes
            if callable(getattr(compile_fx, "fx_codegen_and_compile", None)):
                stack.enter_context(
                    triton_runtime.patched(
                        compile_fx, "fx_codegen_and_compile", self._wrap_graph(compile_fx.fx_codegen_and_compile)
                    )
                )
            else:
                self.missing.append("torch._inductor.compile_fx.fx_codegen_and_compile (graph kinds)")
            if callable(getattr(GraphLowering, "compile_to_module", None)):
                stack.enter_context(
                    triton_runtime.patched(
                        GraphLowering, "compile_to_module", self._wrap_module(GraphLowering.compile_to_module)
                    )
                )
            else:
                self.missing.append("GraphLowering.compile_to_module (wrapper files, ATen ops)")
            self._hook_kernel_definitions(stack)
            if "_precompile_config" in vars(tuner):
                stack.enter_context(
                    triton_runtime.patched(
                        tuner, "_precompile_config", self._wrap_precompile(vars(tuner)["_precompile_config"])
                    )
                )
            else:
                self.missing.append("CachingAutotuner._precompile_config (every Inductor compile)")
            if self.on_standin:
                self._placeholders(stack, tuner)
            else:
                if "bench" in vars(tuner):  # its trials' launches are timed ones, not the model's
                    stack.enter_context(triton_runtime.patched(tuner, "bench", _benchmarked(vars(tuner)["bench"])))
                if "run" in vars(tuner):
                    stack.enter_context(triton_runtime.patched(tuner, "run", self._wrap_run(vars(tuner)["run"])))
            if launcher is not None and callable(getattr(launcher, "__call__", None)):  # noqa: B004 (the slot it patches)
                stack.enter_context(triton_runtime.patched(launcher, "__call__", self._wrap_launch(launcher.__call__)))
            else:
                self.missing.append("the active Triton driver's launcher_cls (launch grids)")
            try:
                yield
            finally:
                self.label_pending()
                self._packages()
                if self.on_standin:
                    for binary in list(self._binaries):  # the stand-in's module handles: nothing to unload
                        with contextlib.suppress(Exception):  # later, once its driver is gone
                            binary.module = None

    def _hook_kernel_definitions(self, stack: contextlib.ExitStack) -> None:
        """Each kernel definition Inductor writes (its comments name the ATen ops), kept with the graph: a C++
        wrapper's (AOTInductor's) and an FX wrapper's are never a file irscope could read them from."""
        from torch._inductor.codegen.wrapper import PythonWrapperCodegen

        original = vars(PythonWrapperCodegen).get("_format_kernel_definition")
        if not isinstance(original, staticmethod):
            self.missing.append("PythonWrapperCodegen._format_kernel_definition (AOTInductor's ATen ops)")
            return
        format_definition = original.__func__
        hooks = self

        def formatted(*args, **kwargs):
            body = format_definition(*args, **kwargs)
            graph = hooks._graph.get()
            if graph is not None and isinstance(body, str):
                graph.setdefault("kernel_defs", []).append(re.sub(r"^// ", "# ", body, flags=re.M))
            return body

        stack.enter_context(
            triton_runtime.patched(PythonWrapperCodegen, "_format_kernel_definition", staticmethod(formatted))
        )

    def _packages(self) -> None:
        """AOTInductor's captures given their package, now that the calls that made them have returned."""
        for cap, call in self._aoti:
            if cap.generated_by is not None:
                cap.generated_by["aoti"] = {
                    "entry": call.entry,
                    "package": call.package,
                    "package_written": bool(call.built),
                }

    def _placeholders(self, stack: contextlib.ExitStack, tuner: Any) -> None:
        """The stand-in's timings: Inductor's autotuner and max-autotune's benchmarks get a placeholder."""
        from torch._inductor.runtime import benchmarking as inductor_bench

        if "bench" in vars(tuner):
            stack.enter_context(triton_runtime.patched(tuner, "bench", _benchmarked(vars(tuner)["bench"])))
        for cls in type(inductor_bench.benchmarker).__mro__:
            if "benchmark_gpu" in vars(cls):
                stack.enter_context(
                    triton_runtime.patched(
                        cls, "benchmark_gpu", lambda bench, fn, *a, **k: self._placeholder_benchmark(fn)
                    )
                )

    def notes(self) -> list[str]:
        """What irscope changed in Inductor, and (stand-in) what differs from a GPU, one line each."""
        out = [f"irscope could not hook Inductor's {m} in this torch" for m in self.missing]
        if not self.graphs:
            return out
        who = "AOTInductor" if self.aoti_graphs == self.graphs else "torch.compile and AOTInductor (Inductor)"
        if not self.aoti_graphs:
            who = "torch.compile (Inductor)"
        if (note := generators.settings_note(self.graphs, who)) is not None:  # never None: graphs were lowered
            out.append(note)
        unbuilt = {call.package: call for _, call in self._aoti if not call.built}
        if unbuilt and self.on_standin:
            named = ", ".join(p for p in unbuilt if p)
            what = f"its package ({named}) is not written" if named else "no package or library is written"
            out.append(
                f"AOTInductor generated and compiled its Triton kernels here, but its C++ build (the .so, which "
                f"links against torch's CUDA libraries) is not run on the stand-in GPU: the script stops there, "
                f"and {what}; a run on the GPU builds it"
            )
        if self.benchmarked:
            out.append(
                f"Inductor's {self.benchmarked} timing{'s' if self.benchmarked != 1 else ''} (its autotuner's "
                f"configs, max-autotune's choices) are placeholders ({PLACEHOLDER_MS:g} ms each), not "
                f"measurements: every candidate is compiled and captured, but the one it picked is not a GPU's pick"
            )
        return out

    def _placeholder_benchmark(self, _callable) -> float:
        """Benchmarker.benchmark_gpu on the stand-in: one call (its launches recorded, not computed) and a
        placeholder time, the same for every choice, so Inductor keeps its first: not a measurement."""
        self.benchmarked += 1
        with benchmarking():
            _callable()
        return PLACEHOLDER_MS

    # -- the graph being lowered

    def _wrap_graph(self, original):
        hooks = self

        def fx_codegen_and_compile(gm, example_inputs, *args, **kwargs):
            kind = "backward" if kwargs.get("is_backward") else "inference" if kwargs.get("is_inference") else "forward"
            graph: dict[str, Any] = {"kind": kind, "id": kwargs.get("graph_id")}
            call = generators.aoti_call()
            if call is not None and _aot_compilation():
                graph["aoti_call"] = call
                hooks.aoti_graphs += 1
            with contextlib.suppress(Exception):
                import torch._guards

                cid = torch._guards.CompileContext.current_compile_id()
                if cid is not None:
                    graph["compile_id"] = str(cid)
            hooks.graphs += 1
            token = hooks._graph.set(graph)
            try:
                return original(gm, example_inputs, *args, **kwargs)
            finally:
                hooks._graph.reset(token)
                hooks.label_pending()

        return fx_codegen_and_compile

    def _wrap_module(self, original):
        hooks = self

        def compile_to_module(graph_lowering, *args, **kwargs):
            mod = original(graph_lowering, *args, **kwargs)
            graph = hooks._graph.get()
            if graph is not None and getattr(mod, "__file__", None):
                graph.setdefault("wrappers", []).append(str(mod.__file__))
                hooks._wrappers.append((str(mod.__file__), graph))
            return mod

        return compile_to_module

    # -- each config compiled

    def _wrap_precompile(self, original):
        hooks = self

        def precompile_config(autotuner, cfg, *args, **kwargs):
            listened: dict[str, Any] = {"fn": getattr(autotuner, "fn", None)}
            token = hooks._listened.set(listened)
            started = time.perf_counter()
            # compile-only: the compile recorded as a dump records one, so the dump takes it (same Triton
            # hash) rather than compiling again; a real run's dumps compile anew, checked against the launch
            recorder = compiler.CompileRecorder() if hooks.rec.compile_only else None
            try:
                with recorder.watching() if recorder is not None else contextlib.nullcontext():
                    result = original(autotuner, cfg, *args, **kwargs)
            finally:
                hooks._listened.reset(token)
                hooks.compile_s += time.perf_counter() - started
            try:
                prebuilt = recorder.prebuilt(getattr(result, "kernel", None)) if recorder is not None else None
                hooks._captured(autotuner, cfg, result, listened.get("cache_hit"), prebuilt)
            except Exception as e:  # noqa: BLE001  irscope's own failure: remembered, never the script's
                if hooks.rec.internal_error is None:
                    hooks.rec.internal_error = e
            return result

        return precompile_config

    def listened(self, src: Any, cache_hit: bool) -> bool:
        """knobs.compilation.listener outside a JIT launch (the Recorder's on_listen): whether the
        compile Inductor is making was served from Triton's on-disk cache. True when it was Inductor's."""
        listened = self._listened.get()
        if listened is None or getattr(src, "fn", None) is not listened["fn"]:
            return False
        listened["cache_hit"] = cache_hit
        return True

    def _captured(
        self, autotuner: Any, cfg: Any, result: Any, cache_hit: bool | None = None, prebuilt: Any = None
    ) -> None:
        binary = getattr(result, "kernel", None)
        meta = getattr(result, "compile_meta", None) or {}
        jit = adapter.unwrap_kernel(getattr(autotuner, "fn", None))
        if jit is None or binary is None:
            return
        with contextlib.suppress(TypeError):
            self._binaries.add(binary)
        name = getattr(jit.fn, "__name__", None) or "kernel"
        if not self.rec.wanted(name):
            if name not in self.rec.filtered_out:
                self.rec.filtered_out.append(name)
            return
        names = list(jit.arg_names)
        constants = {}
        for k, v in (meta.get("constants") or {}).items():
            if isinstance(k, str) and k in names:
                constants[(names.index(k),)] = v
            elif isinstance(k, tuple):
                constants[k] = v
        attrs = dict((meta.get("configs") or [{}])[0] or {})
        signature = dict(meta.get("signature") or {})
        for path in constants:  # constexprs are in the signature, as the binder puts them
            if len(path) == 1 and path[0] < len(names):
                signature.setdefault(names[path[0]], "constexpr")
        signature = {n: signature[n] for n in names if n in signature}
        options = self._options(autotuner, cfg, meta)
        key = f"inductor:{getattr(binary, 'hash', id(binary))}"
        rec = self.rec
        with rec._lock:
            ident = (id(jit), key)
            cap = rec.by_key.get(ident)
            if cap is None:
                cap = Capture(len(rec.captures) + 1, name, jit, key, signature, constants, attrs, options)
                cap.config = config_label(autotuner, cfg, jit)
                cap.kernel_hash = getattr(binary, "hash", None)
                cap.prebuilt = prebuilt
                rec.captures.append(cap)
                rec.by_key[ident] = cap
            self._by_metadata[id(binary.metadata)] = (binary.metadata, cap)
            self._pending.append((cap, autotuner, self._graph.get()))
            tuned = self._by_tuner.setdefault(id(autotuner), (autotuner, []))[1]
            if all(c is not cap for _, c in tuned):
                tuned.append((cfg, cap))
            if not rec.compile_only:
                self._unbound.append((binary, cap))
                if cache_hit is not None:
                    cap.cache_hit = cache_hit
                if not cap.asm:  # the launched kernel's text stages, which replay checks its dump against
                    cap.asm = {
                        from_triton(k): v
                        for k, v in (getattr(binary, "asm", None) or {}).items()
                        if from_triton(k) in LAUNCH_CHECKED and isinstance(v, str)
                    }

    def _options(self, autotuner: Any, cfg: Any, meta: dict[str, Any]) -> dict[str, Any]:
        """The backend options' fields, as triton.compile had them (Inductor's options, parsed)."""
        make = getattr(autotuner, "_create_compile_options", None)  # private: absent in some torch releases
        if callable(make):
            opts = make(cfg, meta)
        else:  # the options _precompile_config passes, from the config and compile_meta
            opts = {k: v for k, v in meta.items() if k in ("num_warps", "num_stages", "num_ctas", "debug")}
            opts.update({k: getattr(cfg, k) for k in ("num_warps", "num_stages") if hasattr(cfg, k)})
        try:
            return dict(adapter.make_backend(self.rec.target).parse_options(dict(opts)).__dict__)
        except Exception:  # noqa: BLE001  an option this backend does not take: the plain ones
            return {k: v for k, v in opts.items() if k in ("num_warps", "num_stages", "num_ctas", "debug")}

    # -- launches

    def _wrap_launch(self, original):
        """The driver's launcher (the stand-in's _Launcher, or a real driver's, e.g. CudaLauncher, which
        CompiledKernel.run is): launcher(gridX, gridY, gridZ, stream, function, packed metadata, launch
        metadata, enter hook, exit hook, *kernel args). The first launch of each capture gives its launch record."""
        hooks = self

        def launch(launcher, *args, **kwargs):
            ret = original(launcher, *args, **kwargs)
            if len(args) < 9:
                return ret
            try:
                cap = hooks._capture_of(launcher, args[4])
                if cap is None:
                    return ret
                grid = [int(g) for g in args[:3]]
                call_args = tuple(args[9:])
                rec = hooks.rec
                number = rec.count_launch(cap, call_args, grid)
            except Exception as e:  # noqa: BLE001  irscope's own failure: remembered, never the script's
                if hooks.rec.internal_error is None:
                    hooks.rec.internal_error = e
                return ret
            if rec.compile_only and rec.executor is not None:
                rec.executor.launch(cap.jit, number, call_args, {}, tuple(grid))
            return ret

        return launch

    def _capture_of(self, launcher: Any, function: Any) -> Capture | None:
        """The capture a driver launch is of: by the launcher's metadata (the stand-in's _Launcher keeps
        it), else by the kernel's function handle (set on the CompiledKernel when its handles were loaded)."""
        metadata = getattr(launcher, "metadata", None)
        if metadata is not None:
            entry = self._by_metadata.get(id(metadata))
            return entry[1] if entry is not None and entry[0] is metadata else None
        if function is None or isinstance(function, bool):
            return None
        with contextlib.suppress(TypeError):
            cap = self._by_function.get(function)
            if cap is not None:
                return cap
            for i, (binary, c) in enumerate(self._unbound):
                if vars(binary).get("function") == function:
                    del self._unbound[i]
                    self._by_function[function] = c
                    return c
        return None

    def _wrap_run(self, original):
        """CachingAutotuner.run (gpu mode): once a kernel with several configs has one launcher left, the
        config it launched is marked as the chosen one (as the Triton autotuner's best_config is)."""
        hooks = self

        def run(autotuner, *args, **kwargs):
            ret = original(autotuner, *args, **kwargs)
            if id(autotuner) not in hooks._decided:
                try:
                    hooks._mark_launched(autotuner)
                except Exception as e:  # noqa: BLE001  irscope's own failure: remembered, never the script's
                    if hooks.rec.internal_error is None:
                        hooks.rec.internal_error = e
            return ret

        return run

    def _mark_launched(self, autotuner: Any) -> None:
        launchers = list(getattr(autotuner, "launchers", None) or [])
        if len(launchers) != 1:
            return
        self._decided.add(id(autotuner))
        chosen = getattr(launchers[0], "config", None)
        tuned = self._by_tuner.get(id(autotuner), (None, []))[1]
        if chosen is None or len(tuned) < 2:
            return
        with self.rec._lock:
            for cfg, cap in tuned:
                cap.winner = bool(cap.winner) or cfg is chosen or _same_config(cfg, chosen)

    # -- what made each kernel

    def label_pending(self) -> None:
        """generated_by for the captures of graphs that are done (their wrapper is written)."""
        pending, self._pending = self._pending, []
        for cap, autotuner, graph in pending:
            if graph is None:  # compiled outside a graph's lowering (at its first launch): the wrapper naming it
                graph = self._graph_naming(cap)
            if cap.generated_by is None or cap.generated_by.get("graph") is None and graph is not None:
                cap.generated_by = generated_by(cap, autotuner, graph)
                call = (graph or {}).get("aoti_call")
                if call is not None and all(c is not cap for c, _ in self._aoti):
                    self._aoti.append((cap, call))

    def _graph_naming(self, cap: Capture) -> dict[str, Any] | None:
        code = getattr(getattr(cap.jit, "fn", None), "__code__", None)
        if code is None:
            return None
        line = f"# kernel path: {code.co_filename}"
        for path, graph in self._wrappers:
            with contextlib.suppress(OSError):
                if line in Path(path).read_text():
                    return graph
        return None


def _same_config(a: Any, b: Any) -> bool:
    """Two Inductor (Triton) Configs alike: kwargs, warps, stages."""
    return all(getattr(a, k, None) == getattr(b, k, None) for k in ("kwargs", "num_warps", "num_stages", "num_ctas"))


def _aot_compilation() -> bool:
    """Whether Inductor is lowering for AOTInductor (V.aot_compilation), False where this torch cannot say."""
    with contextlib.suppress(Exception):
        from torch._inductor.virtualized import V

        return bool(V.aot_compilation)
    return False


def _active_launcher_cls() -> Any:
    """The active Triton driver's launcher class (what CompiledKernel.run is an instance of), or None."""
    with contextlib.suppress(Exception):
        from triton.runtime import driver

        cls = getattr(driver.active, "launcher_cls", None)
        return cls if isinstance(cls, type) else None
    return None


def _benchmarked(original):
    """CachingAutotuner.bench: its launches are benchmark ones (on the stand-in: recorded, not computed;
    on a GPU: counted apart from the model's own launches)."""

    def bench(autotuner, *args, **kwargs):
        with benchmarking():
            return original(autotuner, *args, **kwargs)

    return bench
