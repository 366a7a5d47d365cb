"""Ops a library registers for torch's CUDA dispatch key reach the stand-in GPU's tensors.

The stand-in's tensors are CPU tensors (tensors.py), so torch dispatches them to CPU kernels: a
library that puts its Triton kernels under the CUDA key (`flag_gems.use_gems()`:
`torch.library.Library("aten", "IMPL").impl(op, fn, "CUDA")`; `torch.library.impl(op, "cuda")`,
`register_kernel(op, "cuda")`) would never be called. While the stand-in is up, each such
registration is made for the CPU key too (AutogradCUDA -> AutogradCPU), in a Library of the
stand-in's own, destroyed on exit: torch's CPU kernels are back as they were.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from irscope.adapter import runtime as triton_runtime

_KEYS = {"CUDA": "CPU", "AutogradCUDA": "AutogradCPU", "cuda": "cpu"}


@contextlib.contextmanager
def cuda_registrations_on_cpu(torch: Any) -> Iterator[None]:
    """Library.impl / torch.library.impl / register_kernel for CUDA also register for the CPU."""
    lib_cls = getattr(torch.library, "Library", None)
    if lib_cls is None or not hasattr(lib_cls, "impl"):
        yield
        return
    shadows: dict[tuple[str, str], Any] = {}
    original_impl = lib_cls.impl

    def impl(self, op_name, fn, dispatch_key="", *args, **kwargs):
        ret = original_impl(self, op_name, fn, dispatch_key, *args, **kwargs)
        cpu = _KEYS.get(dispatch_key)
        if cpu is not None and self not in shadows.values():
            key = (self.ns, getattr(self, "kind", "IMPL"))
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": meant
                shadow = shadows.get(key)
                if shadow is None:
                    shadow = shadows[key] = lib_cls(self.ns, "IMPL")
                original_impl(shadow, op_name, fn, cpu, *args, **kwargs)
        return ret

    def device_types_too(original):
        def register(op, device_types=None, *args, **kwargs):
            types = [device_types] if isinstance(device_types, str) else list(device_types or [])
            if "cuda" in types and "cpu" not in types:
                types.append("cpu")
            return original(op, types if device_types is not None else device_types, *args, **kwargs)

        return register

    with contextlib.ExitStack() as stack:
        stack.enter_context(triton_runtime.patched(lib_cls, "impl", impl))
        for name in ("register_kernel",):
            if hasattr(torch.library, name):
                stack.enter_context(
                    triton_runtime.patched(torch.library, name, device_types_too(getattr(torch.library, name)))
                )
        try:
            yield
        finally:
            for shadow in shadows.values():
                with contextlib.suppress(Exception):
                    shadow._destroy()
