import triton
import triton.language as tl


@triton.jit
def uses_undefined(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, x * undefined_scale)
