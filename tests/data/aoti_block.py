"""A LayerNorm + Linear + GELU + Linear block on "cuda", exported and compiled with AOTInductor into a
.pt2 package (argv[1], else a temporary one), then loaded and checked against eager (on a GPU)."""

import os
import sys
import tempfile

import torch

model = (
    torch.nn.Sequential(torch.nn.LayerNorm(64), torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64))
    .to("cuda")
    .eval()
)
x = torch.randn(16, 64, device="cuda")
package = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "block.pt2")
with torch.no_grad():
    exported = torch.export.export(model, (x,))
    path = torch._inductor.aoti_compile_and_package(exported, package_path=package)
    compiled = torch._inductor.aoti_load_package(path)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
print(f"aoti_block: checks passed, package {path}")
