"""Capture of Triton's matmul tutorial on a CPU: `irscope dump 03-matrix-multiplication.py` end to end.

    python benchmarks/bench_capture.py [--target cuda:90] [--script PATH] [--warm] [--jobs N] [--path DIR]

--jobs N is the capture's --jobs (default: irscope's, the machine's cores; 1: the dumps one after
another in irscope's process, as before #29); --path DIR is put on the script's PYTHONPATH (a
library installed with `pip install --target DIR`, e.g. fla for its chunk_gla script). Besides the
wall time it prints the capture's own split (--json's capture.timing): the script, the
interpreter, the shape-only ops, the specs and the dumps, how many kernels were dumped in workers.

The capture's phases are printed from --json's capture.timing (wall = script + specs + dumps + other; the
script's interpreter, launch checks and Inductor's compiles; the dumps' compiles, reuses, cache hits, stage sums
and the slowest). Each cold run starts with empty irscope, Triton and Inductor caches. Workloads that need no
network: benchmarks/capture_workloads/ (matmul_tutorial.py, many_configs.py, inductor_autotune.py).

Runs the unmodified tutorial ($IRSCOPE_TRITON_TUTORIALS/03-matrix-multiplication.py, or --script: its unit tests,
then the benchmark tail that calls torch.matmul at up to 4096^3 inside do_bench) under
`irscope dump SCRIPT --compile-only`, with an empty irscope cache (--warm: a second run reusing
it), and reports the wall time, the script's part, the kernels captured and dumped, and what the
stand-in GPU computed. matplotlib and pandas (the tutorial's plotting) are the stand-ins from
tests/data/plotstubs where they are not installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Triton's own tutorial, unmodified (not shipped here: its code is Triton's). Point at a checkout's
# python/tutorials folder, or give the script's path as the first argument.
SCRIPT = Path(os.environ.get("IRSCOPE_TRITON_TUTORIALS", "python/tutorials")) / "03-matrix-multiplication.py"
STUBS = ROOT / "tests" / "data" / "plotstubs"


def env_for(cache: str, path: str | None = None) -> dict[str, str]:
    # irscope's cache, and Triton's and Inductor's own (their compiles in the script), all empty on a cold run
    env = dict(
        os.environ,
        IRSCOPE_CACHE_DIR=cache,
        TRITON_CACHE_DIR=os.path.join(cache, "triton"),
        TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"),
    )
    extra = [path] if path else []
    if not (importlib.util.find_spec("matplotlib") and importlib.util.find_spec("pandas")):
        extra.append(str(STUBS))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*extra, env.get("PYTHONPATH", "")) if p)
    return env


def capture(
    script: Path, target: str, cache: str, jobs: int | None = None, path: str | None = None
) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory(prefix="irscope-bench-capture-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "irscope",
            "dump",
            str(script),
            "--compile-only",
            "--target",
            target,
            "-o",
            f"{tmp}/out",
            "--script-log",
            f"{tmp}/script.log",
            "--json",
            *(["--jobs", str(jobs)] if jobs else []),
        ]
        start = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env_for(cache, path), check=False)
        wall = time.monotonic() - start
        if p.returncode != 0:
            sys.exit(f"irscope dump exited {p.returncode}:\n{p.stderr[-3000:]}")
        return wall, json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="cuda:90")
    ap.add_argument("--script", type=Path, default=SCRIPT)
    ap.add_argument("--warm", action="store_true", help="also a second run on the filled irscope cache")
    ap.add_argument("--jobs", type=int, default=None, help="the capture's --jobs (default: irscope's)")
    ap.add_argument("--path", default=None, help="a folder put on the script's PYTHONPATH")
    a = ap.parse_args()
    import triton

    cache = tempfile.mkdtemp(prefix="irscope-cache-")
    runs = [("cold", *capture(a.script, a.target, cache, a.jobs, a.path))]
    if a.warm:
        runs.append(("warm", *capture(a.script, a.target, cache, a.jobs, a.path)))
    print(f"machine: {os.cpu_count()} CPUs, no GPU; Triton {triton.__version__}; target {a.target}")
    for name, wall, doc in runs:
        c = doc["capture"]
        caps = c["captures"]
        print(
            f"{name}: {wall:.1f} s wall; {len(caps)} kernels captured from {c['launches']} launches; "
            f"{sum(1 for k in caps if k['folder'])} dumped, {sum(1 for k in caps if k['skipped'])} skipped "
            f"(would not launch), {sum(1 for k in caps if k['failed'])} failed; stopped: {c['stopped']}; "
            f"interpreter: {c['computed']['computed']} launches in {c['computed']['seconds']} s; "
            f"{'; '.join(c['standin_notes']) or 'every torch op computed'}"
        )
        t = c.get("timing") or {}
        if t:
            print(
                f"  split: script {t['script_s']} s (interpreter {t['interpreter_s']} s, {t['shape_only_ops']} "
                f"shape-only ops), specs {t['specs_s']} s, dumps {t['dumps_s']} s ({t['dumped_in_workers']} in "
                f"workers, {t['dumped_in_process']} in-process); dominant: {t['dominant']}"
            )
        if "dumps" in t:  # the phases (#42 item 5): wall = script + specs + dumps + other
            p, d = t["script_parts"], t["dumps"]
            stages = ", ".join(f"{k} {v}" for k, v in d["stages_s"].items())
            print(
                f"  phases: wall {t['wall_s']} s = script {t['script_s']} + specs {t['specs_s']} + dumps "
                f"{t['dumps_s']} + other {t['other_s']}; script: interpreter {p['interpreter_s']}, launch checks "
                f"{p['launch_checks_s']}, Inductor's compiles {p['inductor_compiles_s']}, rest {p['rest_s']}\n"
                f"  dumps: {d['compiled']} compiled ({d['reused']} reusing the script's compile), {d['from_cache']} "
                f"from cache; compile work {d['compile_s']} s ({stages}), outside the compile "
                f"{d['outside_compile_s']} s; {d['workers']} workers busy {d['worker_busy_s']} s, idle "
                f"{d['worker_idle_s']} s; in-process {d['in_process_s']} s"
            )
            for k in t["top_kernels"][:3]:
                print(f"  slow: {k['kernel'][:90]} {k['dump_s']} s ({k['served']}, sass {k['sass_s']} s)")


if __name__ == "__main__":
    main()
