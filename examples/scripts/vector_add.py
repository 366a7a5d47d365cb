"""Vector addition, written as in Triton's first tutorial. Runs on a GPU as `python vector_add.py`.

    irscope dump examples/scripts/vector_add.py -- --size 98432     (captures add_kernel)
"""

import argparse

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    output = torch.empty_like(x)
    assert x.device == DEVICE and y.device == DEVICE and output.device == DEVICE
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]), )
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=98432)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.rand(args.size, device=DEVICE)
    y = torch.rand(args.size, device=DEVICE)
    output_torch = x + y
    output_triton = add(x, y)
    print(f"max difference between torch and triton: {torch.max(torch.abs(output_torch - output_triton))}")
    torch.testing.assert_close(output_triton, output_torch)
    print("vector_add: ok")
