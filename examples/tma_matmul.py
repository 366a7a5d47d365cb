"""A persistent matmul over TMA tensor descriptors (upstream Triton, Hopper and Blackwell).

C = A @ B.T with A [M, K] and B [N, K] row-major (B "K-major", the layout cuBLAS's fastest fp16/bf16
GEMMs read), fp16 or bf16 in, fp32 accumulation. Each program takes NUM_SMS-strided output tiles in
GROUP_M-swizzled order; A and B tiles come in through host-side TensorDescriptors (TMA on NVIDIA), C
goes out through one. WARP_SPECIALIZE splits the tile loop into a TMA producer partition and an MMA
consumer partition (Triton's automatic warp specialization); FLATTEN fuses the tile and K loops so
the pipeliner overlaps one tile's epilogue with the next tile's loads.

Dump it without a GPU (the descriptors' block shapes are part of the specialization):

    irscope dump examples/tma_matmul.py --target h100 --signature "tensordesc<fp16[128, 64]>, \\
        tensordesc<fp16[256, 64]>, tensordesc<fp16[128, 256]>, i32:16, i32:16, i32:16, 128, 256, 64, 8, 132, False, True" \\
        --set num_warps=8 --set num_stages=3

or run it (`python examples/tma_matmul.py`) on a GPU, or capture it (`irscope dump examples/tma_matmul.py`).
"""

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _tile_coordinates(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Row-grouped order: GROUP_M tile rows share their B tiles in L2."""
    tiles_per_group = GROUP_M * num_pid_n
    group = tile_id // tiles_per_group
    first_m = group * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % tiles_per_group) % rows
    pid_n = (tile_id % tiles_per_group) // rows
    return pid_m, pid_n


@triton.jit
def matmul_tma_persistent(a_desc, b_desc, c_desc, M, N, K,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                          WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=FLATTEN,
                            warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_coordinates(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([off_n, k * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def matmul(a, b, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, WARP_SPECIALIZE=False, FLATTEN=True,
           num_warps=8, num_stages=3):
    """C = a @ b.T on the GPU the tensors live on (a: [M, K], b: [N, K])."""
    import torch

    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    a_desc = TensorDescriptor.from_tensor(a, [BLOCK_M, BLOCK_K])
    b_desc = TensorDescriptor.from_tensor(b, [BLOCK_N, BLOCK_K])
    c_desc = TensorDescriptor.from_tensor(c, [BLOCK_M, BLOCK_N])
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    grid = (min(num_sms, tiles),)
    matmul_tma_persistent[grid](a_desc, b_desc, c_desc, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_sms,
                                WARP_SPECIALIZE, FLATTEN, num_warps=num_warps, num_stages=num_stages)
    return c


if __name__ == "__main__":
    import torch

    torch.manual_seed(0)
    a = torch.randn((1024, 512), device="cuda", dtype=torch.float16)
    b = torch.randn((768, 512), device="cuda", dtype=torch.float16)
    c = matmul(a, b)
    torch.testing.assert_close(c, a @ b.T, atol=1e-2, rtol=1e-2)
    print("tma_matmul: ok", tuple(c.shape))
