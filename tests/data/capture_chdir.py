"""A script that changes directory before it launches (the capture's output must not move)."""

import os
import tempfile

import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


os.chdir(tempfile.mkdtemp())
x = torch.ones(1024, device=triton.runtime.driver.active.get_active_torch_device())
double_kernel[(4,)](x, 1024, BLOCK=256)
