"""torch.compile(mode="reduce-overhead") on "cuda": CUDA graphs (max-autotune turns them on too, nanoGPT under
max-autotune), three calls, checked against the model run eagerly."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU()).cuda()
x = torch.randn(8, 32, device="cuda")
compiled = torch.compile(model, mode="reduce-overhead")
for _ in range(3):
    y = compiled(x)
torch.testing.assert_close(y, model(x), atol=1e-4, rtol=1e-4)
print("inductor_cudagraphs: checks passed")
