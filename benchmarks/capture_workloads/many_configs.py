"""One kernel launched with many @triton.autotune configs (48: block sizes x num_warps x num_stages), on
two dtypes: the autotuner compiles every config, and each is a capture to dump.
Used by benchmarks/bench_capture.py (no network, no data)."""

import itertools

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
CONFIGS = [
    triton.Config({"BLOCK": b}, num_warps=w, num_stages=s)
    for b, w, s in itertools.product((128, 256, 512, 1024), (1, 2, 4, 8), (1, 2, 3))
]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (alpha * x + y).to(out_ptr.dtype.element_ty), mask=mask)


def scaled_add(x, y, alpha):
    out = torch.empty_like(x)
    n = x.numel()
    scaled_add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, alpha, n)
    return out


for dtype in (torch.float32, torch.float16):
    x = torch.randn(4096, device=DEVICE, dtype=dtype)
    y = torch.randn(4096, device=DEVICE, dtype=dtype)
    torch.testing.assert_close(scaled_add(x, y, 0.5), 0.5 * x + y, atol=1e-2, rtol=1e-2)
print(f"many_configs: checks passed ({len(CONFIGS)} configs x 2 dtypes)")
