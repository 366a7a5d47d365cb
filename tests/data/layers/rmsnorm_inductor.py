"""RMSNorm as liger-kernel computes it (x * rsqrt(mean(x^2) + eps) * weight, fp32), compiled by
torch.compile on "cuda": forward and backward at (64, 512), checked against eager. The frontier
comparison's side a (rmsnorm_liger.py is side b: the same op, shape and data, hand-written)."""

import sys

import torch

torch.manual_seed(0)
ROWS, COLS = (int(a) for a in sys.argv[1:3]) if len(sys.argv) > 2 else (64, 512)   # a size for timing
EPS = 1e-6


class RMSNorm(torch.nn.Module):
    def __init__(self, hidden, eps=EPS):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


model = RMSNorm(COLS).to("cuda")
with torch.no_grad():
    model.weight.copy_(torch.randn(COLS) * 0.1 + 1.0)
x = torch.randn(ROWS, COLS, device="cuda", requires_grad=True)
dy = torch.randn(ROWS, COLS, device="cuda")

ref = model(x)
ref.backward(dy)
ref_dx, ref_dw = x.grad.clone(), model.weight.grad.clone()
x.grad = None
model.zero_grad()

out = torch.compile(model)(x)
out.backward(dy)
torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(x.grad, ref_dx, atol=1e-4, rtol=1e-4)
torch.testing.assert_close(model.weight.grad, ref_dw, atol=1e-4, rtol=1e-4)
print("rmsnorm_inductor: checks passed")
