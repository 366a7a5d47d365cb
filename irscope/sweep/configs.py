"""A sweep's configs: the cartesian product of --grid axes, each a job on top of the base job.

An axis is a backend option (anything --set takes) or a constexpr parameter of the kernel; its
values are typed as --set or a --signature element types them. Each combination becomes a job
through jobs.vary, and a Config carries that job's spec and settings through compile (pool.py,
run.py), ranking (rank.py) and timing.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from irscope.core.settings import Settings, convert, settable_options
from irscope.core.spec import KernelSpec, parse_value
from irscope.errors import BadInput, did_you_mean
from irscope.jobs import Job, vary


@dataclass
class Config:
    """One point of the grid: its job (spec, settings) and, once compiled, its result and stats."""

    index: int
    label: str                       # "num_warps=4, num_stages=3, BLOCK_M=64"
    values: dict[str, Any]
    spec: KernelSpec
    settings: Settings
    status: str = "pending"          # ok | cached | compile failed | bad input | crashed | timed out | does not fit
    reason: str = ""
    folder: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

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
        raise BadInput("--grid: give at least one axis, e.g. --grid num_warps=4,8")
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key or not raw.strip():
            raise BadInput(f"--grid {item!r}: expected KEY=V1,V2,..., e.g. num_warps=4,8")
        values = [v.strip() for v in raw.split(",") if v.strip()]
        if not values:
            raise BadInput(f"--grid {item!r}: the axis {key} has no values; give KEY=V1,V2,..., e.g. num_warps=4,8")
        if key in seen:
            raise BadInput(f"--grid {key}: the axis is given twice; give its values once, e.g. {key}=4,8")
        seen.add(key)
        if len(set(values)) != len(values):
            twice = next(v for v in values if values.count(v) > 1)
            raise BadInput(f"--grid {key}: {twice} is listed twice; give each value once, "
                           f"e.g. {key}={','.join(dict.fromkeys(values))}")
        if key in options:
            typed = [convert(key, v, options[key].type, "--grid") for v in values]
        elif key in constexprs:
            typed = [parse_value(v, f"--grid {key}") for v in values]
        else:
            raise BadInput(f"--grid {key}: neither an option of the {base.settings.target.backend} backend nor a "
                           f"constexpr of {spec.kernel}{did_you_mean(key, list(options) + sorted(constexprs))}; constexprs: "
                           f"{', '.join(sorted(constexprs)) or 'none'}")
        axes.append((key, typed))
    return axes


def expand(base: Job, axes: list[tuple[str, list[Any]]]) -> list[Config]:
    """Every combination of the axes, each a job on top of the base (jobs.vary: options and constexprs)."""
    options = settable_options(base.settings.target)
    configs = []
    keys = [k for k, _ in axes]
    for i, combo in enumerate(itertools.product(*[vals for _, vals in axes])):
        values = dict(zip(keys, combo))
        job = vary(base, values, "--grid")
        label = ", ".join(f"{k}={job.spec.args[k].text() if k in job.spec.args and k not in options else v}"
                          for k, v in values.items())
        configs.append(Config(i, label, values, job.spec, job.settings))
    return configs
