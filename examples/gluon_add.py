"""A Gluon kernel: the layout is a constexpr parameter the caller chooses.

    irscope dump examples/gluon_add.py --signature "*fp32, *fp32, *fp32, i32:16, 1024" \
        --const "layout=gl.BlockedLayout([4], [32], [4], [0])"
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def gluon_add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: gl.constexpr,
                     layout: gl.constexpr = gl.BlockedLayout([4], [32], [4], [0])):  # noqa: B008 (a constexpr default)
    pid = gl.program_id(0)
    offsets = pid * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offsets < n_elements
    x = gl.load(x_ptr + offsets, mask=mask)
    y = gl.load(y_ptr + offsets, mask=mask)
    gl.store(out_ptr + offsets, x + y, mask=mask)
