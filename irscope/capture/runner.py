"""Running a script, unmodified, as __main__ with the Recorder installed -> a ScriptRun.

The script runs in irscope's own process (so Triton's hooks see its compiles), with its own
argv and its folder on sys.path, on the stand-in GPU in compile-only mode. In both modes kernel
generators (Helion, torch.compile's Inductor) compile in this process, off their caches
(standin/generators.py), so their compiles reach the hooks. Whatever it does,
irscope comes back: its output goes where it was told (a log file, stderr, or as it is), its
failure or exit is one line (`stopped`), and argv, sys.path and the working directory are put
back. Threads it leaves running are said, as kernels they launch later are not captured.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import signal
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from irscope.capture import layers
from irscope.capture.recorder import Recorder
from irscope.capture.records import ScriptRun
from irscope.errors import BadInput, CaptureHookError
from irscope.kernel import loader
from irscope.kernel.targets import Target
from irscope.standin import generators, versions
from irscope.standin import gpu as standin
from irscope.standin.interpret import Executor


def run_script(  # noqa: PLR0913
    script: Path,
    args: list[str],
    target: Target,
    target_reason: str,
    mode: str,
    kernel_globs: list[str],
    script_log: Path | None = None,
    quiet: bool = False,
    stand_in: bool | None = None,
    time_limit: float | None = None,
    interpret_s: tuple[float | None, float | None] = (None, None),
    on_launch: Callable[[int, int, int | None], None] | None = None,
    on_record: Callable[..., None] | None = None,
) -> ScriptRun:
    """Run the script as __main__ with the recorder installed; the captures, and why it stopped if it did.
    `on_launch(launches, captures, computed)` hears each launch (the progress a terminal shows; computed:
    the launches Triton's interpreter computed so far on the stand-in GPU, None in a real run);
    `on_record(capture, launches)` each launch's capture (capture/salvage.py streams it to the supervisor).

    SIGINT, SIGTERM and `time_limit` (seconds, --time-limit) end the script, not irscope: what
    it captured so far is kept, and `stopped` says why (see _stops_from_outside).

    `stand_in` (tests only) overrides whether the stand-in GPU is used: True with
    mode "gpu" compiles through Triton's JIT as a real run does, without a GPU.
    `interpret_s` (per launch, whole run; None: the env or the default) bounds the CPU time
    the stand-in spends computing launches with Triton's interpreter (standin/interpret.py).
    """
    script = loader.check_python_file(Path(script), "a Python script")
    use_stand_in = mode == "compile-only" if stand_in is None else stand_in
    stopped: str | None = None
    outside: str | None = None  # SIGINT, SIGTERM or --time-limit: why the script was ended
    raised = False
    failure: BaseException | None = None  # the script's own exception (its traceback: --debug)
    saved_argv, saved_path, saved_cwd = list(sys.argv), list(sys.path), os.getcwd()
    script = script.resolve()  # a script that changes directory must not move it, or the output
    folder = str(script.parent)
    threads_before = set(threading.enumerate())
    with _recording(target, mode, kernel_globs, use_stand_in, interpret_s) as session, contextlib.ExitStack() as stack:
        rec = session.rec
        rec.on_launch = on_launch
        rec.on_record = on_record
        stack.enter_context(_stdio_restored())
        stack.enter_context(_script_output(script_log, quiet))
        stack.enter_context(_os_exit_ends_script())
        armed = stack.enter_context(_stops_from_outside(time_limit))
        sys.argv = [str(script), *args]
        if folder not in sys.path:
            sys.path.insert(0, folder)
        started = time.perf_counter()
        try:
            runpy.run_path(str(script), run_name="__main__")
        except _Stop as e:  # SIGINT, SIGTERM or --time-limit: the script ends, its captures are kept
            outside, raised = e.reason, True
            stopped = f"{e.reason} after {_kernels(len(rec.captures))}"
        except _OsExit as e:  # the script ended itself at once: what it launched is still kept, and said
            stopped, raised = f"called os._exit({e.code})", True
        except SystemExit as e:
            if e.code not in (0, None):
                stopped, raised = f"exited with status {e.code}", True
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001  the script's own failure: reported, never an irscope crash
            stopped, raised = _stop_line(e, script), True
            failure = e
        finally:
            armed.clear()  # a signal from here on ends nothing: the script is over
            script_s = time.perf_counter() - started
            sys.argv[:] = saved_argv
            sys.path[:] = saved_path
            os.chdir(saved_cwd)
            threads_left = [t.name for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    run = session.script_run(script, list(args), target_reason, mode, stopped, script_log, threads_left)
    run.script_s = script_s
    run.stopped_traceback = script_traceback(failure, script) if failure is not None else None
    if not run.captures:
        if kernel_globs and session.rec.filtered_out:
            raise BadInput(
                f"{script}: no kernel the script launched matches --kernel {' '.join(kernel_globs)}; "
                f"it launched: {', '.join(session.rec.filtered_out)}"
            )
        if outside is not None:
            raise BadInput(f"{script}: {outside} before the script launched a Triton kernel; nothing written")
        if raised:
            raise BadInput(
                f"{script}: the script {_stop_phrase(stopped)} before it launched a Triton kernel{_needs(failure)}"
            ) from failure  # --debug shows the script's traceback under irscope's
        if threads_left:
            raise BadInput(
                f"{script}: ran to the end without launching a Triton kernel, but {threads_note(threads_left)}"
            )
        raise BadInput(
            f"{script}: ran to the end without launching a Triton kernel; to compile its kernels without "
            f"running it, give a specialization: irscope dump {script} --signature ... (or --arg/--const)"
        )
    return run


def run_call(
    fn: Callable[..., Any],
    args: tuple,
    kwargs: dict[str, Any],
    target: Target,
    target_reason: str,
    mode: str,
    kernel_globs: list[str] | None = None,
    interpret_s: tuple[float | None, float | None] = (None, None),
) -> tuple[ScriptRun, Any]:
    """One call fn(*args, **kwargs) with the recorder installed, on the stand-in GPU in compile-only
    mode, as run_script runs a script: (the captures, what fn returned). The Python API's irscope.capture.

    fn's own exception ends the call, not the capture: it is `stopped` (one line) when fn launched a
    kernel first, else BadInput (chained to it). The run's `script` is the file fn was defined in."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    code = getattr(fn, "__code__", None)
    where = Path(code.co_filename if code is not None else "<call>").resolve()
    globs = list(kernel_globs or [])
    stopped: str | None = None
    failure: BaseException | None
    value: Any = None
    threads_before = set(threading.enumerate())
    with _recording(target, mode, globs, mode == "compile-only", interpret_s) as session:
        started = time.perf_counter()
        try:
            value = fn(*args, **kwargs)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001  the function's own failure (a SystemExit too): kept as `stopped`, as a script's
            stopped, failure = _stop_line(e, where), e
        else:
            failure = None
        threads_left = [t.name for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    run = session.script_run(where, [], target_reason, mode, stopped, None, threads_left)
    run.script_s = time.perf_counter() - started
    if not run.captures:
        if globs and session.rec.filtered_out:
            raise BadInput(
                f"{name}(): no kernel it launched matches {' '.join(globs)}; "
                f"it launched: {', '.join(session.rec.filtered_out)}"
            )
        if failure is not None:
            raise BadInput(
                f"{name}() raised {stopped} before it launched a Triton kernel{_needs(failure)}"
            ) from failure
        raise BadInput(
            f"{name}() returned without launching a Triton kernel"
            + (f"; {threads_note(threads_left)}" if threads_left else "")
        )
    return run, value


class _Session:
    """The recorder, the interpreter and the stand-in GPU of one run (a script or a call)."""

    def __init__(
        self,
        target: Target,
        mode: str,
        kernel_globs: list[str],
        use_stand_in: bool,
        interpret_s: tuple[float | None, float | None],
    ):
        self.target = target
        self.executor = Executor(*interpret_s) if use_stand_in and mode == "compile-only" else None
        self.rec = Recorder(target, mode == "compile-only", kernel_globs, self.executor)
        self.drv = None

    def script_run(
        self,
        script: Path,
        args: list[str],
        target_reason: str,
        mode: str,
        stopped: str | None,
        script_log: Path | None,
        threads_left: list[str],
    ) -> ScriptRun:
        layers.label_captures(self.rec.captures)  # what made each kernel, when a generator (Helion) did
        if self.rec.internal_error is not None:  # irscope's own hook failed: an irscope bug, never the script's
            raise CaptureHookError(self.rec.internal_error) from self.rec.internal_error
        rec, ex = self.rec, self.executor
        notes = (self.drv.notes() if self.drv is not None else []) + rec.inductor.notes() + versions.loaded_note()
        return ScriptRun(
            script,
            args,
            self.target,
            target_reason,
            mode,
            rec.captures,
            rec.launches,
            stopped,
            rec.filtered_out,
            script_log,
            threads_left,
            ex.stats if ex is not None else None,
            notes,
            launch_check_s=rec.launch_check_s,
            inductor_compile_s=rec.inductor.compile_s,
        )


@contextlib.contextmanager
def _recording(
    target: Target,
    mode: str,
    kernel_globs: list[str],
    use_stand_in: bool,
    interpret_s: tuple[float | None, float | None],
) -> Iterator[_Session]:
    """The stand-in GPU (when used) and the Recorder's hooks, for as long as the script or call runs."""
    session = _Session(target, mode, kernel_globs, use_stand_in, interpret_s)
    with contextlib.ExitStack() as stack:
        if use_stand_in:
            session.drv = stack.enter_context(standin.machine(target))  # generators in-process, retargeted
        else:  # a real GPU run: Helion and Inductor still compile here, off their caches (nothing retargeted)
            stack.enter_context(generators.in_process())
        stack.enter_context(session.rec.installed())
        yield session


def threads_note(names: list[str]) -> str:
    """Threads the script started that outlived it: irscope's hooks are gone once the script
    returns (Python would still wait for them; irscope does not, as an idle executor's
    workers would never end), so a kernel they launch later is not captured. Said, not dropped."""
    n = len(names)
    return (
        f"{n} thread{'s' if n != 1 else ''} it started {'were' if n != 1 else 'was'} still running when it ended "
        f"({', '.join(names)}): kernels launched from {'them' if n != 1 else 'it'} after that are not captured "
        f"(join threads, and shut executors down, before the script ends)"
    )


class _Stop(BaseException):
    """Raised in the script's frame by SIGINT, SIGTERM or the --time-limit timer: ends only the script.
    Not a KeyboardInterrupt, so a script's own `except KeyboardInterrupt` cannot keep it running."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


STOPS_FROM_OUTSIDE = ("interrupted (", "terminated (", "time limit of ")


def stopped_from_outside(stopped: str | None) -> bool:
    """Whether `stopped` is a SIGINT, SIGTERM or --time-limit stop (not the script's own failure)."""
    return stopped is not None and stopped.startswith(STOPS_FROM_OUTSIDE)


def _kernels(n: int) -> str:
    return f"{n} kernel{'s' if n != 1 else ''}"


@contextlib.contextmanager
def _stops_from_outside(time_limit: float | None) -> Iterator[set]:
    """While the script runs (main thread only): SIGINT and SIGTERM, and SIGALRM after `time_limit`
    seconds, raise _Stop in it. Yields a set that is non-empty while armed; clear it as soon as the
    script is over, so a late signal raises nothing in irscope's own code. The previous handlers and
    timer are put back (kernel/loader.py's --load-timeout also uses SIGALRM, never while a script runs)."""
    armed = {True}
    if threading.current_thread() is not threading.main_thread():
        yield armed
        return

    def handler(reason: str):
        def stop(signum, frame):
            if armed:  # each time, so a script that swallows one (`except BaseException`) still ends
                raise _Stop(reason)

        return stop

    old = {
        signal.SIGINT: signal.signal(signal.SIGINT, handler("interrupted (SIGINT)")),
        signal.SIGTERM: signal.signal(signal.SIGTERM, handler("terminated (SIGTERM)")),
    }
    old_timer = None
    if time_limit is not None and hasattr(signal, "setitimer"):
        old[signal.SIGALRM] = signal.signal(signal.SIGALRM, handler(f"time limit of {time_limit:g} s reached"))
        old_timer = signal.setitimer(signal.ITIMER_REAL, time_limit)
    try:
        yield armed
    finally:
        armed.clear()
        if old_timer is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, previous in old.items():
            signal.signal(signum, previous)
        if old_timer is not None and old_timer[0]:
            signal.setitimer(signal.ITIMER_REAL, *old_timer)


class _OsExit(SystemExit):
    """os._exit(N) called by the script, turned into an exception that ends only the script."""


@contextlib.contextmanager
def _os_exit_ends_script() -> Iterator[None]:
    """While the script runs, its os._exit(N) raises _OsExit: the process would otherwise end with
    nothing written and nothing said. A forked child (multiprocessing) still exits for real."""
    real_exit, pid = os._exit, os.getpid()

    def script_exit(code=0):
        if os.getpid() != pid or threading.current_thread() is not threading.main_thread():
            real_exit(code)
        raise _OsExit(code)

    os._exit = script_exit
    try:
        yield
    finally:
        os._exit = real_exit


@contextlib.contextmanager
def _stdio_restored() -> Iterator[None]:
    """sys.stdout / sys.stderr as they were before the script, reopened if the script closed them
    (irscope prints its summary and --json after the script)."""
    saved = sys.stdout, sys.stderr
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
        for name, fd in (("stdout", 1), ("stderr", 2)):
            stream = getattr(sys, name)
            if getattr(stream, "closed", False):
                with contextlib.suppress(OSError):
                    setattr(
                        sys,
                        name,
                        open(
                            os.dup(fd),
                            "w",
                            buffering=1,
                            encoding="utf-8",  # noqa: SIM115
                            errors="replace",
                        ),
                    )  # stays open as sys.stdout / sys.stderr


@contextlib.contextmanager
def _script_output(log: Path | None, keep_stdout_clean: bool) -> Iterator[None]:
    """Where the script's output goes: a log file (stdout and stderr), or stderr when
    irscope's own stdout must stay machine-readable (--json, --stage), or as it is."""
    if log is None and not keep_stdout_clean:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    sink = open(log, "w") if log is not None else None  # noqa: SIM115  (closed in the finally below)
    target_fd = sink.fileno() if sink is not None else 2
    saved = {fd: os.dup(fd) for fd in ((1, 2) if sink is not None else (1,))}
    py_out, py_err = sys.stdout, sys.stderr
    try:
        for fd in saved:
            os.dup2(target_fd, fd)
        if sink is not None:
            sys.stdout = sys.stderr = sink
        else:
            sys.stdout = sys.stderr
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        sys.stdout, sys.stderr = py_out, py_err
        for fd, dup in saved.items():
            os.dup2(dup, fd)
            os.close(dup)
        if sink is not None:
            sink.close()


def script_traceback(e: BaseException, script: Path) -> str:
    """The script's exception as Python prints it, from the script's own first frame on
    (irscope's runner and runpy above it left out)."""
    frames = traceback.extract_tb(e.__traceback__)
    try:
        target = script.resolve()
        first = next((i for i, f in enumerate(frames) if Path(f.filename).resolve() == target), 0)
    except OSError:
        first = 0
    tb = e.__traceback__
    for _ in range(first):
        tb = tb.tb_next if tb is not None else None
    return "".join(traceback.format_exception(type(e), e, tb)).rstrip("\n")


CPU_TORCH = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def _needs(failure: BaseException | None) -> str:
    """Where the script stopped on a missing torch, which torch to install (irscope has no `capture` extra:
    PyPI's torch for Linux is the multi-GB CUDA build, and an extra cannot name another index)."""
    if isinstance(failure, ModuleNotFoundError) and (failure.name or "").split(".")[0] == "torch":
        return f"; capture runs the script, which needs torch (without a GPU, its CPU build: {CPU_TORCH})"
    return ""


def _stop_phrase(stopped: str | None) -> str:
    if stopped and stopped.startswith("exited"):
        return stopped
    return f"raised {stopped}"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"


def _stop_line(e: BaseException, script: Path) -> str:
    """The script's failure as one line: where in the script, the exception, and whose code raised it."""
    return f"{_where(e, script)}{type(e).__name__}: {_first_line(e)}{_raised_in(e, script)}"


def _raised_in(e: BaseException, script: Path) -> str:
    """' (raised in torch's own code: torch/_inductor/graph.py:1234)' when the exception (or the one it
    was raised from) came out of code that is not the script's own line: a library's, irscope's, or a
    module beside the script. Python's standard library is passed through to the code that called it."""
    inner = e
    for _ in range(8):  # `raise X from cause`: the cause is where it went wrong (Inductor wraps its errors)
        if inner.__cause__ is None or inner.__cause__.__traceback__ is None:
            break
        inner = inner.__cause__
    try:
        target = script.resolve()
        for frame in reversed(traceback.extract_tb(inner.__traceback__)):
            path = Path(frame.filename).resolve()
            if path == target:
                return ""
            owner = _owner(path, target.parent)
            if owner is not None:
                return f" (raised in {owner}:{frame.lineno})"
    except OSError:
        pass
    return ""


_IRSCOPE = Path(__file__).resolve().parent.parent
_STDLIB = Path(sysconfig.get_paths()["stdlib"]).resolve()


def _owner(path: Path, folder: Path) -> str | None:
    """Whose code a file is, said with its path ("torch's own code: torch/nn/functional.py"); None for
    Python's standard library and frozen or generated code, which raise on their caller's behalf."""
    if any(part.startswith("torchinductor_") for part in path.parts):  # Inductor's cache: code it generated
        return f"Inductor's generated code: {path.name}"
    if path.is_relative_to(_IRSCOPE):
        return f"irscope's own code: irscope/{path.relative_to(_IRSCOPE).as_posix()}"
    parts = path.parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            rel = parts[parts.index(marker) + 1 :]
            return f"{rel[0].removesuffix('.py')}'s own code: {'/'.join(rel)}" if rel else None
    if path.is_relative_to(_STDLIB) or not path.is_file():
        return None
    if path.is_relative_to(folder):
        return f"the script's own {path.relative_to(folder).as_posix()}"
    return f"the code of {path.as_posix()}"


def _where(e: BaseException, script: Path) -> str:
    """'script.py:42: ' for the deepest frame in the script itself."""
    try:
        target = script.resolve()
        for frame in reversed(traceback.extract_tb(e.__traceback__)):
            if Path(frame.filename).resolve() == target:
                return f"{script.name}:{frame.lineno}: "
    except OSError:
        pass
    return ""
