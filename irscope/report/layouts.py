"""TTGIR layouts as pictures: which warp, lane and register holds each element of a small tile,
and where each element of a shared tile lands (the swizzle).

Exact by construction: each `#name = #ttg.<kind><{...}>` definition (and each inline slice / dot
operand layout) is parsed into Gluon's own layout class and Triton converts it to a linear layout
(convert.py, in a child process). Nothing is re-derived here but the XOR of the returned bases.
A layout Triton cannot convert here is listed with the reason, never drawn by guess.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from typing import Any

MAX_CELLS = 16384  # bigger tiles are listed, not drawn (the page stays light)
MAX_BASES = 16  # register + lane + warp bases: drawing walks 2**bases (warp, lane, register) triples
TIMEOUT_S = 30.0  # for all of a page's conversions (Triton's converter takes well under a second each)
ALIAS_DEF = re.compile(r"^#(\w+) = #(?:ttg|ttng|amdgpu|triton_gpu)\.(\w+)<(\{.*\})>\s*$", re.M)
INLINE = re.compile(r"#ttg\.(slice|dot_op)<")
TENSOR_SHAPE = re.compile(r"(?:tensor|!ttg\.memdesc)<((?:\d+x)+)[\w]+,\s*(#\w+(?:\.\w+<)?)")
# TTGIR kind -> (Gluon class, {TTGIR key: class argument})
KINDS: dict[str, tuple[str, dict[str, str]]] = {
    "blocked": (
        "BlockedLayout",
        {
            "sizePerThread": "size_per_thread",
            "threadsPerWarp": "threads_per_warp",
            "warpsPerCTA": "warps_per_cta",
            "order": "order",
        },
    ),
    "slice": ("SliceLayout", {"dim": "dim", "parent": "parent"}),
    "nvidia_mma": ("NVMMADistributedLayout", {"warpsPerCTA": "warps_per_cta", "instrShape": "instr_shape"}),
    "dot_op": ("DotOperandLayout", {"opIdx": "operand_index", "parent": "parent", "kWidth": "k_width"}),
    "amd_mfma": (
        "AMDMFMALayout",
        {
            "version": "version",
            "warpsPerCTA": "warps_per_cta",
            "instrShape": "instr_shape",
            "isTransposed": "transposed",
            "tilesPerWarp": "tiles_per_warp",
            "elementBitWidth": "element_bitwidth",
        },
    ),
    "linear": (
        "DistributedLinearLayout",
        {"register": "reg_bases", "lane": "lane_bases", "warp": "warp_bases", "block": "block_bases"},
    ),
    "nvmma_shared": (
        "NVMMASharedLayout",
        {
            "swizzlingByteWidth": "swizzle_byte_width",
            "transposed": "transposed",
            "elementBitWidth": "element_bitwidth",
            "fp4Padded": "fp4_padded",
        },
    ),
    "swizzled_shared": (
        "SwizzledSharedLayout",
        {"vec": "vec", "perPhase": "per_phase", "maxPhase": "max_phase", "order": "order"},
    ),
}
SHARED = {"nvmma_shared", "swizzled_shared"}
TRIVIAL_CGA = ("CTAsPerCGA", "CTASplitNum", "CTAOrder")


class Unsupported(Exception):
    """A layout this report does not convert; the message is the reason shown."""


# ---------------------------------------------------------------- parsing TTGIR attributes


def _parse_value(s: str, i: int) -> tuple[Any, int]:
    while s[i] == " ":
        i += 1
    if s[i] == "[":
        out: list[Any] = []
        i += 1
        while True:
            while s[i] == " ":
                i += 1
            if s[i] == "]":
                return out, i + 1
            v, i = _parse_value(s, i)
            out.append(v)
            while s[i] == " ":
                i += 1
            if s[i] == ",":
                i += 1
    if s[i] == "{":
        return _parse_dict(s, i)
    if s.startswith("#ttg.", i) or s.startswith("#ttng.", i):
        m = re.compile(r"#\w+\.(\w+)<").match(s, i)
        if m is None:
            raise ValueError(f"no layout at {i}")
        d, j = _parse_dict(s, m.end())
        return {"kind": m.group(1), "params": d}, j + 1
    m = re.compile(r"#\w+|-?\d+|true|false|\w+").match(s, i)
    if m is None:
        raise ValueError(f"no value at {i}")
    tok = m.group(0)
    val: Any = (
        tok
        if tok.startswith("#")
        else True
        if tok == "true"
        else False
        if tok == "false"
        else int(tok)
        if re.fullmatch(r"-?\d+", tok)
        else tok
    )
    return val, m.end()


def _parse_dict(s: str, i: int) -> tuple[dict[str, Any], int]:
    """`{key = value, ...}` from s[i] == '{'; returns the dict and the index after '}'."""
    out: dict[str, Any] = {}
    i += 1
    while True:
        while s[i] in " ,":
            i += 1
        if s[i] == "}":
            return out, i + 1
        m = re.compile(r"(\w+)\s*=\s*").match(s, i)
        if not m:
            raise ValueError(f"unexpected {s[i : i + 20]!r}")
        out[m.group(1)], i = _parse_value(s, m.end())


def _balanced(s: str, start: int) -> int:
    """Index after the '>' closing the '<' just before `start`."""
    depth = 1
    i = start
    while depth:
        if i >= len(s):
            raise ValueError("a '<' that is never closed")
        depth += {"<": 1, ">": -1}.get(s[i], 0)
        i += 1
    return i


def find(ttgir: str) -> list[dict[str, Any]]:
    """Every layout of a TTGIR module: the alias definitions, then distinct inline slice/dot_op layouts."""
    out = []
    for m in ALIAS_DEF.finditer(ttgir):
        try:
            params, _ = _parse_dict(m.group(3), 0)
        except (ValueError, IndexError, AttributeError, RecursionError):
            params = None
        out.append(
            {"name": "#" + m.group(1), "kind": m.group(2), "text": f"{m.group(2)}<{m.group(3)}>", "params": params}
        )
    seen = set()
    for m in INLINE.finditer(ttgir):
        try:
            end = _balanced(ttgir, m.end())
        except ValueError:  # an unbalanced (damaged) module: the rest of it is no layout
            break
        text = ttgir[m.start() : end]
        if text in seen:
            continue
        seen.add(text)
        try:
            params, _ = _parse_dict(text, len(m.group(0)))
        except (ValueError, IndexError, AttributeError, RecursionError):
            params = None
        out.append({"name": text, "kind": m.group(1), "text": text[5:], "params": params})
    return out


def used_shapes(ttgir: str, name: str) -> list[list[int]]:
    """The tensor / memdesc shapes this layout is used with (what the kernel's tiles are)."""
    shapes = set()
    for m in re.finditer(r"(?:tensor|memdesc)<((?:\d+x)+)\w+,\s*" + re.escape(name) + r"(?![\w])", ttgir):
        shapes.add(tuple(int(x) for x in m.group(1).rstrip("x").split("x")))
    return [list(s) for s in sorted(shapes)]


# ---------------------------------------------------------------- to Gluon classes


def gluon_spec(kind: str, params: dict[str, Any], defs: dict[str, dict[str, Any]], depth: int = 0) -> dict[str, Any]:
    """{"class", "args"} for convert.py; Unsupported with the reason for what we cannot express."""
    if kind not in KINDS:
        raise Unsupported(f"the {kind} layout has no Gluon class this report converts")
    cls, keys = KINDS[kind]
    args: dict[str, Any] = {}
    for key, value in params.items():
        if key in TRIVIAL_CGA:
            if key != "CTAOrder" and any(v != 1 for v in value):
                raise Unsupported(f"{key} = {value}: multi-CTA layouts are not drawn")
            continue
        if kind == "nvidia_mma" and key in ("versionMajor", "versionMinor"):
            continue
        if key not in keys:
            raise Unsupported(f"parameter {key} is not one this report passes to Gluon's {cls}")
        if key == "parent":
            args["parent"] = _parent(value, defs, depth)
        else:
            args[keys[key]] = value
    if kind == "nvidia_mma":
        args["version"] = [params.get("versionMajor", 2), params.get("versionMinor", 0)]
    if kind == "nvmma_shared":
        args["rank"] = 2
    if kind == "linear":
        if params.get("block"):
            raise Unsupported("multi-CTA linear layouts (block bases) are not drawn")
        args["shape"] = tile(kind, params, defs)
    return {"class": cls, "args": args}


def _parent(value: Any, defs: dict[str, dict[str, Any]], depth: int) -> dict[str, Any]:
    if depth > 8:
        raise Unsupported("layouts nested too deep")
    if isinstance(value, str):
        d = defs.get(value)
        if d is None or d["params"] is None:
            raise Unsupported(f"parent {value} is not defined in this module")
        return gluon_spec(d["kind"], d["params"], defs, depth + 1)
    return gluon_spec(value["kind"], value["params"], defs, depth + 1)


def tile(kind: str, params: dict[str, Any], defs: dict[str, dict[str, Any]]) -> list[int]:
    """A small tile that shows the whole pattern once: the layout's own CTA tile."""
    if kind == "blocked":
        return [a * b * c for a, b, c in zip(params["sizePerThread"], params["threadsPerWarp"], params["warpsPerCTA"])]
    if kind in ("nvidia_mma", "amd_mfma"):
        w = params["warpsPerCTA"]
        instr = params["instrShape"][: len(w)]
        tiles = params.get("tilesPerWarp") or [1] * len(w)
        return [a * b * t for a, b, t in zip(instr, w, tiles)]
    if kind == "linear":
        bases = [b for k in ("register", "lane", "warp") for b in params.get(k, [])]
        rank = len(bases[0]) if bases else 1
        return [1 << max(0, max((b[d] for b in bases), default=0)).bit_length() for d in range(rank)]
    if kind == "nvmma_shared":
        cols = max(params["swizzlingByteWidth"], 16) * 8 // params["elementBitWidth"]
        return [cols, 8] if params.get("transposed") else [8, cols]
    if kind == "swizzled_shared":
        rows, cols = params["perPhase"] * params["maxPhase"], params["vec"] * params["maxPhase"]
        return [rows, cols] if params["order"][0] == 1 else [cols, rows]
    parent: Any = params.get("parent")  # an alias (str) or the layout itself, as JSON gives it
    pkind, pparams = (
        (defs[parent]["kind"], defs[parent]["params"])
        if isinstance(parent, str)
        else (parent["kind"], parent["params"])
    )
    ptile = tile(pkind, pparams, defs)
    if kind == "slice":
        return [n for d, n in enumerate(ptile) if d != params["dim"]]
    if kind == "dot_op":
        k = pparams["instrShape"][2] if pkind == "amd_mfma" else 8 * params.get("kWidth", 2)
        return [ptile[0], k] if params["opIdx"] == 0 else [k, ptile[1]]
    raise Unsupported(f"no tile known for {kind}")


# ---------------------------------------------------------------- pictures


def _coord(bases: list[list[int]], index: int, rank: int) -> list[int]:
    c = [0] * rank
    for bit, basis in enumerate(bases):
        if index >> bit & 1:
            c = [x ^ y for x, y in zip(c, basis)]
    return c


def distributed_cells(shape: list[int], reg: list, lane: list, warp: list) -> dict[str, Any]:
    """Per element (row-major): the first (warp, lane, register) holding it and how many hold it; per warp,
    how many elements it holds (an element broadcast to several warps counts for each)."""
    n = 1
    for s in shape:
        n *= s
    rank = len(shape)
    strides = [1] * rank
    for d in range(rank - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    owner_w, owner_l, owner_r, copies = [-1] * n, [-1] * n, [-1] * n, [0] * n
    per_warp = []
    for w in range(1 << len(warp)):
        held: set[int] = set()
        cw = _coord(warp, w, rank)
        for ln in range(1 << len(lane)):
            cl = _coord(lane, ln, rank)
            for r in range(1 << len(reg)):
                cr = _coord(reg, r, rank)
                idx = sum(((a ^ b ^ c) % s) * st for a, b, c, s, st in zip(cw, cl, cr, shape, strides))
                if copies[idx] == 0:
                    owner_w[idx], owner_l[idx], owner_r[idx] = w, ln, r
                copies[idx] += 1
                held.add(idx)
        per_warp.append(len(held))
    return {
        "warp": owner_w,
        "lane": owner_l,
        "reg": owner_r,
        "copies": copies,
        "per_warp": per_warp,
        "max_copies": max(copies, default=0),
        "warps": 1 << len(warp),
        "lanes": 1 << len(lane),
        "regs": 1 << len(reg),
    }


def shared_cells(shape: list[int], offset: list[list[int]], chunk: int) -> dict[str, Any]:
    """Per element (row-major): its offset in shared memory and the `chunk`-element column it lands in."""
    rank = len(shape)
    n = 1
    for s in shape:
        n *= s
    row_len = shape[-1] if rank else 1
    offs = [-1] * n
    for o in range(1 << len(offset)):
        c = _coord(offset, o, rank)
        idx = c[0] * row_len + c[1] if rank == 2 else c[0]
        if 0 <= idx < n and offs[idx] < 0:
            offs[idx] = o
    cols = max(1, row_len // chunk)
    return {
        "offset": offs,
        "column": [(o % row_len) // chunk % cols if o >= 0 else -1 for o in offs],
        "chunk": chunk,
        "columns": cols,
    }


def _run_child(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Convert in convert.py's child; a layout that kills it is reported, the rest go to a new child."""
    results: list[dict[str, Any]] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(results) < len(items):
        rest = items[len(results) :]
        try:
            p = subprocess.run(
                [sys.executable, "-m", "irscope.report.convert"],
                input=json.dumps(rest),
                capture_output=True,
                text=True,
                timeout=max(1.0, deadline - time.monotonic()),
            )
        except subprocess.TimeoutExpired:
            results += [
                {"ok": False, "reason": f"too large or too slow (Triton's conversion took over {TIMEOUT_S:.0f} s)"}
            ] * len(rest)
            break
        got = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        results += got
        if len(got) < len(rest):
            tail = (p.stderr.strip().splitlines() or ["no message"])[-1][:200]
            if not got and ("ImportError" in p.stderr or "ModuleNotFoundError" in p.stderr):
                results += [{"ok": False, "reason": f"Triton's Gluon layouts could not be loaded: {tail}"}] * len(rest)
                break
            results.append({"ok": False, "reason": f"Triton's converter aborted on this layout: {tail}"})
    return results


def pictures(ttgir: str) -> list[dict[str, Any]]:
    """Every layout of the module, each with its tile and cells, or the reason it is not drawn."""
    found = find(ttgir)
    defs = {d["name"]: d for d in found if d["name"].startswith("#") and not d["name"].startswith("#ttg.")}
    todo: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for lay in found:
        lay["shared"] = lay["kind"] in SHARED
        lay["used"] = used_shapes(ttgir, lay["name"])
        lay.update(ok=False, reason="", tile=None, cells=None, bases=None, expected_per_warp=None)
        if lay["params"] is None:
            lay["reason"] = "could not read its parameters"
            continue
        try:
            _check_size(lay["kind"], lay["params"])
            spec = gluon_spec(lay["kind"], lay["params"], defs)
            shape = tile(lay["kind"], lay["params"], defs)
        except (Unsupported, KeyError, TypeError, IndexError, ValueError, RecursionError) as e:
            lay["reason"] = str(e) if isinstance(e, Unsupported) else f"unexpected parameters ({type(e).__name__}: {e})"
            continue
        lay["tile"] = shape
        cells = 1
        for s in shape:
            cells *= s
        if len(shape) > 2 or cells > MAX_CELLS:
            lay["reason"] = (
                f"too large (its {'x'.join(map(str, shape))} tile, rank {len(shape)}: tiles of rank 1 "
                f"or 2 up to {MAX_CELLS} elements are drawn)"
            )
            continue
        todo.append((lay, {"layout": spec, "shape": shape}))
    for (lay, _), res in zip(todo, _run_child([item for _, item in todo])):
        if not res.get("ok"):
            lay["reason"] = res.get("reason", "not converted")
            continue
        nbases = sum(len(res.get(k) or []) for k in ("reg", "lane", "warp", "offset"))
        if nbases > MAX_BASES:
            lay["reason"] = f"too large ({nbases} bases, {MAX_BASES} at most are drawn)"
            continue
        lay["ok"] = True
        if lay["shared"]:
            p = lay["params"]
            chunk = max(1, 128 // p["elementBitWidth"]) if "elementBitWidth" in p else p.get("vec", 1)
            lay["bases"] = {"offset": res["offset"]}
            lay["cells"] = shared_cells(lay["tile"], res["offset"], chunk)
        else:
            lay["bases"] = {k: res[k] for k in ("reg", "lane", "warp")}
            lay["cells"] = distributed_cells(lay["tile"], res["reg"], res["lane"], res["warp"])
            if lay["kind"] == "blocked":
                p = lay["params"]
                lay["expected_per_warp"] = _prod(p["sizePerThread"]) * _prod(p["threadsPerWarp"])
    for lay in found:
        lay.pop("params", None)
    return found


def _check_size(kind: str, params: dict[str, Any]) -> None:
    """Unsupported for a layout too large to convert and draw, before Triton is asked (a 34-bit linear
    layout would take Triton and the drawing minutes: 2**34 register/lane/warp triples)."""
    if kind != "linear":
        return
    bases = [b for k in ("register", "lane", "warp", "block") for b in (params.get(k) or [])]
    if len(bases) > MAX_BASES:
        raise Unsupported(f"too large ({len(bases)} bases, {MAX_BASES} at most are drawn)")
    for b in bases:
        if not isinstance(b, list) or not all(isinstance(x, int) and 0 <= x < 1 << 20 for x in b):
            raise Unsupported(f"too large or malformed (a basis {str(b)[:40]})")


def _prod(xs: list[int]) -> int:
    out = 1
    for x in xs:
        out *= x
    return out
