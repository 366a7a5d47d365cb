"""`irscope capture SCRIPT [-- ARGS]`: run a script unmodified and dump every kernel it compiles (the
old spelling `irscope dump SCRIPT`, with no --signature/--arg/--const, still comes here for a release).

The script runs as `__main__` and each kernel Triton compiles while it runs is recorded — plain
launches, every @triton.autotune config, .warmup, kernels reached through library calls — with
what Triton's launch binder decided for it (the specialization, constexprs and options), the
launch grid and the shapes, dtypes, strides and alignment of its tensor arguments. Each capture
becomes a spec file (replayable: `irscope dump CAPTURE.json --set num_warps=8`) and is dumped
like any other kernel.

Two modes:
  gpu           the local GPU is the target: the script runs for real; compiles are recorded
                through Triton's hooks (Triton's own cache hits included), and for autotuned
                kernels the config the autotuner chose is marked.
  compile-only  no GPU here, or --target is another chip: the script runs on the stand-in GPU
                (irscope/standin/): tensors live on the CPU, kernels are bound for the requested
                target, launches are recorded and their results computed by Triton's interpreter
                on the CPU (bounded), so a script's own checks pass and it goes on; torch work
                too big for the CPU runs shape-only; do_bench runs its function once.

The pipeline, one module each: check what can be refused before running (here: check_flags, then
run's own checks once the target is known) -> run_script
(runner.py, with the Recorder's hooks, recorder.py) -> Capture records (records.py) -> prepare,
write_specs, dump_all (replay.py); the CLI hands the ScriptRun to its view (views/capture.py).
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from irscope import adapter, jobs
from irscope.capture import salvage
from irscope.capture.records import ScriptRun
from irscope.capture.replay import DumpsStopped, check_captures_folder, dump_all, prepare, timing_split, write_specs
from irscope.capture.runner import run_call as run_call_under_recorder
from irscope.capture.runner import run_script
from irscope.compile.dump import DumpResult
from irscope.errors import BadInput
from irscope.kernel import inputs
from irscope.kernel.settings import parse_assignments
from irscope.kernel.targets import Target, local_gpu_target


@dataclass(frozen=True)
class CaptureOptions:
    """What `irscope capture SCRIPT` was asked beyond the Request (each field is the flag of that name)."""

    out_dir: Path
    use_cache: bool = True
    with_passes: bool = False  # --passes
    with_sass: bool = True  # --no-sass: no nvdisasm run (the cubin is kept; `irscope dump --spec` makes the SASS)
    quiet: bool = False  # stdout carries data (--stage, --json): the script's output goes to stderr
    stage: str | None = None
    script_log: Path | None = None  # check_flags checks it (the CLI passes it as typed)
    compile_only: bool = False
    time_limit: float | None = None
    interpret_s: tuple[float | None, float | None] = (None, None)  # (per launch, whole run); None: knobs
    jobs: int | None = None  # --jobs: worker processes for the dumps (None: the machine's cores)
    as_json: bool = False  # --json, --debug, --html: how the supervisor shows captures it dumps after a crash
    debug: bool = False
    html: Path | None = None


class DumpStop:
    """SIGINT / SIGTERM after the script: recorded (`signal`, `name`); raised as DumpsStopped only
    while a dump runs (`armed()`), so the dumps stop between or during dumps and the rest of
    irscope (what it writes, what it says) runs to the end."""

    def __init__(self):
        self.signal: int | None = None
        self.name: str | None = None
        self._armed = False

    def handle(self, signum, frame) -> None:
        if self.signal is None:
            self.signal, self.name = signum, signal.Signals(signum).name
        if self._armed:
            self._armed = False  # once: a second signal during the output is only recorded
            raise DumpsStopped(self.name)

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        self._armed = self.signal is None
        try:
            yield
        finally:
            self._armed = False


@contextlib.contextmanager
def signals_kept() -> Iterator[DumpStop]:
    """SIGINT and SIGTERM handled for the whole capture (run_script takes them over while the
    script runs and gives them back): after the script, during the dumps and while irscope writes
    its output, a signal stops the dumps rather than ending irscope silently with nothing said.
    The previous handlers are put back on exit. Off the main thread, nothing is installed."""
    stop = DumpStop()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    old = {s: signal.signal(s, stop.handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for signum, previous in old.items():
            signal.signal(signum, previous)


def check_flags(
    request: jobs.Request, variants, opts: CaptureOptions, as_json: bool
) -> tuple[CaptureOptions, str | None]:
    """The command line's checks, before anything runs (each one BadInput line): --stage and --json, the
    output folder, FILE a script (not a spec file or folder), --script-log. Returns the options with
    --script-log checked, and the warning for the steering flags a capture does not apply (or None)."""
    inputs.check_dump_flags(opts.stage, as_json, opts.out_dir)
    if opts.stage == "sass" and not opts.with_sass:
        raise BadInput("--stage sass with --no-sass: the SASS is what --no-sass leaves out; drop one of them")
    check_script(Path(request.file))
    checked = replace(opts, script_log=inputs.check_log_file(opts.script_log))
    return checked, not_applied(request, variants, opts.out_dir)


def check_script(file: Path) -> None:
    """capture runs a script: a spec file (a capture's, or a manifest) is dumped, not run."""
    if jobs.is_spec_file(file):
        raise BadInput(f"{file}: a spec file, not a script; its kernel is compiled by irscope dump {file}")


def _no_progress(what: str, total: int | None = None) -> contextlib.AbstractContextManager[Callable[..., None]]:
    return contextlib.nullcontext(lambda *a: None)


def run(
    request: jobs.Request,
    script_args: list[str],
    opts: CaptureOptions,
    stop: DumpStop | None = None,
    progress: Callable[..., contextlib.AbstractContextManager[Callable[..., None]]] = _no_progress,
) -> ScriptRun:
    """irscope capture SCRIPT [-- ARGS]: refuse what can be refused, run, capture, write specs, dump.

    The script is request.file, its kernels are filtered by request.kernels (globs), its target is
    the request's (jobs.script_target) and each capture's job is built from the request (replay.prepare).
    SIGINT, SIGTERM, --time-limit and the script's own failure end the script, not the capture:
    what it captured so far is written and dumped as usual. The spec files are written before any
    dump; SIGINT or SIGTERM during the dumps (`stop`, from signals_kept()) stops them: the finished
    ones are kept and said, and the exit status is 130 or 143.
    `opts.interpret_s`: the interpreter's (per-launch, whole-run) budgets in seconds on the stand-in
    GPU (None: IRSCOPE_INTERPRET_LAUNCH_S / IRSCOPE_INTERPRET_TOTAL_S, or the defaults: knobs.py).
    `progress(what, total)` (views/progress.Reporter): the script's run (launches and kernels so far),
    then the dumps (n of N).
    """
    started = time.perf_counter()
    check_script(Path(request.file))
    tgt, reason, mode = choose_mode(request, opts.compile_only)
    out_dir = Path(opts.out_dir).resolve()  # the script may change directory
    check_before_running(tgt, request.all_sets(), out_dir, opts.stage, opts.script_log)
    if opts.jobs is not None and not (isinstance(opts.jobs, int) and 1 <= opts.jobs <= 1024):
        raise BadInput(f"--jobs {opts.jobs}: give a number of worker processes from 1 to 1024")
    time_limit = opts.time_limit
    if time_limit is not None and not (math.isfinite(time_limit) and 0 < time_limit <= 1e8):
        raise BadInput(f"--time-limit {time_limit}: give a positive number of seconds")
    how = "" if mode == "gpu" else " on the stand-in GPU (launches computed by Triton's interpreter)"
    script = Path(request.file)
    header = salvage.Header(script.resolve(), list(script_args), tgt, reason, mode, out_dir, opts)
    with progress(f"running {script.name}{how}") as tick, salvage.stream(request, header) as on_record:
        script_run = run_script(
            Path(request.file),
            list(script_args),
            tgt,
            reason,
            mode,
            list(request.kernels),
            opts.script_log,
            quiet=opts.quiet,
            time_limit=time_limit,
            interpret_s=opts.interpret_s,
            on_launch=lambda n, k, c: tick(
                f"{_count(n, 'launch')}, {_count(k, 'kernel')}" + (f", {c} computed" if c is not None else ""), 0
            ),
            on_record=on_record,
        )
    return with_wall(replay(script_run, request, out_dir, opts, stop, progress), started)


def with_wall(script_run: ScriptRun, started: float) -> ScriptRun:
    """The capture's wall time (from the checks before the script to the last dump) in its timing, and
    `other_s`: what the script, the specs and the dumps leave of it (the checks, setting the stand-in GPU
    up and taking it down, reading the captures' records), so that the parts add up to wall_s."""
    t = script_run.timing
    t["wall_s"] = round(time.perf_counter() - started, 2)
    t["other_s"] = round(
        max(0.0, t["wall_s"] - t.get("script_s", 0.0) - t.get("specs_s", 0.0) - t.get("dumps_s", 0.0)), 2
    )
    return script_run


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 'es' if what.endswith('h') else 's'}"


def run_call(
    request: jobs.Request, fn: Callable[..., Any], args: tuple, kwargs: dict[str, Any], opts: CaptureOptions
) -> tuple[ScriptRun, Any]:
    """The Python API's irscope.capture: one call fn(*args, **kwargs) captured as `run` captures a script
    (the same recorder, stand-in GPU and replay); (the ScriptRun, what fn returned). request.file is
    fn's file; its target and option layers apply as to a script's."""
    started = time.perf_counter()
    tgt, reason, mode = choose_mode(request, opts.compile_only)
    out_dir = Path(opts.out_dir).resolve()
    check_before_running(tgt, request.all_sets(), out_dir, opts.stage, None)
    script_run, value = run_call_under_recorder(
        fn, args, kwargs, tgt, reason, mode, list(request.kernels), interpret_s=opts.interpret_s
    )
    return with_wall(replay(script_run, request, out_dir, opts), started), value


def replay(
    script_run: ScriptRun,
    request: jobs.Request,
    out_dir: Path,
    opts: CaptureOptions,
    stop: DumpStop | None = None,
    progress: Callable[..., contextlib.AbstractContextManager[Callable[..., None]]] = _no_progress,
) -> ScriptRun:
    """The captures of a run as jobs (under the request's option layers), their spec files, their
    dumps (`stop`: a signal ends the dumps, see dump_all; `progress`: n of N dumped)."""
    started = time.perf_counter()
    prepare(script_run, request)
    write_specs(script_run, out_dir)
    script_run.timing["specs_s"] = time.perf_counter() - started
    todo = sum(1 for c in script_run.captures if c.spec is not None)
    with progress(f"dumping {_count(todo, 'kernel')}", todo) as advance:
        dump_all(script_run, out_dir, opts.with_passes, opts.use_cache, stop, opts.jobs, advance, opts.with_sass)
    script_run.timing.update(timing_split(script_run))
    return script_run


def not_applied(request: jobs.Request, variants, out_dir: Path) -> str | None:
    """The warning for steering flags a capture does not apply (launches are captured as made)."""
    ignored = [
        name
        for name, given in (
            ("--recipe", request.recipe),
            ("--variant", variants),
            ("--pin-layout", request.pin_layouts),
            ("--pin-loop", request.pin_loops),
        )
        if given
    ]
    if not ignored:
        return None
    return (
        f"{', '.join(ignored)} {'do' if len(ignored) > 1 else 'does'} not apply to a capture (launches are "
        f"captured as the script makes them); replaying a capture's spec file applies "
        f"{'them' if len(ignored) > 1 else 'it'}: irscope dump {out_dir}/captures/KERNEL-N.json {ignored[0]} ..."
    )


def results(script_run: ScriptRun) -> list[DumpResult]:
    """The dumps of the captures that could be dumped, in capture order."""
    return [c.result for c in script_run.captures if c.result is not None]


def with_stage(found: list[DumpResult], stage: str, target: Target) -> list[DumpResult]:
    """The dumps that have `stage` (--stage); none at all is bad input."""
    shown = [r for r in found if stage in r.manifest["stages"]]
    if not shown:
        raise BadInput(f"stage {stage!r} does not exist for the captured kernels on {target.name}")
    return shown


def exit_status(script_run: ScriptRun, file: Path) -> int:
    """0 when every capture was dumped, 1 when a dump failed; nothing dumpable at all is bad input;
    128 + the signal's number (130 SIGINT, 143 SIGTERM) when a signal stopped the dumps."""
    if script_run.stop_status is not None:
        return script_run.stop_status
    if not results(script_run):
        if not any(c.failure for c in script_run.captures):
            problems = [c.problem for c in script_run.captures if c.problem]
            raise BadInput(
                f"{file}: none of the {len(script_run.captures)} captured kernels can be dumped"
                + (f": {problems[0]}" if problems else "")
            )
        return 1
    return 1 if any(c.failure for c in script_run.captures) else 0


def choose_mode(request: jobs.Request, compile_only: bool) -> tuple[Target, str, str]:
    """(target, why it was chosen, mode): the request's target (chosen in jobs, once); a real run only
    on the local GPU's own target."""
    local = local_gpu_target()
    tgt, reason = jobs.script_target(request)
    real = local is not None and local == tgt and not compile_only
    return tgt, reason, "gpu" if real else "compile-only"


def check_before_running(
    tgt: Target, sets: list[str], out_dir: Path, stage: str | None, script_log: Path | None
) -> None:
    """What can be refused before the script runs is refused then: nothing written, one line."""
    options = parse_assignments(list(sets), tgt)
    try:
        adapter.make_backend(tgt).parse_options(dict(options))
    except (ValueError, AssertionError, TypeError) as e:
        raise BadInput(f"--set: rejected by Triton's {tgt.backend} backend: {str(e) or type(e).__name__}") from None
    inputs.check_stage_for_target(stage, tgt)
    if out_dir.exists() and not out_dir.is_dir():
        raise BadInput(f"-o {out_dir}: is a file, not a folder")
    check_captures_folder(out_dir)
    if script_log is not None and not Path(script_log).resolve().parent.is_dir():
        raise BadInput(f"--script-log {script_log}: its folder does not exist")
