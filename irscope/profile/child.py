"""The launch a profiler watches (python -m irscope.profile.child JOBFILE [--proton OUT] [--no-launch]).

The parent (command.py) writes the job: the kernel's file, name, specialization and settings (as the
dump compiled them) and bench's launch (launch.py's data: inputs made from a seed, the grid). The
child loads the same binary from Triton's cache and launches it once: under `ncu -c 1` that launch is
the profiled one. --proton OUT: the launch runs inside Proton's PC sampling and OUT.hatchet is
written. --no-launch: load the job and check that every parameter has a value, launch nothing (the
CPU tests' fake ncu runs this). Errors: one line on stderr, exit 1.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from irscope import workers
from irscope.compile import compiler
from irscope.kernel import loader
from irscope.kernel.spec import KernelSpec
from irscope.timing import inputs
from irscope.timing.variant import Variant, grid_for, launcher


def write_job(path: Path, spec: KernelSpec, settings: Any, launch: Any, seed: int) -> None:
    path.write_text(
        workers.encode(
            {
                "file": str(spec.file),
                "kernel": spec.kernel,
                "args": spec.args,
                "settings": settings,
                "launch": launch,
                "seed": seed,
            }
        )
    )


def _variant(job: dict[str, Any]) -> Variant:
    fn = loader.select_kernels(job["file"], [job["kernel"]])[0].fn
    return Variant("profiled", KernelSpec(job["kernel"], job["file"], fn, job["args"]), job["settings"])


def _missing(v: Variant, launch: Any) -> list[str]:
    """Parameters with no launch value: neither in the launch, a constexpr of the spec, nor a default."""
    have = set(launch.args) | {n for n, a in v.spec.args.items() if a.kind == "constexpr"}
    return [p.name for p in v.spec.params if p.name not in have and not p.has_default]


def main(argv: list[str]) -> int:
    job = workers.decode(Path(argv[0]).read_text())
    v = _variant(job)
    launch = job["launch"]
    if missing := _missing(v, launch):
        sys.stderr.write(f"irscope profile: no launch value for {', '.join(missing)}; give it in --args\n")
        return 1
    grid = grid_for(v, launch)
    if "--no-launch" in argv:
        print(f"irscope profile child: {v.spec.kernel} grid {grid} ready (not launched)")
        return 0
    import torch
    import triton

    torch.cuda.init()
    # kernels that build TMA descriptors on the device need the allocator a script would set
    triton.set_allocator(lambda size, alignment, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    proton: Any = None
    if "--proton" in argv:  # before the binary loads: CUPTI correlates samples with a module it saw load
        import triton.profiler

        proton = triton.profiler
        proton.start(argv[argv.index("--proton") + 1], backend="cupti", mode="pcsampling", hook="triton")
    v.binary = compiler.load_binary(v.spec, v.settings)
    args = inputs.materialize(launch, "cuda", job["seed"])
    run = launcher(v, args, launch)
    run()
    torch.cuda.synchronize()
    if proton is not None:
        proton.finalize()
    print(f"irscope profile child: {v.spec.kernel} grid {grid} launched once")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as e:  # noqa: BLE001 - the parent reports it in one line
        text = str(e).strip().splitlines()
        sys.stderr.write(f"irscope profile: {type(e).__name__}: {text[0] if text else ''}\n")
        sys.exit(1)
