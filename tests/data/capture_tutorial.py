"""A small script written like Triton's tutorials, for the capture tests.

An autotuned kernel (two configs, different num_warps), a plain launch on an unaligned
view (x[1:]: 4-byte aligned pointer), a .warmup, and a check against torch at the end.
`--n N` sets the size (passed through `irscope dump ... -- --n N`).
"""

import argparse

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=8)],
                 key=["n"])
@triton.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def axpy(alpha, x, y):
    out = torch.empty_like(x)
    n = x.numel()
    axpy_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]), )](x, y, out, alpha, n)
    return out


def scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 512), )](x, out, n, BLOCK=512)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4096)
    args = parser.parse_args()
    print(f"capture_tutorial: n={args.n} on {DEVICE}")
    torch.manual_seed(0)
    base = torch.randn(args.n + 1, device=DEVICE)
    x = base[1:]                      # a view one element in: its pointer is only 4-byte aligned
    y = torch.randn(args.n, device=DEVICE)
    scale_kernel.warmup(torch.float32, torch.float32, args.n, BLOCK=512, grid=(1, ))
    out = axpy(2.0, x, y)
    doubled = scale(x)
    torch.testing.assert_close(out, 2.0 * x + y)
    torch.testing.assert_close(doubled, 2.0 * x)
    print("capture_tutorial: ok")
