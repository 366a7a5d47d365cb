"""The K-loop matmul tile of dot_loop.py with its operands loaded through tensor descriptors: TMA on sm90+."""

import triton
import triton.language as tl


@triton.jit
def dot_desc_kernel(a_desc, b_desc, c_desc, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([off_m, k])
        b = b_desc.load([k, off_n])
        acc += tl.dot(a, b)
    c_desc.store([off_m, off_n], acc.to(tl.float16))
