"""Rule loop-not-pipelined: in a loop with a dot, an operand's global load stays a synchronous load although
num_stages asks for a pipeline (NVIDIA sm80+; AMD for while loops).

Two causes are traced:
- narrow loads (NVIDIA): the software pipeliner (tritongpu-pipeline; its latency assignment) pipelines a dot
  operand's load as an async copy (cp.async: 4, 8 or 16 bytes) or TMA; a load narrower than 4 bytes per thread
  cannot be copied asynchronously and is left out of the schedule. The rule finds the tt.load left in the
  loop, reads its width and names why it is narrow (the narrow-access causes).
- `while-loop` (NVIDIA and AMD): the pipeliners (NVIDIA's assignLatencies / scheduleLoops / lowerLoops, AMD's
  stream pipeliner) collect only `scf::ForOp`s; a Python `while` becomes `scf.while`, whose loads are never
  staged, whatever num_stages says. The rule finds a dot operand's global load inside an scf.while.
- `no-dot` (NVIDIA sm80+ and AMD): the latency assignment (NVIDIA) and the stream pipeliner (AMD) stage the
  loads of a loop without a dot only when the loop itself carries `tt.num_stages` (`pipelineWithoutDot =
  forOp->hasAttr(kNumStagesAttrName)`, set by `tl.range(..., num_stages=N)`); the kernel's num_stages, asked
  for with --set or a recipe, does not reach it. Reported only where num_stages was asked (not Triton's
  default) and the load is wide enough (32 bits a thread) for the pipeliner to take it once asked.
- `indirect-2-stages` (NVIDIA sm80+ and AMD): a load whose values make another load's addresses (a gather's
  index) sits one indirection level above the dot; the latency assignment puts loads of different levels in
  different stages, and with num_stages=2 "we will have no stage available for indirect loads with dist >= 1"
  (AssignLatencies.cpp; AMD's stream pipeliner the same), so the index load stays synchronous and the
  dependent copy waits for it each iteration. Found where the index load's value reaches another load's
  address in the same iteration (not through the loop's carried values, which is how a staged one arrives)."""

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


_GLOBAL_LOADS = {"tt.load", "amdg.buffer_load"}


def feeds_dot(mod: ir.Module, value: str, loop: int, depth: int = 0, whiles: bool = False) -> bool:
    """Whether the value reaches a dot inside the same loop (an scf.for's TTGIR line; an scf.while's if `whiles`)."""
    for use in mod.uses.get(value, []):
        if loop not in (use.whiles if whiles else use.loops):
            continue
        if use.name in _DOT_OPS or use.name == "tt.dot_scaled":
            return True
        if depth < 6 and any(feeds_dot(mod, r, loop, depth + 1, whiles) for r in use.results):
            return True
    return False


def rule(ctx: Context) -> list[Finding]:
    stages = int(ctx.options.get("num_stages") or 0)
    out = _while_loops(ctx, stages) + _loops_without_dot(ctx, stages) + _indirect_loads(ctx, stages)
    if ctx.vendor != "nvidia" or ctx.arch < 80 or stages < 2:
        return out
    return out + _narrow_loads(ctx, stages)


def _loops_without_dot(ctx: Context, stages: int) -> list[Finding]:
    asked = "num_stages" in (ctx.manifest.get("option_sources") or {})  # set by the command line or a recipe
    if not asked or stages < 2 or (ctx.vendor == "nvidia" and ctx.arch < 80):
        return []
    mod = ctx.module
    findings = []
    for loop in (op for op in mod.ops if op.name == "scf.for"):
        inside = [o for o in mod.ops if loop.n in o.loops]
        if "tt.num_stages" in loop.tail or any(o.name in _DOT_OPS | _PIPELINED | {"tt.dot_scaled"} for o in inside):
            continue
        for op in inside:
            if op.name not in _GLOBAL_LOADS or op.loops[-1] != loop.n or not op.results or not mod.tensors(op):
                continue
            line = ctx.py_line(op)
            code = ctx.stage_at(line, "amdgcn" if ctx.vendor == "amd" else "llir")
            widths = access.machine_widths([t for _, t in code], "load", ctx.vendor)
            if not widths or max(widths) < 32:  # a load the pipeliner filters as small: asking would not help
                continue
            findings.append(_no_dot(ctx, op, loop, line, stages))
    return findings


def _no_dot(ctx: Context, op: ir.Op, loop: ir.Op, line: int, stages: int) -> Finding:
    loop_line = ctx.py_line(loop)
    pattern = access.SASS_GLOBAL["load"] if ctx.vendor == "nvidia" else access.AMD_GLOBAL_LOAD
    machine = [
        f"{ctx.machine_stage} {n}: {t[:120]}" for n, t in ctx.stage_at(line, ctx.machine_stage) if pattern.search(t)
    ]
    source = (ctx.manifest.get("option_sources") or {}).get("num_stages", "the options")
    return Finding(
        "loop-not-pipelined",
        "no-dot",
        f"the global load on line {line} stays a synchronous load inside the loop of line {loop_line}, although "
        f"num_stages={stages} was asked ({source}); the loop has no dot",
        ctx.where(line, [op], machine[:3]),
        "the software pipeliner stages the loads of a loop without a dot only when the loop itself asks for stages "
        "(a tt.num_stages attribute on the scf.for, from tl.range(..., num_stages=N)); the kernel's num_stages "
        "applies to loops with a dot, so each iteration waits for its own load",
        [
            f"TTGIR {op.n}: {op.name} inside scf.for (TTGIR line {loop.n}), which has no tt.num_stages and no dot",
            "decided by "
            + ("tritongpu-pipeline" if ctx.vendor == "nvidia" else "tritonamdgpu-stream-pipeline")
            + " (pipelineWithoutDot: only with the loop's own tt.num_stages)",
        ],
        Fix(
            f"ask for this loop: `for ... in tl.range(start, end, step, num_stages={stages}):` "
            "(the loop's loads then prefetch that many iterations ahead)"
        ),
    )


def _while_loops(ctx: Context, stages: int) -> list[Finding]:
    if stages < 2 or (ctx.vendor == "nvidia" and ctx.arch < 80):
        return []
    mod = ctx.module
    whiles = {op.n: op for op in mod.ops if op.name == "scf.while"}
    findings = []
    for op in mod.ops:
        if op.name not in _GLOBAL_LOADS or not op.whiles or not op.results:
            continue
        loop = op.whiles[-1]
        if op.loops and loop < op.loops[-1]:  # inside an scf.for nested in the while: that for is the loop
            continue
        if not feeds_dot(mod, op.results[0], loop, whiles=True):
            continue
        line = ctx.py_line(op)
        loop_line = ctx.py_line(whiles[loop]) if loop in whiles else 0
        pattern = access.SASS_GLOBAL["load"] if ctx.vendor == "nvidia" else access.AMD_GLOBAL_LOAD
        machine = [
            f"{ctx.machine_stage} {n}: {t[:120]}" for n, t in ctx.stage_at(line, ctx.machine_stage) if pattern.search(t)
        ][:3]
        pipeliner = "tritongpu-pipeline" if ctx.vendor == "nvidia" else "tritonamdgpu-stream-pipeline"
        findings.append(
            Finding(
                "loop-not-pipelined",
                "while-loop",
                f"the dot operand loaded on line {line} stays a synchronous global load inside the `while` loop of "
                f"line {loop_line} (num_stages={stages}); nothing of the loop is pipelined",
                ctx.where(line, [op], machine),
                "a Python `while` loop becomes scf.while, and the software pipeliner only schedules scf.for loops "
                "(it collects `scf::ForOp`s), so the load is issued and waited for in the same iteration as its dot",
                [
                    f"TTGIR {op.n}: {op.name} inside scf.while (TTGIR line {loop}), no scf.for around it",
                    f"decided by {pipeliner} (it walks scf.for loops only)",
                ],
                Fix(
                    "write the loop as `for k in range(0, K, BLOCK_K):` (a counted loop the pipeliner can stage); "
                    "a data-dependent bound is fine as the range's end"
                ),
            )
        )
    return findings


def _narrow_loads(ctx: Context, stages: int) -> list[Finding]:
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


_ADDRESSED = _GLOBAL_LOADS | _PIPELINED | {"amdg.buffer_load_to_local"}


def _same_iteration_loads(mod: ir.Module, value: str, loop: int, seen: set[str]) -> list[ir.Op]:
    """The loads of the loop whose operands the value reaches within one iteration (not through scf.yield)."""
    out = []
    for use in mod.uses.get(value, []):
        if loop not in use.loops or use.name == "scf.yield":
            continue
        if use.name in _ADDRESSED:
            out.append(use)
            continue
        for r in use.results:
            if r not in seen:
                seen.add(r)
                out += _same_iteration_loads(mod, r, loop, seen)
    return out


def _indirect_loads(ctx: Context, stages: int) -> list[Finding]:
    if stages != 2 or (ctx.vendor == "nvidia" and ctx.arch < 80):
        return []
    mod = ctx.module
    findings = []
    for loop in (op for op in mod.ops if op.name == "scf.for"):
        inside = [o for o in mod.ops if loop.n in o.loops]
        if not any(o.name in _DOT_OPS or o.name == "tt.dot_scaled" for o in inside):
            continue
        for op in inside:
            if op.name not in _GLOBAL_LOADS or op.loops[-1] != loop.n or not op.results:
                continue
            targets = [t for t in _same_iteration_loads(mod, op.results[0], loop.n, set()) if t is not op]
            line = ctx.py_line(op)
            code = ctx.stage_at(line, "amdgcn" if ctx.vendor == "amd" else "llir")
            widths = access.machine_widths([t for _, t in code], "load", ctx.vendor)
            if not targets or not widths or max(widths) < 32:  # under 32 bits the pipeliner filters it anyway
                continue
            findings.append(_indirect(ctx, op, loop, line, sorted({ctx.py_line(t) for t in targets})))
    return findings


def _indirect(ctx: Context, op: ir.Op, loop: ir.Op, line: int, dependent: list[int]) -> Finding:
    pattern = access.SASS_GLOBAL["load"] if ctx.vendor == "nvidia" else access.AMD_GLOBAL_LOAD
    machine = [
        f"{ctx.machine_stage} {n}: {t[:120]}" for n, t in ctx.stage_at(line, ctx.machine_stage) if pattern.search(t)
    ]
    lines = ", ".join(str(n) for n in dependent)
    return Finding(
        "loop-not-pipelined",
        "indirect-2-stages",
        f"the load on line {line}, whose values make the addresses of the load on line {lines}, stays a synchronous "
        f"load inside the loop of line {ctx.py_line(loop)} (num_stages=2): each iteration waits for it before the "
        "dependent load can start",
        ctx.where(line, [op], machine[:3]),
        "the pipeliner puts a load that feeds another load's address one stage before it (indirection level 1, two "
        "stages above the dot); with num_stages=2 there is no stage for it, so it is left in the loop body and "
        "used in the same iteration",
        [
            f"TTGIR {op.n}: {op.name} inside scf.for (TTGIR line {loop.n}); its value reaches the address of the "
            f"load on line {lines} in the same iteration, not through the loop's carried values",
            "decided by "
            + ("tritongpu-pipeline" if ctx.vendor == "nvidia" else "tritonamdgpu-stream-pipeline")
            + ' (latency assignment: "no stage available for indirect loads with dist >= 1" at 2 stages)',
        ],
        Fix("num_stages=3 (a stage for the index load, one for the data it addresses)", sets={"num_stages": 3}),
    )
