# Corpus script: a Mixtral sparse MoE block (router top-2 of 4 experts, SwiGLU experts) under torch.compile,
# forward and backward, checked against the same block run eagerly.
# Origin: transformers==5.25.0 (PyPI), transformers/models/mixtral/modeling_mixtral.py: MixtralSparseMoeBlock
#   (the block is the library's, imported unmodified; this driver follows its test_modeling_mixtral usage).
# Licence: transformers is Apache-2.0 (Copyright 2023 Mistral AI and the HuggingFace Inc. team).
# Changed: sizes made small for a CPU (hidden 64, intermediate 128, 4 experts, 2 x 16 tokens); device="cuda".
import copy

import torch
from transformers import MixtralConfig
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

torch.manual_seed(0)
config = MixtralConfig(hidden_size=64, intermediate_size=128, num_local_experts=4, num_experts_per_tok=2)
block = MixtralSparseMoeBlock(config).to("cuda")
for p in block.parameters():
    torch.nn.init.normal_(p, std=0.05)
eager = copy.deepcopy(block)
compiled = torch.compile(block)

x = torch.randn(2, 16, 64, device="cuda")
x1, x2 = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
y = compiled(x1)
y_ref = eager(x2)
torch.testing.assert_close(y, y_ref, atol=1e-4, rtol=1e-4)
dy = torch.randn_like(y)
y.backward(dy)
y_ref.backward(dy)
torch.testing.assert_close(x1.grad, x2.grad, atol=1e-4, rtol=1e-4)
for (name, p), p_ref in zip(block.named_parameters(), eager.parameters()):
    torch.testing.assert_close(p.grad, p_ref.grad, atol=1e-4, rtol=1e-4, msg=name)
print("moe block ok", y.shape)
