"""Four launches written like Triton's tutorials, each checked against torch at once.

A plain launch (calling a @triton.jit helper), an autotuned one (through @triton.heuristics),
a kernel from .warmup launched by hand, and a Gluon kernel (last: Triton's interpreter cannot
run Gluon, so the stand-in GPU does not compute its result). Each check passes on a GPU; on
the stand-in the first three pass because Triton's interpreter computes their results.
"""

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def _twice(x):
    return x * 2.0


@triton.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, _twice(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=2), triton.Config({"BLOCK": 512}, num_warps=4)],
                 key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, stride, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * stride + tl.arange(0, N))
    tl.store(out_ptr + row, tl.sum(x, axis=0))


@gluon.jit
def gluon_scale_kernel(x_ptr, out_ptr, n, BLOCK: gl.constexpr, layout: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offs < n
    gl.store(out_ptr + offs, gl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)


if __name__ == "__main__":
    torch.manual_seed(0)
    n = 1000
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)

    out = torch.empty_like(x)
    double_kernel[(triton.cdiv(n, 256), )](x, out, n, BLOCK=256)
    torch.testing.assert_close(out, 2 * x)
    print("checks: plain ok")

    out = torch.empty_like(x)
    add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]), )](x, y, out, n)
    torch.testing.assert_close(out, x + y)
    print("checks: autotuned ok")

    m = torch.randn(8, 64, device=DEVICE)
    sums = torch.empty(8, device=DEVICE)
    kernel = rowsum_kernel.warmup(m, sums, m.stride(0), N=64, grid=(8, ))
    kernel[(8, 1, 1)](m, sums, m.stride(0), 64)
    torch.testing.assert_close(sums, m.sum(dim=1))
    print("checks: warmup ok")

    out = torch.empty_like(x)
    layout = gl.BlockedLayout([4], [32], [4], [0])
    gluon_scale_kernel[(triton.cdiv(n, 512), )](x, out, n, BLOCK=512, layout=layout, num_warps=4)
    torch.testing.assert_close(out, 3 * x)
    print("checks: gluon ok")
