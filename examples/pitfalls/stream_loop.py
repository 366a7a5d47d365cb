"""Column sums of a tall matrix, one block of rows per iteration: a loop of loads and adds, no dot.

LOOP_STAGES=None leaves the loop to the kernel's num_stages (which the pipeliner applies to loops with a dot
only); a number asks for this loop through tl.range(..., num_stages=LOOP_STAGES).
"""

import triton
import triton.language as tl


@triton.jit
def stream_loop_kernel(x_ptr, out_ptr, R, C: tl.constexpr, BLOCK_R: tl.constexpr, LOOP_STAGES: tl.constexpr):
    rr = tl.arange(0, BLOCK_R)
    cc = tl.program_id(0) * 64 + tl.arange(0, 64)
    acc = tl.zeros((64,), dtype=tl.float32)
    for r in tl.range(0, R, BLOCK_R, num_stages=LOOP_STAGES):
        x = tl.load(x_ptr + (r + rr)[:, None] * C + cc[None, :])
        acc += tl.sum(x, axis=0)
    tl.store(out_ptr + cc, acc)
