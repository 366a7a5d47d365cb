"""Prints stand-in tensors as a GPU run prints them (device='cuda:0'), then launches a kernel."""

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


x = torch.arange(4, device=DEVICE, dtype=torch.float32)
double_kernel[(1,)](x, 4, BLOCK=4)
print("repr", repr(x))
print("str", x)
print("half", torch.ones(2, device="cuda", dtype=torch.float16))
print("list", [torch.zeros(1, device="cuda")])
print("fstring", f"{torch.tensor([1, 2], device='cuda')}")
