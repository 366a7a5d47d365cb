"""The stand-in GPU's torch side: tensors made for "cuda" live on the CPU and say they are on cuda:0.

While `torch_on_cpu(target)` is entered, a TorchFunctionMode (CpuForCuda) makes tensors created
for "cuda" (device="cuda", .cuda(), .to("cuda"), device=0) on the CPU instead, and they say they
are on cuda:0 (.device, .is_cuda, .is_cpu, .get_device(), .type(), repr): code that branches on
`x.device.type == "cuda"` (libraries sizing a grid by the SM count do) takes its GPU path. So are
tensors made with no device= under torch.set_default_device("cuda") or `with torch.device("cuda")`,
and all of this holds in threads the script starts and in autograd backward passes.

Tensors the script makes on the CPU (no device=, .cpu(), torch.from_numpy, a DataLoader's batches)
say cpu, as on a GPU: each storage is marked with the device it was made for (marks.py). Moving
one .to("cuda") / .cuda() (Module.to too) makes a cuda copy, .cpu() of a cuda one a CPU copy; an
op's result is cuda when an input is; mixing a cuda and a CPU tensor of one dimension or more raises
torch's "Expected all tensors to be on the same device", and .numpy() of a cuda tensor its
"can't convert cuda:0 device type tensor to numpy". torch.cuda answers as a GPU of the target
would (the stand-in device interface: is_available, device count, capability and properties,
synchronize, events, streams, device contexts).

CPU allocations are 64-byte aligned, so a pointer is 16-byte aligned exactly when it would be on
the GPU (where allocations are 256-byte aligned): views at an odd offset are unaligned on both.
Everything is put back on exit, the default device included.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from irscope.adapter import runtime as triton_runtime
from irscope.kernel.targets import Target
from irscope.standin import marks, memory
from irscope.standin.bench import benchmarks_once
from irscope.standin.dispatch import cuda_registrations_on_cpu
from irscope.standin.driver import FakeDeviceInterface
from irscope.standin.identity import torch_version
from irscope.standin.layers import _is_gpu_device, _modes_off
from irscope.standin.shapes import ShapeOnly, shape_only_mode


def _default_device_probe() -> tuple[Any, Any]:
    """(the constructors torch's default device applies to, a function that returns that
    device for this thread, None when unset).

    torch.set_default_device / `with torch.device(...)` push a DeviceContext mode to the
    bottom of the thread's mode stack, under the stand-in's: it fills in device= after
    CpuForCuda has looked, so CpuForCuda must fill in the CPU first. Read from the mode
    stack, as torch.get_default_device() does (private since torch 2.0: empty if gone).
    """
    try:
        from torch.overrides import _get_current_function_mode_stack
        from torch.utils._device import DeviceContext, _device_constructors
    except ImportError:
        return frozenset(), lambda: None

    def default_device() -> Any:
        for mode in _get_current_function_mode_stack():
            if isinstance(mode, DeviceContext):
                return mode.device
        return None

    return _device_constructors(), default_device


def _cpu_mode():  # noqa: C901
    """The TorchFunctionMode that puts "cuda" tensors on the CPU (one per session)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    T = torch.Tensor
    is_cuda, is_cpu, device_of = T.is_cuda.__get__, T.is_cpu.__get__, T.device.__get__
    queries = {is_cuda, is_cpu, device_of, T.get_device, T.type}
    moves = {T.new_empty, T.new_zeros, T.new_ones, T.new_full, T.new_tensor}
    tensor_repr, tensor_format = T.__repr__, T.__format__
    cuda0, cpu = torch.device("cuda", 0), torch.device("cpu")
    constructors, default_device = _default_device_probe()
    allowed_mixes = _allowed_mixes(torch)

    def answer(func, t):
        cuda = marks.answers_cuda(t)
        if func == device_of:
            return cuda0 if cuda else cpu
        if func is T.type:
            real = func(t)
            return real.replace("torch.", "torch.cuda.", 1) if cuda else real
        if func is T.get_device:
            return 0 if cuda else -1
        return cuda if func == is_cuda else not cuda

    def _faking() -> bool:
        return any(isinstance(m, FakeTensorMode) for m in _get_current_dispatch_mode_stack())

    class CpuForCuda(TorchFunctionMode):
        """device="cuda" -> the CPU, marked cuda (marks.py); .cuda(), .to("cuda") of a CPU tensor ->
        a copy marked cuda, .cpu() of a cuda one -> a copy marked cpu; .device, .is_cuda, .is_cpu,
        .get_device(), .type() and repr() answer by the mark; an op's result takes its inputs' mark,
        and mixing a cuda and a CPU tensor raises as on a GPU. A constructor given no device while
        the default device is a GPU one (torch.set_default_device("cuda"), `with
        torch.device("cuda")`) is given the CPU too, marked cuda."""

        _irscope_standin = True  # kept out of torch.compile'd code (layers.py)

        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: C901
            kwargs = kwargs or {}
            if func is T.pin_memory:
                return args[0]
            if func in queries:
                # the mode is off inside its own handler: the tensor's own device; meta tensors
                # (FakeTensor's inner ones) keep theirs
                if device_of(args[0]).type != "cpu" or (func is T.type and (len(args) > 1 or kwargs)):
                    return func(*args, **kwargs)
                return answer(func, args[0])
            if func is tensor_format and len(args) == 2 and args[1] == "" and args[0].dim() != 0:
                func, args, kwargs = tensor_repr, args[:1], {}  # f"{x}": object.__format__ -> str(x)
            if func is tensor_repr and device_of(args[0]).type == "cpu":
                # print(x) reads as a GPU run's: torch's own formatting, with this mode back on so it
                # sees .device as the mark says and adds device='cuda:0' where a GPU run has it
                with self:
                    return torch._tensor_str._str(args[0], tensor_contents=kwargs.get("tensor_contents"))
            if func in (T.to, T.cuda, T.cpu):
                return _moved(torch, func, args, kwargs)
            if (
                func in (T.numpy, T.__array__)
                and not kwargs.get("force")
                and device_of(args[0]).type == "cpu"
                and marks.mark_of(args[0]) == marks.CUDA
            ):
                raise TypeError(
                    "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                    "tensor to host memory first."
                )
            forced = None
            device = kwargs.get("device")
            gpu_made = (
                _is_gpu_device(device)
                if device is not None
                else func in constructors and _is_gpu_device(default_device())
            )
            if gpu_made and _faking():
                # a fake tensor made for cuda (Helion's tracing, Inductor's) is metadata: it stays on
                # cuda, as on a GPU, so the generator lowers for the device the kernel runs on
                return func(*args, **kwargs)
            if device is not None:
                if _is_gpu_device(device):
                    forced, kwargs = marks.CUDA, dict(kwargs, device="cpu")
                elif getattr(torch.device(device) if isinstance(device, str) else device, "type", None) == "cpu":
                    forced = marks.CPU
            elif func in constructors and _is_gpu_device(default_device()):
                forced, kwargs = marks.CUDA, dict(kwargs, device="cpu")
            elif func in constructors and not (args and isinstance(args[0], torch.Tensor)):
                forced = marks.CPU
            if kwargs.get("pin_memory"):
                kwargs = dict(kwargs, pin_memory=False)
            if func in moves:
                args = tuple(
                    "cpu" if i > 0 and _is_gpu_device(a) and not isinstance(a, int) else a for i, a in enumerate(args)
                )
            tensors = _cpu_tensors(torch, args, kwargs)
            before = [marks.mark_of(t) for t in tensors] if len(tensors) > 1 or func is T.set_ else None
            if before is not None and func not in allowed_mixes and _checks_devices(func):
                both = marks.mixed(tensors, before)
                if both is not None:
                    raise RuntimeError(
                        "Expected all tensors to be on the same device, but found at least two "
                        f"devices, {both[0]} and {both[1]}!"
                    )
            if func in (T.__getitem__, T.__setitem__) and _faking():
                return _indexed_as_cpu(torch, func, args, kwargs)
            out = func(*args, **kwargs)
            if forced is not None:
                return _forced(out, forced, tensors)
            made = marks.outputs(out)
            if not made:
                return out  # .shape, .item(), ...: nothing to mark
            if tensors:
                marks.mark_fresh(
                    made, marks.joined(before if before is not None else [marks.mark_of(t) for t in tensors])
                )
            else:
                marks.mark_fresh(made, marks.CPU)  # torch.get_rng_state(), ...: made on the CPU
            return out

    return CpuForCuda()


def _indexed_as_cpu(torch: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    """x[i] / x[i] = v on fake cuda tensors (Helion tracing `bias[tile[0], tile[1]]` in its matmul example's
    epilogue): Python's indexing takes a device guard for the tensor's device, which a torch without CUDA
    cannot make ("PyTorch is not linked with support for cuda devices"). The fake tensors are metadata:
    they are indexed as fake CPU tensors (the same shapes, strides and dtypes) and the result is a fake
    cuda tensor again, as on a GPU."""
    from torch._subclasses.fake_tensor import FakeTensor

    fakes = [
        t
        for a in (*args, *kwargs.values())
        for t in (a if isinstance(a, (list, tuple)) else (a,))
        if isinstance(t, FakeTensor) and t.fake_device.type == "cuda"
    ]
    if not fakes:
        return func(*args, **kwargs)
    devices = [t.fake_device for t in fakes]
    cpu = torch.device("cpu")
    for t in fakes:
        t.fake_device = cpu
    try:
        out = func(*args, **kwargs)
    finally:
        for t, device in zip(fakes, devices):
            t.fake_device = device
    if isinstance(out, FakeTensor) and out.fake_device.type == "cpu":
        out.fake_device = devices[0]
    return out


def _cpu_tensors(torch: Any, args: tuple, kwargs: dict) -> list[Any]:
    """The tensors among an op's arguments (one level into lists: torch.cat's) whose own device is the CPU.

    Read with subclasses' __torch_function__ off: a tensor subclass may refuse the read (Helion's tile
    proxies raise IncorrectTileUsage for anything but indexing: `bias[tile[0], tile[1]]` in its matmul
    example's epilogue), and on a GPU nothing reads it there."""
    found = []
    with torch._C.DisableTorchFunctionSubclass():
        for a in (*args, *kwargs.values()):
            for t in a if isinstance(a, (list, tuple)) else (a,):
                if isinstance(t, torch.Tensor) and t.is_cpu:  # the mode is off here: the tensor's own
                    found.append(t)
    return found


def _forced(out: Any, mark: str, inputs: list[Any]) -> Any:
    """A factory's result made for `mark`: an output that aliases an input made for the other device
    (torch.as_tensor(t, device="cuda") of a CPU t returns t here) is copied first, as a GPU copies it."""
    made = marks.outputs(out)
    if (
        len(made) == 1
        and made[0] is out
        and any(marks.same_storage(out, t) and marks.mark_of(t) != mark for t in inputs)
    ):
        out = made[0] = out.clone()
    for t in made:
        if t.is_cpu:
            marks.set_mark(t, mark)
    return out


def _moved(torch: Any, func: Any, args: tuple, kwargs: dict) -> Any:  # noqa: C901
    """t.to(...), t.cuda(), t.cpu(): a tensor moved to the other device is a copy marked for it, as on
    a GPU; one already there is returned as it is (or converted, for a dtype)."""
    t = args[0]
    if not t.is_cpu:  # meta and fake tensors, as before marks: .cuda() leaves them be, "cuda" is the CPU
        if func is torch.Tensor.cuda:
            return t
        args = tuple("cpu" if i > 0 and _is_gpu_device(a) and not isinstance(a, int) else a for i, a in enumerate(args))
        return func(*args, **(dict(kwargs, device="cpu") if _is_gpu_device(kwargs.get("device")) else kwargs))
    here = marks.CUDA if marks.answers_cuda(t) else marks.CPU
    kw = {"non_blocking": kwargs.get("non_blocking", False), "copy": kwargs.get("copy", False)}
    if kwargs.get("memory_format") is not None:
        kw["memory_format"] = kwargs["memory_format"]
    dtype = None
    if func is torch.Tensor.cuda:
        target = marks.CUDA
    elif func is torch.Tensor.cpu:
        target = marks.CPU
    else:
        rest = list(args[1:])
        device = kwargs.get("device")
        dtype = kwargs.get("dtype")
        if rest and isinstance(rest[0], torch.Tensor):  # t.to(other): other's device and dtype
            other = rest.pop(0)
            device = (
                other.device
                if other.device.type != "cpu"
                else (torch.device("cuda", 0) if marks.answers_cuda(other) else torch.device("cpu"))
            )
            dtype = other.dtype
        elif rest and (rest[0] is None or isinstance(rest[0], (str, torch.device)) or type(rest[0]) is int):
            device = rest.pop(0)  # None: the device slot left empty (Module.to(dtype) calls t.to(None, dtype, ...))
        if rest and (rest[0] is None or isinstance(rest[0], torch.dtype)):  # Module.to passes dtype=None
            dtype = rest.pop(0)
        for name, value in zip(("non_blocking", "copy"), rest):
            kw[name] = value
        if device is None:
            target = None
        elif _is_gpu_device(device):
            target = marks.CUDA
        else:
            device = torch.device(device)
            if device.type != "cpu":  # .to("meta"): a real move, no mark
                return func(t, device=device, dtype=dtype, **kw)
            target = marks.CPU
    if target is None:
        out = func(t, dtype=dtype, **kw) if dtype is not None else func(t, **kw)
        marks.mark_fresh(out, marks.mark_of(t))
        return out
    if target != here:
        kw["copy"] = True
    out = torch.Tensor.to(t, device="cpu", dtype=dtype, **kw)
    if not marks.same_storage(out, t):  # a copy (or a dtype's conversion): made on the target
        marks.set_mark(out, target)
    return out


def _checks_devices(func: Any) -> bool:
    """Whether torch checks `func`'s tensors for one device: its ops do (add, Tensor.__add__, F.linear);
    its private helpers (torch._has_compatible_shallow_copy_type, ...) read tensors without that check."""
    name = getattr(func, "__name__", "")
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _allowed_mixes(torch: Any) -> set[Any]:
    """Functions that take a CPU tensor beside cuda ones on a GPU too: copies and assignments (the
    copy crosses devices), indexing by CPU index tensors, methods that read only another tensor's
    shape or dtype, new_* (made on self's device), autograd's entry points, and the arguments torch
    wants on the CPU (packed sequences' lengths, tensor_split's indices)."""
    T = torch.Tensor
    names = [
        "copy_",
        "__setitem__",
        "__getitem__",
        "index_put_",
        "index_put",
        "_index_put_impl_",
        "set_",
        "to",
        "view_as",
        "expand_as",
        "reshape_as",
        "type_as",
        "resize_as_",
        "new_tensor",
        "new_empty",
        "new_zeros",
        "new_ones",
        "new_full",
        "new_empty_strided",
        "new",
        "backward",
        "is_set_to",
        "tensor_split",
        "__contains__",
        "module_load",
    ]
    found = {getattr(T, n) for n in names if hasattr(T, n)}
    found |= {T.grad.__set__, T.data.__set__}
    for owner, n in (
        (torch, "tensor_split"),
        (torch, "index_put"),
        (torch, "_pack_padded_sequence"),
        (torch, "_pad_packed_sequence"),
        (torch, "equal"),
        (torch.autograd, "backward"),
        (torch.autograd, "grad"),
        (torch.nn.functional, "ctc_loss"),
        (torch, "ctc_loss"),
    ):
        if hasattr(owner, n):
            found.add(getattr(owner, n))
    return found


@contextlib.contextmanager
def _backward_in(mode) -> Iterator[None]:
    """Run autograd.Function.backward methods under `mode` too.

    The autograd engine runs a backward pass with the torch-function modes of the
    .backward() call, and that call reaches the engine from inside the mode's own
    handler, where the mode is popped: a custom Function's backward (where libraries
    allocate and launch kernels) would see real CPU devices. PyNode calls the
    backward object's `apply` attribute, so wrapping it there puts the mode back.
    """
    import torch

    cls = getattr(torch.autograd.function, "BackwardCFunction", None)
    if cls is None or not hasattr(cls, "apply"):
        yield
        return
    original = cls.apply

    def apply(self, *args):
        from torch.overrides import _get_current_function_mode_stack

        if getattr(getattr(self, "_forward_cls", None), "__module__", "").startswith("torch._functorch"):
            return _modes_off(original)(self, *args)  # a torch.compile'd backward: as its forward (layers.py)
        if any(m is mode for m in _get_current_function_mode_stack()):
            return original(self, *args)
        with mode:
            return original(self, *args)

    with triton_runtime.patched(cls, "apply", apply):
        yield


@contextlib.contextmanager
def _default_device_kept(torch: Any) -> Iterator[None]:
    """Put torch's default device back as it was: a script's set_default_device("cuda")
    would otherwise outlive the session and send irscope's own tensors to the real CUDA."""
    holder = getattr(torch, "_GLOBAL_DEVICE_CONTEXT", None)
    before = getattr(holder, "device_context", None)
    try:
        yield
    finally:
        if holder is not None and getattr(holder, "device_context", None) is not before:
            with contextlib.suppress(Exception):
                torch.set_default_device(before.device if before is not None else None)


@contextlib.contextmanager
def _in_new_threads(mode, dispatch_mode=None) -> Iterator[None]:
    """Threads started while the stand-in is up run on it too.

    torch's mode stack is per thread and a new thread starts with an empty one: its
    device="cuda" would reach the real (absent) CUDA, and tensors handed to it would say
    they are on the CPU. Thread._bootstrap_inner runs first thing in the new thread for
    every Thread, subclasses and ThreadPoolExecutor workers included (private, present in
    3.8-3.14; without it threads are left as they are).
    """
    original = getattr(threading.Thread, "_bootstrap_inner", None)
    if original is None:
        yield
        return

    def bootstrap_inner(self) -> None:
        with mode, dispatch_mode if dispatch_mode is not None else contextlib.nullcontext():
            original(self)

    with triton_runtime.patched(threading.Thread, "_bootstrap_inner", bootstrap_inner):
        yield


def _own(f: Callable[..., Any]) -> Callable[..., Any]:
    """`f` as a function object of its own (a class stays itself)."""
    if isinstance(f, type):
        return f
    return functools.wraps(f)(lambda *a, **k: f(*a, **k))


def _no_gpu_context_for_fakes(torch: Any, stack: contextlib.ExitStack) -> None:
    """A fake cuda tensor (Helion's tracing, Inductor's graphs) does not start CUDA. FakeTensor's constructor
    makes one real cuda tensor first (init_gpu_context: backward needs a context on a GPU); inside fake
    dispatch that call reaches torch's own CUDA, which a CUDA build without a visible GPU (a login node)
    answers with "No CUDA GPUs are available". Nothing here runs on a GPU: no context to make."""
    from torch._subclasses import fake_tensor

    if hasattr(fake_tensor, "init_gpu_context"):
        stack.enter_context(triton_runtime.patched(fake_tensor, "init_gpu_context", lambda device: None))


def _accelerator_answers(torch: Any, iface: FakeDeviceInterface, stack: contextlib.ExitStack) -> None:
    """torch.accelerator (torch 2.6+) answers as torch.cuda does: the chip's "cuda" device, one of it, its
    streams. Dynamo asks it for the current stream when it traces (SymbolicStreamState), and scripts ask it
    which device to use; without the stand-in it says no accelerator, or (a CUDA build with no visible
    GPU) initialises CUDA and fails. Only the names this torch has are answered."""
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:
        return
    answers: dict[str, Callable[..., Any]] = {
        "is_available": iface.is_available,
        "current_accelerator": lambda check_available=False: torch.device("cuda"),
        "device_count": iface.device_count,
        "current_device_index": iface.current_device,
        "current_device_idx": iface.current_device,
        "set_device_index": iface.set_device,
        "set_device_idx": iface.set_device,
        "current_stream": iface.current_stream,
        "set_stream": iface.set_stream,
        "synchronize": iface.synchronize,
        "device_index": iface.device,
        "empty_cache": iface.empty_cache,
        "memory_allocated": iface.memory_allocated,
        "max_memory_allocated": iface.max_memory_allocated,
        "memory_reserved": iface.memory_reserved,
        "max_memory_reserved": iface.max_memory_reserved,
        "reset_peak_memory_stats": iface.reset_peak_memory_stats,
        "get_memory_info": iface.mem_get_info,
    }
    for name, answer in answers.items():
        if hasattr(accelerator, name):
            # a function of its own: Dynamo keys handlers by the function, and torch.cuda's names already
            # hold the interface's bound methods (equal to these ones)
            own = (
                answer if isinstance(answer, type) else functools.wraps(answer)(lambda *a, _f=answer, **k: _f(*a, **k))
            )
            stack.enter_context(triton_runtime.patched(accelerator, name, own))


def _generator_class(torch: Any) -> type:
    """torch.Generator(device="cuda") (a JVP flash attention's test seeds its inputs so): a CPU torch has no
    CUDA generator. The stand-in's "cuda" tensors are drawn on the CPU, so it is a CPU generator, and its
    .device is the device it was made for, as on a GPU (the H200 answers `cuda` for device="cuda", not
    cuda:0). A subclass: isinstance(g, torch.Generator) still holds."""
    base = torch.Generator

    class Generator(base):  # type: ignore[misc, valid-type]
        def __new__(cls, device: Any = "cpu") -> Any:
            gen = super().__new__(cls, device="cpu" if _is_gpu_device(device) else device)
            gen._irscope_cuda = torch.device(device) if _is_gpu_device(device) else None
            return gen

        def __init__(self, device: Any = "cpu") -> None:
            pass

        @property
        def device(self) -> Any:
            return self._irscope_cuda if self._irscope_cuda is not None else base.device.__get__(self)

    Generator.__qualname__ = Generator.__name__ = "Generator"
    Generator.__module__ = "torch"
    return Generator


@contextlib.contextmanager
def torch_on_cpu(target: Target, shape_only: ShapeOnly | None = None) -> Iterator[None]:
    """torch as on a GPU of `target`, with tensors on the CPU (nothing to do without torch);
    with `shape_only`, ops too big for the CPU run shape-only (shapes.py) and are counted there."""
    if importlib.util.find_spec("torch") is None:
        yield
        return
    with warnings.catch_warnings():  # irscope's import, not the script's: keep torch's own noise
        warnings.simplefilter("ignore")  # (e.g. "Failed to initialize NumPy") off the script's output
        import torch

    iface = FakeDeviceInterface(target)
    memory.restart()  # the script's memory figures count from here, as a fresh process's would
    names = [
        "is_available",
        "device_count",
        "current_device",
        "set_device",
        "synchronize",
        "current_stream",
        "default_stream",
        "stream",
        "set_stream",
        "get_device_capability",
        "get_device_name",
        "get_device_properties",
        "empty_cache",
        "is_bf16_supported",
        "memory_allocated",
        "max_memory_allocated",
        "memory_reserved",
        "max_memory_reserved",
        "reset_peak_memory_stats",
        "mem_get_info",
        "Event",
        "Stream",
        "ExternalStream",
        "device",
        "device_of",
        "get_rng_state",
        "set_rng_state",
        "get_rng_state_all",
        "set_rng_state_all",
    ]
    with contextlib.ExitStack() as stack:
        for name in names:
            stack.enter_context(triton_runtime.patched(torch.cuda, name, getattr(iface, name)))
        _accelerator_answers(torch, iface, stack)
        stack.enter_context(triton_runtime.patched(torch, "Generator", _generator_class(torch)))
        _no_gpu_context_for_fakes(torch, stack)
        stack.enter_context(torch_version(torch, target))
        stack.enter_context(benchmarks_once(torch))
        stack.enter_context(cuda_registrations_on_cpu(torch))
        mode = _cpu_mode()
        big = shape_only_mode(shape_only) if shape_only is not None and shape_only.budget_s > 0 else None
        stack.enter_context(_default_device_kept(torch))
        stack.enter_context(_backward_in(mode))
        stack.enter_context(_in_new_threads(mode, big))
        stack.enter_context(mode)
        if big is not None:
            stack.enter_context(big)
        yield
