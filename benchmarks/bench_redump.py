"""Start-up cost: a cached repeat of `irscope dump`, `passes`, `lines`, `diff` and `report` (whole process)
against `import triton`, this checkout and another.

    python benchmarks/bench_redump.py [--reps 15] [--against /path/to/other/checkout] [--commands dump,passes]

A cached repeat is what a user pays on every re-run of the same command line: Python, irscope's imports,
the cache lookup, the folder and the output (with the direct mode, irscope/direct, no `import triton`
and no kernel file). Every checkout runs with the same interpreter and venv, each command of each
checkout interleaved run by run with `python -c "import triton"` (A, B, import, A, B, import ...) so
that drift on the machine hits all of them; each checkout first fills its own cache (an empty
IRSCOPE_CACHE_DIR per checkout) by running every command twice, each into its own -o folder (a diff
side of the dump's settings would otherwise restore the dump's folder with its own manifest, and the
report's folder would change under it at every rep). `report` is the page of the dump's folder (the
dump is made first, and left 2 s, cache.RACY_NS, before the page is recorded). Run twice in one go: with Python's
bytecode cache as usual and with PYTHONDONTWRITEBYTECODE=1 (every irscope module compiled at each
start). Reports medians, minima, and the median over the reps of each repeat / its own rep's
`import triton` (the ratio that drift cancels out of). Output goes to a pipe, as in a script.
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
KERNEL = ["--kernel", "matmul_kernel", "--target", "h100", "--signature", SIG]
# the README's matmul for h100, as each command reads it
COMMANDS = {
    "dump": ["dump", *KERNEL],
    "passes": ["passes", *KERNEL, "--first", "ttg.async_copy_global_to_local"],
    "lines": ["lines", *KERNEL, "--top", "10"],
    "diff": ["diff", *KERNEL, "--a", "num_stages=2", "--b", "num_stages=3", "--stage", "ttgir"],
    "report": ["report"],
}
OK = {"dump": (0,), "passes": (0,), "lines": (0,), "diff": (0, 1), "report": (0,)}  # diff: 1 when the sides differ


def command(name: str, out: Path) -> list[str]:
    if name == "report":  # the page of the dump's folder (with the layout pictures)
        return [sys.executable, "-m", "irscope", "report", str(out), "-o", str(out.parent / f"{out.name}.html")]
    argv = COMMANDS[name]
    return [sys.executable, "-m", "irscope", argv[0], str(ROOT / "examples" / "matmul.py"), *argv[1:], "-o", str(out)]


def _run(name: str, cmd: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True)
    wall = time.perf_counter() - start
    if p.returncode not in OK[name]:
        raise SystemExit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr.decode(errors='replace')[-2000:]}")
    return wall


def measure(checkouts: dict[str, Path], names: list[str], reps: int, no_bytecode: bool) -> None:
    base = dict(os.environ)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    if no_bytecode:
        base["PYTHONDONTWRITEBYTECODE"] = "1"
    runs = {}
    for who, checkout in checkouts.items():
        env = dict(base, PYTHONPATH=str(checkout), IRSCOPE_CACHE_DIR=tempfile.mkdtemp(prefix="irscope-cache-"))
        out = Path(tempfile.mkdtemp(prefix="irscope-out-"))
        for name in names:
            where = out / name  # a folder per command: a diff side and the dump share a folder, not a manifest
            if name == "report":  # its folder: the dump, old enough to be stamped
                _run("dump", command("dump", where), env, checkout)
                time.sleep(2.1)
            cmd = command(name, where)
            for _ in range(2):  # fills the cache; the second leaves what a repeat is served from
                _run(name, cmd, env, checkout)
            runs[(name, who)] = (cmd, env, checkout)
    walls: dict[tuple[str, str], list[float]] = {k: [] for k in runs}
    imports: list[float] = []
    for _ in range(reps):
        for (name, who), (cmd, env, checkout) in runs.items():
            walls[(name, who)].append(_run(name, cmd, env, checkout))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import triton"], env=base, capture_output=True, check=True)
        imports.append(time.perf_counter() - start)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, PYTHONDONTWRITEBYTECODE="
        f"{base.get('PYTHONDONTWRITEBYTECODE', '')!r}, {reps} interleaved reps"
    )
    for (name, who), times in walls.items():
        ratio = statistics.median(t / i for t, i in zip(times, imports))
        print(
            f"  cached {name:<6} ({who}: {runs[(name, who)][2]}): median {statistics.median(times):.3f} s, "
            f"min {min(times):.3f} s, {ratio:.2f}x import triton (median of pairs)"
        )
    print(
        f"  python -c 'import triton' (whole process): median {statistics.median(imports):.3f} s, "
        f"min {min(imports):.3f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--against", type=Path, help="another irscope checkout (e.g. a git worktree of an older commit)")
    ap.add_argument("--commands", default=",".join(COMMANDS), help=f"comma-separated, of {', '.join(COMMANDS)}")
    a = ap.parse_args()
    names = [n.strip() for n in a.commands.split(",") if n.strip()]
    unknown = [n for n in names if n not in COMMANDS]
    if unknown or not names:
        ap.error(f"--commands: {', '.join(unknown) or 'none given'}; choose from {', '.join(COMMANDS)}")
    checkouts = {"this": ROOT} | ({"against": a.against.resolve()} if a.against else {})
    for no_bytecode in (False, True):
        measure(checkouts, names, a.reps, no_bytecode)


if __name__ == "__main__":
    main()
