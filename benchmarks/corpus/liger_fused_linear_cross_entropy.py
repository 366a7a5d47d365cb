# Corpus script: liger-kernel's LigerFusedLinearCrossEntropyLoss, forward and backward, checked against torch.
# Origin: liger_kernel==0.8.5 (PyPI), the op as its test does it: test/transformers/test_fused_linear_cross_entropy.py of
#   https://github.com/linkedin/Liger-Kernel (commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c),
#   one small parameter set instead of the parametrize grid; the reference is the test's.
# Licence: liger-kernel is BSD-2-Clause (Copyright 2024 LinkedIn Corporation).
# Changed: sizes made small for a CPU; device="cuda" kept.
import torch

from liger_kernel.transformers.fused_linear_cross_entropy import LigerFusedLinearCrossEntropyLoss


class TorchLMHeadCE(torch.nn.Module):
    def __init__(self, H, V, dtype, ignore_index=-100):
        super().__init__()
        self.lin = torch.nn.Linear(in_features=H, out_features=V, bias=False, dtype=dtype)
        self.ce_loss = torch.nn.CrossEntropyLoss(ignore_index=ignore_index, reduction="mean")

    def forward(self, x, y):
        logits = self.lin(x).to(torch.float32)
        return self.ce_loss(logits, y)


class LigerLMHeadCE(torch.nn.Module):
    def __init__(self, H, V, dtype, ignore_index=-100):
        super().__init__()
        self.lin = torch.nn.Linear(in_features=H, out_features=V, bias=False, dtype=dtype)
        self.ce_loss = LigerFusedLinearCrossEntropyLoss(ignore_index=ignore_index, reduction="mean")

    def forward(self, x, y):
        return self.ce_loss(self.lin.weight, x, y)


torch.manual_seed(42)
B, T, H, V, dtype = 2, 8, 64, 500, torch.float32
torch_lm = TorchLMHeadCE(H=H, V=V, dtype=dtype).to("cuda")
liger_lm = LigerLMHeadCE(H=H, V=V, dtype=dtype).to("cuda")
torch_lm.lin.weight.data = liger_lm.lin.weight.data = torch.rand(V, H, device="cuda", dtype=dtype)
_tensor = torch.randn(B * T, H, device="cuda", dtype=dtype)
_input1 = _tensor.detach().clone().requires_grad_(True)
_input2 = _tensor.detach().clone().requires_grad_(True)
target = torch.randint(0, V, (B * T,), device="cuda", dtype=torch.long)
output1 = torch_lm(_input1, target)
output2 = liger_lm(_input2, target)
torch.testing.assert_close(output1, output2, atol=1e-5, rtol=5e-4)
output1.backward()
output2.backward()
torch.testing.assert_close(_input1.grad, _input2.grad, atol=1e-5, rtol=5e-4)
torch.testing.assert_close(torch_lm.lin.weight.grad, liger_lm.lin.weight.grad, atol=1e-5, rtol=5e-4)
print("fused linear cross entropy ok", output2.item())
