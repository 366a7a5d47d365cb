"""Capture what native code prints (MLIR diagnostics, pass dumps) during one compile.

Triton's C++ side writes verifier errors and, with MLIR_ENABLE_DUMP=1, the IR
before every pass straight to file descriptor 2 (llvm::dbgs, unbuffered), and some
pass-internal dumps to descriptor 1. irscope keeps both, apart: on failure they are
the compiler's reason; with --passes stderr is the per-pass record.

(MLIR_DUMP_PATH is not used: Triton opens that file once per process into a
static, buffered stream, so a second compile in one process, or a read before
exit, sees nothing.)
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
def capture_native_output() -> Iterator[CapturedOutput]:
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as out_sink, tempfile.TemporaryFile(mode="w+b") as err_sink:
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
