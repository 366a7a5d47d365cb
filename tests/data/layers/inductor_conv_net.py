"""torch.compile of a conv net (the MNIST CNN's two convolutions, ReLU, max-pool) on "cuda", run under
no_grad (the MNIST example's test loop: an inference graph). There Inductor makes the convolutions'
inputs channels-last, as on a GPU, and the compiled code checks the layout each convolution returns.
Checked against the same net run eagerly."""

import torch

torch.manual_seed(0)
net = torch.nn.Sequential(
    torch.nn.Conv2d(1, 32, 3, 1), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3, 1), torch.nn.ReLU(), torch.nn.MaxPool2d(2)
).cuda()
x = torch.randn(4, 1, 28, 28, device="cuda")
with torch.no_grad():
    y = torch.compile(net)(x)
    y_ref = net(x)
torch.testing.assert_close(y, y_ref, atol=1e-4, rtol=1e-4)
print("inductor_conv_net: checks passed")
