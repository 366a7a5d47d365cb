"""Dumps in an environment with another Triton, over the one worker protocol (irscope.workers).

    parent -> worker   one dump a message, as data: {"request": the jobs.Request's fields (text,
                       paths, tuples), "out_dir", "with_passes", "use_cache"} — never the user's
                       code: the worker loads the kernel file itself, with its own Triton
    worker -> parent   READY {"triton", "python"} once Triton is imported, then RESULT a dump:
                       {"status": "ok", "folder", "cached", "triton"} | {"status": "compile failed",
                       "stage", "reason"} | {"status": "bad input" | "crashed", "reason"}

The worker runs as `ENV_PYTHON -m irscope.releases.worker` with this irscope on PYTHONPATH, so the
env needs nothing but its Triton (this entry imports neither click nor rich). What it writes is an
ordinary dump folder (compile/dump), so compare/ reads it as any other; irscope's cache keys hold
the Triton version, so the envs share one cache without mixing their dumps.

run_all (the parent's side) drives one worker per env at once, each dumping its list in order.
"""

from __future__ import annotations

import os
import site
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from irscope import jobs, workers
from irscope.compile import dump
from irscope.errors import BadInput, CompileFailure, IrscopeError

ENTRY = ("-m", "irscope.releases.worker")
READY = "READY"
JOB_TIMEOUT = 900.0  # seconds one dump may take in a worker (a matmul with per-pass IR: tens)
START_TIMEOUT = 300.0  # seconds a worker may take to import its Triton


def message(request: jobs.Request, out_dir: Path, with_passes: bool, use_cache: bool) -> dict[str, Any]:
    """One dump as data: the request's fields, where to write, how."""
    return {
        "request": {f.name: getattr(request, f.name) for f in fields(request)},
        "out_dir": str(out_dir),
        "with_passes": with_passes,
        "use_cache": use_cache,
    }


def start(python: str) -> workers.Worker:
    """A worker on `python` with this irscope first on its PYTHONPATH.

    A captured script's own imports (torch, for a replay of the script's kernels) are not in the
    env: the worker looks for them in this interpreter's site-packages, after the env's own (so
    the env's Triton is the one imported), when both Pythons are one version.
    """
    root = str(Path(__file__).resolve().parent.parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    host = [f"{sys.version_info[0]}.{sys.version_info[1]}", *site.getsitepackages()]
    return workers.Worker((*ENTRY, *host), ready=READY, python=python, env={**os.environ, "PYTHONPATH": path})


def run_all(pythons: list[str], work: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Each interpreter's messages dumped in its own worker, all workers at once; each result in order.

    A worker that dies or hangs fails the dump it held and the rest of its list with the reason.
    """
    ws = [start(p) for p in pythons]
    results: list[list[dict[str, Any]]] = [[] for _ in ws]
    try:
        for w, msgs in zip(ws, work):
            for m in msgs:
                w.send(m)
        since = [time.perf_counter() for _ in ws]
        open_ = [i for i, msgs in enumerate(work) if msgs]
        while open_:
            for i in list(open_):
                w = ws[i]
                msg = w.receive(0.05)
                limit = JOB_TIMEOUT if w.ready else START_TIMEOUT
                if msg is None:
                    if time.perf_counter() - since[i] <= limit:
                        continue
                    why = f"no answer after {limit:g} s"
                elif msg.tag == READY:
                    since[i] = time.perf_counter()
                    continue
                elif msg.tag == "RESULT":
                    results[i].append(msg.body)
                    since[i] = time.perf_counter()
                    if len(results[i]) == len(work[i]):
                        open_.remove(i)
                    continue
                elif msg.tag is None:
                    code = w.stop(grace=5.0)
                    why = (w.tail[-1:] or [f"exit status {code}"])[0][:300]
                    why = f"the worker ({pythons[i]}) {'died' if w.ready else 'could not start'}: {why}"
                else:
                    continue
                while len(results[i]) < len(work[i]):
                    results[i].append({"status": "crashed", "reason": why})
                open_.remove(i)
    finally:
        for w in ws:
            w.stop()
    return results


# ---------------------------------------------------------------- the worker


def _dump_one(msg: dict[str, Any], triton: str) -> dict[str, Any]:
    try:
        request = jobs.Request(**msg["request"])
        job = jobs.resolve_one(request, "a release diff compares")
        r = dump.dump(
            job.spec, job.settings, Path(msg["out_dir"]), with_passes=msg["with_passes"], use_cache=msg["use_cache"]
        )
        return {"status": "ok", "folder": str(r.folder), "cached": r.cached, "triton": triton}
    except CompileFailure as e:
        return {"status": "compile failed", "stage": e.stage, "reason": e.reason[:500], "triton": triton}
    except BadInput as e:
        return {"status": "bad input", "reason": str(e)[:500], "triton": triton}
    except IrscopeError as e:
        return {"status": "compile failed", "stage": "", "reason": str(e)[:500], "triton": triton}
    except Exception as e:  # noqa: BLE001 - this Triton broke somewhere irscope did not foresee: say so
        return {"status": "crashed", "reason": f"{type(e).__name__}: {e}"[:500], "triton": triton}


def main() -> int:
    import triton  # what every dump needs, imported before READY (the env's own: before the host's path)

    version = triton.__version__
    host_python, *host_paths = sys.argv[1:] or [""]
    if host_python == f"{sys.version_info[0]}.{sys.version_info[1]}":
        sys.path.extend(p for p in host_paths if p not in sys.path)
    workers.say(READY, {"triton": version, "python": sys.version.split()[0]})
    for msg in workers.messages():
        workers.say("RESULT", _dump_one(msg, version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
