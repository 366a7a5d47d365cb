"""The TTIR loop rewrite: loop pins set per-loop attributes on the scf.for of their Python line.

The attributes are the ones `tl.range(...)` would set (tt.num_stages, tt.loop_unroll_factor,
tt.warp_specialize, tt.flatten, tt.disallow_acc_multi_buffer). They are written into the TTIR,
and the TTGIR pipeline then runs on the edited TTIR, so the compiler's own passes (pipeliner,
warp specialization) honour them. A loop is found by the Python lines its location names
(mlir.find_loops), so a pin may name a line of a helper the kernel calls (FILE:LINE).
"""

from __future__ import annotations

import os

from irscope.errors import BadInput
from irscope.steer.mlir import Loop, find_loops
from irscope.steer.pins import LOOP_ATTRS, LoopPin, same_file


def loop_matches(pin: LoopPin, loop: Loop, kernel_file: str) -> bool:
    """Whether the pin names this loop: its line (in its file, else the kernel's), or '*' (in its file)."""
    if pin.line is None:
        return pin.file is None or any(same_file(f, pin.file) for f, _ in loop.lines)
    want = pin.file or kernel_file
    return any(line == pin.line and same_file(f, want) for f, line in loop.lines)


def rewrite_loops(ttir: str, pins: list[LoopPin], kernel: str, kernel_file: str) -> tuple[str, list[dict]]:
    """Set each pin's attributes on its loops; returns the new TTIR and what was done per pin.

    Each record is {"pin", "loops": [(file, line) of each loop set]}, plus "skipped" (why) for an
    optional pin that found no loop; a pin that is not optional and finds none is BadInput.
    """
    lines = ttir.split("\n")
    loops = find_loops(ttir)
    done = []
    for pin in pins:
        hit = [lp for lp in loops if loop_matches(pin, lp, kernel_file)]
        if not hit and pin.line is not None:
            starts = sorted({ln for lp in loops for f, ln in lp.lines[:1]})
            where = f"{os.path.basename(pin.file or kernel_file)}:{pin.line}"
            have = (
                f"its loops are at line{'s' if len(starts) > 1 else ''} {', '.join(map(str, starts))}"
                if starts
                else "it has no scf.for loop"
            )
            if pin.optional:
                done.append({"pin": pin, "loops": [], "skipped": f"no loop of {kernel} starts at {where}; {have}"})
                continue
            raise BadInput(f"{pin.source} {pin.text()}: no loop of {kernel} starts at {where}; {have}")
        for lp in hit:
            for name, value in pin.attrs:
                attr = LOOP_ATTRS[name][0]
                if LOOP_ATTRS[name][1] is bool:
                    if value:
                        lp.attrs[attr] = None
                    else:
                        lp.attrs.pop(attr, None)
                else:
                    lp.attrs[attr] = f"{value} : i32"
            lines[lp.end] = lp.closing_text()
        done.append({"pin": pin, "loops": [lp.lines[0] if lp.lines else ("?", 0) for lp in hit]})
    return "\n".join(lines), done
