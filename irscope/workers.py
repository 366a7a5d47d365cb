"""Worker processes: the one line protocol between irscope and the Python processes it starts.

Two kinds of work leave the main process: a sweep's compile workers (python -m irscope.sweep.pool,
reused from config to config, so that a compiler crash or hang costs one config, not the sweep)
and the timing process that holds the GPU (python -m irscope.timing.gpu_process, so that a
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
"""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

PREFIX = "::irscope "   # what starts a protocol line; nothing a kernel prints is taken for one


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
    tag: str | None      # None: the worker's output ended (it exited, died or was killed)
    body: Any = None


class Worker:
    """One child process, `python ARGV...` (e.g. ("-m", "irscope.sweep.pool")), speaking the protocol.

    `python` is the interpreter (default: this one; a release diff's worker runs another env's),
    `env` its environment (default: this process's).

    Its messages go to `inbox` (its own queue unless one is given to share); `ready` turns true
    once receive() has passed on its ready word. `niceness` > 0 runs it below the parent (the
    compile workers yield the CPU to the timing process). stop() kills it and keeps `tail`, the
    non-empty lines of its stderr.
    """

    def __init__(self, argv: Sequence[str], *, ready: str, inbox: queue.Queue[Message] | None = None,
                 niceness: int = 0, python: str | None = None, env: dict[str, str] | None = None) -> None:
        self.ready_word = ready
        self.ready = False
        self.inbox: queue.Queue[Message] = inbox if inbox is not None else queue.Queue()
        self.tail: list[str] = []
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self._outbox: queue.Queue[str | None] = queue.Queue()
        self.proc = subprocess.Popen([python or sys.executable, *argv], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1,
                                     errors="replace", env=env)
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
        for line in self.proc.stdout:
            if not line.startswith(PREFIX):
                continue
            tag, _, body = line[len(PREFIX):].rstrip("\n").partition(" ")
            try:
                value = decode(body) if body else None
            except Exception:  # noqa: BLE001 - a line garbled by another writer's bytes is not a message
                continue
            self.inbox.put(Message(self, tag, value))
        self.proc.stdout.close()
        self.inbox.put(Message(self, None))

    def _write(self) -> None:
        while (text := self._outbox.get()) is not None:
            try:
                self.proc.stdin.write(text)
                self.proc.stdin.flush()
            except (OSError, ValueError):
                break  # the child died: its reader sees the end, the caller finds out why
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()


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
