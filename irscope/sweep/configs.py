"""A sweep's configs: the cartesian product of --axis axes, each a job on top of the base job.

An axis is a backend option (anything --set takes) or a constexpr parameter of the kernel; its
values are a list, ranges (16..256:pow2, 1..8, 32..256:step32) or both (16,32..64:step16), typed
as --set or a --signature element types them. Each combination becomes a job
through jobs.vary, and a Config carries that job's spec and settings through compile (pool.py,
run.py), ranking (rank.py) and timing.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from irscope.errors import BadInput, did_you_mean
from irscope.jobs import Job, vary
from irscope.kernel.settings import Settings, convert, settable_options
from irscope.kernel.spec import KernelSpec, parse_value
from irscope.records import Stats


@dataclass
class Config:
    """One point of the grid: its job (spec, settings) and, once compiled, its result and stats."""

    index: int
    label: str  # "num_warps=4, num_stages=3, BLOCK_M=64"
    values: dict[str, Any]
    spec: KernelSpec
    settings: Settings
    status: str = (
        "pending"  # ok | cached | compile failed | bad input | not written | crashed | timed out | does not fit
    )
    reason: str = ""
    folder: str = ""
    stats: Stats = field(default_factory=Stats)
    seconds: float = 0.0
    node: str = ""  # where it compiled (--cluster ray), when not this machine
    retried: str = ""  # why it was compiled again elsewhere (a node or worker lost), if it was

    @property
    def usable(self) -> bool:
        return self.status in ("ok", "cached")

    @property
    def spills(self) -> bool:
        return bool(self.stats.get("spills"))


def parse_axes(items: list[str], base: Job) -> list[tuple[str, list[Any]]]:
    """['num_warps=4,8', 'BLOCK_M=64,128'] -> [(key, [typed values])]; options and constexprs only."""
    spec = base.spec
    options = settable_options(base.settings.target)
    constexprs = {p.name for p in spec.params if p.is_constexpr}
    axes = []
    seen: set[str] = set()
    if not items:
        raise BadInput("--axis: give at least one axis of the sweep, e.g. --axis num_warps=4,8")
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not raw.strip():
            raise BadInput(f"--axis {item!r}: expected KEY=V1,V2,..., e.g. num_warps=4,8")
        values = expand_values(key, raw, item)
        if not values:
            raise BadInput(f"--axis {item!r}: the axis {key} has no values; give KEY=V1,V2,..., e.g. num_warps=4,8")
        if key in seen:
            raise BadInput(f"--axis {key}: the axis is given twice; give its values once, e.g. {key}=4,8")
        seen.add(key)
        if len(set(values)) != len(values):
            twice = next(v for v in values if values.count(v) > 1)
            raise BadInput(
                f"--axis {key}: {twice} is listed twice; give each value once, "
                f"e.g. {key}={','.join(dict.fromkeys(values))}"
            )
        if key in options:
            typed = [convert(key, v, options[key].type, "--axis") for v in values]
        elif key in constexprs:
            typed = [parse_value(v, f"--axis {key}") for v in values]
        else:
            raise BadInput(
                f"--axis {key}: neither an option of the {base.settings.target.backend} backend nor a "
                f"constexpr of {spec.kernel}{did_you_mean(key, list(options) + sorted(constexprs))}; constexprs: "
                f"{', '.join(sorted(constexprs)) or 'none'}"
            )
        axes.append((key, typed))
    return axes


RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?::(pow2|step(\d+)))?$")
MAX_AXIS_VALUES = 4096  # a range longer than this is a typo (1..1000000), not a tuning axis
MAX_GRID = 10_000  # configs a plain sweep enumerates; past it, --search
RANGE_HELP = "A..B (every integer), A..B:pow2 (the powers of 2) or A..B:stepN (A, A+N, ... up to B)"


def expand_values(key: str, raw: str, item: str) -> list[str]:
    """An axis's text values: each comma-separated item a value or an integer range (RANGE_HELP)."""
    out: list[str] = []
    for part in (p.strip() for p in raw.split(",")):
        if ".." not in part:
            out += [part] if part else []
            continue
        m = RANGE.match(part.replace(" ", ""))
        if m is None or (m.group(4) is not None and int(m.group(4)) < 1):
            raise BadInput(f"--axis {item!r}: {part!r} is not a range; give {RANGE_HELP}, e.g. {key}=16..256:pow2")
        lo, hi, kind = int(m.group(1)), int(m.group(2)), m.group(3) or "step1"
        if kind == "pow2":
            vals = [1 << e for e in range(max(hi, 1).bit_length()) if lo <= (1 << e) <= hi]
        else:
            step = int(kind[4:])
            if hi - lo > MAX_AXIS_VALUES * step:
                raise BadInput(f"--axis {item!r}: {part} has over {MAX_AXIS_VALUES} values; narrow it or add :stepN")
            vals = list(range(lo, hi + 1, step))
        if not vals:
            raise BadInput(
                f"--axis {item!r}: the range {part} is empty (no {'power of 2' if kind == 'pow2' else 'value'}"
                f" from {lo} to {hi}); give low..high with low <= high, e.g. {key}=16..256:pow2"
            )
        out += [str(v) for v in vals]
    return out


def grid_items(table: dict[str, Any], where: str) -> list[str]:
    """A recipe's sweep axes ({"BLOCK_M": "16..256:pow2", "num_warps": [4, 8], "GROUP_M": 8}) as --axis items,
    so that recipes and the command line share one grammar (ranges included) and one set of checks."""
    items = []
    for key, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float, list)) or value in ("", []):
            raise BadInput(
                f'{where}: sweep axis {key} = {value!r}; give a list ([4, 8]), a range ("16..256:pow2") or one value'
            )
        text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
        items.append(f"{key}={text}")
    return items


def make_config(base: Job, index: int, values: dict[str, Any]) -> Config:
    """One combination of axis values as a config: a job on top of the base (jobs.vary)."""
    options = settable_options(base.settings.target)
    job = vary(base, values, "--axis")
    label = ", ".join(
        f"{k}={job.spec.args[k].text() if k in job.spec.args and k not in options else v}" for k, v in values.items()
    )
    return Config(index, label, values, job.spec, job.settings)


def space_size(axes: list[tuple[str, list[Any]]]) -> int:
    """How many configs the axes make (their product), without making them."""
    n = 1
    for _, vals in axes:
        n *= len(vals)
    return n


def expand(base: Job, axes: list[tuple[str, list[Any]]]) -> list[Config]:
    """Every combination of the axes, each a job on top of the base (jobs.vary: options and constexprs)."""
    keys = [k for k, _ in axes]
    return [
        make_config(base, i, dict(zip(keys, combo)))
        for i, combo in enumerate(itertools.product(*[vals for _, vals in axes]))
    ]
