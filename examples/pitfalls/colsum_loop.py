"""A loop that reduces along rows and then adds the result across columns: a layout change per iteration."""

import triton
import triton.language as tl


@triton.jit
def colsum_loop_kernel(x_ptr, out_ptr, R, stride, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rr = tl.arange(0, BLOCK_R)
    cc = tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), dtype=tl.float32)
    for r in range(0, R, BLOCK_R):
        x = tl.load(x_ptr + (r + rr)[:, None] * stride + cc[None, :])
        s = tl.sum(x, axis=1)
        acc += tl.reshape(s, (BLOCK_C,))
    tl.store(out_ptr + cc, acc)
