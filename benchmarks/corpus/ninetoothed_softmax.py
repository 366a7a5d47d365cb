# Corpus script: tests/test_softmax.py of InfiniTensor/ninetoothed, run as a script: the test module verbatim, then its
#   test functions called once each with one small parameter set (the __main__ block at the end).
# Origin: https://github.com/InfiniTensor/ninetoothed/blob/ef4c52899f5f836e3d77001b56c3544849cacf2c/tests/test_softmax.py (runs against ninetoothed==0.26.0 (PyPI))
# Licence: Apache-2.0 (InfiniTensor).
# Changed: m=123 instead of 1823; tests/utils.py's get_available_devices inlined below the imports; device stays the GPU.

import pytest
import torch

import ninetoothed
import ninetoothed.language as ntl
from ninetoothed import Symbol, Tensor


def get_available_devices():  # tests/utils.py of the same commit, inlined (the repo's tests package is not installed)
    devices = []

    if torch.cuda.is_available():
        devices.append("cuda")

    if hasattr(torch, "mlu") and torch.mlu.is_available():
        devices.append("mlu")

    return tuple(devices)


def softmax(input):
    BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)

    @ninetoothed.jit
    def softmax_kernel(
        input_row: Tensor(2, other=float("-inf")).tile((1, BLOCK_SIZE)),
        output_row: Tensor(2).tile((1, BLOCK_SIZE)),
    ):
        row_minus_max = input_row - ntl.max(input_row)
        numerator = ntl.exp(row_minus_max)
        denominator = ntl.sum(numerator)
        output_row = numerator / denominator  # noqa: F841

    output = torch.empty_like(input)

    softmax_kernel(input, output, BLOCK_SIZE=input.shape[-1])

    return output


@pytest.mark.parametrize("device", get_available_devices())
@pytest.mark.parametrize("dtype", (torch.float32,))
@pytest.mark.parametrize("n", (781,))
@pytest.mark.parametrize("m", (1823,))
def test(m, n, dtype, device):
    input = torch.rand((m, n), dtype=dtype, device=device)

    output = softmax(input)
    expected = torch.softmax(input, dim=-1)

    assert torch.allclose(output, expected)

if __name__ == "__main__":
    test(123, 781, torch.float32, "cuda")
    print("ok")
