"""Start-up cost: a cached `irscope dump` (whole process) against `import triton`, this checkout and another.

    python benchmarks/bench_redump.py [--reps 20] [--against /path/to/other/checkout]

The cached re-dump is what a user pays on every repeat: Python, irscope's imports, the cache lookup
and the folder (with the direct mode, compile/direct.py, no `import triton` and no kernel file). Both
checkouts run with the same interpreter and venv, interleaved run by run with `python -c "import
triton"` (A, B, import, A, B, import ...) so that drift on the machine hits all of them; each first
fills its own cache (an empty IRSCOPE_CACHE_DIR per checkout). Run twice in one go: with Python's
bytecode cache as usual and with PYTHONDONTWRITEBYTECODE=1 (every irscope module compiled at each
start). Reports medians, minima, and the median over the reps of each re-dump / its own rep's
`import triton` (the ratio that drift cancels out of).
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


def measure(checkouts: dict[str, Path], reps: int, no_bytecode: bool) -> None:
    base = dict(os.environ)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    if no_bytecode:
        base["PYTHONDONTWRITEBYTECODE"] = "1"
    runs = {}
    for name, checkout in checkouts.items():
        env = dict(base, PYTHONPATH=str(checkout), IRSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="irscope-cache-"))
        cmd = dump_command(checkout, Path(tempfile.mkdtemp(prefix="irscope-out-")))
        for _ in range(2):  # fills the cache; the second leaves what a repeat is served from
            subprocess.run(cmd, env=env, cwd=checkout, capture_output=True, check=True)
        runs[name] = (cmd, env, checkout)
    walls: dict[str, list[float]] = {name: [] for name in runs}
    imports: list[float] = []
    for _ in range(reps):
        for name, (cmd, env, checkout) in runs.items():
            start = time.perf_counter()
            subprocess.run(cmd, env=env, cwd=checkout, capture_output=True, check=True)
            walls[name].append(time.perf_counter() - start)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import triton"], env=base, capture_output=True, check=True)
        imports.append(time.perf_counter() - start)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, PYTHONDONTWRITEBYTECODE="
          f"{base.get('PYTHONDONTWRITEBYTECODE', '')!r}, {reps} interleaved reps")
    for name, times in walls.items():
        ratio = statistics.median(t / i for t, i in zip(times, imports))
        print(f"  cached re-dump ({name}: {runs[name][2]}): median {statistics.median(times):.3f} s, "
              f"min {min(times):.3f} s, {ratio:.2f}x import triton (median of pairs)")
    print(f"  python -c 'import triton' (whole process): median {statistics.median(imports):.3f} s, "
          f"min {min(imports):.3f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--against", type=Path, help="another irscope checkout (e.g. a git worktree of an older commit)")
    a = ap.parse_args()
    checkouts = {"this": ROOT} | ({"against": a.against.resolve()} if a.against else {})
    for no_bytecode in (False, True):
        measure(checkouts, a.reps, no_bytecode)


if __name__ == "__main__":
    main()
