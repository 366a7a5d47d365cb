"""Rule low-occupancy: shared memory lets so few blocks onto a multiprocessor that some of its schedulers have
no warp at all, with the lines whose buffers take the memory and what would lift it.

The threshold: fewer resident warps (NVIDIA) / waves (AMD) per SM / CU than it has schedulers. An NVIDIA SM
(sm80, sm90, sm100) is four sub-partitions, each with its own warp scheduler and tensor cores; a warp stays on
one of them. An AMD CU is four SIMDs, each with its own MFMA unit, and a workgroup's waves are spread over them.
Under four warps (waves), a sub-partition (SIMD) and its matrix unit sit idle whatever the kernel does, so the
finding is true of any kernel. Above it, how many warps are enough depends on the kernel (a tensor-core
kernel is often built for one or two blocks an SM), so no finding: low occupancy on its own is no defect.

Only shared memory (LDS) can leave a scheduler idle so: registers cannot (255 registers x 32 lanes x 4 warps
is half an SM's 64K; an AMD SIMD holds at least one wave of 512 VGPRs), nor the warp or block limits.
"""

from __future__ import annotations

import math
import re

from irscope.explain import ir
from irscope.explain.context import Context
from irscope.explain.model import Finding, Fix
from irscope.kernel import hardware

SCHEDULERS = 4  # NVIDIA: SM sub-partitions (sm80 / sm90 / sm100); AMD: SIMDs per CU (CDNA3 / CDNA4)
_BUFFER = re.compile(r"ttg\.local_alloc\s*:\s*\(\)\s*->\s*!ttg\.memdesc<([\dx]+)x(\w+),")


def rule(ctx: Context) -> list[Finding]:
    try:
        chip = hardware.for_target(ctx.target)
    except KeyError:
        return []
    shared = int(ctx.stats.get("shared_bytes") or 0)
    if not shared:
        return []
    warps = int(ctx.options.get("num_warps") or ctx.module.num_warps)
    per_block = shared + chip.reserved_shared_per_block
    blocks = chip.shared_per_sm // per_block
    if blocks == 0 or blocks * warps >= SCHEDULERS:
        return []
    if ctx.vendor == "nvidia" and blocks >= chip.max_blocks_per_sm:
        return []
    buffers = _buffers(ctx)
    line = buffers[0][0] if buffers else 0
    unit, mem = ("warps", "shared memory") if ctx.vendor == "nvidia" else ("waves", "LDS")
    sched = "SM sub-partitions (warp schedulers)" if ctx.vendor == "nvidia" else "SIMDs"
    what = (
        f"{blocks} block{'s' if blocks > 1 else ''} of {warps} {unit} fit{'' if blocks > 1 else 's'} on a{' CU' if ctx.vendor == 'amd' else 'n SM'}: "
        f"{blocks * warps} {unit} for its {SCHEDULERS} {sched}, so {SCHEDULERS - blocks * warps} of them have none"
    )
    why = (
        f"each block needs {_kib(shared)} of {mem}"
        + (f" (+{_kib(chip.reserved_shared_per_block)} the driver reserves)" if chip.reserved_shared_per_block else "")
        + f" and the {chip.family} has {_kib(chip.shared_per_sm)} a{' CU' if ctx.vendor == 'amd' else 'n SM'}, "
        f"so only {blocks} {'fit' if blocks > 1 else 'fits'}; with num_warps={warps} that leaves {sched} without a {unit[:-1]} to issue"
    )
    evidence = [f"metadata: shared {shared} B per block; {chip.family}: {chip.shared_per_sm} B per SM/CU"]
    evidence += [f"line {n}: {_kib(b)} of buffers ({text})" for n, b, text in buffers[:3]]
    where = ctx.where(line, [], [])
    return [
        Finding("low-occupancy", "shared-memory", what, where, why, evidence, _fix(ctx, chip, shared, warps, blocks))
    ]


def _fix(ctx: Context, chip: hardware.Chip, shared: int, warps: int, blocks: int) -> Fix:
    stages = int(ctx.options.get("num_stages") or 0)
    per_stage = sum(b for _, b, _ in _buffers(ctx, per_stage=True))
    need = math.ceil(SCHEDULERS / warps)  # blocks an SM must hold at this num_warps
    fits = chip.shared_per_sm // need - chip.reserved_shared_per_block  # the most a block may use for that
    wider = 1 << (math.ceil(SCHEDULERS / blocks) - 1).bit_length()  # num_warps that fills them with `blocks`
    unit = "warps" if ctx.vendor == "nvidia" else "waves"
    for s in range(stages - 1, 1, -1):
        if per_stage and shared - (stages - s) * per_stage <= fits:
            return Fix(
                f"num_stages={s} (each stage's buffers take {_kib(per_stage)}: about "
                f"{_kib(shared - (stages - s) * per_stage)} a block, so {need} blocks fit), or smaller blocks; "
                f"or num_warps={wider} (the same buffers, {blocks * wider} {unit} an SM)",
                sets={"num_stages": s},
            )
    return Fix(
        f"num_warps={wider} (the same buffers, {blocks * wider} {unit} a{' CU' if ctx.vendor == 'amd' else 'n SM'}), "
        f"or smaller blocks (for {need} blocks to fit, a block may use at most {_kib(fits)})",
        sets={"num_warps": wider},
    )


def _buffers(ctx: Context, per_stage: bool = False) -> list[tuple[int, int, str]]:
    """(Python line, bytes, shape) of each shared buffer the kernel allocates (`local_alloc : () -> memdesc`),
    largest first; per_stage: one stage's share of each multi-buffered one (its leading dimension)."""
    out = []
    for op in ctx.module.ops:
        m = _BUFFER.search(op.text) if op.name == "ttg.local_alloc" else None
        if not m:
            continue
        dims = [int(d) for d in m.group(1).split("x")]
        bits = ir.TYPE_BITS.get(m.group(2), 32)
        if per_stage:
            if len(dims) < 3:
                continue
            dims = dims[1:]
        out.append((ctx.py_line(op), math.prod(dims) * bits // 8, f"{m.group(1)}x{m.group(2)}"))
    return sorted(out, key=lambda x: (-x[1], x[0]))


def _kib(b: int) -> str:
    return f"{b / 1024:.1f} KiB"
