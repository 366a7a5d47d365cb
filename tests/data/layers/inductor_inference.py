"""A softmax under torch.compile and torch.no_grad on "cuda": Inductor's inference graph, checked against eager."""

import torch

x = torch.randn(64, 32, device="cuda")
f = torch.compile(lambda x: torch.softmax(x * 2, dim=-1))
with torch.no_grad():
    y = f(x)
torch.testing.assert_close(y, torch.softmax(x * 2, dim=-1))
print("inductor_inference: checks passed")
