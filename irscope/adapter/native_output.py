"""Capture what native code prints (MLIR diagnostics, pass dumps) during one compile.

Triton's C++ side writes verifier errors and, with MLIR_ENABLE_DUMP=1, the IR
before every pass straight to file descriptor 2 (llvm::dbgs, unbuffered), and some
pass-internal dumps to descriptor 1. irscope keeps both, apart: on failure they are
the compiler's reason; with --passes stderr is the per-pass record.

(MLIR_DUMP_PATH is not used: Triton opens that file once per process into a
static, buffered stream, so a second compile in one process, or a read before
exit, sees nothing.)

Under the `irscope` command's supervisor (compile/status.py) stderr goes to a named file in the
supervisor's private folder (`folder`), removed when the compile ends: a compile that aborts the process
leaves it behind, and the supervisor reads the compiler's last words from it.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


class CapturedOutput:
    def __init__(self, err_sink) -> None:
        self._err_sink = err_sink
        name = getattr(err_sink, "name", None)
        self.err_name = os.path.basename(name) if isinstance(name, str) else None  # a named sink's file name
        self.stdout = ""
        self.stderr = ""

    def stderr_size(self) -> int:
        """Bytes written to stderr so far (marks where a stage's pass dumps begin)."""
        sys.stderr.flush()
        return os.fstat(self._err_sink.fileno()).st_size

    @property
    def text(self) -> str:
        return self.stderr + self.stdout


@contextlib.contextmanager
def capture_native_output(folder: str | None = None) -> Iterator[CapturedOutput]:
    """fds 1 and 2 caught while the block runs; stderr in a named file in `folder` when one is given."""
    sys.stdout.flush()
    sys.stderr.flush()
    err_file = (
        tempfile.NamedTemporaryFile(mode="w+b", dir=folder, prefix="stderr-")  # noqa: SIM115  (closed below)
        if folder is not None
        else tempfile.TemporaryFile(mode="w+b")
    )
    with tempfile.TemporaryFile(mode="w+b") as out_sink, err_file as err_sink:
        result = CapturedOutput(err_sink)
        saved = [os.dup(1), os.dup(2)]
        os.dup2(out_sink.fileno(), 1)
        os.dup2(err_sink.fileno(), 2)
        try:
            yield result
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            out_sink.seek(0)
            err_sink.seek(0)
            result.stdout = out_sink.read().decode("utf-8", errors="replace")
            result.stderr = err_sink.read().decode("utf-8", errors="replace")
