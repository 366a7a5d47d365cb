"""Proton's PC sampling, the fallback where ncu is missing: its hatchet file, read per Python line.

Recorded with Triton 3.6's triton.profiler (backend "cupti", mode "pcsampling", hook "triton") on an
H200 (tests/data/ncu/proton_add.hatchet): a JSON list [tree, device info]; under ROOT, one frame per
kernel by name, and under a Triton kernel one frame per line, named "FILE:LINE@KERNEL", with
num_samples and stalled_<reason> counts. Proton gives no per-instruction rows, executed counts or
bytes: the profile's lines and stall reasons only.
"""

from __future__ import annotations

import re
from typing import Any

from irscope.errors import BadInput

_LINE_FRAME = re.compile(r"^(?P<file>.+):(?P<line>\d+)@(?P<kernel>[\w$.]+)$")
# Proton's names -> ncu's short names, so both tools' profiles read (and diff) alike
STALL_NAMES = {
    "barrier": "barrier",
    "branch_resolving": "branch_resolving",
    "dispatch_stall": "dispatch",
    "drain": "drain",
    "imc_miss": "imc",
    "lg_throttle": "lg",
    "long_scoreboard": "long_sb",
    "math_pipe_throttle": "math",
    "membar": "membar",
    "mio_throttle": "mio",
    "misc": "misc",
    "no_instruction": "no_inst",
    "not_selected": "not_selected",
    "selected": "selected",
    "short_scoreboard": "short_sb",
    "sleeping": "sleep",
    "tex_throttle": "tex",
    "wait": "wait",
}


def per_line(doc: Any, kernel: str, what: str = "proton hatchet") -> dict[tuple[str, int], dict[str, Any]]:
    """(file, line) -> {"samples", "stalls"} for `kernel`, summed over its launches."""
    if not isinstance(doc, list) or not doc or not isinstance(doc[0], dict):
        raise BadInput(f"{what}: not a Proton hatchet profile (a JSON list whose first item is the tree)")
    out: dict[tuple[str, int], dict[str, Any]] = {}
    found = False
    for node in _frames_named(doc[0], kernel, what):
        found = True
        for child in _children(node, what):
            name = (child.get("frame") or {}).get("name", "") if isinstance(child, dict) else ""
            m = _LINE_FRAME.match(str(name))
            metrics = child.get("metrics") if isinstance(child, dict) else None
            if not m or not isinstance(metrics, dict):
                continue
            key = (m.group("file"), int(m.group("line")))
            row = out.setdefault(key, {"samples": 0.0, "stalls": {}})
            row["samples"] += _number(metrics.get("num_samples", 0), what)
            for k, v in metrics.items():
                reason = STALL_NAMES.get(k.removeprefix("stalled_").replace("not_Selected", "not_selected"))
                if k.startswith("stalled_") and reason and (n := _number(v, what)):
                    row["stalls"][reason] = row["stalls"].get(reason, 0.0) + n
    if not found:
        raise BadInput(f"{what}: no samples of kernel {kernel!r} (was it launched while Proton sampled?)")
    return out


def _frames_named(root: dict, kernel: str, what: str, depth: int = 0) -> list[dict]:
    """Every frame named `kernel`, at any depth (recorded: ROOT's child; a scope around the launch nests it)."""
    out = []
    for node in _children(root, what):
        if not isinstance(node, dict):
            continue
        if (node.get("frame") or {}).get("name") == kernel:
            out.append(node)
        elif depth < 16:
            out += _frames_named(node, kernel, what, depth + 1)
    return out


def _children(node: dict, what: str) -> list:
    kids = node.get("children", [])
    if not isinstance(kids, list):
        raise BadInput(f"{what}: a frame's children are not a list")
    return kids


def _number(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadInput(f"{what}: a sample count {v!r} is not a number")
    return float(v)


def device(doc: Any) -> str:
    """'sm_90' from the hatchet's device record (Proton names no product)."""
    try:
        arch = next(iter(doc[1]["CUDA"].values()))["arch"]
        return f"sm_{arch}"
    except (LookupError, TypeError, AttributeError, StopIteration):
        return ""
