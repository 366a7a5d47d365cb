"""The stand-in nvidia-smi / rocm-smi: run as a program (identity.smi_on_path writes the launcher).

Answers the common query forms as the chip in IRSCOPE_SMI_FACTS (JSON from identity.chip_facts);
anything else is said on stderr with exit 9 (what nvidia-smi does for an unknown option).
It starts in a fresh interpreter for each call and imports only irscope.knobs (the standard library's
json and os) from the checkout it belongs to.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if not __package__:  # run as a program (the launcher): this file's irscope, whatever else is installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from irscope import knobs  # noqa: E402

UUID = "GPU-1a2b3c4d-0000-4000-8000-000000000000"


def nvidia(args: list[str], f: dict) -> int:
    mem = f["memory_mib"]
    fields = {
        "name": f["name"],
        "gpu_name": f["name"],
        "memory.total": f"{mem} MiB",
        "memory.used": "0 MiB",
        "memory.free": f"{mem} MiB",
        "driver_version": f["driver"],
        "index": "0",
        "count": "1",
        "uuid": UUID,
        "gpu_uuid": UUID,
        "pci.bus_id": "00000000:00:00.0",
        "compute_cap": f["capability"],
        "clocks.max.sm": f"{f['sm_clock_mhz']} MHz",
        "clocks.sm": f"{f['sm_clock_mhz']} MHz",
        "clocks.max.mem": f"{f['mem_clock_mhz']} MHz",
        "utilization.gpu": "0 %",
        "temperature.gpu": "30",
        "power.draw": "70.00 W",
        "persistence_mode": "Enabled",
        "mig.mode.current": "Disabled",
    }
    query = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
    if query is None and "--query-gpu" in args:
        i = args.index("--query-gpu")
        query = args[i + 1] if i + 1 < len(args) else ""
    fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "")
    if "-L" in args or "--list-gpus" in args:
        print(f"GPU 0: {f['name']} (UUID: {UUID})")
        return 0
    if query is not None:
        names = [q.strip() for q in query.split(",") if q.strip()]
        unknown = [q for q in names if q not in fields]
        if unknown:
            print(f'Field "{unknown[0]}" is not a valid field to query.', file=sys.stderr)
            return 2
        values = [fields[q] for q in names]
        if "nounits" in fmt:
            values = [v.split(" ")[0] if v.endswith((" MiB", " MHz", " W", " %")) else v for v in values]
        if "csv" in fmt and "noheader" not in fmt:
            print(", ".join(names))
        print(", ".join(values))
        return 0
    if args and args[0] not in ("-q", "--query"):
        print(f"Invalid combination of input arguments: {' '.join(args)}", file=sys.stderr)
        return 9
    if args:
        print(
            f"Driver Version                            : {f['driver']}\nCUDA Version                              : "
            f"{f['cuda']}\nAttached GPUs                             : 1\nGPU 00000000:00:00.0\n"
            f"    Product Name                          : {f['name']}\n    FB Memory Usage\n"
            f"        Total                             : {mem} MiB"
        )
        return 0
    print(
        f"| NVIDIA-SMI {f['driver']}    Driver Version: {f['driver']}    CUDA Version: {f['cuda']} |\n"
        f"|   0  {f['name']}    On |   00000000:00:00.0 Off |    0MiB / {mem}MiB |"
    )
    return 0


def rocm(prog: str, args: list[str], f: dict) -> int:
    mem = f["memory_mib"] * 2**20
    card = {
        "Card Series": f["name"],
        "Card Model": f["name"],
        "Card SKU": f["name"].split()[-1],
        "GFX Version": f["arch"],
        "Device Name": f["name"],
        "Marketing Name": f["name"],
        "VRAM Total Memory (B)": str(mem),
        "VRAM Total Used Memory (B)": "0",
        "Driver version": f["driver"],
    }
    if "--json" in args or "json" in args:
        print(json.dumps({"card0": card}))
        return 0
    if prog == "amd-smi" and args[:1] == ["static"]:
        print(f"GPU: 0\n    ASIC:\n        MARKET_NAME: {f['name']}\n        TARGET_GRAPHICS_VERSION: {f['arch']}")
        return 0
    print("============================ ROCm System Management Interface ============================")
    if "--showmeminfo" in args:
        print(f"GPU[0]\t\t: VRAM Total Memory (B): {mem}\nGPU[0]\t\t: VRAM Total Used Memory (B): 0")
    else:
        for k, v in card.items():
            print(f"GPU[0]\t\t: {k}: {v}")
    print("==================================== End of ROCm SMI Log ====================================")
    return 0


def main() -> int:
    prog, args = sys.argv[1], sys.argv[2:]
    facts = knobs.SMI_FACTS.get()
    return nvidia(args, facts) if prog == "nvidia-smi" else rocm(prog, args, facts)


if __name__ == "__main__":
    sys.exit(main())
