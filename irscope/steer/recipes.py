"""Recipes: TOML files that name a target and pin options, env knobs, constexprs, loops and layouts.

This module is what the commands use of them: finding a recipe (by name under recipe_dirs(), or
by path), loading and checking it (recipe_file.py reads it, with FILE:LINE errors); also the data
`irscope recipes list/show` shows. The format is documented in recipes/README.md.

`layering.apply()` layers one recipe (and variant) onto Settings for one kernel; everything that
compiles goes through it (jobs.for_kernel). Precedence, lowest first:

    Triton defaults (or a spec file's options) < recipe defaults < recipe kernel
    section(s) < variant defaults < variant kernel section(s) < --set / --pin-*

Settings.sources says where each option (and "env:NAME" knob) came from; pins
carry their own source; which of two pins wins is pins.sets_again.
"""

from __future__ import annotations

import os
from pathlib import Path

from irscope import knobs
from irscope.errors import BadInput, did_you_mean
from irscope.steer import recipe_file
from irscope.steer.pins import overridden_by
from irscope.steer.recipe_model import Layer, Recipe

REPO_RECIPES = Path(__file__).resolve().parents[2] / "recipes"


# ------------------------------------------------------------------ finding recipes


def recipe_dirs() -> list[Path]:
    """$IRSCOPE_RECIPES (os.pathsep-separated folders) first, then the recipes/ folder shipped with irscope."""
    return [*knobs.RECIPES.get(), REPO_RECIPES]


def find(name_or_path: str) -> Path:
    """A recipe by name (a .toml under recipe_dirs()) or by path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.sep in name_or_path or "/" in name_or_path:
        if p.is_dir():
            raise BadInput(
                f"--recipe {name_or_path}: is a folder; give a recipe's .toml file, or a recipe's name "
                f"(irscope recipes list)"
            )
        if p.exists() and not p.is_file():
            raise BadInput(f"--recipe {name_or_path}: not a regular file (a device, FIFO or socket); give a .toml file")
        if not p.is_file():
            raise BadInput(f"--recipe {name_or_path}: no such file")
        return p
    for d in recipe_dirs():
        cand = d / f"{name_or_path}.toml"
        if cand.is_file():
            return cand
    names = available()
    raise BadInput(
        f"--recipe {name_or_path}: no such recipe{did_you_mean(name_or_path, names)}; "
        f"recipes: {', '.join(names) or 'none'} (or give a path to a .toml file)"
    )


def all_paths() -> list[Path]:
    """Every recipe file found, one per name (the first folder of recipe_dirs() wins), by name."""
    seen: dict[str, Path] = {}
    for d in recipe_dirs():
        for f in sorted(d.glob("*.toml")) if d.is_dir() else []:
            seen.setdefault(f.stem, f)
    return [seen[k] for k in sorted(seen)]


def available() -> list[str]:
    """The names of the recipes found."""
    return [p.stem for p in all_paths()]


# ------------------------------------------------------------------ loading and checking


def load(path: Path | str) -> Recipe:
    """Read and validate a recipe; BadInput with file:line for the first problem (all of them: check())."""
    recipe, errors = recipe_file.read(Path(path))
    if errors:
        more = f" (and {len(errors) - 1} more; irscope recipes check {path})" if len(errors) > 1 else ""
        raise BadInput(errors[0] + more)
    assert recipe is not None, "read() gives a recipe when it found no error"
    return recipe


def check(path: Path | str) -> list[str]:
    """Every problem in a recipe file, each 'FILE:LINE: [table] key: what is wrong; valid: ...'."""
    return recipe_file.read(Path(path))[1]


def resolve(name: str | None, variant: str | None) -> Recipe | None:
    """The recipe named on the command line (checked, its variant too), or None."""
    if variant and not name:
        raise BadInput(f"--variant {variant}: give the recipe it belongs to with --recipe")
    if not name:
        return None
    recipe = load(find(name))
    if variant:
        recipe.variant(variant)
    return recipe


# ------------------------------------------------------------------ applying a recipe


def summary_rows() -> list[tuple[str, str, str, str]]:
    """(name, target, purpose, problem) for every recipe found; problem is '' for a valid recipe."""
    rows = []
    for path in all_paths():
        recipe, errors = recipe_file.read(path)
        if recipe is None:
            rows.append((path.stem, "?", "", errors[0] if errors else "unreadable"))
            continue
        targets = recipe.target_text + (
            f" (+{', '.join(t.name for t in recipe.targets[1:])})" if len(recipe.targets) > 1 else ""
        )
        rows.append(
            (
                recipe.name,
                f"{targets} = {recipe.target.name}" if recipe.target_text != recipe.target.name else targets,
                recipe.purpose,
                errors[0] if errors else "",
            )
        )
    return rows


def layer_lines(layer: Layer, over: Layer | None = None) -> list[str]:
    """One line per value; with `over` (a layer that ranks above it, e.g. a variant's defaults above the
    recipe's kernel sections), each value `over` sets again is marked overridden, as a compile reports it."""
    o = over or Layer("")

    def mark(hit: bool) -> str:
        return f"  (overridden by {o.source})" if hit else ""

    out = []
    out += [f"{k} = {v}" + mark(k in o.options) for k, v in layer.options.items()]
    out += [f"env {k} = {v}" + mark(k in o.env) for k, v in layer.env.items()]
    out += [f"constexpr {k} = {v}" + mark(k in o.constexprs) for k, v in layer.constexprs.items()]
    out += [f"loop {p.text()}" + mark(overridden_by(p, o.loops) is not None) for p in layer.loops]
    out += [f"layout {p.text()}" + mark(overridden_by(p, o.layouts) is not None) for p in layer.layouts]
    return out
