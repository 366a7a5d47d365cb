"""Rule convert-in-loop: a ttg.convert_layout inside a loop whose lowering goes through shared memory (a store
to shared, a barrier, a load back), with the producer's and consumers' lines and the bytes moved per iteration.

tritongpu-remove-layout-conversions keeps a conversion it cannot fold into the producer or the consumer; the
lowering (ConvertLayoutOpToLLVM) moves data between threads through shared memory unless a warp shuffle or
the registers suffice. The rule reports only conversions whose line's PTX (or AMDGCN) has shared stores and
loads (in its LLVM IR) and no other op on that line that touches shared memory."""

from __future__ import annotations

import re

from irscope.explain.context import Context
from irscope.explain.model import Finding, Fix

# LLVM IR, both vendors: shared memory is addrspace(3); NVIDIA's inline asm spells st.shared / ld.shared /
# ldmatrix. (PTX's own .loc lines inside inline asm name the lines after the op's, so PTX is not read here.)
_SHARED_STORE = re.compile(r"\bstore\b.*ptr addrspace\(3\)|st\.shared|stmatrix")
_SHARED_LOAD = re.compile(r"= load\b.*ptr addrspace\(3\)|ld\.shared|ldmatrix")
_SMEM_OPS = {
    "ttg.local_alloc",
    "ttg.local_load",
    "ttg.local_store",
    "tt.dot",
    "ttng.warp_group_dot",
    "tt.reduce",
    "ttg.async_copy_global_to_local",
    "tt.trans",
    "tt.scan",
    "tt.histogram",
    "tt.gather",
}


def rule(ctx: Context) -> list[Finding]:
    mod = ctx.module
    findings = []
    code_stage = "llir"
    st_rx, ld_rx = _SHARED_STORE, _SHARED_LOAD
    for op in mod.ops:
        if op.name != "ttg.convert_layout" or not op.loops or not (ts := mod.tensors(op)):
            continue
        line = ctx.py_line(op)
        others = [o for o in mod.ops if ctx.py_line(o) == line and o.name in _SMEM_OPS]
        if others:
            continue  # shared-memory traffic on this line may be another op's
        code = ctx.stage_at(line, code_stage)
        stores = [(n, t) for n, t in code if st_rx.search(t)]
        loads = [(n, t) for n, t in code if ld_rx.search(t)]
        if not (stores and loads):
            continue
        bars = [
            f"{ctx.machine_stage} {n}: {t[:80]}"
            for n, t in ctx.stage_at(line, ctx.machine_stage)
            if re.search(r"\b(BAR|STS|LDS|s_barrier|ds_write|ds_read)\b", t)
        ][:3]
        src, dst = ts[0], ts[-1]
        nbytes = src.numel * src.bits // 8
        producer = mod.defs.get(op.operands[0]) if op.operands else None
        consumers = [u for r in op.results for u in mod.uses.get(r, [])]
        p_line = ctx.py_line(producer) if producer else 0
        c_lines = sorted({ctx.py_line(u) for u in consumers})
        findings.append(
            Finding(
                "convert-in-loop",
                "shared-memory",
                f"convert_layout of tensor<{'x'.join(map(str, src.shape))}x{src.elem}> ({nbytes} B) through shared memory "
                f"on every iteration: {len(stores)} shared stores, {len(loads)} shared loads",
                ctx.where(line, [op], [f"{code_stage} {n}: {t[:120]}" for n, t in (stores[:2] + loads[:2])] + bars),
                f"the value made on line {p_line} ({producer.name if producer else '?'}, layout {src.layout}) is used on "
                f"line(s) {', '.join(map(str, c_lines))} in layout {dst.layout}; the conversion could not be folded away "
                "and the lowering exchanges the data between threads through shared memory",
                [
                    f"TTGIR {op.n}: {op.text[:160]}",
                    "kept by tritongpu-remove-layout-conversions; lowered by "
                    "ConvertLayoutOpToLLVM through shared memory",
                ],
                Fix(
                    "make producer and consumer agree on one layout, or move the use out of the loop (e.g. keep the "
                    "result in registers and store once after the loop); --pin-layout can pin the consumer's layout"
                ),
            )
        )
    return findings
