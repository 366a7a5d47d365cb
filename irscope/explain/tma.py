"""Rule tma-unused: on sm90 and newer, a loop's dot operands are pipelined with cp.async (16 bytes a thread)
where TMA (one instruction a tile, no address math per thread) was possible.

Triton pipelines loads through tensors of pointers (`tl.load`) with cp.async; TMA copies only from a tensor
descriptor. The rule reports a loop whose dot operands come through ttg.async_copy_global_to_local, every copy
16 bytes wide (so the rows are 16-byte aligned and contiguous, as TMA needs), and no TMA copy in the loop.
A loop where a copy's addresses come from loaded values (a gather: rows picked by an index load) is left
alone: a TMA copy is a box of a tensor, and a gather of rows is not one (sm100's TMA gather is a different
op, with its own limits)."""

from __future__ import annotations

from irscope.explain import access, ir, pipeline
from irscope.explain.context import Context
from irscope.explain.model import Finding, Fix

_DOT_OPS = {"tt.dot", "ttng.warp_group_dot", "ttng.tc_gen5_mma"}
_TMA = ("ttng.async_tma_copy_global_to_local", "ttng.async_tma_gather", "tt.descriptor_load")


def rule(ctx: Context) -> list[Finding]:
    if ctx.vendor != "nvidia" or ctx.arch < 90:
        return []
    mod = ctx.module
    findings = []
    for loop in [op for op in mod.ops if op.name == "scf.for"]:
        inside = [op for op in mod.ops if loop.n in op.loops]
        if not any(op.name in _DOT_OPS for op in inside) or any(op.name in _TMA for op in inside):
            continue
        copies = [op for op in inside if op.name == "ttg.async_copy_global_to_local"]
        lines = sorted({ctx.py_line(op) for op in copies})
        sync = [
            op
            for op in inside
            if op.name == "tt.load" and op.results and pipeline.feeds_dot(mod, op.results[0], loop.n)
        ]
        if not lines or sync:
            continue  # an operand not pipelined at all is loop-not-pipelined's finding
        if any(_gathered(mod, op) for op in copies):
            continue
        widths = [
            w for n in lines for w in access.machine_widths([t for _, t in ctx.stage_at(n, "llir")], "load", "nvidia")
        ]
        if not widths or min(widths) < 128:
            continue  # a narrower copy: its rows may not meet TMA's 16-byte alignment
        loop_line = ctx.py_line(loop)
        machine = [f"sass {n}: {t[:120]}" for n, t in ctx.stage_at(lines[0], "sass") if "LDGSTS" in t][:3]
        findings.append(
            Finding(
                "tma-unused",
                "pointer-loads",
                f"the dot operands of the loop on line {loop_line} (loaded on lines {', '.join(map(str, lines))}) are "
                f"pipelined with cp.async ({len(widths)} 16-byte cp.async instructions a thread); no TMA, which "
                f"{ctx.target} has",
                ctx.where(lines[0], copies[:2], machine),
                "the operands are loaded through tensors of pointers (tl.load), which Triton pipelines with cp.async: "
                "each thread computes addresses and copies 16 bytes; TMA copies a whole tile per instruction, but "
                "Triton emits it only for a tensor descriptor",
                [
                    f"TTGIR: {len(copies)} ttg.async_copy_global_to_local in the loop (TTGIR line {loop.n}), "
                    "no ttng.async_tma_copy_global_to_local",
                    "decided by tritongpu-pipeline (pointer loads become cp.async; descriptor loads become TMA)",
                ],
                Fix(
                    "load the operands through tensor descriptors: tl.make_tensor_descriptor(a_ptr, shape=[M, K], "
                    "strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K]).load([m, k]) (see examples/tma_matmul.py)"
                ),
            )
        )
    return findings


_READS = {"tt.load", "ttg.local_load", "ttg.async_copy_global_to_local", "amdg.buffer_load"}


def _gathered(mod: ir.Module, copy: ir.Op) -> bool:
    """Whether the copy's addresses depend on a value read from memory (an index load)."""
    if not copy.operands:
        return False
    ops, _ = mod.producers(copy.operands[0])
    return any(op.name in _READS for op in ops)
