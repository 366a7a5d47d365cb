"""The stand-in GPU's memory figures: what `torch.cuda.memory_allocated` and its peers answer.

A script that reports its peak memory (a benchmark's table, a test dividing by it) reads these. They are
counted, not made up: each storage marked as made for cuda (marks.set_mark) adds its size, rounded up to
the caching allocator's 512-byte block as on a GPU, and gives it back when torch frees it (a finalizer on
the storage, which lives exactly as long as its memory). `reserved` is the same figure: the stand-in has no
cache to hold freed blocks. Tensors of no known origin (made inside a compiled function or by autograd's
engine, marks.py) are not counted, so the figures are a lower bound of what the chip's allocator would say.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

BLOCK = 512  # the CUDA caching allocator's smallest block: every allocation is rounded up to it


class Allocations:
    """Bytes held by the storages made for cuda, now and at their peak since the last reset."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.live = 0
        self.peak = 0

    def add(self, storage: Any) -> None:
        try:
            size = -(-int(storage.nbytes()) // BLOCK) * BLOCK
            weakref.finalize(storage, self._free, size)
        except (TypeError, RuntimeError, AttributeError):  # a storage that takes no finalizer: not counted
            return
        with self._lock:
            self.live += size
            self.peak = max(self.peak, self.live)

    def _free(self, size: int) -> None:
        with self._lock:
            self.live -= size

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.live


_current = Allocations()


def current() -> Allocations:
    return _current


def restart() -> Allocations:
    """A fresh count, as a new process would start with (the stand-in going up); storages counted by the
    previous one give their bytes back to it, not to this one."""
    global _current
    _current = Allocations()
    return _current
