"""Launch two example kernels a few times on a GPU, for Nsight Compute to record (issue #32's real
reports): examples/vector_add.py (memory-bound) and examples/matmul.py (fp16, 2048^3). Run under
`ncu --import-source yes -o REPORT python3 benchmarks/ncu_record_h200.py`; prints the kernels' names."""

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


def main() -> None:
    va = load("vector_add")
    n = 1 << 24
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for _ in range(3):
        va.add_kernel[(triton_cdiv(n, 1024),)](x, y, out, n, BLOCK_SIZE=1024)
    torch.testing.assert_close(out, x + y)
    mm = load("matmul")
    m = 2048
    a, b = torch.randn(m, m, device="cuda", dtype=torch.float16), torch.randn(m, m, device="cuda", dtype=torch.float16)
    c = torch.empty(m, m, device="cuda", dtype=torch.float16)
    grid = (triton_cdiv(m, 128) * triton_cdiv(m, 128),)
    for _ in range(3):
        mm.matmul_kernel[grid](a, b, c, m, m, m, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                               c.stride(0), c.stride(1), 128, 128, 64, 8)
    torch.cuda.synchronize()
    print("launched add_kernel and matmul_kernel", file=sys.stderr)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


if __name__ == "__main__":
    main()
