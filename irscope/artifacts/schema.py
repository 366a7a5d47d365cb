"""The one schema of a dump folder's JSON (manifest.json, map.json), checked where it is read.

A dump folder travels between people and can arrive damaged (truncated, hand-edited, written by a
newer or older irscope, or crafted). Every reader goes through it (artifacts.read_manifest,
sourcemap.load, compare.sides.load_side): a file that is not JSON, is empty, is not UTF-8, nests past
what the parser can take, holds an integer of thousands of digits, or has a field of the wrong type
for what irscope reads is one BadInput line naming the file and the field (`manifest.json
stats.occupancy.occupancy is "high", expected a number`), never a TypeError deep in a view. The
checker is kernel/jsonfile.py's; this module holds the schemas: the fields irscope reads, nothing
else, so a newer irscope's extra fields still read.
"""

from __future__ import annotations

from irscope.kernel.jsonfile import (  # noqa: F401  (the checker, for the readers of dump folders)
    ANY,
    NUMBER,
    ListOf,
    MapOf,
    Maybe,
    OneOf,
    Req,
    check,
    load,
    parse,
    parse_text,
    validate,
)

# ------------------------------------------------------------------ manifest.json

COUNTS = MapOf(NUMBER)
NUMBER_TREE = MapOf(OneOf((NUMBER, COUNTS), "a number or an object of numbers"))
LAYOUT = {"alias": str, "kind": str, "params": str}

STATS = {
    **{k: Maybe(NUMBER) for k in ("registers", "spills", "spill_store_bytes", "spill_load_bytes", "shared_bytes",
                                  "num_warps", "stack_bytes", "local_bytes", "named_barriers", "vgpr_count",
                                  "sgpr_count", "agpr_count", "arch_vgprs", "acc_vgprs", "vgpr_spill_count",
                                  "sgpr_spill_count", "lds_static_bytes", "scratch_bytes", "compiler_occupancy")},
    "occupancy": Maybe({"occupancy": Req(NUMBER), "limited_by": Req(str), "blocks_per_sm": NUMBER,
                        "warps_per_sm": NUMBER, "waves_per_simd": NUMBER, "compiler_occupancy": Maybe(NUMBER)}),
}

# the instruction mix of each stage that has one (artifacts/stats.py); what the report's cards and
# charts index (report/model.py resources, charts) is required
STATS["sass"] = Maybe({"instructions": Req(NUMBER), "classes": Req(COUNTS), "top": Req(COUNTS),
                       "global_widths": COUNTS})
STATS["ptx"] = Maybe(NUMBER_TREE)
STATS["amdgcn"] = Maybe({**{k: Req(NUMBER) for k in ("instructions", "mfma", "wmma", "lds_load", "lds_store",
                                                     "async_copy_to_lds", "barrier", "scratch_ops")},
                         "global_load": COUNTS, "global_store": COUNTS, "top": Req(COUNTS)})
STATS["ttgir"] = Maybe({"layouts": ListOf(LAYOUT), **{k: NUMBER for k in (
    "convert_layout", "local_alloc", "local_load", "local_store", "async_copy", "tma_load", "dot", "barrier",
    "loops", "num_warps")}})

PASS = {"index": Req(int), "stage": Req(str), "name": Req(str), "arg": Req(str), "added": int, "removed": int,
        "file": Req(str)}

MANIFEST = {
    "irscope": Req(ANY),
    "kernel": Req(str),
    "target": Req(str),
    "stages": Req(MapOf(str)),
    "file": str,
    "target_reason": str,
    "signature": str,
    "args": MapOf(str),
    "triton_version": str,
    "options": dict,
    "user_options": dict,
    "option_sources": dict,
    "env": dict,
    "times_ms": Maybe(MapOf(NUMBER)),
    "metadata": dict,
    "stats": Maybe(STATS),
    "notes": Maybe(ListOf(str)),
    "passes": Maybe(ListOf(PASS)),
    "key": str,
    "recipe": Maybe(dict),
    "pins": Maybe(ListOf(dict)),
    "map": Maybe(str),
    "files": Maybe(MapOf(str)),
}

# ------------------------------------------------------------------ map.json

FIG = {"n": Req(NUMBER), "at": ListOf(int), "ops": COUNTS, "classes": COUNTS, "spill_bytes": NUMBER,
       "regs": NUMBER, "layouts": list}
LINE = {"file": Req(str), "line": Req(int), "text": Maybe(str), "stages": Req(MapOf(FIG)),
        "callees": ListOf({"file": Req(str), "line": Req(int), "text": Maybe(str), "stages": Req(MapOf(FIG))})}
MAP = {
    "irscope_map": Req(ANY),
    "kernel_file": Req(str),
    "machine": Maybe(str),
    "stages": MapOf({"file": str, "units": NUMBER, "mapped": NUMBER}),
    "lines": Req(ListOf(LINE)),
    "no_line": Maybe(MapOf(FIG)),
    "files": Maybe(MapOf(NUMBER)),
}



# ------------------------------------------------------------------ profile.json (irscope profile, #32)

STALLS = MapOf(NUMBER)      # stall reason (ncu's short names: long_sb, wait, barrier, ...) -> samples
PROFILE_LINE = {"file": Req(str), "line": Req(int), "text": Maybe(str), "samples": Req(NUMBER), "share": Req(NUMBER),
                "stalls": STALLS, "executed": NUMBER, "bytes": NUMBER,
                # what the line became (map.json) and, with --passes, the passes that added its ops
                "ttgir": COUNTS, "sass_ops": COUNTS, "passes": ListOf(str)}
PROFILE_INSTRUCTION = {"offset": Req(int), "sass": Req(str), "file": Maybe(str), "line": Maybe(int),
                       "samples": Req(NUMBER), "stalls": STALLS, "executed": NUMBER, "bytes": NUMBER}
PROFILE = {
    "irscope_profile": Req(int),
    "kernel": Req(str),
    "tool": Req(str),                    # what measured it: "ncu 2025.3.1.0" or "proton pcsampling"
    "device": str,                       # the GPU's name as the tool read it
    "command": str,                      # the command line that recorded it
    "chip": str,                         # the chip table's key for the device (the peaks' source), "" unknown
    "bytes_from": str,                   # what per-line bytes count: "l2_sectors" (ncu: L2 sectors x 32), "" none
    "totals": Req({"samples": Req(NUMBER), "stalls": STALLS, "executed": NUMBER, "bytes": NUMBER,
                   "duration_ns": Maybe(NUMBER), "dram_bytes": Maybe(NUMBER), "dram_gbps": Maybe(NUMBER),
                   "dram_peak_share": Maybe(NUMBER), "tensor_tflops": Maybe(NUMBER),
                   "tensor_peak_share": Maybe(NUMBER), "tensor_flops": Maybe(NUMBER),
                   "peak_dram_gbps": Maybe(NUMBER), "peak_tensor_tflops": Maybe(NUMBER)}),
    "lines": Req(ListOf(PROFILE_LINE)),
    "instructions": ListOf(PROFILE_INSTRUCTION),
    "unmapped": {"samples": NUMBER, "executed": NUMBER},
}
