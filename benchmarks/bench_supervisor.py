"""What the `irscope` command's supervisor costs a command that is not served by the direct mode: the fork, the
status channel's pipe and reader thread, the scratch folder, the wait (compile/status.fork).

    python benchmarks/bench_supervisor.py [--reps 40]

Two whole processes, interleaved run by run so that drift on the machine hits both: one imports irscope.entry
and the status module and exits; the other does the same, then forks under the supervisor, the child exits
at once and the parent waits for it and exits with its status. The difference is the supervisor's cost. (A
cached repeat answered by the direct mode never forks: benchmarks/bench_redump.py measures that path.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLAIN = "import irscope.entry\nfrom irscope.compile import status\n"
FORKED = PLAIN + "status.fork(irscope.entry.ended)\n"


def _once(code: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the process and the children it waited for)."""
    started = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode == 0, p.returncode
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    reps = ap.parse_args().reps
    runs: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
    _once(FORKED)  # bytecode written, files cached
    for _ in range(reps):
        runs["without"].append(_once(PLAIN))
        runs["with"].append(_once(FORKED))
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {reps} interleaved reps"
    )
    for i, what in ((0, "wall"), (1, "CPU (user + system)")):
        plain, forked = ([r[i] for r in runs[k]] for k in ("without", "with"))
        pairs = [f - p for f, p in zip(forked, plain)]
        print(
            f"  {what}: without the supervisor median {statistics.median(plain) * 1e3:.1f} ms (min "
            f"{min(plain) * 1e3:.1f}), with it {statistics.median(forked) * 1e3:.1f} ms (min {min(forked) * 1e3:.1f}); "
            f"its cost {statistics.median(pairs) * 1e3:.1f} ms (median of pairs), {(min(forked) - min(plain)) * 1e3:.1f} "
            f"ms (minima)"
        )


if __name__ == "__main__":
    main()
