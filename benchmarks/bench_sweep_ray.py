"""--cluster ray against the local process pool: Ray's overhead per config, on one machine.

    python benchmarks/bench_sweep_ray.py [--reps 3] [--configs 16] [--cpus 2]

One process, one local Ray (ray.init(num_cpus=--cpus)), started once and reported apart. The sweep is
vector_add for h100 over num_warps x BLOCK_SIZE (--configs of them), compiled with --no-cache (every
config compiles; nothing served from irscope's cache) by the pool with --jobs = --cpus and by Ray
tasks, alternating. Both warm (the pool's workers kept across reps, as a search keeps them across
generations; Ray's workers reused, as Ray does): what each costs a config. Then the fixed costs a
command pays once: Ray's start, and a cold pool (its workers start and import Triton). Reported:
the compile phase's wall clock, medians over --reps, and (Ray - pool) / configs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--configs", type=int, default=16, choices=(4, 8, 16, 32))
    ap.add_argument("--cpus", type=int, default=2)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="irscope-bench-ray-"))
    os.environ["IRSCOPE_CACHE_DIR"] = str(tmp / "cache")  # before Ray starts: its workers inherit it
    import ray
    import triton

    from irscope import jobs
    from irscope.sweep import pool as sweep_pool
    from irscope.sweep import run as sweep
    from irscope.sweep.configs import expand, parse_axes

    base = jobs.resolve_one(
        jobs.Request(
            ROOT / "examples" / "vector_add.py", ("add_kernel",), "*fp32, *fp32, *fp32, i32:16, 1024", target="h100"
        ),
        "a sweep explores",
    )
    blocks = {4: "256,1024", 8: "128..1024:pow2", 16: "64..4096:pow2", 32: "32..4096:pow2"}[a.configs]
    warps = "4,8" if a.configs == 4 else "1,2" if a.configs == 8 else "4,8" if a.configs == 16 else "1..8:pow2"
    axes = [f"num_warps={warps}", f"BLOCK_SIZE={blocks}"]
    up = time.perf_counter()
    ray.init(num_cpus=a.cpus, logging_level="ERROR", log_to_driver=False)
    ray_start = time.perf_counter() - up

    warm_pool = sweep_pool.Pool(a.cpus, 300.0)

    def once(engine: str, rep: int, warm: bool = True) -> float:
        configs = expand(base, parse_axes(axes, base))
        eng = sweep.Engine(
            jobs=a.cpus, use_cache=False, cluster=engine, workers=warm_pool if engine == "local" and warm else None
        )
        run = sweep.compile_and_time(configs, tmp / f"{engine}-{rep}", eng, lambda c: None)
        assert all(c.usable for c in configs), [(c.label, c.status, c.reason) for c in configs]
        return run.compile_seconds

    n = len(expand(base, parse_axes(axes, base)))
    once("local", -1), once("ray", -1)  # warm: Ray's workers up, Triton imported in them; ptxas paged in
    pool, rayt, cold = [], [], []
    for rep in range(a.reps):
        pool.append(once("local", rep))
        rayt.append(once("ray", rep))
        cold.append(once("local", 100 + rep, warm=False))
    warm_pool.close()
    mp, mr, mc = statistics.median(pool), statistics.median(rayt), statistics.median(cold)
    print(
        f"triton {triton.__version__}, ray {ray.__version__}, {os.cpu_count()} CPUs, {a.cpus} used: {n} configs "
        f"(--no-cache); compile phase, warm: pool --jobs {a.cpus} {mp:.2f} s "
        f"({', '.join(f'{t:.2f}' for t in pool)}), Ray tasks {mr:.2f} s ({', '.join(f'{t:.2f}' for t in rayt)}): "
        f"Ray overhead {(mr - mp) / n * 1e3:+.0f} ms a config ({(mr / mp - 1) * 100:+.0f} %); once a command: "
        f"Ray start {ray_start:.1f} s, a cold pool {mc:.2f} s ({mc - mp:+.2f} s for its workers to start)"
    )
    ray.shutdown()


if __name__ == "__main__":
    main()
