"""Resource use and instruction mix, read from the compiled artifacts on the CPU.

Sources, per vendor:
  NVIDIA  registers / spills / stack from ptxas' own -v report (Triton runs ptxas
          with -v); shared memory from Triton's metadata; instruction mix from PTX
          (vector widths, async copies, TMA, MMA, barriers) and SASS (opcodes).
  AMD     VGPR/AGPR/SGPR counts, spills, scratch and the compiler's own occupancy
          from the AMDGCN kernel metadata; instruction mix from AMDGCN.
  Both    convert_layouts, shared-memory ops and the layouts used, from TTGIR.
  Hopper/Blackwell: warp-specialized partitions, TMA descriptors, mbarriers, TMEM, clusters
          (machinery.py), under stats["machinery"].

Occupancy on NVIDIA is estimated from registers, shared memory and warps per
block against the chip's limits (hardware.py); on AMD it is the LLVM
backend's own figure (waves per SIMD), cross-checked with LDS use.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, cast

from irscope.artifacts import machinery
from irscope.kernel.targets import Target
from irscope.records import Stats

# ------------------------------------------------------------------ NVIDIA: ptxas report

PTXAS_REGS = re.compile(r"Used (\d+) registers")
PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
PTXAS_BARRIERS = re.compile(r"used (\d+) barriers")


def ptxas_resources(log: str) -> dict[str, int]:
    out: dict[str, int] = {}
    if m := PTXAS_REGS.search(log):
        out["registers"] = int(m.group(1))
    if m := PTXAS_FRAME.search(log):
        out["stack_bytes"] = int(m.group(1))
        out["spill_store_bytes"] = int(m.group(2))
        out["spill_load_bytes"] = int(m.group(3))
    if m := PTXAS_BARRIERS.search(log):
        out["named_barriers"] = int(m.group(1))
    return out


# ------------------------------------------------------------------ NVIDIA: PTX mix

PTX_MEM = re.compile(r"^\s*(?:@!?%p\d+\s+)?(ld|st)\.(global|shared(?::\w+)?)((?:\.[\w:]+)*)\s", re.M)
PTX_TYPE_BITS = {
    "b8": 8,
    "u8": 8,
    "s8": 8,
    "b16": 16,
    "u16": 16,
    "s16": 16,
    "f16": 16,
    "bf16": 16,
    "b32": 32,
    "u32": 32,
    "s32": 32,
    "f32": 32,
    "b64": 64,
    "u64": 64,
    "s64": 64,
    "f64": 64,
    "b128": 128,
}
PTX_OPS = {
    "mma.sync": re.compile(r"^\s*(?:@!?%p\d+\s+)?mma\.sync", re.M),
    "wgmma": re.compile(r"^\s*(?:@!?%p\d+\s+)?wgmma\.mma_async", re.M),
    "tcgen05.mma": re.compile(r"^\s*(?:@!?%p\d+\s+)?tcgen05\.mma", re.M),
    "cp.async": re.compile(r"^\s*(?:@!?%p\d+\s+)?cp\.async\.(?:ca|cg)\.", re.M),
    "tma": re.compile(r"^\s*(?:@!?%p\d+\s+)?cp\.async\.bulk\.tensor", re.M),
    "cp.async.bulk": re.compile(r"^\s*(?:@!?%p\d+\s+)?cp\.async\.bulk\.(?!tensor)", re.M),
    "ldmatrix": re.compile(r"^\s*(?:@!?%p\d+\s+)?ldmatrix", re.M),
    "stmatrix": re.compile(r"^\s*(?:@!?%p\d+\s+)?stmatrix", re.M),
    "bar.sync": re.compile(r"^\s*(?:@!?%p\d+\s+)?(?:bar|barrier)\.(?:sync|cta\.sync)", re.M),
    "mbarrier": re.compile(r"^\s*(?:@!?%p\d+\s+)?mbarrier\.", re.M),
}


def ptx_mix(ptx: str) -> dict[str, Any]:
    """Memory ops by space and width (bits per thread per instruction), plus key op counts."""
    widths: dict[str, Counter] = {
        "global_load": Counter(),
        "global_store": Counter(),
        "shared_load": Counter(),
        "shared_store": Counter(),
    }
    for m in PTX_MEM.finditer(ptx):
        op, space, mods = m.group(1), m.group(2), m.group(3).split(".")
        vec = next((int(x[1:]) for x in mods if re.fullmatch(r"v\d", x)), 1)
        bits = next((PTX_TYPE_BITS[x] for x in mods if x in PTX_TYPE_BITS), 0)
        kind = ("global" if space == "global" else "shared") + ("_load" if op == "ld" else "_store")
        widths[kind][str(vec * bits)] += 1
    out: dict[str, Any] = {k: dict(sorted(v.items(), key=lambda kv: -int(kv[0]))) for k, v in widths.items()}
    out.update({name: len(rx.findall(ptx)) for name, rx in PTX_OPS.items()})
    out["ld.global.v4"] = len(re.findall(r"^\s*(?:@!?%p\d+\s+)?ld\.global(?:\.[\w:]+)*\.v4\.", ptx, re.M))
    return out


# ------------------------------------------------------------------ NVIDIA: SASS mix

SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Z0-9_]+)*)", re.M)
SASS_CLASSES = {
    "mma": ("HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA", "UTCHMMA", "UTCIMMA", "UTCQMMA", "UTCOMMA"),
    "global_load": ("LDG",),
    "global_store": ("STG",),
    "shared_load": ("LDS", "LDSM"),
    "shared_store": ("STS", "STSM"),
    "async_copy": ("LDGSTS",),
    "tma": ("UTMALDG", "UTMASTG", "UBLKCP", "UTMAPF"),
    "local_load": ("LDL",),
    "local_store": ("STL",),
    "barrier": ("BAR", "SYNCS", "WARPSYNC"),
}


def sass_mix(sass: str) -> dict[str, Any]:
    ops: Counter[str] = Counter()
    ldg_widths: Counter[str] = Counter()
    for m in SASS_LINE.finditer(sass):
        op, mods = m.group(1), m.group(2)
        ops[op] += 1
        if op in ("LDG", "STG"):
            w = next((x for x in mods.split(".") if x in ("64", "128", "U8", "S8", "U16", "S16")), "32")
            ldg_widths[f"{op}.{w}"] += 1
    classes = {name: sum(ops[o] for o in members) for name, members in SASS_CLASSES.items()}
    return {
        "instructions": sum(ops.values()),
        "classes": classes,
        "global_widths": dict(ldg_widths),
        "top": dict(ops.most_common(12)),
    }


# ------------------------------------------------------------------ AMD

AMD_META = {
    "vgpr_count": r"\.vgpr_count:\s+(\d+)",
    "sgpr_count": r"\.sgpr_count:\s+(\d+)",
    "agpr_count": r"\.agpr_count:\s+(\d+)",
    "vgpr_spill_count": r"\.vgpr_spill_count:\s+(\d+)",
    "sgpr_spill_count": r"\.sgpr_spill_count:\s+(\d+)",
    "lds_static_bytes": r"\.group_segment_fixed_size:\s+(\d+)",
    "scratch_bytes": r"\.private_segment_fixed_size:\s+(\d+)",
    "arch_vgprs": r";\s*NumVgprs:\s+(\d+)",
    "acc_vgprs": r";\s*NumAgprs:\s+(\d+)",
    "compiler_occupancy": r";\s*Occupancy:\s+(\d+)",
}
AMD_INSTR = re.compile(
    r"^\s+([sv]_[a-z0-9_]+|global_[a-z0-9_]+|buffer_[a-z0-9_]+|ds_[a-z0-9_]+|flat_[a-z0-9_]+|scratch_[a-z0-9_]+)\b(.*)$",
    re.M,
)
AMD_WIDTH = {
    "ubyte": 8,
    "sbyte": 8,
    "byte": 8,
    "ushort": 16,
    "sshort": 16,
    "short": 16,
    "short_d16": 16,
    "dword": 32,
    "dwordx2": 64,
    "dwordx3": 96,
    "dwordx4": 128,
    "b8": 8,
    "u8": 8,
    "i8": 8,
    "b16": 16,
    "u16": 16,
    "i16": 16,
    "b32": 32,
    "b64": 64,
    "b96": 96,
    "b128": 128,
}


def amd_resources(asm: str) -> dict[str, int]:
    out = {}
    for key, rx in AMD_META.items():
        if m := re.search(rx, asm):
            out[key] = int(m.group(1))
    return out


def amd_mix(asm: str) -> dict[str, Any]:
    ops: Counter[str] = Counter()
    widths: dict[str, Counter] = {"global_load": Counter(), "global_store": Counter()}
    async_lds = 0
    for m in AMD_INSTR.finditer(asm):
        op, rest = m.group(1), m.group(2)
        ops[op] += 1
        for prefix, kind in (
            ("global_load_", "global_load"),
            ("buffer_load_", "global_load"),
            ("global_store_", "global_store"),
            ("buffer_store_", "global_store"),
        ):
            if op.startswith(prefix):
                suffix = op[len(prefix) :]
                if suffix.startswith("lds_") or " lds" in rest:
                    async_lds += 1
                    break
                widths[kind][str(AMD_WIDTH.get(suffix, 0))] += 1
                break
    count = lambda pred: sum(n for o, n in ops.items() if pred(o))
    return {
        "instructions": sum(ops.values()),
        "mfma": count(lambda o: o.startswith("v_mfma")),
        "wmma": count(lambda o: o.startswith("v_wmma")),
        "global_load": dict(sorted(widths["global_load"].items(), key=lambda kv: -int(kv[0]))),
        "global_store": dict(sorted(widths["global_store"].items(), key=lambda kv: -int(kv[0]))),
        "lds_load": count(lambda o: o.startswith(("ds_read", "ds_load"))),
        "lds_store": count(lambda o: o.startswith(("ds_write", "ds_store"))),
        "async_copy_to_lds": async_lds,
        "barrier": ops["s_barrier"],
        "scratch_ops": count(lambda o: o.startswith("scratch_") or "buffer_" in o and "scratch" in o),
        "top": dict(ops.most_common(12)),
    }


# ------------------------------------------------------------------ TTGIR

LAYOUT_DEF = re.compile(r"^#(\w+) = #(ttg|ttng|amdgpu|triton_gpu)\.(\w+)<(.*)>\s*$", re.M)
NUM_WARPS = re.compile(r'"ttg\.num-warps"\s*=\s*(\d+)')
TTGIR_OPS = {
    "convert_layout": r"ttg\.convert_layout",
    "local_alloc": r"ttg\.local_alloc",
    "local_load": r"ttg\.local_load",
    "local_store": r"ttg\.local_store",
    "async_copy": r"ttg\.async_copy_global_to_local|amdg(?:pu)?\.buffer_load_to_local",
    "tma_load": r"ttng\.async_tma_copy_global_to_local|tt\.descriptor_load",
    "dot": r"tt\.dot\b|ttng\.warp_group_dot|ttng\.tc_gen5_mma|tt\.dot_scaled",
    "barrier": r"gpu\.barrier|ttng\.barrier_expect|ttng\.wait_barrier",
    "loops": r"scf\.for\b",
}


def ttgir_facts(ttgir: str) -> dict[str, Any]:
    layouts = [{"alias": m.group(1), "kind": m.group(3), "params": m.group(4)} for m in LAYOUT_DEF.finditer(ttgir)]
    body = "\n".join(line for line in ttgir.splitlines() if not line.startswith("#"))
    facts: dict[str, Any] = {k: len(re.findall(rx, body)) for k, rx in TTGIR_OPS.items()}
    if m := NUM_WARPS.search(ttgir):
        facts["num_warps"] = int(m.group(1))
    facts["layouts"] = layouts
    return facts


# ------------------------------------------------------------------ occupancy


def nvidia_occupancy(target: Target, registers: int, shared: int, num_warps: int) -> dict[str, Any]:
    hw = target.hardware
    regs_per_warp = math.ceil(max(registers, 1) * 32 / hw.reg_alloc_unit) * hw.reg_alloc_unit
    limits = {
        "warps": hw.max_warps_per_sm // num_warps,
        "registers": (hw.regs_per_sm // regs_per_warp) // num_warps,
        "shared_memory": hw.shared_per_sm // (shared + hw.reserved_shared_per_block),
        "blocks": hw.max_blocks_per_sm,
    }
    blocks = min(limits.values())
    limiter = min(limits, key=lambda k: limits[k])
    warps = blocks * num_warps
    return {
        "blocks_per_sm": blocks,
        "warps_per_sm": warps,
        "occupancy": round(warps / hw.max_warps_per_sm, 3),
        "limited_by": limiter,
    }


def amd_occupancy(target: Target, res: dict[str, int], shared: int, num_warps: int) -> dict[str, Any]:
    hw = target.hardware
    vgprs = res.get("vgpr_count", 0)
    by_vgpr = (
        hw.max_warps_per_sm if vgprs == 0 else min(hw.max_warps_per_sm, hw.regs_per_sm // (math.ceil(vgprs / 8) * 8))
    )
    by_lds = hw.max_warps_per_sm
    if shared:
        # the workgroups whose LDS fits on a CU, their waves spread over its SIMDs: the busiest SIMD's
        # waves (one workgroup of 2 waves is 1 wave on each of 2 SIMDs, not 0; explain's low-occupancy
        # finding says the idle ones)
        groups = hw.shared_per_sm // shared
        by_lds = min(hw.max_warps_per_sm, math.ceil(groups * num_warps / hw.simds_per_cu))
    waves = min(by_vgpr, by_lds)
    compiler = res.get("compiler_occupancy")
    if compiler is not None:
        waves = min(waves, compiler)
    limiter = "lds" if by_lds < by_vgpr else "vgprs"
    return {
        "waves_per_simd": waves,
        "occupancy": round(waves / hw.max_warps_per_sm, 3),
        "limited_by": limiter,
        "compiler_occupancy": compiler,
    }


# ------------------------------------------------------------------ all together


def compute(art, target: Target) -> Stats:
    stages = art.stages
    shared = int(art.metadata.get("shared") or 0)
    num_warps = int(art.metadata.get("num_warps") or art.options.get("num_warps") or 4)
    stats: dict[str, Any] = {"shared_bytes": shared, "num_warps": num_warps}
    if isinstance(stages.get("ttgir"), str):
        stats["ttgir"] = ttgir_facts(stages["ttgir"])
    if target.is_nvidia:
        res = ptxas_resources(art.ptxas_log)
        stats.update(res)
        stats["spills"] = res.get("spill_store_bytes", 0) + res.get("spill_load_bytes", 0)
        stats["local_bytes"] = res.get("stack_bytes", 0)
        if "registers" in res:
            stats["occupancy"] = nvidia_occupancy(target, res["registers"], shared, num_warps)
        if isinstance(stages.get("ptx"), str):
            stats["ptx"] = ptx_mix(stages["ptx"])
        if isinstance(stages.get("sass"), str):
            stats["sass"] = sass_mix(stages["sass"])
        ptx = stages.get("ptx") if isinstance(stages.get("ptx"), str) else None
        if found := machinery.facts(
            stages.get("ttgir") if isinstance(stages.get("ttgir"), str) else None,
            ptx,
            dict(art.metadata),
            dict(art.options),
        ):
            stats["machinery"] = found
    else:
        asm = stages.get("amdgcn") or ""
        res = amd_resources(asm)
        stats.update(res)
        stats["registers"] = res.get("vgpr_count", 0)
        stats["spills"] = res.get("vgpr_spill_count", 0) + res.get("sgpr_spill_count", 0)
        stats["local_bytes"] = res.get("scratch_bytes", 0)
        stats["occupancy"] = amd_occupancy(target, res, shared, num_warps)
        stats["amdgcn"] = amd_mix(asm)
    return cast(Stats, stats)  # built from the resource readers' dicts, keys as records.Stats names them
