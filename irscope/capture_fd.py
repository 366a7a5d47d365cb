"""Capture what native code prints (MLIR diagnostics, pass dumps) during one compile.

Triton's C++ side writes verifier errors and some pass dumps straight to file
descriptors 1 and 2, past Python's sys.stdout. irscope keeps them: on failure they
are the compiler's reason; on success they are saved as compile.log.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator


class CapturedOutput:
    text: str = ""


@contextlib.contextmanager
def capture_native_output() -> Iterator[CapturedOutput]:
    result = CapturedOutput()
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = [os.dup(1), os.dup(2)]
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield result
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            result.text = sink.read().decode("utf-8", errors="replace")
