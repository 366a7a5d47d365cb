"""Launch the Gluon kernel of examples/gluon_add.py (its layout is a constexpr the caller picks).

    python gluon_add.py                         (on an NVIDIA GPU)
    irscope dump examples/scripts/gluon_add.py  (anywhere: captures gluon_add_kernel)
"""

import sys
from pathlib import Path

import torch
import triton
from triton.experimental.gluon import language as gl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from gluon_add import gluon_add_kernel  # noqa: E402

DEVICE = triton.runtime.driver.active.get_active_torch_device()

if __name__ == "__main__":
    n, BLOCK = 4096, 1024
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    out = torch.empty_like(x)
    layout = gl.BlockedLayout([8], [32], [4], [0])
    gluon_add_kernel[(triton.cdiv(n, BLOCK), )](x, y, out, n, BLOCK=BLOCK, layout=layout, num_warps=4)
    torch.testing.assert_close(out, x + y)
    print("gluon_add: ok")
