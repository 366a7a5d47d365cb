# Corpus script: liger-kernel's LigerLayerNorm, forward and backward, checked against torch.
# Origin: liger_kernel==0.8.5 (PyPI), the op as its test does it: test/transformers/test_layer_norm.py of
#   https://github.com/linkedin/Liger-Kernel (commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c),
#   one small parameter set instead of the parametrize grid; the reference is the test's.
# Licence: liger-kernel is BSD-2-Clause (Copyright 2024 LinkedIn Corporation).
# Changed: sizes made small for a CPU; device="cuda" kept.
import torch

from liger_kernel.transformers.layer_norm import LigerLayerNorm

torch.manual_seed(42)
batch_size, seq_len, hidden_size, dtype = 2, 8, 96, torch.float32
x = torch.randn(batch_size, seq_len, hidden_size, dtype=dtype, device="cuda")
liger_x = x.clone().requires_grad_(True)
torch_x = x.clone().requires_grad_(True)
liger_ln = LigerLayerNorm(hidden_size, eps=1e-6).to(dtype).to("cuda")
torch_ln = torch.nn.LayerNorm(hidden_size, eps=1e-6).to(dtype).to("cuda")
with torch.no_grad():
    torch_ln.weight.copy_(liger_ln.weight)
    torch_ln.bias.copy_(liger_ln.bias)
liger_output = liger_ln(liger_x)
torch_output = torch_ln(torch_x)
torch.testing.assert_close(liger_output, torch_output, atol=1e-5, rtol=1e-5)
grad_output = torch.randn_like(x)
liger_output.backward(grad_output, retain_graph=True)
torch_output.backward(grad_output, retain_graph=True)
torch.testing.assert_close(liger_x.grad, torch_x.grad, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(liger_ln.weight.grad, torch_ln.weight.grad, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(liger_ln.bias.grad, torch_ln.bias.grad, atol=1e-5, rtol=1e-5)
print("layer_norm ok")
