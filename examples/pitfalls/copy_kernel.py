"""A masked copy: the pitfalls of global access width (examples/pitfalls/findings.toml).

With x_ptr not known 16-byte aligned (`*fp32` rather than `*fp32:16`) the load is scalar; with
`n` not known divisible by 16 (`i32` rather than `i32:16`) the mask splits every access.
"""

import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, x * 2, mask=mask)
