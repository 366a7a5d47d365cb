"""The torch releases the stand-in GPU is tested with, and the note a capture gives outside them.

The stand-in answers torch's CUDA API by name (standin/), and torch moves those names between releases
(torch.accelerator, FakeTensor's device init, Inductor's launcher classes): a release outside the range
may ask what the stand-in does not answer, and a capture that stops there would look like the script's
fault. The range is declared here and in pyproject.toml's `torch` extra (tests/test_torch_range.py checks
that they agree) and tested: 2.11 on the GPU machine (its capture tests with the GPU visible and with
CUDA_VISIBLE_DEVICES= hiding it), 2.13 (the CPU build: CI's 3.6.0 and fbtriton lanes), 2.14 (PyPI's CUDA
build on a machine without a GPU: CI's torch lane).
"""

from __future__ import annotations

import re
import sys

OLDEST = (2, 11)  # the oldest release tested (the GPU machine's)
NEWEST = (2, 14)  # the newest release tested (the newest the package index offers to CI)
REQUIREMENT = f"torch>={OLDEST[0]}.{OLDEST[1]},<{NEWEST[0]}.{NEWEST[1] + 1}"


def release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a torch version string ('2.14.1+cu130' -> (2, 14)); None if it is not one."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def note(version: str) -> str | None:
    """One line for a capture run on a torch outside the tested range; None inside it."""
    got = release(version)
    if got is None or OLDEST <= got <= NEWEST:
        return None
    side = "older" if got < OLDEST else "newer"
    return (
        f"torch {version} is {side} than the releases the stand-in GPU is tested with "
        f"({OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]}): a stop inside torch may be the stand-in's"
    )


def loaded_note() -> list[str]:
    """The note for the torch this process imported (a capture's script imports it), if outside the range."""
    torch = sys.modules.get("torch")
    said = note(str(getattr(torch, "__version__", ""))) if torch is not None else None
    return [said] if said else []
