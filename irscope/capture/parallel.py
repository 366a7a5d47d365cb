"""A capture's dumps in worker processes: the compile pool (workers.Pool) the sweep also uses.

The compile redirects file descriptors and sets Triton's env knobs process-wide, so the dumps run
in processes, not threads, bounded by --jobs (default: the machine's cores). A worker never runs
the user's script: it rebuilds each kernel from its "closure" (closure.py), sent by the parent over the
pipe as data (the spec file under -o/captures is never read back: text written into it after irscope wrote
it never runs), checks
Triton's cache key of what it rebuilt against the captured kernel's, and dumps it as irscope's own
process would (the same compile, cache and folder publication, which are safe across processes:
entries and folders are published by rename). Whatever it cannot do exactly comes back
"not rebuilt" and the capture is dumped in irscope's process as before (`in_process_why` says why).

    plan(captures, jobs)   -> (to the workers, in-process), each in-process one with its reason
    dump_in_workers(...)   -> the captures a worker handed back (dump them in-process)
    dump_capture(job)      -> in a worker (workers.main): one capture, from its spec file
"""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

from irscope import artifacts, workers
from irscope.adapter import runtime as triton_runtime
from irscope.capture import closure
from irscope.capture.records import Capture
from irscope.compile import dump as dump_job
from irscope.compile.cache import DumpResult
from irscope.errors import CompileFailure
from irscope.kernel.spec import KernelSpec

HANDLER = "irscope.capture.parallel:dump_capture"
TIMEOUT_S = 3600.0  # one kernel's dump; past it the worker is taken for hung and that dump fails
DATA_PACKAGES = {"irscope", "triton", "builtins", "collections", "enum", "pathlib", "copyreg", "torch", "numpy"}


def default_jobs() -> int:
    """--jobs when not given: the machine's cores (those this process may use)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def plan(todo: list[Capture], jobs: int) -> tuple[list[Capture], list[Capture]]:
    """(the captures workers dump, those dumped in-process: each says why in `in_process_why`)."""
    if jobs <= 1:
        for cap in todo:
            cap.in_process_why = "--jobs 1"
        return [], list(todo)
    sent: list[Capture] = []
    here: list[Capture] = []
    if set_here := triton_runtime.knobs_set_in_python():  # a worker would compile without them
        why = f"the script set triton.knobs {', '.join(set_here)} in Python, which a worker process would not see"
        for cap in todo:
            cap.in_process_why = cap.in_process_why or why
        return [], list(todo)
    for cap in todo:
        if cap.in_process_why is None and cap.closure is None:
            cap.in_process_why = "its closure was not recorded"
        if cap.in_process_why is None and (doubt := not_data(cap)) is not None:
            cap.in_process_why = doubt
        (here if cap.in_process_why is not None else sent).append(cap)
    if len(sent) == 1:  # one kernel: a worker's start-up (importing Triton) costs more than it saves
        sent[0].in_process_why = "the only kernel a worker could dump (no parallelism to gain)"
        here, sent = todo, []
    return sent, here


def not_data(cap: Capture) -> str | None:
    """Why the capture's args and settings cannot travel to a worker as data (a function, an object
    of the script's), or None."""
    try:
        _DataPickler(io.BytesIO()).dump((cap.spec.args, cap.settings, list(cap.spec.notes)))
    except Exception as e:  # noqa: BLE001 - whatever pickle refuses stays in-process
        return f"its arguments or settings are not plain data ({e})"
    return None


class _DataPickler(pickle.Pickler):
    """A pickler that refuses what would import code in a worker: objects of the script (__main__)
    or of packages other than irscope's, Triton's, torch's and the standard library's."""

    def reducer_override(self, obj: Any) -> Any:
        who = obj if isinstance(obj, type) or callable(obj) else type(obj)
        module = getattr(who, "__module__", None) or ""
        if module.split(".")[0] not in DATA_PACKAGES:
            raise pickle.PicklingError(f"{getattr(who, '__qualname__', who)!r} of {module or 'no module'}")
        return NotImplemented


def data_pickle(obj: Any) -> bytes:
    """obj pickled as plain data (_DataPickler: pickle.PicklingError for an object of the script's)."""
    buf = io.BytesIO()
    _DataPickler(buf).dump(obj)
    return buf.getvalue()


class _DataUnpickler(pickle.Unpickler):
    """Loads only what _DataPickler lets through: a class of another package is refused, never imported."""

    def find_class(self, module: str, name: str) -> Any:
        if module.split(".")[0] not in DATA_PACKAGES:
            raise pickle.UnpicklingError(f"{module}.{name}: not plain data")
        return super().find_class(module, name)


def data_unpickle(data: bytes) -> Any:
    return _DataUnpickler(io.BytesIO(data)).load()


def start(n: int, jobs: int) -> workers.Pool[Capture]:
    """The pool, its workers hired now (they import Triton while the caller goes on)."""
    pool: workers.Pool[Capture] = workers.Pool(min(jobs, n), TIMEOUT_S)
    pool.start(n)
    return pool


def dump_in_workers(
    pool: workers.Pool[Capture],
    sent: list[Capture],
    out_dir: Path,
    with_passes: bool,
    use_cache: bool,
    finish: Callable[[Capture, DumpResult | None, CompileFailure | None], None],
    with_sass: bool = True,
) -> list[Capture]:
    """Each capture dumped by a worker (`finish` sees its dump or its failure, as an in-process dump's);
    those a worker could not rebuild exactly are returned, `in_process_why` set."""
    back: list[Capture] = []
    job = {"handler": HANDLER, "out_dir": str(out_dir), "with_passes": with_passes, "use_cache": use_cache}
    job["with_sass"] = with_sass

    def message(cap: Capture) -> dict[str, Any]:
        return dict(
            job,
            spec_file=str(cap.spec_path),
            closure=cap.closure,  # sent as data: a worker never runs what it would read back from disk
            kernel=cap.spec.kernel,
            file=str(cap.spec.file),
            args=cap.spec.args,
            notes=list(cap.spec.notes),
            settings=cap.settings,
            prebuilt=cap.prebuilt,  # the script's own compile (Inductor's): taken when its compile identity is the dump's
        )

    def finished(cap: Capture, outcome: dict[str, Any], seconds: float) -> None:
        status = outcome.get("status")
        cap.dump_s = seconds  # as the parent saw it: sent to the worker -> its result back
        if status == "ok":
            folder = Path(outcome["folder"])
            cap.dumped_in = "worker"
            finish(
                cap,
                DumpResult(
                    folder, artifacts.read_manifest(folder), outcome["cached"], outcome["key"], outcome["served"]
                ),
                None,
            )
        elif status == "compile failed":
            cap.dumped_in = "worker"
            finish(cap, None, CompileFailure(outcome["stage"], outcome["reason"], outcome.get("kernel", "")))
        elif status in ("crashed", "timed out"):
            cap.dumped_in = "worker"
            cap.failure = f"{status}: {outcome.get('reason')}"
        else:  # not rebuilt exactly, or an error irscope's own process reports better
            cap.in_process_why = f"the worker did not dump it: {outcome.get('reason')}"
            back.append(cap)

    pool.run(list(sent), message, finished)
    return back


# ---------------------------------------------------------------- the worker


def dump_capture(job: dict[str, Any]) -> tuple[dict[str, Any], None]:
    """In a worker: rebuild the kernel from the spec file's closure (never the script), check it is the
    captured one, dump it; the RESULT document."""
    try:
        doc = job["closure"]  # the parent's own, over the pipe: the spec file on disk may have changed since
        jit = closure.rebuild(doc)
        if not closure.rebuilt_exactly(jit, doc):
            return {"status": "not rebuilt", "reason": "the rebuilt kernel's Triton cache key differs"}, None
    except Exception as e:  # noqa: BLE001 - any doubt: the capture is dumped in irscope's own process
        return {"status": "not rebuilt", "reason": f"{type(e).__name__}: {e}"[:300]}, None
    spec = KernelSpec(job["kernel"], job["file"], jit, job["args"], list(job["notes"]))
    try:
        result = dump_job.dump(
            spec,
            job["settings"],
            Path(job["out_dir"]),
            job["with_passes"],
            job["use_cache"],
            with_sass=job.get("with_sass", True),
            prebuilt=job.get("prebuilt"),
        )
    except CompileFailure as e:
        return {"status": "compile failed", "stage": e.stage, "reason": e.reason, "kernel": e.kernel}, None
    except Exception as e:  # noqa: BLE001 - BadInput and the like: said as irscope's own process says them
        return {"status": "error", "reason": f"{type(e).__name__}: {e}"[:300]}, None
    return {
        "status": "ok",
        "folder": str(result.folder),
        "cached": result.cached,
        "key": result.key,
        "served": result.served,
    }, None
