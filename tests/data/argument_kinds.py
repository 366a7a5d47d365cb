"""Kernels whose parameters are tuples, nested tuples and constexpr functions (tests/test_descriptors.py)."""

import triton
import triton.language as tl


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def tuple_kernel(ptrs, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(ptrs[0] + offs, mask=offs < n)
    tl.store(ptrs[1] + offs, ACT(x), mask=offs < n)


@triton.jit
def nested_kernel(args, BLOCK: tl.constexpr):
    src, n = args[0]
    dst = args[1][0]
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)
