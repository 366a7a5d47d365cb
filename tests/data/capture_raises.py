"""A script that fails before it launches anything (the capture tests' bad input)."""

import triton
import triton.language as tl


@triton.jit
def never_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)


if __name__ == "__main__":
    raise RuntimeError("no input data")
