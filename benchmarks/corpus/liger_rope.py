# Corpus script: liger-kernel's liger_rotary_pos_emb (LLaMA RoPE), forward and backward, checked against torch.
# Origin: liger_kernel==0.8.5 (PyPI), the op as its test does it: test/transformers/test_rope.py of
#   https://github.com/linkedin/Liger-Kernel (commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c),
#   one small parameter set instead of the parametrize grid; the reference is the test's.
#   transformers==5.25.0 (PyPI) for the reference modules the test uses (LlamaRotaryEmbedding(config) as 5.x takes it).
# Licence: liger-kernel is BSD-2-Clause (Copyright 2024 LinkedIn Corporation).
# Changed: sizes made small for a CPU; device="cuda" kept.
import torch
from transformers.models.llama.configuration_llama import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

from liger_kernel.transformers.rope import liger_rotary_pos_emb

torch.manual_seed(42)
bsz, seq_len, num_q_heads, num_kv_heads, head_dim, dtype = 1, 16, 4, 2, 64, torch.float32
config = LlamaConfig(head_dim=head_dim, hidden_size=head_dim * num_q_heads, num_attention_heads=num_q_heads)
rotary_emb = LlamaRotaryEmbedding(config=config).to("cuda")
_tensor_q = torch.randn((bsz, seq_len, num_q_heads, head_dim), device="cuda").transpose(1, 2).to(dtype)
_tensor_k = torch.randn((bsz, seq_len, num_kv_heads, head_dim), device="cuda").transpose(1, 2).to(dtype)
q1, k1 = _tensor_q.clone().requires_grad_(True), _tensor_k.clone().requires_grad_(True)
q2, k2 = _tensor_q.clone().requires_grad_(True), _tensor_k.clone().requires_grad_(True)
pos_ids = torch.arange(seq_len, device="cuda", dtype=torch.long).unsqueeze(0)
cos, sin = rotary_emb(k1, pos_ids)
hf_q, hf_k = apply_rotary_pos_emb(q1, k1, cos, sin)
tt_q, tt_k = liger_rotary_pos_emb(q2, k2, cos, sin)
torch.testing.assert_close(hf_q, tt_q, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(hf_k, tt_k, atol=1e-5, rtol=1e-5)
dq, dk = torch.randn_like(hf_q), torch.randn_like(hf_k)
q1_grad, k1_grad = torch.autograd.grad((hf_q, hf_k), (q1, k1), (dq, dk), allow_unused=True)
q2_grad, k2_grad = torch.autograd.grad((tt_q, tt_k), (q2, k2), (dq.clone(), dk.clone()), allow_unused=True)
torch.testing.assert_close(q1_grad, q2_grad, atol=1e-5, rtol=1e-5)
torch.testing.assert_close(k1_grad, k2_grad, atol=1e-5, rtol=1e-5)
print("rope ok")
