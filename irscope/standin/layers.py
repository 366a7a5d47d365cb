"""Kernel generators on the stand-in GPU: what only the stand-in adds to Helion and Inductor.

The settings both modes share (in-process, off their caches: Helion's environment, Inductor's
compile_threads=1 and caches off) are standin/generators.py's; a real GPU run uses them alone.
On the stand-in, when Inductor is set up (the script's first torch.compile), this module adds:

    Dynamo and AOT autograd trace the stand-in's tensors as the CPU tensors they are (autograd
    needs a device it has); each graph Inductor lowers is then retargeted to cuda:0
    (_retarget_inductor), so Inductor generates Triton and the CUDA Python wrapper for the
    target's chip. The stand-in's torch-function and dispatch modes are off while a compiled
    function runs (Dynamo would otherwise trace irscope's own handlers, and skips any frame under
    a dispatch mode): inside it, the generated wrapper allocates with empty_strided_cuda, which
    makes CPU tensors here, and its kernels launch through the stand-in driver's launcher. Put
    back on exit.

AOTInductor adds its own on top (standin/aoti.py, whose generators_in_process the stand-in enters).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from irscope.adapter import runtime as triton_runtime
from irscope.standin import marks


def _is_gpu_device(d: Any) -> bool:
    if isinstance(d, str):
        return d.startswith(("cuda", "hip"))
    if isinstance(d, int) and not isinstance(d, bool):
        return True  # device=0 means cuda:0 to torch
    return type(d).__name__ == "device" and getattr(d, "type", "") == "cuda"


def _modes_off(fn):
    """`fn` run with the stand-in's torch-function and dispatch modes off the stacks (the modes
    the script pushed stay), put back after."""
    import torch
    from torch.overrides import _get_current_function_mode_stack

    @functools.wraps(fn)
    def run(*args, **kwargs):
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode, _push_mode

        tf = _get_current_function_mode_stack()
        mine = [m for m in tf if getattr(m, "_irscope_standin", False)]
        dm = _get_current_dispatch_mode_stack()
        dmine = [m for m in dm if getattr(m, "_irscope_standin", False)]
        if not mine and not dmine:
            return fn(*args, **kwargs)
        for _ in tf:
            torch._C._pop_torch_function_stack()
        for m in tf:
            if m not in mine:
                torch._C._push_on_torch_function_stack(m)
        for _ in dm:
            _pop_mode()
        for m in dm:
            if m not in dmine:
                _push_mode(m)
        try:
            return fn(*args, **kwargs)
        finally:
            for _ in _get_current_function_mode_stack():
                torch._C._pop_torch_function_stack()
            for m in tf:
                torch._C._push_on_torch_function_stack(m)
            for _ in _get_current_dispatch_mode_stack():
                _pop_mode()
            for m in dm:
                _push_mode(m)

    return run


def _outputs_marked(torch: Any, fn):
    """`fn` (a compiled function, run with the stand-in's modes off) whose fresh results say the
    device its tensor inputs say (marks.py): cuda for a model on "cuda", as its eager run does."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        out = fn(*args, **kwargs)
        with torch._C.DisableTorchFunction():
            marks.follow_inputs((*args, *kwargs.values()), out)
        return out

    return run


def _standin_extra(torch: Any, undo: contextlib.ExitStack) -> None:
    """What the stand-in adds when Inductor is set up (see the module's doc), undone by `undo`."""
    from torch._dynamo import eval_frame

    _retarget_inductor(torch, undo)
    enter = eval_frame._TorchDynamoContext.__call__

    def dynamo_call(self, fn, *args, **kwargs):  # what torch.compile'd functions and modules run
        out = enter(self, fn, *args, **kwargs)
        return out if isinstance(out, torch.nn.Module) or not callable(out) else _outputs_marked(torch, _modes_off(out))

    undo.enter_context(triton_runtime.patched(eval_frame._TorchDynamoContext, "__call__", dynamo_call))
    guards = torch._C._dynamo.guards
    cpu_empty = guards._empty_strided_cpu
    undo.enter_context(
        triton_runtime.patched(
            guards, "_empty_strided_cuda", lambda size, stride, dtype, *a: cpu_empty(size, stride, dtype)
        )
    )
    # the generated wrapper's get_raw_stream: a CPU torch has no such function, a CUDA build's asks the
    # driver for a stream (no device on a login node); the stand-in's launches need none
    if hasattr(torch._C, "_cuda_getCurrentRawStream"):
        undo.enter_context(triton_runtime.patched(torch._C, "_cuda_getCurrentRawStream", lambda device=None: 0))
    else:
        torch._C._cuda_getCurrentRawStream = lambda device=None: 0
        undo.callback(delattr, torch._C, "_cuda_getCurrentRawStream")
    # CUDA graphs (mode="reduce-overhead", "max-autotune"): Inductor asks whether the caching allocator is on
    # (a CPU torch has no such function). It is answered "off", so Inductor skips the graph capture, as it
    # does on a GPU with the allocator off: the same Triton kernels, launched one by one, none recorded into
    # a CUDA graph (the stand-in could not replay one)
    if hasattr(torch._C, "_cuda_cudaCachingAllocator_is_enabled"):
        undo.enter_context(triton_runtime.patched(torch._C, "_cuda_cudaCachingAllocator_is_enabled", lambda: False))
    else:
        torch._C._cuda_cudaCachingAllocator_is_enabled = lambda: False
        undo.callback(delattr, torch._C, "_cuda_cudaCachingAllocator_is_enabled")
    _seed_lookup_without_device_guard(torch, undo)
    _conv_layout_as_cudnn(torch, undo)
    # `~mask` on a fake cuda tensor (the decomposition of index_put(accumulate=True): nn.Embedding's
    # backward): Tensor.__invert__'s hand-written binding takes a device guard a torch without CUDA
    # cannot make; torch.bitwise_not is the same op through the generated binding, which takes none
    undo.enter_context(triton_runtime.patched(torch.Tensor, "__invert__", lambda self: torch.bitwise_not(self)))
    # t.new_empty_strided(...).copy_(t), the other new_* of a fake cuda tensor (flex_attention's fake kernel
    # makes its output so while Dynamo and Inductor trace it): their hand-written bindings take the same guard
    for name in ("new_empty_strided", "new_empty", "new_zeros", "new_ones", "new_full", "copy_"):
        method = getattr(torch.Tensor, name)
        undo.enter_context(triton_runtime.patched(torch.Tensor, name, _fake_cuda_as_cpu(torch, method)))


def _fake_cuda_as_cpu(torch: Any, method: Any) -> Any:
    """`method` of a fake cuda tensor run on it as a fake CPU tensor (the same metadata: a fake tensor has no
    data), its fake result made cuda again: a binding that takes a device guard for the tensor's device
    cannot make one for cuda in a torch without CUDA. Real tensors and explicit devices are left alone."""
    from torch._subclasses.fake_tensor import FakeTensor

    cpu = torch.device("cpu")

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(self, FakeTensor) or self.fake_device.type != "cuda" or "device" in kwargs:
            return method(self, *args, **kwargs)
        device = self.fake_device
        self.fake_device = cpu
        try:
            out = method(self, *args, **kwargs)
        finally:
            self.fake_device = device
        if isinstance(out, FakeTensor) and out.fake_device.type == "cpu":
            out.fake_device = device
        return out

    return run


def _seed_lookup_without_device_guard(torch: Any, undo: contextlib.ExitStack) -> None:
    """Dropout in a compiled graph: Inductor's meta for inductor_lookup_seed is `seeds[index].clone()`,
    and Tensor.__getitem__ takes a device guard for the (fake) cuda tensor, which a torch without CUDA
    cannot make ("PyTorch is not linked with support for cuda devices"). aten.select is the same
    value without the Python indexing path's guard."""
    from torch._prims import TensorMeta

    op = getattr(getattr(torch.ops.prims, "inductor_lookup_seed", None), "default", None)
    if op is None or not hasattr(op, "prim_meta_impl"):
        return
    meta = lambda seeds, index: TensorMeta(torch.ops.aten.select.int(seeds, 0, index).clone())
    undo.enter_context(triton_runtime.patched(op, "prim_meta_impl", meta))


def _conv_layout_as_cudnn(torch: Any, undo: contextlib.ExitStack) -> None:
    """A convolution's output layout, as cuDNN gives it on the chip. Fake tensor propagation (Inductor's
    lowering) asks torch._C._conv_determine_backend_memory_format for the backend it selected; a torch
    without cuDNN selects the slow backend for a cuda tensor, whose answer is always contiguous, where
    cuDNN answers channels-last when the input or the weight is (Inductor makes both channels-last for a
    conv net: the MNIST CNN). The layout the graph is compiled for then differs from the chip's (other
    kernels), and from what the CPU's own convolution returns when the compiled code runs
    (assert_size_stride fails). For a cuda tensor this answers cuDNN's rule
    (cudnn_conv_suggest_memory_format: float64 stays contiguous; a 4-d weight is channels-last if the input
    or the weight is, a 5-d one channels-last-3d)."""
    original = torch._C._conv_determine_backend_memory_format

    def as_cudnn(input_: Any, weight: Any, backend: Any) -> Any:
        device = getattr(input_, "fake_device", None) or getattr(input_, "device", None)
        if getattr(device, "type", None) != "cuda" or "Depthwise" in str(backend):
            return original(input_, weight, backend)
        if torch.float64 in (input_.dtype, weight.dtype):
            return torch.contiguous_format
        for ndim, fmt in ((4, torch.channels_last), (5, torch.channels_last_3d)):
            if weight.dim() == ndim and any(
                t.is_contiguous(memory_format=fmt) and not t.is_contiguous() for t in (input_, weight)
            ):
                return fmt
        return torch.contiguous_format

    undo.enter_context(triton_runtime.patched(torch._C, "_conv_determine_backend_memory_format", as_cudnn))


def _retarget_inductor(torch: Any, undo: contextlib.ExitStack) -> None:
    """Inductor lowers every graph for cuda:0 (the target's chip), though Dynamo and AOT autograd
    traced the stand-in's tensors as the CPU tensors they are (so autograd works: a CPU-only torch
    has no CUDA stream for autograd's InputMetadata).

    The seam is compile_fx.fx_codegen_and_compile, which _compile_fx_inner calls (a module global)
    for every graph after AOT autograd has partitioned the joint graph: the forward, the backward
    (compiled lazily, at the first backward) and inference graphs. There, under no_grad, the
    example inputs become fake cuda:0 tensors of the same shape, strides, offset and dtype (in the
    graph's own FakeTensorMode, so symbolic sizes stay symbolic), `device=cpu` arguments of the
    graph's nodes and the devices in node.meta["val"] become cuda:0, and the inputs Inductor
    checks for alignment are counted again for cuda. Inductor's own fake_tensor_prop then
    propagates cuda through the graph, and it picks its Triton scheduling and the CUDA Python
    wrapper; DeviceProperties (SMs, capability, warp size) come from the stand-in's torch.cuda.
    """
    import torch._inductor.compile_fx as compile_fx
    from torch._dynamo import device_interface

    cuda0 = torch.device("cuda", 0)
    original = compile_fx.fx_codegen_and_compile

    def fx_codegen_and_compile(gm, example_inputs, inputs_to_check, *args, **kwargs):
        with torch.no_grad():
            inputs = _graph_on_cuda(torch, gm, example_inputs, cuda0)
            checked = compile_fx.get_input_idxs_to_check(inputs, kwargs.get("static_input_idxs", ()))
            with _real_cuda_on_cpu(torch):
                return original(gm, inputs, checked, *args, **kwargs)

    undo.enter_context(triton_runtime.patched(compile_fx, "fx_codegen_and_compile", fx_codegen_and_compile))
    # torch._dynamo's CudaInterface bound torch.cuda's functions when it was imported (maybe before
    # the stand-in's torch.cuda was up); on a CPU-only torch its raw stream is None
    cuda_iface = device_interface.CudaInterface
    for name in (
        "current_device",
        "set_device",
        "device_count",
        "synchronize",
        "get_device_properties",
        "stream",
        "current_stream",
        "set_stream",
        "memory_allocated",
        "is_bf16_supported",
    ):
        undo.enter_context(triton_runtime.patched(cuda_iface, name, staticmethod(getattr(torch.cuda, name))))
    for name in ("Event", "Stream", "device"):
        undo.enter_context(triton_runtime.patched(cuda_iface, name, getattr(torch.cuda, name)))
    undo.enter_context(triton_runtime.patched(cuda_iface, "get_raw_stream", staticmethod(lambda index=0: 0)))
    undo.enter_context(triton_runtime.patched(cuda_iface, "exchange_device", staticmethod(lambda index: 0)))
    undo.enter_context(triton_runtime.patched(cuda_iface, "maybe_exchange_device", staticmethod(lambda index: 0)))
    device_interface.caching_worker_device_properties.pop("cuda", None)
    undo.callback(device_interface.caching_worker_device_properties.pop, "cuda", None)
    undo.enter_context(triton_runtime.patched(torch.cuda, "_DeviceGuard", _NoDeviceGuard))
    from torch._inductor.runtime import triton_helpers

    # each generated kernel module calls it: it would make NVIDIA's real driver active (no libcuda here)
    undo.enter_context(triton_runtime.patched(triton_helpers, "set_driver_to_gpu", lambda: None))


@contextlib.contextmanager
def _real_cuda_on_cpu(torch: Any) -> Iterator[None]:
    """While Inductor lowers a graph: a real (not fake) tensor made for cuda is made on the CPU.

    The stand-in's own mode is off inside compiled code (_modes_off), but max-autotune makes real
    inputs to benchmark its choices on (rand_strided(..., device="cuda")). Fake tensors (a
    FakeTensorMode on the dispatch stack) keep their cuda device: they are what Inductor lowers.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    class RealCudaOnCpu(TorchFunctionMode):
        _irscope_standin = True

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if (
                "device" in kwargs
                and _is_gpu_device(kwargs["device"])
                and not any(isinstance(m, FakeTensorMode) for m in _get_current_dispatch_mode_stack())
            ):
                kwargs = dict(kwargs, device="cpu")
            return func(*args, **kwargs)

    with RealCudaOnCpu():
        yield


class _NoDeviceGuard:
    """torch.cuda._DeviceGuard(i) of the generated wrapper: one device, nothing to exchange."""

    def __init__(self, index: int):
        self.idx = index

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _graph_on_cuda(torch: Any, gm: Any, example_inputs: Any, cuda0: Any) -> list[Any]:
    """The example inputs as fake cuda:0 tensors, and gm's nodes saying cuda:0 (see _retarget_inductor)."""
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode

    fake_mode = detect_fake_mode(example_inputs) or FakeTensorMode(allow_non_fake_inputs=True)
    made: dict[int, Any] = {}

    def on_cuda(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or t.device.type != "cpu":
            return t
        if id(t) in made:
            return made[id(t)]
        with fake_mode:
            if t.storage_offset() == 0:
                new = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=cuda0)
            else:
                base = torch.empty(t.untyped_storage().nbytes() // t.element_size(), dtype=t.dtype, device=cuda0)
                new = base.as_strided(t.shape, t.stride(), t.storage_offset())
        for attr in ("_is_inductor_static", "_dynamo_static_input_type"):
            if hasattr(t, attr):
                with contextlib.suppress(Exception):
                    setattr(new, attr, getattr(t, attr))
        made[id(t)] = new
        return new

    def device_arg(a: Any) -> Any:
        return cuda0 if isinstance(a, torch.device) and a.type == "cpu" else a

    from torch.fx.node import map_aggregate
    from torch.utils._pytree import tree_map

    for module in gm.modules():
        graph = getattr(module, "graph", None)
        if not isinstance(graph, torch.fx.Graph):
            continue
        for node in graph.nodes:
            node.args = map_aggregate(node.args, device_arg)
            node.kwargs = map_aggregate(node.kwargs, device_arg)
            if "val" in node.meta:
                with contextlib.suppress(Exception):
                    node.meta["val"] = tree_map(on_cuda, node.meta["val"])
    return [on_cuda(t) for t in example_inputs]
