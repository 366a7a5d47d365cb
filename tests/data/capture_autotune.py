"""Autotuning as a GPU does it, for the capture tests: each launch is checked against torch.

- `matmul_kernel`: early_config_prune returns NEW triton.Configs with num_stages lowered (as
  gemlite does to fit shared memory), and one config whose tiles need more shared memory than
  any GPU has: a real autotuner skips it (OutOfResources), so the capture says "skipped".
- `scale_kernel` under `use_cuda_graph=True` (do_bench_cudagraph on a GPU).
- `shift_kernel` under an Autotuner subclass that overrides run (as FlagGems' LibTuner does).
"""

import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner

DEVICE = triton.runtime.driver.active.get_active_torch_device()


def lower_stages(configs, named_args, **kwargs):
    """Copies with num_stages lowered: configs the autotuner's list does not hold."""
    return [triton.Config(dict(c.kwargs), num_warps=c.num_warps, num_stages=max(1, c.num_stages - 2)) for c in configs]


@triton.autotune(configs=[triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4, num_stages=4),
                          triton.Config({"BM": 256, "BN": 256, "BK": 256}, num_warps=8, num_stages=5)],
                 key=["M", "N", "K"], prune_configs_by={"early_config_prune": lower_stages})
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"],
                 use_cuda_graph=True)
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 0.5, mask=offs < n)


@triton.jit
def shift_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


class LibTuner(Autotuner):
    """An Autotuner subclass with its own run, as libraries write them."""

    def run(self, *args, **kwargs):
        self.runs = getattr(self, "runs", 0) + 1
        return super().run(*args, **kwargs)


shift = LibTuner(shift_kernel, shift_kernel.arg_names, [triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 256})],
                 key=["n"], reset_to_zero=None, restore_value=None)

if __name__ == "__main__":
    torch.manual_seed(0)
    M, N, K = 64, 48, 80
    a = torch.randn(M, K, device=DEVICE, dtype=torch.float16)
    b = torch.randn(K, N, device=DEVICE, dtype=torch.float16)
    c = torch.empty(M, N, device=DEVICE, dtype=torch.float16)
    matmul_kernel[lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))](a, b, c, M, N, K)
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), atol=1e-2, rtol=1e-2)
    print("autotune: pruned ok")

    x = torch.randn(1000, device=DEVICE)
    out = torch.empty_like(x)
    scale_kernel[lambda meta: (triton.cdiv(1000, meta["BLOCK"]), )](x, out, 1000)
    torch.testing.assert_close(out, x * 0.5)
    print("autotune: cuda graph ok")

    out = torch.empty_like(x)
    shift[lambda meta: (triton.cdiv(1000, meta["BLOCK"]), )](x, out, 1000)
    torch.testing.assert_close(out, x + 1.0)
    print("autotune: subclass ok")
