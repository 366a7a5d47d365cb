"""Ranking a sweep's configs by their static stats, and writing the winners as a recipe.

COLUMNS        the static stats a config is ranked by (registers, spills, shared memory,
               occupancy, MMA and 128-bit load counts), read from its dump's manifest
sort_configs   --sort; survivors: what --time measures (compiled, fits, does not spill)
to_json        one row per config, as --json prints it
winner         after --time: the fastest correct config timed to the end, and its margin
               over the runner-up from the rounds both ran
write_winners  --write-recipe: the timed winners first when timed, else the static order of
               --sort (under --sort config: static_best_first), as variants of a recipe that
               `irscope recipes check` accepts; check_recipe_path before anything compiles
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from irscope.errors import BadInput
from irscope.jobs import Job
from irscope.kernel.inputs import check_output_file
from irscope.steer import recipes
from irscope.sweep.configs import Config
from irscope.timing import statistics
from irscope.timing.bench import BenchReport

COLUMNS = {
    "registers": lambda s: s.get("registers"),
    "spills": lambda s: s.get("spills"),
    "shared": lambda s: s.get("shared_bytes"),
    "occupancy": lambda s: (s.get("occupancy") or {}).get("occupancy"),
    "mma": lambda s: (
        (s.get("ptx") or {}).get("wgmma", 0)
        + (s.get("ptx") or {}).get("mma.sync", 0)
        + (s.get("ptx") or {}).get("tcgen05.mma", 0)
        + (s.get("amdgcn") or {}).get("mfma", 0)
    ),
    "ld128": lambda s: (
        (s.get("ptx") or {}).get("global_load", {}).get("128", 0)
        + (s.get("amdgcn") or {}).get("global_load", {}).get("128", 0)
    ),
}


def row(cfg: Config) -> dict[str, Any]:
    """The config's COLUMNS (None each before it compiled)."""
    return {name: fn(cfg.stats) if cfg.stats else None for name, fn in COLUMNS.items()}


def sort_configs(configs: list[Config], key: str) -> list[Config]:
    """--sort: by config (the grid's order), or a column, best first; configs without stats last."""
    if key not in COLUMNS and key != "config":
        raise BadInput(f"--sort {key!r}: sort by one of config, {', '.join(COLUMNS)}")
    if key == "config":
        return sorted(configs, key=lambda c: c.index)
    descending = key in ("occupancy", "mma", "ld128")

    def k(c: Config):
        v = row(c).get(key)
        missing = v is None
        return (missing, -(v or 0) if descending else (v or 0), c.index)

    return sorted(configs, key=k)


def survivors(configs: list[Config]) -> list[Config]:
    """What --time measures: compiled, fits, does not spill."""
    return [c for c in configs if c.usable and not c.spills]


def to_json(configs: list[Config]) -> list[dict[str, Any]]:
    """One row per config, as sweep --json prints it."""
    return [
        {
            "index": c.index,
            "config": c.values and {k: _jsonable(v) for k, v in c.values.items()},
            "label": c.label,
            "status": c.status,
            "reason": c.reason,
            "folder": c.folder,
            "compile_seconds": round(c.seconds, 3),
            "stats": row(c),
            "spills": c.spills,
            **({"node": c.node} if c.node else {}),
            **({"retried": c.retried} if c.retried else {}),
        }
        for c in configs
    ]


def _jsonable(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


# ---------------------------------------------------------------- the winner, as a recipe


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    text = str(v)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def recipe_text(
    kernel: str,
    target: str,
    ranked: list[Config],
    how: str,
    base_options: dict[str, Any],
    timings: dict[str, float] | None = None,
    base_constexprs: dict[str, str] | None = None,
) -> str:
    """A recipe whose variants are the ranked configs (best first), as `irscope recipes check` accepts.

    The [kernel] section holds what every config shared: the base options and the base's constexprs
    that were not swept (those a recipe or the signature gave the sweep), so that the written recipe
    alone, with the runtime arguments, compiles each variant."""
    options_keys: set[str] = set()
    lines = [
        f"# Written by irscope sweep: {len(ranked)} best configs of {kernel} on {target}, {how}.",
        "# Each variant holds the swept values; the [kernel] section the settings shared by all.",
        "[recipe]",
        f"target = {_toml_value(target)}",
        f"purpose = {_toml_value(f'sweep winners for {kernel} ({how})')}",
        "",
    ]
    shared = {k: v for k, v in base_options.items() if v is not None}
    consts = dict(base_constexprs or {})
    if shared or consts:
        lines.append(f"[kernel.{_toml_value(kernel)}]")
        if shared:
            lines.append("options = { " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in shared.items()) + " }")
        if consts:
            lines.append("constexprs = { " + ", ".join(f"{k} = {_constexpr_toml(v)}" for k, v in consts.items()) + " }")
        lines.append("")
    for rank, cfg in enumerate(ranked, 1):
        name = "sweep-best" if rank == 1 else f"sweep-{rank}"
        note = cfg.label + (f"; {timings[cfg.label] * 1e3:.1f} us" if timings and cfg.label in timings else "")
        lines += [
            f"[variant.{name}]",
            f"purpose = {_toml_value(f'#{rank}: {note}')}",
            f"[variant.{name}.kernel.{_toml_value(kernel)}]",
        ]
        opts = {k: v for k, v in cfg.values.items() if k in cfg.settings.options}
        consts = {k: cfg.spec.args[k].text() for k in cfg.values if k not in opts}
        if opts:
            options_keys.update(opts)
            lines.append("options = { " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in opts.items()) + " }")
        if consts:
            lines.append("constexprs = { " + ", ".join(f"{k} = {_constexpr_toml(v)}" for k, v in consts.items()) + " }")
        lines.append("")
    return "\n".join(lines)


def _constexpr_toml(text: str) -> str:
    """A constexpr's spec text as a TOML value: numbers and booleans as such, anything else as text."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return _toml_value(text)
    return _toml_value(value) if isinstance(value, (bool, int, float)) else _toml_value(text)


def static_best_first(configs: list[Config]) -> list[Config]:
    """The default static ranking (what --write-recipe uses untimed under --sort config): fewest
    spilled bytes, then the highest occupancy, then the fewest registers, then grid order."""

    def k(c: Config):
        r = row(c)
        return (
            r["spills"] or 0,
            -(r["occupancy"] or 0),
            r["registers"] if r["registers"] is not None else 1 << 30,
            c.index,
        )

    return sorted(configs, key=k)


STATIC_DEFAULT = "fewest spills, then occupancy, then registers"


def check_recipe_path(path: Path) -> None:
    """--write-recipe PATH, refused before anything compiles: a regular (or new) file in a writable folder."""
    check_output_file(path, "--write-recipe", "sweep.toml")


def write_winners(
    path: Path, base: Job, configs: list[Config], ordered: list[Config], timed: Any, sort_key: str, top: int
) -> None:
    """--write-recipe: the timed winners first when timed; untimed, the static order asked for with
    --sort, and under --sort config (the grid's order, no ranking at all) the default static ranking
    (static_best_first: fewest spills, then occupancy, then registers). The recipe's header says which.
    """
    check_recipe_path(path)  # timed: a timed.SweepTiming (rows by label), None when not timed
    by_label = {c.label: c for c in configs}
    timings = None
    if timed is not None:
        # the configs timed to the end first (by their estimate on the common scale), then those dropped early
        ok = sorted(
            (r for r in timed.rows.values() if r.status == "ok" and r.estimate_ms),
            key=lambda r: (bool(r.dropped), r.estimate_ms),
        )
        ranked = [by_label[r.name] for r in ok if r.name in by_label]
        timings = {r.name: r.estimate_ms for r in ok}
        how = f"timed on {timed.device or 'the GPU'}"
    elif sort_key == "config":
        ranked = survivors(static_best_first(configs))
        how = f"ranked by {STATIC_DEFAULT} (static, not timed)"
    else:
        ranked = survivors(ordered)
        how = f"ranked by {sort_key} (static, not timed)"
    if not ranked:
        raise BadInput("--write-recipe: no config compiled without spilling; nothing to write")
    shared = {k: v for k, v in base.settings.options.items() if k not in ranked[0].values}
    consts = {
        k: a.text()
        for k, a in base.spec.args.items()
        if a.kind == "constexpr" and a.value is not None and k not in ranked[0].values and k not in shared
    }
    text = recipe_text(base.spec.kernel, base.settings.target.name, ranked[:top], how, shared, timings, consts)
    write_recipe(Path(path), text)


def write_recipe(path: Path, text: str) -> None:
    """Write atomically, and only a recipe `recipes check` accepts."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    try:
        problems = recipes.check(tmp)
        if problems:
            raise BadInput(f"--write-recipe: the recipe irscope wrote does not pass its own check: {problems[0]}")
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


@dataclass
class Winner:
    """The fastest correct config timed to the end (ratios of a sweep are against it)."""

    name: str
    median_ms: float
    runner_up: str | None = None  # the second fastest timed to the end
    margin: statistics.Comparison | None = None  # runner-up against the winner, paired rounds
    others_dropped: bool = False  # no runner-up: every other config was dropped


def versus(timed: BenchReport, reference: str, name: str) -> statistics.Comparison:
    """`name` against `reference` from the rounds both ran (a dropped config stopped early)."""
    return statistics.compare_shared_rounds(timed.samples[reference], timed.samples[name])


def winner(timed: BenchReport) -> Winner | None:
    """The winner of a timed sweep, None when no config was timed to the end."""
    finalists = [(v, s) for v in timed.variants if v.status == "ok" and (s := v.summary) and not v.dropped]
    if not finalists:
        return None
    by_time = sorted(finalists, key=lambda vs: vs[1].median)
    best, best_summary = by_time[0]
    if len(by_time) > 1:
        runner = by_time[1][0]  # paired ratio runner-up / best, from the same interleaved rounds
        return Winner(best.name, best_summary.median, runner.name, versus(timed, best.name, runner.name))
    return Winner(best.name, best_summary.median, others_dropped=any(v.dropped for v in timed.variants))
