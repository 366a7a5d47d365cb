# Corpus script: liger-kernel's LigerSwiGLUMLP (the LLaMA MLP), forward and backward, checked against torch.
# Origin: liger_kernel==0.8.5 (PyPI), the op as its test does it: test/transformers/test_swiglu.py of
#   https://github.com/linkedin/Liger-Kernel (commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c),
#   one small parameter set instead of the parametrize grid; the reference is the test's.
# Licence: liger-kernel is BSD-2-Clause (Copyright 2024 LinkedIn Corporation).
# Changed: sizes made small for a CPU; device="cuda" kept.
import torch
from transformers.models.llama.configuration_llama import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaMLP

from liger_kernel.transformers.swiglu import LigerSwiGLUMLP

torch.manual_seed(42)
bsz, seq_len, hidden_size, intermediate_size, dtype = 2, 16, 64, 128, torch.float32
config = LlamaConfig(hidden_size=hidden_size, intermediate_size=intermediate_size, hidden_act="silu")
_input = torch.randn(bsz, seq_len, hidden_size, device="cuda", dtype=dtype)
x1 = _input.clone().requires_grad_(True)
x2 = _input.clone().requires_grad_(True)
G = torch.randn(intermediate_size, hidden_size, device="cuda", dtype=dtype)
U = torch.randn(intermediate_size, hidden_size, device="cuda", dtype=dtype)
D = torch.randn(hidden_size, intermediate_size, device="cuda", dtype=dtype)
llama_mlp = LlamaMLP(config=config).to("cuda").to(dtype)
llama_mlp.gate_proj.weight.data = G
llama_mlp.up_proj.weight.data = U
llama_mlp.down_proj.weight.data = D
liger_mlp = LigerSwiGLUMLP(config=config).to("cuda").to(dtype)
liger_mlp.gate_proj.weight.data = G
liger_mlp.up_proj.weight.data = U
liger_mlp.down_proj.weight.data = D
y1 = llama_mlp(x1)
y2 = liger_mlp(x2)
torch.testing.assert_close(y1, y2, atol=1e-3, rtol=1e-4)
dy = torch.randn_like(y1)
y1.backward(dy.clone(), retain_graph=True)
y2.backward(dy.clone(), retain_graph=True)
torch.testing.assert_close(llama_mlp.gate_proj.weight.grad, liger_mlp.gate_proj.weight.grad, atol=1e-2, rtol=1e-3)
torch.testing.assert_close(x1.grad, x2.grad, atol=1e-2, rtol=1e-3)
print("swiglu ok")
