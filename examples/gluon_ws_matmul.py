"""A warp-specialized Gluon matmul for Hopper: a TMA producer warp and a wgmma consumer warpgroup.

C = A @ B with A [M, K] and B [K, N] row-major, fp16 or bf16 in, fp32 accumulation. The kernel is
split with gl.warp_specialize into two partitions that talk through a ring of STAGES shared-memory
buffers and two mbarriers per slot:
  - the worker (1 warp, LOAD_REGS registers) issues TMA copies of A and B tiles into the ring;
  - the default partition (num_warps warps, the rest of the registers) waits for a slot, runs an
    async wgmma on it, keeps one in flight, and frees the slot before; then it stores C through TMA.

Dump it without a GPU (Gluon descriptors carry their shared layout; without one irscope uses
NVMMASharedLayout.get_default_for(block, dtype), what the host code below does):

    irscope dump examples/gluon_ws_matmul.py --target h100 --signature "tensordesc<fp16[128, 64]>, \\
        tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, i32:16, i32:16, 128, 128, 64, 4, 24, 4"

(the last element is num_warps, a parameter named like the option: it sets both).
"""

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

# Gluon's TMA copies were renamed in Triton 3.7 (async_copy_global_to_shared -> async_load, ...): one
# name for both, so the example compiles under 3.6, 3.9 and fbtriton alike.
tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


@gluon.jit
def _load_partition(a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles,
                    BLOCK_K: gl.constexpr):
    """Producer: wait for a free slot, then TMA the next A and B tiles into it."""
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    for i in range(k_tiles):
        slot = i % STAGES
        mbarrier.wait(empty.index(slot), ((i // STAGES) & 1) ^ 1)  # fresh barriers count as freed once
        mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma_load(a_desc, [off_m, i * BLOCK_K], ready.index(slot), a_bufs.index(slot))
        tma_load(b_desc, [i * BLOCK_K, off_n], ready.index(slot), b_bufs.index(slot))


@gluon.jit
def _mma_partition(a_bufs, b_bufs, ready, empty, k_tiles, acc_layout: gl.constexpr,
                   BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """Consumer: one async wgmma per slot, one kept in flight; a slot is freed once its wgmma retired."""
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=acc_layout)
    for i in range(k_tiles):
        slot = i % STAGES
        mbarrier.wait(ready.index(slot), (i // STAGES) & 1)
        acc = warpgroup_mma(a_bufs.index(slot), b_bufs.index(slot), acc, is_async=True)
        acc = warpgroup_mma_wait(1, deps=[acc])
        mbarrier.arrive(empty.index((i + STAGES - 1) % STAGES), count=1, pred=i > 0)
    acc = warpgroup_mma_wait(0, deps=[acc])
    return (acc,)  # the default partition's results, as a tuple (Triton 3.6 needs one)


@gluon.jit
def matmul_ws_kernel(a_desc, b_desc, c_desc, M, N, K,
                     BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                     STAGES: gl.constexpr, LOAD_REGS: gl.constexpr, num_warps: gl.constexpr):
    off_m = gl.program_id(0) * BLOCK_M
    off_n = gl.program_id(1) * BLOCK_N
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    k_tiles = gl.cdiv(K, BLOCK_K)
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                         instr_shape=[16, BLOCK_N, 16])
    results = gl.warp_specialize([
        (_mma_partition, (a_bufs, b_bufs, ready, empty, k_tiles, acc_layout, BLOCK_M, BLOCK_N)),
        (_load_partition, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, off_m, off_n, k_tiles, BLOCK_K)),
    ], [1], [LOAD_REGS])
    acc = results[0]
    c_smem = gl.allocate_shared_memory(c_desc.dtype, c_desc.block_type.shape, c_desc.layout)
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


def matmul(a, b, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, STAGES=4, LOAD_REGS=24, num_warps=4):
    """C = a @ b on the GPU the tensors live on (a: [M, K], b: [K, N])."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    dtype = gl.float16 if a.dtype == torch.float16 else gl.bfloat16

    def desc(t, block):
        return TensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(block, dtype))

    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    matmul_ws_kernel[grid](desc(a, [BLOCK_M, BLOCK_K]), desc(b, [BLOCK_K, BLOCK_N]), desc(c, [BLOCK_M, BLOCK_N]),
                           M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, LOAD_REGS, num_warps=num_warps)
    return c


if __name__ == "__main__":
    import torch

    torch.manual_seed(0)
    a = torch.randn((1024, 512), device="cuda", dtype=torch.float16)
    b = torch.randn((512, 768), device="cuda", dtype=torch.float16)
    c = matmul(a, b)
    torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=1e-2)
    print("gluon_ws_matmul: ok", tuple(c.shape))
