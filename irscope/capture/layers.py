"""What made a captured kernel, when a kernel generator did: `Capture.generated_by`.

Helion (`@helion.kernel`) writes each config's Triton into a module of its own (torch's
PyCodeCache, under the Inductor cache folder) and keeps, on each BoundKernel, the config each
such module was generated for (`_cache_path_map`). After the script has run, the kernels
captured from such a file are labelled with that config (block_sizes, num_warps, num_stages,
...) and the Helion kernel's own source file. Read from the BoundKernels still alive (gc); only
when the script imported Helion.

Helion's generated Triton carries `# src[FILE.py:N]: ...` comments above the statements made
from line N of the Helion function (helion/_compiler/ast_extension.py, setting
output_origin_lines, HELION_OUTPUT_ORIGIN_LINES): `source_lines` reads them, for the two-level
source map (Helion line -> generated line -> every stage).
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import re
import sys
from pathlib import Path
from typing import Any

_SRC = re.compile(r"#\s*src\[(?P<file>[^:\]]+):(?P<start>\d+)(?:-(?P<end>\d+))?\]")


def helion_configs() -> dict[str, list[dict[str, Any]]]:
    """Generated file -> [{layer, kernel, config, source}] for every live Helion BoundKernel."""
    mod = sys.modules.get("helion.runtime.kernel")
    bound_cls = getattr(mod, "BoundKernel", None)
    if bound_cls is None:
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for obj in gc.get_objects():
        if not isinstance(obj, bound_cls):
            continue
        kernel = getattr(obj, "kernel", None)
        fn = getattr(kernel, "fn", None)
        source = None
        with contextlib.suppress(TypeError, OSError):
            source = inspect.getsourcefile(fn) if fn is not None else None
        for config, path in dict(getattr(obj, "_cache_path_map", {}) or {}).items():
            entry = {
                "layer": "helion",
                "kernel": getattr(fn, "__name__", None),
                "config": _config_dict(config),
                "source": source,
                "generated": str(path),
            }
            out.setdefault(str(Path(path).resolve()), []).append(entry)
    return out


def _config_dict(config: Any) -> dict[str, Any]:
    raw = getattr(config, "config", None)
    raw = dict(raw) if isinstance(raw, dict) else dict(config)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in raw.items()}


def helion_label(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def label_captures(captures: list[Any]) -> None:
    """Give each capture from a generated file what generated it (and, for Helion, its config label)."""
    by_file = helion_configs()
    if not by_file:
        return
    for cap in captures:
        fn = getattr(cap.jit, "fn", None)
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        entries = by_file.get(str(Path(code.co_filename).resolve()))
        if not entries:
            continue
        entry = _matching(entries, cap.options)
        cap.generated_by = dict(entry, src_lines=source_lines(Path(code.co_filename)))
        cap.config = cap.config or helion_label(entry["config"])


def _matching(entries: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
    """The config whose num_warps / num_stages the launch had (one file may serve several)."""
    for e in entries:
        cfg = e["config"]
        if all(options.get(k) == cfg[k] for k in ("num_warps", "num_stages") if k in cfg and k in options):
            return e
    return entries[0]


def source_lines(generated: Path) -> dict[str, list[int]]:
    """'FILE.py:N' -> the generated file's lines made from it (the `# src[...]` comment's
    statement: the lines after the comment, up to the next comment or a line less indented)."""
    try:
        lines = generated.read_text().splitlines()
    except OSError:
        return {}
    out: dict[str, list[int]] = {}
    current: list[str] = []
    indent = 0
    after_comment = False
    for i, line in enumerate(lines, 1):
        m = _SRC.search(line)
        stripped = line.lstrip()
        if m and stripped.startswith("#"):
            start, end = int(m["start"]), int(m["end"] or m["start"])
            keys = [f"{m['file']}:{n}" for n in range(start, end + 1)]
            current = current + keys if after_comment else keys  # consecutive comments: one statement
            indent = len(line) - len(stripped)
            after_comment = True
            continue
        after_comment = False
        if not stripped or stripped.startswith("#"):
            continue
        if len(line) - len(stripped) < indent or stripped.startswith("def "):
            current = []
        for key in current:
            out.setdefault(key, []).append(i)
    return out
