"""The Hopper/Blackwell machinery a kernel uses: warp-specialized partitions, TMA, mbarriers, TMEM, clusters.

What a Gluon or TLX author (or a Triton one using `tl.range(..., warp_specialize=True)`) asks after a
compile, read from what the compiler already wrote, each figure from the stage that decides it:

  partitions     {"default": {...}, "worker0": {...}} from TTGIR's ttg.warp_specialize op (Triton's automatic WS, gl.warp_specialize and
                 tlx.async_tasks all lower to it): its default region and each partitionN region with
                 num_warps(N), the workers' requestedRegisters / actualRegisters, and per region the
                 ops that say what runs there (TMA loads/stores, MMAs, mbarrier waits/arrives, TMEM,
                 shared and global memory). The default partition's register budget is the
                 setmaxnreg.inc the PTX gives it (or maxnreg), the workers' the setmaxnreg.dec
  requested      loops marked tt.warp_specialize in TTGIR that the compiler did not split (e.g.
                 Triton 3.6 on sm_90): said, not hidden
  descriptors    Triton's metadata (tensordesc_meta: block box, element size, swizzle) for host-side
                 descriptors; tt.make_tensor_descriptor for device-side ones
  mbarriers      ttng.init_barrier ops in TTGIR
  MMA            PTX wgmma / tcgen05.mma, and tcgen05 with cta_group::2 (CTA pairs)
  TMEM           metadata tmem_size (3.9+) or PTX tcgen05.alloc: columns allocated
  clusters       num_ctas, cluster dims, ttng.two-ctas; cluster launch control from PTX
"""

from __future__ import annotations

import re
from typing import Any

WS_OP = re.compile(r"ttg\.warp_specialize\(")
PARTITION_HEADER = re.compile(r"^(\s*)partition(\d+)\(.*\)\s*num_warps\((\d+)\)\s*\{\s*$")
DEFAULT_HEADER = re.compile(r"^(\s*)default\s*\{\s*$")
REGS_ATTR = {
    "requested": re.compile(r"requestedRegisters\s*=\s*array<i32:\s*([\d,\s]+)>"),
    "actual": re.compile(r"actualRegisters\s*=\s*array<i32:\s*([\d,\s]+)>"),
}
NUM_WARPS = re.compile(r'"ttg\.num-warps"\s*=\s*(\d+)')
REGION_OPS = {
    "tma_load": r"ttng\.async_tma_copy_global_to_local|ttng\.async_tma_gather|tt\.descriptor_load|tt\.descriptor_gather",
    "tma_store": r"ttng\.async_tma_copy_local_to_global|ttng\.async_tma_scatter|ttng\.async_tma_reduce"
    r"|tt\.descriptor_store|tt\.descriptor_scatter|tt\.descriptor_reduce",
    "mma": r"ttng\.warp_group_dot\b|ttng\.tc_gen5_mma\b|ttng\.tc_gen5_mma_scaled|tt\.dot\b|tt\.dot_scaled",
    "barrier_wait": r"ttng\.wait_barrier",
    "barrier_arrive": r"ttng\.arrive_barrier|ttng\.barrier_expect|ttng\.tc_gen5_commit",
    "tmem": r"ttng\.tmem_load|ttng\.tmem_store|ttng\.tmem_copy",
    "shared": r"ttg\.local_load|ttg\.local_store|ttg\.async_copy_global_to_local",
    "global": r"tt\.load\b|tt\.store\b|tt\.atomic",
}
SETMAXNREG = re.compile(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)")
TCGEN05_ALLOC = re.compile(r"tcgen05\.alloc\.cta_group::\d\S*\s+\[[^\]]+\],\s*(\d+)")
PTX_MACHINERY = {
    "wgmma": re.compile(r"^\s*(?:@!?%p\d+\s+)?wgmma\.mma_async", re.M),
    "tcgen05.mma": re.compile(r"^\s*(?:@!?%p\d+\s+)?tcgen05\.mma", re.M),
    "tcgen05.mma.cta_pair": re.compile(r"^\s*(?:@!?%p\d+\s+)?tcgen05\.mma\.cta_group::2", re.M),
    "cluster_launch_control": re.compile(r"clusterlaunchcontrol\.", re.M),
    "tma": re.compile(r"^\s*(?:@!?%p\d+\s+)?cp\.async\.bulk\.tensor", re.M),
    "mbarrier.init": re.compile(r"^\s*(?:@!?%p\d+\s+)?mbarrier\.init", re.M),
}


def facts(ttgir: str | None, ptx: str | None, metadata: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Everything above, or {} for a kernel that uses none of it (so plain kernels' summaries stay short)."""
    ttgir = ttgir or ""
    ptx = ptx or ""
    out: dict[str, Any] = {}
    regs = {
        kind: [int(n) for n in m.group(1).replace(" ", "").split(",") if n]
        for kind, rx in REGS_ATTR.items()
        if (m := rx.search(ttgir))
    }
    setmaxnreg = {
        "inc": sorted({int(n) for k, n in SETMAXNREG.findall(ptx) if k == "inc"}),
        "dec": sorted({int(n) for k, n in SETMAXNREG.findall(ptx) if k == "dec"}),
    }
    partitions = _partitions(ttgir, regs, setmaxnreg, options)
    if partitions:
        # keyed by name, so a diff reads machinery.partitions.worker0.registers: 24 -> 48
        out["partitions"] = {p.pop("name"): p for p in partitions}
        out["total_warps"] = int(metadata.get("num_warps") or 0) or None
    requested = len(re.findall(r"\{[^{}]*\btt\.warp_specialize\b", ttgir))
    if requested and not partitions:
        out["warp_specialize_not_applied"] = requested
    if setmaxnreg["inc"] or setmaxnreg["dec"]:
        out["setmaxnreg"] = setmaxnreg
    descs = [
        {
            "block": list(d.get("block_size") or []),
            "elem_bytes": d.get("elem_size"),
            "swizzle": d.get("swizzle"),
            "im2col": bool(d.get("is_im2col")),
        }
        for d in (metadata.get("tensordesc_meta") or [])
        if isinstance(d, dict)
    ]
    if descs:
        out["tma_descriptors"] = descs
    device_descs = len(re.findall(r"tt\.make_tensor_descriptor", ttgir))
    if device_descs:
        out["device_descriptors"] = device_descs
    if inits := len(re.findall(r"ttng\.init_barrier", ttgir)):
        out["mbarriers"] = inits
    counts = {k: len(rx.findall(ptx)) for k, rx in PTX_MACHINERY.items()}
    for k in ("wgmma", "tcgen05.mma", "tcgen05.mma.cta_pair", "cluster_launch_control"):
        if counts[k]:
            out[k] = counts[k]
    tmem = metadata.get("tmem_size")
    if not tmem and (m := TCGEN05_ALLOC.search(ptx)):
        tmem = int(m.group(1))
    if tmem:
        out["tmem_columns"] = int(tmem)
    cluster = _cluster(ttgir, metadata, options)
    if cluster:
        out["cluster"] = cluster
    return out


def _partitions(
    ttgir: str, regs: dict[str, list[int]], setmaxnreg: dict[str, list[int]], options: dict[str, Any]
) -> list[dict[str, Any]]:
    """default + partitionN regions of the (first) ttg.warp_specialize op, each with what runs there."""
    lines = ttgir.splitlines()
    start = next((i for i, line in enumerate(lines) if WS_OP.search(line)), None)
    if start is None:
        return []
    indent = len(lines[start]) - len(lines[start].lstrip())
    headers: list[tuple[int, str, int | None]] = []
    end = len(lines)
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if (m := DEFAULT_HEADER.match(line)) and len(m.group(1)) == indent:
            headers.append((i, "default", None))
        elif (m := PARTITION_HEADER.match(line)) and len(m.group(1)) == indent:
            headers.append((i, f"worker{m.group(2)}", int(m.group(3))))
        elif (
            line.strip().startswith("}")
            and len(line) - len(line.lstrip()) == indent
            and headers
            and not line.strip().startswith("} {")
        ):
            end = i
            if not _region_continues(lines, i + 1, indent):
                break
    module_warps = int(m.group(1)) if (m := NUM_WARPS.search(ttgir)) else None
    default_regs = max(setmaxnreg["inc"]) if setmaxnreg["inc"] else options.get("maxnreg")
    parts = []
    for n, (i, name, warps) in enumerate(headers):
        stop = headers[n + 1][0] if n + 1 < len(headers) else end
        body = "\n".join(lines[i + 1 : stop])
        ops = {k: len(re.findall(rx, body)) for k, rx in REGION_OPS.items()}
        if name == "default":
            part = {
                "name": name,
                "warps": module_warps,
                "registers": default_regs,
                "registers_from": "setmaxnreg" if setmaxnreg["inc"] else ("maxnreg" if default_regs else None),
            }
        else:
            k = n - 1
            actual = regs.get("actual") or []
            requested = regs.get("requested") or []
            chosen = actual[k] if k < len(actual) else (requested[k] if k < len(requested) else None)
            part = {
                "name": name,
                "warps": warps,
                "registers": chosen,
                "registers_from": ("actual" if k < len(actual) else "requested") if chosen else None,
            }
        part["ops"] = {k: v for k, v in ops.items() if v}
        parts.append(part)
    return parts


def _region_continues(lines: list[str], i: int, indent: int) -> bool:
    """After a region's closing brace at the op's indentation, another region header may follow."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i < len(lines) and bool(PARTITION_HEADER.match(lines[i]) or DEFAULT_HEADER.match(lines[i]))


def _cluster(ttgir: str, metadata: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """CTAs per cluster and CTA pairs, only when the kernel uses more than one CTA per cluster."""
    num_ctas = int(metadata.get("num_ctas") or options.get("num_ctas") or 1)
    dims = metadata.get("cluster_dims") or options.get("cluster_dims")
    dims = [int(d) for d in dims] if isinstance(dims, (list, tuple)) else None
    two_ctas = bool(re.search(r'"ttng\.two-ctas"\s*=\s*true', ttgir))
    if num_ctas > 1 or two_ctas or (dims and any(d > 1 for d in dims)):
        return {"num_ctas": num_ctas, "cluster_dims": dims, "two_ctas": two_ctas}
    return {}
