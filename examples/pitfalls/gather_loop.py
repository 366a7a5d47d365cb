"""An embedding-bag style loop: each iteration loads indices, then rows at those indices."""

import triton
import triton.language as tl


@triton.jit
def gather_loop_kernel(idx_ptr, table_ptr, out_ptr, L, D: tl.constexpr, BLOCK_L: tl.constexpr):
    cols = tl.arange(0, D)
    acc = tl.zeros((D,), dtype=tl.float32)
    for start in range(0, L, BLOCK_L):
        rows = tl.load(idx_ptr + start + tl.arange(0, BLOCK_L))
        vals = tl.load(table_ptr + rows[:, None] * D + cols[None, :])
        acc += tl.sum(vals.to(tl.float32), axis=0)
    tl.store(out_ptr + tl.program_id(0) * D + cols, acc)
