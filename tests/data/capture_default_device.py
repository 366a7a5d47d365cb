"""A script that sets torch's default device to "cuda" and makes its tensors with no device=.

For the capture tests: on the stand-in GPU those tensors must be its CPU ones too, and
the kernels launched on them captured.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def negate_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


if __name__ == "__main__":
    torch.set_default_device("cuda")
    x = torch.ones(1000)
    assert x.is_cuda, x.device
    double_kernel[(triton.cdiv(1000, 256), )](x, 1000, BLOCK=256)
    torch.set_default_device(None)
    with torch.device("cuda"):
        y = torch.zeros(512, dtype=torch.float16)
    assert y.is_cuda, y.device
    negate_kernel[(2, )](y, 512, BLOCK=256)
    print("capture_default_device: ok")
