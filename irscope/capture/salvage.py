"""A captured script that ends irscope's process (SIGKILL of itself, os.abort, a segfault, a C++ abort inside
torch) ends only the script: its captures were streamed to the supervisor as they were recorded, and the
supervisor (compile/status.py, with irscope.entry) dumps them.

    stream(request, header)   in the supervised process, around the script: each capture, at its first launch
                              (or .warmup), prepared as replay.prepare prepares it (on a copy: the capture stays as
                              the script left it) and sent on the status channel (compile/status.py) with its spec
                              file's document and the job a worker dumps it from; each launch counted in the
                              memory the supervisor shares (status.count: no system call per launch)
    recover(report, signal)   in the supervisor, once the process is gone: the ScriptRun of what was streamed,
                              its `stopped` saying how the script ended, its spec files written under -o and its
                              captures dumped by the compile workers (parallel.py) from the closures the channel
                              carried (never read back from disk; the supervisor never runs the script and never
                              compiles: a compile that aborts a worker is that capture's failure)

A capture whose closure or arguments are not plain data cannot be rebuilt outside the script's process: its
spec file is written and it is said as not dumped, with the reason.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irscope import jobs
from irscope.capture import parallel, replay
from irscope.capture.records import Capture, ScriptRun
from irscope.compile import status
from irscope.errors import BadInput
from irscope.kernel.settings import jsonable
from irscope.kernel.spec import KernelSpec
from irscope.kernel.targets import Target
from irscope.records import CaptureStatus

# what the capture's view shows, streamed as JSON (the rest of a Capture is the script's objects)
VIEW_FIELDS: tuple[str, ...] = ("key", "warmup", "config", "winner", "launch", "launches", "timed_launches")
VIEW_FIELDS += ("cache_hit", "generated_by", "problem", "notes", "launch_options", "elements", "in_process_why")


@dataclass(frozen=True)
class Header:
    """The run's plain data: what the supervisor needs to write, dump and show the captures."""

    script: Path
    args: list[str]
    target: Target
    target_reason: str
    mode: str
    out_dir: Path
    options: Any  # command.CaptureOptions

    def script_run(self, captures: list[Capture]) -> ScriptRun:
        return ScriptRun(
            self.script,
            list(self.args),
            self.target,
            self.target_reason,
            self.mode,
            captures,
            0,
            script_log=self.options.script_log,
        )


@dataclass
class SalvagedSpec(KernelSpec):
    """A capture's spec rebuilt from the channel: its arguments, no kernel object (a worker rebuilds it)."""

    signature: str = ""

    def signature_text(self) -> str:
        return self.signature


@contextlib.contextmanager
def stream(request: jobs.Request, header: Header) -> Iterator[Callable[[Capture, int], None] | None]:
    """The recorder's on_record while the script runs (None, and nothing sent, when unsupervised)."""
    try:
        run = _b64(parallel.data_pickle(header)) if status.attached() else None
    except Exception:  # noqa: BLE001  not plain data (never, for irscope's own options): nothing streamed
        run = None
    if run is None:
        yield None
        return
    sent: set[int] = set()

    def record(cap: Capture, launches: int) -> None:
        if cap.index not in sent:
            sent.add(cap.index)
            status.send(capture_status(cap, header, request))
        status.count(launches, cap.index, cap.launches)

    status.send({"kind": "script", "script": str(header.script), "run": run})
    try:
        yield record
    finally:
        status.send({"kind": "idle", "ended": "script"})


def capture_status(cap: Capture, header: Header, request: jobs.Request) -> CaptureStatus:
    """One capture prepared for the channel: its spec document and its worker's job, or why it cannot be dumped."""
    record: CaptureStatus = {"kind": "capture", "index": cap.index, "name": cap.name}
    try:
        copy = dataclasses.replace(cap, notes=list(cap.notes))
        run = header.script_run([copy])
        replay.prepare(run, request)
        record["view"] = jsonable({name: getattr(copy, name) for name in VIEW_FIELDS})
        if copy.spec is None:
            return record  # no spec element says what the launch did: its `problem` says so
        record["spec"] = replay.spec_doc(copy, run)
        why = copy.in_process_why or parallel.not_data(copy)
        if why is not None:
            record["not_dumped"] = why
            return record
        job = {
            "kernel": copy.spec.kernel,
            "file": str(copy.spec.file),
            "args": copy.spec.args,
            "notes": list(copy.spec.notes),
            "signature": copy.spec.signature_text(),
            "settings": copy.settings,
            "closure": copy.closure,
        }
        record["job"] = _b64(parallel.data_pickle(job))
    except Exception as e:  # noqa: BLE001  never the script's failure: the capture is said as not dumped
        record["not_dumped"] = f"irscope could not record it: {type(e).__name__}: {e}"[:300]
    return record


def recover(report: status.Report, signal_name: str) -> tuple[ScriptRun, Header]:
    """The script's run as streamed, its spec files written and its captures dumped in workers."""
    records = report.records
    start = max(i for i, r in enumerate(records) if r.get("kind") == "script")
    header: Header = parallel.data_unpickle(base64.b64decode(records[start]["run"]))
    captures: dict[int, Capture] = {}
    for r in records[start + 1 :]:
        if r.get("kind") == "capture" and isinstance(r.get("index"), int):
            captures.setdefault(r["index"], _capture(r))
    if not captures:
        raise BadInput(f"{header.script}: the script ended by {signal_name} before it launched a Triton kernel")
    for index, cap in captures.items():
        cap.launches = max(cap.launches, report.launches(index))
    run = header.script_run([captures[i] for i in sorted(captures)])
    run.launches = launches = report.launches()
    run.stopped = f"ended by {signal_name} after {launches} launch{'es' if launches != 1 else ''}"
    number, kernel = report.computing()
    if number:  # it died inside a kernel the interpreter was computing: that kernel's access, as the CPU ran it
        run.stopped = (
            f"ended by {signal_name} in launch {number} ({kernel}), which Triton's interpreter was computing on "
            f"the CPU (raised in the kernel's own code as the interpreter ran it: a load or store outside its "
            f"tensors, where a GPU would raise an illegal address; IRSCOPE_INTERPRET_TOTAL_S=0 captures without "
            f"computing)"
        )
    _write_specs(run, records[start + 1 :], header.out_dir)
    _dump(run, header)
    return run, header


def _capture(r: dict[str, Any]) -> Capture:
    view: dict[str, Any] = r["view"] if isinstance(r.get("view"), dict) else {}
    cap = Capture(int(r["index"]), str(r.get("name")), None, "", {}, {}, {}, {})
    for name in VIEW_FIELDS:
        if name in view:
            setattr(cap, name, view[name])
    if "job" in r:
        try:
            job = parallel.data_unpickle(base64.b64decode(r["job"]))
            cap.spec = SalvagedSpec(job["kernel"], job["file"], None, job["args"], job["notes"], job["signature"])
            cap.settings, cap.closure = job["settings"], job["closure"]
        except Exception as e:  # noqa: BLE001  not the data a capture's job is: said, not dumped
            cap.failure = f"not dumped: its job did not read back ({type(e).__name__}: {e})"[:300]
    elif "not_dumped" in r:
        cap.failure = f"not dumped: {r['not_dumped']}"
    return cap


def _write_specs(run: ScriptRun, records: list[dict[str, Any]], out_dir: Path) -> None:
    """Each streamed spec document written as write_specs writes it (KERNEL-N.json, new regular files)."""
    docs = {r["index"]: r["spec"] for r in records if r.get("kind") == "capture" and isinstance(r.get("spec"), dict)}
    counts: dict[str, int] = {}
    for cap in run.captures:
        doc = docs.get(cap.index)
        if doc is not None and str(doc.get("kernel")).isidentifier():  # a file name inside captures/ only
            cap.spec_path = replay.write_spec_file(out_dir, str(doc.get("kernel")), doc, counts)


def _dump(run: ScriptRun, header: Header) -> None:
    """The captures with a job, dumped by the compile workers; one a worker cannot rebuild is not dumped."""
    todo = [cap for cap in run.captures if cap.spec is not None]
    if not todo:
        return
    jobs_ = header.options.jobs or parallel.default_jobs()
    pool = parallel.start(len(todo), jobs_)
    try:
        back = parallel.dump_in_workers(
            pool,
            todo,
            header.out_dir,
            header.options.with_passes,
            header.options.use_cache,
            replay.record_dump,
            header.options.with_sass,
        )
    finally:
        pool.close()
    for cap in back:
        cap.failure = f"not dumped: {cap.in_process_why}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
