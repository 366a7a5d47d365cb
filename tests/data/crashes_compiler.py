"""A kernel whose compile kills the compiling process for one constexpr value (a compiler crash, simulated).

It also prints on import, and without a newline, as user kernel files may.
"""

import os
import signal

import triton
import triton.language as tl

print("kernel file says hello", end="")


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


ACTIONS = {"die": _die}  # looked up at compile time, out of sight of Triton's dependency hashing


@triton.constexpr_function
def crash_if(block):
    if block == 512:
        ACTIONS["die"]()
    return block


@triton.jit
def copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * crash_if(BLOCK) + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
