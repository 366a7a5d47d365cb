"""A warp-specialized TLX matmul for Hopper (Meta's Triton fork, `pip install fbtriton`; TLX only).

C = A @ B with A [M, K] and B [K, N] row-major, fp16/bf16 in, fp32 accumulation. tlx.async_tasks
splits the kernel into two partitions that share a ring of NUM_STAGES shared-memory buffers and two
mbarrier arrays:
  - "default" (the producer): waits for a free slot, TMA-loads the next A and B tiles into it;
  - one consumer task (NUM_MMA_WARPS warps, MMA_REGS registers): waits for a full slot, runs wgmma
    on it (tlx.async_dot), frees the slot, and finally stores C through its descriptor.

Under upstream Triton the import of triton.language.extra.tlx fails: irscope says so in one line.

    irscope dump examples/tlx_ws_matmul.py --target h100 --signature "tensordesc<fp16[128, 64]>, \\
        tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, i32:16, i32:16, 128, 128, 64, 3, 4, 232"
"""

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def matmul_tlx_ws_kernel(a_desc, b_desc, c_desc, M, N, K,
                         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, NUM_STAGES: tl.constexpr,
                         NUM_MMA_WARPS: tl.constexpr, MMA_REGS: tl.constexpr):
    a_bufs = tlx.local_alloc((BM, BK), tlx.dtype_of(a_desc), NUM_STAGES)
    b_bufs = tlx.local_alloc((BK, BN), tlx.dtype_of(b_desc), NUM_STAGES)
    full = tlx.alloc_barriers(num_barriers=NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=NUM_STAGES, arrive_count=1)
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    k_tiles = tl.cdiv(K, BK)
    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer: TMA loads into the ring
            for k in range(k_tiles):
                slot = k % NUM_STAGES
                phase = (k // NUM_STAGES) & 1
                tlx.barrier_wait(bar=tlx.local_view(empty, slot), phase=phase ^ 1)
                bar = tlx.local_view(full, slot)
                tlx.barrier_expect_bytes(bar, (BM * BK + BK * BN) * tlx.size_of(tlx.dtype_of(a_desc)))
                tlx.async_descriptor_load(a_desc, tlx.local_view(a_bufs, slot), [off_m, k * BK], bar)
                tlx.async_descriptor_load(b_desc, tlx.local_view(b_bufs, slot), [k * BK, off_n], bar)
        with tlx.async_task(num_warps=NUM_MMA_WARPS, registers=MMA_REGS):  # consumer: wgmma, then C
            acc = tl.zeros([BM, BN], dtype=tl.float32)
            for k in range(k_tiles):
                slot = k % NUM_STAGES
                phase = (k // NUM_STAGES) & 1
                tlx.barrier_wait(bar=tlx.local_view(full, slot), phase=phase)
                acc = tlx.async_dot(tlx.local_view(a_bufs, slot), tlx.local_view(b_bufs, slot), acc)
                acc = tlx.async_dot_wait(tl.constexpr(0), acc)
                tlx.barrier_arrive(tlx.local_view(empty, slot))
            c_desc.store([off_m, off_n], acc.to(tlx.dtype_of(c_desc)))


def matmul(a, b, BM=128, BN=128, BK=64, NUM_STAGES=3, NUM_MMA_WARPS=4, MMA_REGS=232):
    """C = a @ b on the GPU the tensors live on (a: [M, K], b: [K, N])."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    matmul_tlx_ws_kernel[grid](TensorDescriptor.from_tensor(a, [BM, BK]), TensorDescriptor.from_tensor(b, [BK, BN]),
                               TensorDescriptor.from_tensor(c, [BM, BN]), M, N, K, BM, BN, BK, NUM_STAGES,
                               NUM_MMA_WARPS, MMA_REGS, num_warps=4)
    return c


if __name__ == "__main__":
    import torch

    torch.manual_seed(0)
    a = torch.randn((1024, 512), device="cuda", dtype=torch.float16)
    b = torch.randn((512, 768), device="cuda", dtype=torch.float16)
    c = matmul(a, b)
    torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=1e-2)
    print("tlx_ws_matmul: ok", tuple(c.shape))
