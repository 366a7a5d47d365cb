"""The fixed costs under the H200 sweep (bench_sweep_h200.py prints the sweep's own phases).

  python3 benchmarks/profile_sweep_h200.py

imports     `import triton`, `import irscope.compile.compiler`, `import torch` + CUDA init, each in a
            fresh process
one config  a cold in-process compile of one 8192^3 bf16 matmul config, per stage (irscope's
            times_ms, SASS included)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_sweep_h200 import SIG  # noqa: E402


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="irscope-profile-"))
    env = dict(os.environ, IRSCOPE_CACHE_DIR=str(tmp / "irscope-cache"), TRITON_CACHE_DIR=str(tmp / "triton-cache"))

    for what, code in [
        ("import triton", "import triton"),
        ("import irscope.compile.compiler", "import irscope.compile.compiler"),
        ("import torch + cuda init", "import torch; torch.zeros(1, device='cuda')"),
        ("python startup", "pass"),
    ]:
        t, _ = timed([sys.executable, "-c", code], env)
        print(f"{what:28s} {t:6.2f} s")

    # the job as the CLI resolves it (no --target: the local GPU's), compiled as dump compiles it
    one = (
        "import json, time; from pathlib import Path; from irscope import jobs; from irscope.compile import compiler;"
        f"job = jobs.resolve_one(jobs.Request(Path({str(ROOT / 'examples' / 'matmul.py')!r}), ('matmul_kernel',), "
        f"{SIG!r}), 'the profile compiles'); t = time.perf_counter();"
        "art = compiler.compile_spec(job.spec, job.settings); print(json.dumps(art.times_ms), time.perf_counter() - t)"
    )
    t, p = timed([sys.executable, "-c", one], dict(env, TRITON_CACHE_DIR=str(tmp / "tc-one")))
    print(f"one config, cold, in-process (process {t:.2f} s): {p.stdout.strip()} {p.stderr[-500:]}")


if __name__ == "__main__":
    main()
