"""A Gluon tile transpose through shared memory: rows are stored, columns read back. SWIZZLE picks the shared
layout's swizzle: with none (max_phase=1) each column read hits one bank 32 times."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def transpose_smem_kernel(x_ptr, y_ptr, N: gl.constexpr, MAX_PHASE: gl.constexpr):
    rows: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [4, 1], [1, 0])
    cols: gl.constexpr = gl.BlockedLayout([1, 1], [32, 1], [1, 4], [0, 1])
    shared: gl.constexpr = gl.SwizzledSharedLayout(1, 1, MAX_PHASE, [1, 0])
    r = gl.arange(0, N, layout=gl.SliceLayout(1, rows))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, rows))
    x = gl.load(x_ptr + r[:, None] * N + c[None, :])
    buf = gl.allocate_shared_memory(gl.float32, [N, N], shared)
    buf.store(x)
    t = buf.load(cols)
    r2 = gl.arange(0, N, layout=gl.SliceLayout(1, cols))
    c2 = gl.arange(0, N, layout=gl.SliceLayout(0, cols))
    gl.store(y_ptr + c2[None, :] * N + r2[:, None], t)
