"""torch.compile of a model with Dropout in train mode (an MNIST CNN's) and of nn.Embedding with its backward
(nanoGPT's training step), on "cuda": Inductor's random-seed ops and index_put(accumulate=True)'s
decomposition, which stopped the stand-in before any kernel. Checked against what the ops must give."""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Dropout(0.5), torch.nn.ReLU()).cuda().train()
y = torch.compile(model)(torch.randn(32, 64, device="cuda"))
assert y.shape == (32, 64) and y.device.type == "cuda"
assert (y >= 0).all()  # ReLU after dropout: dropped and negative values are 0

emb = torch.nn.Embedding(100, 32).cuda()
idx = torch.tensor([3, 7, 3, 3, 99, 0, 7, 3], device="cuda")
torch.compile(lambda i: emb(i).sum())(idx).backward()
counts = torch.bincount(idx.cpu(), minlength=100).float()  # d(sum)/d(weight[r]) = how often row r was looked up
torch.testing.assert_close(emb.weight.grad.cpu(), counts[:, None].expand(100, 32))
print("inductor_dropout_embedding: checks passed")
