"""Rule narrow-access: a global load/store (or async copy) narrower than the data allows, and why.

The width each thread moves per instruction is read from the PTX (ld/st.global.vN, cp.async's size) or the
AMDGCN (global_/buffer_ load/store dwordxN) of the op's line. What the data allows: 16 bytes, no more than the
elements each thread holds (the tensor over the threads) nor a row. Triton's AxisInfo analysis decides the width
(Coalesce picks the layout, the lowering splits by the mask): from the pointer's and the offsets' divisibility
(the arguments' `tt.divisibility`, which the launch specializes), the mask's constancy and the offsets'
contiguity. The rule traces the pointer and the mask back through the TTGIR to name which of those is missing;
a narrow access with no cause it can name is not reported."""

from __future__ import annotations

import re

from irscope.artifacts.stats import AMD_WIDTH, PTX_TYPE_BITS
from irscope.explain import axis, ir
from irscope.explain.context import Context
from irscope.explain.model import Finding, Fix

_PTX_GLOBAL = re.compile(r"\b(ld|st)\.global((?:\.[\w:]+)*)\s")
_CP_ASYNC = re.compile(r"\bcp\.async\.c[ag]\.shared\.global\s*\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-f]+|\d+)")
_AMD_GLOBAL = re.compile(r"\b(?:global|buffer)_(load|store)_(?:lds_)?(\w+)")
_OPS = {
    "tt.load": "load",
    "tt.store": "store",
    "ttg.async_copy_global_to_local": "load",
    "amdg.buffer_load": "load",
    "amdg.buffer_store": "store",
    "amdg.buffer_load_to_local": "load",
}
AMD_GLOBAL_LOAD = re.compile(r"\b(?:global|buffer)_load_")
SASS_GLOBAL = {"load": re.compile(r"\b(LDG|LDGSTS)\b"), "store": re.compile(r"\bSTG\b")}
Cause = tuple[str, str, list[str], dict[str, str], str]  # tag, why, evidence, --arg overrides, fix
_BREAKS = {"arith.remsi", "arith.remui", "arith.divsi", "arith.divui"}


def machine_widths(lines: list[str], direction: str, vendor: str) -> list[int]:
    """Bits per thread of each global access of `direction` among a Python line's PTX or AMDGCN lines."""
    out = []
    for raw in lines:
        text = raw.replace("\\0A", " ").replace("\\09", " ")  # LLIR's inline asm escapes newline and tab
        if vendor == "amd":
            for m in _AMD_GLOBAL.finditer(text):
                if m.group(1) == direction and m.group(2) in AMD_WIDTH:
                    out.append(AMD_WIDTH[m.group(2)])
            continue
        if direction == "load" and (c := _CP_ASYNC.search(text)):
            out.append(int(c.group(1), 0) * 8)
            continue
        g = _PTX_GLOBAL.search(text)
        if g and {"ld": "load", "st": "store"}[g.group(1)] == direction:
            parts = g.group(2).split(".")
            vec = next((int(p[1:]) for p in parts if re.fullmatch(r"v\d", p)), 1)
            bits = next((PTX_TYPE_BITS[p] for p in parts if p in PTX_TYPE_BITS), 0)
            out.append(vec * bits)
    return out


def _last_dim_fastest(mod: ir.Module, t: ir.Tensor) -> bool:
    """The layout's fastest dimension is the tensor's last (row-major), or the layout is not a blocked one."""
    layout = mod.layouts.get(t.layout)
    order = layout.lists.get("order") if layout is not None and layout.kind == "blocked" else None
    return not order or order[0] == len(t.shape) - 1


def allowed_bits(mod: ir.Module, t: ir.Tensor) -> int:
    """The widest access the data allows a thread: 16 bytes, its share of the tensor, one row."""
    threads = mod.num_warps * mod.warp_size
    elems = min(128 // max(t.bits, 8), max(1, t.numel // threads), t.shape[-1])
    return elems * t.bits


def _fix_arg(arg: ir.Arg, manifest_args: dict) -> str:
    given = str(manifest_args.get(arg.name, arg.type))
    return given.split(":")[0] + ":16"


def causes(ctx: Context, op: ir.Op) -> list[Cause]:
    """(cause tag, why, evidence, --arg overrides, fix text) for each reason the op's width is limited: the
    arguments whose specialization :16 would raise the address's divisibility or the mask's constancy (the
    small AxisInfo of `axis`), else an op that breaks the offsets' contiguity."""
    mod = ctx.module
    t = _tensor(mod, op)
    if t is None:
        return []
    need_bytes = allowed_bits(mod, t) // 8
    margs = dict(ctx.manifest.get("args") or {})
    out: list[Cause] = []
    blamed: set[str] = set()
    roots: set[str] = set()
    for v, scale in _address_values(mod, op):
        div, names = axis.blame(mod, v, max(need_bytes // scale, 1), constancy=False)
        for name in names:
            if name in blamed:
                continue
            blamed.add(name)
            a = mod.args[name]
            root = name.split(".")[0]
            if not str(margs.get(root, "*")).startswith(("*", "i", "u")):  # a tensor descriptor lowered to pointers
                if root not in roots:
                    roots.add(root)
                    out.append(
                        (
                            "descriptor-lowered",
                            f"`{root}` is a tensor descriptor ({margs.get(root)}) that {ctx.target} lowers to "
                            f"pointer loads; the lowered base and strides carry no divisibility, so the address is "
                            f"known aligned to {div * scale} byte(s)",
                            [f"TTGIR: %{name}: {a.type} has no tt.divisibility = 16"],
                            {},
                            "on this target pass plain pointers specialized 16-byte aligned (*fp16:16) with strides "
                            "divisible by 16 and use tl.load, or keep descriptors for targets with TMA",
                        )
                    )
                continue
            if a.pointer:
                out.append(
                    (
                        "ptr-align",
                        f"`{name}` is not known to be 16-byte aligned (specialized "
                        f"{margs.get(name, a.type)}), so the address is known aligned to {div * scale} byte(s)",
                        [f"TTGIR: %{name}: {a.type} has no tt.divisibility = 16"],
                        {name: _fix_arg(a, margs)},
                        f"specialize `{name}` 16-byte aligned: --arg {name}={_fix_arg(a, margs)} (a launch with "
                        f"an aligned tensor does it)",
                    )
                )
            else:
                out.append(
                    (
                        "offset-divisibility",
                        f"`{name}` enters the address and is not known divisible by 16 "
                        f"(specialized {margs.get(name, a.type)}), so the address is known aligned to "
                        f"{div * scale} byte(s)",
                        [f"TTGIR: %{name}: {a.type} has no tt.divisibility = 16"],
                        {name: _fix_arg(a, margs)},
                        f"specialize `{name}` divisible by 16: --arg {name}={_fix_arg(a, margs)} (or "
                        f"`tl.multiple_of({name}, 16)` where that holds)",
                    )
                )
    mask = _mask_operand(op)
    if mask is not None:
        const, names = axis.blame(mod, mask, max(need_bytes * 8 // t.bits, 1), constancy=True)
        for name in names:
            a = mod.args[name]
            out.append(
                (
                    "mask-bound",
                    f"the mask compares with `{name}`, not known divisible by 16 (specialized "
                    f"{margs.get(name, a.type)}): the mask is known constant over runs of {const} element(s), "
                    f"so the lowering splits each access to that",
                    [f"TTGIR: %{name}: {a.type} has no tt.divisibility = 16", f"TTGIR mask: {mask}"],
                    {name: _fix_arg(a, margs)},
                    f"specialize `{name}` divisible by 16: --arg {name}={_fix_arg(a, margs)} (pad the size to a "
                    f"multiple of 16, or `tl.multiple_of({name}, 16)` where it holds)",
                )
            )
    if not out:
        ptr_ops = [p for v, _ in _address_values(mod, op) for p in mod.producers(v)[0]]
        for p in sorted(ptr_ops, key=lambda p: p.name not in ("arith.remsi", "arith.remui")):
            if p.name in _BREAKS and _non_pow2_constant(mod, p):
                out.append(
                    (
                        "contiguity",
                        f"`{p.name}` by a constant that is not a power of two (line "
                        f"{ctx.py_line(p)}) breaks the offsets' contiguity: AxisInfo keeps only the runs it "
                        f"can prove",
                        [f"TTGIR {p.n}: {p.text[:140]}"],
                        {},
                        "index the tensor in 2-D (a power-of-two block along the row, masked to the width) "
                        "instead of splitting a flat index with % and //",
                    )
                )
                break
    return out


def merge(found: list[Cause]) -> Cause:
    """The causes of one access as one: tags joined (sorted, each once), whys and fixes in order, the --arg
    overrides together (the access is as wide as the data allows only once every cause is fixed)."""
    tags, whys, evidence, args, fixes = [], [], [], {}, []
    for tag, why, ev, a, fix in found:
        if why in whys:
            continue
        tags.append(tag)
        whys.append(why)
        evidence += [e for e in ev if e not in evidence]
        args.update(a)
        if fix not in fixes:
            fixes.append(fix)
    return "+".join(sorted(set(tags))), "; and ".join(whys), evidence, args, "; and ".join(fixes)


def _address_values(mod: ir.Module, op: ir.Op) -> list[tuple[str, int]]:
    """The values that make the address, each with the bytes one unit of it moves (a buffer op's offsets are
    elements; a pointer's divisibility is in bytes)."""
    if op.name.startswith("amdg.buffer_"):
        m = re.search(r"(%[\w.$-]+)\[(%[\w.$-]+)\]", op.text)
        t = _tensor(mod, op)
        return [(m.group(1), 1), (m.group(2), max((t.bits if t else 8) // 8, 1))] if m else []
    return [(op.operands[0], 1)] if op.operands else []


def _mask_operand(op: ir.Op) -> str | None:
    m = re.search(r"\bmask\s+(%[\w.$-]+)", op.text)
    if m:
        return m.group(1)
    if op.name.startswith("amdg.buffer_"):
        m = re.search(r"\],\s*(%[\w.$-]+)", op.text)
        return m.group(1) if m else None
    if op.name == "tt.load" and len(op.operands) >= 2:
        return op.operands[1]
    if op.name == "tt.store" and len(op.operands) >= 3:
        return op.operands[2]
    return None


def _tensor(mod: ir.Module, op: ir.Op) -> ir.Tensor | None:
    """The accessed tensor: its shape and element type (a tensor of pointers' pointee, or a buffer op's data)."""
    ts = mod.tensors(op)
    if not ts:
        return None
    if op.name.startswith("amdg.buffer_"):
        data = [t for t in ts if not t.pointer]
        return data[0] if data else None
    return ts[0] if ts[0].pointer else None


def _non_pow2_constant(mod: ir.Module, op: ir.Op) -> bool:
    for v in op.operands[1:]:
        d = mod.defs.get(v)
        if d is not None and d.name == "arith.constant":
            m = re.search(r"dense<(\d+)>|constant (\d+)", d.text)
            if m:
                k = int(m.group(1) or m.group(2))
                return k > 0 and k & (k - 1) != 0
    return False


def rule(ctx: Context) -> list[Finding]:
    mod = ctx.module
    groups: dict[tuple[int, str], list[ir.Op]] = {}
    for op in mod.ops:
        if op.name in _OPS and op.operands and _tensor(mod, op) is not None:
            groups.setdefault((ctx.py_line(op), _OPS[op.name]), []).append(op)
    findings = []
    code_stage = "amdgcn" if ctx.vendor == "amd" else "llir"  # PTX's .loc inside inline asm names later lines
    for (line, direction), ops in sorted(groups.items()):
        tensors = [t for op in ops if (t := _tensor(mod, op)) is not None]
        if not all(_last_dim_fastest(mod, t) for t in tensors):
            continue  # the rules reason along the last dimension; a column-major access is left alone
        allowed = max(allowed_bits(mod, t) for t in tensors)
        code = ctx.stage_at(line, code_stage)
        widths = machine_widths([t for _, t in code], direction, ctx.vendor)
        if not widths or max(widths) >= allowed:
            continue
        found = [c for op in ops for c in causes(ctx, op)]
        if not found:
            continue
        got = max(widths)
        t = tensors[0]
        machine = [
            f"{code_stage} {n}: {text[:120]}" for n, text in code if machine_widths([text], direction, ctx.vendor)
        ][:3]
        if ctx.vendor == "nvidia":
            machine[:0] = [
                f"sass {n}: {text[:120]}"
                for n, text in ctx.stage_at(line, "sass")
                if SASS_GLOBAL[direction].search(text)
            ][:3]
        tag, why, evidence, args, fix = merge(found)
        findings.append(
            Finding(
                "narrow-access",
                tag,
                f"global {direction} of {t.elem} moves {got} bits per thread per instruction; the data allows "
                f"{allowed} ({len(widths)} instructions on this line)",
                ctx.where(line, ops, machine),
                why,
                [
                    *evidence,
                    "decided by AxisInfo (tritongpu-coalesce picks the layout; the load/store lowering "
                    "splits by the pointer's divisibility and the mask's constancy)",
                ],
                Fix(fix, args=args),
            )
        )
    return findings
