"""irscope.capture (the Python API) of one call that exports a block and compiles it with AOTInductor;
prints what the capture says (argv[1]: the package path asked for)."""

import json
import sys

import torch

import irscope


def build(path):
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU()).to("cuda").eval()
    x = torch.randn(8, 32, device="cuda")
    with torch.no_grad():
        exported = torch.export.export(model, (x,))
        return torch._inductor.aoti_compile_and_package(exported, package_path=path)


cap = irscope.capture(build, sys.argv[1], target="h100")
print(json.dumps({"stopped": cap.stopped, "generated_by": [d.manifest.get("generated_by") for d in cap]}))
