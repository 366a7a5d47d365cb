"""A persistent TMA matmul in upstream Triton that launches like a pointer kernel (Hopper and Blackwell).

C = A @ B with A [M, K] and B [K, N] row-major (what `torch.matmul(a, b)` takes), fp16 or bf16 in,
fp32 accumulation. The TMA descriptors are built on the device (`tl.make_tensor_descriptor`), so the
kernel takes plain pointers: `irscope bench --args`, `sweep --time` and `--ref "torch.matmul(a_ptr,
b_ptr)"` time it as they time examples/matmul.py. A launch needs Triton's allocator for the
descriptors' scratch memory (`triton.set_allocator`, below; irscope's timing process sets one).
examples/tma_matmul.py is the same loop over host-side descriptors.

Each program takes NUM_SMS-strided output tiles in GROUP_M-swizzled order. FLATTEN fuses the tile and
K loops so the pipeliner overlaps one tile's epilogue with the next tile's loads; WARP_SPECIALIZE asks
Triton to split the loop into a TMA producer and an MMA consumer (taken on Blackwell; Triton 3.6 leaves
the loop whole on Hopper, and `irscope dump` says so).

    irscope dump examples/persistent_matmul.py --target h100 \\
        --signature "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, 128, 256, 64, 8, 132, False, True" \\
        --set num_warps=8 --set num_stages=3
"""

import triton
import triton.language as tl


@triton.jit
def _tile_origin(tile_id, num_pid_m, num_pid_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """The (row, column) of an output tile in GROUP_M-row-grouped order (GROUP_M rows share B in L2)."""
    tiles_per_group = GROUP_M * num_pid_n
    first_m = (tile_id // tiles_per_group) * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % tiles_per_group) % rows
    pid_n = (tile_id % tiles_per_group) // rows
    return pid_m * BLOCK_M, pid_n * BLOCK_N


@triton.jit
def matmul_persistent(a_ptr, b_ptr, c_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                      WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=FLATTEN,
                            warp_specialize=WARP_SPECIALIZE):
        off_m, off_n = _tile_origin(tile_id, num_pid_m, num_pid_n, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def matmul(a, b, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, WARP_SPECIALIZE=False, FLATTEN=True,
           num_warps=8, num_stages=3):
    """C = a @ b on the GPU the tensors live on (a: [M, K], b: [K, N], both row-major)."""
    import torch

    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
    matmul_persistent[(min(num_sms, tiles),)](a, b, c, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_sms,
                                              WARP_SPECIALIZE, FLATTEN, num_warps=num_warps, num_stages=num_stages)
    return c


def use_torch_allocator() -> None:
    """Device-side descriptors need scratch memory: let Triton take it from torch's allocator."""
    import torch

    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))


if __name__ == "__main__":
    import torch

    use_torch_allocator()
    torch.manual_seed(0)
    a = torch.randn((1000, 512), device="cuda", dtype=torch.float16)
    b = torch.randn((512, 776), device="cuda", dtype=torch.float16)
    c = matmul(a, b)
    torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=1e-2)
    print("persistent_matmul: ok", tuple(c.shape))
