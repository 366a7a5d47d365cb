"""Start-up cost: a cached `irscope dump` (whole process) and `import triton`, this checkout against another.

    python benchmarks/bench_redump.py [--reps 20] [--against /path/to/other/checkout]

The cached re-dump is what a user pays on every repeat: Python, irscope's imports, `import triton`,
loading the kernel file, the cache lookup and copying the folder. Both checkouts run with the same
interpreter and venv, interleaved run by run (A B A B ...) so that drift on the machine hits both;
each first fills its own cache (an empty IRSCOPE_CACHE_DIR per checkout). Reports medians and minima.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIG = "*fp16, *fp16, *fp16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, 128, 128, 64, 8"


def dump_command(checkout: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "irscope", "dump", str(ROOT / "examples" / "matmul.py"), "--kernel",
            "matmul_kernel", "--target", "h100", "--signature", SIG, "-o", str(out)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--against", type=Path, help="another irscope checkout (e.g. a git worktree of an older commit)")
    a = ap.parse_args()

    checkouts = {"this": ROOT} | ({"against": a.against.resolve()} if a.against else {})
    runs = {}
    for name, checkout in checkouts.items():
        env = dict(os.environ, PYTHONPATH=str(checkout), IRSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="irscope-cache-"))
        cmd = dump_command(checkout, Path(tempfile.mkdtemp(prefix="irscope-out-")))
        subprocess.run(cmd, env=env, cwd=checkout, capture_output=True, check=True)  # fills the cache
        runs[name] = (cmd, env, checkout)
    walls: dict[str, list[float]] = {name: [] for name in runs}
    imports: list[float] = []
    for _ in range(a.reps):
        for name, (cmd, env, checkout) in runs.items():
            start = time.perf_counter()
            subprocess.run(cmd, env=env, cwd=checkout, capture_output=True, check=True)
            walls[name].append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import triton"], capture_output=True, check=True)
        imports.append(time.perf_counter() - start)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, PYTHONDONTWRITEBYTECODE="
          f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}, {a.reps} interleaved reps")
    for name, times in walls.items():
        print(f"cached re-dump ({name}: {runs[name][2]}): median {statistics.median(times):.3f} s, "
              f"min {min(times):.3f} s")
    print(f"python -c 'import triton' (whole process): median {statistics.median(imports):.3f} s, "
          f"min {min(imports):.3f} s")


if __name__ == "__main__":
    main()
