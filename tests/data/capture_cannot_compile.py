"""Kernels the compiler rejects for the target that Triton's interpreter would run: tl.dot of 4x4
blocks (K must be at least 8 on cuda:90 under 3.9, 16 under 3.6) and, under 3.9 (whose
make_block_ptr raises), a block-pointer kernel. A GPU launch raises at the launch, so the script's
own except sees it and falls back; the stand-in must do the same."""

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def small_dot_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))


@triton.jit
def block_ptr_copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    xb = tl.make_block_ptr(x_ptr, (n,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    yb = tl.make_block_ptr(y_ptr, (n,), (1,), (pid * BLOCK,), (BLOCK,), (0,))
    tl.store(yb, tl.load(xb, boundary_check=(0,)), boundary_check=(0,))


a = torch.randn(4, 4, device=DEVICE)
b = torch.randn(4, 4, device=DEVICE)
c = torch.empty(4, 4, device=DEVICE)
for attempt in range(2):   # a GPU's JIT raises at every launch of a kernel that does not compile
    try:
        small_dot_kernel[(1,)](a, b, c, BLOCK=4)
        print("small dot launched")
    except triton.CompilationError as e:
        print(f"small dot raised {type(e).__name__}; falling back to torch")
        c = a @ b
torch.testing.assert_close(c, a @ b)

x = torch.arange(1000, dtype=torch.float32, device=DEVICE)
y = torch.empty_like(x)
try:
    block_ptr_copy_kernel[(8,)](x, y, 1000, BLOCK=128)
    print("block pointers launched")
except triton.CompilationError as e:
    print(f"block pointers raised {type(e).__name__}; falling back to torch")
    y.copy_(x)
torch.testing.assert_close(y, x)
print("done")
