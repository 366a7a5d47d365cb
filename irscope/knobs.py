"""Every knob of irscope in one table (as Triton's knobs.py): the IRSCOPE_* environment variables
and the process-wide settings, each typed, with its default and a line on what it does.

This is the only module that reads an IRSCOPE_* variable. Each is read when it is used (`.get()`),
never at import: the tests (and a user's script, during a capture) set them at run time.
docs/guides/knobs.md's table lists every knob here (tests/test_knobs.py holds it to that).

    CACHE_DIR, RECIPES, STANDIN_OP_S, INTERPRET_LAUNCH_S, INTERPRET_TOTAL_S, SMI_FACTS, PAGER   read by irscope
    TRITON_PROVIDER, TRITON_TUTORIALS    documented here only: setup.py and the tests read them
    LOAD_TIMEOUT                          a process-wide setting (the CLI's --load-timeout), not the env
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from irscope.errors import BadInput

T = TypeVar("T")


@dataclass(frozen=True)
class Knob(Generic[T]):
    """One IRSCOPE_* environment variable: unset, or text `parse` turns into None, means `default`."""

    name: str
    default: T
    parse: Callable[[str], T | None]
    doc: str
    read_by: str = "irscope"  # "setup.py" or "the tests": listed here, read there (they cannot import irscope)

    def get(self) -> T:
        text = os.environ.get(self.name)
        if text is None:
            return self.default
        value = self.parse(text)
        return self.default if value is None else value

    def given(self, value: T | None) -> T:
        """A value given in code (a command-line flag) wins over the environment."""
        return self.get() if value is None else value


@dataclass
class Setting(Generic[T]):
    """A process-wide setting made in code (a command-line flag), not read from the environment."""

    name: str
    default: T
    doc: str
    check: Callable[[Any], T] = field(default=lambda v: v)
    _value: T | None = None

    def get(self) -> T:
        return self.default if self._value is None else self._value

    def set(self, value: Any) -> None:
        self._value = self.check(value)

    def reset(self) -> None:
        self._value = None


def _path(text: str) -> Path | None:
    return Path(text) if text else None


def _paths(text: str) -> tuple[Path, ...]:
    return tuple(Path(p) for p in text.split(os.pathsep) if p)


def _names(text: str) -> tuple[str, ...]:
    return tuple(t.strip() for t in text.split(",") if t.strip())


def _seconds(text: str) -> float | None:
    """A number of seconds >= 0; anything else (negative, not a number) leaves the default."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def _text(text: str) -> str | None:
    return text or None


def _load_timeout(seconds: Any) -> float:
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise BadInput(f"--load-timeout {seconds!r}: expected a positive number of seconds (e.g. 10)")
    return float(seconds)


# ------------------------------------------------------------------ the table

CACHE_DIR: Knob[Path | None] = Knob(
    "IRSCOPE_CACHE_DIR",
    None,
    _path,
    "irscope's cache folder (dumps, sweeps.sqlite, envs/ with other Triton releases); unset: $XDG_CACHE_HOME/irscope, else ~/.cache/irscope",
)
RECIPES: Knob[tuple[Path, ...]] = Knob(
    "IRSCOPE_RECIPES",
    (),
    _paths,
    "folders of recipes (os.pathsep-separated), searched before the recipes/ shipped with irscope",
)
STANDIN_OP_S: Knob[float] = Knob(
    "IRSCOPE_STANDIN_OP_S",
    0.5,
    _seconds,
    "stand-in GPU: a torch op estimated to take longer on the CPU (seconds) runs shape-only",
)
INTERPRET_LAUNCH_S: Knob[float] = Knob(
    "IRSCOPE_INTERPRET_LAUNCH_S",
    60.0,
    _seconds,
    "stand-in GPU: seconds Triton's interpreter may compute one launch; 0 computes none",
)
INTERPRET_TOTAL_S: Knob[float] = Knob(
    "IRSCOPE_INTERPRET_TOTAL_S",
    120.0,
    _seconds,
    "stand-in GPU: seconds the interpreter may spend on a whole script's launches; 0 computes none",
)
SMI_FACTS: Knob[dict] = Knob(
    "IRSCOPE_SMI_FACTS",
    {},
    json.loads,
    "the chip the stand-in nvidia-smi/rocm-smi answers as (JSON); set by irscope for the script it runs",
)
TRITON_PROVIDER: Knob[str | None] = Knob(
    "IRSCOPE_TRITON_PROVIDER",
    None,
    _text,
    "install: a distribution that provides `triton` (e.g. fbtriton), so pip does not add triton",
    "setup.py",
)
TRITON_TUTORIALS: Knob[Path | None] = Knob(
    "IRSCOPE_TRITON_TUTORIALS",
    None,
    _path,
    "tests: a Triton checkout's python/tutorials, captured on the stand-in GPU",
    "the tests",
)

PAGER: Knob[str | None] = Knob(
    "IRSCOPE_PAGER",
    None,
    str,
    "the pager for long output on a terminal (dump/capture --stage, diff), run through the shell; unset: $PAGER, "
    "else less (LESS=FRX unless set); '' or cat: none",
)

RELEASES: Knob[tuple[str, ...]] = Knob(
    "IRSCOPE_RELEASES",
    (),
    _names,
    "tests: Triton releases (comma-separated, e.g. 3.5.1,3.7.1,3.8.0) that tests/test_releases.py makes an "
    "env for and dumps the examples with",
    "the tests",
)

KNOBS: tuple[Knob, ...] = (
    CACHE_DIR,
    RECIPES,
    STANDIN_OP_S,
    INTERPRET_LAUNCH_S,
    INTERPRET_TOTAL_S,
    SMI_FACTS,
    PAGER,
    TRITON_PROVIDER,
    TRITON_TUTORIALS,
    RELEASES,
)

LOAD_TIMEOUT: Setting[float] = Setting(
    "--load-timeout",
    30.0,
    "seconds a kernel file may take to import (one that imports torch and a library takes seconds cold)",
    _load_timeout,
)

SETTINGS: tuple[Setting, ...] = (LOAD_TIMEOUT,)


def cache_dir() -> Path:
    """$IRSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/irscope, else ~/.cache/irscope."""
    if (env := CACHE_DIR.get()) is not None:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "irscope"


def table() -> list[tuple[str, str, str]]:
    """(name, default, what it does) of every knob and setting: the table in docs/guides/knobs.md."""
    rows = [
        (
            k.name,
            "unset"
            if k.default in (None, (), {})
            else f"{k.default:g}"
            if isinstance(k.default, float)
            else str(k.default),
            k.doc + ("" if k.read_by == "irscope" else f" (read by {k.read_by})"),
        )
        for k in KNOBS
    ]
    return rows + [(s.name, f"{s.default:g}", s.doc + " (a flag, not the environment)") for s in SETTINGS]
