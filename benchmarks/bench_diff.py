"""Speed of `irscope diff` on two ~10k-line SASS files: normalisation + line diff, and the whole command.

    python benchmarks/bench_diff.py [--lines 10000] [--reps 5]

Real SASS, not synthetic text: it compiles examples/matmul.py for three tile/target
configurations twice, once with num_warps=4 and once with num_warps=8 (about 10 s
of compiling, cache in a temporary folder), and strings each side's SASS together
until it has --lines lines (whole kernels, so a little more). Scenarios:

  rewritten    side a: num_warps=4 SASS, side b: num_warps=8 SASS; nearly every
               line differs (register allocation changes throughout), the hard case
  one change   side b is side a with one kernel's SASS (the second) swapped for its
               num_warps=8 version; the rest equal
  identical    side b is side a

For each it times, in this process, what `irscope diff` does for one stage
(diff.diff_texts: normalise both sides, then the line diff), and the unified
rendering of the result. Then it times the whole command, `irscope diff DIR_A DIR_B
--stage sass` (a new process, all stages of two dump folders whose SASS was
replaced by the long files), wall clock.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIG = "*fp16:16, *fp16:16, *fp16:16, i32:16, i32:16, i32:16, i32:16, i32:1, i32:16, i32:1, i32:16, i32:1, {}, 8"
CONFIGS = [("cuda:90", "128, 128, 64"), ("cuda:80", "256, 128, 64"), ("cuda:90", "256, 128, 64")]


def compile_sass(out: Path) -> tuple[list[Path], list[Path]]:
    """Dump folders of every configuration with num_warps=4 and with num_warps=8."""
    from irscope import jobs
    from irscope.compile import dump

    folders: dict[int, list[Path]] = {4: [], 8: []}
    for target, tiles in CONFIGS:
        request = jobs.Request(ROOT / "examples" / "matmul.py", ("matmul_kernel",), SIG.format(tiles), target=target)
        for warps in (4, 8):
            job = jobs.resolve_one(request.with_sets((f"num_warps={warps}",), "--set"), "the benchmark compiles")
            folders[warps].append(dump.dump(job.spec, job.settings, out).folder)
    return folders[4], folders[8]


def repeat(chunks: list[str], lines: int) -> list[str]:
    """The chunks one after the other, again and again, until there are `lines` lines (whole kernels)."""
    out: list[str] = []
    while sum(len(c.splitlines()) for c in out) < lines:
        out.append(chunks[len(out) % len(chunks)])
    return out


def timed(fn, reps: int):
    times, result = [], None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times), min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10000, help="lines per SASS file")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    os.environ.setdefault("IRSCOPE_CACHE_DIR", tempfile.mkdtemp(prefix="irscope-bench-cache-"))
    import triton

    from irscope.compare import diff as diff_mod
    from irscope.compare import sides
    from irscope.compare.normalize import normalize
    from irscope.views import diff as diff_view

    work = Path(tempfile.mkdtemp(prefix="irscope-bench-diff-"))
    start = time.perf_counter()
    w4, w8 = compile_sass(work / "dumps")
    sass = lambda f: (f / "matmul_kernel.sass").read_text()
    s4, s8 = [sass(f) for f in w4], [sass(f) for f in w8]
    print(
        f"triton {triton.__version__}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"reps={args.reps}; compiled {len(w4) + len(w8)} matmul variants in {time.perf_counter() - start:.1f} s "
        f"(SASS of {', '.join(str(len(t.splitlines())) for t in s4 + s8)} lines)"
    )

    chunks = repeat(s4, args.lines)
    a = "".join(chunks)
    scenarios = {
        "rewritten": "".join(repeat(s8, args.lines)),
        "one change": "".join([chunks[0], s8[1]] + chunks[2:]),
        "identical": a,
    }
    print(
        f"{'scenario':<11} {'lines a':>7} {'lines b':>7} {'+lines':>7} {'-lines':>7} "
        f"{'normalise':>10} {'diff':>8} {'total':>8} {'min':>8} {'unified':>8}"
    )
    for name, b in scenarios.items():
        _, t_norm, _ = timed(lambda b=b: (normalize("sass", a), normalize("sass", b)), args.reps)
        na, nb = normalize("sass", a), normalize("sass", b)
        _, t_diff, _ = timed(lambda na=na, nb=nb: diff_mod.line_opcodes(na.lines, nb.lines), args.reps)
        sd, t_total, t_min = timed(lambda b=b: diff_mod.diff_texts("sass", a, b), args.reps)
        side = lambda n, s: sides.Side(n, n, Path(n), {"stages": {"sass": "k.sass"}})
        result = diff_mod.DiffResult(
            side("a", a), side("b", b), [], diff_mod.StatsDiff([]), [sd], None, selected=["sass"]
        )
        _, t_uni, _ = timed(lambda result=result, sd=sd: diff_view.unified_lines(result, sd), args.reps)
        print(
            f"{name:<11} {len(a.splitlines()):>7} {len(b.splitlines()):>7} {sd.added:>7} {sd.removed:>7} "
            f"{t_norm * 1e3:>8.0f}ms {t_diff * 1e3:>6.0f}ms {t_total * 1e3:>6.0f}ms {t_min * 1e3:>6.0f}ms "
            f"{t_uni * 1e3:>6.0f}ms"
        )

    # the whole command on two dump folders whose SASS is the long text
    dirs = {}
    for side, src, text in (("A", w4[0], a), ("B", w8[0], scenarios["rewritten"])):
        dirs[side] = work / side
        shutil.copytree(src, dirs[side])
        (dirs[side] / "matmul_kernel.sass").write_text(text)
    cmd = [sys.executable, "-m", "irscope", "diff", str(dirs["A"]), str(dirs["B"]), "--stage", "sass"]
    walls = []
    for _ in range(args.reps):
        start = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        assert p.returncode == 1, p.stderr
    print(
        f"whole command `irscope diff DIR_A DIR_B --stage sass` (rewritten, all stages compared, "
        f"{len(p.stdout.splitlines())} lines printed): median {statistics.median(walls):.3f} s, "
        f"min {min(walls):.3f} s"
    )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
