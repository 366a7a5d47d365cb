"""Rule spills: registers spilled (ptxas's report; AMD's VGPRs to scratch, SGPRs into VGPR lanes), with the lines
that spill most and what would lift it."""

from __future__ import annotations

from typing import Any

from irscope.explain.context import Context
from irscope.explain.model import Finding, Fix


def rule(ctx: Context) -> list[Finding]:
    st = ctx.stats
    stored, loaded = int(st.get("spill_store_bytes") or 0), int(st.get("spill_load_bytes") or 0)
    vgprs, sgprs = int(st.get("vgpr_spill_count") or 0), int(st.get("sgpr_spill_count") or 0)
    if not (stored or loaded or vgprs or sgprs):
        return []
    lines = _spilling_lines(ctx)
    line = lines[0][0] if lines else 0
    warps = int(ctx.options.get("num_warps") or st.get("num_warps") or 4)
    regs = st.get("registers")
    occ = st.get("occupancy") or {}
    limit = f"occupancy {occ.get('occupancy', '?')}, limited by {occ.get('limited_by', '?')}"
    vector = stored or loaded or vgprs
    if ctx.vendor == "amd":
        parts = [f"{vgprs} VGPRs spilled to scratch ({st.get('scratch_bytes', 0)} B per lane)"] if vgprs else []
        parts += [f"{sgprs} SGPRs spilled into VGPR lanes (v_writelane / v_readlane)"] if sgprs else []
        what = "; ".join(parts)
        evidence = [f"amdgcn metadata: .vgpr_spill_count {vgprs}, .sgpr_spill_count {sgprs}"]
        allocator = "LLVM's AMDGPU backend"
    else:
        what = f"{stored} B of spill stores and {loaded} B of spill loads per thread ({regs} registers)"
        evidence = [
            f"ptxas: {st.get('stack_bytes', 0)} bytes stack frame, {stored} bytes spill stores, {loaded} bytes spill loads"
        ]
        allocator = "ptxas"
    evidence += [f"line {n}: {b} B of local-memory traffic per thread" for n, b in lines[:3]]
    if vector:
        why = (
            f"the values live at once need more registers than a thread may have with num_warps={warps} ({limit}); "
            f"the register allocator ({allocator}) moved the excess to local memory"
        )
        fix = (
            Fix(
                f"num_warps={warps * 2} (each thread holds half the tile) or smaller blocks",
                sets={"num_warps": warps * 2},
            )
            if warps < 16
            else Fix("smaller blocks")
        )
    else:
        why = (
            "the scalar values live at once (arguments, addresses, loop counters) need more SGPRs than a wave has; "
            f"{allocator} keeps the excess in VGPR lanes"
        )
        fix = Fix(
            "fewer scalars live at once (fewer arguments or loop-invariant addresses kept); SGPRs do not grow "
            "with num_warps"
        )
    where = ctx.where(line, [], [f"{ctx.machine_stage} {n}: {t[:120]}" for n, t in _spill_instructions(ctx, line)][:3])
    return [Finding("spills", "registers", what, where, why, evidence, fix)]


def _spilling_lines(ctx: Context) -> list[tuple[int, int]]:
    if ctx.source_map is None:
        return []
    out = []
    for e in ctx.source_map.get("lines") or []:
        figures: dict[str, Any] = dict((e.get("stages") or {}).get(ctx.machine_stage) or {})
        b = int(figures.get("spill_bytes") or 0)
        if b and e.get("line"):
            out.append((int(e["line"]), b))
    return sorted(out, key=lambda x: (-x[1], x[0]))


def _spill_instructions(ctx: Context, line: int) -> list[tuple[int, str]]:
    if not line:
        return []
    return [(n, t) for n, t in ctx.stage_at(line, ctx.machine_stage) if "LDL" in t or "STL" in t or "scratch_" in t]
