"""A script that launches its kernels from other threads: a threading.Thread and a
ThreadPoolExecutor (four launches of one kernel at once). Each thread makes its own
tensor for "cuda". `--leave-running` also starts a daemon thread that is still
running when the script ends.
"""

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import torch
import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def triple_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


def work(kernel, n: int) -> None:
    x = torch.ones(n, device="cuda")
    assert x.is_cuda, x.device
    kernel[(triton.cdiv(n, 256), )](x, n, BLOCK=256)


if __name__ == "__main__":
    t = threading.Thread(target=work, args=(double_kernel, 1000))
    t.start()
    t.join()
    with ThreadPoolExecutor(4) as pool:
        for f in [pool.submit(work, triple_kernel, 2048) for _ in range(4)]:
            f.result()
    if "--leave-running" in sys.argv:
        threading.Thread(target=threading.Event().wait, name="idle-worker", daemon=True).start()
    print("capture_threads: ok")
