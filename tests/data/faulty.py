import triton
import triton.language as tl


@triton.jit
def maybe_fault(x_ptr, out_ptr, n, BLOCK: tl.constexpr, FAULT: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    if FAULT:
        offs = offs.to(tl.int64) + (1 << 40)  # far outside any allocation: an illegal address
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + tl.arange(0, BLOCK) + tl.program_id(0) * BLOCK, x * 2, mask=mask)


@triton.jit
def scaled_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)
