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
from irscope.explain import ir
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
_SASS_GLOBAL = re.compile(r"\b(LDG|STG|LDGSTS)\b")
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


def allowed_bits(mod: ir.Module, t: ir.Tensor) -> int:
    """The widest access the data allows a thread: 16 bytes, its share of the tensor, one row."""
    threads = mod.num_warps * mod.warp_size
    elems = min(128 // max(t.bits, 8), max(1, t.numel // threads), t.shape[-1])
    return elems * t.bits


def _fix_arg(arg: ir.Arg, manifest_args: dict) -> str:
    given = str(manifest_args.get(arg.name, arg.type))
    return given.split(":")[0] + ":16"


def causes(ctx: Context, op: ir.Op) -> list[tuple[str, str, list[str], dict[str, str], str]]:
    """(cause tag, why, evidence, --arg overrides, fix text) for each reason the op's width is limited."""
    mod = ctx.module
    mask = _mask_operand(op)
    margs = dict(ctx.manifest.get("args") or {})
    out = []
    ptr_ops, ptr_args = [], set()
    for v in _address_operands(op, mask):
        more_ops, more_args = mod.producers(v)
        ptr_ops += [p for p in more_ops if p not in ptr_ops]
        ptr_args |= more_args
    for name in sorted(ptr_args):
        a = mod.args[name]
        if a.pointer and a.divisibility < 16:
            out.append(
                (
                    "ptr-align",
                    f"`{name}` is not known to be 16-byte aligned (specialized {margs.get(name, a.type)}), "
                    f"so AxisInfo gives the pointer a divisibility of {a.divisibility} byte(s)",
                    [f"TTGIR: %{name}: {a.type} has no tt.divisibility = 16"],
                    {name: _fix_arg(a, margs)},
                    f"specialize `{name}` as 16-byte aligned: --arg {name}={_fix_arg(a, margs)} (a launch with an "
                    f"aligned tensor does it), or `tl.multiple_of({name}, 16)` is wrong unless it is true",
                )
            )
        elif not a.pointer and a.type.startswith("i") and a.divisibility < 16:
            out.append(
                (
                    "offset-divisibility",
                    f"`{name}` enters the address and is not known divisible by 16 "
                    f"(specialized {margs.get(name, a.type)}): each row's start may be unaligned",
                    [f"TTGIR: %{name}: {a.type} has no tt.divisibility = 16"],
                    {name: _fix_arg(a, margs)},
                    f"specialize `{name}` divisible by 16: --arg {name}={_fix_arg(a, margs)} (or "
                    f"`tl.multiple_of({name}, 16)` where that holds)",
                )
            )
    if mask is not None:
        _, mask_args = mod.producers(mask)
        for name in sorted(mask_args - ptr_args):
            a = mod.args[name]
            if not a.pointer and a.type.startswith("i") and a.divisibility < 16:
                out.append(
                    (
                        "mask-bound",
                        f"the mask compares with `{name}`, not known divisible by 16 "
                        f"(specialized {margs.get(name, a.type)}): AxisInfo gives the mask a constancy of 1, so "
                        f"the lowering splits each access into single elements",
                        [f"TTGIR: %{name}: {a.type} has no tt.divisibility = 16", f"TTGIR mask: {mask}"],
                        {name: _fix_arg(a, margs)},
                        f"specialize `{name}` divisible by 16: --arg {name}={_fix_arg(a, margs)} (pad the size "
                        f"to a multiple of 16, or `tl.multiple_of({name}, 16)` where it holds)",
                    )
                )
    if not out:
        for p in ptr_ops:
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
    return out


def _address_operands(op: ir.Op, mask: str | None) -> list[str]:
    """The operands that make the address: the pointer (tt.load/store, async copy), or a buffer op's base and offsets."""
    if op.name.startswith("amdg.buffer_"):
        m = re.search(r"(%[\w.$-]+)\[(%[\w.$-]+)\]", op.text)
        return [m.group(1), m.group(2)] if m else []
    return op.operands[:1]


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
                f"sass {n}: {text[:120]}" for n, text in ctx.stage_at(line, "sass") if _SASS_GLOBAL.search(text)
            ][:3]
        seen = set()
        for tag, why, evidence, args, fix in found:
            if tag in seen:
                continue
            seen.add(tag)
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
