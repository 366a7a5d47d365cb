"""AOTInductor on the stand-in GPU: `torch.export` + `aoti_compile_and_package` lowered for the target's chip.

A script exports its model on the stand-in, whose "cuda" tensors are CPU tensors marked cuda
(tensors.py, marks.py): the exported graph says cuda:0 throughout (its fake tensors were made from
the marked ones). AOTInductor would then trace that graph again with AOT autograd, whose autograd
metadata for a cuda tensor needs CUDA's device guard, which a CPU build of torch does not have:
`c10::Error: PyTorch is not linked with support for cuda devices`, thrown where C++ cannot pass it
on, and the process aborts. So, as for torch.compile (layers.py), the graph is traced on the CPU
and each graph Inductor lowers is retargeted to cuda:0. When Inductor is set up, this module adds:

    compile_fx.compile_fx_aot     (every AOTI entry point reaches it) runs with the stand-in's modes
                                  off, its graph's devices and fake values moved to the CPU: AOT
                                  autograd traces CPU tensors, as it does under torch.compile
    compile_fx.fx_codegen_and_compile, in AOT mode
                                  the graph's constants (its weights: AOTI keeps them as attributes,
                                  not inputs) that the script made for cuda say cuda:0 while the
                                  graph is lowered: their fake values are cuda ones in the graph's
                                  fake mode, and a real one answers .device as cuda:0 (the retarget
                                  in layers.py does the inputs and the nodes)
    AotCodeCompiler.compile       AOTI's C++ side: the wrapper .cpp built into a .so with the CUDA
                                  toolkit's headers and linked against torch's CUDA libraries, which a
                                  CPU build of torch has not got (torch asks for CUDA_HOME, then
                                  libtorch_cuda), and a .so that could only run on a GPU. It is not
                                  run, on a CUDA build of torch either (it would take the time and
                                  give nothing to capture): once Inductor has generated and compiled
                                  every Triton kernel of the graph (AOT mode compiles them with
                                  autotune_at_compile_time: it runs their definitions as Python and
                                  launches each config once; capture records them), the call ends
                                  with AotiBuildSkipped (Inductor wraps it in its InductorError),
                                  which names the package that was not written. The script stops
                                  there, unless it falls back as it would on a machine that cannot
                                  build; a run on the GPU builds it.

AOTInductor's Python-wrapper mode (`fx_wrapper`, no C++) runs to its end.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from irscope.adapter import runtime as triton_runtime
from irscope.standin import marks
from irscope.standin.generators import aoti_call, in_process
from irscope.standin.layers import _modes_off, _standin_extra


class AotiBuildSkipped(RuntimeError):  # noqa: N818  (the script's stop, named for what happened)
    """AOTInductor's C++ build, not run on the stand-in GPU (see the module doc). An Exception, as a failed
    build is on a machine without a C++ compiler: Inductor names it in its InductorError, a script that
    falls back when AOTI fails does so here too, and the Python API's capture keeps what it captured."""


def skipped_message(package: str | None) -> str:
    where = f"the package {package} is not written" if package else "no package or library is written"
    return (
        "AOTInductor's C++ build (the .so) is not run on the stand-in GPU (it links against torch's CUDA "
        f"libraries, which a CPU build of torch has not got); its Triton kernels are generated and captured, {where}"
    )


@contextlib.contextmanager
def _graph_on_cpu(torch: Any, gm: Any) -> Iterator[None]:
    """gm's nodes say cpu where the export said cuda: device arguments, and fake values (made again in
    their own fake mode, same shape, strides and dtype). Put back on exit: the graph may be the script's
    own (`aot_compile(gm, ...)`)."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.fx.node import map_aggregate
    from torch.utils._pytree import tree_map

    cpu = torch.device("cpu")

    def on_cpu(t: Any) -> Any:
        if isinstance(t, FakeTensor) and t.device.type == "cuda":
            with t.fake_mode:
                return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=cpu)
        return t

    def device_arg(a: Any) -> Any:
        return cpu if isinstance(a, torch.device) and a.type == "cuda" else a

    saved: list[tuple[Any, Any, Any, Any]] = []
    modules = [m for m in gm.modules() if isinstance(getattr(m, "graph", None), torch.fx.Graph)]
    for module in modules:
        for node in module.graph.nodes:
            saved.append((node, node.args, node.kwargs, node.meta.get("val")))
            node.args = map_aggregate(node.args, device_arg)
            node.kwargs = map_aggregate(node.kwargs, device_arg)
            if "val" in node.meta:
                with contextlib.suppress(Exception):
                    node.meta["val"] = tree_map(on_cpu, node.meta["val"])
    _recompiled(torch, modules)
    try:
        yield
    finally:
        for node, args, kwargs, val in saved:
            node.args, node.kwargs = args, kwargs
            if val is not None:
                node.meta["val"] = val
        _recompiled(torch, modules)


def _recompiled(torch: Any, modules: list[Any]) -> None:
    for module in modules:
        if isinstance(module, torch.fx.GraphModule):
            module.recompile()


def _cuda_constants(torch: Any, gm: Any) -> list[Any]:
    """gm's real tensor attributes (parameters, buffers, constants) the script made for cuda."""
    from torch._subclasses.fake_tensor import FakeTensor

    found, seen = [], set()
    for node in gm.graph.nodes:
        if node.op != "get_attr":
            continue
        with contextlib.suppress(AttributeError):
            t = _attr(gm, node.target)
            if (
                isinstance(t, torch.Tensor)
                and not isinstance(t, FakeTensor)
                and t.device.type == "cpu"
                and marks.mark_of(t) == marks.CUDA
                and id(t) not in seen
            ):
                seen.add(id(t))
                found.append(t)
    return found


def _attr(gm: Any, target: str) -> Any:
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


@contextlib.contextmanager
def _constants_on_cuda(torch: Any, gm: Any, example_inputs: Any) -> Iterator[None]:
    """While an AOT graph is lowered: its cuda constants' fake values are cuda:0 ones (the graph's fake
    mode memoises the fake of each real tensor: set to a cuda one, kept alive here), and a real one
    answers .device, .is_cuda, .is_cpu and .get_device() as a cuda:0 tensor (Inductor reads them when it
    makes the constant buffers the C++ wrapper loads onto the device)."""
    from torch._guards import detect_fake_mode
    from torch.overrides import TorchFunctionMode

    constants = _cuda_constants(torch, gm)
    fake_mode = detect_fake_mode(example_inputs)
    if not constants or fake_mode is None:
        yield
        return
    cuda0 = torch.device("cuda", 0)
    kept = []
    for t in constants:
        with fake_mode:
            fake = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=cuda0)
        fake_mode.fake_tensor_converter.set_tensor_memo(t, fake)
        kept.append(fake)  # the memo holds its values weakly
    T = torch.Tensor
    device_of, is_cuda, is_cpu = T.device.__get__, T.is_cuda.__get__, T.is_cpu.__get__
    queries = {device_of, is_cuda, is_cpu, T.get_device}
    ids = {id(t) for t in constants}

    class ConstantsOnCuda(TorchFunctionMode):
        _irscope_standin = True

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in queries and args and id(args[0]) in ids:
                if func == device_of:
                    return cuda0
                if func is T.get_device:
                    return 0
                return func == is_cuda
            return func(*args, **(kwargs or {}))

    with ConstantsOnCuda():
        yield
    del kept


def aoti_extra(torch: Any, undo: contextlib.ExitStack) -> None:
    """What the stand-in adds for AOTInductor when Inductor is set up (see the module doc), undone by `undo`."""
    import torch._inductor.codecache as codecache
    import torch._inductor.compile_fx as compile_fx
    from torch._inductor.virtualized import V

    original_aot = compile_fx.compile_fx_aot

    def compile_fx_aot(model_, example_inputs_, *args, **kwargs):
        def on_cpu():
            with _graph_on_cpu(torch, model_):
                return original_aot(model_, example_inputs_, *args, **kwargs)

        return _modes_off(on_cpu)()

    undo.enter_context(triton_runtime.patched(compile_fx, "compile_fx_aot", compile_fx_aot))
    lowering = compile_fx.fx_codegen_and_compile  # the stand-in's retarget (layers.py), set up before

    def fx_codegen_and_compile(gm, example_inputs, *args, **kwargs):
        if not V.aot_compilation:
            return lowering(gm, example_inputs, *args, **kwargs)
        with _constants_on_cuda(torch, gm, example_inputs):
            return lowering(gm, example_inputs, *args, **kwargs)

    undo.enter_context(triton_runtime.patched(compile_fx, "fx_codegen_and_compile", fx_codegen_and_compile))
    compiler = codecache.AotCodeCompiler

    def compile(*args, **kwargs):
        call = aoti_call()
        raise AotiBuildSkipped(skipped_message(call.package if call is not None else None))

    undo.enter_context(triton_runtime.patched(compiler, "compile", staticmethod(compile)))


def _extra(torch: Any, undo: contextlib.ExitStack) -> None:
    _standin_extra(torch, undo)
    aoti_extra(torch, undo)


@contextlib.contextmanager
def generators_in_process() -> Iterator[None]:
    """Helion, Inductor and AOTInductor compile in this process, off their caches (generators.py), and
    Inductor's graphs (torch.compile's and AOTInductor's) are lowered for the target's chip, while the
    stand-in is up."""
    with in_process(_extra):
        yield
