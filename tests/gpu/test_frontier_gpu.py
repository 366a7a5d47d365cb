"""The frontier matmuls of issue 20 on a real GPU (moved from tests/test_frontier.py): the upstream persistent
matmul and the Gluon ones (warp-specialized and pipelined) compute torch.matmul in fp16 and bf16. They need a
Hopper or newer GPU (the Gluon ones Hopper exactly: wgmma); what their recipes compile to is checked on the CPU
in tests/test_frontier.py."""

from __future__ import annotations

import pytest

from tests.helpers import EXAMPLES, load_module

pytestmark = pytest.mark.gpu

PERSISTENT = EXAMPLES / "persistent_matmul.py"
GLUON = EXAMPLES / "gluon_persistent_matmul.py"


@pytest.mark.parametrize("which", ["triton", "gluon-ws", "gluon-pipelined"])
@pytest.mark.parametrize("shape", [(1000, 776, 512), (256, 512, 4096)])
def test_frontier_matmuls_compute_torch_matmul(which, shape):
    import torch

    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("needs a Hopper or newer CUDA GPU")
    if which.startswith("gluon") and torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the Gluon kernels use wgmma: Hopper only")
    mod = load_module(PERSISTENT if which == "triton" else GLUON)
    mod.use_torch_allocator()
    M, N, K = shape
    for dtype in (torch.float16, torch.bfloat16):
        a = torch.randn(M, K, device="cuda", dtype=dtype)
        b = torch.randn(K, N, device="cuda", dtype=dtype)
        kwargs = {} if which == "triton" else {"warp_specialized": which == "gluon-ws"}
        c = mod.matmul(a, b, **kwargs)
        ref = a.double() @ b.double()
        assert ((c.double() - ref).norm() / ref.norm()).item() < 1e-2
