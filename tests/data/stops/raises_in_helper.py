"""Launches a kernel, then a check in a module of its own (beside it) fails."""

import torch
import triton
import triton.language as tl
from stop_helper import check

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def fill_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


x = torch.zeros(8, device=DEVICE)
fill_kernel[(1,)](x, BLOCK=8)
check(x.sum().item())
