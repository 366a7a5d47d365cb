"""Launches a kernel, then fails in a function of its own (the --debug traceback test)."""

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def fill_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


def check(x):
    raise ValueError(f"bad result {x.sum().item():g}")


x = torch.zeros(8, device=DEVICE)
fill_kernel[(1,)](x, BLOCK=8)
check(x)
