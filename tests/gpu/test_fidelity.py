"""Fidelity on a real GPU: irscope's PTX for a spec equals what Triton's JIT builds for the launch.

Skipped without a CUDA GPU (the `gpu` marker's rule in tests/conftest.py). Run on the GPU machine:
    pytest tests/gpu/test_fidelity.py
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.helpers import EXAMPLES, MATMUL, VECTOR_ADD, compile_example, load_module

pytestmark = pytest.mark.gpu


def _local_target() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"cuda:{major * 10 + minor}"


def _strip_header(ptx: str) -> str:
    return "\n".join(line for line in ptx.splitlines() if not line.startswith("//"))


@pytest.mark.parametrize("n, offset", [(4096, 0), (4099, 0), (4096, 1)])
def test_vector_add_ptx_equals_jit(n, offset):
    import torch

    spec = importlib.util.spec_from_file_location("vector_add", VECTOR_ADD)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = torch.randn(n + offset, device="cuda")[offset:]
    y = torch.randn(n, device="cuda")
    out = torch.empty(n, device="cuda")
    kernel = mod.add_kernel[(triton_cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x + y)
    sig = f"*fp32:{16 if offset == 0 else 4}, *fp32, *fp32, i32{':16' if n % 16 == 0 else ''}, 1024"
    art = compile_example(VECTOR_ADD, sig, target=_local_target())
    assert art.stages["ttgir"] == kernel.asm["ttgir"]
    assert _strip_header(art.stages["ptx"]) == _strip_header(kernel.asm["ptx"])
    assert art.stats["registers"] == kernel.n_regs
    assert (art.stats["spills"] == 0) == (kernel.n_spills == 0)


def test_matmul_ptx_equals_jit():
    import torch

    spec = importlib.util.spec_from_file_location("matmul", MATMUL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    M = N = K = 512
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    grid = (triton_cdiv(M, 128) * triton_cdiv(N, 128),)
    kernel = mod.matmul_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=128,
        BLOCK_N=128,
        BLOCK_K=64,
        GROUP_M=8,
        num_warps=8,
    )
    torch.testing.assert_close(c, a @ b, rtol=1e-2, atol=1e-2)
    sig = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"
    art = compile_example(MATMUL, sig, kernel="matmul_kernel", target=_local_target(), sets=("num_warps=8",))
    assert art.stages["ttgir"] == kernel.asm["ttgir"]
    assert _strip_header(art.stages["ptx"]) == _strip_header(kernel.asm["ptx"])
    assert art.stats["registers"] == kernel.n_regs
    assert art.metadata["shared"] == kernel.metadata.shared


@pytest.mark.parametrize("ws", [False, True])
def test_tma_descriptor_matmul_ptx_equals_jit(ws):
    """A host-side TensorDescriptor launch: irscope's tensordesc<...> elements give the JIT's PTX."""
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    mod = load_module(EXAMPLES / "tma_matmul.py")
    M, N, K = 1024, 768, 512
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(N, K, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    descs = (
        TensorDescriptor.from_tensor(a, [128, 64]),
        TensorDescriptor.from_tensor(b, [256, 64]),
        TensorDescriptor.from_tensor(c, [128, 256]),
    )
    tiles = triton_cdiv(M, 128) * triton_cdiv(N, 256)
    kernel = mod.matmul_tma_persistent[(min(sms, tiles),)](
        *descs, M, N, K, 128, 256, 64, 8, sms, ws, not ws, num_warps=8, num_stages=3
    )
    torch.testing.assert_close(c, a @ b.T, rtol=1e-2, atol=1e-2)
    sig = (
        f"tensordesc<fp16[128, 64]>, tensordesc<fp16[256, 64]>, tensordesc<fp16[128, 256]>, i32:16, i32:16, "
        f"i32:16, 128, 256, 64, 8, {sms}, {ws}, {not ws}"
    )
    art = compile_example(EXAMPLES / "tma_matmul.py", sig, target=_local_target(), sets=("num_warps=8", "num_stages=3"))
    assert _strip_header(art.stages["ptx"]) == _strip_header(kernel.asm["ptx"])
    assert "cp.async.bulk.tensor" in art.stages["ptx"]


def test_gluon_warp_specialized_matmul_is_correct_and_ptx_equals_jit():
    import torch

    mod = load_module(EXAMPLES / "gluon_ws_matmul.py")
    a = torch.randn(1024, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 768, device="cuda", dtype=torch.float16)
    c = mod.matmul(a, b)
    torch.testing.assert_close(c, a @ b, rtol=1e-2, atol=1e-2)
    launched = [k for k in mod.matmul_ws_kernel.device_caches[0][0].values()]
    assert len(launched) == 1
    sig = (
        "tensordesc<fp16[128, 64]>, tensordesc<fp16[64, 128]>, tensordesc<fp16[128, 128]>, i32:16, i32:16, "
        "i32:16, 128, 128, 64, 4, 24, 4"
    )
    art = compile_example(EXAMPLES / "gluon_ws_matmul.py", sig, target=_local_target())
    assert _strip_header(art.stages["ptx"]) == _strip_header(launched[0].asm["ptx"])
    assert list(art.stats["machinery"]["partitions"]) == ["default", "worker0"]


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b
