"""Launches a kernel, then calls torch with shapes that do not fit: torch's own check stops the script."""

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def fill_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


x = torch.zeros(8, device=DEVICE)
fill_kernel[(1,)](x, BLOCK=8)
torch.nn.utils.clip_grad_norm_([x.requires_grad_()], max_norm=1.0, norm_type="two")
