"""LayerNorm + Linear + GELU + Linear on "cuda" under torch.compile: forward and backward, checked
against eager. Tiny, so the stand-in GPU's interpreter computes it at once. argv[1]: the mode
("default" or "max-autotune-no-cudagraphs")."""

import sys

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "default"
torch.manual_seed(0)


class MLP(torch.nn.Module):
    def __init__(self, d=32, h=64):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, h)
        self.fc2 = torch.nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(x))))


model = MLP().to("cuda")
x = torch.randn(16, 32, device="cuda", requires_grad=True)
compiled = torch.compile(model, mode=None if mode == "default" else mode)

ref = model(x)
ref.sum().backward()
ref_grad, ref_w = x.grad.clone(), model.fc1.weight.grad.clone()
x.grad = None
model.zero_grad()

out = compiled(x)
out.sum().backward()
torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
torch.testing.assert_close(x.grad, ref_grad, atol=1e-4, rtol=1e-4)
torch.testing.assert_close(model.fc1.weight.grad, ref_w, atol=1e-4, rtol=1e-4)
print("inductor_mlp: checks passed", mode)
