"""Rule bank-conflicts (NVIDIA): a `ttg.local_load` / `ttg.local_store` between a blocked layout and a swizzled
or NVMMA shared layout whose ld.shared / st.shared instructions conflict on shared-memory banks.

The count is Triton's own model (`get_shared_bank_conflicts`, what `gl.bank_conflicts` answers in a Gluon
kernel): the excess wavefronts each ld/st.shared instruction needs, from the two layouts as linear layouts. It
holds only for the generic ld/st.shared lowering, so the rule reads the line's LLVM IR first: the op must
lower to `load`/`store ... addrspace(3)` with no ldmatrix / stmatrix (which the model does not describe), and
be the only shared-memory op of its line. The fix is the swizzle (vec, perPhase, maxPhase) of the same order
with the fewest conflicts over every access of that buffer, by the same model. Without Triton (a dump folder
read elsewhere) the rule says nothing.
"""

from __future__ import annotations

import re
from itertools import product
from typing import Any

from irscope.explain import ir
from irscope.explain.context import Context
from irscope.explain.model import Finding, Fix

_ACCESS = {"ttg.local_load": "load", "ttg.local_store": "store", "ttg.local_alloc": "store"}
_SHARED_OPS = set(_ACCESS) | {"ttg.convert_layout"}
_MEMDESC = re.compile(r"!ttg\.memdesc<([\dx]+)x(\w+),\s*(#[\w.]+)")
_TENSOR = re.compile(r"tensor<([\dx]+)x(\w+),\s*(#[\w.]+)>")


def rule(ctx: Context) -> list[Finding]:
    if ctx.vendor != "nvidia":
        return []
    mod = ctx.module
    every = [(op, acc) for op in mod.ops if (acc := _access(mod, op)) is not None]
    accesses = []
    for op, acc in every:
        line = ctx.py_line(op)
        if sum(1 for o in mod.ops if o.name in _SHARED_OPS and ctx.py_line(o) == line) != 1:
            continue  # the line's instructions would mix two ops
        if not _generic_lowering(ctx, line, acc["direction"]):
            continue
        accesses.append((op, line, acc))
    if not accesses:
        return []
    model = _model(ctx.target, mod.num_warps)
    if model is None:
        return []
    findings = []
    for op, line, acc in accesses:
        n = model(acc["regs"], acc["shared"], acc["shape"], acc["bits"])
        if n is None or n <= 0:
            continue
        same = [a for _, a in every if a["shared_alias"] == acc["shared_alias"] and a["shape"] == acc["shape"]]
        findings.append(_finding(ctx, op, line, acc, n, _best_swizzle(model, acc, same), same))
    return findings


def _access(mod: ir.Module, op: ir.Op) -> dict[str, Any] | None:
    if op.name not in _ACCESS or (op.name == "ttg.local_alloc" and not op.operands):
        return None
    mem, ten = _MEMDESC.search(op.text), _TENSOR.search(op.text)
    if not mem or not ten or mem.group(1) != ten.group(1):
        return None
    regs, shared = mod.layouts.get(ten.group(3)), mod.layouts.get(mem.group(3))
    if regs is None or shared is None or regs.kind != "blocked":
        return None
    if shared.kind not in ("swizzled_shared", "nvmma_shared"):
        return None
    shape = [int(d) for d in mem.group(1).split("x")]
    return {
        "direction": _ACCESS[op.name],
        "regs": regs,
        "shared": shared,
        "shared_alias": shared.alias,
        "shape": shape,
        "bits": ir.TYPE_BITS.get(mem.group(2), 32),
        "elem": mem.group(2),
    }


def _generic_lowering(ctx: Context, line: int, direction: str) -> bool:
    text = [t for _, t in ctx.stage_at(line, "llir")]
    if any("ldmatrix" in t or "stmatrix" in t for t in text):
        return False
    if direction == "load":
        return any(re.match(r"(%\S+ = )?load .*ptr addrspace\(3\)", t) for t in text)
    return any(re.match(r"store .*ptr addrspace\(3\)", t) for t in text)


def _finding(
    ctx: Context, op: ir.Op, line: int, acc: dict, n: int, best: tuple[dict, int] | None, same: list[dict]
) -> Finding:
    regs, shared = acc["regs"], acc["shared"]
    shape = "x".join(map(str, acc["shape"]))
    where_loop = " inside a loop" if op.loops else ""
    what = (
        f"the shared-memory {acc['direction']} of {shape}x{acc['elem']}{where_loop} has {n} bank conflict(s) per "
        f"wavefront: each ld/st.shared instruction takes {n + 1} wavefronts instead of 1"
    )
    why = (
        f"the registers are {regs.alias} (blocked: sizePerThread {regs.lists.get('sizePerThread')}, threadsPerWarp "
        f"{regs.lists.get('threadsPerWarp')}, order {regs.lists.get('order')}) and the buffer is {shared.alias} "
        f"({shared.kind}<{shared.params}>): the lanes of one instruction reach addresses in the same bank"
    )
    evidence = [
        f"TTGIR {op.n}: {op.text[:140]}",
        f"Triton's bank-conflict model (gl.bank_conflicts / get_shared_bank_conflicts): {n}",
        f"LLVM IR of line {line}: plain {'load' if acc['direction'] == 'load' else 'store'}s to addrspace(3), "
        "no ldmatrix/stmatrix",
    ]
    if best is not None and best[1] < n:
        p, total = best
        text = (
            f"swizzle the buffer: gl.SwizzledSharedLayout(vec={p['vec']}, per_phase={p['perPhase']}, "
            f"max_phase={p['maxPhase']}, order={shared.lists.get('order')}) gives {total} conflict(s) over the "
            f"buffer's {len(same)} load(s) and store(s) in Triton's model (its ld/st.shared count)"
        )
    else:
        text = "a register layout whose lanes run along the buffer's order, or a swizzled shared layout"
    return Finding("bank-conflicts", "shared-layout", what, ctx.where(line, [op], []), why, evidence, Fix(text))


def _best_swizzle(model, acc: dict, same: list[dict]) -> tuple[dict, int] | None:
    order = acc["shared"].lists.get("order")
    if not order:
        return None
    best = None
    for vec, per, phase in product((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8, 16, 32)):
        params = {"vec": vec, "perPhase": per, "maxPhase": phase}
        swz = ir.Layout("#swz", "swizzled_shared", "", {"order": order}, params)
        counts = [model(a["regs"], swz, a["shape"], a["bits"]) for a in same]
        if any(c is None for c in counts):
            return None
        total = sum(c for c in counts if c is not None)
        if best is None or total < best[1]:
            best = (params, total)
    return best


def _model(target: str, num_warps: int):
    """Triton's bank-conflict count for (blocked layout, shared layout, shape, bits), or None without Triton.
    Made for one rule run and dropped after it (an MLIR context kept to the interpreter's exit leaks)."""
    try:
        import triton.experimental.gluon.language as gl
        from triton._C.libtriton import gluon_ir
        from triton._C.libtriton import ir as tir
    except Exception:  # no Triton, or one without Gluon
        return None
    if not hasattr(gluon_ir.GluonOpBuilder, "get_shared_bank_conflicts"):
        return None
    try:  # the builder's API differs between Triton versions: a mismatch means no count
        context = tir.context()
        tir.load_dialects(context)
        builder = gluon_ir.GluonOpBuilder(context, target)
        builder.set_loc("irscope", 1, 1)
        module = builder.create_module()
        for key, value in (("ttg.num-warps", num_warps), ("ttg.num-ctas", 1), ("ttg.threads-per-warp", 32)):
            module.set_attr(key, builder.get_int32_attr(value))
        module.set_attr("ttg.target", builder.get_string_attr(target))
        fn = builder.get_or_insert_function(module, "irscope_banks", builder.get_function_ty([], []), "public", False)
        module.push_back(fn)
        builder.set_insertion_point_to_start(fn.add_entry_block())
    except Exception:
        return None
    keep = (context, module, fn)  # the attributes live in this context

    def count(regs: ir.Layout, shared: ir.Layout, shape: list[int], bits: int) -> int | None:
        lists, ints = regs.lists, shared.ints
        try:
            r = gl.BlockedLayout(lists["sizePerThread"], lists["threadsPerWarp"], lists["warpsPerCTA"], lists["order"])
            if shared.kind == "swizzled_shared":
                s: Any = gl.SwizzledSharedLayout(ints["vec"], ints["perPhase"], ints["maxPhase"], shared.lists["order"])
            else:
                transposed = "transposed = true" in shared.params
                s = gl.NVMMASharedLayout(ints["swizzlingByteWidth"], ints["elementBitWidth"], len(shape), transposed)
            return int(builder.get_shared_bank_conflicts(r._to_ir(builder), s._to_ir(builder), list(shape), bits))
        except Exception:  # a layout this Triton's classes do not take: no count, no finding
            return None

    count.keep = keep  # type: ignore[attr-defined]
    return count
