"""Two measured profiles compared line by line: where the warp stalls moved between two settings.

`irscope diff-profiles DIR_A DIR_B` reads each dump folder's profile.json (what `irscope profile`
measured on a GPU, artifacts/profiled.py) and says, per Python line, how its share of all warp-stall
samples and its top stall reason changed ("line 34: 46 % of stalls, long scoreboard -> 26 %, barrier
with num_stages=3"), biggest change first, beside the totals (duration, samples, throughput, top
reasons) and the settings that differ between the two dumps (diff.diff_inputs, as `irscope diff`
names them). Shares are computed here from the samples (a line's samples over the kernel's), so
both sides are read the same way whatever wrote them.

profile.json is data from a folder that may be hostile: every figure goes through finite() (an
integer of thousands of digits is a valid JSON number; its share must still be a float).
Nothing here prints; views/profile_diff.py renders a ProfileDiff.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from irscope.artifacts import profiled
from irscope.compare.diff import StatDelta, diff_inputs
from irscope.compare.sides import Side
from irscope.errors import BadInput
from irscope.records import Profile

BIG = 1e300  # no figure past this: JSON for the page and --json stays finite
TOTALS = (
    "duration_ns",
    "samples",
    "executed",
    "bytes",
    "dram_gbps",
    "dram_peak_share",
    "tensor_tflops",
    "tensor_peak_share",
)


def finite(x: Any) -> float:
    """A checked profile number (NUMBER: an int of any size, or a finite float) as a finite float."""
    try:
        v = float(x)
    except (OverflowError, TypeError, ValueError):
        v = BIG if isinstance(x, int) and x > 0 else -BIG if isinstance(x, int) else 0.0
    return max(-BIG, min(BIG, v)) if math.isfinite(v) else 0.0


def share(part: Any, whole: Any) -> float:
    """part / whole, 0 when there is no whole; never past 1 (a hand-edited line may claim more samples)."""
    p, w = finite(part), finite(whole)
    return max(0.0, min(1.0, p / w)) if w > 0 else 0.0


def top_stalls(stalls: dict[str, Any] | None, n: int = 3) -> list[tuple[str, float]]:
    """The `n` largest stall reasons, as (reason, share of these stalls), largest first."""
    items = [(k, finite(v)) for k, v in (stalls or {}).items() if finite(v) > 0]
    total = math.fsum(v for _, v in items) if items else 0.0
    items.sort(key=lambda kv: (-kv[1], kv[0]))
    return [(k, share(v, total)) for k, v in items[:n]]


def require(side: Side) -> Profile:
    """The side's checked profile.json; BadInput (one line) when the folder was never measured."""
    doc = profiled.read(side.folder)
    if doc is None:
        raise BadInput(
            f"{side.folder}: no {profiled.FILENAME} (this dump was not measured); run irscope profile "
            f"on a GPU first, then irscope diff-profiles compares the two measured dumps"
        )
    return doc


@dataclass
class LineChange:
    """One Python line on both sides: its share of all stall samples and its top reasons."""

    file: str
    line: int
    text: str
    a_samples: float
    b_samples: float
    a_share: float  # of all the kernel's warp-stall samples, 0..1
    b_share: float
    a_top: list[tuple[str, float]]  # (reason, share of the line's stalls)
    b_top: list[tuple[str, float]]

    @property
    def change(self) -> float:
        return self.b_share - self.a_share


@dataclass
class ProfileSide:
    label: str
    folder: Path
    tool: str
    device: str
    totals: dict[str, float | None]
    top: list[tuple[str, float]]  # the kernel's top stall reasons, share of its samples


@dataclass
class ProfileDiff:
    kernel: str
    a: ProfileSide
    b: ProfileSide
    settings: list[StatDelta]  # what went in differently (target, options, env, ...)
    lines: list[LineChange] = field(default_factory=list)  # biggest change of share first

    @property
    def setting_words(self) -> str:
        """Side b as `with ...` names it: the options (and target) that differ, as KEY=VALUE."""
        parts = [
            f"{d.name.split('.', 1)[-1]}={d.b}"
            for d in self.settings
            if d.name.startswith("options.") and d.a is not None and d.b is not None
        ]
        parts += [f"{d.name}={d.b}" for d in self.settings if d.name in ("target", "triton_version")]
        return ", ".join(parts[:3]) + (", ..." if len(parts) > 3 else "") if parts else "side b"


def _side(side: Side, doc: Profile) -> ProfileSide:
    t: Mapping[str, Any] = doc["totals"]  # read by the key names in TOTALS
    totals = {k: (None if t.get(k) is None else finite(t[k])) for k in TOTALS}
    return ProfileSide(
        side.label, side.folder, doc["tool"], doc.get("device") or "", totals, top_stalls(t.get("stalls"), 4)
    )


def _lines(side: Side, doc: Profile) -> dict[tuple[str, int], dict[str, Any]]:
    """Per (file, line): the kernel's own file keyed as "" (two checkouts of one kernel still pair up)."""
    own = str(side.manifest.get("file") or "")
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for e in doc["lines"]:
        key = ("" if e["file"] == own else e["file"], e["line"])
        got = out.setdefault(key, {"file": e["file"], "text": e.get("text") or "", "samples": 0.0, "stalls": {}})
        got["samples"] = finite(got["samples"] + finite(e["samples"]))
        for k, v in (e.get("stalls") or {}).items():
            got["stalls"][k] = finite(got["stalls"].get(k, 0.0) + finite(v))
    return out


def profile_diff(a: Side, b: Side) -> ProfileDiff:
    """Both sides' profiles, line by line; BadInput when either folder holds none (or a damaged one)."""
    doc_a, doc_b = require(a), require(b)
    la, lb = _lines(a, doc_a), _lines(b, doc_b)
    ta, tb = doc_a["totals"]["samples"], doc_b["totals"]["samples"]
    changes = []
    for key in list(la) + [k for k in lb if k not in la]:
        ea, eb = la.get(key), lb.get(key)
        some = ea or lb[key]  # the key is one side's
        changes.append(
            LineChange(
                some["file"],
                key[1],
                (ea or {}).get("text") or (eb or {}).get("text") or "",
                ea["samples"] if ea else 0.0,
                eb["samples"] if eb else 0.0,
                share(ea["samples"], ta) if ea else 0.0,
                share(eb["samples"], tb) if eb else 0.0,
                top_stalls(ea["stalls"]) if ea else [],
                top_stalls(eb["stalls"]) if eb else [],
            )
        )
    changes.sort(key=lambda c: (-abs(c.change), -max(c.a_share, c.b_share), c.file, c.line))
    settings = [d for d in diff_inputs(a, b) if d.name != "file"]
    return ProfileDiff(a.manifest["kernel"], _side(a, doc_a), _side(b, doc_b), settings, changes)
