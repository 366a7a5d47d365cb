"""What libraries ask of the GPU, for the capture tests: its name (torch and nvidia-smi / rocm-smi
in a subprocess), its properties, torch.version; then a TMA-style launch (TensorDescriptor on the
host, triton.set_allocator for device-side descriptors) inside a CUDA graph that is replayed.
Prints one `identity:` line per fact; each launch is checked against torch.
"""

import json
import shutil
import subprocess

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def copy_desc_kernel(in_desc, out_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    block = in_desc.load([pid * BLOCK])
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, block + 1.0, mask=offs < N)


@triton.jit
def make_desc_kernel(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(x_ptr, shape=[N], strides=[1], block_shape=[BLOCK])
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, desc.load([pid * BLOCK]) * 2.0, mask=offs < N)


def smi() -> str:
    if shutil.which("nvidia-smi"):
        return subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True, check=True).stdout.strip()
    return subprocess.run(["rocm-smi", "--showproductname", "--json"], capture_output=True, text=True,
                          check=True).stdout.strip()


if __name__ == "__main__":
    props = torch.cuda.get_device_properties(0)
    print("identity: " + json.dumps({"name": torch.cuda.get_device_name(), "smi": smi(),
                                     "list": subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                                                            check=True).stdout.strip() if shutil.which("nvidia-smi")
                                     else None,
                                     "props_name": props.name, "sms": props.multi_processor_count,
                                     "memory": props.total_memory, "l2": props.L2_cache_size,
                                     "warp_size": props.warp_size, "gcn": props.gcnArchName,
                                     "cuda": torch.version.cuda, "hip": torch.version.hip}))
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))
    N, BLOCK = 1000, 128
    x = torch.randn(N, device=DEVICE)
    out = torch.empty_like(x)
    desc = TensorDescriptor.from_tensor(x, [BLOCK])
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        copy_desc_kernel[(triton.cdiv(N, BLOCK), )](desc, out, N, BLOCK=BLOCK)
    out.zero_()
    graph.replay()
    torch.testing.assert_close(out, x + 1.0)
    print("identity: descriptor ok")
    out2 = torch.empty_like(x)
    make_desc_kernel[(triton.cdiv(N, BLOCK), )](x, out2, N, BLOCK=BLOCK)
    torch.testing.assert_close(out2, x * 2.0)
    print("identity: device-side descriptor ok")
