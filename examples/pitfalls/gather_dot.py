"""A K-loop whose A rows are gathered through indices loaded in the same iteration (an index load, then the
load it addresses, then the dot)."""

import triton
import triton.language as tl


@triton.jit
def gather_dot_kernel(idx_ptr, a_ptr, b_ptr, c_ptr, K, stride_am, stride_bk, stride_cm,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rows = tl.load(idx_ptr + k // BLOCK_K * BLOCK_M + tl.arange(0, BLOCK_M))
        a = tl.load(a_ptr + rows[:, None] * stride_am + (k + rk)[None, :])
        b = tl.load(b_ptrs)
        acc += tl.dot(a, b)
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty))
