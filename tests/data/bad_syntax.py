import triton
import triton.language as tl


@triton.jit
def broken(x_ptr, n
    pass
