"""Triton's matmul tutorial's check, `torch.allclose(triton_output, torch_output, atol=1e-2, rtol=0)`,
at 512^3 in fp16 (BLOCK_K 32 with tl.dot(a, b, acc), 64 with acc += tl.dot(a, b)) and bf16 (BLOCK_K
128); and torch's GEMM against the correctly rounded product (NumPy's fp64 -> fp16)."""

import numpy as np
import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PLUS: tl.constexpr):
    pid = tl.program_id(0)
    pm = pid // tl.cdiv(N, BN)
    pn = pid % tl.cdiv(N, BN)
    om = pm * BM + tl.arange(0, BM)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    a = a_ptr + om[:, None] * sam + ok[None, :] * sak
    b = b_ptr + ok[:, None] * sbk + on[None, :] * sbn
    acc = tl.zeros((BM, BN), tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        if PLUS:
            acc += tl.dot(tl.load(a), tl.load(b))
        else:
            acc = tl.dot(tl.load(a), tl.load(b), acc)
        a += BK * sak
        b += BK * sbk
    tl.store(c_ptr + om[:, None] * scm + on[None, :] * scn, acc.to(c_ptr.dtype.element_ty))


torch.manual_seed(0)
for dtype in (torch.float16, torch.bfloat16):
    a = torch.randn((512, 512), device=DEVICE, dtype=dtype)
    b = torch.randn((512, 512), device=DEVICE, dtype=dtype)
    torch_output = torch.matmul(a, b)
    if dtype == torch.float16:
        rounded = torch.from_numpy((a.double() @ b.double()).cpu().numpy().astype(np.float16))
        print(f"torch vs correctly rounded: {(torch_output.cpu() != rounded).sum().item()} differ")
    for block_k, plus in ((32, False), (64, True)) if dtype == torch.float16 else ((128, False),):
        c = torch.empty((512, 512), device=DEVICE, dtype=dtype)
        matmul_kernel[(16,)](a, b, c, 512, 512, 512, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1), BM=128, BN=128, BK=block_k, PLUS=plus)
        same = torch.allclose(c, torch_output, atol=1e-2, rtol=0)
        print(f"{str(dtype)[6:]} BK={block_k} {'+=' if plus else 'acc'}: "
              f"{'✅ Triton and Torch match' if same else '❌ Triton and Torch differ'}, "
              f"{(c != torch_output).sum().item()} differ")
