"""The Triton kernels torch.compile (Inductor) generates, captured like any kernel's.

Inductor never launches through JITFunction.run: each generated kernel is a CachingAutotuner
(torch/_inductor/runtime/triton_heuristics.py) around a JITFunction, and
CachingAutotuner._precompile_config compiles one config with
`triton.compile(ASTSource(fn, signature, constants, attrs), target=..., options=...)`; a launch
calls the CompiledKernel's runner, which on the stand-in GPU is the driver's _Launcher. So, once
Inductor is set up on the stand-in (standin/layers.py: observe_inductor), `InductorHooks` takes:

    compile_fx.fx_codegen_and_compile    the graph being lowered: forward / backward / inference
                                         and Inductor's graph id (AOT autograd's graph_kwargs)
    GraphLowering.compile_to_module      the generated wrapper .py of that graph (its
                                         "# Source node to ATen node mapping" comments)
    CachingAutotuner._precompile_config  each config compiled: a Capture with what
                                         triton.compile was given (signature, constexprs by
                                         parameter, attrs, options), labelled with the config
                                         when the kernel has several or is a template
    CachingAutotuner.bench, Benchmarker.benchmark_gpu
                                         Inductor's timings (its autotuner's, and max-autotune's
                                         choice between templates and extern kernels): one call,
                                         recorded, not computed, and a placeholder time: the
                                         stand-in's timings are not real, so its choice is not a GPU's
    _Launcher.__call__                   a launch: grid and arguments recorded, then computed
                                         by Triton's interpreter on the stand-in's CPU tensors

After each graph, each of its captures gets `generated_by`: {"layer": "inductor", "category"
(pointwise, reduction, persistent_reduction, template, ...: the heuristic its decorator names),
"kernel_name", "aten_ops" (the "Original ATen: [...]" comment Inductor wrote above the kernel),
"source_nodes" (its "Source node to ATen node mapping"), "graph" {"kind", "id"}, "generated_file"
(the kernel's own .py, which is the dump's source file), "wrapper_file"}.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from irscope import adapter
from irscope.adapter import runtime as triton_runtime
from irscope.capture.records import Capture, describe
from irscope.standin import driver as standin_driver
from irscope.standin.driver import PLACEHOLDER_MS
from irscope.standin.interpret import benchmarking

_ATEN = re.compile(r"Original ATen:\s*\[(?P<ops>[^\]]*)\]")
_CONSTEXPR = re.compile(r"^\s+(?P<name>[A-Za-z_]\w*)\s*:\s*tl\.constexpr\s*=\s*(?P<value>.+?)\s*$", re.M)


class InductorHooks:
    """Inductor's compiles and launches, recorded into the Recorder's captures (see the module doc)."""

    def __init__(self, recorder: Any):
        self.rec = recorder
        self._graph: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
            "irscope_inductor_graph", default=None)
        self._by_metadata: dict[int, tuple[Any, Capture]] = {}   # id(CompiledKernel.metadata) -> capture
        self._pending: list[tuple[Capture, Any, dict[str, Any] | None]] = []
        self._binaries: weakref.WeakSet = weakref.WeakSet()
        self._wrappers: list[tuple[str, dict[str, Any]]] = []   # every graph's wrapper .py, with its graph
        self.graphs = 0                 # graphs Inductor lowered
        self.benchmarked = 0            # Inductor timings answered with the placeholder

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import torch._inductor.compile_fx as compile_fx
        from torch._inductor.graph import GraphLowering
        from torch._inductor.runtime import benchmarking as inductor_bench
        from torch._inductor.runtime import triton_heuristics as th

        tuner = th.CachingAutotuner
        with contextlib.ExitStack() as stack:
            stack.enter_context(triton_runtime.patched(
                compile_fx, "fx_codegen_and_compile", self._wrap_graph(compile_fx.fx_codegen_and_compile)))
            stack.enter_context(triton_runtime.patched(
                GraphLowering, "compile_to_module", self._wrap_module(GraphLowering.compile_to_module)))
            stack.enter_context(triton_runtime.patched(
                tuner, "_precompile_config", self._wrap_precompile(vars(tuner)["_precompile_config"])))
            stack.enter_context(triton_runtime.patched(tuner, "bench", _benchmarked(vars(tuner)["bench"])))
            for cls in type(inductor_bench.benchmarker).__mro__:
                if "benchmark_gpu" in vars(cls):
                    stack.enter_context(triton_runtime.patched(
                        cls, "benchmark_gpu", lambda bench, fn, *a, **k: self._placeholder_benchmark(fn)))
            launcher = standin_driver._Launcher
            stack.enter_context(triton_runtime.patched(launcher, "__call__", self._wrap_launch(launcher.__call__)))
            try:
                yield
            finally:
                self.label_pending()
                for binary in list(self._binaries):  # the stand-in's module handles: nothing to unload
                    with contextlib.suppress(Exception):     # later, once its driver is gone
                        binary.module = None

    def notes(self) -> list[str]:
        """What differs from Inductor on a GPU, one line each (the summary's notes)."""
        if not self.graphs:
            return []
        out = [f"torch.compile (Inductor) lowered {self.graphs} graph{'s' if self.graphs != 1 else ''} in this process "
               f"for the target (compile_threads=1: no worker processes; its FX graph, AOT autograd and autotune "
               f"caches off, so every kernel was generated and compiled here, none served from a cache)"]
        if self.benchmarked:
            out.append(f"Inductor's {self.benchmarked} timing{'s' if self.benchmarked != 1 else ''} (its autotuner's "
                       f"configs, max-autotune's choices) are placeholders ({PLACEHOLDER_MS:g} ms each), not "
                       f"measurements: every candidate is compiled and captured, but the one it picked is not a GPU's pick")
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
            graph = {"kind": kind, "id": kwargs.get("graph_id")}
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
            result = original(autotuner, cfg, *args, **kwargs)
            try:
                hooks._captured(autotuner, cfg, result)
            except Exception as e:  # noqa: BLE001  irscope's own failure: remembered, never the script's
                if hooks.rec.internal_error is None:
                    hooks.rec.internal_error = e
            return result

        return precompile_config

    def _captured(self, autotuner: Any, cfg: Any, result: Any) -> None:
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
        for path in constants:          # constexprs are in the signature, as the binder puts them
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
                cap.config = _config_label(autotuner, cfg, jit)
                cap.kernel_hash = getattr(binary, "hash", None)
                rec.captures.append(cap)
                rec.by_key[ident] = cap
            self._by_metadata[id(binary.metadata)] = (binary.metadata, cap)
            self._pending.append((cap, autotuner, self._graph.get()))

    def _options(self, autotuner: Any, cfg: Any, meta: dict[str, Any]) -> dict[str, Any]:
        """The backend options' fields, as triton.compile had them (Inductor's options, parsed)."""
        opts = autotuner._create_compile_options(cfg, meta)
        try:
            return dict(adapter.make_backend(self.rec.target).parse_options(dict(opts)).__dict__)
        except Exception:  # noqa: BLE001  an option this backend does not take: the plain ones
            return {k: v for k, v in opts.items() if k in ("num_warps", "num_stages", "num_ctas", "debug")}

    # -- launches

    def _wrap_launch(self, original):
        hooks = self

        def launch(launcher, *args, **kwargs):
            ret = original(launcher, *args, **kwargs)
            entry = hooks._by_metadata.get(id(getattr(launcher, "metadata", None)))
            if entry is None or entry[0] is not launcher.metadata or len(args) < 9:
                return ret
            cap = entry[1]
            grid = [int(g) for g in args[:3]]
            call_args = tuple(args[9:])
            rec = hooks.rec
            with rec._lock:
                rec.launches += 1
                number = rec.launches
                cap.launches += 1
                if not cap.launch.get("grid"):
                    names = [p.name for p in adapter.kernel_params(cap.jit)]
                    cap.launch = describe(dict(zip(names, call_args)), cap.jit, grid)
            if rec.compile_only and rec.executor is not None:
                rec.executor.launch(cap.jit, number, call_args, {}, tuple(grid))
            return ret

        return launch

    # -- what made each kernel

    def label_pending(self) -> None:
        """generated_by for the captures of graphs that are done (their wrapper is written)."""
        pending, self._pending = self._pending, []
        for cap, autotuner, graph in pending:
            if graph is None:   # compiled outside a graph's lowering (at its first launch): the wrapper naming it
                graph = self._graph_naming(cap)
            if cap.generated_by is None or cap.generated_by.get("graph") is None and graph is not None:
                cap.generated_by = generated_by(cap, autotuner, graph)

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


def generated_by(cap: Capture, autotuner: Any, graph: dict[str, Any] | None) -> dict[str, Any]:
    """What Inductor says made this kernel (see the module doc)."""
    meta = dict(getattr(autotuner, "inductor_meta", None) or {})
    heuristic = getattr(autotuner, "heuristic_type", None)
    category = getattr(heuristic, "name", None)
    kernel_name = meta.get("kernel_name")
    if not isinstance(kernel_name, str) or kernel_name.startswith("Placeholder."):
        kernel_name = cap.name   # a template candidate's benchmark module: Inductor names it triton_<template>
    code = getattr(getattr(cap.jit, "fn", None), "__code__", None)
    generated = str(Path(code.co_filename).resolve()) if code is not None else None
    wrappers = list((graph or {}).get("wrappers") or [])
    aten, nodes, wrapper = [], [], None
    for path in ([generated] if generated else []) + wrappers:   # a template's benchmark module, then the graph's
        aten, nodes = kernel_origins(path, kernel_name)
        if aten:
            wrapper = path if path != generated else None
            break
    out = {"layer": "inductor", "category": category.lower() if isinstance(category, str) else None,
           "kernel_name": kernel_name, "aten_ops": aten, "source_nodes": nodes,
           "graph": {k: v for k, v in (graph or {}).items() if k != "wrappers"} or None,
           "generated_file": generated, "wrapper_file": wrapper or (wrappers[0] if wrappers else None)}
    if out["category"] == "template" and not kernel_name.startswith("triton_tem_"):
        # a candidate max-autotune benchmarks, in a module of its own: select_algorithm names its kernel
        # triton_<template name> and writes no ATen comment (the one it picks is triton_tem_..., which has one)
        out["template"] = cap.name[len("triton_"):] if cap.name.startswith("triton_") else cap.name
    if cap.config:
        out["config"] = cap.config
    return out


def kernel_origins(path: str, kernel: str) -> tuple[list[str], list[str]]:
    """The ATen ops ("Original ATen: [...]") and "Source node to ATen node mapping" lines Inductor
    wrote for `kernel` in a generated file: the comment block above `kernel = async_compile.triton(`
    in a wrapper, or the module's header comments in a template's benchmark module."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return [], []
    define = re.compile(rf"^{re.escape(kernel)}\s*=\s*async_compile\.triton\(")
    end = next((i for i, line in enumerate(lines) if define.match(line)), None)
    if end is None:   # no definition here: the header of a module that is the kernel's own
        end = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")), len(lines))
    start = end
    while start > 0 and (lines[start - 1].startswith("#") or not lines[start - 1].strip()):
        start -= 1
        if lines[start].startswith("# kernel path:"):
            break
    block = lines[start:end]
    aten: list[str] = []
    for line in block:
        m = _ATEN.search(line)
        if m:
            aten += [op.strip() for op in m["ops"].split(",") if op.strip() and op.strip() not in aten]
    nodes, inside = [], False
    for line in block:
        if line.startswith("# Source node to ATen node mapping"):
            inside = True
            continue
        if inside:
            if not line.startswith("#   "):
                break
            nodes.append(line[1:].strip())
    return aten, nodes


def _config_label(autotuner: Any, cfg: Any, jit: Any) -> str | None:
    """A config label, as an autotune config's: the config's kwargs and warps/stages when the kernel has
    several configs; a template's constexprs (written into its body) always."""
    heuristic = getattr(getattr(autotuner, "heuristic_type", None), "name", "")
    items: dict[str, Any] = {}
    if heuristic == "TEMPLATE":
        for m in _CONSTEXPR.finditer(getattr(jit, "src", "") or ""):
            items[m["name"]] = m["value"]
    elif len(getattr(autotuner, "configs", None) or []) > 1:
        items.update(getattr(cfg, "kwargs", {}) or {})
    else:
        return None
    items["num_warps"] = getattr(cfg, "num_warps", None)
    items["num_stages"] = getattr(cfg, "num_stages", None)
    return ", ".join(f"{k}={v}" for k, v in items.items())


def _benchmarked(original):
    """CachingAutotuner.bench: its launches are recorded, not computed."""

    def bench(autotuner, *args, **kwargs):
        with benchmarking():
            return original(autotuner, *args, **kwargs)

    return bench
