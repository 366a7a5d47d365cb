"""What the stand-in GPU does in #31's cases, checked against the chip: the scripts under tests/data run
plainly (no irscope) on a GPU and must say what they say on the stand-in (tests/test_capture_standin.py,
tests/test_capture_hardening.py). Run on the H200: `pytest -q tests/gpu/test_standin_agrees_gpu.py`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import DATA

pytestmark = pytest.mark.gpu


def _run(script: str) -> str:
    p = subprocess.run([sys.executable, str(DATA / script)], capture_output=True, text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_kernel_that_cannot_compile_raises_at_its_launch_on_the_chip():
    """The stand-in raises the compiler's error at the launch because a GPU does: the same fallbacks."""
    import triton

    out = _run("capture_cannot_compile.py")
    assert out.count("small dot raised CompilationError; falling back to torch") == 2, out
    removed = "removed" in (triton.language.make_block_ptr.__doc__ or "")
    assert ("block pointers raised CompilationError" in out) == removed, out
    assert out.rstrip().endswith("done")


def test_the_matmul_tutorials_check_passes_on_the_chip():
    """fp16 at 512^3: Triton's and cuBLAS's results agree bit for bit on the chip (as on the stand-in,
    which computes both exactly rounded). The bf16 line and the count against the correctly rounded
    product are printed for the record (-s): the chip's sums are in tensor-core order."""
    out = _run("capture_fp16_matmul.py")
    print(out)
    fp16 = [line for line in out.splitlines() if line.startswith("float16 BK=")]
    assert len(fp16) == 2 and all("✅ Triton and Torch match, 0 differ" in line for line in fp16), out
