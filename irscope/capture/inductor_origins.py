"""What made each kernel Inductor generated: the `generated_by` record and the config label of a
capture from capture/inductor.py (InductorHooks), read from Inductor's autotuner and the files it
wrote (the generated kernel module, the graph's wrapper .py with its "Original ATen" comments), or,
for a C++ wrapper's graph (AOTInductor's), the kernel definitions it ran as Python (the same comments).
A graph AOTInductor lowered makes its kernels' layer "aoti"."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from irscope.capture.records import Capture

_ATEN = re.compile(r"Original ATen:\s*\[(?P<ops>[^\]]*)\]")
_NOT_RECORDED = ("wrappers", "kernel_defs", "aoti_call")  # the graph's working data, not its record
_CONSTEXPR = re.compile(r"^\s+(?P<name>[A-Za-z_]\w*)\s*:\s*tl\.constexpr\s*=\s*(?P<value>.+?)\s*$", re.M)


def generated_by(cap: Capture, autotuner: Any, graph: dict[str, Any] | None) -> dict[str, Any]:
    """What Inductor says made this kernel (see the module doc)."""
    meta = dict(getattr(autotuner, "inductor_meta", None) or {})
    heuristic = getattr(autotuner, "heuristic_type", None)
    category = getattr(heuristic, "name", None)
    kernel_name = meta.get("kernel_name")
    if not isinstance(kernel_name, str) or kernel_name.startswith("Placeholder."):
        kernel_name = cap.name  # a template candidate's benchmark module: Inductor names it triton_<template>
    code = getattr(getattr(cap.jit, "fn", None), "__code__", None)
    generated = str(Path(code.co_filename).resolve()) if code is not None else None
    wrappers = list((graph or {}).get("wrappers") or [])
    aten: list[str] = []
    nodes: list[str] = []
    wrapper = None
    for path in ([generated] if generated else []) + wrappers:  # a template's benchmark module, then the graph's
        aten, nodes = kernel_origins(path, kernel_name)
        if aten:
            wrapper = path if path != generated else None
            break
    defs = [] if aten else list((graph or {}).get("kernel_defs") or [])  # a C++ or FX wrapper's definitions
    if defs:
        aten, nodes = origins_in("\n".join(defs).splitlines(), kernel_name, own_module=False)
    out = {
        "layer": "aoti" if (graph or {}).get("aoti_call") is not None else "inductor",
        "category": category.lower() if isinstance(category, str) else None,
        "kernel_name": kernel_name,
        "aten_ops": aten,
        "source_nodes": nodes,
        "graph": {k: v for k, v in (graph or {}).items() if k not in _NOT_RECORDED} or None,
        "generated_file": generated,
        "wrapper_file": wrapper or (wrappers[0] if wrappers else None),
    }
    if out["category"] == "template" and not kernel_name.startswith("triton_tem_"):
        # a candidate max-autotune benchmarks, in a module of its own: select_algorithm names its kernel
        # triton_<template name> and writes no ATen comment (the one it picks is triton_tem_..., which has one)
        out["template"] = cap.name[len("triton_") :] if cap.name.startswith("triton_") else cap.name
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
    return origins_in(lines, kernel)


def origins_in(lines: list[str], kernel: str, own_module: bool = True) -> tuple[list[str], list[str]]:
    """kernel_origins of generated code given as its lines (`own_module`: code without the kernel's
    definition may be the kernel's own module, whose header comments are its)."""
    define = re.compile(rf"^{re.escape(kernel)}\s*=\s*async_compile\.triton\(")
    end = next((i for i, line in enumerate(lines) if define.match(line)), None)
    if end is None and not own_module:
        return [], []
    if end is None:  # no definition here: the header of a module that is the kernel's own
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


def config_label(autotuner: Any, cfg: Any, jit: Any) -> str | None:
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
