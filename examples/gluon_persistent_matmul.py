"""Two persistent Gluon matmuls for Hopper: one partition pipelined by hand, and warp-specialized.

C = A @ B with A [M, K] and B [K, N] row-major (what `torch.matmul(a, b)` takes), fp16 or bf16 in,
fp32 accumulation in registers, C written through TMA. Both kernels take plain pointers and build
their TMA descriptors on the device (`tma.make_tensor_descriptor`), so they launch like any pointer
kernel (`irscope bench --args`, `irscope sweep --time`); a launch needs Triton's allocator for the
descriptors' scratch memory (`triton.set_allocator`, below; irscope's timing process sets one).
One program per multiprocessor walks its output tiles, NUM_SMS apart, GROUP_M-swizzled.

`matmul_pipelined_kernel`: one partition does everything, as ONE flat loop over (tile, k-step)
pairs so that the next tile's loads are in flight during this tile's epilogue: a ring of STAGES
slots, loads STAGES - 1 steps ahead, one async wgmma in flight, a slot refilled once the wgmma that
read it retired. Its PTX shows the cost of one partition: every step the 8 warps meet at 4
`bar.sync` (around the mbarrier and each TMA issue) and do 3 integer divisions for the next load's
tile coordinates, on the path between two wgmmas.

`matmul_persistent_ws_kernel`: the same ring split between partitions (gl.warp_specialize). A 1-warp producer
(LOAD_REGS registers) walks tiles and k-steps and issues the TMA loads as soon as a slot is freed
(an `empty` mbarrier per slot); the default partition (num_warps warps, the registers left) waits
on `ready`, issues the wgmmas (one in flight), frees slots, and stores each tile through TMA while
the producer already loads the next one. With 8 warps the 128 x 256 accumulator is split across two
warpgroups (64 rows each): 128 fp32 registers a thread.

Dump them without a GPU (the last element is num_warps, a parameter named like the option: it sets
both):

    irscope dump examples/gluon_persistent_matmul.py --kernel matmul_persistent_ws_kernel --target h100 \\
        --signature "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, 128, 256, 64, 3, 8, 132, 24, 8"
    irscope dump examples/gluon_persistent_matmul.py --kernel matmul_pipelined_kernel --target h100 \\
        --signature "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, 128, 256, 64, 3, 8, 132, 8"
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
def _tile_origin(tile_id, num_pid_m, num_pid_n, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                 GROUP_M: gl.constexpr):
    """The (row, column) of an output tile in GROUP_M-row-grouped order (GROUP_M rows share B in L2)."""
    tiles_per_group = GROUP_M * num_pid_n
    first_m = (tile_id // tiles_per_group) * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % tiles_per_group) % rows
    pid_n = (tile_id % tiles_per_group) // rows
    return pid_m * BLOCK_M, pid_n * BLOCK_N


@gluon.jit
def _issue_load(step, k_tiles, first_tile, num_pid_m, num_pid_n, a_desc, b_desc, a_bufs, b_bufs, ready,
                total, NUM_SMS: gl.constexpr, GROUP_M: gl.constexpr):
    """TMA the A and B tiles of flat step `step` (tile step // k_tiles, k-step step % k_tiles) into its slot;
    predicated off past the last step."""
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    live = step < total
    tile_id = first_tile + (step // k_tiles) * NUM_SMS
    off_m, off_n = _tile_origin(tile_id, num_pid_m, num_pid_n, BLOCK_M, BLOCK_N, GROUP_M)
    off_k = (step % k_tiles) * BLOCK_K
    slot = step % STAGES
    mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=live)
    tma_load(a_desc, [off_m, off_k], ready.index(slot), a_bufs.index(slot), live)
    tma_load(b_desc, [off_k, off_n], ready.index(slot), b_bufs.index(slot), live)


@gluon.jit
def matmul_pipelined_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                             BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                             STAGES: gl.constexpr, GROUP_M: gl.constexpr, NUM_SMS: gl.constexpr,
                             num_warps: gl.constexpr):
    a_desc, b_desc, c_desc = _descriptors(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K)
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    c_smem = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)

    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    first_tile = gl.program_id(0)
    my_tiles = gl.cdiv(num_pid_m * num_pid_n - first_tile, NUM_SMS)
    total = my_tiles * k_tiles

    for s in gl.static_range(STAGES - 1):  # the ring's first STAGES - 1 slots
        _issue_load(s, k_tiles, first_tile, num_pid_m, num_pid_n, a_desc, b_desc, a_bufs, b_bufs, ready, total,
                    NUM_SMS, GROUP_M)

    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                         instr_shape=[16, BLOCK_N, 16])
    acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=acc_layout)
    for step in range(total):
        slot = step % STAGES
        k_step = step % k_tiles
        mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
        acc = warpgroup_mma(a_bufs.index(slot), b_bufs.index(slot), acc, use_acc=k_step != 0, is_async=True)
        acc = warpgroup_mma_wait(1, deps=[acc])  # the previous step's wgmma retired: its slot is free
        _issue_load(step + STAGES - 1, k_tiles, first_tile, num_pid_m, num_pid_n, a_desc, b_desc, a_bufs, b_bufs,
                    ready, total, NUM_SMS, GROUP_M)
        if k_step == k_tiles - 1:  # the tile's last step: drain, and send the tile out
            acc = warpgroup_mma_wait(0, deps=[acc])
            off_m, off_n = _tile_origin(first_tile + (step // k_tiles) * NUM_SMS, num_pid_m, num_pid_n, BLOCK_M,
                                        BLOCK_N, GROUP_M)
            tma.store_wait(0)  # the previous tile's store has read c_smem
            c_smem.store(acc.to(dtype))
            fence_async_shared()
            tma_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)
    for s in gl.static_range(STAGES):
        mbarrier.invalidate(ready.index(s))


@gluon.jit
def _descriptors(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                 BLOCK_K: gl.constexpr):
    """Device-side TMA descriptors of A [M, K], B [K, N] and C [M, N], row-major, NVMMA-swizzled tiles."""
    dtype: gl.constexpr = a_ptr.dtype.element_ty
    a_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], dtype)
    b_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_K, BLOCK_N], dtype)
    c_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_N], dtype)
    a_desc = tma.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K], a_layout)
    b_desc = tma.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK_K, BLOCK_N], b_layout)
    c_desc = tma.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N], c_layout)
    return a_desc, b_desc, c_desc


@gluon.jit
def _ws_producer(a_desc, b_desc, a_bufs, b_bufs, ready, empty, first_tile, my_tiles, k_tiles, num_pid_m,
                 num_pid_n, NUM_SMS: gl.constexpr, GROUP_M: gl.constexpr):
    """The load warp: for each of this program's tiles and k-steps, wait for a free slot and TMA A and B in."""
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = b_desc.block_type.shape[1]
    step = 0
    for t in range(my_tiles):
        off_m, off_n = _tile_origin(first_tile + t * NUM_SMS, num_pid_m, num_pid_n, BLOCK_M, BLOCK_N, GROUP_M)
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(empty.index(slot), ((step // STAGES) & 1) ^ 1)  # fresh barriers count as freed once
            mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma_load(a_desc, [off_m, k * BLOCK_K], ready.index(slot), a_bufs.index(slot))
            tma_load(b_desc, [k * BLOCK_K, off_n], ready.index(slot), b_bufs.index(slot))
            step += 1


@gluon.jit
def _ws_consumer(a_bufs, b_bufs, ready, empty, c_desc, c_smem, first_tile, my_tiles, k_tiles, num_pid_m,
                 num_pid_n, NUM_SMS: gl.constexpr, GROUP_M: gl.constexpr, num_warps: gl.constexpr):
    """The MMA warps: one async wgmma per slot, one in flight, slots freed as their wgmma retires; each
    finished tile goes out through TMA while the producer fills the ring for the next."""
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    BLOCK_M: gl.constexpr = c_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = c_desc.block_type.shape[1]
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                         instr_shape=[16, BLOCK_N, 16])
    acc = gl.zeros((BLOCK_M, BLOCK_N), dtype=gl.float32, layout=acc_layout)
    step = 0
    for t in range(my_tiles):
        for k in range(k_tiles):
            slot = step % STAGES
            mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
            acc = warpgroup_mma(a_bufs.index(slot), b_bufs.index(slot), acc, use_acc=k > 0, is_async=True)
            acc = warpgroup_mma_wait(1, deps=[acc])
            mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), count=1, pred=k > 0)
            step += 1
        acc = warpgroup_mma_wait(0, deps=[acc])
        mbarrier.arrive(empty.index((step + STAGES - 1) % STAGES), count=1)  # the tile's last slot
        off_m, off_n = _tile_origin(first_tile + t * NUM_SMS, num_pid_m, num_pid_n, BLOCK_M, BLOCK_N, GROUP_M)
        tma.store_wait(0)  # the previous tile's store has read c_smem
        c_smem.store(acc.to(c_desc.dtype))
        fence_async_shared()
        tma_store(c_desc, [off_m, off_n], c_smem)
    tma.store_wait(0)


@gluon.jit
def matmul_persistent_ws_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                     BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                     STAGES: gl.constexpr, GROUP_M: gl.constexpr, NUM_SMS: gl.constexpr, LOAD_REGS: gl.constexpr,
                     num_warps: gl.constexpr):
    a_desc, b_desc, c_desc = _descriptors(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K)
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=1)
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    first_tile = gl.program_id(0)
    my_tiles = gl.cdiv(num_pid_m * num_pid_n - first_tile, NUM_SMS)
    gl.warp_specialize([
        (_ws_consumer, (a_bufs, b_bufs, ready, empty, c_desc, c_smem, first_tile, my_tiles, k_tiles, num_pid_m,
                        num_pid_n, NUM_SMS, GROUP_M, num_warps)),
        (_ws_producer, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, first_tile, my_tiles, k_tiles, num_pid_m,
                        num_pid_n, NUM_SMS, GROUP_M)),
    ], [1], [LOAD_REGS])


def matmul(a, b, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, STAGES=3, GROUP_M=8, num_warps=8, LOAD_REGS=24,
           warp_specialized=True):
    """C = a @ b on the GPU the tensors live on (a: [M, K], b: [K, N], both row-major)."""
    import torch

    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    grid = (min(num_sms, triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)),)
    if warp_specialized:
        matmul_persistent_ws_kernel[grid](a, b, c, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, GROUP_M, num_sms, LOAD_REGS,
                               num_warps=num_warps)
    else:
        matmul_pipelined_kernel[grid](a, b, c, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, STAGES, GROUP_M, num_sms,
                                      num_warps=num_warps)
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
    for ws in (True, False):
        c = matmul(a, b, warp_specialized=ws)
        torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=1e-2)
    print("gluon_persistent_matmul: ok", tuple(c.shape))
