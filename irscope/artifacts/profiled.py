"""profile.json: what `irscope profile` measured for one dump folder's kernel, kept beside map.json.

One document per dump folder (the kernel that was run under Nsight Compute or Proton): totals (warp
samples by stall reason, instructions executed, bytes moved, the roofline point against the chip's
peaks), one entry per Python line (the join through map.json), and optionally one per SASS
instruction. Its readers (the profile view, `diff --profile`, the report's gutter) go through read(),
which checks it against schema.PROFILE (derived from records.Profile): a profile.json is data from a
folder that may be hostile.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import cast

from irscope.artifacts import schema
from irscope.kernel import jsonfile
from irscope.records import Profile

FILENAME = "profile.json"
VERSION = 1

# the document's stall reasons (ncu's short names: the stall_* columns of its source page; Proton's are
# mapped onto them) as a reader knows them, for every view of a profile
STALL_WORDS = {
    "long_sb": "long scoreboard",
    "short_sb": "short scoreboard",
    "barrier": "barrier",
    "wait": "wait",
    "mio": "MIO throttle",
    "lg": "LG throttle",
    "math": "math pipe",
    "not_selected": "not selected",
    "selected": "selected",
    "no_inst": "no instruction",
    "dispatch": "dispatch",
    "drain": "drain",
    "imc": "IMC miss",
    "membar": "membar",
    "branch_resolving": "branch resolving",
    "sleep": "sleeping",
    "tex": "TEX throttle",
    "misc": "misc",
    "unlisted": "no reason exported",
}


def stall_word(reason: str) -> str:
    """A stall reason as a person reads it; an unknown one (another tool's, a newer ncu's) as it came."""
    return STALL_WORDS.get(reason, reason)


def read(folder: Path) -> Profile | None:
    """The folder's profile, checked; None when the folder has none."""
    path = Path(folder) / FILENAME
    if not path.is_file():
        return None
    return cast(Profile, jsonfile.load(path, schema.PROFILE, FILENAME, remedy="profile the kernel again"))


def write(folder: Path, doc: Profile) -> Path:
    """Write `doc` (checked against the schema first; irscope_profile set to VERSION, first) atomically
    into the dump folder."""
    doc = {"irscope_profile": VERSION, **doc}  # first, and this version whatever a caller set
    jsonfile.validate(doc, schema.PROFILE, Path(folder) / FILENAME, FILENAME, remedy="a bug in irscope: report it")
    final = Path(folder) / FILENAME
    fd, tmp = tempfile.mkstemp(prefix=f".{FILENAME}.", dir=folder)  # a reader never sees half a file
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, final)
    return final
