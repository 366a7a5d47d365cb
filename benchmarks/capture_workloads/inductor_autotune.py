"""An attention block + MLP under torch.compile(mode="max-autotune-no-cudagraphs") on "cuda", forward only:
what made nanoGPT under max-autotune the slowest capture (every mm/addmm/bmm Triton template candidate
max-autotune benchmarks is compiled and captured). Small shapes, so the stand-in GPU computes it at once.
Used by benchmarks/bench_capture.py (no network, no data)."""

import torch

torch.manual_seed(0)


class Block(torch.nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.norm2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        y = att.softmax(dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))


model = Block().to("cuda").eval()
x = torch.randn(2, 32, 64, device="cuda")
compiled = torch.compile(model, mode="max-autotune-no-cudagraphs")
with torch.no_grad():
    ref = model(x)
    out = compiled(x)
torch.testing.assert_close(out, ref, atol=2e-3, rtol=2e-3)
print("inductor_autotune: checks passed")
