"""Which of the stand-in GPU's CPU tensors stand for cuda ones, and which are the script's CPU tensors.

Every tensor on the stand-in lives on the CPU; what it answers for `.device` depends on what it was
made for. The mark is kept on the tensor's storage (torch keeps one Python object per storage, so an
attribute set on it lives as long as the memory): views, `.data`, `.detach()`, nn.Parameter and a
`param.data = t` assignment (Module.to) all share a storage, so they answer alike with no bookkeeping,
and a storage freed takes its mark with it.

    "cuda"  made for the GPU (device="cuda", .cuda(), .to("cuda"), the default device, an op over
            cuda tensors): answers cuda:0, mixing it with a CPU tensor raises as on a GPU
    "cpu"   made for the CPU (a factory with no device, .cpu(), an op over CPU tensors): answers cpu
    None    of no known origin (made where the stand-in does not look: inside a compiled function,
            by autograd's engine): answers cuda:0, as every tensor did before marks, and is never
            said to be mixed. Memory torch did not allocate itself (torch.from_numpy, frombuffer: a
            storage that cannot be resized) is host memory on a GPU too: "cpu".

Callers run with torch's function modes off (inside a mode's handler, or under DisableTorchFunction):
the queries here must see the tensors' own devices.
"""

from __future__ import annotations

from typing import Any

from irscope.standin import memory

ATTR = "_irscope_device"
CUDA, CPU = "cuda", "cpu"


def _storage(t: Any) -> Any:
    """t's storage, or None (sparse, nested and wrapper tensors have none to mark)."""
    try:
        return t.untyped_storage()
    except Exception:  # noqa: BLE001  no storage: such tensors stay of no known origin
        return None


def mark_of(t: Any) -> str | None:
    """ "cuda", "cpu" or None (no known origin) for a tensor whose own device is the CPU."""
    s = _storage(t)
    if s is None:
        return None
    mark = getattr(s, ATTR, None)
    if mark is None:
        try:
            if not s.resizable():
                return CPU  # numpy's or a buffer's memory, not torch's allocator
        except Exception:  # noqa: BLE001, S110  an odd storage: no known origin
            pass
    return mark


def set_mark(t: Any, mark: str) -> None:
    """Mark t's storage (and so every tensor sharing it) as made for `mark`."""
    s = _storage(t)
    if s is not None:
        was = getattr(s, ATTR, None)
        try:
            setattr(s, ATTR, mark)
        except Exception:  # noqa: BLE001, S110  a storage that takes no attribute: left unmarked
            return
        if mark == CUDA and was != CUDA:  # memory made for the GPU: torch.cuda.memory_allocated counts it
            memory.current().add(s)


def answers_cuda(t: Any) -> bool:
    """A CPU tensor answers cuda:0 unless it was made for the CPU."""
    return mark_of(t) != CPU


def same_storage(a: Any, b: Any) -> bool:
    sa, sb = _storage(a), _storage(b)
    return sa is not None and sa is sb


def joined(marks: list[str | None]) -> str | None:
    """The device an op's result is made on, from its tensor inputs' marks: cuda if any input is
    (a 0-dim CPU tensor mixes into a cuda op); of no known origin if any input is; else cpu."""
    if CUDA in marks:
        return CUDA
    if None in marks or not marks:
        return None
    return CPU


def mixed(tensors: list[Any], marks: list[str | None]) -> tuple[str, str] | None:
    """(first device, other device) when the inputs mix a cuda tensor and a CPU tensor of one
    dimension or more, as torch's device check refuses on a GPU; None when they do not. Tensors of
    no known origin never count."""
    if CUDA not in marks or CPU not in marks:
        return None
    if not any(m == CPU and t.dim() > 0 for t, m in zip(tensors, marks)):
        return None
    first = next(m for t, m in zip(tensors, marks) if m == CUDA or (m == CPU and t.dim() > 0))
    return ("cuda:0", "cpu") if first == CUDA else ("cpu", "cuda:0")


def outputs(out: Any) -> list[Any]:
    """The tensors an op returned (a tensor, or a tuple or list of them, one level down)."""
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and not isinstance(out, torch.Size):
        return [o for o in out if isinstance(o, torch.Tensor)]
    return []


def mark_fresh(out: Any, mark: str | None) -> None:
    """Give `mark` to each CPU output whose storage has no mark yet (a view or an in-place result
    keeps the mark of the storage it shares)."""
    if mark is None:
        return
    for t in outputs(out):
        if t.is_cpu:
            s = _storage(t)
            if s is not None and getattr(s, ATTR, None) is None:
                set_mark(t, mark)


def follow_inputs(inputs: Any, out: Any) -> None:
    """Mark a compiled function's fresh outputs from its tensor inputs (see joined)."""
    import torch

    flat = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    tensors = [a for a in flat if isinstance(a, torch.Tensor) and a.is_cpu]
    if tensors:
        mark_fresh(out, joined([mark_of(t) for t in tensors]))
