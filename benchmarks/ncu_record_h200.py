"""Launch one example kernel a few times on a GPU, for Nsight Compute (or Proton) to record — issue
#32's real reports, kept under tests/data/ncu/ so the profile parser and its join are tested on a CPU.

    ncu --clock-control none --set full --import-source yes -k regex:KERNEL -c 1 -o REPORT \
        python3 benchmarks/ncu_record_h200.py CASE

CASE: add (vector_add, memory-bound), matmul1 / matmul3 (examples/matmul.py at 4096^3 fp16 with
num_stages 1 (no pipelining) or 3: the settings pair), gluon (the frontier warp-specialized Gluon matmul, 8192^3 fp16),
rmsnorm (liger-kernel's RMSNorm forward, 16384 x 8192 bf16). Each case checks its result."""

import importlib.util
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def case_add() -> None:
    va = load("vector_add")
    n = 1 << 24
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for _ in range(3):
        va.add_kernel[(cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x + y)


def case_matmul(num_stages: int) -> None:
    mm = load("matmul")
    m = 4096
    a = torch.randn(m, m, device="cuda", dtype=torch.float16)
    b = torch.randn(m, m, device="cuda", dtype=torch.float16)
    c = torch.empty(m, m, device="cuda", dtype=torch.float16)
    grid = (cdiv(m, 128) * cdiv(m, 128),)
    for _ in range(3):
        mm.matmul_kernel[grid](
            a,
            b,
            c,
            m,
            m,
            m,
            a.stride(0),
            a.stride(1),
            b.stride(0),
            b.stride(1),
            c.stride(0),
            c.stride(1),
            128,
            128,
            64,
            8,
            num_warps=4,
            num_stages=num_stages,
        )
    torch.testing.assert_close(c, a @ b, atol=5e-2, rtol=1e-2)


def case_gluon() -> None:
    gm = load("gluon_persistent_matmul")
    gm.use_torch_allocator()
    m = 8192
    a = torch.randn(m, m, device="cuda", dtype=torch.float16)
    b = torch.randn(m, m, device="cuda", dtype=torch.float16)
    for _ in range(2):
        c = gm.matmul(a, b)
    torch.testing.assert_close(c, a @ b, atol=5e-2, rtol=1e-2)


def case_rmsnorm() -> None:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    x = torch.randn(16384, 8192, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        y = LigerRMSNormFunction.apply(x, w, 1e-6, 0.0, "llama", False)
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(torch.bfloat16) * w
    torch.testing.assert_close(y, ref, atol=5e-2, rtol=2e-2)


CASES = {
    "add": case_add,
    "matmul1": lambda: case_matmul(1),
    "matmul3": lambda: case_matmul(3),
    "gluon": case_gluon,
    "rmsnorm": case_rmsnorm,
}

if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "add"
    CASES[name]()
    torch.cuda.synchronize()
    print(f"ncu_record_h200: {name} ok", file=sys.stderr)
