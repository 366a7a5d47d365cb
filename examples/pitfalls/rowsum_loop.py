"""Row sums of a tall matrix, one block of rows per iteration, each block's sums stored inside the loop."""

import triton
import triton.language as tl


@triton.jit
def rowsum_loop_kernel(x_ptr, out_ptr, R, BLOCK_R: tl.constexpr, C: tl.constexpr):
    rr = tl.arange(0, BLOCK_R)
    cc = tl.arange(0, C)
    for r in range(tl.program_id(0) * BLOCK_R, R, BLOCK_R * tl.num_programs(0)):
        x = tl.load(x_ptr + (r + rr)[:, None] * C + cc[None, :])
        s = tl.sum(x, axis=1)
        tl.store(out_ptr + r + rr, s)
