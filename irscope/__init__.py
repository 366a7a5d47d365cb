"""irscope: see and steer what the Triton compiler makes of a kernel.

The flow, one module per concept:

    spec (kernel + specialization)  +  settings (target, options)
        -> compiler (triton.compile, with stage hooks)
        -> artifacts (stages, per-pass IR, stats)
        -> views (dump, passes, diff)

From Python (irscope/api: the same jobs and functions the commands call):

    irscope.dump(kernel, signature=..., target=..., set={...}) -> Dump
    irscope.diff(a, b) -> Diff          irscope.capture(fn, *args) -> Capture
    irscope.sweep(kernel, grid={...}) -> Sweep     irscope.profile(kernel, launch=..., grid=...) -> Dump
    irscope.BadInput, irscope.CompileFailure

Importing this package is cheap: the API is loaded on first use of one of those names, Triton
only when a command needs it, and torch never on the dump path.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from irscope.errors import BadInput, CompileFailure, IrscopeError
from irscope.version import __version__

_API = frozenset(
    {"dump", "diff", "capture", "sweep", "profile", "default_out", "Dump", "Diff", "Capture", "Stages", "Sweep"}
)


def __getattr__(name: str) -> Any:
    """irscope.dump & co. load irscope.api on first use (the top layer reaching down; nothing below it
    imports this package, so the import makes no cycle)."""
    if name in _API:
        from irscope import api

        return getattr(api, name)
    raise AttributeError(f"module 'irscope' has no attribute {name!r}")


class _Package(types.ModuleType):
    """capture/, sweep/ and profile/ are packages too: the import system binds each as an attribute of irscope
    when it first loads, which would hide the API's function of that name from __getattr__ (a capture package
    imported before irscope.api: `irscope.capture(fn)` was 'module' object is not callable). The packages stay
    in sys.modules, where `from irscope.capture import ...` finds them."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _API and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API)


__all__ = [
    "BadInput",
    "Capture",
    "CompileFailure",
    "Diff",
    "Dump",
    "IrscopeError",
    "Stages",
    "Sweep",
    "__version__",
    "capture",
    "default_out",
    "diff",
    "dump",
    "profile",
    "sweep",
]
