"""Ask Triton for linear layouts, in a child process: `python -m irscope.report.convert`.

Triton's converter asserts (aborting the process) on layouts it does not accept, and importing
Triton takes seconds: so the report runs it once, in a child, and a layout that kills the child
is reported as not converted (layouts.py restarts the child for the rest).

stdin: a JSON list of {"kind", "layout": {...gluon class arguments...}, "shape"}; stdout: one JSON line
per item, in order: {"ok": true, "reg", "lane", "warp", "block"} (distributed),
{"ok": true, "offset", "block"} (shared) or {"ok": false, "reason"}.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from typing import Any


def _gluon_layout(spec: dict[str, Any]) -> Any:
    """A gluon layout object from the parsed TTGIR attribute (layouts.py's `layout` dicts)."""
    import triton.experimental.gluon.language as gl
    from triton.experimental.gluon.language.amd import AMDMFMALayout

    kind, a = spec["class"], spec["args"]
    if kind in ("SliceLayout", "DotOperandLayout"):
        a = dict(a, parent=_gluon_layout(a["parent"]))
    cls = AMDMFMALayout if kind == "AMDMFMALayout" else getattr(gl, kind)
    return cls(**a)


def shared_supported() -> bool:
    """Whether this Triton's to_linear_layout converts shared layouts (3.6's C++ aborts on them)."""
    from triton.experimental.gluon.language._semantic import GluonSemantic

    return "SharedLinearLayout" in inspect.getsource(GluonSemantic.to_linear_layout)


def convert_one(builder: Any, item: dict[str, Any]) -> dict[str, Any]:
    from triton.experimental.gluon.language._layouts import SharedLayout

    layout = _gluon_layout(item["layout"])
    if isinstance(layout, SharedLayout) and not shared_supported():
        import triton

        return {
            "ok": False,
            "reason": f"Triton {triton.__version__}'s to_linear_layout converts distributed "
            f"layouts only (shared ones abort it); not drawn",
        }
    ll = builder.to_linear_layout(layout._to_ir(builder), list(item["shape"]))
    if hasattr(ll, "offset_bases"):
        return {"ok": True, "offset": ll.offset_bases, "block": ll.block_bases}
    if not hasattr(ll, "reg_bases"):
        return {"ok": False, "reason": f"Triton returned {type(ll).__name__}, not a linear layout"}
    return {"ok": True, "reg": ll.reg_bases, "lane": ll.lane_bases, "warp": ll.warp_bases, "block": ll.block_bases}


def main() -> None:
    items = json.load(sys.stdin)
    from triton._C.libtriton import gluon_ir, ir

    ctx = ir.context()
    ir.load_dialects(ctx)
    builder = gluon_ir.GluonOpBuilder(ctx)
    for item in items:
        try:
            out = convert_one(builder, item)
        except Exception as e:  # Triton's own message, e.g. a shape the layout does not accept
            out = {"ok": False, "reason": f"Triton could not convert it: {type(e).__name__}: {e}"[:300]}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()
    sys.stdout.flush()
    os._exit(0)  # skip nanobind's leak report at interpreter exit (the builder outlives the module)


if __name__ == "__main__":
    main()
