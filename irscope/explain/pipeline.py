"""Rule loop-not-pipelined: in a loop with a dot, an operand's global load stays a synchronous load although
num_stages asks for a pipeline (NVIDIA sm80+).

The software pipeliner (tritongpu-pipeline; its latency assignment) pipelines a dot operand's load as an async
copy (cp.async: 4, 8 or 16 bytes) or TMA; a load narrower than 4 bytes per thread cannot be copied
asynchronously and is left out of the schedule. The rule finds the tt.load left in the loop, reads its width
and names why it is narrow (the narrow-access causes)."""

from __future__ import annotations

from irscope.explain import access, ir
from irscope.explain.context import Context
from irscope.explain.model import Finding, Fix

_DOT_OPS = {"tt.dot", "ttng.warp_group_dot", "ttng.tc_gen5_mma"}
_PIPELINED = {
    "ttg.async_copy_global_to_local",
    "ttng.async_tma_copy_global_to_local",
    "ttng.async_copy_global_to_local",
}


def feeds_dot(mod: ir.Module, value: str, loop: int, depth: int = 0) -> bool:
    for use in mod.uses.get(value, []):
        if loop not in use.loops:
            continue
        if use.name in _DOT_OPS:
            return True
        if depth < 6 and any(feeds_dot(mod, r, loop, depth + 1) for r in use.results):
            return True
    return False


def rule(ctx: Context) -> list[Finding]:
    stages = int(ctx.options.get("num_stages") or 0)
    if ctx.vendor != "nvidia" or ctx.arch < 80 or stages < 2:
        return []
    mod = ctx.module
    loops = {op.n: op for op in mod.ops if op.name == "scf.for"}
    findings = []
    for op in mod.ops:
        if op.name != "tt.load" or not op.loops or not (ts := mod.tensors(op)) or not ts[0].pointer:
            continue
        loop = op.loops[-1]
        if not op.results or not feeds_dot(mod, op.results[0], loop):
            continue
        line = ctx.py_line(op)
        widths = access.machine_widths([t for _, t in ctx.stage_at(line, "llir")], "load", "nvidia")
        if not widths or max(widths) >= 32:
            continue
        others = [o for o in mod.ops if o.name in _PIPELINED and loop in o.loops]
        machine = [
            f"sass {n}: {t[:120]}" for n, t in ctx.stage_at(line, "sass") if access.SASS_GLOBAL["load"].search(t)
        ][:3]
        loop_line = ctx.py_line(loops[loop]) if loop in loops else 0
        found = access.causes(ctx, op)
        if not found:
            continue
        tag, why, evidence, args, fix = access.merge(found)
        findings.append(
            Finding(
                "loop-not-pipelined",
                tag,
                f"the dot operand loaded on line {line} stays a synchronous global load inside the loop of line "
                f"{loop_line} (num_stages={stages}); "
                + (
                    f"{len(others)} async copies of other loads in the loop are pipelined"
                    if others
                    else "no load of the loop is pipelined"
                ),
                ctx.where(line, [op], machine),
                f"the load moves {max(widths)} bits per thread and cp.async copies at least 32, so the software "
                f"pipeliner leaves it out of the schedule; it is narrow because {why}",
                [
                    f"TTGIR {op.n}: tt.load inside scf.for (TTGIR line {loop}), not ttg.async_copy_global_to_local",
                    *evidence,
                    "decided by tritongpu-pipeline (the latency assignment skips loads under 32 bits)",
                ],
                Fix(fix, args=args),
            )
        )
    return findings
