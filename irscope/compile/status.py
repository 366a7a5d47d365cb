"""The status channel and the supervisor that reads it: a process that aborts (a compiler's C++ abort, a captured
script's SIGKILL, os.abort or segfault) cannot take irscope down with it.

irscope.entry calls `fork(ended)` once the cache's direct mode has not answered (a cached repeat never forks),
before click or Triton are imported. The child returns from it and runs the command as before, telling the
parent what it is doing, one JSON record a line on a pipe (records.Status):

    attach(fd, scratch)   in the child, by fork(), before the command runs
    send(record)          a record, whole (a lock keeps threads' records apart); nothing when unsupervised
    scratch()             the parent's private folder: a compile's stderr goes to a named file there
                          (compiler.py, adapter.native_output), so the compiler's last words outlive an abort

The compile sends its stages as they begin (compiler.py, the one stage hook) and its end; a captured script
its captures as they are recorded (capture/salvage.py) and its end. The parent never returns from fork(): it
waits, sends on SIGINT, SIGTERM and SIGHUP that a process sent it (not those a terminal sent the whole process
group, the child included: a second Ctrl-C would stop more than the user asked), and when the child is gone
exits with `ended(wait status, records, scratch)` (irscope.entry: the child's own status, or what its death
by a signal in a compile or a captured script means).

Only the process that attached the channel sends (a child a script forks inherits the module, not the right
to speak). Where the platform has no fork or sigtimedwait (Windows, macOS) fork() returns at once and the
command runs in this process, as before; the Python API, MCP and the tests' in-process cli.main never fork
and send nothing.
"""

from __future__ import annotations

import contextlib
import gc
import json
import mmap
import os
import re
import select
import shutil
import signal
import stat
import struct
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import Any, NoReturn

from irscope.records import Status

COUNTERS = 1 << 13  # shared launch counters: slot 0 the script's launches, slot i capture i's (i < COUNTERS)
# after the counters: the launch Triton's interpreter is computing (0: none) and its kernel's name (UTF-8,
# NUL-padded), so that a process a computed kernel ends (an unmasked access outside its tensors) says which
COMPUTING = 8 * COUNTERS
NAME_BYTES = 120
COMPUTING_NAME = slice(COMPUTING + 8, COMPUTING + 8 + NAME_BYTES)
SHARED_BYTES = COMPUTING_NAME.stop


class _Channel:
    fd: int | None = None
    pid = 0
    scratch: str | None = None
    counters: mmap.mmap | None = None
    lock = threading.Lock()


_CHANNEL = _Channel()


def attach(fd: int, scratch: str, counters: mmap.mmap | None = None) -> None:
    """This process reports on `fd` (a pipe's write end), its compiles' stderr in `scratch`, its launches in
    `counters` (memory shared with the supervisor)."""
    _CHANNEL.fd, _CHANNEL.pid, _CHANNEL.scratch, _CHANNEL.counters = fd, os.getpid(), scratch, counters


def attached() -> bool:
    return _CHANNEL.fd is not None and _CHANNEL.pid == os.getpid()


def scratch() -> str | None:
    """The folder for a compile's stderr file, or None (unsupervised: an anonymous temporary file)."""
    return _CHANNEL.scratch if attached() else None


def count(launches: int, index: int, launched: int) -> None:
    """A launch: the script's launches so far, and capture `index`'s. Written into memory the supervisor shares
    (no system call: a script may launch a kernel every few microseconds), exact at whatever moment it dies."""
    counters = _CHANNEL.counters
    if counters is None or not attached():
        return
    struct.pack_into("q", counters, 0, launches)
    if 0 < index < COUNTERS:
        struct.pack_into("q", counters, 8 * index, launched)


def computing(number: int, name: str = "") -> None:
    """Launch `number` is being computed by Triton's interpreter in this process (0: none is any more).
    Shared memory, as count(): read by the supervisor only if the process dies."""
    counters = _CHANNEL.counters
    if counters is None or not attached():
        return
    if number:
        raw = name.encode("utf-8", errors="replace")[:NAME_BYTES]
        counters[COMPUTING_NAME] = raw.ljust(NAME_BYTES, b"\0")
    struct.pack_into("q", counters, COMPUTING, number)


def send(record: Status) -> None:
    """The record to the supervisor, as one line; nothing when unsupervised. A supervisor gone (EPIPE) ends
    the channel quietly: the command goes on as an unsupervised one."""
    if not attached():
        return
    try:
        data = memoryview((json.dumps(record, separators=(",", ":")) + "\n").encode())
    except (TypeError, ValueError):  # not JSON (a bug of the sender's): the command must not fail for it
        return
    with _CHANNEL.lock:
        fd = _CHANNEL.fd
        try:
            while data and fd is not None:
                data = data[os.write(fd, data) :]
        except OSError:
            _CHANNEL.fd = None


# ---------------------------------------------------------------- the supervisor

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
STDERR_TAIL = 1 << 16  # the bytes of a compile's stderr read for its last words


def available() -> bool:
    return hasattr(os, "fork") and hasattr(signal, "sigtimedwait") and hasattr(signal, "pthread_sigmask")


class Report:
    """What the supervised process told: its records, its compiles' stderr files, its launch counters."""

    def __init__(self, records: list[dict[str, Any]], scratch: str, counters: mmap.mmap):
        self.records = records
        self.scratch = scratch
        self._counters = counters

    def launches(self, index: int = 0) -> int:
        """The script's launches (index 0), or capture `index`'s (0 past the counters' end)."""
        return struct.unpack_from("q", self._counters, 8 * index)[0] if 0 <= index < COUNTERS else 0

    def computing(self) -> tuple[int, str]:
        """(the launch Triton's interpreter was computing, its kernel's name); (0, "") when none was."""
        number = struct.unpack_from("q", self._counters, COMPUTING)[0]
        if number <= 0:
            return 0, ""
        raw = bytes(self._counters[COMPUTING_NAME]).rstrip(b"\0")
        return number, raw.decode("utf-8", errors="replace")

    def stderr_tail(self, name: Any) -> str:
        """The end of a compile's stderr file: a plain name inside the scratch folder, a regular file."""
        if not isinstance(name, str) or not name or os.sep in name or name in (".", ".."):
            return ""
        try:
            fd = os.open(os.path.join(self.scratch, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ""
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            size = os.fstat(fd).st_size
            f.seek(max(0, size - STDERR_TAIL))
            return f.read(STDERR_TAIL).decode("utf-8", errors="replace")


Ended = Callable[[int, Report], int]  # (the child's wait status, what it told) -> the exit status


def fork(ended: Ended) -> None:
    """Returns in the child (with the status channel attached), where the command runs; the parent waits for
    it and exits with ended(...). Returns at once, unforked, where the platform cannot supervise."""
    if not available():
        return
    try:
        scratch = tempfile.mkdtemp(prefix="irscope-supervisor-")
    except OSError:  # no writable temporary folder: the command runs unsupervised (and says what it says)
        return
    counters = mmap.mmap(-1, SHARED_BYTES)  # anonymous and shared: the child's writes are the parent's reads
    read_fd, write_fd = os.pipe()
    watched = {*FORWARDED, signal.SIGCHLD}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    gc.freeze()  # the objects made so far are left out of the child's collections: its pages stay shared,
    try:  # not copied when the child's collector or its exit touches them (halves the child's cost at exit)
        pid = os.fork()
    except OSError:  # no process to spare (EAGAIN, ENOMEM): the command runs here, unsupervised
        gc.unfreeze()
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        for fd in (read_fd, write_fd):
            os.close(fd)
        shutil.rmtree(scratch, ignore_errors=True)
        return
    if pid == 0:
        os.close(read_fd)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        _die_with(parent)
        attach(write_fd, scratch, counters)
        return
    os.close(write_fd)
    _parent(pid, read_fd, Report([], scratch, counters), watched, before, ended)


def _die_with(parent: int) -> None:
    """Linux: the child is killed with the supervisor (PR_SET_PDEATHSIG): `kill -9` of irscope ends the command
    too, as it did before there was a child. Elsewhere, or where prctl is not to be had, nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the supervisor died before prctl: the signal will never come
        os.kill(os.getpid(), signal.SIGKILL)


def _parent(pid: int, read_fd: int, report: Report, watched: set, before: Any, ended: Ended) -> NoReturn:
    """Waits for the child, says what its end means, exits with the status that follows."""
    code = 1
    try:
        reader = _Reader(read_fd, report.records)
        reader.start()
        wait_status = _wait(pid, watched)
        reader.finish()
        signal.pthread_sigmask(signal.SIG_SETMASK, before)  # the dumps of a salvage answer Ctrl-C as usual
        code = os.waitstatus_to_exitcode(wait_status)
        code = code if code >= 0 else 128 - code  # kept should `ended` fail
        code = ended(wait_status, report)
    except KeyboardInterrupt:
        code = 130
    except Exception as e:  # noqa: BLE001  the supervisor's own failure: one line, never a traceback
        _say(f"irscope: internal error in its supervisor: {type(e).__name__}: {e}")
    finally:
        shutil.rmtree(report.scratch, ignore_errors=True)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    os._exit(code)


def _wait(pid: int, watched: set) -> int:
    """The child's wait status; meanwhile each watched signal a process sent is sent on to the child (si_code
    <= 0: kill, sigqueue, tgkill). One the kernel sent (a terminal's Ctrl-C, a hangup) reached the child's
    process group, the child included: sending it again would be a second Ctrl-C."""
    while True:
        info = signal.sigtimedwait(watched, 1.0)
        if info is not None and info.si_signo in FORWARDED and info.si_code <= 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, info.si_signo)
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            return wait_status


class _Reader(threading.Thread):
    """Reads the status channel into `records` while the child runs (a child never blocks on a full pipe);
    `finish()` takes what is left once the child is gone. A line that is not a record is passed over."""

    def __init__(self, fd: int, records: list[dict[str, Any]]):
        super().__init__(daemon=True, name="irscope-status")
        self.fd = fd
        self.records = records
        self._partial = b""
        self._last = threading.Event()

    def run(self) -> None:
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                if self._last.is_set():  # the child is gone and nothing is left to read (a child of a
                    return  # script that inherited the pipe may keep it open: not waited for)
                continue
            data = os.read(self.fd, 1 << 16)
            if not data:
                return
            lines = (self._partial + data).split(b"\n")
            self._partial = lines.pop()
            for line in lines:
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if isinstance(record, dict):
                        self.records.append(record)

    def finish(self) -> None:
        self._last.set()
        self.join()
        os.close(self.fd)


def where(records: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the compile under way, the captured script under way) at the end of the records: each begins with
    its first record and ends with its `idle` record."""
    compiling: dict[str, Any] | None = None
    script: dict[str, Any] | None = None
    for record in records:
        kind = record.get("kind")
        if kind == "compile":
            compiling = record
        elif kind == "script":
            script = record
        elif kind == "idle":
            if record.get("ended") == "compile":
                compiling = None
            else:
                script = None
    return compiling, script


_ERROR = re.compile(r"LLVM ERROR|Assertion .* failed|error:|terminate called|what\(\):|UNREACHABLE|Aborted")
_NOISE = re.compile(r"^\s*(#?\d+\.?\s+(0x|Program arguments|Running pass)|Stack dump|PLEASE submit)")


def last_words(text: str) -> str:
    """The compiler's meaningful last line: the last error-like line (LLVM ERROR, a failed assertion, an
    uncaught C++ exception's what()), else the last line that is not a stack dump's; "" when none."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _NOISE.match(ln)]
    errors = [ln for ln in lines if _ERROR.search(ln)]
    chosen = errors[-1] if errors else (lines[-1] if lines else "")
    return chosen[:400]


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _say(line: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
