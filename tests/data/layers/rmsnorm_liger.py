"""liger-kernel's hand-written RMSNorm (LigerRMSNorm, casting_mode "llama") on "cuda": forward and
backward at (64, 512) fp32 on the same data as rmsnorm_inductor.py, checked against eager. The
frontier comparison's side b."""

import sys

import torch
from liger_kernel.transformers.rms_norm import LigerRMSNorm

torch.manual_seed(0)
ROWS, COLS = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (64, 512)   # a size for timing
EPS = 1e-6


def eager(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


weight = torch.randn(COLS) * 0.1 + 1.0           # the same draws, in the same order, as rmsnorm_inductor.py
model = LigerRMSNorm(COLS, eps=EPS).to("cuda")
with torch.no_grad():
    model.weight.copy_(weight)
x = torch.randn(ROWS, COLS, device="cuda", requires_grad=True)
dy = torch.randn(ROWS, COLS, device="cuda")

w_ref = model.weight.detach().clone().requires_grad_(True)
x_ref = x.detach().clone().requires_grad_(True)
ref = eager(x_ref, w_ref)
ref.backward(dy)

out = model(x)
out.backward(dy.clone())                          # in_place=True: liger writes dx over dy's storage
torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-4, rtol=1e-4)
torch.testing.assert_close(model.weight.grad, w_ref.grad, atol=1e-4, rtol=1e-4)
print("rmsnorm_liger: checks passed")
