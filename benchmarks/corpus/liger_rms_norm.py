# Corpus script: liger-kernel's LigerRMSNorm (Llama casting), forward and backward, checked against torch.
# Origin: liger_kernel==0.8.5 (PyPI), the op as its test does it: test/transformers/test_rms_norm.py of
#   https://github.com/linkedin/Liger-Kernel (commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c),
#   one small parameter set instead of the parametrize grid; the reference is the test's.
# Licence: liger-kernel is BSD-2-Clause (Copyright 2024 LinkedIn Corporation).
# Changed: sizes made small for a CPU; device="cuda" kept.
import torch
import torch.nn as nn

from liger_kernel.transformers.rms_norm import LigerRMSNorm


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


torch.manual_seed(42)
bs, sl, hd, dtype = 2, 16, 123, torch.float32
_tensor = torch.randn(bs, sl, hd, device="cuda", dtype=dtype)
h1 = _tensor.clone().requires_grad_(True)
h2 = _tensor.clone().requires_grad_(True)
do = torch.randn(bs, sl, hd, device="cuda", dtype=dtype)
ref = LlamaRMSNorm(hidden_size=hd).to("cuda").to(dtype)
ref.weight.data = torch.randn(hd, device="cuda", dtype=dtype)
tri = LigerRMSNorm(hidden_size=hd, offset=0.0, casting_mode="llama").to("cuda").to(dtype)
tri.weight.data = ref.weight.data.clone()
ref_o = ref(h1)
ref_o.backward(do, retain_graph=True)
tri_o = tri(h2)
tri_o.backward(do, retain_graph=True)
torch.testing.assert_close(ref_o, tri_o, atol=1e-4, rtol=1e-6)
torch.testing.assert_close(h1.grad, h2.grad, atol=1e-4, rtol=1e-6)
torch.testing.assert_close(ref.weight.grad, tri.weight.grad, atol=1e-4, rtol=1e-5)
print("rms_norm ok")
