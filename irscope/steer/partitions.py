"""Partition pins: the register budget of a warp-specialized worker, set in TTGIR before the compile goes on.

Triton's automatic warp specialization, gl.warp_specialize and tlx.async_tasks all leave one
ttg.warp_specialize op in TTGIR with `requestedRegisters = array<i32: R0, R1, ...>` (one per worker);
the warp-group allocation that runs in the LLVM lowering turns it into setmaxnreg.dec/inc. Editing the
array and compiling onward from the edited TTGIR is what a different budget in the source would do.
"""

from __future__ import annotations

import re

from irscope.errors import BadInput
from irscope.steer.pins import PartitionPin

REQUESTED = re.compile(r"requestedRegisters\s*=\s*array<i32:\s*([\d,\s]+)>")
WORKERS = re.compile(r"^\s*partition(\d+)\(.*num_warps\(\d+\)\s*\{\s*$", re.M)


def apply_partition_pins(ttgir: str, pins: list[PartitionPin], kernel: str) -> tuple[str, list[dict]]:
    """The TTGIR with each pinned worker's budget set; what was done, per pin (for the checks)."""
    workers = len(WORKERS.findall(ttgir))
    if not workers:
        raise BadInput(
            f"{pins[0].source} {pins[0].text()}: {kernel} has no warp-specialized partitions in TTGIR "
            f"(no ttg.warp_specialize op: nothing to give registers to)"
        )
    m = REQUESTED.search(ttgir)
    current = [int(x) for x in m.group(1).replace(" ", "").split(",") if x] if m else [0] * workers
    done = []
    for pin in pins:
        if pin.index >= workers:
            raise BadInput(
                f"{pin.source} {pin.text()}: {kernel} has {workers} worker partition(s) "
                f"(worker0 .. worker{workers - 1})"
            )
        done.append({"pin": pin, "before": current[pin.index] or None})
        current[pin.index] = pin.registers
    array = f"requestedRegisters = array<i32: {', '.join(map(str, current))}>"
    if m:
        ttgir = ttgir[: m.start()] + array + ttgir[m.end() :]
    else:  # no budgets requested yet: give the op its attribute
        ttgir = re.sub(r"(ttg\.warp_specialize\([^)]*\))", rf"\1 attributes {{{array}}}", ttgir, count=1)
    return ttgir, done
