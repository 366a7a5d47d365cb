"""Views across Triton releases: notes while an env is made, a capture's table, a bisect's verdict."""

from __future__ import annotations

import json
import sys
from typing import Any


def note(text: str) -> None:
    """A progress line on stderr (an env being made takes seconds to a minute)."""
    sys.stderr.write(f"irscope: {text}\n")
    sys.stderr.flush()
