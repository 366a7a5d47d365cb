"""Contiguity lost through an op: a flat index split with `%` by a width that is not a power of two."""

import triton
import triton.language as tl


@triton.jit
def rowmod_kernel(x_ptr, y_ptr, W: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    col = offs % W
    row = offs // W
    x = tl.load(x_ptr + row * 128 + col)
    tl.store(y_ptr + offs, x)
