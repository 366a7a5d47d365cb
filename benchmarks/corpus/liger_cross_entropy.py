# Corpus script: liger-kernel's LigerCrossEntropyLoss (with label smoothing and ignore_index), forward and backward, checked against torch.
# Origin: liger_kernel==0.8.5 (PyPI), the op as its test does it: test/transformers/test_cross_entropy.py of
#   https://github.com/linkedin/Liger-Kernel (commit ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c),
#   one small parameter set instead of the parametrize grid; the reference is the test's.
# Licence: liger-kernel is BSD-2-Clause (Copyright 2024 LinkedIn Corporation).
# Changed: sizes made small for a CPU; device="cuda" kept.
import torch

from liger_kernel.transformers.cross_entropy import LigerCrossEntropyLoss

torch.manual_seed(42)
B, T, V, dtype, ignore_index = 2, 8, 1000, torch.float32, -100
torch_ce = torch.nn.CrossEntropyLoss(ignore_index=ignore_index, label_smoothing=0.1)
target_ce = LigerCrossEntropyLoss(ignore_index=ignore_index, label_smoothing=0.1)
_tensor = torch.randn(B * T, V, device="cuda", dtype=dtype) * 5.0
_input = _tensor.detach().clone().requires_grad_(True)
_input2 = _tensor.detach().clone().requires_grad_(True)
target = torch.randint(0, V, (B * T,), device="cuda", dtype=torch.long)
target[torch.randperm(B * T)[: B * T // 4]] = ignore_index
output = torch_ce(_input, target)
output2 = target_ce(_input2, target)
torch.testing.assert_close(output, output2, atol=1e-6, rtol=1e-6)
output.backward()
output2.backward()
torch.testing.assert_close(_input.grad, _input2.grad, atol=1e-6, rtol=1e-6)
print("cross_entropy ok", output2.item())
