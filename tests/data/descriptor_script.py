"""A script that launches descriptor, tuple and function-constexpr kernels (tests/test_descriptors.py capture)."""

import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import argument_kinds  # noqa: E402
import tma_matmul  # noqa: E402

a = torch.randn((256, 128), device="cuda", dtype=torch.float16)
b = torch.randn((256, 128), device="cuda", dtype=torch.float16)
c = tma_matmul.matmul(a, b, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=3)

x = torch.randn(1000, device="cuda")
y = torch.empty_like(x)
argument_kinds.tuple_kernel[(triton.cdiv(1000, 256),)]((x, y, None), 1000, argument_kinds.relu, 256)
print("launched", tuple(c.shape), y.shape)
