"""Worker processes: the one line protocol between irscope and the Python processes it starts.

Two kinds of work leave the main process: compile workers (python -m irscope.workers, in one
Pool: a sweep's configs and a capture's kernels, each worker reused from job to job, so that a
compiler crash or hang costs one job, not the run) and the timing process that holds the GPU (python -m irscope.timing.gpu_process, so that a
faulting kernel poisons its CUDA context, not irscope's). Both speak this protocol:

    parent -> child   one message a line on stdin: a pickled object, base64-encoded
    child -> parent   protocol lines on stdout, each on a line of its own and flushed:
                          ::irscope TAG [base64 pickle]
                      first the ready word (READY, UP), then whatever the child's work says
                      (RESULT, OK, FAIL). Any other line is not protocol (a kernel file that
                      prints, Triton's own printing) and is ignored.
    stderr            to a temporary file: its last line says why a child died

The parent's side (Worker) never blocks on a pipe: a reader thread turns the child's lines into
Messages on a queue (one queue per worker, or one shared by many: a pool waits on all at once),
and a writer thread sends the messages, so neither side stalls while the other is busy (the
timing child reads little while torch imports). Waiting is a queue get with a timeout; what the
timeout means (a hang, a slow start) is the caller's. A dead child ends its messages with one
whose tag is None; stop() kills, reaps and keeps the stderr tail, and a caller respawns by
starting a new Worker. The child's side is say() (a protocol line), messages() (stdin,
decoded) and serve() (the ready word, then a handler for each message).

The compile pool (Pool, below) hires `size` workers as jobs need them; each job names its handler
("module:function", imported in the worker: irscope.sweep.pool:compile_config for a sweep's config,
irscope.capture.parallel:dump_capture for a captured kernel), which returns its RESULT document.
A crash (a signal), a hang (past `timeout`) or a worker that never starts is that job's outcome;
the dead worker is replaced, and workers that die before READY three times in a row, with none
ready, fail the jobs still queued with the reason instead of being restarted forever.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

PREFIX = "::irscope "  # what starts a protocol line; nothing a kernel prints is taken for one


def encode(obj: Any) -> str:
    """An object as one line of text (no newline): pickled, base64-encoded."""
    return base64.b64encode(pickle.dumps(obj)).decode()


def decode(text: str) -> Any:
    """encode's line back to the object."""
    return pickle.loads(base64.b64decode(text))


# ---------------------------------------------------------------- the parent's side


@dataclass
class Message:
    """One protocol line from a worker: its tag and the object it carried (None when none)."""

    worker: Worker
    tag: str | None  # None: the worker's output ended (it exited, died or was killed)
    body: Any = None


class Worker:
    """One child process, `python ARGV...` (e.g. ("-m", "irscope.workers")), speaking the protocol.

    `python` is the interpreter (default: this one; a release diff's worker runs another env's),
    `env` its environment (default: this process's).

    Its messages go to `inbox` (its own queue unless one is given to share); `ready` turns true
    once receive() has passed on its ready word. `niceness` > 0 runs it below the parent (the
    compile workers yield the CPU to the timing process). stop() kills it and keeps `tail`, the
    non-empty lines of its stderr.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        ready: str,
        inbox: queue.Queue[Message] | None = None,
        niceness: int = 0,
        python: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.ready_word = ready
        self.ready = False
        self.inbox: queue.Queue[Message] = inbox if inbox is not None else queue.Queue()
        self.tail: list[str] = []
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._outbox: queue.Queue[str | None] = queue.Queue()
        self.proc = subprocess.Popen(
            [python or sys.executable, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
            errors="replace",
            env=env,
        )
        if niceness:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, self.proc.pid, niceness)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def send(self, message: Any) -> None:
        """Queue one message for the child; never blocks (the writer thread waits on the pipe)."""
        self._outbox.put(encode(message) + "\n")

    def receive(self, timeout: float) -> Message | None:
        """The next message from this worker's inbox, or None after `timeout` seconds."""
        return receive(self.inbox, timeout)

    def stop(self, grace: float = 0.0) -> int:
        """Kill it if it still runs, reap it, keep its stderr tail; its exit status (-N: signal N).

        grace: seconds to let it exit on its own first (its output ended: it is on its way out,
        and its own exit status says more than the kill's).
        """
        self._outbox.put(None)
        if grace and self.proc.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)
        if self.proc.poll() is None:
            self.proc.kill()
        code = self.proc.wait()
        if not self._stderr.closed:
            self._stderr.seek(0)
            self.tail = [line for line in self._stderr.read().splitlines() if line.strip()]
            self._stderr.close()
        return code

    def _read(self) -> None:
        """Protocol lines -> Messages; anything else the child printed is dropped; the end -> tag None."""
        stdout = self.proc.stdout
        assert stdout is not None  # Popen(stdout=PIPE)
        for line in stdout:
            if not line.startswith(PREFIX):
                continue
            tag, _, body = line[len(PREFIX) :].rstrip("\n").partition(" ")
            try:
                value = decode(body) if body else None
            except Exception:  # noqa: BLE001 - a line garbled by another writer's bytes is not a message
                continue
            self.inbox.put(Message(self, tag, value))
        stdout.close()
        self.inbox.put(Message(self, None))

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None  # Popen(stdin=PIPE)
        while (text := self._outbox.get()) is not None:
            try:
                stdin.write(text)
                stdin.flush()
            except (OSError, ValueError):
                break  # the child died: its reader sees the end, the caller finds out why
        with contextlib.suppress(OSError, ValueError):
            stdin.close()


def receive(inbox: queue.Queue[Message], timeout: float) -> Message | None:
    """The next message on a queue (one worker's, or one a pool shares), or None after `timeout` s.

    A worker's ready word marks it ready here, in the caller's thread, in order with its other messages.
    """
    try:
        message = inbox.get(timeout=max(0.0, timeout))
    except queue.Empty:
        return None
    if message.tag is not None and message.tag == message.worker.ready_word:
        message.worker.ready = True
    return message


# ---------------------------------------------------------------- the child's side


def say(tag: str, body: Any = None) -> None:
    """One protocol line on stdout: on a line of its own (whatever was printed before), flushed."""
    sys.stdout.write(f"\n{PREFIX}{tag}" + (f" {encode(body)}" if body is not None else "") + "\n")
    sys.stdout.flush()


def messages() -> Iterator[Any]:
    """The parent's messages, decoded, until it closes stdin."""
    for line in sys.stdin:
        if line.strip():
            yield decode(line)


def serve(ready: str, handle: Callable[[Any], None]) -> int:
    """A worker's main loop: say the ready word, then hand each message to `handle` (which says its result)."""
    say(ready)
    for message in messages():
        handle(message)
    return 0


# ---------------------------------------------------------------- the compile pool

COMPILE_WORKER = ("-m", "irscope.workers")  # a compile worker's Python arguments
READY = "READY"
FAILED_STARTS = 3  # deaths before READY in a row, none ready: the workers cannot start
EXIT_GRACE = 5.0  # seconds a worker whose output ended gets to exit before it is killed
COLLECT_GRACE = 0.25  # seconds an interrupted run waits for results already on their way
T = TypeVar("T")


class Pool(Generic[T]):
    """Compile workers, hired as jobs need them (at most `size`), kept across run() calls until close().

    run(queued, message, finished): message(job) is the dict sent for a job (it names its "handler");
    finished(job, outcome, seconds) gets the handler's RESULT document, or {"status": "crashed" |
    "timed out", "reason": ...} when the worker died or hung with it.
    """

    def __init__(self, size: int, timeout: float, niceness: int = 0) -> None:
        self.size, self.timeout, self.niceness = max(1, size), timeout, niceness
        self.queued: list[T] = []
        self.message: Callable[[T], dict[str, Any]] = lambda job: {}
        self.finished: Callable[[T, dict[str, Any], float], None] = lambda job, outcome, s: None
        self.inbox: queue.Queue[Message] = queue.Queue()  # every worker's messages
        self.workers: list[Worker] = []
        self.held: dict[Worker, tuple[T, float]] = {}  # a worker's job, since when
        self.ever_ready = False  # a worker that never gets ready fails the jobs only if none ever did
        self.failed_starts = 0  # deaths before READY in a row

    def argv(self) -> Sequence[str]:
        """The worker's Python arguments (a subclass may read its own module's setting)."""
        return COMPILE_WORKER

    def start(self, n: int) -> None:
        """Hire up to n workers now (they import Triton while the caller does other work)."""
        for _ in range(min(self.size, n) - len(self.workers)):
            self.hire()

    def run(
        self,
        queued: list[T],
        message: Callable[[T], dict[str, Any]],
        finished: Callable[[T, dict[str, Any], float], None],
    ) -> None:
        self.queued, self.message, self.finished = list(queued), message, finished
        self.start(len(self.queued))
        try:
            while self.queued or self.held:
                self.hand_out()
                msg = receive(self.inbox, 0.05)
                if msg is not None and msg.worker in self.workers:  # else one fired already
                    if msg.tag is None:
                        self.died(msg.worker)
                    elif msg.tag == READY:
                        self.ever_ready = True
                    elif msg.tag == "RESULT" and msg.worker in self.held:
                        job, seconds = self.release(msg.worker)
                        self.finished(job, msg.body, seconds)
                self.time_out()
        except BaseException:
            self.collect()
            self.close()
            raise

    def collect(self, grace: float = COLLECT_GRACE) -> None:
        """On an interrupt: the results the workers already sent (a dump published, its RESULT in the pipe)
        go to finished, not down with the pool; at most `grace` seconds spent waiting for them."""
        deadline = time.perf_counter() + grace
        while self.held:
            msg = receive(self.inbox, deadline - time.perf_counter())
            if msg is None:
                return
            if msg.tag == "RESULT" and msg.worker in self.held:
                job, seconds = self.release(msg.worker)
                with contextlib.suppress(Exception):  # the interrupt is what the caller hears about
                    self.finished(job, msg.body, seconds)

    def close(self) -> None:
        for w in list(self.workers):
            self.fire(w)

    def hire(self) -> None:
        self.workers.append(Worker(self.argv(), ready=READY, inbox=self.inbox, niceness=self.niceness))

    def fire(self, w: Worker, grace: float = 0.0) -> int:
        """Take it out of the pool and stop it; its exit status."""
        self.workers.remove(w)
        return w.stop(grace)

    def hand_out(self) -> None:
        for w in self.workers:
            if w.ready and w not in self.held and self.queued and w.alive:  # dead while idle: its end comes
                job = self.queued.pop(0)
                w.send(self.message(job))
                self.held[w] = (job, time.perf_counter())

    def release(self, w: Worker) -> tuple[T, float]:
        job, started = self.held.pop(w)
        return job, time.perf_counter() - started

    def died(self, w: Worker) -> None:
        """Its output ended: the job it held crashed; replaced, unless workers cannot start at all."""
        code = self.fire(w, grace=EXIT_GRACE)
        if w in self.held:
            job, seconds = self.release(w)
            self.finished(
                job,
                {
                    "status": "crashed",
                    "reason": (
                        f"the compiler process died (signal {-code})"
                        if code < 0
                        else (w.tail[-1:] or [f"exit status {code}"])[0][:300]
                    ),
                },
                seconds,
            )
        self.failed_starts = 0 if w.ready else self.failed_starts + 1
        if self.failed_starts >= FAILED_STARTS and not any(x.ready for x in self.workers):
            # no worker can start (a broken environment): say why, once per job
            why = (w.tail[-1:] or [f"exit status {code}"])[0][:300]
            word = "could not start" if not self.ever_ready else "stopped starting"
            while self.queued:
                self.finished(
                    self.queued.pop(0), {"status": "crashed", "reason": f"the compile worker {word}: {why}"}, 0.0
                )
        if self.queued and len(self.workers) < self.size:
            self.hire()

    def time_out(self) -> None:
        for w, (job, started) in list(self.held.items()):
            if time.perf_counter() - started > self.timeout:
                self.fire(w)
                _, seconds = self.release(w)
                self.finished(job, {"status": "timed out", "reason": f"no result after {self.timeout:g} s"}, seconds)
                if self.queued:
                    self.hire()


def main() -> int:
    """A compile worker: READY once Triton is imported, then one job a message, each run by the
    handler it names ("module:function" -> (RESULT document, what to do after saying it, or None))."""
    import triton.compiler  # noqa: F401 - what every compile needs, loaded before the first job

    handlers: dict[str, Callable[[dict[str, Any]], tuple[Any, Callable[[], None] | None]]] = {}

    def run_job(job: dict[str, Any]) -> None:
        name = job["handler"]
        if name not in handlers:
            module, _, attr = name.partition(":")
            handlers[name] = getattr(importlib.import_module(module), attr)
        doc, after = handlers[name](job)
        say("RESULT", doc)
        if after is not None:  # after the result: the parent goes on meanwhile
            after()

    return serve(READY, run_job)


if __name__ == "__main__":
    sys.exit(main())
